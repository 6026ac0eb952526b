// reshape-copy-dims: the shape subgraph of a dynamic-batch export, e.g.
//   Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1], [2], [8]))
// computes the target [x.dim0, -1, 2, 8]. With allowzero = 0 (the default, and the only
// behaviour before opset 14) a 0 in Reshape's target means "the input's dim at this position",
// so the target is the constant [0, -1, 2, 8]: the same output shape for every x, also when
// x.dim0 is 0 (a literal 0 copies the input's 0 as well).
//
// The target is resolved through Concat (axis 0), Unsqueeze, Squeeze, Gather and Slice with
// constant indices, Shape (with start/end), Identity and Cast to INT64 into constant entries and
// "dim j of tensor T". An entry "dim j of T" at position p becomes 0 only when dim j of T is
// provably dim p of Reshape's input: both trace back to the same (tensor, axis) through ops
// whose output dims are their input's (Q/DQ, elementwise unary ops, Transpose with its perm,
// binary ops with a constant operand that broadcasts into the other, MatMul by a 2-D constant
// for the leading dims). Inferred dim names are never trusted. An entry whose dim is statically
// known (a value) becomes that value. Anything else leaves the Reshape alone (reported).
// The subgraph nodes left without consumers are removed. Main graph only.
#include <set>

#include "fix/session.h"

namespace axqc::detail::fix {

namespace {

using TP = onnx::TensorProto;

struct Entry {
  bool is_dim = false;
  std::int64_t value = 0;  // constant entry
  std::string tensor;      // is_dim: dim `axis` of `tensor`
  std::int64_t axis = 0;
};
using Entries = std::vector<Entry>;

// Ops whose output 0 has exactly the shape of their input 0.
bool SameShapeOp(const std::string& op) {
  static const std::set<std::string, std::less<>> kOps = {"Identity",
                                                          "QuantizeLinear",
                                                          "DequantizeLinear",
                                                          "Relu",
                                                          "LeakyRelu",
                                                          "PRelu",
                                                          "Sigmoid",
                                                          "HardSigmoid",
                                                          "HardSwish",
                                                          "Tanh",
                                                          "Erf",
                                                          "Exp",
                                                          "Log",
                                                          "Abs",
                                                          "Neg",
                                                          "Sqrt",
                                                          "Reciprocal",
                                                          "Floor",
                                                          "Ceil",
                                                          "Round",
                                                          "Sign",
                                                          "Cast",
                                                          "CastLike",
                                                          "Clip",
                                                          "Softmax",
                                                          "LogSoftmax",
                                                          "Hardmax",
                                                          "Elu",
                                                          "Selu",
                                                          "Celu",
                                                          "Gelu",
                                                          "Mish",
                                                          "Softplus",
                                                          "Softsign",
                                                          "ThresholdedRelu",
                                                          "Not",
                                                          "IsNaN",
                                                          "IsInf",
                                                          "Dropout",
                                                          "LayerNormalization",
                                                          "BatchNormalization",
                                                          "InstanceNormalization",
                                                          "GroupNormalization",
                                                          "LpNormalization",
                                                          "MeanVarianceNormalization",
                                                          "Sin",
                                                          "Cos",
                                                          "Tan",
                                                          "Asin",
                                                          "Acos",
                                                          "Atan",
                                                          "Sinh",
                                                          "Cosh",
                                                          "Asinh",
                                                          "Acosh",
                                                          "Atanh",
                                                          "Shrink",
                                                          "Trilu",
                                                          "CumSum",
                                                          "LRN"};
  return kOps.contains(op);
}

bool BroadcastOp(const std::string& op) {
  static const std::set<std::string, std::less<>> kOps = {"Add", "Sub", "Mul", "Div",
                                                          "Pow", "Max", "Min", "Mod"};
  return kOps.contains(op);
}

class Resolver {
 public:
  explicit Resolver(Session& s) : s_(s), g_(s.graph()), types_(s.Types()) {
    for (int i = 0; i < g_.node_size(); ++i) {
      for (const auto& o : g_.node(i).output()) {
        if (!o.empty()) producer_[o] = i;
      }
    }
  }

