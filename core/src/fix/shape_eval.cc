#include "fix/shape_eval.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <set>

#include "onnx_util.h"

namespace axqc::detail::fix {

namespace {

using TP = onnx::TensorProto;

std::int64_t Count(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

// Dims must be non-negative and the element count small.
bool SmallShape(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) {
    if (d < 0) return false;
    if (d != 0 && n > static_cast<std::int64_t>(kMaxFoldElements) / d) return false;
    n *= d;
  }
  return static_cast<std::size_t>(n) <= kMaxFoldElements;
}

std::vector<std::int64_t> Strides(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> s(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

bool FitsType(std::int64_t v, int type) {
  if (type == TP::INT32) {
    return v >= std::numeric_limits<std::int32_t>::min() &&
           v <= std::numeric_limits<std::int32_t>::max();
  }
  return true;
}

// Values of an input used as a list of ints (axes, starts, ...): any rank-0/1 INT64/INT32 tensor.
bool List(const IntTensor* t, std::vector<std::int64_t>* out) {
  if (t == nullptr || t->dims.size() > 1) return false;
  *out = t->v;
  return true;
}

std::vector<std::int64_t> AttrInts(const onnx::NodeProto& n, const char* name, bool* present) {
  const auto* a = FindAttr(n, name);
  *present = a != nullptr;
  if (a == nullptr) return {};
  return {a->ints().begin(), a->ints().end()};
}

bool NormalizeAxis(std::int64_t* axis, std::int64_t rank) {
  if (*axis < -rank || *axis >= rank) return false;
  if (*axis < 0) *axis += rank;
  return true;
}

bool Fail(std::string* why, std::string msg) {
  *why = std::move(msg);
  return false;
}

bool EvalShape(const onnx::NodeProto& n, std::int64_t opset, const std::vector<std::int64_t>& dims,
               IntTensor* out) {
  const auto r = static_cast<std::int64_t>(dims.size());
  std::int64_t start = 0, end = r;
  if (opset >= 15) {
    if (auto s = AttrInt(n, "start")) start = *s;
    if (auto e = AttrInt(n, "end")) end = *e;
  }
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<std::int64_t>(start, 0, r);
  end = std::clamp<std::int64_t>(end, 0, r);
  out->type = TP::INT64;
  out->v.clear();
  for (std::int64_t i = start; i < end; ++i) out->v.push_back(dims[static_cast<std::size_t>(i)]);
  out->dims = {static_cast<std::int64_t>(out->v.size())};
  out->from_shape = true;
  return true;
}

bool EvalGather(const onnx::NodeProto& n, const IntTensor& data, const IntTensor& idx,
                IntTensor* out, std::string* why) {
  const auto r = static_cast<std::int64_t>(data.dims.size());
  if (r == 0) return Fail(why, "Gather of a scalar");
  std::int64_t axis = AttrInt(n, "axis").value_or(0);
  if (!NormalizeAxis(&axis, r)) return Fail(why, "Gather axis out of range");
  const auto ax = static_cast<std::size_t>(axis);
  std::vector<std::int64_t> od(data.dims.begin(), data.dims.begin() + static_cast<long>(ax));
  od.insert(od.end(), idx.dims.begin(), idx.dims.end());
  od.insert(od.end(), data.dims.begin() + static_cast<long>(ax) + 1, data.dims.end());
  if (!SmallShape(od)) return Fail(why, "Gather result too large");
  const std::int64_t outer = Count({data.dims.begin(), data.dims.begin() + static_cast<long>(ax)});
  const std::int64_t inner =
      Count({data.dims.begin() + static_cast<long>(ax) + 1, data.dims.end()});
  const std::int64_t dim = data.dims[ax];
  out->type = data.type;
  out->dims = od;
  out->v.clear();
  for (std::int64_t o = 0; o < outer; ++o) {
    for (auto j : idx.v) {
      if (j < -dim || j >= dim) {
        return Fail(why, "Gather index " + std::to_string(j) + " out of range [" +
                             std::to_string(-dim) + ", " + std::to_string(dim) + ")");
      }
      if (j < 0) j += dim;
      for (std::int64_t k = 0; k < inner; ++k) {
        out->v.push_back(data.v[static_cast<std::size_t>((o * dim + j) * inner + k)]);
      }
    }
  }
  return true;
}

bool EvalUnsqueeze(const onnx::NodeProto& n, std::int64_t opset,
                   const std::vector<const IntTensor*>& in, IntTensor* out, std::string* why) {
  std::vector<std::int64_t> axes;
  if (opset >= 13) {
    if (in.size() < 2 || !List(in[1], &axes)) return Fail(why, "Unsqueeze axes not constant");
  } else {
    bool present = false;
    axes = AttrInts(n, "axes", &present);
  }
  const auto& x = *in[0];
  const auto rank = static_cast<std::int64_t>(x.dims.size() + axes.size());
  std::set<std::int64_t> at;
  for (auto a : axes) {
    if (!NormalizeAxis(&a, rank) || !at.insert(a).second) {
      return Fail(why, "Unsqueeze axes invalid or repeated");
    }
  }
  out->type = x.type;
  out->v = x.v;
  out->dims.clear();
  std::size_t k = 0;
  for (std::int64_t i = 0; i < rank; ++i) {
    out->dims.push_back(at.contains(i) ? 1 : x.dims[k++]);
  }
  return true;
}

bool EvalSqueeze(const onnx::NodeProto& n, std::int64_t opset,
                 const std::vector<const IntTensor*>& in, IntTensor* out, std::string* why) {
  std::vector<std::int64_t> axes;
  bool given = false;
  if (opset >= 13) {
    if (in.size() >= 2 && in[1] != nullptr) {
      if (!List(in[1], &axes)) return Fail(why, "Squeeze axes not a list");
      given = true;
    }
  } else {
    axes = AttrInts(n, "axes", &given);
  }
  const auto& x = *in[0];
  const auto rank = static_cast<std::int64_t>(x.dims.size());
  std::set<std::int64_t> at;
  if (given) {
    for (auto a : axes) {
      if (!NormalizeAxis(&a, rank) || !at.insert(a).second) {
        return Fail(why, "Squeeze axes invalid or repeated");
      }
      if (x.dims[static_cast<std::size_t>(a)] != 1) return Fail(why, "Squeeze of a dim != 1");
    }
  } else {
    for (std::int64_t i = 0; i < rank; ++i) {
      if (x.dims[static_cast<std::size_t>(i)] == 1) at.insert(i);
    }
  }
  out->type = x.type;
  out->v = x.v;
  out->dims.clear();
  for (std::int64_t i = 0; i < rank; ++i) {
    if (!at.contains(i)) out->dims.push_back(x.dims[static_cast<std::size_t>(i)]);
  }
  return true;
}

bool EvalConcat(const onnx::NodeProto& n, const std::vector<const IntTensor*>& in, IntTensor* out,
                std::string* why) {
  auto axis_attr = AttrInt(n, "axis");
  if (!axis_attr || in.empty()) return Fail(why, "Concat without axis or inputs");
  const auto& first = *in[0];
  const auto rank = static_cast<std::int64_t>(first.dims.size());
  if (rank == 0) return Fail(why, "Concat of scalars");
  std::int64_t axis = *axis_attr;
  if (!NormalizeAxis(&axis, rank)) return Fail(why, "Concat axis out of range");
  const auto ax = static_cast<std::size_t>(axis);
  std::vector<std::int64_t> od = first.dims;
  od[ax] = 0;
  for (const auto* t : in) {
    if (t == nullptr || t->dims.size() != first.dims.size() || t->type != first.type) {
      return Fail(why, "Concat inputs differ in rank or type");
    }
    for (std::size_t i = 0; i < od.size(); ++i) {
      if (i != ax && t->dims[i] != first.dims[i]) return Fail(why, "Concat inputs differ in shape");
    }
    od[ax] += t->dims[ax];
  }
  if (!SmallShape(od)) return Fail(why, "Concat result too large");
  const std::int64_t outer = Count({first.dims.begin(), first.dims.begin() + axis});
  out->type = first.type;
  out->dims = od;
  out->v.clear();
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const auto* t : in) {
      const std::int64_t chunk = Count({t->dims.begin() + axis, t->dims.end()});
      for (std::int64_t k = 0; k < chunk; ++k) {
        out->v.push_back(t->v[static_cast<std::size_t>(o * chunk + k)]);
      }
    }
  }
  return true;
}

bool EvalSlice(const onnx::NodeProto& n, std::int64_t opset,
               const std::vector<const IntTensor*>& in, IntTensor* out, std::string* why) {
  std::vector<std::int64_t> starts, ends, axes, steps;
  bool has_axes = false, has_steps = false;
  if (opset >= 10) {
    if (in.size() < 3 || !List(in[1], &starts) || !List(in[2], &ends)) {
      return Fail(why, "Slice starts/ends not constant");
    }
    if (in.size() > 3 && in[3] != nullptr) {
      if (!List(in[3], &axes)) return Fail(why, "Slice axes not a list");
      has_axes = true;
    }
    if (in.size() > 4 && in[4] != nullptr) {
      if (!List(in[4], &steps)) return Fail(why, "Slice steps not a list");
      has_steps = true;
    }
  } else {
    bool p = false;
    starts = AttrInts(n, "starts", &p);
    ends = AttrInts(n, "ends", &p);
    axes = AttrInts(n, "axes", &has_axes);
  }
  const auto& x = *in[0];
  const auto rank = static_cast<std::int64_t>(x.dims.size());
  if (starts.size() != ends.size()) return Fail(why, "Slice starts and ends differ in length");
  if (!has_axes) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (!has_steps) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    return Fail(why, "Slice parameter lengths differ");
  }
  std::vector<std::int64_t> first(x.dims.size(), 0), step(x.dims.size(), 1), od = x.dims;
  std::set<std::int64_t> seen;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    std::int64_t a = axes[i];
    if (!NormalizeAxis(&a, rank) || !seen.insert(a).second) {
      return Fail(why, "Slice axes invalid or repeated");
    }
    const auto ai = static_cast<std::size_t>(a);
    const std::int64_t d = x.dims[ai];
    const std::int64_t st = steps[i];
    if (st == 0) return Fail(why, "Slice step 0");
    std::int64_t s = starts[i], e = ends[i];
    if (s < 0) s += d;  // d >= 0 is small: no overflow, and the clamps below bound the result
    if (e < 0) e += d;
    if (st > 0) {
      s = std::clamp<std::int64_t>(s, 0, d);
      e = std::clamp<std::int64_t>(e, 0, d);
      od[ai] = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = std::clamp<std::int64_t>(s, 0, d - 1);
      e = std::clamp<std::int64_t>(e, -1, d - 1);
      od[ai] = s > e ? (s - e + (-st) - 1) / (-st) : 0;
    }
    first[ai] = s;
    step[ai] = st;
  }
  out->type = x.type;
  out->dims = od;
  out->v.clear();
  const std::int64_t total = Count(od);
  const auto in_strides = Strides(x.dims);
  std::vector<std::int64_t> pos(od.size(), 0);
  for (std::int64_t k = 0; k < total; ++k) {
    std::int64_t src = 0;
    for (std::size_t i = 0; i < od.size(); ++i)
      src += (first[i] + pos[i] * step[i]) * in_strides[i];
    out->v.push_back(x.v[static_cast<std::size_t>(src)]);
    for (std::size_t i = od.size(); i-- > 0;) {
      if (++pos[i] < od[i]) break;
      pos[i] = 0;
    }
  }
  return true;
}

