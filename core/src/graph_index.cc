#include "graph_index.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

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

void NameTable::Reserve(std::size_t names) {
  names_.reserve(names);
  std::size_t cap = 16;
  while (cap < names * 2) cap *= 2;
  if (cap > slots_.size()) {
    slots_.assign(cap, Slot{});
    for (std::size_t id = 0; id < names_.size(); ++id) {
      // Re-insert (only when Reserve follows inserts).
      const auto h = std::hash<std::string_view>{}(names_[id]);
      const std::uint32_t tag = static_cast<std::uint32_t>(h >> 32) | 1u;
      std::size_t i = h & (slots_.size() - 1);
      while (slots_[i].tag != 0) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = {tag, static_cast<std::int32_t>(id)};
    }
  }
}

void NameTable::Grow() { Reserve(std::max<std::size_t>(names_.size() * 2, 8)); }

int NameTable::Intern(std::string_view name) {
  if ((names_.size() + 1) * 2 > slots_.size()) Grow();
  const auto h = std::hash<std::string_view>{}(name);
  const std::uint32_t tag = static_cast<std::uint32_t>(h >> 32) | 1u;
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.tag == 0) {
      s = {tag, static_cast<std::int32_t>(names_.size())};
      names_.push_back(name);
      return s.id;
    }
    if (s.tag == tag && names_[static_cast<std::size_t>(s.id)] == name) return s.id;
  }
}

int NameTable::Find(std::string_view name) const {
  if (slots_.empty()) return -1;
  const auto h = std::hash<std::string_view>{}(name);
  const std::uint32_t tag = static_cast<std::uint32_t>(h >> 32) | 1u;
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.tag == 0) return -1;
    if (s.tag == tag && names_[static_cast<std::size_t>(s.id)] == name) return s.id;
  }
}

// Linear in nodes + edges: every name is interned once (one hash probe per occurrence); the
// rest works on dense ids.
GraphIndex::GraphIndex(const onnx::GraphProto& g, const ExternalDataReader* ext)
    : GraphIndex(g, ext, TypesLater{}) {
  RecordTypes();
}

GraphIndex::GraphIndex(const onnx::GraphProto& g, const ExternalDataReader* ext, TypesLater)
    : g_(g), ext_(ext) {
  NameNodes();
  declared_ = InternTensors();
  RecordTensors(declared_);
  BuildConsumers(ImplicitUses());
  SortTopologically();
}

// Display names: the node's name, or "<op_type>#<index>" when unnamed or duplicated.
void GraphIndex::NameNodes() {
  const auto& g = g_;
  const int n = g.node_size();
  const auto un = static_cast<std::size_t>(n);
  names_.reserve(un);
  {
    NameTable seen;
    seen.Reserve(un);
    for (int i = 0; i < n; ++i) {
      const auto& node = g.node(i);
      std::string_view name = node.name();
      if (name.empty()) {
        name = made_names_.emplace_back(node.op_type() + "#" + std::to_string(i));
      }
      const int before = seen.size();
      if (seen.Intern(name) < before) {  // duplicate names stay distinct
        name = made_names_.emplace_back(std::string(name) + "#" + std::to_string(i));
      }
      names_.push_back(name);
    }
  }
}

