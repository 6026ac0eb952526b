// axqc-bench-gen: synthetic QDQ models at a chosen scale for the checker benchmarks (bench/run.sh).
//
//   axqc-bench-gen --nodes N [--kind mixed|cnn|transformer] [--width C] [--external DATA_FILE]
//                  [--pad-external BYTES] [--violations] -o OUT.onnx
//
// Realistic building blocks, all conformant to the ax quant spec unless --violations:
//   CNN block        Conv(int8 per-channel weight -> DQ, int32 bias -> DQ) + BatchNormalization +
//                    Relu tail (conv-bn pattern) -> Q/DQ U8; a second Conv+BN -> Q/DQ S8; residual
//                    Add -> Q/DQ U8; every 4th block a passive MaxPool (3x3, stride 1) and a Concat
//                    of two branches reduced by a 1x1 Conv.
//   transformer      LayerNormalization -> Q/DQ S8; Q/K/V MatMul (S8 per-tensor weights, S8
//   block            activations); Reshape/Transpose head split (passive); Q.K^T MatMul, Softmax,
//                    attention MatMul, head merge, output projection, residual Add; FFN with GLU
//                    (Split/Sigmoid/Mul) in even blocks and SiLU (Sigmoid/Mul) in odd blocks.
//   mixed            CNN blocks for half of the nodes, then a 1x1 Conv + Reshape/Transpose into
//                    tokens [1, 64, C] and transformer blocks for the rest.
// Spatial / token sizes are small (8x8, 64 tokens) so that shape inference stays cheap; the
// weight bytes grow with --width (C) squared. --violations quantizes every Conv weight per-tensor
// (role/weight-type) and every MatMul weight asymmetric U8 (op/matmul-type): thousands of findings
// in a handful of groups. --external writes every initializer >= 1 KiB into DATA_FILE next to
// the model (ModelBuilder::SaveWithExternalData). --pad-external (with --external) adds an INT8
// initializer "bulk_weights" of BYTES elements at the end of DATA_FILE, written as a sparse hole
// (no disk space, no write time): a model of several GB whose graph file stays small, like an LLM
// export, for the large-model benchmark (no rule reads that tensor, so a check must not read it).
//
// Value info comes from one shape inference run in ModelBuilder::Build(). Generation is
// deterministic.
#include <onnx/onnx_pb.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "modelgen/model_builder.h"

namespace {

using axqc::modelgen::BiasScales;
using axqc::modelgen::ModelBuilder;
using axqc::modelgen::QParams;
using axqc::modelgen::QType;
using onnx::TensorProto;
using A = ModelBuilder;

constexpr int kFloat = TensorProto::FLOAT;
constexpr int64_t kHw = 8;       // CNN spatial size (kHw x kHw)
constexpr int64_t kTokens = 64;  // = kHw * kHw: tokens after the CNN -> transformer bridge
constexpr int64_t kHeads = 4;

struct Options {
  std::string kind = "mixed";
  int64_t nodes = 1000;
  int64_t width = 32;
  std::string out;
  std::string external;            // data file relative to the model's directory; empty: embedded
  std::uint64_t pad_external = 0;  // bytes of the sparse "bulk_weights" tensor
  bool violations = false;
};

std::vector<float> ChannelScales(int64_t n, float base, float step) {
  std::vector<float> s;
  s.reserve(static_cast<std::size_t>(n));
  for (int64_t c = 0; c < n; ++c) s.push_back(base + step * static_cast<float>(c % 16));
  return s;
}

// The builder plus a node counter (ModelBuilder does not expose one before Build()).
class Gen {
 public:
  explicit Gen(const Options& o) : o_(o), b_(21, 10, "axqc_bench") {
    b_.SetProducer("axqc-bench-gen", "0.1.0");
  }

  ModelBuilder& builder() { return b_; }
  int64_t nodes() const { return nodes_; }

  std::string Node(const std::string& op, std::vector<std::string> in, const std::string& out,
                   std::vector<onnx::AttributeProto> attrs, const std::string& name) {
    b_.Node(op, std::move(in), {out}, std::move(attrs), name);
    ++nodes_;
    return out;
  }
  std::string QDQ(const std::string& x, const std::string& prefix, const QParams& p) {
    nodes_ += 2;
    return b_.QDQ(x, prefix, p);
  }

