// The pipeline: load -> ONNX validity -> index -> quant params -> units -> rules -> report.
#include "axqc/checker.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>
#include <onnx/shape_inference/implementation.h>

#include <atomic>
#include <cctype>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "axqc/targets.h"
#include "axqc/threads.h"
#include "beside.h"
#include "causes.h"
#include "context.h"
#include "fingerprint.h"
#include "function_calls.h"
#include "loader.h"
#include "onnx_model_check.h"
#include "pipeline.h"
#include "pulsar2_eval.h"
#include "stage_clock.h"
#include "stdout_capture.h"
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

// Highest ai.onnx opset this ONNX library knows.
int MaxKnownOpset() {
  const auto& m = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = m.find(onnx::ONNX_DOMAIN);
  return it == m.end() ? 0 : it->second.second;
}

std::string LibraryVersion() { return AXQC_ONNX_VERSION; }

// Preconditions that ONNX 1.17 shape-inference functions assume but do not check. A hostile model
// that breaks one makes the function read out of bounds or through a null pointer and crash the
// process (ONNX and protobuf are not built with bounds checks). Found by fuzzing (tests/fuzz,
// tests/fuzz/regressions) and by reading onnx/defs; every version of the op is guarded. Extend
// the table when the fuzzer finds another one.
void RequireRank(onnx::InferenceContext& ctx, const char* op, std::size_t input, int min_rank) {
  if (ctx.getNumInputs() <= input || !onnx::hasInputShape(ctx, input)) return;
  const auto* t = ctx.getInputType(input);
  const int rank = t->has_tensor_type() ? t->tensor_type().shape().dim_size() : -1;
  if (rank < min_rank) {
    fail_shape_inference(
        op, " input ", input, " must be a tensor of rank >= ", min_rank, " (has ",
        rank < 0 ? std::string("a non-tensor type") : "rank " + std::to_string(rank), ")");
  }
}

// ONNX's conv/pool shape inference (convPoolShapeInference, convPoolShapeInference1):
// - without a kernel_shape attribute the kernel rank comes from W, and X's dims and the
//   dilations are indexed by it unchecked: W's rank must not exceed X's;
// - it divides by the strides: a zero stride is a division by zero (SIGFPE; fuzzer, Conv-1);
// - with auto_pad other than VALID, a stride > 1 and no pads, it reduces each spatial dim by
//   repeated subtraction (dim / stride iterations): a huge declared dim hangs it. Dims that would
//   need more than 2^26 subtractions are refused.
void RequireConvPoolShapes(onnx::InferenceContext& ctx, const char* op, std::size_t x, int w) {
  if (!onnx::hasInputShape(ctx, x) || !ctx.getInputType(x)->has_tensor_type()) return;
  const auto& xs = ctx.getInputType(x)->tensor_type().shape();
  const auto wi = static_cast<std::size_t>(w);
  if (w >= 0 && ctx.getAttribute("kernel_shape") == nullptr && ctx.getNumInputs() > wi &&
      onnx::hasInputShape(ctx, wi)) {
    const auto* wt = ctx.getInputType(wi);
    const int wr = wt->has_tensor_type() ? wt->tensor_type().shape().dim_size() : -1;
    if (wr < 0 || wr > xs.dim_size()) {
      fail_shape_inference(op, " input ", w,
                           " (the kernel) must be a tensor of rank <= ", xs.dim_size(),
                           " (the rank of input ", x, ")");
    }
  }
  const auto* strides = ctx.getAttribute("strides");
  if (strides != nullptr) {
    for (auto v : strides->ints()) {
      if (v < 1) fail_shape_inference(op, " strides must be positive (got ", v, ")");
    }
  }
  const auto* auto_pad = ctx.getAttribute("auto_pad");
  if (auto_pad == nullptr || auto_pad->s() == "VALID" || ctx.getAttribute("pads") != nullptr) {
    return;
  }
  constexpr std::int64_t kMaxSteps = std::int64_t{1} << 26;
  for (int i = 2; i < xs.dim_size(); ++i) {
    const std::int64_t stride =
        strides != nullptr && i - 2 < strides->ints_size() ? strides->ints(i - 2) : 1;
    if (stride > 1 && xs.dim(i).has_dim_value() && xs.dim(i).dim_value() / stride > kMaxSteps) {
      fail_shape_inference(op, " input ", x, " dim ", i, " (", xs.dim(i).dim_value(),
                           ") is too large for auto_pad shape inference");
    }
  }
}

