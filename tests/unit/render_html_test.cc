// The pictures of a report (axqc/render_graph.h): neighbourhoods, excerpts, the DOT graph and the
// HTML report of real exports (tests/data/real_exports): highlighted nodes, Q/DQ edge labels,
// rule links, nothing fetched from elsewhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "axqc/catalog.h"
#include "axqc/checker.h"
#include "axqc/render_graph.h"
#include "modelgen/model_builder.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

fs::path Export(const std::string& name) {
  return fs::path(AXQC_SOURCE_DIR) / "tests" / "data" / "real_exports" / (name + ".onnx");
}

Report CheckWithGraph(const std::string& name) {
  CheckOptions o;
  o.include_graph = true;
  return CheckFile(Export(name).string(), o);
}

// Graphviz writes '-' in attribute values as "&#45;".
std::string Unescape(std::string s) {
  for (std::size_t p = s.find("&#45;"); p != std::string::npos; p = s.find("&#45;", p + 1)) {
    s.replace(p, 5, "-");
  }
  return s;
}

// Attributes (id, class) of every SVG <g> element.
struct Element {
  std::string id, cls;
};
std::vector<Element> Groups(const std::string& html) {
  std::vector<Element> out;
  static const std::regex re(R"re(<g id="([^"]*)" class="([^"]*)")re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back({Unescape((*it)[1].str()), Unescape((*it)[2].str())});
  }
  return out;
}

bool HasClass(const Element& e, const std::string& c) {
  const std::string padded = " " + e.cls + " ";
  return padded.find(" " + c + " ") != std::string::npos;
}

// A chain A(Conv) -> Q -> DQ -> B(Relu) -> C(Add) -> D(Mul) -> E(Sigmoid), plus F(Sub) consuming
// A's output directly.
ModelGraph Chain() {
  ModelGraph g;
  g.complete = true;
  const char* ops[] = {"Conv", "QuantizeLinear", "DequantizeLinear", "Relu", "Add",
                       "Mul",  "Sigmoid"};
  const char* names[] = {"A", "Q", "DQ", "B", "C", "D", "E"};
  for (int i = 0; i < 7; ++i) {
    GraphNode n;
    n.name = names[i];
    n.op_type = ops[i];
    if (i > 0) n.inputs = {i - 1};
    n.outputs = {i};
    if (i == 1) n.quant = "U8 per-tensor scale=0.5 zp=128";
    g.nodes.push_back(n);
    GraphTensor t;
    t.name = std::string("t") + names[i];
    t.producer = i;
    g.tensors.push_back(t);
  }
  GraphNode f;
  f.name = "F";
  f.op_type = "Sub";
  f.inputs = {0};
  f.outputs = {7};
  g.nodes.push_back(f);
  GraphTensor tf;
  tf.name = "tF";
  tf.producer = 7;
  g.tensors.push_back(tf);
  g.model_nodes = g.nodes.size();
  return g;
}

TEST(Neighbourhood, QdqNodesUseNoHopAndTheBallIsSortedByGraphOrder) {
  const ModelGraph g = Chain();
  const std::vector<int> seed{0};
  // Two compute hops from A: F and B (through Q and DQ at no cost), then C. Not D or E.
  EXPECT_EQ(Neighbourhood(g, seed, 2, 100), (std::vector<int>{0, 1, 2, 3, 4, 7}));
  EXPECT_EQ(Neighbourhood(g, seed, 1, 100), (std::vector<int>{0, 1, 2, 3, 7}));
  EXPECT_EQ(Neighbourhood(g, seed, 0, 100), (std::vector<int>{0, 1, 2}));
  // Edges are followed both ways: from E, D and C.
  const std::vector<int> from_e{6};
  EXPECT_EQ(Neighbourhood(g, from_e, 2, 100), (std::vector<int>{4, 5, 6}));
  // Bounded: the seed first, then the nearest.
  EXPECT_EQ(Neighbourhood(g, seed, 2, 3).size(), 3U);
  EXPECT_EQ(Neighbourhood(g, seed, 2, 3).front(), 0);
  // Unknown seeds are ignored.
  const std::vector<int> bad{-1, 42};
  EXPECT_TRUE(Neighbourhood(g, bad, 2, 100).empty());
}