bool EvalCast(const onnx::NodeProto& n, const IntTensor& x, IntTensor* out, std::string* why) {
  auto to = AttrInt(n, "to");
  if (!to || (*to != TP::INT64 && *to != TP::INT32 && *to != TP::BOOL)) {
    return Fail(why, "Cast to a type other than INT64/INT32/BOOL is not folded");
  }
  *out = x;
  out->type = static_cast<int>(*to);
  for (auto& v : out->v) {
    if (*to == TP::BOOL) {
      v = v != 0 ? 1 : 0;
    } else if (!FitsType(v, out->type)) {
      return Fail(why, "Cast of " + std::to_string(v) + " out of the INT32 range");
    }
  }
  return true;
}

// Numpy broadcasting: the output dims of `ins`, and for each input its dims padded to the
// output rank with the strides of its elements (0 along a broadcast dim).
struct Broadcast {
  std::vector<std::int64_t> od;
  std::vector<std::vector<std::int64_t>> strides;
};

bool BroadcastShapes(const std::vector<const std::vector<std::int64_t>*>& shapes, Broadcast* b) {
  std::size_t r = 0;
  for (const auto* s : shapes) r = std::max(r, s->size());
  b->od.assign(r, 1);
  std::vector<std::vector<std::int64_t>> padded;
  for (const auto* s : shapes) {
    std::vector<std::int64_t> d(r, 1);
    std::copy(s->begin(), s->end(), d.begin() + static_cast<long>(r - s->size()));
    for (std::size_t i = 0; i < r; ++i) {
      if (d[i] == b->od[i] || d[i] == 1) continue;
      if (b->od[i] != 1) return false;
      b->od[i] = d[i];
    }
    padded.push_back(std::move(d));
  }
  b->strides.clear();
  for (const auto& d : padded) {
    auto st = Strides(d);
    for (std::size_t i = 0; i < r; ++i) {
      if (d[i] == 1) st[i] = 0;
    }
    b->strides.push_back(std::move(st));
  }
  return true;
}

