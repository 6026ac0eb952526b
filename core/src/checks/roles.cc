#include "roles.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string_view>

namespace axqc::detail {

bool IsFloatTensor(const Context& c, std::string_view t) {
  int et = c.g.ElemTypeOf(c.g.TensorId(t));
  return et == 0 || IsFloatType(et);
}

std::string SourceText(const Context& c, std::string_view t) {
  const int tid = c.g.TensorId(t);
  if (const auto* init = c.g.InitializerOf(tid)) {
    return ElemTypeName(init->data_type()) + " initializer '" + std::string(t) + "'";
  }
  if (c.g.IsGraphInputId(tid)) return "graph input '" + std::string(t) + "'";
  int p = c.g.ProducerOf(tid);
  if (p >= 0) return c.Op(p) + " '" + c.Name(p) + "' (tensor '" + std::string(t) + "')";
  return "'" + std::string(t) + "' (no producer)";
}

int ConstantProducer(const Context& c, std::string_view t) {
  const int p = c.g.ProducerOf(c.g.TensorId(t));
  if (p < 0) return -1;
  const auto& n = c.g.node(p);
  return IsOnnxOp(n, "Constant") ? p : -1;
}

std::string NodeList(const Context& c, const std::vector<int>& nodes) {
  std::string s;
  for (int n : nodes) s += (s.empty() ? "" : ", ") + c.Op(n) + " '" + c.Name(n) + "'";
  return s;
}

std::vector<int> Nodes(std::initializer_list<int> nodes) {
  std::vector<int> v;
  for (int n : nodes) {
    if (n >= 0) v.push_back(n);
  }
  return v;
}

bool FromQuantizedPassive(const Context& c, std::string_view t) {
  int p = c.g.ProducerOf(c.g.TensorId(t));
  if (p < 0) return false;
  int u = c.units.UnitOf(p);
  if (u < 0) return false;
  const auto& unit = c.units.all()[static_cast<std::size_t>(u)];
  return (unit.kind == UnitKind::kPassive || unit.kind == UnitKind::kRequantize ||
          (unit.kind == UnitKind::kOp && FindOp(c.Op(unit.anchor), "") &&
           FindOp(c.Op(unit.anchor), "")->cls == OpClass::kMixed)) &&
         unit.mode == UnitMode::kQuantized;
}

namespace {

// role/weight-fits-int4 (docs/readings.md reading 33): fewer values than this are no sign of a
// 4-bit weight (a handful of small 8-bit values fits [-8, 7] by chance).
constexpr std::int64_t kInt4WeightMinValues = 16;

struct S4Span {
  std::int64_t min = 0, max = 0, count = 0;
};

// The range of an INT8 initializer whose every value lies in [-8, 7] and that has at least
// kInt4WeightMinValues of them; nullopt otherwise. Reads only data held in the model file (raw_data
// or int32_data), never external data (a check reads no weight bytes of the data files), and stops
// at the first value outside the range (an 8-bit weight within its first few bytes).
std::optional<S4Span> Int8WithinS4(const onnx::TensorProto& t) {
  if (t.data_type() != onnx::TensorProto::INT8 || IsExternal(t)) return std::nullopt;
  const auto n = ElementCount(t);
  if (!n || *n < kInt4WeightMinValues) return std::nullopt;
  S4Span s{.min = 7, .max = -8, .count = *n};
  auto fits = [&s](std::int64_t v) {
    if (v < -8 || v > 7) return false;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    return true;
  };
  const auto count = static_cast<std::size_t>(*n);
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    if (raw.size() != count) return std::nullopt;
    for (const char b : raw) {
      if (!fits(static_cast<std::int8_t>(b))) return std::nullopt;
    }
    return s;
  }
  if (static_cast<std::size_t>(t.int32_data_size()) != count) return std::nullopt;
  for (const auto v : t.int32_data()) {
    if (!fits(v)) return std::nullopt;
  }
  return s;
}

// The model's ai.onnx opset, 0 when unknown.
std::int64_t AiOnnxOpsetOf(const Context& c) {
  if (c.model == nullptr) return 0;
  for (const auto& o : c.model->opset_import()) {
    if (IsOnnxDomain(o.domain())) return o.version();
  }
  return 0;
}

// An INT8 weight whose values fit S4: informational, with the opt-in rewrite that stores it as
// INT4 and, when that rewrite would leave this weight alone, why (the conditions of
// core/src/fix/int4_weight_storage.cc).
void WeightFitsInt4(Context& c, int node, int dq, const QuantParams& p, std::int64_t out_ch) {
  static const std::set<std::string_view> kS4WeightOps = {"Conv", "ConvTranspose", "Gemm"};
  if (!kS4WeightOps.contains(c.Op(node)) || p.int_type != onnx::TensorProto::INT8) return;
  const int wid = p.x_id;
  const auto* init = c.g.InitializerOf(wid);
  if (init == nullptr || c.g.IsGraphInputId(wid)) return;
  if (!p.zp.empty()) {
    if (!p.zp_values || p.zp_values->empty()) return;
    for (const auto z : *p.zp_values) {
      if (z < -8 || z > 7) return;
    }
  }
  const auto span = Int8WithinS4(*init);
  if (!span) return;
  const std::string t(p.x);
  const std::string who = c.Op(node) + " '" + c.Name(node) + "'";
  // The first condition of the rewrite that this weight does not meet, if any.
  std::string blocked;
  const std::int64_t opset = AiOnnxOpsetOf(c);
  if (opset < 21) {
    blocked = "it needs ai.onnx opset >= 21 (INT4 DequantizeLinear) and the model imports opset " +
              std::to_string(opset);
  }
  if (blocked.empty() && c.g.IsGraphOutputId(wid)) blocked = "'" + t + "' is a graph output";
  if (blocked.empty()) {
    for (const auto& u : c.g.ConsumersOf(wid)) {
      if (u.slot != 0 || !IsOnnxOp(c.g.node(u.node), "DequantizeLinear")) {
        blocked = "'" + t + "' is also read by " + c.Op(u.node) + " '" + c.Name(u.node) + "'";
        break;
      }
    }
  }
  if (blocked.empty()) {
    const int out = p.y_id;
    const auto uses = c.g.ConsumersOf(out);
    bool weight_only = !uses.empty() && !c.g.IsGraphOutputId(out);
    for (const auto& u : uses) {
      weight_only = weight_only && u.slot == 1 && IsOnnxDomain(c.g.node(u.node).domain()) &&
                    kS4WeightOps.contains(c.Op(u.node));
    }
    if (!weight_only) {
      blocked =
          "the DequantizeLinear output is read as something else than the weight of Conv, "
          "ConvTranspose or Gemm";
    }
  }
  if (blocked.empty() && out_ch > 0 && out_ch % 2 != 0) {
    blocked = "the weight has " + Count(out_ch, "output channel") +
              " and an S4 weight needs an even count (" +
              std::string(rules::kRoleInt4Channels.id()) + ")";
  }
  c.out.Emit({.rule = rules::kRoleWeightFitsInt4,
              .node = dq,
              .message = "INT8 weight '" + t + "' of " + who + ": all " +
                         std::to_string(span->count) + " values (" + std::to_string(span->min) +
                         " to " + std::to_string(span->max) + ")" +
                         (p.zp.empty() ? std::string() : " and its zero point") +
                         " lie in [-8, 7], the S4 range. As stored it is an S8 weight; if it was "
                         "trained as 4-bit (a QAT flow that exports 4-bit weights in INT8 "
                         "containers), `axqc fix MODEL -o FIXED.onnx --apply int4-weight-storage` "
                         "stores it as INT4" +
                         (blocked.empty() ? std::string(" (it applies to this weight)")
                                          : ", but not this weight as the model is: " + blocked),
              .group_key = "INT8 weight whose values fit S4",
              .tensors = {t},
              .values = {{"min", std::to_string(span->min)},
                         {"max", std::to_string(span->max)},
                         {"elements", std::to_string(span->count)}},
              .more_nodes = {node}});
}

void ActivationType(Context& c, int node, int dq, const QuantParams& p, const OpSpec& spec,
                    std::string_view tensor) {
  if (!p.qtype) return;  // qdq/integer-type
  const std::string tname = std::string(Info(*p.qtype).name);
  const std::string who = spec.op_type.empty()
                              ? std::string("operator")
                              : std::string(spec.op_type) + " '" + c.Name(node) + "'";
  const RuleId rule =
      !spec.rule || spec.cls == OpClass::kPassive ? rules::kRoleActivationType : *spec.rule;
  if (!spec.data_types.Has(*p.qtype)) {
    std::string why;
    if (*p.qtype == QType::kU4 && rule == rules::kRoleActivationType) {
      why =
          "U4 activations are allowed only on the activation input of Conv, ConvTranspose and Gemm";
    } else {
      why = "allowed: " + spec.data_types.ToString() +
            ((spec.flags & kSymmetricData) ? " (symmetric)" : "");
    }
    c.out.Emit({.rule = rule,
                .node = dq,
                .message = "input '" + std::string(tensor) + "' of " + who + " is quantized as " +
                           tname + " by DQ '" + c.Name(dq) + "'; " + why,
                .group_key = std::string(spec.op_type) + " input type " + tname + " not allowed",
                .tensors = {std::string(tensor)},
                .values = {{"type", tname}, {"allowed", spec.data_types.ToString()}},
                .more_nodes = {node}});
  } else if (p.granularity == Granularity::kPerChannel) {
    c.out.Emit({.rule = rule,
                .node = dq,
                .message = "input '" + std::string(tensor) + "' of " + who +
                           " is quantized per-channel by DQ '" + c.Name(dq) +
                           "'; activations (and constant data operands) are per-tensor only",
                .group_key = std::string(spec.op_type) + " data input quantized per-channel",
                .tensors = {std::string(tensor)},
                .values = {{"channels", std::to_string(p.channels())}},
                .more_nodes = {node}});
  }
  if (Info(*p.qtype).bits == 4) {
    auto dims = c.g.DimsOf(c.g.TensorId(tensor));
    if (dims && dims->size() >= 2 && (*dims)[1] > 0 && (*dims)[1] % 2 == 1) {
      c.out.Emit({.rule = rules::kRoleInt4Channels,
                  .node = dq,
                  .message = "4-bit activation '" + std::string(tensor) + "' into " + who +
                             " has " + Count((*dims)[1], "channel") + "; 4-bit needs an even count",
                  .group_key = "4-bit activation with an odd channel count",
                  .tensors = {std::string(tensor)},
                  .values = {{"channels", std::to_string((*dims)[1])}},
                  .more_nodes = {node}});
    }
  }
}

// True when `t` is a designated output of a quantized compute unit, whose output rule already
// reports the missing Q/DQ on this edge.
bool ProducerReportsOutput(const Context& c, int prod, std::string_view t) {
  int pu = c.units.UnitOf(prod);
  if (pu < 0) return false;
  const auto& u = c.units.all()[static_cast<std::size_t>(pu)];
  bool compute = u.kind == UnitKind::kPattern;
  if (u.kind == UnitKind::kOp) {
    const auto* s = FindOp(c.Op(u.anchor), c.g.node(u.anchor).domain());
    compute = s && (s->cls == OpClass::kQuantOnly || s->cls == OpClass::kReluLike);
  }
  if (!compute) return false;
  for (auto o : u.outputs) {
    if (o == t) return true;
  }
  return false;
}

bool AllConsumersTakeU4(const Context& c, int dq) {
  const auto* d = c.q.Of(dq);
  const auto uses = c.g.ConsumersOf(d->y_id);
  if (uses.empty() || c.g.IsGraphOutputId(d->y_id)) return false;
  for (const auto& u : uses) {
    const auto* spec = FindOp(c.Op(u.node), c.g.node(u.node).domain());
    if (!spec || !(spec->flags & kU4Input) || u.slot != 0) return false;
  }
  return true;
}

}  // namespace

