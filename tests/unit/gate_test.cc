// The CI gate (core/src/gate.cc): globs, waiver validation, waivers (match, expiry, unused,
// model and check_value scope), baselines (matching by fingerprint and count, fixed entries, the
// file format), the failure threshold and the gate verdicts.
#include "axqc/gate.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "axqc/render.h"
#include "exit_codes.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

TEST(Glob, StarQuestionClassesAndEscapes) {
  EXPECT_TRUE(GlobMatch("role/*", "role/weight-type"));
  EXPECT_FALSE(GlobMatch("role/*", "qdq/scale-value"));
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("/backbone/*", "/backbone/layer1/conv/Conv"));  // '*' crosses '/'
  EXPECT_TRUE(GlobMatch("*/Conv_?", "/a/b/Conv_7"));
  EXPECT_FALSE(GlobMatch("*/Conv_?", "/a/b/Conv_17"));
  EXPECT_TRUE(GlobMatch("Conv_[0-3]", "Conv_2"));
  EXPECT_FALSE(GlobMatch("Conv_[!0-3]", "Conv_2"));
  EXPECT_TRUE(GlobMatch("Conv_[!0-3]", "Conv_9"));
  EXPECT_TRUE(GlobMatch("a\\*b", "a*b"));
  EXPECT_FALSE(GlobMatch("a\\*b", "axb"));
  EXPECT_TRUE(GlobMatch("x[", "x["));  // an unclosed class is literal
  EXPECT_TRUE(GlobMatch("*a*a*a*", "banana and a"));
  EXPECT_FALSE(GlobMatch("op/*", "OP/x"));              // case-sensitive
  EXPECT_FALSE(GlobMatch("role", "role/weight-type"));  // the whole text
}

Waiver MakeWaiver(std::vector<std::string> rules, const std::string& reason = "known") {
  Waiver w;
  w.rules = std::move(rules);
  w.reason = reason;
  w.file = "axqc.toml";
  w.line = 3;
  return w;
}

