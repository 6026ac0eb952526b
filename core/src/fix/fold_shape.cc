// fold-shape: static shape subgraphs become initializers. A Shape or Size node whose input has a
// fully known shape (every dim a value, per ONNX shape inference of the valid model), and the nodes
// computing on its result or on constant INT64/BOOL initializers with the ops of exporters' shape
// arithmetic (Gather, Slice, Concat, Unsqueeze, Squeeze, Reshape, Identity, Cast to
// INT64/INT32/BOOL, integer Add/Sub/Mul/Div/Mod, Equal, Not, Where, ConstantOfShape of an integer
// or BOOL value, Expand, Tile, Range, ReduceProd), are evaluated exactly (fix/shape_eval.cc) and
// removed; the values their remaining consumers read become initializers with the same names.
// Nothing else is evaluated (no float math, no op outside that list, no integer data that is not
// shape-like: INT8/UINT8/INT16/... quantized data are never touched). A node whose output is a
// graph output is kept. Main graph only.
#include <algorithm>

#include "fix/session.h"
#include "fix/shape_eval.h"

namespace axqc::detail::fix {

namespace {

using TP = onnx::TensorProto;

TP ToTensor(const std::string& name, const IntTensor& t) {
  TP out;
  out.set_name(name);
  out.set_data_type(t.type);
  for (auto d : t.dims) out.add_dims(d);
  for (auto v : t.v) {
    if (t.type == TP::INT64) {
      out.add_int64_data(v);
    } else {  // INT32, BOOL
      out.add_int32_data(static_cast<std::int32_t>(v));
    }
  }
  return out;
}

}  // namespace

std::size_t DropUnusedInitializers(Session& s, const std::unordered_set<std::string>& dropped) {
  auto& g = s.graph();
  auto uses = UseCounts(g);
  std::unordered_set<std::string> keep;
  for (const auto& o : g.output()) keep.insert(o.name());
  for (const auto& i : g.input()) keep.insert(i.name());
  auto* inits = g.mutable_initializer();
  std::size_t removed = 0;
  for (int k = inits->size() - 1; k >= 0; --k) {
    const auto& name = inits->Get(k).name();
    if (!dropped.contains(name) || uses.contains(name) || keep.contains(name)) continue;
    inits->DeleteSubrange(k, 1);
    ++removed;
  }
  s.InitializersChanged();
  return removed;
}

namespace {

// One pass; returns the number of initializers written (0: nothing folded).
std::size_t FoldPass(Session& s, bool* folded_any) {
  auto& g = s.graph();
  const TypeMap& types = s.Types();
  const std::int64_t opset = OnnxOpset(s.model());
  std::unordered_map<std::string, IntTensor> known;
  auto lookup = [&](const std::string& name) -> const IntTensor* {
    if (name.empty()) return nullptr;
    if (auto it = known.find(name); it != known.end()) return &it->second;
    const auto* t = s.ConstantInitializer(name);
    if (t == nullptr) return nullptr;
    std::optional<std::vector<std::int64_t>> v;
    if (t->data_type() == TP::BOOL) {
      v = ReadInts(*t, s.ext(), kMaxFoldElements);
      if (v && std::any_of(v->begin(), v->end(), [](auto x) { return x != 0 && x != 1; })) {
        v.reset();
      }
    } else {
      v = SmallInts(*t, s.ext(), kMaxFoldElements);
    }
    if (!v) return nullptr;
    IntTensor it;
    it.type = t->data_type();
    it.dims.assign(t->dims().begin(), t->dims().end());
    it.v = std::move(*v);
    return &known.emplace(name, std::move(it)).first->second;
  };

  std::vector<bool> folded(static_cast<std::size_t>(g.node_size()), false);
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    if (!IsOnnxDomain(n) || !IsFoldableOp(n.op_type()) || n.output_size() != 1 ||
        n.output(0).empty()) {
      continue;
    }
    IntTensor out;
    std::string why;
    std::vector<std::int64_t> shape_of;
    std::vector<const IntTensor*> in;
    if (n.op_type() == "Shape" || n.op_type() == "Size") {
      if (n.input_size() != 1) continue;
      auto dims = types.StaticDims(n.input(0));
      if (!dims) {
        s.Skipped(NodeLabel(n, i), "input '" + n.input(0) + "' has shape " +
                                       types.DimsText(n.input(0)) + ", not every dim known");
        continue;
      }
      shape_of = *dims;
    } else {
      bool all = n.input_size() > 0;
      for (int k = 0; k < n.input_size(); ++k) {
        const IntTensor* t = lookup(n.input(k));
        if (t == nullptr && !n.input(k).empty()) all = false;
        in.push_back(t);
      }
      if (!all) continue;
      // Only shape-like values: what a Shape or Size produced, or INT64/BOOL constants.
      bool shape_like = true;
      for (const auto* t : in) {
        if (t != nullptr && !t->from_shape && t->type != TP::INT64 && t->type != TP::BOOL) {
          shape_like = false;
        }
      }
      if (!shape_like) continue;
    }
    if (!EvaluateShapeOp(n, opset, shape_of, in, &out, &why)) {
      s.Skipped(NodeLabel(n, i), why);
      continue;
    }
    if (!out.from_shape && out.type != TP::INT64 && out.type != TP::BOOL) continue;
    known[n.output(0)] = std::move(out);
    folded[static_cast<std::size_t>(i)] = true;
  }