const QuantParams* CheckDataInput(Context& c, int unit, int node, int slot, const OpSpec& spec) {
  const auto& t = c.g.node(node).input(slot);
  const int tid = c.g.InputId(node, slot);
  int dq = c.q.DqProducing(tid);
  if (dq >= 0) {
    c.ClaimDq(dq, unit);
    const auto* p = c.q.Of(dq);
    ActivationType(c, node, dq, *p, spec, t);
    return p;
  }
  if (!IsFloatTensor(c, t) && !c.g.InitializerOf(tid)) return nullptr;  // native-typed data
  if (FromQuantizedPassive(c, t)) return nullptr;  // reported as op/passive-params at the exit
  const std::string who = c.Op(node) + " '" + c.Name(node) + "'";
  int prod = c.g.ProducerOf(tid);
  if (const auto* init = c.g.InitializerOf(tid)) {
    const bool fp = IsFloatType(init->data_type());
    c.out.Emit({.rule = rules::kQdqConstForm,
                .node = node,
                .message = "data input '" + t + "' of " + who + " is " +
                           (fp ? "an FP32 initializer used directly"
                               : "an integer initializer without DQ") +
                           "; constant data must be FP32 initializer -> Q -> DQ or integer "
                           "initializer -> DQ",
                .group_key = fp ? "FP32 initializer straight into a quant-only data input"
                                : "integer initializer without DQ",
                .tensors = {t},
                .values = {{"type", ElemTypeName(init->data_type())}}});
    return nullptr;
  }
  if (const int k = ConstantProducer(c, t); k >= 0) {
    c.out.Emit({.rule = rules::kQdqConstForm,
                .node = node,
                .message = "data input '" + t + "' of " + who +
                           " is the output of Constant node '" + c.Name(k) +
                           "' used directly; constant data must be an initializer -> Q -> DQ (or "
                           "integer initializer -> DQ)",
                .group_key = "Constant straight into a quant-only data input",
                .tensors = {t},
                .more_nodes = {k}});
    return nullptr;
  }
  if (prod >= 0 && ProducerReportsOutput(c, prod, t)) return nullptr;  // one finding per edge
  c.out.Emit({.rule = rules::kOpInputNotQuantized,
              .node = node,
              .message = "data input '" + t + "' of " + who + " comes from " + SourceText(c, t) +
                         " without DQ; quantize it with Q -> DQ",
              .group_key = c.Op(node) + " data input not quantized",
              .tensors = {t}});
  return nullptr;
}

