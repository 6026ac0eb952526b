#include "fix/shape_eval.h"

#include <algorithm>
#include <limits>
#include <numeric>
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
  if (!to || (*to != TP::INT64 && *to != TP::INT32)) {
    return Fail(why, "Cast to a type other than INT64/INT32 is not folded");
  }
  for (auto v : x.v) {
    if (!FitsType(v, static_cast<int>(*to))) {
      return Fail(why, "Cast of " + std::to_string(v) + " out of the INT32 range");
    }
  }
  *out = x;
  out->type = static_cast<int>(*to);
  return true;
}

bool EvalArith(const std::string& op, const IntTensor& a, const IntTensor& b, IntTensor* out,
               std::string* why) {
  if (a.type != b.type) return Fail(why, op + " inputs differ in type");
  const std::size_t r = std::max(a.dims.size(), b.dims.size());
  std::vector<std::int64_t> da(r, 1), db(r, 1), od(r, 1);
  std::copy(a.dims.begin(), a.dims.end(), da.begin() + static_cast<long>(r - a.dims.size()));
  std::copy(b.dims.begin(), b.dims.end(), db.begin() + static_cast<long>(r - b.dims.size()));
  for (std::size_t i = 0; i < r; ++i) {
    if (da[i] != db[i] && da[i] != 1 && db[i] != 1)
      return Fail(why, op + " shapes do not broadcast");
    od[i] = da[i] == 1 ? db[i] : da[i];
  }
  if (!SmallShape(od)) return Fail(why, op + " result too large");
  const auto sa = Strides(da), sb = Strides(db);
  const std::int64_t total = Count(od);
  out->type = a.type;
  out->dims = od;
  out->v.clear();
  std::vector<std::int64_t> pos(r, 0);
  for (std::int64_t k = 0; k < total; ++k) {
    std::int64_t ia = 0, ib = 0;
    for (std::size_t i = 0; i < r; ++i) {
      ia += (da[i] == 1 ? 0 : pos[i]) * sa[i];
      ib += (db[i] == 1 ? 0 : pos[i]) * sb[i];
    }
    const std::int64_t x = a.v[static_cast<std::size_t>(ia)];
    const std::int64_t y = b.v[static_cast<std::size_t>(ib)];
    std::int64_t z = 0;
    bool overflow = false;
    if (op == "Add") {
      overflow = __builtin_add_overflow(x, y, &z);
    } else if (op == "Sub") {
      overflow = __builtin_sub_overflow(x, y, &z);
    } else if (op == "Mul") {
      overflow = __builtin_mul_overflow(x, y, &z);
    } else {
      if (y == 0) return Fail(why, "integer division by zero");
      if (x == std::numeric_limits<std::int64_t>::min() && y == -1) overflow = true;
      // C++ (and onnxruntime) truncate; floor division would differ for a negative inexact
      // quotient, so only quotients on which both agree are folded.
      else if (x % y != 0 && (x < 0) != (y < 0)) {
        return Fail(why, "Div " + std::to_string(x) + " / " + std::to_string(y) +
                             " rounds differently by convention");
      } else {
        z = x / y;
      }
    }
    if (overflow || !FitsType(z, a.type)) return Fail(why, op + " overflows");
    out->v.push_back(z);
    for (std::size_t i = r; i-- > 0;) {
      if (++pos[i] < od[i]) break;
      pos[i] = 0;
    }
  }
  return true;
}

}  // namespace

bool IsFoldableOp(const std::string& op) {
  static const std::set<std::string, std::less<>> kOps = {
      "Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice",
      "Cast",  "Add",    "Sub",       "Mul",     "Div"};
  return kOps.contains(op);
}

bool EvaluateShapeOp(const onnx::NodeProto& n, std::int64_t opset,
                     const std::vector<std::int64_t>& shape_of,
                     const std::vector<const IntTensor*>& in, IntTensor* out, std::string* why) {
  const auto& op = n.op_type();
  if (n.output_size() != 1)
    return Fail(why, op + " with " + std::to_string(n.output_size()) + " outputs");
  if (op == "Shape") return EvalShape(n, opset, shape_of, out);
  if (in.empty() || in[0] == nullptr) return Fail(why, op + " without data input");
  bool ok = false;
  if (op == "Gather") {
    ok = in.size() >= 2 && in[1] != nullptr && EvalGather(n, *in[0], *in[1], out, why);
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
  } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    ok = in.size() == 2 && in[1] != nullptr && EvalArith(op, *in[0], *in[1], out, why);
  } else {
    return Fail(why, op + " is not evaluated");
  }
  if (!ok) return false;
  out->from_shape = false;
  for (const auto* t : in) out->from_shape = out->from_shape || (t != nullptr && t->from_shape);
  if (!SmallShape(out->dims) || static_cast<std::int64_t>(out->v.size()) != Count(out->dims)) {
    return Fail(why, op + " result has an unexpected size");
  }
  return true;
}

}  // namespace axqc::detail::fix
