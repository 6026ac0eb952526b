// Relu/Clip branch-local fusion tails (5.15, 5.16, 6.5):
//   ... -> input Q/DQ -> X -> Relu -> output Q/DQ
// X is a non-passive quantized compute unit; the tail owns only the selected branch. A tail's
// output must be the asymmetric (unsigned) form: a signed output Q makes it a symmetric Relu,
// which needs Q/DQ on both sides and cannot be a tail.
#include "units.h"

namespace axqc::detail {

bool IsSignedOutputQ(const GraphIndex& g, const QuantTable& q, std::string_view tensor) {
  for (const auto& u : g.ConsumersOf(g.TensorId(tensor))) {
    const auto* p = q.Of(u.node);
    if (p && p->is_q && p->qtype && Info(*p->qtype).is_signed) return true;
  }
  return false;
}

bool TailCandidate(const GraphIndex& g, const QuantTable& q, int relu, std::string* why) {
  const auto& n = g.node(relu);
  if ((n.op_type() != "Relu" && n.op_type() != "Clip") || n.input_size() < 1 ||
      n.output_size() < 1) {
    return false;
  }
  int p = g.ProducerOf(g.InputId(relu, 0));
  if (p < 0 || q.Of(p) != nullptr) return false;  // graph input, initializer or DQ: standalone
  if (IsSignedOutputQ(g, q, n.output(0))) {
    if (why) *why = "its output Q/DQ is signed (symmetric form)";
    return false;
  }
  return true;
}

}  // namespace axqc::detail
