// Stage 3: quantization parameters of every QuantizeLinear / DequantizeLinear node, and the
// Q/DQ edges between them (spec section 3).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph_index.h"

namespace axqc::detail {

// The integer types of the spec (RULES.md "Types").
enum class QType : std::uint8_t { kU4, kS4, kU8, kS8, kU16, kS16, kS32 };
inline constexpr int kQTypeCount = 7;

struct QTypeInfo {
  QType type;
  std::string_view name;  // "U8"
  int onnx;               // onnx::TensorProto_DataType
  bool is_signed;
  std::int64_t min, max;
  int bits;
};
const QTypeInfo& Info(QType t);
std::optional<QType> QTypeFromOnnx(int elem_type);
std::string QTypeName(std::optional<QType> t, int onnx_type);

// Bit set over QType.
struct QTypeSet {
  std::uint32_t bits = 0;
  constexpr QTypeSet() = default;
  constexpr QTypeSet(std::initializer_list<QType> ts) {
    for (auto t : ts) bits |= 1u << static_cast<unsigned>(t);
  }
  constexpr bool Has(QType t) const { return (bits >> static_cast<unsigned>(t)) & 1u; }
  std::string ToString() const;  // "U8|S8|U16|S16"
};

enum class Granularity : std::uint8_t { kPerTensor, kPerChannel, kInvalid, kUnknown };
std::string_view GranularityName(Granularity g);

// Parameters of one Q or DQ node.
struct QuantParams {
  int node = -1;
  bool is_q = false;
  std::string_view x, scale, zp, y;                     // tensor names (zp empty when omitted)
  int x_id = -1, scale_id = -1, zp_id = -1, y_id = -1;  // GraphIndex ids (-1: omitted)
  int int_type = 0;            // ONNX integer type (Q: zp/output_dtype; DQ: input)
  std::optional<QType> qtype;  // nullopt when int_type is not a spec type
  int scale_dtype = 0, zp_dtype = 0;
  std::optional<std::vector<std::int64_t>> scale_dims, zp_dims;
  bool scale_is_initializer = false;      // direct initializer of this node
  bool block_size = false;                // blocked quantization requested
  std::optional<std::int64_t> axis_attr;  // as written
  std::optional<std::int64_t> axis_norm;  // normalised against the data rank
  Granularity granularity = Granularity::kUnknown;
  std::string granularity_problem;  // why kInvalid
  std::optional<std::vector<double>> scale_values;
  std::optional<std::vector<std::int64_t>> zp_values;  // read through Identity/Cast chains
  std::int64_t channels() const;                       // scale element count (1 for per-tensor)
};

// How a DQ's integer input is produced.
enum class DqSource : std::uint8_t {
  kPairedQ,         // its Q (Q output consumed by this DQ)
  kIntInitializer,  // integer initializer (DQ-only constant)
  kConstantNode,    // integer Constant node (also an onnx/constant-node finding)
  kGraphInput,
  kRuntime,  // another node's output
  kMissing,
};

class QuantTable {
 public:
  explicit QuantTable(const GraphIndex& g);
  // In two steps: the constructor reads what does not depend on tensor types (which nodes are Q/DQ,
  // their tensors, attributes, and scale / zero-point values from initializers and Constant
  // nodes: GraphIndex ids, producers and initializers only, no types), so that it can run while
  // shape inference is still adding types; ReadTypes() completes every entry once `g` has its
  // types (GraphIndex::RecordTypes).
  QuantTable(const GraphIndex& g, GraphIndex::TypesLater);
  void ReadTypes();
  const QuantParams* Of(int node) const;  // nullptr when the node is not Q/DQ
  bool IsQ(int node) const;
  bool IsDQ(int node) const;
  // The DQ producing the tensor with id `tensor` (GraphIndex::TensorId), or -1.
  int DqProducing(int tensor) const;
  // For a DQ: the source of its integer input and, for kPairedQ, the Q node.
  DqSource SourceOf(int dq, int* q = nullptr) const;
  // For a Q: its paired DQ (the unique DQ consumer), or -1.
  int PairedDq(int q) const;
  const std::vector<int>& q_nodes() const { return qs_; }
  const std::vector<int>& dq_nodes() const { return dqs_; }

 private:
  const GraphIndex& g_;
  std::vector<int> slot_;  // node -> index into params_, or -1
  std::vector<QuantParams> params_;
  std::vector<int> qs_, dqs_;
};

// First difference in full quantization parameters (type, granularity, axis, scale and zp
// shapes; with `values`, scale and zp values). Empty when equal. When values are compared but
// not readable on one side, `unknown` is set and names are compared instead.
struct ParamDiff {
  std::string what;  // "" when equal
  bool unknown = false;
};
ParamDiff CompareStructure(const QuantParams& a, const QuantParams& b);
ParamDiff CompareValues(const QuantParams& a, const QuantParams& b);
ParamDiff CompareFull(const QuantParams& a, const QuantParams& b);
// Requantize (3.5, RULES.md reading 12): by value and granularity; per-tensor parameters written
// rank-0 and [1] with equal values are the same.
ParamDiff CompareRequantize(const QuantParams& a, const QuantParams& b);
std::string Describe(const QuantParams& p);  // "U8 per-tensor scale=0.02 zp=128"

}  // namespace axqc::detail
