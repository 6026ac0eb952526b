// Root causes (stage after the rules): a stable id for every finding, a `cause` link from a
// finding to the finding that causes it, and one hint for each root cause that a producer
// artifact explains (docs/causes.md).
//
// Causes are decided by two tables, never by the text of a message:
// - kCausalLinks: (cause rule, consequence rule, relation). A finding is caused by an earlier
//   decided finding when some row's relation holds between the two in the graph.
// - kArtifacts (causes_artifacts.h, rows in causes_hints.cc, recognisers in
//   causes_artifacts.cc): producer artifacts recognised by graph structure (relu6 as Relu ->
//   Clip, a decomposed GELU, a shape subgraph, ...). Every finding on a node of a recognised
//   artifact that no link explains is caused by the finding at the artifact's anchor node, which
//   carries the artifact's hint (relation kArtifact: the operator or pattern that failed to form).
//   Roots that no artifact region covers get a hint from their own structure (a Constant feeding
//   a scale, an Identity of an initializer, missing value_info, ...): the table's root
//   recognisers.
// causes.cc is the engine that runs both tables.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "axqc/report.h"
#include "graph_index.h"
#include "rules.h"

namespace axqc::detail {

enum class Relation : std::uint8_t {
  kSameNode,   // both findings are at one node (the same tensor, when the rule is the same)
  kSameEdge,   // one tensor judged from its two ends: one finding at its producer, the other at
               // a consumer (the same rule: the producer's end is the cause)
  kParamFeed,  // the cause's Constant feeds (directly or through Identity) the tensor of the
               // consequence, in a slot where an initializer would be accepted
  kQdqEdge,    // one Q/DQ edge judged from both ends: the cause at the Q, the consequence at the
               // DQ it pairs with or that reads the Q's output through one node
  kArtifact,   // both on one recognised producer artifact: the cause at its anchor node
};
std::string_view RelationName(Relation r);         // "same node", ...
std::string_view RelationDescription(Relation r);  // one sentence for the docs

struct CausalLink {
  RuleId cause;
  RuleId consequence;
  Relation relation;
  std::string_view why;  // one line for the rule pages
};
std::span<const CausalLink> CausalLinks();

// Sets Finding::id, Finding::cause and Finding::hint of every finding. `primary[i]` is the node
// index of findings[i]'s primary node in `g` (-1: none). Runs before names are cleaned (node
// names are looked up in `g`). `g` null: ids only. `model` (optional): its local functions.
void AssignCauses(const GraphIndex* g, const onnx::ModelProto* model,
                  std::vector<Finding>& findings, const std::vector<int>& primary);

}  // namespace axqc::detail