// Intern every tensor name; node inputs/outputs are recorded by id (CSR by node).
GraphIndex::DeclaredIds GraphIndex::InternTensors() {
  const auto& g = g_;
  const auto un = static_cast<std::size_t>(g.node_size());
  std::size_t io = 0;
  for (const auto& node : g.node()) {
    io += static_cast<std::size_t>(node.input_size() + node.output_size());
  }
  const auto declared = static_cast<std::size_t>(g.initializer_size() + g.input_size() +
                                                 g.value_info_size() + g.output_size());
  ids_.Reserve(declared + io / 2);
  DeclaredIds d;
  auto& [init_ids, input_ids, vi_ids, output_ids] = d;
  init_ids.reserve(static_cast<std::size_t>(g.initializer_size()));
  for (const auto& t : g.initializer()) init_ids.push_back(ids_.Intern(t.name()));
  for (const auto& vi : g.input()) input_ids.push_back(ids_.Intern(vi.name()));
  vi_ids.reserve(static_cast<std::size_t>(g.value_info_size()));
  for (const auto& vi : g.value_info()) vi_ids.push_back(ids_.Intern(vi.name()));
  for (const auto& vi : g.output()) output_ids.push_back(ids_.Intern(vi.name()));
  io_.reserve(io);
  io_begin_.reserve(un + 1);
  out_begin_.reserve(un);
  for (const auto& node : g.node()) {
    io_begin_.push_back(static_cast<std::uint32_t>(io_.size()));
    for (const auto& in : node.input()) io_.push_back(in.empty() ? -1 : ids_.Intern(in));
    out_begin_.push_back(static_cast<std::uint32_t>(io_.size()));
    for (const auto& o : node.output()) io_.push_back(o.empty() ? -1 : ids_.Intern(o));
  }
  io_begin_.push_back(static_cast<std::uint32_t>(io_.size()));
  return d;
}

// Initializers, graph inputs and outputs and the producer of each tensor.
void GraphIndex::RecordTensors(const DeclaredIds& d) {
  const auto& g = g_;
  const int n = g.node_size();
  const auto& [init_ids, input_ids, vi_ids, output_ids] = d;
  const auto nt = static_cast<std::size_t>(ids_.size());
  tensors_.resize(nt);
  types_.resize(nt);
  for (int k = 0; k < g.initializer_size(); ++k) {
    Tensor& e = tensors_[static_cast<std::size_t>(init_ids[static_cast<std::size_t>(k)])];
    if (e.init == nullptr) e.init = &g.initializer(k);  // first wins on duplicates
  }
  for (int id : input_ids) {
    Tensor& e = tensors_[static_cast<std::size_t>(id)];
    if (e.init == nullptr) e.input = true;
  }
  for (int id : output_ids) tensors_[static_cast<std::size_t>(id)].output = true;
  for (int i = 0; i < n; ++i) {
    for (int id : OutputIds(i)) {
      if (id >= 0 && tensors_[static_cast<std::size_t>(id)].producer < 0) {
        tensors_[static_cast<std::size_t>(id)].producer = i;  // first producer wins
      }
    }
  }
}

// Declared types (value_info, inputs, outputs, initializers), in this order of precedence: an
// initializer's own type, then value_info, then a graph input's, then a graph output's when
// nothing else gave an element type.
void GraphIndex::RecordTypes() {
  const auto& g = g_;
  const auto& [init_ids, input_ids, vi_ids, output_ids] = declared_;
  std::size_t dims = 0;  // an estimate: four per entry
  dims += 4 * static_cast<std::size_t>(g.input_size() + g.value_info_size() + g.output_size() +
                                       g.initializer_size());
  dims_.reserve(dims);
  for (int k = 0; k < g.input_size() && static_cast<std::size_t>(k) < input_ids.size(); ++k) {
    SetType(input_ids[static_cast<std::size_t>(k)], g.input(k).type());
  }
  // The value_info entries present at indexing have their ids; those that shape inference
  // appended since name node outputs, which have ids too (names of nothing are skipped).
  for (int k = 0; k < g.value_info_size(); ++k) {
    const auto& vi = g.value_info(k);
    const int id = static_cast<std::size_t>(k) < vi_ids.size() ? vi_ids[static_cast<std::size_t>(k)]
                                                               : TensorId(vi.name());
    if (id >= 0) SetType(id, vi.type());
  }
  for (int k = 0; k < g.output_size() && static_cast<std::size_t>(k) < output_ids.size(); ++k) {
    const int id = output_ids[static_cast<std::size_t>(k)];
    const auto& t = g.output(k).type();
    const int elem = t.has_tensor_type() ? t.tensor_type().elem_type() : 0;
    if (!tensors_[static_cast<std::size_t>(id)].typed ||
        (types_[static_cast<std::size_t>(id)].elem_type == 0 && elem != 0)) {
      SetType(id, t);
    }
  }
  for (int k = 0; k < g.initializer_size() && static_cast<std::size_t>(k) < init_ids.size(); ++k) {
    const auto& t = g.initializer(k);
    const int id = init_ids[static_cast<std::size_t>(k)];
    Tensor& e = tensors_[static_cast<std::size_t>(id)];
    if (e.init != &t) continue;
    e.typed = true;
    StoredType& st = types_[static_cast<std::size_t>(id)];
    st.elem_type = t.data_type();
    st.has_shape = true;
    st.dims_begin = static_cast<std::uint32_t>(dims_.size());
    st.rank = static_cast<std::uint32_t>(t.dims_size());
    dims_.insert(dims_.end(), t.dims().begin(), t.dims().end());
  }
}

