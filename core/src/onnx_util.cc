#include "onnx_util.h"

#include <onnx/defs/schema.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace axqc::detail {

using TP = onnx::TensorProto;

// Element types of newer ONNX releases, by number, so that the checker compiles against every
// supported ONNX library (the enum names exist from ONNX 1.18 / 1.20 on).
constexpr int kFloat4E2M1 = 23;  // IR 11
constexpr int kFloat8E8M0 = 24;  // IR 12
constexpr int kUint2 = 25;       // IR 13
constexpr int kInt2 = 26;        // IR 13

std::string OnnxReleaseOfOpset(int opset) {
  // ONNX's docs/Versioning.md, "Released Versions": the first release of each ai.onnx opset.
  static constexpr std::string_view kFirstRelease[] = {
      "",     "1.0",  "1.1",  "1.1",  "1.1",  "1.1",  "1.1.2", "1.2",  "1.3",  "1.4.1",
      "1.5",  "1.6",  "1.7",  "1.8",  "1.9",  "1.10", "1.11",  "1.12", "1.13", "1.14",
      "1.15", "1.16", "1.17", "1.18", "1.19", "1.20", "1.21",  "1.22"};
  if (opset <= 0 || opset >= static_cast<int>(std::size(kFirstRelease))) return {};
  return std::string(kFirstRelease[opset]);
}

std::optional<OpOrigin> OnnxOpOrigin(std::string_view op_type) {
  const std::string op(op_type);
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const auto it = ranges.find(onnx::ONNX_DOMAIN);
  const int max_opset = it == ranges.end() ? 0 : it->second.second;
  const auto* newest = onnx::OpSchemaRegistry::Schema(op, max_opset, onnx::ONNX_DOMAIN);
  if (newest == nullptr) return std::nullopt;
  // Schema(op, v) is the newest schema with since_version <= v: step down through the versions.
  int first = newest->SinceVersion();
  while (first > 1) {
    const auto* older = onnx::OpSchemaRegistry::Schema(op, first - 1, onnx::ONNX_DOMAIN);
    if (older == nullptr) break;
    first = older->SinceVersion();
  }
  return OpOrigin{.opset = first, .release = OnnxReleaseOfOpset(first)};
}

std::string ElemTypeName(int t) {
  switch (t) {
    case TP::FLOAT: return "FLOAT";
    case TP::UINT8: return "UINT8";
    case TP::INT8: return "INT8";
    case TP::UINT16: return "UINT16";
    case TP::INT16: return "INT16";
    case TP::INT32: return "INT32";
    case TP::INT64: return "INT64";
    case TP::STRING: return "STRING";
    case TP::BOOL: return "BOOL";
    case TP::FLOAT16: return "FLOAT16";
    case TP::DOUBLE: return "DOUBLE";
    case TP::UINT32: return "UINT32";
    case TP::UINT64: return "UINT64";
    case TP::COMPLEX64: return "COMPLEX64";
    case TP::COMPLEX128: return "COMPLEX128";
    case TP::BFLOAT16: return "BFLOAT16";
    case TP::FLOAT8E4M3FN: return "FLOAT8E4M3FN";
    case TP::FLOAT8E4M3FNUZ: return "FLOAT8E4M3FNUZ";
    case TP::FLOAT8E5M2: return "FLOAT8E5M2";
    case TP::FLOAT8E5M2FNUZ: return "FLOAT8E5M2FNUZ";
    case TP::UINT4: return "UINT4";
    case TP::INT4: return "INT4";
    case TP::UNDEFINED: return "UNDEFINED";
    case kFloat4E2M1: return "FLOAT4E2M1";
    case kFloat8E8M0: return "FLOAT8E8M0";
    case kUint2: return "UINT2";
    case kInt2: return "INT2";
    default: return "type(" + std::to_string(t) + ")";
  }
}

bool IsFloatType(int t) {
  return t == TP::FLOAT || t == TP::DOUBLE || t == TP::FLOAT16 || t == TP::BFLOAT16;
}

bool IsIntegerType(int t) {
  switch (t) {
    case TP::UINT8: case TP::INT8: case TP::UINT16: case TP::INT16: case TP::INT32:
    case TP::INT64: case TP::UINT32: case TP::UINT64: case TP::BOOL: case TP::UINT4:
    case TP::INT4:
      return true;
    default:
      return false;
  }
}

