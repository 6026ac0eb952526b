// The input of the `dot` fuzz target (fuzz_dot.cc) and the invariants it asserts, shared with the
// replay of its regressions (tests/unit/dot_fuzz_regressions_test.cc).
//
// Bytes -> a Report with a graph of 1..8 nodes whose names, op types, tensor names, Q/DQ
// parameters, unit kind and model file name are fuzzed (any bytes: quotes, backslashes, control
// characters, invalid UTF-8, markup; a name can be repeated to tens of KB), wired to earlier
// nodes, with an error finding on one node so that the HTML report draws a finding view.
//
// Invariants (DotProblems / HtmlProblems return what is violated, "" when nothing is):
//   DOT  - Graphviz parses RenderDot's output (agmemread); it has exactly the graph's nodes
//          ("n<index>") and edges; every attribute name is one BuildDot writes
//          (DotAttributeNames: no href, URL, image, ...); every node's id reads back as
//          "node-" + its name (through IdText).
//   HTML - every '<' of RenderHtml's output outside <script>/<style> starts an element of the
//          report's own vocabulary, with no href/src/xlink:href/on* attribute (so no
//          javascript: link) but in-page links href="#<[A-Za-z0-9._-] id>", and no style
//          attribute but the legend's; exactly the report's two
//          scripts; the CSP meta tag.
#pragma once

#include <graphviz/cgraph.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/render_graph.h"
#include "axqc/report.h"
#include "render_dot.h"

namespace axqc::fuzz {

class DotInput {
 public:
  explicit DotInput(std::string_view bytes) : b_(bytes) {}
  std::uint8_t Byte() { return p_ < b_.size() ? static_cast<std::uint8_t>(b_[p_++]) : 0; }
  // A length-prefixed string; a length byte of 0xFF repeats the next string up to ~48 KB.
  std::string Text() {
    std::size_t n = Byte();
    std::size_t repeat = 1;
    if (n == 0xFF) {
      repeat = 1 + std::size_t{Byte()} * 8;
      n = Byte();
    }
    n = std::min(n, b_.size() - p_);
    std::string one(b_.substr(p_, n));
    p_ += n;
    std::string out;
    for (std::size_t i = 0; i < repeat && out.size() < 48 * 1024; ++i) out += one;
    return out;
  }

 private:
  std::string_view b_;
  std::size_t p_ = 0;
};

inline Report DotFuzzReport(std::string_view bytes) {
  static const char* kOps[] = {"QuantizeLinear", "DequantizeLinear", "Conv", "Sum", "Relu",
                               "MatMul"};
  DotInput in(bytes);
  Report r;
  r.verdict = Verdict::kNonConformant;
  r.tool_version = "fuzz";
  r.model.file = in.Text();
  auto g = std::make_shared<ModelGraph>();
  g->complete = true;
  UnitInfo unit;
  unit.id = 0;
  unit.kind = in.Text();
  unit.mode = (in.Byte() & 1) != 0 ? "unquantized" : "quantized";
  const std::size_t n = 1 + in.Byte() % 8;
  for (std::size_t i = 0; i < n; ++i) {
    GraphNode node;
    const std::uint8_t op = in.Byte();
    node.op_type = op < 200 ? kOps[op % 6] : in.Text();
    node.name = in.Text();
    if (node.op_type == "QuantizeLinear" || node.op_type == "DequantizeLinear") {
      node.quant = in.Text();
    } else if ((op & 0x10) != 0) {
      node.unit = 0;
      unit.nodes.push_back(node.name);
    }
    const std::size_t inputs = in.Byte() % 4;
    for (std::size_t k = 0; k < inputs && i > 0; ++k) {
      node.inputs.push_back(static_cast<int>(in.Byte() % i));  // output tensor of node j is j
    }
    node.outputs = {static_cast<int>(i)};
    GraphTensor t;
    t.name = in.Text();
    t.producer = static_cast<int>(i);
    g->tensors.push_back(t);
    g->nodes.push_back(node);
  }
  g->model_nodes = n;
  r.units.push_back(unit);
  Finding f;
  f.rule = "op/relu-form";
  f.severity = Severity::kError;
  const std::size_t at = in.Byte() % n;
  f.nodes = {g->nodes[at].name};
  if (n > 1) f.nodes.push_back(g->nodes[(at + 1) % n].name);
  f.tensors = {g->tensors[at].name};
  f.message = in.Text();
  r.findings.push_back(f);
  FindingGroup grp;
  grp.rule = f.rule;
  grp.summary = f.message;
  grp.count = 1;
  grp.first = {f};
  r.groups.push_back(grp);
  r.summary.errors = 1;
  r.graph = std::move(g);
  return r;
}

// A DOT value as Graphviz's parser returns it (escString still escaped) -> the text it shows.
inline std::string DotValueText(std::string_view v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\\' && i + 1 < v.size()) {
      out += v[i + 1] == 'n' ? '\n' : v[i + 1];
      ++i;
    } else if (v.substr(i).starts_with("&amp;")) {
      out += '&';
      i += 4;
    } else {
      out += v[i];
    }
  }
  return out;
}

