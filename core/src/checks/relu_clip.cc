// Relu (5.15) and Clip (5.16): standalone quant-only form (Q/DQ on both sides) and the
// asymmetric branch-local fusion tail; output zero_point; static Clip bounds.
#include "roles.h"

namespace axqc::detail {

namespace {

void CheckBounds(Context& c, int node) {
  const auto& n = c.g.node(node);
  if (n.op_type() != "Clip") return;
  for (int s = 1; s <= 2 && s < n.input_size(); ++s) {
    const auto& t = n.input(s);
    const int tid = c.g.InputId(node, s);
    if (t.empty()) continue;
    const auto* init = c.g.InitializerOf(tid);
    if (init && init->data_type() == onnx::TensorProto::FLOAT) continue;
    int dq = c.q.DqProducing(tid);
    if (dq >= 0) c.Touch(dq);  // reported here (and named), not as orphan
    // Reading 13: a bound from a Constant node is static, not dynamic; say so and name it.
    const int k = ConstantProducer(c, t);
    c.out.Emit(
        {.rule = rules::kOpClipDynamic,
         .node = node,
         .message = std::string(s == 1 ? "min" : "max") + " '" + t + "' of Clip '" + c.Name(node) +
                    "' comes from " +
                    (k >= 0 ? "Constant node '" + c.Name(k) +
                                  "'; Clip bounds must be omitted or direct FP32 "
                                  "initializers: fold the Constant into an initializer"
                            : SourceText(c, t) + "; Clip bounds must be omitted or direct FP32 "
                                                 "initializers"),
         .group_key = k >= 0 ? "Clip bound from a Constant node" : "dynamic Clip bound",
         .tensors = {t},
         .more_nodes = Nodes({dq, k})});
  }
}

// Output branches: Q/DQ on every consumer, zero_point 0 (Relu; Clip only when symmetric).
void CheckOutput(Context& c, int unit, int node, bool tail) {
  const auto& n = c.g.node(node);
  if (n.output_size() == 0 || n.output(0).empty()) return;
  const auto& out = n.output(0);
  const bool relu = n.op_type() == "Relu";
  const std::string who = n.op_type() + " '" + c.Name(node) + "'";
  const std::string form = tail ? "fusion tail" : "standalone";
  if (c.g.IsGraphOutputId(c.g.TensorId(out))) {
    c.out.Emit({.rule = rules::kOpReluForm,
                .node = node,
                .message = who + " (" + form + ") output '" + out +
                           "' is a graph output without Q/DQ; its output must be quantized",
                .group_key = n.op_type() + " output is a graph output without Q/DQ",
                .tensors = {out}});
  }
  std::vector<int> unquantized;  // consumers without Q/DQ, each node once
  for (const auto& use : c.g.ConsumersOf(c.g.TensorId(out))) {
    if (!c.q.IsQ(use.node) || use.slot != 0) {
      if (unquantized.empty() || unquantized.back() != use.node) unquantized.push_back(use.node);
      continue;
    }
    c.ClaimQ(use.node, unit);
    CheckOutputActivation(c, use.node, node);
    const auto* q = c.q.Of(use.node);
    if (!q->qtype) continue;
    const bool sym = Info(*q->qtype).is_signed;
    if (!relu && !sym) continue;  // asymmetric Clip: zp anywhere in range (3.2)
    if (!q->zp_values) {
      if (!q->zp.empty() && c.check_value) {
        c.out.Emit({.rule = rules::kQdqValueUnreadable,
                    .node = use.node,
                    .message = "zero_point of Q '" + c.Name(use.node) + "' after " + who +
                               " is not statically readable; zero_point 0 not verified",
                    .group_key = "Relu/Clip output zero_point not readable",
                    .tensors = {out}});
      }
      continue;
    }
    for (std::size_t i = 0; i < q->zp_values->size(); ++i) {
      auto v = (*q->zp_values)[i];
      if (v == 0) continue;
      c.out.Emit({.rule = rules::kOpReluZeroPoint,
                  .node = use.node,
                  .message = who + " output is quantized by Q '" + c.Name(use.node) +
                             "' with zero_point " + std::to_string(v) + "; " +
                             (relu ? "Relu output zero_point must be 0"
                                   : "a symmetric Clip output needs zero_point 0"),
                  .group_key = n.op_type() + " output zero_point not 0",
                  .tensors = {out},
                  .values = {{"zero_point", std::to_string(v)}},
                  .more_nodes = {node}});
      break;
    }
  }
  if (!unquantized.empty()) {
    c.out.Emit({.rule = rules::kOpReluForm,
                .node = node,
                .message = who + " (" + form + ") output '" + out + "' feeds " +
                           NodeList(c, unquantized) + " without Q/DQ; its output must be quantized",
                .group_key = n.op_type() + " output without Q/DQ",
                .tensors = {out},
                .more_nodes = unquantized});
  }
}

}  // namespace

void CheckReluClip(Context& c) {
  for (const auto& u : c.units.all()) {
    for (int tail : u.tails) {
      CheckBounds(c, tail);
      CheckOutput(c, u.id, tail, true);
    }
    if (u.kind != UnitKind::kOp) continue;
    const auto* spec = FindOp(c.Op(u.anchor), c.g.node(u.anchor).domain());
    if (!spec || spec->cls != OpClass::kReluLike) continue;
    const int node = u.anchor;
    const auto& n = c.g.node(node);
    CheckBounds(c, node);
    if (n.input_size() == 0 || n.output_size() == 0) continue;
    const auto& in = n.input(0);
    const int in_id = c.g.InputId(node, 0);
    // Integer data made the unit uncovered (no native-integer mode for Relu/Clip, reading 8):
    // a standalone Relu/Clip unit is quantized.
    const std::string who = n.op_type() + " '" + c.Name(node) + "'";
    int dq = c.q.DqProducing(in_id);
    if (dq >= 0) {
      CheckDataInput(c, u.id, node, 0, *spec);
    } else {
      int p = c.g.ProducerOf(in_id);
      const bool sym = IsSignedOutputQ(c.g, c.q, n.output(0));
      std::string why;
      if (sym) {
        why =
            "its output Q/DQ is signed, so it is the symmetric form, which needs Q/DQ on both "
            "sides and cannot be a fusion tail";
      } else if (p < 0) {
        why = "after a graph input (or initializer) it must be standalone with Q/DQ on both sides";
      } else {
        int pu = c.units.UnitOf(p);
        auto kind = pu >= 0 ? c.units.all()[static_cast<std::size_t>(pu)].kind : UnitKind::kOp;
        if (kind == UnitKind::kPassive) {
          why = "after a passive operator (" + c.Op(p) + " '" + c.Name(p) +
                "') it cannot be a fusion tail; add Q/DQ in front of it";
        } else if (c.units.IsTail(p)) {
          why = "its producer " + c.Op(p) + " '" + c.Name(p) +
                "' is itself a fusion tail; add Q/DQ in front of it";
        } else {
          why = "its producer " + c.Op(p) + " '" + c.Name(p) +
                "' is not a quantized compute operator, so it cannot be a fusion tail; add Q/DQ "
                "in front of it";
        }
      }
      c.out.Emit({.rule = rules::kOpReluForm,
                  .node = node,
                  .message = who + " input '" + in + "' has no DQ: " + why,
                  .group_key = sym ? n.op_type() + " symmetric form without Q/DQ on its input"
                                   : n.op_type() + " without input Q/DQ and not a fusion tail",
                  .tensors = {in}});
    }
    CheckOutput(c, u.id, node, false);
  }
}

}  // namespace axqc::detail