TEST(RenderDot, LabelsTheQdqEdgeAndOutlinesTheNodesOfFindings) {
  Report r;
  r.graph = std::make_shared<ModelGraph>(Chain());
  Finding f;
  f.rule = "op/relu-form";
  f.severity = Severity::kError;
  f.nodes = {"B"};
  r.findings.push_back(f);
  const std::string dot = RenderDot(r);
  EXPECT_NE(dot.find("digraph axqc"), std::string::npos);
  // The edge leaving Q carries its parameters on two lines.
  EXPECT_NE(dot.find("n1 -> n2 [id=\"edge-tQ--DQ\", class=\"qdq\", tooltip=\"tQ\", label=\"U8 "
                     "per-tensor\\nscale=0.5 zp=128\"]"),
            std::string::npos)
      << dot;
  EXPECT_NE(dot.find("id=\"node-B\", class=\"unit-none offending\""), std::string::npos) << dot;
  EXPECT_EQ(dot.find("id=\"node-C\", class=\"unit-none offending\""), std::string::npos);
  Report without;
  EXPECT_THROW(RenderDot(without), std::invalid_argument);
}

TEST(RenderHtml, RealExportHighlightsTheOffendingNodeInItsNeighbourhood) {
  const Report r = CheckWithGraph("defect_weight_u8_op17");
  ASSERT_EQ(r.verdict, Verdict::kNonConformant);
  ASSERT_FALSE(r.groups.empty());
  ASSERT_EQ(r.groups[0].rule, "role/weight-type");
  ASSERT_TRUE(r.graph);
  EXPECT_TRUE(r.graph->complete);
  EXPECT_EQ(r.graph->nodes.size(), r.model.node_count);
  const std::string html = RenderHtml(r);
  // The finding row and the rule page.
  EXPECT_NE(html.find("<tr class=\"finding row-error\" "
                      "id=\"f-role--weight-type--_conv_wq_DequantizeLinear\" "
                      "data-rule=\"role/weight-type\" data-node=\"/conv_wq/DequantizeLinear\""),
            std::string::npos);
  EXPECT_NE(html.find("href=\"docs/rules/role--weight-type.md\""), std::string::npos);
  // In group 0's view, the weight's DQ is drawn and outlined; its neighbours are drawn too.
  const auto groups = Groups(html);
  auto find = [&](const std::string& id) {
    return std::find_if(groups.begin(), groups.end(), [&](const Element& e) { return e.id == id; });
  };
  const auto dq = find("g0-node-/conv_wq/DequantizeLinear");
  ASSERT_NE(dq, groups.end());
  EXPECT_TRUE(HasClass(*dq, "offending"));
  EXPECT_TRUE(HasClass(*dq, "unit-qdq"));
  // The Conv it feeds (the finding's second node) is outlined as involved, in its conv-bn unit.
  const auto conv = find("g0-node-/Conv");
  ASSERT_NE(conv, groups.end());
  EXPECT_FALSE(HasClass(*conv, "offending"));
  EXPECT_TRUE(HasClass(*conv, "involved"));
  EXPECT_TRUE(HasClass(*conv, "unit-pattern")) << conv->cls;
  // The weight's Q/DQ edge carries its U8 parameters, and it and the DQ's edge into the Conv are
  // highlighted.
  const std::regex edge(
      R"re(<g id="g0-edge-/conv_wq/QuantizeLinear_output_0--/conv_wq/DequantizeLinear" class="edge qdq offending">(.|\n)*?U8 per-channel axis=0(.|\n)*?scale=\[(.|\n)*?zp=\[)re");
  EXPECT_TRUE(std::regex_search(Unescape(html), edge));
  const auto into_conv = find("g0-edge-/conv_wq/DequantizeLinear_output_0--/Conv");
  ASSERT_NE(into_conv, groups.end());
  EXPECT_TRUE(HasClass(*into_conv, "offending"));
  // The whole-model ownership map (a small model) draws every node once.
  std::size_t whole = 0;
  for (const auto& e : groups) whole += e.id.starts_with("m-node-") ? 1 : 0;
  EXPECT_EQ(whole, r.model.node_count);
}

