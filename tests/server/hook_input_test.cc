// JSON from the network (server/json_input.h) and the registry webhooks' input handling
// (server/http/hook_payloads.h): bounds, typed fields, repo names, revisions and artifact paths,
// the registry tokens' origin rule, and the replay of the fuzz targets' regression inputs
// (tests/fuzz/{hook_hf,hook_mlflow,json_body}_regressions/, invariants of hook_fuzz_input.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "config.h"
#include "hook_fuzz_input.h"
#include "http/errors.h"
#include "http/hook_payloads.h"
#include "http/hooks.h"
#include "json_input.h"
#include "request_validation.h"
#include "url_fetch.h"

namespace axqc::server {
namespace {

namespace fs = std::filesystem;
using http::HfPayload;
using http::MlflowPayload;

// gtest without gmock: `text` contains `part`.
testing::AssertionResult HasPart(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

std::string Nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// ---- bounds

TEST(JsonInput, SixtyFourLevelsParseSixtyFiveAreRefused) {
  nlohmann::json j;
  EXPECT_TRUE(ParseJson(Nested(64), {}, "body", &j).ok());
  const grpc::Status st = ParseJson(Nested(65), {}, "body", &j);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "body nests arrays and objects more than 64 levels deep");
  std::string deep_objects;
  for (int i = 0; i < 65; ++i) deep_objects += "{\"a\":";
  deep_objects += "1" + std::string(65, '}');
  EXPECT_TRUE(
      HasPart(ParseJson(deep_objects, {}, "body", &j).error_message(), "more than 64 levels deep"));
}

TEST(JsonInput, TwoHundredThousandOpenBracketsAreRefusedBeforeAnyParser) {
  const std::string body(200000, '[');
  nlohmann::json j;
  const auto t0 = std::chrono::steady_clock::now();
  const grpc::Status st = ParseJson(body, {}, "webhook body", &j);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasPart(st.error_message(), "more than 64 levels deep"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

TEST(JsonInput, BracketsInsideStringsDoNotCount) {
  nlohmann::json j;
  const std::string inside =
      "{\"a\":\"" + std::string(500, '[') + "\",\"b\":\"\\\"" + std::string(500, '{') + "\"}";
  ASSERT_TRUE(ParseJson(inside, {}, "body", &j).ok());
  EXPECT_EQ(j["a"].get<std::string>(), std::string(500, '['));
  // An escaped quote does not end the string; the brackets after the real end do count.
  const std::string after = "[\"\\\"\"," + Nested(70) + "]";
  EXPECT_FALSE(CheckJsonBounds(after, {}, "body").ok());
  // Single-quoted strings (protobuf's parser accepts them) are skipped as well.
  EXPECT_TRUE(CheckJsonBounds("{'a':'" + std::string(100, '[') + "'}", {}, "body").ok());
}

TEST(JsonInput, SizeLimitAndSyntaxErrorsAreStatuses) {
  nlohmann::json j;
  JsonLimits small;
  small.max_bytes = 10;
  grpc::Status st = ParseJson("{\"a\":12345}", small, "webhook body", &j);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "webhook body is 11 bytes, over the limit of 10 bytes");
  st = ParseJson("{\"a\":", {}, "webhook body", &j);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasPart(st.error_message(), "webhook body is not JSON: "));
  st = ParseJson("{\"a\":\"\xff\"}", {}, "webhook body", &j);  // invalid UTF-8
  EXPECT_TRUE(HasPart(st.error_message(), "webhook body is not JSON: "));
}

// ---- typed reads

TEST(JsonReader, WrongTypesAreInvalidArgumentNamingTheField) {
  const auto array = nlohmann::json::parse("[1,2]");
  const JsonReader a(array, "webhook body");
  EXPECT_EQ(a.String("x"), "");
  EXPECT_EQ(a.status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(a.status().error_message(), "webhook body must be a JSON object, not array");

  const auto body = nlohmann::json::parse(R"({"event":5,"repo":{"name":5,"v":-3}})");
  const JsonReader r(body, "webhook body");
  EXPECT_EQ(r.Object("repo").String("name"), "");
  EXPECT_EQ(r.status().error_message(),
            "webhook body: field repo.name must be a string, not number");
  EXPECT_EQ(r.Object("event").String("action"), "");  // after the first error: empty reads
  EXPECT_EQ(r.status().error_message(),
            "webhook body: field repo.name must be a string, not number");

  const JsonReader r2(body, "webhook body");
  (void)r2.Object("event");
  EXPECT_EQ(r2.status().error_message(), "webhook body: field event must be an object, not number");
  const JsonReader r3(body, "webhook body");
  EXPECT_EQ(r3.Object("repo").StringOrInteger("v"), "");
  EXPECT_EQ(r3.status().error_message(),
            "webhook body: field repo.v must be a string or a non-negative integer, not number");
}

TEST(JsonReader, AbsentAndNullReadAsEmptyAndIntegersAsText) {
  const auto body = nlohmann::json::parse(R"({"a":null,"n":42,"s":"x","o":{"k":"v"}})");
  const JsonReader r(body, "doc");
  EXPECT_EQ(r.String("a"), "");
  EXPECT_EQ(r.String("missing"), "");
  EXPECT_EQ(r.Object("missing").String("k"), "");
  EXPECT_EQ(r.Object("a").String("k"), "");
  EXPECT_EQ(r.StringOrInteger("n"), "42");
  EXPECT_EQ(r.StringOrInteger("s"), "x");
  EXPECT_EQ(r.Object("o").String("k"), "v");
  EXPECT_FALSE(r.Has("a"));
  EXPECT_TRUE(r.Has("n"));
  EXPECT_TRUE(r.ok());
}

// ---- Hugging Face payloads

std::string Hf(const std::string& repo) {
  return R"({"event":{"action":"update","scope":"repo.content"},"repo":)" + repo + "}";
}

TEST(HuggingFacePayload, BodiesThatCrashedTheServerAreInvalidArgumentNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"event":5,"repo":{}})", "field event must be an object, not number"},
      {"[1,2]", "webhook body must be a JSON object, not array"},
      {Hf(R"({"type":"model","name":5})"), "field repo.name must be a string, not number"},
      {R"({"event":{"action":["x"],"scope":"repo.content"},"repo":{"type":"model","name":"o/m"}})",
       "field event.action must be a string, not array"},
      {R"({"action":["x"]})", "has no event.action, event.scope and repo.name"},
      {std::string(200000, '['), "more than 64 levels deep"},
  };
  for (const auto& [body, message] : cases) {
    HfPayload p;
    const grpc::Status st = http::ParseHuggingFacePayload(body, &p);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << body.substr(0, 80);
    EXPECT_TRUE(HasPart(st.error_message(), message)) << body.substr(0, 80);
  }
}

