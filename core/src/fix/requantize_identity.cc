// requantize-identity: spec 3.5 marks a requantization DQ1 -> Q2 between different parameters
// with an Identity (DQ1 -> Identity -> Q2). Where a DQ feeds a Q directly and the checker's
// comparison (the same as qdq/requantize-identity: type, scale, zero_point, granularity, axis,
// per-tensor values compared by value) finds a difference, an Identity is inserted on that edge;
// other consumers of DQ1 keep reading it directly. Identity(x) == x: no value changes. Main graph.
#include <map>

#include "fix/session.h"
#include "graph_index.h"
#include "quant.h"

namespace axqc::detail::fix {

void RequantizeIdentity(Session& s) {
  const auto& inferred = s.Inferred();
  GraphIndex gi(inferred.graph(), s.ext());
  QuantTable qt(gi);
  // DQ node -> the Q nodes to re-route (node indices are the same in both models).
  std::map<int, std::vector<int>> todo;
  for (int dq : qt.dq_nodes()) {
    const auto* d = qt.Of(dq);
    if (d->y.empty()) continue;
    for (const auto& u : gi.ConsumersOf(d->y_id)) {
      if (u.slot != 0 || !qt.IsQ(u.node)) continue;
      auto diff = CompareFull(*d, *qt.Of(u.node));
      if (diff.what.empty()) continue;
      todo[dq].push_back(u.node);
    }
  }
  if (todo.empty()) return;
  auto& g = s.graph();
  // New nodes go right after their DQ (topological order is kept).
  std::map<int, onnx::NodeProto> after;
  for (auto& [dq, qs] : todo) {
    const auto& dqn = g.node(dq);
    const std::string out = s.NewTensorName(dqn.output(0) + "_requantize");
    onnx::NodeProto id;
    id.set_op_type("Identity");
    id.set_name(s.NewNodeName(NodeLabel(dqn, dq) + "_requantize"));
    id.add_input(dqn.output(0));
    id.add_output(out);
    for (int q : qs) {
      *g.mutable_node(q)->mutable_input(0) = out;
      s.Applied(NodeLabel(g.node(q), q));
    }
    after.emplace(dq, std::move(id));
  }
  auto* nodes = g.mutable_node();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> rebuilt;
  rebuilt.Reserve(nodes->size() + static_cast<int>(after.size()));
  for (int i = 0; i < nodes->size(); ++i) {
    rebuilt.Add()->Swap(nodes->Mutable(i));
    auto it = after.find(i);
    if (it != after.end()) *rebuilt.Add() = std::move(it->second);
  }
  nodes->Swap(&rebuilt);
  s.Changed();
}

}  // namespace axqc::detail::fix