// The precision map: each compute node under the type of its first quantized input.
TEST(RenderHtml, PrecisionMapGroupsTheNodesByTheTypeTheyRunAt) {
  using modelgen::ModelBuilder;
  using modelgen::QParams;
  ModelBuilder b(21, 10, "mixed");
  b.Input("x", onnx::TensorProto::FLOAT, {1, 8});
  const std::string x = b.QDQ("x", "x", QParams::U8());
  b.Node("Relu", {x}, {"r_out"}, {}, "relu8");
  const std::string r = b.QDQ("r_out", "r", QParams::U16());
  b.Node("Sigmoid", {r}, {"s_out"}, {}, "sig16");
  const std::string s = b.QDQ("s_out", "s", QParams::U16());
  b.Node("Softmax", {"x"}, {"f_out"}, {}, "soft_float");
  b.Output(s);
  b.Output("f_out");
  std::string bytes;
  b.Build().SerializeToString(&bytes);
  CheckOptions o;
  o.include_graph = true;
  const Report rep = CheckBytes(bytes, "mixed.onnx", o);
  const std::string html = RenderHtml(rep, HtmlOptions{});
  const auto at = html.find("<section id=\"precision\">");
  ASSERT_NE(at, std::string::npos);
  const std::string sec = html.substr(at, html.find("</section>", at) - at);
  EXPECT_NE(
      sec.find(
          "<tr data-precision=\"U8\"><td>U8</td><td>1</td><td>Relu 1</td><td><code>relu8</code>"),
      std::string::npos)
      << sec;
  EXPECT_NE(sec.find("<tr data-precision=\"U16\"><td>U16</td><td>1</td><td>Sigmoid "
                     "1</td><td><code>sig16</code>"),
            std::string::npos)
      << sec;
  EXPECT_NE(sec.find("<tr data-precision=\"float\"><td>float</td><td>1</td><td>Softmax "
                     "1</td><td><code>soft_float</code>"),
            std::string::npos)
      << sec;
  // Before the findings; a model without Q/DQ has no map.
  EXPECT_LT(at, html.find("id=\"findings\""));
  ModelBuilder f(21, 10, "float");
  f.Input("x", onnx::TensorProto::FLOAT, {1, 8});
  f.Node("Relu", {"x"}, {"y"}, {}, "relu");
  f.Output("y");
  f.Build().SerializeToString(&bytes);
  EXPECT_EQ(RenderHtml(CheckBytes(bytes, "float.onnx", o), HtmlOptions{}).find("id=\"precision\""),
            std::string::npos);
}