TEST(HuggingFacePayload, ContentUpdateIsParsed) {
  HfPayload p;
  ASSERT_TRUE(http::ParseHuggingFacePayload(
                  Hf(R"({"type":"model","name":"org/classifier","headSha":"abc123"})"), &p)
                  .ok());
  EXPECT_EQ(p.name, "org/classifier");
  EXPECT_EQ(p.revision, "abc123");
  EXPECT_EQ(p.event, "repo.content.update");
  EXPECT_EQ(p.ignore_reason, "");
  ASSERT_TRUE(http::ParseHuggingFacePayload(Hf(R"({"type":"dataset","name":"d"})"), &p).ok());
  EXPECT_EQ(p.revision, "main");
  EXPECT_EQ(p.ignore_reason, "repo type dataset is not a model");
}

TEST(HuggingFacePayload, DotSegmentsAndEncodedFormsInNamesAndRevisionsAreRefused) {
  for (const std::string sha : {"..", ".", "%2e%2e", "%2E%2E", "a/../b", "refs\\heads\\main",
                                "refs/heads/", "main.lock", "a//b", ".hidden", "x?y", "a b"}) {
    HfPayload p;
    const grpc::Status st = http::ParseHuggingFacePayload(
        Hf(R"({"type":"model","name":"org/m","headSha":)" + nlohmann::json(sha).dump() + "}"), &p);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << sha;
    EXPECT_TRUE(HasPart(st.error_message(), "repo.headSha")) << sha;
  }
  for (const std::string name : {"org/..", "../x", "..", "org/%2e%2e", "org/a/b", "org\\..",
                                 "/org/m", "org/", ".org/m", "org/m..x", "org/-m"}) {
    HfPayload p;
    const grpc::Status st = http::ParseHuggingFacePayload(
        Hf(R"({"type":"model","name":)" + nlohmann::json(name).dump() + "}"), &p);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << name;
    EXPECT_TRUE(HasPart(st.error_message(), "repo.name")) << name;
  }
  for (const std::string rev : {"8f1c2a9d0e3b4c5d6e7f8091a2b3c4d5e6f70812", "main", "refs/pr/1",
                                "v1.0", "release-2026_12"}) {
    EXPECT_TRUE(http::ValidHfRevision(rev)) << rev;
  }
  for (const std::string name : {"gpt2", "org/model", "Org-1/model.v2_int8"}) {
    EXPECT_TRUE(http::ValidHfRepoName(name)) << name;
  }
}

