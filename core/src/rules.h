// The rule registry: the catalog (one row per rule ID: severity, spec section, summary, fix, the
// files that implement the rule and the tests that assert it) and a typed handle per row.
//
// Code names a rule only through its handle, `rules::kQdqScaleValue`: a misspelt handle does not
// compile, and each handle is looked up in the catalog at compile time (RuleId's constructor is
// consteval: an ID missing from the catalog is a compile error). ID -> handle is mechanical
// ("qdq/scale-value" -> kQdqScaleValue), so `grep -rn kQdqScaleValue core/src` finds the code, and
// the row's `implementation` names the same files (tests/unit/rule_ids_test.cc keeps the two equal
// and checks that each named test asserts the ID). The doc page docs/rules/<family>--<name>.md
// repeats both lists (tests/unit/operators_doc_test.cc keeps it in step).
//
// Rule IDs are a public contract (reports, CI scripts and docs key on them): never rename one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "axqc/catalog.h"

namespace axqc::detail {

using S = Severity;
inline constexpr bool kCv = true;
inline constexpr bool kAlways = false;

// The one catalog. Order: spec order, as in RULES.md. New IDs are appended to their group.
// `implementation`: files under core/src that use the rule's handle; `tests`: files under tests/
// that assert the rule ID (both space-separated).
inline constexpr std::array kCatalog{
    // Scope and ONNX base (2.1, 2.2)
    RuleInfo{"scope/no-quantized-edge", S::kInfo, kAlways, "2.1",
             "No ai.onnx Q/DQ node lies on an operator or pattern data path and nothing else "
             "quantizes the model: not in scope.",
             "Nothing to fix if the model is meant to be float; otherwise export it in QDQ form.",
             "core/src/checker.cc",
             "tests/onnx_base_test.cc tests/unit/backend_models_test.cc "
             "tests/unit/ownership_test.cc tests/unit/readings_test.cc"},
    RuleInfo{"onnx/invalid-model", S::kError, kAlways, "2.2",
             "The model is not valid ONNX for its declared IR version and opsets (full check, "
             "strict shape inference).",
             "Fix the cause named in the message (each message ends with how to fix that cause).",
             "core/src/checker.cc core/src/fix/engine.cc",
             "tests/onnx_base_test.cc tests/unit/backend_models_test.cc "
             "tests/unit/fuzz_regressions_test.cc tests/unit/hostile_inputs_test.cc "
             "tests/unit/operators_test.cc tests/unit/readings_test.cc"},
    RuleInfo{"onnx/constant-node", S::kError, kAlways, "2.2",
             "A Constant node; static constants must be initializers.",
             "Fold Constant nodes into graph initializers (e.g. onnx-simplifier or the exporter's "
             "constant folding).",
             "core/src/checks/onnx_base.cc",
             "tests/onnx_base_test.cc tests/unit/operators_test.cc tests/unit/readings_test.cc "
             "tests/unit/real_exports_test.cc"},
    RuleInfo{
        "onnx/value-info-missing", S::kError, kCv, "2.2",
        "An intermediate tensor lacks value_info with an element type and a complete shape.",
        "Run ONNX shape inference and keep its value_info, or declare the tensor's type and shape.",
        "core/src/checks/onnx_base.cc",
        "tests/onnx_base_test.cc tests/unit/backend_models_test.cc "
        "tests/unit/real_exports_test.cc"},
    RuleInfo{"onnx/library-message", S::kInfo, kAlways, "2.2",
             "The ONNX library printed a message while validating the model (e.g. experimental "
             "ops); it is kept in the report instead of on stdout.",
             "Read the message; it does not change the verdict.", "core/src/checker.cc",
             "tests/unit/stdout_test.cc"},
    // Closure and ownership (2.3, 2.4, 6.1)
    RuleInfo{"closure/uncovered-node", S::kError, kAlways, "2.3",
             "A non-Q/DQ node is covered by no operator rule or pattern.",
             "Replace the operator by supported ones, or move it out of the model.",
             "core/src/checks/closure.cc",
             "tests/unit/backend_models_test.cc tests/unit/hostile_inputs_test.cc "
             "tests/unit/ownership_test.cc tests/unit/readings_test.cc "
             "tests/unit/real_exports_test.cc tests/unit/stdout_test.cc"},
    RuleInfo{
        "closure/unsupported-op", S::kError, kAlways, "5.17",
        "AffineGrid, GRU and LSTM do not conform to the ax quant spec.",
        "Decompose the operator into supported operators.",
        "core/src/checks/closure.cc core/src/optable.cc",
        "tests/unit/operators_test.cc tests/unit/ownership_test.cc tests/unit/readings_test.cc"},
    RuleInfo{
        "closure/orphan-qdq", S::kError, kAlways, "2.3",
        "A Q or DQ node (or Q/DQ edge) has no unique purpose in any operator or pattern rule.",
        "Remove the Q/DQ, or place it at an operator's data input or output.",
        "core/src/checks/closure.cc",
        "tests/unit/operators_test.cc tests/unit/ownership_test.cc tests/unit/readings_test.cc"},
    RuleInfo{"closure/ambiguous-ownership", S::kError, kAlways, "6.1",
             "Two largest matching patterns of equal size overlap; ownership is not unique.",
             "Restructure the subgraph so each node belongs to one pattern instance.",
             "core/src/checks/patterns.cc", "tests/unit/ownership_test.cc"},
    RuleInfo{"pattern/internal-qdq", S::kError, kAlways, "6.1",
             "A Q/DQ is inserted inside a pattern.",
             "Remove the Q/DQ between the pattern's nodes; only its boundary is quantized.",
             "core/src/checks/patterns.cc", "tests/unit/ownership_test.cc"},
    RuleInfo{"pattern/internal-escape", S::kError, kAlways, "6.1",
             "A pattern-internal tensor is consumed outside the pattern or is a graph output.",
             "Only the pattern's output may leave it; duplicate the computation or restructure.",
             "core/src/checks/patterns.cc", "tests/unit/ownership_test.cc"},
    // Basic Q/DQ (3)
    RuleInfo{"qdq/float-side-type", S::kError, kAlways, "3.1",
             "Q data input, scale, or DQ output is not FP32.",
             "Quantize from FP32, keep scales FP32 and dequantize to FP32.",
             "core/src/checks/qdq_nodes.cc", "tests/qdq_test.cc"},
    RuleInfo{"qdq/scale-not-initializer", S::kError, kAlways, "3.1",
             "The scale is not an initializer referenced directly by the Q/DQ node.",
             "Store the scale as an initializer and reference it directly.",
             "core/src/checks/qdq_nodes.cc",
             "tests/qdq_test.cc tests/unit/readings_test.cc tests/unit/real_exports_test.cc"},
    RuleInfo{"qdq/zero-point-missing", S::kError, kAlways, "3.1",
             "The zero_point input is omitted (no reliance on the ONNX default).",
             "Add an explicit zero_point input (0 for symmetric quantization).",
             "core/src/checks/qdq_nodes.cc", "tests/qdq_test.cc"},
    RuleInfo{"qdq/scale-value", S::kError, kAlways, "3.1",
             "A scale element is NaN, infinite or not greater than 0.", "Use finite scales > 0.",
             "core/src/checks/qdq_nodes.cc", "tests/qdq_test.cc"},
    RuleInfo{"qdq/zero-point-value", S::kWarn, kCv, "3.2",
             "Symmetric zero_point is not 0, or asymmetric zero_point is outside the type's range.",
             "Use zero_point 0 for signed (symmetric) types; keep unsigned ones within range.",
             "core/src/checks/qdq_nodes.cc", "tests/qdq_test.cc tests/unit/operators_test.cc"},
    RuleInfo{"qdq/granularity", S::kError, kAlways, "3.3",
             "Quantization is neither per-tensor (scalar or one-element 1-D) nor per-channel (1-D, "
             "scale and zero_point of equal length); blocked quantization is forbidden.",
             "Use per-tensor or per-channel quantization with matching scale/zero_point shapes.",
             "core/src/checks/qdq_nodes.cc", "tests/qdq_test.cc tests/unit/readings_test.cc"},
    RuleInfo{"qdq/axis-missing", S::kError, kAlways, "3.3",
             "Per-channel quantization without an explicit axis attribute.",
             "Set the axis attribute explicitly.", "core/src/checks/qdq_nodes.cc",
             "tests/qdq_test.cc"},
    RuleInfo{"qdq/weight-axis", S::kError, kAlways, "3.3",
             "Weight per-channel axis is not 0 (Conv, Gemm) / 1 (ConvTranspose), or is negative.",
             "Quantize weights along the output-channel axis, written as a non-negative number.",
             "core/src/checks/roles.cc",
             "tests/qdq_test.cc tests/unit/operators_test.cc tests/unit/readings_test.cc "
             "tests/unit/real_exports_test.cc"},
    RuleInfo{"qdq/pair-mismatch", S::kError, kAlways, "3.4",
             "Q and its DQ differ in integer type, scale or zero_point shape/dtype, granularity or "
             "normalised axis.",
             "Give the Q and its DQ the same quantization parameters.",
             "core/src/checks/qdq_edges.cc", "tests/qdq_test.cc tests/unit/readings_test.cc"},
    RuleInfo{"qdq/pair-value-mismatch", S::kWarn, kCv, "3.4",
             "Q and DQ scale or zero_point values differ element-wise.",
             "Use the same scale and zero_point values on both ends of the edge.",
             "core/src/checks/qdq_edges.cc", "tests/qdq_test.cc"},
    RuleInfo{"qdq/q-fanout", S::kError, kAlways, "3.4",
             "The Q output has a consumer other than exactly one paired DQ.",
             "Let each Q feed exactly one DQ; share the DQ output instead.",
             "core/src/checks/qdq_edges.cc",
             "tests/qdq_test.cc tests/unit/hostile_inputs_test.cc tests/unit/readings_test.cc"},
    RuleInfo{"qdq/q-graph-output", S::kError, kAlways, "3.4", "A Q output is a graph output.",
             "Add the paired DQ and output its result.", "core/src/checks/qdq_edges.cc",
             "tests/qdq_test.cc"},
    RuleInfo{"qdq/dq-input-source", S::kError, kAlways, "3.4",
             "A DQ integer input comes from a graph input or a runtime node instead of its Q or an "
             "allowed integer initializer.",
             "Feed runtime activations through a full Q -> DQ pair.",
             "core/src/checks/qdq_edges.cc", "tests/qdq_test.cc"},
    RuleInfo{"qdq/requantize-identity", S::kError, kAlways, "3.5",
             "DQ1 -> Q2 directly with different parameters; an Identity must mark the requantize.",
             "Insert an Identity between the DQ and the Q: DQ1 -> Identity -> Q2.",
             "core/src/checks/qdq_edges.cc", "tests/qdq_test.cc tests/unit/readings_test.cc"},
    RuleInfo{
        "qdq/const-form", S::kError, kAlways, "3.6",
        "A constant data input is not in an allowed form.",
        "Weights: FP32 init -> Q -> DQ or int init -> DQ; bias: FP32 init, or INT32 init -> DQ; "
        "other constant data: FP32 init -> Q -> DQ or int init -> DQ.",
        "core/src/checks/closure.cc core/src/checks/compute.cc core/src/checks/roles.cc",
        "tests/qdq_test.cc tests/unit/operators_test.cc tests/unit/readings_test.cc "
        "tests/unit/real_exports_test.cc"},
    RuleInfo{"qdq/integer-type", S::kError, kAlways, "4",
             "The Q/DQ integer type is not one of U4, S4, U8, S8, U16, S16, S32.",
             "Use one of the supported integer types.", "core/src/checks/qdq_nodes.cc",
             "tests/qdq_test.cc"},
    RuleInfo{"qdq/value-unreadable", S::kInfo, kCv, "2.5",
             "A numeric check was skipped because a value is not statically readable.",
             "Make the value an initializer (or a chain the checker can read).",
             "core/src/checks/passive.cc core/src/checks/qdq_edges.cc core/src/checks/qdq_nodes.cc "
             "core/src/checks/relu_clip.cc core/src/checks/roles.cc",
             "tests/qdq_test.cc"},
    RuleInfo{"qdq/requantize", S::kInfo, kAlways, "3.5",
             "A requantize boundary DQ -> Identity -> Q.", "Informational.",
             "core/src/checks/passive.cc",
             "tests/qdq_test.cc tests/unit/operators_test.cc tests/unit/ownership_test.cc"},
    // Quantization roles (4)
    RuleInfo{
        "role/activation-type", S::kError, kAlways, "4",
        "Activation type or granularity outside the role table or the operator's narrower set.",
        "Use U8, S8, U16 or S16 per-tensor (U4 only into Conv/ConvTranspose/Gemm).",
        "core/src/checks/roles.cc core/src/optable.cc",
        "tests/qdq_test.cc tests/unit/operators_test.cc tests/unit/readings_test.cc"},
    RuleInfo{
        "role/weight-type", S::kError, kAlways, "4", "Weight is not symmetric S4/S8 per-channel.",
        "Quantize weights per-channel, symmetric, to INT8 or INT4.", "core/src/checks/roles.cc",
        "tests/onnx_base_test.cc tests/qdq_test.cc tests/unit/operators_test.cc "
        "tests/unit/readings_test.cc tests/unit/real_exports_test.cc"},
    RuleInfo{"role/bias-type", S::kError, kAlways, "4",
             "Quantized bias is not symmetric S32 per-channel.",
             "Quantize bias per-channel to INT32 with zero_point 0, or keep it FP32.",
             "core/src/checks/roles.cc",
             "tests/qdq_test.cc tests/unit/operators_test.cc tests/unit/readings_test.cc"},
    RuleInfo{"role/int4-channels", S::kError, kAlways, "4",
             "4-bit activation with an odd channel count, or S4 weight with an odd output-channel "
             "count.",
             "Use an even channel count or 8-bit quantization.", "core/src/checks/roles.cc",
             "tests/qdq_test.cc"},
    RuleInfo{
        "role/bias-scale", S::kWarn, kCv, "4",
        "bias_scale differs from input_scale * weight_scale beyond 1e-7 + 1e-5*|input*weight|.",
        "Set bias_scale[c] = input_scale * weight_scale[c] (FP32).", "core/src/checks/roles.cc",
        "tests/qdq_test.cc"},
    RuleInfo{"role/convtranspose-group-bias", S::kError, kAlways, "4",
             "ConvTranspose with group > 1 uses a quantized bias.",
             "Keep the bias FP32 (or drop it) for grouped ConvTranspose.",
             "core/src/checks/roles.cc", "tests/qdq_test.cc tests/unit/operators_test.cc"},
    // Operators (5)
    RuleInfo{
        "op/input-not-quantized", S::kError, kAlways, "5.1",
        "A float data input of a quant-only (or quantized-mode) operator does not come through DQ.",
        "Insert Q -> DQ in front of the input.", "core/src/checks/roles.cc",
        "tests/unit/hostile_inputs_test.cc tests/unit/operators_test.cc "
        "tests/unit/ownership_test.cc tests/unit/real_exports_test.cc"},
    RuleInfo{
        "op/output-not-quantized", S::kError, kAlways, "5.1",
        "A used float data output of a quant-only operator does not go through Q/DQ.",
        "Insert Q -> DQ after the output, on every branch.", "core/src/checks/compute.cc",
        "tests/onnx_base_test.cc tests/unit/hostile_inputs_test.cc tests/unit/operators_test.cc "
        "tests/unit/ownership_test.cc tests/unit/real_exports_test.cc"},
    RuleInfo{"op/gemm-form", S::kError, kAlways, "5.2",
             "Gemm is not in canonical fully-connected form (transA=0, transB=1, alpha=1, beta=1).",
             "Export Gemm with transB=1 and default alpha/beta, or transpose the weight offline.",
             "core/src/checks/compute.cc", "tests/unit/operators_test.cc"},
    RuleInfo{"op/same-type-inputs", S::kError, kAlways, "5",
             "Inputs that must share an integer type do not.",
             "Quantize these inputs to the same integer type (scales may differ).",
             "core/src/checks/compute.cc", "tests/unit/operators_test.cc"},
    RuleInfo{"op/matmul-type", S::kError, kAlways, "5.3",
             "A MatMul input is not symmetric per-tensor S8/S16.",
             "Quantize both MatMul inputs symmetric per-tensor INT8 (or both INT16).",
             "core/src/optable.cc", "tests/unit/operators_test.cc tests/unit/real_exports_test.cc"},
    RuleInfo{"op/gridsample-type", S::kError, kAlways, "5.4",
             "GridSample feature not symmetric per-tensor S8/S16, or grid not FP32 / symmetric "
             "per-tensor S16, or a static FP32 grid that is not an initializer.",
             "Feature: symmetric S8/S16 per-tensor; grid: FP32 initializer/runtime or S16.",
             "core/src/checks/compute.cc core/src/optable.cc", "tests/unit/operators_test.cc"},
    RuleInfo{"op/static-param", S::kError, kAlways, "5",
             "A parameter that must be a direct FP32 initializer is not.",
             "Store the parameter as an FP32 initializer referenced directly by the node.",
             "core/src/checks/compute.cc core/src/checks/roles.cc",
             "tests/unit/operators_test.cc tests/unit/ownership_test.cc "
             "tests/unit/real_exports_test.cc"},
    RuleInfo{"op/clip-dynamic", S::kError, kAlways, "5.16",
             "Clip min/max is neither omitted nor a direct FP32 initializer.",
             "Make Clip bounds FP32 initializers.", "core/src/checks/relu_clip.cc",
             "tests/unit/operators_test.cc tests/unit/ownership_test.cc "
             "tests/unit/readings_test.cc tests/unit/real_exports_test.cc"},
    RuleInfo{
        "op/passive-params", S::kError, kAlways, "5.10",
        "A quantized pass-through exit does not share the entry's full quantization parameters.",
        "Quantize each exit with exactly the entry's type, scale, zero_point and axis.",
        "core/src/checks/passive.cc core/src/optable.cc",
        "tests/unit/operators_test.cc tests/unit/ownership_test.cc tests/unit/readings_test.cc "
        "tests/unit/real_exports_test.cc"},
    RuleInfo{"op/relu-form", S::kError, kAlways, "5.15", "Relu/Clip form not allowed.",
             "Use Q/DQ on both sides, or a fusion tail directly after a quantized compute op with "
             "an unsigned output Q/DQ.",
             "core/src/checks/relu_clip.cc",
             "tests/unit/operators_test.cc tests/unit/ownership_test.cc "
             "tests/unit/real_exports_test.cc"},
    RuleInfo{"op/relu-zero-point", S::kError, kAlways, "5.15",
             "Relu output zero_point is not 0 (Clip: only when symmetric).",
             "Quantize the Relu output with zero_point 0.", "core/src/checks/relu_clip.cc",
             "tests/unit/operators_test.cc tests/unit/ownership_test.cc"},
    RuleInfo{"op/split-exit-params", S::kWarn, kCv, "5.11",
             "A Split pass-through exit's parameters are unknown or inconsistent (5.11).",
             "Use the input's parameters on same-type exits, and equal parameters within a type.",
             "core/src/checks/passive.cc",
             "tests/unit/operators_test.cc tests/unit/ownership_test.cc"},
    // Chip targets (not the spec: judged only with CheckOptions::targets, docs/targets.md)
    RuleInfo{"target/op-unsupported", S::kError, kAlways, "target",
             "The operator is not in the chip's NPU operator table: not supported on its NPU.",
             "Replace the operator by ones the chip's table lists, or build for a chip that has "
             "it (axqc targets model.onnx).",
             "core/src/targets.cc", "tests/unit/targets_test.cc"},
    RuleInfo{"target/opset-unsupported", S::kError, kAlways, "target",
             "The model's ai.onnx opset is below the lowest one the chip's table covers.",
             "Convert or re-export the model with a newer opset (onnx.version_converter).",
             "core/src/targets.cc", "tests/unit/targets_test.cc"},
    RuleInfo{"target/attribute-unsupported", S::kError, kAlways, "target",
             "An attribute the chip's table does not support is written with a value other than "
             "its default.",
             "Drop the attribute or fold its effect into the model (e.g. Gemm alpha into the "
             "weight).",
             "core/src/targets.cc", "tests/unit/targets_test.cc"},
    RuleInfo{"target/attribute-value", S::kError, kAlways, "target",
             "An attribute's value (written or the ONNX default) is outside what the chip's table "
             "allows.",
             "Export the operator with a value the table allows (the finding names the limit).",
             "core/src/targets.cc", "tests/unit/targets_test.cc"},
    RuleInfo{"target/input-constraint", S::kError, kAlways, "target",
             "An input breaks the chip's table: given where unsupported, wrong rank or shape, or "
             "not a (scalar) initializer.",
             "Reshape, fold or drop the input as the limit in the finding says.",
             "core/src/targets.cc", "tests/unit/targets_test.cc"},
    RuleInfo{"target/efficiency", S::kInfo, kAlways, "target",
             "The chip's table notes that this form of the operator runs slowly.",
             "Informational; prefer the efficient form where accuracy allows.",
             "core/src/targets.cc", "tests/unit/targets_test.cc"},
    RuleInfo{"target/not-checked", S::kInfo, kAlways, "target",
             "A documented limit of the chip's table that the checker cannot evaluate statically "
             "(or whose shapes are unknown).",
             "Verify the limit with the Pulsar2 build for the chip.", "core/src/targets.cc",
             "tests/unit/targets_test.cc"},
    // Pulsar2 build configuration (not the spec: judged only with CheckOptions::pulsar2_config,
    // docs/pulsar2.md)
    RuleInfo{"pulsar2/config-invalid", S::kError, kAlways, "pulsar2",
             "The Pulsar2 build configuration cannot be read: not (lax) JSON, not an object, or "
             "beyond the size or nesting bounds.",
             "Write the configuration as a JSON object (comments and trailing commas are accepted, "
             "as Pulsar2 accepts them).",
             "core/src/pulsar2.cc", "tests/unit/pulsar2_test.cc"},
    RuleInfo{
        "pulsar2/unknown-field", S::kError, kAlways, "pulsar2",
        "A field the documented configuration schema does not have (Pulsar2's proto definition).",
        "Remove the field or correct its name (the finding suggests a documented one when the "
        "spelling is close).",
        "core/src/pulsar2.cc", "tests/unit/pulsar2_test.cc"},
    RuleInfo{
        "pulsar2/field-value", S::kError, kAlways, "pulsar2",
        "A field's value has the wrong JSON type or is not one of the field's documented options.",
        "Write a value of the field's type and one of its documented options (the finding lists "
        "them).",
        "core/src/pulsar2.cc", "tests/unit/pulsar2_test.cc"},
    RuleInfo{"pulsar2/model-type", S::kError, kAlways, "pulsar2",
             "model_type is not QuantONNX for a QDQ model (ONNX is the default), or QuantONNX for "
             "a model without Q/DQ.",
             "Set \"model_type\": \"QuantONNX\" for a QDQ model (axqc pulsar2-config writes it).",
             "core/src/pulsar2.cc", "tests/unit/pulsar2_test.cc"},
    RuleInfo{
        "pulsar2/target-hardware", S::kWarn, kAlways, "pulsar2",
        "target_hardware names a chip the chip profiles do not know, another chip than the one "
        "checked with --target, or one the docs do not list for Quantized ONNX import.",
        "Set target_hardware to the chip the model is built and checked for (axqc check --target).",
        "core/src/pulsar2.cc", "tests/unit/pulsar2_test.cc"},
    RuleInfo{"pulsar2/selector-no-match", S::kWarn, kAlways, "pulsar2",
             "A layer_configs selector, tensor name or operator name of the configuration matches "
             "nothing in the model: Pulsar2 ignores the entry silently.",
             "Use the model's node names, op types and tensor names (or DEFAULT where documented).",
             "core/src/pulsar2.cc", "tests/unit/pulsar2_test.cc"},
    RuleInfo{"pulsar2/selector-conflict", S::kError, kAlways, "pulsar2",
             "A layer_configs entry sets more than one of layer_name, op_type, layer_names and "
             "op_types, or selects nothing.",
             "Split the entry: one selector kind per entry (or start_tensor_names/end_tensor_names "
             "for a subgraph).",
             "core/src/pulsar2.cc", "tests/unit/pulsar2_test.cc"},
    RuleInfo{"pulsar2/data-type-unsupported", S::kError, kAlways, "pulsar2",
             "A data type the documented rules do not allow for the operator: FP32 data_type on "
             "Conv, or output_data_type/weight_data_type on an entry that selects no Conv.",
             "Use the documented form (Conv: data_type U8 with output_data_type FP32) or drop the "
             "setting.",
             "core/src/pulsar2.cc", "tests/unit/pulsar2_test.cc"},
    RuleInfo{"pulsar2/fp32-unverified", S::kWarn, kAlways, "pulsar2",
             "FP32 is requested for an operator outside the documented list of operators verified "
             "with FP32.",
             "Keep the operator quantized, or verify the FP32 build of it on the chip.",
             "core/src/pulsar2.cc", "tests/unit/pulsar2_test.cc"},
    RuleInfo{"pulsar2/data-movement-type", S::kWarn, kAlways, "pulsar2",
             "A data type is set on a data-movement operator (Reshape, Transpose, ...): its "
             "precision follows the neighbouring compute operators and the setting is ignored.",
             "Remove the entry; set the type on the compute operators around it.",
             "core/src/pulsar2.cc", "tests/unit/pulsar2_test.cc"},
    RuleInfo{"pulsar2/qdq-type-conflict", S::kError, kAlways, "pulsar2",
             "A setting contradicts the model's own Q/DQ types (a layer's activation, output or "
             "weight type, or the Conv bias type).",
             "Remove the setting (the model's Q/DQ decide the types of a QuantONNX build) or "
             "re-export the model with the types wanted.",
             "core/src/pulsar2.cc", "tests/unit/pulsar2_test.cc"},
};

}  // namespace axqc::detail

