// Model text in the pictures of a report (axqc/render_graph.h, docs/security.md "Report
// pictures"): node and tensor names that try to become DOT attributes (a javascript: link, an
// image Graphviz would open), markup, escapes, control characters and very long names stay text
// in the DOT graph and the HTML report; Graphviz's SVG keeps only what the renderer writes; the
// HTML report's Content-Security-Policy; the layout budget of dense models.
#include <fcntl.h>
#include <graphviz/cgraph.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "axqc/render_graph.h"
#include "axqc/sha256.h"
#include "dot_fuzz_input.h"
#include "render_dot.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

// A chain of nodes with these names (each consumes the previous one's output), an error finding
// on the first and a group for it.
Report Chain(const std::vector<std::string>& names, const std::string& op = "Relu") {
  Report r;
  r.verdict = Verdict::kNonConformant;
  r.tool_version = "test";
  r.model.file = "m.onnx";
  auto g = std::make_shared<ModelGraph>();
  g->complete = true;
  for (std::size_t i = 0; i < names.size(); ++i) {
    GraphNode n;
    n.name = names[i];
    n.op_type = op;
    if (i > 0) n.inputs = {static_cast<int>(i - 1)};
    n.outputs = {static_cast<int>(i)};
    g->nodes.push_back(n);
    GraphTensor t;
    t.name = "t:" + names[i];
    t.producer = static_cast<int>(i);
    g->tensors.push_back(t);
  }
  g->model_nodes = names.size();
  Finding f;
  f.rule = "op/relu-form";
  f.severity = Severity::kError;
  f.nodes = {names.front()};
  f.message = "m";
  r.findings.push_back(f);
  FindingGroup grp;
  grp.rule = f.rule;
  grp.count = 1;
  grp.first = {f};
  r.groups.push_back(grp);
  r.summary.errors = 1;
  r.graph = std::move(g);
  return r;
}

const std::vector<std::string>& HostileNames() {
  static const std::vector<std::string> names{
      "\",href=\"javascript:alert(1)",
      "\",image=\"/etc/hostname",
      "x\"]; evil [URL=\"javascript:alert(2)\", label=\"",
      "line\nbreak\r\"];\nn9 [image=\"/etc/passwd",
      "back\\slash\\N\\G\\l\\",
      "<script>alert(3)</script>&amp;&lt;b&gt;",
      "} digraph { x",
      "{",
      std::string(100000, 'L') + "\",href=\"javascript:alert(4)",
      std::string("nul-free \x01\x1f\x7f control"),
      "\xff\xfe not utf-8 \xc3"};
  return names;
}

