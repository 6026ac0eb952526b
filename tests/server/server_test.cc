// axqc-server end to end: a real server on a loopback port, a real client channel through the
// generated stub, the real checker (axqc_core) unless a test gates it.
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/generic/generic_stub.h>

#include <nlohmann/json.hpp>

// GCC's -Wnull-dereference misfires inside Asio's scheduler (third-party code).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#pragma GCC diagnostic pop

#include "axqc/catalog.h"
#include "axqc/render.h"
#include "axqc/sha256.h"
#include "axqc/wire/report_proto.h"
#include "http_stub.h"
#include "server_test_util.h"

namespace axqc::test {
namespace {

using google::protobuf::util::MessageDifferencer;
using grpc::StatusCode;
using HealthResp = grpc::health::v1::HealthCheckResponse;

// The report the server must return for `bytes` under display name `name`.
v1::Report Expected(const std::string& bytes, const std::string& name, bool check_value = false) {
  Report r = DirectReport(bytes, name, check_value);
  if (r.model.sha256.empty()) r.model.sha256 = axqc::Sha256Hex(bytes);
  return wire::ToProto(r);
}

std::size_t ErrorFindings(const Report& r, const std::string& rule) {
  std::size_t n = 0;
  for (const auto& f : r.findings) {
    if (f.rule == rule && f.severity == Severity::kError) ++n;
  }
  return n;
}

class ServerTest : public ::testing::Test {
 protected:
  TempDir dir_;
};

// ------------------------------------------------------------------------------------------------
// The test models are what the tests assume they are.

TEST_F(ServerTest, TestModelsHaveTheExpectedVerdicts) {
  const Report ok = DirectReport(ConformantModel(), "ok.onnx");
  EXPECT_EQ(ok.verdict, Verdict::kConformant);
  EXPECT_EQ(ok.summary.errors, 0u);
  const Report bad = DirectReport(NonConformantModel(), "bad.onnx");
  EXPECT_EQ(bad.verdict, Verdict::kNonConformant);
  EXPECT_GE(ErrorFindings(bad, "role/weight-type"), 1u);
  EXPECT_NE(axqc::Sha256Hex(ConformantModel("a")), axqc::Sha256Hex(ConformantModel("b")));
  EXPECT_THROW(DirectReport(NotOnnxBytes(), "x.onnx"), InputError);
}

// ------------------------------------------------------------------------------------------------
// Upload

TEST_F(ServerTest, UploadConformantModel) {
  TestServer ts(dir_);
  const std::string model = ConformantModel();
  v1::CheckResponse resp;
  UploadArgs a;
  a.file_name = "detector-int8.onnx";
  a.declared_size = model.size();
  a.declared_sha256 = axqc::Sha256Hex(model);
  a.chunk = 700;  // several chunks
  const grpc::Status s = Upload(ts.stub(), model, &resp, a);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);
  EXPECT_EQ(resp.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(resp.sha256(), axqc::Sha256Hex(model));
  EXPECT_EQ(resp.rule_set_version(), std::string(kRuleSetVersion));
  EXPECT_EQ(resp.request_id().size(), 16u);
  ASSERT_TRUE(resp.has_report());
  EXPECT_EQ(resp.report().model().file(), "detector-int8.onnx");
  EXPECT_EQ(resp.report().model().size_bytes(), model.size());
  EXPECT_EQ(resp.report().summary().errors(), 0u);
  EXPECT_TRUE(MessageDifferencer::Equals(resp.report(), Expected(model, "detector-int8.onnx")))
      << resp.report().DebugString();
  EXPECT_EQ(ts.Metrics().Value("axqc_upload_bytes_total"), static_cast<double>(model.size()));
}

TEST_F(ServerTest, UploadNonConformantModelIsAnOkRpcWithFindings) {
  TestServer ts(dir_);
  const std::string model = NonConformantModel();
  v1::CheckResponse resp;
  UploadArgs a;
  a.file_name = "broken.onnx";
  const grpc::Status s = Upload(ts.stub(), model, &resp, a);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_NON_CONFORMANT);
  const v1::Report expected = Expected(model, "broken.onnx");
  EXPECT_TRUE(MessageDifferencer::Equals(resp.report(), expected));
  const Report direct = DirectReport(model, "broken.onnx");
  std::size_t weight_type = 0;
  for (const auto& f : resp.report().findings()) {
    if (f.rule() == "role/weight-type") {
      ++weight_type;
      EXPECT_EQ(f.severity(), v1::SEVERITY_ERROR);
      EXPECT_EQ(f.section(), FindRule("role/weight-type")->section);
    }
  }
  EXPECT_EQ(weight_type, ErrorFindings(direct, "role/weight-type"));
  EXPECT_EQ(resp.report().summary().errors(), direct.summary.errors);
}

TEST_F(ServerTest, UploadJsonFormatIsTheCliJson) {
  TestServer ts(dir_);
  const std::string model = NonConformantModel();
  v1::CheckResponse resp;
  UploadArgs a;
  a.file_name = "broken.onnx";
  a.format = v1::REPORT_FORMAT_JSON;
  ASSERT_TRUE(Upload(ts.stub(), model, &resp, a).ok());
  EXPECT_FALSE(resp.has_report());
  Report direct = DirectReport(model, "broken.onnx");
  if (direct.model.sha256.empty()) direct.model.sha256 = axqc::Sha256Hex(model);
  EXPECT_EQ(resp.report_json(), RenderJson(direct));
  const auto j = nlohmann::json::parse(resp.report_json());
  EXPECT_EQ(j.at("verdict"), "non_conformant");
}

TEST_F(ServerTest, OversizedModelsAreRefused) {
  TestServer ts(dir_, {[](server::ServerConfig& c) {
                         c.max_model_bytes = 4096;
                         c.max_inline_bytes = 2048;
                       },
                       {}});
  const std::string big(10000, 'x');
  v1::CheckResponse resp;
  // Streamed past the cap.
  grpc::Status s = Upload(ts.stub(), big, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_NE(s.error_message().find("over the limit of 4096"), std::string::npos);
  // Declared size over the cap: refused before any byte.
  UploadArgs a;
  a.declared_size = 5000;
  s = Upload(ts.stub(), "", &resp, a);
  EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(s.error_message().find("5000"), std::string::npos);
  // Inline content over the inline cap.
  s = CheckInline(ts.stub(), std::string(3000, 'x'), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(s.error_message().find("use Upload"), std::string::npos);
  // A file over the cap.
  WriteFile(dir_ / "root/big.onnx", big);
  s = CheckPath(ts.stub(), "big.onnx", &resp);
  EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  const Scrape m = ts.Metrics();
  EXPECT_EQ(m.Value("axqc_requests_total", {{"method", "Upload"}, {"code", "RESOURCE_EXHAUSTED"}}),
            2);
  EXPECT_EQ(m.Value("axqc_requests_total", {{"method", "Check"}, {"code", "RESOURCE_EXHAUSTED"}}),
            2);
  EXPECT_EQ(m.Value("axqc_inflight_model_bytes"), 0);
}

TEST_F(ServerTest, WrongDeclaredSha256OrSizeIsInvalidArgument) {
  TestServer ts(dir_);
  const std::string model = ConformantModel();
  v1::CheckResponse resp;
  UploadArgs a;
  a.declared_sha256 = axqc::Sha256Hex("other bytes");
  grpc::Status s = Upload(ts.stub(), model, &resp, a);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("sha256 mismatch: declared " + a.declared_sha256 +
                                   ", received bytes hash to " + axqc::Sha256Hex(model)),
            std::string::npos)
      << s.error_message();

  UploadArgs sized;
  sized.declared_size = model.size() + 1;
  s = Upload(ts.stub(), model, &resp, sized);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("declared size_bytes"), std::string::npos);

  UploadArgs malformed;
  malformed.declared_sha256 = "ABC";
  s = Upload(ts.stub(), model, &resp, malformed);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);

  // Path reference pinned to the wrong hash.
  WriteFile(dir_ / "root/m.onnx", model);
  grpc::ClientContext ctx;
  v1::CheckRequest req;
  req.set_path("m.onnx");
  req.set_expected_sha256(axqc::Sha256Hex("x"));
  s = ts.stub().Check(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("sha256 mismatch"), std::string::npos);
  // Nothing was checked.
  EXPECT_EQ(ts.Metrics().Value("axqc_check_duration_seconds_count", {{"stage", "check"}}), 0);
}

