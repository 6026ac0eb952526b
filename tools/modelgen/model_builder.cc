#include "modelgen/model_builder.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace axqc::modelgen {

namespace {

using onnx::TensorProto;

// ---------------------------------------------------------------- deterministic generator

// 64-bit LCG (Knuth's MMIX constants) seeded with FNV-1a of a name: reproducible across
// platforms and runs, different per tensor.
class Lcg {
 public:
  explicit Lcg(const std::string& seed_name) {
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : seed_name) {
      h ^= c;
      h *= 1099511628211ULL;
    }
    state_ = h;
  }
  uint32_t Next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state_ >> 32);
  }
  int64_t Int(int64_t lo, int64_t hi) {  // inclusive
    const auto span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(Next() % span);
  }
  float Float(float lo, float hi) {  // [lo, hi)
    const float u = static_cast<float>(Next() >> 8) / 16777216.0f;
    return lo + (hi - lo) * u;
  }

 private:
  uint64_t state_;
};

// ---------------------------------------------------------------- byte helpers

void PutLE(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  }
}

int64_t NumElements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    n *= d;
  }
  return n;
}

// Element types of newer ONNX releases, by number, so that the builder compiles against every
// supported ONNX library (the enum names exist from ONNX 1.18 / 1.20 on).
constexpr int kFloat4E2M1 = 23;  // IR 11
constexpr int kFloat8E8M0 = 24;  // IR 12
constexpr int kUint2 = 25;       // IR 13
constexpr int kInt2 = 26;        // IR 13

// Byte width of one element for the non-4-bit integer-like types; 0 if unsupported.
int ElemBytes(int elem_type) {
  switch (elem_type) {
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::BOOL:
    case TensorProto::FLOAT8E4M3FN:
    case TensorProto::FLOAT8E4M3FNUZ:
    case TensorProto::FLOAT8E5M2:
    case TensorProto::FLOAT8E5M2FNUZ:
    case kFloat8E8M0:
      return 1;
    case TensorProto::INT16:
    case TensorProto::UINT16:
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      return 2;
    case TensorProto::INT32:
    case TensorProto::UINT32:
      return 4;
    case TensorProto::INT64:
    case TensorProto::UINT64:
      return 8;
    default:
      return 0;
  }
}

bool Is4Bit(int elem_type) {
  return elem_type == TensorProto::INT4 || elem_type == TensorProto::UINT4 ||
         elem_type == kFloat4E2M1;
}

bool Is2Bit(int elem_type) { return elem_type == kUint2 || elem_type == kInt2; }

void SetShape(onnx::TypeProto_Tensor* tt, const std::vector<Dim>& shape) {
  auto* sh = tt->mutable_shape();
  for (const Dim& d : shape) {
    auto* dim = sh->add_dim();
    if (d.value) {
      dim->set_dim_value(*d.value);
    } else if (!d.param.empty()) {
      dim->set_dim_param(d.param);
    }
  }
}

onnx::ValueInfoProto MakeValueInfo(const std::string& name, int elem_type,
                                   const std::optional<std::vector<Dim>>& shape) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  if (shape) {
    SetShape(tt, *shape);
  }
  return vi;
}

std::vector<Dim> ToDims(const std::vector<int64_t>& shape) {
  std::vector<Dim> dims;
  dims.reserve(shape.size());
  for (int64_t d : shape) {
    dims.push_back(d >= 0 ? Dim(d) : Dim());  // negative: unknown dim
  }
  return dims;
}

bool CompleteTensorType(const onnx::TypeProto& t) {
  if (!t.has_tensor_type()) {
    return false;
  }
  const auto& tt = t.tensor_type();
  if (tt.elem_type() == TensorProto::UNDEFINED || !tt.has_shape()) {
    return false;
  }
  for (const auto& d : tt.shape().dim()) {
    const bool has_value = d.has_dim_value() && d.dim_value() >= 0;
    const bool has_param = d.has_dim_param() && !d.dim_param().empty();
    if (!has_value && !has_param) {
      return false;
    }
  }
  return true;
}

