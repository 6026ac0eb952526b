// Limits of what a client sends, at the door: the GetStats time bounds through the real
// axqc-server binary (a window beyond the range of google.protobuf.Timestamp used to abort the
// process), and the length of every client string, the request log's size and the HTTP statuses
// of the refusals through the in-process server (gRPC and HTTP/JSON API).
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>

#include "http_stub.h"
#include "server_test_util.h"

extern char** environ;

namespace axqc::test {
namespace {

using grpc::StatusCode;
using HealthResp = grpc::health::v1::HealthCheckResponse;

// ------------------------------------------------------------------------------------------------
// The real binary.

class ServerProcess {
 public:
  ServerProcess(const std::vector<std::string>& args, const fs::path& stderr_path) {
    std::vector<std::string> argv_s = {AXQC_SERVER_BIN};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::string(*e).rfind("AXQC_", 0) != 0) env_s.emplace_back(*e);
    }
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
  // True while the process has not exited.
  bool Running() {
    int status = 0;
    if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      exit_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return pid_ > 0;
  }
  int exit_status() const { return exit_; }
  int Stop(std::chrono::seconds timeout) {
    ::kill(pid_, SIGTERM);
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (!Running()) return exit_;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int exit_ = -1;
};

grpc::Status GetStats(v1::Checker::Stub& stub, const v1::GetStatsRequest& req,
                      v1::GetStatsResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return stub.GetStats(&ctx, req, resp);
}

TEST(ServerBinaryLimits, StatsWindowBeyondTheTimestampRangeIsRefusedAndTheServerStaysUp) {
  TempDir dir;
  const fs::path ready = dir / "ready.json";
  const fs::path err = dir / "stderr.log";
  ServerProcess proc({"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--http-listen",
                      "127.0.0.1:0", "--ready-file", ready.string(), "--store-path",
                      (dir / "store.sqlite3").string(), "--workers", "1"},
                     err);
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) && !ReadFile(ready).empty(); },
                      std::chrono::seconds(20)))
      << ReadFile(err);
  const auto ports = nlohmann::json::parse(ReadFile(ready));
  const int grpc_port = ports.at("grpc_port");
  const int http_port = ports.at("http_port");
  ASSERT_GT(http_port, 0);
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_port),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::Checker::NewStub(channel);
  auto health = grpc::health::v1::Health::NewStub(channel);

  // The request that aborted the server: 106000 weeks (~2031 years) before now is before
  // 0001-01-01, outside google.protobuf.Timestamp.
  HttpAnswer a = HttpCall(http_port, "GET", "/v1/stats?window=106000w");
  EXPECT_EQ(a.status, 400) << a.body;
  ASSERT_TRUE(nlohmann::json::accept(a.body)) << a.body;
  EXPECT_EQ(ErrorField(a, "code"), "INVALID_ARGUMENT");
  EXPECT_EQ(ErrorField(a, "message"),
            "window is out of range: it must be a duration from 0s to 36525d (100 years)");
  ASSERT_TRUE(proc.Running()) << "exit " << proc.exit_status() << "\n" << ReadFile(err);

  // The same through gRPC: 64e9 s is a valid Duration, but not a valid window.
  v1::GetStatsRequest req;
  req.mutable_window()->set_seconds(64000000000);
  v1::GetStatsResponse resp;
  grpc::Status s = GetStats(*stub, req, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_EQ(s.error_message(),
            "window is out of range: it must be a duration from 0s to 36525d (100 years)");
  // An until near year 1 with a window that reaches before it.
  req.Clear();
  req.mutable_until()->set_seconds(-62135510400);  // 0001-01-02T00:00:00Z
  req.mutable_window()->set_seconds(2 * 86400);
  s = GetStats(*stub, req, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("until is out of range"), std::string::npos)
      << s.error_message();
  ASSERT_TRUE(proc.Running()) << "exit " << proc.exit_status() << "\n" << ReadFile(err);

  // Durations that overflow int64 milliseconds, a zero step, too many buckets with window.
  a = HttpCall(http_port, "GET", "/v1/stats?window=1099511627776w");
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_NE(ErrorField(a, "message").find("window is out of range"), std::string::npos) << a.body;
  a = HttpCall(http_port, "GET", "/v1/stats?step=0s");
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_NE(ErrorField(a, "message").find("step must be at least 1s"), std::string::npos) << a.body;
  a = HttpCall(http_port, "GET", "/v1/stats?window=1d&step=1s");
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_NE(ErrorField(a, "message").find("step gives more than 10000 buckets"), std::string::npos)
      << a.body;
  a = HttpCall(http_port, "GET", "/v1/models?since=0001-01-01T00:00:00Z");
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_NE(ErrorField(a, "message").find("since is out of range"), std::string::npos) << a.body;
  // A query parameter name that is not UTF-8 is repeated in the message: still JSON.
  a = HttpCall(http_port, "GET", "/v1/stats?x%ff=1");
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_TRUE(nlohmann::json::accept(a.body)) << a.body;

  // Still serving, on both transports.
  EXPECT_TRUE(proc.Running()) << "exit " << proc.exit_status() << "\n" << ReadFile(err);
  EXPECT_EQ(HealthStatus(*health), HealthResp::SERVING);
  // The longest window with the widest step: 1926-12-01 to 2026-12-01 in buckets of 7000 days
  // from the epoch (the first starts in 1916).
  a = HttpCall(http_port, "GET", "/v1/stats?until=2026-12-01T00:00:00Z&window=36525d&step=1000w");
  EXPECT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.Json().at("since"), "1926-12-01T00:00:00Z");
  EXPECT_EQ(a.Json().at("series").size(), 6u);
  stub.reset();
  health.reset();
  channel.reset();
  EXPECT_EQ(proc.Stop(std::chrono::seconds(20)), 0) << ReadFile(err);
}


