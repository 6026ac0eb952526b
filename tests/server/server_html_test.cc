// The HTML report of the real axqc-server binary (docs/report-html.md, docs/security.md "Report
// pictures"): laid out in a worker process with --isolation process; a small dense model whose
// whole graph Graphviz would lay out for minutes is answered within the layout budget, off the HTTP
// listener's threads (a concurrent GET is answered while HTML reports render), cached, and sent
// with its Content-Security-Policy; the dashboard pages' policy allows no inline script but the
// report's own.
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "axqc/render_graph.h"
#include "axqc/sha256.h"
#include "modelgen/model_builder.h"
#include "server_test_util.h"

extern char** environ;

namespace axqc::test {
namespace {

// The real binary on loopback ports of its choosing, with a store and a log in `dir`, and
// `args` added; ready() once it wrote its ready file (ports()).
class ServerProcess {
 public:
  ServerProcess(const fs::path& dir, const std::vector<std::string>& args)
      : ready_(dir / "ready.json"), stderr_(dir / "stderr.log") {
    std::vector<std::string> argv_s = {AXQC_SERVER_BIN,
                                       "--listen",
                                       "127.0.0.1:0",
                                       "--metrics-listen",
                                       "127.0.0.1:0",
                                       "--http-listen",
                                       "127.0.0.1:0",
                                       "--ready-file",
                                       ready_.string(),
                                       "--workers",
                                       "1",
                                       "--store-path",
                                       (dir / "store.sqlite3").string()};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    const fs::path& stderr_path = stderr_;
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
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  bool ready() const {
    return WaitFor([&] { return fs::exists(ready_); }, std::chrono::seconds(30));
  }
  nlohmann::json ports() const { return nlohmann::json::parse(ReadFile(ready_)); }
  std::string log() const { return ReadFile(stderr_); }

 private:
  fs::path ready_, stderr_;
  pid_t pid_ = -1;
};

struct Got {
  int status = 0;  // 0: no answer within the timeout
  std::string head, body;
  double seconds = 0;
};

// GET over HTTP/1.0 with a receive timeout (a stalled server makes the request fail, not hang).
Got TimedGet(int port, const std::string& path, int timeout_seconds) {
  Got g;
  const auto start = std::chrono::steady_clock::now();
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{};
  tv.tv_sec = timeout_seconds;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    (void)::send(fd, req.data(), req.size(), 0);
    char buf[16384];
    for (;;) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  g.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto sep = out.find("\r\n\r\n");
  if (out.starts_with("HTTP/1.") && sep != std::string::npos) {
    g.status = std::stoi(out.substr(9, 3));
    g.head = out.substr(0, sep);
    g.body = out.substr(sep + 4);
  }
  return g;
}

// 295 Sum nodes, each adding the outputs of up to 16 earlier nodes: about 4,600 edges in under
// 64 KB, a graph Graphviz's dot lays out for minutes.
std::string DenseSumModel() {
  modelgen::ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {1, 8});
  std::vector<std::string> outs{"x"};
  for (std::size_t i = 0; i < 295; ++i) {
    std::vector<std::string> ins;
    for (std::size_t k = 0; k < 16 && k < outs.size(); ++k) {
      ins.push_back(outs[(i * 7919 + k * 104729) % outs.size()]);
    }
    const std::string out = "s" + std::to_string(i);
    b.Node("Sum", ins, {out}, {}, "sum" + std::to_string(i));
    outs.push_back(out);
  }
  b.Output(outs.back(), onnx::TensorProto::FLOAT, {1, 8});
  return b.Serialize();
}

TEST(ServerHtml, DenseModelHtmlDoesNotStallTheHttpApi) {
  TempDir dir;
  ServerProcess proc(dir.path(), {"--isolation", "off"});
  ASSERT_TRUE(proc.ready()) << proc.log();
  const auto ports = proc.ports();
  const int grpc_port = ports.at("grpc_port");
  const int http_port = ports.at("http_port");
  ASSERT_GT(http_port, 0);

  const std::string model = DenseSumModel();
  ASSERT_LT(model.size(), 64U * 1024);
  auto stub = v1::Checker::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(grpc_port),
                                                       grpc::InsecureChannelCredentials()));
  v1::CheckResponse resp;
  const grpc::Status s = CheckInline(*stub, model, &resp, {}, false, std::chrono::seconds(120));
  ASSERT_TRUE(s.ok()) << s.error_message() << proc.log();
  const std::string sha = axqc::Sha256Hex(model);
  ASSERT_EQ(resp.report().graph().nodes_size(), 295);  // the whole graph is stored

