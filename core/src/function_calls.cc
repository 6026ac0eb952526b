#include "function_calls.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace axqc::detail {

std::string FunctionCallProblem(const onnx::ModelProto& m) {
  const int n = m.functions_size();
  if (n == 0) return {};
  std::map<std::pair<std::string, std::string>, int> index;
  for (int k = 0; k < n; ++k)
    index.emplace(std::pair{m.functions(k).domain(), m.functions(k).name()}, k);
  // Calls of local functions in a node list and its subgraphs; also counts the nodes.
  auto calls = [&](const google::protobuf::RepeatedPtrField<onnx::NodeProto>& list,
                   std::vector<int>* out, std::uint64_t* nodes) {
    std::vector<const google::protobuf::RepeatedPtrField<onnx::NodeProto>*> todo{&list};
    while (!todo.empty()) {
      const auto* cur = todo.back();
      todo.pop_back();
      *nodes += static_cast<std::uint64_t>(cur->size());
      for (const auto& node : *cur) {
        auto it = index.find({node.domain(), node.op_type()});
        if (it != index.end()) out->push_back(it->second);
        for (const auto& a : node.attribute()) {
          if (a.has_g()) todo.push_back(&a.g().node());
          for (const auto& g : a.graphs()) todo.push_back(&g.node());
        }
      }
    }
  };
  // callees[k]: the functions function k calls; size[k]: its nodes once every call is expanded.
  std::vector<std::vector<int>> callees(static_cast<std::size_t>(n));
  std::vector<std::uint64_t> size(static_cast<std::size_t>(n), 0);
  for (int k = 0; k < n; ++k) {
    calls(m.functions(k).node(), &callees[static_cast<std::size_t>(k)],
          &size[static_cast<std::size_t>(k)]);
  }
  const auto add = [](std::uint64_t a, std::uint64_t b) {
    return std::min(a + b, kMaxExpandedNodes + 1);
  };
  // Kahn's algorithm from the leaves: depth[k] = 1 + deepest callee; what is never reached lies
  // on a cycle.
  std::vector<int> pending(static_cast<std::size_t>(n), 0), depth(static_cast<std::size_t>(n), 1);
  std::vector<std::vector<int>> callers(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    for (int c : callees[static_cast<std::size_t>(k)]) {
      callers[static_cast<std::size_t>(c)].push_back(k);
      ++pending[static_cast<std::size_t>(k)];
    }
  }
  std::vector<int> ready;
  for (int k = 0; k < n; ++k) {
    if (pending[static_cast<std::size_t>(k)] == 0) ready.push_back(k);
  }
  int done = 0;
  while (!ready.empty()) {
    const int k = ready.back();
    ready.pop_back();
    ++done;
    const auto uk = static_cast<std::size_t>(k);
    if (depth[uk] > kMaxFunctionNesting) {
      return "model-local function '" + m.functions(k).name() + "' nests calls more than " +
             std::to_string(kMaxFunctionNesting) + " deep";
    }
    for (int caller : callers[uk]) {
      const auto uc = static_cast<std::size_t>(caller);
      depth[uc] = std::max(depth[uc], depth[uk] + 1);
      size[uc] = add(size[uc], size[uk]);  // once per call
      if (--pending[uc] == 0) ready.push_back(caller);
    }
  }
  if (done == n) {
    std::vector<int> main_calls;
    std::uint64_t total = 0;
    calls(m.graph().node(), &main_calls, &total);
    for (int c : main_calls) total = add(total, size[static_cast<std::size_t>(c)]);
    if (total > kMaxExpandedNodes) {
      return "the calls of model-local functions expand to more than " +
             std::to_string(kMaxExpandedNodes) + " nodes";
    }
    return {};
  }
  for (int k = 0; k < n; ++k) {
    if (pending[static_cast<std::size_t>(k)] != 0) {
      return "model-local function '" + m.functions(k).name() +
             "' is part of a recursive call chain (it calls itself, directly or through other "
             "functions)";
    }
  }
  return {};
}

}  // namespace axqc::detail
