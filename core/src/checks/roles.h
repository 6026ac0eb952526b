// Role checks of section 4 shared by operator, pattern, passive and Relu/Clip rules.
#pragma once

#include "context.h"

namespace axqc::detail {

// A data input of a quantized compute unit. Claims the DQ; checks the activation type against
// the operator's set. Returns the DQ's params, or nullptr when the input is not quantized (and
// reports why).
const QuantParams* CheckDataInput(Context& c, int unit, int node, int slot, const OpSpec& spec);
// The activation type of a Q/DQ edge that leaves a unit through Q `qn`.
void CheckOutputActivation(Context& c, int qn, int producer);
// Weight input (Conv/ConvTranspose/Gemm input 1).
const QuantParams* CheckWeight(Context& c, int unit, int node, const OpSpec& spec);
// Bias input (input 2) incl. bias_scale against input and weight scales.
void CheckBias(Context& c, int unit, int node, const OpSpec& spec, const QuantParams* in,
               const QuantParams* w);
// Input that must be a direct FP32 initializer (op/static-param).
void CheckStaticParam(Context& c, int node, int slot, std::string_view what);
// Every consumer of a designated output must be a Q; claims them. Returns false when some
// consumer is not (after reporting `rule`).
bool CheckOutputQuantized(Context& c, int unit, int node, int tensor_id, std::string_view tensor,
                          RuleId rule);
// Where a float tensor without DQ comes from, for messages.
std::string SourceText(const Context& c, std::string_view tensor);
// True when `tensor` leaves a passive unit that is in quantized pass-through mode.
bool FromQuantizedPassive(const Context& c, std::string_view tensor);
bool IsFloatTensor(const Context& c, std::string_view tensor);  // unknown counts as float
// The ai.onnx Constant node producing `tensor`, or -1. Findings caused by a Constant name it
// (reading 13: the Constant itself is reported once, as onnx/constant-node).
int ConstantProducer(const Context& c, std::string_view tensor);
// "Op 'a', Op 'b'" for messages.
std::string NodeList(const Context& c, const std::vector<int>& nodes);
// Node lists for Emitter::Args::more_nodes: the non-negative ones of `nodes`.
std::vector<int> Nodes(std::initializer_list<int> nodes);

}  // namespace axqc::detail