TEST(RequestLimits, OversizedClientStringsAreRefusedOverGrpcAndNotCopiedIntoTheLog) {
  TempDir dir;
  TestServer ts(dir, WithHttp());
  const std::string model = ConformantModel("limits");
  const std::string name_8mib(8u << 20, 'n');
  {
    grpc::ClientContext ctx;
    v1::CheckRequest req;
    req.set_content(model);
    req.set_name(name_8mib);
    v1::CheckResponse resp;
    const grpc::Status s = ts.stub().Check(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(), "name is 8388608 bytes long; the limit is 1024 bytes");
  }
  {
    // At the limit: accepted, and served back as the report's model name.
    grpc::ClientContext ctx;
    v1::CheckRequest req;
    req.set_content(model);
    req.set_name(std::string(1024, 'n'));
    v1::CheckResponse resp;
    const grpc::Status s = ts.stub().Check(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  const std::string path_16mib(16u << 20, 'p');
  v1::CheckResponse resp;
  grpc::Status s = CheckPath(ts.stub(), path_16mib, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "path is 16777216 bytes long; the limit is 4096 bytes");
  // Under the limit, but one component longer than the file system allows: INVALID_ARGUMENT,
  // not INTERNAL.
  s = CheckPath(ts.stub(), std::string(300, 'c') + "/m.onnx", &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("path is too long"), std::string::npos) << s.error_message();
  {
    grpc::ClientContext ctx;
    v1::CheckRequest req;
    req.set_url("http://127.0.0.1/" + std::string(9000, 'u'));
    s = ts.stub().Check(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(), "url is 9017 bytes long; the limit is 8192 bytes");
  }
  {
    grpc::ClientContext ctx;
    v1::GetReportRequest req;
    req.set_sha256(std::string(64, 'a'));
    req.set_name(name_8mib);
    s = ts.stub().GetReport(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(), "name is 8388608 bytes long; the limit is 1024 bytes");
  }
  UploadArgs ua;
  ua.file_name = name_8mib;
  s = Upload(ts.stub(), model, &resp, ua);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "metadata.file_name is 8388608 bytes long; the limit is 1024 bytes");
  // A label key is repeated in the message only in part.
  s = CheckInline(ts.stub(), model, &resp, {{std::string(1u << 20, 'k'), "v"}});
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_LT(s.error_message().size(), 200u) << s.error_message().substr(0, 300);
  {
    grpc::ClientContext ctx;
    v1::RecordGateRequest req;
    req.set_request_id(std::string(1u << 20, 'r'));
    req.set_sha256(std::string(64, 'a'));
    v1::RecordGateResponse gate;
    s = ts.stub().RecordGate(&ctx, req, &gate);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  }
  // Every refusal wrote its log line, none of them with the client's megabytes.
  ts.Stop();
  const std::string log = ts.Log();
  EXPECT_LT(log.size(), 64u << 10) << "log of " << log.size() << " bytes";
  std::istringstream lines(log);
  std::string line;
  int refused = 0;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("msg", "") == "request" && j.value("code", "") == "INVALID_ARGUMENT") ++refused;
  }
  EXPECT_EQ(refused, 8);
}