TEST_F(ServerTest, NonOnnxBytesAreInvalidArgument) {
  TestServer ts(dir_);
  v1::CheckResponse resp;
  grpc::Status s = CheckInline(ts.stub(), NotOnnxBytes(), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("not a readable ONNX model"), std::string::npos);
  s = Upload(ts.stub(), NotOnnxBytes(), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  const Scrape m = ts.Metrics();
  EXPECT_EQ(m.Value("axqc_checks_total", {{"verdict", "invalid_input"}, {"source", "inline"}}), 1);
  EXPECT_EQ(m.Value("axqc_checks_total", {{"verdict", "invalid_input"}, {"source", "upload"}}), 1);
}

TEST_F(ServerTest, ClientCancellingMidUploadLeavesServerHealthy) {
  TestServer ts(dir_);
  const std::string model = ConformantModel();
  {
    grpc::ClientContext ctx;
    v1::CheckResponse resp;
    auto writer = ts.stub().Upload(&ctx, &resp);
    v1::UploadRequest first;
    first.mutable_metadata()->set_file_name("m.onnx");
    first.mutable_metadata()->set_size_bytes(model.size());
    ASSERT_TRUE(writer->Write(first));
    v1::UploadRequest chunk;
    chunk.set_chunk(model.substr(0, 1000));
    ASSERT_TRUE(writer->Write(chunk));
    ASSERT_TRUE(WaitFor([&] { return ts.Metrics().Value("axqc_upload_bytes_total") == 1000; }));
    ctx.TryCancel();
    const grpc::Status s = writer->Finish();
    EXPECT_EQ(s.error_code(), StatusCode::CANCELLED);
  }
  ASSERT_TRUE(WaitFor([&] {
    return ts.Metrics().Value("axqc_requests_total",
                              {{"method", "Upload"}, {"code", "CANCELLED"}}) == 1;
  }));
  EXPECT_TRUE(WaitFor([&] { return ts.Metrics().Value("axqc_inflight_model_bytes") == 0; }));
  EXPECT_EQ(HealthStatus(ts.health()), HealthResp::SERVING);
  v1::CheckResponse resp;
  ASSERT_TRUE(Upload(ts.stub(), model, &resp).ok());
  EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);
  EXPECT_EQ(resp.cache(), v1::CACHE_RESULT_MISS);
}

// ------------------------------------------------------------------------------------------------
// Path references

TEST_F(ServerTest, CheckByPathRelativeAndAbsolute) {
  TestServer ts(dir_);
  const std::string model = NonConformantModel();
  WriteFile(dir_ / "root/models/m.onnx", model);
  v1::CheckResponse resp;
  grpc::Status s = CheckPath(ts.stub(), "models/m.onnx", &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_NON_CONFORMANT);
  EXPECT_EQ(resp.report().model().file(), "models/m.onnx");
  EXPECT_TRUE(MessageDifferencer::Equals(resp.report(), Expected(model, "models/m.onnx")));

  const std::string abs = (dir_ / "root/models/m.onnx").string();
  s = CheckPath(ts.stub(), abs, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.report().model().file(), abs);
  EXPECT_EQ(resp.cache(), v1::CACHE_RESULT_MEMORY_HIT);
  EXPECT_EQ(
      ts.Metrics().Value("axqc_checks_total", {{"verdict", "non_conformant"}, {"source", "path"}}),
      2);

  s = CheckPath(ts.stub(), "models/missing.onnx", &resp);
  EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND);
  s = CheckPath(ts.stub(), "models", &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
}

TEST_F(ServerTest, PathTraversalIsRefused) {
  TestServer ts(dir_);
  WriteFile(dir_ / "outside.onnx", ConformantModel());
  WriteFile(dir_ / "root/sub/in.onnx", ConformantModel());
  v1::CheckResponse resp;
  for (const std::string& p :
       std::vector<std::string>{"../outside.onnx", "sub/../../outside.onnx", "sub/../in.onnx",
                                (dir_ / "root/../outside.onnx").string()}) {
    const grpc::Status s = CheckPath(ts.stub(), p, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::PERMISSION_DENIED) << p;
    EXPECT_NE(s.error_message().find("'..'"), std::string::npos) << s.error_message();
  }
  // Absolute paths outside the root, existing or not: refused without revealing existence.
  for (const std::string& p : std::vector<std::string>{(dir_ / "outside.onnx").string(),
                                                       "/etc/passwd", "/nonexistent/x.onnx"}) {
    const grpc::Status s = CheckPath(ts.stub(), p, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::PERMISSION_DENIED) << p;
    EXPECT_NE(s.error_message().find("outside the server's allowed roots"), std::string::npos);
  }
  EXPECT_EQ(ts.Metrics().Value("axqc_requests_total",
                               {{"method", "Check"}, {"code", "PERMISSION_DENIED"}}),
            7);
}

TEST_F(ServerTest, SymlinkEscapeIsRefused) {
  TestServer ts(dir_);
  const std::string model = ConformantModel();
  WriteFile(dir_ / "outside/secret.onnx", model);
  WriteFile(dir_ / "root/real.onnx", model);
  fs::create_symlink(dir_ / "outside/secret.onnx", dir_ / "root/link.onnx");
  fs::create_directory_symlink(dir_ / "outside", dir_ / "root/linkdir");
  fs::create_symlink("real.onnx", dir_ / "root/inside-link.onnx");
  v1::CheckResponse resp;
  for (const std::string& p : std::vector<std::string>{"link.onnx", "linkdir/secret.onnx"}) {
    const grpc::Status s = CheckPath(ts.stub(), p, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::PERMISSION_DENIED) << p;
    EXPECT_NE(s.error_message().find("symbolic link"), std::string::npos) << s.error_message();
  }
  // A symlink that stays inside the root is fine.
  const grpc::Status s = CheckPath(ts.stub(), "inside-link.onnx", &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);
}

TEST_F(ServerTest, PathReferencesDisabledWithoutRoots) {
  TestServer ts(dir_, {[](server::ServerConfig& c) { c.allowed_roots.clear(); }, {}});
  v1::CheckResponse resp;
  const grpc::Status s = CheckPath(ts.stub(), "/tmp/x.onnx", &resp);
  EXPECT_EQ(s.error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("disabled"), std::string::npos);
}

// ------------------------------------------------------------------------------------------------
// URL references against a loopback HTTP server.

// Serves `model` at /m.onnx (also with a query string), redirects, a big body and 404s.
HttpStub::Handler ModelHandler(const std::string& model, const HttpStub* self) {
  return [model, self](boost::asio::ip::tcp::socket& sock, const std::string& target,
                       const std::atomic<bool>&) {
    std::string resp;
    if (target == "/m.onnx" || target == "/m.onnx?token=SECRET") {
      resp = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(model.size()) +
             "\r\nConnection: close\r\n\r\n" + model;
    } else if (target == "/redirect") {
      resp = "HTTP/1.1 302 Found\r\nLocation: /m.onnx\r\nContent-Length: 0\r\n\r\n";
    } else if (target == "/redirect-away") {
      resp = "HTTP/1.1 302 Found\r\nLocation: http://localhost:" + std::to_string(self->port()) +
             "/m.onnx\r\nContent-Length: 0\r\n\r\n";
    } else if (target == "/big") {
      resp = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + std::string(100000, 'x');
    } else {
      resp = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    }
    boost::system::error_code ec;
    boost::asio::write(sock, boost::asio::buffer(resp), ec);
  };
}

// The model server of the URL tests (the handler needs the port for /redirect-away).
class HttpModelServer : public HttpStub {
 public:
  explicit HttpModelServer(const std::string& model) : HttpStub(ModelHandler(model, this)) {}
};

grpc::Status CheckUrl(v1::Checker::Stub& stub, const std::string& url, v1::CheckResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::CheckRequest req;
  req.set_url(url);
  return stub.Check(&ctx, req, resp);
}