  // The 1-D INT64 list `name` computes, as entries; nullopt (with why_) when not resolvable.
  std::optional<Entries> List(const std::string& name, int depth = 0) {
    if (depth > 64) return Fail("the target shape subgraph is too deep");
    if (const auto* t = s_.ConstantInitializer(name)) {
      auto v = SmallInts(*t, s_.ext());
      if (!v || t->data_type() != TP::INT64 || t->dims_size() > 1) {
        return Fail("'" + name + "' is not a small INT64 list");
      }
      Entries e;
      for (auto x : *v) e.push_back({false, x, {}, 0});
      return e;
    }
    const onnx::NodeProto* n = Producer(name);
    if (n == nullptr) return Fail("'" + name + "' is not computed by a node of the graph");
    const auto& op = n->op_type();
    if (op == "Shape" && n->input_size() == 1) {
      auto rank = types_.Rank(n->input(0));
      if (!rank) return Fail("the rank of '" + n->input(0) + "' is unknown");
      std::int64_t start = 0, end = *rank;
      if (OnnxOpset(s_.model()) >= 15) {
        start = AttrInt(*n, "start").value_or(0);
        end = AttrInt(*n, "end").value_or(*rank);
      }
      if (start < 0) start += *rank;
      if (end < 0) end += *rank;
      start = std::clamp<std::int64_t>(start, 0, *rank);
      end = std::clamp<std::int64_t>(end, 0, *rank);
      Entries e;
      for (std::int64_t k = start; k < end; ++k) e.push_back({true, 0, n->input(0), k});
      return e;
    }
    if (op == "Concat") {
      auto axis = AttrInt(*n, "axis");
      if (!axis || (*axis != 0 && *axis != -1)) return Fail("Concat of the target is not 1-D");
      Entries e;
      for (const auto& in : n->input()) {
        auto part = List(in, depth + 1);
        if (!part) return std::nullopt;
        e.insert(e.end(), part->begin(), part->end());
      }
      return e;
    }
    if (op == "Unsqueeze") {
      auto axes = Axes(*n);
      if (!axes || *axes != std::vector<std::int64_t>{0}) return Fail("Unsqueeze not on axis 0");
      auto e = Scalar(n->input(0), depth + 1);
      if (!e) return std::nullopt;
      return Entries{*e};
    }
    if (op == "Identity" || (op == "Cast" && AttrInt(*n, "to") == TP::INT64 &&
                             types_.ElemType(n->input(0)) == TP::INT64)) {
      return List(n->input(0), depth + 1);
    }
    if (op == "Gather" && n->input_size() == 2 && AttrInt(*n, "axis").value_or(0) == 0) {
      const auto* it = s_.ConstantInitializer(n->input(1));
      auto idx = it != nullptr ? SmallInts(*it, s_.ext()) : std::nullopt;
      if (!idx || it->dims_size() != 1) return Fail("Gather indices are not a constant list");
      auto data = List(n->input(0), depth + 1);
      if (!data) return std::nullopt;
      Entries e;
      const auto size = static_cast<std::int64_t>(data->size());
      for (auto j : *idx) {
        if (j < -size || j >= size) return Fail("Gather index out of range");
        e.push_back((*data)[static_cast<std::size_t>(j < 0 ? j + size : j)]);
      }
      return e;
    }
    if (op == "Slice" && n->input_size() >= 3) {
      auto data = List(n->input(0), depth + 1);
      if (!data) return std::nullopt;
      std::vector<std::int64_t> p[4];  // starts, ends, axes, steps
      for (int k = 1; k < n->input_size() && k <= 4; ++k) {
        if (n->input(k).empty()) continue;
        const auto* t = s_.ConstantInitializer(n->input(k));
        auto v = t != nullptr ? SmallInts(*t, s_.ext()) : std::nullopt;
        if (!v || v->size() != 1) return Fail("Slice parameters are not constant 1-element lists");
        p[k - 1] = *v;
      }
      if (p[0].empty() || p[1].empty()) return Fail("Slice without starts/ends");
      if (!p[2].empty() && p[2][0] != 0 && p[2][0] != -1) return Fail("Slice not on axis 0");
      const std::int64_t step = p[3].empty() ? 1 : p[3][0];
      if (step != 1) return Fail("Slice with a step other than 1");
      const auto d = static_cast<std::int64_t>(data->size());
      std::int64_t b = p[0][0], en = p[1][0];
      if (b < 0) b += d;
      if (en < 0) en += d;
      b = std::clamp<std::int64_t>(b, 0, d);
      en = std::clamp<std::int64_t>(en, 0, d);
      Entries e;
      for (std::int64_t k = b; k < en; ++k) e.push_back((*data)[static_cast<std::size_t>(k)]);
      return e;
    }
    return Fail("the target is computed by " + op + " '" + n->name() + "'");
  }

