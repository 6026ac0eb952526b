// Conv/ConvTranspose + BatchNormalization fusion (6.4). The Conv -> BN edge is internal; the
// pattern may continue into a Relu/Clip fusion tail (attached like any other tail).
#include "units.h"

namespace axqc::detail {

void MatchConvBN(const GraphIndex& g, const QuantTable& /*q*/, std::vector<PatternMatch>& out) {
  for (int b : g.topo_order()) {
    const auto& bn = g.node(b);
    if (bn.op_type() != "BatchNormalization" || !bn.domain().empty() || bn.input_size() < 1 ||
        bn.output_size() < 1) {
      continue;
    }
    int c = g.Producer(bn.input(0));
    if (c < 0) continue;
    const auto& conv = g.node(c);
    if ((conv.op_type() != "Conv" && conv.op_type() != "ConvTranspose") || !conv.domain().empty()) {
      continue;
    }
    out.push_back({"conv-bn", c, {c, b}, {bn.output(0)}, 3});
  }
}

}  // namespace axqc::detail
