// Requantize pattern (3.5, 6.7): upstream DQ -> Identity -> downstream Q. The Identity marks
// only its own branch; other consumers of the upstream DQ keep their own rules.
#include "units.h"

namespace axqc::detail {

bool IsRequantizeIdentity(const GraphIndex& g, const QuantTable& q, int node) {
  const auto& n = g.node(node);
  if (!IsOnnxOp(n, "Identity") || n.input_size() != 1 || n.output_size() != 1) {
    return false;
  }
  if (q.DqProducing(g.InputId(node, 0)) < 0) return false;
  const auto& out = n.output(0);
  if (g.IsGraphOutputId(g.TensorId(out))) return false;
  const auto& uses = g.ConsumersOf(g.TensorId(out));
  if (uses.empty()) return false;
  for (const auto& u : uses) {
    if (!q.IsQ(u.node) || u.slot != 0) return false;
  }
  return true;
}

}  // namespace axqc::detail
