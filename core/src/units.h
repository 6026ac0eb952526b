// Stage 4: group nodes into units and decide each unit's mode; the result is immutable for the
// rules (they read it and record their Q/DQ claims in checks' Ownership, never in a Unit). Patterns
// of the pattern table first (patterns/patterns.h; largest wins, ties that overlap are ambiguous),
// then requantize Identities, passive pass-through subgraphs, single-operator units, and finally
// Relu/Clip fusion tails attached to the compute unit that feeds them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graph_index.h"
#include "optable.h"
#include "patterns/patterns.h"
#include "quant.h"

namespace axqc::detail {

enum class UnitKind : std::uint8_t {
  kOp,           // single operator with a rule (quant-only, mixed, Relu/Clip standalone)
  kPattern,      // SiLU, GLU, Conv/ConvTranspose+BatchNormalization
  kPassive,      // passive pass-through subgraph (5.10, 6.6), incl. the Split pattern (5.11)
  kRequantize,   // DQ -> Identity -> Q (3.5, 6.7)
  kNonQuant,     // non-quant-only operator (5.9)
  kUncovered,    // in no operator list, or integer data where no native-integer mode exists
  kUnsupported,  // AffineGrid, GRU, LSTM
  kConstant,     // ai.onnx Constant: onnx/constant-node only (RULES.md reading 13)
};
std::string_view UnitKindName(UnitKind k);

// How a unit computes, decided once from the graph when units are formed (the last step of
// grouping) and only read by the rules: a quantized unit checks its Q/DQ boundary, a
// non-quantized one (no DQ on its data input: pass-through and mixed operators, 5.9-5.11) is
// left alone, a native-integer one computes on integer data (5.5, 5.12, reading 8).
enum class UnitMode : std::uint8_t {
  kNone,       // units no operator rule checks (non-quant, uncovered, unsupported, Constant)
  kQuantized,  // "quantized"
  kNonQuant,   // "non_quant"
  kNativeInt,  // "native_int"
};
// The name in reports; a quantized unit that owns no Q/DQ is reported as "unquantized" (see
// ReportedMode in checker.cc).
std::string_view UnitModeName(UnitMode m);

struct Unit {
  int id = 0;
  UnitKind kind = UnitKind::kOp;
  std::string pattern;  // "silu", "glu", "conv-bn", "split" (passive with Split)
  const PatternSpec* pattern_spec = nullptr;  // the table row of a kPattern unit
  int anchor = -1;                            // primary node
  std::vector<int> nodes;                     // main nodes, topological order
  std::vector<int> tails;                     // Relu/Clip fusion tails owned by this unit
  std::vector<std::string_view> outputs;      // designated data outputs (pattern Y, tail outputs)
  UnitMode mode = UnitMode::kNone;
  std::string Kind() const;  // "op", "pattern:silu", "passive", ...
};

struct AmbiguousOverlap {
  PatternMatch kept, other;
};

class Units {
 public:
  Units(const GraphIndex& g, const QuantTable& q);
  const std::vector<Unit>& all() const { return units_; }
  // -1 for Q/DQ nodes.
  int UnitOf(int node) const { return unit_of_[static_cast<std::size_t>(node)]; }
  bool IsTail(int node) const { return is_tail_[static_cast<std::size_t>(node)]; }
  const std::vector<AmbiguousOverlap>& ambiguous() const { return ambiguous_; }

 private:
  int NewUnit(UnitKind kind, int anchor);
  // Grouping steps, in order; `free` marks nodes no unit owns yet.
  void FormPatterns(const GraphIndex& g, const std::vector<int>& topo_pos, std::vector<bool>& free);
  void FormRequantize(const GraphIndex& g, const QuantTable& q, std::vector<bool>& free);
  void FormPassive(const GraphIndex& g, std::vector<bool>& free);
  void FormSingleOperators(const GraphIndex& g, std::vector<bool>& free);
  void AttachFusionTails(const GraphIndex& g, const QuantTable& q);
  std::vector<Unit> units_;
  std::vector<int> unit_of_;
  std::vector<bool> is_tail_;
  std::vector<AmbiguousOverlap> ambiguous_;
};

// Requantize (6.7): an Identity whose data input is a DQ output and whose every consumer is a Q.
bool IsRequantizeIdentity(const GraphIndex& g, const QuantTable& q, int node);
// Passive grouping (5.10, 6.6): connected components over direct passive -> passive edges.
// `free` marks nodes not yet owned; returns groups in topological order of their roots.
std::vector<std::vector<int>> GroupPassive(const GraphIndex& g, const std::vector<bool>& free);
// Fusion tails (5.15, 5.16, 6.5): can `relu` become a tail of the unit owning `producer`?
bool TailCandidate(const GraphIndex& g, const QuantTable& q, int relu, std::string* why);

// Native-integer mode exists only for Add, Sub, Mul (5.5) and Concat (5.12) (RULES.md reading
// 8). True for those operators.
bool HasNativeIntegerMode(std::string_view op_type);
// True when a quant-only or Relu/Clip operator computes on integer data: a data input or its
// first output has a known element type that is not floating point.
bool ComputesOnIntegers(const GraphIndex& g, int node, const OpSpec& spec);
// The mode of a formed unit (see UnitMode): requantize units are quantized; passive groups and
// mixed operators when a DQ feeds their (root's) data input; compute units (quant-only operators,
// patterns) native-integer when a single operator's data output is an integer tensor, else
// quantized; standalone Relu/Clip quantized.
UnitMode DecideMode(const GraphIndex& g, const QuantTable& q, const Unit& u);

// First data output of a node whose consumers include `consumer`.
bool IsSignedOutputQ(const GraphIndex& g, const QuantTable& q, std::string_view tensor);

}  // namespace axqc::detail
