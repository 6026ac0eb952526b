// The remote client: the real `axqc` binary (child process) against a real axqc-server running
// in this test process on a loopback port. Covers hash-first upload skipping, upload on miss,
// reference mode, labels and stats, rules, health exit codes, retries, TLS with a CA generated
// here, mutual TLS, bearer tokens, and the registry hook script.
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "axqc/catalog.h"
#include "axqc/render.h"
#include "fix_models.h"
#include "server_test_util.h"

namespace axqc::test {
namespace {

struct Proc {
  int rc = -1;
  std::string out;
  std::string err;
};

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (const char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q.push_back(c);
    }
  }
  return q + "'";
}

// Runs `args` (already quoted where needed) through the shell with AXQC_TOKEN cleared unless
// `env` sets it; stdout/stderr are captured in files of `dir`.
Proc Exec(const TempDir& dir, const std::string& command, const std::string& env = "") {
  const std::string out = (dir / "stdout.txt").string();
  const std::string err = (dir / "stderr.txt").string();
  const std::string full =
      "env -u AXQC_TOKEN " + env + " " + command + " >" + Quote(out) + " 2>" + Quote(err);
  const int st = std::system(full.c_str());
  Proc r;
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

TestServerOptions Configured(std::function<void(server::ServerConfig&)> configure) {
  TestServerOptions o;
  o.configure = std::move(configure);
  return o;
}

std::string Axqc() { return Quote(AXQC_BIN_PATH); }

std::string Addr(TestServer& s) { return "127.0.0.1:" + std::to_string(s.server().grpc_port()); }

Proc Client(const TempDir& dir, const std::string& args, const std::string& env = "") {
  return Exec(dir, Axqc() + " " + args, env);
}

// ------------------------------------------------------------------------------------------------

TEST(ClientRemote, HashFirstSkipsTheUploadOfAKnownModel) {
  TempDir dir;
  TestServer server(dir);
  const std::string bytes = ConformantModel("hash-first");
  WriteFile(dir / "work/model.onnx", bytes);
  const std::string model = Quote((dir / "work/model.onnx").string());

  // Miss: GetReport NOT_FOUND, then Upload of the whole file.
  Proc r1 = Client(dir, "check --server " + Addr(server) + " " + model);
  EXPECT_EQ(r1.rc, 0) << r1.out << r1.err;
  EXPECT_NE(r1.out.find("CONFORMANT"), std::string::npos) << r1.out;
  Scrape m1 = server.Metrics();
  EXPECT_EQ(m1.Value("axqc_upload_bytes_total"), static_cast<double>(bytes.size()));
  EXPECT_EQ(m1.Value("axqc_requests_total", {{"method", "Upload"}, {"code", "OK"}}), 1);
  EXPECT_EQ(m1.Value("axqc_requests_total", {{"method", "GetReport"}, {"code", "NOT_FOUND"}}), 1);

  // Hit: GetReport answers, no upload.
  Proc r2 = Client(dir, "check --server " + Addr(server) + " " + model);
  EXPECT_EQ(r2.rc, 0) << r2.err;
  EXPECT_EQ(r2.out, r1.out);
  Scrape m2 = server.Metrics();
  EXPECT_EQ(m2.Value("axqc_upload_bytes_total"), static_cast<double>(bytes.size()));
  EXPECT_EQ(m2.Value("axqc_requests_total", {{"method", "Upload"}, {"code", "OK"}}), 1);
  EXPECT_EQ(m2.Value("axqc_requests_total", {{"method", "GetReport"}, {"code", "OK"}}), 1);

  // Other options (-c) are another cache key: uploaded again.
  Proc r3 = Client(dir, "check -c --server " + Addr(server) + " " + model);
  EXPECT_EQ(r3.rc, 0) << r3.err;
  EXPECT_EQ(server.Metrics().Value("axqc_upload_bytes_total"),
            2.0 * static_cast<double>(bytes.size()));
}

TEST(ClientRemote, SameReportsAndExitCodesAsLocalMode) {
  TempDir dir;
  TestServer server(dir);
  WriteFile(dir / "work/bad.onnx", NonConformantModel("same-as-local"));
  WriteFile(dir / "work/ok.onnx", ConformantModel("same-as-local"));
  WriteFile(dir / "work/junk.onnx", NotOnnxBytes());
  const std::string bad = Quote((dir / "work/bad.onnx").string());
  const std::string ok = Quote((dir / "work/ok.onnx").string());
  for (const std::string format : {"json", "text", "junit", "sarif", "github"}) {
    Proc local = Client(dir, "check --format " + format + " " + bad + " " + ok);
    Proc remote = Client(
        dir, "check --server " + Addr(server) + " --format " + format + " " + bad + " " + ok);
    EXPECT_EQ(local.rc, 1) << format << local.err;
    EXPECT_EQ(remote.rc, 1) << format << remote.err;
    EXPECT_EQ(remote.out, local.out) << format;
  }
  Proc junit = Client(dir, "check --server " + Addr(server) + " --format junit " + bad);
  EXPECT_NE(junit.out.find("<failure message=\"weight"), std::string::npos) << junit.out;
  // Not an ONNX model: exit 2 in both modes, the server's reason on stderr.
  Proc local = Client(dir, "check " + Quote((dir / "work/junk.onnx").string()));
  Proc remote = Client(
      dir, "check --server " + Addr(server) + " " + Quote((dir / "work/junk.onnx").string()));
  EXPECT_EQ(local.rc, 2);
  EXPECT_EQ(remote.rc, 2);
  EXPECT_NE(remote.err.find("input error"), std::string::npos) << remote.err;
  EXPECT_NE(remote.err.find("INVALID_ARGUMENT"), std::string::npos) << remote.err;
  // Worst code wins across models.
  Proc mixed = Client(dir, "check --server " + Addr(server) + " " + ok + " " +
                               Quote((dir / "work/junk.onnx").string()) + " " + bad);
  EXPECT_EQ(mixed.rc, 2);
}

// --target with --server and --isolate: the chips are judged by the server (or the worker), the
// reports and exit codes are the local ones, and other chips are another cache key.
TEST(ClientRemote, TargetsGiveTheLocalReportsAndExitCodes) {
  TempDir dir;
  TestServer server(dir);
  // GridSample "gs1": a float model (not_applicable, exit 3) that fits AX650, not AX620E.
  WriteFile(dir / "work/gs.onnx", GridSampleModel());
  const std::string model = Quote((dir / "work/gs.onnx").string());
  for (const auto& [chip, rc] : {std::pair{"ax620e", 1}, std::pair{"ax650", 3}}) {
    for (const std::string format : {"text", "json", "sarif"}) {
      const std::string args =
          "--target " + std::string(chip) + " --format " + format + " " + model;
      Proc local = Client(dir, "check " + args);
      Proc remote = Client(dir, "check --server " + Addr(server) + " " + args);
      Proc isolated = Client(dir, "check --isolate " + args);
      EXPECT_EQ(local.rc, rc) << chip << format << local.err;
      EXPECT_EQ(remote.rc, rc) << chip << format << remote.err;
      EXPECT_EQ(isolated.rc, rc) << chip << format << isolated.err;
      EXPECT_EQ(remote.out, local.out) << chip << format;
      EXPECT_EQ(isolated.out, local.out) << chip << format;
    }
  }
  Proc text = Client(dir, "check --server " + Addr(server) + " --target ax620e " + model);
  EXPECT_NE(text.out.find("target/op-unsupported"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("AX620E  does_not_fit"), std::string::npos) << text.out;
  // Each chip and each format's report was one upload per chip set (the format is not in the key).
  Scrape m = server.Metrics();
  EXPECT_EQ(m.Value("axqc_requests_total", {{"method", "Upload"}, {"code", "OK"}}), 2);
  // An unknown chip is refused before anything is sent.
  Proc unknown = Client(dir, "check --server " + Addr(server) + " --target ax999 " + model);
  EXPECT_EQ(unknown.rc, 2);
  EXPECT_NE(unknown.err.find("unknown target 'ax999'"), std::string::npos) << unknown.err;
}

// --pulsar2-config with --server and --isolate: the configuration travels with the check (the
// server's and the worker's reports are the local ones, exit codes too), each configuration is its
// own cache key, and what a server cannot take is refused before anything is sent.
TEST(ClientRemote, Pulsar2ConfigGivesTheLocalReportsAndExitCodes) {
  TempDir dir;
  TestServer server(dir);
  WriteFile(dir / "work/ok.onnx", ConformantModel("p2-remote"));
  const std::string model = Quote((dir / "work/ok.onnx").string());
  // model_type ONNX for a QDQ model (an error) and a layer_name that is no node (a warning).
  WriteFile(dir / "work/bad.json",
            R"({"model_type": "ONNX", "target_hardware": "AX650",
                "quant": {"layer_configs": [{"layer_name": "no_such_node", "data_type": "U16"}]}})");
  WriteFile(dir / "work/good.json", R"({"model_type": "QuantONNX", "target_hardware": "AX650"})");
  const std::string bad = Quote((dir / "work/bad.json").string());
  const std::string good = Quote((dir / "work/good.json").string());
  for (const auto& [config, rc] : {std::pair{bad, 1}, std::pair{good, 0}}) {
    for (const std::string format : {"text", "json", "sarif"}) {
      const std::string args = "--pulsar2-config " + config + " --format " + format + " " + model;
      Proc local = Client(dir, "check " + args);
      Proc remote = Client(dir, "check --server " + Addr(server) + " " + args);
      Proc isolated = Client(dir, "check --isolate " + args);
      EXPECT_EQ(local.rc, rc) << config << format << local.err;
      EXPECT_EQ(remote.rc, rc) << config << format << remote.err;
      EXPECT_EQ(isolated.rc, rc) << config << format << isolated.err;
      EXPECT_EQ(remote.out, local.out) << config << format;
      EXPECT_EQ(isolated.out, local.out) << config << format;
    }
  }
  Proc json = Client(dir, "check --format json --server " + Addr(server) + " --pulsar2-config " +
                              bad + " " + model);
  const auto report = nlohmann::json::parse(json.out).at("reports").at(0);
  std::map<std::string, std::string> rules;  // rule -> first field or node
  for (const auto& f : report.at("findings")) {
    const std::string rule = f.at("rule");
    if (rule.rfind("pulsar2/", 0) == 0) rules[rule] = f.at("severity");
  }
  EXPECT_EQ(rules["pulsar2/model-type"], "error") << json.out;
  EXPECT_EQ(rules["pulsar2/selector-no-match"], "warn") << json.out;
  EXPECT_EQ(report.at("verdict"), "conformant");  // the spec's verdict is the model's alone
  // One upload per configuration; the formats and the repeated runs were hits.
  Scrape m = server.Metrics();
  EXPECT_EQ(m.Value("axqc_requests_total", {{"method", "Upload"}, {"code", "OK"}}), 2);
  // Over 1 MiB or not UTF-8: refused with exit 2 before an upload (locally a finding).
  WriteFile(dir / "work/big.json", "{\"x\": \"" + std::string(1 << 20, 'a') + "\"}");
  WriteFile(dir / "work/latin1.json", "{\"model_type\": \"QuantONNX\xe9\"}");
  Proc big = Client(dir, "check --server " + Addr(server) + " --pulsar2-config " +
                             Quote((dir / "work/big.json").string()) + " " + model);
  EXPECT_EQ(big.rc, 2);
  EXPECT_NE(big.err.find("larger than 1048576 bytes"), std::string::npos) << big.err;
  Proc latin1 = Client(dir, "check --server " + Addr(server) + " --pulsar2-config " +
                                Quote((dir / "work/latin1.json").string()) + " " + model);
  EXPECT_EQ(latin1.rc, 2);
  EXPECT_NE(latin1.err.find("not UTF-8 text"), std::string::npos) << latin1.err;
  Proc local_big = Client(
      dir, "check --pulsar2-config " + Quote((dir / "work/big.json").string()) + " " + model);
  EXPECT_EQ(local_big.rc, 1);
  EXPECT_NE(local_big.out.find("pulsar2/config-invalid"), std::string::npos) << local_big.out;
  EXPECT_EQ(server.Metrics().Value("axqc_requests_total", {{"method", "Upload"}, {"code", "OK"}}),
            2);
}

// --fail-on not_applicable: a model that is not a QDQ model (a float export) fails with 1 instead
// of passing with 3, locally, remotely and from the configuration; the report is unchanged.
TEST(ClientGate, FailOnNotApplicableFailsAFloatModel) {
  TempDir dir;
  TestServer server(dir);
  modelgen::ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, {1, 4, 8, 8});
  b.Node("Relu", {"x"}, {"y"}, {}, "relu");
  b.Output("y");
  std::string bytes;
  b.Build().SerializeToString(&bytes);
  WriteFile(dir / "work/float.onnx", bytes);
  WriteFile(dir / "work/ok.onnx", ConformantModel("fail-on-na"));
  const std::string fp = Quote((dir / "work/float.onnx").string());
  const std::string ok = Quote((dir / "work/ok.onnx").string());
  const std::string remote = "--server " + Addr(server) + " ";
  for (const std::string& where : {std::string(), remote}) {
    Proc plain = Client(dir, "check --no-config " + where + fp);
    EXPECT_EQ(plain.rc, 3) << where << plain.err;
    Proc failed = Client(dir, "check --no-config --fail-on not_applicable " + where + fp);
    EXPECT_EQ(failed.rc, 1) << where << failed.err;
    EXPECT_EQ(failed.out, plain.out) << where;  // the report still says NOT_APPLICABLE
    EXPECT_NE(failed.out.find("NOT_APPLICABLE"), std::string::npos) << failed.out;
    Proc both = Client(dir, "check --no-config --fail-on warn,not_applicable " + where + ok);
    EXPECT_EQ(both.rc, 0) << where << both.err;
    Proc mixed = Client(dir, "check --no-config --fail-on not_applicable " + where + ok + " " + fp);
    EXPECT_EQ(mixed.rc, 1) << where << mixed.err;
  }
  WriteFile(dir / "cfg/axqc.toml", "[check]\nfail_on_not_applicable = true\n");
  Proc cfg = Client(dir, "check --config " + Quote((dir / "cfg/axqc.toml").string()) + " " + fp);
  EXPECT_EQ(cfg.rc, 1) << cfg.err;
  Proc bad = Client(dir, "check --no-config --fail-on quantized " + fp);
  EXPECT_EQ(bad.rc, 2);
}

