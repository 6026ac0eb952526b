// The graph of a report as DOT, neighbourhoods and excerpts (render_graph.h).
#include "render_dot.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "axqc/catalog.h"
#include "axqc/render_graph.h"

namespace axqc {
namespace detail {
namespace {

constexpr std::size_t kMaxExpand = 24;  // neighbours one node expands to

// Neighbours of each node: producers of its inputs, then consumers of its outputs.
class Adjacency {
 public:
  explicit Adjacency(const ModelGraph& g) : g_(g) {
    consumers_.resize(g.tensors.size());
    for (std::size_t n = 0; n < g.nodes.size(); ++n) {
      for (int t : g.nodes[n].inputs) {
        if (t >= 0 && static_cast<std::size_t>(t) < g.tensors.size()) {
          consumers_[static_cast<std::size_t>(t)].push_back(static_cast<int>(n));
        }
      }
    }
  }
  template <typename Fn>
  void ForEach(int node, Fn fn) const {
    std::size_t seen = 0;
    const auto& n = g_.nodes[static_cast<std::size_t>(node)];
    for (int t : n.inputs) {
      if (t < 0 || static_cast<std::size_t>(t) >= g_.tensors.size()) continue;
      const int p = g_.tensors[static_cast<std::size_t>(t)].producer;
      if (p >= 0 && static_cast<std::size_t>(p) < g_.nodes.size()) {
        if (seen++ >= kMaxExpand) return;
        fn(p);
      }
    }
    for (int t : n.outputs) {
      if (t < 0 || static_cast<std::size_t>(t) >= g_.tensors.size()) continue;
      for (int c : consumers_[static_cast<std::size_t>(t)]) {
        if (seen++ >= kMaxExpand) return;
        fn(c);
      }
    }
  }

