// Runs the real axqc-server binary: configuration from flags, environment and a config file, a
// check over gRPC, /metrics over HTTP, JSON-lines logs on stderr, SIGTERM -> graceful exit 0,
// startup failures; SIGKILL while results are being written, then a restart on the same store.
// (Replicas on a real PostgreSQL: tests/server/pg/replicas_test.sh.)
#include <onnx/onnx_pb.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "axqc/sha256.h"
#include "server_test_util.h"

extern char** environ;

namespace axqc::test {
namespace {

using HealthResp = grpc::health::v1::HealthCheckResponse;

class ServerProcess {
 public:
  ServerProcess(const std::vector<std::string>& args, const std::vector<std::string>& extra_env,
                const fs::path& stderr_path) {
    std::vector<std::string> argv_s = {AXQC_SERVER_BIN};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::string(*e).rfind("AXQC_", 0) != 0) env_s.emplace_back(*e);
    }
    env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> envp;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    const int rc = posix_spawn(&pid_, AXQC_SERVER_BIN, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("posix_spawn failed");
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  // Sends `sig` and waits up to `timeout` for the exit; returns the exit status or -1.
  int Stop(int sig, std::chrono::seconds timeout) {
    ::kill(pid_, sig);
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  void Signal(int sig) { ::kill(pid_, sig); }
  // Waits for the process to exit by itself.
  int Wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
};

TEST(ServerBinary, ServesChecksMetricsAndStopsGracefullyOnSigterm) {
  TempDir dir;
  const std::string model = NonConformantModel("bin");
  WriteFile(dir / "models/m.onnx", model);
  WriteFile(dir / "server.toml", "queue-capacity = 17\nworkers = 1\nlog-level = \"info\"\n");
  const fs::path ready = dir / "ready.json";
  const fs::path err = dir / "stderr.log";
  ServerProcess proc(
      {"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--ready-file", ready.string(),
       "--allowed-root", (dir / "models").string(), "--config", (dir / "server.toml").string()},
      {"AXQC_WORKERS=3", "AXQC_STORE_PATH=" + (dir / "store.sqlite3").string()}, err);
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready); }, std::chrono::seconds(20)))
      << ReadFile(err);
  const auto ports = nlohmann::json::parse(ReadFile(ready));
  const int grpc_port = ports.at("grpc_port");
  const int metrics_port = ports.at("metrics_port");
  ASSERT_GT(grpc_port, 0);
  ASSERT_GT(metrics_port, 0);

  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_port),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::Checker::NewStub(channel);
  auto health = grpc::health::v1::Health::NewStub(channel);
  EXPECT_EQ(HealthStatus(*health), HealthResp::SERVING);
  v1::CheckResponse resp;
  grpc::Status s = CheckPath(*stub, "m.onnx", &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_NON_CONFORMANT);
  EXPECT_EQ(resp.sha256(), axqc::Sha256Hex(model));
  s = CheckPath(*stub, "../server.toml", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);

  const Scrape m = ScrapeMetrics(metrics_port);
  EXPECT_EQ(m.http_status, 200);
  EXPECT_EQ(m.Value("axqc_workers"), 3);          // environment beats the config file
  EXPECT_EQ(m.Value("axqc_queue_capacity"), 17);  // config file
  EXPECT_EQ(m.Value("axqc_checks_total", {{"verdict", "non_conformant"}, {"source", "path"}}), 1);
  EXPECT_EQ(m.Value("axqc_requests_total", {{"method", "Check"}, {"code", "PERMISSION_DENIED"}}),
            1);

  // Close the client connection first: an idle sync client answers the server's GOAWAY ping only
  // when its backup poller runs (every 5 s), which would stretch the drain to 5 s.
  stub.reset();
  health.reset();
  channel.reset();
  EXPECT_EQ(proc.Stop(SIGTERM, std::chrono::seconds(20)), 0);
  // JSON lines on stderr.
  std::istringstream lines(ReadFile(err));
  std::string line;
  std::vector<std::string> msgs;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);
    msgs.push_back(j.at("msg"));
    if (j.at("msg") == "request" && j.at("code") == "OK") {
      EXPECT_EQ(j.at("model_sha256"), axqc::Sha256Hex(model));
      EXPECT_EQ(j.at("verdict"), "non_conformant");
    }
  }
  const std::vector<std::string> want = {
      "serving", "request", "request", "signal received", "shutdown started", "shutdown complete"};
  EXPECT_EQ(msgs, want);
  EXPECT_TRUE(fs::exists(dir / "store.sqlite3"));
}

