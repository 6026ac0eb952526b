// Pictures of a report: the HTML report with graph views and the DOT graph (library
// axqc_render_html; the layout is Graphviz's, docs/report-html.md). They draw Report::graph, which
// the checker fills with CheckOptions::include_graph (the whole graph) and the service stores as an
// excerpt (GraphExcerpt).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "axqc/report.h"

namespace axqc {

struct HtmlOptions {
  // Base of the links to the rule pages: <rules_url><page>.md with the rule ID's '/' written
  // "--" ("qdq/scale-value" -> "qdq--scale-value.md"). The default is relative to a checkout of
  // the repository (the same links as the SARIF report). "" = rule IDs without links.
  std::string rules_url = "docs/rules/";
  int hops = 2;  // compute nodes around the findings' nodes in a view (Q/DQ nodes are free)
  std::size_t view_max_nodes = 60;          // nodes of one finding group's view
  std::size_t whole_model_max_nodes = 300;  // the ownership map of the whole model up to this
  // GraphExcerpt keeps the whole graph of a model up to this many nodes: the map with its chains
  // collapsed and an explorer of every node, on the server's pages too.
  std::size_t excerpt_whole_max_nodes = 3000;
  // The layout budget (Graphviz's dot is far worse than linear in the edges): a finding group's
  // view with more edges is narrowed to fewer nodes (the page says so), down to a table of its
  // nodes; the ownership map of a model with more edges is not drawn (the explorer is).
  std::size_t view_max_edges = 240;
  std::size_t whole_model_max_edges = 600;
  // Once the layouts of one document have taken this long, the remaining views are tables.
  double layout_seconds = 10.0;
  std::string home_url;  // a "back" link in the header ("" = none)
  std::string home_label = "dashboard";
  // Repair commands name the model by its file name (the last part of the report's model file,
  // "model.onnx" when that is not an .onnx file) and say so: the pages of a server, whose
  // reports name a model by where the server read it or by its registry name.
  bool repair_by_file_name = false;
  // Shown (escaped) instead of the standard sentence when the report has no graph, e.g. why the
  // graph views were left out.
  std::string no_graph_note;
};

// One self-contained HTML document (inline CSS, JS and SVG; nothing is fetched when it is
// opened): headline and verdict, root causes, the finding groups with a graph view of the
// neighbourhood of each group's first locations, and the model view (the whole ownership map
// for small models, a searchable, pannable explorer for every model). Without Report::graph the
// findings are shown without graph views.
std::string RenderHtml(const Report& report, const HtmlOptions& options = {});

// The Content-Security-Policy of the HTML report (its <meta> tag, and what a server sends with
// it): nothing is loaded from elsewhere, no script runs but the report's own (by its hash; no
// javascript: URL, no event handler attribute), no form, no <base>.
std::string HtmlReportCsp();
// The SHA-256 source ('sha256-<base64>') of the report's one inline script, for the policy of a
// page that writes the report into itself (the dashboard's model page).
std::string HtmlReportScriptHash();

// The graph in Graphviz's DOT language: every node of Report::graph (an excerpt when it is one),
// boxes coloured by unit, multi-node units as clusters, Q/DQ edges labelled with their
// parameters, the nodes of error and warning findings outlined. Throws std::invalid_argument
// without Report::graph.
std::string RenderDot(const Report& report);

// The node indices of `graph` within `hops` compute nodes of `seeds` (edges followed both ways;
// stepping onto a Q/DQ node costs nothing, so a Q/DQ pair never uses up a hop), seeds first, then
// by distance, at most `max_nodes`, each node expanding to at most 24 neighbours. Sorted
// ascending (topological order).
std::vector<int> Neighbourhood(const ModelGraph& graph, std::span<const int> seeds, int hops,
                               std::size_t max_nodes);

// Index of each finding group's seed nodes (the nodes named by its first locations, primary
// nodes first) in report.graph; empty without a graph.
std::vector<std::vector<int>> GroupSeeds(const Report& report);

// The part of report.graph that the HTML report draws: the whole graph when the model has at
// most options.excerpt_whole_max_nodes nodes (then it stays `complete`), else the
// neighbourhoods of the finding groups. What the service stores with a report.
ModelGraph GraphExcerpt(const Report& report, const HtmlOptions& options = {});

}  // namespace axqc