// Range used when generating quantized values of a type: symmetric for signed types (no
// minimum value), the full range for unsigned; 32-bit values are kept small.
std::pair<int64_t, int64_t> GenRange(QType t) {
  switch (t) {
    case QType::kS32:
      return {-1000, 1000};
    case QType::kU16:
      return {0, 4095};
    case QType::kS16:
      return {-2047, 2047};
    default:
      return QTypeSigned(t) ? std::pair<int64_t, int64_t>{QTypeMin(t) + 1, QTypeMax(t)}
                            : std::pair<int64_t, int64_t>{QTypeMin(t), QTypeMax(t)};
  }
}

// Channel index of flat element `i` along `axis` (0 when no valid axis).
int64_t ChannelOf(int64_t i, const std::vector<int64_t>& dims, std::optional<int64_t> axis) {
  if (!axis) {
    return 0;
  }
  int64_t a = *axis;
  const auto rank = static_cast<int64_t>(dims.size());
  if (a < 0) {
    a += rank;
  }
  if (a < 0 || a >= rank) {
    return 0;
  }
  int64_t inner = 1;
  for (int64_t k = a + 1; k < rank; ++k) {
    inner *= dims[static_cast<std::size_t>(k)];
  }
  return (i / inner) % dims[static_cast<std::size_t>(a)];
}

template <typename T>
const T& Cyclic(const std::vector<T>& v, int64_t i, const T& fallback) {
  if (v.empty()) {
    return fallback;
  }
  return v[static_cast<std::size_t>(i) % v.size()];
}

}  // namespace

// ---------------------------------------------------------------- QType

int OnnxElemType(QType t) {
  switch (t) {
    case QType::kU4:
      return TensorProto::UINT4;
    case QType::kS4:
      return TensorProto::INT4;
    case QType::kU8:
      return TensorProto::UINT8;
    case QType::kS8:
      return TensorProto::INT8;
    case QType::kU16:
      return TensorProto::UINT16;
    case QType::kS16:
      return TensorProto::INT16;
    case QType::kS32:
      return TensorProto::INT32;
  }
  return TensorProto::UNDEFINED;
}

const char* QTypeName(QType t) {
  switch (t) {
    case QType::kU4:
      return "U4";
    case QType::kS4:
      return "S4";
    case QType::kU8:
      return "U8";
    case QType::kS8:
      return "S8";
    case QType::kU16:
      return "U16";
    case QType::kS16:
      return "S16";
    case QType::kS32:
      return "S32";
  }
  return "?";
}

int QTypeBits(QType t) {
  switch (t) {
    case QType::kU4:
    case QType::kS4:
      return 4;
    case QType::kU8:
    case QType::kS8:
      return 8;
    case QType::kU16:
    case QType::kS16:
      return 16;
    case QType::kS32:
      return 32;
  }
  return 0;
}

bool QTypeSigned(QType t) {
  return t == QType::kS4 || t == QType::kS8 || t == QType::kS16 || t == QType::kS32;
}

int64_t QTypeMin(QType t) { return QTypeSigned(t) ? -(int64_t{1} << (QTypeBits(t) - 1)) : 0; }

int64_t QTypeMax(QType t) {
  return QTypeSigned(t) ? (int64_t{1} << (QTypeBits(t) - 1)) - 1 : (int64_t{1} << QTypeBits(t)) - 1;
}

// ---------------------------------------------------------------- QParams

namespace {
QParams PerTensor(QType t, float s, int64_t zp) {
  QParams p;
  p.type = t;
  p.scale = {s};
  p.zero_point = {zp};
  return p;
}
}  // namespace

QParams QParams::U4(float s, int64_t zp) { return PerTensor(QType::kU4, s, zp); }
QParams QParams::S4(float s) { return PerTensor(QType::kS4, s, 0); }
QParams QParams::U8(float s, int64_t zp) { return PerTensor(QType::kU8, s, zp); }
QParams QParams::S8(float s) { return PerTensor(QType::kS8, s, 0); }
QParams QParams::U16(float s, int64_t zp) { return PerTensor(QType::kU16, s, zp); }
QParams QParams::S16(float s) { return PerTensor(QType::kS16, s, 0); }
QParams QParams::S32(float s) { return PerTensor(QType::kS32, s, 0); }

