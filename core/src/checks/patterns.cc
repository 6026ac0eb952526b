// Pattern ownership (6.1): no Q/DQ inside a pattern, no internal tensor escaping it (Relu/Clip
// fusion tails excepted: they only own their branch), and unique ownership of overlaps.
#include <unordered_set>

#include "context.h"

namespace axqc::detail {

namespace {

std::string NodeList(const Context& c, const std::vector<int>& nodes) {
  std::string s;
  for (int n : nodes) s += (s.empty() ? "" : ", ") + c.Op(n) + " '" + c.Name(n) + "'";
  return s;
}

}  // namespace

void CheckPatterns(Context& c) {
  for (const auto& u : c.units.all()) {
    if (u.kind != UnitKind::kPattern) continue;
    std::unordered_set<std::string_view> designated(u.outputs.begin(), u.outputs.end());
    for (int node : u.nodes) {
      for (const auto& o : c.g.node(node).output()) {
        if (o.empty() || designated.contains(o)) continue;
        const std::string where =
            "inside the " + u.pattern + " pattern at " + c.Op(node) + " '" + c.Name(node) + "'";
        if (c.g.IsGraphOutput(o)) {
          c.out.Emit({.rule = "pattern/internal-escape",
                      .node = node,
                      .message = "internal tensor '" + o + "' " + where + " is a graph output",
                      .group_key = u.pattern + " internal tensor is a graph output",
                      .tensors = {o}});
        }
        for (const auto& use : c.g.Consumers(o)) {
          if (c.units.UnitOf(use.node) == u.id && !c.units.IsTail(use.node)) continue;
          if (c.units.IsTail(use.node) && c.units.UnitOf(use.node) == u.id) continue;
          if (c.q.IsQ(use.node)) {
            c.claimed[static_cast<std::size_t>(use.node)] = true;
            if (int dq = c.q.PairedDq(use.node); dq >= 0)
              c.claimed[static_cast<std::size_t>(dq)] = true;
            c.out.Emit({.rule = "pattern/internal-qdq",
                        .node = use.node,
                        .message = "Q '" + c.Name(use.node) + "' quantizes internal tensor '" + o +
                                   "' " + where + "; no Q/DQ may be inserted inside a pattern",
                        .group_key = u.pattern + " with Q/DQ inside",
                        .tensors = {o},
                        .more_nodes = {node}});
          } else {
            c.out.Emit({.rule = "pattern/internal-escape",
                        .node = node,
                        .message = "internal tensor '" + o + "' " + where + " is consumed by " +
                                   c.Op(use.node) + " '" + c.Name(use.node) +
                                   "' outside the pattern",
                        .group_key = u.pattern + " internal tensor consumed outside",
                        .tensors = {o},
                        .more_nodes = {use.node}});
          }
        }
      }
    }
  }
  for (const auto& a : c.units.ambiguous()) {
    c.out.Emit({.rule = "closure/ambiguous-ownership",
                .node = a.other.anchor,
                .message = "two " + a.kept.kind + "/" + a.other.kind +
                           " pattern instances of equal "
                           "size overlap: {" +
                           NodeList(c, a.kept.nodes) + "} and {" + NodeList(c, a.other.nodes) +
                           "}; ownership is not unique",
                .group_key = "overlapping " + a.kept.kind + " and " + a.other.kind + " instances",
                .more_nodes = {a.kept.anchor}});
  }
}

}  // namespace axqc::detail