  // A scalar (or one-element) INT64 value as one entry.
  std::optional<Entry> Scalar(const std::string& name, int depth) {
    if (depth > 64) {
      Fail("the target shape subgraph is too deep");
      return std::nullopt;
    }
    if (const auto* t = s_.ConstantInitializer(name)) {
      auto v = SmallInts(*t, s_.ext());
      if (!v || v->size() != 1 || t->data_type() != TP::INT64) {
        Fail("'" + name + "' is not an INT64 scalar");
        return std::nullopt;
      }
      return Entry{false, (*v)[0], {}, 0};
    }
    const onnx::NodeProto* n = Producer(name);
    if (n == nullptr) {
      Fail("'" + name + "' is not computed by a node of the graph");
      return std::nullopt;
    }
    if (n->op_type() == "Gather" && n->input_size() == 2 && AttrInt(*n, "axis").value_or(0) == 0) {
      const auto* it = s_.ConstantInitializer(n->input(1));
      auto idx = it != nullptr ? SmallInts(*it, s_.ext()) : std::nullopt;
      if (!idx || idx->size() != 1 || it->dims_size() != 0) {
        Fail("Gather index is not a constant scalar");
        return std::nullopt;
      }
      auto data = List(n->input(0), depth + 1);
      if (!data) return std::nullopt;
      const auto size = static_cast<std::int64_t>(data->size());
      std::int64_t j = (*idx)[0];
      if (j < -size || j >= size) {
        Fail("Gather index out of range");
        return std::nullopt;
      }
      return (*data)[static_cast<std::size_t>(j < 0 ? j + size : j)];
    }
    if (n->op_type() == "Squeeze" || n->op_type() == "Identity") {
      auto data = List(n->input(0), depth + 1);
      if (!data || data->size() != 1) {
        if (data) Fail("Squeeze of more than one value");
        return std::nullopt;
      }
      return (*data)[0];
    }
    Fail("the target is computed by " + n->op_type() + " '" + n->name() + "'");
    return std::nullopt;
  }

  // Where dim `axis` of `name` comes from: the (tensor, axis) it is provably equal to.
  std::pair<std::string, std::int64_t> Origin(std::string name, std::int64_t axis) {
    for (int step = 0; step < 10000; ++step) {
      const onnx::NodeProto* n = Producer(name);
      if (n == nullptr || !IsOnnxDomain(*n) || n->input_size() == 0 || n->output(0) != name) break;
      const auto& op = n->op_type();
      if (SameShapeOp(op)) {
        name = n->input(0);
        continue;
      }
      if (op == "Transpose") {
        const auto* perm = FindAttr(*n, "perm");
        auto rank = types_.Rank(n->input(0));
        if (!rank || axis >= *rank) break;
        if (perm != nullptr) {
          if (perm->ints_size() != *rank) break;
          axis = perm->ints(static_cast<int>(axis));
        } else {
          axis = *rank - 1 - axis;
        }
        name = n->input(0);
        continue;
      }
      auto rank = types_.Rank(name);
      if (!rank || n->input_size() != 2) break;
      if (BroadcastOp(op)) {
        // The operand that is a constant broadcasting into the other keeps the other's dim.
        bool moved = false;
        for (int c = 0; c < 2 && !moved; ++c) {
          const auto* k = s_.ConstantInitializer(n->input(c));
          const std::string& other = n->input(1 - c);
          if (k == nullptr || types_.Rank(other) != rank || k->dims_size() > *rank) continue;
          const std::int64_t at = axis - (*rank - k->dims_size());
          if (at >= 0 && k->dims(static_cast<int>(at)) != 1) continue;
          name = other;
          moved = true;
        }
        if (moved) continue;
        break;
      }
      if (op == "MatMul") {
        const auto* k = s_.ConstantInitializer(n->input(1));
        if (k == nullptr || k->dims_size() != 2 || *rank < 2 || axis >= *rank - 1 ||
            types_.Rank(n->input(0)) != rank) {
          break;
        }
        name = n->input(0);
        continue;
      }
      break;
    }
    return {name, axis};
  }