TEST(ServerBinary, BadConfigurationExitsWithAMessage) {
  TempDir dir;
  const fs::path err = dir / "stderr.log";
  ServerProcess bad_flag({"--workers", "lots"}, {}, err);
  EXPECT_EQ(bad_flag.Wait(), 2);
  EXPECT_NE(ReadFile(err).find("workers (flag --workers)"), std::string::npos) << ReadFile(err);

  // Unknown options and options without their value are configuration errors too (exit 2).
  ServerProcess unknown({"--no-such-option"}, {}, err);
  EXPECT_EQ(unknown.Wait(), 2);
  EXPECT_NE(ReadFile(err).find("--no-such-option"), std::string::npos) << ReadFile(err);
  ServerProcess no_value({"--workers"}, {}, err);
  EXPECT_EQ(no_value.Wait(), 2);
  ServerProcess bad_env({"--print-config"}, {"AXQC_QUEUE_CAPACITY=many"}, err);
  EXPECT_EQ(bad_env.Wait(), 2);
  EXPECT_NE(ReadFile(err).find("queue-capacity (environment AXQC_QUEUE_CAPACITY)"),
            std::string::npos)
      << ReadFile(err);

  // A config file of an earlier release still works; stderr says it is deprecated and how to
  // write it as TOML.
  WriteFile(dir / "old.conf", "listen = 127.0.0.1:0\nqueue-capacity = 9\n");
  ServerProcess old_format({"--config", (dir / "old.conf").string(), "--print-config"}, {}, err);
  EXPECT_EQ(old_format.Wait(), 0);
  EXPECT_NE(ReadFile(err).find("axqc-server: note: config file " + (dir / "old.conf").string() +
                               " is in the unquoted key=value format of earlier releases"),
            std::string::npos)
      << ReadFile(err);

  ServerProcess missing_root({"--listen", "127.0.0.1:0", "--metrics-listen", "", "--store-path",
                              ":memory:", "--allowed-root", "/nonexistent-axqc"},
                             {}, err);
  EXPECT_EQ(missing_root.Wait(), 1);
  const auto j = nlohmann::json::parse(ReadFile(err));
  EXPECT_EQ(j.at("msg"), "startup failed");
  EXPECT_NE(j.at("error").get<std::string>().find("/nonexistent-axqc"), std::string::npos);
}

