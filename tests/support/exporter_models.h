// Modelled exports (issue #40): what newer exporters write, built with the repository's model
// builder because Debian's torch is 1.13. Each model follows the exporter's documented behaviour
// (the public source of torch.onnx's dynamo exporter and its torchlib, and of
// onnxruntime.quantization.quantize_static); tests/data/modelled_exports/README.md lists what
// each one models, its findings before and after `axqc fix` and its causes. The files in
// tests/data/modelled_exports/ are these models as written by `axqc-fix-fixtures --modelled DIR`
// (tests/unit/exporters_test.cc checks that they are byte-identical).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <utility>
#include <vector>

#include "modelgen/model_builder.h"

namespace axqc::test::exporters {

using modelgen::ModelBuilder;
using modelgen::QParams;
using modelgen::QType;
using TP = onnx::TensorProto;

// Node metadata the dynamo exporter writes on every node (IR 10).
inline void TorchNodeMetadata(onnx::ModelProto& m) {
  for (auto& n : *m.mutable_graph()->mutable_node()) {
    auto* p = n.add_metadata_props();
    p->set_key("pkg.torch.onnx.name_scopes");
    p->set_value("['', 'block']");
    auto* q = n.add_metadata_props();
    q->set_key("pkg.torch.onnx.class_hierarchy");
    q->set_value("['Block']");
  }
}

inline std::vector<float> ChannelScales(int n, float base) {
  std::vector<float> s;
  for (int i = 0; i < n; ++i) s.push_back(base * static_cast<float>(i + 1));
  return s;
}

// torch >= 2.5 `torch.onnx.export(..., dynamo=True)` of a fake-quantized Conv block, opset 18,
// IR 10. torchlib writes fake_quantize_per_tensor_affine / _per_channel_affine as
// QuantizeLinear -> DequantizeLinear with the zero point Cast from the module's int32 buffer to
// UINT8/INT8 (`zero_point = op.Cast(zero_point, to=...)`), F.hardtanh(0, 6) as Clip with its
// bounds as Constant nodes, nodes named node_<op>_<n>, values val_<n>, pkg.torch.onnx metadata.
// `local_functions`: the activation fake-quants left as model-local torchlib functions (the
// exporter before its functions are inlined). `optimized`: the onnxscript optimizer ran (the
// default of torch.onnx.export(dynamo=True) before onnxscript stopped folding Q/DQ): Constants and
// Casts folded into initializers, and the weight's QuantizeLinear -> DequantizeLinear folded into
// a float weight.
inline onnx::ModelProto TorchDynamoExport(bool local_functions = false, bool optimized = false) {
  ModelBuilder b(18, 10, "main_graph");
  b.SetProducer("pytorch", "2.9.0");
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  // Buffers of the fake-quant modules: float scale, int32 zero point.
  b.InitF32("block.fq_in.scale", {}, {0.02f});
  b.InitF32("block.fq_mid.scale", {}, {0.025f});
  b.InitF32("block.fq_out.scale", {}, {0.05f});
  const auto ws = ChannelScales(8, 0.004f);
  if (!optimized) b.InitF32("block.fq_w.scale", {8}, ws);
  const auto ws2 = ChannelScales(8, 0.003f);
  b.InitF32("block.fq_w2.scale", {8}, ws2);
  if (optimized) {
    b.InitInt("block.fq_in.zero_point", TP::UINT8, {}, {128});
    b.InitInt("block.fq_mid.zero_point", TP::UINT8, {}, {0});
    b.InitInt("block.fq_out.zero_point", TP::UINT8, {}, {128});
    b.InitInt("block.fq_w2.zero_point", TP::INT8, {8}, std::vector<std::int64_t>(8, 0));
  } else {
    b.InitInt("block.fq_in.zero_point", TP::INT32, {}, {128});
    b.InitInt("block.fq_mid.zero_point", TP::INT32, {}, {0});
    b.InitInt("block.fq_out.zero_point", TP::INT32, {}, {128});
    b.InitInt("block.fq_w.zero_point", TP::INT32, {8}, std::vector<std::int64_t>(8, 0));
    b.InitInt("block.fq_w2.zero_point", TP::INT32, {8}, std::vector<std::int64_t>(8, 0));
  }
  int cast_n = 0;
  auto zp = [&](const std::string& buffer, int to) {
    if (optimized) return buffer;
    const std::string out = "val_zp_" + std::to_string(cast_n);
    b.Node("Cast", {buffer}, {out}, {ModelBuilder::AttrI("to", to)},
           "node_Cast_" + std::to_string(cast_n));
    ++cast_n;
    return out;
  };
  int qn = 0;
  auto fq = [&](const std::string& x, const std::string& scale, const std::string& zero,
                const std::string& out, std::vector<onnx::AttributeProto> attrs = {}) {
    const std::string q = "val_q_" + std::to_string(qn);
    b.Node("QuantizeLinear", {x, scale, zero}, {q}, attrs,
           "node_QuantizeLinear_" + std::to_string(qn));
    b.Node("DequantizeLinear", {q, scale, zero}, {out}, attrs,
           "node_DequantizeLinear_" + std::to_string(qn));
    ++qn;
  };
  // Activation fake-quant: inline, or a call of the torchlib function.
  auto act = [&](const std::string& x, const std::string& scale, const std::string& buffer,
                 const std::string& out) {
    if (local_functions) {
      b.Node("aten_fake_quantize_per_tensor_affine", {x, scale, buffer}, {out}, {},
             "node_aten_fake_quantize_per_tensor_affine_" + std::to_string(qn++),
             "pkg.onnxscript.torch_lib");
    } else {
      fq(x, scale, zp(buffer, TP::UINT8), out);
    }
  };
  act("x", "block.fq_in.scale", "block.fq_in.zero_point", "val_x_fq");
  // Conv 1: the weight fake-quantized per channel (or folded to float by the optimizer).
  std::string w;
  {
    std::vector<float> wv;
    std::vector<std::int64_t> wq;
    std::uint32_t state = 12345u;
    for (int o = 0; o < 8; ++o) {
      for (int k = 0; k < 4 * 9; ++k) {
        state = state * 1103515245u + 12345u;
        const auto q = static_cast<std::int64_t>((state >> 16) % 255) - 127;
        wq.push_back(q);
        wv.push_back(static_cast<float>(q) * ws[static_cast<std::size_t>(o)]);
      }
    }
    b.InitF32("block.conv.weight", {8, 4, 3, 3}, wv);
    if (optimized) {
      w = "block.conv.weight";
    } else {
      w = "val_w_fq";
      fq("block.conv.weight", "block.fq_w.scale", zp("block.fq_w.zero_point", TP::INT8), w,
         {ModelBuilder::AttrI("axis", 0)});
    }
  }
  b.InitF32Rand("block.conv.bias", {8}, -0.1f, 0.1f);
  b.Node("Conv", {"val_x_fq", w, "block.conv.bias"}, {"val_conv"},
         {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})}, "node_Conv_0");
  // F.hardtanh(x, 0, 6): Clip with Constant bounds (initializers once optimized).
  if (optimized) {
    b.InitF32("val_min", {}, {0.0f});
    b.InitF32("val_max", {}, {6.0f});
  } else {
    b.Node("Constant", {}, {"val_min"},
           {ModelBuilder::AttrT("value", ModelBuilder::MakeF32("value", {}, {0.0f}))},
           "node_Constant_0");
    b.Node("Constant", {}, {"val_max"},
           {ModelBuilder::AttrT("value", ModelBuilder::MakeF32("value", {}, {6.0f}))},
           "node_Constant_1");
  }
  b.Node("Clip", {"val_conv", "val_min", "val_max"}, {"val_clip"}, {}, "node_Clip_0");
  act("val_clip", "block.fq_mid.scale", "block.fq_mid.zero_point", "val_mid_fq");
  // Conv 2 (1x1), its weight fake-quantized per channel.
  {
    std::vector<float> wv;
    std::uint32_t state = 777u;
    for (int o = 0; o < 8; ++o) {
      for (int k = 0; k < 8; ++k) {
        state = state * 1103515245u + 12345u;
        const auto q = static_cast<std::int64_t>((state >> 16) % 255) - 127;
        wv.push_back(static_cast<float>(q) * ws2[static_cast<std::size_t>(o)]);
      }
    }
    b.InitF32("block.conv2.weight", {8, 8, 1, 1}, wv);
  }
  fq("block.conv2.weight", "block.fq_w2.scale", zp("block.fq_w2.zero_point", TP::INT8), "val_w2_fq",
     {ModelBuilder::AttrI("axis", 0)});
  b.Node("Conv", {"val_mid_fq", "val_w2_fq"}, {"val_conv2"}, {}, "node_Conv_1");
  act("val_conv2", "block.fq_out.scale", "block.fq_out.zero_point", "y");
  b.Output("y", TP::FLOAT, {1, 8, 8, 8});
  b.AutoValueInfo(false);  // the exporter writes value_info only for some values
  onnx::ModelProto m = b.Build();
  if (local_functions) {
    auto* f = m.add_functions();
    f->set_name("aten_fake_quantize_per_tensor_affine");
    f->set_domain("pkg.onnxscript.torch_lib");
    for (const char* in : {"self", "scale", "zero_point"}) f->add_input(in);
    f->add_output("return_val");
    auto node = [&](const char* op, std::vector<std::string> in, const std::string& out,
                    std::vector<onnx::AttributeProto> attrs = {}) {
      auto* n = f->add_node();
      n->set_op_type(op);
      for (auto& s : in) n->add_input(s);
      n->add_output(out);
      for (auto& a : attrs) *n->add_attribute() = std::move(a);
    };
    node("Cast", {"zero_point"}, "zero_point_cast", {ModelBuilder::AttrI("to", TP::UINT8)});
    node("QuantizeLinear", {"self", "scale", "zero_point_cast"}, "quantized");
    node("DequantizeLinear", {"quantized", "scale", "zero_point_cast"}, "return_val");
    auto* imp = f->add_opset_import();
    imp->set_domain("");
    imp->set_version(18);
  }
  TorchNodeMetadata(m);
  auto* meta = m.add_metadata_props();
  meta->set_key("pkg.torch.onnx.exporter");
  meta->set_value("torch.onnx.export(dynamo=True)");
  return m;
}

