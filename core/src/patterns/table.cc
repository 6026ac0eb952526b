// The pattern table and its dispatch (patterns.h).
#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

#include "onnx_util.h"
#include "patterns/patterns.h"

namespace axqc::detail {

namespace {

// One row per pattern. At one anchor the rows are tried in this order; every match is kept and
// ownership (units.cc) resolves overlaps by size.
constexpr std::array kPatterns{
    PatternSpec{.name = "glu", .anchor_op = "Mul", .section = "6.3", .match = MatchGLU},
    PatternSpec{.name = "silu", .anchor_op = "Mul", .section = "6.2", .match = MatchSiLU},
    PatternSpec{.name = "conv-bn",
                .anchor_op = "BatchNormalization",
                .section = "6.4",
                .match = MatchConvBN},
};

}  // namespace

std::span<const PatternSpec> PatternTable() { return kPatterns; }

std::size_t PatternSize(const GraphIndex& g, const std::vector<int>& nodes) {
  const std::unordered_set<int> members(nodes.begin(), nodes.end());
  std::unordered_set<std::uint64_t> edges;
  for (int n : nodes) {
    for (const int in : g.InputIds(n)) {
      const int p = g.ProducerOf(in);
      if (p >= 0 && members.contains(p)) {
        edges.insert((static_cast<std::uint64_t>(static_cast<std::uint32_t>(p)) << 32) |
                     static_cast<std::uint32_t>(n));
      }
    }
  }
  return members.size() + edges.size();
}

std::vector<PatternMatch> MatchPatterns(const GraphIndex& g) {
  static const auto by_anchor = [] {
    std::unordered_map<std::string_view, std::vector<const PatternSpec*>> m;
    for (const auto& p : kPatterns) m[p.anchor_op].push_back(&p);
    return m;
  }();
  std::vector<PatternMatch> out;
  for (int i : g.topo_order()) {
    const auto& node = g.node(i);
    if (!IsOnnxDomain(node.domain())) continue;
    const auto it = by_anchor.find(node.op_type());
    if (it == by_anchor.end()) continue;
    for (const PatternSpec* spec : it->second) {
      PatternNodes found;
      if (!spec->match(g, i, &found)) continue;
      const std::size_t size = PatternSize(g, found.nodes);
      const int primary = found.primary >= 0 ? found.primary : i;
      out.push_back({spec, primary, std::move(found.nodes), std::move(found.outputs), size});
    }
  }
  return out;
}

}  // namespace axqc::detail
