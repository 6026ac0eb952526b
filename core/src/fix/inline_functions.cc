// inline-functions: calls of model-local functions are replaced by the functions' bodies with
// ONNX's own inliner (onnx/inliner/inliner.h, ONNX >= 1.16): a function call is defined to
// compute what its body computes. Functions whose opset imports differ from the model's are not
// inlined by ONNX without version conversion, which this rewrite does not ask for; they stay
// (reported). Domains imported only by an inlined function are added to the model's imports.
#include <onnx/inliner/inliner.h>

#include <map>

#include "fix/session.h"
#include "function_calls.h"

namespace axqc::detail::fix {

namespace {

using FnKey = std::pair<std::string, std::string>;  // (domain, name)

std::size_t CountCalls(onnx::ModelProto& m, const std::map<FnKey, std::size_t>& fns,
                       std::vector<std::string>* places) {
  std::size_t calls = 0;
  ForEachGraph(*m.mutable_graph(), [&](onnx::GraphProto& g) {
    for (int i = 0; i < g.node_size(); ++i) {
      const auto& n = g.node(i);
      if (fns.contains({n.domain(), n.op_type()})) {
        ++calls;
        if (places != nullptr) places->push_back(NodeLabel(n, i));
      }
    }
  });
  return calls;
}

}  // namespace

void InlineFunctions(Session& s) {
  auto& m = s.model();
  if (m.functions_size() == 0) return;
  std::map<FnKey, std::size_t> fns;
  for (int k = 0; k < m.functions_size(); ++k) {
    fns.emplace(FnKey{m.functions(k).domain(), m.functions(k).name()}, static_cast<std::size_t>(k));
  }
  // Recursive, too deep or too large call chains would never finish or exhaust memory.
  if (const std::string why = FunctionCallProblem(m); !why.empty()) {
    s.Skipped("model", "not inlined: " + why);
    return;
  }
  std::vector<std::string> call_sites;
  const std::size_t before = CountCalls(m, fns, &call_sites);
  // Domains the functions import, for the model's imports afterwards.
  std::map<std::string, std::int64_t> model_imports;
  for (const auto& op : m.opset_import()) {
    model_imports[op.domain() == "ai.onnx" ? "" : op.domain()] = op.version();
  }
  std::map<FnKey, std::vector<onnx::OperatorSetIdProto>> fn_imports;
  for (const auto& f : m.functions()) {
    auto& v = fn_imports[{f.domain(), f.name()}];
    v.assign(f.opset_import().begin(), f.opset_import().end());
  }
  try {
    onnx::inliner::InlineLocalFunctions(m, false);
  } catch (const std::exception& e) {
    s.Skipped("model", std::string("ONNX's inliner failed: ") + e.what());
    return;
  }
  std::map<FnKey, std::size_t> left;
  for (int k = 0; k < m.functions_size(); ++k) {
    left.emplace(FnKey{m.functions(k).domain(), m.functions(k).name()},
                 static_cast<std::size_t>(k));
  }
  // Imports of the inlined functions that the model lacks.
  for (const auto& [key, imports] : fn_imports) {
    if (left.contains(key)) continue;
    for (const auto& op : imports) {
      const std::string d = op.domain() == "ai.onnx" ? "" : op.domain();
      if (model_imports.contains(d)) continue;
      model_imports[d] = op.version();
      auto* imp = m.add_opset_import();
      imp->set_domain(op.domain());
      imp->set_version(op.version());
    }
  }
  const std::size_t after = CountCalls(m, left, nullptr);
  std::size_t inlined = before - std::min(before, after);
  for (std::size_t i = 0; i < inlined && i < call_sites.size(); ++i) s.Applied(call_sites[i]);
  for (const auto& [key, k] : left) {
    const auto& f = m.functions(static_cast<int>(k));
    std::string why = "not inlined: its opset imports differ from the model's (";
    bool first = true;
    for (const auto& op : f.opset_import()) {
      const std::string d = op.domain() == "ai.onnx" ? "" : op.domain();
      auto it = model_imports.find(d);
      if (it == model_imports.end() || it->second == op.version()) continue;
      why += (first ? "" : ", ") + (d.empty() ? std::string("ai.onnx") : d) + " " +
             std::to_string(op.version()) + " vs " + std::to_string(it->second);
      first = false;
    }
    s.Skipped("function " + (key.first.empty() ? "" : key.first + ".") + key.second, why + ")");
  }
  const std::size_t removed = fns.size() - left.size();
  if (removed > 0) {
    s.Note(std::to_string(removed) + " function(s) inlined and removed");
  }
  if (removed > 0 || inlined > 0) s.Changed();
}

}  // namespace axqc::detail::fix