TEST(HuggingFacePayload, PushToAPullRequestNamesItsNumber) {
  const std::string repo = R"("repo":{"type":"model","name":"org/m","headSha":"abc"})";
  auto body = [&](const std::string& refs) {
    return R"({"event":{"action":"update","scope":"repo.content"},)" + repo + R"(,"updatedRefs":)" +
           refs + "}";
  };
  HfPayload p;
  ASSERT_TRUE(http::ParseHuggingFacePayload(
                  body(R"([{"ref":"refs/pr/12","oldSha":"a","newSha":"abc"}])"), &p)
                  .ok());
  EXPECT_EQ(p.pull_request, "12");
  ASSERT_TRUE(http::ParseHuggingFacePayload(body(R"([{"ref":"refs/heads/main"}])"), &p).ok());
  EXPECT_EQ(p.pull_request, "");
  ASSERT_TRUE(http::ParseHuggingFacePayload(body("null"), &p).ok());
  EXPECT_EQ(p.pull_request, "");
  for (const std::string bad :
       {R"([{"ref":"refs/pr/../../x"}])", R"([{"ref":"refs/pr/"}])", R"([{"ref":"refs/pr/012"}])",
        R"([{"ref":"refs/pr/1234567890"}])", R"([{"ref":"refs/pr/7%2f"}])"}) {
    const grpc::Status st = http::ParseHuggingFacePayload(body(bad), &p);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_TRUE(HasPart(st.error_message(), "not refs/pr/N")) << bad;
  }
  for (const std::string bad : {R"({"ref":"refs/pr/1"})", R"(["refs/pr/1"])"}) {
    const grpc::Status st = http::ParseHuggingFacePayload(body(bad), &p);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_TRUE(HasPart(st.error_message(), "updatedRefs")) << bad;
  }
}