// Calls f(k, idx) for every output element k, idx[j] being the element of input j it reads.
template <class F>
bool ForEachBroadcast(const Broadcast& b, F f) {
  const std::int64_t total = Count(b.od);
  std::vector<std::int64_t> pos(b.od.size(), 0), idx(b.strides.size(), 0);
  for (std::int64_t k = 0; k < total; ++k) {
    for (std::size_t j = 0; j < b.strides.size(); ++j) {
      idx[j] = 0;
      for (std::size_t i = 0; i < pos.size(); ++i) idx[j] += pos[i] * b.strides[j][i];
    }
    if (!f(idx)) return false;
    for (std::size_t i = pos.size(); i-- > 0;) {
      if (++pos[i] < b.od[i]) break;
      pos[i] = 0;
    }
  }
  return true;
}

bool IsInt(int type) { return type == TP::INT64 || type == TP::INT32; }

// Add/Sub/Mul/Div/Mod on INT64/INT32 and Equal on INT64/INT32/BOOL, with broadcasting.
bool EvalBinary(const onnx::NodeProto& n, const IntTensor& a, const IntTensor& b, IntTensor* out,
                std::string* why) {
  const auto& op = n.op_type();
  if (a.type != b.type) return Fail(why, op + " inputs differ in type");
  if (op != "Equal" && !IsInt(a.type)) return Fail(why, op + " of " + ElemTypeName(a.type));
  Broadcast bc;
  if (!BroadcastShapes({&a.dims, &b.dims}, &bc)) return Fail(why, op + " shapes do not broadcast");
  if (!SmallShape(bc.od)) return Fail(why, op + " result too large");
  const bool fmod = op == "Mod" && AttrInt(n, "fmod").value_or(0) != 0;
  out->type = op == "Equal" ? static_cast<int>(TP::BOOL) : a.type;
  out->dims = bc.od;
  out->v.clear();
  return ForEachBroadcast(bc, [&](const std::vector<std::int64_t>& idx) {
    const std::int64_t x = a.v[static_cast<std::size_t>(idx[0])];
    const std::int64_t y = b.v[static_cast<std::size_t>(idx[1])];
    std::int64_t z = 0;
    bool overflow = false;
    if (op == "Equal") {
      z = x == y ? 1 : 0;
    } else if (op == "Add") {
      overflow = __builtin_add_overflow(x, y, &z);
    } else if (op == "Sub") {
      overflow = __builtin_sub_overflow(x, y, &z);
    } else if (op == "Mul") {
      overflow = __builtin_mul_overflow(x, y, &z);
    } else {  // Div, Mod
      if (y == 0) return Fail(why, "integer " + op + " by zero");
      if (x == std::numeric_limits<std::int64_t>::min() && y == -1) {
        overflow = true;
      } else if (op == "Mod") {
        // fmod = 0: the sign of the divisor (Python's %); fmod = 1: the sign of the dividend (C's
        // fmod, the remainder of the truncating division).
        z = x % y;
        if (!fmod && z != 0 && (z < 0) != (y < 0)) z += y;
      } else if (x % y != 0 && (x < 0) != (y < 0)) {
        // C++ (and onnxruntime) truncate; floor division would differ for a negative inexact
        // quotient, so only quotients on which both agree are folded.
        return Fail(why, "Div " + std::to_string(x) + " / " + std::to_string(y) +
                             " rounds differently by convention");
      } else {
        z = x / y;
      }
    }
    if (overflow || !FitsType(z, out->type)) return Fail(why, op + " overflows");
    out->v.push_back(z);
    return true;
  });
}