TEST(ServerBinary, UnreachablePostgresStoreIsAStartupFailureWithoutThePassword) {
  TempDir dir;
  const fs::path err = dir / "stderr.log";
  const auto t0 = std::chrono::steady_clock::now();
  ServerProcess proc({"--listen", "127.0.0.1:0", "--metrics-listen", "", "--store",
                      "postgresql://axqc:s3cret@127.0.0.1:1/axqc"},
                     {}, err);
  EXPECT_EQ(proc.Wait(), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  const std::string log = ReadFile(err);
  const auto j = nlohmann::json::parse(log);
  EXPECT_EQ(j.at("msg"), "startup failed");
  EXPECT_NE(j.at("error").get<std::string>().find(
                "store: postgresql: cannot connect to postgresql://axqc@127.0.0.1:1/axqc"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("s3cret"), std::string::npos) << log;
}

// Every statement's first column of every row, as text.
std::vector<std::string> SqliteQuery(const fs::path& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::vector<std::string> out;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << db_path << ": " << sqlite3_errmsg(db);
    sqlite3_close(db);
    return out;
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  } else {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      const auto* text = sqlite3_column_text(stmt, 0);
      out.emplace_back(text == nullptr ? "" : reinterpret_cast<const char*>(text));
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

int StartAndWaitForPort(std::unique_ptr<ServerProcess>& proc, const TempDir& dir,
                        const fs::path& store) {
  const fs::path ready = dir / "ready.json";
  const fs::path err = dir / "stderr.log";
  fs::remove(ready);
  proc = std::make_unique<ServerProcess>(
      std::vector<std::string>{"--listen", "127.0.0.1:0", "--metrics-listen", "", "--ready-file",
                               ready.string(), "--store-path", store.string(), "--workers", "2",
                               "--queue-capacity", "64", "--log-level", "warn"},
      std::vector<std::string>{}, err);
  if (!WaitFor([&] { return fs::exists(ready); }, std::chrono::seconds(30))) {
    ADD_FAILURE() << "server did not start: " << ReadFile(err);
    return 0;
  }
  return nlohmann::json::parse(ReadFile(ready)).at("grpc_port");
}

// Many concurrent checks of distinct models; SIGKILL while reports and history rows are being
// written. Every report a client received must be in the store after the restart (results are
// committed before the reply is sent), and the database must be intact.
TEST(ServerBinary, SigkillWhileWritingResultsLosesNoAcknowledgedReport) {
  TempDir dir;
  const fs::path store = dir / "store.sqlite3";
  std::unique_ptr<ServerProcess> proc;
  const int port = StartAndWaitForPort(proc, dir, store);
  ASSERT_GT(port, 0);

  constexpr int kModels = 1000;
  constexpr int kClients = 8;
  std::vector<std::string> models;
  for (int i = 0; i < kModels; ++i) {
    models.push_back(i % 3 == 0 ? NonConformantModel("kill" + std::to_string(i))
                                : ConformantModel("kill" + std::to_string(i)));
  }
  std::mutex mu;
  std::map<std::string, v1::Verdict> acknowledged;  // sha256 -> verdict the client received
  std::atomic<int> next{0};
  std::atomic<int> failures_after_kill{0};
  std::atomic<bool> killed{false};
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  auto stub = v1::Checker::NewStub(channel);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      for (int i = next.fetch_add(1); i < kModels; i = next.fetch_add(1)) {
        v1::CheckResponse resp;
        const grpc::Status s =
            CheckInline(*stub, models[i], &resp, {}, false, std::chrono::milliseconds(60000));
        if (s.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          acknowledged[resp.sha256()] = resp.verdict();
        } else if (killed.load()) {
          failures_after_kill.fetch_add(1);
          return;
        } else {
          ADD_FAILURE() << "before the kill: " << s.error_message();
        }
      }
    });
  }
  // Kill once a good number of results is written and more are in flight.
  ASSERT_TRUE(WaitFor(
      [&] {
        std::lock_guard<std::mutex> lock(mu);
        return acknowledged.size() >= 300;
      },
      std::chrono::seconds(120)));
  killed.store(true);
  EXPECT_EQ(proc->Stop(SIGKILL, std::chrono::seconds(20)), 128 + SIGKILL);
  for (auto& t : clients) t.join();
  stub.reset();
  channel.reset();
  std::map<std::string, v1::Verdict> acked;
  {
    std::lock_guard<std::mutex> lock(mu);
    acked = acknowledged;
  }
  ASSERT_GE(acked.size(), 300u);
  EXPECT_LT(acked.size(), static_cast<std::size_t>(kModels));  // killed mid-run
  EXPECT_GE(failures_after_kill.load(), 1);

  // The database opens and is intact (SQLite replays the WAL), and holds every acknowledged
  // report and its history row.
  EXPECT_EQ(SqliteQuery(store, "PRAGMA integrity_check"), std::vector<std::string>{"ok"});
  EXPECT_EQ(SqliteQuery(store, "PRAGMA foreign_key_check"), std::vector<std::string>{});
  const auto stored = SqliteQuery(store, "SELECT sha256 FROM reports");
  const std::set<std::string> stored_set(stored.begin(), stored.end());
  const auto history = SqliteQuery(store, "SELECT sha256 FROM history");
  const std::set<std::string> history_set(history.begin(), history.end());
  for (const auto& [sha, verdict] : acked) {
    EXPECT_EQ(stored_set.count(sha), 1u) << sha;
    EXPECT_EQ(history_set.count(sha), 1u) << sha;
  }

  // Restart on the same store: every acknowledged report is served from it.
  const int port2 = StartAndWaitForPort(proc, dir, store);
  ASSERT_GT(port2, 0);
  channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port2), grpc::InsecureChannelCredentials());
  stub = v1::Checker::NewStub(channel);
  for (const auto& [sha, verdict] : acked) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::GetReportRequest req;
    req.set_sha256(sha);
    v1::CheckResponse resp;
    const grpc::Status s = stub->GetReport(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << sha << ": " << s.error_message();
    EXPECT_EQ(resp.verdict(), verdict);
    EXPECT_EQ(resp.cache(), v1::CACHE_RESULT_STORE_HIT);
    EXPECT_EQ(resp.report().model().sha256(), sha);
  }
  stub.reset();
  channel.reset();
  EXPECT_EQ(proc->Stop(SIGTERM, std::chrono::seconds(30)), 0);
  EXPECT_EQ(SqliteQuery(store, "PRAGMA integrity_check"), std::vector<std::string>{"ok"});
}