TEST(HuggingFaceWriteBack, ModelTextStaysInCodeSpans) {
  v1::CheckResponse resp;
  resp.set_sha256(std::string(64, 'a'));
  resp.set_request_id("req-1");
  resp.set_rule_set_version("2026.12.1");
  auto* r = resp.mutable_report();
  r->mutable_summary()->set_errors(12);
  r->mutable_summary()->set_causes(1);
  for (int i = 0; i < 12; ++i) {
    auto* f = r->add_findings();
    f->set_rule("op/output-not-quantized");
    f->set_severity(v1::SEVERITY_ERROR);
    f->set_message("output of `x` | @everyone <img src=x>\n# heading");
    f->add_nodes("node`" + std::to_string(i) + "\n[link](http://evil)");
  }
  const nlohmann::json request = {{"hf", {{"repo", "org/m"}, {"revision", std::string(40, 'b')}}}};
  const nlohmann::json post = http::HfWriteBackPost(request, grpc::Status::OK, resp,
                                                    "non_conformant", "", "https://axqc.test/m");
  const std::string text = post.at("text");
  EXPECT_EQ(post.at("title"), "axqc: non_conformant at bbbbbbbbbbbb");
  EXPECT_FALSE(post.contains("pull_request"));
  EXPECT_TRUE(HasPart(text, "**axqc: non_conformant** for the model at revision `bbbbbbbbbbbb`"));
  EXPECT_TRUE(
      HasPart(text,
              "| `` op/output-not-quantized `` | error | `` node 0 [link](http://evil) `` | "
              "`` output of  x  \\| @everyone <img src=x> # heading `` |"));
  EXPECT_TRUE(HasPart(text, "... and 2 more errors and warnings"));
  EXPECT_TRUE(HasPart(text, "Report: https://axqc.test/m"));
  // Every table row has exactly its 5 cell bars: nothing from the model split a cell or a line.
  std::size_t rows = 0;
  std::size_t pos = 0;
  while ((pos = text.find("\n| `` op/", pos)) != std::string::npos) {
    const std::size_t end = text.find('\n', pos + 1);
    const std::string line = text.substr(pos + 1, end - pos - 1);
    // A table splits cells at every bar not escaped, inside code spans too.
    std::size_t bars = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) ++bars;
    }
    EXPECT_EQ(bars, 5u) << line;
    ++rows;
    pos = end;
  }
  EXPECT_EQ(rows, 10u);

  const nlohmann::json failed = http::HfWriteBackPost(
      {{"hf", {{"repo", "org/m"}, {"revision", "main"}, {"pull_request", "3"}}}},
      grpc::Status(grpc::StatusCode::NOT_FOUND, "x"), v1::CheckResponse(), "download_failed",
      "NOT_FOUND: HTTP 404 for http://hub/`x`", "");
  EXPECT_EQ(failed.at("pull_request"), "3");
  EXPECT_EQ(failed.at("title"), "axqc: the model at main could not be checked (download_failed)");
  EXPECT_TRUE(HasPart(failed.at("text"), "`` NOT_FOUND: HTTP 404 for http://hub/ x ``"));
  EXPECT_FALSE(HasPart(failed.at("text"), "Report:"));
}

TEST(HuggingFacePayload, ModelUrlEncodesTheRevision) {
  EXPECT_EQ(http::HuggingFaceModelUrl("https://hub.test", "org/m", "refs/pr/1", "onnx/model.onnx"),
            "https://hub.test/org/m/resolve/refs%2Fpr%2F1/onnx/model.onnx");
}

// ---- MLflow payloads and artifact locations

TEST(MlflowPayload, BodiesThatCrashedOrWereMistypedAreInvalidArgumentNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {std::string(200000, '['), "more than 64 levels deep"},
      {R"({"entity":"model_version","action":"created","data":)" + Nested(100) + "}",
       "more than 64 levels deep"},
      {R"({"entity":"model_version","action":["x"]})", "field action must be a string, not array"},
      {R"({"entity":"model_version","action":"created","data":{"name":5,"version":"1"}})",
       "field data.name must be a string, not number"},
      {R"({"entity":"model_version","action":"created","data":[]})",
       "field data must be an object, not array"},
      {R"({"entity":"model_version","action":"created","data":{"name":"m","version":-1}})",
       "field data.version must be a string or a non-negative integer"},
      {R"({"entity":"model_version","action":"created","data":{"name":"m","version":"1/../2"}})",
       "data.version '1/../2' is not a version number"},
      {R"({"entity":"model_version_tag","action":"set","data":{"key":7}})",
       "field data.key must be a string, not number"},
      {R"({"entity":"model_version","action":"created","data":{"name":"m"}})",
       "webhook data has no model name and version"},
  };
  for (const auto& [body, message] : cases) {
    MlflowPayload p;
    const grpc::Status st = http::ParseMlflowPayload(body, &p);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << body.substr(0, 80);
    EXPECT_TRUE(HasPart(st.error_message(), message)) << body.substr(0, 80);
  }
}