// As TypeFromProto, into the flat arrays.
void GraphIndex::SetType(int id, const onnx::TypeProto& t) {
  tensors_[static_cast<std::size_t>(id)].typed = true;
  StoredType& st = types_[static_cast<std::size_t>(id)];
  st = StoredType{};
  if (!t.has_tensor_type()) return;
  const auto& tt = t.tensor_type();
  st.elem_type = tt.elem_type();
  if (!tt.has_shape()) return;
  st.has_shape = true;
  st.dims_begin = static_cast<std::uint32_t>(dims_.size());
  st.rank = static_cast<std::uint32_t>(tt.shape().dim_size());
  for (const auto& d : tt.shape().dim()) dims_.push_back(d.has_dim_value() ? d.dim_value() : -1);
}

// Implicit uses by subgraphs (If/Loop/Scan bodies reading outer-scope tensors): (node, tensor id),
// in node order.
std::vector<std::pair<int, int>> GraphIndex::ImplicitUses() const {
  const auto& g = g_;
  const int n = g.node_size();
  std::vector<std::pair<int, int>> implicit;  // (node, tensor id), in node order
  for (int i = 0; i < n; ++i) {
    for (const auto& a : g.node(i).attribute()) {
      if (!a.has_g() && a.graphs_size() == 0) continue;
      std::unordered_set<std::string> defined;
      std::vector<std::string> used;
      if (a.has_g()) CollectImplicitUses(a.g(), defined, used, 0);
      for (const auto& sg : a.graphs()) CollectImplicitUses(sg, defined, used, 0);
      for (const auto& u : used) {
        const int id = ids_.Find(u);
        if (id < 0) continue;
        const Tensor& e = tensors_[static_cast<std::size_t>(id)];
        if (e.producer >= 0 || e.init != nullptr || e.input) implicit.emplace_back(i, id);
      }
    }
  }
  return implicit;
}

// Consumers, grouped by tensor in node order (regular inputs, then implicit uses, per node).
void GraphIndex::BuildConsumers(const std::vector<std::pair<int, int>>& implicit) {
  const int n = g_.node_size();
  const auto nt = static_cast<std::size_t>(ids_.size());
  std::vector<std::uint32_t> count(nt + 1, 0);
  for (int i = 0; i < n; ++i) {
    for (int id : InputIds(i)) {
      if (id >= 0) ++count[static_cast<std::size_t>(id)];
    }
  }
  for (const auto& [node, id] : implicit) ++count[static_cast<std::size_t>(id)];
  std::uint32_t total = 0;
  for (std::size_t id = 0; id < nt; ++id) {
    tensors_[id].uses_begin = tensors_[id].uses_end = total;
    total += count[id];
  }
  uses_.resize(total);
  std::size_t next_implicit = 0;
  for (int i = 0; i < n; ++i) {
    const auto ins = InputIds(i);
    for (std::size_t s = 0; s < ins.size(); ++s) {
      if (ins[s] < 0) continue;
      Tensor& e = tensors_[static_cast<std::size_t>(ins[s])];
      uses_[e.uses_end++] = {i, static_cast<int>(s)};
    }
    for (; next_implicit < implicit.size() && implicit[next_implicit].first == i; ++next_implicit) {
      Tensor& e = tensors_[static_cast<std::size_t>(implicit[next_implicit].second)];
      uses_[e.uses_end++] = {i, -1};
    }
  }
}

