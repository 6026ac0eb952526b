// axqc-gen-examples OUT_DIR: writes the example models (opset 21, complete value_info).
//
//   conformant_cnn.onnx            Conv+Relu tail, residual Add, GAP, passive Flatten, Gemm
//   broken_weight_per_tensor.onnx  first Conv weight per-tensor S8 (role/weight-type)
//   broken_missing_qdq.onnx        Add output feeds GlobalAveragePool without Q/DQ
//                                  (op/output-not-quantized; op/input-not-quantized)
//   broken_two_defects.onnx        both of the above: broken_weight_per_tensor's next export with
//                                  a new defect (the baseline example of docs/ci.md)
//   float_only.onnx                plain float Conv/Relu, no Q/DQ (verdict not_applicable)
//
// All variants of the CNN come from one function with flags. Every model is checked with the ONNX
// checker (full check) before it is written; the generator fails otherwise.
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "modelgen/model_builder.h"

namespace {

using axqc::modelgen::BiasScales;
using axqc::modelgen::ModelBuilder;
using axqc::modelgen::QParams;
using axqc::modelgen::QType;
using onnx::TensorProto;

constexpr int kFloat = TensorProto::FLOAT;

// Deterministic per-channel scales: base, base + step, ...
std::vector<float> ChannelScales(int n, float base, float step) {
  std::vector<float> s;
  s.reserve(static_cast<std::size_t>(n));
  for (int c = 0; c < n; ++c) {
    s.push_back(base + step * static_cast<float>(c));
  }
  return s;
}

std::vector<onnx::AttributeProto> Conv3x3Attrs() {
  return {ModelBuilder::AttrInts("kernel_shape", {3, 3}),
          ModelBuilder::AttrInts("pads", {1, 1, 1, 1}), ModelBuilder::AttrInts("strides", {1, 1})};
}

struct CnnVariant {
  bool per_tensor_first_weight = false;  // broken_weight_per_tensor
  bool missing_add_qdq = false;          // broken_missing_qdq
};

// Quantized Conv (3x3, pad 1) with an INT32 bias whose scale is in_scale * w_scale (FP32).
// The weight is FP32 -> Q -> DQ when `weight_qdq`, else an INT8 initializer -> DQ.
// Returns the Conv output (float, not yet quantized).
std::string QConv(ModelBuilder& b, const std::string& name, const std::string& x, float in_scale,
                  int64_t cin, int64_t cout, bool weight_qdq, bool per_tensor_weight) {
  const std::vector<float> ws = ChannelScales(static_cast<int>(cout), 0.004f, 0.0005f);
  const QParams wp =
      per_tensor_weight ? QParams::S8(0.006f) : QParams::PerChannel(QType::kS8, ws, 0);
  const std::vector<int64_t> wdims{cout, cin, 3, 3};
  const std::string w =
      weight_qdq ? b.WeightQDQ(name + "_w", wdims, wp) : b.WeightIntDQ(name + "_w", wdims, wp);
  const std::vector<float> bs = BiasScales(
      in_scale,
      per_tensor_weight ? std::vector<float>(static_cast<std::size_t>(cout), wp.scale[0]) : ws);
  const std::string bias = b.BiasInt32DQ(name + "_b", cout, bs);
  std::string out = name + "_out";
  b.Node("Conv", {x, w, bias}, {out}, Conv3x3Attrs(), name);
  return out;
}

ModelBuilder BuildCnn(const CnnVariant& v, const std::string& doc) {
  ModelBuilder b(21, 10, "axqc_example_cnn");
  b.DocString(doc);
  b.Input("input", kFloat, {1, 3, 32, 32});

  // Input activation: U8 asymmetric.
  const QParams in_p = QParams::U8(0.02f, 128);
  const std::string x = b.QDQ("input", "input", in_p);

  // Conv1 (S8 per-channel weight) with a Relu fusion tail: Conv -> Relu -> Q/DQ (U8, zp 0).
  const std::string conv1 =
      QConv(b, "conv1", x, in_p.scale[0], 3, 8, /*weight_qdq=*/true, v.per_tensor_first_weight);
  b.Node("Relu", {conv1}, {"relu1_out"}, {}, "relu1");
  const QParams relu1_p = QParams::U8(0.03f, 0);
  const std::string r1 = b.QDQ("relu1_out", "relu1", relu1_p);

  // Second branch: Conv2 (integer weight -> DQ), output quantized symmetric S8.
  const std::string conv2 = QConv(b, "conv2", r1, relu1_p.scale[0], 8, 8, /*weight_qdq=*/false,
                                  /*per_tensor_weight=*/false);
  const std::string c2 = b.QDQ(conv2, "conv2", QParams::S8(0.05f));

  // Residual Add of two quantized tensors.
  b.Node("Add", {r1, c2}, {"add_out"}, {}, "add");
  const std::string add =
      v.missing_add_qdq ? std::string("add_out") : b.QDQ("add_out", "add", QParams::U8(0.06f, 64));

  // GlobalAveragePool (quant-only): DQ in, Q/DQ out.
  b.Node("GlobalAveragePool", {add}, {"gap_out"}, {}, "gap");
  const QParams gap_p = QParams::U8(0.04f, 60);
  const std::string gap = b.QDQ("gap_out", "gap", gap_p);

  // Flatten (passive): its exit Q/DQ shares the entry's full parameters.
  b.Node("Flatten", {gap}, {"flatten_out"}, {ModelBuilder::AttrI("axis", 1)}, "flatten");
  const std::string flat = b.QDQ("flatten_out", "flatten", gap_p);

  // Gemm in canonical fully-connected form, weight [10, 8] S8 per-channel axis 0.
  const std::vector<float> fc_ws = ChannelScales(10, 0.003f, 0.0002f);
  const std::string fc_w =
      b.WeightIntDQ("fc_w", {10, 8}, QParams::PerChannel(QType::kS8, fc_ws, 0));
  const std::string fc_b = b.BiasInt32DQ("fc_b", 10, BiasScales(gap_p.scale[0], fc_ws));
  b.Node("Gemm", {flat, fc_w, fc_b}, {"fc_out"},
         {ModelBuilder::AttrI("transA", 0), ModelBuilder::AttrI("transB", 1),
          ModelBuilder::AttrF("alpha", 1.0f), ModelBuilder::AttrF("beta", 1.0f)},
         "fc");
  std::string out = b.QDQ("fc_out", "fc", QParams::U8(0.1f, 128));
  b.Output(out, kFloat, {1, 10});
  return b;
}

ModelBuilder BuildFloatOnly() {
  ModelBuilder b(21, 10, "axqc_example_float");
  b.DocString("Plain float Conv/Relu model without any Q/DQ: verdict not_applicable.");
  b.Input("input", kFloat, {1, 3, 32, 32});
  b.InitF32Rand("conv1_w", {8, 3, 3, 3}, -0.5f, 0.5f).InitF32Rand("conv1_b", {8}, -0.1f, 0.1f);
  b.Node("Conv", {"input", "conv1_w", "conv1_b"}, {"conv1_out"}, Conv3x3Attrs(), "conv1");
  b.Node("Relu", {"conv1_out"}, {"relu1_out"}, {}, "relu1");
  b.InitF32Rand("conv2_w", {8, 8, 3, 3}, -0.5f, 0.5f).InitF32Rand("conv2_b", {8}, -0.1f, 0.1f);
  b.Node("Conv", {"relu1_out", "conv2_w", "conv2_b"}, {"conv2_out"}, Conv3x3Attrs(), "conv2");
  b.Node("Relu", {"conv2_out"}, {"output"}, {}, "relu2");
  b.Output("output", kFloat, {1, 8, 32, 32});
  return b;
}

struct Example {
  const char* file;
  std::function<ModelBuilder()> build;
};

std::vector<Example> Examples() {
  return {
      {"conformant_cnn.onnx",
       [] {
         return BuildCnn({},
                         "Conformant QDQ CNN: Conv+Relu tail, residual Add, GlobalAveragePool, "
                         "passive Flatten, canonical Gemm.");
       }},
      {"broken_weight_per_tensor.onnx",
       [] {
         return BuildCnn({.per_tensor_first_weight = true},
                         "Non-conformant: conv1 weight is per-tensor S8 (role/weight-type).");
       }},
      {"broken_missing_qdq.onnx",
       [] {
         return BuildCnn({.missing_add_qdq = true},
                         "Non-conformant: Add output feeds GlobalAveragePool without Q/DQ "
                         "(op/output-not-quantized, op/input-not-quantized).");
       }},
      {"broken_two_defects.onnx",
       [] {
         return BuildCnn({.per_tensor_first_weight = true, .missing_add_qdq = true},
                         "Non-conformant: conv1 weight per-tensor S8 and the Add output without "
                         "Q/DQ (role/weight-type, op/output-not-quantized).");
       }},
      {"float_only.onnx", [] { return BuildFloatOnly(); }},
  };
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: axqc-gen-examples OUT_DIR\n";
    return 2;
  }
  const std::filesystem::path out_dir(argv[1]);
  try {
    for (const Example& e : Examples()) {
      const onnx::ModelProto model = e.build().Build();
      // Every example, broken ones included, must be valid ONNX (full check, strict inference).
      onnx::checker::check_model(model, /*full_check=*/true);
      ModelBuilder::SaveModel(model, (out_dir / e.file).string());
    }
  } catch (const std::exception& ex) {
    std::cerr << "axqc-gen-examples: " << ex.what() << "\n";
    return 1;
  }
  return 0;
}
