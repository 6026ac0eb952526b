// RenderJson writes the findings and units arrays directly (core/src/report_json.cc); the result must
// be byte-identical to serializing the json tree of ReportToJson, for every indent and for
// strings that need escaping.
#include <nlohmann/json.hpp>

#include "axqc/render.h"
#include "check_helpers.h"

namespace axqc::test {
namespace {

Report TrickyReport() {
  Report r;
  r.verdict = Verdict::kNonConformant;
  r.tool_version = "0.1.0";
  r.rule_set_version = "2026.11.1";
  r.model.file = "dir/\"quoted\" model.onnx";
  r.model.opsets = {{"", 21}};
  Finding f;
  f.rule = "role/weight-type";
  f.severity = Severity::kError;
  f.section = "4";
  f.message = "weight 'w\\1' of Conv 'c\tonv' is \"U8\"; line\nbreak, \x01 control, \xc3\xa9 UTF-8";
  f.group_key = "weight not S8";
  f.op_type = "Conv";
  f.nodes = {"c\tonv", "w_dq"};
  f.tensors = {"w\\1"};
  f.values = {{"type", "U8"}, {"expected", "S8 | S4"}};
  r.findings.push_back(f);
  Finding g = f;
  g.nodes.clear();
  g.tensors.clear();
  g.values.clear();
  g.severity = Severity::kInfo;
  r.findings.push_back(g);
  FinalizeReport(r);
  UnitInfo u;
  u.id = 7;
  u.kind = "pattern:conv-bn";
  u.op_type = "Conv";
  u.mode = "quantized";
  u.nodes = {"conv \"1\"", "bn"};
  u.input_qdq = {"x_dq"};
  r.units.push_back(u);
  UnitInfo empty;
  empty.id = 8;
  empty.kind = "op";
  r.units.push_back(empty);
  return r;
}

TEST(RenderJson, MatchesTheJsonTreeForEveryIndent) {
  const Report r = TrickyReport();
  ASSERT_EQ(r.findings.size(), 2u);
  ASSERT_EQ(r.units.size(), 2u);
  for (int indent : {-1, 0, 2, 4}) {
    SCOPED_TRACE(indent);
    const std::string fast = RenderJson(r, indent);
    EXPECT_EQ(fast, ReportToJson(r).dump(indent) + "\n");
    const auto parsed = nlohmann::json::parse(fast);
    EXPECT_EQ(parsed.at("findings").at(0).at("message"), r.findings[0].message);
    EXPECT_EQ(parsed.at("units").at(0).at("nodes").at(0), "conv \"1\"");
    EXPECT_TRUE(parsed.at("units").at(1).at("nodes").empty());
  }
}

TEST(RenderJson, EmptyArraysAndPlaceholderTextInTheModel) {
  Report r;
  r.verdict = Verdict::kConformant;
  // Model text equal to the internal placeholders (with or without the key) is never replaced.
  r.model.file = "\"axqc-findings-placeholder\"";
  r.model.producer_name = "axqc-units-placeholder";
  r.model.producer_version = "\n  \"units\": \"axqc-units-placeholder\"";
  r.summary.units_by_op["units"] = 3;
  for (int indent : {-1, 2}) {
    const std::string fast = RenderJson(r, indent);
    EXPECT_EQ(fast, ReportToJson(r).dump(indent) + "\n");
    const auto parsed = nlohmann::json::parse(fast);
    EXPECT_TRUE(parsed.at("findings").is_array());
    EXPECT_TRUE(parsed.at("units").is_array());
    EXPECT_EQ(parsed.at("model").at("file"), r.model.file);
  }
}

TEST(RenderJson, ACheckedModelRoundTrips) {
  const Report r = RunCheck(ConvModel());
  EXPECT_EQ(RenderJson(r), ReportToJson(r).dump(2) + "\n");
  EXPECT_FALSE(r.units.empty());
}

}  // namespace
}  // namespace axqc::test