struct OpGuard {
  const char* op;
  void (*check)(onnx::InferenceContext&);
};
const OpGuard kGuards[] = {
    // W.dim(1) / I.dim(1) / X.dim(0..1) read unchecked (RNN-1, GRU-3, LSTM-1).
    {"ConvTranspose", [](onnx::InferenceContext& c) { RequireRank(c, "ConvTranspose", 1, 2); }},
    {"MaxUnpool", [](onnx::InferenceContext& c) { RequireRank(c, "MaxUnpool", 1, 2); }},
    {"RNN", [](onnx::InferenceContext& c) { RequireRank(c, "RNN", 0, 2); }},
    {"GRU", [](onnx::InferenceContext& c) { RequireRank(c, "GRU", 0, 2); }},
    {"LSTM", [](onnx::InferenceContext& c) { RequireRank(c, "LSTM", 0, 2); }},
    {"Conv", [](onnx::InferenceContext& c) { RequireConvPoolShapes(c, "Conv", 0, 1); }},
    {"ConvInteger",
     [](onnx::InferenceContext& c) { RequireConvPoolShapes(c, "ConvInteger", 0, 1); }},
    {"QLinearConv",
     [](onnx::InferenceContext& c) { RequireConvPoolShapes(c, "QLinearConv", 0, 3); }},
    {"DeformConv", [](onnx::InferenceContext& c) { RequireConvPoolShapes(c, "DeformConv", 0, 1); }},
    {"AveragePool",
     [](onnx::InferenceContext& c) { RequireConvPoolShapes(c, "AveragePool", 0, -1); }},
    {"MaxPool", [](onnx::InferenceContext& c) { RequireConvPoolShapes(c, "MaxPool", 0, -1); }},
    {"LpPool", [](onnx::InferenceContext& c) { RequireConvPoolShapes(c, "LpPool", 0, -1); }},
    // num_scan_inputs is dereferenced unchecked and sizes vectors (a tiny model could make
    // inference allocate gigabytes).
    {"Scan",
     [](onnx::InferenceContext& c) {
       const auto* a = c.getAttribute("num_scan_inputs");
       if (a == nullptr || a->i() < 1 || static_cast<std::uint64_t>(a->i()) > c.getNumInputs()) {
         fail_shape_inference("Scan attribute num_scan_inputs must be between 1 and the number ",
                              "of inputs (", c.getNumInputs(), ")");
       }
     }},
};

// The ONNX schema registry, with the guarded ops' inference functions wrapped in their checks,
// which fail shape inference (reported as onnx/invalid-model) instead of crashing. The global
// registry is not modified; the wrapped schemas are copies.
class GuardedSchemas final : public onnx::ISchemaRegistry {
 public:
  GuardedSchemas() {
    const int max_version = MaxKnownOpset();
    for (const auto& g : kGuards) {
      for (int v = 1; v <= max_version; ++v) {
        const auto* s = onnx::OpSchemaRegistry::Schema(g.op, v, onnx::ONNX_DOMAIN);
        if (s == nullptr || !s->has_type_and_shape_inference_function()) continue;
        auto [it, added] = guarded_.try_emplace(s, *s);
        if (!added) continue;
        auto inner = s->GetTypeAndShapeInferenceFunction();
        it->second.TypeAndShapeInferenceFunction(
            [check = g.check, inner](onnx::InferenceContext& ctx) {
              check(ctx);
              inner(ctx);
            });
      }
    }
  }

  const onnx::OpSchema* GetSchema(const std::string& key, const int max_version,
                                  const std::string& domain) const override {
    const auto* s = onnx::OpSchemaRegistry::Schema(key, max_version, domain);
    auto it = guarded_.find(s);
    return it == guarded_.end() ? s : &it->second;
  }

  static const GuardedSchemas& Instance() {
    static const GuardedSchemas registry;
    return registry;
  }

 private:
  std::unordered_map<const onnx::OpSchema*, onnx::OpSchema> guarded_;
};

// A tensor whose data does not match its dims and type (onnx/invalid-model).
struct StorageProblem {
  std::string message;  // "<where>: <why>"
  std::string tensor;
};

