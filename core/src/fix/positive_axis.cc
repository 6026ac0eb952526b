// positive-axis: QuantizeLinear / DequantizeLinear read a negative axis as counted from the back
// ("accepted range is [-r, r-1] where r = rank(input)"); the rewrite writes the same axis
// counted from the front, axis + r, with r the rank of the node's input x. An unknown rank or an
// axis outside [-r, -1] leaves the node alone (reported). Main graph only.
#include "fix/session.h"

namespace axqc::detail::fix {

void PositiveAxis(Session& s) {
  auto& g = s.graph();
  const TypeMap& types = s.Types();
  bool changed = false;
  for (int i = 0; i < g.node_size(); ++i) {
    auto* n = g.mutable_node(i);
    if ((n->op_type() != "QuantizeLinear" && n->op_type() != "DequantizeLinear") ||
        !IsOnnxDomain(*n) || n->input_size() < 1) {
      continue;
    }
    for (auto& a : *n->mutable_attribute()) {
      if (a.name() != "axis" || a.type() != onnx::AttributeProto::INT || a.i() >= 0) continue;
      const std::string place = NodeLabel(*n, i);
      auto rank = types.Rank(n->input(0));
      if (!rank) {
        s.Skipped(place, "the rank of its input '" + n->input(0) + "' is unknown");
        continue;
      }
      if (a.i() < -*rank) {
        s.Skipped(place, "axis " + std::to_string(a.i()) + " is out of range for rank " +
                             std::to_string(*rank));
        continue;
      }
      a.set_i(a.i() + *rank);
      changed = true;
      s.Applied(place);
    }
  }
  if (changed) s.Changed();
}

}  // namespace axqc::detail::fix
