// The graph of a report as DOT, neighbourhoods and excerpts (render_graph.h).
#include "render_dot.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

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

std::string DotString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n' || c == '\r') {
      out += ' ';
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// A label line: Graphviz reads escapes (\N, \l, ...) in labels, so a backslash is doubled twice.
std::string LabelText(std::string_view s, std::size_t max) {
  std::string t(s);
  if (t.size() > max) t = "…" + t.substr(t.size() - max + 1);
  std::string out;
  for (char c : t) {
    if (c == '\\') out += "\\\\";
    out += c;
  }
  return out;
}

// No whitespace in ids.
std::string IdText(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\\') c = '_';
  }
  return out;
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
  if (s.size() <= max) return LabelText(s, max);
  return LabelText(s.substr(0, max - 1), max) + "…";
}

// "U8 per-tensor scale=0.02 zp=128" -> type and granularity, then scale, then zero point.
std::string EdgeLabel(std::string_view quant) {
  const auto p = quant.find(" scale=");
  if (p == std::string_view::npos) return HeadText(quant, 48);
  const auto z = quant.find(" zp=", p);
  if (z == std::string_view::npos || quant.size() - p < 40) {
    return HeadText(quant.substr(0, p), 48) + "\\n" + HeadText(quant.substr(p + 1), 48);
  }
  return HeadText(quant.substr(0, p), 48) + "\\n" + HeadText(quant.substr(p + 1, z - p - 1), 48) +
         "\\n" + HeadText(quant.substr(z + 1), 48);
}

}  // namespace

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

std::string RulePage(std::string_view rule) {
  std::string page(rule);
  for (std::size_t p = page.find('/'); p != std::string::npos; p = page.find('/', p + 2)) {
    page.replace(p, 1, "--");
  }
  return page;
}

std::string BuildDot(const Report& report, const ModelGraph& g, std::span<const int> nodes,
                     const DotView& view) {
  std::ostringstream os;
  os << "digraph axqc {\n"
        "  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=10, nodesep=0.25, ranksep=0.3, "
        "bgcolor=\"transparent\", pad=0.1];\n"
        "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10, "
        "height=0.3, margin=\"0.08,0.03\", color=\"#5b6470\", penwidth=1];\n"
        "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#7a828c\", arrowsize=0.6, "
        "fontcolor=\"#37474f\"];\n";
  std::vector<char> in(g.nodes.size(), 0);
  for (int n : nodes) in[static_cast<std::size_t>(n)] = 1;
  auto node_id = [](int n) { return "n" + std::to_string(n); };
  std::unordered_map<int, std::vector<int>> by_unit;
  for (int n : nodes) {
    const auto& node = g.nodes[static_cast<std::size_t>(n)];
    const std::string_view cls = NodeClass(report, node);
    std::string classes = "unit-" + std::string(cls);
    std::string extra;
    if (view.offending.contains(node.name)) {
      classes += " offending";
      extra = ", color=\"#d62728\", penwidth=3";
    } else if (view.involved.contains(node.name)) {
      classes += " involved";
      extra = ", color=\"#ff7f0e\", penwidth=2";
    }
    std::string label;
    std::string tooltip = node.op_type + " " + node.name;
    if (cls == "qdq") {
      label = node.op_type == "QuantizeLinear" ? "Q" : "DQ";
      tooltip += " (" + node.quant + ")";
      extra += ", shape=ellipse, style=filled, height=0.22, width=0.3, fontsize=8, margin=0.02";
    } else {
      label = LabelText(node.op_type, 24) + "\\n" + LabelText(node.name, 28);
      if (node.unit >= 0 && static_cast<std::size_t>(node.unit) < report.units.size()) {
        const auto& u = report.units[static_cast<std::size_t>(node.unit)];
        tooltip += " [unit " + std::to_string(u.id) + " " + u.kind +
                   (u.mode.empty() ? "" : " " + u.mode) + "]";
        if (u.mode == "unquantized") extra += ", style=\"rounded,filled,dashed\"";
        if (view.clusters && u.nodes.size() > 1) by_unit[node.unit].push_back(n);
      }
    }
    os << "  " << node_id(n) << " [id=" << DotString(view.prefix + "node-" + IdText(node.name))
       << ", class=" << DotString(classes) << ", label=\"" << label
       << "\", tooltip=" << DotString(LabelText(tooltip, 400)) << ", fillcolor=\"" << FillOf(cls)
       << "\"" << extra << "];\n";
  }
  for (const auto& [unit, members] : by_unit) {
    const auto& u = report.units[static_cast<std::size_t>(unit)];
    os << "  subgraph cluster_u" << unit << " {\n    label=" << DotString(u.kind)
       << "; fontsize=8; style=\"rounded,dashed\"; color=\"#8e6cc9\"; id="
       << DotString(view.prefix + "unit-" + std::to_string(u.id)) << ";\n   ";
    for (int n : members) os << " " << node_id(n) << ";";
    os << "\n  }\n";
  }
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
        if (!producer.inputs.empty() && producer.inputs[0] >= 0) {
          const int q = g.tensors[static_cast<std::size_t>(producer.inputs[0])].producer;
          from_q = q >= 0 && in[static_cast<std::size_t>(q)] != 0 &&
                   g.nodes[static_cast<std::size_t>(q)].op_type == "QuantizeLinear";
        }
        if (!from_q) label = EdgeLabel(producer.quant);
      }
      std::string classes = label.empty() ? "data" : "qdq";
      std::string extra;
      const bool bad_end =
          view.offending.contains(producer.name) || view.offending.contains(consumer.name);
      if (view.bad_tensors.contains(tensor.name) ||
          (bad_end && IsQdq(producer) && !label.empty())) {
        classes += " offending";
        extra = ", color=\"#d62728\", penwidth=2.5, fontcolor=\"#b71c1c\"";
      }
      os << "  " << node_id(u) << " -> " << node_id(v) << " [id="
         << DotString(view.prefix + "edge-" + IdText(tensor.name) + "--" + IdText(consumer.name))
         << ", class=" << DotString(classes) << ", tooltip=" << DotString(tensor.name);
      if (!label.empty()) os << ", label=\"" << label << "\"";
      os << extra << "];\n";
    }
  }
  os << "}\n";
  return os.str();
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
  if (g.complete && g.nodes.size() <= options.whole_model_max_nodes) return g;
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
  std::replace(head.begin(), head.end(), '\n', ' ');
  std::replace(head.begin(), head.end(), '\r', ' ');
  return "// " + head + "\n" + dot;
}

}  // namespace axqc