// Storage of every tensor (subgraphs, Constant values and functions included): ONNX's shape
// inference reads tensor data (ParseData) and overflows its buffer when raw_data is not a
// multiple of the element size, so no inference runs on a model with a mismatch. Reads the model
// only (runs beside the ONNX checker).
std::vector<StorageProblem> FindStorageProblems(const onnx::ModelProto& model) {
  std::vector<StorageProblem> found;
  ForEachTensor(model, [&](const onnx::TensorProto& t, const TensorSite& site) {
    auto why = CheckTensorStorage(t);
    if (!why.empty()) found.push_back({site.Describe(t) + ": " + why, t.name()});
  });
  return found;
}

// Prefixes the location of every external tensor with '#' (see ValidateOnnx), remembering the
// original values.
void MarkExternalLocations(
    onnx::ModelProto& model,
    std::vector<std::pair<onnx::StringStringEntryProto*, std::string>>* out) {
  // The main graph and its subgraphs (ForEachTensor over a ModelProto visits copies of the
  // functions' tensors).
  ForEachTensor(model.graph(), [&](const onnx::TensorProto& t, const TensorSite&) {
    if (!IsExternal(t)) return;
    auto& mutable_t = const_cast<onnx::TensorProto&>(t);  // a tensor of `model`, which is mutable
    for (auto& kv : *mutable_t.mutable_external_data()) {
      if (kv.key() != "location") continue;
      out->emplace_back(&kv, kv.value());
      kv.set_value("#" + kv.value());
    }
  });
}

// onnx/invalid-model: the ONNX checker plus strict shape inference (what full_check does), run
// in place so the inferred value_info feeds the later stages without copying the model.
// `storage` waits for FindStorageProblems(model) (computed beside the checker) and returns it;
// it is called after the checker and before shape inference, which writes into the model.
void ValidateOnnx(LoadedModel& m, Emitter& out, StageClock& clock,
                  const std::function<std::vector<StorageProblem>()>& storage);

// How to fix what the ONNX checker reported, by cause (onnx/invalid-model).
std::string CheckerHint(const onnx::ModelProto& model, const std::string& what) {
  const auto& g = model.graph();
  // "Nodes in a graph must be topologically sorted, however input 'X' of node ... is not output
  // of any previous nodes": X is either produced later (order) or by nothing (dangling).
  if (what.find("must be topologically sorted") != std::string::npos) {
    std::string name;
    if (auto a = what.find("input '"); a != std::string::npos) {
      a += 7;
      if (auto b = what.find("' of node", a); b != std::string::npos) name = what.substr(a, b - a);
    }
    bool produced = false;
    for (const auto& n : g.node()) {
      for (const auto& o : n.output()) produced |= !name.empty() && o == name;
    }
    if (!name.empty() && !produced) {
      return "'" + name +
             "' is produced by no node, graph input or initializer: a dangling reference (the "
             "exporter or a graph edit dropped its producer); restore the producer or remove the "
             "reference";
    }
    return "the graph is not topologically sorted: write graph.node so that every node comes "
           "after the nodes producing its inputs (exporters and onnx-simplifier do; in Python "
           "e.g. onnxruntime.transformers.onnx_model.OnnxModel(m).topological_sort())";
  }
  // enforce_has_field on graph inputs and outputs: "Field 'type' of 'value_info' is required but
  // missing." names neither the value nor what is missing.
  if (what.find("is required but missing") != std::string::npos &&
      (what.find("'value_info'") != std::string::npos ||
       what.find("of 'type'") != std::string::npos)) {
    auto describe = [](const onnx::ValueInfoProto& v, const char* kind) -> std::string {
      const std::string who = std::string(kind) + " '" + v.name() + "'";
      if (!v.has_type()) return who + " has no type";
      if (v.type().has_tensor_type()) {
        if (!v.type().tensor_type().has_elem_type()) return who + " has no element type";
        if (!v.type().tensor_type().has_shape()) return who + " has no shape";
      }
      return {};
    };
    std::string found;
    for (const auto& v : g.input()) {
      if (found.empty()) found = describe(v, "graph input");
    }
    for (const auto& v : g.output()) {
      if (found.empty()) found = describe(v, "graph output");
    }
    return (found.empty() ? std::string("a graph input or output lacks its type") : found) +
           ": declare the element type and shape of every graph input and output (e.g. "
           "onnx.helper.make_tensor_value_info(name, elem_type, shape))";
  }
  return "fix what the ONNX checker names (onnx.checker.check_model(m, full_check=True) reports "
         "the same)";
}