TEST(Waiver, ValidationNamesTheProblem) {
  EXPECT_NO_THROW(ValidateWaiver(MakeWaiver({"role/*"})));
  auto message = [](const Waiver& w) {
    try {
      ValidateWaiver(w);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(MakeWaiver({"role/*"}, "  ")).find("axqc.toml:3: `reason` is required"),
            std::string::npos);
  Waiver any = MakeWaiver({});
  EXPECT_NE(message(any).find("needs `rule`"), std::string::npos);
  any.fingerprints = {"0123456789abcdef"};
  EXPECT_EQ(message(any), "");  // a fingerprint alone is enough
  any.fingerprints = {"0123"};
  EXPECT_NE(message(any).find("not 16 lowercase hex digits"), std::string::npos);
  Waiver dated = MakeWaiver({"x"});
  dated.expires = "2026-02-30";
  EXPECT_NE(message(dated).find("not a date"), std::string::npos);
  dated.expires = "2028-02-29";
  EXPECT_EQ(message(dated), "");
  EXPECT_FALSE(IsIsoDate("2026-1-01"));
  EXPECT_TRUE(IsIsoDate(TodayUtc()));
}

Finding MakeFinding(const std::string& rule, Severity sev, const std::string& node,
                    const std::string& fp, const std::string& op = "Conv") {
  Finding f;
  f.rule = rule;
  f.severity = sev;
  f.section = "4";
  f.message = rule + " at " + node;
  f.group_key = rule + " kind";
  f.op_type = op;
  f.nodes = {node};
  f.tensors = {node + "_out"};
  f.fingerprint = fp;
  return f;
}

Report MakeReport(const std::string& file, std::vector<Finding> findings, bool cv = false) {
  Report r;
  r.model.file = file;
  r.model.sha256 = std::string(64, file.size() % 2 == 0 ? 'a' : 'b');
  r.check_value = cv;
  r.tool_version = "t";
  r.rule_set_version = "rs";
  r.findings = std::move(findings);
  r.summary.owned_qdq_edges = 1;
  FinalizeReport(r);
  return r;
}

const std::string kFp1 = "1111111111111111";
const std::string kFp2 = "2222222222222222";
const std::string kFp3 = "3333333333333333";

TEST(Gate, WithoutPolicyTheGateIsTheVerdict) {
  std::vector<Report> reports = {
      MakeReport("bad.onnx", {MakeFinding("role/weight-type", Severity::kError, "c", kFp1)}),
      MakeReport("warned.onnx", {MakeFinding("op/x", Severity::kWarn, "c", kFp2)}),
      MakeReport("na.onnx", {})};
  reports[2].verdict = Verdict::kNotApplicable;
  const auto stale = ApplyGate(GatePolicy{}, reports);
  EXPECT_TRUE(stale.empty());
  EXPECT_FALSE(reports[0].gate.active);
  EXPECT_EQ(ExitCodeFor(reports[0].gate), 1);
  EXPECT_EQ(ExitCodeFor(reports[1].gate), 0);  // warnings do not fail by default
  EXPECT_EQ(ExitCodeFor(reports[2].gate), 3);
  EXPECT_EQ(reports[0].gate.counted.errors, 1u);
  // --fail-on warn
  GatePolicy warn;
  warn.fail_on = Severity::kWarn;
  ApplyGate(warn, reports);
  EXPECT_EQ(ExitCodeFor(reports[1].gate), 1);
  // The report's own verdict and summary stay the checker's.
  EXPECT_EQ(reports[0].verdict, Verdict::kNonConformant);
  EXPECT_EQ(reports[0].summary.errors, 1u);
}

TEST(Gate, WaiversMatchBySelectorsAndStayInTheReport) {
  std::vector<Report> reports = {MakeReport(
      "models/det.onnx",
      {MakeFinding("role/weight-type", Severity::kError, "/backbone/conv1", kFp1),
       MakeFinding("role/weight-type", Severity::kError, "/head/conv9", kFp2),
       MakeFinding("op/output-not-quantized", Severity::kError, "/head/add", kFp3, "Add")})};
  GatePolicy p;
  p.active = true;
  p.today = "2026-06-01";
  Waiver backbone = MakeWaiver({"role/*"}, "backbone exported by the vendor tool");
  backbone.nodes = {"/backbone/*"};
  Waiver by_fp = MakeWaiver({}, "tracked in JIRA-7");
  by_fp.fingerprints = {kFp3};
  by_fp.line = 9;
  Waiver wrong_op = MakeWaiver({"role/*"}, "only Gemm");
  wrong_op.op_types = {"Gemm"};
  wrong_op.line = 12;
  p.waivers = {backbone, by_fp, wrong_op};
  const auto stale = ApplyGate(p, reports);
  const Report& r = reports[0];
  ASSERT_EQ(r.findings.size(), 3u);
  EXPECT_EQ(r.findings[0].state, FindingState::kWaived);
  EXPECT_EQ(r.findings[0].waiver_reason, "backbone exported by the vendor tool");
  EXPECT_EQ(r.findings[0].waiver_source, "axqc.toml:3");
  EXPECT_EQ(r.findings[1].state, FindingState::kCounted);
  EXPECT_EQ(r.findings[2].state, FindingState::kWaived);
  EXPECT_EQ(r.findings[2].waiver_source, "axqc.toml:9");
  EXPECT_EQ(r.gate.waived.errors, 2u);
  EXPECT_EQ(r.gate.counted.errors, 1u);
  EXPECT_EQ(r.gate.verdict, GateVerdict::kFail);
  // The groups' copies carry the states too (renderers list them).
  for (const auto& g : r.groups) {
    for (const auto& f : g.first) {
      if (f.nodes[0] == "/backbone/conv1") {
        EXPECT_EQ(f.state, FindingState::kWaived);
      }
    }
  }
  // The Gemm-only waiver matched nothing: unused, reported with its place.
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].status, "unused");
  EXPECT_EQ(stale[0].source, "axqc.toml:12");
  EXPECT_EQ(stale[0].what, "rule=role/* op_type=Gemm");
  ASSERT_EQ(r.gate.stale_waivers.size(), 1u);
  EXPECT_NE(stale[0].Message().find("matched no finding; remove it"), std::string::npos);
  // Waiving the last error passes the gate although the model is non-conformant.
  Waiver head = MakeWaiver({"role/weight-type"}, "head too");
  head.tensors = {"/head/*_out"};
  p.waivers = {backbone, by_fp, head};
  EXPECT_TRUE(ApplyGate(p, reports).empty());
  EXPECT_EQ(reports[0].gate.verdict, GateVerdict::kPass);
  EXPECT_EQ(reports[0].verdict, Verdict::kNonConformant);
}

