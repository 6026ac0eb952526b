// Process isolation with the real axqc-server binary (--isolation process): a worker killed with
// SIGKILL during a check, a check over the memory limit, over the CPU-time limit, a seccomp
// violation, the memory of failed models, the metrics and history rows of all of them. The
// misbehaving worker is the test-only axqc-test-worker (tests/isolate/), given with
// --worker-program; the production axqc-worker has no way to misbehave on request.
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "axqc/sha256.h"
#include "axqc/wire/report_proto.h"
#include "server_test_util.h"

extern char** environ;

namespace axqc::test {
namespace {

class ServerProcess {
 public:
  ServerProcess(std::vector<std::string> args, const fs::path& stderr_path) {
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
  int Stop() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// Field `index` (1-based, after the command) of /proc/PID/stat.
std::optional<unsigned long long> StatField(pid_t pid, int index) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  for (int i = 3; i <= index && (rest >> field); ++i) {
    if (i == index) return std::stoull(field == "R" || field == "S" ? "0" : field);
  }
  return std::nullopt;
}

// The worker processes: children of `parent`.
std::vector<pid_t> Children(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    if (StatField(pid, 4) == static_cast<unsigned long long>(parent)) out.push_back(pid);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// User CPU ticks of `pid` (field 14).
unsigned long long CpuTicks(pid_t pid) { return StatField(pid, 14).value_or(0); }

// Children of `parent` that are not zombies (a killed worker not reaped yet is one).
std::vector<pid_t> LiveChildren(pid_t parent) {
  std::vector<pid_t> out;
  for (pid_t p : Children(parent)) {
    std::ifstream in("/proc/" + std::to_string(p) + "/stat");
    std::string line;
    std::getline(in, line);
    const auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z') {
      out.push_back(p);
    }
  }
  return out;
}

// The worker among `workers` whose CPU time grows (the one spinning on axqc-test:spin), or -1.
pid_t SpinningWorker(const std::vector<pid_t>& workers) {
  pid_t busy = -1;
  WaitFor(
      [&] {
        std::map<pid_t, unsigned long long> before;
        for (pid_t p : workers) before[p] = CpuTicks(p);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        for (pid_t p : workers) {
          if (CpuTicks(p) > before[p] + 5) busy = p;
        }
        return busy > 0;
      },
      std::chrono::seconds(20));
  return busy;
}

class IsolatedServer {
 public:
  IsolatedServer(const TempDir& dir, std::vector<std::string> extra)
      : dir_(dir), err_(dir / "stderr.log") {
    const fs::path ready = dir / "ready.json";
    std::vector<std::string> args = {"--listen",         "127.0.0.1:0",
                                     "--metrics-listen", "127.0.0.1:0",
                                     "--ready-file",     ready.string(),
                                     "--store-path",     (dir / "store.sqlite3").string(),
                                     "--workers",        "2",
                                     "--worker-program", AXQC_TEST_WORKER_BIN};
    args.insert(args.end(), extra.begin(), extra.end());
    proc_ = std::make_unique<ServerProcess>(args, err_);
    if (!WaitFor([&] { return fs::exists(ready); }, std::chrono::seconds(30))) {
      throw std::runtime_error("server did not start: " + ReadFile(err_));
    }
    const auto ports = nlohmann::json::parse(ReadFile(ready));
    metrics_port_ = ports.at("metrics_port");
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(ports.at("grpc_port").get<int>()),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::Checker::NewStub(channel_);
  }
  ~IsolatedServer() { Stop(); }

  grpc::Status Check(const std::string& bytes, const std::string& name,
                     v1::CheckResponse* resp = nullptr) {
    v1::CheckResponse local;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::CheckRequest req;
    req.set_content(bytes);
    req.set_name(name);
    return stub_->Check(&ctx, req, resp != nullptr ? resp : &local);
  }
  Scrape Metrics() const { return ScrapeMetrics(metrics_port_); }
  pid_t pid() const { return proc_->pid(); }
  std::string Log() const { return ReadFile(err_); }
  int Stop() {
    if (proc_ == nullptr) return -1;
    stub_.reset();
    channel_.reset();
    const int rc = proc_->Stop();
    proc_.reset();
    return rc;
  }
  // verdict, cache of every history row (oldest first); call after Stop().
  std::vector<std::pair<std::string, std::string>> History() const {
    std::vector<std::pair<std::string, std::string>> rows;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2((dir_ / "store.sqlite3").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) ==
        SQLITE_OK) {
      sqlite3_stmt* st = nullptr;
      sqlite3_prepare_v2(db, "SELECT verdict, cache FROM history ORDER BY id", -1, &st, nullptr);
      while (st != nullptr && sqlite3_step(st) == SQLITE_ROW) {
        rows.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                          reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
      }
      sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return rows;
  }