TEST(DotQuote, EscapesEveryByteGraphvizWouldRead) {
  EXPECT_EQ(detail::DotQuote("a\"b\\c&d\ne\x01"
                             "f"),
            "\"a\\\"b\\\\c&amp;d\\ne f\"");
  EXPECT_EQ(detail::DotQuote("trailing\\"), "\"trailing\\\\\"");
  EXPECT_EQ(detail::DotText("a\nb\tc\x7f"
                            "d"),
            "a b c d");
  EXPECT_EQ(detail::DotText("\xc2\x85"), " ");  // C1 control character
  EXPECT_EQ(detail::DotText("\xff"
                            "a\xe2\x82"),
            "\xEF\xBF\xBD"
            "a\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(detail::DotText("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(detail::DotText("caf\xc3\xa9 \xf0\x9f\x99\x82"), "caf\xc3\xa9 \xf0\x9f\x99\x82");
}

TEST(RenderDot, HostileNamesStayQuotedValues) {
  const Report r = Chain(HostileNames());
  const std::string dot = RenderDot(r);
  // Graphviz reads exactly the renderer's nodes, edges and attributes back.
  EXPECT_EQ(fuzz::DotProblems(r), "") << dot.substr(0, 4000);
  agseterr(AGMAX);
  Agraph_t* g = agmemread(dot.c_str());
  ASSERT_NE(g, nullptr);
  for (const char* attr : {"href", "URL", "image", "imagepath", "shapefile", "fontpath"}) {
    EXPECT_EQ(agattr(g, AGNODE, const_cast<char*>(attr), nullptr), nullptr) << attr;
    EXPECT_EQ(agattr(g, AGEDGE, const_cast<char*>(attr), nullptr), nullptr) << attr;
    EXPECT_EQ(agattr(g, AGRAPH, const_cast<char*>(attr), nullptr), nullptr) << attr;
  }
  EXPECT_EQ(agnnodes(g), static_cast<int>(HostileNames().size()));
  // The first node's label is its op type and its name, as text.
  Agnode_t* n0 = agnode(g, const_cast<char*>("n0"), 0);
  ASSERT_NE(n0, nullptr);
  EXPECT_EQ(fuzz::DotValueText(agget(n0, const_cast<char*>("label"))),
            "Relu\n\",href=\"javascript:alert(1)");
  Agnode_t* n4 = agnode(g, const_cast<char*>("n4"), 0);
  ASSERT_NE(n4, nullptr);
  EXPECT_EQ(fuzz::DotValueText(agget(n4, const_cast<char*>("label"))),
            "Relu\nback\\slash\\N\\G\\l\\");
  agclose(g);
  // The first line is a comment of one line whatever the file name.
  Report named = Chain({"a"});
  named.model.file = "x\ndigraph { y [image=\"/etc/passwd\"] }\n";
  const std::string head = RenderDot(named);
  EXPECT_EQ(head.find('\n'), head.find("\ndigraph axqc {"));
  EXPECT_EQ(fuzz::DotProblems(named), "");
}

TEST(RenderHtml, HostileNamesNeverBecomeLinksImagesOrMarkup) {
  const Report r = Chain(HostileNames());
  HtmlOptions o;
  o.rules_url.clear();
  const std::string html = RenderHtml(r, o);
  EXPECT_EQ(fuzz::HtmlProblems(r, o), "");
  EXPECT_EQ(html.find("href=\"javascript:"), std::string::npos);
  EXPECT_EQ(html.find("xlink:href"), std::string::npos);
  EXPECT_EQ(html.find("<image"), std::string::npos);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  // The names are shown as text: in the findings table, escaped once.
  EXPECT_NE(html.find("<td class=\"mono\">&quot;,href=&quot;javascript:alert(1)</td>"),
            std::string::npos);
  // The finding's view was drawn (the hostile names did not break the layout).
  EXPECT_NE(html.find("id=\"view-0\""), std::string::npos);
  // In the SVG the name is the node's text (Graphviz's XML escaping of the label).
  EXPECT_NE(html.find("&quot;,href=&quot;javascript:alert(1)</text>"), std::string::npos);
}

std::string Base64(const std::string& bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size())
      v |= static_cast<unsigned>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 2]);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? k[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? k[v & 63] : '=';
  }
  return out;
}

TEST(RenderHtml, ContentSecurityPolicyAllowsOnlyTheReportsOwnScript) {
  const std::string html = RenderHtml(Chain({"a", "b"}));
  const std::string csp = HtmlReportCsp();
  EXPECT_NE(html.find("<meta http-equiv=\"Content-Security-Policy\" content=\"" + csp + "\">"),
            std::string::npos);
  EXPECT_LT(html.find("Content-Security-Policy"), html.find("<style>"));
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(csp.find("style-src 'unsafe-inline';"), std::string::npos);
  EXPECT_EQ(csp.find("script-src 'unsafe-inline'"), std::string::npos);
  // The hash names the inline script (the last <script> element) byte for byte.
  const auto open = html.rfind("<script>");
  const auto close = html.find("</script>", open);
  ASSERT_NE(open, std::string::npos);
  const std::string script = html.substr(open + 8, close - open - 8);
  std::string digest;
  const std::string hex = Sha256Hex(script);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    digest += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  EXPECT_EQ(HtmlReportScriptHash(), "'sha256-" + Base64(digest) + "'");
  EXPECT_NE(csp.find("script-src " + HtmlReportScriptHash() + ";"), std::string::npos);
}

