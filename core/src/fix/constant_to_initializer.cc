// constant-to-initializer: a Constant node becomes an initializer of its graph with the name of
// its output and exactly the tensor the Constant op produces (ONNX Constant-1..21):
//   value             the tensor itself
//   value_float(s)    FLOAT scalar / 1-D
//   value_int(s)      INT64 scalar / 1-D
//   value_string(s)   STRING scalar / 1-D
//   sparse_value      the dense tensor (unspecified elements are zero); left alone when the
//                     dense tensor would exceed 64 MiB (a sparse initializer is not the same
//                     value: its type is sparse_tensor, the Constant's output is a tensor)
// Skipped: a Constant whose output is a graph output, an attribute reference (function bodies),
// a name that already is an initializer, and below IR 4 inside a subgraph (where initializers
// must also be inputs and a body's inputs are positional).
#include <cstring>

#include "fix/session.h"

namespace axqc::detail::fix {

namespace {

using TP = onnx::TensorProto;

constexpr std::size_t kMaxDenseBytes = std::size_t{64} << 20;

// Little-endian bytes of each element of a fixed-size (>= 8 bit) tensor, from raw_data or the
// typed field; nullopt when unavailable.
std::optional<std::string> ElementBytes(const TP& t, std::size_t n) {
  const int bits = ElemBits(t.data_type());
  if (bits < 8) return std::nullopt;
  const std::size_t esize = static_cast<std::size_t>(bits / 8);
  if (IsExternal(t)) return std::nullopt;
  if (t.has_raw_data()) {
    if (t.raw_data().size() != n * esize) return std::nullopt;
    return t.raw_data();
  }
  std::string out(n * esize, '\0');
  auto put = [&](std::size_t i, const void* p, std::size_t size) {
    std::memcpy(out.data() + i * esize, p, std::min(size, esize));
  };
  switch (t.data_type()) {
    case TP::FLOAT:
      if (static_cast<std::size_t>(t.float_data_size()) != n) return std::nullopt;
      for (std::size_t i = 0; i < n; ++i) {
        float v = t.float_data(static_cast<int>(i));
        put(i, &v, 4);
      }
      return out;
    case TP::COMPLEX64:
      if (static_cast<std::size_t>(t.float_data_size()) != 2 * n) return std::nullopt;
      std::memcpy(out.data(), t.float_data().data(), out.size());
      return out;
    case TP::DOUBLE:
      if (static_cast<std::size_t>(t.double_data_size()) != n) return std::nullopt;
      std::memcpy(out.data(), t.double_data().data(), out.size());
      return out;
    case TP::COMPLEX128:
      if (static_cast<std::size_t>(t.double_data_size()) != 2 * n) return std::nullopt;
      std::memcpy(out.data(), t.double_data().data(), out.size());
      return out;
    case TP::INT64:
      if (static_cast<std::size_t>(t.int64_data_size()) != n) return std::nullopt;
      std::memcpy(out.data(), t.int64_data().data(), out.size());
      return out;
    case TP::UINT32:
    case TP::UINT64:
      if (static_cast<std::size_t>(t.uint64_data_size()) != n) return std::nullopt;
      for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t v = t.uint64_data(static_cast<int>(i));
        put(i, &v, 8);  // little-endian host: the low bytes come first
      }
      return out;
    default:  // the types stored in int32_data (bit patterns for 16-bit floats and float8)
      if (static_cast<std::size_t>(t.int32_data_size()) != n) return std::nullopt;
      for (std::size_t i = 0; i < n; ++i) {
        std::int32_t v = t.int32_data(static_cast<int>(i));
        put(i, &v, 4);
      }
      return out;
  }
}

// Dense form of a sparse tensor; `why` says why not.
std::optional<TP> Densify(const onnx::SparseTensorProto& sp, const std::string& name,
                          std::string* why) {
  const TP& values = sp.values();
  const TP& indices = sp.indices();
  std::int64_t total = 1;
  for (auto d : sp.dims()) {
    if (d < 0 || (d != 0 && total > (std::int64_t{1} << 40) / d)) {
      *why = "sparse_value has an invalid or huge shape";
      return std::nullopt;
    }
    total *= d;
  }
  auto nnz_opt = ElementCount(values);
  if (!nnz_opt || values.dims_size() != 1) {
    *why = "sparse_value values are not 1-D";
    return std::nullopt;
  }
  const auto nnz = static_cast<std::size_t>(*nnz_opt);
  const int bits = ElemBits(values.data_type());
  const bool strings = values.data_type() == TP::STRING;
  if (!strings && bits < 8) {
    *why = "sparse_value of type " + ElemTypeName(values.data_type()) + " is not densified";
    return std::nullopt;
  }
  const std::size_t esize = strings ? sizeof(std::string) : static_cast<std::size_t>(bits / 8);
  if (static_cast<std::uint64_t>(total) * esize > kMaxDenseBytes) {
    *why = "its dense form would be larger than 64 MiB";
    return std::nullopt;
  }
  auto idx = ReadInts(indices, nullptr, nnz * static_cast<std::size_t>(sp.dims_size()) + 1);
  if (indices.data_type() != TP::INT64 || !idx) {
    *why = "sparse_value indices are not readable INT64";
    return std::nullopt;
  }
  // Linear positions: indices [NNZ] (linearized) or [NNZ, rank] (coordinates).
  std::vector<std::int64_t> pos;
  if (indices.dims_size() == 1 && idx->size() == nnz) {
    pos = *idx;
  } else if (indices.dims_size() == 2 && indices.dims(0) == static_cast<std::int64_t>(nnz) &&
             indices.dims(1) == sp.dims_size()) {
    const auto rank = static_cast<std::size_t>(sp.dims_size());
    for (std::size_t i = 0; i < nnz; ++i) {
      std::int64_t lin = 0;
      for (std::size_t k = 0; k < rank; ++k) {
        const auto c = (*idx)[i * rank + k];
        if (c < 0 || c >= sp.dims(static_cast<int>(k))) {
          *why = "sparse_value index out of range";
          return std::nullopt;
        }
        lin = lin * sp.dims(static_cast<int>(k)) + c;
      }
      pos.push_back(lin);
    }
  } else {
    *why = "sparse_value indices have an unexpected shape";
    return std::nullopt;
  }
  std::vector<bool> seen(static_cast<std::size_t>(total), false);
  for (auto p : pos) {
    if (p < 0 || p >= total || seen[static_cast<std::size_t>(p)]) {
      *why = "sparse_value index out of range or repeated";
      return std::nullopt;
    }
    seen[static_cast<std::size_t>(p)] = true;
  }
  TP dense;
  dense.set_name(name);
  dense.set_data_type(values.data_type());
  for (auto d : sp.dims()) dense.add_dims(d);
  if (strings) {
    if (static_cast<std::size_t>(values.string_data_size()) != nnz) {
      *why = "sparse_value string values do not match the indices";
      return std::nullopt;
    }
    for (std::int64_t i = 0; i < total; ++i) dense.add_string_data("");
    for (std::size_t i = 0; i < nnz; ++i) {
      dense.set_string_data(static_cast<int>(pos[i]), values.string_data(static_cast<int>(i)));
    }
    return dense;
  }
  auto bytes = ElementBytes(values, nnz);
  if (!bytes) {
    *why = "sparse_value values are not readable";
    return std::nullopt;
  }
  std::string raw(static_cast<std::size_t>(total) * esize, '\0');
  for (std::size_t i = 0; i < nnz; ++i) {
    std::memcpy(raw.data() + static_cast<std::size_t>(pos[i]) * esize, bytes->data() + i * esize,
                esize);
  }
  dense.set_raw_data(std::move(raw));
  return dense;
}

onnx::ValueInfoProto InputFor(const TP& t) {
  onnx::ValueInfoProto vi;
  vi.set_name(t.name());
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(t.data_type());
  auto* shape = tt->mutable_shape();
  for (auto d : t.dims()) shape->add_dim()->set_dim_value(d);
  return vi;
}

}  // namespace