TEST_F(ServerTest, UrlReferenceOnlyToAllowlistedHosts) {
  const std::string model = ConformantModel("url");
  HttpModelServer http(model);
  TestServer ts(dir_, {[](server::ServerConfig& c) {
                         c.url_allow_hosts = {"127.0.0.1"};
                         c.max_model_bytes = 50000;
                         c.max_inline_bytes = 50000;
                       },
                       {}});
  v1::CheckResponse resp;
  grpc::Status s = CheckUrl(ts.stub(), http.Url("/m.onnx?token=SECRET"), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);
  EXPECT_EQ(resp.report().model().file(), "m.onnx");
  EXPECT_EQ(resp.sha256(), axqc::Sha256Hex(model));

  s = CheckUrl(ts.stub(), http.Url("/redirect"), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.cache(), v1::CACHE_RESULT_MEMORY_HIT);

  s = CheckUrl(ts.stub(), http.Url("/missing.onnx"), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND) << s.error_message();
  s = CheckUrl(ts.stub(), http.Url("/big"), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED) << s.error_message();

  const int before = http.requests.load();
  // Not in the allowlist: refused before any connection.
  s = CheckUrl(ts.stub(), "http://localhost:" + std::to_string(http.port()) + "/m.onnx", &resp);
  EXPECT_EQ(s.error_code(), StatusCode::PERMISSION_DENIED);
  s = CheckUrl(ts.stub(), "http://example.invalid/m.onnx", &resp);
  EXPECT_EQ(s.error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(http.requests.load(), before);
  // A redirect to a host outside the allowlist is refused too.
  s = CheckUrl(ts.stub(), http.Url("/redirect-away"), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(http.requests.load(), before + 1);
  // Malformed.
  s = CheckUrl(ts.stub(), "ftp://127.0.0.1/m.onnx", &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  s = CheckUrl(ts.stub(), "http://user:pw@127.0.0.1/m.onnx", &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  // The query string (a token) never reaches the log.
  const std::string log = ts.Log();
  EXPECT_EQ(log.find("SECRET"), std::string::npos);
  EXPECT_NE(log.find("\"url\":\"http://127.0.0.1:" + std::to_string(http.port()) + "/m.onnx\""),
            std::string::npos);
}

TEST_F(ServerTest, UrlReferencesDisabledWithoutAllowlist) {
  TestServer ts(dir_);
  v1::CheckResponse resp;
  const grpc::Status s = CheckUrl(ts.stub(), "http://127.0.0.1:1/m.onnx", &resp);
  EXPECT_EQ(s.error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("disabled"), std::string::npos);
}

// ------------------------------------------------------------------------------------------------
// Cache and store

TEST_F(ServerTest, SecondIdenticalRequestIsACacheHit) {
  TestServer ts(dir_);
  const std::string model = ConformantModel();
  v1::CheckResponse first;
  v1::CheckResponse second;
  ASSERT_TRUE(CheckInline(ts.stub(), model, &first).ok());
  ASSERT_TRUE(CheckInline(ts.stub(), model, &second).ok());
  EXPECT_EQ(first.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(second.cache(), v1::CACHE_RESULT_MEMORY_HIT);
  EXPECT_TRUE(MessageDifferencer::Equals(first.report(), second.report()));
  // check_value is part of the cache key.
  v1::CheckResponse cv;
  ASSERT_TRUE(CheckInline(ts.stub(), model, &cv, {}, /*check_value=*/true).ok());
  EXPECT_EQ(cv.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_TRUE(cv.report().check_value());

  const Scrape m = ts.Metrics();
  EXPECT_EQ(m.Value("axqc_cache_lookups_total", {{"result", "miss"}}), 2);
  EXPECT_EQ(m.Value("axqc_cache_lookups_total", {{"result", "memory_hit"}}), 1);
  EXPECT_EQ(m.Value("axqc_cache_lookups_total", {{"result", "store_hit"}}), 0);
  EXPECT_EQ(m.Value("axqc_check_duration_seconds_count", {{"stage", "check"}}), 2);
  EXPECT_EQ(m.Value("axqc_checks_total", {{"verdict", "conformant"}, {"source", "inline"}}), 3);
  EXPECT_EQ(m.Value("axqc_cache_entries"), 2);
  EXPECT_GT(m.Value("axqc_cache_memory_bytes"), 0);
}

// An Upload that declares the sha256 of a model whose report is cached is answered from the cache
// once its bytes hash to the declaration (they are hashed, not stored: UploadAssembler::HashOnly);
// bytes that do not are refused as for any upload.
TEST_F(ServerTest, UploadOfACachedModelByDeclaredSha256IsAHitAndStillProvesItsBytes) {
  TestServer ts(dir_);
  const std::string model = NonConformantModel("declared");
  const std::string sha = axqc::Sha256Hex(model);
  v1::CheckResponse first, again, json;
  ASSERT_TRUE(Upload(ts.stub(), model, &first).ok());
  EXPECT_EQ(first.cache(), v1::CACHE_RESULT_MISS);
  UploadArgs declared;
  declared.declared_sha256 = sha;
  declared.declared_size = model.size();
  ASSERT_TRUE(Upload(ts.stub(), model, &again, declared).ok());
  EXPECT_EQ(again.cache(), v1::CACHE_RESULT_MEMORY_HIT);
  EXPECT_EQ(again.verdict(), v1::VERDICT_NON_CONFORMANT);
  EXPECT_TRUE(MessageDifferencer::Equals(first.report(), again.report()));
  declared.format = v1::REPORT_FORMAT_JSON;
  ASSERT_TRUE(Upload(ts.stub(), model, &json, declared).ok());
  EXPECT_EQ(json.cache(), v1::CACHE_RESULT_MEMORY_HIT);
  EXPECT_NE(json.report_json().find(sha), std::string::npos);

  // Other bytes under the cached model's sha256.
  std::string other = model;
  other.back() = static_cast<char>(other.back() ^ 1);
  v1::CheckResponse refused;
  const grpc::Status s = Upload(ts.stub(), other, &refused, declared);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("sha256 mismatch"), std::string::npos) << s.error_message();
  EXPECT_EQ(ts.Metrics().Value("axqc_check_duration_seconds_count", {{"stage", "check"}}), 1);
}

TEST_F(ServerTest, RestartOnTheSameStoreIsStillAHit) {
  const std::string model = NonConformantModel();
  v1::CheckResponse before;
  {
    TestServer ts(dir_);
    ASSERT_TRUE(CheckInline(ts.stub(), model, &before, {{"project", "p"}}).ok());
    EXPECT_EQ(before.cache(), v1::CACHE_RESULT_MISS);
  }
  TestServer ts(dir_);
  v1::CheckResponse after;
  ASSERT_TRUE(CheckInline(ts.stub(), model, &after, {{"project", "p"}}).ok());
  EXPECT_EQ(after.cache(), v1::CACHE_RESULT_STORE_HIT);
  EXPECT_TRUE(MessageDifferencer::Equals(before.report(), after.report()));
  // Now in memory.
  ASSERT_TRUE(CheckInline(ts.stub(), model, &after).ok());
  EXPECT_EQ(after.cache(), v1::CACHE_RESULT_MEMORY_HIT);
  const Scrape m = ts.Metrics();
  EXPECT_EQ(m.Value("axqc_cache_lookups_total", {{"result", "store_hit"}}), 1);
  EXPECT_EQ(m.Value("axqc_cache_lookups_total", {{"result", "memory_hit"}}), 1);
  EXPECT_EQ(m.Value("axqc_check_duration_seconds_count", {{"stage", "check"}}), 0);
  // The history survived the restart too.
  grpc::ClientContext ctx;
  v1::GetStatsRequest req;
  v1::GetStatsResponse stats;
  ASSERT_TRUE(ts.stub().GetStats(&ctx, req, &stats).ok());
  EXPECT_EQ(stats.total().requests(), 3u);
  EXPECT_EQ(stats.total().non_conformant(), 3u);
}

// Protobuf GetReport answers borrow the cached report instead of copying it: concurrent hits
// all get the full report, a renamed answer is a copy, and the cached report is never changed.
TEST_F(ServerTest, GetReportHitsShareTheCachedReportWithoutChangingIt) {
  TestServer ts(dir_);
  const std::string model = NonConformantModel("borrow");
  v1::CheckResponse checked;
  ASSERT_TRUE(CheckInline(ts.stub(), model, &checked).ok());
  ASSERT_TRUE(checked.has_report());
  const std::string original = checked.report().SerializeAsString();
  const std::string file = checked.report().model().file();
  auto get = [&](const std::string& name, v1::CheckResponse* resp) {
    grpc::ClientContext ctx;
    v1::GetReportRequest req;
    req.set_sha256(checked.sha256());
    req.set_name(name);
    return ts.stub().GetReport(&ctx, req, resp);
  };
  std::vector<std::thread> threads;
  std::atomic<int> same{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        v1::CheckResponse resp;
        if (get("", &resp).ok() && resp.cache() == v1::CACHE_RESULT_MEMORY_HIT &&
            resp.report().SerializeAsString() == original) {
          ++same;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(same.load(), 200);
  v1::CheckResponse renamed;
  ASSERT_TRUE(get("renamed.onnx", &renamed).ok());
  EXPECT_EQ(renamed.report().model().file(), "renamed.onnx");
  EXPECT_GT(renamed.report().summary().errors(), 0u);
  v1::CheckResponse again;
  ASSERT_TRUE(get(file, &again).ok());  // the name it was checked under: no copy needed
  EXPECT_EQ(again.report().SerializeAsString(), original);
  v1::CheckResponse plain;
  ASSERT_TRUE(get("", &plain).ok());
  EXPECT_EQ(plain.report().model().file(), file);
  EXPECT_EQ(plain.report().SerializeAsString(), original);
}

TEST_F(ServerTest, GetReportByHash) {
  TestServer ts(dir_);
  const std::string model = ConformantModel();
  const std::string sha = axqc::Sha256Hex(model);
  {
    grpc::ClientContext ctx;
    v1::GetReportRequest req;
    req.set_sha256(sha);
    v1::CheckResponse resp;
    const grpc::Status s = ts.stub().GetReport(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND);
  }
  v1::CheckResponse checked;
  ASSERT_TRUE(CheckInline(ts.stub(), model, &checked).ok());
  {
    grpc::ClientContext ctx;
    v1::GetReportRequest req;
    req.set_sha256(sha);
    req.set_name("renamed.onnx");
    req.mutable_options()->set_format(v1::REPORT_FORMAT_JSON);
    v1::CheckResponse resp;
    ASSERT_TRUE(ts.stub().GetReport(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.cache(), v1::CACHE_RESULT_MEMORY_HIT);
    EXPECT_EQ(resp.verdict(), v1::VERDICT_CONFORMANT);
    Report direct = DirectReport(model, "renamed.onnx");
    if (direct.model.sha256.empty()) direct.model.sha256 = sha;
    EXPECT_EQ(resp.report_json(), RenderJson(direct));
  }
  // The JSON is rendered once and kept with the cached report (cached_report.h): later JSON
  // answers, under the report's own name or another, are the kept text, not rendered again.
  const auto renders = [&] {
    return ts.Metrics().Value("axqc_check_duration_seconds_count", {{"stage", "render"}});
  };
  EXPECT_EQ(renders(), 1);
  for (const std::string name : {"", "renamed.onnx", "again.onnx", ""}) {
    grpc::ClientContext ctx;
    v1::GetReportRequest req;
    req.set_sha256(sha);
    req.set_name(name);
    req.mutable_options()->set_format(v1::REPORT_FORMAT_JSON);
    v1::CheckResponse resp;
    ASSERT_TRUE(ts.stub().GetReport(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.cache(), v1::CACHE_RESULT_MEMORY_HIT);
    Report direct = DirectReport(model, name.empty() ? checked.report().model().file() : name);
    if (direct.model.sha256.empty()) direct.model.sha256 = sha;
    EXPECT_EQ(resp.report_json(), RenderJson(direct)) << name;
  }
  EXPECT_EQ(renders(), 1);
  {
    // Other options: not found.
    grpc::ClientContext ctx;
    v1::GetReportRequest req;
    req.set_sha256(sha);
    req.mutable_options()->set_check_value(true);
    v1::CheckResponse resp;
    EXPECT_EQ(ts.stub().GetReport(&ctx, req, &resp).error_code(), StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext ctx;
    v1::GetReportRequest req;
    req.set_sha256("not-a-hash");
    v1::CheckResponse resp;
    EXPECT_EQ(ts.stub().GetReport(&ctx, req, &resp).error_code(), StatusCode::INVALID_ARGUMENT);
  }
  // Lookups leave no history row.
  grpc::ClientContext ctx;
  v1::GetStatsResponse stats;
  ASSERT_TRUE(ts.stub().GetStats(&ctx, v1::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.total().requests(), 1u);
}

// ------------------------------------------------------------------------------------------------
// Worker pool: queue bound, single flight, cancellation

TEST_F(ServerTest, QueueFullIsResourceExhaustedAndIdenticalRequestsShareOneCheck) {
  auto gate = std::make_shared<Gate>();
  TestServer ts(dir_, {[](server::ServerConfig& c) {
                         c.workers = 1;
                         c.queue_capacity = 1;
                       },
                       {GatedCheck(gate)}});
  const std::string a = ConformantModel("a");
  const std::string b = ConformantModel("b");
  const std::string c = ConformantModel("c");
  v1::CheckResponse ra, rb, ra2;
  grpc::Status sa, sb, sa2;
  std::thread ta([&] { sa = CheckInline(ts.stub(), a, &ra); });
  ASSERT_TRUE(WaitFor([&] { return gate->calls.load() == 1; }));  // a runs (blocked)
  std::thread tb([&] { sb = CheckInline(ts.stub(), b, &rb); });
  ASSERT_TRUE(WaitFor([&] { return ts.server().metrics().queue_depth().Value() == 1; }));
  // The queue is full: a third model is refused at once.
  v1::CheckResponse rc;
  const grpc::Status sc = CheckInline(ts.stub(), c, &rc);
  EXPECT_EQ(sc.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(sc.error_message().find("queue is full"), std::string::npos);
  // The same model as the running check joins it (single flight), queue full or not.
  std::thread ta2([&] { sa2 = CheckInline(ts.stub(), a, &ra2); });
  ASSERT_TRUE(WaitFor([&] {
    return ts.Metrics().Value("axqc_cache_lookups_total", {{"result", "shared"}}) == 1;
  }));
  const Scrape during = ts.Metrics();
  EXPECT_EQ(during.Value("axqc_queue_depth"), 1);
  EXPECT_EQ(during.Value("axqc_busy_workers"), 1);
  gate->Open();
  ta.join();
  tb.join();
  ta2.join();
  ASSERT_TRUE(sa.ok()) << sa.error_message();
  ASSERT_TRUE(sb.ok()) << sb.error_message();
  ASSERT_TRUE(sa2.ok()) << sa2.error_message();
  EXPECT_EQ(gate->calls.load(), 2);  // a and b; the second a shared the first
  EXPECT_EQ(ra.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(ra2.cache(), v1::CACHE_RESULT_SHARED);
  EXPECT_EQ(rb.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_TRUE(MessageDifferencer::Equals(ra.report(), ra2.report()));
  const Scrape after = ts.Metrics();
  EXPECT_EQ(after.Value("axqc_queue_depth"), 0);
  EXPECT_EQ(after.Value("axqc_busy_workers"), 0);
  EXPECT_EQ(after.Value("axqc_requests_total", {{"method", "Check"}, {"code", "OK"}}), 3);
  EXPECT_EQ(
      after.Value("axqc_requests_total", {{"method", "Check"}, {"code", "RESOURCE_EXHAUSTED"}}), 1);
  EXPECT_EQ(after.Value("axqc_queue_wait_seconds_count"), 2);
}

TEST_F(ServerTest, ExpiredRequestStopsWaitingAndFreesItsQueueSlot) {
  auto gate = std::make_shared<Gate>();
  TestServer ts(dir_, {[](server::ServerConfig& c) {
                         c.workers = 1;
                         c.queue_capacity = 1;
                       },
                       {GatedCheck(gate)}});
  v1::CheckResponse ra, rb, rc;
  grpc::Status sa, sc;
  std::thread ta([&] { sa = CheckInline(ts.stub(), ConformantModel("a"), &ra); });
  ASSERT_TRUE(WaitFor([&] { return gate->calls.load() == 1; }));
  // b waits in the queue until its deadline.
  const auto t0 = std::chrono::steady_clock::now();
  const grpc::Status sb =
      CheckInline(ts.stub(), ConformantModel("b"), &rb, {}, false, std::chrono::milliseconds(300));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(sb.error_code(), StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(waited, std::chrono::seconds(3));
  // Its slot is free again: the queue takes another model.
  ASSERT_TRUE(WaitFor([&] { return ts.server().metrics().queue_depth().Value() == 0; }));
  std::thread tc([&] { sc = CheckInline(ts.stub(), ConformantModel("c"), &rc); });
  ASSERT_TRUE(WaitFor([&] { return ts.server().metrics().queue_depth().Value() == 1; }));
  gate->Open();
  ta.join();
  tc.join();
  EXPECT_TRUE(sa.ok());
  EXPECT_TRUE(sc.ok()) << sc.error_message();
  EXPECT_EQ(gate->calls.load(), 2);  // b never ran
  ASSERT_TRUE(WaitFor([&] {
    return ts.Metrics().Value("axqc_requests_total",
                              {{"method", "Check"}, {"code", "DEADLINE_EXCEEDED"}}) == 1;
  }));
}

// ------------------------------------------------------------------------------------------------
// Stats

TEST_F(ServerTest, GetStatsAfterAKnownSequenceReturnsExactCounts) {
  TestServer ts(dir_);
  const std::string ok = ConformantModel("s1");
  const std::string ok2 = ConformantModel("s2");
  const std::string bad = NonConformantModel("s3");
  const std::string bad2 = NonConformantModel("s4");
  const Report bad_report = DirectReport(bad, "x");
  const std::size_t weight_type_per_bad = ErrorFindings(bad_report, "role/weight-type");
  ASSERT_GE(weight_type_per_bad, 1u);
  v1::CheckResponse r;
  // project a: conformant x2 (the second from the cache), non-conformant x1
  ASSERT_TRUE(CheckInline(ts.stub(), ok, &r, {{"project", "a"}}).ok());
  ASSERT_TRUE(CheckInline(ts.stub(), ok, &r, {{"project", "a"}, {"model", "m1"}}).ok());
  ASSERT_TRUE(CheckInline(ts.stub(), bad, &r, {{"project", "a"}}).ok());
  // project b: non-conformant x1 (upload), invalid input x1
  UploadArgs ua;
  ua.labels = {{"project", "b"}};
  ASSERT_TRUE(Upload(ts.stub(), bad2, &r, ua).ok());
  EXPECT_EQ(CheckInline(ts.stub(), NotOnnxBytes(), &r, {{"project", "b"}}).error_code(),
            StatusCode::INVALID_ARGUMENT);
  // no project: conformant x1
  ASSERT_TRUE(CheckInline(ts.stub(), ok2, &r).ok());
  // Errors before the checker leave no row.
  EXPECT_EQ(CheckPath(ts.stub(), "missing.onnx", &r).error_code(), StatusCode::NOT_FOUND);

  grpc::ClientContext ctx;
  v1::GetStatsRequest req;
  req.set_group_by("project");
  v1::GetStatsResponse stats;
  ASSERT_TRUE(ts.stub().GetStats(&ctx, req, &stats).ok());
  EXPECT_EQ(stats.total().requests(), 6u);
  EXPECT_EQ(stats.total().conformant(), 3u);
  EXPECT_EQ(stats.total().non_conformant(), 2u);
  EXPECT_EQ(stats.total().not_applicable(), 0u);
  EXPECT_EQ(stats.total().invalid_input(), 1u);
  EXPECT_DOUBLE_EQ(stats.total().pass_rate(), 3.0 / 5.0);
  ASSERT_EQ(stats.groups_size(), 3);
  EXPECT_EQ(stats.groups(0).label_value(), "");
  EXPECT_EQ(stats.groups(0).counts().requests(), 1u);
  EXPECT_EQ(stats.groups(0).counts().conformant(), 1u);
  EXPECT_DOUBLE_EQ(stats.groups(0).counts().pass_rate(), 1.0);
  EXPECT_EQ(stats.groups(1).label_value(), "a");
  EXPECT_EQ(stats.groups(1).counts().requests(), 3u);
  EXPECT_EQ(stats.groups(1).counts().conformant(), 2u);
  EXPECT_EQ(stats.groups(1).counts().non_conformant(), 1u);
  EXPECT_DOUBLE_EQ(stats.groups(1).counts().pass_rate(), 2.0 / 3.0);
  EXPECT_EQ(stats.groups(2).label_value(), "b");
  EXPECT_EQ(stats.groups(2).counts().requests(), 2u);
  EXPECT_EQ(stats.groups(2).counts().non_conformant(), 1u);
  EXPECT_EQ(stats.groups(2).counts().invalid_input(), 1u);
  EXPECT_DOUBLE_EQ(stats.groups(2).counts().pass_rate(), 0.0);
  // Failing rules: every error rule of the broken model, each in 2 requests.
  std::map<std::string, std::size_t> expected_rules;
  for (const auto& f : bad_report.findings) {
    if (f.severity == Severity::kError) ++expected_rules[f.rule];
  }
  ASSERT_EQ(static_cast<std::size_t>(stats.top_failing_rules_size()), expected_rules.size());
  for (const auto& rc : stats.top_failing_rules()) {
    ASSERT_TRUE(expected_rules.count(rc.rule())) << rc.rule();
    EXPECT_EQ(rc.requests(), 2u) << rc.rule();
    EXPECT_EQ(rc.findings(), 2 * expected_rules[rc.rule()]) << rc.rule();
  }

  // Filtered by label.
  {
    grpc::ClientContext c2;
    v1::GetStatsRequest q;
    (*q.mutable_label_filter())["project"] = "a";
    (*q.mutable_label_filter())["model"] = "m1";
    v1::GetStatsResponse s2;
    ASSERT_TRUE(ts.stub().GetStats(&c2, q, &s2).ok());
    EXPECT_EQ(s2.total().requests(), 1u);
    EXPECT_EQ(s2.total().conformant(), 1u);
    EXPECT_EQ(s2.top_failing_rules_size(), 0);
  }
  // A window in the past is empty; a window covering now has everything.
  {
    grpc::ClientContext c3;
    v1::GetStatsRequest q;
    q.mutable_since()->set_seconds(0);
    q.mutable_until()->set_seconds(1000);
    v1::GetStatsResponse s3;
    ASSERT_TRUE(ts.stub().GetStats(&c3, q, &s3).ok());
    EXPECT_EQ(s3.total().requests(), 0u);
    EXPECT_EQ(s3.until().seconds(), 1000);
  }
  {
    grpc::ClientContext c4;
    v1::GetStatsRequest q;
    q.mutable_window()->set_seconds(3600);
    q.set_top_rules(1);
    v1::GetStatsResponse s4;
    ASSERT_TRUE(ts.stub().GetStats(&c4, q, &s4).ok());
    EXPECT_EQ(s4.total().requests(), 6u);
    EXPECT_EQ(s4.top_failing_rules_size(), 1);
    EXPECT_EQ(s4.until().seconds() - s4.since().seconds(), 3600);
  }
  {
    grpc::ClientContext c5;
    v1::GetStatsRequest q;
    q.set_group_by("bad key!");
    v1::GetStatsResponse s5;
    EXPECT_EQ(ts.stub().GetStats(&c5, q, &s5).error_code(), StatusCode::INVALID_ARGUMENT);
  }
}

TEST_F(ServerTest, ListRulesIsTheCatalog) {
  TestServer ts(dir_);
  grpc::ClientContext ctx;
  v1::ListRulesResponse resp;
  ASSERT_TRUE(ts.stub().ListRules(&ctx, v1::ListRulesRequest(), &resp).ok());
  ASSERT_EQ(static_cast<std::size_t>(resp.rules_size()), Rules().size());
  for (std::size_t i = 0; i < Rules().size(); ++i) {
    const auto& want = Rules()[i];
    const auto& got = resp.rules(static_cast<int>(i));
    EXPECT_EQ(got.id(), want.id);
    EXPECT_EQ(got.severity(), wire::SeverityToProto(want.severity));
    EXPECT_EQ(got.check_value(), want.check_value);
    EXPECT_EQ(got.section(), want.section);
  }
  EXPECT_EQ(resp.rule_set_version(), std::string(kRuleSetVersion));
  EXPECT_EQ(resp.tool_version(), std::string(ToolVersion()));
}

// ------------------------------------------------------------------------------------------------
// Metrics

TEST_F(ServerTest, MetricsEndpointHasTheExpectedSeriesAndValues) {
  TestServer ts(dir_);
  const std::string ok = ConformantModel("m1");
  const std::string bad = NonConformantModel("m2");
  v1::CheckResponse r;
  ASSERT_TRUE(CheckInline(ts.stub(), ok, &r).ok());
  ASSERT_TRUE(CheckInline(ts.stub(), ok, &r).ok());
  UploadArgs ua;
  ASSERT_TRUE(Upload(ts.stub(), bad, &r, ua).ok());
  EXPECT_EQ(CheckInline(ts.stub(), NotOnnxBytes(), &r).error_code(), StatusCode::INVALID_ARGUMENT);
  grpc::ClientContext ctx;
  v1::ListRulesResponse rules;
  ASSERT_TRUE(ts.stub().ListRules(&ctx, v1::ListRulesRequest(), &rules).ok());

  const Scrape m = ts.Metrics();
  EXPECT_EQ(m.http_status, 200);
  EXPECT_EQ(m.Get("axqc_checks_total", {{"verdict", "conformant"}, {"source", "inline"}}), 2.0);
  EXPECT_EQ(m.Get("axqc_checks_total", {{"verdict", "non_conformant"}, {"source", "upload"}}), 1.0);
  EXPECT_EQ(m.Get("axqc_checks_total", {{"verdict", "invalid_input"}, {"source", "inline"}}), 1.0);
  EXPECT_EQ(m.Get("axqc_requests_total", {{"method", "Check"}, {"code", "OK"}}), 2.0);
  EXPECT_EQ(m.Get("axqc_requests_total", {{"method", "Check"}, {"code", "INVALID_ARGUMENT"}}), 1.0);
  EXPECT_EQ(m.Get("axqc_requests_total", {{"method", "Upload"}, {"code", "OK"}}), 1.0);
  EXPECT_EQ(m.Get("axqc_requests_total", {{"method", "ListRules"}, {"code", "OK"}}), 1.0);
  EXPECT_EQ(m.Get("axqc_upload_bytes_total"), static_cast<double>(bad.size()));
  EXPECT_EQ(m.Get("axqc_cache_lookups_total", {{"result", "miss"}}), 3.0);
  EXPECT_EQ(m.Get("axqc_cache_lookups_total", {{"result", "memory_hit"}}), 1.0);
  const Report bad_report = DirectReport(bad, "x");
  std::map<std::pair<std::string, std::string>, double> findings;
  for (const auto& f : bad_report.findings) {
    ++findings[{f.rule, std::string(SeverityName(f.severity))}];
  }
  ASSERT_FALSE(findings.empty());
  for (const auto& [k, n] : findings) {
    EXPECT_EQ(m.Get("axqc_rule_findings_total", {{"rule", k.first}, {"severity", k.second}}), n)
        << k.first;
  }
  EXPECT_EQ(m.Get("axqc_check_duration_seconds_count", {{"stage", "check"}}), 3.0);
  EXPECT_EQ(m.Get("axqc_check_duration_seconds_count", {{"stage", "load"}}), 3.0);
  EXPECT_EQ(m.Get("axqc_check_duration_seconds_count", {{"stage", "store"}}), 2.0);
  // The checker's own stages: the rules ran for the two ONNX models, not for the invalid bytes.
  EXPECT_EQ(m.Get("axqc_check_duration_seconds_count", {{"stage", "check_rules"}}), 2.0);
  EXPECT_EQ(m.Get("axqc_check_duration_seconds_count", {{"stage", "check_units"}}), 2.0);
  EXPECT_EQ(m.Get("axqc_queue_wait_seconds_count"), 3.0);
  EXPECT_EQ(m.Get("axqc_queue_wait_seconds_bucket", {{"le", "+Inf"}}), 3.0);
  EXPECT_EQ(m.Get("axqc_queue_depth"), 0.0);
  EXPECT_EQ(m.Get("axqc_busy_workers"), 0.0);
  EXPECT_EQ(m.Get("axqc_workers"), 2.0);
  EXPECT_EQ(m.Get("axqc_queue_capacity"), 8.0);
  EXPECT_EQ(m.Get("axqc_inflight_model_bytes"), 0.0);
  EXPECT_EQ(m.Get("axqc_build_info", {{"version", std::string(ToolVersion())},
                                      {"rule_set_version", std::string(kRuleSetVersion)}}),
            1.0);
  EXPECT_NE(m.body.find("# TYPE axqc_check_duration_seconds histogram"), std::string::npos);
  EXPECT_NE(m.body.find("# TYPE axqc_checks_total counter"), std::string::npos);
  EXPECT_NE(m.body.find("# TYPE axqc_queue_depth gauge"), std::string::npos);
  // No label value is a hash or a model name.
  EXPECT_EQ(m.body.find(axqc::Sha256Hex(ok)), std::string::npos);
  EXPECT_EQ(m.body.find("model.onnx"), std::string::npos);
}

// ------------------------------------------------------------------------------------------------
// Health, shutdown, auth, logs

TEST_F(ServerTest, HealthTurnsNotServingOnShutdown) {
  TestServer ts(dir_, {[](server::ServerConfig& c) { c.shutdown_delay_seconds = 1.0; }, {}});
  EXPECT_EQ(HealthStatus(ts.health()), HealthResp::SERVING);
  EXPECT_EQ(HealthStatus(ts.health(), "axqc.v1.Checker"), HealthResp::SERVING);
  // A Watch stream sees the transition.
  grpc::ClientContext watch_ctx;
  grpc::health::v1::HealthCheckRequest wreq;
  auto reader = ts.health().Watch(&watch_ctx, wreq);
  HealthResp update;
  ASSERT_TRUE(reader->Read(&update));
  EXPECT_EQ(update.status(), HealthResp::SERVING);

  std::thread stopper([&] { ts.Stop(); });
  ASSERT_TRUE(reader->Read(&update));
  EXPECT_EQ(update.status(), HealthResp::NOT_SERVING);
  // During the shutdown delay the server still answers: health says NOT_SERVING and checks are
  // refused as UNAVAILABLE.
  EXPECT_EQ(HealthStatus(ts.health()), HealthResp::NOT_SERVING);
  EXPECT_EQ(HealthStatus(ts.health(), "axqc.v1.Checker"), HealthResp::NOT_SERVING);
  v1::CheckResponse r;
  const grpc::Status s = CheckInline(ts.stub(), ConformantModel(), &r);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_NE(s.error_message().find("shutting down"), std::string::npos);
  watch_ctx.TryCancel();
  stopper.join();
  const std::string log = ts.Log();
  EXPECT_NE(log.find("\"msg\":\"shutdown complete\""), std::string::npos);
}

TEST_F(ServerTest, ShutdownDrainsInFlightChecksAndFlushesTheStore) {
  auto gate = std::make_shared<Gate>();
  const std::string model = ConformantModel("drain");
  grpc::Status s;
  v1::CheckResponse r;
  {
    TestServer ts(
        dir_, {[](server::ServerConfig& c) { c.grace_period_seconds = 10; }, {GatedCheck(gate)}});
    std::thread client([&] { s = CheckInline(ts.stub(), model, &r); });
    ASSERT_TRUE(WaitFor([&] { return gate->calls.load() == 1; }));
    std::thread stopper([&] { ts.Stop(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    gate->Open();  // the in-flight check finishes inside the grace period
    stopper.join();
    client.join();
  }
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(r.verdict(), v1::VERDICT_CONFORMANT);
  // The WAL was checkpointed into the database file on shutdown.
  EXPECT_TRUE(!fs::exists(dir_ / "store.sqlite3-wal") ||
              fs::file_size(dir_ / "store.sqlite3-wal") == 0);
  // The report and the history row are in the store after the restart.
  TestServer ts(dir_);
  v1::CheckResponse again;
  ASSERT_TRUE(CheckInline(ts.stub(), model, &again).ok());
  EXPECT_EQ(again.cache(), v1::CACHE_RESULT_STORE_HIT);
  grpc::ClientContext ctx;
  v1::GetStatsResponse stats;
  ASSERT_TRUE(ts.stub().GetStats(&ctx, v1::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.total().requests(), 2u);
}

// Server reflection, spoken with a generic stub and a hand-encoded request (the reflection
// protos are not installed by Debian's gRPC): ServerReflectionRequest{list_services: ""}.
class ReflectionListServices final
    : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit ReflectionListServices(const std::shared_ptr<grpc::Channel>& channel) : stub_(channel) {
    ctx_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    stub_.PrepareBidiStreamingCall(&ctx_,
                                   "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                   grpc::StubOptions(), this);
    const std::string request("\x3a\x00", 2);  // field 7 (list_services), empty string
    grpc::Slice slice(request);
    request_ = grpc::ByteBuffer(&slice, 1);
    StartWrite(&request_);
    StartRead(&response_);
    StartCall();
  }
  void OnWriteDone(bool /*ok*/) override { StartWritesDone(); }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    std::vector<grpc::Slice> slices;
    (void)response_.Dump(&slices);
    for (const auto& sl : slices) {
      received_.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
    }
    StartRead(&response_);
  }
  void OnDone(const grpc::Status& s) override {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = s;
    done_ = true;
    cv_.notify_all();
  }
  // The raw response bytes (service names appear verbatim in them).
  std::string Await(grpc::Status* status) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_; });
    *status = status_;
    return received_;
  }

 private:
  grpc::GenericStub stub_;
  grpc::ClientContext ctx_;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
  std::string received_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  grpc::Status status_;
};

TEST_F(ServerTest, ReflectionListsTheServices) {
  TestServer ts(dir_);
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(ts.server().grpc_port()),
                                     grpc::InsecureChannelCredentials());
  ReflectionListServices call(channel);
  grpc::Status status;
  const std::string bytes = call.Await(&status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_NE(bytes.find("axqc.v1.Checker"), std::string::npos);
  EXPECT_NE(bytes.find("grpc.health.v1.Health"), std::string::npos);
  EXPECT_NE(bytes.find("grpc.reflection.v1alpha.ServerReflection"), std::string::npos);
}

TEST_F(ServerTest, BearerTokenIsRequiredWhenConfigured) {
  WriteFile(dir_ / "token", "s3cr3t-token\n");
  TestServer ts(
      dir_, {[&](server::ServerConfig& c) { c.auth_token_file = (dir_ / "token").string(); }, {}});
  v1::CheckResponse r;
  grpc::Status s = CheckInline(ts.stub(), ConformantModel(), &r);
  EXPECT_EQ(s.error_code(), StatusCode::UNAUTHENTICATED);
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer wrong");
    v1::ListRulesResponse lr;
    EXPECT_EQ(ts.stub().ListRules(&ctx, v1::ListRulesRequest(), &lr).error_code(),
              StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer s3cr3t-token");
    v1::CheckRequest req;
    req.set_content(ConformantModel());
    s = ts.stub().Check(&ctx, req, &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(r.verdict(), v1::VERDICT_CONFORMANT);
  }
  // Health needs no token.
  EXPECT_EQ(HealthStatus(ts.health()), HealthResp::SERVING);
  EXPECT_EQ(ts.Log().find("s3cr3t-token"), std::string::npos);
}

TEST_F(ServerTest, LogsAreJsonLinesWithRequestIdShaDurationVerdict) {
  TestServer ts(dir_);
  const std::string model = ConformantModel("log");
  v1::CheckResponse r;
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("x-request-id", "ci-run-42");
    v1::CheckRequest req;
    req.set_content(model);
    req.set_name("log-model.onnx");
    (*req.mutable_labels())["project"] = "detector";
    ASSERT_TRUE(ts.stub().Check(&ctx, req, &r).ok());
    EXPECT_EQ(r.request_id(), "ci-run-42");
    const auto& md = ctx.GetServerInitialMetadata();
    auto it = md.find("x-request-id");
    ASSERT_NE(it, md.end());
    EXPECT_EQ(std::string(it->second.data(), it->second.size()), "ci-run-42");
  }
  EXPECT_EQ(CheckInline(ts.stub(), NotOnnxBytes(), &r).error_code(), StatusCode::INVALID_ARGUMENT);
  ts.Stop();

  std::istringstream lines(ts.Log());
  std::string line;
  std::vector<nlohmann::json> requests;
  int total = 0;
  while (std::getline(lines, line)) {
    ++total;
    const auto j = nlohmann::json::parse(line);  // every line is one JSON object
    ASSERT_TRUE(j.is_object());
    ASSERT_TRUE(j.contains("ts") && j.contains("level") && j.contains("msg"));
    if (j["msg"] == "request") requests.push_back(j);
  }
  EXPECT_GE(total, 5);  // serving, 2 requests, shutdown started, shutdown complete
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0]["request_id"], "ci-run-42");
  EXPECT_EQ(requests[0]["method"], "Check");
  EXPECT_EQ(requests[0]["code"], "OK");
  EXPECT_EQ(requests[0]["model_sha256"], axqc::Sha256Hex(model));
  EXPECT_EQ(requests[0]["verdict"], "conformant");
  EXPECT_EQ(requests[0]["cache"], "miss");
  EXPECT_EQ(requests[0]["source"], "inline");
  EXPECT_EQ(requests[0]["model_name"], "log-model.onnx");
  EXPECT_EQ(requests[0]["labels"]["project"], "detector");
  EXPECT_GT(requests[0]["duration_ms"].get<double>(), 0.0);
  EXPECT_EQ(requests[1]["code"], "INVALID_ARGUMENT");
  EXPECT_EQ(requests[1]["verdict"], "invalid_input");
  EXPECT_EQ(requests[1]["request_id"].get<std::string>().size(), 16u);
  // Never model bytes: the doc string embedded in the model is not in the log.
  EXPECT_EQ(ts.Log().find("axqc server test model log"), std::string::npos);
}

TEST_F(ServerTest, RequestValidation) {
  TestServer ts(dir_);
  v1::CheckResponse r;
  {
    grpc::ClientContext ctx;
    EXPECT_EQ(ts.stub().Check(&ctx, v1::CheckRequest(), &r).error_code(),
              StatusCode::INVALID_ARGUMENT);
  }
  {
    grpc::ClientContext ctx;
    v1::CheckRequest req;
    req.set_content(ConformantModel());
    (*req.mutable_labels())["bad key"] = "v";
    EXPECT_EQ(ts.stub().Check(&ctx, req, &r).error_code(), StatusCode::INVALID_ARGUMENT);
  }
  {
    grpc::ClientContext ctx;
    v1::CheckRequest req;
    req.set_content(ConformantModel());
    req.mutable_options()->set_max_locations(5000);
    EXPECT_EQ(ts.stub().Check(&ctx, req, &r).error_code(), StatusCode::INVALID_ARGUMENT);
  }
  {
    // An Upload whose first message is a chunk.
    grpc::ClientContext ctx;
    auto w = ts.stub().Upload(&ctx, &r);
    v1::UploadRequest chunk;
    chunk.set_chunk("abc");
    w->Write(chunk);
    w->WritesDone();
    const grpc::Status s = w->Finish();
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("first Upload message must carry metadata"),
              std::string::npos);
  }
}

// ------------------------------------------------------------------------------------------------
// Hash lookups: recorded re-checks, waiting for a check in progress, counting

grpc::Status Lookup(v1::Checker::Stub& stub, const std::string& sha, v1::CheckResponse* resp,
                    bool record, std::map<std::string, std::string> labels = {},
                    std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::GetReportRequest req;
  req.set_sha256(sha);
  req.set_record_check(record);
  for (const auto& [k, v] : labels) (*req.mutable_labels())[k] = v;
  return stub.GetReport(&ctx, req, resp);
}

v1::GetStatsResponse Stats(v1::Checker::Stub& stub, const std::string& group_by = "") {
  grpc::ClientContext ctx;
  v1::GetStatsRequest req;
  req.set_group_by(group_by);
  v1::GetStatsResponse stats;
  EXPECT_TRUE(stub.GetStats(&ctx, req, &stats).ok());
  return stats;
}

TEST_F(ServerTest, RecordedLookupsAreChecksAndPlainLookupsAreNot) {
  TestServer ts(dir_);
  const std::string model = NonConformantModel("recorded");
  const std::string sha = axqc::Sha256Hex(model);
  v1::CheckResponse resp;
  // A hash-first client: NOT_FOUND, then the upload. One check, one miss, one history row.
  EXPECT_EQ(Lookup(ts.stub(), sha, &resp, true, {{"project", "a"}}).error_code(),
            StatusCode::NOT_FOUND);
  UploadArgs ua;
  ua.labels = {{"project", "a"}};
  ua.declared_sha256 = sha;
  ASSERT_TRUE(Upload(ts.stub(), model, &resp, ua).ok());
  // Re-checks of the known model by another project, and a plain lookup.
  ASSERT_TRUE(Lookup(ts.stub(), sha, &resp, true, {{"project", "b"}}).ok());
  EXPECT_EQ(resp.cache(), v1::CACHE_RESULT_MEMORY_HIT);
  EXPECT_EQ(resp.verdict(), v1::VERDICT_NON_CONFORMANT);
  ASSERT_TRUE(Lookup(ts.stub(), sha, &resp, true, {{"project", "b"}}).ok());
  ASSERT_TRUE(Lookup(ts.stub(), sha, &resp, false, {{"project", "c"}}).ok());

  const auto stats = Stats(ts.stub(), "project");
  EXPECT_EQ(stats.total().requests(), 3u);
  EXPECT_EQ(stats.total().non_conformant(), 3u);
  ASSERT_EQ(stats.groups_size(), 2);
  EXPECT_EQ(stats.groups(0).label_value(), "a");
  EXPECT_EQ(stats.groups(0).counts().requests(), 1u);
  EXPECT_EQ(stats.groups(1).label_value(), "b");
  EXPECT_EQ(stats.groups(1).counts().requests(), 2u);
  ASSERT_EQ(stats.top_failing_rules_size(), 1);
  EXPECT_EQ(stats.top_failing_rules(0).rule(), "role/weight-type");
  EXPECT_EQ(stats.top_failing_rules(0).requests(), 3u);

  const Scrape m = ts.Metrics();
  EXPECT_EQ(m.Value("axqc_checks_total", {{"verdict", "non_conformant"}, {"source", "upload"}}), 1);
  EXPECT_EQ(m.Value("axqc_checks_total", {{"verdict", "non_conformant"}, {"source", "hash"}}), 2);
  // The hit ratio of the checks is 2/3: the NOT_FOUND before the upload is no second miss.
  EXPECT_EQ(m.Value("axqc_cache_lookups_total", {{"result", "miss"}}), 1);
  EXPECT_EQ(m.Value("axqc_cache_lookups_total", {{"result", "memory_hit"}}), 2);
  EXPECT_EQ(m.Value("axqc_report_lookups_total", {{"result", "not_found"}}), 1);
  EXPECT_EQ(m.Value("axqc_report_lookups_total", {{"result", "memory_hit"}}), 3);
  EXPECT_EQ(
      m.Value("axqc_rule_findings_total", {{"rule", "role/weight-type"}, {"severity", "error"}}),
      3);
  // The log line of a recorded lookup carries its labels.
  EXPECT_NE(ts.Log().find("\"labels\":{\"project\":\"b\"}"), std::string::npos);
  EXPECT_NE(ts.Log().find("\"method\":\"GetReport\""), std::string::npos);
}

TEST_F(ServerTest, LookupWaitsForAnUploadInProgressInsteadOfAnsweringNotFound) {
  auto gate = std::make_shared<Gate>();
  TestServer ts(dir_, {{}, {GatedCheck(gate)}});
  const std::string model = ConformantModel("wait-upload");
  const std::string sha = axqc::Sha256Hex(model);
  v1::CheckResponse uploaded;
  grpc::Status su;
  UploadArgs ua;
  ua.declared_sha256 = sha;
  std::thread uploader([&] { su = Upload(ts.stub(), model, &uploaded, ua); });
  ASSERT_TRUE(WaitFor([&] { return gate->calls.load() == 1; }));  // checking (blocked)
  // Plain and recorded lookups of the same model wait for that check.
  v1::CheckResponse plain, recorded;
  grpc::Status sp, sr;
  std::thread t1([&] { sp = Lookup(ts.stub(), sha, &plain, false); });
  std::thread t2([&] { sr = Lookup(ts.stub(), sha, &recorded, true, {{"project", "p"}}); });
  ASSERT_TRUE(WaitFor([&] { return ts.Metrics().Value("axqc_lookup_waiting_requests") == 2; }));
  gate->Open();
  uploader.join();
  t1.join();
  t2.join();
  ASSERT_TRUE(su.ok()) << su.error_message();
  ASSERT_TRUE(sp.ok()) << sp.error_message();
  ASSERT_TRUE(sr.ok()) << sr.error_message();
  EXPECT_EQ(uploaded.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(plain.cache(), v1::CACHE_RESULT_SHARED);
  EXPECT_EQ(recorded.cache(), v1::CACHE_RESULT_SHARED);
  EXPECT_TRUE(MessageDifferencer::Equals(plain.report(), uploaded.report()));
  EXPECT_EQ(gate->calls.load(), 1);
  const Scrape m = ts.Metrics();
  EXPECT_EQ(m.Value("axqc_lookup_waiting_requests"), 0);
  EXPECT_EQ(m.Value("axqc_report_lookups_total", {{"result", "shared"}}), 2);
  EXPECT_EQ(m.Value("axqc_cache_lookups_total", {{"result", "shared"}}), 1);  // the recorded one
  EXPECT_EQ(m.Value("axqc_checks_total", {{"verdict", "conformant"}, {"source", "hash"}}), 1);
  EXPECT_EQ(Stats(ts.stub()).total().requests(), 2u);
}

TEST_F(ServerTest, LookupWaitIsBounded) {
  auto gate = std::make_shared<Gate>();
  TestServer ts(dir_,
                {[](server::ServerConfig& c) { c.lookup_wait_seconds = 0.3; }, {GatedCheck(gate)}});
  const std::string model = ConformantModel("bounded");
  const std::string sha = axqc::Sha256Hex(model);
  v1::CheckResponse checked;
  grpc::Status sc;
  std::thread checker([&] { sc = CheckInline(ts.stub(), model, &checked); });
  ASSERT_TRUE(WaitFor([&] { return gate->calls.load() == 1; }));
  v1::CheckResponse resp;
  const grpc::Status s = Lookup(ts.stub(), sha, &resp, true);
  EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("still in progress after 0.3 s"), std::string::npos)
      << s.error_message();
  // The client's own deadline ends the wait too.
  const grpc::Status expired =
      Lookup(ts.stub(), sha, &resp, false, {}, std::chrono::milliseconds(100));
  EXPECT_TRUE(expired.error_code() == StatusCode::DEADLINE_EXCEEDED ||
              expired.error_code() == StatusCode::NOT_FOUND)
      << expired.error_message();
  gate->Open();
  checker.join();
  ASSERT_TRUE(sc.ok());
  ASSERT_TRUE(Lookup(ts.stub(), sha, &resp, false).ok());
  EXPECT_EQ(resp.cache(), v1::CACHE_RESULT_MEMORY_HIT);
  EXPECT_EQ(ts.Metrics().Value("axqc_lookup_waiting_requests"), 0);
}

// ------------------------------------------------------------------------------------------------
// Stats windows, limits with the server's own messages, reflection v1, process metrics

TEST_F(ServerTest, StatsWindowWithoutDecidedRequestsHasNoPassRate) {
  TestServer ts(dir_);
  v1::CheckResponse r;
  ASSERT_TRUE(CheckInline(ts.stub(), ConformantModel("window"), &r).ok());
  {
    grpc::ClientContext ctx;
    v1::GetStatsRequest req;
    req.mutable_since()->set_seconds(1);  // 1970: nothing but the one request
    req.mutable_until()->set_seconds(2);
    v1::GetStatsResponse stats;
    ASSERT_TRUE(ts.stub().GetStats(&ctx, req, &stats).ok());
    EXPECT_EQ(stats.total().requests(), 0u);
    EXPECT_FALSE(stats.total().has_pass_rate());
  }
  {
    grpc::ClientContext ctx;
    v1::GetStatsRequest req;
    v1::GetStatsResponse stats;
    ASSERT_TRUE(ts.stub().GetStats(&ctx, req, &stats).ok());
    EXPECT_TRUE(stats.total().has_pass_rate());
    EXPECT_DOUBLE_EQ(stats.total().pass_rate(), 1.0);
  }
  {
    grpc::ClientContext ctx;
    v1::GetStatsRequest req;
    req.mutable_since()->set_seconds(2000000000);
    req.mutable_until()->set_seconds(1000000000);
    v1::GetStatsResponse stats;
    const grpc::Status s = ts.stub().GetStats(&ctx, req, &stats);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("is after until"), std::string::npos) << s.error_message();
  }
}

TEST_F(ServerTest, OversizedInlineContentAndChunksGetTheServersOwnMessage) {
  TestServer ts(dir_);
  const std::string big(6u << 20, 'x');  // over the 4 MiB inline and per-message limits
  v1::CheckResponse r;
  const grpc::Status inline_status = CheckInline(ts.stub(), big, &r);
  EXPECT_EQ(inline_status.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(inline_status.error_message().find("over the server's limit of 4194304 bytes"),
            std::string::npos)
      << inline_status.error_message();
  EXPECT_NE(inline_status.error_message().find("Upload"), std::string::npos);
  // The server's in-process mark of a size limit (request_validation.h) is not sent.
  EXPECT_EQ(inline_status.error_details(), "");
  UploadArgs ua;
  ua.chunk = big.size();
  const grpc::Status chunk_status = Upload(ts.stub(), big, &r, ua);
  EXPECT_EQ(chunk_status.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(chunk_status.error_message().find("Upload chunk of 6291456 bytes is over the "
                                              "server's limit of 4194304 bytes per message"),
            std::string::npos)
      << chunk_status.error_message();
  EXPECT_EQ(chunk_status.error_details(), "");
}

TEST_F(ServerTest, ServerReflectionV1DescribesTheServices) {
  TestServer ts(dir_);
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(ts.server().grpc_port()),
                                     grpc::InsecureChannelCredentials());
  auto stub = grpc::reflection::v1::ServerReflection::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stream = stub->ServerReflectionInfo(&ctx);
  grpc::reflection::v1::ServerReflectionRequest req;
  grpc::reflection::v1::ServerReflectionResponse resp;
  req.set_list_services("");
  ASSERT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->Read(&resp));
  std::vector<std::string> services;
  for (const auto& svc : resp.list_services_response().service()) services.push_back(svc.name());
  EXPECT_EQ(services, (std::vector<std::string>{"axqc.v1.Checker", "grpc.health.v1.Health",
                                                "grpc.reflection.v1.ServerReflection",
                                                "grpc.reflection.v1alpha.ServerReflection"}));
  // The file of each service, with its dependencies, parses and names the service's methods.
  for (const std::string symbol :
       {"axqc.v1.Checker", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"}) {
    req.set_file_containing_symbol(symbol);
    ASSERT_TRUE(stream->Write(req));
    ASSERT_TRUE(stream->Read(&resp));
    ASSERT_TRUE(resp.has_file_descriptor_response()) << symbol << resp.DebugString();
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(resp.file_descriptor_response().file_descriptor_proto(0)));
    bool found = false;
    for (const auto& svc : file.service())
      found = found || file.package() + "." + svc.name() == symbol;
    EXPECT_TRUE(found) << symbol << " not in " << file.name();
  }
  req.set_file_containing_symbol("axqc.v1.GetReportRequest");
  ASSERT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->Read(&resp));
  ASSERT_TRUE(resp.has_file_descriptor_response());
  // axqc.proto and the well-known types it imports.
  EXPECT_EQ(resp.file_descriptor_response().file_descriptor_proto_size(), 3);
  req.set_file_containing_symbol("axqc.v1.NoSuchThing");
  ASSERT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_EQ(resp.error_response().error_code(), static_cast<int>(StatusCode::NOT_FOUND));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ServerTest, ProcessMetricsFollowPrometheusConventions) {
  TestServer ts(dir_);
  const Scrape m = ts.Metrics();
  const auto now = static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count());
  EXPECT_GT(m.Value("process_resident_memory_bytes"), 1e6);
  EXPECT_GT(m.Value("process_virtual_memory_bytes"), m.Value("process_resident_memory_bytes"));
  EXPECT_GT(m.Value("process_open_fds"), 3);
  EXPECT_GE(m.Value("process_max_fds"), m.Value("process_open_fds"));
  EXPECT_GT(m.Value("process_cpu_seconds_total"), 0);
  EXPECT_GT(m.Value("process_start_time_seconds"), now - 24 * 3600);
  EXPECT_LE(m.Value("process_start_time_seconds"), now + 1);
  EXPECT_NE(m.body.find("# TYPE process_cpu_seconds_total counter"), std::string::npos);
  EXPECT_NE(m.body.find("# TYPE process_resident_memory_bytes gauge"), std::string::npos);
}

}  // namespace
}  // namespace axqc::test
