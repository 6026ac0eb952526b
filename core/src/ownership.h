// What the rules claim while they check: which Q/DQ nodes have a purpose, which Q/DQ edges an
// operator or pattern rule owns, and each unit's input and output boundary. The rules write only
// through the Claim*/Touch/Explain/MarkEdgeOwned calls; closure (2.3) and the report read the
// result. Units and their modes are decided before the rules and are not changed by them.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

#include "quant.h"

namespace axqc::detail {

class Ownership {
 public:
  Ownership(const QuantTable& q, int node_count, std::size_t unit_count);

  // A DQ (and its paired Q) becomes an input boundary of `unit` (-1: no unit) and its edge is
  // owned.
  void ClaimDq(int dq, int unit);
  // A Q (and its paired DQ) becomes an output boundary of `unit` (-1: no unit) and its edge is
  // owned.
  void ClaimQ(int q, int unit);
  // A DQ and its paired Q are explained by a finding (no orphan report); the edge is not owned.
  void Touch(int dq);
  // A Q or DQ node and the other end of its edge are explained by a finding that names it.
  void Explain(int node);
  // The edge of `dq` is owned without a unit boundary (a DQ whose Q's edge is owned, 2.3).
  void MarkEdgeOwned(int dq) { owned_edge_[static_cast<std::size_t>(dq)] = true; }

  // Whether a Q/DQ node has a purpose in some rule.
  bool Claimed(int node) const { return claimed_[static_cast<std::size_t>(node)]; }
  // Whether the DQ node's own edge (or an unpaired Q's) is owned.
  bool OwnsEdgeOf(int node) const { return owned_edge_[static_cast<std::size_t>(node)]; }
  // Whether the Q/DQ edge that `node` (a Q or a DQ) belongs to is owned: a DQ's own edge, a Q's
  // paired DQ edge (or the Q itself when it has no pair).
  bool EdgeOwned(int node) const;
  // The boundary of a unit in claim order.
  std::span<const int> InputBoundary(int unit) const {
    return in_dq_[static_cast<std::size_t>(unit)];
  }
  std::span<const int> OutputBoundary(int unit) const {
    return out_q_[static_cast<std::size_t>(unit)];
  }

 private:
  const QuantTable& q_;
  std::vector<bool> claimed_;     // Q/DQ node -> has a purpose
  std::vector<bool> owned_edge_;  // DQ node -> its edge is owned by an operator/pattern rule
  std::vector<std::vector<int>> in_dq_, out_q_;  // per unit
  // Appends `node` to a unit's boundary unless it is there already.
  void AddBoundary(std::vector<int>& boundary, int unit, bool is_q, int node);
  // (unit, kind, node) already in a boundary of more than a few entries: keeps claiming O(1) for
  // nodes with tens of thousands of inputs (a linear search made that quadratic).
  std::unordered_set<std::uint64_t> boundaries_;
};

}  // namespace axqc::detail
