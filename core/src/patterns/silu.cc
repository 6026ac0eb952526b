// SiLU pattern (6.2):  X -> Sigmoid -> Mul <- X.  X and Y are the quantization boundary; the
// Sigmoid -> Mul edge is internal. Matches on direct edges only (RULES.md reading 1).
#include "onnx_util.h"
#include "patterns/patterns.h"

namespace axqc::detail {

bool MatchSiLU(const GraphIndex& g, int m, PatternNodes* out) {
  const auto& mul = g.node(m);
  if (mul.input_size() != 2 || mul.output_size() < 1) return false;
  for (int side = 0; side < 2; ++side) {
    const auto& x = mul.input(side);
    const int s = g.ProducerOf(g.InputId(m, 1 - side));
    if (s < 0 || s == m) continue;
    const auto& sig = g.node(s);
    if (!IsOnnxOp(sig, "Sigmoid") || sig.input_size() != 1 || sig.input(0) != x || x.empty()) {
      continue;
    }
    *out = {{s, m}, {mul.output(0)}};
    return true;
  }
  return false;
}

}  // namespace axqc::detail
