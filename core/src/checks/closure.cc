// Closure (2.3): every non-Q/DQ node is covered by a rule; every Q/DQ node and edge is owned by
// an operator or pattern rule or named by a finding (RULES.md reading 9), so that a report's
// owned / total edge counts and its findings agree.
#include <unordered_map>

#include "context.h"

namespace axqc::detail {

namespace {

// "a, b, c and 4 more" for messages; the finding's node list holds all of them.
std::string NameList(const Context& c, const std::vector<int>& nodes, std::size_t max = 5) {
  std::string s;
  for (std::size_t i = 0; i < nodes.size() && i < max; ++i) {
    s += (i == 0 ? "'" : ", '") + c.Name(nodes[i]) + "'";
  }
  if (nodes.size() > max) s += " and " + std::to_string(nodes.size() - max) + " more";
  return s;
}

// A constant that enters through DQ `dq`: integer initializer or Constant -> DQ, or FP32
// initializer or Constant -> Q -> DQ. Returns the constant's name, or "".
std::string ConstantRoot(const Context& c, int dq) {
  int qn = -1;
  const auto src = c.q.SourceOf(dq, &qn);
  if (src == DqSource::kIntInitializer || src == DqSource::kConstantNode) {
    return std::string(c.q.Of(dq)->x);
  }
  if (src != DqSource::kPairedQ || qn < 0) return {};
  const auto* q = c.q.Of(qn);
  if (c.g.InitializerOf(q->x_id) != nullptr) return std::string(q->x);
  const int p = c.g.ProducerOf(q->x_id);
  if (p >= 0 && c.Op(p) == "Constant" && IsOnnxDomain(c.g.node(p).domain())) {
    return std::string(q->x);
  }
  return {};
}

// 3.5: an unowned DQ1 whose output feeds an owned Q2 directly serves that edge. With equal
// parameters it is part of it (owned); with different ones qdq/requantize-identity names it.
// A constant built as ... -> DQ1 -> Q2 -> DQ2 is neither constant form of 3.6: qdq/const-form.
void SameParameterChains(Context& c) {
  const auto& topo = c.g.topo_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const int dq = *it;
    if (!c.q.IsDQ(dq) || c.claims.OwnsEdgeOf(dq)) continue;
    const auto* d = c.q.Of(dq);
    for (const auto& use : c.g.ConsumersOf(d->y_id)) {
      if (!c.q.IsQ(use.node) || use.slot != 0 || !c.EdgeOwned(use.node)) continue;
      const int q2 = use.node;
      const int dq2 = c.q.PairedDq(q2);
      if (const std::string root = ConstantRoot(c, dq); !root.empty()) {
        std::vector<int> more;
        if (dq2 >= 0) {
          for (const auto& u : c.g.ConsumersOf(c.q.Of(dq2)->y_id)) {
            // A node's uses are adjacent: each consumer is listed once.
            if (c.q.Of(u.node) == nullptr && (more.empty() || more.back() != u.node)) {
              more.push_back(u.node);
            }
          }
        }
        const std::string users = more.empty()
                                      ? std::string("its consumer")
                                      : c.Op(more.front()) + " '" + c.Name(more.front()) + "'";
        int q1 = -1;
        const bool via_q = c.q.SourceOf(dq, &q1) == DqSource::kPairedQ;
        more.push_back(q2);
        if (dq2 >= 0) more.push_back(dq2);
        c.Explain(dq);
        c.out.Emit({.rule = rules::kQdqConstForm,
                    .node = dq,
                    .message = "constant '" + root + "' reaches " + users + " as " +
                               (via_q ? "initializer -> Q -> DQ '" : "initializer -> DQ '") +
                               c.Name(dq) + "' -> Q '" + c.Name(q2) + "' -> DQ" +
                               (dq2 >= 0 ? " '" + c.Name(dq2) + "'" : std::string()) +
                               ", which is neither constant form of 3.6 (FP32 initializer -> Q -> "
                               "DQ, or integer initializer -> DQ); quantize the constant once",
                    .group_key = "constant quantized twice (initializer -> ... -> DQ -> Q -> DQ)",
                    .tensors = {root},
                    .more_nodes = more});
        break;
      }
      if (CompareRequantize(*d, *c.q.Of(q2)).what.empty()) {
        c.claims.MarkEdgeOwned(dq);
      }
      c.Explain(dq);  // different parameters: qdq/requantize-identity names it
      break;
    }
  }
}

// Why `node` is covered by no rule ("<why>" of "Op 'name': <why>"), its group key and the fix.
struct Uncovered {
  std::string why, key, fix;
};

Uncovered UncoveredWhy(const Context& c, int node) {
  const auto& n = c.g.node(node);
  const std::string key =
      (n.domain().empty() ? "" : n.domain() + ".") + n.op_type() + " is covered by no rule";
  if (auto other = QuantizedOtherwise(c, node); !other.what.empty()) {
    return {"is " + other.what, key, other.fix};
  }
  if (FindOp(n.op_type(), n.domain()) != nullptr) {
    // In the operator table but made uncovered by integer data (reading 8).
    std::string type;
    auto note = [&](int id) {
      const int et = c.g.ElemTypeOf(id);
      if (type.empty() && et != 0 && !IsFloatType(et)) type = ElemTypeName(et);
    };
    note(c.g.OutputId(node, 0));
    for (int id : c.g.InputIds(node)) note(id);
    return {n.op_type() + " computes on integer data" +
                (type.empty() ? std::string() : " (" + type + ")") +
                " but has no native-integer mode in the ax quant spec (only Add, Sub, Mul (5.5) "
                "and Concat (5.12) have one)",
            n.op_type() + " on integer data (no native-integer mode)",
            "compute static shape arithmetic offline and store the result as an initializer"};
  }
  if (!IsOnnxDomain(n.domain())) {
    if (c.model != nullptr) {
      for (const auto& f : c.model->functions()) {
        if (f.name() == n.op_type() && f.domain() == n.domain()) {
          return {"calls the model-local function '" + n.domain() + "." + n.op_type() +
                      "'; axqc checks the main graph, not function bodies",
                  key,
                  "inline the model-local functions (e.g. onnx.inliner.inline_local_functions)"};
        }
      }
    }
    return {"operator of custom domain '" + n.domain() + "' is covered by no rule", key, {}};
  }
  bool has_subgraph = false;
  for (const auto& a : n.attribute()) has_subgraph |= a.has_g() || a.graphs_size() > 0;
  // Name where the operator comes from, so that a model of a newer opset says why it is new.
  std::string origin;
  if (const auto o = OnnxOpOrigin(n.op_type())) {
    origin = " (ai.onnx since opset " + std::to_string(o->opset) +
             (o->release.empty() ? std::string() : ", ONNX " + o->release) + ")";
  }
  return {n.op_type() + origin + " is in no operator list of the ax quant spec" +
              (has_subgraph ? std::string(" (control flow with subgraphs is not covered)") : ""),
          key,
          {}};
}

}  // namespace