bool EvalNot(const IntTensor& x, IntTensor* out, std::string* why) {
  if (x.type != TP::BOOL) return Fail(why, "Not of " + ElemTypeName(x.type));
  *out = x;
  for (auto& v : out->v) v = v != 0 ? 0 : 1;
  return true;
}

bool EvalWhere(const IntTensor& c, const IntTensor& x, const IntTensor& y, IntTensor* out,
               std::string* why) {
  if (c.type != TP::BOOL) return Fail(why, "Where condition of " + ElemTypeName(c.type));
  if (x.type != y.type) return Fail(why, "Where inputs differ in type");
  Broadcast bc;
  if (!BroadcastShapes({&c.dims, &x.dims, &y.dims}, &bc)) {
    return Fail(why, "Where shapes do not broadcast");
  }
  if (!SmallShape(bc.od)) return Fail(why, "Where result too large");
  out->type = x.type;
  out->dims = bc.od;
  out->v.clear();
  return ForEachBroadcast(bc, [&](const std::vector<std::int64_t>& idx) {
    const bool cond = c.v[static_cast<std::size_t>(idx[0])] != 0;
    out->v.push_back(cond ? x.v[static_cast<std::size_t>(idx[1])]
                          : y.v[static_cast<std::size_t>(idx[2])]);
    return true;
  });
}

