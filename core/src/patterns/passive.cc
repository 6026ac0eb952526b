// Passive pass-through subgraphs (5.10, 6.6) and the Split pass-through pattern (5.11): the
// connected components of free passive operators over direct data edges (passive -> passive).
// Every passive operator has exactly one data input, so each component is a tree with one entry.
#include <algorithm>
#include <numeric>

#include "units.h"

namespace axqc::detail {

namespace {
int Find(std::vector<int>& parent, int x) {
  while (parent[static_cast<std::size_t>(x)] != x) {
    parent[static_cast<std::size_t>(x)] =
        parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
    x = parent[static_cast<std::size_t>(x)];
  }
  return x;
}
}  // namespace

std::vector<std::vector<int>> GroupPassive(const GraphIndex& g, const std::vector<bool>& free) {
  const int n = g.node_count();
  auto is_passive = [&](int i) {
    if (i < 0 || !free[static_cast<std::size_t>(i)]) return false;
    const auto* spec = FindOp(g.node(i).op_type(), g.node(i).domain());
    return spec && spec->cls == OpClass::kPassive;
  };
  std::vector<int> parent(static_cast<std::size_t>(n));
  std::iota(parent.begin(), parent.end(), 0);
  for (int i = 0; i < n; ++i) {
    if (!is_passive(i) || g.node(i).input_size() == 0) continue;
    int p = g.ProducerOf(g.InputId(i, 0));
    if (p != i && is_passive(p))
      parent[static_cast<std::size_t>(Find(parent, i))] = Find(parent, p);
  }
  std::vector<int> group_of(static_cast<std::size_t>(n), -1);
  std::vector<std::vector<int>> groups;
  for (int i : g.topo_order()) {  // topological order: roots first, members in order
    if (!is_passive(i)) continue;
    int r = Find(parent, i);
    auto& gi = group_of[static_cast<std::size_t>(r)];
    if (gi < 0) {
      gi = static_cast<int>(groups.size());
      groups.emplace_back();
    }
    groups[static_cast<std::size_t>(gi)].push_back(i);
  }
  return groups;
}

}  // namespace axqc::detail