void CheckOutputActivation(Context& c, int qn, int producer) {
  const auto* q = c.q.Of(qn);
  if (!q->qtype) return;
  int dq = c.q.PairedDq(qn);
  int at = dq >= 0 ? dq : qn;
  const std::string tname(Info(*q->qtype).name);
  bool ok = kActivationTypes.Has(*q->qtype) ||
            (*q->qtype == QType::kU4 && dq >= 0 && AllConsumersTakeU4(c, dq));
  const std::string who = c.Op(producer) + " '" + c.Name(producer) + "'";
  if (!ok) {
    std::string why = *q->qtype == QType::kU4
                          ? "U4 activations are allowed only into the activation input of "
                            "Conv, ConvTranspose and Gemm"
                          : "activation types are U8, S8, U16, S16";
    c.out.Emit({.rule = rules::kRoleActivationType,
                .node = at,
                .message = "output '" + std::string(q->x) + "' of " + who + " is quantized as " +
                           tname + " by Q '" + c.Name(qn) + "'; " + why,
                .group_key = "activation type " + tname + " not allowed",
                .tensors = {std::string(q->x)},
                .values = {{"type", tname}},
                .more_nodes = {producer}});
  } else if (q->granularity == Granularity::kPerChannel) {
    c.out.Emit({.rule = rules::kRoleActivationType,
                .node = at,
                .message = "output '" + std::string(q->x) + "' of " + who +
                           " is quantized per-channel by Q '" + c.Name(qn) +
                           "'; activations are per-tensor only",
                .group_key = "activation quantized per-channel",
                .tensors = {std::string(q->x)},
                .values = {{"channels", std::to_string(q->channels())}},
                .more_nodes = {producer}});
  }
}

