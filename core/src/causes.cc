// The causes stage (causes.h): finding ids, the causal links, the regions of the producer
// artifacts and the hints of the roots, run from the two tables (kLinks here, the artifact table
// of causes_artifacts.h); loops are cut.
#include "causes.h"

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "axqc/catalog.h"
#include "causes_artifacts.h"
#include "onnx_util.h"
#include "optable.h"

namespace axqc::detail {

std::string_view RelationName(Relation r) {
  switch (r) {
    case Relation::kSameNode:
      return "same node";
    case Relation::kSameEdge:
      return "same edge";
    case Relation::kParamFeed:
      return "Constant feeding the parameter";
    case Relation::kQdqEdge:
      return "one Q/DQ edge";
    case Relation::kArtifact:
      return "producer artifact";
  }
  return "same node";
}

std::string_view RelationDescription(Relation r) {
  switch (r) {
    case Relation::kSameNode:
      return "both findings are at the same node (for the same rule: about the same tensor; the "
             "earlier one is the cause)";
    case Relation::kSameEdge:
      return "one tensor judged from both ends: one finding at the node producing it, the other "
             "at a node reading it (for the same rule the producer's end is the cause)";
    case Relation::kParamFeed:
      return "the cause's Constant node produces, directly or through Identity nodes, the tensor "
             "the consequence is about, in an input where an initializer would be accepted (a "
             "scale or zero point, a bias, a Clip bound, a static parameter): folding the "
             "Constant removes both";
    case Relation::kQdqEdge:
      return "one Q/DQ edge judged from both ends: the cause at the Q node, the consequence at the "
             "DQ that pairs with it or reads the Q's output through one node";
    case Relation::kArtifact:
      return "both on one recognised producer artifact (the operator or pattern that failed to "
             "form): the cause is the finding at the artifact's anchor node";
  }
  return "";
}

namespace {

using R = Relation;

// The one table of causal links. Order matters: the first row that explains a finding decides
// its cause.
constexpr std::array kLinks{
    CausalLink{rules::kOnnxConstantNode, rules::kQdqScaleNotInitializer, R::kParamFeed,
               "a scale from a Constant node"},
    CausalLink{rules::kOnnxConstantNode, rules::kOpClipDynamic, R::kParamFeed,
               "a Clip bound from a Constant node"},
    CausalLink{rules::kOnnxConstantNode, rules::kOpStaticParam, R::kParamFeed,
               "a static parameter (norm affine, Pow exponent, grid) from a Constant node"},
    CausalLink{rules::kOnnxConstantNode, rules::kQdqConstForm, R::kParamFeed,
               "a bias from a Constant node (an FP32 initializer bias is allowed)"},
    CausalLink{rules::kOnnxConstantNode, rules::kQdqValueUnreadable, R::kParamFeed,
               "a value not readable because a Constant node produces it"},
    CausalLink{rules::kOnnxConstantNode, rules::kClosureUncoveredNode, R::kSameNode,
               "the Constant node itself"},
    CausalLink{rules::kOnnxConstantNode, rules::kOnnxValueInfoMissing, R::kSameNode,
               "the output of the Constant node (an initializer needs no value_info)"},
    CausalLink{rules::kOpReluForm, rules::kOpReluForm, R::kSameEdge,
               "one Relu/Clip edge without Q/DQ, reported at both ends (e.g. Relu -> Clip)"},
    CausalLink{rules::kOpReluForm, rules::kOpOutputNotQuantized, R::kSameEdge,
               "a compute output into a Relu/Clip that cannot be its fusion tail (e.g. Conv -> "
               "Relu -> Q(S8)): the tail did not form"},
    CausalLink{rules::kOpOutputNotQuantized, rules::kOpInputNotQuantized, R::kSameEdge,
               "one float edge between two quant-only operators"},
    CausalLink{rules::kRoleActivationType, rules::kRoleActivationType, R::kSameNode,
               "one activation edge judged by its producer and by its consumer (e.g. U4)"},
    CausalLink{rules::kQdqQFanout, rules::kQdqDqInputSource, R::kQdqEdge,
               "a node between Q and DQ (e.g. Cast): the Q has another consumer and the DQ "
               "another source"},
    CausalLink{rules::kQdqQFanout, rules::kClosureOrphanQdq, R::kQdqEdge,
               "the DQ behind a Q with extra consumers has no purpose of its own"},
    CausalLink{rules::kQdqPairMismatch, rules::kQdqPairValueMismatch, R::kSameNode,
               "one Q/DQ pair whose parameters differ in structure and in value"},
};

class Causes {
 public:
  Causes(const GraphIndex& g, const onnx::ModelProto* model, std::vector<Finding>& fs,
         const std::vector<int>& primary)
      : g_(g), model_(model), fs_(fs) {
    const std::size_t n = fs.size();
    prim_.assign(n, -1);
    nodes_.resize(n);
    tensors_.resize(n);
    // Display name -> node, only for the names the findings carry (a map of every node would cost
    // more than the findings on a large model with few of them).
    std::unordered_map<std::string_view, int> by_name;
    for (const auto& f : fs) {
      for (const auto& name : f.nodes) by_name.emplace(name, -1);
    }
    if (!by_name.empty()) {
      for (int i = 0; i < g.node_count(); ++i) {
        auto it = by_name.find(g.NodeName(i));
        if (it != by_name.end() && it->second < 0) it->second = i;
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      const int p = i < primary.size() ? primary[i] : -1;
      prim_[i] = p >= 0 && p < g.node_count() ? p : -1;
      for (const auto& name : fs[i].nodes) {
        auto it = by_name.find(name);
        if (it != by_name.end() && it->second >= 0) nodes_[i].push_back(it->second);
      }
      for (const auto& t : fs[i].tensors) tensors_[i].push_back(g.TensorId(t));
      if (prim_[i] >= 0) at_[prim_[i]].push_back(i);
    }
    cause_.assign(n, kNone);
  }

  void Run() {
    Link();
    Regions();
    BreakCycles();
    for (std::size_t i = 0; i < fs_.size(); ++i) {
      if (cause_[i] != kNone) fs_[i].cause = fs_[cause_[i]].id;
    }
    RootHints();
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  static constexpr std::size_t kMaxFanOut = 256;
  static constexpr std::size_t kMaxAtNode = 1024;

  bool IsOp(int n, std::string_view op) const { return n >= 0 && IsOnnxOp(g_.node(n), op); }
  std::span<const Use> Uses(int id) const { return g_.ConsumersOf(id); }
  // The producer of tensor `id` with Identity nodes looked through.
  int SourceThroughIdentity(int id) const {
    int p = g_.ProducerOf(id);
    for (int steps = 0; p >= 0 && IsOp(p, "Identity") && steps < 16; ++steps) {
      p = g_.ProducerOf(g_.InputId(p, 0));
    }
    return p;
  }
  // The first producer upstream of `id` that is not a single-input pass-through node (Flatten,
  // Reshape, Squeeze, Unsqueeze, Transpose, Identity), at most 4 steps.
  int ThroughPassThrough(int id) const {
    int p = g_.ProducerOf(id);
    for (int steps = 0; p >= 0 && steps < 4; ++steps) {
      const auto& n = g_.node(p);
      static const std::set<std::string_view> kPass = {"Flatten",   "Reshape",   "Squeeze",
                                                       "Unsqueeze", "Transpose", "Identity"};
      if (!IsOnnxDomain(n.domain()) || !kPass.contains(n.op_type())) return p;
      p = g_.ProducerOf(g_.InputId(p, 0));
    }
    return p;
  }
  bool Consumes(int node, int id) const {
    for (const int x : g_.InputIds(node)) {
      if (x == id && id >= 0) return true;
    }
    return false;
  }
  // Slot of `id` at `node` where an initializer would be accepted.
  bool InitializerSlot(int node, int id) const {
    const auto& n = g_.node(node);
    const auto ins = g_.InputIds(node);
    const bool qdq = IsOnnxOp(n, "QuantizeLinear") || IsOnnxOp(n, "DequantizeLinear");
    const OpSpec* spec = qdq ? nullptr : FindOp(n.op_type(), n.domain());
    for (std::size_t s = 0; s < ins.size(); ++s) {
      if (ins[s] != id || id < 0) continue;
      if (qdq) {
        if (s >= 1) return true;
        continue;
      }
      if (spec == nullptr) continue;
      switch (spec->InputRole(static_cast<int>(s))) {
        case InRole::kBias:
        case InRole::kStaticF32:
        case InRole::kClipBound:
        case InRole::kExponent:
        case InRole::kGrid:
        case InRole::kAux:
        case InRole::kFloatAux:
          return true;
        default:
          break;
      }
    }
    return false;
  }

  bool SameTensor0(std::size_t a, std::size_t b) const {
    const auto& x = fs_[a].tensors;
    const auto& y = fs_[b].tensors;
    return x.empty() ? y.empty() : (!y.empty() && x.front() == y.front());
  }

  // Whether `rel` holds with k as the cause of c.
  bool Holds(Relation rel, std::size_t k, std::size_t c) const {
    const int pk = prim_[k];
    const int pc = prim_[c];
    const bool same_rule = fs_[k].rule == fs_[c].rule;
    switch (rel) {
      case R::kSameNode:
        if (pc < 0 || pc != pk) return false;
        // The same rule twice at one node: about one tensor, or about the one edge of a Q/DQ
        // node (its float input seen by the producer, its output by the consumer).
        return !same_rule || (k < c && (SameTensor0(k, c) || IsOp(pc, "DequantizeLinear") ||
                                        IsOp(pc, "QuantizeLinear")));
      case R::kSameEdge:
        if (pc < 0 || pk < 0 || pc == pk) return false;
        for (const int t : tensors_[c]) {
          if (t < 0) continue;
          if (std::find(tensors_[k].begin(), tensors_[k].end(), t) == tensors_[k].end()) continue;
          const int p = g_.ProducerOf(t);
          if (p == pk && Consumes(pc, t)) return true;                // cause at the producer
          if (!same_rule && p == pc && Consumes(pk, t)) return true;  // cause at a consumer
        }
        // The consequence's input comes from the cause's output through pass-through nodes
        // without Q/DQ (e.g. GlobalAveragePool -> Flatten -> Gemm).
        if (!same_rule) {
          for (const int t : tensors_[c]) {
            if (t >= 0 && Consumes(pc, t) && ThroughPassThrough(t) == pk) return true;
          }
        }
        return false;
      case R::kParamFeed: {
        if (pk < 0 || pc < 0 || !IsOp(pk, "Constant")) return false;
        for (const int t : tensors_[c]) {
          if (t >= 0 && SourceThroughIdentity(t) == pk && InitializerSlot(pc, t)) return true;
        }
        return false;
      }
      case R::kQdqEdge: {
        if (!IsOp(pk, "QuantizeLinear") || !IsOp(pc, "DequantizeLinear")) return false;
        const int src = g_.ProducerOf(g_.InputId(pc, 0));
        if (src == pk) return true;
        if (src < 0) return false;
        for (const int in : g_.InputIds(src)) {
          if (in >= 0 && g_.ProducerOf(in) == pk) return true;
        }
        return false;
      }
      case R::kArtifact:
        return false;
    }
    return false;
  }

  // Nodes whose findings may cause finding c under some relation.
  void CandidateNodes(std::size_t c, std::vector<int>& out) const {
    out.clear();
    const int pc = prim_[c];
    if (pc >= 0) {
      out.push_back(pc);
      if (IsOp(pc, "DequantizeLinear")) {
        const int src = g_.ProducerOf(g_.InputId(pc, 0));
        if (src >= 0) {
          out.push_back(src);
          for (const int in : g_.InputIds(src)) out.push_back(g_.ProducerOf(in));
        }
      }
    }
    for (const int t : tensors_[c]) {
      if (t < 0) continue;
      out.push_back(g_.ProducerOf(t));
      out.push_back(SourceThroughIdentity(t));
      out.push_back(ThroughPassThrough(t));
      // The other end of an edge; a tensor with a huge fan-out is skipped (hostile models).
      const auto uses = Uses(t);
      if (uses.size() <= kMaxFanOut) {
        for (const auto& u : uses) out.push_back(u.node);
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }

  void Link() {
    std::vector<int> cand;
    for (std::size_t c = 0; c < fs_.size(); ++c) {
      CandidateNodes(c, cand);
      for (const auto& link : kLinks) {
        if (fs_[c].rule != link.consequence.id()) continue;
        std::size_t best = kNone;
        for (const int n : cand) {
          if (n < 0) continue;
          auto it = at_.find(n);
          if (it == at_.end()) continue;
          // At most kMaxAtNode findings of one node are looked at (hostile models).
          const std::size_t n_at = std::min(it->second.size(), kMaxAtNode);
          for (std::size_t a = 0; a < n_at; ++a) {
            const std::size_t k = it->second[a];
            if (k == c || fs_[k].rule != link.cause.id() || cause_[k] == c) continue;
            if (k < best && Holds(link.relation, k, c)) best = k;
          }
        }
        if (best != kNone) {
          cause_[c] = best;
          break;
        }
      }
    }
  }

  // ------------------------------------------------------------ artifacts (regions)

  struct Region {
    int anchor;
    ArtifactId artifact;
    std::vector<int> nodes;
  };

  // Constant nodes whose every use is inside the region join it.
  void AddConstantFeeders(Region& r) const {
    std::unordered_set<int> in(r.nodes.begin(), r.nodes.end());
    const auto nodes = r.nodes;
    for (const int n : nodes) {
      for (const int id : g_.InputIds(n)) {
        const int p = g_.ProducerOf(id);
        if (p < 0 || in.contains(p) || !IsOp(p, "Constant")) continue;
        bool inside = !g_.IsGraphOutputId(id);
        for (const auto& u : Uses(id)) inside = inside && in.contains(u.node);
        if (inside) {
          in.insert(p);
          r.nodes.push_back(p);
        }
      }
    }
  }

  // The regions of the artifact table's region recognisers: every ai.onnx node, in topological
  // order, is offered to the rows that list its op type.
  void FindRegions() {
    static const auto by_op = [] {
      std::unordered_map<std::string_view, std::vector<const ArtifactSpec*>> m;
      for (const auto& a : ArtifactTable()) {
        for (const std::string_view op : a.at_ops) {
          if (!op.empty()) m[op].push_back(&a);
        }
      }
      return m;
    }();
    for (int i : g_.topo_order()) {
      const auto& node = g_.node(i);
      if (!IsOnnxDomain(node.domain())) continue;
      const auto it = by_op.find(node.op_type());
      if (it == by_op.end()) continue;
      for (const ArtifactSpec* a : it->second) {
        ArtifactRegion found;
        if (!a->region(g_, i, &found)) continue;
        Add({found.anchor >= 0 ? found.anchor : i, a->id, std::move(found.nodes)});
      }
    }
  }

  void Add(Region r) {
    for (auto& n : r.nodes) {
      if (n < 0) n = r.anchor;
    }
    AddConstantFeeders(r);
    regions_.push_back(std::move(r));
  }

  void Regions() {
    FindRegions();
    std::unordered_map<int, std::size_t> region_of;  // first region that claims a node
    for (std::size_t i = 0; i < regions_.size(); ++i) {
      for (const int n : regions_[i].nodes) region_of.emplace(n, i);
    }
    std::vector<std::size_t> root(regions_.size(), kNone);
    // The root: the first undecided finding at the anchor, else in the region; a finding of a
    // rule that runs without -c before one that needs -c (the root is the same either way).
    for (int pass = 0; pass < 4; ++pass) {
      for (std::size_t f = 0; f < fs_.size(); ++f) {
        if (cause_[f] != kNone || prim_[f] < 0) continue;
        auto it = region_of.find(prim_[f]);
        if (it == region_of.end() || root[it->second] != kNone) continue;
        if (pass % 2 == 0 && regions_[it->second].anchor != prim_[f]) continue;
        const RuleInfo* info = FindRule(fs_[f].rule);
        if (pass < 2 && info != nullptr && info->check_value) continue;
        root[it->second] = f;
      }
    }
    for (std::size_t f = 0; f < fs_.size(); ++f) {
      if (cause_[f] != kNone || prim_[f] < 0) continue;
      auto it = region_of.find(prim_[f]);
      if (it == region_of.end()) continue;
      const std::size_t r = root[it->second];
      if (r != f) cause_[f] = r;
    }
    for (std::size_t i = 0; i < regions_.size(); ++i) {
      if (root[i] != kNone) fs_[root[i]].hint = HintOf(regions_[i].artifact);
    }
  }

  void BreakCycles() {
    // 0 unvisited, 1 on the current chain, 2 done.
    std::vector<char> state(fs_.size(), 0);
    for (std::size_t i = 0; i < fs_.size(); ++i) {
      std::vector<std::size_t> chain;
      std::size_t at = i;
      while (at != kNone && state[at] == 0) {
        state[at] = 1;
        chain.push_back(at);
        at = cause_[at];
      }
      if (at != kNone && state[at] == 1) cause_[at] = kNone;  // a loop: cut it at its entry
      for (const std::size_t c : chain) state[c] = 2;
    }
  }

  // ------------------------------------------------------------ hints of the other roots

  // The first row of the artifact table whose root recogniser holds gives the hint.
  void RootHints() {
    for (std::size_t f = 0; f < fs_.size(); ++f) {
      Finding& x = fs_[f];
      if (cause_[f] != kNone || !x.hint.id.empty()) continue;
      const RootFinding root{g_, model_, x.rule, prim_[f], nodes_[f], tensors_[f]};
      for (const auto& a : ArtifactTable()) {
        if (a.root != nullptr && a.root(root)) {
          x.hint = HintOf(a.id);
          break;
        }
      }
    }
  }

  const GraphIndex& g_;
  const onnx::ModelProto* model_;
  std::vector<Finding>& fs_;
  std::vector<int> prim_;
  std::vector<std::vector<int>> nodes_;
  std::vector<std::vector<int>> tensors_;
  std::unordered_map<int, std::vector<std::size_t>> at_;  // primary node -> findings
  std::vector<std::size_t> cause_;
  std::vector<Region> regions_;
};

}  // namespace

std::span<const CausalLink> CausalLinks() { return kLinks; }

void AssignCauses(const GraphIndex* g, const onnx::ModelProto* model,
                  std::vector<Finding>& findings, const std::vector<int>& primary) {
  // Ids: fingerprint and its occurrence in report order (as SARIF's partialFingerprints).
  std::unordered_map<std::string, std::size_t> seen;
  for (auto& f : findings) {
    f.id = f.fingerprint + ":" + std::to_string(++seen[f.fingerprint]);
    f.cause.clear();
    f.hint = {};
  }
  if (g == nullptr) return;
  Causes(*g, model, findings, primary).Run();
}

}  // namespace axqc::detail
