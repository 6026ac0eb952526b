// CI report formats (core/src/render_ci.cc): JUnit XML, SARIF 2.1.0, GitHub workflow commands,
// and the golden text report of a small model (tests/golden/).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "axqc/gate.h"
#include "axqc/render.h"
#include "check_helpers.h"

namespace axqc::test {
namespace {

// ---- A minimal XML parser: enough to prove well-formedness and walk the JUnit tree.

struct XmlNode {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::vector<std::unique_ptr<XmlNode>> children;
  std::string text;

  std::vector<const XmlNode*> All(const std::string& n) const {
    std::vector<const XmlNode*> out;
    for (const auto& c : children) {
      if (c->name == n) out.push_back(c.get());
    }
    return out;
  }
  const XmlNode* First(const std::string& n) const {
    auto v = All(n);
    return v.empty() ? nullptr : v.front();
  }
  std::size_t Num(const std::string& a) const { return std::stoul(attrs.at(a)); }
};

std::string Unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out.push_back(s[i]);
      continue;
    }
    const auto semi = s.find(';', i);
    if (semi == std::string::npos) throw std::runtime_error("bad entity");
    const std::string e = s.substr(i + 1, semi - i - 1);
    static const std::map<std::string, char> kEntities = {
        {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
    auto it = kEntities.find(e);
    if (it == kEntities.end()) throw std::runtime_error("unknown entity &" + e + ";");
    out.push_back(it->second);
    i = semi;
  }
  return out;
}

// Throws std::runtime_error when `xml` is not well-formed (one root, matching tags, quoted
// attributes, known entities, no '<' in text).
std::unique_ptr<XmlNode> ParseXml(const std::string& xml) {
  std::size_t i = 0;
  auto skip_ws = [&] {
    while (i < xml.size() && std::isspace(static_cast<unsigned char>(xml[i])) != 0) ++i;
  };
  if (xml.rfind("<?xml", 0) == 0) i = xml.find("?>") + 2;
  auto root = std::make_unique<XmlNode>();  // document node
  std::vector<XmlNode*> stack{root.get()};
  while (i < xml.size()) {
    if (xml[i] != '<') {
      const auto lt = xml.find('<', i);
      const std::string text = xml.substr(i, lt == std::string::npos ? std::string::npos : lt - i);
      if (stack.size() == 1 && text.find_first_not_of(" \n\r\t") != std::string::npos) {
        throw std::runtime_error("text outside the root element");
      }
      stack.back()->text += Unescape(text);
      i = lt == std::string::npos ? xml.size() : lt;
      continue;
    }
    if (xml.compare(i, 2, "</") == 0) {
      const auto gt = xml.find('>', i);
      const std::string name = xml.substr(i + 2, gt - i - 2);
      if (stack.size() < 2 || stack.back()->name != name) {
        throw std::runtime_error("mismatched </" + name + ">");
      }
      stack.pop_back();
      i = gt + 1;
      continue;
    }
    ++i;
    auto node = std::make_unique<XmlNode>();
    while (i < xml.size() && (std::isalnum(static_cast<unsigned char>(xml[i])) != 0 ||
                              xml[i] == '-' || xml[i] == '_' || xml[i] == ':')) {
      node->name.push_back(xml[i++]);
    }
    if (node->name.empty()) throw std::runtime_error("empty tag name");
    bool self_closing = false;
    for (;;) {
      skip_ws();
      if (i >= xml.size()) throw std::runtime_error("unterminated tag");
      if (xml.compare(i, 2, "/>") == 0) {
        self_closing = true;
        i += 2;
        break;
      }
      if (xml[i] == '>') {
        ++i;
        break;
      }
      const auto eq = xml.find('=', i);
      const std::string key = xml.substr(i, eq - i);
      if (eq == std::string::npos || xml[eq + 1] != '"') throw std::runtime_error("bad attribute");
      const auto close = xml.find('"', eq + 2);
      const std::string raw = xml.substr(eq + 2, close - eq - 2);
      if (raw.find('<') != std::string::npos) throw std::runtime_error("'<' in attribute");
      if (!node->attrs.emplace(key, Unescape(raw)).second) {
        throw std::runtime_error("duplicate attribute " + key);
      }
      i = close + 1;
    }
    if (stack.size() == 1 && !stack.back()->children.empty()) {
      throw std::runtime_error("more than one root element");
    }
    XmlNode* raw = node.get();
    stack.back()->children.push_back(std::move(node));
    if (!self_closing) stack.push_back(raw);
  }
  if (stack.size() != 1) throw std::runtime_error("unclosed <" + stack.back()->name + ">");
  if (root->children.size() != 1) throw std::runtime_error("no root element");
  return std::move(root->children.front());
}

TEST(RenderCiXml, ParserRejectsMalformedXml) {
  EXPECT_NO_THROW(ParseXml("<a x=\"1\"><b/>t&amp;</a>"));
  EXPECT_THROW(ParseXml("<a><b></a></b>"), std::runtime_error);
  EXPECT_THROW(ParseXml("<a>"), std::runtime_error);
  EXPECT_THROW(ParseXml("<a/><b/>"), std::runtime_error);
  EXPECT_THROW(ParseXml("<a x=\"1\" x=\"2\"/>"), std::runtime_error);
  EXPECT_THROW(ParseXml("<a>&nbsp;</a>"), std::runtime_error);
}

// ---- Reports used below.

// Conv with a per-tensor weight: role/weight-type (error).
Report BrokenReport(const std::string& file = "models/broken.onnx") {
  auto b = ConvModel({.w = QParams::S8(0.01f)});
  CheckOptions o;
  o.max_locations = 100;
  return CheckBytes(b.Serialize(), file, o);
}

Report CleanReport(const std::string& file = "models/clean.onnx") {
  return CheckBytes(ConvModel().Serialize(), file, CheckOptions{});
}

std::size_t CountErrors(const Report& r) {
  std::size_t n = 0;
  for (const auto& f : r.findings) n += f.severity == Severity::kError ? 1 : 0;
  return n;
}

TEST(RenderCi, JunitIsWellFormedWithOneTestcasePerRule) {
  const std::vector<Report> reports = {BrokenReport(), CleanReport()};
  ASSERT_EQ(reports[0].verdict, Verdict::kNonConformant) << Dump(reports[0]);
  ASSERT_EQ(reports[1].verdict, Verdict::kConformant) << Dump(reports[1]);
  const std::vector<ModelError> errors = {{"models/missing.onnx", "cannot open <file> & more"}};
  const std::string xml = RenderJunit(reports, errors);
  std::unique_ptr<XmlNode> root;
  ASSERT_NO_THROW(root = ParseXml(xml)) << xml;
  EXPECT_EQ(root->name, "testsuites");
  const auto suites = root->All("testsuite");
  ASSERT_EQ(suites.size(), 3u);

  const std::size_t n_rules = Rules().size();
  const XmlNode& broken = *suites[0];
  EXPECT_EQ(broken.attrs.at("name"), "models/broken.onnx");
  const auto cases = broken.All("testcase");
  EXPECT_EQ(cases.size(), n_rules);
  EXPECT_EQ(broken.Num("tests"), n_rules);
  // Every rule ID exactly once, in catalog order.
  for (std::size_t i = 0; i < n_rules; ++i) {
    EXPECT_EQ(cases[i]->attrs.at("name"), Rules()[i].id);
    EXPECT_EQ(cases[i]->attrs.at("classname"), "models/broken_onnx");  // no dot to split at
  }
  std::size_t failed_cases = 0;
  std::size_t failure_elements = 0;
  std::size_t skipped = 0;
  std::set<std::string> failed_rules;
  for (const XmlNode* c : cases) {
    const auto f = c->All("failure");
    failure_elements += f.size();
    if (!f.empty()) {
      ++failed_cases;
      failed_rules.insert(c->attrs.at("name"));
      EXPECT_EQ(f[0]->attrs.at("type"), c->attrs.at("name"));
    }
    if (c->First("skipped") != nullptr) ++skipped;
  }
  EXPECT_EQ(broken.Num("failures"), failed_cases);
  EXPECT_EQ(failure_elements, CountErrors(reports[0]));
  EXPECT_EQ(failed_rules.count("role/weight-type"), 1u);
  EXPECT_EQ(broken.Num("skipped"), skipped);
  // Without -c every value-check rule is skipped.
  std::size_t cv_rules = 0;
  for (const auto& r : Rules()) cv_rules += r.check_value ? 1 : 0;
  EXPECT_EQ(skipped, cv_rules);
  EXPECT_EQ(broken.Num("errors"), 0u);
  // Properties carry the verdict and hash.
  const XmlNode* props = broken.First("properties");
  ASSERT_NE(props, nullptr);
  std::map<std::string, std::string> p;
  for (const XmlNode* prop : props->All("property"))
    p[prop->attrs.at("name")] = prop->attrs.at("value");
  EXPECT_EQ(p["verdict"], "non_conformant");
  EXPECT_EQ(p["sha256"], reports[0].model.sha256);

  const XmlNode& clean = *suites[1];
  EXPECT_EQ(clean.Num("failures"), 0u);
  EXPECT_EQ(clean.Num("tests"), n_rules);

  const XmlNode& missing = *suites[2];
  EXPECT_EQ(missing.attrs.at("name"), "models/missing.onnx");
  EXPECT_EQ(missing.Num("errors"), 1u);
  const XmlNode* err = missing.First("testcase")->First("error");
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->attrs.at("message"), "cannot open <file> & more");
  EXPECT_EQ(err->attrs.at("type"), "input_error");
  EXPECT_EQ(missing.First("testcase")->attrs.at("name"), "input");

