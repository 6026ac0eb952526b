#include "causes.h"

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "axqc/catalog.h"
#include "onnx_util.h"
#include "optable.h"

namespace axqc::detail {

std::string_view RelationName(Relation r) {
  switch (r) {
    case Relation::kSameNode:
      return "same node";
    case Relation::kSameEdge:
      return "same edge";
    case Relation::kParamFeed:
      return "Constant feeding the parameter";
    case Relation::kQdqEdge:
      return "one Q/DQ edge";
    case Relation::kArtifact:
      return "producer artifact";
  }
  return "same node";
}

std::string_view RelationDescription(Relation r) {
  switch (r) {
    case Relation::kSameNode:
      return "both findings are at the same node (for the same rule: about the same tensor; the "
             "earlier one is the cause)";
    case Relation::kSameEdge:
      return "one tensor judged from both ends: one finding at the node producing it, the other "
             "at a node reading it (for the same rule the producer's end is the cause)";
    case Relation::kParamFeed:
      return "the cause's Constant node produces, directly or through Identity nodes, the tensor "
             "the consequence is about, in an input where an initializer would be accepted (a "
             "scale or zero point, a bias, a Clip bound, a static parameter): folding the "
             "Constant removes both";
    case Relation::kQdqEdge:
      return "one Q/DQ edge judged from both ends: the cause at the Q node, the consequence at the "
             "DQ that pairs with it or reads the Q's output through one node";
    case Relation::kArtifact:
      return "both on one recognised producer artifact (the operator or pattern that failed to "
             "form): the cause is the finding at the artifact's anchor node";
  }
  return "";
}

namespace {

using R = Relation;

// The one table of causal links. Order matters: the first row that explains a finding decides
// its cause.
constexpr std::array kLinks{
    CausalLink{rules::kOnnxConstantNode, rules::kQdqScaleNotInitializer, R::kParamFeed,
               "a scale from a Constant node"},
    CausalLink{rules::kOnnxConstantNode, rules::kOpClipDynamic, R::kParamFeed,
               "a Clip bound from a Constant node"},
    CausalLink{rules::kOnnxConstantNode, rules::kOpStaticParam, R::kParamFeed,
               "a static parameter (norm affine, Pow exponent, grid) from a Constant node"},
    CausalLink{rules::kOnnxConstantNode, rules::kQdqConstForm, R::kParamFeed,
               "a bias from a Constant node (an FP32 initializer bias is allowed)"},
    CausalLink{rules::kOnnxConstantNode, rules::kQdqValueUnreadable, R::kParamFeed,
               "a value not readable because a Constant node produces it"},
    CausalLink{rules::kOnnxConstantNode, rules::kClosureUncoveredNode, R::kSameNode,
               "the Constant node itself"},
    CausalLink{rules::kOnnxConstantNode, rules::kOnnxValueInfoMissing, R::kSameNode,
               "the output of the Constant node (an initializer needs no value_info)"},
    CausalLink{rules::kOpReluForm, rules::kOpReluForm, R::kSameEdge,
               "one Relu/Clip edge without Q/DQ, reported at both ends (e.g. Relu -> Clip)"},
    CausalLink{rules::kOpReluForm, rules::kOpOutputNotQuantized, R::kSameEdge,
               "a compute output into a Relu/Clip that cannot be its fusion tail (e.g. Conv -> "
               "Relu -> Q(S8)): the tail did not form"},
    CausalLink{rules::kOpOutputNotQuantized, rules::kOpInputNotQuantized, R::kSameEdge,
               "one float edge between two quant-only operators"},
    CausalLink{rules::kRoleActivationType, rules::kRoleActivationType, R::kSameNode,
               "one activation edge judged by its producer and by its consumer (e.g. U4)"},
    CausalLink{rules::kQdqQFanout, rules::kQdqDqInputSource, R::kQdqEdge,
               "a node between Q and DQ (e.g. Cast): the Q has another consumer and the DQ "
               "another source"},
    CausalLink{rules::kQdqQFanout, rules::kClosureOrphanQdq, R::kQdqEdge,
               "the DQ behind a Q with extra consumers has no purpose of its own"},
    CausalLink{rules::kQdqPairMismatch, rules::kQdqPairValueMismatch, R::kSameNode,
               "one Q/DQ pair whose parameters differ in structure and in value"},
};

// ---------------------------------------------------------------- artifacts and hints

constexpr std::array kArtifactTable{
    ArtifactInfo{"qparams-as-numbers", "qparams given as Python numbers", "constant-to-initializer",
                 "onnx/constant-node whose Constant feeds the scale or zero point of a Q/DQ node",
                 "the scale/zero point was passed to the fake-quant as a Python number, so the "
                 "exporter wrote one Constant node per use; `axqc fix` constant-to-initializer "
                 "folds them into initializers (or keep the qparams as registered buffers / "
                 "tensors, which export as initializers)"},
    ArtifactInfo{"torch-dedup-identity", "initializer behind a de-duplication Identity",
                 "identity-of-initializer",
                 "a root finding about a tensor produced by Identity(initializer)",
                 "PyTorch's exporter de-duplicates equal-valued initializers (scales, zero "
                 "points, biases, LayerNorm affine) and writes Identity(initializer) for every "
                 "further use; `axqc fix` identity-of-initializer makes the consumers read the "
                 "initializer directly"},
    ArtifactInfo{"constant-node", "Constant nodes of a raw export", "constant-to-initializer",
                 "onnx/constant-node that no other artifact explains",
                 "the exporter wrote a literal tensor (a bound, a bias, a number in arithmetic) "
                 "as a Constant node; `axqc fix` constant-to-initializer folds it into an "
                 "initializer (torch.onnx.export keeps Constant nodes even with "
                 "do_constant_folding)"},
    ArtifactInfo{"shape-subgraph", "shape subgraph of a dynamic-shape export", "reshape-copy-dims",
                 "a Shape or Size node and the integer nodes it feeds (Gather, Unsqueeze, "
                 "Concat, ConstantOfShape, Equal, Where, Range, ReduceProd, ...) up to a shape "
                 "input",
                 "x.view(B, ...) / reshape and expand with sizes read from the tensor or with -1 "
                 "export as Shape -> Gather -> Unsqueeze -> Concat (and ConstantOfShape -> Mul "
                 "-> Equal -> Where for expand's -1) -> Reshape/Expand; `axqc fix` "
                 "reshape-copy-dims writes a Reshape target built from its own input's dims as a "
                 "constant with 0 (the batch stays dynamic) and fold-shape folds all of that "
                 "arithmetic when every input shape is static (or export with static shapes / "
                 "reshape(-1, ...) with constant sizes)"},
    ArtifactInfo{"value-info-missing", "no value_info in a raw export", "value-info",
                 "onnx/value-info-missing that no other cause explains",
                 "raw exporter output carries no value_info for intermediate tensors; `axqc fix` "
                 "value-info writes it from ONNX shape inference (or run "
                 "onnx.shape_inference.infer_shapes and save its result)"},
    ArtifactInfo{"relu6-as-relu-clip", "relu6 exported as Relu -> Clip", "",
                 "Relu whose only consumer is Clip (with its bound Constants)",
                 "F.relu6 / nn.ReLU6 exports as Relu -> Clip(0, 6) (bounds as Constant nodes); "
                 "a fusion tail cannot follow a tail, so the edge needs Q/DQ: use "
                 "torch.clamp(x, 0, 6) or nn.Hardtanh(0, 6), which export one Clip "
                 "(Clip(Relu(x), 0, 6) == Clip(x, 0, 6)), then `axqc fix` "
                 "constant-to-initializer folds the bounds"},
    ArtifactInfo{"hardswish-as-hardsigmoid-mul", "HardSwish at opset 13 as HardSigmoid + Mul", "",
                 "HardSigmoid whose output is multiplied by its own input",
                 "HardSwish exists in ONNX from opset 14; at opset 13 the exporter writes "
                 "HardSigmoid -> Mul(x, .), whose inner edge is float: export with opset >= 14 "
                 "(one HardSwish node) or fake-quantize the HardSigmoid output"},
    ArtifactInfo{"gelu-decomposed", "GELU decomposed into Div, Erf, Add, Mul", "",
                 "Div/Mul -> Erf -> Add -> Mul (-> Mul) with their constants",
                 "F.gelu / nn.GELU exports below opset 20 as Div -> Erf -> Add -> Mul -> Mul "
                 "with FP32 constants (ONNX Gelu exists from opset 20; torch 1.13 cannot export "
                 "it): no rewrite repairs it; export Gelu at opset >= 20, or fake-quantize every "
                 "node of the decomposition and its constants"},
    ArtifactInfo{"layernorm-decomposed", "LayerNorm decomposed at opset < 17", "",
                 "ReduceMean -> Sub -> Pow -> ReduceMean -> Add -> Sqrt -> Div (-> Mul -> Add)",
                 "nn.LayerNorm exports below opset 17 as ReduceMean, Sub, Pow, ReduceMean, Add, "
                 "Sqrt, Div, Mul, Add (LayerNormalization exists from opset 17): export with "
                 "opset >= 17 (one LayerNormalization node)"},
    ArtifactInfo{"qat-conv-bn-unfolded", "QAT Conv+BatchNorm exported before convert", "",
                 "Conv -> Div (-> Add) -> BatchNormalization",
                 "a torch.ao QAT ConvBn module (fuse_modules_qat / prepare_qat_fx) exports "
                 "before convert as Conv -> Div by the BN factor (-> Add bias) -> "
                 "BatchNormalization, so the Conv+BN pattern (6.4) does not form and the inner "
                 "edges are float: fold the BatchNormalization into the Conv weight and bias "
                 "before export (e.g. torch.ao.quantization.convert, or "
                 "torch.nn.utils.fusion.fuse_conv_bn_eval on the eval model, then fake-quantize "
                 "the folded weight), or export Conv -> BatchNormalization directly"},
    ArtifactInfo{"linear-as-matmul", "Linear exported as Transpose + MatMul", "",
                 "Transpose of a dequantized weight into MatMul (and the bias Add after it)",
                 "nn.Linear on a 3-D input (or bias=False) exports as Transpose(DQ(W)) -> MatMul "
                 "(-> Add bias) instead of Gemm: fake-quantize the transposed weight (store W^T "
                 "and use torch.matmul) and quantize the MatMul output before the bias Add, or "
                 "flatten to 2-D so that the exporter writes Gemm"},
    ArtifactInfo{"split-as-slices", "split/chunk exported as Slices", "",
                 "op/passive-params at an exit of a Slice or Gather whose input feeds several "
                 "Slices/Gathers",
                 "torch.split / chunk / unbind / indexing export as one Slice or Gather per part, "
                 "each a pass-through whose exit must share its entry's parameters (unlike Split, "
                 "5.11): observe the parts with the input's fake-quant, or quantize before the "
                 "split only"},
    ArtifactInfo{"dropout-removed", "Dropout removed at export", "requantize-identity",
                 "qdq/requantize-identity (DQ -> Q with different parameters)",
                 "Dropout / StochasticDepth between two fake-quants is removed at export and "
                 "leaves DQ -> Q with different parameters; `axqc fix` requantize-identity marks "
                 "the requantization with an Identity (6.7), or let both fake-quants share one "
                 "observer"},
    ArtifactInfo{"qoperator-format", "QOperator or com.microsoft quantization", "",
                 "a root finding at a QLinear*/*Integer node, DynamicQuantizeLinear or a "
                 "com.microsoft quantization node",
                 "the model is quantized in the QOperator format or with com.microsoft "
                 "operators, not with ai.onnx QuantizeLinear/DequantizeLinear: quantize again "
                 "in QDQ format (e.g. onnxruntime quantize_static(..., "
                 "quant_format=QuantFormat.QDQ)) with ai.onnx Q/DQ"},
    ArtifactInfo{"contrib-qdq", "com.microsoft QuantizeLinear/DequantizeLinear",
                 "contrib-qdq-to-onnx",
                 "a root finding at a com.microsoft QuantizeLinear or DequantizeLinear node",
                 "onnxruntime.quantization writes Q/DQ in its com.microsoft domain for 16-bit and "
                 "4-bit types when the model's opset is below 21 (and for every type with "
                 "extra_options={'UseQDQContribOps': True}); `axqc fix` contrib-qdq-to-onnx "
                 "rewrites them as ai.onnx Q/DQ (the same computation) where the opset has the "
                 "type: every spec type at opset >= 21, 8-bit and the INT32 bias from opset 13. "
                 "16-bit or 4-bit types below opset 21 cannot be written as ai.onnx Q/DQ: convert "
                 "the float model to opset 21 (onnx.version_converter) before quantize_static"},
    ArtifactInfo{"dynamo-qparam-casts", "zero points Cast from the fake-quant's buffers",
                 "cast-of-initializer",
                 "a root finding about a tensor produced by Cast(initializer) or at such a Cast",
                 "PyTorch's dynamo exporter (torch.onnx.export(..., dynamo=True), the default "
                 "since torch 2.9) writes a fake-quant's zero point as Cast(int32 buffer, "
                 "to=UINT8/INT8) in front of QuantizeLinear/DequantizeLinear; `axqc fix` "
                 "cast-of-initializer folds each Cast of an initializer into an initializer of "
                 "the target type when every value converts exactly"},
    ArtifactInfo{"ort-activation-removed", "Relu/Clip removed by quantize_static", "",
                 "a root finding about an unsigned activation with zero point 0 whose "
                 "QuantizeLinear reads a compute operator's output, in a model of onnxruntime's "
                 "quantizer (producer onnx.quantize)",
                 "quantize_static removes a Relu or Clip after a quantized operator when "
                 "activations are asymmetric (QUInt8/QUInt16): the operator's output Q takes the "
                 "activation's range (zero point 0) and the clamp happens in the integer "
                 "saturation. The spec then sees no Relu/Clip: no fusion tail, and this edge is "
                 "an ordinary activation of the operator before it. Quantize with symmetric "
                 "activations (activation_type=QuantType.QInt8, extra_options="
                 "{'ActivationSymmetric': True}): quantize_static then keeps the Relu/Clip with "
                 "Q/DQ on both sides, the standalone form of 5.15"},
    ArtifactInfo{"ort-asymmetric-activations", "asymmetric activations of quantize_static", "",
                 "a root op/matmul-type, op/same-type-inputs or op/gridsample-type finding in a "
                 "model of onnxruntime's quantizer (producer onnx.quantize)",
                 "quantize_static(..., activation_type=QuantType.QUInt8 or QUInt16) quantizes "
                 "activations asymmetrically (unsigned, zero point from calibration); MatMul and "
                 "GridSample take symmetric S8/S16 inputs of one type: quantize with "
                 "activation_type=QuantType.QInt8 (or QInt16) and extra_options="
                 "{'ActivationSymmetric': True}, or exclude the operator (nodes_to_exclude). "
                 "With asymmetric activations quantize_static also removes Relu/Clip after a "
                 "quantized operator; with symmetric ones it keeps them, quantized on both sides"},
    ArtifactInfo{
        "weight-qdq-folded", "weight Q/DQ folded to float by an optimizer", "",
        "qdq/const-form or op/input-not-quantized at a Conv, ConvTranspose, Gemm or "
        "MatMul whose data input is dequantized and whose weight is an FP32 initializer",
        "the operator's activations are quantized but its weight is a float initializer: "
        "an optimizer constant-folded the weight's QuantizeLinear -> DequantizeLinear. "
        "Export again with the weight Q/DQ kept: torch.onnx.export(..., dynamo=True, "
        "optimize=False) (or an onnxscript release that no longer folds Q/DQ, "
        "microsoft/onnxscript#2713), torch.onnx.export(..., do_constant_folding=False) for "
        "the TorchScript exporter, or do not save an onnxruntime-optimized model "
        "(SessionOptions.optimized_model_filepath) as the QDQ model; no rewrite can bring "
        "the quantization back"},
    ArtifactInfo{"qdq-in-function", "Q/DQ inside a model-local function", "inline-functions",
                 "a root finding at a call of a model-local function",
                 "the exporter wrapped quantized code in a model-local function (e.g. "
                 "torch.onnx.export(..., export_modules_as_functions=...)); `axqc fix` "
                 "inline-functions inlines it so every node and Q/DQ is checked in the graph"},
};

const ArtifactInfo& Art(std::string_view id) {
  for (const auto& a : kArtifactTable) {
    if (a.id == id) return a;
  }
  return kArtifactTable[0];
}

Hint MakeHint(std::string_view id) {
  const auto& a = Art(id);
  return Hint{std::string(a.id), std::string(a.title), std::string(a.text), std::string(a.rewrite)};
}

class Causes {
 public:
  Causes(const GraphIndex& g, const onnx::ModelProto* model, std::vector<Finding>& fs,
         const std::vector<int>& primary)
      : g_(g), model_(model), fs_(fs) {
    const std::size_t n = fs.size();
    prim_.assign(n, -1);
    nodes_.resize(n);
    tensors_.resize(n);
    // Display name -> node, only for the names the findings carry (a map of every node would cost
    // more than the findings on a large model with few of them).
    std::unordered_map<std::string_view, int> by_name;
    for (const auto& f : fs) {
      for (const auto& name : f.nodes) by_name.emplace(name, -1);
    }
    if (!by_name.empty()) {
      for (int i = 0; i < g.node_count(); ++i) {
        auto it = by_name.find(g.NodeName(i));
        if (it != by_name.end() && it->second < 0) it->second = i;
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      const int p = i < primary.size() ? primary[i] : -1;
      prim_[i] = p >= 0 && p < g.node_count() ? p : -1;
      for (const auto& name : fs[i].nodes) {
        auto it = by_name.find(name);
        if (it != by_name.end() && it->second >= 0) nodes_[i].push_back(it->second);
      }
      for (const auto& t : fs[i].tensors) tensors_[i].push_back(g.TensorId(t));
      if (prim_[i] >= 0) at_[prim_[i]].push_back(i);
    }
    cause_.assign(n, kNone);
  }

  void Run() {
    Link();
    Regions();
    BreakCycles();
    for (std::size_t i = 0; i < fs_.size(); ++i) {
      if (cause_[i] != kNone) fs_[i].cause = fs_[cause_[i]].id;
    }
    RootHints();
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  static constexpr std::size_t kMaxFanOut = 256;
  static constexpr std::size_t kMaxAtNode = 1024;

  bool IsOp(int n, std::string_view op) const { return n >= 0 && IsOnnxOp(g_.node(n), op); }
  int Out0(int n) const { return n >= 0 ? g_.OutputId(n, 0) : -1; }
  std::span<const Use> Uses(int id) const { return g_.ConsumersOf(id); }
  // The only consumer of node n's output 0 (-1 unless exactly one use, not a graph output).
  int OnlyConsumer(int n) const {
    const int id = Out0(n);
    if (id < 0 || g_.IsGraphOutputId(id)) return -1;
    auto u = Uses(id);
    return u.size() == 1 ? u[0].node : -1;
  }
  // The producer of tensor `id` with Identity nodes looked through.
  int SourceThroughIdentity(int id) const {
    int p = g_.ProducerOf(id);
    for (int steps = 0; p >= 0 && IsOp(p, "Identity") && steps < 16; ++steps) {
      p = g_.ProducerOf(g_.InputId(p, 0));
    }
    return p;
  }
  // The first producer upstream of `id` that is not a single-input pass-through node (Flatten,
  // Reshape, Squeeze, Unsqueeze, Transpose, Identity), at most 4 steps.
  int ThroughPassThrough(int id) const {
    int p = g_.ProducerOf(id);
    for (int steps = 0; p >= 0 && steps < 4; ++steps) {
      const auto& n = g_.node(p);
      static const std::set<std::string_view> kPass = {"Flatten",   "Reshape",   "Squeeze",
                                                       "Unsqueeze", "Transpose", "Identity"};
      if (!IsOnnxDomain(n.domain()) || !kPass.contains(n.op_type())) return p;
      p = g_.ProducerOf(g_.InputId(p, 0));
    }
    return p;
  }
  bool Consumes(int node, int id) const {
    for (const int x : g_.InputIds(node)) {
      if (x == id && id >= 0) return true;
    }
    return false;
  }
  // Slot of `id` at `node` where an initializer would be accepted.
  bool InitializerSlot(int node, int id) const {
    const auto& n = g_.node(node);
    const auto ins = g_.InputIds(node);
    const bool qdq = IsOnnxOp(n, "QuantizeLinear") || IsOnnxOp(n, "DequantizeLinear");
    const OpSpec* spec = qdq ? nullptr : FindOp(n.op_type(), n.domain());
    for (std::size_t s = 0; s < ins.size(); ++s) {
      if (ins[s] != id || id < 0) continue;
      if (qdq) {
        if (s >= 1) return true;
        continue;
      }
      if (spec == nullptr) continue;
      switch (spec->InputRole(static_cast<int>(s))) {
        case InRole::kBias:
        case InRole::kStaticF32:
        case InRole::kClipBound:
        case InRole::kExponent:
        case InRole::kGrid:
        case InRole::kAux:
        case InRole::kFloatAux:
          return true;
        default:
          break;
      }
    }
    return false;
  }

  bool SameTensor0(std::size_t a, std::size_t b) const {
    const auto& x = fs_[a].tensors;
    const auto& y = fs_[b].tensors;
    return x.empty() ? y.empty() : (!y.empty() && x.front() == y.front());
  }

  // Whether `rel` holds with k as the cause of c.
  bool Holds(Relation rel, std::size_t k, std::size_t c) const {
    const int pk = prim_[k];
    const int pc = prim_[c];
    const bool same_rule = fs_[k].rule == fs_[c].rule;
    switch (rel) {
      case R::kSameNode:
        if (pc < 0 || pc != pk) return false;
        // The same rule twice at one node: about one tensor, or about the one edge of a Q/DQ
        // node (its float input seen by the producer, its output by the consumer).
        return !same_rule || (k < c && (SameTensor0(k, c) || IsOp(pc, "DequantizeLinear") ||
                                        IsOp(pc, "QuantizeLinear")));
      case R::kSameEdge:
        if (pc < 0 || pk < 0 || pc == pk) return false;
        for (const int t : tensors_[c]) {
          if (t < 0) continue;
          if (std::find(tensors_[k].begin(), tensors_[k].end(), t) == tensors_[k].end()) continue;
          const int p = g_.ProducerOf(t);
          if (p == pk && Consumes(pc, t)) return true;                // cause at the producer
          if (!same_rule && p == pc && Consumes(pk, t)) return true;  // cause at a consumer
        }
        // The consequence's input comes from the cause's output through pass-through nodes
        // without Q/DQ (e.g. GlobalAveragePool -> Flatten -> Gemm).
        if (!same_rule) {
          for (const int t : tensors_[c]) {
            if (t >= 0 && Consumes(pc, t) && ThroughPassThrough(t) == pk) return true;
          }
        }
        return false;
      case R::kParamFeed: {
        if (pk < 0 || pc < 0 || !IsOp(pk, "Constant")) return false;
        for (const int t : tensors_[c]) {
          if (t >= 0 && SourceThroughIdentity(t) == pk && InitializerSlot(pc, t)) return true;
        }
        return false;
      }
      case R::kQdqEdge: {
        if (!IsOp(pk, "QuantizeLinear") || !IsOp(pc, "DequantizeLinear")) return false;
        const int src = g_.ProducerOf(g_.InputId(pc, 0));
        if (src == pk) return true;
        if (src < 0) return false;
        for (const int in : g_.InputIds(src)) {
          if (in >= 0 && g_.ProducerOf(in) == pk) return true;
        }
        return false;
      }
      case R::kArtifact:
        return false;
    }
    return false;
  }

  // Nodes whose findings may cause finding c under some relation.
  void CandidateNodes(std::size_t c, std::vector<int>& out) const {
    out.clear();
    const int pc = prim_[c];
    if (pc >= 0) {
      out.push_back(pc);
      if (IsOp(pc, "DequantizeLinear")) {
        const int src = g_.ProducerOf(g_.InputId(pc, 0));
        if (src >= 0) {
          out.push_back(src);
          for (const int in : g_.InputIds(src)) out.push_back(g_.ProducerOf(in));
        }
      }
    }
    for (const int t : tensors_[c]) {
      if (t < 0) continue;
      out.push_back(g_.ProducerOf(t));
      out.push_back(SourceThroughIdentity(t));
      out.push_back(ThroughPassThrough(t));
      // The other end of an edge; a tensor with a huge fan-out is skipped (hostile models).
      const auto uses = Uses(t);
      if (uses.size() <= kMaxFanOut) {
        for (const auto& u : uses) out.push_back(u.node);
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }

  void Link() {
    std::vector<int> cand;
    for (std::size_t c = 0; c < fs_.size(); ++c) {
      CandidateNodes(c, cand);
      for (const auto& link : kLinks) {
        if (fs_[c].rule != link.consequence.id()) continue;
        std::size_t best = kNone;
        for (const int n : cand) {
          if (n < 0) continue;
          auto it = at_.find(n);
          if (it == at_.end()) continue;
          // At most kMaxAtNode findings of one node are looked at (hostile models).
          const std::size_t n_at = std::min(it->second.size(), kMaxAtNode);
          for (std::size_t a = 0; a < n_at; ++a) {
            const std::size_t k = it->second[a];
            if (k == c || fs_[k].rule != link.cause.id() || cause_[k] == c) continue;
            if (k < best && Holds(link.relation, k, c)) best = k;
          }
        }
        if (best != kNone) {
          cause_[c] = best;
          break;
        }
      }
    }
  }

  // ------------------------------------------------------------ artifacts (regions)

  struct Region {
    int anchor;
    std::string_view artifact;
    std::vector<int> nodes;
  };

  // Constant nodes whose every use is inside the region join it.
  void AddConstantFeeders(Region& r) const {
    std::unordered_set<int> in(r.nodes.begin(), r.nodes.end());
    const auto nodes = r.nodes;
    for (const int n : nodes) {
      for (const int id : g_.InputIds(n)) {
        const int p = g_.ProducerOf(id);
        if (p < 0 || in.contains(p) || !IsOp(p, "Constant")) continue;
        bool inside = !g_.IsGraphOutputId(id);
        for (const auto& u : Uses(id)) inside = inside && in.contains(u.node);
        if (inside) {
          in.insert(p);
          r.nodes.push_back(p);
        }
      }
    }
  }

  void FindRegions() {
    for (int i : g_.topo_order()) {
      const auto& node = g_.node(i);
      if (!IsOnnxDomain(node.domain())) continue;
      const std::string& op = node.op_type();
      if (op == "Relu") {
        const int k = OnlyConsumer(i);
        if (IsOp(k, "Clip") && g_.InputId(k, 0) == Out0(i)) {
          Add({i, "relu6-as-relu-clip", {i, k}});
        }
      } else if (op == "HardSigmoid") {
        const int x = g_.InputId(i, 0);
        for (const auto& u : Uses(Out0(i))) {
          if (IsOp(u.node, "Mul") && Consumes(u.node, x)) {
            Add({i, "hardswish-as-hardsigmoid-mul", {i, u.node}});
            break;
          }
        }
      } else if (op == "Erf") {
        const int d = g_.ProducerOf(g_.InputId(i, 0));
        const int a = OnlyConsumer(i);
        const int m1 = a >= 0 ? OnlyConsumer(a) : -1;
        if ((IsOp(d, "Div") || IsOp(d, "Mul")) && IsOp(a, "Add") && IsOp(m1, "Mul")) {
          Region r{d, "gelu-decomposed", {d, i, a, m1}};
          const int m2 = OnlyConsumer(m1);
          if (IsOp(m2, "Mul")) r.nodes.push_back(m2);
          Add(std::move(r));
        }
      } else if (op == "Conv") {
        const int d = OnlyConsumer(i);
        if (IsOp(d, "Div") && g_.InputId(d, 0) == Out0(i)) {
          Region r{i, "qat-conv-bn-unfolded", {i, d}};
          int next = OnlyConsumer(d);
          if (IsOp(next, "Add")) {
            r.nodes.push_back(next);
            next = OnlyConsumer(next);
          }
          if (IsOp(next, "BatchNormalization")) {
            r.nodes.push_back(next);
            Add(std::move(r));
          }
        }
      } else if (op == "ReduceMean") {
        LayerNormAt(i);
      } else if (op == "Transpose") {
        const int src = g_.ProducerOf(g_.InputId(i, 0));
        const int mm = OnlyConsumer(i);
        if (IsOp(src, "DequantizeLinear") && IsOp(mm, "MatMul") && g_.InputId(mm, 1) == Out0(i)) {
          Region r{i, "linear-as-matmul", {i, mm}};
          const int add = OnlyConsumer(mm);
          if (IsOp(add, "Add")) r.nodes.push_back(add);
          Add(std::move(r));
        }
      } else if (op == "Shape" || op == "Size") {
        ShapeSubgraphAt(i);
      }
    }
  }

  void LayerNormAt(int r1) {
    const int x = g_.InputId(r1, 0);
    for (const auto& u : Uses(Out0(r1))) {
      const int s = u.node;
      if (!IsOp(s, "Sub") || g_.InputId(s, 0) != x || u.slot != 1) continue;
      int pw = -1, dv = -1;
      for (const auto& v : Uses(Out0(s))) {
        if (IsOp(v.node, "Pow") && v.slot == 0) pw = v.node;
        if (IsOp(v.node, "Div") && v.slot == 0) dv = v.node;
      }
      const int r2 = OnlyConsumer(pw);
      const int a1 = IsOp(r2, "ReduceMean") ? OnlyConsumer(r2) : -1;
      const int sq = IsOp(a1, "Add") ? OnlyConsumer(a1) : -1;
      if (pw < 0 || dv < 0 || !IsOp(sq, "Sqrt") || OnlyConsumer(sq) != dv) continue;
      Region r{r1, "layernorm-decomposed", {r1, s, pw, r2, a1, sq, dv}};
      const int mu = OnlyConsumer(dv);
      if (IsOp(mu, "Mul")) {
        r.nodes.push_back(mu);
        const int ad = OnlyConsumer(mu);
        if (IsOp(ad, "Add")) r.nodes.push_back(ad);
      }
      Add(std::move(r));
      return;
    }
  }

  // The integer arithmetic an exporter writes from a Shape or Size node to a shape input: torch's
  // reshape/expand with -1 (Shape -> Gather -> Unsqueeze -> Concat, ConstantOfShape -> Mul ->
  // Equal -> Where, Range -> Gather -> ReduceProd, ...). Forward from the anchor over integer (and
  // boolean: Equal, Not) results, then the integer nodes that feed the region from constants only
  // (a Range over initializers).
  void ShapeSubgraphAt(int anchor) {
    static const std::set<std::string_view> kStructural = {
        "Gather", "Unsqueeze", "Squeeze",  "Concat", "Slice",           "Cast", "Shape",
        "Size",   "Reshape",   "Identity", "Expand", "ConstantOfShape", "Tile"};
    static const std::set<std::string_view> kArith = {
        "Mul",   "Div",   "Add",   "Sub", "Mod", "Floor", "Ceil",
        "Range", "Equal", "Where", "Not", "Max", "Min",   "ReduceProd"};
    static const std::set<std::string_view> kBoolResult = {"Equal", "Not"};
    Region r{anchor, "shape-subgraph", {anchor}};
    std::unordered_set<int> in{anchor};
    auto integer = [&](int node) {
      const int et = g_.ElemTypeOf(Out0(node));
      return et == onnx::TensorProto::INT64 || et == onnx::TensorProto::INT32 ||
             (et == onnx::TensorProto::BOOL && kBoolResult.contains(g_.node(node).op_type()));
    };
    for (std::size_t k = 0; k < r.nodes.size() && r.nodes.size() < 256; ++k) {
      for (const int id : g_.OutputIds(r.nodes[k])) {
        for (const auto& u : Uses(id)) {
          const int c = u.node;
          if (in.contains(c) || !IsOnnxDomain(g_.node(c).domain())) continue;
          const std::string& op = g_.node(c).op_type();
          const int et = g_.ElemTypeOf(Out0(c));
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
      for (const int id : g_.InputIds(n)) {
        const int p = g_.ProducerOf(id);
        if (p < 0 || in.contains(p) || !IsOnnxDomain(g_.node(p).domain()) ||
            !(kArith.contains(g_.node(p).op_type()) ||
              kStructural.contains(g_.node(p).op_type())) ||
            !integer(p) || !FromConstantsOnly(p)) {
          continue;
        }
        in.insert(p);
        r.nodes.push_back(p);
      }
    }
    Add(std::move(r));
  }

  // Every input of `node` is an initializer or the output of a Constant node.
  bool FromConstantsOnly(int node) const {
    for (const int id : g_.InputIds(node)) {
      if (id < 0) continue;
      const int p = g_.ProducerOf(id);
      if (p >= 0 ? !IsOp(p, "Constant") : g_.InitializerOf(id) == nullptr) return false;
    }
    return true;
  }

  void Add(Region r) {
    for (auto& n : r.nodes) {
      if (n < 0) n = r.anchor;
    }
    AddConstantFeeders(r);
    regions_.push_back(std::move(r));
  }

  void Regions() {
    FindRegions();
    std::unordered_map<int, std::size_t> region_of;  // first region that claims a node
    for (std::size_t i = 0; i < regions_.size(); ++i) {
      for (const int n : regions_[i].nodes) region_of.emplace(n, i);
    }
    std::vector<std::size_t> root(regions_.size(), kNone);
    // The root: the first undecided finding at the anchor, else in the region; a finding of a
    // rule that runs without -c before one that needs -c (the root is the same either way).
    for (int pass = 0; pass < 4; ++pass) {
      for (std::size_t f = 0; f < fs_.size(); ++f) {
        if (cause_[f] != kNone || prim_[f] < 0) continue;
        auto it = region_of.find(prim_[f]);
        if (it == region_of.end() || root[it->second] != kNone) continue;
        if (pass % 2 == 0 && regions_[it->second].anchor != prim_[f]) continue;
        const RuleInfo* info = FindRule(fs_[f].rule);
        if (pass < 2 && info != nullptr && info->check_value) continue;
        root[it->second] = f;
      }
    }
    for (std::size_t f = 0; f < fs_.size(); ++f) {
      if (cause_[f] != kNone || prim_[f] < 0) continue;
      auto it = region_of.find(prim_[f]);
      if (it == region_of.end()) continue;
      const std::size_t r = root[it->second];
      if (r != f) cause_[f] = r;
    }
    for (std::size_t i = 0; i < regions_.size(); ++i) {
      if (root[i] != kNone) fs_[root[i]].hint = MakeHint(regions_[i].artifact);
    }
  }

  void BreakCycles() {
    // 0 unvisited, 1 on the current chain, 2 done.
    std::vector<char> state(fs_.size(), 0);
    for (std::size_t i = 0; i < fs_.size(); ++i) {
      std::vector<std::size_t> chain;
      std::size_t at = i;
      while (at != kNone && state[at] == 0) {
        state[at] = 1;
        chain.push_back(at);
        at = cause_[at];
      }
      if (at != kNone && state[at] == 1) cause_[at] = kNone;  // a loop: cut it at its entry
      for (const std::size_t c : chain) state[c] = 2;
    }
  }

  // ------------------------------------------------------------ hints of the other roots

  bool IsQOperator(int n) const {
    const auto& node = g_.node(n);
    const std::string& op = node.op_type();
    if (node.domain() == "com.microsoft") {
      return op.find("Quantize") != std::string::npos || op.rfind("QLinear", 0) == 0 ||
             op.rfind("QGemm", 0) == 0 || op.rfind("QAttention", 0) == 0;
    }
    if (!IsOnnxDomain(node.domain())) return false;
    return op.rfind("QLinear", 0) == 0 || op == "ConvInteger" || op == "MatMulInteger" ||
           op == "DynamicQuantizeLinear";
  }

  bool IsFunctionCall(int n) const {
    if (model_ == nullptr) return false;
    const auto& node = g_.node(n);
    for (const auto& f : model_->functions()) {
      if (f.name() == node.op_type() && f.domain() == node.domain()) return true;
    }
    return false;
  }

  bool IsContribQdq(int n) const {
    const auto& node = g_.node(n);
    return node.domain() == "com.microsoft" &&
           (node.op_type() == "QuantizeLinear" || node.op_type() == "DequantizeLinear");
  }

  // A model written by onnxruntime's quantizer (onnxruntime.quantization sets this producer).
  bool OrtQuantizer() const {
    return model_ != nullptr && model_->producer_name() == "onnx.quantize";
  }

  // The finding is at a Cast of an initializer or about a tensor such a Cast produces.
  bool FromInitializerCast(std::size_t f, int p) const {
    auto cast_of_init = [&](int n) {
      return IsOp(n, "Cast") && g_.InitializerOf(g_.InputId(n, 0)) != nullptr;
    };
    if (cast_of_init(p)) return true;
    for (const int t : tensors_[f]) {
      if (t >= 0 && cast_of_init(g_.ProducerOf(t))) return true;
    }
    return false;
  }

  // A model of PyTorch's dynamo exporter (producer pytorch >= 2.5), whose optimizer folded
  // constant Q -> DQ chains; torch 1.x's TorchScript exporter never folds them, so a float weight
  // there was never quantized (e.g. eager QAT has no ConvTranspose fake-quant).
  bool DynamoExporter() const {
    if (model_ == nullptr || model_->producer_name() != "pytorch") return false;
    const std::string& v = model_->producer_version();
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

  // At a Conv/ConvTranspose/Gemm/MatMul whose input 0 is dequantized and whose input 1 is an FP32
  // initializer, in a dynamo export: the weight's Q/DQ was folded away by its optimizer.
  bool WeightFoldedToFloat(std::size_t f, int p) const {
    if (!DynamoExporter()) return false;
    const std::string_view rule = fs_[f].rule;
    if (rule != rules::kQdqConstForm.id() && rule != rules::kOpInputNotQuantized.id()) return false;
    if (!IsOp(p, "Conv") && !IsOp(p, "ConvTranspose") && !IsOp(p, "Gemm") && !IsOp(p, "MatMul")) {
      return false;
    }
    const int w = g_.InputId(p, 1);
    const auto* init = w >= 0 ? g_.InitializerOf(w) : nullptr;
    return init != nullptr && init->data_type() == onnx::TensorProto::FLOAT &&
           IsOp(g_.ProducerOf(g_.InputId(p, 0)), "DequantizeLinear");
  }

  // About a DQ output whose Q is unsigned with zero point 0 and reads a compute operator's output
  // (not a DQ, a graph input or a pass-through): where quantize_static removed a Relu/Clip.
  bool RemovedActivation(std::size_t f) const {
    static const std::set<std::string_view> kCompute = {
        "Conv", "ConvTranspose",     "Gemm",       "MatMul", "Add", "Sub",
        "Mul",  "GlobalAveragePool", "AveragePool"};
    for (const int t : tensors_[f]) {
      const int dq = g_.ProducerOf(t);
      if (!IsOp(dq, "DequantizeLinear")) continue;
      const int q = g_.ProducerOf(g_.InputId(dq, 0));
      if (!IsOp(q, "QuantizeLinear")) continue;
      const int src = g_.ProducerOf(g_.InputId(q, 0));
      if (src < 0 || !IsOnnxDomain(g_.node(src).domain()) ||
          !kCompute.contains(g_.node(src).op_type())) {
        continue;
      }
      const int zp = g_.InputId(q, 2);
      const auto* zinit = zp >= 0 ? g_.InitializerOf(zp) : nullptr;
      if (zinit == nullptr || (zinit->data_type() != onnx::TensorProto::UINT8 &&
                               zinit->data_type() != onnx::TensorProto::UINT16)) {
        continue;
      }
      const auto v = ReadInts(*zinit, g_.external(), 1);
      if (v && v->size() == 1 && (*v)[0] == 0) return true;
    }
    return false;
  }

  bool FromDedupIdentity(std::size_t f) const {
    for (const int t : tensors_[f]) {
      const int p = g_.ProducerOf(t);
      if (IsOp(p, "Identity") && g_.InitializerOf(g_.InputId(p, 0)) != nullptr) return true;
    }
    return false;
  }

  bool FeedsQdqParams(int constant) const {
    std::vector<int> ids{Out0(constant)};
    for (std::size_t k = 0; k < ids.size() && k < 64; ++k) {
      for (const auto& u : Uses(ids[k])) {
        const auto& n = g_.node(u.node);
        if ((IsOnnxOp(n, "QuantizeLinear") || IsOnnxOp(n, "DequantizeLinear")) && u.slot >= 1) {
          return true;
        }
        if (IsOnnxOp(n, "Identity")) ids.push_back(Out0(u.node));
      }
    }
    return false;
  }

  bool SplitLike(const std::vector<int>& nodes) const {
    for (const int n : nodes) {
      if (!IsOp(n, "Slice") && !IsOp(n, "Gather")) continue;
      const int x = g_.InputId(n, 0);
      int parts = 0;
      for (const auto& u : Uses(x)) {
        if (u.slot == 0 && (IsOp(u.node, "Slice") || IsOp(u.node, "Gather"))) ++parts;
        if (parts >= 2) break;
      }
      if (parts >= 2) return true;
    }
    return false;
  }

  void RootHints() {
    for (std::size_t f = 0; f < fs_.size(); ++f) {
      Finding& x = fs_[f];
      if (cause_[f] != kNone || !x.hint.id.empty()) continue;
      const int p = prim_[f];
      const std::string_view rule = x.rule;
      std::string_view id;
      if (p >= 0 && IsFunctionCall(p)) {
        id = "qdq-in-function";
      } else if (p >= 0 && IsContribQdq(p)) {
        id = "contrib-qdq";
      } else if (p >= 0 && IsQOperator(p)) {
        id = "qoperator-format";
      } else if (rule == rules::kOnnxConstantNode.id()) {
        id = p >= 0 && FeedsQdqParams(p) ? "qparams-as-numbers" : "constant-node";
      } else if (FromInitializerCast(f, p)) {
        id = "dynamo-qparam-casts";
      } else if (rule == rules::kOnnxValueInfoMissing.id()) {
        id = "value-info-missing";
      } else if (rule == rules::kQdqRequantizeIdentity.id()) {
        id = "dropout-removed";
      } else if (rule == rules::kClosureUncoveredNode.id() &&
                 (IsOp(p, "Shape") || IsOp(p, "Size"))) {
        id = "shape-subgraph";
      } else if (rule == rules::kOpPassiveParams.id() && SplitLike(nodes_[f])) {
        id = "split-as-slices";
      } else if (FromDedupIdentity(f)) {
        id = "torch-dedup-identity";
      } else if (WeightFoldedToFloat(f, p)) {
        id = "weight-qdq-folded";
      } else if (OrtQuantizer() && RemovedActivation(f)) {
        id = "ort-activation-removed";
      } else if (OrtQuantizer() &&
                 (rule == rules::kOpMatmulType.id() || rule == rules::kOpSameTypeInputs.id() ||
                  rule == rules::kOpGridsampleType.id())) {
        id = "ort-asymmetric-activations";
      }
      if (!id.empty()) x.hint = MakeHint(id);
    }
  }

  const GraphIndex& g_;
  const onnx::ModelProto* model_;
  std::vector<Finding>& fs_;
  std::vector<int> prim_;
  std::vector<std::vector<int>> nodes_;
  std::vector<std::vector<int>> tensors_;
  std::unordered_map<int, std::vector<std::size_t>> at_;  // primary node -> findings
  std::vector<std::size_t> cause_;
  std::vector<Region> regions_;
};

}  // namespace

std::span<const CausalLink> CausalLinks() { return kLinks; }
std::span<const ArtifactInfo> Artifacts() { return kArtifactTable; }

const ArtifactInfo* FindArtifact(std::string_view id) {
  for (const auto& a : kArtifactTable) {
    if (a.id == id) return &a;
  }
  return nullptr;
}

void AssignCauses(const GraphIndex* g, const onnx::ModelProto* model,
                  std::vector<Finding>& findings, const std::vector<int>& primary) {
  // Ids: fingerprint and its occurrence in report order (as SARIF's partialFingerprints).
  std::unordered_map<std::string, std::size_t> seen;
  for (auto& f : findings) {
    f.id = f.fingerprint + ":" + std::to_string(++seen[f.fingerprint]);
    f.cause.clear();
    f.hint = {};
  }
  if (g == nullptr) return;
  Causes(*g, model, findings, primary).Run();
}

}  // namespace axqc::detail
