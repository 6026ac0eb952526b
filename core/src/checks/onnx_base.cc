// ONNX base rules (2.2): Constant nodes and value_info completeness. onnx/invalid-model is
// decided by the pipeline, which runs the ONNX checker and strict shape inference.
#include "context.h"

namespace axqc::detail {

void CheckOnnxBase(Context& c, const std::unordered_set<std::string>& declared) {
  for (int i : c.g.topo_order()) {
    const auto& n = c.g.node(i);
    if (n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx")) {
      c.out.Emit({.rule = "onnx/constant-node",
                  .node = i,
                  .message = "Constant node '" + c.Name(i) + "' produces '" +
                             (n.output_size() ? n.output(0) : std::string()) +
                             "'; static constants must be graph initializers",
                  .group_key = "Constant node instead of an initializer",
                  .tensors = {n.output_size() ? n.output(0) : std::string()}});
    }
    if (!c.out.enabled("onnx/value-info-missing")) continue;
    for (const auto& o : n.output()) {
      if (o.empty() || c.g.IsGraphOutput(o)) continue;
      if (!declared.contains(o)) {
        c.out.Emit({.rule = "onnx/value-info-missing",
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