inline std::string DotProblems(const Report& r) {
  const std::string dot = RenderDot(r);
  agseterr(AGMAX);
  Agraph_t* g = agmemread(dot.c_str());
  if (g == nullptr) return "Graphviz cannot parse the DOT output";
  std::string problems;
  for (int kind : {AGRAPH, AGNODE, AGEDGE}) {
    for (Agsym_t* s = agnxtattr(g, kind, nullptr); s != nullptr; s = agnxtattr(g, kind, s)) {
      if (!detail::DotAttributeNames().contains(s->name)) {
        problems += "attribute not written by the renderer: " + std::string(s->name) + "\n";
      }
    }
  }
  const ModelGraph& mg = *r.graph;
  if (static_cast<std::size_t>(agnnodes(g)) != mg.nodes.size()) {
    problems += "node count " + std::to_string(agnnodes(g)) +
                " != " + std::to_string(mg.nodes.size()) + "\n";
  }
  std::vector<int> all(mg.nodes.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  if (static_cast<std::size_t>(agnedges(g)) != detail::CountEdges(mg, all)) {
    problems += "edge count " + std::to_string(agnedges(g)) + "\n";
  }
  for (std::size_t i = 0; i < mg.nodes.size(); ++i) {
    const std::string id = "n" + std::to_string(i);
    Agnode_t* node = agnode(g, const_cast<char*>(id.c_str()), 0);
    if (node == nullptr) {
      problems += "no node " + id + "\n";
      continue;
    }
    const char* v = agget(node, const_cast<char*>("id"));
    const std::string want = "node-" + detail::IdText(mg.nodes[i].name);
    if (v == nullptr || DotValueText(v) != want) {
      problems += "node " + id + " id does not read back as its name\n";
    }
  }
  agclose(g);
  return problems;
}

inline std::string HtmlProblems(const Report& r, const HtmlOptions& o) {
  static const std::set<std::string_view> kElements{
      "!DOCTYPE", "html",  "head",  "meta",  "title",   "style",    "body",   "header",  "div",
      "h1",       "h2",    "h3",    "span",  "code",    "b",        "br",     "main",    "section",
      "p",        "table", "thead", "tbody", "tr",      "th",       "td",     "input",   "ul",
      "script",   "i",     "svg",   "g",     "polygon", "polyline", "path",   "ellipse", "text",
      "a",        "tspan", "nav",   "ol",    "li",      "details",  "summary"};
  const std::string html = RenderHtml(r, o);
  std::string problems;
  if (html.find("<meta http-equiv=\"Content-Security-Policy\" content=\"" + HtmlReportCsp() +
                "\">") == std::string::npos) {
    problems += "no CSP meta tag\n";
  }
  std::size_t scripts = 0;
  std::size_t p = 0;
  while ((p = html.find('<', p)) != std::string::npos) {
    std::size_t q = p + 1;
    const bool closing = q < html.size() && html[q] == '/';
    if (closing) ++q;
    std::size_t e = q;
    while (e < html.size() && html[e] != ' ' && html[e] != '>' && html[e] != '/' &&
           html[e] != '\n') {
      ++e;
    }
    const std::string name = html.substr(q, e - q);
    if (!kElements.contains(name)) {
      problems += "element <" + name.substr(0, 40) + "> at " + std::to_string(p) + "\n";
      break;
    }
    // The tag's attributes: up to the first '>' outside quotes.
    std::size_t t = e;
    char quote = 0;
    std::string attrs;
    while (t < html.size() && (quote != 0 || html[t] != '>')) {
      if (quote == 0 && (html[t] == '"' || html[t] == '\'')) {
        quote = html[t];
      } else if (quote != 0 && html[t] == quote) {
        quote = 0;
      }
      attrs += html[t];
      ++t;
    }
    // The report's in-page links (the contents, the findings' anchors): href="#<id>" with an id
    // of [A-Za-z0-9._-] only. Model text is escaped ('"' is &quot;), so this sequence is always
    // the renderer's own; it is taken out before the attribute names are checked.
    for (std::size_t h = attrs.find(" href=\"#"); h != std::string::npos;
         h = attrs.find(" href=\"#", h)) {
      std::size_t v = h + 8;
      while (v < attrs.size() && (std::isalnum(static_cast<unsigned char>(attrs[v])) != 0 ||
                                  attrs[v] == '.' || attrs[v] == '_' || attrs[v] == '-')) {
        ++v;
      }
      if (v > h + 8 && v < attrs.size() && attrs[v] == '"') {
        attrs.erase(h, v + 1 - h);
      } else {
        ++h;
      }
    }
    std::string lower = attrs;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    // Attribute names only: values are quoted and entity-escaped, so look outside quotes.
    std::string names;
    quote = 0;
    for (char c : lower) {
      if (quote == 0 && (c == '"' || c == '\'')) {
        quote = c;
        names += ' ';
      } else if (quote != 0 && c == quote) {
        quote = 0;
      } else if (quote == 0) {
        names += c;
      }
    }
    std::size_t k = 0;
    while (k < names.size()) {
      while (k < names.size() && std::isspace(static_cast<unsigned char>(names[k])) != 0) ++k;
      std::size_t end = k;
      while (end < names.size() && names[end] != '=' &&
             std::isspace(static_cast<unsigned char>(names[end])) == 0) {
        ++end;
      }
      const std::string attr = names.substr(k, end - k);
      if (attr == "href" || attr == "src" || attr.ends_with(":href") || attr.starts_with("on") ||
          (attr == "style" && name != "i")) {
        problems += "attribute " + attr + " in <" + name + ">\n";
      }
      k = end + 1;
    }
    p = t;
    if (!closing && (name == "script" || name == "style")) {
      if (name == "script") ++scripts;
      const std::size_t end = html.find("</" + name + ">", p);
      if (end == std::string::npos) {
        problems += "unterminated <" + name + ">\n";
        break;
      }
      p = end + 2;
    }
  }
  const std::size_t want = r.graph && !r.graph->nodes.empty() ? 2 : 1;
  if (scripts != want) problems += "script elements: " + std::to_string(scripts) + "\n";
  return problems;
}

}  // namespace axqc::fuzz
