#include "axqc/version.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

namespace axqc {

const OnnxLibraryInfo& LinkedOnnx() {
  static const OnnxLibraryInfo info = [] {
    const auto& m = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    auto it = m.find(onnx::ONNX_DOMAIN);
    return OnnxLibraryInfo{.version = AXQC_ONNX_VERSION,
                           .max_ir_version = onnx::IR_VERSION,
                           .max_opset = it == m.end() ? 0 : it->second.second};
  }();
  return info;
}

std::string LinkedOnnxDescription() {
  const auto& o = LinkedOnnx();
  return "ONNX " + o.version + " (IR <= " + std::to_string(o.max_ir_version) +
         ", ai.onnx opset <= " + std::to_string(o.max_opset) + ")";
}

}  // namespace axqc
