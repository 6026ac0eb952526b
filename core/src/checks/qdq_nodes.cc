// Basic Q/DQ rules of one node (3.1, 3.2, 3.3) and the integer types of section 4.
// Values shared by a Q and its DQ (same initializer) are checked once, on the DQ.
#include <cmath>

#include "context.h"

namespace axqc::detail {

namespace {

std::string Kind(const QuantParams& p) { return p.is_q ? "QuantizeLinear" : "DequantizeLinear"; }

// True when this node's tensor `name` was already checked on the paired node.
bool SharedWithPair(const Context& c, const QuantParams& p, std::string_view name, bool scale) {
  if (!p.is_q) return false;
  int dq = c.q.PairedDq(p.node);
  if (dq < 0) return false;
  const auto* d = c.q.Of(dq);
  return scale ? d->scale == name : d->zp == name;
}

void CheckFloatSide(Context& c, const QuantParams& p) {
  const std::string n = c.Name(p.node);
  // Attributes of newer opsets that move the float side off FP32 (reading 14): QuantizeLinear's
  // `precision` (the type of x / y_scale, opset 25) and DequantizeLinear's `output_dtype` (the
  // type of y, opset 23+). 0 is the default: the scale's type.
  const auto& node = c.g.node(p.node);
  const std::string_view attr = p.is_q ? "precision" : "output_dtype";
  int attr_type = 0;
  if (auto v = AttrInt(node, attr); v && *v != 0 && *v != onnx::TensorProto::FLOAT) {
    attr_type = static_cast<int>(*v);
    const std::string t = ElemTypeName(attr_type);
    c.out.Emit({.rule = rules::kQdqFloatSideType,
                .node = p.node,
                .message = Kind(p) + " '" + n + "' has " + std::string(attr) + " = " + t +
                           (p.is_q ? " (it divides by the scale in " + t + ")"
                                   : " (it outputs '" + std::string(p.y) + "' as " + t + ")") +
                           "; the float side must be FP32",
                .group_key = std::string(p.is_q ? "Q" : "DQ") + " attribute " + std::string(attr) +
                             " is " + t + ", not FP32",
                .tensors = {std::string(p.is_q ? p.x : p.y)},
                .values = {{std::string(attr), t}}});
  }
  if (p.is_q) {
    int xt = c.g.ElemTypeOf(p.x_id);
    if (xt != 0 && xt != onnx::TensorProto::FLOAT) {
      c.out.Emit({.rule = rules::kQdqFloatSideType,
                  .node = p.node,
                  .message = "QuantizeLinear '" + n + "' quantizes '" + std::string(p.x) +
                             "' of type " + ElemTypeName(xt) + "; the float side must be FP32",
                  .group_key = "Q data input is " + ElemTypeName(xt) + ", not FP32",
                  .tensors = {std::string(p.x)},
                  .values = {{"type", ElemTypeName(xt)}}});
    }
  } else {
    int yt = c.g.ElemTypeOf(p.y_id);
    if (yt != 0 && yt != onnx::TensorProto::FLOAT && yt != attr_type) {
      c.out.Emit({.rule = rules::kQdqFloatSideType,
                  .node = p.node,
                  .message = "DequantizeLinear '" + n + "' outputs '" + std::string(p.y) + "' as " +
                             ElemTypeName(yt) + "; the float side must be FP32",
                  .group_key = "DQ output is " + ElemTypeName(yt) + ", not FP32",
                  .tensors = {std::string(p.y)},
                  .values = {{"type", ElemTypeName(yt)}}});
    }
  }
  if (p.scale_dtype != 0 && p.scale_dtype != onnx::TensorProto::FLOAT) {
    c.out.Emit({.rule = rules::kQdqFloatSideType,
                .node = p.node,
                .message = Kind(p) + " '" + n + "' has scale '" + std::string(p.scale) +
                           "' of type " + ElemTypeName(p.scale_dtype) + "; scales must be FP32",
                .group_key = "scale is " + ElemTypeName(p.scale_dtype) + ", not FP32",
                .tensors = {std::string(p.scale)},
                .values = {{"scale_type", ElemTypeName(p.scale_dtype)}}});
  }
}

void CheckScale(Context& c, const QuantParams& p) {
  const std::string n = c.Name(p.node);
  if (p.scale.empty()) return;  // invalid ONNX, reported by the ONNX checker
  if (!p.scale_is_initializer) {
    int prod = c.g.ProducerOf(p.scale_id);
    const bool constant =
        prod >= 0 && c.Op(prod) == "Constant" && IsOnnxDomain(c.g.node(prod).domain());
    std::string from = constant ? "Constant node '" + c.Name(prod) + "'"
                       : prod >= 0
                           ? c.Op(prod) + " '" + c.Name(prod) + "'"
                           : (c.g.IsGraphInputId(p.scale_id) ? std::string("a graph input")
                                                             : std::string("an unknown source"));
    std::vector<int> cause;
    if (constant) cause.push_back(prod);  // reading 13: tied to the Constant
    c.out.Emit({.rule = rules::kQdqScaleNotInitializer,
                .node = p.node,
                .message = Kind(p) + " '" + n + "' takes scale '" + std::string(p.scale) +
                           "' from " + from +
                           "; the scale must be an initializer referenced directly",
                .group_key = "scale produced by a node or graph input",
                .tensors = {std::string(p.scale)},
                .more_nodes = cause});
  }
  if (!p.scale_values || SharedWithPair(c, p, p.scale, true)) return;
  const auto& v = *p.scale_values;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (std::isfinite(v[i]) && v[i] > 0) continue;
    std::string idx = v.size() == 1 ? "scale" : "scale[" + std::to_string(i) + "]";
    c.out.Emit({.rule = rules::kQdqScaleValue,
                .node = p.node,
                .message = Kind(p) + " '" + n + "': " + idx + " = " + FormatNumber(v[i]) + " in '" +
                           std::string(p.scale) + "'; every scale must be finite and > 0",
                .group_key = "scale element is NaN, inf or <= 0",
                .tensors = {std::string(p.scale)},
                .values = {{idx, FormatNumber(v[i])}}});
    break;
  }
}

void CheckZeroPoint(Context& c, const QuantParams& p) {
  const std::string n = c.Name(p.node);
  if (p.zp.empty()) {
    c.out.Emit({.rule = rules::kQdqZeroPointMissing,
                .node = p.node,
                .message = Kind(p) + " '" + n +
                           "' omits zero_point; it must be explicit (add a zero_point input, 0 "
                           "for symmetric quantization)",
                .group_key = "zero_point omitted",
                .tensors = {std::string(p.x)}});
    return;
  }
  if (!c.check_value || !p.qtype || SharedWithPair(c, p, p.zp, false)) return;
  if (!p.zp_values) {
    c.out.Emit({.rule = rules::kQdqValueUnreadable,
                .node = p.node,
                .message = "zero_point '" + std::string(p.zp) + "' of " + Kind(p) + " '" + n +
                           "' is not statically readable; its range was not checked",
                .group_key = "zero_point not statically readable",
                .tensors = {std::string(p.zp)}});
    return;
  }
  const auto& info = Info(*p.qtype);
  const auto& v = *p.zp_values;
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::string idx = v.size() == 1 ? "zero_point" : "zero_point[" + std::to_string(i) + "]";
    if (info.is_signed && v[i] != 0) {
      c.out.Emit({.rule = rules::kQdqZeroPointValue,
                  .node = p.node,
                  .message = Kind(p) + " '" + n + "': " + idx + " = " + std::to_string(v[i]) +
                             " but " + std::string(info.name) +
                             " is the symmetric form, which needs zero_point 0",
                  .group_key = "symmetric (signed) zero_point is not 0",
                  .tensors = {std::string(p.zp)},
                  .values = {{idx, std::to_string(v[i])}, {"type", std::string(info.name)}}});
      return;
    }
    if (v[i] < info.min || v[i] > info.max) {
      c.out.Emit({.rule = rules::kQdqZeroPointValue,
                  .node = p.node,
                  .message = Kind(p) + " '" + n + "': " + idx + " = " + std::to_string(v[i]) +
                             " is outside the " + std::string(info.name) + " range " +
                             std::to_string(info.min) + ".." + std::to_string(info.max),
                  .group_key = "zero_point outside the type's range",
                  .tensors = {std::string(p.zp)},
                  .values = {{idx, std::to_string(v[i])}, {"type", std::string(info.name)}}});
      return;
    }
  }
}

