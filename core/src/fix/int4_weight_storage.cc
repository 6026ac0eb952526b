// int4-weight-storage (opt-in: `axqc fix --apply int4-weight-storage`, never by default): an INT8
// initializer read only by ai.onnx DequantizeLinear nodes, whose every value lies in [-8, 7], is
// stored as INT4 (packed two per byte, low nibble first, as ONNX stores 4-bit tensors), and an
// INT8 zero point of those nodes (values in [-8, 7]) gets an INT4 copy. QAT flows that train
// 4-bit weights (quant_min -8, quant_max 7) export them in INT8 containers because their exporter
// cannot write INT4; the values are the same, so DequantizeLinear computes
// (q - zero_point) * scale exactly as before. It is the one rewrite that changes a type, so it
// runs only when asked for by name. Needs ai.onnx opset >= 21 (INT4 DequantizeLinear), and the
// DequantizeLinear output must be only the weight (input 1) of Conv, ConvTranspose or Gemm, where
// S4 is a spec type (an S4 MatMul input would be op/matmul-type). Left alone
// (reported): a value outside [-8, 7], another reader of the initializer, a zero point that is
// not a constant INT8 initializer in range, a weight whose output-channel count is odd (S4
// weights need an even count, role/int4-channels), a graph input or output. Main graph only.
#include <map>

#include "fix/session.h"

namespace axqc::detail::fix {

namespace {

using TP = onnx::TensorProto;

bool FitsS4(const std::vector<std::int64_t>& v) {
  for (auto x : v) {
    if (x < -8 || x > 7) return false;
  }
  return true;
}

TP PackInt4(const std::string& name, const google::protobuf::RepeatedField<std::int64_t>& dims,
            const std::vector<std::int64_t>& v) {
  TP t;
  t.set_name(name);
  t.set_data_type(TP::INT4);
  for (auto d : dims) t.add_dims(d);
  std::string raw((v.size() + 1) / 2, '\0');
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto nib = static_cast<unsigned char>(v[i] & 0xF);
    auto& byte = reinterpret_cast<unsigned char&>(raw[i / 2]);
    byte = static_cast<unsigned char>(byte | (i % 2 == 0 ? nib : nib << 4));
  }
  t.set_raw_data(std::move(raw));
  return t;
}

}  // namespace

