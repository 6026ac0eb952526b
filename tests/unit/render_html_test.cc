// The pictures of a report (axqc/render_graph.h): neighbourhoods, excerpts, the DOT graph and the
// HTML report of real exports (tests/data/real_exports): highlighted nodes, Q/DQ edge labels,
// rule links, nothing fetched from elsewhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

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
  EXPECT_NE(html.find("<tr class=\"finding row-error\" data-rule=\"role/weight-type\" "
                      "data-node=\"/conv_wq/DequantizeLinear\""),
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

}  // namespace
}  // namespace axqc::test
