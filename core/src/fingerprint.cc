#include "fingerprint.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "axqc/sha256.h"

namespace axqc::detail {

std::string ShortHash(std::string_view text) { return Sha256Hex(text).substr(0, 16); }

namespace {

// Names never enter these descriptions: only op types, slots, shapes of initializers and the
// kinds of graph boundaries.
class Describer {
 public:
  explicit Describer(const GraphIndex& g) : g_(g) {}

  // Level 0: the operator, "Conv" or "com.microsoft.QGemm".
  std::string Op(int v) const {
    const auto& n = g_.node(v);
    const std::string& d = n.domain();
    return IsOnnxDomain(d) ? n.op_type() : d + "." + n.op_type();
  }

  // What feeds input `slot` of `v`, at level 0.
  std::string Source(int v, int slot) const {
    const int id = g_.InputId(v, slot);
    if (id < 0) return "-";
    const int p = g_.ProducerOf(id);
    if (p >= 0) return Op(p) + "#" + std::to_string(OutputSlot(p, id));
    if (const auto* init = g_.InitializerOf(id)) {
      // Data initializers are told apart by their shape (a conv weight [64,3,7,7]); the scale and
      // zero point of a Q/DQ are not, so per-tensor -> per-channel keeps the node's identity.
      const auto& op = g_.node(v).op_type();
      const bool qdq_param = slot > 0 && (op == "QuantizeLinear" || op == "DequantizeLinear");
      if (qdq_param) return "init";
      std::string s = "init[";
      for (int i = 0; i < init->dims_size(); ++i) {
        if (i > 0) s += ",";
        s += std::to_string(init->dims(i));
      }
      return s + "]";
    }
    if (g_.IsGraphInputId(id)) return "input";
    return "?";  // outer scope or undefined
  }

  // Who reads tensor `id`, at level 0: sorted "Op@slot" with repeat counts, plus graph output.
  std::string Sinks(int id) const {
    if (id < 0) return "-";
    std::map<std::string, int> uses;
    for (const auto& u : g_.ConsumersOf(id)) {
      uses[Op(u.node) + "@" + (u.slot < 0 ? std::string("sub") : std::to_string(u.slot))]++;
    }
    std::string s;
    for (const auto& [k, n] : uses) s += k + (n > 1 ? "*" + std::to_string(n) : "") + ",";
    if (g_.IsGraphOutputId(id)) s += "output";
    return s;
  }

  // Level 1: the operator with what feeds each input and what reads each output. Hashed.
  const std::string& Level1(int v) {
    auto it = level1_.find(v);
    if (it != level1_.end()) return it->second;
    std::string s = Op(v) + "(";
    const auto ins = g_.InputIds(v);
    for (std::size_t i = 0; i < ins.size(); ++i) s += Source(v, static_cast<int>(i)) + ";";
    s += ")->(";
    for (const int id : g_.OutputIds(v)) s += "[" + Sinks(id) + "]";
    s += ")";
    return level1_.emplace(v, ShortHash(s)).first->second;
  }

  // Level 2: level 1 of the node and of its producers and consumers. Hashed.
  const std::string& Level2(int v) {
    auto it = level2_.find(v);
    if (it != level2_.end()) return it->second;
    std::string s = Level1(v) + "|in:";
    const auto ins = g_.InputIds(v);
    for (std::size_t i = 0; i < ins.size(); ++i) {
      const int p = g_.ProducerOf(ins[i]);
      s += (p >= 0 ? Level1(p) + "#" + std::to_string(OutputSlot(p, ins[i]))
                   : Source(v, static_cast<int>(i))) +
           ";";
    }
    s += "|out:";
    for (const int id : g_.OutputIds(v)) {
      std::map<std::string, int> uses;
      if (id >= 0) {
        for (const auto& u : g_.ConsumersOf(id)) {
          uses[Level1(u.node) + "@" + (u.slot < 0 ? std::string("sub") : std::to_string(u.slot))]++;
        }
      }
      s += "[";
      for (const auto& [k, n] : uses) s += k + (n > 1 ? "*" + std::to_string(n) : "") + ",";
      if (g_.IsGraphOutputId(id)) s += "output";
      s += "]";
    }
    return level2_.emplace(v, ShortHash(s)).first->second;
  }

  // The role of a tensor of the finding: its slot at the primary node, or else where it comes
  // from and where it goes.
  std::string TensorRole(const std::string& name, int primary) {
    const int id = g_.TensorId(name);
    if (id < 0) return "?";
    if (primary >= 0) {
      const auto ins = g_.InputIds(primary);
      for (std::size_t i = 0; i < ins.size(); ++i) {
        if (ins[i] == id) return "in" + std::to_string(i);
      }
      const auto outs = g_.OutputIds(primary);
      for (std::size_t i = 0; i < outs.size(); ++i) {
        if (outs[i] == id) return "out" + std::to_string(i);
      }
    }
    std::string s;
    const int p = g_.ProducerOf(id);
    if (p >= 0) {
      s = Level1(p) + "#" + std::to_string(OutputSlot(p, id));
    } else if (const auto* init = g_.InitializerOf(id)) {
      s = "init[";
      for (int i = 0; i < init->dims_size(); ++i)
        s += (i > 0 ? "," : "") + std::to_string(init->dims(i));
      s += "]";
    } else {
      s = g_.IsGraphInputId(id) ? "input" : "?";
    }
    return s + ">" + Sinks(id);
  }

  // Display name (GraphIndex::NodeName) -> node index; -1 when unknown.
  int NodeByName(std::string_view name) {
    if (by_name_.empty()) {
      for (int i = 0; i < g_.node_count(); ++i) by_name_.emplace(g_.NodeName(i), i);
    }
    auto it = by_name_.find(name);
    return it == by_name_.end() ? -1 : it->second;
  }

 private:
  int OutputSlot(int p, int id) const {
    const auto outs = g_.OutputIds(p);
    for (std::size_t i = 0; i < outs.size(); ++i) {
      if (outs[i] == id) return static_cast<int>(i);
    }
    return -1;
  }

  const GraphIndex& g_;
  std::unordered_map<int, std::string> level1_;
  std::unordered_map<int, std::string> level2_;
  std::unordered_map<std::string_view, int> by_name_;
};

}  // namespace

void AssignFingerprints(const GraphIndex* g, std::vector<Finding>& findings,
                        const std::vector<int>& primary) {
  std::optional<Describer> d;
  if (g != nullptr) d.emplace(*g);
  for (std::size_t i = 0; i < findings.size(); ++i) {
    Finding& f = findings[i];
    const int n = i < primary.size() ? primary[i] : -1;
    std::string text = "axqc-fp/1\nrule=" + f.rule + "\nkind=" + f.group_key + "\nop=" + f.op_type;
    text += "\nat=";
    text += d && n >= 0 && n < g->node_count() ? d->Level2(n) : std::string("-");
    text += "\ntensors=";
    for (const auto& t : f.tensors) text += (d ? d->TensorRole(t, n) : std::string("?")) + ",";
    text += "\nnodes=";
    // The primary node is described above; the others by level 1.
    for (std::size_t k = n >= 0 ? 1 : 0; k < f.nodes.size(); ++k) {
      const int m = d ? d->NodeByName(f.nodes[k]) : -1;
      text += (m >= 0 ? d->Level1(m) : std::string("?")) + ",";
    }
    f.fingerprint = ShortHash(text);
  }
}

}  // namespace axqc::detail