  // Remove the folded nodes whose output is not a graph output; a value still read by a kept
  // node (or a subgraph) becomes an initializer.
  std::unordered_set<std::string> outputs;
  for (const auto& o : g.output()) outputs.insert(o.name());
  std::vector<bool> drop(static_cast<std::size_t>(g.node_size()), false);
  bool any = false;
  for (int i = 0; i < g.node_size(); ++i) {
    if (!folded[static_cast<std::size_t>(i)] || outputs.contains(g.node(i).output(0))) continue;
    drop[static_cast<std::size_t>(i)] = true;
    any = true;
  }
  *folded_any = any;
  if (!any) return 0;
  // Reads by nodes that stay, and by subgraphs.
  std::unordered_set<std::string> read;
  for (int i = 0; i < g.node_size(); ++i) {
    if (drop[static_cast<std::size_t>(i)]) continue;
    const auto& n = g.node(i);
    for (const auto& in : n.input()) read.insert(in);
    for (const auto& a : n.attribute()) {
      auto sub = [&](const onnx::GraphProto& sg) {
        for (const auto& [name, count] : UseCounts(sg)) read.insert(name);
        for (const auto& o : sg.output()) read.insert(o.name());
      };
      if (a.has_g()) sub(a.g());
      for (const auto& sg : a.graphs()) sub(sg);
    }
  }
  std::unordered_set<std::string> dropped_inputs, materialized;
  std::vector<TP> made;
  for (int i = 0; i < g.node_size(); ++i) {
    if (!drop[static_cast<std::size_t>(i)]) continue;
    const auto& n = g.node(i);
    s.Applied(NodeLabel(n, i));
    for (const auto& in : n.input()) dropped_inputs.insert(in);
    const auto& o = n.output(0);
    if (read.contains(o)) {
      made.push_back(ToTensor(o, known[o]));
      materialized.insert(o);
    }
  }
  auto* vis = g.mutable_value_info();
  for (int k = vis->size() - 1; k >= 0; --k) {
    if (materialized.contains(vis->Get(k).name())) vis->DeleteSubrange(k, 1);
  }
  RemoveNodes(g, drop);
  for (auto& t : made) *g.add_initializer() = std::move(t);
  s.InitializersChanged();
  DropUnusedInitializers(s, dropped_inputs);
  s.Changed();
  return made.size();
}

}  // namespace

// Passes until nothing folds: a folded target makes a Reshape's output shape known to shape
// inference, which can make a later Shape static.
void FoldShape(Session& s) {
  std::size_t written = 0;
  for (int pass = 0; pass < 64; ++pass) {
    s.ResetSkips();
    bool any = false;
    written += FoldPass(s, &any);
    if (!any) break;
  }
  if (written > 0) s.Note(std::to_string(written) + " initializer(s) written");
}

}  // namespace axqc::detail::fix