// The options of the run work on the reports on the client side: directory arguments with
// --exclude, --select/--ignore, --statistics and --exit-zero give the local output and exit code
// with --server and with --isolate.
TEST(ClientGate, RunOptionsWithServerAndIsolate) {
  TempDir dir;
  TestServer server(dir);
  WriteFile(dir / "work/models/bad.onnx", NonConformantModel("run-options"));
  WriteFile(dir / "work/models/sub/ok.onnx", ConformantModel("run-options"));
  WriteFile(dir / "work/models/old/junk.onnx", NotOnnxBytes());
  const std::string models = Quote((dir / "work/models").string());
  const std::vector<std::pair<std::string, int>> runs = {
      {"--statistics --exclude old " + models, 1},
      {"--select role/weight-type --statistics --exclude old " + models, 1},
      {"--ignore role/weight-type --format json --exclude old " + models, 0},
      {"--select 'role/*' --ignore role/weight-type --exclude 'old/*' " + models, 0},
      {"--exit-zero --exclude old " + models, 0},
      {"--exit-zero " + models, 2},  // old/junk.onnx is not a model
  };
  for (const auto& [args, rc] : runs) {
    Proc local = Client(dir, "check --no-config " + args);
    Proc remote = Client(dir, "check --no-config --server " + Addr(server) + " " + args);
    Proc isolated = Client(dir, "check --no-config --isolate " + args);
    EXPECT_EQ(local.rc, rc) << args << local.err;
    EXPECT_EQ(remote.rc, rc) << args << remote.err;
    EXPECT_EQ(isolated.rc, rc) << args << isolated.err;
    EXPECT_EQ(remote.out, local.out) << args;
    EXPECT_EQ(isolated.out, local.out) << args;
  }
  Proc stats = Client(dir, "check --no-config --server " + Addr(server) +
                               " --statistics --select role/weight-type --exclude old " + models);
  EXPECT_EQ(stats.out, "1  role/weight-type  error  Weight is not symmetric S4/S8 per-channel.\n");
  Proc unknown = Client(
      dir, "check --no-config --server " + Addr(server) + " --ignore role/weigth-type " + models);
  EXPECT_EQ(unknown.rc, 2);
  EXPECT_NE(unknown.err.find("--ignore: unknown rule 'role/weigth-type' (did you mean "
                             "'role/weight-type'?)"),
            std::string::npos)
      << unknown.err;
}

