// DOT text of (part of) Report::graph, shared by RenderDot and the graph views of RenderHtml.
#pragma once

#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// Model text as plain text for DOT: control characters (C0, DEL, C1) become ' ', bytes that are
// not well-formed UTF-8 become U+FFFD. No escaping (DotQuote does that).
std::string DotText(std::string_view s);

// DotText for the SVG ids of nodes and edges: spaces become '_' as well (no whitespace in ids).
std::string IdText(std::string_view s);

// The one way a value enters DOT text: a quoted string whose value Graphviz reads back as `text`.
// '"' is escaped, every backslash doubled (Graphviz expands \N, \G, \l, ... in labels, ids and
// tooltips), '&' written "&amp;" (Graphviz decodes HTML entities in labels and passes them to
// SVG), '\n' written as the line break "\n", any other control character as ' '.
std::string DotQuote(std::string_view text);

// Every attribute name BuildDot writes (graph, node, edge and cluster attributes).
const std::set<std::string_view>& DotAttributeNames();

// The edges between `nodes` (indices into graph) that BuildDot draws.
std::size_t CountEdges(const ModelGraph& graph, std::span<const int> nodes);

// A digraph of the nodes `nodes` (indices into graph, ascending) and the edges between them.
// DOT node ids are "n<index>"; the SVG ids "<prefix>node-<name>", edge ids
// "<prefix>edge-<tensor>--<consumer name>" (names through IdText); classes "unit-<class>" and
// "offending" / "involved". Every attribute value goes through DotQuote; model text is never an
// attribute name or an unquoted id.
std::string BuildDot(const Report& report, const ModelGraph& graph, std::span<const int> nodes,
                     const DotView& view);

// The compute nodes of a graph (Q/DQ nodes folded into the edges) with its linear chains
// collapsed: a node whose one compute predecessor has it as its one compute successor joins that
// predecessor's box, unless either is named in `keep` (the nodes of findings stay boxes of their
// own). Boxes are in graph order, each its nodes in graph order; edges between boxes, sorted.
struct Condensed {
  std::vector<std::vector<int>> boxes;
  std::vector<std::pair<int, int>> edges;
};
Condensed Condense(const ModelGraph& graph, const std::set<std::string>& keep);

// A digraph of the boxes of `condensed`: a box of one node is drawn as in BuildDot (SVG id
// "<prefix>node-<name>", class "unit-<class>", outlined when in view.offending), a chain as one
// box "N nodes: <op types>" with its first and last node names, class "unit-<class of its first
// node> chain", its SVG id that of its first node.
std::string BuildCondensedDot(const Report& report, const ModelGraph& graph,
                              const Condensed& condensed, const DotView& view);

// Graphviz's SVG output reduced to the elements and attributes it writes for BuildDot's graphs
// (render_html.cc): comments, the prolog and every other element (image, script, foreignObject,
// ...) and attribute (href, xlink:href, on*, style, ...) are dropped; <a> keeps only its tooltip.
std::string SanitizeSvg(std::string_view svg);

// The rule page for a rule ID: "qdq/scale-value" -> "qdq--scale-value".
std::string RulePage(std::string_view rule);

}  // namespace axqc::detail
