#include "optable.h"

#include <unordered_map>

namespace axqc::detail {

std::string_view OpClassName(OpClass c) {
  switch (c) {
    case OpClass::kQuantOnly: return "quant-only";
    case OpClass::kNonQuant: return "non-quant-only";
    case OpClass::kPassive: return "passive";
    case OpClass::kMixed: return "mixed";
    case OpClass::kReluLike: return "quant-only (fusion tail)";
    case OpClass::kUnsupported: return "unsupported";
  }
  return "?";
}

std::string_view InRoleName(InRole r) {
  switch (r) {
    case InRole::kData: return "data";
    case InRole::kWeight: return "weight";
    case InRole::kBias: return "bias";
    case InRole::kAux: return "aux";
    case InRole::kStaticF32: return "static FP32";
    case InRole::kClipBound: return "clip bound";
    case InRole::kFloatAux: return "FP32 aux";
    case InRole::kGrid: return "grid";
    case InRole::kExponent: return "exponent";
    case InRole::kPass: return "pass-through data";
  }
  return "?";
}

bool IsDataRole(InRole r) {
  return r == InRole::kData || r == InRole::kWeight || r == InRole::kBias || r == InRole::kPass ||
         r == InRole::kGrid;
}

InRole OpSpec::InputRole(int slot) const {
  if (slot < 0 || inputs.empty()) return InRole::kAux;
  auto s = static_cast<std::size_t>(slot);
  if (s < inputs.size()) return inputs[s];
  return (flags & kVariadic) ? inputs.back() : InRole::kAux;
}

OutRole OpSpec::OutputRole(int slot) const {
  if (slot < 0 || outputs.empty()) return OutRole::kAux;
  auto s = static_cast<std::size_t>(slot);
  if (s < outputs.size()) return outputs[s];
  return (flags & kVariadicOut) ? outputs.back() : OutRole::kAux;
}

namespace {

using R = InRole;
using O = OutRole;
constexpr auto D = R::kData;
constexpr auto A = R::kAux;
constexpr auto P = R::kPass;
constexpr auto F = R::kStaticF32;

std::vector<OpSpec> BuildTable() {
  std::vector<OpSpec> t;
  auto quant = [&](std::string_view op, std::string_view sec, std::vector<R> in,
                   std::vector<O> out = {O::kData}, std::uint32_t flags = kNone,
                   std::string_view note = "") {
    t.push_back({op, OpClass::kQuantOnly, sec, std::move(in), std::move(out), kActivationTypes,
                 flags, 0, rules::kRoleActivationType, note});
  };
  // 5.2 Conv, ConvTranspose, Gemm
  t.push_back({"Conv", OpClass::kQuantOnly, "5.2", {D, R::kWeight, R::kBias}, {O::kData},
               kActivationTypesU4, kU4Input, 0, rules::kRoleActivationType,
               "weight S4/S8 symmetric per-channel axis 0; bias FP32 init or S32 per-channel"});
  t.push_back({"ConvTranspose", OpClass::kQuantOnly, "5.2", {D, R::kWeight, R::kBias}, {O::kData},
               kActivationTypesU4, kU4Input, 1, rules::kRoleActivationType,
               "weight S4/S8 symmetric per-channel axis 1; no quantized bias when group > 1"});
  t.push_back({"Gemm", OpClass::kQuantOnly, "5.2", {D, R::kWeight, R::kBias}, {O::kData},
               kActivationTypesU4, kU4Input | kGemmForm, 0, rules::kRoleActivationType,
               "transA=0 transB=1 alpha=1 beta=1; weight S4/S8 symmetric per-channel axis 0"});
  // 5.3 MatMul
  t.push_back({"MatMul", OpClass::kQuantOnly, "5.3", {D, D}, {O::kData}, kSymmetric8or16,
               kSameTypeData | kSymmetricData, 0, rules::kOpMatmulType,
               "both inputs symmetric per-tensor S8 or S16, same type"});
  // 5.4 GridSample
  t.push_back({"GridSample", OpClass::kQuantOnly, "5.4", {D, R::kGrid}, {O::kData}, kSymmetric8or16,
               kSymmetricData, 0, rules::kOpGridsampleType,
               "feature symmetric per-tensor S8/S16; grid FP32 or symmetric per-tensor S16"});
  // 5.5 arithmetic
  for (auto op : {"Add", "Sub", "Mul"}) {
    quant(op, "5.5", {D, D}, {O::kData}, kNone,
          "float data quantized; native integer mode (shape/index arithmetic) without Q/DQ");
  }
  quant("Div", "5.5", {D, D});
  quant("Max", "5.5", {D}, {O::kData}, kVariadic, "all variadic inputs quantized");
  quant("Min", "5.5", {D}, {O::kData}, kVariadic, "all variadic inputs quantized");
  quant("Pow", "5.5", {D, R::kExponent}, {O::kData}, kNone,
        "base and output quantized; exponent not quantized, static exponent an initializer");
  quant("LogSoftmax", "5.5", {D});
  quant("LpNormalization", "5.5", {D});
  // 5.6 unary
  for (auto op : {"Cos", "Elu", "Erf", "Exp", "HardSigmoid", "HardSwish", "Log", "Mish", "Sin",
                  "Softplus", "Sqrt", "Tanh", "Reciprocal"}) {
    quant(op, "5.6", {D});
  }
  // 5.7 activation, normalisation, pooling
  for (auto op : {"Sigmoid", "Gelu", "LeakyRelu", "Softmax", "AveragePool", "GlobalAveragePool"}) {
    quant(op, "5.7", {D});
  }
  quant("LayerNormalization", "5.7", {D, F, F}, {O::kData, O::kData, O::kData}, kNone,
        "scale/bias direct FP32 initializers");
  quant("GroupNormalization", "5.7", {D, F, F}, {O::kData}, kNone,
        "scale/bias direct FP32 initializers");
  quant("InstanceNormalization", "5.7", {D, F, F}, {O::kData}, kNone,
        "scale/bias direct FP32 initializers");
  quant("BatchNormalization", "5.7", {D, F, F, F, F}, {O::kData, O::kData, O::kData}, kNone,
        "scale/bias/mean/var direct FP32 initializers");
  // 5.8 typed inputs
  quant("CumSum", "5.8", {D, A}, {O::kData}, kNone, "axis native");
  quant("PRelu", "5.8", {D, F}, {O::kData}, kNone, "slope FP32 initializer");
  quant("ReduceL2", "5.8", {D, A}, {O::kData}, kNone, "axes native");
  quant("ReduceMean", "5.8", {D, A}, {O::kData}, kNone, "axes native");
  quant("ReduceSum", "5.8", {D, A}, {O::kData}, kNone, "axes native");
  quant("RoiAlign", "5.8", {D, R::kFloatAux, A}, {O::kData}, kNone,
        "rois FP32, batch_indices native");
  quant("ScatterElements", "5.8", {D, A, D}, {O::kData}, kSameTypeData,
        "data/updates same integer type; indices native");
  quant("ScatterND", "5.8", {D, A, D}, {O::kData}, kSameTypeData,
        "data/updates same integer type; indices native");
  quant("Where", "5.8", {A, D, D}, {O::kData}, kSameTypeData,
        "condition BOOL; X/Y same integer type");
  // 5.9 non-quant-only
  for (auto op : {"Abs", "Ceil", "Floor", "Neg", "Round", "And", "ArgMax", "ArgMin", "Cast",
                  "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Not"}) {
    t.push_back({op, OpClass::kNonQuant, "5.9", {A}, {O::kAux}, {}, kVariadic | kVariadicOut, 0,
                 std::nullopt,
                 "owns no Q/DQ"});
  }
  // 5.10 passive
  auto passive = [&](std::string_view op, std::vector<R> in, std::vector<O> out = {O::kData},
                     std::uint32_t flags = kNone, std::string_view note = "") {
    t.push_back({op, OpClass::kPassive, "5.10", std::move(in), std::move(out), kActivationTypes,
                 flags, 0, rules::kOpPassiveParams, note});
  };
  passive("DepthToSpace", {P});
  passive("Expand", {P, A});
  passive("Flatten", {P});
  passive("Gather", {P, A});
  passive("Identity", {P}, {O::kData}, kNone, "DQ -> Identity -> Q marks a requantize (3.5)");
  passive("Reshape", {P, A});
  passive("Slice", {P, A, A, A, A});
  passive("SpaceToDepth", {P});
  passive("Split", {P, A}, {O::kData}, kVariadicOut, "exits may change type (5.11)");
  passive("Squeeze", {P, A});
  passive("Transpose", {P});
  passive("Unsqueeze", {P, A});
  passive("MaxPool", {P}, {O::kData, O::kAux}, kNone, "Indices output native");
  passive("ReduceMax", {P, A});
  passive("Resize", {P, A, A, A});
  passive("Tile", {P, A});
  passive("GatherElements", {P, A});
  passive("GatherND", {P, A});
  passive("ReduceMin", {P, A});
  passive("GlobalMaxPool", {P});
  t.push_back({"Pad", OpClass::kPassive, "5.13", {P, A, F, A}, {O::kData}, kActivationTypes,
               kPadQuantParams, 0, rules::kOpPassiveParams,
               "shares full params; pads native; constant_value direct FP32 initializer"});
  // 5.12 Concat, 5.14 TopK
  t.push_back({"Concat", OpClass::kQuantOnly, "5.12", {D}, {O::kData}, kActivationTypes,
               kVariadic | kSameTypeData, 0, rules::kRoleActivationType,
               "all inputs same integer type, output independent; native integer mode"});
  t.push_back({"TopK", OpClass::kMixed, "5.14", {D, A}, {O::kData, O::kAux}, kActivationTypes,
               kNone, 0, rules::kOpPassiveParams, "Values share X's params; Indices native"});
  // 5.15, 5.16
  t.push_back({"Relu", OpClass::kReluLike, "5.15", {D}, {O::kData}, kActivationTypes, kNone, 0,
               rules::kRoleActivationType, "standalone (Q/DQ both sides) or fusion tail; zp 0"});
  t.push_back({"Clip", OpClass::kReluLike, "5.16", {D, R::kClipBound, R::kClipBound}, {O::kData},
               kActivationTypes, kNone, 0, rules::kRoleActivationType,
               "min/max omitted or FP32 initializers; zp 0 only when symmetric"});
  // 5.17
  for (auto op : {"AffineGrid", "GRU", "LSTM"}) {
    t.push_back({op, OpClass::kUnsupported, "5.17", {}, {}, {}, kNone, 0,
                 rules::kClosureUnsupportedOp,
                 "does not conform"});
  }
  return t;
}

const std::vector<OpSpec>& Table() {
  static const std::vector<OpSpec> t = BuildTable();
  return t;
}

}  // namespace

std::span<const OpSpec> AllOps() { return Table(); }

const OpSpec* FindOp(std::string_view op_type, std::string_view domain) {
  if (!IsOnnxDomain(domain)) return nullptr;
  static const auto index = [] {
    std::unordered_map<std::string_view, const OpSpec*> m;
    for (const auto& s : Table()) m.emplace(s.op_type, &s);
    return m;
  }();
  auto it = index.find(op_type);
  return it == index.end() ? nullptr : it->second;
}

}  // namespace axqc::detail
