#include "fix/session.h"

#include <onnx/defs/shape_inference.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>

#include "pipeline.h"

namespace axqc::detail::fix {

using TP = onnx::TensorProto;

const onnx::TypeProto* TypeMap::Find(std::string_view name) const {
  auto it = types.find(std::string(name));
  return it == types.end() ? nullptr : &it->second;
}

int TypeMap::ElemType(std::string_view name) const {
  const auto* t = Find(name);
  return t != nullptr && t->has_tensor_type() ? t->tensor_type().elem_type() : 0;
}

std::optional<int> TypeMap::Rank(std::string_view name) const {
  const auto* t = Find(name);
  if (t == nullptr || !t->has_tensor_type() || !t->tensor_type().has_shape()) return std::nullopt;
  return t->tensor_type().shape().dim_size();
}

std::optional<std::vector<std::int64_t>> TypeMap::StaticDims(std::string_view name) const {
  const auto* t = Find(name);
  if (t == nullptr || !t->has_tensor_type() || !t->tensor_type().has_shape()) return std::nullopt;
  std::vector<std::int64_t> dims;
  for (const auto& d : t->tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
    dims.push_back(d.dim_value());
  }
  return dims;
}

std::string TypeMap::DimsText(std::string_view name) const {
  const auto* t = Find(name);
  if (t == nullptr || !t->has_tensor_type() || !t->tensor_type().has_shape()) return "unknown";
  std::string s = "[";
  bool first = true;
  for (const auto& d : t->tensor_type().shape().dim()) {
    s += first ? "" : ", ";
    first = false;
    if (d.has_dim_value()) {
      s += std::to_string(d.dim_value());
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      s += d.dim_param();
    } else {
      s += "?";
    }
  }
  return s + "]";
}

std::string NodeLabel(const onnx::NodeProto& n, int index) {
  return n.name().empty() ? n.op_type() + "#" + std::to_string(index) : n.name();
}

bool IsOnnxDomain(const onnx::NodeProto& n) {
  return n.domain().empty() || n.domain() == "ai.onnx";
}

std::int64_t OnnxOpset(const onnx::ModelProto& m) {
  for (const auto& op : m.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") return op.version();
  }
  return 0;
}

void ForEachGraph(onnx::GraphProto& g, const std::function<void(onnx::GraphProto&)>& f) {
  std::vector<onnx::GraphProto*> todo{&g};
  while (!todo.empty()) {
    auto* cur = todo.back();
    todo.pop_back();
    f(*cur);
    for (auto& n : *cur->mutable_node()) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) todo.push_back(a.mutable_g());
        for (auto& sg : *a.mutable_graphs()) todo.push_back(&sg);
      }
    }
  }
}

void RemoveNodes(onnx::GraphProto& g, const std::vector<bool>& drop) {
  auto* nodes = g.mutable_node();
  int w = 0;
  for (int r = 0; r < nodes->size(); ++r) {
    if (static_cast<std::size_t>(r) < drop.size() && drop[static_cast<std::size_t>(r)]) continue;
    if (w != r) nodes->SwapElements(w, r);
    ++w;
  }
  nodes->DeleteSubrange(w, nodes->size() - w);
}

std::unordered_map<std::string, int> UseCounts(const onnx::GraphProto& g) {
  std::unordered_map<std::string, int> uses;
  std::vector<const onnx::GraphProto*> todo{&g};
  while (!todo.empty()) {
    const auto* cur = todo.back();
    todo.pop_back();
    for (const auto& n : cur->node()) {
      for (const auto& in : n.input()) {
        if (!in.empty()) ++uses[in];
      }
      for (const auto& a : n.attribute()) {
        if (a.has_g()) todo.push_back(&a.g());
        for (const auto& sg : a.graphs()) todo.push_back(&sg);
      }
    }
    // A subgraph's outputs may name outer values directly.
    if (cur != &g) {
      for (const auto& o : cur->output()) ++uses[o.name()];
    }
  }
  return uses;
}

void RenameInputs(onnx::GraphProto& g, const std::unordered_map<std::string, std::string>& alias) {
  if (alias.empty()) return;
  ForEachGraph(g, [&](onnx::GraphProto& cur) {
    for (auto& n : *cur.mutable_node()) {
      for (auto& in : *n.mutable_input()) {
        auto it = alias.find(in);
        if (it != alias.end()) in = it->second;
      }
    }
    if (&cur != &g) {
      for (auto& o : *cur.mutable_output()) {
        auto it = alias.find(o.name());
        if (it != alias.end()) o.set_name(it->second);
      }
    }
  });
}

std::optional<std::vector<std::int64_t>> SmallInts(const TP& t, const ExternalDataReader* ext,
                                                   std::size_t max_elems) {
  if (t.data_type() != TP::INT64 && t.data_type() != TP::INT32) return std::nullopt;
  auto n = ElementCount(t);
  if (!n || static_cast<std::uint64_t>(*n) > max_elems) return std::nullopt;
  auto v = ReadInts(t, ext, max_elems);
  if (!v || v->size() != static_cast<std::size_t>(*n)) return std::nullopt;
  return v;
}