TEST(Gate, ExpiredWaiversStopWaivingAndAreReported) {
  std::vector<Report> reports = {
      MakeReport("m.onnx", {MakeFinding("role/weight-type", Severity::kError, "c", kFp1)})};
  GatePolicy p;
  p.today = "2026-06-01";
  Waiver w = MakeWaiver({"role/weight-type"}, "until the re-export");
  w.expires = "2026-06-01";  // the last day it applies
  p.waivers = {w};
  EXPECT_TRUE(ApplyGate(p, reports).empty());
  EXPECT_EQ(reports[0].findings[0].state, FindingState::kWaived);
  p.today = "2026-06-02";
  const auto stale = ApplyGate(p, reports);
  EXPECT_EQ(reports[0].findings[0].state, FindingState::kCounted);
  EXPECT_EQ(reports[0].gate.verdict, GateVerdict::kFail);
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].status, "expired");
  EXPECT_EQ(stale[0].matched, 1u);
  EXPECT_NE(stale[0].Message().find(
                "expired on 2026-06-01: it no longer waives the 1 finding it matches"),
            std::string::npos)
      << stale[0].Message();
}

TEST(Gate, WaiversApplyOnlyWhereTheirModelAndRulesCanMatch) {
  std::vector<Report> reports = {
      MakeReport("models/a.onnx", {MakeFinding("role/weight-type", Severity::kError, "c", kFp1)}),
      MakeReport("models/b.onnx", {})};
  GatePolicy p;
  Waiver only_c = MakeWaiver({"role/*"}, "c only");
  only_c.models = {"models/c*.onnx"};
  // A value-check rule cannot match without -c: not "unused" in such a run.
  Waiver cv = MakeWaiver({"qdq/zero-point-value"}, "value check");
  p.waivers = {only_c, cv};
  EXPECT_TRUE(ApplyGate(p, reports).empty());
  EXPECT_EQ(reports[0].findings[0].state, FindingState::kCounted);
  // With -c it applies, and is unused.
  reports[1].check_value = true;
  const auto stale = ApplyGate(p, reports);
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].what, "rule=qdq/zero-point-value");
  EXPECT_TRUE(reports[0].gate.stale_waivers.empty());
  EXPECT_EQ(reports[1].gate.stale_waivers.size(), 1u);
  // Stale waivers fail the gate with --fail-on warn only.
  EXPECT_EQ(reports[1].gate.verdict, GateVerdict::kPass);
  p.fail_on = Severity::kWarn;
  ApplyGate(p, reports);
  EXPECT_EQ(reports[1].gate.verdict, GateVerdict::kFail);
}

