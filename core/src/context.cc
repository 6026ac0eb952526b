#include "context.h"

#include <algorithm>

namespace axqc::detail {

bool Emitter::enabled(RuleId rule) const { return !rule.info().check_value || check_value_; }

void Emitter::Emit(Args a) {
  const RuleInfo* info = &a.rule.info();
  if (info->check_value && !check_value_) return;
  std::string first_tensor = a.tensors.empty() ? std::string() : a.tensors.front();
  if (!seen_.emplace(std::string(a.rule.id()), a.node, first_tensor, a.group_key).second) return;
  Finding f;
  f.rule = std::string(a.rule.id());
  f.severity = info->severity;
  f.section = std::string(info->section);
  f.message = std::move(a.message);
  f.group_key = a.group_key.empty() ? std::string(info->summary) : std::move(a.group_key);
  if (a.node >= 0 && g_) {
    f.nodes.emplace_back(g_->NodeName(a.node));
    f.op_type = g_->node(a.node).op_type();
  }
  for (int n : a.more_nodes) {
    if (n >= 0 && g_) f.nodes.emplace_back(g_->NodeName(n));
  }
  // Findings located at a Q/DQ node count against the operator they concern (first extra node).
  if (g_ && a.node >= 0 && !a.more_nodes.empty() && a.more_nodes.front() >= 0) {
    const auto& op = g_->node(a.node).op_type();
    const auto& other = g_->node(a.more_nodes.front()).op_type();
    if ((op == "QuantizeLinear" || op == "DequantizeLinear") && other != "QuantizeLinear" &&
        other != "DequantizeLinear") {
      f.op_type = other;
    }
  }
  f.tensors = std::move(a.tensors);
  f.values = std::move(a.values);
  out_.emplace_back(a.node, std::move(f));
}

std::vector<Finding> Emitter::Take(std::vector<int>* primary_nodes) {
  std::vector<int> pos(g_ ? static_cast<std::size_t>(g_->node_count()) : 0, 0);
  if (g_) {
    for (std::size_t i = 0; i < g_->topo_order().size(); ++i) {
      pos[static_cast<std::size_t>(g_->topo_order()[i])] = static_cast<int>(i);
    }
  }
  auto key = [&](const std::pair<int, Finding>& p) {
    return p.first < 0 ? -1 : pos[static_cast<std::size_t>(p.first)];
  };
  std::stable_sort(out_.begin(), out_.end(), [&](const auto& a, const auto& b) {
    auto ka = key(a), kb = key(b);
    if (ka != kb) return ka < kb;
    if (a.second.rule != b.second.rule) return a.second.rule < b.second.rule;
    return a.second.message < b.second.message;
  });
  std::vector<Finding> v;
  v.reserve(out_.size());
  for (auto& p : out_) {
    if (primary_nodes != nullptr) primary_nodes->push_back(p.first);
    v.push_back(std::move(p.second));
  }
  out_.clear();
  return v;
}

Context::Context(const GraphIndex& gi, const QuantTable& qt, const Units& u, Emitter& e, bool cv)
    : g(gi), q(qt), units(u), out(e), check_value(cv), claims(qt, gi.node_count(), u.all().size()) {
  topo_pos.assign(static_cast<std::size_t>(g.node_count()), 0);
  for (std::size_t i = 0; i < g.topo_order().size(); ++i) {
    topo_pos[static_cast<std::size_t>(g.topo_order()[i])] = static_cast<int>(i);
  }
}

}  // namespace axqc::detail
