// contrib-qdq-to-onnx: onnxruntime's com.microsoft QuantizeLinear / DequantizeLinear become the
// ai.onnx operators of the same name, where the model's ai.onnx opset has the node's types.
// onnxruntime.quantization writes 16-bit and 4-bit Q/DQ in the com.microsoft domain when the
// model's opset is below 21 (and every Q/DQ with extra_options UseQDQContribOps). Both domains
// define y = saturate(round_half_even(x / scale) + zero_point) and x = (q - zero_point) * scale
// with the same inputs; the contrib `axis` is read only when set (per-axis), as ai.onnx's axis with
// a 1-D scale. A node is rewritten when:
//   * its integer type is an ai.onnx Q/DQ type at the model's opset: UINT8, INT8 from opset 13
//     (DequantizeLinear also INT32), UINT16, INT16, UINT4, INT4 from opset 21;
//   * its scale is FLOAT (FLOAT16 from opset 19);
//   * it has no attribute but `axis`, and without `axis` its scale has one element (per tensor).
// Otherwise it stays (reported with the reason). The com.microsoft opset import stays. Main graph
// only.
#include "fix/session.h"

namespace axqc::detail::fix {

namespace {

using TP = onnx::TensorProto;

// The first ai.onnx opset whose QuantizeLinear (q) / DequantizeLinear (!q) has integer type t.
std::int64_t OnnxOpsetFor(int t, bool q) {
  switch (t) {
    case TP::UINT8:
    case TP::INT8:
      return 13;
    case TP::INT32:
      return q ? 0 : 13;
    case TP::UINT16:
    case TP::INT16:
    case TP::UINT4:
    case TP::INT4:
      return 21;
    default:
      return 0;
  }
}

}  // namespace

void ContribQdqToOnnx(Session& s) {
  auto& g = s.graph();
  const std::int64_t opset = OnnxOpset(s.model());
  // Element types of the contrib Q outputs (shape inference does not know contrib schemas).
  std::unordered_map<std::string, int> q_type;
  auto elem_of = [&](const std::string& name) -> int {
    if (name.empty()) return 0;
    if (const TP* t = s.Initializer(name)) return t->data_type();
    if (auto it = q_type.find(name); it != q_type.end()) return it->second;
    return s.Types().ElemType(name);
  };
  for (const auto& n : g.node()) {
    if (n.domain() != "com.microsoft" || n.op_type() != "QuantizeLinear" || n.output_size() < 1) {
      continue;
    }
    q_type[n.output(0)] = n.input_size() >= 3 && !n.input(2).empty() ? elem_of(n.input(2))
                                                                     : static_cast<int>(TP::UINT8);
  }
  bool changed = false;
  for (int i = 0; i < g.node_size(); ++i) {
    auto* n = g.mutable_node(i);
    const bool q = n->op_type() == "QuantizeLinear";
    if (n->domain() != "com.microsoft" || (!q && n->op_type() != "DequantizeLinear") ||
        n->input_size() < 2) {
      continue;
    }
    const std::string place = NodeLabel(*n, i);
    const int type = q ? (n->output_size() > 0 ? q_type[n->output(0)] : 0) : elem_of(n->input(0));
    if (type == 0) {
      s.Skipped(place, "its integer type is unknown");
      continue;
    }
    const std::int64_t need = OnnxOpsetFor(type, q);
    if (need == 0) {
      s.Skipped(place, "ai.onnx " + n->op_type() + " has no " + ElemTypeName(type));
      continue;
    }
    if (opset < need) {
      s.Skipped(place, "ai.onnx " + n->op_type() + " has " + ElemTypeName(type) + " from opset " +
                           std::to_string(need) + "; the model imports opset " +
                           std::to_string(opset) +
                           " (convert the float model to opset 21 before quantizing)");
      continue;
    }
    const int scale_type = elem_of(n->input(1));
    if (scale_type != TP::FLOAT && !(scale_type == TP::FLOAT16 && opset >= 19)) {
      s.Skipped(place, "its scale type " + ElemTypeName(scale_type) +
                           " is not an ai.onnx scale type at opset " + std::to_string(opset));
      continue;
    }
    bool has_axis = false;
    std::string other;
    for (const auto& a : n->attribute()) {
      if (a.name() == "axis") {
        has_axis = true;
      } else {
        other = a.name();
      }
    }
    if (!other.empty()) {
      s.Skipped(place, "its attribute '" + other + "' has no ai.onnx counterpart");
      continue;
    }
    if (!has_axis) {
      const TP* scale = s.Initializer(n->input(1));
      const auto dims = scale != nullptr ? std::optional<std::vector<std::int64_t>>(
                                               {scale->dims().begin(), scale->dims().end()})
                                         : s.Types().StaticDims(n->input(1));
      std::int64_t count = 1;
      if (dims) {
        for (auto d : *dims) count *= d;
      }
      if (!dims || count != 1) {
        s.Skipped(place, "it has no axis and its scale is not known to have one element");
        continue;
      }
    }
    n->set_domain("");
    changed = true;
    s.Applied(place);
  }
  if (changed) s.Changed();
}

}  // namespace axqc::detail::fix
