// explicit-zero-point: a QuantizeLinear / DequantizeLinear without zero_point uses ONNX's default,
// zero_point = 0 of the node's integer type. The rewrite writes exactly that default as an
// initializer shaped like the scale (ONNX requires the zero_point's shape to be the scale's):
//   DequantizeLinear  the type of its input x (shape inference / the initializer);
//   QuantizeLinear    UINT8 (every opset; the output type without zero_point), or the type named
//                     by output_dtype (opset >= 21) when set.
// Only integer types (UINT8, INT8, UINT16, INT16, INT32, UINT4, INT4); a float8 x, an unknown x
// type or an unknown scale shape leaves the node alone (reported). Nodes sharing one scale share
// one zero_point initializer. Main graph only.
#include <map>

#include "fix/session.h"

namespace axqc::detail::fix {

namespace {

using TP = onnx::TensorProto;

bool IntegerZeroPointType(int t) {
  switch (t) {
    case TP::UINT8:
    case TP::INT8:
    case TP::UINT16:
    case TP::INT16:
    case TP::INT32:
    case TP::UINT4:
    case TP::INT4:
      return true;
    default:
      return false;
  }
}

}  // namespace

void ExplicitZeroPoint(Session& s) {
  auto& g = s.graph();
  const TypeMap& types = s.Types();
  const std::int64_t opset = OnnxOpset(s.model());
  std::map<std::pair<std::string, int>, std::string> made_for;  // (scale, type) -> zero_point
  std::vector<TP> made;
  struct Edit {
    int node;
    std::string zp;
  };
  std::vector<Edit> edits;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    const bool q = n.op_type() == "QuantizeLinear";
    if ((!q && n.op_type() != "DequantizeLinear") || !IsOnnxDomain(n) || n.input_size() < 2) {
      continue;
    }
    if (n.input_size() >= 3 && !n.input(2).empty()) continue;
    const std::string place = NodeLabel(n, i);
    int type = 0;
    if (q) {
      type = TP::UINT8;
      if (opset >= 21) {
        const auto dt = AttrInt(n, "output_dtype").value_or(0);
        if (dt != 0) type = static_cast<int>(dt);
      }
      const int y = n.output_size() > 0 ? types.ElemType(n.output(0)) : 0;
      if (y != 0 && y != type) {
        s.Skipped(place, "its output type " + ElemTypeName(y) + " is not the default " +
                             ElemTypeName(type));
        continue;
      }
    } else {
      type = types.ElemType(n.input(0));
      if (type == 0) {
        s.Skipped(place, "the type of its input '" + n.input(0) + "' is unknown");
        continue;
      }
    }
    if (!IntegerZeroPointType(type)) {
      s.Skipped(place, "its integer type " + ElemTypeName(type) + " is not one of the spec types");
      continue;
    }
    const std::string& scale = n.input(1);
    auto dims = types.StaticDims(scale);
    if (!dims) {
      s.Skipped(place, "the shape of its scale '" + scale + "' is unknown");
      continue;
    }
    auto key = std::make_pair(scale, type);
    auto it = made_for.find(key);
    if (it == made_for.end()) {
      const std::string base = (scale.empty() ? place : scale) + "_zero_point";
      const std::string name = s.NewTensorName(base);
      made.push_back(ZeroTensor(name, type, *dims));
      it = made_for.emplace(key, name).first;
    }
    edits.push_back({i, it->second});
    s.Applied(place);
  }
  if (edits.empty()) return;
  for (const auto& e : edits) {
    auto* n = g.mutable_node(e.node);
    if (n->input_size() >= 3) {
      *n->mutable_input(2) = e.zp;
    } else {
      n->add_input(e.zp);
    }
  }
  for (auto& t : made) *g.add_initializer() = std::move(t);
  s.Changed();
}

}  // namespace axqc::detail::fix
