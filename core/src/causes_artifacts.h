// Producer artifacts (docs/causes.md, "Producer artifacts and hints"): the table of the artifacts
// that explain root causes, one row per artifact with its typed ID, its hint and its recognisers,
// in the shape of the pattern table (patterns/patterns.h). The causes stage (causes.cc) runs them:
// - `region`: called at every ai.onnx node whose op type is one of the row's `at_ops`, nodes in
//   topological order. A match is a region of the graph: every finding on a node of it that no
//   causal link explains is caused by the finding at the region's anchor node, which carries the
//   row's hint (Relation::kArtifact).
// - `root`: called for every root finding without a hint, row by row in table order; the first
//   row whose recogniser holds gives the finding its hint.
//
// Add an artifact: its value in ArtifactId (the position of its row), its recogniser(s) in
// causes_artifacts.cc (declared below), its row in kArtifacts (causes_hints.cc) and its line in
// docs/causes.md's table. A table that misses a value, or lists one out of order, does not
// compile; a hint is looked up by its ArtifactId only.
#pragma once

#include <onnx/onnx_pb.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "axqc/report.h"
#include "graph_index.h"

namespace axqc::detail {

// One value per row of the table, in the order of the rows: the rows with a root recogniser
// first, in the order they are tried, then the rows that only recognise regions.
enum class ArtifactId : std::uint8_t {
  kQdqInFunction,
  kContribQdq,
  kQoperatorFormat,
  kQparamsAsNumbers,
  kConstantNode,
  kDynamoQparamCasts,
  kValueInfoMissing,
  kDropoutRemoved,
  kShapeSubgraph,  // also a region
  kSplitAsSlices,
  kTorchDedupIdentity,
  kWeightQdqFolded,
  kOrtActivationRemoved,
  kOrtAsymmetricActivations,
  kRelu6AsReluClip,
  kHardswishAsHardsigmoidMul,
  kGeluDecomposed,
  kLayernormDecomposed,
  kQatConvBnUnfolded,
  kLinearAsMatmul,
  kCount,  // not an artifact: the number of rows
};
inline constexpr std::size_t kArtifactCount = static_cast<std::size_t>(ArtifactId::kCount);

// What a region recogniser found at the node it was called at.
struct ArtifactRegion {
  int anchor = -1;         // the node whose finding is the region's root (-1: the node called at)
  std::vector<int> nodes;  // the members, anchor included (-1 entries stand for the anchor)
};

// A root finding as a root recogniser sees it.
struct RootFinding {
  const GraphIndex& g;
  const onnx::ModelProto* model;    // null: not known (no model-level facts)
  std::string_view rule;            // Finding::rule
  int primary;                      // its primary node in g, -1: none
  const std::vector<int>& nodes;    // its nodes in g
  const std::vector<int>& tensors;  // its tensors' ids in g (-1: not in g)
};

struct ArtifactSpec {
  ArtifactId id;
  std::string_view hint_id;     // Hint::id, a public contract: never renamed
  std::string_view title;       // Hint::title, a short name for the text report
  std::string_view rewrite;     // Hint::rewrite: `axqc fix` rewrite ID, "" = producer side only
  std::string_view recognised;  // the graph structure (or finding) it is recognised by (docs)
  std::string_view text;        // Hint::text
  // The op types of the nodes `region` is called at (ai.onnx only); unused entries are empty.
  std::array<std::string_view, 2> at_ops = {};
  // Fills `out` and returns true when the artifact is at `node`.
  bool (*region)(const GraphIndex& g, int node, ArtifactRegion* out) = nullptr;
  // True when the artifact explains the root finding.
  bool (*root)(const RootFinding& f) = nullptr;
};

// Every artifact, row i with ArtifactId i.
std::span<const ArtifactSpec> ArtifactTable();
const ArtifactSpec& Artifact(ArtifactId id);
const ArtifactSpec* FindArtifact(std::string_view hint_id);  // null: no artifact has that hint
Hint HintOf(ArtifactId id);

// Region recognisers (causes_artifacts.cc), named after the node they are called at.
bool Relu6AtRelu(const GraphIndex& g, int relu, ArtifactRegion* out);
bool HardSwishAtHardSigmoid(const GraphIndex& g, int hard_sigmoid, ArtifactRegion* out);
bool GeluAtErf(const GraphIndex& g, int erf, ArtifactRegion* out);
bool LayerNormAtReduceMean(const GraphIndex& g, int reduce_mean, ArtifactRegion* out);
bool QatConvBnAtConv(const GraphIndex& g, int conv, ArtifactRegion* out);
bool LinearAtTranspose(const GraphIndex& g, int transpose, ArtifactRegion* out);
bool ShapeSubgraphAtShape(const GraphIndex& g, int shape, ArtifactRegion* out);

// Root recognisers (causes_artifacts.cc).
bool RootInFunction(const RootFinding& f);
bool RootAtContribQdq(const RootFinding& f);
bool RootAtQOperator(const RootFinding& f);
bool RootConstantFeedsQParams(const RootFinding& f);
bool RootConstantNode(const RootFinding& f);
bool RootFromInitializerCast(const RootFinding& f);
bool RootValueInfoMissing(const RootFinding& f);
bool RootRequantizeIdentity(const RootFinding& f);
bool RootUncoveredShape(const RootFinding& f);
bool RootSplitLike(const RootFinding& f);
bool RootFromDedupIdentity(const RootFinding& f);
bool RootWeightFoldedToFloat(const RootFinding& f);
bool RootOrtRemovedActivation(const RootFinding& f);
bool RootOrtAsymmetricActivation(const RootFinding& f);

}  // namespace axqc::detail
