// The ONNX validity stage of the pipeline (checker.cc): onnx/invalid-model and
// onnx/library-message findings from the ONNX checker, the tensors' storage and strict shape
// inference (what onnx.checker.check_model(m, full_check=True) does), run in place so that the
// inferred value_info feeds the later stages without a copy of the model.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "context.h"
#include "loader.h"
#include "stage_clock.h"

namespace axqc::detail {

// A tensor whose data does not match its dims and type (onnx/invalid-model).
struct StorageProblem {
  std::string message;  // "<where>: <why>"
  std::string tensor;
};

// Storage of every tensor (subgraphs, Constant values and functions included): ONNX's shape
// inference reads tensor data (ParseData) and overflows its buffer when raw_data is not a
// multiple of the element size, so no inference runs on a model with a mismatch. Reads the model
// only (runs beside the ONNX checker).
std::vector<StorageProblem> FindStorageProblems(const onnx::ModelProto& model);

// onnx/invalid-model: the ONNX checker plus strict shape inference (what full_check does), run
// in place so the inferred value_info feeds the later stages without copying the model.
// `storage` waits for FindStorageProblems(model) (computed beside the checker) and returns it;
// it is called after the checker and before shape inference, which writes into the model.
void ValidateOnnx(LoadedModel& m, Emitter& out, StageClock& clock,
                  const std::function<std::vector<StorageProblem>()>& storage);

}  // namespace axqc::detail
