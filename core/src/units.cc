#include "units.h"

#include <algorithm>
#include <unordered_map>

namespace axqc::detail {

std::string_view UnitKindName(UnitKind k) {
  switch (k) {
    case UnitKind::kOp:
      return "op";
    case UnitKind::kPattern:
      return "pattern";
    case UnitKind::kPassive:
      return "passive";
    case UnitKind::kRequantize:
      return "requantize";
    case UnitKind::kNonQuant:
      return "non-quant";
    case UnitKind::kUncovered:
      return "uncovered";
    case UnitKind::kUnsupported:
      return "unsupported";
    case UnitKind::kConstant:
      return "constant";
  }
  return "?";
}

std::string_view UnitModeName(UnitMode m) {
  switch (m) {
    case UnitMode::kNone:
      return "";
    case UnitMode::kQuantized:
      return "quantized";
    case UnitMode::kNonQuant:
      return "non_quant";
    case UnitMode::kNativeInt:
      return "native_int";
  }
  return "";
}

std::string Unit::Kind() const {
  std::string k(UnitKindName(kind));
  if (!pattern.empty()) k += ":" + pattern;
  return k;
}

bool HasNativeIntegerMode(std::string_view op_type) {
  return op_type == "Add" || op_type == "Sub" || op_type == "Mul" || op_type == "Concat";
}

bool ComputesOnIntegers(const GraphIndex& g, int node, const OpSpec& spec) {
  if (spec.cls != OpClass::kQuantOnly && spec.cls != OpClass::kReluLike) return false;
  auto integer = [&](int id) {
    const int et = g.ElemTypeOf(id);
    return et != 0 && !IsFloatType(et);
  };
  if (integer(g.OutputId(node, 0))) return true;
  const auto ins = g.InputIds(node);
  for (std::size_t s = 0; s < ins.size(); ++s) {
    if (spec.InputRole(static_cast<int>(s)) == InRole::kData && integer(ins[s])) return true;
  }
  return false;
}

UnitMode DecideMode(const GraphIndex& g, const QuantTable& q, const Unit& u) {
  const auto& anchor = g.node(u.anchor);
  const auto* spec = FindOp(anchor.op_type(), anchor.domain());
  // A DQ on the data input of `node` (the first input) decides pass-through and mixed units.
  auto dq_fed = [&](int node) {
    return q.DqProducing(g.InputId(node, 0)) >= 0 ? UnitMode::kQuantized : UnitMode::kNonQuant;
  };
  switch (u.kind) {
    case UnitKind::kRequantize:
      return UnitMode::kQuantized;
    case UnitKind::kPassive:
      return dq_fed(u.nodes.front());
    case UnitKind::kPattern:
      return UnitMode::kQuantized;
    case UnitKind::kOp:
      break;
    default:
      return UnitMode::kNone;
  }
  if (spec == nullptr) return UnitMode::kNone;
  switch (spec->cls) {
    case OpClass::kMixed:
      if (anchor.input_size() == 0 || anchor.output_size() == 0) return UnitMode::kNone;
      return dq_fed(u.anchor);
    case OpClass::kQuantOnly: {
      // Native integer: the operator's data output is a known non-float tensor (the unit exists
      // only when the operator has a native-integer mode, see the single-operator step).
      if (anchor.output_size() == 0 || anchor.output(0).empty()) return UnitMode::kQuantized;
      const int et = g.ElemTypeOf(g.OutputId(u.anchor, 0));
      return et != 0 && !IsFloatType(et) ? UnitMode::kNativeInt : UnitMode::kQuantized;
    }
    case OpClass::kReluLike:
      return anchor.input_size() == 0 || anchor.output_size() == 0 ? UnitMode::kNone
                                                                   : UnitMode::kQuantized;
    default:
      return UnitMode::kNone;
  }
}

int Units::NewUnit(UnitKind kind, int anchor) {
  Unit u;
  u.id = static_cast<int>(units_.size());
  u.kind = kind;
  u.anchor = anchor;
  units_.push_back(std::move(u));
  return units_.back().id;
}

// Every stage below visits each node a constant number of times and looks neighbours up through
// the index's hash maps, so grouping is linear in nodes + edges. Pattern matchers start from one
// anchor op type and look only at direct producers; ownership resolution sorts the matches
// (n log n in the number of matches).
Units::Units(const GraphIndex& g, const QuantTable& q) {
  const int n = g.node_count();
  unit_of_.assign(static_cast<std::size_t>(n), -1);
  is_tail_.assign(static_cast<std::size_t>(n), false);
  std::vector<int> topo_pos(static_cast<std::size_t>(n), 0);
  for (std::size_t i = 0; i < g.topo_order().size(); ++i) {
    topo_pos[static_cast<std::size_t>(g.topo_order()[i])] = static_cast<int>(i);
  }
  std::vector<bool> free(static_cast<std::size_t>(n), true);
  for (int i = 0; i < n; ++i) {
    if (q.Of(i)) free[static_cast<std::size_t>(i)] = false;
  }
  FormPatterns(g, topo_pos, free);
  FormRequantize(g, q, free);
  FormPassive(g, free);
  FormSingleOperators(g, free);
  AttachFusionTails(g, q);
  for (auto& u : units_) u.mode = DecideMode(g, q, u);  // 6. modes, once
}

// 1. Patterns: largest first; equal-size overlapping maxima are ambiguous (6.1).
void Units::FormPatterns(const GraphIndex& g, const std::vector<int>& topo_pos,
                         std::vector<bool>& free) {
  const int n = g.node_count();
  std::vector<PatternMatch> matches = MatchPatterns(g);
  std::stable_sort(matches.begin(), matches.end(), [&](const auto& a, const auto& b) {
    if (a.size != b.size) return a.size > b.size;
    return topo_pos[static_cast<std::size_t>(a.anchor)] <
           topo_pos[static_cast<std::size_t>(b.anchor)];
  });
  std::vector<int> claimed_by(static_cast<std::size_t>(n), -1);  // node -> match index
  for (std::size_t mi = 0; mi < matches.size(); ++mi) {
    const auto& m = matches[mi];
    int clash = -1;
    for (int node : m.nodes) {
      if (claimed_by[static_cast<std::size_t>(node)] >= 0)
        clash = claimed_by[static_cast<std::size_t>(node)];
    }
    if (clash >= 0) {
      const auto& kept = matches[static_cast<std::size_t>(clash)];
      if (kept.size == m.size) ambiguous_.push_back({kept, m});
      continue;
    }
    for (int node : m.nodes) claimed_by[static_cast<std::size_t>(node)] = static_cast<int>(mi);
    int id = NewUnit(UnitKind::kPattern, m.anchor);
    auto& u = units_[static_cast<std::size_t>(id)];
    u.pattern = std::string(m.kind());
    u.pattern_spec = m.spec;
    u.nodes = m.nodes;
    std::sort(u.nodes.begin(), u.nodes.end(), [&](int a, int b) {
      return topo_pos[static_cast<std::size_t>(a)] < topo_pos[static_cast<std::size_t>(b)];
    });
    u.outputs = m.outputs;
    for (int node : m.nodes) {
      unit_of_[static_cast<std::size_t>(node)] = id;
      free[static_cast<std::size_t>(node)] = false;
    }
  }
}

// 2. Requantize Identities (6.7).
void Units::FormRequantize(const GraphIndex& g, const QuantTable& q, std::vector<bool>& free) {
  for (int i : g.topo_order()) {
    if (!free[static_cast<std::size_t>(i)] || !IsRequantizeIdentity(g, q, i)) continue;
    int id = NewUnit(UnitKind::kRequantize, i);
    units_[static_cast<std::size_t>(id)].nodes = {i};
    units_[static_cast<std::size_t>(id)].outputs = {g.node(i).output(0)};
    unit_of_[static_cast<std::size_t>(i)] = id;
    free[static_cast<std::size_t>(i)] = false;
  }
}

// 3. Passive pass-through subgraphs (5.10, 6.6) and Split patterns (5.11).
void Units::FormPassive(const GraphIndex& g, std::vector<bool>& free) {
  for (auto& group : GroupPassive(g, free)) {
    int id = NewUnit(UnitKind::kPassive, group.front());
    auto& u = units_[static_cast<std::size_t>(id)];
    for (int node : group) {
      unit_of_[static_cast<std::size_t>(node)] = id;
      free[static_cast<std::size_t>(node)] = false;
      if (g.node(node).op_type() == "Split") u.pattern = "split";
    }
    u.nodes = std::move(group);
  }
}

// 4. Single operators.
void Units::FormSingleOperators(const GraphIndex& g, std::vector<bool>& free) {
  for (int i : g.topo_order()) {
    if (!free[static_cast<std::size_t>(i)]) continue;
    const auto& node = g.node(i);
    const auto* spec = FindOp(node.op_type(), node.domain());
    UnitKind kind = UnitKind::kUncovered;
    if (spec) {
      switch (spec->cls) {
        case OpClass::kNonQuant:
          kind = UnitKind::kNonQuant;
          break;
        case OpClass::kUnsupported:
          kind = UnitKind::kUnsupported;
          break;
        default:
          kind = UnitKind::kOp;
      }
      // Integer data where the spec grants no native-integer mode is covered by no rule.
      if (kind == UnitKind::kOp && !HasNativeIntegerMode(node.op_type()) &&
          ComputesOnIntegers(g, i, *spec)) {
        kind = UnitKind::kUncovered;
      }
    } else if (IsOnnxOp(node, "Constant")) {
      kind = UnitKind::kConstant;
    }
    int id = NewUnit(kind, i);
    auto& u = units_[static_cast<std::size_t>(id)];
    u.nodes = {i};
    if (spec && kind == UnitKind::kOp) {
      for (int s = 0; s < node.output_size(); ++s) {
        if (!node.output(s).empty() && spec->OutputRole(s) == OutRole::kData) {
          u.outputs.push_back(node.output(s));
        }
      }
    }
    unit_of_[static_cast<std::size_t>(i)] = id;
    free[static_cast<std::size_t>(i)] = false;
  }
}

// 5. Relu/Clip fusion tails: attach to the non-passive quantized compute unit feeding them, then
// drop the merged units and renumber.
void Units::AttachFusionTails(const GraphIndex& g, const QuantTable& q) {
  std::vector<bool> dead(units_.size(), false);
  for (int i : g.topo_order()) {
    int ru = unit_of_[static_cast<std::size_t>(i)];
    if (ru < 0 || units_[static_cast<std::size_t>(ru)].kind != UnitKind::kOp) continue;
    const auto* spec = FindOp(g.node(i).op_type(), g.node(i).domain());
    if (!spec || spec->cls != OpClass::kReluLike || !TailCandidate(g, q, i, nullptr)) continue;
    int p = g.ProducerOf(g.InputId(i, 0));
    int pu = unit_of_[static_cast<std::size_t>(p)];
    if (pu < 0 || is_tail_[static_cast<std::size_t>(p)]) continue;
    auto& owner = units_[static_cast<std::size_t>(pu)];
    bool compute = owner.kind == UnitKind::kPattern;
    if (owner.kind == UnitKind::kOp) {
      const auto* ps = FindOp(g.node(owner.anchor).op_type(), g.node(owner.anchor).domain());
      compute = ps && ps->cls == OpClass::kQuantOnly;
    }
    // The tail continues the unit's output (pattern Y or the operator's data output).
    const auto& in = g.node(i).input(0);
    bool from_output = std::any_of(owner.outputs.begin(), owner.outputs.end(),
                                   [&](std::string_view o) { return o == in; });
    if (!compute || !from_output) continue;
    owner.tails.push_back(i);
    owner.outputs.push_back(g.node(i).output(0));
    // The producer's output now feeds the tail internally; it stays designated only if it has
    // other consumers (branch-local fusion).
    dead[static_cast<std::size_t>(ru)] = true;
    unit_of_[static_cast<std::size_t>(i)] = pu;
    is_tail_[static_cast<std::size_t>(i)] = true;
  }
  // Compact: drop merged units and renumber.
  std::vector<int> remap(units_.size(), -1);
  std::vector<Unit> kept;
  kept.reserve(units_.size());
  for (std::size_t i = 0; i < units_.size(); ++i) {
    if (dead[i]) continue;
    remap[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(units_[i]));
    kept.back().id = remap[i];
  }
  units_ = std::move(kept);
  for (auto& u : unit_of_) {
    if (u >= 0) u = remap[static_cast<std::size_t>(u)];
  }
}

}  // namespace axqc::detail
