// The real axqc-server binary and the resources only one server may hold, or that a flood of
// connections takes:
//   - a second server on the same SQLite file through a symbolic or a hard link is refused (the
//     database file itself is locked, not only "<path>.lock");
//   - a second server on the same gRPC port is refused (no SO_REUSEPORT sharing of the port);
//   - HTTP connections over --http-max-connections are answered 503 and closed;
//   - out of descriptors (a low RLIMIT_NOFILE and many connections), the HTTP accept loop backs
//     off instead of spinning, logs once, counts axqc_accept_errors_total, and recovers.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "server_test_util.h"

extern char** environ;

namespace axqc::test {
namespace {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// axqc-server with `args`, stderr to `stderr_path`, optionally with a descriptor limit.
class ServerProcess {
 public:
  ServerProcess(std::vector<std::string> args, const fs::path& stderr_path,
                std::optional<rlim_t> nofile = std::nullopt) {
    args.insert(args.begin(), AXQC_SERVER_BIN);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::string(*e).rfind("AXQC_", 0) != 0) env_s.emplace_back(*e);
    }
    std::vector<char*> envp;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string err = stderr_path.string();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {  // only async-signal-safe calls until execve
      const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0 || ::dup2(fd, 2) < 0) ::_exit(126);
      if (nofile) {
        const rlimit lim{*nofile, *nofile};
        if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) ::_exit(126);
      }
      ::execve(AXQC_SERVER_BIN, argv.data(), envp.data());
      ::_exit(127);
    }
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  int Stop() {
    ::kill(pid_, SIGTERM);
    return Wait();
  }
  int Wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// Starts a server and reads its ready file: {"grpc_port", "metrics_port", "http_port"}.
nlohmann::json StartServer(std::unique_ptr<ServerProcess>& proc, const TempDir& dir,
                           const std::string& name, std::vector<std::string> args,
                           std::optional<rlim_t> nofile = std::nullopt) {
  const fs::path ready = dir / (name + ".json");
  args.insert(args.end(), {"--ready-file", ready.string()});
  proc = std::make_unique<ServerProcess>(args, dir / (name + ".log"), nofile);
  if (!WaitFor([&] { return fs::exists(ready); }, std::chrono::seconds(30))) {
    ADD_FAILURE() << "server " << name << " did not start: " << ReadFile(dir / (name + ".log"));
    return nlohmann::json::object();
  }
  // The ready file is written whole, but may be seen before its last byte.
  nlohmann::json j;
  WaitFor([&] {
    j = nlohmann::json::parse(ReadFile(ready), nullptr, false);
    return !j.is_discarded();
  });
  return j;
}

// The "error" of the server's "startup failed" log line.
std::string StartupError(const fs::path& log) {
  std::istringstream lines(ReadFile(log));
  std::string line;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("msg", "") == "startup failed") return j.value("error", "");
  }
  return "";
}

// User + system CPU seconds of `pid` so far.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && (rest >> field); ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

int OpenFds(pid_t pid) {
  int n = 0;
  for ([[maybe_unused]] const auto& e :
       fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    ++n;
  }
  return n;
}

