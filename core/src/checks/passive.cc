// Passive pass-through subgraphs (5.10, 6.6), the Split pass-through pattern (5.11), Pad (5.13)
// and TopK (5.14). The mode is decided by the entry (RULES.md reading 4): a DQ entry means
// quantized pass-through, and every data exit must then leave through Q/DQ sharing the entry's
// full parameters (Split: 5.11 rules).
#include <map>
#include <unordered_set>

#include "roles.h"

namespace axqc::detail {

namespace {

struct Exit {
  int node;  // producing member
  std::string_view tensor;
  int q;  // exit Q or -1
};

void CheckSplitExits(Context& c, int entry_dq, const std::vector<Exit>& exits, int split) {
  if (!c.check_value) return;
  const auto* in = c.q.Of(entry_dq);
  std::map<int, std::vector<const Exit*>> by_type;
  for (const auto& e : exits) {
    if (e.q >= 0) by_type[c.q.Of(e.q)->int_type].push_back(&e);
  }
  auto warn = [&](const Exit& e, const std::string& msg, const std::string& key) {
    c.out.Emit({.rule = "op/split-exit-params",
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

void CheckPassiveUnit(Context& c, Unit& u) {
  const int root = u.nodes.front();
  const auto& rn = c.g.node(root);
  if (rn.input_size() == 0) {
    u.mode = "non_quant";
    return;
  }
  const int entry_dq = c.q.DqProducing(rn.input(0));
  if (entry_dq < 0) {
    u.mode = "non_quant";
    return;
  }
  u.mode = "quantized";
  c.ClaimDq(entry_dq, u.id);
  const auto* entry = c.q.Of(entry_dq);
  std::unordered_set<int> members(u.nodes.begin(), u.nodes.end());
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
      int p = c.g.Producer(n.input(0));
      if (downstream.contains(p)) downstream.insert(node);
    }
    if (spec && (spec->flags & kPadQuantParams)) CheckStaticParam(c, node, 2, "constant_value");
    for (int s = 0; s < n.output_size(); ++s) {
      const auto& o = n.output(s);
      if (o.empty() || !spec || spec->OutputRole(s) != OutRole::kData) continue;
      const std::string who = n.op_type() + " '" + c.Name(node) + "'";
      if (c.g.IsGraphOutput(o)) {
        c.out.Emit({.rule = "op/passive-params",
                    .node = node,
                    .message = "quantized pass-through output '" + o + "' of " + who +
                               " is a graph output without Q/DQ; leave through Q/DQ with the "
                               "entry's parameters (" +
                               Describe(*entry) + ")",
                    .group_key = "pass-through exit is a graph output without Q/DQ",
                    .tensors = {o},
                    .more_nodes = {entry_dq}});
      }
      for (const auto& use : c.g.Consumers(o)) {
        if (members.contains(use.node)) continue;
        if (c.q.IsQ(use.node) && use.slot == 0) {
          c.ClaimQ(use.node, u.id);
          exits.push_back({node, o, use.node});
          continue;
        }
        c.out.Emit({.rule = "op/passive-params",
                    .node = node,
                    .message = "quantized pass-through output '" + o + "' of " + who + " feeds " +
                               c.Op(use.node) + " '" + c.Name(use.node) +
                               "' without Q/DQ; in pass-through mode (entry DQ '" +
                               c.Name(entry_dq) + "') every exit must leave through Q/DQ",
                    .group_key = "pass-through exit without Q/DQ",
                    .tensors = {o},
                    .more_nodes = {use.node, entry_dq}});
      }
    }
  }
  std::vector<Exit> split_exits, plain_exits;
  for (const auto& e : exits)
    (downstream.contains(e.node) ? split_exits : plain_exits).push_back(e);
  if (split >= 0) CheckSplitExits(c, entry_dq, split_exits, split);
  for (const auto& e : plain_exits) {
    const auto* q = c.q.Of(e.q);
    auto d = CompareFull(*entry, *q);
    if (!d.what.empty()) {
      c.out.Emit({.rule = "op/passive-params",
                  .node = e.q,
                  .message = "exit Q '" + c.Name(e.q) + "' after " + c.Op(e.node) + " '" +
                             c.Name(e.node) + "' does not share the entry's parameters: " + d.what +
                             " (entry DQ '" + c.Name(entry_dq) + "': " + Describe(*entry) +
                             "; exit: " + Describe(*q) + ")",
                  .group_key = "pass-through exit with different parameters",
                  .tensors = {std::string(e.tensor)},
                  .values = {{"difference", d.what}},
                  .more_nodes = {e.node, entry_dq}});
    } else if (d.unknown && c.check_value) {
      c.out.Emit({.rule = "qdq/value-unreadable",
                  .node = e.q,
                  .message = "exit Q '" + c.Name(e.q) + "' vs entry DQ '" + c.Name(entry_dq) +
                             "': values not statically readable; sharing not verified",
                  .group_key = "pass-through values not statically readable",
                  .tensors = {std::string(e.tensor)}});
    }
  }
}

void CheckTopK(Context& c, Unit& u) {
  const int node = u.anchor;
  const auto& n = c.g.node(node);
  if (n.input_size() == 0 || n.output_size() == 0) return;
  const int dq = c.q.DqProducing(n.input(0));
  if (dq < 0) {
    u.mode = "non_quant";
    return;
  }
  u.mode = "quantized";
  c.ClaimDq(dq, u.id);
  const auto* in = c.q.Of(dq);
  const auto& values = n.output(0);
  if (values.empty()) return;
  if (c.g.IsGraphOutput(values)) {
    c.out.Emit({.rule = "op/passive-params",
                .node = node,
                .message = "Values '" + values + "' of TopK '" + c.Name(node) +
                           "' is a graph output without Q/DQ; in quantized mode it needs Q/DQ "
                           "sharing X's parameters",
                .group_key = "TopK Values without Q/DQ",
                .tensors = {values}});
  }
  for (const auto& use : c.g.Consumers(values)) {
    if (!c.q.IsQ(use.node) || use.slot != 0) {
      c.out.Emit({.rule = "op/passive-params",
                  .node = node,
                  .message = "Values '" + values + "' of TopK '" + c.Name(node) + "' feeds " +
                             c.Op(use.node) + " '" + c.Name(use.node) +
                             "' without Q/DQ; in quantized mode Values need Q/DQ sharing X's "
                             "parameters",
                  .group_key = "TopK Values without Q/DQ",
                  .tensors = {values},
                  .more_nodes = {use.node}});
      continue;
    }
    c.ClaimQ(use.node, u.id);
    auto d = CompareFull(*in, *c.q.Of(use.node));
    if (!d.what.empty()) {
      c.out.Emit({.rule = "op/passive-params",
                  .node = use.node,
                  .message = "TopK '" + c.Name(node) + "' Values Q '" + c.Name(use.node) +
                             "' does not share X's parameters: " + d.what,
                  .group_key = "TopK Values parameters differ from X",
                  .tensors = {values},
                  .values = {{"difference", d.what}},
                  .more_nodes = {node}});
    }
  }
}

}  // namespace

void CheckPassiveUnits(Context& c) {
  for (auto& u : c.units.all()) {
    if (u.kind == UnitKind::kPassive) {
      CheckPassiveUnit(c, u);
    } else if (u.kind == UnitKind::kOp) {
      const auto* spec = FindOp(c.Op(u.anchor), c.g.node(u.anchor).domain());
      if (spec && spec->cls == OpClass::kMixed) CheckTopK(c, u);
    }
  }
}

void CheckRequantizeUnits(Context& c) {
  for (auto& u : c.units.all()) {
    if (u.kind != UnitKind::kRequantize) continue;
    u.mode = "quantized";
    const int node = u.anchor;
    const auto& n = c.g.node(node);
    int dq = c.q.DqProducing(n.input(0));
    c.ClaimDq(dq, u.id);
    for (const auto& use : c.g.Consumers(n.output(0))) {
      c.ClaimQ(use.node, u.id);
      const auto* a = c.q.Of(dq);
      const auto* b = c.q.Of(use.node);
      auto d = CompareFull(*a, *b);
      c.out.Emit({.rule = "qdq/requantize",
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
