// GLU pattern (6.3):  X -> Split -> A --------------> Mul -> Y
//                                 B -> Sigmoid -> G --^
// The largest pattern: it takes over the Split (no separate pass-through rule) and wins over
// any SiLU or Split pattern that overlaps it.
#include "units.h"

namespace axqc::detail {

void MatchGLU(const GraphIndex& g, const QuantTable& /*q*/, std::vector<PatternMatch>& out) {
  for (int m : g.topo_order()) {
    const auto& mul = g.node(m);
    if (mul.op_type() != "Mul" || !mul.domain().empty() || mul.input_size() != 2 ||
        mul.output_size() < 1) {
      continue;
    }
    for (int side = 0; side < 2; ++side) {
      const auto& a = mul.input(side);
      int s = g.Producer(mul.input(1 - side));
      if (s < 0) continue;
      const auto& sig = g.node(s);
      if (sig.op_type() != "Sigmoid" || !sig.domain().empty() || sig.input_size() != 1) continue;
      const auto& b = sig.input(0);
      int sp = g.Producer(b);
      if (sp < 0 || sp != g.Producer(a) || a == b) continue;
      const auto& split = g.node(sp);
      if (split.op_type() != "Split" || !split.domain().empty() || split.output_size() != 2) {
        continue;
      }
      out.push_back({"glu", m, {sp, s, m}, {mul.output(0)}, 6});
      break;
    }
  }
}

}  // namespace axqc::detail