namespace axqc {

// A rule of the catalog, by index. Made only from a catalog ID at compile time.
class RuleId {
 public:
  consteval explicit RuleId(std::string_view id) : index_(IndexOf(id)) {}
  constexpr const RuleInfo& info() const { return detail::kCatalog[index_]; }
  constexpr std::string_view id() const { return info().id; }
  constexpr std::size_t index() const { return index_; }
  friend constexpr bool operator==(RuleId a, RuleId b) { return a.index_ == b.index_; }

 private:
  static consteval std::uint16_t IndexOf(std::string_view id) {
    for (std::size_t i = 0; i < detail::kCatalog.size(); ++i) {
      if (detail::kCatalog[i].id == id) return static_cast<std::uint16_t>(i);
    }
    // Not a constant expression: the ID is not in the catalog.
    throw "rule ID not in the catalog (core/src/rules.h)";
  }
  std::uint16_t index_;
};

// One handle per catalog row, in catalog order.
namespace rules {
inline constexpr RuleId kScopeNoQuantizedEdge{"scope/no-quantized-edge"};
inline constexpr RuleId kOnnxInvalidModel{"onnx/invalid-model"};
inline constexpr RuleId kOnnxConstantNode{"onnx/constant-node"};
inline constexpr RuleId kOnnxValueInfoMissing{"onnx/value-info-missing"};
inline constexpr RuleId kOnnxLibraryMessage{"onnx/library-message"};
inline constexpr RuleId kClosureUncoveredNode{"closure/uncovered-node"};
inline constexpr RuleId kClosureUnsupportedOp{"closure/unsupported-op"};
inline constexpr RuleId kClosureOrphanQdq{"closure/orphan-qdq"};
inline constexpr RuleId kClosureAmbiguousOwnership{"closure/ambiguous-ownership"};
inline constexpr RuleId kPatternInternalQdq{"pattern/internal-qdq"};
inline constexpr RuleId kPatternInternalEscape{"pattern/internal-escape"};
inline constexpr RuleId kQdqFloatSideType{"qdq/float-side-type"};
inline constexpr RuleId kQdqScaleNotInitializer{"qdq/scale-not-initializer"};
inline constexpr RuleId kQdqZeroPointMissing{"qdq/zero-point-missing"};
inline constexpr RuleId kQdqScaleValue{"qdq/scale-value"};
inline constexpr RuleId kQdqZeroPointValue{"qdq/zero-point-value"};
inline constexpr RuleId kQdqGranularity{"qdq/granularity"};
inline constexpr RuleId kQdqAxisMissing{"qdq/axis-missing"};
inline constexpr RuleId kQdqWeightAxis{"qdq/weight-axis"};
inline constexpr RuleId kQdqPairMismatch{"qdq/pair-mismatch"};
inline constexpr RuleId kQdqPairValueMismatch{"qdq/pair-value-mismatch"};
inline constexpr RuleId kQdqQFanout{"qdq/q-fanout"};
inline constexpr RuleId kQdqQGraphOutput{"qdq/q-graph-output"};
inline constexpr RuleId kQdqDqInputSource{"qdq/dq-input-source"};
inline constexpr RuleId kQdqRequantizeIdentity{"qdq/requantize-identity"};
inline constexpr RuleId kQdqConstForm{"qdq/const-form"};
inline constexpr RuleId kQdqIntegerType{"qdq/integer-type"};
inline constexpr RuleId kQdqValueUnreadable{"qdq/value-unreadable"};
inline constexpr RuleId kQdqRequantize{"qdq/requantize"};
inline constexpr RuleId kRoleActivationType{"role/activation-type"};
inline constexpr RuleId kRoleWeightType{"role/weight-type"};
inline constexpr RuleId kRoleBiasType{"role/bias-type"};
inline constexpr RuleId kRoleInt4Channels{"role/int4-channels"};
inline constexpr RuleId kRoleBiasScale{"role/bias-scale"};
inline constexpr RuleId kRoleConvtransposeGroupBias{"role/convtranspose-group-bias"};
inline constexpr RuleId kOpInputNotQuantized{"op/input-not-quantized"};
inline constexpr RuleId kOpOutputNotQuantized{"op/output-not-quantized"};
inline constexpr RuleId kOpGemmForm{"op/gemm-form"};
inline constexpr RuleId kOpSameTypeInputs{"op/same-type-inputs"};
inline constexpr RuleId kOpMatmulType{"op/matmul-type"};
inline constexpr RuleId kOpGridsampleType{"op/gridsample-type"};
inline constexpr RuleId kOpStaticParam{"op/static-param"};
inline constexpr RuleId kOpClipDynamic{"op/clip-dynamic"};
inline constexpr RuleId kOpPassiveParams{"op/passive-params"};
inline constexpr RuleId kOpReluForm{"op/relu-form"};
inline constexpr RuleId kOpReluZeroPoint{"op/relu-zero-point"};
inline constexpr RuleId kOpSplitExitParams{"op/split-exit-params"};
inline constexpr RuleId kTargetOpUnsupported{"target/op-unsupported"};
inline constexpr RuleId kTargetOpsetUnsupported{"target/opset-unsupported"};
inline constexpr RuleId kTargetAttributeUnsupported{"target/attribute-unsupported"};
inline constexpr RuleId kTargetAttributeValue{"target/attribute-value"};
inline constexpr RuleId kTargetInputConstraint{"target/input-constraint"};
inline constexpr RuleId kTargetEfficiency{"target/efficiency"};
inline constexpr RuleId kTargetNotChecked{"target/not-checked"};
inline constexpr RuleId kPulsar2ConfigInvalid{"pulsar2/config-invalid"};
inline constexpr RuleId kPulsar2UnknownField{"pulsar2/unknown-field"};
inline constexpr RuleId kPulsar2FieldValue{"pulsar2/field-value"};
inline constexpr RuleId kPulsar2ModelType{"pulsar2/model-type"};
inline constexpr RuleId kPulsar2TargetHardware{"pulsar2/target-hardware"};
inline constexpr RuleId kPulsar2SelectorNoMatch{"pulsar2/selector-no-match"};
inline constexpr RuleId kPulsar2SelectorConflict{"pulsar2/selector-conflict"};
inline constexpr RuleId kPulsar2DataTypeUnsupported{"pulsar2/data-type-unsupported"};
inline constexpr RuleId kPulsar2Fp32Unverified{"pulsar2/fp32-unverified"};
inline constexpr RuleId kPulsar2DataMovementType{"pulsar2/data-movement-type"};
inline constexpr RuleId kPulsar2QdqTypeConflict{"pulsar2/qdq-type-conflict"};
}  // namespace rules

// Every handle, in catalog order: each row has exactly one.
inline constexpr std::array kAllRules{
    rules::kScopeNoQuantizedEdge,
    rules::kOnnxInvalidModel,
    rules::kOnnxConstantNode,
    rules::kOnnxValueInfoMissing,
    rules::kOnnxLibraryMessage,
    rules::kClosureUncoveredNode,
    rules::kClosureUnsupportedOp,
    rules::kClosureOrphanQdq,
    rules::kClosureAmbiguousOwnership,
    rules::kPatternInternalQdq,
    rules::kPatternInternalEscape,
    rules::kQdqFloatSideType,
    rules::kQdqScaleNotInitializer,
    rules::kQdqZeroPointMissing,
    rules::kQdqScaleValue,
    rules::kQdqZeroPointValue,
    rules::kQdqGranularity,
    rules::kQdqAxisMissing,
    rules::kQdqWeightAxis,
    rules::kQdqPairMismatch,
    rules::kQdqPairValueMismatch,
    rules::kQdqQFanout,
    rules::kQdqQGraphOutput,
    rules::kQdqDqInputSource,
    rules::kQdqRequantizeIdentity,
    rules::kQdqConstForm,
    rules::kQdqIntegerType,
    rules::kQdqValueUnreadable,
    rules::kQdqRequantize,
    rules::kRoleActivationType,
    rules::kRoleWeightType,
    rules::kRoleBiasType,
    rules::kRoleInt4Channels,
    rules::kRoleBiasScale,
    rules::kRoleConvtransposeGroupBias,
    rules::kOpInputNotQuantized,
    rules::kOpOutputNotQuantized,
    rules::kOpGemmForm,
    rules::kOpSameTypeInputs,
    rules::kOpMatmulType,
    rules::kOpGridsampleType,
    rules::kOpStaticParam,
    rules::kOpClipDynamic,
    rules::kOpPassiveParams,
    rules::kOpReluForm,
    rules::kOpReluZeroPoint,
    rules::kOpSplitExitParams,
    rules::kTargetOpUnsupported,
    rules::kTargetOpsetUnsupported,
    rules::kTargetAttributeUnsupported,
    rules::kTargetAttributeValue,
    rules::kTargetInputConstraint,
    rules::kTargetEfficiency,
    rules::kTargetNotChecked,
    rules::kPulsar2ConfigInvalid,
    rules::kPulsar2UnknownField,
    rules::kPulsar2FieldValue,
    rules::kPulsar2ModelType,
    rules::kPulsar2TargetHardware,
    rules::kPulsar2SelectorNoMatch,
    rules::kPulsar2SelectorConflict,
    rules::kPulsar2DataTypeUnsupported,
    rules::kPulsar2Fp32Unverified,
    rules::kPulsar2DataMovementType,
    rules::kPulsar2QdqTypeConflict,
};
static_assert(kAllRules.size() == detail::kCatalog.size(), "one handle per catalog row");
static_assert(
    [] {
      for (std::size_t i = 0; i < kAllRules.size(); ++i) {
        if (kAllRules[i].index() != i) return false;
      }
      return true;
    }(),
    "handles in catalog order, none twice");

}  // namespace axqc