// One server per SQLite file: a second one on the same file is refused at startup, and the file is
// free again once the first is gone (also after SIGKILL).
TEST(ServerBinary, SecondServerOnTheSameSqliteFileIsRefused) {
  TempDir dir;
  const fs::path store = dir / "store.sqlite3";
  std::unique_ptr<ServerProcess> first;
  ASSERT_GT(StartAndWaitForPort(first, dir, store), 0);
  const fs::path err = dir / "second.log";
  ServerProcess second(
      {"--listen", "127.0.0.1:0", "--metrics-listen", "", "--store-path", store.string()}, {}, err);
  EXPECT_EQ(second.Wait(), 1);
  const std::string log = ReadFile(err);
  const auto j = nlohmann::json::parse(log);
  EXPECT_EQ(j.at("msg"), "startup failed");
  const std::string error = j.at("error");
  EXPECT_NE(error.find("sqlite: " + store.string() + " is in use by another axqc-server (pid "),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("run one server per SQLite file"), std::string::npos) << error;
  EXPECT_EQ(first->Stop(SIGKILL, std::chrono::seconds(20)), 128 + SIGKILL);
  std::unique_ptr<ServerProcess> third;
  EXPECT_GT(StartAndWaitForPort(third, dir, store), 0);
  EXPECT_EQ(third->Stop(SIGTERM, std::chrono::seconds(20)), 0);
}

// A model of `mib` MiB: the conformant test model plus an unused INT8 initializer of that size.
std::string BigModel(const std::string& tag, std::size_t mib) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(ConformantModel(tag)));
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("padding_" + tag);
  t->set_data_type(onnx::TensorProto::INT8);
  t->add_dims(static_cast<std::int64_t>(mib) << 20);
  std::string raw(mib << 20, '\0');
  for (std::size_t i = 0; i < raw.size(); i += 4096) raw[i] = static_cast<char>(tag.size() + i);
  t->set_raw_data(std::move(raw));
  return m.SerializeAsString();
}

// Memory is given back after big checks: three 48 MiB models checked one after the other, then the
// idle resident size is compared with the one before (plus the report cache). The bound is
// generous (one model size) and involves no timing; without returning memory the server keeps
// several times the model size.
// Checks three 48 MiB models and waits for the trim once the server is idle
// (--memory-trim-idle-seconds): the resident size returns near the baseline.
void IdleMemoryReturnsAfterBigChecks(const std::string& isolation) {
  TempDir dir;
  const fs::path ready = dir / "ready.json";
  const fs::path err = dir / "stderr.log";
  ServerProcess proc(
      {"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--ready-file", ready.string(),
       "--store-path", (dir / "store.sqlite3").string(), "--workers", "2", "--cache-bytes", "16MiB",
       "--log-level", "warn", "--isolation", isolation, "--memory-trim-idle-seconds", "0.2"},
      {}, err);
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready); }, std::chrono::seconds(20)))
      << ReadFile(err);
  const auto ports = nlohmann::json::parse(ReadFile(ready));
  const int metrics_port = ports.at("metrics_port");
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(ports.at("grpc_port").get<int>()),
                          grpc::InsecureChannelCredentials());
  auto stub = v1::Checker::NewStub(channel);
  // Warm up (first check, allocator arenas, gRPC buffers) with a small model, then the baseline.
  v1::CheckResponse resp;
  ASSERT_TRUE(Upload(*stub, ConformantModel("warm-up"), &resp).ok());
  const double baseline = ScrapeMetrics(metrics_port).Value("process_resident_memory_bytes");
  ASSERT_GT(baseline, 0);
  constexpr std::size_t kMiB = 48;
  for (const char* tag : {"big-1", "big-2", "big-3"}) {
    const std::string model = BigModel(tag, kMiB);
    UploadArgs ua;
    ua.chunk = 1 << 20;
    const grpc::Status s = Upload(*stub, model, &resp, ua);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  // One trim, once the server has been idle for 0.2 s (none while the checks followed each
  // other, unless a check ended more than 0.2 s before the next began on this machine).
  ASSERT_TRUE(WaitFor(
      [&] {
        return ScrapeMetrics(metrics_port).Value("axqc_memory_trims_total", {{"reason", "idle"}}) >=
               1;
      },
      std::chrono::seconds(20)));
  const Scrape idle = ScrapeMetrics(metrics_port);
  EXPECT_EQ(idle.Value("axqc_memory_trims_total", {{"reason", "check"}}), 0);
  EXPECT_EQ(idle.Value("axqc_busy_workers"), 0);
  EXPECT_EQ(idle.Value("axqc_uploads_in_flight"), 0);
  EXPECT_EQ(idle.Value("axqc_check_duration_seconds_count", {{"stage", "check"}}), 4);
  const double rss = idle.Value("process_resident_memory_bytes");
  const double cache = idle.Value("axqc_cache_memory_bytes");
  std::cout << "resident: baseline " << baseline / 1048576 << " MiB, after 3 x " << kMiB
            << " MiB checks " << rss / 1048576 << " MiB, report cache " << cache / 1048576
            << " MiB\n";
  EXPECT_LE(rss, baseline + cache + static_cast<double>(kMiB << 20))
      << "idle resident size " << rss / 1048576 << " MiB, baseline " << baseline / 1048576
      << " MiB";
  stub.reset();
  channel.reset();
  EXPECT_EQ(proc.Stop(SIGTERM, std::chrono::seconds(30)), 0);
}