 private:
  const TempDir& dir_;
  fs::path err_;
  std::unique_ptr<ServerProcess> proc_;
  int metrics_port_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Checker::Stub> stub_;
};

TEST(ServerIsolation, AWorkerKilledDuringACheckFailsOnlyThatRequest) {
  TempDir dir;
  IsolatedServer server(dir, {"--worker-cpu-seconds", "120"});
  const std::vector<pid_t> workers = Children(server.pid());
  ASSERT_EQ(workers.size(), 2u);

  // A check that spins in its worker until killed.
  const std::string victim = ConformantModel("victim");
  grpc::Status victim_status;
  std::thread victim_thread([&] { victim_status = server.Check(victim, "axqc-test:spin"); });
  // The spinning worker is the one whose CPU time grows.
  const pid_t busy = SpinningWorker(workers);
  ASSERT_GT(busy, 0);

  // Meanwhile the other worker answers.
  v1::CheckResponse resp;
  grpc::Status s = server.Check(NonConformantModel("concurrent"), "concurrent.onnx", &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_NON_CONFORMANT);

  ASSERT_EQ(::kill(busy, SIGKILL), 0);
  victim_thread.join();
  EXPECT_EQ(victim_status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(victim_status.error_message(), "the checker crashed on this model (signal 9: SIGKILL)");

  // A new worker replaces it; the next checks succeed.
  ASSERT_TRUE(
      WaitFor([&] { return Children(server.pid()).size() == 2; }, std::chrono::seconds(20)));
  const auto now = Children(server.pid());
  EXPECT_EQ(std::count(now.begin(), now.end(), busy), 0);
  s = server.Check(ConformantModel("next"), "next.onnx", &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);

  // One failure does not mark the model (the kill may not have been its doing): it is checked
  // again, in another worker, which is killed too.
  std::thread again([&] { victim_status = server.Check(victim, "axqc-test:spin"); });
  const pid_t busy2 = SpinningWorker(Children(server.pid()));
  ASSERT_GT(busy2, 0);
  EXPECT_NE(busy2, busy);
  ASSERT_EQ(::kill(busy2, SIGKILL), 0);
  again.join();
  EXPECT_EQ(victim_status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(victim_status.error_message(), "the checker crashed on this model (signal 9: SIGKILL)");
  ASSERT_TRUE(
      WaitFor([&] { return Children(server.pid()).size() == 2; }, std::chrono::seconds(20)));

  // Failed in two workers: remembered, answered at once, without a worker.
  const auto t0 = std::chrono::steady_clock::now();
  s = server.Check(victim, "axqc-test:spin");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(s.error_message().rfind("the checker crashed on this model (signal 9: SIGKILL); "
                                    "remembered from an earlier check",
                                    0),
            0u)
      << s.error_message();

  const Scrape m = server.Metrics();
  EXPECT_EQ(m.Value("axqc_worker_restarts_total", {{"cause", "crashed"}}), 2);
  EXPECT_EQ(m.Value("axqc_worker_restarts_total", {{"cause", "idle_exit"}}), 0);
  EXPECT_EQ(m.Value("axqc_worker_checks_total", {{"outcome", "crashed"}}), 2);
  EXPECT_EQ(m.Value("axqc_worker_checks_total", {{"outcome", "ok"}}), 2);
  EXPECT_EQ(m.Value("axqc_checks_total", {{"verdict", "checker_failed"}, {"source", "inline"}}), 3);
  EXPECT_EQ(m.Value("axqc_requests_total", {{"method", "Check"}, {"code", "INTERNAL"}}), 3);
  EXPECT_GT(m.Value("axqc_worker_resident_bytes", {{"stat", "sum"}}), 0);
  EXPECT_GT(m.Value("axqc_worker_resident_bytes", {{"stat", "max"}}), 0);

  EXPECT_EQ(server.Stop(), 0);
  using Row = std::pair<std::string, std::string>;
  const std::vector<Row> want = {{"non_conformant", "miss"},
                                 {"checker_failed", "miss"},
                                 {"conformant", "miss"},
                                 {"checker_failed", "miss"},
                                 {"checker_failed", "failure_memory"}};
  EXPECT_EQ(server.History(), want);
}

// What the kernel's OOM killer does: every idle worker killed with SIGKILL. The next check of a
// good model is answered (on a replacement worker), nothing is blamed on it or remembered, and
// the dead workers are replaced even when no check comes.
TEST(ServerIsolation, IdleWorkersKilledWithSigkillAreReplacedAndBlameNoModel) {
  TempDir dir;
  IsolatedServer server(dir, {});
  double idle_before = 0;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    const std::vector<pid_t> workers = LiveChildren(server.pid());
    ASSERT_EQ(workers.size(), 2u);
    for (pid_t p : workers) ASSERT_EQ(::kill(p, SIGKILL), 0);
    if (round == 2) {
      // No check: the pool notices the hang-ups by itself and starts two new workers.
      ASSERT_TRUE(WaitFor(
          [&] {
            const auto now = LiveChildren(server.pid());
            return now.size() == 2 && std::find_first_of(now.begin(), now.end(), workers.begin(),
                                                         workers.end()) == now.end();
          },
          std::chrono::seconds(20)));
    }
    // At once: the check reaches a dead worker or a replacement, and is answered all the same.
    const std::string model = ConformantModel("after-oom-" + std::to_string(round));
    v1::CheckResponse resp;
    const grpc::Status s = server.Check(model, "good.onnx", &resp);
    ASSERT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
    EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);
    // Both killed workers replaced (whether the check or the pool's watch found them dead), and
    // the replacements counted as deaths while idle, never as crashes.
    ASSERT_TRUE(WaitFor(
        [&] {
          const auto now = LiveChildren(server.pid());
          return now.size() == 2 &&
                 std::find_first_of(now.begin(), now.end(), workers.begin(), workers.end()) ==
                     now.end() &&
                 server.Metrics().Value("axqc_worker_restarts_total", {{"cause", "idle_exit"}}) >
                     idle_before;
        },
        std::chrono::seconds(20)))
        << "idle_exit restarts "
        << server.Metrics().Value("axqc_worker_restarts_total", {{"cause", "idle_exit"}});
    idle_before = server.Metrics().Value("axqc_worker_restarts_total", {{"cause", "idle_exit"}});
  }
  const Scrape m = server.Metrics();
  EXPECT_GE(m.Value("axqc_worker_restarts_total", {{"cause", "idle_exit"}}), 3);
  EXPECT_EQ(m.Value("axqc_worker_restarts_total", {{"cause", "crashed"}}), 0);
  EXPECT_EQ(m.Value("axqc_worker_checks_total", {{"outcome", "ok"}}), 3);
  EXPECT_EQ(m.Value("axqc_worker_checks_total", {{"outcome", "crashed"}}), 0);
  EXPECT_EQ(m.Value("axqc_checks_total", {{"verdict", "checker_failed"}, {"source", "inline"}}), 0);
  EXPECT_NE(server.Log().find("worker process died while idle; replaced"), std::string::npos);
  EXPECT_EQ(server.Stop(), 0);
}

// A model whose check crashes a worker is remembered only after it crashed a second worker.
TEST(ServerIsolation, AModelIsRememberedOnlyAfterItFailedInTwoWorkers) {
  TempDir dir;
  IsolatedServer server(dir, {});
  const std::string model = ConformantModel("segv");
  const std::string crashed = "the checker crashed on this model (signal 11: SIGSEGV)";
  grpc::Status s = server.Check(model, "axqc-test:segv");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(s.error_message(), crashed);
  // Not remembered after one failure: checked again (a second worker crashes).
  s = server.Check(model, "axqc-test:segv");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(s.error_message(), crashed);
  // Now remembered: answered without a worker.
  s = server.Check(model, "axqc-test:segv");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(s.error_message().rfind(crashed + "; remembered from an earlier check", 0), 0u)
      << s.error_message();
  // Another model whose worker crashed once is checked again, and answered when it checks.
  const std::string once = ConformantModel("segv-once");
  s = server.Check(once, "axqc-test:segv");
  EXPECT_EQ(s.error_message(), crashed);
  v1::CheckResponse resp;
  s = server.Check(once, "once.onnx", &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);

  const Scrape m = server.Metrics();
  EXPECT_EQ(m.Value("axqc_worker_checks_total", {{"outcome", "crashed"}}), 3);
  EXPECT_EQ(m.Value("axqc_worker_checks_total", {{"outcome", "ok"}}), 1);
  EXPECT_EQ(m.Value("axqc_cache_lookups_total", {{"result", "failure_memory"}}), 1);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(ServerIsolation, LimitsAndSandboxViolationsGetTheirStatus) {
  TempDir dir;
  IsolatedServer server(dir, {"--worker-cpu-seconds", "3", "--worker-memory-limit", "768MiB",
                              "--worker-failure-memory-seconds", "0"});
  struct Case {
    const char* name;
    grpc::StatusCode code;
    std::string message;
    const char* outcome;
  };
  const Case cases[] = {
      {"axqc-test:alloc", grpc::StatusCode::RESOURCE_EXHAUSTED,
       "the check of this model ran out of memory (the worker's address-space limit, "
       "worker-memory-limit)",
       "memory"},
      {"axqc-test:spin", grpc::StatusCode::DEADLINE_EXCEEDED,
       "the check of this model used up its CPU time (worker-cpu-seconds)", "cpu_time"},
      {"axqc-test:socket", grpc::StatusCode::INTERNAL,
       "the checker crashed on this model (signal 31: SIGSYS, a system call the sandbox refuses)",
       "crashed"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    // One model per case: the successful check below caches its report.
    const std::string model = ConformantModel(std::string("limits-") + c.name);
    const grpc::Status s = server.Check(model, c.name);
    EXPECT_EQ(s.error_code(), c.code) << s.error_message();
    EXPECT_EQ(s.error_message(), c.message);
    // Not remembered (worker-failure-memory-seconds 0): the same model is checked again.
    v1::CheckResponse resp;
    const grpc::Status ok = server.Check(model, "fine.onnx", &resp);
    ASSERT_TRUE(ok.ok()) << ok.error_message();
    EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);
  }
  const Scrape m = server.Metrics();
  for (const auto& c : cases) {
    EXPECT_EQ(m.Value("axqc_worker_restarts_total", {{"cause", c.outcome}}), 1) << c.outcome;
    EXPECT_EQ(m.Value("axqc_worker_checks_total", {{"outcome", c.outcome}}), 1) << c.outcome;
  }
  EXPECT_EQ(m.Value("axqc_requests_total", {{"method", "Check"}, {"code", "RESOURCE_EXHAUSTED"}}),
            1);
  EXPECT_EQ(m.Value("axqc_requests_total", {{"method", "Check"}, {"code", "DEADLINE_EXCEEDED"}}),
            1);
  EXPECT_EQ(server.Stop(), 0);
}

TEST(ServerIsolation, TheProductionWorkerChecksAndIsolationCanBeTurnedOff) {
  TempDir dir;
  for (const char* isolation : {"process", "off"}) {
    SCOPED_TRACE(isolation);
    const fs::path ready = dir / (std::string(isolation) + ".json");
    ServerProcess proc(
        {"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--ready-file",
         ready.string(), "--store-path", ":memory:", "--workers", "2", "--isolation", isolation},
        dir / "stderr.log");
    ASSERT_TRUE(WaitFor([&] { return fs::exists(ready); }, std::chrono::seconds(30)))
        << ReadFile(dir / "stderr.log");
    EXPECT_EQ(Children(proc.pid()).size(), std::string(isolation) == "process" ? 2u : 0u);
    const auto ports = nlohmann::json::parse(ReadFile(ready));
    auto stub = v1::Checker::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(ports.at("grpc_port").get<int>()),
                            grpc::InsecureChannelCredentials()));
    const std::string model = NonConformantModel(std::string("prod-") + isolation);
    v1::CheckResponse resp;
    const grpc::Status s = CheckInline(*stub, model, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    const v1::Report want = wire::ToProto(DirectReport(model, "model.onnx"));
    EXPECT_EQ(resp.report().SerializeAsString(), want.SerializeAsString());

    // A large upload (hashed on its own thread into a sealed memfd, which a worker reads as it
    // is): the report names the bytes by the hash the server computed, the same as a direct check.
    std::string big = NonConformantModel(std::string("big-") + isolation);
    const std::size_t pad = 5u << 20;  // an unknown field of ModelProto (number 1000): ignored
    big.push_back(static_cast<char>(0xc2));  // tag (1000 << 3) | 2, as a varint
    big.push_back(static_cast<char>(0x3e));
    for (std::size_t v = pad; v >= 0x80; v >>= 7)
      big.push_back(static_cast<char>((v & 0x7f) | 0x80));
    big.push_back(static_cast<char>(pad >> 21));
    big.append(pad, '\x07');
    UploadArgs a;
    a.chunk = 64 * 1024;
    a.declared_size = big.size();
    a.declared_sha256 = axqc::Sha256Hex(big);
    const grpc::Status up = Upload(*stub, big, &resp, a);
    ASSERT_TRUE(up.ok()) << up.error_message();
    const v1::Report want_big = wire::ToProto(DirectReport(big, "upload.onnx"));
    EXPECT_EQ(resp.report().model().sha256(), axqc::Sha256Hex(big));
    EXPECT_EQ(resp.report().SerializeAsString(), want_big.SerializeAsString());
    // A client's hash is compared with the server's, never taken: the same bytes declared under
    // another hash are refused.
    const std::string claimed = axqc::Sha256Hex("something else");
    a.declared_sha256 = claimed;
    const grpc::Status wrong = Upload(*stub, big, &resp, a);
    EXPECT_EQ(wrong.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(wrong.error_message().find("sha256 mismatch"), std::string::npos);

    const Scrape m = ScrapeMetrics(ports.at("metrics_port"));
    EXPECT_EQ(m.Value("axqc_worker_checks_total", {{"outcome", "ok"}}),
              std::string(isolation) == "process" ? 2 : 0);
    stub.reset();
    EXPECT_EQ(proc.Stop(), 0);
  }
}

}  // namespace
}  // namespace axqc::test