void ValidateOnnx(LoadedModel& m, Emitter& out, StageClock& clock,
                  const std::function<std::vector<StorageProblem>()>& storage) {
  auto& model = *m.proto;
  // `tensor` keeps findings about different tensors apart (the emitter drops repeats of one key).
  auto invalid = [&](std::string msg, const std::string& key, const std::string& tensor = {},
                     std::vector<std::pair<std::string, std::string>> values = {}) {
    while (!msg.empty() && std::isspace(static_cast<unsigned char>(msg.back()))) msg.pop_back();
    std::vector<std::string> tensors;
    if (!tensor.empty()) tensors.push_back(tensor);
    out.Emit({.rule = rules::kOnnxInvalidModel,
              .node = -1,
              .message = std::move(msg),
              .group_key = key,
              .tensors = std::move(tensors),
              .values = std::move(values)});
  };
  // What ONNX prints on std::cout (e.g. "Warning: Model contains experimental ops: ...") stays
  // off stdout; each line becomes an onnx/library-message finding.
  StdoutCapture printed;
  auto library_messages = [&](const char* stage) {
    for (auto& line : printed.TakeLines()) {
      out.Emit({.rule = rules::kOnnxLibraryMessage,
                .node = -1,
                .message = "ONNX " + LibraryVersion() + " " + stage + " printed: " + line,
                .group_key = "message printed by the ONNX " + std::string(stage),
                .tensors = {},
                .values = {{"text", line}}});
    }
  };
  bool too_new = false;
  const std::int64_t max_ir = onnx::IR_VERSION;
  if (model.ir_version() > max_ir) {
    too_new = true;
    const std::string ir = std::to_string(model.ir_version());
    const std::string lib_ir = std::to_string(max_ir);
    invalid("IR version " + ir + " is newer than ONNX " + LibraryVersion() + " supports (IR " +
                lib_ir +
                "); the model cannot be validated, so it is not accepted. If the model uses "
                "nothing that IR versions after " +
                lib_ir + " added, writing ir_version " + lib_ir +
                " back is safe (Python: m = onnx.load(path); m.ir_version = " + lib_ir +
                "; onnx.save(m, path)); otherwise check it with an axqc linked against a newer "
                "ONNX",
            "IR version newer than supported", {},
            {{"ir_version", ir}, {"supported_ir_version", lib_ir}, {"onnx", LibraryVersion()}});
  }
  for (const auto& op : model.opset_import()) {
    if (IsOnnxDomain(op.domain()) && op.version() > MaxKnownOpset()) {
      too_new = true;
      const std::string v = std::to_string(op.version());
      const std::string lib = std::to_string(MaxKnownOpset());
      invalid("opset " + v + " is newer than ONNX " + LibraryVersion() + " supports (opset " + lib +
                  "); the model cannot be validated, so it is not accepted. Convert it to opset " +
                  lib + " or lower (onnx.version_converter.convert_version(m, " + lib +
                  ")) or re-export it with that opset",
              "opset newer than supported", {},
              {{"opset", v}, {"supported_opset", lib}, {"onnx", LibraryVersion()}});
    }
  }
  bool checked = false;  // the ONNX checker accepted the model
  if (!too_new) {
    try {
      onnx::checker::CheckerContext ctx;
      ctx.set_model_dir(m.dir);
      if (m.external_in_memory) {
        // The data files were handed over and validated by the loader; ONNX would look for them
        // on disk (relative to the working directory). A location starting with '#' is one ONNX
        // does not look up, so the checker runs with the locations marked and then restored.
        std::vector<std::pair<onnx::StringStringEntryProto*, std::string>> marked;
        MarkExternalLocations(model, &marked);
        try {
          CheckModelInContext(model, ctx);
        } catch (...) {
          for (auto& [entry, value] : marked) entry->set_value(std::move(value));
          throw;
        }
        for (auto& [entry, value] : marked) entry->set_value(std::move(value));
      } else {
        CheckModelInContext(model, ctx);
      }
      checked = true;
    } catch (const std::exception& e) {
      std::string what = e.what();
      while (!what.empty() &&
             (std::isspace(static_cast<unsigned char>(what.back())) || what.back() == '.')) {
        what.pop_back();
      }
      const bool order = what.find("must be topologically sorted") != std::string::npos;
      const bool untyped = what.find("is required but missing") != std::string::npos &&
                           (what.find("'value_info'") != std::string::npos ||
                            what.find("of 'type'") != std::string::npos);
      invalid("ONNX checker: " + what + "; fix: " + CheckerHint(model, what),
              order     ? "graph not topologically sorted (or a dangling input)"
              : untyped ? "graph input or output without a type"
                        : "fails the ONNX checker");
    }
    library_messages("checker");
  }
  // ONNX's shape inference follows calls of model-local functions recursively: a recursive call
  // chain would never end (stack overflow), so such a model gets no inference.
  if (std::string why = FunctionCallProblem(model); checked && !why.empty()) {
    checked = false;
    invalid(why + "; shape inference cannot follow it", "recursive or too deep function calls");
  }
  clock.Lap(&StageTimings::onnx_check_s);
  bool storage_ok = true;
  for (auto& p : storage()) {
    storage_ok = false;
    invalid(std::move(p.message) +
                "; fix: write the tensor again so that its data matches its dims and type",
            "initializer storage does not match dims", p.tensor);
  }
  const bool valid = checked && storage_ok;
  clock.Lap(&StageTimings::guards_s);
  bool inferred = false;
  if (valid) {
    try {
      onnx::ShapeInferenceOptions strict{true, 1, false};
      onnx::shape_inference::InferShapes(model, &GuardedSchemas::Instance(), strict);
      inferred = true;
    } catch (const std::exception& e) {
      std::string what = e.what();
      while (!what.empty() &&
             (std::isspace(static_cast<unsigned char>(what.back())) || what.back() == '.')) {
        what.pop_back();
      }
      invalid("strict shape inference: " + what +
                  "; fix: the types or shapes in the model contradict what the named node computes "
                  "(onnx.shape_inference.infer_shapes(m, strict_mode=True) reports the same)",
              "fails strict shape inference");
    }
  }
  // Best effort, for types in the rule stage. Only on models the ONNX checker accepted and whose
  // tensors are consistent: the inference functions assume the checker's invariants (required
  // attributes present, input counts in range) and crash on models that break them.
  if (!inferred && checked && storage_ok) {
    try {
      onnx::ShapeInferenceOptions lenient{false, 0, false};
      onnx::shape_inference::InferShapes(model, &GuardedSchemas::Instance(), lenient);
    } catch (const std::exception&) {
    }
  }
  library_messages("shape inference");
}

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

