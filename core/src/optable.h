// Operator facts of spec section 5, in one declarative table: behaviour class, the role of every
// input and output, the allowed activation types and the operator's narrowing constraints.
// docs/rules/operators.md is generated from this table (axqc rules --operators).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "quant.h"
#include "rules.h"

namespace axqc::detail {

enum class OpClass : std::uint8_t {
  kQuantOnly,    // float data inputs and used float data outputs cross Q/DQ
  kNonQuant,     // owns no Q/DQ (5.9)
  kPassive,      // non-quant mode or quantized pass-through sharing full params (5.10, Pad 5.13)
  kMixed,        // quantized or non-quant mode decided by the data entry (TopK 5.14)
  kReluLike,     // Relu/Clip: standalone quant-only form or fusion tail (5.15, 5.16)
  kUnsupported,  // AffineGrid, GRU, LSTM (5.17)
};
std::string_view OpClassName(OpClass c);

enum class InRole : std::uint8_t {
  kData,       // float data: quantized through DQ (activation types of the op)
  kWeight,     // Conv/ConvTranspose/Gemm weight: S4/S8 symmetric per-channel
  kBias,       // Conv/ConvTranspose/Gemm bias: FP32 initializer or S32 per-channel via DQ
  kAux,        // native-typed auxiliary input (shape, axes, indices, pads, condition, ...)
  kStaticF32,  // must be a direct FP32 initializer (norm affine, BN params, PRelu slope, ...)
  kClipBound,  // omitted or a direct FP32 initializer
  kFloatAux,   // FP32, never quantized (RoiAlign rois)
  kGrid,       // GridSample grid: FP32 (static: initializer) or S16 symmetric per-tensor
  kExponent,   // Pow exponent: never quantized; static -> initializer
  kPass,       // passive data input
};
std::string_view InRoleName(InRole r);

enum class OutRole : std::uint8_t { kData, kAux };

enum OpFlags : std::uint32_t {
  kNone = 0,
  kSameTypeData = 1u << 0,  // all quantized data inputs share one integer type
  kSymmetricData =
      1u << 1,          // data inputs must be symmetric (signed) per-tensor (MatMul, GridSample)
  kU4Input = 1u << 2,   // U4 activation allowed on the data input (Conv family)
  kGemmForm = 1u << 3,  // Gemm canonical form
  kPadQuantParams = 1u << 4,  // Pad: constant_value static only in quantized mode
  kVariadic = 1u << 5,        // last input role repeats
  kVariadicOut = 1u << 6,     // last output role repeats
};

struct OpSpec {
  std::string_view op_type;
  OpClass cls;
  std::string_view section;
  std::vector<InRole> inputs;
  std::vector<OutRole> outputs;
  QTypeSet data_types;  // allowed integer types on data inputs
  std::uint32_t flags = kNone;
  std::int64_t weight_axis = 0;  // Conv/Gemm 0, ConvTranspose 1
  std::optional<RuleId> rule;    // rule for data-type violations
  std::string_view note;         // one line for the support matrix

  InRole InputRole(int slot) const;
  OutRole OutputRole(int slot) const;
};

// nullptr for operators in no list (uncovered) and for non-default domains.
const OpSpec* FindOp(std::string_view op_type, std::string_view domain);
std::span<const OpSpec> AllOps();

// Activation types of the role table (section 4).
inline constexpr QTypeSet kActivationTypes{QType::kU8, QType::kS8, QType::kU16, QType::kS16};
inline constexpr QTypeSet kActivationTypesU4{QType::kU4, QType::kU8, QType::kS8, QType::kU16,
                                             QType::kS16};
inline constexpr QTypeSet kWeightTypes{QType::kS4, QType::kS8};
inline constexpr QTypeSet kSymmetric8or16{QType::kS8, QType::kS16};

bool IsDataRole(InRole r);  // kData, kWeight, kBias, kPass, kGrid

}  // namespace axqc::detail