  EXPECT_EQ(root->Num("tests"), 2 * n_rules + 1);
  EXPECT_EQ(root->Num("failures"), failed_cases);
  EXPECT_EQ(root->Num("errors"), 1u);
}

// A server that could not be reached is not the model's fault: a "service" testcase with a
// service_error, not an input error of the model.
TEST(RenderCi, JunitNamesAServiceErrorApartFromAnInputError) {
  const std::vector<ModelError> errors = {
      {"models/a.v2.onnx", "cannot reach axqc-server at 127.0.0.1:1", /*input=*/false},
      {"models/junk.onnx", "not an ONNX model"}};
  const std::string xml = RenderJunit({}, errors);
  EXPECT_NE(xml.find("<testcase classname=\"models/a_v2_onnx\" name=\"service\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("type=\"service_error\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"models/junk_onnx\" name=\"input\""), std::string::npos)
      << xml;
  EXPECT_NE(xml.find("type=\"input_error\""), std::string::npos) << xml;
}

TEST(RenderCi, JunitWarnAndInfoGoToSystemOut) {
  Report r = CleanReport();
  Finding w;
  w.rule = "scope/no-quantized-edge";
  w.severity = Severity::kInfo;
  w.section = "2.1";
  w.message = "note <x>";
  r.findings.push_back(w);
  const auto root = ParseXml(RenderJunit(std::span<const Report>(&r, 1)));
  const XmlNode* suite = root->First("testsuite");
  bool found = false;
  for (const XmlNode* c : suite->All("testcase")) {
    if (c->attrs.at("name") != "scope/no-quantized-edge") continue;
    found = true;
    EXPECT_EQ(c->First("failure"), nullptr);
    ASSERT_NE(c->First("system-out"), nullptr);
    EXPECT_NE(
        c->First("system-out")->text.find("[info] scope/no-quantized-edge (spec 2.1): note <x>"),
        std::string::npos);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(suite->Num("failures"), 0u);
}

TEST(RenderCi, SarifHasRequiredFieldsRulesAndStableFingerprints) {
  const std::vector<Report> reports = {BrokenReport()};
  const nlohmann::json s = SarifJson(reports);
  EXPECT_EQ(s["version"], "2.1.0");
  EXPECT_EQ(s["$schema"], "https://json.schemastore.org/sarif-2.1.0.json");
  ASSERT_EQ(s["runs"].size(), 1u);
  const auto& run = s["runs"][0];
  const auto& driver = run["tool"]["driver"];
  EXPECT_EQ(driver["name"], "axqc");
  EXPECT_EQ(driver["version"], std::string(ToolVersion()));
  ASSERT_EQ(driver["rules"].size(), Rules().size());
  for (std::size_t i = 0; i < Rules().size(); ++i) {
    const auto& rule = driver["rules"][i];
    EXPECT_EQ(rule["id"], Rules()[i].id);
    EXPECT_EQ(rule["shortDescription"]["text"], Rules()[i].summary);
    EXPECT_NE(rule["help"]["text"].get<std::string>().find(std::string(Rules()[i].fix)),
              std::string::npos);
    EXPECT_FALSE(rule.contains("helpUri"));  // the default base is a path in a checkout
    EXPECT_TRUE(rule["defaultConfiguration"]["level"] == "error" ||
                rule["defaultConfiguration"]["level"] == "warning" ||
                rule["defaultConfiguration"]["level"] == "note");
  }
  const auto& results = run["results"];
  ASSERT_EQ(results.size(), reports[0].findings.size());
  bool weight_type = false;
  std::set<std::string> fingerprints;
  for (const auto& res : results) {
    const std::string id = res["ruleId"];
    const auto idx = res["ruleIndex"].get<std::size_t>();
    EXPECT_EQ(driver["rules"][idx]["id"], id);
    EXPECT_FALSE(res["message"]["text"].get<std::string>().empty());
    EXPECT_EQ(res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
              "models/broken.onnx");
    // GitHub code scanning places a result only with a startLine; the model has no lines.
    EXPECT_EQ(res["locations"][0]["physicalLocation"]["region"]["startLine"], 1);
    const std::string fp = res["partialFingerprints"]["axqcFingerprint/v1"].get<std::string>();
    fingerprints.insert(fp);
    // fingerprint:occurrence, the fingerprint being the finding's own.
    EXPECT_EQ(fp.substr(0, 16), res["properties"]["fingerprint"].get<std::string>());
    EXPECT_EQ(fp.substr(16, 1), ":");
    EXPECT_FALSE(res.contains("suppressions"));  // no gate, nothing waived
    EXPECT_FALSE(res.contains("baselineState"));
    if (id == "role/weight-type") {
      weight_type = true;
      EXPECT_EQ(res["level"], "error");
      EXPECT_EQ(res["locations"][0]["logicalLocations"][0]["name"], "w_dq");
    }
  }
  EXPECT_TRUE(weight_type);
  EXPECT_EQ(fingerprints.size(), results.size());  // unique
  // Stable: the same model checked again (another process, another time) fingerprints the same.
  const nlohmann::json again = SarifJson(std::vector<Report>{BrokenReport()});
  EXPECT_EQ(again["runs"][0]["results"], results);
  EXPECT_EQ(run["artifacts"][0]["hashes"]["sha-256"], reports[0].model.sha256);
  EXPECT_EQ(run["invocations"][0]["executionSuccessful"], true);
  // Input errors: tool notifications, execution not successful.
  const std::vector<ModelError> errors = {{"x.onnx", "not an ONNX model"}};
  const nlohmann::json e = SarifJson({}, errors);
  EXPECT_EQ(e["runs"][0]["invocations"][0]["executionSuccessful"], false);
  EXPECT_EQ(e["runs"][0]["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"],
            "not an ONNX model");
  EXPECT_EQ(nlohmann::json::parse(RenderSarif(reports)), s);
  // With the rule pages on a web server every rule links there.
  const nlohmann::json linked = SarifJson(reports, {}, "https://docs.example.com/axqc/rules/");
  for (const auto& rule : linked["runs"][0]["tool"]["driver"]["rules"]) {
    const std::string id = rule["id"];
    if (id != "role/weight-type") continue;
    EXPECT_EQ(rule["helpUri"], "https://docs.example.com/axqc/rules/role--weight-type.md");
  }
  EXPECT_EQ(linked["runs"][0]["tool"]["driver"]["rules"][0].count("helpUri"), 1u);
}

TEST(RenderCi, GithubWorkflowCommands) {
  Report r = BrokenReport("dir/a,b:c.onnx");
  Finding w;
  w.rule = "scope/no-quantized-edge";
  w.severity = Severity::kWarn;
  w.section = "2.1";
  w.message = "100% odd\nsecond line";
  r.groups.push_back({w.rule, w.severity, w.section, "odd", 3, {w}});
  r.summary.warnings = 1;
  const std::string out = RenderGithub(std::span<const Report>(&r, 1));
  EXPECT_NE(out.find("::error file=dir/a%2Cb%3Ac.onnx,title=role/weight-type (spec 4)::weight "),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("::warning file=dir/a%2Cb%3Ac.onnx,title=scope/no-quantized-edge (spec "
                     "2.1)::100%25 odd%0Asecond line\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("::warning file=dir/a%2Cb%3Ac.onnx,title=scope/no-quantized-edge (spec "
                     "2.1)::... and 2 more: odd\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("axqc: dir/a,b:c.onnx: non_conformant (2 errors, 1 warning, 0 infos"),
            std::string::npos)
      << out;
  const std::vector<ModelError> errors = {{"m.onnx", "bad"}};
  EXPECT_EQ(RenderGithub({}, errors),
            "::error file=m.onnx,title=axqc input error::bad\naxqc: m.onnx: error (bad)\n");
  // No verdict from the server: the annotation names the server, not the model file.
  const std::vector<ModelError> unjudged = {{"m.onnx", "cannot reach axqc-server at h:1", false}};
  EXPECT_EQ(RenderGithub({}, unjudged),
            "::error title=axqc no verdict from the server::cannot reach axqc-server at h:1\n"
            "axqc: m.onnx: no verdict (cannot reach axqc-server at h:1)\n");
}

// ---- The gate in the CI formats: a report with one waived, one baselined and one new error,
// plus a warning, and an unused waiver.

struct GatedRun {
  std::vector<Report> reports;
  std::vector<StaleWaiver> stale;
};

GatedRun Gated(Severity fail_on = Severity::kError) {
  Report r = BrokenReport("models/gated.onnx");
  const auto weight = std::find_if(r.findings.begin(), r.findings.end(),
                                   [](const Finding& f) { return f.rule == "role/weight-type"; });
  if (weight == r.findings.end()) {
    ADD_FAILURE() << "no role/weight-type finding\n" << Dump(r);
    return {};
  }
  const Finding proto = *weight;  // role/weight-type at w_dq
  r.findings.clear();
  for (const char* node : {"waived_dq", "known_dq", "new_dq"}) {
    Finding f = proto;
    f.nodes = {node, "conv"};
    f.message = std::string("weight of ") + node + " is per-tensor";
    f.fingerprint = std::string(node) == "known_dq" ? "aaaaaaaaaaaaaaaa" : proto.fingerprint;
    r.findings.push_back(f);
  }
  Finding warn = proto;
  warn.rule = "qdq/zero-point-value";
  warn.severity = Severity::kWarn;
  warn.nodes = {"x_dq"};
  warn.message = "zero point <odd>";
  warn.fingerprint = "bbbbbbbbbbbbbbbb";
  r.findings.push_back(warn);
  FinalizeReport(r, 5);
  GatePolicy p;
  p.active = true;
  p.fail_on = fail_on;
  p.config = "axqc.toml";
  Waiver w;
  w.rules = {"role/weight-type"};
  w.nodes = {"waived_dq"};
  w.reason = "vendor export";
  w.file = "axqc.toml";
  w.line = 4;
  Waiver unused;
  unused.rules = {"op/*"};
  unused.reason = "old";
  unused.file = "axqc.toml";
  unused.line = 9;
  p.waivers = {w, unused};
  Baseline b;
  b.models.push_back({"models/gated.onnx",
                      "",
                      {{"aaaaaaaaaaaaaaaa", "role/weight-type", "error", 1, "known_dq", ""}}});
  p.baseline = b;
  p.baseline_path = "axqc-baseline.json";
  GatedRun run;
  run.reports.push_back(std::move(r));
  run.stale = ApplyGate(p, run.reports);
  return run;
}

TEST(RenderCiGate, StatesAreWhatTheTestExpects) {
  const auto run = Gated();
  const auto& f = run.reports[0].findings;
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].state, FindingState::kWaived);
  EXPECT_EQ(f[1].state, FindingState::kBaselined);
  EXPECT_EQ(f[2].state, FindingState::kCounted);
  EXPECT_EQ(f[3].state, FindingState::kCounted);
  ASSERT_EQ(run.stale.size(), 1u);
  EXPECT_EQ(run.reports[0].gate.verdict, GateVerdict::kFail);
}

TEST(RenderCiGate, JunitFailsOnlyOnFindingsThatCount) {
  for (const Severity fail_on : {Severity::kError, Severity::kWarn}) {
    const auto run = Gated(fail_on);
    const auto root = ParseXml(RenderJunit(run.reports));
    const XmlNode* suite = root->First("testsuite");
    std::map<std::string, const XmlNode*> cases;
    for (const XmlNode* c : suite->All("testcase")) cases[c->attrs.at("name")] = c;
    const XmlNode* weight = cases.at("role/weight-type");
    ASSERT_EQ(weight->All("failure").size(), 1u);  // the new one only
    EXPECT_NE(weight->First("failure")->text.find("new_dq"), std::string::npos);
    const std::string out = weight->First("system-out")->text;
    EXPECT_NE(out.find("[waived: vendor export (axqc.toml:4)]"), std::string::npos) << out;
    EXPECT_NE(out.find("known_dq"), std::string::npos);
    EXPECT_NE(out.find("[baseline]"), std::string::npos);
    const XmlNode* zp = cases.at("qdq/zero-point-value");
    const XmlNode* stale = cases.at("axqc/stale-waivers");
    if (fail_on == Severity::kWarn) {
      EXPECT_EQ(zp->All("failure").size(), 1u);
      EXPECT_EQ(stale->All("failure").size(), 1u);
      EXPECT_EQ(suite->Num("failures"), 3u);
    } else {
      EXPECT_EQ(zp->All("failure").size(), 0u);
      EXPECT_EQ(stale->All("failure").size(), 0u);
      EXPECT_NE(stale->First("system-out")->text.find("axqc.toml:9"), std::string::npos);
      EXPECT_EQ(suite->Num("failures"), 1u);
    }
  }
}

TEST(RenderCiGate, SarifSuppressesWaivedFindingsAndMarksBaselineStates) {
  const auto run = Gated();
  const auto s = SarifJson(run.reports);
  const auto& results = s["runs"][0]["results"];
  ASSERT_EQ(results.size(), 4u);
  // Waived: an external, accepted suppression with the reason and the waiver's place.
  const auto& sup = results[0]["suppressions"];
  ASSERT_EQ(sup.size(), 1u);
  EXPECT_EQ(sup[0]["kind"], "external");
  EXPECT_EQ(sup[0]["status"], "accepted");
  EXPECT_EQ(sup[0]["justification"], "vendor export");
  EXPECT_EQ(sup[0]["location"]["physicalLocation"]["artifactLocation"]["uri"], "axqc.toml");
  EXPECT_EQ(sup[0]["location"]["physicalLocation"]["region"]["startLine"], 4);
  EXPECT_FALSE(results[0].contains("baselineState"));
  EXPECT_EQ(results[1]["baselineState"], "unchanged");
  EXPECT_EQ(results[2]["baselineState"], "new");
  EXPECT_FALSE(results[1].contains("suppressions"));
  // The node as logical location; fingerprints unique per result.
  EXPECT_EQ(results[2]["locations"][0]["logicalLocations"][0]["name"], "new_dq");
  std::set<std::string> fps;
  for (const auto& r : results) fps.insert(r["partialFingerprints"]["axqcFingerprint/v1"]);
  EXPECT_EQ(fps.size(), results.size());
  EXPECT_EQ(results[0]["partialFingerprints"]["axqcFingerprint/v1"].get<std::string>().substr(16),
            ":1");
  EXPECT_EQ(results[2]["partialFingerprints"]["axqcFingerprint/v1"].get<std::string>().substr(16),
            ":2");  // same fingerprint as the waived one, second occurrence
  // The unused waiver: a configuration notification at its line.
  const auto& notes = s["runs"][0]["invocations"][0]["toolConfigurationNotifications"];
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0]["descriptor"]["id"], "axqc/stale-waiver");
  EXPECT_EQ(notes[0]["level"], "warning");
  EXPECT_EQ(notes[0]["locations"][0]["physicalLocation"]["region"]["startLine"], 9);
}

