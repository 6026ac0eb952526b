// The ONNX checker over a whole model with a caller-provided context (model directory for
// external data), for every supported ONNX release: 1.17 exports check_model(model, ctx); 1.20
// keeps that overload internal and only exports forms that either re-read the file or cannot be
// given the model directory.
#pragma once

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

namespace axqc::detail {

// Throws onnx::checker::ValidationError like onnx::checker::check_model.
void CheckModelInContext(const onnx::ModelProto& model, onnx::checker::CheckerContext& ctx);

}  // namespace axqc::detail