const QuantParams* CheckWeight(Context& c, int unit, int node, const OpSpec& spec) {
  const auto& n = c.g.node(node);
  if (n.input_size() < 2 || n.input(1).empty()) return nullptr;
  const auto& t = n.input(1);
  const int tid = c.g.InputId(node, 1);
  const std::string who = c.Op(node) + " '" + c.Name(node) + "'";
  int dq = c.q.DqProducing(tid);
  if (dq < 0) {
    const auto* init = c.g.InitializerOf(tid);
    const int k = ConstantProducer(c, t);
    if (init || k >= 0) {
      c.out.Emit(
          {.rule = rules::kQdqConstForm,
           .node = node,
           .message = "weight '" + t + "' of " + who + " is used unquantized" +
                      (k >= 0 ? " (output of Constant node '" + c.Name(k) + "')" : std::string()) +
                      "; weights must be FP32 initializer -> Q -> DQ "
                      "or integer initializer -> DQ (symmetric S4/S8 per-channel)",
           .group_key = "weight without Q/DQ",
           .tensors = {t},
           .more_nodes = Nodes({k})});
    } else if (!FromQuantizedPassive(c, t)) {
      c.out.Emit({.rule = rules::kOpInputNotQuantized,
                  .node = node,
                  .message = "weight '" + t + "' of " + who + " comes from " + SourceText(c, t) +
                             " without DQ; weights must be quantized",
                  .group_key = c.Op(node) + " weight not quantized",
                  .tensors = {t}});
    }
    return nullptr;
  }
  c.ClaimDq(dq, unit);
  const auto* p = c.q.Of(dq);
  auto wdims = c.g.DimsOf(tid);
  std::int64_t group = AttrInt(n, "group").value_or(1);
  std::int64_t out_ch = -1;
  if (wdims && wdims->size() >= 2) {
    // W.dims[1] * group; unknown (-1) for non-positive values or int64 overflow (hostile dims).
    std::int64_t ct = -1;
    if ((*wdims)[1] > 0 && group > 0 && __builtin_mul_overflow((*wdims)[1], group, &ct)) ct = -1;
    out_ch = spec.weight_axis == 1 ? ct : (*wdims)[0];
  }
  const std::int64_t axis_dim =
      (wdims && static_cast<std::int64_t>(wdims->size()) > spec.weight_axis)
          ? (*wdims)[static_cast<std::size_t>(spec.weight_axis)]
          : -1;
  const std::string tname = QTypeName(p->qtype, p->int_type);
  if (p->qtype && !kWeightTypes.Has(*p->qtype)) {
    c.out.Emit({.rule = rules::kRoleWeightType,
                .node = dq,
                .message = "weight '" + t + "' of " + who + " is " + tname +
                           "; weights must be symmetric S4 or S8 per-channel",
                .group_key = c.Op(node) + " weight type " + tname,
                .tensors = {t},
                .values = {{"type", tname}},
                .more_nodes = {node}});
  }
  // Reading 10: per-channel means a 1-D scale with an explicit axis, also with one channel; a
  // rank-0 scale is per-tensor even when the node carries an axis attribute.
  if (p->granularity == Granularity::kPerTensor) {
    const bool one = axis_dim == 1;
    c.out.Emit(
        {.rule = rules::kRoleWeightType,
         .node = dq,
         .message = "weight '" + t + "' of " + who + " is quantized per-tensor" +
                    (p->axis_attr ? std::string(" (its ") +
                                        (p->scale_dims && !p->scale_dims->empty() ? "one-element"
                                                                                  : "rank-0") +
                                        " scale is per-tensor; the axis attribute does not "
                                        "make it per-channel)"
                                  : std::string()) +
                    "; weights must be per-channel along axis " + std::to_string(spec.weight_axis) +
                    (one ? " (one output channel: a [1] scale and zero_point with axis=" +
                               std::to_string(spec.weight_axis) + ")"
                         : std::string()),
         .group_key = c.Op(node) + " weight quantized per-tensor",
         .tensors = {t},
         .values = {{"granularity", "per-tensor"}},
         .more_nodes = {node}});
  } else if (p->granularity == Granularity::kPerChannel && p->axis_attr &&
             *p->axis_attr != spec.weight_axis) {
    std::string written = std::to_string(*p->axis_attr);
    c.out.Emit({.rule = rules::kQdqWeightAxis,
                .node = dq,
                .message = "weight '" + t + "' of " + who + " is quantized along axis " + written +
                           (*p->axis_attr < 0 ? " (negative forms are not accepted)" : "") + "; " +
                           c.Op(node) + " weights use axis " + std::to_string(spec.weight_axis),
                .group_key = c.Op(node) + " weight axis " + written,
                .tensors = {t},
                .values = {{"axis", written}},
                .more_nodes = {node}});
  }
  if (p->qtype == QType::kS4 && out_ch > 0 && out_ch % 2 == 1) {
    c.out.Emit({.rule = rules::kRoleInt4Channels,
                .node = dq,
                .message = "S4 weight '" + t + "' of " + who + " has " +
                           Count(out_ch, "output channel") + "; 4-bit weights need an even count",
                .group_key = "S4 weight with an odd output-channel count",
                .tensors = {t},
                .values = {{"output_channels", std::to_string(out_ch)}},
                .more_nodes = {node}});
  }
  WeightFitsInt4(c, node, dq, *p, out_ch);
  return p;
}