TEST(MlflowPayload, VersionsAsStringsOrIntegersAndIgnoredEvents) {
  MlflowPayload p;
  ASSERT_TRUE(http::ParseMlflowPayload(
                  R"({"entity":"model_version","action":"created",)"
                  R"("data":{"name":"detector","version":3,"run_id":"run42","tags":{}}})",
                  &p)
                  .ok());
  EXPECT_EQ(p.event, "model_version.created");
  EXPECT_EQ(p.name, "detector");
  EXPECT_EQ(p.version, "3");
  EXPECT_EQ(p.run_id, "run42");
  EXPECT_EQ(p.ignore_reason, "");
  ASSERT_TRUE(
      http::ParseMlflowPayload(
          R"({"entity":"model_version_tag","action":"set","data":{"key":"axqc.verdict"}})", &p)
          .ok());
  EXPECT_EQ(p.ignore_reason, "tag axqc.verdict is this server's own write-back");
  ASSERT_TRUE(http::ParseMlflowPayload(
                  R"({"entity":"registered_model","action":"created","data":{"name":5}})", &p)
                  .ok());  // fields of ignored events are not read
  EXPECT_TRUE(HasPart(p.ignore_reason, "does not announce a model version"));
}

std::string ModelUrl(const std::string& uri, grpc::Status* st = nullptr) {
  std::string url;
  const grpc::Status s = http::MlflowModelUrl(uri, "http://mlflow:5000", "model.onnx", &url);
  if (st != nullptr) *st = s;
  return s.ok() ? url : "";
}

TEST(MlflowArtifacts, ProxyHttpAndOnnxLocations) {
  EXPECT_EQ(ModelUrl("mlflow-artifacts:/models/detector/3"),
            "http://mlflow:5000/api/2.0/mlflow-artifacts/artifacts/models/detector/3/model.onnx");
  EXPECT_EQ(ModelUrl("mlflow-artifacts://other:5000/0/a1b2/artifacts/model/"),
            "http://mlflow:5000/api/2.0/mlflow-artifacts/artifacts/0/a1b2/artifacts/model/"
            "model.onnx");
  EXPECT_EQ(ModelUrl("https://store.test/a/m.onnx"), "https://store.test/a/m.onnx");
  EXPECT_EQ(ModelUrl("http://[::1]:5001/a"), "http://[::1]:5001/a/model.onnx");
  EXPECT_EQ(ModelUrl("http://127.0.0.1:5001/a"), "http://127.0.0.1:5001/a/model.onnx");
  EXPECT_EQ(ModelUrl("mlflow-artifacts:/0/r/artifacts/m%20x"),
            "http://mlflow:5000/api/2.0/mlflow-artifacts/artifacts/0/r/artifacts/m%20x/model.onnx");
}

