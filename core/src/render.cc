#include "axqc/render.h"

#include <nlohmann/json.hpp>
#include <sstream>

namespace axqc {

using nlohmann::json;

namespace {

const char* Color(Severity s) {
  switch (s) {
    case Severity::kError: return "\033[31m";
    case Severity::kWarn: return "\033[33m";
    case Severity::kInfo: return "\033[36m";
  }
  return "";
}

Severity SeverityFromName(const std::string& s) {
  if (s == "warn") return Severity::kWarn;
  if (s == "info") return Severity::kInfo;
  return Severity::kError;
}

Verdict VerdictFromName(const std::string& s) {
  if (s == "conformant") return Verdict::kConformant;
  if (s == "not_applicable") return Verdict::kNotApplicable;
  return Verdict::kNonConformant;
}

json FindingToJson(const Finding& f) {
  json values = json::array();
  for (const auto& [k, v] : f.values) values.push_back({{"name", k}, {"value", v}});
  return {{"rule", f.rule},       {"severity", SeverityName(f.severity)},
          {"section", f.section}, {"message", f.message},
          {"op_type", f.op_type}, {"nodes", f.nodes},
          {"tensors", f.tensors}, {"values", values}};
}

Finding FindingFromJson(const json& j) {
  Finding f;
  f.rule = j.at("rule").get<std::string>();
  f.severity = SeverityFromName(j.at("severity").get<std::string>());
  f.section = j.value("section", "");
  f.message = j.value("message", "");
  f.op_type = j.value("op_type", "");
  f.nodes = j.value("nodes", std::vector<std::string>{});
  f.tensors = j.value("tensors", std::vector<std::string>{});
  for (const auto& v : j.value("values", json::array())) {
    f.values.emplace_back(v.at("name").get<std::string>(), v.at("value").get<std::string>());
  }
  return f;
}

}  // namespace

json ReportToJson(const Report& r) {
  json groups = json::array();
  for (const auto& g : r.groups) {
    json first = json::array();
    for (const auto& f : g.first) first.push_back(FindingToJson(f));
    groups.push_back({{"rule", g.rule},
                      {"severity", SeverityName(g.severity)},
                      {"section", g.section},
                      {"summary", g.summary},
                      {"count", g.count},
                      {"first", first}});
  }
  json findings = json::array();
  for (const auto& f : r.findings) {
    auto j = FindingToJson(f);
    j["group"] = f.group_key;
    findings.push_back(std::move(j));
  }
  json opsets = json::array();
  for (const auto& [d, v] : r.model.opsets) opsets.push_back({{"domain", d}, {"version", v}});
  json units = json::array();
  for (const auto& u : r.units) {
    units.push_back({{"id", u.id},
                     {"kind", u.kind},
                     {"op_type", u.op_type},
                     {"mode", u.mode},
                     {"nodes", u.nodes},
                     {"input_qdq", u.input_qdq},
                     {"output_qdq", u.output_qdq}});
  }
  const auto& s = r.summary;
  return {{"schema", Report::kSchema},
          {"tool", {{"name", "axqc"}, {"version", r.tool_version}}},
          {"rule_set_version", r.rule_set_version},
          {"verdict", VerdictName(r.verdict)},
          {"check_value", r.check_value},
          {"model",
           {{"file", r.model.file},
            {"sha256", r.model.sha256},
            {"size_bytes", r.model.size_bytes},
            {"ir_version", r.model.ir_version},
            {"opsets", opsets},
            {"producer_name", r.model.producer_name},
            {"producer_version", r.model.producer_version},
            {"node_count", r.model.node_count},
            {"q_count", r.model.q_count},
            {"dq_count", r.model.dq_count},
            {"initializer_count", r.model.initializer_count}}},
          {"summary",
           {{"errors", s.errors},
            {"warnings", s.warnings},
            {"infos", s.infos},
            {"by_rule", s.by_rule},
            {"units_by_kind", s.units_by_kind},
            {"units_by_op", s.units_by_op},
            {"errors_by_op", s.errors_by_op},
            {"qdq_edges", s.qdq_edges},
            {"owned_qdq_edges", s.owned_qdq_edges}}},
          {"groups", groups},
          {"findings", findings},
          {"units", units}};
}

std::string RenderJson(const Report& r, int indent) { return ReportToJson(r).dump(indent) + "\n"; }

Report ReportFromJson(const json& j) {
  Report r;
  r.verdict = VerdictFromName(j.at("verdict").get<std::string>());
  r.check_value = j.value("check_value", false);
  r.tool_version = j.at("tool").value("version", "");
  r.rule_set_version = j.value("rule_set_version", "");
  const auto& m = j.at("model");
  r.model.file = m.value("file", "");
  r.model.sha256 = m.value("sha256", "");
  r.model.size_bytes = m.value("size_bytes", std::uint64_t{0});
  r.model.ir_version = m.value("ir_version", std::int64_t{0});
  for (const auto& o : m.value("opsets", json::array())) {
    r.model.opsets.emplace_back(o.at("domain").get<std::string>(), o.at("version").get<std::int64_t>());
  }
  r.model.producer_name = m.value("producer_name", "");
  r.model.producer_version = m.value("producer_version", "");
  r.model.node_count = m.value("node_count", std::size_t{0});
  r.model.q_count = m.value("q_count", std::size_t{0});
  r.model.dq_count = m.value("dq_count", std::size_t{0});
  r.model.initializer_count = m.value("initializer_count", std::size_t{0});
  for (const auto& f : j.value("findings", json::array())) {
    auto finding = FindingFromJson(f);
    finding.group_key = f.value("group", "");
    r.findings.push_back(std::move(finding));
  }
  for (const auto& u : j.value("units", json::array())) {
    UnitInfo info;
    info.id = u.value("id", std::size_t{0});
    info.kind = u.value("kind", "");
    info.op_type = u.value("op_type", "");
    info.mode = u.value("mode", "");
    info.nodes = u.value("nodes", std::vector<std::string>{});
    info.input_qdq = u.value("input_qdq", std::vector<std::string>{});
    info.output_qdq = u.value("output_qdq", std::vector<std::string>{});
    r.units.push_back(std::move(info));
  }
  const auto& s = j.at("summary");
  r.summary.units_by_kind = s.value("units_by_kind", std::map<std::string, std::size_t>{});
  r.summary.units_by_op = s.value("units_by_op", std::map<std::string, std::size_t>{});
  r.summary.qdq_edges = s.value("qdq_edges", std::size_t{0});
  r.summary.owned_qdq_edges = s.value("owned_qdq_edges", std::size_t{0});
  const auto verdict = r.verdict;
  std::size_t max_locations = 5;
  for (const auto& g : j.value("groups", json::array())) {
    max_locations = std::max(max_locations, g.value("first", json::array()).size());
  }
  FinalizeReport(r, max_locations);
  r.verdict = verdict;
  return r;
}

std::string RenderText(const Report& r, const TextOptions& o) {
  std::ostringstream os;
  auto c = [&](const char* code) { return o.color ? code : ""; };
  const char* reset = o.color ? "\033[0m" : "";
  const char* bold = o.color ? "\033[1m" : "";
  const char* vcol = r.verdict == Verdict::kConformant      ? "\033[32m"
                     : r.verdict == Verdict::kNotApplicable ? "\033[36m"
                                                            : "\033[31m";
  std::string verdict(VerdictName(r.verdict));
  for (auto& ch : verdict) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  const auto& s = r.summary;
  os << bold << r.model.file << reset << ": " << c(vcol) << bold << verdict << reset << "  ("
     << s.errors << (s.errors == 1 ? " error, " : " errors, ") << s.warnings
     << (s.warnings == 1 ? " warning, " : " warnings, ") << s.infos << " info)"
     << (r.check_value ? "  [check_value on]" : "") << "\n";
  os << "  sha256 " << r.model.sha256 << "  IR " << r.model.ir_version << "  opsets";
  for (const auto& [d, v] : r.model.opsets) os << " " << (d.empty() ? "ai.onnx" : d) << ":" << v;
  if (!r.model.producer_name.empty()) {
    os << "  producer " << r.model.producer_name << " " << r.model.producer_version;
  }
  os << "\n  nodes " << r.model.node_count << " (Q " << r.model.q_count << ", DQ "
     << r.model.dq_count << "), Q/DQ edges " << s.qdq_edges << " (owned " << s.owned_qdq_edges
     << ")\n";
  for (const auto& g : r.groups) {
    const auto* info = FindRule(g.rule);
    os << "\n" << c(Color(g.severity)) << SeverityName(g.severity) << reset << " " << bold << g.rule
       << reset << " [" << g.section << "]";
    if (g.count > 1) os << " x" << g.count;
    os << ": " << g.summary << "\n";
    for (const auto& f : g.first) {
      os << "    - " << f.message;
      if (!f.nodes.empty()) os << "  (node " << f.nodes.front() << ")";
      os << "\n";
    }
    if (g.count > g.first.size()) os << "    ... and " << (g.count - g.first.size()) << " more\n";
    if (info && g.severity != Severity::kInfo) os << "    fix: " << info->fix << "\n";
  }
  if (!s.units_by_kind.empty()) {
    os << "\n  units:";
    for (const auto& [k, n] : s.units_by_kind) os << " " << k << "=" << n;
    os << "\n";
  }
  if (!s.errors_by_op.empty()) {
    os << "  errors by op:";
    for (const auto& [k, n] : s.errors_by_op) os << " " << k << "=" << n;
    os << "\n";
  }
  if (o.explain) {
    os << "\n  ownership map:\n";
    for (const auto& u : r.units) {
      os << "    #" << u.id << " " << u.kind << " " << u.op_type;
      if (!u.mode.empty()) os << " (" << u.mode << ")";
      os << ": ";
      for (std::size_t i = 0; i < u.nodes.size(); ++i) os << (i ? ", " : "") << u.nodes[i];
      if (!u.input_qdq.empty()) {
        os << "  in:";
        for (const auto& n : u.input_qdq) os << " " << n;
      }
      if (!u.output_qdq.empty()) {
        os << "  out:";
        for (const auto& n : u.output_qdq) os << " " << n;
      }
      os << "\n";
    }
  }
  return os.str();
}

json RulesToJson() {
  json rules = json::array();
  for (const auto& r : Rules()) {
    rules.push_back({{"id", r.id},
                     {"severity", SeverityName(r.severity)},
                     {"check_value", r.check_value},
                     {"section", r.section},
                     {"summary", r.summary},
                     {"fix", r.fix}});
  }
  return {{"rule_set_version", kRuleSetVersion}, {"rules", rules}};
}

}  // namespace axqc
