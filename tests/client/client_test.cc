// The remote client: the real `axqc` binary (child process) against a real axqc-server running
// in this test process on a loopback port. Covers hash-first upload skipping, upload on miss,
// reference mode, labels and stats, rules, health exit codes, retries, TLS with a CA generated
// here, mutual TLS, bearer tokens, and the registry hook script.
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "axqc/catalog.h"
#include "axqc/render.h"
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

TEST(ClientRemote, ReferenceModeWithLabelsAndStats) {
  TempDir dir;
  TestServer server(dir);
  WriteFile(dir / "root/team/bad.onnx", NonConformantModel("ref"));
  WriteFile(dir / "root/team/ok.onnx", ConformantModel("ref"));
  Proc r1 = Client(dir, "check --server " + Addr(server) +
                            " --ref team/bad.onnx --label project=demo --label source=ci "
                            "--format json");
  EXPECT_EQ(r1.rc, 1) << r1.err;
  const auto j = nlohmann::json::parse(r1.out);
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
  EXPECT_EQ(down.rc, 2);
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
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("(after 3 attempts): UNAVAILABLE"), std::string::npos) << r.err;
  EXPECT_GE(secs, 0.45);  // 200 ms + 400 ms backoff, -20 % jitter
  // Not retried: PERMISSION_DENIED comes back after one attempt.
  TestServer server(dir);
  Proc denied = Client(dir, "check --retries 5 --server " + Addr(server) + " --ref /etc/hostname");
  EXPECT_EQ(denied.rc, 2);
  EXPECT_EQ(server.Metrics().Value("axqc_requests_total",
                                   {{"method", "Check"}, {"code", "PERMISSION_DENIED"}}),
            1);
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
  EXPECT_EQ(none.rc, 2);
  EXPECT_NE(none.err.find("UNAUTHENTICATED"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("pass --token or set AXQC_TOKEN"), std::string::npos) << none.err;
  Proc wrong = Client(dir, check + " --token nope");
  EXPECT_EQ(wrong.rc, 2);
  EXPECT_NE(wrong.err.find("UNAUTHENTICATED"), std::string::npos) << wrong.err;
  EXPECT_EQ(server.Metrics().Value("axqc_upload_bytes_total"), 0);
  Proc flag = Client(dir, check + " --token s3cret-token");
  EXPECT_EQ(flag.rc, 0) << flag.err;
  Proc env = Client(dir, check, "AXQC_TOKEN=s3cret-token");
  EXPECT_EQ(env.rc, 0) << env.err;
  EXPECT_EQ(Client(dir, "stats --server " + Addr(server)).rc, 2);
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
  // Plaintext against a TLS port, and TLS trusting only another CA: refused (exit 2).
  Proc plain = Client(dir, "check --server " + Addr(server) + retries + " " + model);
  EXPECT_EQ(plain.rc, 2);
  Proc other = Client(dir, "check --server " + Addr(server) + retries + " --ca " +
                               Quote((dir / "other.pem").string()) + " " + model);
  EXPECT_EQ(other.rc, 2);
  EXPECT_NE(other.err.find("UNAVAILABLE"), std::string::npos) << other.err;
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
  EXPECT_EQ(without.rc, 2);
  EXPECT_NE(without.err.find("UNAVAILABLE"), std::string::npos) << without.err;
  EXPECT_EQ(Client(dir, "health --server " + Addr(server) + ca + client_cert).rc, 0);
  EXPECT_EQ(Client(dir, "health --server " + Addr(server) + ca).rc, 2);
  // A client certificate from another CA is refused too.
  Proc foreign = Client(dir, "check --server " + Addr(server) + ca + " --cert " +
                                 Quote((dir / "other.pem").string()) + " --key " +
                                 Quote((dir / "other.key").string()) + " " + model);
  EXPECT_EQ(foreign.rc, 2);
  // --cert without --key is a usage error.
  EXPECT_EQ(Client(dir, "health --server " + Addr(server) + ca + " --cert " +
                            Quote((dir / "client.pem").string()))
                .rc,
            2);
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
  // No location in the payload: exit 2.
  WriteFile(dir / "bad.json", "{\"event\": \"MODEL_VERSION_CREATED\"}");
  Proc bad = Exec(dir, hook + " " + Quote((dir / "bad.json").string()));
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("no artifact location"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace axqc::test