TEST(MlflowArtifacts, PathsThatLeaveTheArtifactDirectoryAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"mlflow-artifacts:/../../../../etc", "'..' segment"},
      {"mlflow-artifacts:/models/%2e%2E/%2E%2e/etc", "'..' segment (encoded as '%2e%2E')"},
      {"mlflow-artifacts:/models/.%2e/etc", "'..' segment"},
      {"mlflow-artifacts:/models/%2e/x", "'.' segment"},
      {"mlflow-artifacts:/models/x%2f..%2f..%2fetc", "encodes '/'"},
      {"mlflow-artifacts:/models/x%5c..", "encodes '\\'"},
      {"mlflow-artifacts:/models/%252e%252e/etc", "encodes '%'"},
      {"mlflow-artifacts:/models/..\\..\\etc", "backslash"},
      {"mlflow-artifacts:/models/a?b", "contains '?'"},
      {"mlflow-artifacts:/models/a#b", "contains '#'"},
      {"mlflow-artifacts:/models//x", "empty segment"},
      {"mlflow-artifacts:/models/%zz", "malformed %-escape"},
      {"mlflow-artifacts:/models/%2", "malformed %-escape"},
      {"mlflow-artifacts:/", "empty"},
      {"http://other.test/a/../../admin", "'..' segment"},
      {"http://other.test/a/%2E%2E/admin", "'..' segment"},
      {"http://user@other.test/a", "malformed host"},
      {"http://y\":artafact_uri \"registn \377created\"\"\"}}", "malformed host"},
      {"http://host name/a", "malformed host"},
      {"http://host:80x/a", "malformed host"},
      {"http://[::1/a", "malformed host"},
      {"http:///a", "malformed host"},
  };
  for (const auto& [uri, message] : cases) {
    grpc::Status st;
    EXPECT_EQ(ModelUrl(uri, &st), "") << uri;
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << uri;
    EXPECT_TRUE(HasPart(st.error_message(), message)) << uri;
  }
  grpc::Status st;
  EXPECT_EQ(ModelUrl("s3://bucket/0/a/artifacts/model", &st), "");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(HasPart(st.error_message(), "at s3:..., which this server cannot read"));
}

TEST(MlflowArtifacts, DownloadUriAnswerIsBoundedAndTyped) {
  std::string uri;
  EXPECT_TRUE(http::ParseMlflowDownloadUri(R"({"artifact_uri":"mlflow-artifacts:/a"})", &uri).ok());
  EXPECT_EQ(uri, "mlflow-artifacts:/a");
  EXPECT_TRUE(HasPart(http::ParseMlflowDownloadUri(R"({"artifact_uri":5})", &uri).error_message(),
                      "field artifact_uri must be a string, not number"));
  EXPECT_TRUE(HasPart(http::ParseMlflowDownloadUri("[]", &uri).error_message(),
                      "must be a JSON object, not array"));
  EXPECT_TRUE(
      HasPart(http::ParseMlflowDownloadUri("{}", &uri).error_message(), "has no artifact_uri"));
  EXPECT_TRUE(HasPart(http::ParseMlflowDownloadUri(std::string(100000, '{'), &uri).error_message(),
                      "more than 64 levels deep"));
}

TEST(RegistryPaths, UnsafePathReasonAcceptsOrdinaryArtifactPaths) {
  for (const std::string ok : {"model.onnx", "onnx/model.onnx", "0/a1b2c3/artifacts/model",
                               "models/m-4f1c/artifacts", "a%20b", "v1.0..", "..a", "a.b.c"}) {
    EXPECT_EQ(http::UnsafePathReason(ok), "") << ok;
  }
  // "..a" and "v1.0.." are names, not dot segments; ".." inside a revision is refused separately.
}

// ---- registry tokens go to the registry's origin only

TEST(RegistryCredentials, OnlyTheRegistrysOwnOriginGetsTheToken) {
  const std::vector<std::pair<std::string, std::string>> token = {{"Authorization", "Bearer t"}};
  const std::string origin = ParseUrl("http://127.0.0.1:5000").Origin();
  EXPECT_EQ(origin, "http://127.0.0.1:5000");
  EXPECT_EQ(http::CredentialsFor("http://127.0.0.1:5000/api/2.0/x", origin, token), token);
  EXPECT_TRUE(http::CredentialsFor("http://127.0.0.1:5001/api/2.0/x", origin, token).empty());
  EXPECT_TRUE(http::CredentialsFor("https://127.0.0.1:5000/x", origin, token).empty());
  EXPECT_TRUE(http::CredentialsFor("http://localhost:5000/x", origin, token).empty());
  EXPECT_TRUE(http::CredentialsFor("http://127.0.0.1:5000/x", "", token).empty());
  // Default ports and host case: the same origin however it is written.
  const std::string hub = ParseUrl("https://HuggingFace.co").Origin();
  EXPECT_EQ(hub, "https://huggingface.co:443");
  EXPECT_EQ(
      http::CredentialsFor("https://huggingface.co:443/o/m/resolve/main/model.onnx", hub, token),
      token);
  EXPECT_EQ(ParseUrl("http://[::1]:8080/x").Origin(), "http://[::1]:8080");
}