TP ZeroTensor(const std::string& name, int elem_type, const std::vector<std::int64_t>& dims) {
  TP t;
  t.set_name(name);
  t.set_data_type(elem_type);
  std::int64_t n = 1;
  for (auto d : dims) {
    t.add_dims(d);
    n *= d;
  }
  const int bits = ElemBits(elem_type);
  const auto bytes = static_cast<std::size_t>(bits == 2   ? (n + 3) / 4
                                              : bits == 4 ? (n + 1) / 2
                                                          : n * (bits / 8));
  t.set_raw_data(std::string(bytes, '\0'));
  return t;
}

// ---------------------------------------------------------------- Session

namespace {

void AddType(TypeMap& tm, const onnx::ValueInfoProto& vi) {
  if (!vi.name().empty() && vi.has_type()) tm.types[vi.name()] = vi.type();
}

}  // namespace

const TypeMap& Session::Types() {
  if (types_) return *types_;
  TypeMap tm;
  inferred_ = std::make_unique<onnx::ModelProto>(model_);
  try {
    onnx::ShapeInferenceOptions strict(true, 1, false);
    onnx::shape_inference::InferShapes(*inferred_, GuardedSchemaRegistry(), strict);
    tm.strict_ok = true;
  } catch (const std::exception& e) {
    tm.error = e.what();
    *inferred_ = model_;
    try {
      onnx::ShapeInferenceOptions lenient(false, 0, false);
      onnx::shape_inference::InferShapes(*inferred_, GuardedSchemaRegistry(), lenient);
    } catch (const std::exception&) {
    }
  }
  const auto& g = inferred_->graph();
  for (const auto& t : g.initializer()) {
    onnx::TypeProto type;
    auto* tt = type.mutable_tensor_type();
    tt->set_elem_type(t.data_type());
    auto* shape = tt->mutable_shape();
    for (auto d : t.dims()) shape->add_dim()->set_dim_value(d);
    tm.types[t.name()] = std::move(type);
  }
  for (const auto& vi : g.value_info()) AddType(tm, vi);
  for (const auto& vi : g.input()) AddType(tm, vi);
  for (const auto& vi : g.output()) AddType(tm, vi);
  types_ = std::move(tm);
  return *types_;
}

const onnx::ModelProto& Session::Inferred() {
  Types();
  return *inferred_;
}

void Session::CollectNames() {
  if (names_collected_) return;
  names_collected_ = true;
  ForEachGraph(graph(), [&](onnx::GraphProto& g) {
    for (const auto& vi : g.input()) tensor_names_.insert(vi.name());
    for (const auto& vi : g.output()) tensor_names_.insert(vi.name());
    for (const auto& vi : g.value_info()) tensor_names_.insert(vi.name());
    for (const auto& t : g.initializer()) tensor_names_.insert(t.name());
    for (const auto& t : g.sparse_initializer()) tensor_names_.insert(t.values().name());
    for (const auto& n : g.node()) {
      node_names_.insert(n.name());
      for (const auto& s : n.input()) tensor_names_.insert(s);
      for (const auto& s : n.output()) tensor_names_.insert(s);
    }
  });
}

std::string Session::NewTensorName(const std::string& base) {
  CollectNames();
  std::string name = base;
  for (int i = 1; tensor_names_.contains(name); ++i) name = base + "_" + std::to_string(i);
  tensor_names_.insert(name);
  return name;
}

std::string Session::NewNodeName(const std::string& base) {
  CollectNames();
  std::string name = base;
  for (int i = 1; node_names_.contains(name); ++i) name = base + "_" + std::to_string(i);
  node_names_.insert(name);
  return name;
}

void Session::Applied(const std::string& place) {
  ++out_->applied;
  if (out_->first.size() < options_.max_locations) out_->first.push_back(place);
}

void Session::Skipped(const std::string& place, const std::string& reason) {
  // All of them: the engine drops those whose node a later rewrite removed, then truncates.
  ++out_->skipped;
  out_->first_skips.emplace_back(place, reason);
}

const TP* Session::Initializer(std::string_view name) {
  if (inits_.empty()) {
    graph_inputs_.clear();
    for (const auto& t : graph().initializer()) inits_.emplace(t.name(), &t);
    for (const auto& vi : graph().input()) graph_inputs_.insert(vi.name());
    if (inits_.empty()) inits_.emplace("", nullptr);  // computed, even when there are none
  }
  auto it = inits_.find(std::string(name));
  return it == inits_.end() ? nullptr : it->second;
}

const TP* Session::ConstantInitializer(std::string_view name) {
  const auto* t = Initializer(name);
  return t != nullptr && !graph_inputs_.contains(std::string(name)) ? t : nullptr;
}

}  // namespace axqc::detail::fix