QParams QParams::PerChannel(QType t, std::vector<float> scales, int64_t axis) {
  QParams p;
  p.type = t;
  p.zero_point.assign(scales.size(), 0);
  p.scale = std::move(scales);
  p.axis = axis;
  p.scalar = false;
  return p;
}

std::vector<float> BiasScales(float in_scale, const std::vector<float>& w_scales) {
  std::vector<float> out;
  out.reserve(w_scales.size());
  for (float w : w_scales) {
    const float prod = in_scale * w;  // FP32 multiplication, as the spec's check computes it
    out.push_back(prod);
  }
  return out;
}

// ---------------------------------------------------------------- builder basics

ModelBuilder::ModelBuilder(int64_t opset, int64_t ir_version, std::string graph_name)
    : opset_(opset), ir_version_(ir_version), graph_name_(std::move(graph_name)) {}

ModelBuilder& ModelBuilder::Input(const std::string& name, int elem_type,
                                  const std::vector<int64_t>& shape) {
  return InputDims(name, elem_type, ToDims(shape));
}

ModelBuilder& ModelBuilder::InputDims(const std::string& name, int elem_type,
                                      const std::vector<Dim>& shape) {
  inputs_.push_back(MakeValueInfo(name, elem_type, shape));
  return *this;
}

ModelBuilder& ModelBuilder::Output(const std::string& name, int elem_type,
                                   const std::vector<int64_t>& shape) {
  return OutputDims(name, elem_type, ToDims(shape));
}

ModelBuilder& ModelBuilder::OutputDims(const std::string& name, int elem_type,
                                       const std::vector<Dim>& shape) {
  outputs_.push_back(MakeValueInfo(name, elem_type, shape));
  return *this;
}

ModelBuilder& ModelBuilder::Output(const std::string& name) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  outputs_.push_back(vi);
  untyped_outputs_.insert(name);
  return *this;
}

ModelBuilder& ModelBuilder::ValueInfo(const std::string& name, int elem_type,
                                      const std::vector<Dim>& shape) {
  value_infos_.push_back(MakeValueInfo(name, elem_type, shape));
  return *this;
}

ModelBuilder& ModelBuilder::ValueInfoUnranked(const std::string& name, int elem_type) {
  value_infos_.push_back(MakeValueInfo(name, elem_type, std::nullopt));
  return *this;
}

// ---------------------------------------------------------------- tensors

TensorProto ModelBuilder::MakeF32(const std::string& name, const std::vector<int64_t>& dims,
                                  const std::vector<float>& values, Storage s) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(TensorProto::FLOAT);
  for (int64_t d : dims) {
    t.add_dims(d);
  }
  if (s == Storage::kRaw) {
    std::string raw;
    raw.reserve(values.size() * 4);
    for (float v : values) {
      PutLE(raw, std::bit_cast<uint32_t>(v), 4);
    }
    t.set_raw_data(raw);
  } else {
    for (float v : values) {
      t.add_float_data(v);
    }
  }
  return t;
}