  // Quantized Conv kxk (pad k/2, stride 1) with an int8 per-channel weight (per-tensor with
  // --violations) and an int32 bias. Returns the float Conv output.
  std::string Conv(const std::string& name, const std::string& x, float in_scale, int64_t cin,
                   int64_t cout, int64_t k) {
    const std::vector<float> ws = ChannelScales(cout, 0.004f, 0.0005f);
    const QParams wp = o_.violations ? QParams::S8(0.006f) : QParams::PerChannel(QType::kS8, ws, 0);
    const std::string w = b_.WeightIntDQ(name + "_w", {cout, cin, k, k}, wp);
    const std::string bias = b_.BiasInt32DQ(
        name + "_b", cout,
        BiasScales(in_scale, o_.violations
                                 ? std::vector<float>(static_cast<std::size_t>(cout), wp.scale[0])
                                 : ws));
    nodes_ += 2;
    const int64_t p = k / 2;
    return Node("Conv", {x, w, bias}, name + "_out",
                {A::AttrInts("kernel_shape", {k, k}), A::AttrInts("pads", {p, p, p, p}),
                 A::AttrInts("strides", {1, 1})},
                name);
  }

  std::string BatchNorm(const std::string& name, const std::string& x, int64_t c) {
    b_.InitF32Rand(name + "_scale", {c}, 0.5f, 1.5f);
    b_.InitF32Rand(name + "_bias", {c}, -0.1f, 0.1f);
    b_.InitF32Rand(name + "_mean", {c}, -0.1f, 0.1f);
    b_.InitF32Rand(name + "_var", {c}, 0.5f, 1.5f);
    return Node("BatchNormalization",
                {x, name + "_scale", name + "_bias", name + "_mean", name + "_var"}, name + "_out",
                {}, name);
  }

  // Residual CNN block on x (U8 activation with scale `s`). Returns the block output (DQ, U8).
  std::string CnnBlock(int64_t i, const std::string& x, float& s) {
    const std::string p = "c" + std::to_string(i) + "_";
    const int64_t c = o_.width;
    const QParams relu_p = QParams::U8(0.03f, 0);
    std::string r1 = Node("Relu", {BatchNorm(p + "bn1", Conv(p + "conv1", x, s, c, c, 3), c)},
                          p + "relu1_out", {}, p + "relu1");
    r1 = QDQ(r1, p + "relu1", relu_p);
    std::string c2 = BatchNorm(p + "bn2", Conv(p + "conv2", r1, relu_p.scale[0], c, c, 3), c);
    c2 = QDQ(c2, p + "conv2", QParams::S8(0.05f));
    const QParams add_p = QParams::U8(0.06f, 64);
    std::string y = QDQ(Node("Add", {x, c2}, p + "add_out", {}, p + "add"), p + "add", add_p);
    s = add_p.scale[0];
    if (i % 4 == 3) {
      // Passive MaxPool (exit shares the entry's params), Concat of two branches, 1x1 Conv.
      const std::string mp =
          QDQ(Node("MaxPool", {y}, p + "pool_out",
                   {A::AttrInts("kernel_shape", {3, 3}), A::AttrInts("pads", {1, 1, 1, 1}),
                    A::AttrInts("strides", {1, 1})},
                   p + "pool"),
              p + "pool", add_p);
      const QParams cat_p = QParams::U8(0.07f, 60);
      const std::string cat =
          QDQ(Node("Concat", {y, mp}, p + "cat_out", {A::AttrI("axis", 1)}, p + "cat"), p + "cat",
              cat_p);
      std::string red = Node("Relu", {Conv(p + "reduce", cat, cat_p.scale[0], 2 * c, c, 1)},
                             p + "relu3_out", {}, p + "relu3");
      const QParams red_p = QParams::U8(0.04f, 0);
      y = QDQ(red, p + "relu3", red_p);
      s = red_p.scale[0];
    }
    return y;
  }

  // MatMul of an S8 activation with an S8 per-tensor weight [k, n] (U8 asymmetric with
  // --violations) -> Q/DQ S8. Returns the DQ output.
  std::string Linear(const std::string& name, const std::string& x, int64_t k, int64_t n,
                     float out_scale) {
    const QParams wp = o_.violations ? QParams::U8(0.01f, 128) : QParams::S8(0.01f);
    const std::string w = b_.WeightIntDQ(name + "_w", {k, n}, wp);
    ++nodes_;
    return QDQ(Node("MatMul", {x, w}, name + "_out", {}, name), name, QParams::S8(out_scale));
  }

  std::string LayerNorm(const std::string& name, const std::string& x, int64_t d) {
    b_.InitF32Rand(name + "_g", {d}, 0.5f, 1.5f);
    b_.InitF32Rand(name + "_b", {d}, -0.1f, 0.1f);
    return QDQ(Node("LayerNormalization", {x, name + "_g", name + "_b"}, name + "_out",
                    {A::AttrI("axis", -1)}, name),
               name, QParams::S8(0.04f));
  }