  const onnx::NodeProto* Producer(const std::string& name) const {
    auto it = producer_.find(name);
    return it == producer_.end() ? nullptr : &g_.node(it->second);
  }
  int ProducerIndex(const std::string& name) const {
    auto it = producer_.find(name);
    return it == producer_.end() ? -1 : it->second;
  }

  const std::string& why() const { return why_; }

 private:
  std::nullopt_t Fail(std::string why) {
    if (why_.empty()) why_ = std::move(why);
    return std::nullopt;
  }

  std::optional<std::vector<std::int64_t>> Axes(const onnx::NodeProto& n) {
    if (OnnxOpset(s_.model()) >= 13) {
      if (n.input_size() < 2) return std::nullopt;
      const auto* t = s_.ConstantInitializer(n.input(1));
      return t != nullptr ? SmallInts(*t, s_.ext()) : std::nullopt;
    }
    const auto* a = FindAttr(n, "axes");
    if (a == nullptr) return std::nullopt;
    return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
  }

  Session& s_;
  onnx::GraphProto& g_;
  const TypeMap& types_;
  std::unordered_map<std::string, int> producer_;
  std::string why_;

 public:
  void ResetWhy() { why_.clear(); }
};

std::string DimText(const TypeMap& types, const std::string& tensor, std::int64_t axis) {
  return "dim " + std::to_string(axis) + " of '" + tensor + "' " + types.DimsText(tensor);
}

}  // namespace

namespace {

// One pass; false when no Reshape was rewritten.
bool CopyDimsPass(Session& s) {
  auto& g = s.graph();
  const TypeMap& types = s.Types();
  Resolver r(s);
  struct Rewrite {
    int node;
    std::string new_name;
    std::string old_name;
  };
  std::vector<Rewrite> done;
  std::vector<TP> made;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    if (n.op_type() != "Reshape" || !IsOnnxDomain(n) || n.input_size() < 2) continue;
    const std::string& target = n.input(1);
    if (s.Initializer(target) != nullptr || r.Producer(target) == nullptr) continue;
    const std::string place = NodeLabel(n, i);
    if (AttrInt(n, "allowzero").value_or(0) != 0) {
      s.Skipped(place, "allowzero = 1: a 0 in the target would not copy the input's dim");
      continue;
    }
    r.ResetWhy();
    auto entries = r.List(target);
    if (!entries) {
      s.Skipped(place, "target '" + target + "' not resolved: " + r.why());
      continue;
    }
    std::vector<std::int64_t> value;
    std::string fail;
    for (std::size_t p = 0; p < entries->size() && fail.empty(); ++p) {
      const Entry& e = (*entries)[p];
      if (!e.is_dim) {
        value.push_back(e.value);
        continue;
      }
      const auto a = r.Origin(e.tensor, e.axis);
      const auto b = r.Origin(n.input(0), static_cast<std::int64_t>(p));
      if (a == b) {
        value.push_back(0);
        continue;
      }
      auto dims = types.StaticDims(e.tensor);
      if (dims && e.axis < static_cast<std::int64_t>(dims->size())) {
        value.push_back((*dims)[static_cast<std::size_t>(e.axis)]);
        continue;
      }
      fail = "entry " + std::to_string(p) + " is " + DimText(types, e.tensor, e.axis) +
             ", not provably " + DimText(types, n.input(0), static_cast<std::int64_t>(p));
    }
    if (!fail.empty()) {
      s.Skipped(place, fail);
      continue;
    }
    TP t;
    t.set_name(s.NewTensorName(target + "_const"));
    t.set_data_type(TP::INT64);
    t.add_dims(static_cast<std::int64_t>(value.size()));
    for (auto v : value) t.add_int64_data(v);
    done.push_back({i, t.name(), target});
    made.push_back(std::move(t));
    s.Applied(place);
  }
  if (done.empty()) return false;
  for (const auto& d : done) *g.mutable_node(d.node)->mutable_input(1) = d.new_name;
  for (auto& t : made) *g.add_initializer() = std::move(t);