TensorProto ModelBuilder::MakeInt(const std::string& name, int elem_type,
                                  const std::vector<int64_t>& dims,
                                  const std::vector<int64_t>& values, Storage s) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(elem_type);
  for (int64_t d : dims) {
    t.add_dims(d);
  }

  if (Is4Bit(elem_type)) {
    // Two elements per byte, first element in the low nibble; an odd count leaves the last
    // high nibble 0. Typed storage keeps one packed byte per int32_data entry.
    std::vector<uint8_t> packed((values.size() + 1) / 2, 0);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto nib = static_cast<uint8_t>(static_cast<uint64_t>(values[i]) & 0x0F);
      packed[i / 2] = static_cast<uint8_t>(packed[i / 2] | (i % 2 == 0 ? nib : nib << 4));
    }
    if (s == Storage::kRaw) {
      t.set_raw_data(std::string(packed.begin(), packed.end()));
    } else {
      for (uint8_t b : packed) {
        t.add_int32_data(b);
      }
    }
    return t;
  }

  if (Is2Bit(elem_type)) {
    // Four elements per byte, first element in the lowest two bits (as ONNX packs INT2/UINT2).
    std::vector<uint8_t> packed((values.size() + 3) / 4, 0);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto two = static_cast<uint8_t>(static_cast<uint64_t>(values[i]) & 0x03);
      packed[i / 4] = static_cast<uint8_t>(packed[i / 4] | (two << (2 * (i % 4))));
    }
    if (s == Storage::kRaw) {
      t.set_raw_data(std::string(packed.begin(), packed.end()));
    } else {
      for (uint8_t b : packed) {
        t.add_int32_data(b);
      }
    }
    return t;
  }

  const int bytes = ElemBytes(elem_type);
  if (bytes == 0) {
    throw std::invalid_argument("modelgen: MakeInt: unsupported elem type " +
                                std::to_string(elem_type) + " for '" + name + "'");
  }
  if (s == Storage::kRaw) {
    std::string raw;
    raw.reserve(values.size() * static_cast<std::size_t>(bytes));
    for (int64_t v : values) {
      PutLE(raw, static_cast<uint64_t>(v), bytes);
    }
    t.set_raw_data(raw);
    return t;
  }
  switch (elem_type) {
    case TensorProto::INT64:
      for (int64_t v : values) {
        t.add_int64_data(v);
      }
      break;
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      for (int64_t v : values) {
        t.add_uint64_data(static_cast<uint64_t>(v));
      }
      break;
    default:  // every other type of <= 32 bits lives in int32_data
      for (int64_t v : values) {
        t.add_int32_data(static_cast<int32_t>(v));
      }
      break;
  }
  return t;
}

void ModelBuilder::AddInit(TensorProto t) {
  const auto [it, inserted] = init_index_.try_emplace(t.name(), initializers_.size());
  if (!inserted) {
    if (initializers_[it->second].SerializeAsString() == t.SerializeAsString()) {
      return;  // shared, e.g. Q and DQ
    }
    throw std::invalid_argument("modelgen: initializer '" + t.name() +
                                "' added twice with different contents");
  }
  initializers_.push_back(std::move(t));
}

bool ModelBuilder::HasInitializer(const std::string& name) const {
  return init_index_.contains(name);
}

ModelBuilder& ModelBuilder::InitF32(const std::string& name, const std::vector<int64_t>& dims,
                                    const std::vector<float>& values, Storage s) {
  AddInit(MakeF32(name, dims, values, s));
  return *this;
}

ModelBuilder& ModelBuilder::InitF32Fill(const std::string& name, const std::vector<int64_t>& dims,
                                        float v) {
  const auto n = static_cast<std::size_t>(NumElements(dims));
  return InitF32(name, dims, std::vector<float>(n, v));
}

ModelBuilder& ModelBuilder::InitF32Rand(const std::string& name, const std::vector<int64_t>& dims,
                                        float lo, float hi) {
  const auto n = static_cast<std::size_t>(NumElements(dims));
  Lcg rng(name);
  std::vector<float> values(n);
  for (float& v : values) {
    v = rng.Float(lo, hi);
  }
  return InitF32(name, dims, values);
}

ModelBuilder& ModelBuilder::InitInt(const std::string& name, int elem_type,
                                    const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& values, Storage s) {
  AddInit(MakeInt(name, elem_type, dims, values, s));
  return *this;
}

ModelBuilder& ModelBuilder::InitTensor(TensorProto t) {
  AddInit(std::move(t));
  return *this;
}

// ---------------------------------------------------------------- nodes and attributes

std::string ModelBuilder::NextNodeName(const std::string& op_type) {
  return op_type + "_" + std::to_string(node_counters_[op_type]++);
}

