#include "graph_index.h"

#include <algorithm>
#include <deque>

namespace axqc::detail {

TensorType TypeFromProto(const onnx::TypeProto& t) {
  TensorType out;
  if (!t.has_tensor_type()) return out;
  const auto& tt = t.tensor_type();
  out.elem_type = tt.elem_type();
  out.complete = out.elem_type != 0 && tt.has_shape();
  if (tt.has_shape()) {
    out.has_shape = true;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        out.dims.push_back(d.dim_value());
      } else {
        out.dims.push_back(-1);
        if (!d.has_dim_param() || d.dim_param().empty()) out.complete = false;
      }
    }
  }
  return out;
}

namespace {

// Adds the outer-scope tensors that a subgraph reads as implicit uses of `node`.
void CollectImplicitUses(const onnx::GraphProto& sub, std::unordered_set<std::string>& defined,
                         std::vector<std::string>& used, int depth) {
  if (depth > 64) return;  // hostile nesting: stop; the node is uncovered anyway
  std::vector<std::string> added;
  auto def = [&](const std::string& s) {
    if (defined.insert(s).second) added.push_back(s);
  };
  for (const auto& i : sub.input()) def(i.name());
  for (const auto& i : sub.initializer()) def(i.name());
  for (const auto& n : sub.node()) {
    for (const auto& in : n.input()) {
      if (!in.empty() && !defined.contains(in)) used.push_back(in);
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CollectImplicitUses(a.g(), defined, used, depth + 1);
      for (const auto& g : a.graphs()) CollectImplicitUses(g, defined, used, depth + 1);
    }
    for (const auto& o : n.output()) def(o);
  }
  for (const auto& o : sub.output()) {
    if (!defined.contains(o.name())) used.push_back(o.name());
  }
  for (const auto& s : added) defined.erase(s);
}

}  // namespace

