// identity-of-initializer: `Identity(initializer) -> consumers` becomes `initializer -> consumers`
// (Identity(x) == x for every x; PyTorch's exporter writes such Identity nodes when it
// de-duplicates equal parameters, so that several scales or biases read one initializer through
// an Identity each). Chains of Identity nodes resolve to the initializer. An Identity whose
// output is a graph output is kept, so the graph's outputs stay as they are. Main graph and
// subgraphs alike (an initializer of an outer graph is visible inside).
#include "fix/session.h"

namespace axqc::detail::fix {

void IdentityOfInitializer(Session& s) {
  bool changed = false;
  // Each graph sees its own initializers and those of the main graph. Aliases of a graph are
  // applied to that graph and its subgraphs only (sibling subgraphs may reuse a name), right away,
  // so that an inner Identity of an outer one already reads the initializer.
  std::unordered_set<std::string> main_inits;
  for (const auto& t : s.graph().initializer()) main_inits.insert(t.name());
  onnx::GraphProto* main = &s.graph();
  ForEachGraph(*main, [&](onnx::GraphProto& g) {
    std::unordered_set<std::string> inits = main_inits;
    if (&g != main) {
      for (const auto& t : g.initializer()) inits.insert(t.name());
    }
    std::unordered_set<std::string> outputs;
    for (const auto& o : g.output()) outputs.insert(o.name());
    std::unordered_map<std::string, std::string> alias;  // Identity output -> initializer
    std::vector<bool> drop(static_cast<std::size_t>(g.node_size()), false);
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& n = g.node(i);
      if (n.op_type() != "Identity" || !IsOnnxDomain(n) || n.input_size() != 1 ||
          n.output_size() != 1 || n.output(0).empty()) {
        continue;
      }
      std::string src = n.input(0);
      if (auto it = alias.find(src); it != alias.end()) src = it->second;
      if (!inits.contains(src)) continue;
      if (outputs.contains(n.output(0))) {
        s.Skipped(NodeLabel(n, i), "its output '" + n.output(0) +
                                       "' is a graph output (kept so that the outputs stay)");
        continue;
      }
      alias[n.output(0)] = src;
      drop[static_cast<std::size_t>(i)] = true;
      s.Applied(NodeLabel(n, i));
    }
    if (alias.empty()) return;
    changed = true;
    auto* vis = g.mutable_value_info();
    for (int k = vis->size() - 1; k >= 0; --k) {
      if (alias.contains(vis->Get(k).name())) vis->DeleteSubrange(k, 1);
    }
    RemoveNodes(g, drop);
    RenameInputs(g, alias);
  });
  if (changed) s.Changed();
}

}  // namespace axqc::detail::fix
