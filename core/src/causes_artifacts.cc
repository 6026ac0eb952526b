// The recognisers of the producer artifacts (causes_artifacts.h): region recognisers, which find
// an artifact's nodes from one node of it, and root recognisers, which tell from a root finding
// and its surroundings which artifact explains it. Their rows are in causes_hints.cc.
#include "causes_artifacts.h"

#include <set>
#include <string>
#include <unordered_set>

#include "onnx_util.h"
#include "rules.h"

namespace axqc::detail {

namespace {

bool IsOpAt(const GraphIndex& g, int n, std::string_view op) {
  return n >= 0 && IsOnnxOp(g.node(n), op);
}
int Out0Of(const GraphIndex& g, int n) { return n >= 0 ? g.OutputId(n, 0) : -1; }
// The only consumer of node n's output 0 (-1 unless exactly one use, not a graph output).
int OnlyConsumerOf(const GraphIndex& g, int n) {
  const int id = Out0Of(g, n);
  if (id < 0 || g.IsGraphOutputId(id)) return -1;
  auto u = g.ConsumersOf(id);
  return u.size() == 1 ? u[0].node : -1;
}
bool ReadsTensor(const GraphIndex& g, int node, int id) {
  for (const int x : g.InputIds(node)) {
    if (x == id && id >= 0) return true;
  }
  return false;
}

// Every input of `node` is an initializer or the output of a Constant node.
bool FromConstantsOnly(const GraphIndex& g, int node) {
  for (const int id : g.InputIds(node)) {
    if (id < 0) continue;
    const int p = g.ProducerOf(id);
    if (p >= 0 ? !IsOpAt(g, p, "Constant") : g.InitializerOf(id) == nullptr) return false;
  }
  return true;
}

}  // namespace

// ------------------------------------------------------------------ region recognisers

bool Relu6AtRelu(const GraphIndex& g, int relu, ArtifactRegion* out) {
  const int k = OnlyConsumerOf(g, relu);
  if (!IsOpAt(g, k, "Clip") || g.InputId(k, 0) != Out0Of(g, relu)) return false;
  *out = {relu, {relu, k}};
  return true;
}

bool HardSwishAtHardSigmoid(const GraphIndex& g, int hard_sigmoid, ArtifactRegion* out) {
  const int x = g.InputId(hard_sigmoid, 0);
  for (const auto& u : g.ConsumersOf(Out0Of(g, hard_sigmoid))) {
    if (IsOpAt(g, u.node, "Mul") && ReadsTensor(g, u.node, x)) {
      *out = {hard_sigmoid, {hard_sigmoid, u.node}};
      return true;
    }
  }
  return false;
}

bool GeluAtErf(const GraphIndex& g, int erf, ArtifactRegion* out) {
  const int d = g.ProducerOf(g.InputId(erf, 0));
  const int a = OnlyConsumerOf(g, erf);
  const int m1 = a >= 0 ? OnlyConsumerOf(g, a) : -1;
  if (!(IsOpAt(g, d, "Div") || IsOpAt(g, d, "Mul")) || !IsOpAt(g, a, "Add") ||
      !IsOpAt(g, m1, "Mul")) {
    return false;
  }
  *out = {d, {d, erf, a, m1}};
  const int m2 = OnlyConsumerOf(g, m1);
  if (IsOpAt(g, m2, "Mul")) out->nodes.push_back(m2);
  return true;
}

bool QatConvBnAtConv(const GraphIndex& g, int conv, ArtifactRegion* out) {
  const int d = OnlyConsumerOf(g, conv);
  if (!IsOpAt(g, d, "Div") || g.InputId(d, 0) != Out0Of(g, conv)) return false;
  ArtifactRegion r{conv, {conv, d}};
  int next = OnlyConsumerOf(g, d);
  if (IsOpAt(g, next, "Add")) {
    r.nodes.push_back(next);
    next = OnlyConsumerOf(g, next);
  }
  if (!IsOpAt(g, next, "BatchNormalization")) return false;
  r.nodes.push_back(next);
  *out = std::move(r);
  return true;
}

bool LayerNormAtReduceMean(const GraphIndex& g, int reduce_mean, ArtifactRegion* out) {
  const int r1 = reduce_mean;
  const int x = g.InputId(r1, 0);
  for (const auto& u : g.ConsumersOf(Out0Of(g, r1))) {
    const int s = u.node;
    if (!IsOpAt(g, s, "Sub") || g.InputId(s, 0) != x || u.slot != 1) continue;
    int pw = -1, dv = -1;
    for (const auto& v : g.ConsumersOf(Out0Of(g, s))) {
      if (IsOpAt(g, v.node, "Pow") && v.slot == 0) pw = v.node;
      if (IsOpAt(g, v.node, "Div") && v.slot == 0) dv = v.node;
    }
    const int r2 = OnlyConsumerOf(g, pw);
    const int a1 = IsOpAt(g, r2, "ReduceMean") ? OnlyConsumerOf(g, r2) : -1;
    const int sq = IsOpAt(g, a1, "Add") ? OnlyConsumerOf(g, a1) : -1;
    if (pw < 0 || dv < 0 || !IsOpAt(g, sq, "Sqrt") || OnlyConsumerOf(g, sq) != dv) continue;
    *out = {r1, {r1, s, pw, r2, a1, sq, dv}};
    const int mu = OnlyConsumerOf(g, dv);
    if (IsOpAt(g, mu, "Mul")) {
      out->nodes.push_back(mu);
      const int ad = OnlyConsumerOf(g, mu);
      if (IsOpAt(g, ad, "Add")) out->nodes.push_back(ad);
    }
    return true;
  }
  return false;
}

bool LinearAtTranspose(const GraphIndex& g, int transpose, ArtifactRegion* out) {
  const int src = g.ProducerOf(g.InputId(transpose, 0));
  const int mm = OnlyConsumerOf(g, transpose);
  if (!IsOpAt(g, src, "DequantizeLinear") || !IsOpAt(g, mm, "MatMul") ||
      g.InputId(mm, 1) != Out0Of(g, transpose)) {
    return false;
  }
  *out = {transpose, {transpose, mm}};
  const int add = OnlyConsumerOf(g, mm);
  if (IsOpAt(g, add, "Add")) out->nodes.push_back(add);
  return true;
}

// The integer arithmetic an exporter writes from a Shape or Size node to a shape input: torch's
// reshape/expand with -1 (Shape -> Gather -> Unsqueeze -> Concat, ConstantOfShape -> Mul ->
// Equal -> Where, Range -> Gather -> ReduceProd, ...). Forward from the anchor over integer (and
// boolean: Equal, Not) results, then the integer nodes that feed the region from constants only
// (a Range over initializers).
bool ShapeSubgraphAtShape(const GraphIndex& g, int shape, ArtifactRegion* out) {
  static const std::set<std::string_view> kStructural = {
      "Gather", "Unsqueeze", "Squeeze",  "Concat", "Slice",           "Cast", "Shape",
      "Size",   "Reshape",   "Identity", "Expand", "ConstantOfShape", "Tile"};
  static const std::set<std::string_view> kArith = {"Mul",   "Div",  "Add",   "Sub",       "Mod",
                                                    "Floor", "Ceil", "Range", "Equal",     "Where",
                                                    "Not",   "Max",  "Min",   "ReduceProd"};
  static const std::set<std::string_view> kBoolResult = {"Equal", "Not"};
  ArtifactRegion r{shape, {shape}};
  std::unordered_set<int> in{shape};
  auto integer = [&](int node) {
    const int et = g.ElemTypeOf(Out0Of(g, node));
    return et == onnx::TensorProto::INT64 || et == onnx::TensorProto::INT32 ||
           (et == onnx::TensorProto::BOOL && kBoolResult.contains(g.node(node).op_type()));
  };
  for (std::size_t k = 0; k < r.nodes.size() && r.nodes.size() < 256; ++k) {
    for (const int id : g.OutputIds(r.nodes[k])) {
      for (const auto& u : g.ConsumersOf(id)) {
        const int c = u.node;
        if (in.contains(c) || !IsOnnxDomain(g.node(c).domain())) continue;
        const std::string& op = g.node(c).op_type();
        const int et = g.ElemTypeOf(Out0Of(g, c));
        if ((kStructural.contains(op) && (integer(c) || et == 0)) ||
            (kArith.contains(op) && integer(c))) {
          in.insert(c);
          r.nodes.push_back(c);
        }
      }
    }
  }
  const auto nodes = r.nodes;
  for (const int n : nodes) {
    for (const int id : g.InputIds(n)) {
      const int p = g.ProducerOf(id);
      if (p < 0 || in.contains(p) || !IsOnnxDomain(g.node(p).domain()) ||
          !(kArith.contains(g.node(p).op_type()) || kStructural.contains(g.node(p).op_type())) ||
          !integer(p) || !FromConstantsOnly(g, p)) {
        continue;
      }
      in.insert(p);
      r.nodes.push_back(p);
    }
  }
  *out = std::move(r);
  return true;
}

// ------------------------------------------------------------------ root recognisers

bool RootInFunction(const RootFinding& f) {
  if (f.primary < 0 || f.model == nullptr) return false;
  const auto& node = f.g.node(f.primary);
  for (const auto& fn : f.model->functions()) {
    if (fn.name() == node.op_type() && fn.domain() == node.domain()) return true;
  }
  return false;
}

bool RootAtContribQdq(const RootFinding& f) {
  if (f.primary < 0) return false;
  const auto& node = f.g.node(f.primary);
  return node.domain() == "com.microsoft" &&
         (node.op_type() == "QuantizeLinear" || node.op_type() == "DequantizeLinear");
}

bool RootAtQOperator(const RootFinding& f) {
  if (f.primary < 0) return false;
  const auto& node = f.g.node(f.primary);
  const std::string& op = node.op_type();
  if (node.domain() == "com.microsoft") {
    return op.find("Quantize") != std::string::npos || op.rfind("QLinear", 0) == 0 ||
           op.rfind("QGemm", 0) == 0 || op.rfind("QAttention", 0) == 0;
  }
  if (!IsOnnxDomain(node.domain())) return false;
  return op.rfind("QLinear", 0) == 0 || op == "ConvInteger" || op == "MatMulInteger" ||
         op == "DynamicQuantizeLinear";
}

// A Constant node whose output (directly or through Identity) is a Q/DQ scale or zero point.
bool RootConstantFeedsQParams(const RootFinding& f) {
  if (f.rule != rules::kOnnxConstantNode.id() || f.primary < 0) return false;
  const GraphIndex& g = f.g;
  std::vector<int> ids{Out0Of(g, f.primary)};
  for (std::size_t k = 0; k < ids.size() && k < 64; ++k) {
    for (const auto& u : g.ConsumersOf(ids[k])) {
      const auto& n = g.node(u.node);
      if ((IsOnnxOp(n, "QuantizeLinear") || IsOnnxOp(n, "DequantizeLinear")) && u.slot >= 1) {
        return true;
      }
      if (IsOnnxOp(n, "Identity")) ids.push_back(Out0Of(g, u.node));
    }
  }
  return false;
}

bool RootConstantNode(const RootFinding& f) { return f.rule == rules::kOnnxConstantNode.id(); }

// The finding is at a Cast of an initializer or about a tensor such a Cast produces.
bool RootFromInitializerCast(const RootFinding& f) {
  auto cast_of_init = [&](int n) {
    return IsOpAt(f.g, n, "Cast") && f.g.InitializerOf(f.g.InputId(n, 0)) != nullptr;
  };
  if (cast_of_init(f.primary)) return true;
  for (const int t : f.tensors) {
    if (t >= 0 && cast_of_init(f.g.ProducerOf(t))) return true;
  }
  return false;
}

bool RootValueInfoMissing(const RootFinding& f) {
  return f.rule == rules::kOnnxValueInfoMissing.id();
}

bool RootRequantizeIdentity(const RootFinding& f) {
  return f.rule == rules::kQdqRequantizeIdentity.id();
}

bool RootUncoveredShape(const RootFinding& f) {
  return f.rule == rules::kClosureUncoveredNode.id() &&
         (IsOpAt(f.g, f.primary, "Shape") || IsOpAt(f.g, f.primary, "Size"));
}

// op/passive-params at a Slice or Gather whose input feeds several Slices/Gathers.
bool RootSplitLike(const RootFinding& f) {
  if (f.rule != rules::kOpPassiveParams.id()) return false;
  const GraphIndex& g = f.g;
  for (const int n : f.nodes) {
    if (!IsOpAt(g, n, "Slice") && !IsOpAt(g, n, "Gather")) continue;
    const int x = g.InputId(n, 0);
    int parts = 0;
    for (const auto& u : g.ConsumersOf(x)) {
      if (u.slot == 0 && (IsOpAt(g, u.node, "Slice") || IsOpAt(g, u.node, "Gather"))) ++parts;
      if (parts >= 2) break;
    }
    if (parts >= 2) return true;
  }
  return false;
}

bool RootFromDedupIdentity(const RootFinding& f) {
  for (const int t : f.tensors) {
    const int p = f.g.ProducerOf(t);
    if (IsOpAt(f.g, p, "Identity") && f.g.InitializerOf(f.g.InputId(p, 0)) != nullptr) {
      return true;
    }
  }
  return false;
}

namespace {

// A model of PyTorch's dynamo exporter (producer pytorch >= 2.5), whose optimizer folded
// constant Q -> DQ chains; torch 1.x's TorchScript exporter never folds them, so a float weight
// there was never quantized (e.g. eager QAT has no ConvTranspose fake-quant).
bool DynamoExporter(const onnx::ModelProto* model) {
  if (model == nullptr || model->producer_name() != "pytorch") return false;
  const std::string& v = model->producer_version();
  int major = 0, minor = 0;
  std::size_t i = 0;
  for (; i < v.size() && v[i] >= '0' && v[i] <= '9' && major < 1000; ++i) {
    major = major * 10 + (v[i] - '0');
  }
  if (i == 0 || i >= v.size() || v[i] != '.') return false;
  for (++i; i < v.size() && v[i] >= '0' && v[i] <= '9' && minor < 1000; ++i) {
    minor = minor * 10 + (v[i] - '0');
  }
  return major > 2 || (major == 2 && minor >= 5);
}

// A model written by onnxruntime's quantizer (onnxruntime.quantization sets this producer).
bool OrtQuantizer(const onnx::ModelProto* model) {
  return model != nullptr && model->producer_name() == "onnx.quantize";
}

}  // namespace

// At a Conv/ConvTranspose/Gemm/MatMul whose input 0 is dequantized and whose input 1 is an FP32
// initializer, in a dynamo export: the weight's Q/DQ was folded away by its optimizer.
bool RootWeightFoldedToFloat(const RootFinding& f) {
  if (!DynamoExporter(f.model)) return false;
  if (f.rule != rules::kQdqConstForm.id() && f.rule != rules::kOpInputNotQuantized.id()) {
    return false;
  }
  const GraphIndex& g = f.g;
  const int p = f.primary;
  if (!IsOpAt(g, p, "Conv") && !IsOpAt(g, p, "ConvTranspose") && !IsOpAt(g, p, "Gemm") &&
      !IsOpAt(g, p, "MatMul")) {
    return false;
  }
  const int w = g.InputId(p, 1);
  const auto* init = w >= 0 ? g.InitializerOf(w) : nullptr;
  return init != nullptr && init->data_type() == onnx::TensorProto::FLOAT &&
         IsOpAt(g, g.ProducerOf(g.InputId(p, 0)), "DequantizeLinear");
}

// About a DQ output whose Q is unsigned with zero point 0 and reads a compute operator's output
// (not a DQ, a graph input or a pass-through), in a model of onnxruntime's quantizer: where
// quantize_static removed a Relu/Clip.
bool RootOrtRemovedActivation(const RootFinding& f) {
  if (!OrtQuantizer(f.model)) return false;
  static const std::set<std::string_view> kCompute = {
      "Conv", "ConvTranspose",     "Gemm",       "MatMul", "Add", "Sub",
      "Mul",  "GlobalAveragePool", "AveragePool"};
  const GraphIndex& g = f.g;
  for (const int t : f.tensors) {
    const int dq = g.ProducerOf(t);
    if (!IsOpAt(g, dq, "DequantizeLinear")) continue;
    const int q = g.ProducerOf(g.InputId(dq, 0));
    if (!IsOpAt(g, q, "QuantizeLinear")) continue;
    const int src = g.ProducerOf(g.InputId(q, 0));
    if (src < 0 || !IsOnnxDomain(g.node(src).domain()) ||
        !kCompute.contains(g.node(src).op_type())) {
      continue;
    }
    const int zp = g.InputId(q, 2);
    const auto* zinit = zp >= 0 ? g.InitializerOf(zp) : nullptr;
    if (zinit == nullptr || (zinit->data_type() != onnx::TensorProto::UINT8 &&
                             zinit->data_type() != onnx::TensorProto::UINT16)) {
      continue;
    }
    const auto v = ReadInts(*zinit, g.external(), 1);
    if (v && v->size() == 1 && (*v)[0] == 0) return true;
  }
  return false;
}

bool RootOrtAsymmetricActivation(const RootFinding& f) {
  return OrtQuantizer(f.model) &&
         (f.rule == rules::kOpMatmulType.id() || f.rule == rules::kOpSameTypeInputs.id() ||
          f.rule == rules::kOpGridsampleType.id());
}

}  // namespace axqc::detail