int ElemBits(int t) {
  switch (t) {
    case kUint2: case kInt2: return 2;
    case TP::UINT4: case TP::INT4: case kFloat4E2M1: return 4;
    case TP::UINT8: case TP::INT8: case TP::BOOL: case TP::FLOAT8E4M3FN:
    case TP::FLOAT8E4M3FNUZ: case TP::FLOAT8E5M2: case TP::FLOAT8E5M2FNUZ: case kFloat8E8M0:
      return 8;
    case TP::UINT16: case TP::INT16: case TP::FLOAT16: case TP::BFLOAT16: return 16;
    case TP::INT32: case TP::UINT32: case TP::FLOAT: return 32;
    case TP::INT64: case TP::UINT64: case TP::DOUBLE: case TP::COMPLEX64: return 64;
    case TP::COMPLEX128: return 128;
    default: return 0;
  }
}

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, std::string_view name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::optional<std::int64_t> AttrInt(const onnx::NodeProto& n, std::string_view name) {
  const auto* a = FindAttr(n, name);
  if (a == nullptr || a->type() != onnx::AttributeProto::INT) return std::nullopt;
  return a->i();
}

std::optional<float> AttrFloat(const onnx::NodeProto& n, std::string_view name) {
  const auto* a = FindAttr(n, name);
  if (a == nullptr || a->type() != onnx::AttributeProto::FLOAT) return std::nullopt;
  return a->f();
}

std::optional<std::int64_t> ElementCount(const TP& t) {
  std::int64_t n = 1;
  for (auto d : t.dims()) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d) return std::nullopt;
    n *= d;
  }
  return n;
}

bool IsExternal(const TP& t) { return t.has_data_location() && t.data_location() == TP::EXTERNAL; }

std::string TensorSite::Describe(const TP& t) const {
  std::string s = std::string(subgraph ? "subgraph " : "") + (sparse ? "sparse " : "") +
                  (node == nullptr ? "initializer" : "tensor") + " '" + t.name() + "'";
  if (node != nullptr) {
    s += " (attribute of " + node->op_type() +
         (node->name().empty() ? "" : " '" + node->name() + "'") + ")";
  }
  return s;
}

namespace {

std::optional<std::size_t> ExpectedRawBytes(const TP& t) {
  auto n = ElementCount(t);
  int bits = ElemBits(t.data_type());
  if (!n || bits == 0) return std::nullopt;
  if (bits == 4) return static_cast<std::size_t>(*n / 2 + *n % 2);  // no overflow at INT64_MAX
  if (bits == 2) return static_cast<std::size_t>(*n / 4 + (*n % 4 != 0 ? 1 : 0));
  if (*n > std::numeric_limits<std::int64_t>::max() / (bits / 8)) return std::nullopt;
  return static_cast<std::size_t>(*n) * static_cast<std::size_t>(bits / 8);
}

// Fetches raw little-endian bytes (raw_data or external) if the tensor uses them.
std::optional<std::string> RawBytes(const TP& t, const ExternalDataReader* ext, std::size_t max_bytes) {
  if (IsExternal(t)) {
    if (ext == nullptr) return std::nullopt;
    return ext->Read(t, max_bytes);
  }
  if (t.has_raw_data()) {
    if (t.raw_data().size() > max_bytes) return std::nullopt;
    return t.raw_data();
  }
  return std::nullopt;
}

template <typename T>
T LoadLE(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) {
    auto* b = reinterpret_cast<unsigned char*>(&v);
    for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
  }
  return v;
}