void CheckBias(Context& c, int unit, int node, const OpSpec& spec, const QuantParams* in,
               const QuantParams* w) {
  const auto& n = c.g.node(node);
  if (n.input_size() < 3 || n.input(2).empty()) return;
  const auto& t = n.input(2);
  const int tid = c.g.InputId(node, 2);
  const std::string who = c.Op(node) + " '" + c.Name(node) + "'";
  int dq = c.q.DqProducing(tid);
  if (dq < 0) {
    const auto* init = c.g.InitializerOf(tid);
    if (init && init->data_type() == onnx::TensorProto::FLOAT) return;  // direct FP32 bias
    if (FromQuantizedPassive(c, t)) return;
    c.out.Emit({.rule = rules::kQdqConstForm,
                .node = node,
                .message = "bias '" + t + "' of " + who + " comes from " + SourceText(c, t) +
                           "; a bias must be a direct FP32 initializer, FP32 initializer -> Q/DQ "
                           "S32, or INT32 initializer -> DQ",
                .group_key = c.Op(node) + " bias in a form not listed",
                .tensors = {t},
                .more_nodes = Nodes({ConstantProducer(c, t)})});
    return;
  }
  c.ClaimDq(dq, unit);
  const auto* b = c.q.Of(dq);
  std::int64_t group = AttrInt(n, "group").value_or(1);
  if (c.Op(node) == "ConvTranspose" && group > 1) {
    c.out.Emit({.rule = rules::kRoleConvtransposeGroupBias,
                .node = node,
                .message = "ConvTranspose '" + c.Name(node) +
                           "' has group=" + std::to_string(group) + " and a quantized bias '" + t +
                           "'; use an FP32 bias or none",
                .group_key = "grouped ConvTranspose with quantized bias",
                .tensors = {t},
                .values = {{"group", std::to_string(group)}},
                .more_nodes = {dq}});
  }
  const std::string tname = QTypeName(b->qtype, b->int_type);
  if (b->qtype != QType::kS32) {
    c.out.Emit({.rule = rules::kRoleBiasType,
                .node = dq,
                .message = "bias '" + t + "' of " + who + " is quantized as " + tname +
                           "; a quantized bias must be symmetric S32 per-channel",
                .group_key = "quantized bias type " + tname,
                .tensors = {t},
                .values = {{"type", tname}},
                .more_nodes = {node}});
  }
  // Reading 10: also a one-channel bias must be per-channel (a [1] scale with axis=0).
  auto bdims = c.g.DimsOf(tid);
  const bool one = bdims && bdims->size() == 1 && (*bdims)[0] == 1;
  if (b->granularity == Granularity::kPerTensor) {
    c.out.Emit({.rule = rules::kRoleBiasType,
                .node = dq,
                .message = "bias '" + t + "' of " + who +
                           " is quantized per-tensor; a quantized bias must be per-channel" +
                           (one ? std::string(" (one channel: a [1] scale and zero_point with "
                                              "axis=0)")
                                : std::string()),
                .group_key = "quantized bias per-tensor",
                .tensors = {t},
                .values = {{"granularity", "per-tensor"}},
                .more_nodes = {node}});
  }
  // bias_scale = input_scale * weight_scale per channel (section 4), FP32 math.
  if (!c.check_value || in == nullptr || w == nullptr) return;
  if (!b->scale_values || !in->scale_values || !w->scale_values) {
    c.out.Emit(
        {.rule = rules::kQdqValueUnreadable,
         .node = dq,
         .message = "bias_scale of " + who + " not checked: a scale is not statically readable",
         .group_key = "bias scale values not statically readable",
         .tensors = {t}});
    return;
  }
  const auto& bs = *b->scale_values;
  const auto& is = *in->scale_values;
  const auto& ws = *w->scale_values;
  if (is.size() != 1) return;
  for (std::size_t i = 0; i < bs.size(); ++i) {
    float wsc = static_cast<float>(ws.size() == 1 ? ws[0] : (i < ws.size() ? ws[i] : NAN));
    float prod = static_cast<float>(is[0]) * wsc;
    float bsc = static_cast<float>(bs[i]);
    if (std::isnan(prod)) break;
    if (std::fabs(bsc - prod) <= 1e-7f + 1e-5f * std::fabs(prod)) continue;
    std::string idx = "bias_scale[" + std::to_string(i) + "]";
    c.out.Emit(
        {.rule = rules::kRoleBiasScale,
         .node = dq,
         .message = who + ": " + idx + "=" + FormatNumber(bsc) +
                    ", input_scale*weight_scale=" + FormatNumber(prod) + " (input " +
                    FormatNumber(is[0]) + " * weight " + FormatNumber(wsc) + ")",
         .group_key = "bias_scale != input_scale * weight_scale",
         .tensors = {t},
         .values = {{idx, FormatNumber(bsc)}, {"input_scale*weight_scale", FormatNumber(prod)}},
         .more_nodes = {node}});
    break;
  }
  (void)spec;
}

