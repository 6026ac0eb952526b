// Chip targets through the service (docs/targets.md, docs/api.md): CheckOptions.targets over gRPC,
// the HTTP query parameter and JSON field, validation of hostile values, the cache key, the
// history label axqc.target that GetStats groups by, and the report's targets.
#include <nlohmann/json.hpp>

#include "axqc/render.h"
#include "axqc/wire/report_proto.h"
#include "server_test_util.h"

namespace axqc::test {
namespace {

using grpc::StatusCode;

grpc::Status Check(TestServer& ts, const std::string& bytes, std::vector<std::string> targets,
                   v1::CheckResponse* resp, std::map<std::string, std::string> labels = {}) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  v1::CheckRequest req;
  req.set_content(bytes);
  req.set_name("gs.onnx");
  for (const auto& [k, v] : labels) (*req.mutable_labels())[k] = v;
  req.mutable_options()->set_format(v1::REPORT_FORMAT_JSON);
  for (auto& t : targets) req.mutable_options()->add_targets(t);
  return ts.stub().Check(&ctx, req, resp);
}

// The JSON report the CLI prints for the same bytes, name and chips.
std::string CliJson(const std::string& bytes, std::vector<std::string> chips) {
  CheckOptions o;
  o.include_graph = true;
  o.targets = std::move(chips);
  Report r = CheckBytes(bytes, "gs.onnx", o);
  if (r.model.sha256.empty()) r.model.sha256 = Sha256Hex(bytes);
  return RenderJson(r);
}

const nlohmann::json* TargetOf(const nlohmann::json& report, const std::string& chip) {
  for (const auto& t : report.at("targets")) {
    if (t.at("chip") == chip) return &t;
  }
  return nullptr;
}

TEST(ServerTargets, TargetsAreJudgedByTheServerAndArePartOfTheCacheKey) {
  TempDir dir;
  TestServer ts(dir);
  const std::string model = GridSampleModel();

  // Aliases and case do not matter; the report is the CLI's, with both chips in profile order.
  v1::CheckResponse first;
  ASSERT_TRUE(Check(ts, model, {"AX620E", "m76h"}, &first).ok());
  EXPECT_EQ(first.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(first.report_json(), CliJson(model, {"ax650", "ax620e"}));
  const auto j = nlohmann::json::parse(first.report_json());
  ASSERT_EQ(j.at("targets").size(), 2u);
  EXPECT_EQ(j["targets"][0]["chip"], "ax650");
  EXPECT_EQ(TargetOf(j, "ax650")->at("verdict"), "fits");
  EXPECT_EQ(TargetOf(j, "ax620e")->at("verdict"), "does_not_fit");
  EXPECT_EQ(TargetOf(j, "ax620e")->at("blocking").at(0).at("node"), "gs1");
  bool op_unsupported = false;
  for (const auto& f : j.at("findings")) {
    op_unsupported =
        op_unsupported || (f.at("rule") == "target/op-unsupported" && f.at("nodes").at(0) == "gs1");
  }
  EXPECT_TRUE(op_unsupported) << first.report_json();

  // The same chips named otherwise: the same key (a hit).
  v1::CheckResponse again;
  ASSERT_TRUE(Check(ts, model, {"ax620e", "ax650", "ax650"}, &again).ok());
  EXPECT_EQ(again.cache(), v1::CACHE_RESULT_MEMORY_HIT);
  EXPECT_EQ(again.report_json(), first.report_json());

  // Without targets, and with other chips: other keys, other reports.
  v1::CheckResponse plain;
  ASSERT_TRUE(Check(ts, model, {}, &plain).ok());
  EXPECT_EQ(plain.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_FALSE(nlohmann::json::parse(plain.report_json()).contains("targets"));
  EXPECT_EQ(plain.report_json(), CliJson(model, {}));
  v1::CheckResponse one;
  ASSERT_TRUE(Check(ts, model, {"ax650"}, &one).ok());
  EXPECT_EQ(one.cache(), v1::CACHE_RESULT_MISS);
  EXPECT_EQ(nlohmann::json::parse(one.report_json()).at("targets").size(), 1u);

  // A hash lookup finds the report of exactly those chips.
  const std::string sha = Sha256Hex(model);
  for (const auto& [chips, found] : std::vector<std::pair<std::vector<std::string>, bool>>{
           {{"ax650", "ax620e"}, true}, {{"all"}, false}, {{}, true}}) {
    grpc::ClientContext ctx;
    v1::GetReportRequest req;
    req.set_sha256(sha);
    req.set_name("gs.onnx");
    req.mutable_options()->set_format(v1::REPORT_FORMAT_JSON);
    for (const auto& c : chips) req.mutable_options()->add_targets(c);
    v1::CheckResponse resp;
    const grpc::Status s = ts.stub().GetReport(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), found ? StatusCode::OK : StatusCode::NOT_FOUND) << chips.size();
    if (chips.size() == 2) {
      EXPECT_EQ(resp.report_json(), first.report_json());
    }
  }
}

TEST(ServerTargets, HostileTargetValuesAreInvalidArgumentNamingTheField) {
  TempDir dir;
  TestServer ts(dir);
  const std::string model = GridSampleModel();
  v1::CheckResponse resp;
  grpc::Status s = Check(ts, model, {"ax999"}, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(),
            "options.targets: unknown target 'ax999' (known: ax650, ax620e, ax615, ax637, m57, "
            "all)");
  s = Check(ts, model, {"ax650;rm -rf"}, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "options.targets: a chip name is 1-32 characters of [A-Za-z0-9_-]");
  s = Check(ts, model, {std::string(100000, 'a')}, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "options.targets: a chip name is 1-32 characters of [A-Za-z0-9_-]");
  s = Check(ts, model, {""}, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  s = Check(ts, model, std::vector<std::string>(17, "ax650"), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "options.targets: at most 16 values");
  // The label the server sets itself cannot be sent.
  s = Check(ts, model, {"ax650"}, &resp, {{"axqc.target", "ax615"}});
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("label keys starting with 'axqc.' are set by the server"),
            std::string::npos)
      << s.error_message();
  // Nothing was checked or recorded.
  grpc::ClientContext ctx;
  v1::GetStatsResponse stats;
  ASSERT_TRUE(ts.stub().GetStats(&ctx, v1::GetStatsRequest(), &stats).ok());
  EXPECT_EQ(stats.total().requests(), 0u);
}

TEST(ServerTargets, StatsGroupChecksByTheirTargets) {
  TempDir dir;
  TestServer ts(dir);
  const std::string model = GridSampleModel();
  v1::CheckResponse resp;
  ASSERT_TRUE(Check(ts, model, {"ax620e", "ax650"}, &resp).ok());
  ASSERT_TRUE(Check(ts, model, {"m76h", "AX620E"}, &resp).ok());  // the same chips: one group
  ASSERT_TRUE(Check(ts, model, {"ax615"}, &resp).ok());
  ASSERT_TRUE(Check(ts, model, {}, &resp).ok());
  grpc::ClientContext ctx;
  v1::GetStatsRequest req;
  req.set_group_by("axqc.target");
  v1::GetStatsResponse stats;
  ASSERT_TRUE(ts.stub().GetStats(&ctx, req, &stats).ok());
  EXPECT_EQ(stats.total().requests(), 4u);
  std::map<std::string, std::uint64_t> groups;
  for (const auto& g : stats.groups()) groups[g.label_value()] = g.counts().requests();
  EXPECT_EQ(groups,
            (std::map<std::string, std::uint64_t>{{"", 1}, {"ax615", 1}, {"ax650,ax620e", 2}}));
  // And filter by it.
  grpc::ClientContext ctx2;
  v1::GetStatsRequest filtered;
  (*filtered.mutable_label_filter())["axqc.target"] = "ax615";
  ASSERT_TRUE(ts.stub().GetStats(&ctx2, filtered, &stats).ok());
  EXPECT_EQ(stats.total().requests(), 1u);
}

TEST(ServerTargets, HttpTakesTargetsAsAQueryParameterAndAJsonField) {
  TempDir dir;
  TestServer ts(dir, WithHttp());
  const int port = ts.server().http_port();
  const std::string model = GridSampleModel();
  // Raw bytes, target repeated and as a list.
  HttpAnswer a = HttpCall(port, "POST", "/v1/check?name=gs.onnx&target=ax650&target=ax620e", model,
                          "application/octet-stream");
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.body, CliJson(model, {"ax650", "ax620e"}));
  a = HttpCall(port, "POST", "/v1/check?name=gs.onnx&target=ax620e,ax650", model,
               "application/octet-stream");
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.Header("X-Axqc-Cache"), "memory_hit");
  // The JSON request's options.
  const std::string b64 = Base64(model);
  a = HttpCall(
      port, "POST", "/v1/check",
      R"({"content": ")" + b64 + R"(", "name": "gs.onnx", "options": {"targets": ["ax615"]}})",
      "application/json");
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.body, CliJson(model, {"ax615"}));
  // The stored report by hash, with the chips in the query.
  a = HttpCall(port, "GET", "/v1/reports/" + Sha256Hex(model) + "?target=ax615&name=gs.onnx");
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.body, CliJson(model, {"ax615"}));
  a = HttpCall(port, "GET", "/v1/reports/" + Sha256Hex(model) + "?target=m57");
  EXPECT_EQ(a.status, 404) << a.body;
  // Refusals are 400 with the field named.
  a = HttpCall(port, "POST", "/v1/check?target=ax9", model, "application/octet-stream");
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_EQ(ErrorField(a, "message"),
            "options.targets: unknown target 'ax9' (known: ax650, ax620e, ax615, ax637, m57, all)");
  std::string many = "/v1/check?target=";
  for (int i = 0; i < 40; ++i) many += "ax650,";
  a = HttpCall(port, "POST", many, model, "application/octet-stream");
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_EQ(ErrorField(a, "message"), "target: at most 16 values");
}

}  // namespace
}  // namespace axqc::test
