// fuzz_seeds OUT_DIR: writes seed models for the fuzz corpus with the test model builder:
// conformant and broken variants of the shapes the rule stages look at (Conv, Gemm, MatMul,
// patterns, passive/Split, Relu/Clip tails, 4-bit and 16-bit types, typed storage, If/Loop
// subgraphs, Constant nodes, dangling inputs).
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "check_helpers.h"

namespace {

using axqc::modelgen::ModelBuilder;
using axqc::modelgen::QParams;
using axqc::modelgen::QType;
using axqc::modelgen::Storage;
using axqc::test::ConvModel;
using axqc::test::ConvOpts;
using axqc::test::Scales;
using TP = onnx::TensorProto;

std::string QIn(ModelBuilder& b, const std::string& name, std::vector<int64_t> shape,
                const QParams& p = QParams::U8()) {
  b.Input(name, TP::FLOAT, shape);
  return b.QDQ(name, name, p);
}

ModelBuilder Silu(bool relu_tail) {
  ModelBuilder b;
  auto x = QIn(b, "x", {1, 4, 8, 8});
  b.Node("Sigmoid", {x}, {"sig_out"}, {}, "sig");
  b.Node("Mul", {x, "sig_out"}, {"mul_out"}, {}, "mul");
  std::string out = "mul_out";
  if (relu_tail) {
    b.Node("Relu", {out}, {"relu_out"}, {}, "relu");
    out = "relu_out";
  }
  b.Output(b.QDQ(out, "y", QParams::U8(0.05f, 0)));
  return b;
}

ModelBuilder Glu() {
  ModelBuilder b;
  auto x = QIn(b, "x", {1, 8, 4});
  b.Node("Split", {x}, {"a", "g"},
         {ModelBuilder::AttrI("axis", 1), ModelBuilder::AttrI("num_outputs", 2)}, "split");
  b.Node("Sigmoid", {"g"}, {"sg"}, {}, "sig");
  b.Node("Mul", {"a", "sg"}, {"m"}, {}, "mul");
  b.Output(b.QDQ("m", "y", QParams::U8(0.05f, 0)));
  return b;
}

ModelBuilder ConvBnClip() {
  ModelBuilder b;
  auto x = QIn(b, "x", {1, 4, 8, 8});
  auto wq = QParams::PerChannel(QType::kS8, Scales(8), 0);
  auto w = b.WeightQDQ("w", {8, 4, 3, 3}, wq);
  b.Node("Conv", {x, w}, {"c"}, {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})}, "conv");
  b.InitF32Fill("bn_s", {8}, 1.0f);
  b.InitF32Fill("bn_b", {8}, 0.0f);
  b.InitF32Fill("bn_m", {8}, 0.0f);
  b.InitF32Fill("bn_v", {8}, 1.0f);
  b.Node("BatchNormalization", {"c", "bn_s", "bn_b", "bn_m", "bn_v"}, {"bn"}, {}, "bn");
  b.InitF32("cmin", {}, {0.0f});
  b.InitF32("cmax", {}, {6.0f});
  b.Node("Clip", {"bn", "cmin", "cmax"}, {"cl"}, {}, "clip");
  b.Output(b.QDQ("cl", "y", QParams::U8(0.05f, 0)));
  return b;
}

ModelBuilder GemmMatMul() {
  ModelBuilder b;
  auto x = QIn(b, "x", {2, 16});
  auto w = b.WeightIntDQ("w", {16, 8}, QParams::S8(0.01f));
  b.Node("Gemm", {x, w}, {"g"}, {}, "gemm");
  auto g = b.QDQ("g", "g", QParams::U8(0.05f, 0));
  auto w2 = b.WeightQDQ("w2", {8, 4}, QParams::S8(0.02f));
  b.Node("MatMul", {g, w2}, {"mm"}, {}, "matmul");
  b.Output(b.QDQ("mm", "y", QParams::U8(0.05f, 0)));
  return b;
}