ModelBuilder& ModelBuilder::Node(const std::string& op_type, std::vector<std::string> inputs,
                                 std::vector<std::string> outputs,
                                 std::vector<onnx::AttributeProto> attrs, const std::string& name,
                                 std::string domain) {
  onnx::NodeProto n;
  n.set_op_type(op_type);
  n.set_name(name.empty() ? NextNodeName(op_type) : name);
  if (!domain.empty()) {
    n.set_domain(std::move(domain));
  }
  for (auto& i : inputs) {
    n.add_input(std::move(i));
  }
  for (auto& o : outputs) {
    n.add_output(std::move(o));
  }
  for (auto& a : attrs) {
    *n.add_attribute() = std::move(a);
  }
  nodes_.push_back(std::move(n));
  return *this;
}

ModelBuilder& ModelBuilder::Opset(const std::string& domain, int64_t version) {
  opsets_[domain] = version;
  return *this;
}

onnx::AttributeProto ModelBuilder::AttrI(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

onnx::AttributeProto ModelBuilder::AttrF(const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

onnx::AttributeProto ModelBuilder::AttrInts(const std::string& name,
                                            const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) {
    a.add_ints(x);
  }
  return a;
}

onnx::AttributeProto ModelBuilder::AttrFloats(const std::string& name,
                                              const std::vector<float>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOATS);
  for (float x : v) {
    a.add_floats(x);
  }
  return a;
}

onnx::AttributeProto ModelBuilder::AttrS(const std::string& name, const std::string& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}

onnx::AttributeProto ModelBuilder::AttrT(const std::string& name, TensorProto t) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::TENSOR);
  *a.mutable_t() = std::move(t);
  return a;
}

onnx::AttributeProto ModelBuilder::AttrG(const std::string& name, onnx::GraphProto g) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::GRAPH);
  *a.mutable_g() = std::move(g);
  return a;
}

// ---------------------------------------------------------------- Q/DQ

std::pair<std::string, std::string> ModelBuilder::QParamInits(const std::string& prefix,
                                                              const QParams& p) {
  const std::string scale_name = prefix + "_scale";
  const std::string zp_name = prefix + "_zp";
  auto dims_for = [&p](std::size_t n) {
    if (n == 1 && p.scalar) {
      return std::vector<int64_t>{};
    }
    return std::vector<int64_t>{static_cast<int64_t>(n)};
  };
  AddInit(MakeF32(scale_name, dims_for(p.scale.size()), p.scale, p.storage));
  if (p.omit_zero_point) {
    return {scale_name, ""};
  }
  AddInit(MakeInt(zp_name, p.ElemType(), dims_for(p.zero_point.size()), p.zero_point, p.storage));
  return {scale_name, zp_name};
}

namespace {
std::vector<onnx::AttributeProto> AxisAttrs(const QParams& p) {
  if (!p.axis) {
    return {};
  }
  return {ModelBuilder::AttrI("axis", *p.axis)};
}
}  // namespace

std::string ModelBuilder::Quantize(const std::string& x, const std::string& prefix,
                                   const QParams& p) {
  auto [scale, zp] = QParamInits(prefix, p);
  std::vector<std::string> inputs{x, scale};
  if (!zp.empty()) {
    inputs.push_back(zp);
  }
  std::string out = prefix + "_q_out";
  Node("QuantizeLinear", std::move(inputs), {out}, AxisAttrs(p), prefix + "_q");
  return out;
}

std::string ModelBuilder::Dequantize(const std::string& xq, const std::string& prefix,
                                     const QParams& p) {
  auto [scale, zp] = QParamInits(prefix, p);
  std::vector<std::string> inputs{xq, scale};
  if (!zp.empty()) {
    inputs.push_back(zp);
  }
  std::string out = prefix + "_dq_out";
  Node("DequantizeLinear", std::move(inputs), {out}, AxisAttrs(p), prefix + "_dq");
  return out;
}

std::string ModelBuilder::QDQ(const std::string& x, const std::string& prefix, const QParams& p) {
  return Dequantize(Quantize(x, prefix, p), prefix, p);
}