// onnxruntime.quantization.quantize_static(..., quant_format=QuantFormat.QDQ, per_channel=True,
// activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8) of a small CNN with a MatMul
// head, opset 17 (IR 8), producer "onnx.quantize". Weights are INT8 initializers with a lone
// DequantizeLinear (per channel), Conv biases INT32 initializers with a DequantizeLinear whose
// scale is input_scale * weight_scale. With asymmetric activations quantize_static removes Relu
// and Clip after a quantized producer (QDQRemovableActivation): the producer's output Q takes the
// activation's range (zero point 0). So the Conv's Relu and the Clip (relu6) after the first
// MatMul are gone; the MatMuls read U8 activations.
inline onnx::ModelProto OrtQuantizeStatic() {
  ModelBuilder b(17, 8, "torch_jit");
  b.SetProducer("onnx.quantize", "0.1.0");
  b.Input("input", TP::FLOAT, {1, 4, 8, 8});
  const auto x = b.QDQ("input", "input", QParams::U8(0.02f, 128));
  const auto ws = ChannelScales(8, 0.004f);
  const auto w =
      b.WeightIntDQ("conv.weight_quantized", {8, 4, 3, 3}, QParams::PerChannel(QType::kS8, ws, 0));
  const auto bias = b.BiasInt32DQ("conv.bias_quantized", 8, modelgen::BiasScales(0.02f, ws));
  b.Node("Conv", {x, w, bias}, {"/conv/Conv_output_0"},
         {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})}, "/conv/Conv");
  // The Relu after the Conv was removed: its output parameters are on the Conv's output.
  const auto c = b.QDQ("/conv/Conv_output_0", "/relu/Relu_output_0", QParams::U8(0.03f, 0));
  b.Node("GlobalAveragePool", {c}, {"/pool/GlobalAveragePool_output_0"}, {},
         "/pool/GlobalAveragePool");
  const auto p = b.QDQ("/pool/GlobalAveragePool_output_0", "/pool/GlobalAveragePool_output_0",
                       QParams::U8(0.01f, 0));
  b.Node("Flatten", {p}, {"/Flatten_output_0"}, {ModelBuilder::AttrI("axis", 1)}, "/Flatten");
  const auto f = b.QDQ("/Flatten_output_0", "/Flatten_output_0", QParams::U8(0.01f, 0));
  const auto w1 = b.WeightIntDQ("fc1.weight_quantized", {8, 16}, QParams::S8(0.005f));
  b.Node("MatMul", {f, w1}, {"/fc1/MatMul_output_0"}, {}, "/fc1/MatMul");
  // The Clip (relu6) after fc1 was removed as well.
  const auto h = b.QDQ("/fc1/MatMul_output_0", "/act/Clip_output_0", QParams::U8(6.0f / 255, 0));
  const auto w2 = b.WeightIntDQ("fc2.weight_quantized", {16, 4}, QParams::S8(0.006f));
  b.Node("MatMul", {h, w2}, {"/fc2/MatMul_output_0"}, {}, "/fc2/MatMul");
  b.Output(b.QDQ("/fc2/MatMul_output_0", "output", QParams::U8(0.04f, 128)));
  return b.Build();
}

