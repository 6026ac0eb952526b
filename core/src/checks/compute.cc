// Quant-only operators (5.2-5.8, 5.12) and pattern units (6.2-6.4): every external input by
// its role, operator-specific constraints, and every designated output through Q/DQ.
#include <algorithm>
#include <span>

#include "roles.h"

namespace axqc::detail {

namespace {

void CheckGemmForm(Context& c, int node) {
  const auto& n = c.g.node(node);
  const auto ta = AttrInt(n, "transA").value_or(0);
  const auto tb = AttrInt(n, "transB").value_or(0);
  const auto alpha = AttrFloat(n, "alpha").value_or(1.0f);
  const auto beta = AttrFloat(n, "beta").value_or(1.0f);
  std::string bad;
  auto add = [&](const std::string& s) { bad += (bad.empty() ? "" : ", ") + s; };
  if (ta != 0) add("transA=" + std::to_string(ta));
  if (tb != 1) add("transB=" + std::to_string(tb));
  if (alpha != 1.0f) add("alpha=" + FormatNumber(alpha));
  if (beta != 1.0f) add("beta=" + FormatNumber(beta));  // 5.2 fixes beta even without C
  if (bad.empty()) return;
  c.out.Emit({.rule = rules::kOpGemmForm,
              .node = node,
              .message = "Gemm '" + c.Name(node) + "' has " + bad +
                         "; only the canonical fully-connected form transA=0, transB=1, alpha=1, "
                         "beta=1 is accepted",
              .group_key = "Gemm not in canonical form",
              .values = {{"attributes", bad}}});
}

void CheckGrid(Context& c, int unit, int node) {
  const auto& n = c.g.node(node);
  if (n.input_size() < 2 || n.input(1).empty()) return;
  const auto& t = n.input(1);
  const int tid = c.g.InputId(node, 1);
  int dq = c.q.DqProducing(tid);
  const std::string who = "GridSample '" + c.Name(node) + "'";
  if (dq >= 0) {
    c.ClaimDq(dq, unit);
    const auto* p = c.q.Of(dq);
    if (p->qtype != QType::kS16 || p->granularity == Granularity::kPerChannel) {
      c.out.Emit({.rule = rules::kOpGridsampleType,
                  .node = dq,
                  .message = "grid '" + t + "' of " + who + " is quantized as " +
                             QTypeName(p->qtype, p->int_type) + " " +
                             std::string(GranularityName(p->granularity)) +
                             "; a quantized grid must be symmetric per-tensor S16 (never S8)",
                  .group_key = "GridSample grid quantized as other than S16 per-tensor",
                  .tensors = {t},
                  .values = {{"type", QTypeName(p->qtype, p->int_type)}},
                  .more_nodes = {node}});
    }
    return;
  }
  if (const int k = ConstantProducer(c, t); k >= 0) {
    c.out.Emit({.rule = rules::kOpGridsampleType,
                .node = node,
                .message = "static FP32 grid '" + t + "' of " + who +
                           " is the output of Constant node '" + c.Name(k) +
                           "'; a static grid must be an initializer",
                .group_key = "static GridSample grid not an initializer",
                .tensors = {t},
                .more_nodes = {k}});
  } else if (const auto* init = c.g.InitializerOf(tid); init && !IsFloatType(init->data_type())) {
    c.out.Emit({.rule = rules::kQdqConstForm,
                .node = node,
                .message = "grid '" + t + "' of " + who +
                           " is an integer initializer without DQ; use INT16 initializer -> DQ",
                .group_key = "integer grid without DQ",
                .tensors = {t}});
  }
}

void CheckExponent(Context& c, int node) {
  const auto& n = c.g.node(node);
  if (n.input_size() < 2 || n.input(1).empty()) return;
  const auto& t = n.input(1);
  const int tid = c.g.InputId(node, 1);
  int dq = c.q.DqProducing(tid);
  const int k = ConstantProducer(c, t);
  if (dq >= 0) {
    c.Touch(dq);
    c.out.Emit({.rule = rules::kOpStaticParam,
                .node = node,
                .message = "exponent '" + t + "' of Pow '" + c.Name(node) + "' comes through DQ '" +
                           c.Name(dq) + "'; the exponent is not quantized",
                .group_key = "Pow exponent quantized",
                .tensors = {t},
                .more_nodes = {dq}});
  } else if (k >= 0) {
    c.out.Emit({.rule = rules::kOpStaticParam,
                .node = node,
                .message = "static exponent '" + t + "' of Pow '" + c.Name(node) +
                           "' is the output of Constant node '" + c.Name(k) +
                           "'; it must be an initializer",
                .group_key = "Pow static exponent not an initializer",
                .tensors = {t},
                .more_nodes = {k}});
  }
}

void CheckSameType(Context& c, int node,
                   const std::vector<std::pair<int, const QuantParams*>>& data) {
  const QuantParams* first = nullptr;
  int first_slot = -1;
  for (const auto& [slot, p] : data) {
    if (!p || !p->qtype) continue;
    if (!first) {
      first = p;
      first_slot = slot;
      continue;
    }
    if (*p->qtype != *first->qtype) {
      const auto& n = c.g.node(node);
      const std::string a(Info(*first->qtype).name), b(Info(*p->qtype).name);
      c.out.Emit({.rule = rules::kOpSameTypeInputs,
                  .node = node,
                  .message = c.Op(node) + " '" + c.Name(node) + "' inputs '" + n.input(first_slot) +
                             "' (" + a + ") and '" + n.input(slot) + "' (" + b +
                             ") must share one integer type (scales may differ)",
                  .group_key = c.Op(node) + " inputs with different integer types",
                  .tensors = {n.input(first_slot), n.input(slot)},
                  .values = {{"types", a + " vs " + b}}});
      return;
    }
  }
}

// Tensor ids produced inside a unit (its internal edges; a few per unit).
bool Internal(std::span<const int> internal, int id) {
  return std::find(internal.begin(), internal.end(), id) != internal.end();
}

void CheckNode(Context& c, const Unit& u, int node, std::span<const int> internal) {
  const auto& n = c.g.node(node);
  const auto* spec = FindOp(n.op_type(), n.domain());
  if (!spec) return;
  if (spec->flags & kGemmForm) CheckGemmForm(c, node);
  const QuantParams* in = nullptr;
  const QuantParams* w = nullptr;
  std::vector<std::pair<int, const QuantParams*>> data;
  const auto ids = c.g.InputIds(node);
  for (int s = 0; s < n.input_size(); ++s) {
    const int id = ids[static_cast<std::size_t>(s)];
    if (id < 0 || Internal(internal, id)) continue;
    switch (spec->InputRole(s)) {
      case InRole::kData:
      case InRole::kPass: {
        const auto* p = CheckDataInput(c, u.id, node, s, *spec);
        data.emplace_back(s, p);
        if (s == 0) in = p;
        break;
      }
      case InRole::kWeight:
        w = CheckWeight(c, u.id, node, *spec);
        break;
      case InRole::kBias:
        break;  // after the weight (needs its scale)
      case InRole::kStaticF32:
        CheckStaticParam(c, node, s, spec->op_type == "PRelu" ? "slope" : "parameter");
        break;
      case InRole::kGrid:
        CheckGrid(c, u.id, node);
        break;
      case InRole::kExponent:
        CheckExponent(c, node);
        break;
      case InRole::kClipBound:
      case InRole::kFloatAux:
      case InRole::kAux:
        break;
    }
  }
  if (spec->inputs.size() > 2 && spec->inputs[2] == InRole::kBias &&
      !Internal(internal, c.g.InputId(node, 2))) {
    CheckBias(c, u.id, node, *spec, in, w);
  }
  if (spec->flags & kSameTypeData) CheckSameType(c, node, data);
}

}  // namespace

void CheckComputeUnits(Context& c) {
  for (const auto& u : c.units.all()) {
    if (u.kind != UnitKind::kOp && u.kind != UnitKind::kPattern) continue;
    const auto* anchor = FindOp(c.Op(u.anchor), c.g.node(u.anchor).domain());
    if (u.kind == UnitKind::kOp && (!anchor || anchor->cls != OpClass::kQuantOnly)) continue;
    if (u.mode == UnitMode::kNativeInt) continue;  // 5.5, 5.12: no Q/DQ boundary to check
    // Tensors produced inside the unit are internal edges, not boundaries.
    std::vector<int> internal;
    for (int node : u.nodes) {
      for (const int o : c.g.OutputIds(node)) {
        if (o >= 0) internal.push_back(o);
      }
    }
    for (int node : u.nodes) CheckNode(c, u, node, internal);
    // Designated outputs of main nodes (tails are checked by the Relu/Clip rules).
    for (auto out : u.outputs) {
      const int id = c.g.TensorId(out);
      const int p = c.g.ProducerOf(id);
      if (p < 0 || c.units.IsTail(p)) continue;
      CheckOutputQuantized(c, u.id, p, id, out, rules::kOpOutputNotQuantized);
    }
  }
}

}  // namespace axqc::detail