// A TCP connection to 127.0.0.1:`port`.
class Connection {
 public:
  explicit Connection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error("connect to port " + std::to_string(port) + " failed");
    }
  }
  ~Connection() {
    if (fd_ >= 0) ::close(fd_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  bool Send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // What arrives until the server closes, or `timeout` passes.
  std::string ReadToClose(Ms timeout) {
    std::string out;
    const auto end = SteadyClock::now() + timeout;
    while (SteadyClock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[8192];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
};

// The status line of GET /v1/openapi.json, or "" when the connection failed.
std::string StatusLine(int port) {
  try {
    const std::string r = HttpGet(port, "/v1/openapi.json");
    return r.substr(0, r.find("\r\n"));
  } catch (const std::exception&) {
    return "";
  }
}

TEST(ServerResources, SecondServerOnTheSameSqliteFileThroughALinkIsRefused) {
  TempDir dir;
  const fs::path store = dir / "store.sqlite3";
  std::unique_ptr<ServerProcess> first;
  const auto ports = StartServer(first, dir, "first",
                                 {"--listen", "127.0.0.1:0", "--metrics-listen", "", "--isolation",
                                  "off", "--store-path", store.string()});
  ASSERT_GT(ports.value("grpc_port", 0), 0);
  fs::create_symlink(store, dir / "symlink.sqlite3");
  fs::create_hard_link(store, dir / "hardlink.sqlite3");
  fs::create_directories(dir / "other");
  fs::create_symlink(store, dir / "other" / "store.sqlite3");
  for (const char* name : {"symlink.sqlite3", "hardlink.sqlite3", "other/store.sqlite3"}) {
    SCOPED_TRACE(name);
    const fs::path log = dir / "second.log";
    ServerProcess second({"--listen", "127.0.0.1:0", "--metrics-listen", "", "--isolation", "off",
                          "--store-path", (dir / name).string()},
                         log);
    EXPECT_EQ(second.Wait(), 1);
    const std::string error = StartupError(log);
    EXPECT_EQ(error.rfind("store: sqlite: " + (dir / name).string(), 0), 0u) << error;
    EXPECT_NE(error.find("is in use by another axqc-server: the same database file, reached "
                         "through another name (a symbolic or hard link)"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("run one server per SQLite file"), std::string::npos) << error;
  }
  // No second writer left anything behind: no write-ahead log of another name.
  EXPECT_FALSE(fs::exists(dir / "symlink.sqlite3-wal"));
  EXPECT_FALSE(fs::exists(dir / "hardlink.sqlite3-wal"));
  EXPECT_EQ(first->Stop(), 0);
  // Released with the first server: a server through the hard link starts now.
  std::unique_ptr<ServerProcess> third;
  const auto again = StartServer(third, dir, "third",
                                 {"--listen", "127.0.0.1:0", "--metrics-listen", "", "--isolation",
                                  "off", "--store-path", (dir / "hardlink.sqlite3").string()});
  EXPECT_GT(again.value("grpc_port", 0), 0);
  EXPECT_EQ(third->Stop(), 0);
}

TEST(ServerResources, SecondServerOnTheSameGrpcPortIsRefused) {
  TempDir dir;
  std::unique_ptr<ServerProcess> first;
  const auto ports = StartServer(first, dir, "first",
                                 {"--listen", "127.0.0.1:0", "--metrics-listen", "", "--isolation",
                                  "off", "--store-path", ":memory:"});
  const int port = ports.value("grpc_port", 0);
  ASSERT_GT(port, 0);
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  const fs::path log = dir / "second.log";
  ServerProcess second({"--listen", listen, "--metrics-listen", "", "--isolation", "off",
                        "--store-path", ":memory:"},
                       log);
  EXPECT_EQ(second.Wait(), 1);
  EXPECT_EQ(StartupError(log), "grpc: cannot listen on " + listen +
                                   " (the address is in use by another process, or cannot be "
                                   "bound)");
  // The first server still answers every connection (none went to a second listener).
  for (int i = 0; i < 5; ++i) {
    auto health = grpc::health::v1::Health::NewStub(
        grpc::CreateChannel(listen, grpc::InsecureChannelCredentials()));
    EXPECT_EQ(HealthStatus(*health), grpc::health::v1::HealthCheckResponse::SERVING);
  }
  EXPECT_EQ(first->Stop(), 0);
}

TEST(ServerResources, HttpConnectionsOverTheLimitAreAnswered503AndClosed) {
  TempDir dir;
  std::unique_ptr<ServerProcess> server;
  const auto ports = StartServer(
      server, dir, "server",
      {"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
       "--isolation", "off", "--store-path", ":memory:", "--http-max-connections", "3"});
  const int http = ports.value("http_port", 0);
  const int metrics = ports.value("metrics_port", 0);
  ASSERT_GT(http, 0);
  std::vector<std::unique_ptr<Connection>> idle;
  for (int i = 0; i < 3; ++i) idle.push_back(std::make_unique<Connection>(http));
  ASSERT_TRUE(WaitFor([&] { return ScrapeMetrics(metrics).Value("axqc_http_connections") == 3; }));

  Connection over(http);
  ASSERT_TRUE(over.Send("GET /v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  const std::string answer = over.ReadToClose(Ms(10000));
  EXPECT_EQ(answer.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  EXPECT_NE(answer.find("\"code\":\"UNAVAILABLE\""), std::string::npos) << answer;
  EXPECT_NE(answer.find("3 HTTP connections open, its limit (http-max-connections)"),
            std::string::npos)
      << answer;
  Scrape m = ScrapeMetrics(metrics);
  EXPECT_EQ(m.Value("axqc_http_connections_refused_total"), 1);
  EXPECT_EQ(m.Value("axqc_http_connections"), 3);

  // One closes: the next connection is served.
  idle.pop_back();
  ASSERT_TRUE(WaitFor([&] { return StatusLine(http) == "HTTP/1.1 200 OK"; }));
  idle.clear();
  ASSERT_TRUE(WaitFor([&] { return ScrapeMetrics(metrics).Value("axqc_http_connections") == 0; }));
  EXPECT_EQ(server->Stop(), 0);
}

// Out of descriptors: connections wait in the listen backlog while the accept loop backs off
// (before, it retried at once: a core busy for as long as the limit was reached, and no log).
TEST(ServerResources, AcceptBacksOffWhenOutOfDescriptorsAndRecovers) {
  TempDir dir;
  // The server's own descriptors at rest, then a limit a little above them.
  int at_rest = 0;
  {
    std::unique_ptr<ServerProcess> probe;
    const auto ports =
        StartServer(probe, dir, "probe",
                    {"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--http-listen",
                     "127.0.0.1:0", "--isolation", "off", "--store-path", ":memory:"});
    ASSERT_GT(ports.value("http_port", 0), 0);
    at_rest = OpenFds(probe->pid());
    EXPECT_EQ(probe->Stop(), 0);
  }
  const rlim_t limit = static_cast<rlim_t>(at_rest + 16);
  std::unique_ptr<ServerProcess> server;
  const auto ports =
      StartServer(server, dir, "server",
                  {"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--http-listen",
                   "127.0.0.1:0", "--isolation", "off", "--store-path", ":memory:"},
                  limit);
  const int http = ports.value("http_port", 0);
  const int metrics = ports.value("metrics_port", 0);
  ASSERT_GT(http, 0);
  ASSERT_EQ(StatusLine(http), "HTTP/1.1 200 OK");

  std::vector<std::unique_ptr<Connection>> flood;
  for (int i = 0; i < 100; ++i) flood.push_back(std::make_unique<Connection>(http));
  // The server fills its descriptors with accepted connections, then stays below 25% of a core
  // while the rest wait.
  ASSERT_TRUE(
      WaitFor([&] { return OpenFds(server->pid()) >= static_cast<int>(limit) - 1; }, Ms(10000)));
  const double cpu0 = CpuSeconds(server->pid());
  std::this_thread::sleep_for(Ms(4000));
  const double cpu = CpuSeconds(server->pid()) - cpu0;
  EXPECT_LT(cpu, 1.0) << "CPU seconds in 4 s at the descriptor limit";

  // Recovers once the connections go.
  flood.clear();
  ASSERT_TRUE(WaitFor([&] { return StatusLine(http) == "HTTP/1.1 200 OK"; }, Ms(20000)));
  const Scrape m = ScrapeMetrics(metrics);
  const double errors = m.Value("axqc_accept_errors_total", {{"reason", "emfile"}});
  EXPECT_GE(errors, 1);
  EXPECT_LT(errors, 100);  // backing off: a few per second at most
  const std::string log = ReadFile(dir / "server.log");
  std::size_t lines = 0;
  for (std::size_t at = 0;
       (at = log.find("http: accept failed; backing off", at)) != std::string::npos; ++at) {
    ++lines;
  }
  EXPECT_GE(lines, 1u);
  EXPECT_LE(lines, 2u) << log;  // once per 10 s
  EXPECT_EQ(server->Stop(), 0);
}

}  // namespace
}  // namespace axqc::test