// Linear in nodes + edges: each node and each input/output name is visited a constant number of
// times; lookups are hash maps keyed by views into the (immutable) GraphProto strings.
GraphIndex::GraphIndex(const onnx::GraphProto& g, const ExternalDataReader* ext) : g_(g), ext_(ext) {
  const int n = g.node_size();
  names_.reserve(static_cast<std::size_t>(n));
  std::unordered_map<std::string, int> seen_names;
  for (int i = 0; i < n; ++i) {
    const auto& node = g.node(i);
    std::string name = node.name().empty() ? node.op_type() + "#" + std::to_string(i) : node.name();
    if (seen_names[name]++ > 0) name += "#" + std::to_string(i);  // duplicate names stay distinct
    names_.push_back(std::move(name));
  }
  // Sized up front: rehashing these maps while they grow dominated indexing on 100k-node models.
  std::size_t edges = 0, outs = 0;
  for (const auto& node : g.node()) {
    edges += static_cast<std::size_t>(node.input_size());
    outs += static_cast<std::size_t>(node.output_size());
  }
  const auto inits = static_cast<std::size_t>(g.initializer_size());
  inits_.reserve(inits);
  producer_.reserve(outs);
  consumers_.reserve(std::min(edges, outs + inits + static_cast<std::size_t>(g.input_size())));
  types_.reserve(inits + static_cast<std::size_t>(g.value_info_size()) +
                 static_cast<std::size_t>(g.input_size()) +
                 static_cast<std::size_t>(g.output_size()));
  for (const auto& t : g.initializer()) inits_.emplace(t.name(), &t);
  for (const auto& vi : g.input()) {
    if (!inits_.contains(vi.name())) inputs_.insert(vi.name());
    types_[vi.name()] = TypeFromProto(vi.type());
  }
  for (const auto& vi : g.value_info()) types_[vi.name()] = TypeFromProto(vi.type());
  for (const auto& vi : g.output()) {
    outputs_.insert(vi.name());
    auto t = TypeFromProto(vi.type());
    auto it = types_.find(vi.name());
    if (it == types_.end() || (it->second.elem_type == 0 && t.elem_type != 0)) types_[vi.name()] = t;
  }
  for (const auto& [name, t] : inits_) {
    TensorType tt;
    tt.elem_type = t->data_type();
    tt.has_shape = true;
    tt.dims.assign(t->dims().begin(), t->dims().end());
    tt.complete = true;
    types_[name] = std::move(tt);
  }
  for (int i = 0; i < n; ++i) {
    const auto& node = g.node(i);
    for (int s = 0; s < node.input_size(); ++s) {
      if (!node.input(s).empty()) consumers_[node.input(s)].push_back({i, s});
    }
    for (const auto& o : node.output()) {
      if (!o.empty()) producer_.emplace(o, i);  // first producer wins on duplicates
    }
    for (const auto& a : node.attribute()) {
      if (!a.has_g() && a.graphs_size() == 0) continue;
      std::unordered_set<std::string> defined;
      std::vector<std::string> used;
      if (a.has_g()) CollectImplicitUses(a.g(), defined, used, 0);
      for (const auto& sg : a.graphs()) CollectImplicitUses(sg, defined, used, 0);
      for (const auto& u : used) {
        // Only names that exist in this graph can be keys (views must point into the proto).
        auto key = [&]() -> std::string_view {
          if (auto it = producer_.find(u); it != producer_.end()) return it->first;
          if (auto it = inits_.find(u); it != inits_.end()) return it->first;
          if (auto it = inputs_.find(u); it != inputs_.end()) return *it;
          return {};
        }();
        if (!key.empty()) consumers_[key].push_back({i, -1});
      }
    }
  }
  // Kahn's algorithm; nodes on cycles are appended in file order.
  std::vector<int> indeg(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    for (const auto& in : g.node(i).input()) {
      auto it = producer_.find(in);
      if (!in.empty() && it != producer_.end() && it->second != i) ++indeg[static_cast<std::size_t>(i)];
    }
  }
  std::deque<int> ready;
  for (int i = 0; i < n; ++i) {
    if (indeg[static_cast<std::size_t>(i)] == 0) ready.push_back(i);
  }
  std::vector<bool> done(static_cast<std::size_t>(n), false);
  topo_.reserve(static_cast<std::size_t>(n));
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop_front();
    done[static_cast<std::size_t>(i)] = true;
    topo_.push_back(i);
    for (const auto& o : g.node(i).output()) {
      if (o.empty()) continue;
      auto pit = producer_.find(o);
      if (pit == producer_.end() || pit->second != i) continue;
      auto it = consumers_.find(o);
      if (it == consumers_.end()) continue;
      for (const auto& u : it->second) {
        if (u.slot < 0 || u.node == i) continue;
        if (--indeg[static_cast<std::size_t>(u.node)] == 0) ready.push_back(u.node);
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    if (!done[static_cast<std::size_t>(i)]) topo_.push_back(i);
  }
}

int GraphIndex::Producer(std::string_view t) const {
  auto it = producer_.find(t);
  return it == producer_.end() ? -1 : it->second;
}

const std::vector<Use>& GraphIndex::Consumers(std::string_view t) const {
  static const std::vector<Use> kNone;
  auto it = consumers_.find(t);
  return it == consumers_.end() ? kNone : it->second;
}

const onnx::TensorProto* GraphIndex::Initializer(std::string_view t) const {
  auto it = inits_.find(t);
  return it == inits_.end() ? nullptr : it->second;
}

bool GraphIndex::IsGraphInput(std::string_view t) const { return inputs_.contains(t); }

const TensorType* GraphIndex::Type(std::string_view t) const {
  auto it = types_.find(t);
  return it == types_.end() ? nullptr : &it->second;
}

int GraphIndex::ElemType(std::string_view t) const {
  const auto* tt = Type(t);
  return tt ? tt->elem_type : 0;
}

std::optional<std::vector<std::int64_t>> GraphIndex::Dims(std::string_view t) const {
  const auto* tt = Type(t);
  if (tt == nullptr || !tt->has_shape) return std::nullopt;
  return tt->dims;
}

}  // namespace axqc::detail
