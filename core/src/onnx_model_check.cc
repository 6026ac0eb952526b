#include "onnx_model_check.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

namespace axqc::detail {

void CheckModelInContext(const onnx::ModelProto& model, onnx::checker::CheckerContext& ctx) {
  using onnx::checker::ValidationError;
  const auto ir = model.ir_version();
  if (ir == 0) throw ValidationError("The model does not have an ir_version set properly.");
  if (ir > onnx::IR_VERSION) {
    throw ValidationError("Your model ir_version " + std::to_string(ir) +
                          " is higher than the checker's (" + std::to_string(onnx::IR_VERSION) +
                          ").");
  }
  std::unordered_set<std::string> keys;
  for (const auto& entry : model.metadata_props()) {
    if (!keys.insert(entry.key()).second) {
      throw ValidationError("Your model has duplicate keys in metadata_props.");
    }
  }
  ctx.set_ir_version(static_cast<int>(ir));
  std::unordered_map<std::string, int> opsets;
  for (const auto& op : model.opset_import()) opsets[op.domain()] = static_cast<int>(op.version());
  if (ir >= 3 && opsets.empty()) {
    throw ValidationError("model with IR version >= 3 must specify opset_import for ONNX");
  }
  if (ir < 3) {
    if (!opsets.empty()) {
      throw ValidationError("model with IR version < 3 cannot have opset_import specified");
    }
    opsets[onnx::ONNX_DOMAIN] = 1;
  }
  ctx.set_opset_imports(opsets);
  const onnx::checker::LexicalScopeContext scope;
  onnx::checker::check_graph(model.graph(), ctx, scope);
  if (ctx.get_ir_version() >= 8) onnx::checker::check_model_local_functions(model, ctx, scope);
}

}  // namespace axqc::detail
