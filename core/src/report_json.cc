// The report as JSON (render.h): ReportToJson / RenderJson (axqc.report/v1 objects, printed in a
// fixed field order), ReportFromJson (the inverse, for reports read back from the server, a
// baseline or the gate) and the rule catalog (RulesToJson). docs/report-schema.md.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "axqc/render.h"

namespace axqc {

using nlohmann::json;

namespace {

// The parsers invert the one name map of each enum (SeverityName, VerdictName, FindingStateName,
// GateVerdictName); an unknown name reads as the most severe value.
Severity SeverityFromName(const std::string& s) {
  for (Severity v : {Severity::kWarn, Severity::kInfo}) {
    if (s == SeverityName(v)) return v;
  }
  return Severity::kError;
}

Verdict VerdictFromName(const std::string& s) {
  for (Verdict v : {Verdict::kConformant, Verdict::kNotApplicable}) {
    if (s == VerdictName(v)) return v;
  }
  return Verdict::kNonConformant;
}

json HintToJson(const Hint& h) {
  if (h.id.empty()) return nullptr;
  return {{"id", h.id},
          {"title", h.title},
          {"text", h.text},
          {"rewrite", h.rewrite.empty() ? json(nullptr) : json(h.rewrite)}};
}

Hint HintFromJson(const json& j) {
  Hint h;
  if (!j.is_object()) return h;
  h.id = j.value("id", "");
  h.title = j.value("title", "");
  h.text = j.value("text", "");
  if (j.contains("rewrite") && j["rewrite"].is_string())
    h.rewrite = j["rewrite"].get<std::string>();
  return h;
}

json OptionalString(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// `gate`: the report went through a gate; each finding says how it counts.
json FindingToJson(const Finding& f, bool gate) {
  json values = json::array();
  for (const auto& [k, v] : f.values) values.push_back({{"name", k}, {"value", v}});
  json j = {{"rule", f.rule},
            {"severity", SeverityName(f.severity)},
            {"section", f.section},
            {"message", f.message},
            {"op_type", f.op_type},
            {"nodes", f.nodes},
            {"tensors", f.tensors},
            {"values", values},
            {"fingerprint", f.fingerprint},
            {"id", f.id},
            {"cause", OptionalString(f.cause)},
            {"hint", HintToJson(f.hint)}};
  if (gate) {
    j["state"] = FindingStateName(f.state);
    if (f.state == FindingState::kWaived) {
      j["waiver"] = {{"reason", f.waiver_reason}, {"source", f.waiver_source}};
    }
  }
  return j;
}

FindingState StateFromName(const std::string& s) {
  for (FindingState v : {FindingState::kWaived, FindingState::kBaselined}) {
    if (s == FindingStateName(v)) return v;
  }
  return FindingState::kCounted;
}

GateVerdict GateVerdictFromName(const std::string& s) {
  for (GateVerdict v : {GateVerdict::kPass, GateVerdict::kNotApplicable}) {
    if (s == GateVerdictName(v)) return v;
  }
  return GateVerdict::kFail;
}

json CountsToJson(const SeverityCounts& c) {
  return {{"errors", c.errors}, {"warnings", c.warnings}, {"infos", c.infos}};
}

SeverityCounts CountsFromJson(const json& j) {
  SeverityCounts c;
  c.errors = j.value("errors", std::size_t{0});
  c.warnings = j.value("warnings", std::size_t{0});
  c.infos = j.value("infos", std::size_t{0});
  return c;
}

json GateToJson(const GateResult& g) {
  json stale = json::array();
  for (const auto& w : g.stale_waivers) {
    stale.push_back({{"source", w.source},
                     {"file", w.file},
                     {"line", w.line},
                     {"status", w.status},
                     {"waiver", w.what},
                     {"reason", w.reason},
                     {"expires", w.expires.empty() ? json(nullptr) : json(w.expires)}});
  }
  return {{"verdict", GateVerdictName(g.verdict)},
          {"fail_on", SeverityName(g.fail_on)},
          {"config", g.config.empty() ? json(nullptr) : json(g.config)},
          {"baseline", g.baseline.empty() ? json(nullptr) : json(g.baseline)},
          {"counted", CountsToJson(g.counted)},
          {"waived", CountsToJson(g.waived)},
          {"baselined", CountsToJson(g.baselined)},
          {"baseline_fixed", g.baseline_fixed},
          {"stale_waivers", stale}};
}

GateResult GateFromJson(const json& j) {
  GateResult g;
  g.active = true;
  g.verdict = GateVerdictFromName(j.value("verdict", "fail"));
  g.fail_on = j.value("fail_on", "error") == "warn" ? Severity::kWarn : Severity::kError;
  if (j.contains("config") && j["config"].is_string()) g.config = j["config"].get<std::string>();
  if (j.contains("baseline") && j["baseline"].is_string()) {
    g.baseline = j["baseline"].get<std::string>();
  }
  g.counted = CountsFromJson(j.value("counted", json::object()));
  g.waived = CountsFromJson(j.value("waived", json::object()));
  g.baselined = CountsFromJson(j.value("baselined", json::object()));
  g.baseline_fixed = j.value("baseline_fixed", std::size_t{0});
  for (const auto& w : j.value("stale_waivers", json::array())) {
    StaleWaiver s;
    s.source = w.value("source", "");
    s.file = w.value("file", "");
    s.line = w.value("line", 0);
    s.status = w.value("status", "");
    s.what = w.value("waiver", "");
    s.reason = w.value("reason", "");
    if (w.contains("expires") && w["expires"].is_string())
      s.expires = w["expires"].get<std::string>();
    g.stale_waivers.push_back(std::move(s));
  }
  return g;
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
  f.fingerprint = j.value("fingerprint", "");
  f.id = j.value("id", "");
  if (j.contains("cause") && j["cause"].is_string()) f.cause = j["cause"].get<std::string>();
  if (j.contains("hint")) f.hint = HintFromJson(j["hint"]);
  f.state = StateFromName(j.value("state", "counted"));
  if (j.contains("waiver")) {
    f.waiver_reason = j["waiver"].value("reason", "");
    f.waiver_source = j["waiver"].value("source", "");
  }
  return f;
}

}  // namespace

json TargetsToJson(const Report& r) {
  json targets = json::array();
  for (const auto& t : r.targets) {
    json blocking = json::array();
    for (const auto& b : t.blocking)
      blocking.push_back({{"rule", b.rule}, {"op_type", b.op_type}, {"node", b.node}});
    targets.push_back({{"chip", t.chip},
                       {"name", t.name},
                       {"verdict", TargetVerdictName(t.verdict)},
                       {"errors", t.errors},
                       {"notes", t.notes},
                       {"blocking", blocking},
                       {"source", t.source},
                       {"doc_version", t.doc_version}});
  }
  return targets;
}

json ReportToJson(const Report& r) {
  json groups = json::array();
  for (const auto& g : r.groups) {
    json first = json::array();
    for (const auto& f : g.first) first.push_back(FindingToJson(f, r.gate.active));
    groups.push_back({{"rule", g.rule},
                      {"severity", SeverityName(g.severity)},
                      {"section", g.section},
                      {"summary", g.summary},
                      {"count", g.count},
                      {"first", first}});
  }
  json findings = json::array();
  for (const auto& f : r.findings) {
    auto j = FindingToJson(f, r.gate.active);
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
  json doc = {{"schema", Report::kSchema},
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
               {{"causes", s.causes},
                {"errors", s.errors},
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
  if (r.gate.active) doc["gate"] = GateToJson(r.gate);
  if (!r.targets.empty()) doc["targets"] = TargetsToJson(r);
  return doc;
}

namespace {

// Writes the arrays that grow with the model (findings, units) straight into the output, in
// exactly the layout nlohmann::json::dump produces for ReportToJson (sorted keys; every string
// goes through json's own serializer, so the escaping is the same). Building them as a json tree
// first dominated rendering on large models. `d` is the nesting depth of the value written.
class Writer {
 public:
  Writer(std::string& out, int indent) : out_(out), indent_(indent) {}

  void Str(std::string_view s) { out_ += json(s).dump(); }
  void Num(std::size_t n) { out_ += std::to_string(n); }
  void Null() { out_ += "null"; }
  // A string, or null when empty.
  void StrOrNull(std::string_view s) {
    if (s.empty()) {
      Null();
    } else {
      Str(s);
    }
  }
  // Opens an object or array at depth d.
  void Open(char c) { out_ += c; }
  void Close(char c, int d, bool empty) {
    if (!empty) Newline(d);
    out_ += c;
  }
  // Before the k-th member (k = 0, 1, ...) of a container at depth d.
  void Item(std::size_t k, int d) {
    if (k > 0) out_ += ',';
    Newline(d + 1);
  }
  void Key(std::string_view key, std::size_t k, int d) {
    Item(k, d);
    Str(key);
    out_ += indent_ < 0 ? ":" : ": ";
  }
  void Strings(const std::vector<std::string>& v, int d) {
    Open('[');
    for (std::size_t i = 0; i < v.size(); ++i) {
      Item(i, d);
      Str(v[i]);
    }
    Close(']', d, v.empty());
  }

 private:
  void Newline(int d) {
    if (indent_ < 0) return;
    out_ += '\n';
    out_.append(static_cast<std::size_t>(d * indent_), ' ');
  }
  std::string& out_;
  int indent_;
};

// `gate`: as FindingToJson.
void WriteFinding(Writer& w, const Finding& f, int d, bool gate) {
  std::size_t k = 0;
  w.Open('{');
  w.Key("cause", k++, d);
  w.StrOrNull(f.cause);
  w.Key("fingerprint", k++, d);
  w.Str(f.fingerprint);
  w.Key("group", k++, d);
  w.Str(f.group_key);
  w.Key("hint", k++, d);
  if (f.hint.id.empty()) {
    w.Null();
  } else {
    w.Open('{');
    w.Key("id", 0, d + 1);
    w.Str(f.hint.id);
    w.Key("rewrite", 1, d + 1);
    w.StrOrNull(f.hint.rewrite);
    w.Key("text", 2, d + 1);
    w.Str(f.hint.text);
    w.Key("title", 3, d + 1);
    w.Str(f.hint.title);
    w.Close('}', d + 1, false);
  }
  w.Key("id", k++, d);
  w.Str(f.id);
  w.Key("message", k++, d);
  w.Str(f.message);
  w.Key("nodes", k++, d);
  w.Strings(f.nodes, d + 1);
  w.Key("op_type", k++, d);
  w.Str(f.op_type);
  w.Key("rule", k++, d);
  w.Str(f.rule);
  w.Key("section", k++, d);
  w.Str(f.section);
  w.Key("severity", k++, d);
  w.Str(SeverityName(f.severity));
  if (gate) {
    w.Key("state", k++, d);
    w.Str(FindingStateName(f.state));
  }
  w.Key("tensors", k++, d);
  w.Strings(f.tensors, d + 1);
  w.Key("values", k++, d);
  w.Open('[');
  std::size_t v = 0;
  for (const auto& [name, value] : f.values) {
    w.Item(v++, d + 1);
    w.Open('{');
    w.Key("name", 0, d + 2);
    w.Str(name);
    w.Key("value", 1, d + 2);
    w.Str(value);
    w.Close('}', d + 2, false);
  }
  w.Close(']', d + 1, f.values.empty());
  if (gate && f.state == FindingState::kWaived) {
    w.Key("waiver", k++, d);
    w.Open('{');
    w.Key("reason", 0, d + 1);
    w.Str(f.waiver_reason);
    w.Key("source", 1, d + 1);
    w.Str(f.waiver_source);
    w.Close('}', d + 1, false);
  }
  w.Close('}', d, false);
}

void WriteUnit(Writer& w, const UnitInfo& u, int d) {
  w.Open('{');
  w.Key("id", 0, d);
  w.Num(u.id);
  w.Key("input_qdq", 1, d);
  w.Strings(u.input_qdq, d + 1);
  w.Key("kind", 2, d);
  w.Str(u.kind);
  w.Key("mode", 3, d);
  w.Str(u.mode);
  w.Key("nodes", 4, d);
  w.Strings(u.nodes, d + 1);
  w.Key("op_type", 5, d);
  w.Str(u.op_type);
  w.Key("output_qdq", 6, d);
  w.Strings(u.output_qdq, d + 1);
  w.Close('}', d, false);
}

template <typename T, typename Fn>
std::string WriteArray(const std::vector<T>& items, int indent, Fn write) {
  std::string out;
  Writer w(out, indent);
  w.Open('[');
  for (std::size_t i = 0; i < items.size(); ++i) {
    w.Item(i, 1);
    write(w, items[i], 2);
  }
  w.Close(']', 1, items.empty());
  return out;
}

// Replaces the string value of the top-level `key` (written as `"key": "placeholder"`) with
// `value`. Raw newlines never occur inside serialized strings, and no other member of the report
// has a string value under these keys, so with indentation the needle is unique; compact output
// has the same property for the key/value pair.
void Splice(std::string& doc, int indent, std::string_view key, const std::string& value) {
  std::string prefix = indent < 0 ? "" : "\n" + std::string(static_cast<std::size_t>(indent), ' ');
  prefix += "\"" + std::string(key) + "\"" + (indent < 0 ? ":" : ": ");
  const std::string needle = prefix + "\"axqc-" + std::string(key) + "-placeholder\"";
  const auto at = doc.find(needle);
  if (at != std::string::npos) doc.replace(at, needle.size(), prefix + value);
}

}  // namespace

// The document without its two big arrays comes from ReportToJson; the arrays are written
// directly and spliced in at their (sorted) places.
std::string RenderJson(const Report& r, int indent) {
  Report shell;
  shell.verdict = r.verdict;
  shell.check_value = r.check_value;
  shell.tool_version = r.tool_version;
  shell.rule_set_version = r.rule_set_version;
  shell.model = r.model;
  shell.summary = r.summary;
  shell.groups = r.groups;
  shell.gate = r.gate;
  shell.targets = r.targets;
  json doc = ReportToJson(shell);
  doc["findings"] = "axqc-findings-placeholder";
  doc["units"] = "axqc-units-placeholder";
  std::string out = doc.dump(indent);
  const bool gate = r.gate.active;
  Splice(out, indent, "findings",
         WriteArray(r.findings, indent,
                    [gate](Writer& w, const Finding& f, int d) { WriteFinding(w, f, d, gate); }));
  Splice(out, indent, "units", WriteArray(r.units, indent, WriteUnit));
  return out + "\n";
}

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
    r.model.opsets.emplace_back(o.at("domain").get<std::string>(),
                                o.at("version").get<std::int64_t>());
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
  if (j.contains("gate") && j["gate"].is_object()) r.gate = GateFromJson(j["gate"]);
  for (const auto& t : j.value("targets", json::array())) {
    TargetResult tr;
    tr.chip = t.value("chip", "");
    tr.name = t.value("name", "");
    tr.verdict = TargetVerdictFromName(t.value("verdict", ""));
    tr.errors = t.value("errors", std::size_t{0});
    tr.notes = t.value("notes", std::size_t{0});
    tr.source = t.value("source", "");
    tr.doc_version = t.value("doc_version", "");
    for (const auto& b : t.value("blocking", json::array())) {
      tr.blocking.push_back({b.value("rule", ""), b.value("op_type", ""), b.value("node", "")});
    }
    r.targets.push_back(std::move(tr));
  }
  return r;
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
