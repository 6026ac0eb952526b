#include "axqc/catalog.h"

#include <array>

namespace axqc {

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarn:
      return "warn";
    case Severity::kInfo:
      return "info";
  }
  return "error";
}

namespace {

using S = Severity;
constexpr bool kCv = true;
constexpr bool kAlways = false;

// The one catalog. Order: spec order, as in RULES.md. New IDs are appended to their group.
constexpr std::array kRules{
    // Scope and ONNX base (2.1, 2.2)
    RuleInfo{"scope/no-quantized-edge", S::kInfo, kAlways, "2.1",
             "No ai.onnx Q/DQ node lies on an operator or pattern data path and nothing else "
             "quantizes the model: not in scope.",
             "Nothing to fix if the model is meant to be float; otherwise export it in QDQ form."},
    RuleInfo{"onnx/invalid-model", S::kError, kAlways, "2.2",
             "The model is not valid ONNX for its declared IR version and opsets (full check, "
             "strict shape inference).",
             "Fix the cause named in the message (each message ends with how to fix that cause)."},
    RuleInfo{"onnx/constant-node", S::kError, kAlways, "2.2",
             "A Constant node; static constants must be initializers.",
             "Fold Constant nodes into graph initializers (e.g. onnx-simplifier or the exporter's "
             "constant folding)."},
    RuleInfo{"onnx/value-info-missing", S::kError, kCv, "2.2",
             "An intermediate tensor lacks value_info with an element type and a complete shape.",
             "Run ONNX shape inference and keep its value_info, or declare the tensor's type and shape."},
    RuleInfo{"onnx/library-message", S::kInfo, kAlways, "2.2",
             "The ONNX library printed a message while validating the model (e.g. experimental "
             "ops); it is kept in the report instead of on stdout.",
             "Read the message; it does not change the verdict."},
    // Closure and ownership (2.3, 2.4, 6.1)
    RuleInfo{"closure/uncovered-node", S::kError, kAlways, "2.3",
             "A non-Q/DQ node is covered by no operator rule or pattern.",
             "Replace the operator by supported ones, or move it out of the model."},
    RuleInfo{"closure/unsupported-op", S::kError, kAlways, "5.17",
             "AffineGrid, GRU and LSTM do not conform to the ax quant spec.",
             "Decompose the operator into supported operators."},
    RuleInfo{"closure/orphan-qdq", S::kError, kAlways, "2.3",
             "A Q or DQ node (or Q/DQ edge) has no unique purpose in any operator or pattern rule.",
             "Remove the Q/DQ, or place it at an operator's data input or output."},
    RuleInfo{"closure/ambiguous-ownership", S::kError, kAlways, "6.1",
             "Two largest matching patterns of equal size overlap; ownership is not unique.",
             "Restructure the subgraph so each node belongs to one pattern instance."},
    RuleInfo{"pattern/internal-qdq", S::kError, kAlways, "6.1",
             "A Q/DQ is inserted inside a pattern.",
             "Remove the Q/DQ between the pattern's nodes; only its boundary is quantized."},
    RuleInfo{"pattern/internal-escape", S::kError, kAlways, "6.1",
             "A pattern-internal tensor is consumed outside the pattern or is a graph output.",
             "Only the pattern's output may leave it; duplicate the computation or restructure."},
    // Basic Q/DQ (3)
    RuleInfo{"qdq/float-side-type", S::kError, kAlways, "3.1",
             "Q data input, scale, or DQ output is not FP32.",
             "Quantize from FP32, keep scales FP32 and dequantize to FP32."},
    RuleInfo{"qdq/scale-not-initializer", S::kError, kAlways, "3.1",
             "The scale is not an initializer referenced directly by the Q/DQ node.",
             "Store the scale as an initializer and reference it directly."},
    RuleInfo{"qdq/zero-point-missing", S::kError, kAlways, "3.1",
             "The zero_point input is omitted (no reliance on the ONNX default).",
             "Add an explicit zero_point input (0 for symmetric quantization)."},
    RuleInfo{"qdq/scale-value", S::kError, kAlways, "3.1",
             "A scale element is NaN, infinite or not greater than 0.", "Use finite scales > 0."},
    RuleInfo{"qdq/zero-point-value", S::kWarn, kCv, "3.2",
             "Symmetric zero_point is not 0, or asymmetric zero_point is outside the type's range.",
             "Use zero_point 0 for signed (symmetric) types; keep unsigned ones within range."},
    RuleInfo{"qdq/granularity", S::kError, kAlways, "3.3",
             "Quantization is neither per-tensor (scalar or one-element 1-D) nor per-channel (1-D, "
             "scale and zero_point of equal length); blocked quantization is forbidden.",
             "Use per-tensor or per-channel quantization with matching scale/zero_point shapes."},
    RuleInfo{"qdq/axis-missing", S::kError, kAlways, "3.3",
             "Per-channel quantization without an explicit axis attribute.",
             "Set the axis attribute explicitly."},
    RuleInfo{"qdq/weight-axis", S::kError, kAlways, "3.3",
             "Weight per-channel axis is not 0 (Conv, Gemm) / 1 (ConvTranspose), or is negative.",
             "Quantize weights along the output-channel axis, written as a non-negative number."},
    RuleInfo{"qdq/pair-mismatch", S::kError, kAlways, "3.4",
             "Q and its DQ differ in integer type, scale or zero_point shape/dtype, granularity or "
             "normalised axis.",
             "Give the Q and its DQ the same quantization parameters."},
    RuleInfo{"qdq/pair-value-mismatch", S::kWarn, kCv, "3.4",
             "Q and DQ scale or zero_point values differ element-wise.",
             "Use the same scale and zero_point values on both ends of the edge."},
    RuleInfo{"qdq/q-fanout", S::kError, kAlways, "3.4",
             "The Q output has a consumer other than exactly one paired DQ.",
             "Let each Q feed exactly one DQ; share the DQ output instead."},
    RuleInfo{"qdq/q-graph-output", S::kError, kAlways, "3.4",
             "A Q output is a graph output.", "Add the paired DQ and output its result."},
    RuleInfo{"qdq/dq-input-source", S::kError, kAlways, "3.4",
             "A DQ integer input comes from a graph input or a runtime node instead of its Q or an "
             "allowed integer initializer.",
             "Feed runtime activations through a full Q -> DQ pair."},
    RuleInfo{"qdq/requantize-identity", S::kError, kAlways, "3.5",
             "DQ1 -> Q2 directly with different parameters; an Identity must mark the requantize.",
             "Insert an Identity between the DQ and the Q: DQ1 -> Identity -> Q2."},
    RuleInfo{"qdq/const-form", S::kError, kAlways, "3.6",
             "A constant data input is not in an allowed form.",
             "Weights: FP32 init -> Q -> DQ or int init -> DQ; bias: FP32 init, or INT32 init -> DQ; "
             "other constant data: FP32 init -> Q -> DQ or int init -> DQ."},
    RuleInfo{"qdq/integer-type", S::kError, kAlways, "4",
             "The Q/DQ integer type is not one of U4, S4, U8, S8, U16, S16, S32.",
             "Use one of the supported integer types."},
    RuleInfo{"qdq/value-unreadable", S::kInfo, kCv, "2.5",
             "A numeric check was skipped because a value is not statically readable.",
             "Make the value an initializer (or a chain the checker can read)."},
    RuleInfo{"qdq/requantize", S::kInfo, kAlways, "3.5",
             "A requantize boundary DQ -> Identity -> Q.", "Informational."},
    // Quantization roles (4)
    RuleInfo{"role/activation-type", S::kError, kAlways, "4",
             "Activation type or granularity outside the role table or the operator's narrower set.",
             "Use U8, S8, U16 or S16 per-tensor (U4 only into Conv/ConvTranspose/Gemm)."},
    RuleInfo{"role/weight-type", S::kError, kAlways, "4",
             "Weight is not symmetric S4/S8 per-channel.",
             "Quantize weights per-channel, symmetric, to INT8 or INT4."},
    RuleInfo{"role/bias-type", S::kError, kAlways, "4",
             "Quantized bias is not symmetric S32 per-channel.",
             "Quantize bias per-channel to INT32 with zero_point 0, or keep it FP32."},
    RuleInfo{"role/int4-channels", S::kError, kAlways, "4",
             "4-bit activation with an odd channel count, or S4 weight with an odd output-channel "
             "count.",
             "Use an even channel count or 8-bit quantization."},
    RuleInfo{"role/bias-scale", S::kWarn, kCv, "4",
             "bias_scale differs from input_scale * weight_scale beyond 1e-7 + 1e-5*|input*weight|.",
             "Set bias_scale[c] = input_scale * weight_scale[c] (FP32)."},
    RuleInfo{"role/convtranspose-group-bias", S::kError, kAlways, "4",
             "ConvTranspose with group > 1 uses a quantized bias.",
             "Keep the bias FP32 (or drop it) for grouped ConvTranspose."},
    // Operators (5)
    RuleInfo{"op/input-not-quantized", S::kError, kAlways, "5.1",
             "A float data input of a quant-only (or quantized-mode) operator does not come through DQ.",
             "Insert Q -> DQ in front of the input."},
    RuleInfo{"op/output-not-quantized", S::kError, kAlways, "5.1",
             "A used float data output of a quant-only operator does not go through Q/DQ.",
             "Insert Q -> DQ after the output, on every branch."},
    RuleInfo{"op/gemm-form", S::kError, kAlways, "5.2",
             "Gemm is not in canonical fully-connected form (transA=0, transB=1, alpha=1, beta=1).",
             "Export Gemm with transB=1 and default alpha/beta, or transpose the weight offline."},
    RuleInfo{"op/same-type-inputs", S::kError, kAlways, "5",
             "Inputs that must share an integer type do not.",
             "Quantize these inputs to the same integer type (scales may differ)."},
    RuleInfo{"op/matmul-type", S::kError, kAlways, "5.3",
             "A MatMul input is not symmetric per-tensor S8/S16.",
             "Quantize both MatMul inputs symmetric per-tensor INT8 (or both INT16)."},
    RuleInfo{"op/gridsample-type", S::kError, kAlways, "5.4",
             "GridSample feature not symmetric per-tensor S8/S16, or grid not FP32 / symmetric "
             "per-tensor S16, or a static FP32 grid that is not an initializer.",
             "Feature: symmetric S8/S16 per-tensor; grid: FP32 initializer/runtime or S16."},
    RuleInfo{"op/static-param", S::kError, kAlways, "5",
             "A parameter that must be a direct FP32 initializer is not.",
             "Store the parameter as an FP32 initializer referenced directly by the node."},
    RuleInfo{"op/clip-dynamic", S::kError, kAlways, "5.16",
             "Clip min/max is neither omitted nor a direct FP32 initializer.",
             "Make Clip bounds FP32 initializers."},
    RuleInfo{"op/passive-params", S::kError, kAlways, "5.10",
             "A quantized pass-through exit does not share the entry's full quantization parameters.",
             "Quantize each exit with exactly the entry's type, scale, zero_point and axis."},
    RuleInfo{"op/relu-form", S::kError, kAlways, "5.15",
             "Relu/Clip form not allowed.",
             "Use Q/DQ on both sides, or a fusion tail directly after a quantized compute op with "
             "an unsigned output Q/DQ."},
    RuleInfo{"op/relu-zero-point", S::kError, kAlways, "5.15",
             "Relu output zero_point is not 0 (Clip: only when symmetric).",
             "Quantize the Relu output with zero_point 0."},
    RuleInfo{"op/split-exit-params", S::kWarn, kCv, "5.11",
             "A Split pass-through exit's parameters are unknown or inconsistent (5.11).",
             "Use the input's parameters on same-type exits, and equal parameters within a type."},
};

}  // namespace

std::span<const RuleInfo> Rules() { return kRules; }

const RuleInfo* FindRule(std::string_view id) {
  for (const auto& r : kRules) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

}  // namespace axqc
