// CI report formats over the one report model: JUnit XML, SARIF 2.1.0, GitHub workflow commands,
// GitLab Code Quality. Each honours the gate (Report::gate, Finding::state) when one was applied.

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/catalog.h"
#include "axqc/checker.h"
#include "axqc/gate.h"
#include "axqc/render.h"
#include "axqc/sha256.h"
#include "xml_escape.h"

namespace axqc {

using nlohmann::json;

namespace {

// ---- XML

using detail::XmlEscape;

std::string Attr(std::string_view name, std::string_view value) {
  std::string out(" ");
  out += name;
  out += "=\"";
  out += XmlEscape(value);
  out += "\"";
  return out;
}

std::string Attr(std::string_view name, std::size_t value) {
  return Attr(name, std::to_string(value));
}

// One line per finding for failure bodies and system-out.
std::string FindingLine(const Finding& f) {
  std::string line = "[" + std::string(SeverityName(f.severity)) + "] " + f.rule + " (spec " +
                     f.section + "): " + f.message;
  if (!f.nodes.empty()) {
    line += " [nodes:";
    for (const auto& n : f.nodes) line += " " + n;
    line += "]";
  }
  if (!f.values.empty()) {
    line += " [values:";
    for (const auto& [k, v] : f.values) line += " " + k + "=" + v;
    line += "]";
  }
  if (f.state == FindingState::kWaived) {
    line += " [waived: " + f.waiver_reason + " (" + f.waiver_source + ")]";
  } else if (f.state == FindingState::kBaselined) {
    line += " [baseline]";
  }
  return line;
}

// True when the finding fails the gate (counted, at or above its threshold). Without a gate every
// finding is counted and the threshold is error: error findings fail, as the verdict says.
bool Fails(const Finding& f, const GateResult& g) {
  return f.state == FindingState::kCounted &&
         static_cast<int>(f.severity) <= static_cast<int>(g.fail_on);
}

struct RuleResult {
  std::vector<const Finding*> errors;  // failing the gate
  std::vector<const Finding*> others;  // the rest (warn and info; waived and baselined findings)
};

// "axqc.toml:12" -> ("axqc.toml", 12); line 0 when there is none.
std::pair<std::string, int> SplitSource(const std::string& source) {
  const auto colon = source.rfind(':');
  if (colon == std::string::npos || colon + 1 == source.size() ||
      source.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
    return {source, 0};
  }
  return {source.substr(0, colon), std::stoi(source.substr(colon + 1))};
}

// The stale waivers of all reports, once each, in order of appearance.
std::vector<StaleWaiver> StaleWaivers(std::span<const Report> reports) {
  std::vector<StaleWaiver> out;
  std::set<std::string> seen;
  for (const Report& r : reports) {
    for (const auto& w : r.gate.stale_waivers) {
      if (seen.insert(w.source).second) out.push_back(w);
    }
  }
  return out;
}

// Whether stale waivers fail the gate of any report (--fail-on warn).
bool StaleWaiversFail(std::span<const Report> reports) {
  for (const Report& r : reports) {
    if (r.gate.fail_on == Severity::kWarn && !r.gate.stale_waivers.empty()) return true;
  }
  return false;
}

// ---- SARIF

std::string SarifLevel(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarn:
      return "warning";
    case Severity::kInfo:
      return "note";
  }
  return "none";
}

// Docs page of a rule: "qdq/scale-value" -> "docs/rules/qdq--scale-value.md".
std::string RuleDocPath(std::string_view id) {
  std::string page(id);
  for (std::size_t p = page.find('/'); p != std::string::npos; p = page.find('/', p + 2)) {
    page.replace(p, 1, "--");
  }
  return "docs/rules/" + page + ".md";
}

// "qdq/scale-value" -> "QdqScaleValue" (SARIF reportingDescriptor.name).
std::string RuleName(std::string_view id) {
  std::string out;
  bool upper = true;
  for (const char c : id) {
    if (c == '/' || c == '-' || c == '_' || c == '.') {
      upper = true;
      continue;
    }
    out.push_back(upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c);
    upper = false;
  }
  return out;
}

json SarifRule(const RuleInfo& r, std::string_view rules_url) {
  std::string help = std::string(r.summary) + "\nSpec section " + std::string(r.section) +
                     ".\nFix: " + std::string(r.fix);
  if (r.check_value) help += "\n(Value check: runs with -c / check_value.)";
  std::string markdown = "**" + std::string(r.summary) + "** (ax quant spec section " +
                         std::string(r.section) + ")\n\n**Fix:** " + std::string(r.fix) +
                         "\n\nRule page: `" + RuleDocPath(r.id) + "`";
  json rule = {
      {"id", r.id},
      {"name", RuleName(r.id)},
      {"shortDescription", {{"text", r.summary}}},
      {"fullDescription",
       {{"text", std::string(r.summary) + " (spec " + std::string(r.section) + ")"}}},
      {"help", {{"text", help}, {"markdown", markdown}}},
      {"defaultConfiguration", {{"level", SarifLevel(r.severity)}}},
      {"properties",
       {{"tags", json::array({"ax-quant-spec", r.check_value ? "value-check" : "structural"})},
        {"section", r.section},
        {"check_value", r.check_value}}}};
  // helpUri must be an absolute URI; the default base is a path in a checkout of the repository.
  if (rules_url.starts_with("https://") || rules_url.starts_with("http://")) {
    rule["helpUri"] = RuleUrl(rules_url, r.id);
  }
  return rule;
}

// ---- GitHub workflow commands

std::string GhData(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '%':
        out += "%25";
        break;
      case '\r':
        out += "%0D";
        break;
      case '\n':
        out += "%0A";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string GhProperty(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '%':
        out += "%25";
        break;
      case '\r':
        out += "%0D";
        break;
      case '\n':
        out += "%0A";
        break;
      case ':':
        out += "%3A";
        break;
      case ',':
        out += "%2C";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string GhCommand(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarn:
      return "warning";
    case Severity::kInfo:
      return "notice";
  }
  return "notice";
}

std::string SummaryLine(const Report& r) {
  std::ostringstream o;
  o << "axqc: " << r.model.file << ": " << VerdictName(r.verdict) << " (" << r.summary.errors
    << " error" << (r.summary.errors == 1 ? "" : "s") << ", " << r.summary.warnings << " warning"
    << (r.summary.warnings == 1 ? "" : "s") << ", " << r.summary.infos << " info"
    << (r.summary.infos == 1 ? "" : "s") << "; rule set " << r.rule_set_version << ")";
  if (r.gate.active) {
    const auto& g = r.gate;
    o << "; gate " << GateVerdictName(g.verdict) << " (fail on " << SeverityName(g.fail_on) << ": "
      << (g.baseline.empty() ? "" : "new ") << g.counted.errors << " error"
      << (g.counted.errors == 1 ? "" : "s") << ", " << g.counted.warnings << " warning"
      << (g.counted.warnings == 1 ? "" : "s") << "; " << g.waived.total() << " waived";
    if (!g.baseline.empty()) o << ", " << g.baselined.total() << " in the baseline";
    if (!g.stale_waivers.empty()) o << ", " << g.stale_waivers.size() << " stale waiver(s)";
    o << ")";
  }
  return o.str();
}

std::string HexDigest(std::string_view bytes, std::size_t hex_chars) {
  return Sha256Hex(bytes).substr(0, hex_chars);
}

// A testcase's classname: CI viewers (Jenkins, GitLab) read "a.b.C" as package a.b, class C, so a
// model path keeps no dot ("models/det.v2.onnx" -> "models/det_v2_onnx"); the testsuite's name is
// the path as given.
std::string JunitClass(std::string_view file) {
  std::string out(file);
  std::replace(out.begin(), out.end(), '.', '_');
  return out;
}

}  // namespace

std::string RenderJunit(std::span<const Report> reports, std::span<const ModelError> errors) {
  const auto rules = Rules();
  std::size_t total_tests = 0;
  std::size_t total_failures = 0;
  std::size_t total_skipped = 0;
  std::ostringstream suites;
  for (const Report& r : reports) {
    std::map<std::string, RuleResult, std::less<>> by_rule;
    for (const Finding& f : r.findings) {
      auto& rr = by_rule[f.rule];
      (Fails(f, r.gate) ? rr.errors : rr.others).push_back(&f);
    }
    std::ostringstream cases;
    std::size_t tests = 0;
    std::size_t failures = 0;
    std::size_t skipped = 0;
    auto emit = [&](std::string_view id, const RuleResult* rr, bool cv) {
      ++tests;
      cases << "    <testcase" << Attr("classname", JunitClass(r.model.file)) << Attr("name", id)
            << Attr("time", "0");
      const bool has_errors = rr != nullptr && !rr->errors.empty();
      const bool has_others = rr != nullptr && !rr->others.empty();
      const bool skip = !has_errors && !has_others &&
                        ((cv && !r.check_value) || r.verdict == Verdict::kNotApplicable);
      if (!has_errors && !has_others && !skip) {
        cases << "/>\n";
        return;
      }
      cases << ">\n";
      if (skip) {
        ++skipped;
        cases << "      <skipped"
              << Attr("message", r.verdict == Verdict::kNotApplicable
                                     ? "not_applicable: no Q/DQ on an operator or pattern "
                                       "data path"
                                     : "value check not run (run with -c / --check-value)")
              << "/>\n";
      }
      if (has_errors) {
        ++failures;
        for (const Finding* f : rr->errors) {
          cases << "      <failure" << Attr("message", f->message) << Attr("type", f->rule) << ">"
                << XmlEscape(FindingLine(*f)) << "</failure>\n";
        }
      }
      if (has_others) {
        cases << "      <system-out>";
        for (const Finding* f : rr->others) cases << XmlEscape(FindingLine(*f)) << "\n";
        cases << "</system-out>\n";
      }
      cases << "    </testcase>\n";
    };
    for (const RuleInfo& info : rules) {
      auto it = by_rule.find(info.id);
      emit(info.id, it == by_rule.end() ? nullptr : &it->second, info.check_value);
      if (it != by_rule.end()) by_rule.erase(it);
    }
    // Rules unknown to this catalog (a report from a newer server): still one testcase each.
    for (const auto& [id, rr] : by_rule) emit(id, &rr, false);
    // Stale waivers of the configuration: a testcase of their own, failing with --fail-on warn.
    if (!r.gate.stale_waivers.empty()) {
      ++tests;
      const bool fail = r.gate.fail_on == Severity::kWarn;
      cases << "    <testcase" << Attr("classname", JunitClass(r.model.file))
            << Attr("name", "axqc/stale-waivers") << Attr("time", "0") << ">\n";
      std::string lines;
      for (const auto& w : r.gate.stale_waivers) lines += w.source + ": " + w.Message() + "\n";
      if (fail) {
        ++failures;
        cases << "      <failure"
              << Attr("message", std::to_string(r.gate.stale_waivers.size()) + " stale waiver(s)")
              << Attr("type", "axqc/stale-waivers") << ">" << XmlEscape(lines) << "</failure>\n";
      } else {
        cases << "      <system-out>" << XmlEscape(lines) << "</system-out>\n";
      }
      cases << "    </testcase>\n";
    }

    suites << "  <testsuite" << Attr("name", r.model.file) << Attr("tests", tests)
           << Attr("failures", failures) << Attr("errors", std::size_t{0})
           << Attr("skipped", skipped) << Attr("time", "0") << ">\n"
           << "    <properties>\n"
           << "      <property" << Attr("name", "verdict") << Attr("value", VerdictName(r.verdict))
           << "/>\n"
           << "      <property" << Attr("name", "sha256") << Attr("value", r.model.sha256) << "/>\n"
           << "      <property" << Attr("name", "rule_set_version")
           << Attr("value", r.rule_set_version) << "/>\n"
           << "      <property" << Attr("name", "tool_version") << Attr("value", r.tool_version)
           << "/>\n"
           << "      <property" << Attr("name", "check_value")
           << Attr("value", r.check_value ? "true" : "false") << "/>\n";
    if (r.gate.active) {
      suites << "      <property" << Attr("name", "gate")
             << Attr("value", GateVerdictName(r.gate.verdict)) << "/>\n"
             << "      <property" << Attr("name", "waived") << Attr("value", r.gate.waived.total())
             << "/>\n"
             << "      <property" << Attr("name", "baselined")
             << Attr("value", r.gate.baselined.total()) << "/>\n";
    }
    suites << "    </properties>\n" << cases.str() << "  </testsuite>\n";
    total_tests += tests;
    total_failures += failures;
    total_skipped += skipped;
  }
  for (const ModelError& e : errors) {
    ++total_tests;
    suites << "  <testsuite" << Attr("name", e.file) << Attr("tests", std::size_t{1})
           << Attr("failures", std::size_t{0}) << Attr("errors", std::size_t{1})
           << Attr("skipped", std::size_t{0}) << Attr("time", "0") << ">\n"
           << "    <testcase" << Attr("classname", JunitClass(e.file))
           << Attr("name", e.input ? "input" : "service") << Attr("time", "0") << ">\n"
           << "      <error" << Attr("message", e.message)
           << Attr("type", e.input ? "input_error" : "service_error") << ">" << XmlEscape(e.message)
           << "</error>\n"
           << "    </testcase>\n"
           << "  </testsuite>\n";
  }
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites" << Attr("name", "axqc") << Attr("tests", total_tests)
      << Attr("failures", total_failures) << Attr("errors", errors.size())
      << Attr("skipped", total_skipped) << Attr("time", "0") << ">\n"
      << suites.str() << "</testsuites>\n";
  return out.str();
}

json SarifJson(std::span<const Report> reports, std::span<const ModelError> errors,
               std::string_view rules_url) {
  json rules = json::array();
  std::map<std::string, std::size_t, std::less<>> rule_index;
  for (const RuleInfo& r : Rules()) {
    rule_index.emplace(std::string(r.id), rules.size());
    rules.push_back(SarifRule(r, rules_url));
  }
  json results = json::array();
  json artifacts = json::array();
  for (const Report& r : reports) {
    const std::size_t artifact_index = artifacts.size();
    artifacts.push_back({{"location", {{"uri", r.model.file}}},
                         {"length", r.model.size_bytes},
                         {"hashes", {{"sha-256", r.model.sha256}}}});
    const auto occurrences = FingerprintOccurrences(r);
    const bool with_baseline = r.gate.active && !r.gate.baseline.empty();
    std::map<std::string_view, std::size_t> by_id;  // finding id -> index, for cause links
    for (std::size_t i = 0; i < r.findings.size(); ++i) {
      if (!r.findings[i].id.empty()) by_id.emplace(r.findings[i].id, i);
    }
    for (std::size_t i = 0; i < r.findings.size(); ++i) {
      const Finding& f = r.findings[i];
      if (!rule_index.contains(f.rule)) {
        // A rule this client does not know (report from a newer server): describe it minimally.
        rule_index.emplace(f.rule, rules.size());
        rules.push_back(
            {{"id", f.rule},
             {"name", RuleName(f.rule)},
             {"shortDescription", {{"text", f.group_key}}},
             {"help", {{"text", "See the server's rule catalog (axqc rules --server)."}}},
             {"defaultConfiguration", {{"level", SarifLevel(f.severity)}}}});
      }
      // The structural fingerprint (rule, kind, graph around the node; no names) and its
      // occurrence number among identical ones: stable across runs, message wording, node and
      // tensor renames and file renames.
      const std::string fingerprint = FingerprintOf(f);
      json location = {{"physicalLocation",
                        {{"artifactLocation", {{"uri", r.model.file}, {"index", artifact_index}}},
                         {"region", {{"startLine", 1}}}}}};
      if (!f.nodes.empty()) {
        location["logicalLocations"] =
            json::array({{{"name", f.nodes.front()},
                          {"fullyQualifiedName", r.model.file + "#" + f.nodes.front()},
                          {"kind", "object"}}});
      }
      json values = json::object();
      for (const auto& [k, v] : f.values) values[k] = v;
      json result = {{"ruleId", f.rule},
                     {"ruleIndex", rule_index.at(f.rule)},
                     {"level", SarifLevel(f.severity)},
                     {"message", {{"text", f.message}}},
                     {"locations", json::array({location})},
                     {"partialFingerprints",
                      {{"axqcFingerprint/v1", fingerprint + ":" + std::to_string(occurrences[i])}}},
                     {"properties",
                      {{"severity", SeverityName(f.severity)},
                       {"section", f.section},
                       {"op_type", f.op_type},
                       {"nodes", f.nodes},
                       {"tensors", f.tensors},
                       {"values", values},
                       {"fingerprint", fingerprint},
                       {"model_sha256", r.model.sha256},
                       {"verdict", VerdictName(r.verdict)}}}};
      if (r.gate.active) result["properties"]["state"] = FindingStateName(f.state);
      if (!f.id.empty()) result["properties"]["id"] = f.id;
      if (!f.cause.empty()) {
        // The finding that causes this one: a property and a related location at its node.
        result["properties"]["cause"] = f.cause;
        if (auto it = by_id.find(f.cause); it != by_id.end()) {
          const Finding& k = r.findings[it->second];
          json related = {
              {"id", 1},
              {"message", {{"text", "caused by " + k.rule + ": " + k.message}}},
              {"physicalLocation",
               {{"artifactLocation", {{"uri", r.model.file}, {"index", artifact_index}}}}}};
          if (!k.nodes.empty()) {
            related["logicalLocations"] =
                json::array({{{"name", k.nodes.front()},
                              {"fullyQualifiedName", r.model.file + "#" + k.nodes.front()},
                              {"kind", "object"}}});
          }
          result["relatedLocations"] = json::array({related});
        }
      }
      if (!f.hint.id.empty()) {
        result["properties"]["hint"] = {
            {"id", f.hint.id},
            {"title", f.hint.title},
            {"text", f.hint.text},
            {"rewrite", f.hint.rewrite.empty() ? json(nullptr) : json(f.hint.rewrite)}};
      }
      if (f.state == FindingState::kWaived) {
        // A waiver of the configuration: an external suppression, accepted, with its reason.
        const auto [file, line] = SplitSource(f.waiver_source);
        json where = {{"artifactLocation", {{"uri", file}}}};
        if (line > 0) where["region"] = {{"startLine", line}};
        result["suppressions"] = json::array({{{"kind", "external"},
                                               {"status", "accepted"},
                                               {"justification", f.waiver_reason},
                                               {"location", {{"physicalLocation", where}}}}});
      } else if (with_baseline) {
        result["baselineState"] = f.state == FindingState::kBaselined ? "unchanged" : "new";
      }
      results.push_back(std::move(result));
    }
  }
  json notifications = json::array();
  for (const ModelError& e : errors) {
    notifications.push_back(
        {{"level", "error"},
         {"message", {{"text", e.message}}},
         {"locations",
          json::array({{{"physicalLocation", {{"artifactLocation", {{"uri", e.file}}}}}}})}});
  }
  json invocation = {{"executionSuccessful", errors.empty()}};
  if (!notifications.empty()) invocation["toolExecutionNotifications"] = notifications;
  json config_notes = json::array();
  const bool stale_fails = StaleWaiversFail(reports);
  for (const auto& w : StaleWaivers(reports)) {
    json where = {{"artifactLocation", {{"uri", w.file}}}};
    if (w.line > 0) where["region"] = {{"startLine", w.line}};
    config_notes.push_back({{"level", stale_fails ? "error" : "warning"},
                            {"descriptor", {{"id", "axqc/stale-waiver"}}},
                            {"message", {{"text", w.Message()}}},
                            {"locations", json::array({{{"physicalLocation", where}}})}});
  }
  if (!config_notes.empty()) invocation["toolConfigurationNotifications"] = config_notes;
  json run = {{"tool",
               {{"driver",
                 {{"name", "axqc"},
                  {"fullName", "axqc conformance checker (ax quant spec)"},
                  {"version", std::string(ToolVersion())},
                  {"semanticVersion", std::string(ToolVersion())},
                  {"properties", {{"rule_set_version", kRuleSetVersion}}},
                  {"rules", rules}}}}},
              {"automationDetails", {{"id", "axqc/"}}},
              {"invocations", json::array({invocation})},
              {"artifacts", artifacts},
              {"columnKind", "unicodeCodePoints"},
              {"results", results}};
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs", json::array({run})}};
}

std::string RenderSarif(std::span<const Report> reports, std::span<const ModelError> errors,
                        std::string_view rules_url) {
  return SarifJson(reports, errors, rules_url).dump(2) + "\n";
}

std::string RenderGithub(std::span<const Report> reports, std::span<const ModelError> errors) {
  std::ostringstream out;
  for (const Report& r : reports) {
    // Only the findings that count are annotated: waived and baselined ones are known.
    std::map<std::pair<std::string, std::string>, std::size_t> accepted;
    for (const Finding& f : r.findings) {
      if (f.state != FindingState::kCounted) ++accepted[{f.rule, f.group_key}];
    }
    for (const FindingGroup& g : r.groups) {
      std::size_t shown = 0;
      for (const Finding& f : g.first) {
        if (f.state != FindingState::kCounted) continue;
        ++shown;
        out << "::" << GhCommand(f.severity) << " file=" << GhProperty(r.model.file)
            << ",title=" << GhProperty(f.rule + " (spec " + f.section + ")")
            << "::" << GhData(f.message) << "\n";
      }
      const std::size_t known = accepted[{g.rule, g.summary}];
      const std::size_t total = g.count > known ? g.count - known : 0;
      if (total > shown) {
        out << "::" << GhCommand(g.severity) << " file=" << GhProperty(r.model.file)
            << ",title=" << GhProperty(g.rule + " (spec " + g.section + ")")
            << "::" << GhData("... and " + std::to_string(total - shown) + " more: " + g.summary)
            << "\n";
      }
    }
    out << SummaryLine(r) << "\n";
  }
  const bool stale_fails = StaleWaiversFail(reports);
  for (const auto& w : StaleWaivers(reports)) {
    out << "::" << (stale_fails ? "error" : "warning") << " file=" << GhProperty(w.file);
    if (w.line > 0) out << ",line=" << w.line;
    out << ",title=axqc stale waiver::" << GhData(w.Message()) << "\n";
  }
  for (const ModelError& e : errors) {
    if (!e.input) {  // no verdict from the server: the model was not judged
      out << "::error title=axqc no verdict from the server::" << GhData(e.message) << "\n";
      out << "axqc: " << e.file << ": no verdict (" << e.message << ")\n";
      continue;
    }
    out << "::error file=" << GhProperty(e.file) << ",title=axqc input error::" << GhData(e.message)
        << "\n";
    out << "axqc: " << e.file << ": error (" << e.message << ")\n";
  }
  return out.str();
}

json GitlabJson(std::span<const Report> reports, std::span<const ModelError> errors) {
  json issues = json::array();
  auto issue = [&](const std::string& check, const std::string& description,
                   const std::string& body, const char* severity, const std::string& path, int line,
                   const std::string& identity) {
    issues.push_back({{"type", "issue"},
                      {"engine_name", "axqc"},
                      {"check_name", check},
                      {"description", description},
                      {"content", {{"body", body}}},
                      {"categories", json::array({"Bug Risk"})},
                      {"severity", severity},
                      {"fingerprint", HexDigest(identity, 32)},
                      {"location", {{"path", path}, {"lines", {{"begin", std::max(line, 1)}}}}}});
  };
  for (const Report& r : reports) {
    const auto occurrences = FingerprintOccurrences(r);
    for (std::size_t i = 0; i < r.findings.size(); ++i) {
      const Finding& f = r.findings[i];
      if (f.state == FindingState::kWaived) continue;  // accepted in the configuration
      const char* severity = f.severity == Severity::kError  ? "major"
                             : f.severity == Severity::kWarn ? "minor"
                                                             : "info";
      std::string description = f.rule + ": " + f.message;
      if (!f.nodes.empty()) description += " (node " + f.nodes.front() + ")";
      std::string body =
          "**" + f.rule + "** (ax quant spec section " + f.section + ")\n\n" + f.message + "\n";
      if (!f.nodes.empty()) {
        body += "\nNodes:";
        for (const auto& n : f.nodes) body += " `" + n + "`";
        body += "\n";
      }
      if (!f.values.empty()) {
        body += "\nValues:";
        for (const auto& [k, v] : f.values) body += " `" + k + "=" + v + "`";
        body += "\n";
      }
      if (const auto* info = FindRule(f.rule))
        body += "\n**Fix:** " + std::string(info->fix) + "\n";
      if (f.state == FindingState::kBaselined) body += "\nKnown finding (in the baseline).\n";
      body += "\nFingerprint `" + FingerprintOf(f) + "`\n";
      issue(f.rule, description, body, severity, r.model.file, 1,
            r.model.file + "\n" + FingerprintOf(f) + ":" + std::to_string(occurrences[i]));
    }
  }
  const bool stale_fails = StaleWaiversFail(reports);
  for (const auto& w : StaleWaivers(reports)) {
    issue("axqc/stale-waiver", "axqc: " + w.Message(), w.Message() + "\n",
          stale_fails ? "major" : "minor", w.file, w.line, "stale-waiver\n" + w.source);
  }
  for (const ModelError& e : errors) {
    issue("axqc/input-error", "axqc could not check the model: " + e.message, e.message + "\n",
          "blocker", e.file, 1, "input-error\n" + e.file);
  }
  return issues;
}

std::string RenderGitlab(std::span<const Report> reports, std::span<const ModelError> errors) {
  return GitlabJson(reports, errors).dump(2) + "\n";
}

}  // namespace axqc