TEST(ClientRemote, ReferenceModeWithLabelsAndStats) {
  TempDir dir;
  TestServer server(dir);
  WriteFile(dir / "root/team/bad.onnx", NonConformantModel("ref"));
  WriteFile(dir / "root/team/ok.onnx", ConformantModel("ref"));
  Proc r1 = Client(dir, "check --server " + Addr(server) +
                            " --ref team/bad.onnx --label project=demo --label source=ci "
                            "--format json");
  EXPECT_EQ(r1.rc, 1) << r1.err;
  const auto doc = nlohmann::json::parse(r1.out);
  EXPECT_EQ(doc["schema"], "axqc.report/v2");
  ASSERT_EQ(doc["reports"].size(), 1u) << r1.out;  // one model: still a list
  const auto& j = doc["reports"][0];
  EXPECT_EQ(j["schema"], "axqc.report/v1");
  EXPECT_EQ(j["verdict"], "non_conformant");
  EXPECT_EQ(j["model"]["file"], "team/bad.onnx");
  EXPECT_EQ(j["summary"]["by_rule"]["role/weight-type"], 1);
  Proc r2 =
      Client(dir, "check --server " + Addr(server) + " --ref team/ok.onnx --label project=demo");
  EXPECT_EQ(r2.rc, 0) << r2.err;
  // Refs never upload.
  EXPECT_EQ(server.Metrics().Value("axqc_upload_bytes_total"), 0);
  EXPECT_EQ(
      server.Metrics().Value("axqc_checks_total", {{"source", "path"}, {"verdict", "conformant"}}),
      1);
  // Outside the allowed roots: exit 2.
  Proc r3 = Client(dir, "check --server " + Addr(server) + " --ref /etc/hostname");
  EXPECT_EQ(r3.rc, 2);
  EXPECT_NE(r3.err.find("PERMISSION_DENIED"), std::string::npos) << r3.err;

  Proc stats =
      Client(dir, "stats --server " + Addr(server) + " --since 7d --by project --format json");
  ASSERT_EQ(stats.rc, 0) << stats.err;
  const auto s = nlohmann::json::parse(stats.out);
  EXPECT_EQ(s["total"]["requests"], "2");  // uint64 as string in proto JSON
  EXPECT_EQ(s["total"]["conformant"], "1");
  EXPECT_EQ(s["total"]["non_conformant"], "1");
  EXPECT_DOUBLE_EQ(s["total"]["pass_rate"].get<double>(), 0.5);
  ASSERT_EQ(s["groups"].size(), 1u);
  EXPECT_EQ(s["groups"][0]["label_value"], "demo");
  EXPECT_EQ(s["top_failing_rules"][0]["rule"], "role/weight-type");
  Proc text = Client(dir, "stats --server " + Addr(server) + " --by source");
  EXPECT_EQ(text.rc, 0);
  EXPECT_NE(text.out.find("pass rate 50.0%"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  ci "), std::string::npos) << text.out;
  EXPECT_EQ(Client(dir, "stats --server " + Addr(server) + " --since 7 days").rc, 2);
}

TEST(ClientRemote, RulesFromTheServer) {
  TempDir dir;
  TestServer server(dir);
  Proc r = Client(dir, "rules --server " + Addr(server) + " --format json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["rule_set_version"], std::string(kRuleSetVersion));
  ASSERT_EQ(j["rules"].size(), Rules().size());
  EXPECT_EQ(j["rules"][0]["id"], Rules()[0].id);
  // Same catalog as the local one.
  EXPECT_EQ(j["rules"], RulesToJson()["rules"]);
}

TEST(ClientRemote, HealthExitCodes) {
  TempDir dir;
  auto server = std::make_unique<TestServer>(dir);
  const std::string addr = Addr(*server);
  Proc serving = Client(dir, "health --server " + addr);
  EXPECT_EQ(serving.rc, 0) << serving.err;
  EXPECT_EQ(serving.out, "SERVING\n");
  EXPECT_EQ(Client(dir, "health --server " + addr + " --service axqc.v1.Checker").rc, 0);
  server->server().SetNotServing();
  Proc draining = Client(dir, "health --server " + addr);
  EXPECT_EQ(draining.rc, 1);
  EXPECT_EQ(draining.out, "NOT_SERVING\n");
  server.reset();
  Proc down = Client(dir, "health --server " + addr);
  EXPECT_EQ(down.rc, 4);
  EXPECT_NE(down.err.find("cannot reach axqc-server at " + addr), std::string::npos) << down.err;
}

TEST(ClientRemote, RetriesOnlyUnavailableWithBackoff) {
  TempDir dir;
  int port = 0;
  {
    TestServer server(dir);  // a port that was just free and is closed again
    port = server.server().grpc_port();
  }
  WriteFile(dir / "m.onnx", ConformantModel("retry"));
  const auto t0 = std::chrono::steady_clock::now();
  Proc r = Client(dir, "check --retries 2 --server 127.0.0.1:" + std::to_string(port) + " " +
                           Quote((dir / "m.onnx").string()));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.rc, 4);  // no verdict from the server
  EXPECT_NE(r.err.find("(after 3 attempts): nothing accepts connections at 127.0.0.1:" +
                       std::to_string(port)),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("[UNAVAILABLE: "), std::string::npos) << r.err;
  EXPECT_GE(secs, 0.45);  // 200 ms + 400 ms backoff, -20 % jitter
  // Not retried: PERMISSION_DENIED comes back after one attempt.
  TestServer server(dir);
  Proc denied = Client(dir, "check --retries 5 --server " + Addr(server) + " --ref /etc/hostname");
  EXPECT_EQ(denied.rc, 2);
  EXPECT_EQ(server.Metrics().Value("axqc_requests_total",
                                   {{"method", "Check"}, {"code", "PERMISSION_DENIED"}}),
            1);
}

// The command line of docs/ci.md: --label and --ref take one value each; the model files after
// them stay model files.
TEST(ClientRemote, LabelAndRefTakeOneValueEach) {
  TempDir dir;
  TestServer server(dir);
  WriteFile(dir / "work/a.onnx", ConformantModel("labels-a"));
  WriteFile(dir / "work/b.onnx", NonConformantModel("labels-b"));
  WriteFile(dir / "root/ref.onnx", ConformantModel("labels-ref"));
  const std::string a = Quote((dir / "work/a.onnx").string());
  const std::string b = Quote((dir / "work/b.onnx").string());
  Proc r = Client(dir, "check --server " + Addr(server) +
                           " -c --label project=detector --label source=ci " + a +
                           " --ref ref.onnx " + b + " --format json");
  ASSERT_EQ(r.rc, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out)["reports"];
  ASSERT_EQ(j.size(), 3u) << r.out;  // a, b, then the reference
  EXPECT_EQ(j[0]["verdict"], "conformant");
  EXPECT_EQ(j[1]["verdict"], "non_conformant");
  EXPECT_EQ(j[2]["model"]["file"], "ref.onnx");
  Proc stats = Client(dir, "stats --server " + Addr(server) +
                               " --label project=detector --label source=ci --format json");
  ASSERT_EQ(stats.rc, 0) << stats.err;
  EXPECT_EQ(nlohmann::json::parse(stats.out)["total"]["requests"], "3") << stats.out;
  // A label without '=' is still a usage error.
  EXPECT_EQ(Client(dir, "check --server " + Addr(server) + " --label oops " + a).rc, 2);
}

// Re-checks of known models are check requests: history rows with their labels, checks metric.
TEST(ClientRemote, HashFirstRechecksAreRecordedWithTheirLabels) {
  TempDir dir;
  TestServer server(dir);
  WriteFile(dir / "work/m.onnx", NonConformantModel("recheck"));
  const std::string model = Quote((dir / "work/m.onnx").string());
  for (const char* project : {"first", "second", "second"}) {
    Proc r =
        Client(dir, "check --server " + Addr(server) + " --label project=" + project + " " + model);
    EXPECT_EQ(r.rc, 1) << r.err;
  }
  Proc stats = Client(dir, "stats --server " + Addr(server) + " --by project --format json");
  ASSERT_EQ(stats.rc, 0) << stats.err;
  const auto s = nlohmann::json::parse(stats.out);
  EXPECT_EQ(s["total"]["requests"], "3") << stats.out;
  ASSERT_EQ(s["groups"].size(), 2u);
  EXPECT_EQ(s["groups"][0]["label_value"], "first");
  EXPECT_EQ(s["groups"][0]["counts"]["non_conformant"], "1");
  EXPECT_EQ(s["groups"][1]["label_value"], "second");
  EXPECT_EQ(s["groups"][1]["counts"]["non_conformant"], "2");
  const Scrape m = server.Metrics();
  EXPECT_EQ(m.Value("axqc_checks_total", {{"verdict", "non_conformant"}, {"source", "upload"}}), 1);
  EXPECT_EQ(m.Value("axqc_checks_total", {{"verdict", "non_conformant"}, {"source", "hash"}}), 2);
  // One miss for three checks: the NOT_FOUND before the upload is not a second one.
  EXPECT_EQ(m.Value("axqc_cache_lookups_total", {{"result", "miss"}}), 1);
  EXPECT_EQ(m.Value("axqc_cache_lookups_total", {{"result", "memory_hit"}}), 2);
}

// 16 clients check the same new model at once: it is uploaded and checked once; the other 15
// lookups wait for that check and are answered from it.
TEST(ClientRemote, ConcurrentClientsUploadANewModelOnce) {
  TempDir dir;
  auto gate = std::make_shared<Gate>();
  TestServerOptions o;
  o.hooks.check = GatedCheck(gate);
  TestServer server(dir, std::move(o));
  const std::string bytes = ConformantModel("sixteen");
  WriteFile(dir / "work/m.onnx", bytes);
  std::string script =
      "pids=; for i in $(seq 16); do " + Axqc() + " check --server " + Addr(server) +
      " --label client=$i " + Quote((dir / "work/m.onnx").string()) + " >" +
      Quote((dir / "out").string()) + ".$i 2>&1 & pids=\"$pids $!\"; done; rc=0; " +
      "for p in $pids; do wait $p || rc=$?; done; exit $rc";
  Proc all;
  std::thread clients([&] { all = Exec(dir, "bash -c " + Quote(script)); });
  ASSERT_TRUE(WaitFor(
      [&] {
        return gate->calls.load() == 1 &&
               server.Metrics().Value("axqc_lookup_waiting_requests") == 15;
      },
      std::chrono::seconds(60)));
  gate->Open();
  clients.join();
  EXPECT_EQ(all.rc, 0) << all.out << all.err;
  EXPECT_EQ(gate->calls.load(), 1);
  const Scrape m = server.Metrics();
  EXPECT_EQ(m.Value("axqc_upload_bytes_total"), static_cast<double>(bytes.size()));
  EXPECT_EQ(m.Value("axqc_requests_total", {{"method", "Upload"}, {"code", "OK"}}), 1);
  EXPECT_EQ(m.Value("axqc_report_lookups_total", {{"result", "shared"}}), 15);
  EXPECT_EQ(m.Value("axqc_checks_total", {{"verdict", "conformant"}, {"source", "hash"}}), 15);
  EXPECT_EQ(m.Value("axqc_checks_total", {{"verdict", "conformant"}, {"source", "upload"}}), 1);
  Proc stats = Client(dir, "stats --server " + Addr(server) + " --format json");
  EXPECT_EQ(nlohmann::json::parse(stats.out)["total"]["requests"], "16") << stats.out;
}

// Exit 4 when the server gives no verdict; after the first failure to reach it the other models
// are not tried.
TEST(ClientRemote, NoVerdictExitCodeAndStopAfterTheFirstUnreachableFailure) {
  TempDir dir;
  int port = 0;
  {
    TestServer server(dir);
    port = server.server().grpc_port();
  }
  for (const char* m : {"a", "b", "c"}) WriteFile(dir / (std::string(m) + ".onnx"), "x");
  Proc r = Client(dir, "check --retries 1 --server 127.0.0.1:" + std::to_string(port) + " " +
                           Quote((dir / "a.onnx").string()) + " " +
                           Quote((dir / "b.onnx").string()) + " --ref c.onnx --format junit");
  EXPECT_EQ(r.rc, 4);
  std::size_t reach = 0;
  std::size_t pos = 0;
  while ((pos = r.err.find("cannot reach axqc-server", pos)) != std::string::npos) {
    ++reach;
    ++pos;
  }
  EXPECT_EQ(reach, 1u) << r.err;
  EXPECT_NE(r.err.find("b.onnx: not checked: the server failed for "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("c.onnx: not checked"), std::string::npos) << r.err;
  // The report still names all three (JUnit: one errored testsuite each).
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n') > 0, true);
  for (const char* m : {"a.onnx", "b.onnx", "c.onnx"}) {
    EXPECT_NE(r.out.find(m), std::string::npos) << m << r.out;
  }
  // Local mode never answers 4; a model the server finds unreadable is 2, not 4.
  TestServer server(dir);
  Proc junk =
      Client(dir, "check --server " + Addr(server) + " " + Quote((dir / "a.onnx").string()));
  EXPECT_EQ(junk.rc, 2) << junk.err;
}

TEST(ClientRemote, ServerFromTheEnvironment) {
  TempDir dir;
  TestServer server(dir);
  WriteFile(dir / "m.onnx", ConformantModel("env"));
  const std::string model = Quote((dir / "m.onnx").string());
  Proc remote = Client(dir, "check " + model, "AXQC_SERVER=" + Addr(server));
  EXPECT_EQ(remote.rc, 0) << remote.err;
  EXPECT_GT(server.Metrics().Value("axqc_upload_bytes_total"), 0);
  EXPECT_EQ(Client(dir, "health", "AXQC_SERVER=" + Addr(server)).rc, 0);
  EXPECT_EQ(Client(dir, "stats", "AXQC_SERVER=" + Addr(server)).rc, 0);
  // --server wins over the environment; --local checks here.
  EXPECT_EQ(Client(dir, "health --server " + Addr(server), "AXQC_SERVER=127.0.0.1:1").rc, 0);
  Proc local = Client(dir, "check --local " + model, "AXQC_SERVER=127.0.0.1:1");
  EXPECT_EQ(local.rc, 0) << local.err;
  // stats and health need a server from somewhere.
  EXPECT_EQ(Client(dir, "stats").rc, 2);
}

TEST(ClientRemote, StatsWindows) {
  TempDir dir;
  TestServer server(dir);
  // No request yet: no pass rate.
  Proc empty = Client(dir, "stats --server " + Addr(server) + " --since 1h");
  ASSERT_EQ(empty.rc, 0) << empty.err;
  EXPECT_NE(empty.out.find("requests 0 "), std::string::npos) << empty.out;
  EXPECT_NE(empty.out.find("pass rate n/a"), std::string::npos) << empty.out;
  Proc json = Client(dir, "stats --server " + Addr(server) + " --since 1h --format json");
  ASSERT_EQ(json.rc, 0) << json.err;
  EXPECT_TRUE(nlohmann::json::parse(json.out)["total"]["pass_rate"].is_null()) << json.out;
  // A window needs a unit.
  Proc bare = Client(dir, "stats --server " + Addr(server) + " --since 7");
  EXPECT_EQ(bare.rc, 2);
  EXPECT_NE(bare.err.find("with a unit"), std::string::npos) << bare.err;
}

TEST(ClientAuth, TokenRequiredAndRefused) {
  TempDir dir;
  WriteFile(dir / "token", "s3cret-token\n");
  TestServer server(dir, Configured([&](server::ServerConfig& c) {
                      c.auth_token_file = (dir / "token").string();
                    }));
  WriteFile(dir / "m.onnx", ConformantModel("token"));
  const std::string check =
      "check --server " + Addr(server) + " " + Quote((dir / "m.onnx").string());
  Proc none = Client(dir, check);
  EXPECT_EQ(none.rc, 4);
  EXPECT_NE(none.err.find("UNAUTHENTICATED"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("pass --token or set AXQC_TOKEN"), std::string::npos) << none.err;
  Proc wrong = Client(dir, check + " --token nope");
  EXPECT_EQ(wrong.rc, 4);
  EXPECT_NE(wrong.err.find("UNAUTHENTICATED"), std::string::npos) << wrong.err;
  EXPECT_EQ(server.Metrics().Value("axqc_upload_bytes_total"), 0);
  Proc flag = Client(dir, check + " --token s3cret-token");
  EXPECT_EQ(flag.rc, 0) << flag.err;
  Proc env = Client(dir, check, "AXQC_TOKEN=s3cret-token");
  EXPECT_EQ(env.rc, 0) << env.err;
  EXPECT_EQ(Client(dir, "stats --server " + Addr(server)).rc, 4);
  EXPECT_EQ(Client(dir, "stats --server " + Addr(server), "AXQC_TOKEN=s3cret-token").rc, 0);
  // Health stays open.
  EXPECT_EQ(Client(dir, "health --server " + Addr(server)).rc, 0);
}

// A CA, a server certificate for 127.0.0.1/localhost and a client certificate, made with the
// openssl command line.
void MakeTestPki(const TempDir& dir) {
  const std::string d = Quote(dir.path().string());
  WriteFile(dir / "server.ext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
            "basicConstraints=CA:FALSE\n");
  WriteFile(dir / "client.ext", "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n");
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  const std::string script =
      "set -e; cd " + d + "; exec 2>openssl.log; " + "openssl req -x509" + ec +
      " -keyout ca.key -out ca.pem -days 2 -subj '/CN=axqc test CA'; " + "openssl req" + ec +
      " -keyout server.key -out server.csr -subj '/CN=localhost'; " +
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
      "-extfile server.ext -out server.pem; " +
      "openssl req" + ec + " -keyout client.key -out client.csr -subj '/CN=ci-client'; " +
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
      "-extfile client.ext -out client.pem; " +
      // A second, unrelated CA: its certificates must be refused.
      "openssl req -x509" + ec + " -keyout other.key -out other.pem -days 2 -subj '/CN=other CA'";
  ASSERT_EQ(std::system(("sh -c " + Quote(script)).c_str()), 0) << ReadFile(dir / "openssl.log");
}

TEST(ClientTls, ServerTlsWithATestCa) {
  TempDir dir;
  MakeTestPki(dir);
  TestServer server(dir, Configured([&](server::ServerConfig& c) {
                      c.tls_cert_file = (dir / "server.pem").string();
                      c.tls_key_file = (dir / "server.key").string();
                    }));
  WriteFile(dir / "m.onnx", NonConformantModel("tls"));
  const std::string model = Quote((dir / "m.onnx").string());
  const std::string ca = " --ca " + Quote((dir / "ca.pem").string());
  const std::string retries = " --retries 0";
  Proc ok = Client(dir, "check --server " + Addr(server) + ca + " " + model);
  EXPECT_EQ(ok.rc, 1) << ok.err;
  EXPECT_NE(ok.out.find("NON_CONFORMANT"), std::string::npos) << ok.out;
  Proc localhost =
      Client(dir, "check --server localhost:" + std::to_string(server.server().grpc_port()) + ca +
                      " " + model);
  EXPECT_EQ(localhost.rc, 1) << localhost.err;
  EXPECT_EQ(Client(dir, "health --server " + Addr(server) + ca).rc, 0);
  // Plaintext against a TLS port, and TLS trusting only another CA: no verdict (exit 4), with the
  // reason, and none of gRPC's own log lines.
  Proc plain = Client(dir, "check --server " + Addr(server) + retries + " " + model);
  EXPECT_EQ(plain.rc, 4);
  EXPECT_NE(plain.err.find("requires TLS: pass --ca FILE"), std::string::npos) << plain.err;
  Proc other = Client(dir, "check --server " + Addr(server) + retries + " --ca " +
                               Quote((dir / "other.pem").string()) + " " + model);
  EXPECT_EQ(other.rc, 4);
  EXPECT_NE(other.err.find("the server's certificate is not trusted: unable to get local issuer "
                           "certificate (checked against --ca "),
            std::string::npos)
      << other.err;
  EXPECT_NE(other.err.find("UNAVAILABLE"), std::string::npos) << other.err;
  for (const Proc* p : {&plain, &other}) {
    std::istringstream lines(p->err);
    std::string line;
    while (std::getline(lines, line)) EXPECT_EQ(line.rfind("axqc: ", 0), 0u) << line;
  }
  // TLS against a plaintext server.
  TempDir plain_dir;
  TestServer plaintext(plain_dir);
  Proc tls_to_plain = Client(dir, "check --server " + Addr(plaintext) + ca + retries + " " + model);
  EXPECT_EQ(tls_to_plain.rc, 4);
  EXPECT_NE(tls_to_plain.err.find("does not speak TLS"), std::string::npos) << tls_to_plain.err;
}

TEST(ClientTls, MutualTlsRequiresAClientCertificate) {
  TempDir dir;
  MakeTestPki(dir);
  TestServer server(dir, Configured([&](server::ServerConfig& c) {
                      c.tls_cert_file = (dir / "server.pem").string();
                      c.tls_key_file = (dir / "server.key").string();
                      c.tls_client_ca_file = (dir / "ca.pem").string();
                    }));
  WriteFile(dir / "m.onnx", ConformantModel("mtls"));
  const std::string model = Quote((dir / "m.onnx").string());
  const std::string ca = " --retries 0 --ca " + Quote((dir / "ca.pem").string());
  const std::string client_cert = " --cert " + Quote((dir / "client.pem").string()) + " --key " +
                                  Quote((dir / "client.key").string());
  Proc with = Client(dir, "check --server " + Addr(server) + ca + client_cert + " " + model);
  EXPECT_EQ(with.rc, 0) << with.err;
  Proc without = Client(dir, "check --server " + Addr(server) + ca + " " + model);
  EXPECT_EQ(without.rc, 4);
  EXPECT_NE(without.err.find("requires a client certificate (mutual TLS): pass --cert FILE --key "
                             "FILE"),
            std::string::npos)
      << without.err;
  EXPECT_NE(without.err.find("UNAVAILABLE"), std::string::npos) << without.err;
  EXPECT_EQ(Client(dir, "health --server " + Addr(server) + ca + client_cert).rc, 0);
  EXPECT_EQ(Client(dir, "health --server " + Addr(server) + ca).rc, 4);
  // A client certificate from another CA is refused too.
  Proc foreign = Client(dir, "check --server " + Addr(server) + ca + " --cert " +
                                 Quote((dir / "other.pem").string()) + " --key " +
                                 Quote((dir / "other.key").string()) + " " + model);
  EXPECT_EQ(foreign.rc, 4);
  EXPECT_NE(foreign.err.find("rejected the client certificate"), std::string::npos) << foreign.err;
  // Plaintext against a mutual-TLS port: both requirements are named.
  Proc plain = Client(dir, "check --retries 0 --server " + Addr(server) + " " + model);
  EXPECT_EQ(plain.rc, 4);
  EXPECT_NE(plain.err.find("requires TLS"), std::string::npos) << plain.err;
  EXPECT_NE(plain.err.find("and a client certificate"), std::string::npos) << plain.err;
  // --cert without --key is a usage error.
  EXPECT_EQ(Client(dir, "health --server " + Addr(server) + ca + " --cert " +
                            Quote((dir / "client.pem").string()))
                .rc,
            2);
}

// `axqc health` against a mutual-TLS server, each way the TLS connection can fail: the reason is
// printed whole. The transport probe used to die of SIGPIPE writing to the connection the server
// had closed (exit 141 after an empty "axqc: health: ").
TEST(ClientTls, HealthSaysWhyTheTlsConnectionFailed) {
  TempDir dir;
  MakeTestPki(dir);
  TestServer server(dir, Configured([&](server::ServerConfig& c) {
                      c.tls_cert_file = (dir / "server.pem").string();
                      c.tls_key_file = (dir / "server.key").string();
                      c.tls_client_ca_file = (dir / "ca.pem").string();
                    }));
  const std::string health = "health --retries 0 --server " + Addr(server);
  const std::string ca = " --ca " + Quote((dir / "ca.pem").string());
  struct Case {
    std::string args;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {ca, "requires a client certificate (mutual TLS): pass --cert FILE --key FILE"},
      {"", "requires TLS: pass --ca FILE"},
      {" --ca " + Quote((dir / "other.pem").string()) + " --cert " +
           Quote((dir / "client.pem").string()) + " --key " + Quote((dir / "client.key").string()),
       "the server's certificate is not trusted: "},
      {ca + " --cert " + Quote((dir / "other.pem").string()) + " --key " +
           Quote((dir / "other.key").string()),
       "rejected the client certificate"},
  };
  for (const Case& c : cases) {
    const Proc p = Client(dir, health + c.args);
    EXPECT_EQ(p.rc, 4) << c.args << "\n" << p.err;
    EXPECT_NE(p.err.find("axqc: health: cannot reach axqc-server at " + Addr(server)),
              std::string::npos)
        << c.args << "\n"
        << p.err;
    EXPECT_NE(p.err.find(c.reason), std::string::npos) << c.args << "\n" << p.err;
    EXPECT_EQ(p.err.find("()"), std::string::npos) << p.err;  // no empty reason in parentheses
    EXPECT_EQ(p.err.back(), '\n') << p.err;                   // the line was written whole
  }
  // Nothing listening: the system's reason.
  const std::string port = std::to_string(server.server().grpc_port());
  server.Stop();
  const Proc down = Client(dir, "health --retries 0 --server 127.0.0.1:" + port + ca);
  EXPECT_EQ(down.rc, 4);
  EXPECT_NE(down.err.find("(Connection refused)"), std::string::npos) << down.err;
}

// ------------------------------------------------------------------------------------------------
// The CI gate: configuration (axqc.toml), waivers, baselines, --fail-on, the CI formats; locally
// and against the server (which records the client's gate in its history).

// Two quantized Conv layers; each weight per-tensor (role/weight-type) when broken. Node names
// carry `prefix` (an exporter that names nodes differently).
std::string TwoConvModel(bool broken_first, bool broken_second, const std::string& prefix = "") {
  ModelBuilder b(21, 10, "two_conv");
  b.Input("x", onnx::TensorProto::FLOAT, {1, 4, 8, 8});
  std::string x = b.QDQ("x", prefix + "x", QParams::U8(0.02f, 128));
  int64_t cin = 4;
  for (int layer = 0; layer < 2; ++layer) {
    const int64_t cout = layer == 0 ? 8 : 6;
    const bool broken = layer == 0 ? broken_first : broken_second;
    const std::vector<float> ws = ChannelScales(cout);
    const QParams wp = broken ? QParams::S8(0.01f) : QParams::PerChannel(QType::kS8, ws, 0);
    const std::string name = prefix + "conv" + std::to_string(layer);
    const std::string w = b.WeightQDQ(name + "_w", {cout, cin, 3, 3}, wp);
    b.Node("Conv", {x, w}, {name + "_out"}, {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})}, name);
    x = b.QDQ(name + "_out", name + "_y", QParams::U8(0.05f, 128));
    cin = cout;
  }
  b.Output(x);
  return b.Serialize();
}

// `args` run in `cwd` (the configuration is searched from there).
Proc ClientIn(const TempDir& dir, const fs::path& cwd, const std::string& args) {
  return Exec(dir, "sh -c " + Quote("cd " + Quote(cwd.string()) + " && " + Axqc() + " " + args));
}

TEST(ClientGate, BaselinePassesKnownFindingsAndFailsOnANewOne) {
  TempDir dir;
  TestServer server(dir);
  const fs::path repo = dir / "repo";
  for (const bool remote : {false, true}) {
    const std::string mode = remote ? "check --server " + Addr(server) + " " : "check --local ";
    // The model as first exported: one known finding.
    WriteFile(repo / "models/det.onnx", TwoConvModel(true, false));
    Proc write = ClientIn(dir, repo, mode + "--write-baseline axqc-baseline.json models/det.onnx");
    EXPECT_EQ(write.rc, 0) << write.out << write.err;
    EXPECT_NE(write.err.find("wrote the baseline axqc-baseline.json: 1 finding of 1 model"),
              std::string::npos)
        << write.err;
    const auto base = nlohmann::json::parse(ReadFile(repo / "axqc-baseline.json"));
    EXPECT_EQ(base["schema"], "axqc.baseline/v1");
    ASSERT_EQ(base["models"].size(), 1u);
    EXPECT_EQ(base["models"][0]["file"], "models/det.onnx");
    ASSERT_EQ(base["models"][0]["findings"].size(), 1u);
    EXPECT_EQ(base["models"][0]["findings"][0]["rule"], "role/weight-type");
    EXPECT_EQ(base["models"][0]["findings"][0]["node"], "conv0_w_dq");

    // Without the baseline it fails; with it, it passes.
    EXPECT_EQ(ClientIn(dir, repo, mode + "--no-config models/det.onnx").rc, 1);
    Proc known = ClientIn(dir, repo, mode + "--baseline axqc-baseline.json models/det.onnx");
    EXPECT_EQ(known.rc, 0) << known.out << known.err;
    EXPECT_NE(known.out.find("gate: PASS  (fail on error; new 0 errors, 0 warnings; in the "
                             "baseline 1)"),
              std::string::npos)
        << known.out;

    // Re-exported with other node names and a second defect: only the new one fails.
    WriteFile(repo / "models/det.onnx", TwoConvModel(true, true, "export2/"));
    Proc fresh =
        ClientIn(dir, repo, mode + "--baseline axqc-baseline.json --format json models/det.onnx");
    EXPECT_EQ(fresh.rc, 1) << fresh.err;
    const auto j = nlohmann::json::parse(fresh.out)["reports"][0];
    EXPECT_EQ(j["gate"]["verdict"], "fail");
    EXPECT_EQ(j["gate"]["counted"]["errors"], 1);
    EXPECT_EQ(j["gate"]["baselined"]["errors"], 1);
    EXPECT_EQ(j["gate"]["baseline"], "axqc-baseline.json");
    std::map<std::string, std::string> state_by_node;
    for (const auto& f : j["findings"]) state_by_node[f["nodes"][0]] = f["state"];
    EXPECT_EQ(state_by_node["export2/conv0_w_dq"], "baselined");
    EXPECT_EQ(state_by_node["export2/conv1_w_dq"], "counted");
    // The CI formats agree: one GitLab issue per finding, SARIF baseline states.
    Proc gl =
        ClientIn(dir, repo, mode + "--baseline axqc-baseline.json --format gitlab models/det.onnx");
    EXPECT_EQ(gl.rc, 1);
    EXPECT_EQ(nlohmann::json::parse(gl.out).size(), 2u) << gl.out;
    Proc sarif =
        ClientIn(dir, repo, mode + "--baseline axqc-baseline.json --format sarif models/det.onnx");
    const auto results = nlohmann::json::parse(sarif.out)["runs"][0]["results"];
    ASSERT_EQ(results.size(), 2u);
    EXPECT_EQ(results[0]["baselineState"], "unchanged");
    EXPECT_EQ(results[1]["baselineState"], "new");
    // Once the known one is fixed too, the baseline reports it gone.
    WriteFile(repo / "models/det.onnx", TwoConvModel(false, false));
    Proc fixed = ClientIn(dir, repo, mode + "--baseline axqc-baseline.json models/det.onnx");
    EXPECT_EQ(fixed.rc, 0);
    EXPECT_NE(fixed.out.find("baseline: 1 known finding is gone"), std::string::npos) << fixed.out;
    fs::remove(repo / "axqc-baseline.json");
  }
  // A missing or malformed baseline is a usage error.
  EXPECT_EQ(ClientIn(dir, repo, "check --baseline nothing.json models/det.onnx").rc, 2);
  WriteFile(repo / "bad-baseline.json", "{\"schema\": \"other\"}");
  Proc bad = ClientIn(dir, repo, "check --baseline bad-baseline.json models/det.onnx");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("not an axqc baseline"), std::string::npos) << bad.err;
}

TEST(ClientGate, WaiversFromTheConfigurationFoundUpwards) {
  TempDir dir;
  TestServer server(dir);
  const fs::path repo = dir / "repo";
  WriteFile(repo / "models/det.onnx", TwoConvModel(true, true));
  WriteFile(repo / "axqc.toml", R"toml([check]
max_locations = 3

[[waiver]]
rule = "role/weight-type"
node = "conv0_w_dq"
model = "models/*.onnx"
reason = "first layer stays per-tensor on this NPU (JIRA-4)"

[[waiver]]
rule = "role/*"
node = "conv1*"
reason = "re-export pending"
expires = 2025-01-31

[[waiver]]
rule = "op/*"
reason = "nothing matches this one"
)toml");
  for (const bool remote : {false, true}) {
    const std::string mode = remote ? "check --server " + Addr(server) + " " : "check ";
    // Run from a subdirectory: axqc.toml is found in the parent; model globs match paths relative
    // to the configuration's directory.
    Proc r = ClientIn(dir, repo / "models", mode + "det.onnx");
    EXPECT_EQ(r.rc, 1) << r.out << r.err;  // the expired waiver no longer waives conv1's finding
    EXPECT_NE(r.out.find("(node conv0_w_dq)  [waived: first layer stays per-tensor on this NPU "
                         "(JIRA-4) (../axqc.toml:4)]"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("stale waivers:\n  ../axqc.toml:10: waiver (rule=role/* node=conv1*) "
                         "expired on 2025-01-31: it no longer waives the 1 finding it matches"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("../axqc.toml:16: waiver (rule=op/*) matched no finding"),
              std::string::npos);
    // Machine formats carry them; stderr repeats them for the log.
    Proc sarif = ClientIn(dir, repo, mode + "--format sarif models/det.onnx");
    EXPECT_EQ(sarif.rc, 1);
    const auto run = nlohmann::json::parse(sarif.out)["runs"][0];
    EXPECT_EQ(run["results"][0]["suppressions"][0]["justification"],
              "first layer stays per-tensor on this NPU (JIRA-4)");
    EXPECT_EQ(run["invocations"][0]["toolConfigurationNotifications"].size(), 2u);
    EXPECT_NE(sarif.err.find("axqc.toml:16: waiver (rule=op/*) matched no finding"),
              std::string::npos)
        << sarif.err;
    // GitHub annotations on stderr beside a JSON report on stdout.
    Proc annotated =
        ClientIn(dir, repo, mode + "--format json --github-annotations models/det.onnx");
    EXPECT_EQ(nlohmann::json::parse(annotated.out)["reports"][0]["gate"]["waived"]["errors"], 1);
    EXPECT_NE(annotated.err.find("::error file=models/det.onnx,title=role/weight-type (spec 4)::"),
              std::string::npos)
        << annotated.err;
    EXPECT_EQ(annotated.err.find("conv0_w_dq"), std::string::npos);  // waived: not annotated
    EXPECT_NE(annotated.err.find("::warning file=axqc.toml,line=16,title=axqc stale waiver"),
              std::string::npos)
        << annotated.err;
    // --no-config: everything counts again; --config names another file.
    EXPECT_EQ(ClientIn(dir, repo, mode + "--no-config --format json models/det.onnx").rc, 1);
    WriteFile(repo / "ci/all.toml",
              "[[waiver]]\nrule = \"role/weight-type\"\nreason = \"all of them\"\n");
    Proc all = ClientIn(dir, repo, mode + "--config ci/all.toml models/det.onnx");
    EXPECT_EQ(all.rc, 0) << all.out << all.err;
    EXPECT_NE(all.out.find("gate: PASS  (fail on error; counted 0 errors, 0 warnings; waived 2)"),
              std::string::npos)
        << all.out;
    // --fail-on warn: stale waivers (and warnings) fail too.
    WriteFile(repo / "ci/stale.toml",
              "[[waiver]]\nrule = \"role/weight-type\"\nreason = \"all\"\n"
              "[[waiver]]\nrule = \"op/*\"\nreason = \"unused\"\n");
    EXPECT_EQ(ClientIn(dir, repo, mode + "--config ci/stale.toml models/det.onnx").rc, 0);
    EXPECT_EQ(
        ClientIn(dir, repo, mode + "--config ci/stale.toml --fail-on warn models/det.onnx").rc, 1);
  }
  // A broken configuration is a usage error naming the line.
  WriteFile(repo / "ci/broken.toml", "[[waiver]]\nrule = \"x\"\nreson = \"typo\"\n");
  Proc broken = ClientIn(dir, repo, "check --config ci/broken.toml models/det.onnx");
  EXPECT_EQ(broken.rc, 2);
  EXPECT_NE(broken.err.find("ci/broken.toml:3: unknown key `reson` in [[waiver]]"),
            std::string::npos)
      << broken.err;
  EXPECT_EQ(ClientIn(dir, repo, "check --config ci/all.toml --no-config models/det.onnx").rc, 2);
  // TOML only: a YAML configuration nearer than axqc.toml is refused, not silently skipped.
  WriteFile(repo / "models/.axqc.yaml", "waivers: []\n");
  Proc yaml = ClientIn(dir, repo / "models", "check det.onnx");
  EXPECT_EQ(yaml.rc, 2) << yaml.out;
  EXPECT_NE(yaml.err.find("configuration .axqc.yaml: axqc reads its configuration from TOML only"),
            std::string::npos)
      << yaml.err;
  EXPECT_EQ(ClientIn(dir, repo / "models", "check --no-config det.onnx").rc, 1);
}

TEST(ClientGate, TheServerRecordsTheClientsGate) {
  TempDir dir;
  TestServer server(dir);
  const fs::path repo = dir / "repo";
  WriteFile(repo / "models/a.onnx", TwoConvModel(true, false, "a/"));
  WriteFile(repo / "models/b.onnx", TwoConvModel(true, true, "b/"));
  WriteFile(repo / "axqc.toml",
            "[[waiver]]\nrule = \"role/weight-type\"\nnode = \"*conv0_w_dq\"\n"
            "reason = \"known\"\n");
  const std::string remote = "check --server " + Addr(server) + " --label project=gate ";
  // a: its one finding waived, passes; b: one waived, one counted, fails.
  EXPECT_EQ(ClientIn(dir, repo, remote + "models/a.onnx models/b.onnx").rc, 1);
  // A second format without recording adds no history row and no gate outcome.
  EXPECT_EQ(ClientIn(dir, repo, remote + "--no-record --format sarif models/a.onnx").rc, 0);
  // Without a configuration nothing is sent: the history row has no gate.
  EXPECT_EQ(ClientIn(dir, repo, remote + "--no-config models/a.onnx").rc, 1);
  Proc stats = Client(dir, "stats --server " + Addr(server) + " --by project --format json");
  ASSERT_EQ(stats.rc, 0) << stats.err;
  const auto s = nlohmann::json::parse(stats.out);
  EXPECT_EQ(s["total"]["requests"], "3");
  EXPECT_EQ(s["total"]["non_conformant"], "3");  // the checker's verdicts are unchanged
  EXPECT_EQ(s["total"]["gated"], "2");
  EXPECT_EQ(s["total"]["gate_passed"], "1");
  EXPECT_EQ(s["total"]["waived_findings"], "2");
  EXPECT_EQ(s["total"]["baselined_findings"], "0");
  Proc text = Client(dir, "stats --server " + Addr(server));
  EXPECT_NE(text.out.find("gate passed 1/2 (waived 2, baselined 0)"), std::string::npos)
      << text.out;
}

TEST(ClientHook, RegistryHookChecksTheNewVersionByReference) {
  TempDir dir;
  TestServer server(dir);
  WriteFile(dir / "root/registry/detector/3/model.onnx", NonConformantModel("hook"));
  WriteFile(dir / "root/registry/detector/4/model.onnx", ConformantModel("hook"));
  const std::string hook = "python3 " +
                           Quote(std::string(AXQC_SOURCE_DIR) + "/examples/ci/registry_hook.py") +
                           " --server " + Addr(server) + " --axqc " + Axqc();
  // MLflow-style model-version-created event; the source is a directory -> model.onnx inside.
  const std::string root = (dir / "root").string();
  WriteFile(dir / "v3.json",
            nlohmann::json{{"entity", "model_version"},
                           {"action", "created"},
                           {"data",
                            {{"name", "detector"},
                             {"version", "3"},
                             {"source", "file://" + root + "/registry/detector/3"}}}}
                .dump());
  Proc v3 = Exec(dir, hook + " " + Quote((dir / "v3.json").string()));
  EXPECT_EQ(v3.rc, 1) << v3.out << v3.err;
  EXPECT_NE(v3.out.find("detector version 3"), std::string::npos) << v3.out;
  EXPECT_NE(v3.out.find(": non_conformant (1 errors"), std::string::npos) << v3.out;
  EXPECT_NE(v3.out.find("role/weight-type"), std::string::npos) << v3.out;
  // Databricks-style flat event on stdin, with a prefix mapping to the server's root.
  WriteFile(dir / "v4.json", nlohmann::json{{"event", "MODEL_VERSION_CREATED"},
                                            {"model_name", "detector"},
                                            {"version", 4},
                                            {"storage_location", "s3://models/detector/4/"}}
                                 .dump());
  Proc v4 =
      Exec(dir, hook + " --map s3://models/=registry/ < " + Quote((dir / "v4.json").string()));
  EXPECT_EQ(v4.rc, 0) << v4.out << v4.err;
  EXPECT_NE(v4.out.find("detector version 4 (registry/detector/4/model.onnx): conformant"),
            std::string::npos)
      << v4.out;
  // The labels reached the request history.
  Proc stats = Client(dir, "stats --server " + Addr(server) + " --by model_version --format json");
  const auto s = nlohmann::json::parse(stats.out);
  ASSERT_EQ(s["groups"].size(), 2u) << stats.out;
  EXPECT_EQ(s["groups"][0]["label_value"], "3");
  EXPECT_EQ(s["groups"][1]["label_value"], "4");
  // --fix-plan: a raw PyTorch export (Constant nodes for every qparam) also gets the plan of
  // `axqc fix --dry-run`, run locally on the same file.
  {
    std::ifstream in(
        std::string(AXQC_SOURCE_DIR) + "/tests/data/real_exports/manual_cnn_numbers_op13.onnx",
        std::ios::binary);
    std::stringstream raw;
    raw << in.rdbuf();
    WriteFile(dir / "root/registry/detector/5/model.onnx", raw.str());
  }
  WriteFile(dir / "v5.json", nlohmann::json{{"event", "MODEL_VERSION_CREATED"},
                                            {"model_name", "detector"},
                                            {"version", 5},
                                            {"storage_location", "s3://models/detector/5/"}}
                                 .dump());
  Proc v5 =
      Exec(dir, hook + " --map s3://models/=registry/ --fix-plan --local-root " +
                    Quote((dir / "root").string()) + " < " + Quote((dir / "v5.json").string()));
  EXPECT_EQ(v5.rc, 1) << v5.out << v5.err;
  EXPECT_NE(v5.out.find(": non_conformant (59 errors"), std::string::npos) << v5.out;
  EXPECT_NE(v5.out.find("registry_hook: axqc fix would apply: constant-to-initializer 28, "
                        "value-info 38\n"),
            std::string::npos)
      << v5.out;
  EXPECT_NE(v5.out.find("registry_hook: after axqc fix: non_conformant (3 errors: "
                        "op/output-not-quantized, op/relu-form)"),
            std::string::npos)
      << v5.out;
  // A model with nothing to rewrite says so.
  Proc v3plan = Exec(dir, hook + " --fix-plan " + Quote((dir / "v3.json").string()));
  EXPECT_EQ(v3plan.rc, 1) << v3plan.out << v3plan.err;
  EXPECT_NE(v3plan.out.find("axqc fix would change nothing: the findings are the model's own"),
            std::string::npos)
      << v3plan.out;
  // No location in the payload: exit 2.
  WriteFile(dir / "bad.json", "{\"event\": \"MODEL_VERSION_CREATED\"}");
  Proc bad = Exec(dir, hook + " " + Quote((dir / "bad.json").string()));
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("no artifact location"), std::string::npos) << bad.err;
}

// The `axqc fix` command lines the text and HTML reports print are commands that run as printed
// (in the folder the model was checked from), also for a model whose name needs quoting.
TEST(CliReports, TheFixCommandsReportsPrintRun) {
  TempDir dir;
  const std::string name = "it's a model.onnx";
  WriteFile(dir / name, fixmodels::ConstantForms().SerializeAsString());
  // A shell in `dir` (Exec runs its command through env).
  const auto in_dir = [&](const std::string& command) {
    return "sh -c " + Quote("cd " + Quote(dir.path().string()) + " && " + command);
  };
  Proc text = Exec(dir, in_dir(Axqc() + " check " + Quote(name)));
  EXPECT_EQ(text.rc, 1) << text.out << text.err;
  const std::string want =
      "axqc fix 'it'\\''s a model.onnx' -o FIXED.onnx --only constant-to-initializer";
  const auto at = text.out.find("  fix: axqc fix ");
  ASSERT_NE(at, std::string::npos) << text.out;
  const std::string printed = text.out.substr(at + 7, text.out.find('\n', at) - at - 7);
  EXPECT_EQ(printed, want);
  Proc html = Exec(dir, in_dir(Axqc() + " check --format html -o report.html " + Quote(name)));
  EXPECT_EQ(html.rc, 1) << html.err;
  const std::string page = ReadFile(dir / "report.html");
  const auto repair = page.find("Repair: <code>");
  ASSERT_NE(repair, std::string::npos);
  std::string shown = page.substr(repair + 14, page.find("</code>", repair) - repair - 14);
  for (const auto& [entity, c] :
       {std::pair{std::string("&apos;"), '\''}, std::pair{std::string("&quot;"), '"'},
        std::pair{std::string("&amp;"), '&'}}) {
    for (auto p = shown.find(entity); p != std::string::npos; p = shown.find(entity, p + 1)) {
      shown.replace(p, entity.size(), 1, c);
    }
  }
  EXPECT_EQ(shown, want);
  // Run what was printed, with the CLI under test for `axqc`.
  Proc fixed = Exec(dir, in_dir(Axqc() + printed.substr(4)));
  // It ran (exit 1: the rewritten model still has findings of its own; 2 would be a usage error).
  EXPECT_EQ(fixed.rc, 1) << fixed.out << fixed.err;
  EXPECT_NE(
      fixed.out.find("axqc fix: it's a model.onnx -> FIXED.onnx\n  constant-to-initializer     8"),
      std::string::npos)
      << fixed.out;
  EXPECT_TRUE(fs::exists(dir / "FIXED.onnx"));
}

}  // namespace
}  // namespace axqc::test
