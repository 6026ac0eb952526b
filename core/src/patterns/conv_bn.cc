// Conv/ConvTranspose + BatchNormalization fusion (6.4). The Conv -> BN edge is internal; the
// pattern may continue into a Relu/Clip fusion tail (attached like any other tail).
#include "onnx_util.h"
#include "patterns/patterns.h"

namespace axqc::detail {

bool MatchConvBN(const GraphIndex& g, int b, PatternNodes* out) {
  const auto& bn = g.node(b);
  if (bn.input_size() < 1 || bn.output_size() < 1) return false;
  const int c = g.ProducerOf(g.InputId(b, 0));
  if (c < 0) return false;
  const auto& conv = g.node(c);
  if (!IsOnnxOp(conv, "Conv") && !IsOnnxOp(conv, "ConvTranspose")) return false;
  *out = {{c, b}, {bn.output(0)}, c};  // the unit is named after the Conv
  return true;
}

}  // namespace axqc::detail
