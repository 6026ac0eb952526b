// Exact evaluation of the ops of exporters' shape arithmetic that fold-shape folds: Shape, Size,
// Gather, Slice, Concat, Unsqueeze, Squeeze, Reshape, Identity, Cast, Add/Sub/Mul/Div/Mod,
// Equal, Not, Where, ConstantOfShape, Expand, Tile, Range and ReduceProd, on small INT64/INT32
// and BOOL tensors, with the semantics of the ONNX operator definitions (and of onnxruntime where
// ONNX leaves a choice). Anything that would not compute one well-defined value (an index out of
// range, an overflow, a division that rounds differently by convention, a division by zero, a
// Reshape whose -1 cannot be inferred, a float constant) is refused with a reason.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace axqc::detail::fix {

inline constexpr std::size_t kMaxFoldElements = 4096;

struct IntTensor {
  int type = onnx::TensorProto::INT64;  // INT64, INT32 or BOOL (values 0 and 1)
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> v;
  bool from_shape = false;  // depends on a Shape node
};

// The ops fold-shape evaluates (ai.onnx domain).
bool IsFoldableOp(const std::string& op);

// Evaluates node `n` (opset `opset`). Shape, Size: `shape_of` is the static shape of its input
// and `in` is empty. Others: `in` holds the node's inputs by slot (nullptr for an omitted optional
// input). Returns false with `why` when the node is not evaluated.
bool EvaluateShapeOp(const onnx::NodeProto& n, std::int64_t opset,
                     const std::vector<std::int64_t>& shape_of,
                     const std::vector<const IntTensor*>& in, IntTensor* out, std::string* why);

}  // namespace axqc::detail::fix
