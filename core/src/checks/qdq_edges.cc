// Q/DQ edges (3.4, 3.5): Q fan-out and graph outputs, Q -> DQ pairing (structure always,
// values with check_value), the sources a DQ may read, and direct DQ -> Q requantization.
#include "context.h"

namespace axqc::detail {

namespace {

std::string Consumer(const Context& c, const Use& u) {
  return c.Op(u.node) + " '" + c.Name(u.node) + "'";
}

void CheckPair(Context& c, int qn, int dq) {
  const auto* q = c.q.Of(qn);
  const auto* d = c.q.Of(dq);
  auto s = CompareStructure(*q, *d);
  if (!s.what.empty()) {
    c.out.Emit({.rule = rules::kQdqPairMismatch,
                .node = dq,
                .message = "Q '" + c.Name(qn) + "' and its DQ '" + c.Name(dq) + "' differ: " +
                           s.what + " (Q " + Describe(*q) + "; DQ " + Describe(*d) + ")",
                .group_key = "Q and DQ differ in structure",
                .tensors = {std::string(q->y)},
                .values = {{"difference", s.what}},
                .more_nodes = {qn}});
    return;
  }
  if (!c.check_value) return;
  auto v = CompareValues(*q, *d);
  if (!v.what.empty()) {
    c.out.Emit({.rule = rules::kQdqPairValueMismatch,
                .node = dq,
                .message = "Q '" + c.Name(qn) + "' and its DQ '" + c.Name(dq) +
                           "' use different values: " + v.what,
                .group_key = "Q and DQ scale/zero_point values differ",
                .tensors = {std::string(q->y)},
                .values = {{"difference", v.what}},
                .more_nodes = {qn}});
  } else if (v.unknown) {
    c.out.Emit({.rule = rules::kQdqValueUnreadable,
                .node = dq,
                .message = "values of Q '" + c.Name(qn) + "' / DQ '" + c.Name(dq) +
                           "' are not statically readable; pair values were not compared",
                .group_key = "pair values not statically readable",
                .tensors = {std::string(q->y)},
                .more_nodes = {qn}});
  }
}

}  // namespace

void CheckQdqEdges(Context& c) {
  for (int qn : c.q.q_nodes()) {
    const auto* q = c.q.Of(qn);
    if (q->y.empty()) continue;
    if (c.g.IsGraphOutputId(q->y_id)) {
      c.out.Emit({.rule = rules::kQdqQGraphOutput,
                  .node = qn,
                  .message = "Q '" + c.Name(qn) + "' output '" + std::string(q->y) +
                             "' is a graph output; add its DQ and output the dequantized tensor",
                  .group_key = "Q output is a graph output",
                  .tensors = {std::string(q->y)}});
    }
    // Consumers by node: a node that reads the output twice counts (and is listed) once.
    std::vector<int> consumers;
    int dqs = 0;
    std::string others;
    for (const auto& u : c.g.ConsumersOf(q->y_id)) {
      if (!consumers.empty() && consumers.back() == u.node) continue;
      consumers.push_back(u.node);
      if (c.q.IsDQ(u.node) && u.slot == 0) {
        ++dqs;
        CheckPair(c, qn, u.node);
      } else {
        others += (others.empty() ? "" : ", ") + Consumer(c, u);
      }
    }
    if (!consumers.empty() && (dqs != 1 || !others.empty())) {
      std::string msg = "Q '" + c.Name(qn) + "' output '" + std::string(q->y) + "' has " +
                        Count(static_cast<std::int64_t>(consumers.size()), "consumer");
      if (dqs > 1) msg += " including " + std::to_string(dqs) + " DQs";
      if (!others.empty()) msg += " (non-DQ: " + others + ")";
      msg += "; a Q must feed exactly one paired DQ (share the DQ output instead)";
      // The finding names every consumer; DQs that no rule owns (e.g. one whose output is only a
      // graph output) are explained by it, not reported again as orphans.
      c.Explain(qn);
      for (int n : consumers) {
        if (c.q.IsDQ(n)) c.Explain(n);
      }
      c.out.Emit({.rule = rules::kQdqQFanout,
                  .node = qn,
                  .message = msg,
                  .group_key = "Q output with other consumers than one DQ",
                  .tensors = {std::string(q->y)},
                  .values = {{"consumers", std::to_string(consumers.size())}},
                  .more_nodes = consumers});
    }
  }
  for (int dq : c.q.dq_nodes()) {
    const auto* d = c.q.Of(dq);
    int src_node = -1;
    auto src = c.q.SourceOf(dq, &src_node);
    if (src == DqSource::kGraphInput || src == DqSource::kRuntime) {
      int prod = c.g.ProducerOf(d->x_id);
      std::string from = src == DqSource::kGraphInput ? "graph input '" + std::string(d->x) + "'"
                                                      : c.Op(prod) + " '" + c.Name(prod) + "'";
      c.out.Emit({.rule = rules::kQdqDqInputSource,
                  .node = dq,
                  .message = "DQ '" + c.Name(dq) + "' reads its integer input '" +
                             std::string(d->x) + "' from " + from +
                             "; runtime activations need a full Q -> DQ pair (or use an integer "
                             "initializer for constants)",
                  .group_key = src == DqSource::kGraphInput ? "DQ fed by a graph input"
                                                            : "DQ fed by a runtime node",
                  .tensors = {std::string(d->x)}});
    }
    // Direct DQ1 -> Q2: allowed only with identical parameters (3.5).
    if (d->y.empty()) continue;
    for (const auto& u : c.g.ConsumersOf(d->y_id)) {
      if (!c.q.IsQ(u.node) || u.slot != 0) continue;
      const auto* q2 = c.q.Of(u.node);
      auto diff = CompareRequantize(*d, *q2);
      if (!diff.what.empty()) {
        c.out.Emit({.rule = rules::kQdqRequantizeIdentity,
                    .node = u.node,
                    .message = "DQ '" + c.Name(dq) + "' feeds Q '" + c.Name(u.node) +
                               "' directly with different parameters (" + diff.what +
                               "); insert an Identity between them to mark the requantize",
                    .group_key = "DQ -> Q with different parameters and no Identity",
                    .tensors = {std::string(d->y)},
                    .values = {{"difference", diff.what}},
                    .more_nodes = {dq}});
      } else if (diff.unknown && c.check_value) {
        c.out.Emit({.rule = rules::kQdqValueUnreadable,
                    .node = u.node,
                    .message = "DQ '" + c.Name(dq) + "' -> Q '" + c.Name(u.node) +
                               "': values not statically readable; requantize not verified",
                    .group_key = "requantize values not statically readable",
                    .tensors = {std::string(d->y)}});
      }
    }
  }
}

}  // namespace axqc::detail