TEST(RenderHtml, IsSelfContained) {
  const Report r = CheckWithGraph("vit_manual_numbers_op13");
  HtmlOptions o;
  o.rules_url = "https://example.invalid/rules/";
  const std::string html = RenderHtml(r, o);
  // Links to the rule pages are the only references to another site; nothing is loaded.
  const std::regex external(R"re((src|href)\s*=\s*"(https?:)?//)re");
  std::string without_rule_links = html;
  for (std::size_t p = without_rule_links.find("href=\"https://example.invalid/rules/");
       p != std::string::npos;
       p = without_rule_links.find("href=\"https://example.invalid/rules/", p)) {
    without_rule_links.replace(p, 6, "ruleref=");
  }
  EXPECT_FALSE(std::regex_search(without_rule_links, external));
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_NE(html.find("href=\"https://example.invalid/rules/onnx--constant-node.md\""),
            std::string::npos);
  // Root causes come before the findings.
  EXPECT_LT(html.find("id=\"causes\""), html.find("id=\"findings\""));
  // Every group has its view.
  for (std::size_t k = 0; k < r.groups.size(); ++k) {
    EXPECT_NE(html.find("id=\"view-" + std::to_string(k) + "\""), std::string::npos) << k;
  }
}

TEST(GraphExcerpt, KeepsTheNeighbourhoodsOfTheFindingsAndRendersTheSameViews) {
  const Report full = CheckWithGraph("vit_manual_numbers_op13");
  HtmlOptions small;
  small.whole_model_max_nodes = 10;  // force an excerpt
  small.excerpt_whole_max_nodes = 10;
  const ModelGraph excerpt = GraphExcerpt(full, small);
  EXPECT_FALSE(excerpt.complete);
  EXPECT_EQ(excerpt.model_nodes, full.model.node_count);
  EXPECT_LT(excerpt.nodes.size(), full.graph->nodes.size());
  std::set<std::string> names;
  for (const auto& n : excerpt.nodes) names.insert(n.name);
  for (const auto& g : full.groups) {
    for (const auto& f : g.first) {
      if (!f.nodes.empty()) {
        EXPECT_TRUE(names.contains(f.nodes[0])) << f.nodes[0];
      }
    }
  }
  // Producers and tensors stay consistent.
  for (const auto& t : excerpt.tensors) {
    ASSERT_LT(t.producer, static_cast<int>(excerpt.nodes.size()));
    if (t.producer >= 0) {
      const auto& outs = excerpt.nodes[static_cast<std::size_t>(t.producer)].outputs;
      EXPECT_TRUE(std::any_of(outs.begin(), outs.end(), [&](int o) {
        return excerpt.tensors[static_cast<std::size_t>(o)].name == t.name;
      }));
    }
  }
  // The views drawn from the excerpt highlight the same nodes as from the whole graph.
  Report stored = full;
  stored.graph = std::make_shared<ModelGraph>(excerpt);
  auto offending = [](const std::string& html) {
    std::set<std::string> ids;
    for (const auto& e : Groups(html)) {
      if (HasClass(e, "offending") && !e.id.starts_with("m-")) ids.insert(e.id);
    }
    return ids;
  };
  const std::string from_full = RenderHtml(full, small);
  const std::string from_excerpt = RenderHtml(stored, small);
  EXPECT_FALSE(offending(from_full).empty());
  EXPECT_EQ(offending(from_full), offending(from_excerpt));
  EXPECT_NE(from_excerpt.find("this report carries an excerpt of the graph"), std::string::npos);
  // The small model itself is kept whole.
  EXPECT_TRUE(GraphExcerpt(full).complete);
}

TEST(RenderHtml, WithoutAGraphTheFindingsAreShownWithoutViews) {
  CheckOptions o;
  const Report r = CheckFile(Export("defect_weight_u8_op17").string(), o);
  ASSERT_FALSE(r.graph);
  const std::string html = RenderHtml(r);
  EXPECT_NE(html.find("data-rule=\"role/weight-type\""), std::string::npos);
  EXPECT_NE(html.find("id=\"no-graph\""), std::string::npos);
  EXPECT_EQ(html.find("<svg"), std::string::npos);
}

// A report of `n` findings of rule qdq/scale-value on nodes named by `name(i)`, each caused by the
// first one; grouped with at most 5 first locations.
Report ManyFindings(std::size_t n, const std::function<std::string(std::size_t)>& name) {
  Report r;
  r.model.file = "many.onnx";
  for (std::size_t i = 0; i < n; ++i) {
    Finding f;
    f.rule = "qdq/scale-value";
    f.severity = Severity::kError;
    f.section = "3.1";
    f.group_key = "scale is zero";
    f.message = "scale of " + name(i) + " is 0";
    f.nodes = {name(i)};
    f.id = "00000000000000" + std::to_string(10 + i % 90) + ":" + std::to_string(i);
    if (i > 0) f.cause = r.findings[0].id;
    r.findings.push_back(f);
  }
  FinalizeReport(r, 5);
  return r;
}

// Every id="..." of a document.
std::vector<std::string> Ids(const std::string& html) {
  std::vector<std::string> out;
  static const std::regex re(R"re( id="([^"]*)")re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back((*it)[1].str());
  }
  return out;
}

TEST(RenderHtml, EveryFindingHasAStableSanitisedUniqueAnchor) {
  // Hostile names: markup, quotes, spaces, non-ASCII, and names that sanitise to the same id.
  const std::vector<std::string> names{
      "conv/1", "conv_1", "<img src=x>\"'", "relu \xc3\xa9t\xc3\xa9", "conv/1", "", "a-2",
      "a",      "a"};
  const Report r = ManyFindings(names.size(), [&](std::size_t i) { return names[i]; });
  const std::string html = RenderHtml(r);
  const auto ids = Ids(html);
  const std::set<std::string> unique(ids.begin(), ids.end());
  EXPECT_EQ(unique.size(), ids.size()) << "every id of the page is unique";
  std::vector<std::string> rows;
  static const std::regex row(R"re(<tr class="finding[^"]*" id="([^"]*)")re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), row); it != std::sregex_iterator();
       ++it) {
    rows.push_back((*it)[1].str());
  }
  EXPECT_EQ(rows,
            (std::vector<std::string>{
                "f-qdq--scale-value--conv_1", "f-qdq--scale-value--conv_1-2",
                "f-qdq--scale-value--_img_src_x___", "f-qdq--scale-value--relu___t__",
                "f-qdq--scale-value--conv_1-3", "f-qdq--scale-value", "f-qdq--scale-value--a-2",
                "f-qdq--scale-value--a", "f-qdq--scale-value--a-3"}));
  for (const auto& id : rows) {
    EXPECT_TRUE(std::regex_match(id, std::regex("[A-Za-z0-9._-]+"))) << id;
    EXPECT_NE(html.find("<a class=\"fid\" href=\"#" + id + "\""), std::string::npos) << id;
  }
  // Model text only ever escaped.
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x&gt;&quot;&apos;"), std::string::npos);
  // The same report renders the same anchors (the page is deterministic).
  EXPECT_EQ(html, RenderHtml(r));
}

TEST(RenderHtml, EveryFindingIsListedAndCausedByLinksToTheCause) {
  const Report r = ManyFindings(120, [](std::size_t i) { return "node" + std::to_string(i); });
  ASSERT_EQ(r.groups.size(), 1u);
  ASSERT_EQ(r.groups[0].first.size(), 5u);
  const std::string html = RenderHtml(r);
  // 5 rows in the table, the other 115 in a <details> below it: every finding has its row.
  const auto details = html.find(
      "<details class=\"more\" id=\"more-0\"><summary>&hellip; and 115 "
      "more findings of this group</summary>");
  ASSERT_NE(details, std::string::npos) << html;
  std::size_t rows = 0;
  for (std::size_t p = html.find("<tr class=\"finding"); p != std::string::npos;
       p = html.find("<tr class=\"finding", p + 1)) {
    ++rows;
    EXPECT_EQ(p > details, rows > 5) << rows;
  }
  EXPECT_EQ(rows, 120u);
  for (std::size_t i = 0; i < 120; ++i) {
    EXPECT_NE(html.find("id=\"f-qdq--scale-value--node" + std::to_string(i) + "\""),
              std::string::npos)
        << i;
  }
  // "caused by" names the cause's rule and node and links to its row.
  EXPECT_NE(html.find("(caused by <a class=\"caused-by\" href=\"#f-qdq--scale-value--node0\">"
                      "qdq/scale-value at <code>node0</code></a>)"),
            std::string::npos);
  // The rule's summary and fix from the catalog, and the table of contents with the causes.
  const RuleInfo* info = FindRule("qdq/scale-value");
  ASSERT_NE(info, nullptr);
  EXPECT_NE(html.find("<p class=\"rule-info\"><b>Rule:</b> "), std::string::npos);
  EXPECT_NE(html.find("<b>Fix:</b> "), std::string::npos);
  const auto toc = html.find("<nav id=\"toc\">");
  ASSERT_NE(toc, std::string::npos);
  EXPECT_LT(toc, html.find("<section id=\"causes\">"));
  EXPECT_NE(html.find("<li><a href=\"#cause-1\">cause 1</a>: qdq/scale-value</li>"),
            std::string::npos);
  EXPECT_NE(html.find("<div class=\"cause\" id=\"cause-1\""), std::string::npos);
  EXPECT_NE(html.find("<li><a href=\"#group-0\">qdq/scale-value</a> &times;120"),
            std::string::npos);
  // The cause block links to its root finding.
  EXPECT_NE(html.find("e.g. <a class=\"root\" href=\"#f-qdq--scale-value--node0\">"),
            std::string::npos);
  // At most 5000 folded rows per group; the page says where the others are.
  const Report huge = ManyFindings(5020, [](std::size_t i) { return "n" + std::to_string(i); });
  const std::string capped = RenderHtml(huge);
  EXPECT_NE(capped.find("(the first 5000 listed here)"), std::string::npos);
  EXPECT_NE(capped.find("The other 15 are in the JSON report"), std::string::npos);
}

TEST(RenderDot, AQdqNodeThatFansOutLabelsOneEdgeOnly) {
  // Q feeding three DQs (one per consumer, as exporters write it): one label, not three.
  ModelGraph g;
  g.complete = true;
  auto node = [&](const std::string& name, const std::string& op, std::vector<int> in,
                  const std::string& quant = "") {
    GraphNode n;
    n.name = name;
    n.op_type = op;
    n.inputs = std::move(in);
    n.quant = quant;
    n.outputs = {static_cast<int>(g.tensors.size())};
    GraphTensor t;
    t.name = "t_" + name;
    t.producer = static_cast<int>(g.nodes.size());
    g.tensors.push_back(t);
    g.nodes.push_back(n);
    return n.outputs[0];
  };
  const int a = node("A", "Conv", {});
  const int q = node("Q", "QuantizeLinear", {a}, "U8 per-tensor scale=0.5 zp=128");
  for (int i = 0; i < 3; ++i) {
    const int dq =
        node("DQ" + std::to_string(i), "DequantizeLinear", {q}, "U8 per-tensor scale=0.5 zp=128");
    node("R" + std::to_string(i), "Relu", {dq});
  }
  g.model_nodes = g.nodes.size();
  Report r;
  r.graph = std::make_shared<ModelGraph>(g);
  const std::string dot = RenderDot(r);
  std::size_t labels = 0;
  for (std::size_t p = dot.find("label=\"U8 per-tensor"); p != std::string::npos;
       p = dot.find("label=\"U8 per-tensor", p + 1)) {
    ++labels;
  }
  EXPECT_EQ(labels, 1u) << dot;
  // The other edges keep the parameters in their tooltip and their class.
  EXPECT_NE(dot.find("id=\"edge-t_Q--DQ1\", class=\"qdq\", tooltip=\"t_Q (U8 per-tensor "
                     "scale=0.5 zp=128)\""),
            std::string::npos)
      << dot;
}

// A residual network of `blocks` blocks: x -> Conv -> Relu -> Conv -> Add(x, .), with Q/DQ pairs
// between the compute nodes.
ModelGraph Residual(std::size_t blocks) {
  ModelGraph g;
  g.complete = true;
  auto node = [&](const std::string& name, const std::string& op, std::vector<int> in,
                  const std::string& quant = "") {
    GraphNode n;
    n.name = name;
    n.op_type = op;
    n.inputs = std::move(in);
    n.quant = quant;
    n.outputs = {static_cast<int>(g.tensors.size())};
    GraphTensor t;
    t.name = name + "_out";
    t.producer = static_cast<int>(g.nodes.size());
    g.tensors.push_back(t);
    g.nodes.push_back(n);
    return n.outputs[0];
  };
  const char* kQuant = "U8 per-tensor scale=0.0235 zp=128";
  auto qdq = [&](const std::string& name, int t) {
    return node(name + "/dq", "DequantizeLinear",
                {node(name + "/q", "QuantizeLinear", {t}, kQuant)}, kQuant);
  };
  int x = node("stem", "Conv", {});
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::string p = "/block" + std::to_string(b);
    const int c1 = node(p + "/conv1", "Conv", {qdq(p + "/in", x)});
    const int r1 = node(p + "/relu", "Relu", {c1});
    const int c2 = node(p + "/conv2", "Conv", {qdq(p + "/mid", r1)});
    x = node(p + "/add", "Add", {x, c2});
  }
  g.model_nodes = g.nodes.size();
  return g;
}

