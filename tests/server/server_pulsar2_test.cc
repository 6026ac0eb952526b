// A Pulsar2 build configuration through the service (docs/pulsar2.md, docs/api.md):
// CheckOptions.pulsar2_config over gRPC, the HTTP query parameter and JSON field, the cache key
// (the configuration's sha256), lookups by hash, and the refusal of what the server cannot take.
#include <nlohmann/json.hpp>

#include "axqc/pulsar2.h"
#include "axqc/render.h"
#include "server_test_util.h"

namespace axqc::test {
namespace {

using grpc::StatusCode;

// model_type ONNX for a QDQ model (error) and a layer_name that is no node (warning).
const std::string kBadConfig =
    R"({"model_type": "ONNX", "target_hardware": "AX650",
        "quant": {"layer_configs": [{"layer_name": "no_such_node", "data_type": "U16"}]}})";
const std::string kGoodConfig = R"({"model_type": "QuantONNX", "target_hardware": "AX650"})";

grpc::Status Check(TestServer& ts, const std::string& bytes, std::optional<std::string> config,
                   v1::CheckResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::CheckRequest req;
  req.set_content(bytes);
  req.set_name("p2.onnx");
  req.mutable_options()->set_format(v1::REPORT_FORMAT_JSON);
  if (config) req.mutable_options()->set_pulsar2_config(*config);
  return ts.stub().Check(&ctx, req, resp);
}

// The JSON report the CLI prints for the same bytes, name and configuration.
std::string CliJson(const std::string& bytes, std::optional<std::string> config) {
  CheckOptions o;
  o.include_graph = true;
  o.pulsar2_config = std::move(config);
  Report r = CheckBytes(bytes, "p2.onnx", o);
  if (r.model.sha256.empty()) r.model.sha256 = Sha256Hex(bytes);
  return RenderJson(r);
}

// rule -> severity of the pulsar2/* findings of a JSON report.
std::map<std::string, std::string> Pulsar2Findings(const std::string& report_json) {
  std::map<std::string, std::string> out;
  const auto report = nlohmann::json::parse(report_json);
  for (const auto& f : report.at("findings")) {
    const auto rule = f.at("rule").get<std::string>();
    if (rule.starts_with("pulsar2/")) out[rule] = f.at("severity").get<std::string>();
  }
  return out;
}