std::string ModelBuilder::WeightQDQ(const std::string& prefix, const std::vector<int64_t>& dims,
                                    const QParams& p) {
  const int64_t n = NumElements(dims);
  const auto [lo, hi] = GenRange(p.type);
  Lcg rng(prefix);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = ChannelOf(i, dims, p.axis);
    const int64_t zp = Cyclic(p.zero_point, c, int64_t{0});
    const float s = Cyclic(p.scale, c, 1.0f);
    const int64_t q = rng.Int(std::max(lo, QTypeMin(p.type)), std::min(hi, QTypeMax(p.type)));
    values[static_cast<std::size_t>(i)] = static_cast<float>(q - zp) * s;
  }
  InitF32(prefix, dims, values);
  return QDQ(prefix, prefix, p);
}

std::string ModelBuilder::WeightIntDQ(const std::string& prefix, const std::vector<int64_t>& dims,
                                      const QParams& p) {
  const int64_t n = NumElements(dims);
  const auto [lo, hi] = GenRange(p.type);
  Lcg rng(prefix);
  std::vector<int64_t> values(static_cast<std::size_t>(n));
  for (int64_t& v : values) {
    v = rng.Int(lo, hi);
  }
  InitInt(prefix, p.ElemType(), dims, values, p.storage);
  return Dequantize(prefix, prefix, p);
}

std::string ModelBuilder::BiasInt32DQ(const std::string& prefix, int64_t channels,
                                      std::vector<float> scales) {
  const QParams p = QParams::PerChannel(QType::kS32, std::move(scales), 0);
  Lcg rng(prefix);
  std::vector<int64_t> values(static_cast<std::size_t>(channels));
  for (int64_t& v : values) {
    v = rng.Int(-512, 511);
  }
  InitInt(prefix, TensorProto::INT32, {channels}, values);
  return Dequantize(prefix, prefix, p);
}

// ---------------------------------------------------------------- options

ModelBuilder& ModelBuilder::SetProducer(std::string name, std::string version) {
  producer_name_ = std::move(name);
  producer_version_ = std::move(version);
  return *this;
}

ModelBuilder& ModelBuilder::DocString(std::string doc) {
  doc_string_ = std::move(doc);
  return *this;
}

ModelBuilder& ModelBuilder::AutoValueInfo(bool on) {
  auto_value_info_ = on;
  return *this;
}

ModelBuilder& ModelBuilder::DropValueInfo(const std::string& tensor) {
  dropped_value_info_.insert(tensor);
  return *this;
}

// ---------------------------------------------------------------- build