// A 1-D INT64 shape input (of Reshape, Expand, ConstantOfShape, Tile).
bool ShapeInput(const std::vector<const IntTensor*>& in, std::size_t slot, const std::string& what,
                std::vector<std::int64_t>* out, std::string* why) {
  if (in.size() <= slot || in[slot] == nullptr) return Fail(why, what + " not constant");
  const auto& t = *in[slot];
  if (t.type != TP::INT64 || t.dims.size() != 1) return Fail(why, what + " not a 1-D INT64 tensor");
  *out = t.v;
  return true;
}

bool EvalReshape(const onnx::NodeProto& n, std::int64_t opset,
                 const std::vector<const IntTensor*>& in, IntTensor* out, std::string* why) {
  std::vector<std::int64_t> shape;
  if (opset >= 5) {
    if (!ShapeInput(in, 1, "Reshape shape", &shape, why)) return false;
  } else {
    bool present = false;
    shape = AttrInts(n, "shape", &present);
    if (!present) return Fail(why, "Reshape without shape");
  }
  const bool allowzero = opset >= 14 && AttrInt(n, "allowzero").value_or(0) != 0;
  const auto& x = *in[0];
  std::vector<std::int64_t> od;
  std::optional<std::size_t> infer;
  bool zero = false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const std::int64_t d = shape[i];
    if (d == -1) {
      if (infer) return Fail(why, "Reshape shape with more than one -1");
      infer = i;
      od.push_back(1);
    } else if (d == 0 && !allowzero) {
      if (i >= x.dims.size())
        return Fail(why, "Reshape 0 at index " + std::to_string(i) + " beyond the input rank");
      od.push_back(x.dims[i]);
    } else if (d < 0) {
      return Fail(why, "Reshape dim " + std::to_string(d));
    } else {
      zero = zero || d == 0;
      od.push_back(d);
    }
  }
  if (allowzero && zero && infer) return Fail(why, "Reshape with allowzero, 0 and -1");
  std::int64_t known = 1;
  for (std::size_t i = 0; i < od.size(); ++i) {
    if (infer && i == *infer) continue;
    if (__builtin_mul_overflow(known, od[i], &known)) return Fail(why, "Reshape shape overflows");
  }
  const auto total = static_cast<std::int64_t>(x.v.size());
  if (infer) {
    if (known == 0 || total % known != 0) {
      return Fail(why,
                  "Reshape -1 cannot be inferred for " + std::to_string(total) + " element(s)");
    }
    od[*infer] = total / known;
  } else if (known != total) {
    return Fail(why,
                "Reshape to " + std::to_string(known) + " element(s) of " + std::to_string(total));
  }
  *out = x;
  out->dims = od;
  return true;
}