void ConstantToInitializer(Session& s) {
  const std::int64_t ir = s.model().ir_version();
  bool changed = false;
  onnx::GraphProto* main = &s.graph();
  ForEachGraph(*main, [&](onnx::GraphProto& g) {
    std::unordered_set<std::string> outputs, inits;
    for (const auto& o : g.output()) outputs.insert(o.name());
    for (const auto& t : g.initializer()) inits.insert(t.name());
    std::vector<bool> drop(static_cast<std::size_t>(g.node_size()), false);
    std::vector<TP> made;
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& n = g.node(i);
      if (n.op_type() != "Constant" || !IsOnnxDomain(n)) continue;
      const std::string place = NodeLabel(n, i);
      if (n.output_size() != 1 || n.output(0).empty() || n.attribute_size() != 1) {
        s.Skipped(place, "not a Constant with one output and one value attribute");
        continue;
      }
      const auto& out = n.output(0);
      const auto& a = n.attribute(0);
      if (outputs.contains(out)) {
        s.Skipped(place, "its output '" + out + "' is a graph output");
        continue;
      }
      if (inits.contains(out)) {
        s.Skipped(place, "an initializer named '" + out + "' exists already");
        continue;
      }
      if (!a.ref_attr_name().empty()) {
        s.Skipped(place, "its value is a reference to a function attribute");
        continue;
      }
      if (ir < 4 && &g != main) {
        s.Skipped(place, "inside a subgraph of an IR " + std::to_string(ir) +
                             " model (initializers would also need to be body inputs)");
        continue;
      }
      TP t;
      const auto& name = a.name();
      if (name == "value" && a.has_t()) {
        t = a.t();
      } else if (name == "value_float") {
        t.set_data_type(TP::FLOAT);
        t.add_float_data(a.f());
      } else if (name == "value_floats") {
        t.set_data_type(TP::FLOAT);
        t.add_dims(a.floats_size());
        for (float v : a.floats()) t.add_float_data(v);
      } else if (name == "value_int") {
        t.set_data_type(TP::INT64);
        t.add_int64_data(a.i());
      } else if (name == "value_ints") {
        t.set_data_type(TP::INT64);
        t.add_dims(a.ints_size());
        for (auto v : a.ints()) t.add_int64_data(v);
      } else if (name == "value_string") {
        t.set_data_type(TP::STRING);
        t.add_string_data(a.s());
      } else if (name == "value_strings") {
        t.set_data_type(TP::STRING);
        t.add_dims(a.strings_size());
        for (const auto& v : a.strings()) t.add_string_data(v);
      } else if (name == "sparse_value" && a.has_sparse_tensor()) {
        std::string why;
        auto dense = Densify(a.sparse_tensor(), out, &why);
        if (!dense) {
          s.Skipped(place, why);
          continue;
        }
        t = std::move(*dense);
      } else {
        s.Skipped(place, "attribute '" + name + "' is not a Constant value form");
        continue;
      }
      t.set_name(out);
      made.push_back(std::move(t));
      inits.insert(out);
      drop[static_cast<std::size_t>(i)] = true;
      s.Applied(place);
    }
    if (made.empty()) return;
    changed = true;
    // value_info of a name that is now an initializer is redundant (the tensor describes itself).
    auto* vis = g.mutable_value_info();
    for (int k = vis->size() - 1; k >= 0; --k) {
      if (inits.contains(vis->Get(k).name())) {
        bool ours = false;
        for (const auto& t : made) ours = ours || t.name() == vis->Get(k).name();
        if (ours) vis->DeleteSubrange(k, 1);
      }
    }
    for (auto& t : made) {
      if (ir < 4) *g.add_input() = InputFor(t);
      *g.add_initializer() = std::move(t);
    }
    RemoveNodes(g, drop);
  });
  if (changed) s.Changed();
}

}  // namespace axqc::detail::fix