TEST(ServerBinary, IdleMemoryReturnsAfterBigChecks) { IdleMemoryReturnsAfterBigChecks("process"); }

TEST(ServerBinary, IdleMemoryReturnsAfterBigChecksInProcess) {
  IdleMemoryReturnsAfterBigChecks("off");
}

// GET /healthz and /readyz answer what the gRPC health service answers (no token needed, also
// with one), /readyz turns 503 as soon as a shutdown starts (the port still answers during
// --shutdown-delay-seconds), and `axqc health` pointed at the HTTP port says what it is.
TEST(ServerBinary, HttpHealthEndpointsAndTheCliOnTheWrongPort) {
  TempDir dir;
  WriteFile(dir / "token", "s3cret-token\n");
  const fs::path ready = dir / "ready.json";
  const fs::path err = dir / "stderr.log";
  ServerProcess proc(
      {"--listen", "127.0.0.1:0", "--metrics-listen", "", "--http-listen", "127.0.0.1:0",
       "--ready-file", ready.string(), "--auth-token-file", (dir / "token").string(),
       "--shutdown-delay-seconds", "3", "--isolation", "off", "--store-path", ":memory:"},
      {}, err);
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready); }, std::chrono::seconds(20)))
      << ReadFile(err);
  const auto ports = nlohmann::json::parse(ReadFile(ready));
  const int http_port = ports.at("http_port");
  auto status_of = [](const std::string& response) {
    return response.size() > 12 ? std::stoi(response.substr(9, 3)) : 0;
  };
  auto body_of = [](const std::string& response) {
    const auto at = response.find("\r\n\r\n");
    return at == std::string::npos ? nlohmann::json()
                                   : nlohmann::json::parse(response.substr(at + 4));
  };
  std::string readyz = HttpGet(http_port, "/readyz");
  EXPECT_EQ(status_of(readyz), 200) << readyz;
  EXPECT_EQ(body_of(readyz), nlohmann::json::parse(R"({"status":"SERVING"})"));
  std::string healthz = HttpGet(http_port, "/healthz");
  EXPECT_EQ(status_of(healthz), 200) << healthz;
  EXPECT_EQ(body_of(healthz), nlohmann::json::parse(R"({"status":"SERVING","draining":false})"));
  // The API itself needs the token.
  EXPECT_EQ(status_of(HttpGet(http_port, "/v1/rules")), 401);

  // The CLI's health command on the HTTP port: a clear message, no verdict.
  const std::string out = (dir / "health.txt").string();
  const std::string cmd = std::string(AXQC_CLI_BIN) +
                          " health --server 127.0.0.1:" + std::to_string(http_port) +
                          " --token s3cret-token > " + out + " 2>&1";
  const int st = std::system(cmd.c_str());
  EXPECT_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 4) << ReadFile(out);  // no verdict
  EXPECT_NE(ReadFile(out).find("127.0.0.1:" + std::to_string(http_port) +
                               " answers HTTP/1.1, not gRPC: it looks like axqc-server's HTTP "
                               "port (--http-listen)"),
            std::string::npos)
      << ReadFile(out);

  // Shutdown: not ready at once, still alive while it drains.
  proc.Signal(SIGTERM);
  ASSERT_TRUE(WaitFor([&] { return status_of(HttpGet(http_port, "/readyz")) == 503; },
                      std::chrono::seconds(3)));
  readyz = HttpGet(http_port, "/readyz");
  EXPECT_EQ(body_of(readyz), nlohmann::json::parse(R"({"status":"NOT_SERVING"})")) << readyz;
  healthz = HttpGet(http_port, "/healthz");
  EXPECT_EQ(status_of(healthz), 200) << healthz;
  EXPECT_EQ(body_of(healthz), nlohmann::json::parse(R"({"status":"NOT_SERVING","draining":true})"));
  EXPECT_EQ(proc.Wait(), 0);
}

}  // namespace
}  // namespace axqc::test
