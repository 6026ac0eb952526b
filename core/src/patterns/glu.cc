// GLU pattern (6.3):  X -> Split -> A --------------> Mul -> Y
//                                 B -> Sigmoid -> G --^
// The largest pattern: it takes over the Split (no separate pass-through rule) and wins over
// any SiLU or Split pattern that overlaps it.
#include "onnx_util.h"
#include "patterns/patterns.h"

namespace axqc::detail {

bool MatchGLU(const GraphIndex& g, int m, PatternNodes* out) {
  const auto& mul = g.node(m);
  if (mul.input_size() != 2 || mul.output_size() < 1) return false;
  for (int side = 0; side < 2; ++side) {
    const auto& a = mul.input(side);
    const int aid = g.InputId(m, side);
    const int s = g.ProducerOf(g.InputId(m, 1 - side));
    if (s < 0) continue;
    const auto& sig = g.node(s);
    if (!IsOnnxOp(sig, "Sigmoid") || sig.input_size() != 1) continue;
    const auto& b = sig.input(0);
    const int bid = g.InputId(s, 0);
    const int sp = g.ProducerOf(bid);
    if (sp < 0 || sp != g.ProducerOf(aid) || a == b) continue;
    const auto& split = g.node(sp);
    if (!IsOnnxOp(split, "Split") || split.output_size() != 2) continue;
    *out = {{sp, s, m}, {mul.output(0)}};
    return true;
  }
  return false;
}

}  // namespace axqc::detail