bool EvalConstantOfShape(const onnx::NodeProto& n, const std::vector<const IntTensor*>& in,
                         IntTensor* out, std::string* why) {
  std::vector<std::int64_t> shape;
  if (!ShapeInput(in, 0, "ConstantOfShape shape", &shape, why)) return false;
  const auto* a = FindAttr(n, "value");
  if (a == nullptr || !a->has_t()) {
    return Fail(why, "ConstantOfShape of FLOAT (the default value) is not folded");
  }
  const auto& t = a->t();
  if (!IsInt(t.data_type()) && t.data_type() != TP::BOOL) {
    return Fail(why, "ConstantOfShape of " + ElemTypeName(t.data_type()) + " is not folded");
  }
  auto v = ReadInts(t, nullptr, 1);
  if (!v || v->size() != 1) return Fail(why, "ConstantOfShape value is not one element");
  for (auto d : shape) {
    if (d < 0) return Fail(why, "ConstantOfShape dim " + std::to_string(d));
  }
  if (!SmallShape(shape)) return Fail(why, "ConstantOfShape result too large");
  out->type = t.data_type();
  out->dims = shape;
  out->v.assign(static_cast<std::size_t>(Count(shape)), (*v)[0]);
  return true;
}

bool EvalExpand(const std::vector<const IntTensor*>& in, IntTensor* out, std::string* why) {
  std::vector<std::int64_t> shape;
  if (!ShapeInput(in, 1, "Expand shape", &shape, why)) return false;
  for (auto d : shape) {
    if (d < 0) return Fail(why, "Expand dim " + std::to_string(d));
  }
  const auto& x = *in[0];
  Broadcast bc;
  if (!BroadcastShapes({&x.dims, &shape}, &bc)) return Fail(why, "Expand shapes do not broadcast");
  if (!SmallShape(bc.od)) return Fail(why, "Expand result too large");
  bc.strides.pop_back();  // the shape's own "elements" are not read
  out->type = x.type;
  out->dims = bc.od;
  out->v.clear();
  return ForEachBroadcast(bc, [&](const std::vector<std::int64_t>& idx) {
    out->v.push_back(x.v[static_cast<std::size_t>(idx[0])]);
    return true;
  });
}

bool EvalTile(std::int64_t opset, const std::vector<const IntTensor*>& in, IntTensor* out,
              std::string* why) {
  if (opset < 6) return Fail(why, "Tile-1 (tiles and axis inputs) is not evaluated");
  std::vector<std::int64_t> reps;
  if (!ShapeInput(in, 1, "Tile repeats", &reps, why)) return false;
  const auto& x = *in[0];
  if (reps.size() != x.dims.size()) return Fail(why, "Tile repeats differ from the input rank");
  std::vector<std::int64_t> od(x.dims.size());
  for (std::size_t i = 0; i < od.size(); ++i) {
    if (reps[i] < 0) return Fail(why, "Tile repeat " + std::to_string(reps[i]));
    if (__builtin_mul_overflow(x.dims[i], reps[i], &od[i])) return Fail(why, "Tile overflows");
  }
  if (!SmallShape(od)) return Fail(why, "Tile result too large");
  out->type = x.type;
  out->dims = od;
  out->v.clear();
  const auto st = Strides(x.dims);
  const std::int64_t total = Count(od);
  std::vector<std::int64_t> pos(od.size(), 0);
  for (std::int64_t k = 0; k < total; ++k) {
    std::int64_t src = 0;
    for (std::size_t i = 0; i < od.size(); ++i) src += (pos[i] % x.dims[i]) * st[i];
    out->v.push_back(x.v[static_cast<std::size_t>(src)]);
    for (std::size_t i = od.size(); i-- > 0;) {
      if (++pos[i] < od[i]) break;
      pos[i] = 0;
    }
  }
  return true;
}