TEST(RequestLimits, HttpRefusesOversizedStringsWith400) {
  TempDir dir;
  TestServer ts(dir, WithHttp());
  const int port = ts.server().http_port();
  ASSERT_GT(port, 0);
  // A path of about 1 MiB in a JSON body (under the 1 MiB JSON limit): 400, it was 500 INTERNAL.
  const std::string path(1000000, 'p');
  HttpAnswer a =
      HttpCall(port, "POST", "/v1/check", R"({"path": ")" + path + R"("})", "application/json");
  EXPECT_EQ(a.status, 400) << a.body.substr(0, 300);
  EXPECT_EQ(ErrorField(a, "message"), "path is 1000000 bytes long; the limit is 4096 bytes");
  a = HttpCall(port, "POST", "/v1/check",
               R"({"content": "AAAA", "name": ")" + std::string(5000, 'n') + R"("})",
               "application/json");
  EXPECT_EQ(a.status, 400) << a.body.substr(0, 300);
  EXPECT_EQ(ErrorField(a, "message"), "name is 5000 bytes long; the limit is 1024 bytes");
  // The model bytes as the body, the name in the query string.
  a = HttpCall(port, "POST", "/v1/check?name=" + std::string(5000, 'n'),
               ConformantModel("http-limits"), "application/octet-stream");
  EXPECT_EQ(a.status, 400) << a.body.substr(0, 300);
  EXPECT_EQ(ErrorField(a, "message"), "metadata.file_name is 5000 bytes long; the limit is 1024 bytes");
  a = HttpCall(port, "GET", "/v1/stats?label.project=" + std::string(300, 'v'));
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_NE(ErrorField(a, "message").find("longer than 256 bytes"), std::string::npos) << a.body;
}

TEST(RequestLimits, UrlModelOverTheSizeLimitIs413NotBusy) {
  // The registry answers with a Content-Length of 1 TiB.
  HttpStub http([](boost::asio::ip::tcp::socket& sock, const std::string& /*target*/,
                   const std::atomic<bool>& /*stop*/) {
    boost::system::error_code ec;
    boost::asio::write(
        sock,
        boost::asio::buffer(std::string("HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n"
                                        "Content-Type: application/octet-stream\r\n\r\n")),
        ec);
  });
  TempDir dir;
  TestServer ts(dir, WithHttp([](server::ServerConfig& c) { c.url_allow_hosts = {"127.0.0.1"}; }));
  const HttpAnswer a =
      HttpCall(ts.server().http_port(), "POST", "/v1/check",
               R"({"url": ")" + http.Url("/big.onnx") + R"("})", "application/json");
  EXPECT_EQ(a.status, 413) << a.body;
  EXPECT_EQ(ErrorField(a, "code"), "RESOURCE_EXHAUSTED");
  EXPECT_NE(ErrorField(a, "message").find("is over the limit of"), std::string::npos) << a.body;
  // gRPC keeps RESOURCE_EXHAUSTED.
  grpc::ClientContext ctx;
  v1::CheckRequest req;
  req.set_url(http.Url("/big.onnx"));
  v1::CheckResponse resp;
  const grpc::Status s = ts.stub().Check(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
}

}  // namespace
}  // namespace axqc::test