float HalfToFloat(std::uint16_t h) {
  std::uint32_t sign = (h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1f;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

std::int64_t Nibble(std::uint8_t byte, bool high, bool is_signed) {
  std::int64_t v = high ? (byte >> 4) & 0xf : byte & 0xf;
  if (is_signed && v >= 8) v -= 16;
  return v;
}

}  // namespace

std::string CheckTensorStorage(const TP& t) {
  if (IsExternal(t) || t.data_type() == TP::STRING) return {};
  auto n = ElementCount(t);
  if (!n) return "dims are negative or their product overflows int64";
  if (t.has_raw_data()) {
    auto want = ExpectedRawBytes(t);
    if (want && t.raw_data().size() != *want) {
      return "raw_data holds " + Count(static_cast<std::int64_t>(t.raw_data().size()), "byte") +
             " but " + ElemTypeName(t.data_type()) + " dims " +
             FormatDims({t.dims().begin(), t.dims().end()}) + " need " + std::to_string(*want);
    }
    return {};
  }
  if (t.data_type() == TP::INT4 || t.data_type() == TP::UINT4) {
    auto have = static_cast<std::int64_t>(t.int32_data_size());
    const std::int64_t packed = *n / 2 + *n % 2;  // (n + 1) / 2 without overflow
    if (have != packed && have != *n) {
      return "int32_data holds " + std::to_string(have) + (have == 1 ? " entry" : " entries") +
             " but " + ElemTypeName(t.data_type()) + " with " + Count(*n, "element") + " needs " +
             std::to_string(packed) + " packed bytes";
    }
  }
  return {};
}

std::optional<std::vector<double>> ReadFloats(const TP& t, const ExternalDataReader* ext,
                                              std::size_t max_elems) {
  auto n = ElementCount(t);
  if (!n || static_cast<std::uint64_t>(*n) > max_elems) return std::nullopt;
  const auto count = static_cast<std::size_t>(*n);
  std::vector<double> out;
  out.reserve(count);
  const int dt = t.data_type();
  if (dt != TP::FLOAT && dt != TP::DOUBLE && dt != TP::FLOAT16 && dt != TP::BFLOAT16) {
    auto ints = ReadInts(t, ext, max_elems);
    if (!ints) return std::nullopt;
    for (auto v : *ints) out.push_back(static_cast<double>(v));
    return out;
  }
  const int bytes = ElemBits(dt) / 8;
  if (auto raw = RawBytes(t, ext, count * static_cast<std::size_t>(bytes) + 1)) {
    if (raw->size() != count * static_cast<std::size_t>(bytes)) return std::nullopt;
    for (std::size_t i = 0; i < count; ++i) {
      const char* p = raw->data() + i * static_cast<std::size_t>(bytes);
      switch (dt) {
        case TP::FLOAT: out.push_back(LoadLE<float>(p)); break;
        case TP::DOUBLE: out.push_back(LoadLE<double>(p)); break;
        case TP::FLOAT16: out.push_back(HalfToFloat(LoadLE<std::uint16_t>(p))); break;
        default: out.push_back(std::bit_cast<float>(std::uint32_t{LoadLE<std::uint16_t>(p)} << 16));
      }
    }
    return out;
  }
  if (IsExternal(t) || t.has_raw_data()) return std::nullopt;
  if (dt == TP::FLOAT) {
    if (static_cast<std::size_t>(t.float_data_size()) != count) return std::nullopt;
    for (float v : t.float_data()) out.push_back(v);
  } else if (dt == TP::DOUBLE) {
    if (static_cast<std::size_t>(t.double_data_size()) != count) return std::nullopt;
    for (double v : t.double_data()) out.push_back(v);
  } else {
    if (static_cast<std::size_t>(t.int32_data_size()) != count) return std::nullopt;
    for (auto v : t.int32_data()) {
      auto h = static_cast<std::uint16_t>(v);
      out.push_back(dt == TP::FLOAT16 ? HalfToFloat(h)
                                       : std::bit_cast<float>(std::uint32_t{h} << 16));
    }
  }
  return out;
}

std::optional<std::vector<std::int64_t>> ReadInts(const TP& t, const ExternalDataReader* ext,
                                                  std::size_t max_elems) {
  auto n = ElementCount(t);
  if (!n || static_cast<std::uint64_t>(*n) > max_elems) return std::nullopt;
  const auto count = static_cast<std::size_t>(*n);
  const int dt = t.data_type();
  if (!IsIntegerType(dt)) return std::nullopt;
  std::vector<std::int64_t> out;
  out.reserve(count);
  const bool four = dt == TP::INT4 || dt == TP::UINT4;
  const bool sgn4 = dt == TP::INT4;
  if (auto raw = RawBytes(t, ext, (ExpectedRawBytes(t).value_or(0)) + 1)) {
    auto want = ExpectedRawBytes(t);
    if (!want || raw->size() != *want) return std::nullopt;
    const char* p = raw->data();
    for (std::size_t i = 0; i < count; ++i) {
      switch (dt) {
        case TP::INT4: case TP::UINT4:
          out.push_back(Nibble(static_cast<std::uint8_t>(p[i / 2]), (i % 2) == 1, sgn4));
          break;
        case TP::INT8: out.push_back(static_cast<std::int8_t>(p[i])); break;
        case TP::UINT8: case TP::BOOL: out.push_back(static_cast<std::uint8_t>(p[i])); break;
        case TP::INT16: out.push_back(LoadLE<std::int16_t>(p + 2 * i)); break;
        case TP::UINT16: out.push_back(LoadLE<std::uint16_t>(p + 2 * i)); break;
        case TP::INT32: out.push_back(LoadLE<std::int32_t>(p + 4 * i)); break;
        case TP::UINT32: out.push_back(LoadLE<std::uint32_t>(p + 4 * i)); break;
        case TP::INT64: out.push_back(LoadLE<std::int64_t>(p + 8 * i)); break;
        default: out.push_back(static_cast<std::int64_t>(LoadLE<std::uint64_t>(p + 8 * i)));
      }
    }
    return out;
  }
  if (IsExternal(t) || t.has_raw_data()) return std::nullopt;
  if (dt == TP::INT64) {
    if (static_cast<std::size_t>(t.int64_data_size()) != count) return std::nullopt;
    out.assign(t.int64_data().begin(), t.int64_data().end());
  } else if (dt == TP::UINT32 || dt == TP::UINT64) {
    if (static_cast<std::size_t>(t.uint64_data_size()) != count) return std::nullopt;
    for (auto v : t.uint64_data()) out.push_back(static_cast<std::int64_t>(v));
  } else if (four) {
    const auto have = static_cast<std::size_t>(t.int32_data_size());
    if (have == (count + 1) / 2) {  // packed, two per entry
      for (std::size_t i = 0; i < count; ++i) {
        out.push_back(Nibble(static_cast<std::uint8_t>(t.int32_data(static_cast<int>(i / 2))),
                             (i % 2) == 1, sgn4));
      }
    } else if (have == count) {  // one value per entry
      for (auto v : t.int32_data()) out.push_back(v);
    } else {
      return std::nullopt;
    }
  } else {
    if (static_cast<std::size_t>(t.int32_data_size()) != count) return std::nullopt;
    out.assign(t.int32_data().begin(), t.int32_data().end());
  }
  return out;
}

namespace {

// Length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates, at most
// U+10FFFF), or 0 if invalid.
std::size_t Utf8Length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size() || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

std::string CleanText(std::string_view s) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F) {
      out.push_back(static_cast<char>(c));
      ++i;
    } else if (c == '\t' || c == '\n' || c == '\r') {
      out.push_back(' ');
      ++i;
    } else if (c < 0x80) {  // other C0 controls and DEL
      out += kReplacement;
      ++i;
    } else if (auto n = Utf8Length(s, i); n == 0) {
      out += kReplacement;
      ++i;
    } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) {
      out += kReplacement;  // C1 controls U+0080..U+009F (CSI and friends)
      i += 2;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

void CleanTextInPlace(std::string& s) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7F) {
      s = CleanText(s);
      return;
    }
  }
}

std::string Count(std::int64_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

std::string FormatNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os.precision(7);
  os << v;
  return os.str();
}

template <typename T>
static std::string FormatListImpl(const std::vector<T>& v, std::size_t max) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size() && i < max; ++i) {
    if (i) s += ", ";
    if constexpr (std::is_floating_point_v<T>) {
      s += FormatNumber(v[i]);
    } else {
      s += std::to_string(v[i]);
    }
  }
  if (v.size() > max) s += ", ... (" + std::to_string(v.size()) + " values)";
  return s + "]";
}

std::string FormatList(const std::vector<double>& v, std::size_t max) {
  return FormatListImpl(v, max);
}
std::string FormatList(const std::vector<std::int64_t>& v, std::size_t max) {
  return FormatListImpl(v, max);
}
std::string FormatDims(const std::vector<std::int64_t>& dims) { return FormatListImpl(dims, 16); }

}  // namespace axqc::detail