TEST(RenderHtml, ALargerModelHasAMapWithItsChainsCollapsed) {
  Report r;
  r.model.file = "residual.onnx";
  r.graph = std::make_shared<ModelGraph>(Residual(50));  // 50 * 8 + 1 = 401 nodes
  ASSERT_GT(r.graph->nodes.size(), HtmlOptions{}.whole_model_max_nodes);
  Finding f;
  f.rule = "qdq/scale-value";
  f.group_key = "scale is zero";
  f.message = "scale is 0";
  f.nodes = {"/block7/relu"};
  r.findings.push_back(f);
  FinalizeReport(r, 5);
  const std::string html = RenderHtml(r);
  ASSERT_NE(html.find("<section id=\"model\"><h2>Map of the whole model, chains collapsed</h2>"),
            std::string::npos);
  ASSERT_NE(html.find("id=\"view-model\""), std::string::npos) << "the map is drawn";
  std::size_t chains = 0;
  std::size_t boxes = 0;
  bool outlined = false;
  for (const auto& e : Groups(html)) {
    if (!e.id.starts_with("c-node-")) continue;
    ++boxes;
    chains += HasClass(e, "chain") ? 1 : 0;
    if (e.id == "c-node-/block7/relu") outlined = HasClass(e, "offending") && !HasClass(e, "chain");
  }
  // Per block: conv1 -> relu -> conv2 is one chain, add a box of its own; block 7's relu (a
  // finding's node) breaks its chain into conv1, relu, conv2.
  EXPECT_EQ(boxes, 1 + 50 * 2 + 2u);
  EXPECT_EQ(chains, 49u);
  EXPECT_TRUE(outlined);
  EXPECT_NE(html.find("<li><a href=\"#model\">Map of the whole model</a>"), std::string::npos);

  // What the service stores with the report keeps all 401 nodes (up to 3,000), so the server's
  // page draws the same collapsed map; a graph over that limit is cut to the neighbourhoods.
  const ModelGraph stored = GraphExcerpt(r);
  EXPECT_TRUE(stored.complete);
  EXPECT_EQ(stored.nodes.size(), 401u);
  HtmlOptions limit;
  limit.excerpt_whole_max_nodes = 400;
  const ModelGraph cut = GraphExcerpt(r, limit);
  EXPECT_FALSE(cut.complete);
  EXPECT_LT(cut.nodes.size(), 100u);
}