void CheckClosure(Context& c) {
  SameParameterChains(c);

  // Q/DQ next to an uncovered or unsupported node whose edge no rule owns: that node's finding
  // names them (they lost their purpose with it) instead of an orphan finding each.
  std::unordered_map<int, std::vector<int>> neighbours;
  auto uncovered = [&](int node) {
    const int u = c.units.UnitOf(node);
    if (u < 0) return false;
    const auto kind = c.units.all()[static_cast<std::size_t>(u)].kind;
    return kind == UnitKind::kUncovered || kind == UnitKind::kUnsupported;
  };
  auto add = [&](int node, int qdq) {
    auto& v = neighbours[node];
    if (v.empty() || v.back() != qdq) v.push_back(qdq);
  };
  for (int n : c.g.topo_order()) {
    const auto* p = c.q.Of(n);
    if (p == nullptr || c.EdgeOwned(n)) continue;
    if (p->is_q) {
      if (const int prod = c.g.ProducerOf(p->x_id); prod >= 0 && uncovered(prod)) add(prod, n);
    } else {
      for (const auto& use : c.g.ConsumersOf(p->y_id)) {
        if (uncovered(use.node)) add(use.node, n);
      }
    }
  }

  for (const auto& u : c.units.all()) {
    if (u.kind != UnitKind::kUncovered && u.kind != UnitKind::kUnsupported) continue;
    const int node = u.anchor;
    const auto& n = c.g.node(node);
    std::vector<int> qdq;
    if (auto it = neighbours.find(node); it != neighbours.end()) qdq = it->second;
    for (int x : qdq) c.Explain(x);
    const std::string orphaned = qdq.empty() ? std::string()
                                             : "; its Q/DQ " + NameList(c, qdq) + " serve" +
                                                   (qdq.size() == 1 ? "s" : "") + " no rule";
    if (u.kind == UnitKind::kUnsupported) {
      c.out.Emit({.rule = rules::kClosureUnsupportedOp,
                  .node = node,
                  .message = n.op_type() + " '" + c.Name(node) +
                             "' does not conform to the ax quant spec (5.17); decompose it into "
                             "supported operators" +
                             orphaned,
                  .group_key = n.op_type() + " is unsupported",
                  .more_nodes = qdq});
      continue;
    }
    const auto why = UncoveredWhy(c, node);
    c.out.Emit({.rule = rules::kClosureUncoveredNode,
                .node = node,
                .message = n.op_type() + " '" + c.Name(node) + "': " + why.why +
                           (why.fix.empty() ? std::string() : "; fix: " + why.fix) + orphaned,
                .group_key = why.key,
                .values = {{"op_type", n.op_type()}, {"domain", n.domain()}},
                .more_nodes = qdq});
  }

  for (int node : c.g.topo_order()) {
    if (!c.q.Of(node) || c.claims.Claimed(node)) continue;
    const auto* p = c.q.Of(node);
    // An unclaimed Q -> DQ edge is reported once, on its DQ.
    if (p->is_q) {
      const int dq = c.q.PairedDq(node);
      if (dq >= 0 && !c.claims.Claimed(dq)) continue;
    }
    std::string what;
    if (p->is_q) {
      what = "Q '" + c.Name(node) + "' quantizes '" + std::string(p->x) +
             "', which is no data output of an operator or pattern, and its DQ feeds no operator "
             "data input";
    } else {
      std::string users;
      int last = -1;
      for (const auto& use : c.g.ConsumersOf(p->y_id)) {
        if (use.node == last) continue;  // a node reading the tensor twice is listed once
        last = use.node;
        users += (users.empty() ? "" : ", ") + c.Op(use.node) + " '" + c.Name(use.node) + "'";
      }
      what = "DQ '" + c.Name(node) + "' output '" + std::string(p->y) + "' " +
             (users.empty()
                  ? std::string("is not consumed by any operator")
                  : "is consumed only by " + users + ", none of which uses it as quantized data");
    }
    c.out.Emit({.rule = rules::kClosureOrphanQdq,
                .node = node,
                .message = what + "; the Q/DQ has no purpose in any rule",
                .group_key = p->is_q ? "Q without purpose" : "DQ without purpose",
                .tensors = {std::string(p->is_q ? p->x : p->y)}});
  }
}

}  // namespace axqc::detail