  // Passive chain: Reshape(shape) then Transpose(perm), exit Q/DQ with the entry's params.
  std::string ReshapeTranspose(const std::string& name, const std::string& x,
                               const std::string& shape, const std::vector<int64_t>& perm,
                               const QParams& p) {
    const std::string r = Node("Reshape", {x, shape}, name + "_r_out", {}, name + "_r");
    return QDQ(Node("Transpose", {r}, name + "_t_out", {A::AttrInts("perm", perm)}, name + "_t"),
               name, p);
  }
  std::string TransposeReshape(const std::string& name, const std::string& x,
                               const std::vector<int64_t>& perm, const std::string& shape,
                               const QParams& p) {
    const std::string t =
        Node("Transpose", {x}, name + "_t_out", {A::AttrInts("perm", perm)}, name + "_t");
    return QDQ(Node("Reshape", {t, shape}, name + "_r_out", {}, name + "_r"), name, p);
  }

  void Shapes() {
    const int64_t d = o_.width;
    b_.InitInt("shape_heads", TensorProto::INT64, {4}, {1, kTokens, kHeads, d / kHeads});
    b_.InitInt("shape_tokens", TensorProto::INT64, {3}, {1, kTokens, d});
    b_.InitInt("shape_flat", TensorProto::INT64, {3}, {1, d, kTokens});
  }

  // Pre-norm transformer block on h (S8, [1, T, D]). Returns the block output (DQ, S8).
  std::string TransformerBlock(int64_t i, const std::string& h) {
    const std::string p = "t" + std::to_string(i) + "_";
    const int64_t d = o_.width;
    const QParams act = QParams::S8(0.05f);
    const std::string ln1 = LayerNorm(p + "ln1", h, d);
    const std::string q = Linear(p + "q", ln1, d, d, 0.05f);
    const std::string k = Linear(p + "k", ln1, d, d, 0.05f);
    const std::string v = Linear(p + "v", ln1, d, d, 0.05f);
    const std::string qh = ReshapeTranspose(p + "qh", q, "shape_heads", {0, 2, 1, 3}, act);
    const std::string kh = ReshapeTranspose(p + "kh", k, "shape_heads", {0, 2, 3, 1}, act);
    const std::string vh = ReshapeTranspose(p + "vh", v, "shape_heads", {0, 2, 1, 3}, act);
    const std::string sc = QDQ(Node("MatMul", {qh, kh}, p + "scores_out", {}, p + "scores"),
                               p + "scores", QParams::S8(0.1f));
    const std::string pr =
        QDQ(Node("Softmax", {sc}, p + "softmax_out", {A::AttrI("axis", -1)}, p + "softmax"),
            p + "softmax", QParams::S8(1.0f / 127.0f));
    const std::string ctx =
        QDQ(Node("MatMul", {pr, vh}, p + "ctx_out", {}, p + "ctx"), p + "ctx", act);
    const std::string merged =
        TransposeReshape(p + "merge", ctx, {0, 2, 1, 3}, "shape_tokens", act);
    const std::string o = Linear(p + "o", merged, d, d, 0.05f);
    const std::string h1 =
        QDQ(Node("Add", {h, o}, p + "add1_out", {}, p + "add1"), p + "add1", act);
    const std::string ln2 = LayerNorm(p + "ln2", h1, d);
    std::string f;
    if (i % 2 == 0) {  // GLU: up-projection to 2F, Split, Sigmoid(b) * a
      const std::string up = Linear(p + "up", ln2, d, 4 * d, 0.05f);
      b_.Node("Split", {up}, {p + "glu_a", p + "glu_b"},
              {A::AttrI("axis", -1), A::AttrI("num_outputs", 2)}, p + "split");
      ++nodes_;
      Node("Sigmoid", {p + "glu_b"}, p + "glu_g", {}, p + "sig");
      f = QDQ(Node("Mul", {p + "glu_a", p + "glu_g"}, p + "glu_out", {}, p + "mul"), p + "glu",
              act);
      f = Linear(p + "down", f, 2 * d, d, 0.05f);
    } else {  // SiLU: up-projection to F, Sigmoid(x) * x
      const std::string up = Linear(p + "up", ln2, d, 2 * d, 0.05f);
      Node("Sigmoid", {up}, p + "silu_s", {}, p + "sig");
      f = QDQ(Node("Mul", {up, p + "silu_s"}, p + "silu_out", {}, p + "mul"), p + "silu", act);
      f = Linear(p + "down", f, 2 * d, d, 0.05f);
    }
    return QDQ(Node("Add", {h1, f}, p + "add2_out", {}, p + "add2"), p + "add2", act);
  }

