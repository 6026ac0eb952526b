// CI report formats over the one report model: JUnit XML, SARIF 2.1.0, GitHub workflow commands.
#include <openssl/evp.h>

#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "axqc/catalog.h"
#include "axqc/checker.h"
#include "axqc/render.h"

namespace axqc {

using nlohmann::json;

namespace {

// ---- XML

std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 allows only tab, newline and carriage return below 0x20.
        if (u < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += "?";
        } else {
          out.push_back(c);
        }
    }
  }
  return out;
}

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
  return line;
}

struct RuleResult {
  std::vector<const Finding*> errors;
  std::vector<const Finding*> others;  // warn and info
};

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

std::string Sha256Hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(static_cast<std::size_t>(len) * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 0xf]);
  }
  return out;
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

json SarifRule(const RuleInfo& r) {
  std::string help = std::string(r.summary) + "\nSpec section " + std::string(r.section) +
                     ".\nFix: " + std::string(r.fix);
  if (r.check_value) help += "\n(Value check: runs with -c / check_value.)";
  std::string markdown = "**" + std::string(r.summary) + "** (ax quant spec section " +
                         std::string(r.section) + ")\n\n**Fix:** " + std::string(r.fix) +
                         "\n\nRule page: `" + RuleDocPath(r.id) + "`";
  return {{"id", r.id},
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
  return o.str();
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
      (f.severity == Severity::kError ? rr.errors : rr.others).push_back(&f);
    }
    std::ostringstream cases;
    std::size_t tests = 0;
    std::size_t failures = 0;
    std::size_t skipped = 0;
    auto emit = [&](std::string_view id, const RuleResult* rr, bool cv) {
      ++tests;
      cases << "    <testcase" << Attr("classname", "axqc." + r.model.file) << Attr("name", id)
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
           << Attr("value", r.check_value ? "true" : "false") << "/>\n"
           << "    </properties>\n"
           << cases.str() << "  </testsuite>\n";
    total_tests += tests;
    total_failures += failures;
    total_skipped += skipped;
  }
  for (const ModelError& e : errors) {
    ++total_tests;
    suites << "  <testsuite" << Attr("name", e.file) << Attr("tests", std::size_t{1})
           << Attr("failures", std::size_t{0}) << Attr("errors", std::size_t{1})
           << Attr("skipped", std::size_t{0}) << Attr("time", "0") << ">\n"
           << "    <testcase" << Attr("classname", "axqc." + e.file) << Attr("name", "input")
           << Attr("time", "0") << ">\n"
           << "      <error" << Attr("message", e.message) << Attr("type", "input_error") << ">"
           << XmlEscape(e.message) << "</error>\n"
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

json SarifJson(std::span<const Report> reports, std::span<const ModelError> errors) {
  json rules = json::array();
  std::map<std::string, std::size_t, std::less<>> rule_index;
  for (const RuleInfo& r : Rules()) {
    rule_index.emplace(std::string(r.id), rules.size());
    rules.push_back(SarifRule(r));
  }
  json results = json::array();
  json artifacts = json::array();
  for (const Report& r : reports) {
    const std::size_t artifact_index = artifacts.size();
    artifacts.push_back({{"location", {{"uri", r.model.file}}},
                         {"length", r.model.size_bytes},
                         {"hashes", {{"sha-256", r.model.sha256}}}});
    std::map<std::string, int> seen;  // fingerprint base -> occurrences so far
    for (const Finding& f : r.findings) {
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
      // Stable across runs and independent of the message wording and values: rule, model file,
      // name-free group key, node and tensor names; plus an occurrence index for duplicates.
      std::string base = f.rule + "\n" + r.model.file + "\n" + f.group_key + "\n";
      for (const auto& n : f.nodes) base += n + ",";
      base += "\n";
      for (const auto& t : f.tensors) base += t + ",";
      const int occurrence = seen[base]++;
      const std::string fingerprint = Sha256Hex(base) + ":" + std::to_string(occurrence + 1);

      json location = {
          {"physicalLocation",
           {{"artifactLocation", {{"uri", r.model.file}, {"index", artifact_index}}}}}};
      if (!f.nodes.empty()) {
        location["logicalLocations"] =
            json::array({{{"name", f.nodes.front()},
                          {"fullyQualifiedName", r.model.file + "#" + f.nodes.front()},
                          {"kind", "object"}}});
      }
      json values = json::object();
      for (const auto& [k, v] : f.values) values[k] = v;
      results.push_back({{"ruleId", f.rule},
                         {"ruleIndex", rule_index.at(f.rule)},
                         {"level", SarifLevel(f.severity)},
                         {"message", {{"text", f.message}}},
                         {"locations", json::array({location})},
                         {"partialFingerprints", {{"axqcFinding/v1", fingerprint}}},
                         {"properties",
                          {{"severity", SeverityName(f.severity)},
                           {"section", f.section},
                           {"op_type", f.op_type},
                           {"nodes", f.nodes},
                           {"tensors", f.tensors},
                           {"values", values},
                           {"model_sha256", r.model.sha256},
                           {"verdict", VerdictName(r.verdict)}}}});
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

std::string RenderSarif(std::span<const Report> reports, std::span<const ModelError> errors) {
  return SarifJson(reports, errors).dump(2) + "\n";
}

std::string RenderGithub(std::span<const Report> reports, std::span<const ModelError> errors) {
  std::ostringstream out;
  for (const Report& r : reports) {
    for (const FindingGroup& g : r.groups) {
      for (const Finding& f : g.first) {
        out << "::" << GhCommand(f.severity) << " file=" << GhProperty(r.model.file)
            << ",title=" << GhProperty(f.rule + " (spec " + f.section + ")")
            << "::" << GhData(f.message) << "\n";
      }
      if (g.count > g.first.size()) {
        out << "::" << GhCommand(g.severity) << " file=" << GhProperty(r.model.file)
            << ",title=" << GhProperty(g.rule + " (spec " + g.section + ")") << "::"
            << GhData("... and " + std::to_string(g.count - g.first.size()) + " more: " + g.summary)
            << "\n";
      }
    }
    out << SummaryLine(r) << "\n";
  }
  for (const ModelError& e : errors) {
    out << "::error file=" << GhProperty(e.file) << ",title=axqc input error::" << GhData(e.message)
        << "\n";
    out << "axqc: " << e.file << ": error (" << e.message << ")\n";
  }
  return out.str();
}

}  // namespace axqc
