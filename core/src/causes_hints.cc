// The table of producer artifacts (causes_artifacts.h): one row per artifact with its hint and
// its recognisers (causes_artifacts.cc), row i with ArtifactId i. The rows with a root recogniser
// come first, in the order they are tried: the first that holds gives a root finding its hint.
#include <array>
#include <cstdlib>
#include <string>

#include "causes_artifacts.h"

namespace axqc::detail {

namespace {

constexpr std::array kArtifacts{
    ArtifactSpec{.id = ArtifactId::kQdqInFunction,
                 .hint_id = "qdq-in-function",
                 .title = "Q/DQ inside a model-local function",
                 .rewrite = "inline-functions",
                 .recognised = "a root finding at a call of a model-local function",
                 .text =
                     "the exporter wrapped quantized code in a model-local function (e.g. "
                     "torch.onnx.export(..., export_modules_as_functions=...)); `axqc fix` "
                     "inline-functions inlines it so every node and Q/DQ is checked in the graph",
                 .root = RootInFunction},
    ArtifactSpec{
        .id = ArtifactId::kContribQdq,
        .hint_id = "contrib-qdq",
        .title = "com.microsoft QuantizeLinear/DequantizeLinear",
        .rewrite = "contrib-qdq-to-onnx",
        .recognised = "a root finding at a com.microsoft QuantizeLinear or DequantizeLinear node",
        .text = "onnxruntime.quantization writes Q/DQ in its com.microsoft domain for 16-bit and "
                "4-bit types when the model's opset is below 21 (and for every type with "
                "extra_options={'UseQDQContribOps': True}); `axqc fix` contrib-qdq-to-onnx "
                "rewrites them as ai.onnx Q/DQ (the same computation) where the opset has the "
                "type: every spec type at opset >= 21, 8-bit and the INT32 bias from opset 13. "
                "16-bit or 4-bit types below opset 21 cannot be written as ai.onnx Q/DQ: convert "
                "the float model to opset 21 (onnx.version_converter) before quantize_static",
        .root = RootAtContribQdq},
    ArtifactSpec{
        .id = ArtifactId::kQoperatorFormat,
        .hint_id = "qoperator-format",
        .title = "QOperator or com.microsoft quantization",
        .rewrite = "",
        .recognised = "a root finding at a QLinear*/*Integer node, DynamicQuantizeLinear or a "
                      "com.microsoft quantization node",
        .text = "the model is quantized in the QOperator format or with com.microsoft "
                "operators, not with ai.onnx QuantizeLinear/DequantizeLinear: quantize again "
                "in QDQ format (e.g. onnxruntime quantize_static(..., "
                "quant_format=QuantFormat.QDQ)) with ai.onnx Q/DQ",
        .root = RootAtQOperator},
    ArtifactSpec{
        .id = ArtifactId::kQparamsAsNumbers,
        .hint_id = "qparams-as-numbers",
        .title = "qparams given as Python numbers",
        .rewrite = "constant-to-initializer",
        .recognised =
            "onnx/constant-node whose Constant feeds the scale or zero point of a Q/DQ node",
        .text = "the scale/zero point was passed to the fake-quant as a Python number, so the "
                "exporter wrote one Constant node per use; `axqc fix` constant-to-initializer "
                "folds them into initializers (or keep the qparams as registered buffers / "
                "tensors, which export as initializers)",
        .root = RootConstantFeedsQParams},
    ArtifactSpec{
        .id = ArtifactId::kConstantNode,
        .hint_id = "constant-node",
        .title = "Constant nodes of a raw export",
        .rewrite = "constant-to-initializer",
        .recognised = "onnx/constant-node that no other artifact explains",
        .text = "the exporter wrote a literal tensor (a bound, a bias, a number in arithmetic) "
                "as a Constant node; `axqc fix` constant-to-initializer folds it into an "
                "initializer (torch.onnx.export keeps Constant nodes even with "
                "do_constant_folding)",
        .root = RootConstantNode},
    ArtifactSpec{
        .id = ArtifactId::kDynamoQparamCasts,
        .hint_id = "dynamo-qparam-casts",
        .title = "zero points Cast from the fake-quant's buffers",
        .rewrite = "cast-of-initializer",
        .recognised =
            "a root finding about a tensor produced by Cast(initializer) or at such a Cast",
        .text = "PyTorch's dynamo exporter (torch.onnx.export(..., dynamo=True), the default "
                "since torch 2.9) writes a fake-quant's zero point as Cast(int32 buffer, "
                "to=UINT8/INT8) in front of QuantizeLinear/DequantizeLinear; `axqc fix` "
                "cast-of-initializer folds each Cast of an initializer into an initializer of "
                "the target type when every value converts exactly",
        .root = RootFromInitializerCast},
    ArtifactSpec{
        .id = ArtifactId::kValueInfoMissing,
        .hint_id = "value-info-missing",
        .title = "no value_info in a raw export",
        .rewrite = "value-info",
        .recognised = "onnx/value-info-missing that no other cause explains",
        .text = "raw exporter output carries no value_info for intermediate tensors; `axqc fix` "
                "value-info writes it from ONNX shape inference (or run "
                "onnx.shape_inference.infer_shapes and save its result)",
        .root = RootValueInfoMissing},
    ArtifactSpec{
        .id = ArtifactId::kDropoutRemoved,
        .hint_id = "dropout-removed",
        .title = "Dropout removed at export",
        .rewrite = "requantize-identity",
        .recognised = "qdq/requantize-identity (DQ -> Q with different parameters)",
        .text = "Dropout / StochasticDepth between two fake-quants is removed at export and "
                "leaves DQ -> Q with different parameters; `axqc fix` requantize-identity marks "
                "the requantization with an Identity (6.7), or let both fake-quants share one "
                "observer",
        .root = RootRequantizeIdentity},
    ArtifactSpec{
        .id = ArtifactId::kShapeSubgraph,
        .hint_id = "shape-subgraph",
        .title = "shape subgraph of a dynamic-shape export",
        .rewrite = "reshape-copy-dims",
        .recognised =
            "a Shape or Size node and the integer nodes it feeds (Gather, Unsqueeze, "
            "Concat, ConstantOfShape, Equal, Where, Range, ReduceProd, ...) up to a shape "
            "input",
        .text = "x.view(B, ...) / reshape and expand with sizes read from the tensor or with -1 "
                "export as Shape -> Gather -> Unsqueeze -> Concat (and ConstantOfShape -> Mul "
                "-> Equal -> Where for expand's -1) -> Reshape/Expand; `axqc fix` "
                "reshape-copy-dims writes a Reshape target built from its own input's dims as a "
                "constant with 0 (the batch stays dynamic) and fold-shape folds all of that "
                "arithmetic when every input shape is static (or export with static shapes / "
                "reshape(-1, ...) with constant sizes)",
        .at_ops = {"Shape", "Size"},
        .region = ShapeSubgraphAtShape,
        .root = RootUncoveredShape},
    ArtifactSpec{
        .id = ArtifactId::kSplitAsSlices,
        .hint_id = "split-as-slices",
        .title = "split/chunk exported as Slices",
        .rewrite = "",
        .recognised = "op/passive-params at an exit of a Slice or Gather whose input feeds several "
                      "Slices/Gathers",
        .text = "torch.split / chunk / unbind / indexing export as one Slice or Gather per part, "
                "each a pass-through whose exit must share its entry's parameters (unlike Split, "
                "5.11): observe the parts with the input's fake-quant, or quantize before the "
                "split only",
        .root = RootSplitLike},
    ArtifactSpec{.id = ArtifactId::kTorchDedupIdentity,
                 .hint_id = "torch-dedup-identity",
                 .title = "initializer behind a de-duplication Identity",
                 .rewrite = "identity-of-initializer",
                 .recognised = "a root finding about a tensor produced by Identity(initializer)",
                 .text =
                     "PyTorch's exporter de-duplicates equal-valued initializers (scales, zero "
                     "points, biases, LayerNorm affine) and writes Identity(initializer) for every "
                     "further use; `axqc fix` identity-of-initializer makes the consumers read the "
                     "initializer directly",
                 .root = RootFromDedupIdentity},
    ArtifactSpec{
        .id = ArtifactId::kWeightQdqFolded,
        .hint_id = "weight-qdq-folded",
        .title = "weight Q/DQ folded to float by an optimizer",
        .rewrite = "",
        .recognised =
            "qdq/const-form or op/input-not-quantized at a Conv, ConvTranspose, Gemm or "
            "MatMul whose data input is dequantized and whose weight is an FP32 initializer",
        .text = "the operator's activations are quantized but its weight is a float initializer: "
                "an optimizer constant-folded the weight's QuantizeLinear -> DequantizeLinear. "
                "Export again with the weight Q/DQ kept: torch.onnx.export(..., dynamo=True, "
                "optimize=False) (or an onnxscript release that no longer folds Q/DQ, "
                "microsoft/onnxscript#2713), torch.onnx.export(..., do_constant_folding=False) for "
                "the TorchScript exporter, or do not save an onnxruntime-optimized model "
                "(SessionOptions.optimized_model_filepath) as the QDQ model; no rewrite can bring "
                "the quantization back",
        .root = RootWeightFoldedToFloat},
    ArtifactSpec{
        .id = ArtifactId::kOrtActivationRemoved,
        .hint_id = "ort-activation-removed",
        .title = "Relu/Clip removed by quantize_static",
        .rewrite = "",
        .recognised =
            "a root finding about an unsigned activation with zero point 0 whose "
            "QuantizeLinear reads a compute operator's output, in a model of onnxruntime's "
            "quantizer (producer onnx.quantize)",
        .text = "quantize_static removes a Relu or Clip after a quantized operator when "
                "activations are asymmetric (QUInt8/QUInt16): the operator's output Q takes the "
                "activation's range (zero point 0) and the clamp happens in the integer "
                "saturation. The spec then sees no Relu/Clip: no fusion tail, and this edge is "
                "an ordinary activation of the operator before it. Quantize with symmetric "
                "activations (activation_type=QuantType.QInt8, extra_options="
                "{'ActivationSymmetric': True}): quantize_static then keeps the Relu/Clip with "
                "Q/DQ on both sides, the standalone form of 5.15",
        .root = RootOrtRemovedActivation},
    ArtifactSpec{
        .id = ArtifactId::kOrtAsymmetricActivations,
        .hint_id = "ort-asymmetric-activations",
        .title = "asymmetric activations of quantize_static",
        .rewrite = "",
        .recognised =
            "a root op/matmul-type, op/same-type-inputs or op/gridsample-type finding in a "
            "model of onnxruntime's quantizer (producer onnx.quantize)",
        .text = "quantize_static(..., activation_type=QuantType.QUInt8 or QUInt16) quantizes "
                "activations asymmetrically (unsigned, zero point from calibration); MatMul and "
                "GridSample take symmetric S8/S16 inputs of one type: quantize with "
                "activation_type=QuantType.QInt8 (or QInt16) and extra_options="
                "{'ActivationSymmetric': True}, or exclude the operator (nodes_to_exclude). "
                "With asymmetric activations quantize_static also removes Relu/Clip after a "
                "quantized operator; with symmetric ones it keeps them, quantized on both sides",
        .root = RootOrtAsymmetricActivation},
    ArtifactSpec{.id = ArtifactId::kRelu6AsReluClip,
                 .hint_id = "relu6-as-relu-clip",
                 .title = "relu6 exported as Relu -> Clip",
                 .rewrite = "",
                 .recognised = "Relu whose only consumer is Clip (with its bound Constants)",
                 .text =
                     "F.relu6 / nn.ReLU6 exports as Relu -> Clip(0, 6) (bounds as Constant nodes); "
                     "a fusion tail cannot follow a tail, so the edge needs Q/DQ: use "
                     "torch.clamp(x, 0, 6) or nn.Hardtanh(0, 6), which export one Clip "
                     "(Clip(Relu(x), 0, 6) == Clip(x, 0, 6)), then `axqc fix` "
                     "constant-to-initializer folds the bounds",
                 .at_ops = {"Relu"},
                 .region = Relu6AtRelu},
    ArtifactSpec{.id = ArtifactId::kHardswishAsHardsigmoidMul,
                 .hint_id = "hardswish-as-hardsigmoid-mul",
                 .title = "HardSwish at opset 13 as HardSigmoid + Mul",
                 .rewrite = "",
                 .recognised = "HardSigmoid whose output is multiplied by its own input",
                 .text =
                     "HardSwish exists in ONNX from opset 14; at opset 13 the exporter writes "
                     "HardSigmoid -> Mul(x, .), whose inner edge is float: export with opset >= 14 "
                     "(one HardSwish node) or fake-quantize the HardSigmoid output",
                 .at_ops = {"HardSigmoid"},
                 .region = HardSwishAtHardSigmoid},
    ArtifactSpec{
        .id = ArtifactId::kGeluDecomposed,
        .hint_id = "gelu-decomposed",
        .title = "GELU decomposed into Div, Erf, Add, Mul",
        .rewrite = "",
        .recognised = "Div/Mul -> Erf -> Add -> Mul (-> Mul) with their constants",
        .text = "F.gelu / nn.GELU exports below opset 20 as Div -> Erf -> Add -> Mul -> Mul "
                "with FP32 constants (ONNX Gelu exists from opset 20; torch 1.13 cannot export "
                "it): no rewrite repairs it; export Gelu at opset >= 20, or fake-quantize every "
                "node of the decomposition and its constants",
        .at_ops = {"Erf"},
        .region = GeluAtErf},
    ArtifactSpec{
        .id = ArtifactId::kLayernormDecomposed,
        .hint_id = "layernorm-decomposed",
        .title = "LayerNorm decomposed at opset < 17",
        .rewrite = "",
        .recognised =
            "ReduceMean -> Sub -> Pow -> ReduceMean -> Add -> Sqrt -> Div (-> Mul -> Add)",
        .text = "nn.LayerNorm exports below opset 17 as ReduceMean, Sub, Pow, ReduceMean, Add, "
                "Sqrt, Div, Mul, Add (LayerNormalization exists from opset 17): export with "
                "opset >= 17 (one LayerNormalization node)",
        .at_ops = {"ReduceMean"},
        .region = LayerNormAtReduceMean},
    ArtifactSpec{
        .id = ArtifactId::kQatConvBnUnfolded,
        .hint_id = "qat-conv-bn-unfolded",
        .title = "QAT Conv+BatchNorm exported before convert",
        .rewrite = "",
        .recognised = "Conv -> Div (-> Add) -> BatchNormalization",
        .text = "a torch.ao QAT ConvBn module (fuse_modules_qat / prepare_qat_fx) exports "
                "before convert as Conv -> Div by the BN factor (-> Add bias) -> "
                "BatchNormalization, so the Conv+BN pattern (6.4) does not form and the inner "
                "edges are float: fold the BatchNormalization into the Conv weight and bias "
                "before export (e.g. torch.ao.quantization.convert, or "
                "torch.nn.utils.fusion.fuse_conv_bn_eval on the eval model, then fake-quantize "
                "the folded weight), or export Conv -> BatchNormalization directly",
        .at_ops = {"Conv"},
        .region = QatConvBnAtConv},
    ArtifactSpec{
        .id = ArtifactId::kLinearAsMatmul,
        .hint_id = "linear-as-matmul",
        .title = "Linear exported as Transpose + MatMul",
        .rewrite = "",
        .recognised = "Transpose of a dequantized weight into MatMul (and the bias Add after it)",
        .text = "nn.Linear on a 3-D input (or bias=False) exports as Transpose(DQ(W)) -> MatMul "
                "(-> Add bias) instead of Gemm: fake-quantize the transposed weight (store W^T "
                "and use torch.matmul) and quantize the MatMul output before the bias Add, or "
                "flatten to 2-D so that the exporter writes Gemm",
        .at_ops = {"Transpose"},
        .region = LinearAtTranspose},
};
static_assert(kArtifacts.size() == kArtifactCount, "one row per ArtifactId");
static_assert(
    [] {
      for (std::size_t i = 0; i < kArtifacts.size(); ++i) {
        if (static_cast<std::size_t>(kArtifacts[i].id) != i) return false;
      }
      return true;
    }(),
    "rows in ArtifactId order, none twice");
static_assert(
    [] {
      for (const auto& a : kArtifacts) {
        if (a.hint_id.empty() || a.title.empty() || a.text.empty()) return false;
      }
      return true;
    }(),
    "every row has a hint");
// (Whether each row has a recogniser compares function addresses, which is not a constant
// expression in every build (sanitizers): checked once at run time, in ArtifactTable().)

}  // namespace

std::span<const ArtifactSpec> ArtifactTable() {
  // Every row has a recogniser; a region recogniser names the ops it is called at.
  static const bool checked = [] {
    for (const auto& a : kArtifacts) {
      if ((a.region == nullptr) != a.at_ops[0].empty() ||
          (a.region == nullptr && a.root == nullptr)) {
        std::abort();
      }
    }
    return true;
  }();
  (void)checked;
  return kArtifacts;
}

const ArtifactSpec& Artifact(ArtifactId id) { return kArtifacts[static_cast<std::size_t>(id)]; }

const ArtifactSpec* FindArtifact(std::string_view hint_id) {
  for (const auto& a : kArtifacts) {
    if (a.hint_id == hint_id) return &a;
  }
  return nullptr;
}

Hint HintOf(ArtifactId id) {
  const ArtifactSpec& a = Artifact(id);
  return Hint{std::string(a.hint_id), std::string(a.title), std::string(a.text),
              std::string(a.rewrite)};
}

}  // namespace axqc::detail