  // Four HTML requests at once (twice the listener's threads) and, while they are answered, the
  // JSON API and the dashboard.
  std::vector<std::future<Got>> html;
  for (int i = 0; i < 4; ++i) {
    html.push_back(std::async(std::launch::async, [&] {
      return TimedGet(http_port, "/v1/reports/" + sha + "/html", 60);
    }));
  }
  const Got json = TimedGet(http_port, "/v1/reports/" + sha, 10);
  const Got page = TimedGet(http_port, "/", 10);
  EXPECT_EQ(json.status, 200);
  EXPECT_LT(json.seconds, 5.0);
  EXPECT_EQ(page.status, 200);
  EXPECT_LT(page.seconds, 5.0);
  int rendered = 0;
  for (auto& f : html) {
    const Got g = f.get();
    ASSERT_EQ(g.status, 200) << g.head << proc.log();
    EXPECT_LT(g.seconds, 30.0);
    rendered += g.head.find("X-Axqc-Html: rendered") != std::string::npos ? 1 : 0;
    // The whole model is not laid out; the page says so.
    EXPECT_NE(g.body.find("id=\"budget-model\">Not drawn: the model's 295 nodes have"),
              std::string::npos);
    EXPECT_NE(
        g.head.find("Content-Security-Policy: " + HtmlReportCsp() + "; frame-ancestors 'none'"),
        std::string::npos)
        << g.head;
  }
  // Rendered once, then from the cache.
  EXPECT_EQ(rendered, 1);
  const Got again = TimedGet(http_port, "/v1/reports/" + sha + "/html", 10);
  EXPECT_EQ(again.status, 200);
  EXPECT_NE(again.head.find("X-Axqc-Html: cached"), std::string::npos) << again.head;

  // The dashboard's policy: scripts from the server and the report's own inline script only.
  const auto csp_at = page.head.find("Content-Security-Policy: ");
  ASSERT_NE(csp_at, std::string::npos);
  const std::string csp = page.head.substr(csp_at, page.head.find("\r\n", csp_at) - csp_at);
  EXPECT_NE(csp.find("script-src 'self' " + HtmlReportScriptHash() + ";"), std::string::npos)
      << csp;
  EXPECT_EQ(csp.find("script-src 'self' 'unsafe-inline'"), std::string::npos) << csp;
}

// With --isolation process the layout runs in a worker process (the test worker crashes while it
// lays out the HTML report of a model so named, after checking it normally): the crash costs that
// worker only, the page is answered without graph views and says why, it is cached, the next
// layout runs on the replacement, and the model's report is not blamed.
TEST(ServerHtml, LayoutsRunInAWorkerAndAFailedLayoutStillAnswers) {
  TempDir dir;
  ServerProcess proc(dir.path(),
                     {"--isolation", "process", "--worker-program", AXQC_TEST_WORKER_BIN});
  ASSERT_TRUE(proc.ready()) << proc.log();
  const auto ports = proc.ports();
  const int http_port = ports.at("http_port");
  auto stub = v1::Checker::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(ports.at("grpc_port").get<int>()),
                          grpc::InsecureChannelCredentials()));
  auto check = [&](const std::string& bytes, const std::string& name) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::CheckRequest req;
    req.set_content(bytes);
    req.set_name(name);
    v1::CheckResponse resp;
    const grpc::Status s = stub->Check(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  };
  const std::string crashing = NonConformantModel("layout-crash");
  const v1::CheckResponse first = check(crashing, "m-axqc-test:layout-segv.onnx");
  EXPECT_EQ(first.verdict(), v1::VERDICT_NON_CONFORMANT);
  const std::string sha = axqc::Sha256Hex(crashing);

  const Got page = TimedGet(http_port, "/v1/reports/" + sha + "/html", 60);
  ASSERT_EQ(page.status, 200) << page.head << proc.log();
  EXPECT_NE(page.head.find("X-Axqc-Html: without-graph"), std::string::npos) << page.head;
  EXPECT_NE(page.body.find("id=\"no-graph\">The graph views of this report could not be laid out "
                           "(the HTML report&apos;s layout failed in worker process 1: the checker "
                           "crashed on this model (signal 11: SIGSEGV))"),
            std::string::npos)
      << page.body.substr(0, 4000);
  EXPECT_EQ(page.body.find("<svg"), std::string::npos);
  EXPECT_NE(page.body.find("data-rule=\"role/weight-type\""), std::string::npos);
  const Got again = TimedGet(http_port, "/v1/reports/" + sha + "/html", 30);
  EXPECT_NE(again.head.find("X-Axqc-Html: cached"), std::string::npos) << again.head;

  // The worker was replaced; the next layout runs there.
  const Scrape m = ScrapeMetrics(ports.at("metrics_port"));
  EXPECT_EQ(m.Value("axqc_worker_restarts_total", {{"cause", "crashed"}}), 1);
  const std::string fine = NonConformantModel("layout-fine");
  (void)check(fine, "fine.onnx");
  const Got drawn = TimedGet(http_port, "/v1/reports/" + axqc::Sha256Hex(fine) + "/html", 60);
  ASSERT_EQ(drawn.status, 200) << drawn.head;
  EXPECT_NE(drawn.head.find("X-Axqc-Html: rendered"), std::string::npos) << drawn.head;
  EXPECT_NE(drawn.body.find("<svg"), std::string::npos);
  // The crash was the layout's, not the model's: checking it again is answered from the cache.
  const v1::CheckResponse second = check(crashing, "m-axqc-test:layout-segv.onnx");
  EXPECT_EQ(second.verdict(), v1::VERDICT_NON_CONFORMANT);
}

}  // namespace
}  // namespace axqc::test
