// ONNX base rules (2.2): Constant nodes and value_info completeness. onnx/invalid-model is
// decided by the pipeline, which runs the ONNX checker and strict shape inference.
#include "context.h"

namespace axqc::detail {

void CheckOnnxBase(Context& c) {
  const std::vector<bool>& declared = c.declared_value_info;
  for (int i : c.g.topo_order()) {
    const auto& n = c.g.node(i);
    if (IsOnnxOp(n, "Constant")) {
      c.out.Emit({.rule = rules::kOnnxConstantNode,
                  .node = i,
                  .message = "Constant node '" + c.Name(i) + "' produces '" +
                             (n.output_size() ? n.output(0) : std::string()) +
                             "'; static constants must be graph initializers",
                  .group_key = "Constant node instead of an initializer",
                  .tensors = {n.output_size() ? n.output(0) : std::string()}});
    }
    if (!c.out.enabled(rules::kOnnxValueInfoMissing)) continue;
    const auto ids = c.g.OutputIds(i);
    for (int k = 0; k < n.output_size(); ++k) {
      const auto& o = n.output(k);
      const int id = ids[static_cast<std::size_t>(k)];
      if (id < 0 || c.g.IsGraphOutputId(c.g.TensorId(o))) continue;
      if (static_cast<std::size_t>(id) >= declared.size() ||
          !declared[static_cast<std::size_t>(id)]) {
        c.out.Emit({.rule = rules::kOnnxValueInfoMissing,
                    .node = i,
                    .message = "intermediate tensor '" + o + "' (output of " + n.op_type() + " '" +
                               c.Name(i) + "') has no value_info",
                    .group_key = "intermediate tensor without value_info",
                    .tensors = {o}});
      }
    }
  }
}

}  // namespace axqc::detail
