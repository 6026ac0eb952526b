// SiLU pattern (6.2):  X -> Sigmoid -> Mul <- X.  X and Y are the quantization boundary; the
// Sigmoid -> Mul edge is internal. Matches on direct edges only (RULES.md reading 1).
#include "units.h"

namespace axqc::detail {

void MatchSiLU(const GraphIndex& g, const QuantTable& /*q*/, std::vector<PatternMatch>& out) {
  for (int m : g.topo_order()) {
    const auto& mul = g.node(m);
    if (mul.op_type() != "Mul" || !mul.domain().empty() || mul.input_size() != 2 ||
        mul.output_size() < 1) {
      continue;
    }
    for (int side = 0; side < 2; ++side) {
      const auto& x = mul.input(side);
      const auto& gate = mul.input(1 - side);
      int s = g.Producer(gate);
      if (s < 0 || s == m) continue;
      const auto& sig = g.node(s);
      if (sig.op_type() != "Sigmoid" || !sig.domain().empty() || sig.input_size() != 1 ||
          sig.input(0) != x || x.empty()) {
        continue;
      }
      out.push_back({"silu", m, {s, m}, {mul.output(0)}, 3});
      break;
    }
  }
}

}  // namespace axqc::detail