TEST(RegistryCredentials, HookSettingsRefuseUnsafeModelFilesAndBadRegistryUrls) {
  ServerConfig c;
  c.mlflow_url = "http://mlflow:5000/";
  http::HookSettings h = http::LoadHookSettings(c);
  EXPECT_EQ(h.mlflow_origin, "http://mlflow:5000");
  EXPECT_EQ(h.huggingface_origin, "https://huggingface.co:443");
  c.mlflow_model_file = "../secrets/model.onnx";
  EXPECT_THROW(http::LoadHookSettings(c), std::runtime_error);
  c.mlflow_model_file = "model.onnx";
  c.huggingface_model_file = "%2e%2e/model.onnx";
  EXPECT_THROW(http::LoadHookSettings(c), std::runtime_error);
  c.huggingface_model_file = "onnx/model.onnx";
  c.mlflow_url = "ftp://mlflow";
  EXPECT_THROW(http::LoadHookSettings(c), std::runtime_error);
  c.mlflow_url = "http://mlflow:5000";
  c.huggingface_write_back = "failures";  // a write-back needs a token
  EXPECT_THROW(http::LoadHookSettings(c), std::runtime_error);
}

// ---- HTTP JSON request bodies

TEST(HttpJsonBody, DeepNestingIsRefusedBeforeProtobufParses) {
  v1::CheckRequest req;
  grpc::Status st = http::FromJson("{\"labels\":" + std::string(200000, '['), &req);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "request body nests arrays and objects more than 64 levels deep");
  st = http::FromJson(R"({"path":5})", &req);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(HasPart(st.error_message(), "request body is not a valid JSON CheckRequest"));
  ASSERT_TRUE(http::FromJson(R"({"path":"a/b.onnx","labels":{"project":"x"}})", &req).ok());
  EXPECT_EQ(req.path(), "a/b.onnx");
}

