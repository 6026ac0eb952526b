#include "axqc/wire/report_proto.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <utility>

#include "axqc/render_graph.h"
#include "axqc/sha256.h"
#include "axqc/targets.h"

namespace axqc::wire {

namespace {

void FindingToProto(const Finding& f, v1::Finding* out) {
  out->set_rule(f.rule);
  out->set_severity(SeverityToProto(f.severity));
  out->set_section(f.section);
  out->set_message(f.message);
  out->set_group_key(f.group_key);
  out->set_op_type(f.op_type);
  for (const auto& n : f.nodes) out->add_nodes(n);
  for (const auto& t : f.tensors) out->add_tensors(t);
  for (const auto& [name, value] : f.values) {
    auto* v = out->add_values();
    v->set_name(name);
    v->set_value(value);
  }
  out->set_fingerprint(f.fingerprint);
  out->set_id(f.id);
  out->set_cause(f.cause);
  if (!f.hint.id.empty()) {
    auto* h = out->mutable_hint();
    h->set_id(f.hint.id);
    h->set_title(f.hint.title);
    h->set_text(f.hint.text);
    h->set_rewrite(f.hint.rewrite);
  }
}

Finding FindingFromProto(const v1::Finding& f) {
  Finding out;
  out.rule = f.rule();
  out.severity = SeverityFromProto(f.severity());
  out.section = f.section();
  out.message = f.message();
  out.group_key = f.group_key();
  out.op_type = f.op_type();
  out.nodes.assign(f.nodes().begin(), f.nodes().end());
  out.tensors.assign(f.tensors().begin(), f.tensors().end());
  for (const auto& v : f.values()) out.values.emplace_back(v.name(), v.value());
  out.fingerprint = f.fingerprint();
  out.id = f.id();
  out.cause = f.cause();
  if (f.has_hint()) {
    out.hint.id = f.hint().id();
    out.hint.title = f.hint().title();
    out.hint.text = f.hint().text();
    out.hint.rewrite = f.hint().rewrite();
  }
  return out;
}

template <typename ProtoMap>
void MapToProto(const std::map<std::string, std::size_t>& in, ProtoMap* out) {
  for (const auto& [k, v] : in) (*out)[k] = v;
}

template <typename ProtoMap>
std::map<std::string, std::size_t> MapFromProto(const ProtoMap& in) {
  std::map<std::string, std::size_t> out;
  for (const auto& [k, v] : in) out.emplace(k, static_cast<std::size_t>(v));
  return out;
}

}  // namespace

v1::Verdict VerdictToProto(Verdict v) {
  switch (v) {
    case Verdict::kConformant:
      return v1::VERDICT_CONFORMANT;
    case Verdict::kNonConformant:
      return v1::VERDICT_NON_CONFORMANT;
    case Verdict::kNotApplicable:
      return v1::VERDICT_NOT_APPLICABLE;
  }
  return v1::VERDICT_UNSPECIFIED;
}

Verdict VerdictFromProto(v1::Verdict v) {
  switch (v) {
    case v1::VERDICT_CONFORMANT:
      return Verdict::kConformant;
    case v1::VERDICT_NON_CONFORMANT:
      return Verdict::kNonConformant;
    case v1::VERDICT_NOT_APPLICABLE:
      return Verdict::kNotApplicable;
    default:
      throw std::invalid_argument("report: verdict unspecified or unknown");
  }
}

v1::Severity SeverityToProto(Severity s) {
  switch (s) {
    case Severity::kError:
      return v1::SEVERITY_ERROR;
    case Severity::kWarn:
      return v1::SEVERITY_WARN;
    case Severity::kInfo:
      return v1::SEVERITY_INFO;
  }
  return v1::SEVERITY_UNSPECIFIED;
}

Severity SeverityFromProto(v1::Severity s) {
  switch (s) {
    case v1::SEVERITY_ERROR:
      return Severity::kError;
    case v1::SEVERITY_WARN:
      return Severity::kWarn;
    case v1::SEVERITY_INFO:
      return Severity::kInfo;
    default:
      throw std::invalid_argument("report: severity unspecified or unknown");
  }
}

void ToProto(const Report& r, v1::Report* out) {
  out->Clear();
  out->set_schema(Report::kSchema);
  out->set_verdict(VerdictToProto(r.verdict));
  out->set_check_value(r.check_value);
  out->set_tool_version(r.tool_version);
  out->set_rule_set_version(r.rule_set_version);

  auto* m = out->mutable_model();
  m->set_file(r.model.file);
  m->set_sha256(r.model.sha256);
  m->set_size_bytes(r.model.size_bytes);
  m->set_ir_version(r.model.ir_version);
  for (const auto& [domain, version] : r.model.opsets) {
    auto* o = m->add_opsets();
    o->set_domain(domain);
    o->set_version(version);
  }
  m->set_producer_name(r.model.producer_name);
  m->set_producer_version(r.model.producer_version);
  m->set_node_count(r.model.node_count);
  m->set_q_count(r.model.q_count);
  m->set_dq_count(r.model.dq_count);
  m->set_initializer_count(r.model.initializer_count);

  auto* s = out->mutable_summary();
  s->set_errors(r.summary.errors);
  s->set_warnings(r.summary.warnings);
  s->set_infos(r.summary.infos);
  MapToProto(r.summary.by_rule, s->mutable_by_rule());
  MapToProto(r.summary.units_by_kind, s->mutable_units_by_kind());
  MapToProto(r.summary.units_by_op, s->mutable_units_by_op());
  MapToProto(r.summary.errors_by_op, s->mutable_errors_by_op());
  s->set_qdq_edges(r.summary.qdq_edges);
  s->set_owned_qdq_edges(r.summary.owned_qdq_edges);
  s->set_causes(r.summary.causes);

  for (const auto& f : r.findings) FindingToProto(f, out->add_findings());
  for (const auto& g : r.groups) {
    auto* pg = out->add_groups();
    pg->set_rule(g.rule);
    pg->set_severity(SeverityToProto(g.severity));
    pg->set_section(g.section);
    pg->set_summary(g.summary);
    pg->set_count(g.count);
    for (const auto& f : g.first) FindingToProto(f, pg->add_first());
  }
  for (const auto& u : r.units) {
    auto* pu = out->add_units();
    pu->set_id(u.id);
    pu->set_kind(u.kind);
    pu->set_op_type(u.op_type);
    pu->set_mode(u.mode);
    for (const auto& n : u.nodes) pu->add_nodes(n);
    for (const auto& n : u.input_qdq) pu->add_input_qdq(n);
    for (const auto& n : u.output_qdq) pu->add_output_qdq(n);
  }
  for (const auto& t : r.targets) {
    auto* pt = out->add_targets();
    pt->set_chip(t.chip);
    pt->set_name(t.name);
    pt->set_source(t.source);
    pt->set_doc_version(t.doc_version);
    pt->set_verdict(std::string(TargetVerdictName(t.verdict)));
    pt->set_errors(t.errors);
    pt->set_notes(t.notes);
    for (const auto& b : t.blocking) {
      auto* pb = pt->add_blocking();
      pb->set_rule(b.rule);
      pb->set_op_type(b.op_type);
      pb->set_node(b.node);
    }
  }
  // The excerpt of the graph the HTML report draws (the whole graph of a small model).
  if (r.graph) {
    const ModelGraph g = GraphExcerpt(r);
    auto* pg = out->mutable_graph();
    pg->set_complete(g.complete);
    pg->set_model_nodes(g.model_nodes);
    for (const auto& n : g.nodes) {
      auto* pn = pg->add_nodes();
      pn->set_name(n.name);
      pn->set_op_type(n.op_type);
      pn->set_domain(n.domain);
      pn->set_unit(n.unit);
      pn->set_quant(n.quant);
      for (int t : n.inputs) pn->add_inputs(t);
      for (int t : n.outputs) pn->add_outputs(t);
    }
    for (const auto& t : g.tensors) {
      auto* pt = pg->add_tensors();
      pt->set_name(t.name);
      pt->set_producer(t.producer);
      pt->set_initializer(t.initializer);
      pt->set_graph_input(t.graph_input);
      pt->set_graph_output(t.graph_output);
    }
  }
  for (const auto& f : r.external_reads) {
    auto* pf = out->add_external_reads();
    pf->set_name(f.name);
    pf->set_size_bytes(f.size);
    for (const auto& range : f.ranges) {
      auto* pr = pf->add_ranges();
      pr->set_offset(range.offset);
      pr->set_length(range.length);
    }
  }
}

v1::Report ToProto(const Report& report) {
  v1::Report out;
  ToProto(report, &out);
  return out;
}

Report FromProto(const v1::Report& p) {
  Report r;
  r.verdict = VerdictFromProto(p.verdict());
  r.check_value = p.check_value();
  r.tool_version = p.tool_version();
  r.rule_set_version = p.rule_set_version();

  const auto& m = p.model();
  r.model.file = m.file();
  r.model.sha256 = m.sha256();
  r.model.size_bytes = m.size_bytes();
  r.model.ir_version = m.ir_version();
  for (const auto& o : m.opsets()) r.model.opsets.emplace_back(o.domain(), o.version());
  r.model.producer_name = m.producer_name();
  r.model.producer_version = m.producer_version();
  r.model.node_count = m.node_count();
  r.model.q_count = m.q_count();
  r.model.dq_count = m.dq_count();
  r.model.initializer_count = m.initializer_count();

  const auto& s = p.summary();
  r.summary.errors = s.errors();
  r.summary.warnings = s.warnings();
  r.summary.infos = s.infos();
  r.summary.by_rule = MapFromProto(s.by_rule());
  r.summary.units_by_kind = MapFromProto(s.units_by_kind());
  r.summary.units_by_op = MapFromProto(s.units_by_op());
  r.summary.errors_by_op = MapFromProto(s.errors_by_op());
  r.summary.qdq_edges = s.qdq_edges();
  r.summary.owned_qdq_edges = s.owned_qdq_edges();
  r.summary.causes = s.causes();

  r.findings.reserve(static_cast<std::size_t>(p.findings_size()));
  for (const auto& f : p.findings()) r.findings.push_back(FindingFromProto(f));
  for (const auto& g : p.groups()) {
    FindingGroup out;
    out.rule = g.rule();
    out.severity = SeverityFromProto(g.severity());
    out.section = g.section();
    out.summary = g.summary();
    out.count = g.count();
    for (const auto& f : g.first()) out.first.push_back(FindingFromProto(f));
    r.groups.push_back(std::move(out));
  }
  for (const auto& u : p.units()) {
    UnitInfo out;
    out.id = u.id();
    out.kind = u.kind();
    out.op_type = u.op_type();
    out.mode = u.mode();
    out.nodes.assign(u.nodes().begin(), u.nodes().end());
    out.input_qdq.assign(u.input_qdq().begin(), u.input_qdq().end());
    out.output_qdq.assign(u.output_qdq().begin(), u.output_qdq().end());
    r.units.push_back(std::move(out));
  }
  for (const auto& pt : p.targets()) {
    TargetResult t;
    t.chip = pt.chip();
    t.name = pt.name();
    t.source = pt.source();
    t.doc_version = pt.doc_version();
    t.verdict = TargetVerdictFromName(pt.verdict());
    t.errors = pt.errors();
    t.notes = pt.notes();
    for (const auto& pb : pt.blocking()) t.blocking.push_back({pb.rule(), pb.op_type(), pb.node()});
    r.targets.push_back(std::move(t));
  }
  if (p.has_graph()) {
    auto g = std::make_shared<ModelGraph>();
    g->complete = p.graph().complete();
    g->model_nodes = p.graph().model_nodes();
    const auto nodes = p.graph().nodes_size();
    const auto tensors = p.graph().tensors_size();
    auto valid = [&](int t) { return t >= -1 && t < tensors ? t : -1; };
    for (const auto& pn : p.graph().nodes()) {
      GraphNode n;
      n.name = pn.name();
      n.op_type = pn.op_type();
      n.domain = pn.domain();
      n.unit = pn.unit() >= 0 && pn.unit() < p.units_size() ? pn.unit() : -1;
      n.quant = pn.quant();
      for (int t : pn.inputs()) n.inputs.push_back(valid(t));
      for (int t : pn.outputs()) n.outputs.push_back(valid(t));
      g->nodes.push_back(std::move(n));
    }
    for (const auto& pt : p.graph().tensors()) {
      GraphTensor t;
      t.name = pt.name();
      t.producer = pt.producer() >= 0 && pt.producer() < nodes ? pt.producer() : -1;
      t.initializer = pt.initializer();
      t.graph_input = pt.graph_input();
      t.graph_output = pt.graph_output();
      g->tensors.push_back(std::move(t));
    }
    r.graph = std::move(g);
  }
  return r;
}

void RuleToProto(const RuleInfo& rule, v1::Rule* out) {
  out->set_id(std::string(rule.id));
  out->set_severity(SeverityToProto(rule.severity));
  out->set_check_value(rule.check_value);
  out->set_section(std::string(rule.section));
  out->set_summary(std::string(rule.summary));
  out->set_fix(std::string(rule.fix));
}

CheckOptions CoreOptions(const v1::CheckOptions& options) {
  CheckOptions out;
  out.check_value = options.check_value();
  out.max_locations = options.max_locations() == 0 ? kDefaultMaxLocations : options.max_locations();
  out.include_units = true;
  out.include_graph = true;  // stored as an excerpt (ToProto): the HTML report's graph views
  if (!options.targets().empty()) {
    const std::vector<std::string> requested(options.targets().begin(), options.targets().end());
    out.targets = ResolveTargets(requested);  // throws on an unknown chip (ValidateOptions first)
  }
  if (options.has_pulsar2_config()) out.pulsar2_config = options.pulsar2_config();
  return out;
}

std::string OptionsKey(const v1::CheckOptions& options) {
  const CheckOptions core = CoreOptions(options);
  std::string key = std::string("cv=") + (core.check_value ? "1" : "0") +
                    ";ml=" + std::to_string(core.max_locations);
  // Without targets the key is what it always was, so stored reports stay found.
  if (!core.targets.empty()) {
    key += ";t=";
    for (std::size_t i = 0; i < core.targets.size(); ++i) {
      key += (i ? "," : "") + core.targets[i];
    }
  }
  // The configuration by its sha256 (an empty one is a configuration too: pulsar2/config-invalid).
  if (core.pulsar2_config) key += ";p2=" + Sha256Hex(*core.pulsar2_config);
  return key;
}

std::string CacheKey(const std::string& sha256, const v1::CheckOptions& options) {
  return sha256 + "|" + OptionsKey(options) + "|" + std::string(kRuleSetVersion) + "|" +
         kReportRevision;
}

std::string CacheKeyOf(const std::string& sha256, const std::string& options_key) {
  return sha256 + "|" + options_key + "|" + std::string(kRuleSetVersion) + "|" + kReportRevision;
}

namespace {

// The parts "k=v" of an OptionsKey; false when it is not one.
bool SplitOptionsKey(const std::string& key,
                     std::vector<std::pair<std::string, std::string>>* out) {
  std::size_t start = 0;
  while (start < key.size()) {
    const std::size_t end = std::min(key.find(';', start), key.size());
    const std::string part = key.substr(start, end - start);
    const std::size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0) return false;
    out->emplace_back(part.substr(0, eq), part.substr(eq + 1));
    start = end + 1;
  }
  return true;
}

bool IsChipList(const std::string& v) {
  if (v.empty() || v.front() == ',' || v.back() == ',') return false;
  for (char c : v) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == ',')) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<std::string> OptionsQueryOfKey(const std::string& options_key) {
  std::vector<std::pair<std::string, std::string>> parts;
  if (!SplitOptionsKey(options_key, &parts)) return std::nullopt;
  std::string query;
  auto add = [&](const std::string& param) { query += (query.empty() ? "" : "&") + param; };
  for (const auto& [k, v] : parts) {
    if (k == "cv") {
      if (v == "1") {
        add("check_value=true");
      } else if (v != "0") {
        return std::nullopt;
      }
    } else if (k == "ml") {
      if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos) {
        return std::nullopt;
      }
      if (v != std::to_string(kDefaultMaxLocations)) add("max_locations=" + v);
    } else if (k == "t") {
      if (!IsChipList(v)) return std::nullopt;
      add("target=" + v);
    } else {
      return std::nullopt;  // p2: the configuration's text is not in the key
    }
  }
  return query;
}

std::vector<std::string> TargetsOfKey(const std::string& options_key) {
  std::vector<std::pair<std::string, std::string>> parts;
  std::vector<std::string> out;
  if (!SplitOptionsKey(options_key, &parts)) return out;
  for (const auto& [k, v] : parts) {
    if (k != "t" || !IsChipList(v)) continue;
    std::size_t start = 0;
    while (start < v.size()) {
      const std::size_t end = std::min(v.find(',', start), v.size());
      out.push_back(v.substr(start, end - start));
      start = end + 1;
    }
  }
  return out;
}

}  // namespace axqc::wire