  void Build() {
    const int64_t c = o_.width;
    b_.Input("input", kFloat, {1, c, kHw, kHw});
    const QParams in_p = QParams::U8(0.02f, 128);
    std::string x = QDQ("input", "input", in_p);
    float s = in_p.scale[0];
    const bool cnn = o_.kind != "transformer";
    const bool tr = o_.kind != "cnn";
    const int64_t cnn_budget = cnn && tr ? o_.nodes / 2 : (cnn ? o_.nodes : 0);
    int64_t i = 0;
    while (cnn && (nodes_ < cnn_budget || i == 0)) x = CnnBlock(i++, x, s);
    if (!tr) {
      b_.Output(x, kFloat, {1, c, kHw, kHw});
      return;
    }
    // Bridge into tokens: 1x1 Conv -> Q/DQ S8 -> Reshape [1, C, T] -> Transpose [1, T, C].
    Shapes();
    const QParams act = QParams::S8(0.05f);
    x = QDQ(Conv("bridge", x, s, c, c, 1), "bridge", act);
    const std::string r = Node("Reshape", {x, "shape_flat"}, "tokens_r_out", {}, "tokens_r");
    x = QDQ(Node("Transpose", {r}, "tokens_t_out", {A::AttrInts("perm", {0, 2, 1})}, "tokens_t"),
            "tokens", act);
    int64_t j = 0;
    while (nodes_ < o_.nodes || j == 0) x = TransformerBlock(j++, x);
    b_.Output(x, kFloat, {1, kTokens, c});
  }

 private:
  const Options& o_;
  ModelBuilder b_;
  int64_t nodes_ = 0;
};

// Appends the INT8 initializer "bulk_weights" ([bytes]) to the model at `out`, stored at the end
// of its data file (4 KiB aligned) as a hole: the file grows by ftruncate, nothing is written.
void PadExternal(const std::string& out, const std::string& data_file, std::uint64_t bytes) {
  onnx::ModelProto m;
  {
    std::ifstream in(out, std::ios::binary);
    if (!m.ParseFromIstream(&in)) throw std::runtime_error("cannot read back " + out);
  }
  const std::filesystem::path data = std::filesystem::path(out).parent_path() / data_file;
  const std::uint64_t offset = (std::filesystem::file_size(data) + 4095) / 4096 * 4096;
  std::filesystem::resize_file(data, offset + bytes);
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("bulk_weights");
  t->set_data_type(TensorProto::INT8);
  t->add_dims(static_cast<std::int64_t>(bytes));
  t->set_data_location(TensorProto::EXTERNAL);
  for (const auto& [k, v] :
       std::vector<std::pair<std::string, std::string>>{{"location", data_file},
                                                        {"offset", std::to_string(offset)},
                                                        {"length", std::to_string(bytes)}}) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
  std::ofstream o(out, std::ios::binary | std::ios::trunc);
  if (!m.SerializeToOstream(&o)) throw std::runtime_error("cannot write " + out);
}

int Usage() {
  std::cerr
      << "usage: axqc-bench-gen --nodes N [--kind mixed|cnn|transformer] [--width C]\n"
         "                      [--external DATA_FILE] [--pad-external BYTES] [--violations]\n"
         "                      -o OUT.onnx\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("missing value after " + a);
      return argv[++i];
    };
    try {
      if (a == "--nodes") {
        o.nodes = std::stoll(next());
      } else if (a == "--kind") {
        o.kind = next();
      } else if (a == "--width") {
        o.width = std::stoll(next());
      } else if (a == "--external") {
        o.external = next();
      } else if (a == "--pad-external") {
        o.pad_external = std::stoull(next());
      } else if (a == "--violations") {
        o.violations = true;
      } else if (a == "-o") {
        o.out = next();
      } else {
        return Usage();
      }
    } catch (const std::exception& e) {
      std::cerr << "axqc-bench-gen: " << e.what() << "\n";
      return Usage();
    }
  }
  if (o.out.empty() || o.nodes < 1 || o.width < kHeads || o.width % kHeads != 0 ||
      (o.kind != "mixed" && o.kind != "cnn" && o.kind != "transformer")) {
    return Usage();
  }
  try {
    const auto t0 = std::chrono::steady_clock::now();
    Gen g(o);
    g.Build();
    if (o.external.empty()) {
      g.builder().Save(o.out);
    } else {
      g.builder().SaveWithExternalData(o.out, o.external);
      if (o.pad_external > 0) PadExternal(o.out, o.external, o.pad_external);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cerr << "axqc-bench-gen: " << o.out << ": " << g.nodes() << " nodes (" << o.kind
              << ", width " << o.width << (o.violations ? ", violations" : "")
              << (o.external.empty() ? "" : ", external data") << ") in " << s << " s\n";
  } catch (const std::exception& e) {
    std::cerr << "axqc-bench-gen: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