// Kahn's algorithm; nodes on cycles are appended in file order.
void GraphIndex::SortTopologically() {
  const int n = g_.node_size();
  const auto un = static_cast<std::size_t>(n);
  std::vector<int> indeg(un, 0);
  for (int i = 0; i < n; ++i) {
    for (int id : InputIds(i)) {
      if (id < 0) continue;
      const int p = ProducerOf(id);
      if (p >= 0 && p != i) ++indeg[static_cast<std::size_t>(i)];
    }
  }
  std::vector<int> ready;
  ready.reserve(un);
  for (int i = 0; i < n; ++i) {
    if (indeg[static_cast<std::size_t>(i)] == 0) ready.push_back(i);
  }
  std::vector<bool> done(un, false);
  topo_.reserve(un);
  for (std::size_t head = 0; head < ready.size(); ++head) {
    const int i = ready[head];
    done[static_cast<std::size_t>(i)] = true;
    topo_.push_back(i);
    for (int o : OutputIds(i)) {
      if (o < 0 || ProducerOf(o) != i) continue;
      for (const auto& u : ConsumersOf(o)) {
        if (u.slot < 0 || u.node == i) continue;
        if (--indeg[static_cast<std::size_t>(u.node)] == 0) ready.push_back(u.node);
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    if (!done[static_cast<std::size_t>(i)]) topo_.push_back(i);
  }
}

std::span<const int> GraphIndex::InputIds(int node) const {
  const auto i = static_cast<std::size_t>(node);
  return {io_.data() + io_begin_[i], io_.data() + out_begin_[i]};
}

std::span<const int> GraphIndex::OutputIds(int node) const {
  const auto i = static_cast<std::size_t>(node);
  return {io_.data() + out_begin_[i], io_.data() + io_begin_[i + 1]};
}

std::span<const Use> GraphIndex::ConsumersOf(int id) const {
  if (id < 0) return {};
  const Tensor& e = tensors_[static_cast<std::size_t>(id)];
  return {uses_.data() + e.uses_begin, uses_.data() + e.uses_end};
}

const GraphIndex::StoredType* GraphIndex::Stored(int id) const {
  if (id < 0) return nullptr;
  return tensors_[static_cast<std::size_t>(id)].typed ? &types_[static_cast<std::size_t>(id)]
                                                      : nullptr;
}

int GraphIndex::ElemTypeOf(int id) const {
  const auto* st = Stored(id);
  return st ? st->elem_type : 0;
}

std::optional<std::vector<std::int64_t>> GraphIndex::DimsOf(int id) const {
  const auto* st = Stored(id);
  if (st == nullptr || !st->has_shape) return std::nullopt;
  const auto* first = dims_.data() + st->dims_begin;
  return std::vector<std::int64_t>(first, first + st->rank);
}

int GraphIndex::InputId(int node, int slot) const {
  if (node < 0 || node >= node_count()) return -1;
  const auto ids = InputIds(node);
  return slot >= 0 && static_cast<std::size_t>(slot) < ids.size()
             ? ids[static_cast<std::size_t>(slot)]
             : -1;
}

int GraphIndex::OutputId(int node, int slot) const {
  if (node < 0 || node >= node_count()) return -1;
  const auto ids = OutputIds(node);
  return slot >= 0 && static_cast<std::size_t>(slot) < ids.size()
             ? ids[static_cast<std::size_t>(slot)]
             : -1;
}

}  // namespace axqc::detail
