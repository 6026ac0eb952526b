#include "quant.h"

#include <array>

namespace axqc::detail {

using TP = onnx::TensorProto;

namespace {
constexpr std::array<QTypeInfo, kQTypeCount> kQTypes{{
    {QType::kU4, "U4", TP::UINT4, false, 0, 15, 4},
    {QType::kS4, "S4", TP::INT4, true, -8, 7, 4},
    {QType::kU8, "U8", TP::UINT8, false, 0, 255, 8},
    {QType::kS8, "S8", TP::INT8, true, -128, 127, 8},
    {QType::kU16, "U16", TP::UINT16, false, 0, 65535, 16},
    {QType::kS16, "S16", TP::INT16, true, -32768, 32767, 16},
    {QType::kS32, "S32", TP::INT32, true, -2147483648LL, 2147483647LL, 32},
}};
}  // namespace

const QTypeInfo& Info(QType t) { return kQTypes[static_cast<std::size_t>(t)]; }

std::optional<QType> QTypeFromOnnx(int elem_type) {
  for (const auto& i : kQTypes) {
    if (i.onnx == elem_type) return i.type;
  }
  return std::nullopt;
}

std::string QTypeName(std::optional<QType> t, int onnx_type) {
  if (t) return std::string(Info(*t).name);
  return onnx_type == 0 ? "unknown type" : ElemTypeName(onnx_type);
}

std::string QTypeSet::ToString() const {
  std::string s;
  for (const auto& i : kQTypes) {
    if (!Has(i.type)) continue;
    if (!s.empty()) s += "|";
    s += i.name;
  }
  return s;
}

std::string_view GranularityName(Granularity g) {
  switch (g) {
    case Granularity::kPerTensor:
      return "per-tensor";
    case Granularity::kPerChannel:
      return "per-channel";
    case Granularity::kInvalid:
      return "invalid granularity";
    case Granularity::kUnknown:
      return "unknown granularity";
  }
  return "?";
}

std::int64_t QuantParams::channels() const {
  if (scale_dims && scale_dims->size() == 1 && (*scale_dims)[0] > 0) return (*scale_dims)[0];
  return 1;
}

namespace {

bool IsQdqOp(const onnx::NodeProto& n, std::string_view op) { return IsOnnxOp(n, op); }

// Value of the integer tensor with id `t`, following Identity/Cast chains and Constant nodes (2.2:
// zero_points computed by covered nodes stay allowed; their values are read through the chain).
std::optional<std::vector<std::int64_t>> ReadIntChain(const GraphIndex& g, int t, int depth = 0) {
  if (depth > 16 || t < 0) return std::nullopt;
  if (const auto* init = g.InitializerOf(t)) return ReadInts(*init, g.external());
  int p = g.ProducerOf(t);
  if (p < 0) return std::nullopt;
  const auto& n = g.node(p);
  if ((n.op_type() == "Identity" || n.op_type() == "Cast") && n.input_size() >= 1) {
    return ReadIntChain(g, g.InputId(p, 0), depth + 1);
  }
  if (n.op_type() == "Constant") {
    if (const auto* a = FindAttr(n, "value"); a && a->has_t())
      return ReadInts(a->t(), g.external());
    if (const auto* a = FindAttr(n, "value_int")) return std::vector<std::int64_t>{a->i()};
  }
  return std::nullopt;
}

std::optional<std::vector<double>> ReadFloatDirect(const GraphIndex& g, int t) {
  if (const auto* init = g.InitializerOf(t)) return ReadFloats(*init, g.external());
  int p = g.ProducerOf(t);
  if (p >= 0 && g.node(p).op_type() == "Constant") {
    if (const auto* a = FindAttr(g.node(p), "value"); a && a->has_t()) {
      return ReadFloats(a->t(), g.external());
    }
  }
  return std::nullopt;
}

// A [1] scale with an explicit axis is per-channel when that axis has one channel (reading 10),
// or an unknown count. Over a known count above one it broadcasts like a per-tensor scale (as
// ONNX runtimes treat it), and the axis attribute changes nothing.
bool OneChannelAxis(const QuantParams& p, const std::optional<std::vector<std::int64_t>>& xdims) {
  if (!p.axis_attr) return false;
  if (!xdims || !p.axis_norm || *p.axis_norm >= static_cast<std::int64_t>(xdims->size())) {
    return true;
  }
  return (*xdims)[static_cast<std::size_t>(*p.axis_norm)] <= 1;
}

// What does not depend on tensor types: tensors, ids, attributes, values.
void ReadStructure(const GraphIndex& g, int idx, bool is_q, QuantParams& p) {
  const auto& n = g.node(idx);
  p.node = idx;
  p.is_q = is_q;
  if (n.input_size() > 0) p.x = n.input(0);
  if (n.input_size() > 1) p.scale = n.input(1);
  if (n.input_size() > 2) p.zp = n.input(2);
  if (n.output_size() > 0) p.y = n.output(0);
  p.x_id = g.InputId(idx, 0);
  p.scale_id = g.InputId(idx, 1);
  p.zp_id = g.InputId(idx, 2);
  p.y_id = g.OutputId(idx, 0);
  p.scale_is_initializer = p.scale_id >= 0 && g.InitializerOf(p.scale_id) != nullptr;
  if (auto bs = AttrInt(n, "block_size"); bs && *bs != 0) p.block_size = true;
  p.axis_attr = AttrInt(n, "axis");
  p.scale_values = ReadFloatDirect(g, p.scale_id);
  if (!p.zp.empty()) p.zp_values = ReadIntChain(g, p.zp_id);
}

// The rest, from the types of its tensors.
void CompleteFromTypes(const GraphIndex& g, QuantParams& p) {
  const auto& n = g.node(p.node);
  const bool is_q = p.is_q;
  p.scale_dtype = g.ElemTypeOf(p.scale_id);
  p.zp_dtype = g.ElemTypeOf(p.zp_id);
  p.scale_dims = g.DimsOf(p.scale_id);
  if (p.zp_id >= 0) p.zp_dims = g.DimsOf(p.zp_id);
  if (is_q) {
    if (p.zp_dtype != 0) {
      p.int_type = p.zp_dtype;
    } else if (auto od = AttrInt(n, "output_dtype"); od && *od != 0) {
      p.int_type = static_cast<int>(*od);
    } else if (p.zp.empty()) {
      p.int_type = TP::UINT8;  // ONNX default when zero_point is omitted
    }
    if (p.int_type == 0) p.int_type = g.ElemTypeOf(p.y_id);
  } else {
    p.int_type = g.ElemTypeOf(p.x_id);
    if (p.int_type == 0) p.int_type = p.zp_dtype;
  }
  p.qtype = QTypeFromOnnx(p.int_type);
  auto xdims = g.DimsOf(p.x_id);
  const std::int64_t axis = p.axis_attr.value_or(1);
  if (xdims) {
    auto rank = static_cast<std::int64_t>(xdims->size());
    if (axis >= -rank && axis < rank) p.axis_norm = axis < 0 ? axis + rank : axis;
  } else if (axis >= 0) {
    p.axis_norm = axis;
  }
  // Granularity (3.3).
  if (p.block_size) {
    p.granularity = Granularity::kInvalid;
    p.granularity_problem = "block_size is set (blocked quantization)";
  } else if (!p.scale_dims) {
    p.granularity = Granularity::kUnknown;
  } else {
    const auto& sd = *p.scale_dims;
    const bool zp_known = p.zp.empty() || p.zp_dims.has_value();
    if (sd.size() > 1) {
      p.granularity = Granularity::kInvalid;
      p.granularity_problem = "scale has rank " + std::to_string(sd.size()) + " " + FormatDims(sd);
    } else if (sd.empty() || (sd.size() == 1 && sd[0] == 1 && !OneChannelAxis(p, xdims))) {
      // Reading 10: rank-0, or [1] without an axis attribute, is per-tensor whatever the
      // channel count; [1] with an explicit axis is per-channel over one channel.
      p.granularity = Granularity::kPerTensor;
      if (zp_known && !p.zp.empty() && *p.zp_dims != sd) {
        p.granularity = Granularity::kInvalid;
        p.granularity_problem = "per-tensor scale shape " + FormatDims(sd) +
                                " and zero_point shape " + FormatDims(*p.zp_dims) + " differ";
      }
    } else if (sd[0] <= 0) {
      p.granularity = sd[0] == 0 ? Granularity::kInvalid : Granularity::kUnknown;
      if (sd[0] == 0) p.granularity_problem = "scale has no elements";
    } else {
      p.granularity = Granularity::kPerChannel;
      if (zp_known && !p.zp.empty() && *p.zp_dims != sd) {
        p.granularity = Granularity::kInvalid;
        p.granularity_problem = "per-channel scale shape " + FormatDims(sd) +
                                " and zero_point shape " + FormatDims(*p.zp_dims) + " differ";
      }
    }
  }
}

}  // namespace

QuantTable::QuantTable(const GraphIndex& g) : QuantTable(g, GraphIndex::TypesLater{}) {
  ReadTypes();
}

QuantTable::QuantTable(const GraphIndex& g, GraphIndex::TypesLater) : g_(g) {
  slot_.assign(static_cast<std::size_t>(g.node_count()), -1);
  for (int i = 0; i < g.node_count(); ++i) {
    const auto& n = g.node(i);
    const bool q = IsQdqOp(n, "QuantizeLinear");
    const bool dq = IsQdqOp(n, "DequantizeLinear");
    if (!q && !dq) continue;
    slot_[static_cast<std::size_t>(i)] = 0;
    (q ? qs_ : dqs_).push_back(i);
  }
  params_.resize(qs_.size() + dqs_.size());
  std::size_t next = 0;
  for (int i = 0; i < g.node_count(); ++i) {
    auto& slot = slot_[static_cast<std::size_t>(i)];
    if (slot < 0) continue;
    slot = static_cast<int>(next);
    auto& p = params_[next++];
    ReadStructure(g, i, IsQdqOp(g.node(i), "QuantizeLinear"), p);
  }
}

void QuantTable::ReadTypes() {
  for (auto& p : params_) CompleteFromTypes(g_, p);
}

const QuantParams* QuantTable::Of(int node) const {
  if (node < 0 || node >= static_cast<int>(slot_.size())) return nullptr;
  int s = slot_[static_cast<std::size_t>(node)];
  return s < 0 ? nullptr : &params_[static_cast<std::size_t>(s)];
}

bool QuantTable::IsQ(int node) const {
  const auto* p = Of(node);
  return p && p->is_q;
}
bool QuantTable::IsDQ(int node) const {
  const auto* p = Of(node);
  return p && !p->is_q;
}

int QuantTable::DqProducing(int tensor) const {
  int p = g_.ProducerOf(tensor);
  return IsDQ(p) ? p : -1;
}

DqSource QuantTable::SourceOf(int dq, int* q) const {
  const auto* p = Of(dq);
  if (q) *q = -1;
  if (p == nullptr || p->x.empty()) return DqSource::kMissing;
  if (p->x_id < 0) return DqSource::kMissing;
  if (g_.InitializerOf(p->x_id)) return DqSource::kIntInitializer;
  if (g_.IsGraphInputId(p->x_id)) return DqSource::kGraphInput;
  int prod = g_.ProducerOf(p->x_id);
  if (prod < 0) return DqSource::kMissing;
  if (IsQ(prod)) {
    if (q) *q = prod;
    return DqSource::kPairedQ;
  }
  if (g_.node(prod).op_type() == "Constant") return DqSource::kConstantNode;
  return DqSource::kRuntime;
}

int QuantTable::PairedDq(int q) const {
  const auto* p = Of(q);
  if (p == nullptr || p->y_id < 0) return -1;
  const auto uses = g_.ConsumersOf(p->y_id);
  if (uses.size() != 1 || !IsDQ(uses[0].node) || uses[0].slot != 0) return -1;
  return uses[0].node;
}

ParamDiff CompareStructure(const QuantParams& a, const QuantParams& b) {
  auto t = [](const QuantParams& p) { return QTypeName(p.qtype, p.int_type); };
  if (a.int_type != b.int_type) return {"integer type " + t(a) + " vs " + t(b)};
  if (a.granularity != b.granularity) {
    return {"granularity " + std::string(GranularityName(a.granularity)) + " vs " +
            std::string(GranularityName(b.granularity))};
  }
  if (a.scale_dims != b.scale_dims) {
    return {"scale shape " + (a.scale_dims ? FormatDims(*a.scale_dims) : "?") + " vs " +
            (b.scale_dims ? FormatDims(*b.scale_dims) : "?")};
  }
  if (a.scale_dtype != b.scale_dtype) {
    return {"scale dtype " + ElemTypeName(a.scale_dtype) + " vs " + ElemTypeName(b.scale_dtype)};
  }
  if (a.zp.empty() != b.zp.empty()) return {"zero_point present on one side only"};
  if (a.zp_dims != b.zp_dims) {
    return {"zero_point shape " + (a.zp_dims ? FormatDims(*a.zp_dims) : "?") + " vs " +
            (b.zp_dims ? FormatDims(*b.zp_dims) : "?")};
  }
  if (a.zp_dtype != b.zp_dtype) {
    return {"zero_point dtype " + ElemTypeName(a.zp_dtype) + " vs " + ElemTypeName(b.zp_dtype)};
  }
  if (a.granularity == Granularity::kPerChannel && a.axis_norm != b.axis_norm) {
    auto ax = [](const QuantParams& p) {
      return p.axis_norm ? std::to_string(*p.axis_norm) : std::string("?");
    };
    return {"axis " + ax(a) + " vs " + ax(b)};
  }
  return {};
}

ParamDiff CompareValues(const QuantParams& a, const QuantParams& b) {
  ParamDiff d;
  if (a.scale != b.scale) {
    if (!a.scale_values || !b.scale_values) {
      d.unknown = true;
    } else if (*a.scale_values != *b.scale_values) {
      const auto& x = *a.scale_values;
      const auto& y = *b.scale_values;
      for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
        if (x[i] != y[i]) {
          return {"scale[" + std::to_string(i) + "] " + FormatNumber(x[i]) + " vs " +
                  FormatNumber(y[i])};
        }
      }
      return {"scale length " + std::to_string(x.size()) + " vs " + std::to_string(y.size())};
    }
  }
  if (a.zp != b.zp && !a.zp.empty() && !b.zp.empty()) {
    if (!a.zp_values || !b.zp_values) {
      d.unknown = true;
    } else if (*a.zp_values != *b.zp_values) {
      const auto& x = *a.zp_values;
      const auto& y = *b.zp_values;
      for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
        if (x[i] != y[i]) {
          return {"zero_point[" + std::to_string(i) + "] " + std::to_string(x[i]) + " vs " +
                  std::to_string(y[i])};
        }
      }
      return {"zero_point length " + std::to_string(x.size()) + " vs " + std::to_string(y.size())};
    }
  }
  return d;
}

ParamDiff CompareFull(const QuantParams& a, const QuantParams& b) {
  auto d = CompareStructure(a, b);
  if (!d.what.empty()) return d;
  return CompareValues(a, b);
}

ParamDiff CompareRequantize(const QuantParams& a, const QuantParams& b) {
  if (a.granularity != Granularity::kPerTensor || b.granularity != Granularity::kPerTensor) {
    return CompareFull(a, b);
  }
  // Both per-tensor: how the scale and zero_point are written (rank-0 or [1]) does not matter.
  QuantParams same_form = b;
  same_form.scale_dims = a.scale_dims;
  same_form.zp_dims = a.zp_dims;
  return CompareFull(a, same_form);
}

std::string Describe(const QuantParams& p) {
  std::string s =
      QTypeName(p.qtype, p.int_type) + " " + std::string(GranularityName(p.granularity));
  if (p.granularity == Granularity::kPerChannel && p.axis_attr) {
    s += " axis=" + std::to_string(*p.axis_attr);
  }
  if (p.scale_values) s += " scale=" + FormatList(*p.scale_values, 4);
  if (p.zp_values) s += " zp=" + FormatList(*p.zp_values, 4);
  return s;
}

}  // namespace axqc::detail
