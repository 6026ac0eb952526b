// The Pulsar2 stage of the pipeline (checker.cc): a build configuration judged against the
// schema and against the indexed model (rules pulsar2/*, docs/pulsar2.md).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/report.h"
#include "graph_index.h"
#include "quant.h"
#include "units.h"

namespace axqc::detail {

// The findings of the configuration `text`, in configuration order. `chips`: the chips the model
// is checked for (--target, canonical names; may be empty). `primary` receives the primary node
// index of each finding (-1: none).
std::vector<Finding> EvaluatePulsar2Config(std::string_view text, const GraphIndex& g,
                                           const QuantTable& q, const Units& units,
                                           std::span<const std::string> chips,
                                           std::vector<int>* primary);

}  // namespace axqc::detail
