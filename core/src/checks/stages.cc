// The rule pass as a table (context.h): each stage is one file under checks/ and one row here.
// A new stage gets its row where its claims are needed: the Q/DQ nodes and edges first (they
// claim the Q/DQ with a purpose of their own), then the units by kind, the patterns, and closure,
// which reports every node and Q/DQ that no stage claimed.
#include "context.h"

namespace axqc::detail {

namespace {

constexpr RuleStage kRuleStages[] = {
    {"onnx_base", CheckOnnxBase},          // 2.2
    {"qdq_nodes", CheckQdqNodes},          // 3.1-3.3
    {"qdq_edges", CheckQdqEdges},          // 3.4, 3.5
    {"requantize", CheckRequantizeUnits},  // 6.7
    {"passive", CheckPassiveUnits},        // 5.10, 5.11, 5.13, 5.14, 6.6
    {"compute", CheckComputeUnits},        // 4, 5
    {"relu_clip", CheckReluClip},          // 5.15, 5.16
    {"patterns", CheckPatterns},           // 6.1
    {"closure", CheckClosure},             // 2.3: last
};

}  // namespace

std::span<const RuleStage> RuleStages() { return kRuleStages; }

void RunRuleStages(Context& c) {
  for (const auto& stage : kRuleStages) stage.run(c);
}

}  // namespace axqc::detail