TEST(RenderHtml, GraphvizNeverOpensAFileNamedByTheModel) {
  // A FIFO: opening it for reading blocks until a writer comes, so a layout that opened it as an
  // image would hang. The render runs on another thread; if it hangs, the test opens the FIFO for
  // writing itself (releasing the reader) and fails.
  const fs::path dir = fs::temp_directory_path() / ("axqc-fifo-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path fifo = dir / "image.png";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Report r = Chain({"\",image=\"" + fifo.string(), "x\",shapefile=\"" + fifo.string(), "y"});
  auto render = std::async(std::launch::async, [&r] { return RenderHtml(r); });
  const bool finished = render.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  if (!finished) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  const std::string html = render.get();
  fs::remove_all(dir);
  ASSERT_TRUE(finished) << "the layout opened " << fifo;
  EXPECT_NE(html.find("id=\"view-0\""), std::string::npos);
  EXPECT_EQ(html.find("<image"), std::string::npos);
}

TEST(SanitizeSvg, KeepsOnlyWhatTheRendererWrites) {
  EXPECT_EQ(detail::SanitizeSvg(
                "<svg width=\"1\" onload=\"x()\"><!-- n1 --><g id=\"a\" class=\"node\">"
                "<a xlink:href=\"javascript:x()\" xlink:title=\"t &lt;b&gt;\" target=\"_top\">"
                "<image xlink:href=\"/etc/passwd\" width=\"9\"/><text x=\"1\" "
                "style=\"fill:red\" href=\"#\">hi &amp; bye</text></a>"
                "<script>alert(1)</script><foreignObject><div>d</div></foreignObject></g></svg>"),
            "<svg width=\"1\"><g id=\"a\" class=\"node\"><a xlink:title=\"t &lt;b&gt;\">"
            "<text x=\"1\">hi &amp; bye</text></a>alert(1)d</g></svg>");
}

// 295 Sum nodes, each summing the outputs of up to 16 earlier nodes: a few KB of names, thousands
// of edges; Graphviz's dot would lay the whole graph out for minutes.
Report DenseSums() {
  std::vector<std::string> names;
  for (int i = 0; i < 295; ++i) names.push_back("s" + std::to_string(i));
  Report r = Chain(names, "Sum");
  auto g = std::make_shared<ModelGraph>(*r.graph);
  for (std::size_t i = 1; i < g->nodes.size(); ++i) {
    auto& in = g->nodes[i].inputs;
    in.clear();
    for (std::size_t k = 0; k < 16 && k < i; ++k)
      in.push_back(static_cast<int>((i * 7919 + k * 104729) % i));
  }
  r.findings[0].nodes = {"s200"};
  r.groups[0].first[0].nodes = {"s200"};
  r.graph = std::move(g);
  return r;
}

TEST(RenderHtml, DenseModelsStayWithinTheLayoutBudget) {
  const Report r = DenseSums();
  std::vector<int> all(r.graph->nodes.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  ASSERT_GT(detail::CountEdges(*r.graph, all), 4000U);
  const auto start = std::chrono::steady_clock::now();
  const std::string html = RenderHtml(r);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 20.0);
  // The whole model is not drawn; the page says why; the explorer is there.
  EXPECT_NE(html.find("id=\"budget-model\">Not drawn: the model's 295 nodes have"),
            std::string::npos);
  EXPECT_EQ(html.find("id=\"view-model\""), std::string::npos);
  EXPECT_NE(html.find("id=\"explorer\""), std::string::npos);
  // The finding's view is narrowed to fewer nodes and says so.
  EXPECT_NE(html.find("id=\"budget-0\">This view shows "), std::string::npos);
  EXPECT_NE(html.find("id=\"view-0\""), std::string::npos);
  // Over a tighter budget the view narrows down to its seed.
  HtmlOptions o;
  o.view_max_edges = 0;
  const std::string tight = RenderHtml(r, o);
  EXPECT_NE(tight.find("id=\"budget-0\">This view shows 1 of the "), std::string::npos);
  // With no layout time left, views are tables too.
  HtmlOptions none;
  none.layout_seconds = 0;
  const std::string timed = RenderHtml(r, none);
  EXPECT_NE(timed.find("took longer than the layout budget"), std::string::npos);
  EXPECT_NE(timed.find("<table class=\"nodes\">"), std::string::npos);
  EXPECT_EQ(timed.find("<svg"), std::string::npos);
}

}  // namespace
}  // namespace axqc::test
