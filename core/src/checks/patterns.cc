// Pattern ownership (6.1): no Q/DQ inside a pattern, no internal tensor escaping it (Relu/Clip
// fusion tails excepted: they only own their branch), and unique ownership of overlaps.
#include <unordered_set>

#include "roles.h"

namespace axqc::detail {

void CheckPatterns(Context& c) {
  for (const auto& u : c.units.all()) {
    if (u.kind != UnitKind::kPattern) continue;
    std::unordered_set<std::string_view> designated(u.outputs.begin(), u.outputs.end());
    for (int node : u.nodes) {
      for (const auto& o : c.g.node(node).output()) {
        if (o.empty() || designated.contains(o)) continue;
        const std::string where =
            "inside the " + u.pattern + " pattern at " + c.Op(node) + " '" + c.Name(node) + "'";
        if (c.g.IsGraphOutputId(c.g.TensorId(o))) {
          c.out.Emit({.rule = rules::kPatternInternalEscape,
                      .node = node,
                      .message = "internal tensor '" + o + "' " + where + " is a graph output",
                      .group_key = u.pattern + " internal tensor is a graph output",
                      .tensors = {o}});
        }
        std::vector<int> outside;  // non-Q consumers outside the pattern, each node once
        for (const auto& use : c.g.ConsumersOf(c.g.TensorId(o))) {
          if (c.units.UnitOf(use.node) == u.id) continue;  // a member or one of its tails
          if (c.q.IsQ(use.node)) {
            c.Explain(use.node);  // named by this finding, not an orphan
            c.out.Emit({.rule = rules::kPatternInternalQdq,
                        .node = use.node,
                        .message = "Q '" + c.Name(use.node) + "' quantizes internal tensor '" + o +
                                   "' " + where + "; no Q/DQ may be inserted inside a pattern",
                        .group_key = u.pattern + " with Q/DQ inside",
                        .tensors = {o},
                        .more_nodes = {node}});
          } else if (outside.empty() || outside.back() != use.node) {
            outside.push_back(use.node);
          }
        }
        if (!outside.empty()) {
          c.out.Emit({.rule = rules::kPatternInternalEscape,
                      .node = node,
                      .message = "internal tensor '" + o + "' " + where + " is consumed by " +
                                 NodeList(c, outside) + " outside the pattern",
                      .group_key = u.pattern + " internal tensor consumed outside",
                      .tensors = {o},
                      .more_nodes = outside});
        }
      }
    }
    if (u.pattern_spec != nullptr && u.pattern_spec->check != nullptr) u.pattern_spec->check(c, u);
  }
  for (const auto& a : c.units.ambiguous()) {
    c.out.Emit({.rule = rules::kClosureAmbiguousOwnership,
                .node = a.other.anchor,
                .message = "two " + std::string(a.kept.kind()) + "/" + std::string(a.other.kind()) +
                           " pattern instances of equal "
                           "size overlap: {" +
                           NodeList(c, a.kept.nodes) + "} and {" + NodeList(c, a.other.nodes) +
                           "}; ownership is not unique",
                .group_key = "overlapping " + std::string(a.kept.kind()) + " and " +
                             std::string(a.other.kind()) + " instances",
                .more_nodes = {a.kept.anchor}});
  }
}

}  // namespace axqc::detail
