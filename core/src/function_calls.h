// The call graph of a model's local functions (ModelProto.functions). ONNX's shape inference and
// its inliner follow calls recursively: a recursive call chain never ends (stack overflow), a very
// deep chain of calls exhausts the stack as well, and calls of calls multiply the work.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

namespace axqc::detail {

// Calls of local functions nested deeper than this are refused, and so are calls that expand to
// more nodes than kMaxExpandedNodes (each level of calls can multiply the nodes).
inline constexpr int kMaxFunctionNesting = 128;
inline constexpr std::uint64_t kMaxExpandedNodes = 5'000'000;

// "" when the call graph is safe to follow, else what is wrong (names the function).
std::string FunctionCallProblem(const onnx::ModelProto& m);

}  // namespace axqc::detail