  // Remove what only computed the old targets: nodes without any remaining reader, in reverse
  // order (a chain goes in one pass, consumers come after producers).
  std::unordered_set<std::string> outputs;
  for (const auto& o : g.output()) outputs.insert(o.name());
  auto uses = UseCounts(g);
  std::vector<bool> drop(static_cast<std::size_t>(g.node_size()), false);
  std::unordered_set<std::string> dropped_inputs;
  static const std::set<std::string, std::less<>> kShapeOps = {
      "Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Identity"};
  for (int i = g.node_size() - 1; i >= 0; --i) {
    const auto& n = g.node(i);
    if (!IsOnnxDomain(n) || !kShapeOps.contains(n.op_type())) continue;
    bool used = false;
    for (const auto& o : n.output()) used = used || uses[o] > 0 || outputs.contains(o);
    if (used) continue;
    // Only nodes that fed a rewritten target (directly or through the chain).
    bool fed = false;
    for (const auto& o : n.output()) {
      for (const auto& d : done) fed = fed || o == d.old_name;
      fed = fed || dropped_inputs.contains(o);
    }
    if (!fed) continue;
    drop[static_cast<std::size_t>(i)] = true;
    for (const auto& in : n.input()) {
      if (in.empty()) continue;
      --uses[in];
      dropped_inputs.insert(in);
    }
  }
  auto* vis = g.mutable_value_info();
  for (int k = vis->size() - 1; k >= 0; --k) {
    const auto& name = vis->Get(k).name();
    if (uses[name] <= 0 && dropped_inputs.contains(name) && !outputs.contains(name)) {
      // value_info of a value whose producer is gone
      bool produced = false;
      for (int i = 0; i < g.node_size() && !produced; ++i) {
        if (drop[static_cast<std::size_t>(i)]) continue;
        for (const auto& o : g.node(i).output()) produced = produced || o == name;
      }
      if (!produced) vis->DeleteSubrange(k, 1);
    }
  }
  for (const auto& d : done) {
    for (int k = vis->size() - 1; k >= 0; --k) {
      if (vis->Get(k).name() == d.old_name) vis->DeleteSubrange(k, 1);
    }
  }
  RemoveNodes(g, drop);
  s.InitializersChanged();
  DropUnusedInitializers(s, dropped_inputs);
  // Give each new target the old target's name when nothing else uses that name any more.
  std::unordered_set<std::string> names;
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) names.insert(o);
    for (const auto& in : n.input()) names.insert(in);
  }
  for (const auto& t : g.initializer()) names.insert(t.name());
  for (const auto& d : done) {
    if (names.contains(d.old_name) || outputs.contains(d.old_name)) continue;
    for (auto& t : *g.mutable_initializer()) {
      if (t.name() == d.new_name) t.set_name(d.old_name);
    }
    for (auto& n : *g.mutable_node()) {
      for (auto& in : *n.mutable_input()) {
        if (in == d.new_name) in = d.old_name;
      }
    }
    names.insert(d.old_name);
  }
  s.Changed();
  return true;
}

}  // namespace

// Passes until nothing changes: a rewritten target gives shape inference the Reshape's output
// shape, and with it the ranks the next Reshapes' targets need.
void ReshapeCopyDims(Session& s) {
  for (int pass = 0; pass < 64; ++pass) {
    s.ResetSkips();
    if (!CopyDimsPass(s)) break;
  }
}

}  // namespace axqc::detail::fix