// --select/--ignore (and [check] select/ignore): the most specific selector decides; ignore wins
// a tie; an empty select selects every rule.
TEST(RuleSelection, TheMostSpecificSelectorWins) {
  RuleSelection all;
  EXPECT_TRUE(all.all());
  EXPECT_TRUE(all.Selects("qdq/scale-value"));
  RuleSelection s{{"qdq/"}, {"qdq/scale-value"}};
  EXPECT_TRUE(s.Selects("qdq/zero-point-value"));
  EXPECT_FALSE(s.Selects("qdq/scale-value"));
  EXPECT_FALSE(s.Selects("role/weight-type"));  // not selected
  // An exact ID beats a prefix on the other side, a longer pattern a shorter one.
  RuleSelection back{{"qdq/scale-value"}, {"qdq/"}};
  EXPECT_TRUE(back.Selects("qdq/scale-value"));
  EXPECT_FALSE(back.Selects("qdq/zero-point-value"));
  RuleSelection globs{{"op/*"}, {"op/output-*"}};
  EXPECT_FALSE(globs.Selects("op/output-not-quantized"));
  // A tie: ignore wins.
  RuleSelection tie{{"role/"}, {"role/"}};
  EXPECT_FALSE(tie.Selects("role/weight-type"));
  RuleSelection ignore_only{{}, {"role/"}};
  EXPECT_TRUE(ignore_only.Selects("op/output-not-quantized"));
  EXPECT_FALSE(ignore_only.Selects("role/weight-type"));
}

TEST(RuleSelection, UnknownSelectorsNameTheClosestRuleOrPrefix) {
  EXPECT_EQ(CheckRuleSelector("qdq/scale-value"), "");
  EXPECT_EQ(CheckRuleSelector("qdq/"), "");
  EXPECT_EQ(CheckRuleSelector("qdq/*-value"), "");
  EXPECT_EQ(CheckRuleSelector("qdq/scale-valu"),
            "unknown rule 'qdq/scale-valu' (did you mean 'qdq/scale-value'?); `axqc rules` "
            "lists them");
  EXPECT_EQ(CheckRuleSelector("qdq"),
            "unknown rule 'qdq' (did you mean 'qdq/'?); `axqc rules` lists them");
  EXPECT_EQ(CheckRuleSelector("qdx/"),
            "unknown rule 'qdx/' (did you mean 'qdq/'?); `axqc rules` lists them");
  EXPECT_EQ(CheckRuleSelector("nothing/*"), "unknown rule 'nothing/*'; `axqc rules` lists them");
  EXPECT_EQ(CheckRuleSelector(""), "an empty rule selector");
}

TEST(RuleSelection, LeftOutFindingsLeaveTheReportAndItsVerdict) {
  Finding root = MakeFinding("role/weight-type", Severity::kError, "w", kFp1);
  root.id = kFp1 + ":1";
  Finding middle = MakeFinding("qdq/scale-value", Severity::kError, "q", kFp2);
  middle.id = kFp2 + ":1";
  middle.cause = root.id;
  Finding leaf = MakeFinding("op/output-not-quantized", Severity::kWarn, "add", kFp3);
  leaf.id = kFp3 + ":1";
  leaf.cause = middle.id;
  Report r = MakeReport("m.onnx", {root, middle, leaf});
  ASSERT_EQ(r.verdict, Verdict::kNonConformant);
  Report all = r;
  ApplyRuleSelection(RuleSelection{}, all);
  EXPECT_EQ(all.findings.size(), 3u);
  // Leaving out the middle one: the leaf's cause is the root now.
  Report a = r;
  ApplyRuleSelection(RuleSelection{{}, {"qdq/"}}, a);
  ASSERT_EQ(a.findings.size(), 2u);
  EXPECT_EQ(a.findings[1].cause, root.id);
  EXPECT_EQ(a.summary.by_rule.count("qdq/scale-value"), 0u);
  EXPECT_EQ(a.summary.errors, 1u);
  // Only the warning left: conformant, and a root cause.
  Report b = r;
  ApplyRuleSelection(RuleSelection{{"op/output-not-quantized"}, {}}, b);
  ASSERT_EQ(b.findings.size(), 1u);
  EXPECT_EQ(b.findings[0].cause, "");
  EXPECT_EQ(b.verdict, Verdict::kConformant);
  EXPECT_EQ(b.groups.size(), 1u);
  // not_applicable stays.
  Report na =
      MakeReport("float.onnx", {MakeFinding("scope/no-quantized-edge", Severity::kInfo, "", kFp1)});
  na.verdict = Verdict::kNotApplicable;
  ApplyRuleSelection(RuleSelection{{}, {"scope/"}}, na);
  EXPECT_TRUE(na.findings.empty());
  EXPECT_EQ(na.verdict, Verdict::kNotApplicable);
}

