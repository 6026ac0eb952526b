// The ONNX validity stage (onnx_validity.h): the ONNX checker, the storage of every tensor and
// strict shape inference, with the guards that keep hostile models from crashing ONNX's inference
// functions, and the hints that say how to fix what ONNX reports.
#include "onnx_validity.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>
#include <onnx/shape_inference/implementation.h>

#include <cctype>
#include <unordered_map>

#include "function_calls.h"
#include "onnx_model_check.h"
#include "pipeline.h"
#include "stdout_capture.h"

namespace axqc::detail {
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

}  // namespace

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

const onnx::ISchemaRegistry* GuardedSchemaRegistry() { return &GuardedSchemas::Instance(); }

int MaxKnownOnnxOpset() { return MaxKnownOpset(); }

}  // namespace axqc::detail
