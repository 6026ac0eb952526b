// cast-of-initializer: `Cast(initializer) -> consumers` becomes one initializer holding the cast
// values, under the Cast's output name (so every consumer reads the same name). PyTorch's dynamo
// exporter (torchlib) writes the zero point of a fake-quant as Cast(int32 buffer, to=UINT8/INT8)
// in front of QuantizeLinear/DequantizeLinear; the spec wants the zero point as an initializer.
// Only conversions that are exact for every element are folded: an integer that fits the target
// type, a float that the target type represents exactly (no rounding, no NaN), an integral float
// into an integer type that holds it. Anything else (BOOL, FLOAT16, UINT64, strings, a value that
// would wrap or round, more than 1M elements) leaves the Cast alone (reported). A Cast whose
// output is a graph output is kept. Main graph only.
#include <cmath>
#include <cstring>
#include <limits>

#include "fix/session.h"

namespace axqc::detail::fix {

namespace {

using TP = onnx::TensorProto;

struct IntRange {
  long double lo, hi;
};

std::optional<IntRange> IntegerRange(int t) {
  switch (t) {
    case TP::INT8:
      return IntRange{-128.0L, 127.0L};
    case TP::UINT8:
      return IntRange{0.0L, 255.0L};
    case TP::INT16:
      return IntRange{-32768.0L, 32767.0L};
    case TP::UINT16:
      return IntRange{0.0L, 65535.0L};
    case TP::INT32:
      return IntRange{-2147483648.0L, 2147483647.0L};
    case TP::UINT32:
      return IntRange{0.0L, 4294967295.0L};
    case TP::INT64:
      return IntRange{-9223372036854775808.0L, 9223372036854775807.0L};
    default:
      return std::nullopt;
  }
}

bool FloatTarget(int t) { return t == TP::FLOAT || t == TP::DOUBLE; }

// Little-endian bytes of `v` as elem type `t` (an integer type of IntegerRange or FLOAT/DOUBLE).
void Append(std::string& raw, int t, long double v) {
  auto put = [&raw](const void* p, std::size_t n) { raw.append(static_cast<const char*>(p), n); };
  switch (t) {
    case TP::INT8: {
      const auto x = static_cast<std::int8_t>(v);
      put(&x, 1);
      break;
    }
    case TP::UINT8: {
      const auto x = static_cast<std::uint8_t>(v);
      put(&x, 1);
      break;
    }
    case TP::INT16: {
      const auto x = static_cast<std::int16_t>(v);
      put(&x, 2);
      break;
    }
    case TP::UINT16: {
      const auto x = static_cast<std::uint16_t>(v);
      put(&x, 2);
      break;
    }
    case TP::INT32: {
      const auto x = static_cast<std::int32_t>(v);
      put(&x, 4);
      break;
    }
    case TP::UINT32: {
      const auto x = static_cast<std::uint32_t>(v);
      put(&x, 4);
      break;
    }
    case TP::INT64: {
      const auto x = static_cast<std::int64_t>(v);
      put(&x, 8);
      break;
    }
    case TP::FLOAT: {
      const auto x = static_cast<float>(v);
      put(&x, 4);
      break;
    }
    default: {
      const auto x = static_cast<double>(v);
      put(&x, 8);
      break;
    }
  }
}

// The reason the cast of `v` to `to` is not exact, or "" when it is.
std::string Inexact(long double v, int to) {
  if (std::isnan(v) || std::isinf(v)) return "a value is NaN or infinite";
  if (auto r = IntegerRange(to)) {
    if (v != std::floor(v)) return "a value is not an integer";
    if (v < r->lo || v > r->hi) return "a value does not fit " + ElemTypeName(to);
    return "";
  }
  if (to == TP::FLOAT) {
    const auto f = static_cast<float>(v);
    if (static_cast<long double>(f) != v) return "a value is not exactly representable as FLOAT";
    return "";
  }
  const auto d = static_cast<double>(v);
  if (static_cast<long double>(d) != v) return "a value is not exactly representable as DOUBLE";
  return "";
}

}  // namespace

void CastOfInitializer(Session& s) {
  auto& g = s.graph();
  std::unordered_set<std::string> outputs;
  for (const auto& o : g.output()) outputs.insert(o.name());
  std::vector<bool> drop(static_cast<std::size_t>(g.node_size()), false);
  std::vector<TP> made;
  std::unordered_set<std::string> dropped_inputs;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    if (n.op_type() != "Cast" || !IsOnnxDomain(n) || n.input_size() != 1 || n.output_size() != 1 ||
        n.output(0).empty()) {
      continue;
    }
    const TP* src = s.ConstantInitializer(n.input(0));
    if (src == nullptr) continue;
    const std::string place = NodeLabel(n, i);
    if (outputs.contains(n.output(0))) {
      s.Skipped(place, "its output '" + n.output(0) +
                           "' is a graph output (kept so that the outputs stay)");
      continue;
    }
    const int to = static_cast<int>(AttrInt(n, "to").value_or(0));
    const int from = src->data_type();
    if (!IntegerRange(to) && !FloatTarget(to)) {
      s.Skipped(place, "the cast to " + ElemTypeName(to) +
                           " is not folded (integer and FLOAT/"
                           "DOUBLE targets only)");
      continue;
    }
    std::vector<long double> values;
    if (IntegerRange(from)) {
      auto v = ReadInts(*src, s.ext());
      if (!v) {
        s.Skipped(place, "the values of '" + n.input(0) + "' are not readable");
        continue;
      }
      for (auto x : *v) values.push_back(static_cast<long double>(x));
    } else if (FloatTarget(from)) {
      auto v = ReadFloats(*src, s.ext());
      if (!v) {
        s.Skipped(place, "the values of '" + n.input(0) + "' are not readable");
        continue;
      }
      for (auto x : *v) values.push_back(static_cast<long double>(x));
    } else {
      s.Skipped(place, "a cast from " + ElemTypeName(from) +
                           " is not folded (integer and FLOAT/DOUBLE sources only)");
      continue;
    }
    const auto count = ElementCount(*src);
    if (!count || static_cast<std::size_t>(*count) != values.size()) {
      s.Skipped(place, "the values of '" + n.input(0) + "' do not match its shape");
      continue;
    }
    std::string why;
    for (auto v : values) {
      why = Inexact(v, to);
      if (!why.empty()) break;
    }
    if (!why.empty()) {
      s.Skipped(place, "the cast of '" + n.input(0) + "' to " + ElemTypeName(to) +
                           " is not exact: " + why);
      continue;
    }
    TP t;
    t.set_name(n.output(0));
    t.set_data_type(to);
    for (auto d : src->dims()) t.add_dims(d);
    std::string raw;
    for (auto v : values) Append(raw, to, v);
    t.set_raw_data(std::move(raw));
    made.push_back(std::move(t));
    dropped_inputs.insert(n.input(0));
    drop[static_cast<std::size_t>(i)] = true;
    s.Applied(place);
  }
  if (made.empty()) return;
  std::unordered_set<std::string> names;
  for (const auto& t : made) names.insert(t.name());
  auto* vis = g.mutable_value_info();
  for (int k = vis->size() - 1; k >= 0; --k) {
    if (names.contains(vis->Get(k).name())) vis->DeleteSubrange(k, 1);
  }
  RemoveNodes(g, drop);
  for (auto& t : made) *g.add_initializer() = std::move(t);
  s.Changed();
  if (DropUnusedInitializers(s, dropped_inputs) > 0) s.Changed();
}

}  // namespace axqc::detail::fix
