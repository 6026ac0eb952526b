// The target stage of the pipeline (checker.cc): the chips' profiles evaluated on the indexed
// graph. Q/DQ nodes are not evaluated (the spec judges them).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "axqc/report.h"
#include "graph_index.h"

namespace axqc::detail {

// The target findings of each chip (canonical names, ResolveTargets), chip by chip in graph
// order. `primary` receives the primary node index of each finding (-1: none).
std::vector<Finding> EvaluateTargets(const GraphIndex& g, const onnx::ModelProto& model,
                                     std::span<const std::string> chips, std::vector<int>* primary);

// The verdict of each chip from the target findings among `findings`.
std::vector<TargetResult> TargetResults(const std::vector<Finding>& findings,
                                        std::span<const std::string> chips);

}  // namespace axqc::detail
