// Passive pass-through subgraphs (5.10, 6.6), the Split pass-through pattern (5.11), Pad (5.13)
// and TopK (5.14). The mode is decided by the entry (RULES.md reading 4): a DQ entry means
// quantized pass-through, and every data exit must then leave through Q/DQ sharing the entry's
// full parameters (Split: 5.11 rules).
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "roles.h"

namespace axqc::detail {

namespace {

struct Exit {
  int node;  // producing member
  std::string_view tensor;
  int q;  // exit Q or -1
};

// Where the entry's per-channel axis lies in a passive member's data output: the entry axis
// carried through Transpose (perm), Squeeze/Unsqueeze and ReduceMax/ReduceMin (axes), Gather
// (indices rank) and Expand (added leading dims); unchanged through rank- and layout-preserving
// operators. nullopt when the operator reshapes or the attributes or shapes are not known
// (Reshape, Flatten, GatherND, a gathered or squeezed-away channel).
std::optional<std::int64_t> AxisAfter(const Context& c, int node, std::int64_t axis) {
  const auto& n = c.g.node(node);
  const std::string& op = n.op_type();
  const auto in_dims = c.g.DimsOf(c.g.InputId(node, 0));
  const auto out_dims = c.g.DimsOf(c.g.OutputId(node, 0));
  const auto rank = in_dims ? static_cast<std::int64_t>(in_dims->size()) : std::int64_t{-1};
  // Axes from the attribute (older opsets) or the second input (an initializer).
  auto axes = [&]() -> std::optional<std::vector<std::int64_t>> {
    if (const auto* a = FindAttr(n, "axes"))
      return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
    if (n.input_size() > 1 && !n.input(1).empty()) {
      if (const auto* init = c.g.InitializerOf(c.g.InputId(node, 1))) {
        return ReadInts(*init, c.g.external());
      }
      return std::nullopt;
    }
    return std::vector<std::int64_t>{};
  };
  // Removes the axes `removed` (normalised against `r`); nullopt when the channel is removed.
  auto remove = [&](const std::vector<std::int64_t>& removed,
                    std::int64_t r) -> std::optional<std::int64_t> {
    std::int64_t before = 0;
    for (auto a : removed) {
      if (a < 0) a += r;
      if (a == axis) return std::nullopt;
      if (a >= 0 && a < axis) ++before;
    }
    return axis - before;
  };
  if (op == "Transpose") {
    std::vector<std::int64_t> perm;
    if (const auto* a = FindAttr(n, "perm")) {
      perm.assign(a->ints().begin(), a->ints().end());
    } else if (rank >= 0) {
      for (std::int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    }
    for (std::size_t i = 0; i < perm.size(); ++i) {
      if (perm[i] == axis) return static_cast<std::int64_t>(i);
    }
    return std::nullopt;
  }
  if (op == "Squeeze") {
    auto ax = axes();
    if (!ax) return std::nullopt;
    if (ax->empty()) {  // every dim of size 1
      if (!in_dims) return std::nullopt;
      for (std::size_t i = 0; i < in_dims->size(); ++i) {
        if ((*in_dims)[i] == 1) ax->push_back(static_cast<std::int64_t>(i));
        if ((*in_dims)[i] < 0) return std::nullopt;
      }
    }
    return rank < 0 && std::any_of(ax->begin(), ax->end(), [](auto a) { return a < 0; })
               ? std::nullopt
               : remove(*ax, rank);
  }
  if (op == "Unsqueeze") {
    auto ax = axes();
    if (!ax || rank < 0) return std::nullopt;
    const std::int64_t out_rank = rank + static_cast<std::int64_t>(ax->size());
    std::vector<bool> inserted(static_cast<std::size_t>(out_rank), false);
    for (auto a : *ax) {
      if (a < 0) a += out_rank;
      if (a < 0 || a >= out_rank) return std::nullopt;
      inserted[static_cast<std::size_t>(a)] = true;
    }
    for (std::int64_t i = 0, k = 0; i < out_rank; ++i) {
      if (inserted[static_cast<std::size_t>(i)]) continue;
      if (k++ == axis) return i;
    }
    return std::nullopt;
  }
  if (op == "ReduceMax" || op == "ReduceMin") {
    if (AttrInt(n, "keepdims").value_or(1) != 0) return axis;
    auto ax = axes();
    if (!ax || ax->empty() || rank < 0) return std::nullopt;  // all axes reduced
    return remove(*ax, rank);
  }
  if (op == "Gather") {
    std::int64_t g = AttrInt(n, "axis").value_or(0);
    if (g < 0 && rank >= 0) g += rank;
    if (g == axis) return std::nullopt;
    if (g > axis) return axis;
    const auto idx = c.g.DimsOf(c.g.InputId(node, 1));
    if (!idx) return std::nullopt;
    return axis + static_cast<std::int64_t>(idx->size()) - 1;
  }
  if (op == "Expand") {
    if (!in_dims || !out_dims) return std::nullopt;
    return axis + static_cast<std::int64_t>(out_dims->size()) - rank;
  }
  if (op == "Reshape" || op == "Flatten" || op == "GatherND") return std::nullopt;
  return axis;  // Identity, Slice, Pad, Resize, Tile, MaxPool, Split, DepthToSpace, ...
}

void CheckSplitExits(Context& c, int entry_dq, const std::vector<Exit>& exits, int split) {
  if (!c.check_value) return;
  const auto* in = c.q.Of(entry_dq);
  std::map<int, std::vector<const Exit*>> by_type;
  for (const auto& e : exits) {
    if (e.q >= 0) by_type[c.q.Of(e.q)->int_type].push_back(&e);
  }
  auto warn = [&](const Exit& e, const std::string& msg, const std::string& key) {
    c.out.Emit({.rule = rules::kOpSplitExitParams,
                .node = e.q,
                .message = msg,
                .group_key = key,
                .tensors = {std::string(e.tensor)},
                .more_nodes = {split}});
  };
  for (const auto& [type, group] : by_type) {
    if (type == in->int_type) {
      for (const auto* e : group) {
        const auto* q = c.q.Of(e->q);
        auto d = CompareValues(*in, *q);
        if (d.unknown) {
          warn(*e,
               "Split exit Q '" + c.Name(e->q) +
                   "' has the input's type but its scale/zero_point "
                   "are not statically readable (5.11)",
               "Split exit values unknown");
        } else if (!d.what.empty()) {
          warn(*e,
               "Split exit Q '" + c.Name(e->q) + "' has the input's type " +
                   QTypeName(in->qtype, in->int_type) + " but different values than entry DQ '" +
                   c.Name(entry_dq) + "': " + d.what,
               "same-type Split exit differs from the input");
        }
      }
    }
    for (std::size_t i = 1; i < group.size(); ++i) {
      const auto* a = c.q.Of(group[0]->q);
      const auto* b = c.q.Of(group[i]->q);
      auto d = CompareValues(*a, *b);
      if (d.unknown) {
        warn(*group[i],
             "Split exits Q '" + c.Name(group[0]->q) + "' and Q '" + c.Name(group[i]->q) +
                 "' share a type but their values are not statically readable (5.11)",
             "Split exit values unknown");
      } else if (!d.what.empty()) {
        warn(*group[i],
             "Split exits Q '" + c.Name(group[0]->q) + "' and Q '" + c.Name(group[i]->q) +
                 "' share type " + QTypeName(a->qtype, a->int_type) + " but differ: " + d.what,
             "same-type Split exits differ");
      }
    }
  }
}

void CheckPassiveUnit(Context& c, const Unit& u) {
  const int root = u.nodes.front();
  if (u.mode != UnitMode::kQuantized) return;
  const int entry_dq = c.q.DqProducing(c.g.InputId(root, 0));
  c.ClaimDq(entry_dq, u.id);
  const auto* entry = c.q.Of(entry_dq);
  std::unordered_set<int> members(u.nodes.begin(), u.nodes.end());
  // A per-channel entry's axis in each member's output, and the first member that moved it.
  struct Axis {
    std::optional<std::int64_t> axis;
    int moved_by = -1;
  };
  std::unordered_map<int, Axis> axis_of;
  const bool per_channel = entry->granularity == Granularity::kPerChannel && entry->axis_norm;
  // 5.11: the Split pattern is a Split and the passive operators on its branches (downstream).
  // Nodes are in topological order, so a member is downstream when its data input comes from a
  // Split or from a downstream member.
  std::unordered_set<int> downstream;
  std::vector<Exit> exits;
  int split = -1;
  for (int node : u.nodes) {
    const auto& n = c.g.node(node);
    const auto* spec = FindOp(n.op_type(), n.domain());
    if (n.op_type() == "Split") {
      split = node;
      downstream.insert(node);
    } else if (n.input_size() > 0) {
      int p = c.g.ProducerOf(c.g.InputId(node, 0));
      if (downstream.contains(p)) downstream.insert(node);
    }
    if (per_channel) {
      Axis in{entry->axis_norm, -1};
      if (n.input_size() > 0) {
        if (auto it = axis_of.find(c.g.ProducerOf(c.g.InputId(node, 0))); it != axis_of.end())
          in = it->second;
      }
      Axis out = in;
      if (in.axis) {
        out.axis = AxisAfter(c, node, *in.axis);
        if (out.axis != in.axis && out.moved_by < 0) out.moved_by = node;
      }
      axis_of[node] = out;
    }
    if (spec && (spec->flags & kPadQuantParams)) CheckStaticParam(c, node, 2, "constant_value");
    for (int s = 0; s < n.output_size(); ++s) {
      const auto& o = n.output(s);
      if (o.empty() || !spec || spec->OutputRole(s) != OutRole::kData) continue;
      const std::string who = n.op_type() + " '" + c.Name(node) + "'";
      if (c.g.IsGraphOutputId(c.g.TensorId(o))) {
        c.out.Emit({.rule = rules::kOpPassiveParams,
                    .node = node,
                    .message = "quantized pass-through output '" + o + "' of " + who +
                               " is a graph output without Q/DQ; leave through Q/DQ with the "
                               "entry's parameters (" +
                               Describe(*entry) + ")",
                    .group_key = "pass-through exit is a graph output without Q/DQ",
                    .tensors = {o},
                    .more_nodes = {entry_dq}});
      }
      // Every consumer outside the unit that is not a Q is named, each node once.
      std::vector<int> unquantized;
      for (const auto& use : c.g.ConsumersOf(c.g.TensorId(o))) {
        if (members.contains(use.node)) continue;
        if (c.q.IsQ(use.node) && use.slot == 0) {
          c.ClaimQ(use.node, u.id);
          exits.push_back({node, o, use.node});
          continue;
        }
        if (unquantized.empty() || unquantized.back() != use.node) unquantized.push_back(use.node);
      }
      if (!unquantized.empty()) {
        std::string users;
        for (int n2 : unquantized) {
          users += (users.empty() ? "" : ", ") + c.Op(n2) + " '" + c.Name(n2) + "'";
        }
        std::vector<int> named = unquantized;
        named.push_back(entry_dq);
        c.out.Emit({.rule = rules::kOpPassiveParams,
                    .node = node,
                    .message = "quantized pass-through output '" + o + "' of " + who + " feeds " +
                               users + " without Q/DQ; in pass-through mode (entry DQ '" +
                               c.Name(entry_dq) + "') every exit must leave through Q/DQ",
                    .group_key = "pass-through exit without Q/DQ",
                    .tensors = {o},
                    .more_nodes = std::move(named)});
      }
    }
  }
  std::vector<Exit> split_exits, plain_exits;
  for (const auto& e : exits)
    (downstream.contains(e.node) ? split_exits : plain_exits).push_back(e);
  if (split >= 0) CheckSplitExits(c, entry_dq, split_exits, split);
  for (const auto& e : plain_exits) {
    const auto* q = c.q.Of(e.q);
    // A per-channel entry is shared along the axis its channels have at the exit.
    QuantParams expected = *entry;
    std::string moved;
    if (auto it = axis_of.find(e.node);
        it != axis_of.end() && it->second.axis && it->second.axis != entry->axis_norm) {
      expected.axis_norm = expected.axis_attr = it->second.axis;
      const int by = it->second.moved_by;
      moved = "; after " + c.Op(by) + " '" + c.Name(by) + "' the entry's channel axis " +
              std::to_string(*entry->axis_norm) + " is axis " + std::to_string(*it->second.axis) +
              ": quantize the exit along axis " + std::to_string(*it->second.axis);
    }
    auto d = CompareFull(expected, *q);
    if (!d.what.empty()) {
      c.out.Emit({.rule = rules::kOpPassiveParams,
                  .node = e.q,
                  .message = "exit Q '" + c.Name(e.q) + "' after " + c.Op(e.node) + " '" +
                             c.Name(e.node) + "' does not share the entry's parameters: " + d.what +
                             " (entry DQ '" + c.Name(entry_dq) + "': " + Describe(*entry) +
                             "; exit: " + Describe(*q) + ")" + moved,
                  .group_key = "pass-through exit with different parameters",
                  .tensors = {std::string(e.tensor)},
                  .values = {{"difference", d.what}},
                  .more_nodes = {e.node, entry_dq}});
    } else if (d.unknown && c.check_value) {
      c.out.Emit({.rule = rules::kQdqValueUnreadable,
                  .node = e.q,
                  .message = "exit Q '" + c.Name(e.q) + "' vs entry DQ '" + c.Name(entry_dq) +
                             "': values not statically readable; sharing not verified",
                  .group_key = "pass-through values not statically readable",
                  .tensors = {std::string(e.tensor)}});
    }
  }
}

void CheckTopK(Context& c, const Unit& u) {
  const int node = u.anchor;
  const auto& n = c.g.node(node);
  if (n.input_size() == 0 || n.output_size() == 0) return;
  if (u.mode != UnitMode::kQuantized) return;
  const int dq = c.q.DqProducing(c.g.InputId(node, 0));
  c.ClaimDq(dq, u.id);
  const auto* in = c.q.Of(dq);
  const auto& values = n.output(0);
  if (values.empty()) return;
  if (c.g.IsGraphOutputId(c.g.TensorId(values))) {
    c.out.Emit({.rule = rules::kOpPassiveParams,
                .node = node,
                .message = "Values '" + values + "' of TopK '" + c.Name(node) +
                           "' is a graph output without Q/DQ; in quantized mode it needs Q/DQ "
                           "sharing X's parameters",
                .group_key = "TopK Values are a graph output without Q/DQ",
                .tensors = {values}});
  }
  std::vector<int> unquantized;  // consumers without Q/DQ, each node once
  for (const auto& use : c.g.ConsumersOf(c.g.TensorId(values))) {
    if (!c.q.IsQ(use.node) || use.slot != 0) {
      if (unquantized.empty() || unquantized.back() != use.node) unquantized.push_back(use.node);
      continue;
    }
    c.ClaimQ(use.node, u.id);
    auto d = CompareFull(*in, *c.q.Of(use.node));
    if (!d.what.empty()) {
      c.out.Emit({.rule = rules::kOpPassiveParams,
                  .node = use.node,
                  .message = "TopK '" + c.Name(node) + "' Values Q '" + c.Name(use.node) +
                             "' does not share X's parameters: " + d.what,
                  .group_key = "TopK Values parameters differ from X",
                  .tensors = {values},
                  .values = {{"difference", d.what}},
                  .more_nodes = {node}});
    }
  }
  if (!unquantized.empty()) {
    c.out.Emit({.rule = rules::kOpPassiveParams,
                .node = node,
                .message = "Values '" + values + "' of TopK '" + c.Name(node) + "' feeds " +
                           NodeList(c, unquantized) +
                           " without Q/DQ; in quantized mode Values need Q/DQ sharing X's "
                           "parameters",
                .group_key = "TopK Values without Q/DQ",
                .tensors = {values},
                .more_nodes = unquantized});
  }
}

}  // namespace

void CheckPassiveUnits(Context& c) {
  for (const auto& u : c.units.all()) {
    if (u.kind == UnitKind::kPassive) {
      CheckPassiveUnit(c, u);
    } else if (u.kind == UnitKind::kOp) {
      const auto* spec = FindOp(c.Op(u.anchor), c.g.node(u.anchor).domain());
      if (spec && spec->cls == OpClass::kMixed) CheckTopK(c, u);
    }
  }
}

void CheckRequantizeUnits(Context& c) {
  for (const auto& u : c.units.all()) {
    if (u.kind != UnitKind::kRequantize) continue;
    const int node = u.anchor;
    const auto& n = c.g.node(node);
    int dq = c.q.DqProducing(c.g.InputId(node, 0));
    c.ClaimDq(dq, u.id);
    for (const auto& use : c.g.ConsumersOf(c.g.TensorId(n.output(0)))) {
      c.ClaimQ(use.node, u.id);
      const auto* a = c.q.Of(dq);
      const auto* b = c.q.Of(use.node);
      auto d = CompareRequantize(*a, *b);
      c.out.Emit({.rule = rules::kQdqRequantize,
                  .node = node,
                  .message = "requantize boundary: DQ '" + c.Name(dq) + "' (" + Describe(*a) +
                             ") -> Identity '" + c.Name(node) + "' -> Q '" + c.Name(use.node) +
                             "' (" + Describe(*b) + ")",
                  .group_key = "requantize boundary",
                  .tensors = {n.output(0)},
                  .values = {{"difference", d.what.empty() ? "none" : d.what}},
                  .more_nodes = {dq, use.node}});
    }
  }
}

}  // namespace axqc::detail