// A waiver of rules the selection leaves out has nothing to match: it is not reported unused.
TEST(RuleSelection, WaiversOfLeftOutRulesAreNotUnused) {
  std::vector<Report> reports = {MakeReport("a.onnx", {})};
  GatePolicy p;
  p.waivers = {MakeWaiver({"role/weight-type"}, "left out")};
  EXPECT_EQ(ApplyGate(p, reports).size(), 1u);  // unused
  p.selection.ignore = {"role/"};
  EXPECT_TRUE(ApplyGate(p, reports).empty());
  p.selection = RuleSelection{{"op/"}, {}};
  EXPECT_TRUE(ApplyGate(p, reports).empty());
  p.selection = RuleSelection{{"role/weight-type"}, {}};
  EXPECT_EQ(ApplyGate(p, reports).size(), 1u);
}

TEST(Gate, BaselineAcceptsKnownFindingsByFingerprintAndCount) {
  const fs::path dir = fs::temp_directory_path() / "axqc-gate-test";
  fs::create_directories(dir / "models");
  std::ofstream(dir / "models" / "det.onnx") << "x";
  const std::string model = (dir / "models" / "det.onnx").string();
  std::vector<Report> before = {
      MakeReport(model, {MakeFinding("role/weight-type", Severity::kError, "a", kFp1),
                         MakeFinding("role/weight-type", Severity::kError, "b", kFp1),
                         MakeFinding("op/x", Severity::kWarn, "w", kFp2),
                         MakeFinding("scope/note", Severity::kInfo, "", kFp3)})};
  GatePolicy p;
  p.waivers = {MakeWaiver({"op/x"}, "warned")};
  ApplyGate(p, before);
  const Baseline b = MakeBaseline(before, dir.string());
  ASSERT_EQ(b.models.size(), 1u);
  EXPECT_EQ(b.models[0].file, "models/det.onnx");  // relative to the baseline's directory
  ASSERT_EQ(b.models[0].findings.size(), 1u);      // waived and info findings are left out
  EXPECT_EQ(b.models[0].findings[0].fingerprint, kFp1);
  EXPECT_EQ(b.models[0].findings[0].count, 2u);
  EXPECT_EQ(b.models[0].findings[0].node, "a");
  // The file format round-trips and is stable.
  const auto j = BaselineToJson(b);
  EXPECT_EQ(j.begin().key(), "schema");
  const Baseline back = BaselineFromJson(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(BaselineToJson(back).dump(), j.dump());

  // Next run: the two known findings (other node names, same fingerprint), plus a third of the
  // same fingerprint and a new one.
  std::vector<Report> after = {
      MakeReport(model, {MakeFinding("role/weight-type", Severity::kError, "a2", kFp1),
                         MakeFinding("role/weight-type", Severity::kError, "b2", kFp1),
                         MakeFinding("role/weight-type", Severity::kError, "c2", kFp1),
                         MakeFinding("op/new", Severity::kError, "n", "4444444444444444")})};
  GatePolicy gp;
  gp.active = true;
  gp.baseline = back;
  gp.baseline_path = (dir / "axqc-baseline.json").string();
  gp.baseline_dir = dir.string();
  ApplyGate(gp, after);
  const auto& f = after[0].findings;
  EXPECT_EQ(f[0].state, FindingState::kBaselined);
  EXPECT_EQ(f[1].state, FindingState::kBaselined);
  EXPECT_EQ(f[2].state, FindingState::kCounted);  // a third one is new
  EXPECT_EQ(f[3].state, FindingState::kCounted);
  EXPECT_EQ(after[0].gate.counted.errors, 2u);
  EXPECT_EQ(after[0].gate.baselined.errors, 2u);
  EXPECT_EQ(after[0].gate.verdict, GateVerdict::kFail);

  // Only the known ones: pass. One fixed since: reported as such.
  std::vector<Report> fixed = {
      MakeReport(model, {MakeFinding("role/weight-type", Severity::kError, "a3", kFp1)})};
  ApplyGate(gp, fixed);
  EXPECT_EQ(fixed[0].gate.verdict, GateVerdict::kPass);
  EXPECT_EQ(fixed[0].gate.baseline_fixed, 1u);
  EXPECT_EQ(ExitCodeFor(fixed[0].gate), 0);

  // A model known under another path is found by its sha256.
  std::vector<Report> moved = {
      MakeReport("elsewhere.onnx", {MakeFinding("role/weight-type", Severity::kError, "a", kFp1)})};
  moved[0].model.sha256 = before[0].model.sha256;
  ApplyGate(gp, moved);
  EXPECT_EQ(moved[0].findings[0].state, FindingState::kBaselined);

  // Entries of models not in the run are kept when the baseline is rewritten.
  std::vector<Report> other = {MakeReport("other.onnx", {})};
  const Baseline merged = MakeBaseline(other, dir.string(), &back);
  ASSERT_EQ(merged.models.size(), 2u);
  EXPECT_EQ(merged.models[0].file, "models/det.onnx");
  EXPECT_EQ(merged.models[1].file, "other.onnx");
  fs::remove_all(dir);
}

TEST(Gate, MalformedBaselinesAreRefused) {
  EXPECT_THROW(BaselineFromJson(nlohmann::json::parse(R"({"schema": "axqc.report/v1"})")),
               std::invalid_argument);
  EXPECT_THROW(
      BaselineFromJson(nlohmann::json::parse(
          R"({"schema": "axqc.baseline/v1", "models": [{"file": "a", "findings": [{}]}]})")),
      std::invalid_argument);
  EXPECT_THROW(BaselineFromJson(nlohmann::json::parse(R"({"schema": "axqc.baseline/v1",
      "models": [{"file": "a", "findings": [{"fingerprint": "x", "count": 0}]}]})")),
               std::invalid_argument);
}

TEST(Gate, JsonCarriesStatesAndTheGateOnlyWhenActive) {
  std::vector<Report> reports = {
      MakeReport("m.onnx", {MakeFinding("role/weight-type", Severity::kError, "c", kFp1),
                            MakeFinding("op/x", Severity::kWarn, "d", kFp2)})};
  ApplyGate(GatePolicy{}, reports);
  const auto plain = ReportToJson(reports[0]);
  EXPECT_FALSE(plain.contains("gate"));
  EXPECT_FALSE(plain["findings"][0].contains("state"));
  EXPECT_EQ(plain["findings"][0]["fingerprint"], kFp1);

  GatePolicy p;
  p.active = true;
  p.config = "axqc.toml";
  p.waivers = {MakeWaiver({"op/*"}, "why")};
  ApplyGate(p, reports);
  const auto j = ReportToJson(reports[0]);
  EXPECT_EQ(j["gate"]["verdict"], "fail");
  EXPECT_EQ(j["gate"]["config"], "axqc.toml");
  EXPECT_TRUE(j["gate"]["baseline"].is_null());
  EXPECT_EQ(j["gate"]["counted"]["errors"], 1);
  EXPECT_EQ(j["gate"]["waived"]["warnings"], 1);
  EXPECT_EQ(j["findings"][0]["state"], "counted");
  EXPECT_EQ(j["findings"][1]["state"], "waived");
  EXPECT_EQ(j["findings"][1]["waiver"]["reason"], "why");
  EXPECT_EQ(j["findings"][1]["waiver"]["source"], "axqc.toml:3");
  // The fast writer gives the same bytes as the tree; the reader gets the states back.
  EXPECT_EQ(RenderJson(reports[0]), j.dump(2) + "\n");
  const Report back = ReportFromJson(j);
  EXPECT_EQ(back.findings[1].state, FindingState::kWaived);
  EXPECT_EQ(back.findings[1].fingerprint, kFp2);
  EXPECT_EQ(back.gate.waived.warnings, 1u);
  EXPECT_EQ(RenderJson(back), RenderJson(reports[0]));
}

}  // namespace
}  // namespace axqc::test