void CheckStaticParam(Context& c, int node, int slot, std::string_view what) {
  const auto& n = c.g.node(node);
  if (slot >= n.input_size() || n.input(slot).empty()) return;
  const auto& t = n.input(slot);
  const int tid = c.g.InputId(node, slot);
  const auto* init = c.g.InitializerOf(tid);
  if (init && init->data_type() == onnx::TensorProto::FLOAT) return;
  int dq = c.q.DqProducing(tid);
  if (dq >= 0) c.Touch(dq);  // reported here (and named), not as orphan
  const int k = ConstantProducer(c, t);
  std::string from = dq >= 0  ? "DQ '" + c.Name(dq) + "' (parameters are not quantized)"
                     : k >= 0 ? "Constant node '" + c.Name(k) + "'"
                              : SourceText(c, t);
  c.out.Emit({.rule = rules::kOpStaticParam,
              .node = node,
              .message = std::string(what) + " '" + t + "' of " + c.Op(node) + " '" + c.Name(node) +
                         "' comes from " + from + "; it must be a direct FP32 initializer",
              .group_key = c.Op(node) + " " + std::string(what) + " not a direct FP32 initializer",
              .tensors = {t},
              .more_nodes = Nodes({dq, k})});
}

bool CheckOutputQuantized(Context& c, int unit, int node, int tensor_id, std::string_view tensor,
                          RuleId rule) {
  bool ok = true;
  const auto& u = c.units.all()[static_cast<std::size_t>(unit)];
  auto inside = [&](int n) { return c.units.UnitOf(n) == u.id; };
  const std::string who = c.Op(node) + " '" + c.Name(node) + "'";
  if (c.g.IsGraphOutputId(tensor_id)) {
    ok = false;
    c.out.Emit({.rule = rule,
                .node = node,
                .message = "output '" + std::string(tensor) + "' of " + who +
                           " is a graph output without Q/DQ; quantize it (Q -> DQ) first",
                .group_key = c.Op(node) + " output is a graph output without Q/DQ",
                .tensors = {std::string(tensor)}});
  }
  std::vector<int> unquantized;  // each consumer node once
  for (const auto& use : c.g.ConsumersOf(tensor_id)) {
    if (inside(use.node)) continue;
    if (c.q.IsQ(use.node) && use.slot == 0) {
      c.ClaimQ(use.node, unit);
      CheckOutputActivation(c, use.node, node);
      continue;
    }
    if (unquantized.empty() || unquantized.back() != use.node) unquantized.push_back(use.node);
  }
  if (!unquantized.empty()) {
    ok = false;
    c.out.Emit({.rule = rule,
                .node = node,
                .message = "output '" + std::string(tensor) + "' of " + who + " feeds " +
                           NodeList(c, unquantized) +
                           " without Q/DQ; every used branch needs Q -> DQ",
                .group_key = c.Op(node) + " output branch without Q/DQ",
                .tensors = {std::string(tensor)},
                .more_nodes = unquantized});
  }
  return ok;
}

}  // namespace axqc::detail