// quantize_static with activation_type=QuantType.QUInt16, weight_type=QuantType.QInt8
// (per_channel=True) and the Q/DQ in onnxruntime's com.microsoft domain: what quantize_static
// writes for 16-bit types below opset 21, and at any opset with
// extra_options={"UseQDQContribOps": True}. `opset` 21: every node can be ai.onnx; 17: the
// 16-bit activations cannot (ai.onnx Q/DQ have 16-bit types from opset 21 only). U16
// activations are asymmetric, so the Relu after the Conv is removed as in OrtQuantizeStatic.
inline onnx::ModelProto OrtQuantizeStaticA16W8(std::int64_t opset = 21) {
  ModelBuilder b(opset, opset >= 21 ? 10 : 8, "torch_jit");
  b.SetProducer("onnx.quantize", "0.1.0");
  b.Opset("com.microsoft", 1);
  b.Input("input", TP::FLOAT, {1, 4, 8, 8});
  const std::string ms = "com.microsoft";
  auto q = [&](const std::string& x, const std::string& prefix, const QParams& p) {
    auto [scale, zp] = b.QParamInits(prefix, p);
    std::vector<onnx::AttributeProto> attrs;
    if (p.axis) attrs.push_back(ModelBuilder::AttrI("axis", *p.axis));
    b.Node("QuantizeLinear", {x, scale, zp}, {prefix + "_QuantizeLinear_Output"}, attrs,
           prefix + "_QuantizeLinear", ms);
    return prefix + "_QuantizeLinear_Output";
  };
  auto dq = [&](const std::string& xq, const std::string& prefix, const QParams& p,
                std::string out = "") {
    auto [scale, zp] = b.QParamInits(prefix, p);
    std::vector<onnx::AttributeProto> attrs;
    if (p.axis) attrs.push_back(ModelBuilder::AttrI("axis", *p.axis));
    if (out.empty()) out = prefix + "_DequantizeLinear_Output";
    b.Node("DequantizeLinear", {xq, scale, zp}, {out}, attrs, prefix + "_DequantizeLinear", ms);
    return out;
  };
  auto qdq = [&](const std::string& x, const std::string& prefix, const QParams& p,
                 std::string out = "") { return dq(q(x, prefix, p), prefix, p, std::move(out)); };
  auto weight = [&](const std::string& name, const std::vector<std::int64_t>& dims,
                    const QParams& p, std::uint32_t seed) {
    std::int64_t count = 1;
    for (auto d : dims) count *= d;
    std::vector<std::int64_t> v;
    for (std::int64_t i = 0; i < count; ++i) {
      seed = seed * 1103515245u + 12345u;
      v.push_back(static_cast<std::int64_t>((seed >> 16) % 255) - 127);
    }
    b.InitInt(name, TP::INT8, dims, v);
    return dq(name, name, p);
  };
  const QParams a16 = QParams::U16(0.0003f, 32768);
  const auto x = qdq("input", "input", a16);
  const auto ws = ChannelScales(8, 0.004f);
  const auto w =
      weight("conv.weight_quantized", {8, 4, 3, 3}, QParams::PerChannel(QType::kS8, ws, 0), 99u);
  {
    const auto bs = modelgen::BiasScales(0.0003f, ws);
    std::vector<std::int64_t> bv;
    for (int i = 0; i < 8; ++i) bv.push_back(100 * i - 350);
    b.InitInt("conv.bias_quantized", TP::INT32, {8}, bv);
  }
  const auto bias = dq("conv.bias_quantized", "conv.bias_quantized",
                       QParams::PerChannel(QType::kS32, modelgen::BiasScales(0.0003f, ws), 0));
  b.Node("Conv", {x, w, bias}, {"/conv/Conv_output_0"},
         {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})}, "/conv/Conv");
  const auto r = qdq("/conv/Conv_output_0", "/relu/Relu_output_0", QParams::U16(0.0005f, 0));
  b.Node("GlobalAveragePool", {r}, {"/pool/GlobalAveragePool_output_0"}, {},
         "/pool/GlobalAveragePool");
  const auto p = qdq("/pool/GlobalAveragePool_output_0", "/pool/GlobalAveragePool_output_0",
                     QParams::U16(0.0002f, 0));
  b.Node("Flatten", {p}, {"/Flatten_output_0"}, {ModelBuilder::AttrI("axis", 1)}, "/Flatten");
  const auto f = qdq("/Flatten_output_0", "/Flatten_output_0", QParams::U16(0.0002f, 0));
  const auto w1 = weight("fc.weight_quantized", {4, 8},
                         QParams::PerChannel(QType::kS8, ChannelScales(4, 0.002f), 0), 7u);
  b.Node("Gemm", {f, w1}, {"/fc/Gemm_output_0"}, {ModelBuilder::AttrI("transB", 1)}, "/fc/Gemm");
  qdq("/fc/Gemm_output_0", "output", QParams::U16(0.0004f, 32768), "output");
  b.Output("output", TP::FLOAT, {1, 4});
  return b.Build();
}

// Every modelled export under its file name in tests/data/modelled_exports/.
inline std::vector<std::pair<std::string, onnx::ModelProto>> ModelledExports() {
  return {
      {"torch_dynamo_op18", TorchDynamoExport()},
      {"torch_dynamo_functions_op18", TorchDynamoExport(true)},
      {"torch_dynamo_optimized_op18", TorchDynamoExport(false, true)},
      {"ort_quantize_static_op17", OrtQuantizeStatic()},
      {"ort_quantize_static_a16w8_op21", OrtQuantizeStaticA16W8(21)},
      {"ort_quantize_static_a16w8_op17", OrtQuantizeStaticA16W8(17)},
  };
}

}  // namespace axqc::test::exporters