onnx::ModelProto ModelBuilder::Build() const {
  onnx::ModelProto m;
  m.set_ir_version(ir_version_);
  if (!producer_name_.empty()) {
    m.set_producer_name(producer_name_);
  }
  if (!producer_version_.empty()) {
    m.set_producer_version(producer_version_);
  }
  if (!doc_string_.empty()) {
    m.set_doc_string(doc_string_);
  }

  // Opset imports: default domain first, then the extra / node domains in sorted order.
  std::map<std::string, int64_t> imports = opsets_;
  for (const auto& n : nodes_) {
    imports.emplace(n.domain(), 1);
  }
  imports.erase("");
  auto* def = m.add_opset_import();
  def->set_domain("");
  auto it_default = opsets_.find("");
  def->set_version(it_default != opsets_.end() ? it_default->second : opset_);
  for (const auto& [domain, version] : imports) {
    auto* os = m.add_opset_import();
    os->set_domain(domain);
    os->set_version(version);
  }

  auto* g = m.mutable_graph();
  g->set_name(graph_name_);
  for (const auto& n : nodes_) {
    *g->add_node() = n;
  }
  for (const auto& t : initializers_) {
    *g->add_initializer() = t;
  }
  for (const auto& vi : inputs_) {
    *g->add_input() = vi;
  }
  if (!auto_value_info_ && untyped_outputs_.empty()) {
    for (const auto& vi : outputs_) {
      *g->add_output() = vi;
    }
    for (const auto& vi : value_infos_) {
      *g->add_value_info() = vi;
    }
    return m;
  }

  // Shape inference runs in place (no copy of the initializers) on the graph without explicit
  // value_info and without the untyped outputs, so that every inferred type lands in value_info.
  // Outputs and explicit value_info are then put back exactly as given.
  for (const auto& vi : outputs_) {
    if (!untyped_outputs_.contains(vi.name())) {
      *g->add_output() = vi;
    }
  }
  try {
    onnx::ShapeInferenceOptions options(/*check_type_val=*/false, /*strict_mode_val=*/0,
                                        /*data_prop_val=*/true);
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), options);
  } catch (...) {  // NOLINT(bugprone-empty-catch): whatever was inferred before the error is used
  }
  std::unordered_map<std::string, onnx::TypeProto> types;
  for (auto& vi : *g->mutable_value_info()) {
    if (vi.has_type()) {
      types.emplace(vi.name(), std::move(*vi.mutable_type()));
    }
  }
  g->clear_value_info();
  g->clear_output();

  for (const auto& vi : outputs_) {
    auto* out = g->add_output();
    *out = vi;
    if (!untyped_outputs_.contains(vi.name())) {
      continue;
    }
    auto it = types.find(vi.name());
    if (it != types.end() && it->second.has_tensor_type() &&
        it->second.tensor_type().elem_type() != TensorProto::UNDEFINED) {
      *out->mutable_type() = it->second;
    }
  }
  for (const auto& vi : value_infos_) {
    *g->add_value_info() = vi;
  }
  if (!auto_value_info_) {
    return m;
  }

  std::unordered_set<std::string> skip(dropped_value_info_.begin(), dropped_value_info_.end());
  for (const auto& vi : outputs_) {
    skip.insert(vi.name());
  }
  for (const auto& vi : inputs_) {
    skip.insert(vi.name());
  }
  for (const auto& vi : value_infos_) {
    skip.insert(vi.name());
  }
  for (const auto& t : initializers_) {
    skip.insert(t.name());
  }
  for (const auto& n : nodes_) {
    for (const auto& o : n.output()) {
      if (o.empty() || !skip.insert(o).second) {
        continue;
      }
      auto it = types.find(o);
      if (it == types.end() || !CompleteTensorType(it->second)) {
        continue;
      }
      auto* vi = g->add_value_info();
      vi->set_name(o);
      *vi->mutable_type() = it->second;
    }
  }
  return m;
}

std::string ModelBuilder::Serialize() const {
  std::string out;
  if (!Build().SerializeToString(&out)) {
    throw std::runtime_error("modelgen: failed to serialize model");
  }
  return out;
}

namespace {
void WriteFile(const std::filesystem::path& path, const std::string& bytes) {
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path());
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) {
    throw std::runtime_error("modelgen: cannot write " + path.string());
  }
}
}  // namespace

void ModelBuilder::Save(const std::string& path) const { SaveModel(Build(), path); }

void ModelBuilder::SaveModel(const onnx::ModelProto& model, const std::string& path) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    throw std::runtime_error("modelgen: failed to serialize model");
  }
  WriteFile(path, bytes);
}

void ModelBuilder::SaveWithExternalData(const std::string& path, const std::string& data_file,
                                        std::size_t threshold_bytes) const {
  const std::filesystem::path rel(data_file);
  if (rel.empty() || rel.is_absolute()) {
    throw std::invalid_argument("modelgen: external data file must be a relative path: " +
                                data_file);
  }
  onnx::ModelProto m = Build();
  const std::filesystem::path model_path(path);
  std::string blob;
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    if (!t.has_raw_data() || t.raw_data().size() < threshold_bytes) {
      continue;
    }
    const std::size_t offset = blob.size();
    const std::size_t length = t.raw_data().size();
    blob += t.raw_data();
    t.clear_raw_data();
    t.set_data_location(TensorProto::EXTERNAL);
    auto add = [&t](const std::string& k, const std::string& v) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", rel.generic_string());
    add("offset", std::to_string(offset));
    add("length", std::to_string(length));
  }
  WriteFile(model_path.parent_path() / rel, blob);
  std::string bytes;
  if (!m.SerializeToString(&bytes)) {
    throw std::runtime_error("modelgen: failed to serialize");
  }
  WriteFile(model_path, bytes);
}

}  // namespace axqc::modelgen
