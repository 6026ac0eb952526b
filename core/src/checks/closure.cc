// Closure (2.3): every non-Q/DQ node is covered by a rule; every Q/DQ has a purpose.
#include "context.h"

namespace axqc::detail {

void CheckClosure(Context& c) {
  std::vector<bool> near_uncovered(static_cast<std::size_t>(c.g.node_count()), false);
  for (const auto& u : c.units.all()) {
    if (u.kind != UnitKind::kUncovered && u.kind != UnitKind::kUnsupported) continue;
    const int node = u.anchor;
    const auto& n = c.g.node(node);
    for (const auto& in : n.input()) {
      if (int p = c.g.Producer(in); p >= 0 && c.q.Of(p))
        near_uncovered[static_cast<std::size_t>(p)] = true;
    }
    for (const auto& o : n.output()) {
      for (const auto& use : c.g.Consumers(o)) {
        if (c.q.Of(use.node)) near_uncovered[static_cast<std::size_t>(use.node)] = true;
      }
    }
    if (u.kind == UnitKind::kUnsupported) {
      c.out.Emit({.rule = "closure/unsupported-op",
                  .node = node,
                  .message = n.op_type() + " '" + c.Name(node) +
                             "' does not conform to the ax quant spec (5.17); decompose it into "
                             "supported operators",
                  .group_key = n.op_type() + " is unsupported"});
      continue;
    }
    std::string why;
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      why = "operator of custom domain '" + n.domain() + "' is covered by no rule";
    } else {
      bool has_subgraph = false;
      for (const auto& a : n.attribute()) has_subgraph |= a.has_g() || a.graphs_size() > 0;
      why = n.op_type() + " is in no operator list of the ax quant spec" +
            (has_subgraph ? std::string(" (control flow with subgraphs is not covered)") : "");
    }
    c.out.Emit({.rule = "closure/uncovered-node",
                .node = node,
                .message = n.op_type() + " '" + c.Name(node) + "': " + why,
                .group_key = (n.domain().empty() ? "" : n.domain() + ".") + n.op_type() +
                             " is covered by no rule",
                .values = {{"op_type", n.op_type()}, {"domain", n.domain()}}});
  }
  // Nearness spreads across a Q -> DQ pair; such edges touch an operator's data path (2.1), so
  // they put the model in scope even though no rule can own them.
  for (int qn : c.q.q_nodes()) {
    int dq = c.q.PairedDq(qn);
    if (dq < 0) continue;
    bool near = near_uncovered[static_cast<std::size_t>(qn)] ||
                near_uncovered[static_cast<std::size_t>(dq)];
    near_uncovered[static_cast<std::size_t>(qn)] = near_uncovered[static_cast<std::size_t>(dq)] =
        near;
  }
  for (int node = 0; node < c.g.node_count(); ++node) {
    if (near_uncovered[static_cast<std::size_t>(node)])
      c.owned_edge[static_cast<std::size_t>(node)] = true;
  }
  // A DQ feeding a claimed Q directly (same-parameter chain, 3.5) serves that chain.
  const auto& topo = c.g.topo_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const int dq = *it;
    if (!c.q.IsDQ(dq) || c.claimed[static_cast<std::size_t>(dq)]) continue;
    for (const auto& use : c.g.Consumers(c.q.Of(dq)->y)) {
      if (c.q.IsQ(use.node) && c.claimed[static_cast<std::size_t>(use.node)]) {
        c.claimed[static_cast<std::size_t>(dq)] = true;
        int qn = -1;
        if (c.q.SourceOf(dq, &qn) == DqSource::kPairedQ)
          c.claimed[static_cast<std::size_t>(qn)] = true;
        break;
      }
    }
  }
  for (int node : topo) {
    if (!c.q.Of(node) || c.claimed[static_cast<std::size_t>(node)] ||
        near_uncovered[static_cast<std::size_t>(node)]) {
      continue;
    }
    const auto* p = c.q.Of(node);
    // An unclaimed Q -> DQ edge is reported once, on its DQ.
    if (p->is_q) {
      int dq = c.q.PairedDq(node);
      if (dq >= 0 && !c.claimed[static_cast<std::size_t>(dq)] &&
          !near_uncovered[static_cast<std::size_t>(dq)]) {
        continue;
      }
    }
    std::string what;
    if (p->is_q) {
      what = "Q '" + c.Name(node) + "' quantizes '" + std::string(p->x) +
             "', which is no data output of an operator or pattern, and its DQ feeds no operator "
             "data input";
    } else {
      std::string users;
      for (const auto& use : c.g.ConsumersOf(p->y_id)) {
        users += (users.empty() ? "" : ", ") + c.Op(use.node) + " '" + c.Name(use.node) + "'";
      }
      what = "DQ '" + c.Name(node) + "' output '" + std::string(p->y) + "' " +
             (users.empty()
                  ? std::string("is not consumed by any operator")
                  : "is consumed only by " + users + ", none of which uses it as quantized data");
    }
    c.out.Emit({.rule = "closure/orphan-qdq",
                .node = node,
                .message = what + "; the Q/DQ has no purpose in any rule",
                .group_key = p->is_q ? "Q without purpose" : "DQ without purpose",
                .tensors = {std::string(p->is_q ? p->x : p->y)}});
  }
}

}  // namespace axqc::detail