TEST(RenderHtml, RepairCommandsOnServerPagesNameTheModelByItsFileName) {
  Report r = CheckWithGraph("vit_manual_numbers_op13");
  std::string rewrite;
  for (const auto& c : GroupCauses(r)) {
    if (!c.hint.rewrite.empty()) rewrite = c.hint.rewrite;
  }
  ASSERT_FALSE(rewrite.empty()) << "the model has a cause with a repair";
  const std::string local = RenderHtml(r);
  EXPECT_NE(local.find("Repair: <code>axqc fix " + r.model.file + " -o FIXED.onnx --only " +
                       rewrite + "</code>"),
            std::string::npos);
  HtmlOptions server;
  server.repair_by_file_name = true;
  for (const auto& [file, shown] : std::vector<std::pair<std::string, std::string>>{
           {"org/classifier@1a2b3c4d5e6f", "model.onnx"},
           {"detector/3", "model.onnx"},
           {"/srv/models/team a/vit.onnx", "vit.onnx"}}) {
    r.model.file = file;
    const std::string html = RenderHtml(r, server);
    EXPECT_NE(
        html.find("Repair (with the model saved as <code>" + shown + "</code>): <code>axqc fix " +
                  shown + " -o FIXED.onnx --only " + rewrite + "</code>"),
        std::string::npos)
        << file;
  }
  r.model.file = "vit.onnx";  // already a file name: said as is
  EXPECT_NE(RenderHtml(r, server).find("Repair: <code>axqc fix vit.onnx -o FIXED.onnx"),
            std::string::npos);
}