 private:
  const ModelGraph& g_;
  std::vector<std::vector<int>> consumers_;
};

std::vector<int> Ball(const ModelGraph& g, const Adjacency& adj, std::span<const int> seeds,
                      int hops, std::size_t max_nodes) {
  std::unordered_map<int, int> dist;
  std::vector<int> order;
  std::deque<int> queue;
  for (int s : seeds) {
    if (s < 0 || static_cast<std::size_t>(s) >= g.nodes.size() || dist.contains(s)) continue;
    if (order.size() >= max_nodes) break;
    dist[s] = 0;
    order.push_back(s);
    queue.push_back(s);
  }
  // 0-1 BFS: a Q/DQ node is reached at its neighbour's distance, a compute node one further.
  while (!queue.empty() && order.size() < max_nodes) {
    const int u = queue.front();
    queue.pop_front();
    const int du = dist[u];
    adj.ForEach(u, [&](int v) {
      if (order.size() >= max_nodes || dist.contains(v)) return;
      const bool free = IsQdq(g.nodes[static_cast<std::size_t>(v)]);
      const int dv = du + (free ? 0 : 1);
      if (dv > hops) return;
      dist[v] = dv;
      order.push_back(v);
      if (free) {
        queue.push_front(v);
      } else {
        queue.push_back(v);
      }
    });
  }
  std::sort(order.begin(), order.end());
  return order;
}

// The longest prefix of `s` of at most `max` bytes that does not end inside a UTF-8 sequence.
std::size_t Utf8Prefix(std::string_view s, std::size_t max) {
  if (s.size() <= max) return s.size();
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

// A label line of model text: at most about `max` bytes (longer text keeps its end, "…" in
// front), as DotText (no line breaks, no control characters).
std::string LabelText(std::string_view s, std::size_t max) {
  if (s.size() <= max) return DotText(s);
  std::size_t start = s.size() - max + 3;
  while (start < s.size() && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) ++start;
  return "…" + DotText(s.substr(start));
}

const char* FillOf(std::string_view cls) {
  if (cls == "pattern") return "#dccbf5";
  if (cls == "operator") return "#cfe5f7";
  if (cls == "passive") return "#d8efd1";
  if (cls == "qdq") return "#fff1bf";
  return "#ececec";
}

// A label line that keeps its beginning: "scale=[0.01, 0.02, ...".
std::string HeadText(std::string_view s, std::size_t max) {
  if (s.size() <= max) return DotText(s);
  return DotText(s.substr(0, Utf8Prefix(s, max - 3))) + "…";
}

// "U8 per-tensor scale=0.02 zp=128" -> type and granularity, then scale, then zero point (lines
// separated by '\n', which DotQuote writes as a line break).
std::string EdgeLabel(std::string_view quant) {
  const auto p = quant.find(" scale=");
  if (p == std::string_view::npos) return HeadText(quant, 48);
  const auto z = quant.find(" zp=", p);
  if (z == std::string_view::npos || quant.size() - p < 40) {
    return HeadText(quant.substr(0, p), 48) + "\n" + HeadText(quant.substr(p + 1), 48);
  }
  return HeadText(quant.substr(0, p), 48) + "\n" + HeadText(quant.substr(p + 1, z - p - 1), 48) +
         "\n" + HeadText(quant.substr(z + 1), 48);
}

// An attribute list "[name="value", ...]": every value through DotQuote, every name one of
// DotAttributeNames() (a constant of this file, never model text).
class Attrs {
 public:
  Attrs& Add(std::string_view name, std::string_view value) {
    out_ += out_.empty() ? "[" : ", ";
    out_ += name;
    out_ += '=';
    out_ += DotQuote(value);
    return *this;
  }
  std::string Done() const { return out_.empty() ? "[]" : out_ + "]"; }

 private:
  std::string out_;
};

}  // namespace

std::string DotText(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out += (c < 0x20 || c == 0x7f) ? ' ' : static_cast<char>(c);
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence (no overlong forms, no surrogates, at most U+10FFFF) is kept;
    // any other byte becomes U+FFFD.
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    }
    if (!ok) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    // C1 control characters (U+0080..U+009F) are control characters too.
    if (len == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) {
      out += ' ';
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

std::string IdText(std::string_view s) {
  std::string out = DotText(s);
  std::replace(out.begin(), out.end(), ' ', '_');
  return out;
}

std::string DotQuote(std::string_view text) {
  std::string out = "\"";
  out.reserve(text.size() + 2);
  for (char c : text) {
    switch (c) {
      case '\n':
        out += "\\n";  // a line break (labels), written by the renderer only
        break;
      case '\\':
        out += "\\\\";  // Graphviz reads \N, \G, \E, \l, ... in these values
        break;
      case '"':
        out += "\\\"";
        break;
      case '&':
        out += "&amp;";  // Graphviz reads HTML entities in labels and passes them to SVG
        break;
      default:
        // Control characters never reach a DOT file (a raw newline or a NUL would change the
        // meaning of the text around it).
        out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
    }
  }
  return out + "\"";
}

const std::set<std::string_view>& DotAttributeNames() {
  static const std::set<std::string_view> names{
      "arrowsize", "bgcolor", "class",   "color", "fillcolor", "fontcolor", "fontname",
      "fontsize",  "height",  "id",      "label", "margin",    "nodesep",   "pad",
      "penwidth",  "rankdir", "ranksep", "shape", "style",     "tooltip",   "width"};
  return names;
}

bool IsQdq(const GraphNode& node) {
  return (node.domain.empty() || node.domain == "ai.onnx") &&
         (node.op_type == "QuantizeLinear" || node.op_type == "DequantizeLinear");
}

std::string_view UnitClass(const UnitInfo& u) {
  const std::string_view kind = u.kind;
  if (kind.starts_with("pattern")) return "pattern";
  if (kind.starts_with("passive") || kind == "requantize") return "passive";
  if (kind == "op" && u.mode != "non_quant") return "operator";
  return "nonquant";
}

std::string_view NodeClass(const Report& report, const GraphNode& node) {
  if (IsQdq(node)) return "qdq";
  if (node.unit < 0 || static_cast<std::size_t>(node.unit) >= report.units.size()) return "none";
  return UnitClass(report.units[static_cast<std::size_t>(node.unit)]);
}

std::string RulePage(std::string_view rule) { return RulePageName(rule); }

// The opening of every drawing: the digraph and its graph and node defaults (the edge defaults
// follow, per view).
std::string DotHeader() {
  std::ostringstream os;
  os << "digraph axqc {\n  graph "
     << Attrs()
            .Add("rankdir", "TB")
            .Add("fontname", "Helvetica")
            .Add("fontsize", "10")
            .Add("nodesep", "0.25")
            .Add("ranksep", "0.3")
            .Add("bgcolor", "transparent")
            .Add("pad", "0.1")
            .Done()
     << ";\n  node "
     << Attrs()
            .Add("shape", "box")
            .Add("style", "rounded,filled")
            .Add("fontname", "Helvetica")
            .Add("fontsize", "10")
            .Add("height", "0.3")
            .Add("margin", "0.08,0.03")
            .Add("color", "#5b6470")
            .Add("penwidth", "1")
            .Done();
  return os.str();
}

std::string BuildDot(const Report& report, const ModelGraph& g, std::span<const int> nodes,
                     const DotView& view) {
  std::ostringstream os;
  os << DotHeader() << ";\n  edge "
     << Attrs()
            .Add("fontname", "Helvetica")
            .Add("fontsize", "8")
            .Add("color", "#7a828c")
            .Add("arrowsize", "0.6")
            .Add("fontcolor", "#37474f")
            .Done()
     << ";\n";
  std::vector<char> in(g.nodes.size(), 0);
  for (int n : nodes) in[static_cast<std::size_t>(n)] = 1;
  // Node ids are the renderer's own ("n<index>"); model text is only ever a quoted value.
  auto node_id = [](int n) { return "n" + std::to_string(n); };
  std::unordered_map<int, std::vector<int>> by_unit;
  for (int n : nodes) {
    const auto& node = g.nodes[static_cast<std::size_t>(n)];
    const std::string_view cls = NodeClass(report, node);
    std::string classes = "unit-" + std::string(cls);
    Attrs a;
    a.Add("id", view.prefix + "node-" + IdText(node.name));
    std::string tooltip = node.op_type + " " + node.name;
    std::string label;
    if (cls == "qdq") {
      label = node.op_type == "QuantizeLinear" ? "Q" : "DQ";
      tooltip += " (" + node.quant + ")";
    } else {
      label = LabelText(node.op_type, 24) + "\n" + LabelText(node.name, 28);
      if (node.unit >= 0 && static_cast<std::size_t>(node.unit) < report.units.size()) {
        const auto& u = report.units[static_cast<std::size_t>(node.unit)];
        tooltip += " [unit " + std::to_string(u.id) + " " + u.kind +
                   (u.mode.empty() ? "" : " " + u.mode) + "]";
        if (view.clusters && u.nodes.size() > 1) by_unit[node.unit].push_back(n);
      }
    }
    if (view.offending.contains(node.name)) {
      classes += " offending";
    } else if (view.involved.contains(node.name)) {
      classes += " involved";
    }
    a.Add("class", classes)
        .Add("label", label)
        .Add("tooltip", LabelText(tooltip, 400))
        .Add("fillcolor", FillOf(cls));
    if (view.offending.contains(node.name)) {
      a.Add("color", "#d62728").Add("penwidth", "3");
    } else if (view.involved.contains(node.name)) {
      a.Add("color", "#ff7f0e").Add("penwidth", "2");
    }
    if (cls == "qdq") {
      a.Add("shape", "ellipse")
          .Add("style", "filled")
          .Add("height", "0.22")
          .Add("width", "0.3")
          .Add("fontsize", "8")
          .Add("margin", "0.02");
    } else if (node.unit >= 0 && static_cast<std::size_t>(node.unit) < report.units.size() &&
               report.units[static_cast<std::size_t>(node.unit)].mode == "unquantized") {
      a.Add("style", "rounded,filled,dashed");
    }
    os << "  " << node_id(n) << " " << a.Done() << ";\n";
  }
  for (const auto& [unit, members] : by_unit) {
    const auto& u = report.units[static_cast<std::size_t>(unit)];
    os << "  subgraph cluster_u" << unit << " {\n    graph "
       << Attrs()
              .Add("label", LabelText(u.kind, 64))
              .Add("fontsize", "8")
              .Add("style", "rounded,dashed")
              .Add("color", "#8e6cc9")
              .Add("id", view.prefix + "unit-" + std::to_string(u.id))
              .Done()
       << ";\n   ";
    for (int n : members) os << " " << node_id(n) << ";";
    os << "\n  }\n";
  }
  // A Q/DQ node that fans out labels one of its edges only (its first consumer in graph order);
  // the others carry the parameters in their tooltip, so labels do not pile up around the node.
  std::set<int> labelled;
  for (int v : nodes) {
    const auto& consumer = g.nodes[static_cast<std::size_t>(v)];
    for (int t : consumer.inputs) {
      if (t < 0 || static_cast<std::size_t>(t) >= g.tensors.size()) continue;
      const auto& tensor = g.tensors[static_cast<std::size_t>(t)];
      const int u = tensor.producer;
      if (u < 0 || static_cast<std::size_t>(u) >= g.nodes.size() ||
          in[static_cast<std::size_t>(u)] == 0) {
        continue;
      }
      const auto& producer = g.nodes[static_cast<std::size_t>(u)];
      // The Q/DQ edge's parameters: on the edge leaving a Q, or leaving a DQ whose input does not
      // come from a drawn Q (a DQ-only constant, a DQ of a graph input).
      std::string label;
      if (producer.op_type == "QuantizeLinear" && IsQdq(producer)) {
        label = EdgeLabel(producer.quant);
      } else if (producer.op_type == "DequantizeLinear" && IsQdq(producer)) {
        bool from_q = false;
        if (!producer.inputs.empty() && producer.inputs[0] >= 0 &&
            static_cast<std::size_t>(producer.inputs[0]) < g.tensors.size()) {
          const int q = g.tensors[static_cast<std::size_t>(producer.inputs[0])].producer;
          from_q = q >= 0 && static_cast<std::size_t>(q) < g.nodes.size() &&
                   in[static_cast<std::size_t>(q)] != 0 &&
                   g.nodes[static_cast<std::size_t>(q)].op_type == "QuantizeLinear";
        }
        if (!from_q) label = EdgeLabel(producer.quant);
      }
      std::string classes = label.empty() ? "data" : "qdq";
      std::string tooltip = tensor.name;
      if (!label.empty() && !labelled.insert(u).second) {
        tooltip += " (" + producer.quant + ")";
        label.clear();
      }
      const bool bad_end =
          view.offending.contains(producer.name) || view.offending.contains(consumer.name);
      const bool bad = view.bad_tensors.contains(tensor.name) ||
                       (bad_end && IsQdq(producer) && classes == "qdq");
      if (bad) classes += " offending";
      Attrs a;
      a.Add("id", view.prefix + "edge-" + IdText(tensor.name) + "--" + IdText(consumer.name))
          .Add("class", classes)
          .Add("tooltip", LabelText(tooltip, 400));
      if (!label.empty()) a.Add("label", label);
      if (bad) a.Add("color", "#d62728").Add("penwidth", "2.5").Add("fontcolor", "#b71c1c");
      os << "  " << node_id(u) << " -> " << node_id(v) << " " << a.Done() << ";\n";
    }
  }
  os << "}\n";
  return os.str();
}

Condensed Condense(const ModelGraph& g, const std::set<std::string>& keep) {
  const std::size_t n = g.nodes.size();
  // Compute predecessors and successors, through the Q/DQ chains between them.
  std::vector<std::vector<int>> preds(n), succs(n);
  for (std::size_t v = 0; v < n; ++v) {
    if (IsQdq(g.nodes[v])) continue;
    for (int t : g.nodes[v].inputs) {
      for (int step = 0; step < 4 && t >= 0 && static_cast<std::size_t>(t) < g.tensors.size();
           ++step) {
        const int u = g.tensors[static_cast<std::size_t>(t)].producer;
        if (u < 0 || static_cast<std::size_t>(u) >= n) break;
        const auto& prod = g.nodes[static_cast<std::size_t>(u)];
        if (!IsQdq(prod)) {
          auto& p = preds[v];
          if (std::find(p.begin(), p.end(), u) == p.end()) {
            p.push_back(u);
            succs[static_cast<std::size_t>(u)].push_back(static_cast<int>(v));
          }
          break;
        }
        t = prod.inputs.empty() ? -1 : prod.inputs[0];
      }
    }
  }
  Condensed c;
  std::vector<int> box(n, -1);
  for (std::size_t v = 0; v < n; ++v) {
    const auto& node = g.nodes[v];
    if (IsQdq(node)) continue;
    int into = -1;
    if (preds[v].size() == 1 && !keep.contains(node.name)) {
      const auto u = static_cast<std::size_t>(preds[v][0]);
      if (succs[u].size() == 1 && box[u] >= 0 && !keep.contains(g.nodes[u].name) &&
          c.boxes[static_cast<std::size_t>(box[u])].back() == static_cast<int>(u)) {
        into = box[u];
      }
    }
    if (into < 0) {
      into = static_cast<int>(c.boxes.size());
      c.boxes.emplace_back();
    }
    box[v] = into;
    c.boxes[static_cast<std::size_t>(into)].push_back(static_cast<int>(v));
  }
  std::set<std::pair<int, int>> edges;
  for (std::size_t v = 0; v < n; ++v) {
    for (int u : preds[v]) {
      const int a = box[static_cast<std::size_t>(u)];
      const int b = box[v];
      if (a >= 0 && b >= 0 && a != b) edges.emplace(a, b);
    }
  }
  c.edges.assign(edges.begin(), edges.end());
  return c;
}

std::string BuildCondensedDot(const Report& report, const ModelGraph& g, const Condensed& c,
                              const DotView& view) {
  std::ostringstream os;
  os << DotHeader() << ";\n  edge "
     << Attrs().Add("color", "#7a828c").Add("arrowsize", "0.6").Done() << ";\n";
  for (std::size_t b = 0; b < c.boxes.size(); ++b) {
    const auto& members = c.boxes[b];
    const auto& first = g.nodes[static_cast<std::size_t>(members.front())];
    const auto& last = g.nodes[static_cast<std::size_t>(members.back())];
    const std::string_view cls = NodeClass(report, first);
    Attrs a;
    a.Add("id", view.prefix + "node-" + IdText(first.name));
    std::string classes = "unit-" + std::string(cls);
    std::string label;
    std::string tooltip;
    if (members.size() == 1) {
      label = LabelText(first.op_type, 24) + "\n" + LabelText(first.name, 28);
      tooltip = first.op_type + " " + first.name;
      if (view.offending.contains(first.name)) classes += " offending";
    } else {
      classes += " chain";
      // The op types along the chain, at most 4 of them named.
      std::string ops;
      for (std::size_t i = 0; i < members.size() && i < 4; ++i) {
        ops += (i ? " > " : "") + g.nodes[static_cast<std::size_t>(members[i])].op_type;
      }
      if (members.size() > 4) ops += " > ...";
      label = std::to_string(members.size()) + " nodes: " + HeadText(ops, 40) + "\n" +
              LabelText(first.name, 28) + "\n... " + LabelText(last.name, 28);
      tooltip = "a chain of " + std::to_string(members.size()) + " nodes: ";
      for (std::size_t i = 0; i < members.size() && i < 40; ++i) {
        const auto& m = g.nodes[static_cast<std::size_t>(members[i])];
        tooltip += (i ? ", " : "") + m.op_type + " " + m.name;
      }
      if (members.size() > 40) tooltip += ", ...";
    }
    a.Add("class", classes)
        .Add("label", label)
        .Add("tooltip", LabelText(tooltip, 2000))
        .Add("fillcolor", FillOf(cls));
    if (members.size() > 1) a.Add("style", "rounded,filled,bold");
    if (members.size() == 1 && view.offending.contains(first.name)) {
      a.Add("color", "#d62728").Add("penwidth", "3");
    }
    os << "  b" << b << " " << a.Done() << ";\n";
  }
  for (const auto& [from, to] : c.edges) os << "  b" << from << " -> b" << to << ";\n";
  os << "}\n";
  return os.str();
}

std::size_t CountEdges(const ModelGraph& g, std::span<const int> nodes) {
  std::vector<char> in(g.nodes.size(), 0);
  for (int n : nodes) {
    if (n >= 0 && static_cast<std::size_t>(n) < g.nodes.size()) in[static_cast<std::size_t>(n)] = 1;
  }
  std::size_t edges = 0;
  for (int v : nodes) {
    if (v < 0 || static_cast<std::size_t>(v) >= g.nodes.size()) continue;
    for (int t : g.nodes[static_cast<std::size_t>(v)].inputs) {
      if (t < 0 || static_cast<std::size_t>(t) >= g.tensors.size()) continue;
      const int u = g.tensors[static_cast<std::size_t>(t)].producer;
      if (u >= 0 && static_cast<std::size_t>(u) < g.nodes.size() &&
          in[static_cast<std::size_t>(u)] != 0) {
        ++edges;
      }
    }
  }
  return edges;
}

}  // namespace detail

std::vector<int> Neighbourhood(const ModelGraph& graph, std::span<const int> seeds, int hops,
                               std::size_t max_nodes) {
  const detail::Adjacency adj(graph);
  return detail::Ball(graph, adj, seeds, hops, max_nodes);
}

std::vector<std::vector<int>> GroupSeeds(const Report& report) {
  std::vector<std::vector<int>> out(report.groups.size());
  if (!report.graph) return out;
  std::unordered_map<std::string_view, int> index;
  const auto& nodes = report.graph->nodes;
  for (std::size_t i = 0; i < nodes.size(); ++i) index.emplace(nodes[i].name, static_cast<int>(i));
  for (std::size_t k = 0; k < report.groups.size(); ++k) {
    auto& seeds = out[k];
    auto add = [&](const std::string& name) {
      auto it = index.find(name);
      if (it != index.end() && std::find(seeds.begin(), seeds.end(), it->second) == seeds.end()) {
        seeds.push_back(it->second);
      }
    };
    for (const auto& f : report.groups[k].first) {
      if (!f.nodes.empty()) add(f.nodes[0]);
    }
    for (const auto& f : report.groups[k].first) {
      for (std::size_t i = 1; i < f.nodes.size(); ++i) add(f.nodes[i]);
    }
  }
  return out;
}

ModelGraph GraphExcerpt(const Report& report, const HtmlOptions& options) {
  ModelGraph out;
  if (!report.graph) return out;
  const ModelGraph& g = *report.graph;
  out.model_nodes = g.model_nodes;
  if (g.complete && g.nodes.size() <= std::max(options.whole_model_max_nodes,
                                               options.excerpt_whole_max_nodes)) {
    return g;
  }
  const detail::Adjacency adj(g);
  std::vector<char> keep(g.nodes.size(), 0);
  for (const auto& seeds : GroupSeeds(report)) {
    for (int n : detail::Ball(g, adj, seeds, options.hops, options.view_max_nodes)) {
      keep[static_cast<std::size_t>(n)] = 1;
    }
  }
  std::vector<int> node_map(g.nodes.size(), -1), tensor_map(g.tensors.size(), -1);
  auto tensor = [&](int t) {
    if (t < 0 || static_cast<std::size_t>(t) >= g.tensors.size()) return -1;
    auto& m = tensor_map[static_cast<std::size_t>(t)];
    if (m < 0) {
      m = static_cast<int>(out.tensors.size());
      out.tensors.push_back(g.tensors[static_cast<std::size_t>(t)]);
      out.tensors.back().producer = -1;
    }
    return m;
  };
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    if (keep[n] == 0) continue;
    node_map[n] = static_cast<int>(out.nodes.size());
    GraphNode node = g.nodes[n];
    for (int& t : node.inputs) t = tensor(t);
    for (int& t : node.outputs) t = tensor(t);
    out.nodes.push_back(std::move(node));
  }
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    const int m = tensor_map[t];
    const int p = g.tensors[t].producer;
    if (m >= 0 && p >= 0) out.tensors[static_cast<std::size_t>(m)].producer = node_map[p];
  }
  return out;
}

std::string RenderDot(const Report& report) {
  if (!report.graph) throw std::invalid_argument("the report has no graph");
  const ModelGraph& g = *report.graph;
  detail::DotView view;
  view.clusters = true;
  for (const auto& f : report.findings) {
    if (f.severity == Severity::kInfo || f.nodes.empty()) continue;
    view.offending.insert(f.nodes[0]);
    for (std::size_t i = 1; i < f.nodes.size(); ++i) view.involved.insert(f.nodes[i]);
  }
  std::vector<int> all(g.nodes.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  std::string dot = detail::BuildDot(report, g, all, view);
  std::string head = "axqc " + report.tool_version + ": " + report.model.file + " (" +
                     std::string(VerdictName(report.verdict)) + ")" +
                     (g.complete ? "" : ", an excerpt of the graph");
  return "// " + detail::DotText(head) + "\n" + dot;
}

}  // namespace axqc