ModelBuilder PassiveSplit() {
  ModelBuilder b;
  auto x = QIn(b, "x", {1, 6, 4, 4});
  b.Node("Reshape", {x, "shape"}, {"r"}, {}, "reshape");
  b.InitInt("shape", TP::INT64, {4}, {1, 6, 2, 8});
  b.Node("Split", {"r"}, {"s0", "s1", "s2"},
         {ModelBuilder::AttrI("axis", 1), ModelBuilder::AttrI("num_outputs", 3)}, "split");
  b.Output(b.QDQ("s0", "o0", QParams::U8()));
  b.Output(b.QDQ("s1", "o1", QParams::S8(0.03f)));
  b.Node("MaxPool", {"s2"}, {"mp"}, {ModelBuilder::AttrInts("kernel_shape", {2, 2})}, "pool");
  b.Output(b.QDQ("mp", "o2", QParams::U8()));
  return b;
}

ModelBuilder Concat16() {
  ModelBuilder b;
  auto a = QIn(b, "a", {1, 4}, QParams::U16());
  auto c = QIn(b, "c", {1, 4}, QParams::S16());
  b.Node("Concat", {a, c}, {"cat"}, {ModelBuilder::AttrI("axis", 1)}, "concat");
  b.Node("Add", {"cat", "cat"}, {"add"}, {}, "add");
  b.Output(b.QDQ("add", "y", QParams::U16()));
  return b;
}

ModelBuilder WithIf() {
  ModelBuilder b = Silu(false);
  b.Input("cond", TP::BOOL, {});
  auto branch = [](const std::string& name, float v) {
    ModelBuilder sb;
    sb.InitF32("k", {1}, {v});
    sb.Node("Add", {"mul_out", "k"}, {name}, {}, name + "_add");
    sb.Output(name, TP::FLOAT, {1, 4, 8, 8});
    return sb.Build().graph();
  };
  b.Node("If", {"cond"}, {"if_out"},
         {ModelBuilder::AttrG("then_branch", branch("t", 1.0f)),
          ModelBuilder::AttrG("else_branch", branch("e", 2.0f))},
         "if");
  b.Output("if_out", TP::FLOAT, {1, 4, 8, 8});
  return b;
}

ModelBuilder WithConstantAndDangling() {
  auto b = ConvModel();
  b.Node("Constant", {}, {"k"}, {ModelBuilder::AttrT("value", ModelBuilder::MakeF32("", {}, {1}))},
         "const");
  b.Node("Add", {"k", "missing"}, {"dangle"}, {}, "dangling");
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_seeds OUT_DIR\n";
    return 2;
  }
  const std::filesystem::path out(argv[1]);
  std::filesystem::create_directories(out);
  std::vector<std::pair<std::string, std::function<ModelBuilder()>>> seeds = {
      {"conv", [] { return ConvModel(); }},
      {"conv_s4",
       [] { return ConvModel({.w = QParams::PerChannel(QType::kS4, {}, 0), .int_weight = true}); }},
      {"conv_u4_in", [] { return ConvModel({.in = QParams::U4()}); }},
      {"conv_per_tensor", [] { return ConvModel({.w = QParams::S8()}); }},
      {"conv_nobias", [] { return ConvModel({.bias = false}); }},
      {"convtranspose",
       [] {
         return ConvModel({.w = QParams::PerChannel(QType::kS8, {}, 1), .op = "ConvTranspose"});
       }},
      {"conv_typed",
       [] {
         QParams in = QParams::U8(0.02f, 128);
         in.storage = Storage::kTyped;
         return ConvModel({.in = in});
       }},
      {"conv_no_zp",
       [] {
         QParams in = QParams::U8();
         in.omit_zero_point = true;
         return ConvModel({.in = in});
       }},
      {"conv_fp8_zp",
       [] {
         QParams in = QParams::U8();
         in.elem_type_override = TP::FLOAT8E4M3FN;
         return ConvModel({.in = in});
       }},
      {"silu", [] { return Silu(false); }},
      {"silu_relu", [] { return Silu(true); }},
      {"glu", Glu},
      {"conv_bn_clip", ConvBnClip},
      {"gemm_matmul", GemmMatMul},
      {"passive_split", PassiveSplit},
      {"concat16", Concat16},
      {"if", WithIf},
      {"constant_dangling", WithConstantAndDangling},
  };
  for (const auto& [name, make] : seeds) {
    try {
      make().Save((out / ("builder_" + name + ".onnx")).string());
    } catch (const std::exception& e) {
      std::cerr << "seed " << name << ": " << e.what() << "\n";
      return 1;
    }
  }
  std::cout << seeds.size() << " seed models in " << out.string() << "\n";
  return 0;
}
