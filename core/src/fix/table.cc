// The rewrites of `axqc fix`, in the order they run. IDs are a public contract (docs/fixes/<id>.md,
// --only, the JSON output): never rename one.
#include <algorithm>

#include "fix/session.h"

namespace axqc {
namespace detail::fix {

namespace {

// ir-version runs first, so that a model whose IR is newer than the linked ONNX library becomes
// checkable for the other rewrites; value-info runs last, on the final graph.
const RewriteEntry kTable[] = {
    {{"ir-version",
      "ir_version lowered to --ir-version N when nothing in the model needs a newer IR (runs only "
      "with --ir-version)",
      false, false},
     IrVersion},
    {{"inline-functions",
      "model-local functions inlined by ONNX's inliner (a call computes what its body computes)",
      true, false},
     InlineFunctions},
    {{"constant-to-initializer",
      "Constant nodes become initializers with the same name, type, shape and value (every "
      "Constant form)",
      true, false},
     ConstantToInitializer},
    {{"identity-of-initializer",
      "an Identity of an initializer is bypassed: its consumers read the initializer itself "
      "(undoes the exporter's de-duplication; graph outputs are kept)",
      true, false},
     IdentityOfInitializer},
    {{"cast-of-initializer",
      "a Cast of a constant initializer becomes an initializer holding the cast values, when the "
      "conversion is exact for every element (the zero points of PyTorch's dynamo exporter)",
      true, false},
     CastOfInitializer},
    {{"contrib-qdq-to-onnx",
      "com.microsoft QuantizeLinear/DequantizeLinear become ai.onnx ones where the model's opset "
      "has their types (16-bit and 4-bit from opset 21; same computation)",
      true, false},
     ContribQdqToOnnx},
    {{"fold-shape",
      "static shape subgraphs (Shape, Size, Gather, Slice, Concat, Unsqueeze, Squeeze, Reshape, "
      "Identity, Cast, integer Add/Sub/Mul/Div/Mod, Equal, Not, Where, ConstantOfShape, Expand, "
      "Tile, Range, ReduceProd) folded to initializers when every input shape is known",
      true, false},
     FoldShape},
    {{"reshape-copy-dims",
      "a Reshape target built from its own input's dims at the same positions becomes a constant "
      "with 0 (keep the input's dim) there",
      true, false},
     ReshapeCopyDims},
    {{"explicit-zero-point",
      "an omitted Q/DQ zero_point written explicitly: ONNX's default, 0 of the type the node "
      "already uses, shaped like the scale",
      true, false},
     ExplicitZeroPoint},
    {{"positive-axis", "a negative Q/DQ axis written as the same axis counted from the front", true,
      false},
     PositiveAxis},
    {{"requantize-identity",
      "an Identity inserted on a direct DQ1 -> Q2 edge whose parameters differ (spec 3.5)", true,
      false},
     RequantizeIdentity},
    {{"int4-weight-storage",
      "INT8 initializers read only by DequantizeLinear whose values all lie in [-8, 7] stored as "
      "INT4 (opset >= 21; opt-in: the one rewrite that changes a type, only with --apply)",
      false, true},
     Int4WeightStorage},
    {{"value-info", "value_info completed from ONNX shape inference for every intermediate tensor",
      true, false},
     ValueInfo},
};

std::vector<RewriteInfo> MakeInfos() {
  std::vector<RewriteInfo> v;
  for (const auto& e : kTable) v.push_back(e.info);
  return v;
}

}  // namespace

std::span<const RewriteEntry> RewriteTable() { return kTable; }

}  // namespace detail::fix

std::span<const RewriteInfo> Rewrites() {
  static const std::vector<RewriteInfo> infos = detail::fix::MakeInfos();
  return infos;
}

const RewriteInfo* FindRewrite(std::string_view id) {
  for (const auto& r : Rewrites()) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

std::size_t FixResult::applied() const {
  std::size_t n = 0;
  for (const auto& r : rewrites) n += r.applied;
  return n;
}

}  // namespace axqc
