// value-info: every node output of the main graph that is not a graph output gets the value_info
// ONNX shape inference computes for it, when that type is complete (elem type and every dim a
// value or a symbol; the form onnx/value-info-missing asks for). A complete declared value_info
// is kept; an incomplete one is replaced by a complete inferred one. value_info describes values,
// it never changes one.
#include "fix/session.h"
#include "graph_index.h"

namespace axqc::detail::fix {

void ValueInfo(Session& s) {
  auto& g = s.graph();
  const TypeMap& types = s.Types();
  std::unordered_set<std::string> outputs;
  for (const auto& o : g.output()) outputs.insert(o.name());
  std::unordered_map<std::string, int> declared;  // name -> index in value_info
  for (int k = 0; k < g.value_info_size(); ++k) declared.emplace(g.value_info(k).name(), k);
  bool changed = false;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    for (const auto& o : n.output()) {
      if (o.empty() || outputs.contains(o)) continue;
      auto d = declared.find(o);
      if (d != declared.end() && TypeFromProto(g.value_info(d->second).type()).complete) continue;
      const auto* t = types.Find(o);
      if (t == nullptr || !TypeFromProto(*t).complete) {
        s.Skipped(o, "shape inference gives " +
                         (t == nullptr ? std::string("no type") : "shape " + types.DimsText(o)));
        continue;
      }
      if (d != declared.end()) {
        *g.mutable_value_info(d->second)->mutable_type() = *t;
      } else {
        auto* vi = g.add_value_info();
        vi->set_name(o);
        *vi->mutable_type() = *t;
        declared.emplace(o, g.value_info_size() - 1);
      }
      changed = true;
      s.Applied(o);
    }
  }
  if (changed) s.Changed();
}

}  // namespace axqc::detail::fix
