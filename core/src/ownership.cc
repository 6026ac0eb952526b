#include "ownership.h"

#include <algorithm>

namespace axqc::detail {

namespace {
std::uint64_t BoundaryKey(int unit, bool is_q, int node) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(unit)) << 33) |
         (static_cast<std::uint64_t>(is_q) << 32) | static_cast<std::uint32_t>(node);
}
}  // namespace

Ownership::Ownership(const QuantTable& q, int node_count, std::size_t unit_count)
    : q_(q),
      claimed_(static_cast<std::size_t>(node_count), false),
      owned_edge_(static_cast<std::size_t>(node_count), false),
      in_dq_(unit_count),
      out_q_(unit_count) {}

// Most boundaries have a few entries: a linear search, without a hash set entry (and its
// allocation) per claim. A boundary that grows past kLinear (a Concat with thousands of inputs)
// moves to the hash set, so that claiming stays O(1).
void Ownership::AddBoundary(std::vector<int>& boundary, int unit, bool is_q, int node) {
  constexpr std::size_t kLinear = 16;
  if (boundary.size() < kLinear) {
    if (std::find(boundary.begin(), boundary.end(), node) != boundary.end()) return;
    boundary.push_back(node);
    if (boundary.size() == kLinear) {
      for (const int n : boundary) boundaries_.insert(BoundaryKey(unit, is_q, n));
    }
    return;
  }
  if (boundaries_.insert(BoundaryKey(unit, is_q, node)).second) boundary.push_back(node);
}

void Ownership::ClaimDq(int dq, int unit) {
  if (!q_.IsDQ(dq)) return;
  claimed_[static_cast<std::size_t>(dq)] = true;
  owned_edge_[static_cast<std::size_t>(dq)] = true;
  int qn = -1;
  if (q_.SourceOf(dq, &qn) == DqSource::kPairedQ && qn >= 0)
    claimed_[static_cast<std::size_t>(qn)] = true;
  if (unit >= 0) AddBoundary(in_dq_[static_cast<std::size_t>(unit)], unit, false, dq);
}

void Ownership::Touch(int dq) {
  if (!q_.IsDQ(dq)) return;
  claimed_[static_cast<std::size_t>(dq)] = true;
  int qn = -1;
  if (q_.SourceOf(dq, &qn) == DqSource::kPairedQ && qn >= 0)
    claimed_[static_cast<std::size_t>(qn)] = true;
}

void Ownership::Explain(int node) {
  if (q_.IsDQ(node)) {
    Touch(node);
  } else if (q_.IsQ(node)) {
    claimed_[static_cast<std::size_t>(node)] = true;
    if (int dq = q_.PairedDq(node); dq >= 0) claimed_[static_cast<std::size_t>(dq)] = true;
  }
}

bool Ownership::EdgeOwned(int node) const {
  if (q_.IsDQ(node)) return owned_edge_[static_cast<std::size_t>(node)];
  if (!q_.IsQ(node)) return false;
  const int dq = q_.PairedDq(node);
  return owned_edge_[static_cast<std::size_t>(dq >= 0 ? dq : node)];
}

void Ownership::ClaimQ(int qn, int unit) {
  if (!q_.IsQ(qn)) return;
  claimed_[static_cast<std::size_t>(qn)] = true;
  owned_edge_[static_cast<std::size_t>(qn)] = true;
  int dq = q_.PairedDq(qn);
  if (dq >= 0) {
    claimed_[static_cast<std::size_t>(dq)] = true;
    owned_edge_[static_cast<std::size_t>(dq)] = true;
  }
  if (unit >= 0) AddBoundary(out_q_[static_cast<std::size_t>(unit)], unit, true, qn);
}

}  // namespace axqc::detail