Report Run(LoadedModel& m, const CheckOptions& options) {
  StageClock clock(options.timings);
  Report report;
  report.check_value = options.check_value;
  report.tool_version = std::string(ToolVersion());
  report.rule_set_version = std::string(kRuleSetVersion);
  auto& facts = report.model;
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

  // value_info as declared by the producer, before inference adds its own: the positions of the
  // complete entries, resolved to tensor ids once the index exists (it interns the same entries).
  std::vector<int> declared_complete;
  for (int k = 0; k < m.proto->graph().value_info_size(); ++k) {
    if (TypeFromProto(m.proto->graph().value_info(k).type()).complete)
      declared_complete.push_back(k);
  }
  clock.Lap(&StageTimings::guards_s);

  Emitter out(nullptr, options.check_value);
  // Beside the ONNX checker (which only reads the model), a second thread checks the tensor
  // storage and indexes the graph as it was loaded; both are done before shape inference starts
  // writing into the model (value_info, graph outputs, subgraphs). During shape inference it reads
  // the Q/DQ parameters that need no types (nodes, initializers and Constant values, which
  // inference does not write). The index and the Q/DQ table take the inferred types afterwards.
  // The second thread's stage times are taken on its own clock and added below.
  StageTimings beside_times;
  beside_times.thread_cpu = options.timings != nullptr && options.timings->thread_cpu;
  StageTimings* beside_clock_times = options.timings != nullptr ? &beside_times : nullptr;
  std::vector<StorageProblem> storage;
  std::optional<GraphIndex> index;
  std::optional<QuantTable> quant;
  const bool parallel = ParallelChecks();
  Beside indexing(parallel, [&] {
    StageClock beside_clock(beside_clock_times);
    storage = FindStorageProblems(*m.proto);
    beside_clock.Lap(&StageTimings::guards_s);
    index.emplace(m.proto->graph(), m.external.get(), GraphIndex::TypesLater{});
    beside_clock.Lap(&StageTimings::index_s);
  });
  clock.Restart();  // (when sequential, the job ran here and is timed on beside_times)
  std::optional<Beside> quant_reading;
  auto read_quant = [&] {
    StageClock beside_clock(beside_clock_times);
    quant.emplace(*index, GraphIndex::TypesLater{});
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
  if (options.timings != nullptr) {
    options.timings->guards_s += beside_times.guards_s;
    options.timings->index_s += beside_times.index_s;
    options.timings->quant_s += beside_times.quant_s;
  }
  GraphIndex& g = *index;
  g.RecordTypes();
  std::vector<bool> declared(static_cast<std::size_t>(g.tensor_count()), false);
  const auto declared_ids = g.DeclaredValueInfoIds();
  for (const int k : declared_complete) {
    const int id = declared_ids[static_cast<std::size_t>(k)];
    if (id >= 0) declared[static_cast<std::size_t>(id)] = true;
  }
  Emitter rules(&g, options.check_value);
  clock.Lap(&StageTimings::index_s);
  QuantTable& q = *quant;
  q.ReadTypes();
  facts.q_count = q.q_nodes().size();
  facts.dq_count = q.dq_nodes().size();
  clock.Lap(&StageTimings::quant_s);
  Units units(g, q);
  clock.Lap(&StageTimings::units_s);
  Context c(g, q, units, rules, options.check_value);
  c.model = m.proto;
  CheckOnnxBase(c, declared);
  CheckQdqNodes(c);
  CheckQdqEdges(c);
  CheckRequantizeUnits(c);
  CheckPassiveUnits(c);
  CheckComputeUnits(c);
  CheckReluClip(c);
  CheckPatterns(c);
  CheckClosure(c);
  clock.Lap(&StageTimings::rules_s);

  std::size_t edges = 0, owned = 0;
  for (int dq : q.dq_nodes()) {
    ++edges;
    if (c.claims.OwnsEdgeOf(dq)) ++owned;
  }
  for (int qn : q.q_nodes()) {
    if (q.PairedDq(qn) >= 0) continue;
    ++edges;
    if (c.claims.OwnsEdgeOf(qn)) ++owned;
  }
  report.summary.qdq_edges = edges;
  report.summary.owned_qdq_edges = owned;

  // Scope (2.1, reading 11): a quantized model is in scope even when its Q/DQ structure is
  // broken or it is not valid ONNX; an unquantized one is not_applicable even when invalid.
  const bool in_scope = InScope(c);
  std::vector<int> primary;  // primary node of each finding, for the fingerprints
  auto base = out.Take(&primary);
  const std::size_t base_count = base.size();
  auto found = rules.Take(&primary);
  report.findings = std::move(base);
  if (!in_scope) {
    // Only the ONNX validity result and the scope note are reported.
    primary.resize(base_count);
    Finding f;
    const RuleInfo& scope = rules::kScopeNoQuantizedEdge.info();
    f.rule = std::string(scope.id);
    f.severity = scope.severity;
    f.section = std::string(scope.section);
    f.group_key = std::string(scope.summary);
    f.message = edges == 0
                    ? "the model has no Q/DQ nodes; it is not a QDQ model"
                    : "the model has " + Count(static_cast<std::int64_t>(edges), "Q/DQ edge") +
                          " but no Q/DQ node on an operator's data path (e.g. Q/DQ only "
                          "between graph inputs and outputs, or only on parameters)";
    f.values = {{"qdq_edges", std::to_string(edges)}};
    report.findings.push_back(std::move(f));
    primary.push_back(-1);
  } else {
    for (auto& f : found) report.findings.push_back(std::move(f));
  }
  // Chip targets: judged on every model, in scope or not (a float model has a portability too).
  std::vector<std::string> chips;
  if (!options.targets.empty()) {
    chips = ResolveTargets(options.targets);
    primary.resize(report.findings.size());
    for (auto& f : EvaluateTargets(g, *m.proto, chips, &primary))
      report.findings.push_back(std::move(f));
  }
  // The Pulsar2 build configuration: judged on every model, like the targets.
  if (options.pulsar2_config) {
    primary.resize(report.findings.size());
    for (auto& f : EvaluatePulsar2Config(*options.pulsar2_config, g, q, units, chips, &primary))
      report.findings.push_back(std::move(f));
  }
  AssignFingerprints(&g, report.findings, primary);
  AssignCauses(&g, m.proto, report.findings, primary);
  // Every string that can come from the model is cleaned once, here (see CleanText).
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

const onnx::ISchemaRegistry* GuardedSchemaRegistry() { return &GuardedSchemas::Instance(); }

int MaxKnownOnnxOpset() { return MaxKnownOpset(); }

}  // namespace axqc::detail