bool EvalRange(const std::vector<const IntTensor*>& in, IntTensor* out, std::string* why) {
  if (in.size() != 3 || in[1] == nullptr || in[2] == nullptr) {
    return Fail(why, "Range without start, limit and delta");
  }
  std::int64_t s[3];
  for (std::size_t k = 0; k < 3; ++k) {
    const auto& t = *in[k];
    if (t.v.size() != 1 || t.dims.size() > 1) return Fail(why, "Range input not a scalar");
    if (t.type != in[0]->type || !IsInt(t.type)) {
      return Fail(why, "Range inputs differ in type or are not INT64/INT32");
    }
    s[k] = t.v[0];
  }
  const std::int64_t start = s[0], limit = s[1], delta = s[2];
  if (delta == 0) return Fail(why, "Range delta 0");
  std::int64_t diff = 0;
  // onnxruntime counts ceil(double(limit - start) / delta) elements: exact while both are
  // exact in a double (|x| <= 2^52 and at most 4096 elements).
  constexpr std::int64_t kExact = std::int64_t{1} << 52;
  if (__builtin_sub_overflow(limit, start, &diff) || diff > kExact || diff < -kExact ||
      delta > kExact || delta < -kExact) {
    return Fail(why, "Range span beyond exact arithmetic");
  }
  std::int64_t count = diff / delta;
  if (diff % delta != 0 && (diff > 0) == (delta > 0)) ++count;
  count = std::max<std::int64_t>(count, 0);
  if (static_cast<std::uint64_t>(count) > kMaxFoldElements) {
    return Fail(why, "Range result too large");
  }
  out->type = in[0]->type;
  out->dims = {count};
  out->v.clear();
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t v = start + i * delta;  // between start and limit: no overflow
    if (!FitsType(v, out->type)) return Fail(why, "Range overflows");
    out->v.push_back(v);
  }
  return true;
}

bool EvalReduceProd(const onnx::NodeProto& n, std::int64_t opset,
                    const std::vector<const IntTensor*>& in, IntTensor* out, std::string* why) {
  const auto& x = *in[0];
  if (!IsInt(x.type)) return Fail(why, "ReduceProd of " + ElemTypeName(x.type));
  const bool keepdims = AttrInt(n, "keepdims").value_or(1) != 0;
  std::vector<std::int64_t> axes;
  bool noop = false;
  if (opset >= 18) {
    noop = AttrInt(n, "noop_with_empty_axes").value_or(0) != 0;
    if (in.size() >= 2 && in[1] != nullptr && !List(in[1], &axes)) {
      return Fail(why, "ReduceProd axes not a list");
    }
  } else {
    bool present = false;
    axes = AttrInts(n, "axes", &present);
  }
  const auto rank = static_cast<std::int64_t>(x.dims.size());
  std::set<std::int64_t> at;
  if (axes.empty()) {
    if (noop) {
      *out = x;
      return true;
    }
    for (std::int64_t i = 0; i < rank; ++i) at.insert(i);
  }
  for (auto a : axes) {
    if (!NormalizeAxis(&a, rank) || !at.insert(a).second) {
      return Fail(why, "ReduceProd axes invalid or repeated");
    }
  }
  // Output dims (keepdims), then the reduction as a broadcast of the output over the input.
  std::vector<std::int64_t> kd = x.dims;
  for (auto a : at) kd[static_cast<std::size_t>(a)] = 1;
  std::vector<std::int64_t> acc(static_cast<std::size_t>(Count(kd)), 1);
  const auto ks = Strides(kd);
  const std::int64_t total = Count(x.dims);
  std::vector<std::int64_t> pos(x.dims.size(), 0);
  for (std::int64_t k = 0; k < total; ++k) {
    std::int64_t dst = 0;
    for (std::size_t i = 0; i < pos.size(); ++i) {
      if (!at.contains(static_cast<std::int64_t>(i))) dst += pos[i] * ks[i];
    }
    auto& p = acc[static_cast<std::size_t>(dst)];
    if (__builtin_mul_overflow(p, x.v[static_cast<std::size_t>(k)], &p) || !FitsType(p, x.type)) {
      return Fail(why, "ReduceProd overflows");
    }
    for (std::size_t i = pos.size(); i-- > 0;) {
      if (++pos[i] < x.dims[static_cast<std::size_t>(i)]) break;
      pos[i] = 0;
    }
  }
  out->type = x.type;
  out->v = std::move(acc);
  out->dims.clear();
  for (std::int64_t i = 0; i < rank; ++i) {
    if (!at.contains(i)) {
      out->dims.push_back(x.dims[static_cast<std::size_t>(i)]);
    } else if (keepdims) {
      out->dims.push_back(1);
    }
  }
  return true;
}

}  // namespace