TEST(RenderCiGate, GithubAnnotatesOnlyFindingsThatCount) {
  const auto run = Gated();
  const std::string out = RenderGithub(run.reports);
  EXPECT_EQ(out.find("waived_dq"), std::string::npos) << out;
  EXPECT_EQ(out.find("known_dq"), std::string::npos) << out;
  EXPECT_NE(out.find("::error file=models/gated.onnx,title=role/weight-type (spec 4)::weight of "
                     "new_dq is per-tensor"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("::warning file=models/gated.onnx,title=qdq/zero-point-value"),
            std::string::npos);
  EXPECT_NE(out.find("::warning file=axqc.toml,line=9,title=axqc stale waiver::waiver "
                     "(rule=op/*) matched no finding"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("gate fail (fail on error: new 1 error, 1 warning; 1 waived, 1 in the "
                     "baseline, 1 stale waiver(s))"),
            std::string::npos)
      << out;
}

TEST(RenderCiGate, GitlabCodeQuality) {
  const auto run = Gated();
  const std::vector<ModelError> errors = {{"models/broken file.onnx", "not an ONNX model"}};
  const auto issues = GitlabJson(run.reports, errors);
  ASSERT_TRUE(issues.is_array());
  // 3 findings (the waived one is left out), the stale waiver, the input error.
  ASSERT_EQ(issues.size(), 5u) << issues.dump(2);
  std::set<std::string> fingerprints;
  for (const auto& i : issues) {
    for (const char* key : {"description", "check_name", "fingerprint", "severity"}) {
      EXPECT_TRUE(i.contains(key) && i[key].is_string() && !i[key].get<std::string>().empty())
          << key;
    }
    EXPECT_TRUE(i["location"]["path"].is_string());
    EXPECT_GE(i["location"]["lines"]["begin"].get<int>(), 1);
    fingerprints.insert(i["fingerprint"]);
  }
  EXPECT_EQ(fingerprints.size(), issues.size());  // unique per issue
  EXPECT_EQ(issues[0]["check_name"], "role/weight-type");
  EXPECT_EQ(issues[0]["severity"], "major");
  EXPECT_EQ(issues[0]["location"]["path"], "models/gated.onnx");
  EXPECT_EQ(issues[0]["location"]["lines"]["begin"], 1);
  EXPECT_NE(issues[0]["description"].get<std::string>().find("known_dq"), std::string::npos);
  EXPECT_NE(issues[0]["content"]["body"].get<std::string>().find("in the baseline"),
            std::string::npos);
  EXPECT_EQ(issues[2]["check_name"], "qdq/zero-point-value");
  EXPECT_EQ(issues[2]["severity"], "minor");
  EXPECT_EQ(issues[3]["check_name"], "axqc/stale-waiver");
  EXPECT_EQ(issues[3]["location"]["path"], "axqc.toml");
  EXPECT_EQ(issues[3]["location"]["lines"]["begin"], 9);
  EXPECT_EQ(issues[4]["check_name"], "axqc/input-error");
  EXPECT_EQ(issues[4]["severity"], "blocker");
  // Stable across runs.
  EXPECT_EQ(GitlabJson(Gated().reports, errors), issues);
  EXPECT_EQ(nlohmann::json::parse(RenderGitlab(run.reports, errors)), issues);
}

TEST(RenderCiGate, TextMarksWaivedAndBaselinedFindings) {
  const auto run = Gated();
  const std::string text = RenderText(run.reports[0]);
  EXPECT_NE(text.find("(node waived_dq)  [waived: vendor export (axqc.toml:4)]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("(node known_dq)  [baseline]"), std::string::npos) << text;
  EXPECT_NE(text.find("[1 new, 1 waived, 1 in the baseline]"), std::string::npos) << text;
  EXPECT_NE(text.find("gate: FAIL  (fail on error; new 1 error, 1 warning; waived 1; in the "
                      "baseline 1; 1 stale waiver)"),
            std::string::npos)
      << text;
}

// ---- Golden text report of a small model (fixed file name, so the report is byte-stable).

TEST(GoldenText, SmallNonConformantModel) {
  const Report r = BrokenReport("golden_small.onnx");
  const std::string text = RenderText(r, TextOptions{});
  const std::filesystem::path golden =
      std::filesystem::path(AXQC_SOURCE_DIR) / "tests/golden/small_non_conformant.txt";
  if (std::getenv("AXQC_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden, std::ios::binary) << text;
  }
  std::ifstream in(golden, std::ios::binary);
  ASSERT_TRUE(in) << "missing " << golden << " (run with AXQC_UPDATE_GOLDEN=1)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(text, want.str()) << "update with AXQC_UPDATE_GOLDEN=1 after checking the diff";
  EXPECT_NE(text.find("golden_small.onnx: NON_CONFORMANT"), std::string::npos) << text;
  EXPECT_NE(text.find("role/weight-type"), std::string::npos) << text;
}

TEST(GoldenText, SmallConformantModel) {
  const Report r = CleanReport("golden_clean.onnx");
  const std::string text = RenderText(r, TextOptions{});
  const std::filesystem::path golden =
      std::filesystem::path(AXQC_SOURCE_DIR) / "tests/golden/small_conformant.txt";
  if (std::getenv("AXQC_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden, std::ios::binary) << text;
  }
  std::ifstream in(golden, std::ios::binary);
  ASSERT_TRUE(in) << "missing " << golden << " (run with AXQC_UPDATE_GOLDEN=1)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(text, want.str());
  EXPECT_EQ(text.rfind("golden_clean.onnx: CONFORMANT  (0 errors, 0 warnings, 0 info)", 0), 0u)
      << text;
}

}  // namespace
}  // namespace axqc::test
