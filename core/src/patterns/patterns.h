// The pattern table (6.1-6.4): one row per multi-node pattern with its name, anchor operator,
// spec section, matcher and optional pattern-specific checks. Units (units.cc) visits every node
// once and tries the rows anchored at its op type; ownership then keeps the largest matches
// (size = nodes + internal edges, computed here from the match, never written by hand).
//
// Add a pattern: write its matcher in patterns/<name>.cc, add its row to kPatterns in
// patterns/table.cc and the file to core/CMakeLists.txt (docs/contributing.md, "Add a pattern").
//
// Not in the table: the requantize Identity (6.7, patterns/requantize.cc), passive pass-through
// groups and the Split pattern (5.10, 5.11, patterns/passive.cc) and Relu/Clip fusion tails (6.5,
// patterns/fusion_tail.cc): they group what no pattern owns, in the fixed stages of units.cc.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph_index.h"

namespace axqc::detail {

struct Context;
struct Unit;

// What a matcher found at its anchor: the member nodes (anchor included; any order), the
// designated outputs (the pattern's Y) and the unit's primary node (its op type names the unit in
// reports and orders equal-size matches; -1: the node the row is anchored at).
struct PatternNodes {
  std::vector<int> nodes;
  std::vector<std::string_view> outputs;
  int primary = -1;
};

struct PatternSpec {
  std::string_view name;       // unit kind "pattern:<name>", e.g. "silu"
  std::string_view anchor_op;  // ai.onnx op type of the anchor node (the pattern's last node)
  std::string_view section;    // ax quant spec section
  // Called only for ai.onnx nodes of type anchor_op; fills `out` and returns true on a match.
  bool (*match)(const GraphIndex& g, int anchor, PatternNodes* out);
  // Optional checks of this pattern, run once per owned instance after the shared ones (6.1
  // internal Q/DQ and escapes, checks/patterns.cc).
  void (*check)(Context& c, const Unit& u) = nullptr;
};

// A matched instance before ownership resolution.
struct PatternMatch {
  const PatternSpec* spec = nullptr;
  int anchor = -1;  // the unit's primary node
  std::vector<int> nodes;
  std::vector<std::string_view> outputs;  // pattern outputs (Y)
  std::size_t size = 0;                   // nodes + internal edges (PatternSize)
  std::string_view kind() const { return spec->name; }
};

// Every pattern, in the order its rows are tried at one anchor.
std::span<const PatternSpec> PatternTable();

// Every instance in the graph, anchors in topological order: each node is visited once and
// matched against the rows anchored at its op type (ai.onnx nodes only, IsOnnxOp).
std::vector<PatternMatch> MatchPatterns(const GraphIndex& g);

// Nodes + internal edges: the member nodes plus the distinct (producer, consumer) pairs of
// members joined by a tensor. SiLU 2 + 1, Conv+BN 2 + 1, GLU 3 + 3.
std::size_t PatternSize(const GraphIndex& g, const std::vector<int>& nodes);

// Matchers (one file each under patterns/).
bool MatchSiLU(const GraphIndex& g, int mul, PatternNodes* out);
bool MatchGLU(const GraphIndex& g, int mul, PatternNodes* out);
bool MatchConvBN(const GraphIndex& g, int bn, PatternNodes* out);

}  // namespace axqc::detail