bool IsFoldableOp(const std::string& op) {
  static const std::set<std::string, std::less<>> kOps = {"Shape",
                                                          "Size",
                                                          "Gather",
                                                          "Unsqueeze",
                                                          "Squeeze",
                                                          "Concat",
                                                          "Slice",
                                                          "Cast",
                                                          "Add",
                                                          "Sub",
                                                          "Mul",
                                                          "Div",
                                                          "Mod",
                                                          "Equal",
                                                          "Not",
                                                          "Where",
                                                          "ConstantOfShape",
                                                          "Expand",
                                                          "Range",
                                                          "ReduceProd",
                                                          "Tile",
                                                          "Reshape",
                                                          "Identity"};
  return kOps.contains(op);
}

bool EvaluateShapeOp(const onnx::NodeProto& n, std::int64_t opset,
                     const std::vector<std::int64_t>& shape_of,
                     const std::vector<const IntTensor*>& in, IntTensor* out, std::string* why) {
  const auto& op = n.op_type();
  if (n.output_size() != 1)
    return Fail(why, op + " with " + std::to_string(n.output_size()) + " outputs");
  if (op == "Shape") return EvalShape(n, opset, shape_of, out);
  if (op == "Size") {
    std::int64_t count = 1;
    for (auto d : shape_of) {
      if (d < 0 || __builtin_mul_overflow(count, d, &count)) return Fail(why, "Size overflows");
    }
    out->type = TP::INT64;
    out->dims.clear();
    out->v = {count};
    out->from_shape = true;
    return true;
  }
  if (in.empty() || in[0] == nullptr) return Fail(why, op + " without data input");
  auto second = [&] { return in.size() >= 2 && in[1] != nullptr; };
  bool ok = false;
  if (op == "Gather") {
    if (second() && !IsInt(in[1]->type)) return Fail(why, "Gather indices not INT64/INT32");
    ok = second() && EvalGather(n, *in[0], *in[1], out, why);
  } else if (op == "Unsqueeze") {
    ok = EvalUnsqueeze(n, opset, in, out, why);
  } else if (op == "Squeeze") {
    ok = EvalSqueeze(n, opset, in, out, why);
  } else if (op == "Concat") {
    ok = EvalConcat(n, in, out, why);
  } else if (op == "Slice") {
    ok = EvalSlice(n, opset, in, out, why);
  } else if (op == "Cast") {
    ok = EvalCast(n, *in[0], out, why);
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod" ||
             op == "Equal") {
    ok = in.size() == 2 && second() && EvalBinary(n, *in[0], *in[1], out, why);
  } else if (op == "Not") {
    ok = EvalNot(*in[0], out, why);
  } else if (op == "Where") {
    ok = in.size() == 3 && second() && in[2] != nullptr &&
         EvalWhere(*in[0], *in[1], *in[2], out, why);
  } else if (op == "ConstantOfShape") {
    ok = EvalConstantOfShape(n, in, out, why);
  } else if (op == "Expand") {
    ok = EvalExpand(in, out, why);
  } else if (op == "Tile") {
    ok = EvalTile(opset, in, out, why);
  } else if (op == "Range") {
    ok = EvalRange(in, out, why);
  } else if (op == "ReduceProd") {
    ok = EvalReduceProd(n, opset, in, out, why);
  } else if (op == "Reshape") {
    ok = EvalReshape(n, opset, in, out, why);
  } else if (op == "Identity") {
    *out = *in[0];
    ok = true;
  } else {
    return Fail(why, op + " is not evaluated");
  }
  if (!ok) {
    if (why->empty()) *why = op + " inputs missing";
    return false;
  }
  out->from_shape = false;
  for (const auto* t : in) out->from_shape = out->from_shape || (t != nullptr && t->from_shape);
  if (!SmallShape(out->dims) || static_cast<std::int64_t>(out->v.size()) != Count(out->dims)) {
    return Fail(why, op + " result has an unexpected size");
  }
  return true;
}

}  // namespace axqc::detail::fix