void CheckGranularity(Context& c, const QuantParams& p) {
  const std::string n = c.Name(p.node);
  if (p.granularity == Granularity::kInvalid) {
    c.out.Emit(
        {.rule = rules::kQdqGranularity,
         .node = p.node,
         .message = Kind(p) + " '" + n + "': " + p.granularity_problem +
                    "; only per-tensor (scalar or [1]) or per-channel (1-D, scale and "
                    "zero_point of equal length) are allowed",
         .group_key = p.block_size ? "blocked quantization" : "invalid scale/zero_point shape",
         .tensors = {std::string(p.scale)}});
    return;
  }
  if (p.granularity != Granularity::kPerChannel) return;
  if (!p.axis_attr) {
    c.out.Emit({.rule = rules::kQdqAxisMissing,
                .node = p.node,
                .message = Kind(p) + " '" + n + "' is per-channel (" +
                           Count(p.channels(), "scale") + ") without an explicit axis attribute",
                .group_key = "per-channel without explicit axis",
                .tensors = {std::string(p.scale)}});
  }
  auto xd = c.g.DimsOf(p.x_id);
  if (xd && p.axis_norm && *p.axis_norm < static_cast<std::int64_t>(xd->size())) {
    auto dim = (*xd)[static_cast<std::size_t>(*p.axis_norm)];
    if (dim > 0 && dim != p.channels()) {
      c.out.Emit({.rule = rules::kQdqGranularity,
                  .node = p.node,
                  .message = Kind(p) + " '" + n + "' has " +
                             Count(p.channels(), "per-channel scale") + " but dimension " +
                             std::to_string(*p.axis_norm) + " of '" + std::string(p.x) + "' is " +
                             std::to_string(dim),
                  .group_key = "per-channel length differs from the axis dimension",
                  .tensors = {std::string(p.scale), std::string(p.x)}});
    }
  }
}

}  // namespace

void CheckQdqNodes(Context& c) {
  auto each = [&](int node) {
    const auto* p = c.q.Of(node);
    CheckFloatSide(c, *p);
    if (!p->qtype && p->int_type != 0) {
      c.out.Emit({.rule = rules::kQdqIntegerType,
                  .node = node,
                  .message = Kind(*p) + " '" + c.Name(node) + "' uses " +
                             ElemTypeName(p->int_type) +
                             "; the ax quant spec allows U4, S4, U8, S8, U16, S16 and S32",
                  .group_key = "unsupported integer type " + ElemTypeName(p->int_type),
                  .tensors = {std::string(p->is_q ? p->y : p->x)},
                  .values = {{"type", ElemTypeName(p->int_type)}}});
    }
    CheckScale(c, *p);
    CheckZeroPoint(c, *p);
    CheckGranularity(c, *p);
  };
  for (int n : c.g.topo_order()) {
    if (c.q.Of(n)) each(n);
  }
}

}  // namespace axqc::detail