// ---- fuzz regressions

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(AXQC_SOURCE_DIR) / "tests/fuzz" / dir, ec)) {
    if (e.is_regular_file()) names.push_back(dir + "/" + e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> RegressionFiles() {
  std::vector<std::string> all;
  for (const char* dir : {"hook_hf_regressions", "hook_mlflow_regressions", "json_body_regressions",
                          "hook_hf_seeds", "hook_mlflow_seeds", "json_body_seeds"}) {
    const auto files = Files(dir);
    all.insert(all.end(), files.begin(), files.end());
  }
  return all;
}

TEST(JsonFuzzRegression, EveryTargetHasRegressionInputs) {
  EXPECT_FALSE(Files("hook_hf_regressions").empty());
  EXPECT_FALSE(Files("hook_mlflow_regressions").empty());
  EXPECT_FALSE(Files("json_body_regressions").empty());
}

class JsonFuzzRegression : public testing::TestWithParam<std::string> {};

TEST_P(JsonFuzzRegression, InvariantsHold) {
  std::ifstream in(fs::path(AXQC_SOURCE_DIR) / "tests/fuzz" / GetParam(), std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::string& name = GetParam();
  if (name.rfind("hook_hf", 0) == 0) {
    EXPECT_EQ(fuzz::RunHookHfInput(data, bytes.size()), "");
  } else if (name.rfind("hook_mlflow", 0) == 0) {
    EXPECT_EQ(fuzz::RunHookMlflowInput(data, bytes.size()), "");
  } else {
    EXPECT_EQ(fuzz::RunJsonBodyInput(data, bytes.size()), "");
  }
}

std::string TestName(const testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Inputs, JsonFuzzRegression, testing::ValuesIn(RegressionFiles()),
                         TestName);

}  // namespace

// A failed attempt of a webhook delivery: temporary failures (5xx, 408, 429, connection errors,
// timeouts, a busy or stopping server) are retried; refusals (4xx, policy, size limits, checker
// failures) end the delivery with their outcome.
TEST(WebhookDeliveries, FailuresAreClassifiedAsRetriedOrFinal) {
  using grpc::Status;
  using grpc::StatusCode;
  auto c = [](StatusCode code, const char* msg, bool checked) {
    const http::AttemptFailure f = http::ClassifyFailure(Status(code, msg), checked);
    return f.outcome + (f.retry ? " retry" : " final");
  };
  EXPECT_EQ(c(StatusCode::UNAVAILABLE, "HTTP 503 for http://r/m.onnx", false),
            "download_failed retry");
  EXPECT_EQ(c(StatusCode::UNAVAILABLE, "HTTP 429 for http://r/m.onnx", false),
            "download_failed retry");
  EXPECT_EQ(c(StatusCode::UNAVAILABLE, "HTTP 408 for http://r/m.onnx", false),
            "download_failed retry");
  EXPECT_EQ(c(StatusCode::UNAVAILABLE, "cannot connect to r:80: Connection refused", false),
            "download_failed retry");
  EXPECT_EQ(c(StatusCode::UNAVAILABLE, "timed out fetching http://r/m.onnx", false),
            "download_failed retry");
  EXPECT_EQ(c(StatusCode::UNAVAILABLE, "HTTP 403 for http://r/m.onnx", false),
            "download_failed final");
  EXPECT_EQ(c(StatusCode::NOT_FOUND, "HTTP 404 for http://r/m.onnx", false),
            "download_failed final");
  EXPECT_EQ(c(StatusCode::PERMISSION_DENIED, "host r is not in url-allow-host", false),
            "policy_refused final");
  EXPECT_EQ(c(StatusCode::FAILED_PRECONDITION, "MLflow stores this model version at s3:...", false),
            "policy_refused final");
  // A size limit is final, told by the mark its refusal carries (request_validation.h); the same
  // words without the mark are a busy server.
  const auto over = [](const char* msg, bool checked) {
    const http::AttemptFailure f = http::ClassifyFailure(OverSizeLimitStatus(msg), checked);
    return f.outcome + (f.retry ? " retry" : " final");
  };
  EXPECT_EQ(over("model is 2 MiB, over the limit of 1 MiB", false), "policy_refused final");
  EXPECT_EQ(over("inline content is over the server's limit", true), "check_failed final");
  EXPECT_EQ(c(StatusCode::RESOURCE_EXHAUSTED, "model is 2 MiB, over the limit of 1 MiB", false),
            "download_failed retry");
  EXPECT_EQ(c(StatusCode::RESOURCE_EXHAUSTED, "in-flight model bytes exhausted", false),
            "download_failed retry");
  EXPECT_EQ(c(StatusCode::UNAVAILABLE, "the server is shutting down", true), "check_failed retry");
  EXPECT_EQ(c(StatusCode::RESOURCE_EXHAUSTED, "the check queue is full", true),
            "check_failed retry");
  EXPECT_EQ(c(StatusCode::INTERNAL, "the checker crashed on this model (signal 11)", true),
            "check_failed final");
}

TEST(WebhookDeliveries, RetryDelaysDoubleUpToTheMaximum) {
  EXPECT_EQ(http::RetryDelayMs(1, 30, 3600), 30000);
  EXPECT_EQ(http::RetryDelayMs(2, 30, 3600), 60000);
  EXPECT_EQ(http::RetryDelayMs(4, 30, 3600), 240000);
  EXPECT_EQ(http::RetryDelayMs(8, 30, 3600), 3600000);
  EXPECT_EQ(http::RetryDelayMs(1000, 30, 3600), 3600000);
  EXPECT_EQ(http::RetryDelayMs(0, 0.5, 2), 500);
}

}  // namespace axqc::server