void Int4WeightStorage(Session& s) {
  auto& g = s.graph();
  const std::int64_t opset = OnnxOpset(s.model());
  if (opset < 21) {
    s.Note("INT4 DequantizeLinear needs ai.onnx opset 21; the model imports opset " +
           std::to_string(opset));
    return;
  }
  std::unordered_set<std::string> io;
  for (const auto& v : g.input()) io.insert(v.name());
  for (const auto& v : g.output()) io.insert(v.name());
  // Readers of every name: (node, slot).
  std::unordered_map<std::string, std::vector<std::pair<int, int>>> readers;
  for (int i = 0; i < g.node_size(); ++i) {
    for (int k = 0; k < g.node(i).input_size(); ++k) readers[g.node(i).input(k)].push_back({i, k});
  }
  const auto uses = UseCounts(g);
  auto weight_channels_odd = [&](const std::string& dq_out, const TP& w) -> bool {
    for (const auto& [c, slot] : readers[dq_out]) {
      const auto& n = g.node(c);
      if (slot != 1 || !IsOnnxDomain(n) || w.dims_size() < 2) continue;
      std::int64_t ch = -1;
      if (n.op_type() == "Conv" || n.op_type() == "Gemm") {
        ch = n.op_type() == "Gemm" && AttrInt(n, "transB").value_or(0) == 0 ? w.dims(1) : w.dims(0);
      } else if (n.op_type() == "ConvTranspose") {
        ch = w.dims(1) * AttrInt(n, "group").value_or(1);
      }
      if (ch > 0 && ch % 2 != 0) return true;
    }
    return false;
  };
  std::map<std::string, TP> new_data;         // initializer -> its INT4 form
  std::map<std::string, std::string> new_zp;  // INT8 zero point -> INT4 copy
  std::vector<TP> zp_made;
  std::vector<std::pair<int, std::string>> zp_edits;  // (DQ node, INT4 zero point)
  std::unordered_set<std::string> refused;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    if (n.op_type() != "DequantizeLinear" || !IsOnnxDomain(n) || n.input_size() < 2) continue;
    const std::string& name = n.input(0);
    const TP* w = s.ConstantInitializer(name);
    if (w == nullptr || w->data_type() != TP::INT8 || refused.contains(name)) continue;
    const std::string place = NodeLabel(n, i);
    auto refuse = [&](const std::string& why) {
      s.Skipped(place, why);
      refused.insert(name);
      new_data.erase(name);
    };
    if (io.contains(name)) {
      refuse("'" + name + "' is a graph input or output");
      continue;
    }
    bool only_dq =
        uses.contains(name) && static_cast<std::size_t>(uses.at(name)) == readers[name].size();
    for (const auto& [c, slot] : readers[name]) {
      const auto& r = g.node(c);
      only_dq = only_dq && slot == 0 && r.op_type() == "DequantizeLinear" && IsOnnxDomain(r);
    }
    if (!only_dq) {
      refuse("'" + name + "' is read by a node other than DequantizeLinear");
      continue;
    }
    const auto v = ReadInts(*w, s.ext());
    if (!v) {
      refuse("the values of '" + name + "' are not readable");
      continue;
    }
    if (!FitsS4(*v)) {
      refuse("a value of '" + name + "' is outside [-8, 7]");
      continue;
    }
    bool weight_only = !readers[n.output(0)].empty() && !io.contains(n.output(0));
    for (const auto& [c, slot] : readers[n.output(0)]) {
      const auto& r = g.node(c);
      weight_only =
          weight_only && slot == 1 && IsOnnxDomain(r) &&
          (r.op_type() == "Conv" || r.op_type() == "ConvTranspose" || r.op_type() == "Gemm");
    }
    if (!weight_only) {
      refuse(
          "its output is not only the weight of Conv, ConvTranspose or Gemm (the inputs where "
          "S4 is a spec type)");
      continue;
    }
    if (weight_channels_odd(n.output(0), *w)) {
      refuse("'" + name + "' is a weight with an odd output-channel count (S4 needs an even one)");
      continue;
    }
    std::string zp4;
    if (n.input_size() >= 3 && !n.input(2).empty()) {
      const std::string& zp = n.input(2);
      auto it = new_zp.find(zp);
      if (it == new_zp.end()) {
        const TP* z = s.ConstantInitializer(zp);
        const auto zv = z != nullptr && z->data_type() == TP::INT8
                            ? ReadInts(*z, s.ext())
                            : std::optional<std::vector<std::int64_t>>();
        if (!zv || !FitsS4(*zv)) {
          refuse("its zero point '" + zp + "' is not a constant INT8 initializer in [-8, 7]");
          continue;
        }
        const std::string made = s.NewTensorName(zp + "_int4");
        zp_made.push_back(PackInt4(made, z->dims(), *zv));
        it = new_zp.emplace(zp, made).first;
      }
      zp4 = it->second;
    }
    if (!new_data.contains(name)) new_data.emplace(name, PackInt4(name, w->dims(), *v));
    if (!zp4.empty()) zp_edits.push_back({i, zp4});
    s.Applied(place);
  }
  if (new_data.empty()) return;
  for (auto& t : *g.mutable_initializer()) {
    auto it = new_data.find(t.name());
    if (it != new_data.end()) t = it->second;
  }
  for (const auto& [node, zp] : zp_edits) {
    if (new_data.contains(g.node(node).input(0))) *g.mutable_node(node)->mutable_input(2) = zp;
  }
  for (auto& t : zp_made) *g.add_initializer() = std::move(t);
  std::unordered_set<std::string> old_zps;
  for (const auto& [zp, made] : new_zp) old_zps.insert(zp);
  s.Changed();
  DropUnusedInitializers(s, old_zps);
  s.Changed();
}

}  // namespace axqc::detail::fix
