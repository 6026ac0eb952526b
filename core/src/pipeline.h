// Internal entry points of the checker pipeline (checker.cc) for other parts of the library
// (the fix engine): the check of an already loaded model, and the schema registry whose shape
// inference functions are guarded against the crashes of hostile models.
#pragma once

#include <onnx/defs/schema.h>

#include "axqc/checker.h"
#include "loader.h"

namespace axqc::detail {

// The check of CheckFile/CheckBytes on a model that is already loaded (and possibly edited).
// Runs shape inference in place: the model gains value_info.
Report CheckLoaded(LoadedModel& m, const CheckOptions& options);

// ONNX's schema registry with the crash guards of the checker around the inference functions of
// the guarded ops. Only for models that pass the ONNX checker.
const onnx::ISchemaRegistry* GuardedSchemaRegistry();

// Highest ai.onnx opset the linked ONNX library knows.
int MaxKnownOnnxOpset();

}  // namespace axqc::detail
