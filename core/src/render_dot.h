// DOT text of (part of) Report::graph, shared by RenderDot and the graph views of RenderHtml.
#pragma once

#include <set>
#include <span>
#include <string>
#include <string_view>

#include "axqc/report.h"

namespace axqc::detail {

// "pattern", "operator", "passive" or "nonquant" for a unit of the ownership map.
std::string_view UnitClass(const UnitInfo& unit);
// The same for a graph node: "qdq" for Q/DQ nodes, "none" for nodes of no unit.
std::string_view NodeClass(const Report& report, const GraphNode& node);
bool IsQdq(const GraphNode& node);

struct DotView {
  std::string prefix;                 // prepended to every id ("v3-"), unique per document
  std::set<std::string> offending;    // node names outlined red (primary nodes of findings)
  std::set<std::string> involved;     // node names outlined orange (other nodes of findings)
  std::set<std::string> bad_tensors;  // tensor names whose edges are highlighted
  bool clusters = false;              // multi-node units as clusters
};

// A digraph of the nodes `nodes` (indices into graph, ascending) and the edges between them.
// Node ids "<prefix>node-<name>", edge ids "<prefix>edge-<tensor>--<consumer name>"; classes
// "unit-<class>" and "offending" / "involved".
std::string BuildDot(const Report& report, const ModelGraph& graph, std::span<const int> nodes,
                     const DotView& view);

// The rule page for a rule ID: "qdq/scale-value" -> "qdq--scale-value".
std::string RulePage(std::string_view rule);

}  // namespace axqc::detail
