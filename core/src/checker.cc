// The pipeline: load -> ONNX validity -> index -> quant params -> units -> rules -> report. Each
// stage has its room: loader.cc, onnx_validity.cc, graph_index.cc, quant.cc, units.cc and
// patterns/, checks/ (the rule stages, checks/stages.cc), causes.cc, report.cc; this file runs
// them in order (two of them beside the ONNX checker on a second thread) and assembles the
// report.
#include "axqc/checker.h"

#include <atomic>
#include <optional>

#include "axqc/targets.h"
#include "axqc/threads.h"
#include "beside.h"
#include "causes.h"
#include "context.h"
#include "fingerprint.h"
#include "function_calls.h"
#include "loader.h"
#include "onnx_validity.h"
#include "pipeline.h"
#include "pulsar2_eval.h"
#include "stage_clock.h"
#include "targets_eval.h"

namespace axqc {

std::string_view ToolVersion() { return AXQC_VERSION; }

namespace {
std::atomic<bool> g_parallel_checks{true};
}  // namespace

void SetParallelChecks(bool on) { g_parallel_checks.store(on, std::memory_order_relaxed); }
bool ParallelChecks() { return g_parallel_checks.load(std::memory_order_relaxed); }

namespace detail {
namespace {

// The mode in the ownership map: a quantized unit that owns no Q/DQ is "unquantized".
std::string ReportedMode(const Unit& u, const Ownership& claims) {
  if (u.mode == UnitMode::kQuantized && claims.InputBoundary(u.id).empty() &&
      claims.OutputBoundary(u.id).empty()) {
    return "unquantized";
  }
  return std::string(UnitModeName(u.mode));
}

UnitInfo ToInfo(const Unit& u, const GraphIndex& g, const Ownership& claims) {
  UnitInfo info;
  info.id = static_cast<std::size_t>(u.id);
  info.kind = u.Kind();
  info.op_type = CleanText(g.node(u.anchor).op_type());
  info.mode = ReportedMode(u, claims);
  for (int n : u.nodes) info.nodes.emplace_back(g.NodeName(n));
  for (int n : u.tails) info.nodes.emplace_back(g.NodeName(n));
  for (int n : claims.InputBoundary(u.id)) info.input_qdq.emplace_back(g.NodeName(n));
  for (int n : claims.OutputBoundary(u.id)) info.output_qdq.emplace_back(g.NodeName(n));
  for (auto* v : {&info.nodes, &info.input_qdq, &info.output_qdq}) {
    for (auto& name : *v) CleanTextInPlace(name);
  }
  return info;
}

// The main graph for pictures (Report::graph): nodes in topological order with their unit (the
// index into Report::units, which lists units.all() in order) and, for Q/DQ nodes, their
// parameters.
std::shared_ptr<const ModelGraph> CollectGraph(const GraphIndex& g, const QuantTable& q,
                                               const Units& units) {
  auto graph = std::make_shared<ModelGraph>();
  graph->complete = true;
  graph->model_nodes = static_cast<std::size_t>(g.node_count());
  std::vector<int> unit_of(static_cast<std::size_t>(g.node_count()), -1);
  const auto& all = units.all();
  for (std::size_t i = 0; i < all.size(); ++i) {
    for (const auto* v : {&all[i].nodes, &all[i].tails}) {
      for (int n : *v) unit_of[static_cast<std::size_t>(n)] = static_cast<int>(i);
    }
  }
  graph->tensors.resize(static_cast<std::size_t>(g.tensor_count()));
  for (int t = 0; t < g.tensor_count(); ++t) {
    auto& info = graph->tensors[static_cast<std::size_t>(t)];
    info.name = CleanText(g.TensorName(t));
    info.initializer = g.InitializerOf(t) != nullptr;
    info.graph_input = g.IsGraphInputId(t);
    info.graph_output = g.IsGraphOutputId(t);
  }
  const auto& order = g.topo_order();
  graph->nodes.reserve(order.size());
  for (int n : order) {
    GraphNode node;
    node.name = CleanText(g.NodeName(n));
    node.op_type = CleanText(g.node(n).op_type());
    node.domain = CleanText(g.node(n).domain());
    if (const auto* p = q.Of(n)) {
      node.quant = CleanText(Describe(*p));
    } else {
      node.unit = unit_of[static_cast<std::size_t>(n)];
    }
    const auto index = static_cast<int>(graph->nodes.size());
    for (int id : g.InputIds(n)) node.inputs.push_back(id);
    for (int id : g.OutputIds(n)) {
      node.outputs.push_back(id);
      if (id >= 0) graph->tensors[static_cast<std::size_t>(id)].producer = index;
    }
    graph->nodes.push_back(std::move(node));
  }
  return graph;
}

// The model's facts for the report, read before shape inference writes into the model.
ModelFacts FactsOf(const LoadedModel& m) {
  ModelFacts facts;
  facts.file = m.name;
  facts.sha256 = m.sha256;
  facts.size_bytes = m.size;
  facts.ir_version = m.proto->ir_version();
  for (const auto& op : m.proto->opset_import())
    facts.opsets.emplace_back(op.domain(), op.version());
  facts.producer_name = m.proto->producer_name();
  facts.producer_version = m.proto->producer_version();
  facts.node_count = static_cast<std::size_t>(m.proto->graph().node_size());
  facts.initializer_count = static_cast<std::size_t>(m.proto->graph().initializer_size());
  return facts;
}

// The positions of the producer's complete value_info entries, before inference adds its own.
std::vector<int> DeclaredCompleteEntries(const onnx::ModelProto& model) {
  std::vector<int> entries;
  for (int k = 0; k < model.graph().value_info_size(); ++k) {
    if (TypeFromProto(model.graph().value_info(k).type()).complete) entries.push_back(k);
  }
  return entries;
}

// Those entries as tensor ids (the index interns the same entries): true for a tensor whose type
// and shape the producer declared in full.
std::vector<bool> DeclaredTensors(const GraphIndex& g, const std::vector<int>& entries) {
  std::vector<bool> declared(static_cast<std::size_t>(g.tensor_count()), false);
  const auto ids = g.DeclaredValueInfoIds();
  for (const int k : entries) {
    const int id = ids[static_cast<std::size_t>(k)];
    if (id >= 0) declared[static_cast<std::size_t>(id)] = true;
  }
  return declared;
}

// ONNX validity (onnx_validity.cc) with the work that does not need inferred types beside it.
// Beside the ONNX checker (which only reads the model), a second thread checks the tensor storage
// and indexes the graph as it was loaded; both are done before shape inference starts writing
// into the model (value_info, graph outputs, subgraphs). During shape inference it reads the Q/DQ
// parameters that need no types (nodes, initializers and Constant values, which inference does not
// write). The index and the Q/DQ table take the inferred types afterwards (the caller). The second
// thread's stage times are taken on its own clock and added to `timings`.
void ValidateAndIndex(LoadedModel& m, Emitter& out, StageClock& clock, StageTimings* timings,
                      std::optional<GraphIndex>* index, std::optional<QuantTable>* quant) {
  StageTimings beside_times;
  beside_times.thread_cpu = timings != nullptr && timings->thread_cpu;
  StageTimings* beside_clock_times = timings != nullptr ? &beside_times : nullptr;
  std::vector<StorageProblem> storage;
  const bool parallel = ParallelChecks();
  Beside indexing(parallel, [&] {
    StageClock beside_clock(beside_clock_times);
    storage = FindStorageProblems(*m.proto);
    beside_clock.Lap(&StageTimings::guards_s);
    index->emplace(m.proto->graph(), m.external.get(), GraphIndex::TypesLater{});
    beside_clock.Lap(&StageTimings::index_s);
  });
  clock.Restart();  // (when sequential, the job ran here and is timed on beside_times)
  std::optional<Beside> quant_reading;
  auto read_quant = [&] {
    StageClock beside_clock(beside_clock_times);
    quant->emplace(**index, GraphIndex::TypesLater{});
    beside_clock.Lap(&StageTimings::quant_s);
  };
  ValidateOnnx(m, out, clock, [&] {
    indexing.Join();
    clock.Lap(&StageTimings::guards_s);
    quant_reading.emplace(parallel, read_quant);
    clock.Restart();
    return std::move(storage);
  });
  clock.Lap(&StageTimings::onnx_check_s);
  indexing.Join();  // (both joined already unless ValidateOnnx returned early)
  if (!quant_reading) quant_reading.emplace(false, read_quant);
  quant_reading->Join();
  if (timings != nullptr) {
    timings->guards_s += beside_times.guards_s;
    timings->index_s += beside_times.index_s;
    timings->quant_s += beside_times.quant_s;
  }
}

// The Q/DQ edges of the model and how many of them a unit owns (the report's summary).
void CountQdqEdges(const QuantTable& q, const Ownership& claims, Summary* summary) {
  std::size_t edges = 0, owned = 0;
  for (int dq : q.dq_nodes()) {
    ++edges;
    if (claims.OwnsEdgeOf(dq)) ++owned;
  }
  for (int qn : q.q_nodes()) {
    if (q.PairedDq(qn) >= 0) continue;
    ++edges;
    if (claims.OwnsEdgeOf(qn)) ++owned;
  }
  summary->qdq_edges = edges;
  summary->owned_qdq_edges = owned;
}

// The one finding of a model out of scope (2.1, reading 11).
Finding OutOfScope(std::size_t edges) {
  Finding f;
  const RuleInfo& scope = rules::kScopeNoQuantizedEdge.info();
  f.rule = std::string(scope.id);
  f.severity = scope.severity;
  f.section = std::string(scope.section);
  f.group_key = std::string(scope.summary);
  f.message = edges == 0 ? "the model has no Q/DQ nodes; it is not a QDQ model"
                         : "the model has " + Count(static_cast<std::int64_t>(edges), "Q/DQ edge") +
                               " but no Q/DQ node on an operator's data path (e.g. Q/DQ only "
                               "between graph inputs and outputs, or only on parameters)";
  f.values = {{"qdq_edges", std::to_string(edges)}};
  return f;
}

// Every string that can come from the model is cleaned once, here (see CleanText).
void CleanModelText(Report& report) {
  auto& facts = report.model;
  for (auto* s : {&facts.file, &facts.producer_name, &facts.producer_version}) CleanTextInPlace(*s);
  for (auto& op : facts.opsets) CleanTextInPlace(op.first);
  for (auto& f : report.findings) {
    for (auto* s : {&f.message, &f.group_key, &f.op_type}) CleanTextInPlace(*s);
    for (auto* v : {&f.nodes, &f.tensors}) {
      for (auto& s : *v) CleanTextInPlace(s);
    }
    for (auto& [k, v] : f.values) {
      CleanTextInPlace(k);
      CleanTextInPlace(v);
    }
  }
}

// The findings in report order: ONNX validity, then the rules' (or, out of scope, the scope
// note only), then the chip targets' and the Pulsar2 configuration's (judged on every model, in
// scope or not: a float model has a portability too); with fingerprints and causes. `primary`
// holds the primary node of each finding (for the fingerprints).
void AssembleFindings(Report& report, const LoadedModel& m, const CheckOptions& options,
                      const Context& c, Emitter& out, const std::vector<std::string>& chips,
                      bool in_scope) {
  std::vector<int> primary;
  auto base = out.Take(&primary);
  const std::size_t base_count = base.size();
  auto found = c.out.Take(&primary);
  report.findings = std::move(base);
  if (!in_scope) {
    primary.resize(base_count);
    report.findings.push_back(OutOfScope(report.summary.qdq_edges));
    primary.push_back(-1);
  } else {
    for (auto& f : found) report.findings.push_back(std::move(f));
  }
  if (!chips.empty()) {
    primary.resize(report.findings.size());
    for (auto& f : EvaluateTargets(c.g, *m.proto, chips, &primary))
      report.findings.push_back(std::move(f));
  }
  if (options.pulsar2_config) {
    primary.resize(report.findings.size());
    for (auto& f :
         EvaluatePulsar2Config(*options.pulsar2_config, c.g, c.q, c.units, chips, &primary))
      report.findings.push_back(std::move(f));
  }
  AssignFingerprints(&c.g, report.findings, primary);
  AssignCauses(&c.g, m.proto, report.findings, primary);
}

Report Run(LoadedModel& m, const CheckOptions& options) {
  StageClock clock(options.timings);
  Report report;
  report.check_value = options.check_value;
  report.tool_version = std::string(ToolVersion());
  report.rule_set_version = std::string(kRuleSetVersion);
  report.model = FactsOf(m);
  const std::vector<int> declared_complete = DeclaredCompleteEntries(*m.proto);
  clock.Lap(&StageTimings::guards_s);

  Emitter out(nullptr, options.check_value);
  std::optional<GraphIndex> index;
  std::optional<QuantTable> quant;
  ValidateAndIndex(m, out, clock, options.timings, &index, &quant);
  GraphIndex& g = *index;
  g.RecordTypes();
  std::vector<bool> declared = DeclaredTensors(g, declared_complete);
  Emitter rules(&g, options.check_value);
  clock.Lap(&StageTimings::index_s);
  QuantTable& q = *quant;
  q.ReadTypes();
  report.model.q_count = q.q_nodes().size();
  report.model.dq_count = q.dq_nodes().size();
  clock.Lap(&StageTimings::quant_s);
  Units units(g, q);
  clock.Lap(&StageTimings::units_s);
  Context c(g, q, units, rules, options.check_value);
  c.model = m.proto;
  c.declared_value_info = std::move(declared);
  RunRuleStages(c);
  clock.Lap(&StageTimings::rules_s);

  CountQdqEdges(q, c.claims, &report.summary);
  // Scope (2.1, reading 11): a quantized model is in scope even when its Q/DQ structure is
  // broken or it is not valid ONNX; an unquantized one is not_applicable even when invalid.
  const bool in_scope = InScope(c);
  const std::vector<std::string> chips =
      options.targets.empty() ? std::vector<std::string>{} : ResolveTargets(options.targets);
  AssembleFindings(report, m, options, c, out, chips, in_scope);
  CleanModelText(report);
  if (options.include_units) {
    for (const auto& u : units.all()) report.units.push_back(ToInfo(u, g, c.claims));
  }
  for (const auto& u : units.all()) {
    report.summary.units_by_kind[u.Kind()]++;
    report.summary.units_by_op[CleanText(g.node(u.anchor).op_type())]++;
  }
  if (options.include_graph) report.graph = CollectGraph(g, q, units);
  if (!chips.empty()) report.targets = TargetResults(report.findings, chips);
  FinalizeReport(report, options.max_locations);
  if (!in_scope) report.verdict = Verdict::kNotApplicable;
  if (m.external != nullptr) report.external_reads = m.external->Reads();
  clock.Lap(&StageTimings::report_s);
  return report;
}

}  // namespace
}  // namespace detail

Report CheckFile(const std::string& path, const CheckOptions& options) {
  auto m = detail::LoadFromFile(path, options.timings, ParallelChecks());
  return detail::Run(m, options);
}

Report CheckBytes(std::string_view bytes, const std::string& name, const CheckOptions& options) {
  auto m = detail::LoadFromBytes(bytes, name, options.timings, ParallelChecks(),
                                 options.known_sha256, options.external_data);
  return detail::Run(m, options);
}

}  // namespace axqc

namespace axqc::detail {

Report CheckLoaded(LoadedModel& m, const CheckOptions& options) { return Run(m, options); }

}  // namespace axqc::detail