TEST(ServerPulsar2, ConfigIsJudgedByTheServerAndIsPartOfTheCacheKey) {
  TempDir dir;
  TestServer ts(dir);
  const std::string model = ConformantModel("p2-server");

  v1::CheckResponse bad;
  ASSERT_TRUE(Check(ts, model, kBadConfig, &bad).ok());
  EXPECT_EQ(bad.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(bad.report_json(), CliJson(model, kBadConfig));
  EXPECT_EQ(Pulsar2Findings(bad.report_json()),
            (std::map<std::string, std::string>{{"pulsar2/model-type", "error"},
                                                {"pulsar2/selector-no-match", "warn"}}));
  EXPECT_EQ(bad.verdict(), v1::VERDICT_CONFORMANT);  // the spec's verdict is the model's alone

  // The same text again: a hit. Another text, none, or an empty one: other keys.
  v1::CheckResponse again;
  ASSERT_TRUE(Check(ts, model, kBadConfig, &again).ok());
  EXPECT_EQ(again.cache(), v1::CACHE_RESULT_MEMORY_HIT);
  EXPECT_EQ(again.report_json(), bad.report_json());
  v1::CheckResponse good;
  ASSERT_TRUE(Check(ts, model, kGoodConfig, &good).ok());
  EXPECT_EQ(good.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(good.report_json(), CliJson(model, kGoodConfig));
  EXPECT_FALSE(Pulsar2Findings(good.report_json()).contains("pulsar2/model-type"));
  v1::CheckResponse none;
  ASSERT_TRUE(Check(ts, model, std::nullopt, &none).ok());
  EXPECT_EQ(none.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_TRUE(Pulsar2Findings(none.report_json()).empty()) << none.report_json();
  v1::CheckResponse empty;
  ASSERT_TRUE(Check(ts, model, std::string(), &empty).ok());
  EXPECT_EQ(empty.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(Pulsar2Findings(empty.report_json()),
            (std::map<std::string, std::string>{{"pulsar2/config-invalid", "error"}}));

  // A hash lookup finds the report of exactly that configuration.
  for (const auto& [config, found] : std::vector<std::pair<std::optional<std::string>, bool>>{
           {kBadConfig, true}, {kBadConfig + " ", false}, {std::nullopt, true}}) {
    grpc::ClientContext ctx;
    v1::GetReportRequest req;
    req.set_sha256(Sha256Hex(model));
    req.set_name("p2.onnx");
    req.mutable_options()->set_format(v1::REPORT_FORMAT_JSON);
    if (config) req.mutable_options()->set_pulsar2_config(*config);
    v1::CheckResponse resp;
    const grpc::Status s = ts.stub().GetReport(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), found ? StatusCode::OK : StatusCode::NOT_FOUND)
        << config.value_or("(none)");
    if (found && config) {
      EXPECT_EQ(resp.report_json(), bad.report_json());
    }
  }
}

TEST(ServerPulsar2, OversizedConfigIsInvalidArgumentAndNothingIsChecked) {
  TempDir dir;
  TestServer ts(dir);
  const std::string model = ConformantModel("p2-big");
  v1::CheckResponse resp;
  const std::string big = "{\"x\": \"" + std::string(kMaxPulsar2ConfigBytes, 'a') + "\"}";
  grpc::Status s = Check(ts, model, big, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "options.pulsar2_config: at most 1048576 bytes");
  grpc::ClientContext ctx;
  v1::GetStatsResponse stats;
  ASSERT_TRUE(ts.stub().GetStats(&ctx, v1::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.total().requests(), 0u);
  // Exactly the bound is a configuration (here not valid JSON: a finding, not a refusal).
  s = Check(ts, model, std::string(kMaxPulsar2ConfigBytes, '{'), &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Pulsar2Findings(resp.report_json()),
            (std::map<std::string, std::string>{{"pulsar2/config-invalid", "error"}}));
}

TEST(ServerPulsar2, HttpTakesTheConfigAsAQueryParameterAndAJsonField) {
  TempDir dir;
  TestServer ts(dir, WithHttp());
  const int port = ts.server().http_port();
  const std::string model = ConformantModel("p2-http");
  // Raw bytes, the configuration's text percent-encoded (curl --url-query pulsar2_config@FILE).
  HttpAnswer a =
      HttpCall(port, "POST", "/v1/check?name=p2.onnx&pulsar2_config=" + UrlEncode(kBadConfig),
               model, "application/octet-stream");
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.body, CliJson(model, kBadConfig));
  EXPECT_EQ(a.Header("X-Axqc-Verdict"), "conformant");
  // The JSON request's options, the same text: the same key.
  a = HttpCall(port, "POST", "/v1/check",
               nlohmann::json{{"content", Base64(model)},
                              {"name", "p2.onnx"},
                              {"options", {{"pulsar2_config", kBadConfig}}}}
                   .dump(),
               "application/json");
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.Header("X-Axqc-Cache"), "memory_hit");
  EXPECT_EQ(a.body, CliJson(model, kBadConfig));
  // The stored report by hash, with the configuration in the query.
  a = HttpCall(
      port, "GET",
      "/v1/reports/" + Sha256Hex(model) + "?name=p2.onnx&pulsar2_config=" + UrlEncode(kBadConfig));
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.body, CliJson(model, kBadConfig));
  a = HttpCall(port, "GET",
               "/v1/reports/" + Sha256Hex(model) + "?pulsar2_config=" + UrlEncode(kGoodConfig));
  EXPECT_EQ(a.status, 404) << a.body;
  // A percent-decoded query can carry bytes a proto string cannot: 400, the field named.
  a = HttpCall(port, "POST", "/v1/check?pulsar2_config=%7B%FF%7D", model,
               "application/octet-stream");
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_EQ(ErrorField(a, "message"), "options.pulsar2_config is not valid UTF-8");
}

}  // namespace
}  // namespace axqc::test