TEST(RuleUrl, AppendsThePageOrFillsItIn) {
  EXPECT_EQ(RuleUrl("docs/rules/", "qdq/scale-value"), "docs/rules/qdq--scale-value.md");
  EXPECT_EQ(RuleUrl("https://docs.example.com/rules/{page}/", "op/output-not-quantized"),
            "https://docs.example.com/rules/op--output-not-quantized/");
  EXPECT_EQ(RuleUrl("https://x.test/{page}#{page}", "onnx/constant-node"),
            "https://x.test/onnx--constant-node#onnx--constant-node");
}

TEST(RenderHtml, TenThousandNodesStayAReasonableSize) {
  Report r;
  r.model.file = "residual10k.onnx";
  r.graph = std::make_shared<ModelGraph>(Residual(1250));  // 10 001 nodes
  for (std::size_t b = 0; b < 1250; b += 5) {
    Finding f;
    f.rule = "qdq/scale-value";
    f.group_key = "scale is zero";
    f.message = "scale of /block" + std::to_string(b) + "/relu is 0";
    f.nodes = {"/block" + std::to_string(b) + "/relu"};
    f.id = "0123456789abcdef:" + std::to_string(b);
    r.findings.push_back(f);
  }
  FinalizeReport(r, 5);
  const std::string html = RenderHtml(r);
  // Too many boxes even with the chains collapsed: the page says so, the explorer has every node.
  EXPECT_NE(html.find("with its linear chains collapsed the model's 10001 nodes are still"),
            std::string::npos);
  EXPECT_NE(html.find("id=\"axqc-graph\""), std::string::npos);
  const auto ids = Ids(html);
  EXPECT_EQ(ids.size(), std::set<std::string>(ids.begin(), ids.end()).size());
  // 250 findings, 5000 compute nodes in the explorer: well under 2 MB (measured: see
  // docs/report-html.md).
  EXPECT_LT(html.size(), 2u << 20) << html.size();
  std::cout << "[ size ] HTML report of 10001 nodes, 250 findings: " << html.size() << " bytes\n";
}

}  // namespace
}  // namespace axqc::test
