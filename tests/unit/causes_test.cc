// Root causes and hints (core/src/causes.cc, docs/causes.md): each causal link of the table on a
// small crafted model, each hinted producer artifact on the real exports of
// tests/data/real_exports, and the invariants every report keeps (unique ids, causes that name
// findings of the report, no loops, nothing dropped).
#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "axqc/render.h"
#include "check_helpers.h"
#include "fix_models.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

// ------------------------------------------------------------------ helpers

const Finding* ById(const Report& r, const std::string& id) {
  for (const auto& f : r.findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

// The finding of `rule` whose primary node is `node` (the first one in report order).
const Finding* Primary(const Report& r, const std::string& rule, const std::string& node) {
  for (const auto& f : r.findings) {
    if (f.rule == rule && !f.nodes.empty() && f.nodes.front() == node) return &f;
  }
  return nullptr;
}

// The root the cause chain of `f` ends at.
const Finding* RootOf(const Report& r, const Finding& f) {
  const auto roots = RootOfEach(r);
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    if (&r.findings[i] == &f) return &r.findings[roots[i]];
  }
  return nullptr;
}

std::string Causes(const Report& r) {
  std::string s;
  for (const auto& f : r.findings) {
    s += "  " + f.id + " " + f.rule + " @" + (f.nodes.empty() ? "-" : f.nodes.front()) +
         (f.cause.empty() ? "" : " <- " + f.cause) +
         (f.hint.id.empty() ? "" : " [" + f.hint.id + "]") + "\n";
  }
  return s;
}

// `rule` at `node` is caused (directly) by `cause_rule` at `cause_node`.
#define EXPECT_CAUSED_BY(report, rule_, node_, cause_rule_, cause_node_)                \
  do {                                                                                  \
    const auto& r_ = (report);                                                          \
    const Finding* f_ = Primary(r_, rule_, node_);                                      \
    const Finding* k_ = Primary(r_, cause_rule_, cause_node_);                          \
    ASSERT_NE(f_, nullptr) << rule_ << " @" << node_ << "\n" << Causes(r_);             \
    ASSERT_NE(k_, nullptr) << cause_rule_ << " @" << cause_node_ << "\n" << Causes(r_); \
    EXPECT_EQ(f_->cause, k_->id) << rule_ << " @" << node_ << " should be caused by "   \
                                 << cause_rule_ << " @" << cause_node_ << "\n"          \
                                 << Causes(r_);                                         \
  } while (0)

// `rule` at `node` is a root cause with hint `hint` ("" = none).
#define EXPECT_ROOT(report, rule_, node_, hint_)                                               \
  do {                                                                                         \
    const auto& r_ = (report);                                                                 \
    const Finding* f_ = Primary(r_, rule_, node_);                                             \
    ASSERT_NE(f_, nullptr) << rule_ << " @" << node_ << "\n" << Causes(r_);                    \
    EXPECT_EQ(f_->cause, "") << rule_ << " @" << node_ << " should be a root\n" << Causes(r_); \
    EXPECT_EQ(f_->hint.id, hint_) << rule_ << " @" << node_ << "\n" << Causes(r_);             \
  } while (0)

// Every report: ids unique and "<fingerprint>:<n>", causes name findings of the report, chains
// end, hints only on roots and with their text.
void ExpectWellFormed(const Report& r) {
  std::set<std::string> ids;
  for (const auto& f : r.findings) {
    EXPECT_EQ(f.id.rfind(f.fingerprint + ":", 0), 0u) << f.id;
    EXPECT_TRUE(ids.insert(f.id).second) << "duplicate id " << f.id;
  }
  const auto roots = RootOfEach(r);
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    const auto& f = r.findings[i];
    if (!f.cause.empty()) {
      EXPECT_NE(ById(r, f.cause), nullptr) << f.id << " names an unknown cause " << f.cause;
      EXPECT_NE(roots[i], i) << f.id << " is in a loop";
      EXPECT_TRUE(f.hint.id.empty()) << "a consequence carries a hint: " << f.id;
    }
    EXPECT_TRUE(r.findings[roots[i]].cause.empty());
    if (!f.hint.id.empty()) {
      EXPECT_FALSE(f.hint.text.empty());
      EXPECT_FALSE(f.hint.title.empty());
    }
  }
  std::size_t grouped = 0;
  for (const auto& g : GroupCauses(r)) grouped += g.roots.size() + g.consequences.size();
  EXPECT_EQ(grouped, r.findings.size()) << "every finding belongs to exactly one cause";
}

Report Check(const ModelBuilder& b, bool cv = false) {
  Report r = RunCheck(b, cv);
  ExpectWellFormed(r);
  return r;
}

Report CheckProto(const onnx::ModelProto& m, bool cv = false) {
  CheckOptions o;
  o.check_value = cv;
  std::string bytes;
  m.SerializeToString(&bytes);
  Report r = CheckBytes(bytes, "test.onnx", o);
  ExpectWellFormed(r);
  return r;
}

// x -> Q/DQ -> Sigmoid -> Q/DQ -> y (names x_q, x_dq, sig, y_q, y_dq).
ModelBuilder Unary(const QParams& in = QParams::U8(), const QParams& out = QParams::U8(0.004f, 0)) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", in);
  b.Node("Sigmoid", {x}, {"s"}, {}, "sig");
  b.Output(b.QDQ("s", "y", out));
  return b;
}

onnx::AttributeProto ConstValue(float v) {
  return ModelBuilder::AttrT("value", ModelBuilder::MakeF32("v", {}, {v}));
}

// ------------------------------------------------------------------ causal links

TEST(CausalLinks, ConstantScaleCausesScaleNotInitializer) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  b.Node("Constant", {}, {"sc"}, {ConstValue(0.02f)}, "scale_const");
  b.InitInt("zp", TP::UINT8, {}, {128});
  b.Node("QuantizeLinear", {"x", "sc", "zp"}, {"xq"}, {}, "xq");
  b.Node("DequantizeLinear", {"xq", "sc", "zp"}, {"xd"}, {}, "xd");
  b.Node("Sigmoid", {"xd"}, {"s"}, {}, "sig");
  b.Output(b.QDQ("s", "y", QParams::U8(0.004f, 0)));
  b.DropValueInfo("sc");  // as a raw export: no value_info for the Constant's output
  const auto r = Check(b, true);
  EXPECT_ROOT(r, "onnx/constant-node", "scale_const", "qparams-as-numbers");
  EXPECT_EQ(Primary(r, "onnx/constant-node", "scale_const")->hint.rewrite,
            "constant-to-initializer");
  EXPECT_CAUSED_BY(r, "qdq/scale-not-initializer", "xq", "onnx/constant-node", "scale_const");
  EXPECT_CAUSED_BY(r, "qdq/scale-not-initializer", "xd", "onnx/constant-node", "scale_const");
  // -c: the Constant's output has no value_info; folding the Constant removes that too.
  EXPECT_CAUSED_BY(r, "onnx/value-info-missing", "scale_const", "onnx/constant-node",
                   "scale_const");
  EXPECT_EQ(r.summary.causes, 1u) << Causes(r);
  EXPECT_EQ(r.summary.errors, 4u);
}

TEST(CausalLinks, ConstantBehindIdentityStillFeedsTheScale) {
  ModelBuilder b = Unary();
  b.Node("Constant", {}, {"c"}, {ConstValue(0.02f)}, "scale_const");
  b.Node("Identity", {"c"}, {"c_id"}, {}, "scale_id");
  b.InitInt("zp2", TP::UINT8, {}, {0});
  b.Node("QuantizeLinear", {"s", "c_id", "zp2"}, {"q2"}, {}, "q2");
  b.Node("DequantizeLinear", {"q2", "c_id", "zp2"}, {"dq2"}, {}, "dq2");
  b.Output("dq2");
  const auto r = Check(b);
  EXPECT_CAUSED_BY(r, "qdq/scale-not-initializer", "q2", "onnx/constant-node", "scale_const");
}

TEST(CausalLinks, ConstantClipBoundCausesClipDynamic) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8());
  b.Node("Constant", {}, {"lo"}, {ConstValue(0.0f)}, "lo_const");
  b.InitF32("hi", {}, {6.0f});
  b.Node("Clip", {x, "lo", "hi"}, {"c"}, {}, "clip");
  b.Output(b.QDQ("c", "y", QParams::U8(0.03f, 0)));
  const auto r = Check(b);
  EXPECT_ROOT(r, "onnx/constant-node", "lo_const", "constant-node");
  EXPECT_CAUSED_BY(r, "op/clip-dynamic", "clip", "onnx/constant-node", "lo_const");
  EXPECT_EQ(r.summary.causes, 1u) << Causes(r);
}

TEST(CausalLinks, ConstantBiasCausesConstFormButConstantDataDoesNot) {
  // A bias from a Constant: an FP32 initializer would be allowed, so the Constant is the cause.
  ConvOpts o;
  o.bias = false;
  ModelBuilder b = ConvModel(o);
  onnx::ModelProto m = b.Build();
  auto* conv = m.mutable_graph()->mutable_node(0);
  for (int i = 0; i < m.graph().node_size(); ++i) {
    if (m.graph().node(i).name() == "conv") conv = m.mutable_graph()->mutable_node(i);
  }
  conv->add_input("bias_c");
  auto* k = m.mutable_graph()->add_node();
  k->set_op_type("Constant");
  k->set_name("bias_const");
  k->add_output("bias_c");
  *k->add_attribute() =
      ModelBuilder::AttrT("value", ModelBuilder::MakeF32("v", {8}, std::vector<float>(8, 0.0f)));
  // Keep the graph topologically sorted: the Constant first.
  auto* nodes = m.mutable_graph()->mutable_node();
  std::rotate(nodes->rbegin(), nodes->rbegin() + 1, nodes->rend());
  const auto r = CheckProto(m);
  EXPECT_CAUSED_BY(r, "qdq/const-form", "conv", "onnx/constant-node", "bias_const");

  // Constant data into a quant-only data input: an initializer would not do either, so the
  // const-form finding is its own root.
  ModelBuilder d;
  d.Input("x", TP::FLOAT, {1, 4});
  auto x = d.QDQ("x", "x", QParams::U8());
  d.Node("Constant", {}, {"k"}, {ConstValue(2.0f)}, "data_const");
  d.Node("Mul", {x, "k"}, {"m"}, {}, "mul");
  d.Output(d.QDQ("m", "y", QParams::U8(0.04f, 0)));
  const auto rd = Check(d);
  EXPECT_ROOT(rd, "qdq/const-form", "mul", "");
  EXPECT_ROOT(rd, "onnx/constant-node", "data_const", "constant-node");
  EXPECT_EQ(rd.summary.causes, 2u) << Causes(rd);
}

TEST(CausalLinks, ConvReluSignedOutputIsOneEdge) {
  // Conv -> Relu -> Q(S8): the Relu cannot be the Conv's fusion tail (signed output), so the
  // Conv output is unquantized: op/relu-form at the Relu is the cause.
  ConvOpts o;
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8());
  auto w = b.WeightQDQ("w", {8, 4, 3, 3}, QParams::PerChannel(QType::kS8, Scales(8), 0));
  b.Node("Conv", {x, w}, {"conv_out"}, {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})}, "conv");
  b.Node("Relu", {"conv_out"}, {"r"}, {}, "relu");
  b.Output(b.QDQ("r", "y", QParams::S8(0.05f)));
  const auto r = Check(b);
  EXPECT_ROOT(r, "op/relu-form", "relu", "");
  EXPECT_CAUSED_BY(r, "op/output-not-quantized", "conv", "op/relu-form", "relu");
  EXPECT_EQ(r.summary.causes, 1u) << Causes(r);
}

TEST(CausalLinks, CastBetweenQAndDqIsOneEdge) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto q = b.Quantize("x", "x", QParams::U8());
  b.Node("Cast", {q}, {"qc"}, {ModelBuilder::AttrI("to", TP::UINT8)}, "cast");
  auto dq = b.Dequantize("qc", "x", QParams::U8());
  b.Node("Sigmoid", {dq}, {"s"}, {}, "sig");
  b.Output(b.QDQ("s", "y", QParams::U8(0.004f, 0)));
  const auto r = Check(b);
  EXPECT_ROOT(r, "qdq/q-fanout", "x_q", "");
  EXPECT_CAUSED_BY(r, "qdq/dq-input-source", "x_dq", "qdq/q-fanout", "x_q");
}

TEST(CausalLinks, U4EdgeJudgedByProducerAndConsumerIsOneCause) {
  // Sigmoid -> Q/DQ(U4) -> Sigmoid: the producer's output type and the consumer's input type.
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8());
  b.Node("Sigmoid", {x}, {"s"}, {}, "sig");
  auto m = b.QDQ("s", "mid", QParams::U4(0.1f, 0));
  b.Node("Sigmoid", {m}, {"s2"}, {}, "sig2");
  b.Output(b.QDQ("s2", "y", QParams::U8(0.004f, 0)));
  const auto r = Check(b);
  std::vector<const Finding*> at;
  for (const auto& f : r.findings) {
    if (f.rule == "role/activation-type" && f.nodes.front() == "mid_dq") at.push_back(&f);
  }
  ASSERT_EQ(at.size(), 2u) << Causes(r);
  EXPECT_EQ(at[0]->cause, "");
  EXPECT_EQ(at[1]->cause, at[0]->id) << Causes(r);
  EXPECT_EQ(r.summary.causes, 1u) << Causes(r);
}

TEST(CausalLinks, PairMismatchCausesPairValueMismatch) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto q = b.Quantize("x", "xa", QParams::U8(0.02f, 128));
  auto dq = b.Dequantize(q, "xb", QParams::PerChannel(QType::kU8, {0.01f, 0.02f, 0.03f, 0.04f}, 1));
  b.Node("Sigmoid", {dq}, {"s"}, {}, "sig");
  b.Output(b.QDQ("s", "y", QParams::U8(0.004f, 0)));
  const auto r = Check(b, true);
  if (Primary(r, "qdq/pair-value-mismatch", "xb_dq") != nullptr) {
    EXPECT_CAUSED_BY(r, "qdq/pair-value-mismatch", "xb_dq", "qdq/pair-mismatch", "xb_dq");
  }
  EXPECT_ROOT(r, "qdq/pair-mismatch", "xb_dq", "");
}

// ------------------------------------------------------------------ hints on crafted models

TEST(Hints, DirectRequantizeIsTheDropoutArtifact) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8());
  b.Node("Sigmoid", {x}, {"s"}, {}, "sig");
  auto a = b.QDQ("s", "a", QParams::U8(0.004f, 0));
  auto c = b.QDQ(a, "c", QParams::U8(0.008f, 0));  // DQ(a) -> Q(c): a removed Dropout
  b.Node("Sigmoid", {c}, {"s2"}, {}, "sig2");
  b.Output(b.QDQ("s2", "y", QParams::U8(0.004f, 0)));
  const auto r = Check(b);
  const Finding* f = nullptr;
  for (const auto& x2 : r.findings) {
    if (x2.rule == "qdq/requantize-identity") f = &x2;
  }
  ASSERT_NE(f, nullptr) << Causes(r);
  EXPECT_EQ(f->cause, "");
  EXPECT_EQ(f->hint.id, "dropout-removed");
  EXPECT_EQ(f->hint.rewrite, "requantize-identity");
}

TEST(Hints, DedupIdentityScale) {
  auto b = Unary();
  b.InitF32("s_src", {}, {0.02f});
  b.Node("Identity", {"s_src"}, {"s_id"}, {}, "scale_id");
  b.InitInt("zp2", TP::UINT8, {}, {0});
  b.Node("QuantizeLinear", {"s", "s_id", "zp2"}, {"q2"}, {}, "q2");
  b.Node("DequantizeLinear", {"q2", "s_id", "zp2"}, {"dq2"}, {}, "dq2");
  b.Output("dq2");
  const auto r = Check(b);
  EXPECT_ROOT(r, "qdq/scale-not-initializer", "q2", "torch-dedup-identity");
  EXPECT_EQ(Primary(r, "qdq/scale-not-initializer", "q2")->hint.rewrite, "identity-of-initializer");
  // Both ends of one de-duplicated scale are one cause.
  EXPECT_EQ(r.summary.causes, 1u) << Causes(r);
}

// torch's reshape/expand with -1 (fixmodels::TorchShapeArithmetic): every uncovered node of the
// integer arithmetic folds under the Shape or Size it starts from, with the shape-subgraph hint,
// also the Range over initializers that feeds it.
TEST(Hints, TorchShapeArithmeticFoldsUnderItsShapeNodes) {
  const auto r = CheckProto(fixmodels::TorchShapeArithmetic());
  EXPECT_EQ(r.verdict, Verdict::kNonConformant);
  EXPECT_ROOT(r, "closure/uncovered-node", "shape", "shape-subgraph");
  EXPECT_EQ(Primary(r, "closure/uncovered-node", "shape")->hint.rewrite, "reshape-copy-dims");
  for (const char* n : {"shape_size", "constant_of_shape", "where"}) {
    EXPECT_CAUSED_BY(r, "closure/uncovered-node", n, "closure/uncovered-node", "shape");
  }
  // The batch size reaches the reshape target through Tile and Concat: the first region's.
  EXPECT_CAUSED_BY(r, "closure/uncovered-node", "where_target", "closure/uncovered-node", "shape");
  EXPECT_ROOT(r, "closure/uncovered-node", "shape_tokens", "shape-subgraph");
  for (const char* n : {"range", "reduce_prod", "mod"}) {
    EXPECT_CAUSED_BY(r, "closure/uncovered-node", n, "closure/uncovered-node", "shape_tokens");
  }
  EXPECT_ROOT(r, "closure/uncovered-node", "size_tokens", "shape-subgraph");
  // Nothing but the three anchors is a root, and the three are one cause (rule and hint).
  std::size_t roots = 0;
  for (const auto& f : r.findings) roots += f.cause.empty() ? 1 : 0;
  EXPECT_EQ(roots, 3u) << Causes(r);
  EXPECT_EQ(r.summary.causes, 1u) << Causes(r);
}

TEST(Hints, QdqInsideModelLocalFunction) {
  const auto r = CheckProto(fixmodels::LocalFunctions());
  bool hinted = false;
  for (const auto& f : r.findings) {
    if (!f.nodes.empty() && f.nodes.front() == "call1") {
      EXPECT_EQ(f.cause, "") << Causes(r);
      EXPECT_EQ(f.hint.id, "qdq-in-function") << Causes(r);
      EXPECT_EQ(f.hint.rewrite, "inline-functions");
      hinted = true;
    }
  }
  EXPECT_TRUE(hinted) << Causes(r);
}

TEST(Hints, QOperatorFormat) {
  ModelBuilder b;
  b.Input("x", TP::UINT8, {1, 4});
  b.InitF32("sx", {}, {0.02f});
  b.InitInt("zx", TP::UINT8, {}, {128});
  b.InitInt("w", TP::INT8, {4, 4}, std::vector<int64_t>(16, 1));
  b.InitF32("sw", {}, {0.01f});
  b.InitInt("zw", TP::INT8, {}, {0});
  b.InitF32("sy", {}, {0.05f});
  b.InitInt("zy", TP::UINT8, {}, {128});
  b.Node("QLinearMatMul", {"x", "sx", "zx", "w", "sw", "zw", "sy", "zy"}, {"y"}, {}, "qmm");
  b.Output("y", TP::UINT8, {1, 4});
  const auto r = Check(b);
  bool hinted = false;
  for (const auto& f : r.findings) {
    if (!f.nodes.empty() && f.nodes.front() == "qmm" && f.cause.empty()) {
      EXPECT_EQ(f.hint.id, "qoperator-format") << Causes(r);
      hinted = true;
    }
  }
  EXPECT_TRUE(hinted) << Causes(r);
}

// ------------------------------------------------------------------ the real exports

fs::path DataDir() { return fs::path(AXQC_SOURCE_DIR) / "tests" / "data" / "real_exports"; }

Report Real(const std::string& name, bool cv) {
  CheckOptions o;
  o.check_value = cv;
  Report r = CheckFile((DataDir() / (name + ".onnx")).string(), o);
  ExpectWellFormed(r);
  return r;
}

TEST(RealExportCauses, EveryModelWellFormedAndAtMostTenCauses) {
  for (const auto& e : fs::directory_iterator(DataDir())) {
    if (e.path().extension() != ".onnx") continue;
    for (bool cv : {false, true}) {
      SCOPED_TRACE(e.path().filename().string() + (cv ? " -c" : ""));
      const Report r = Real(e.path().stem().string(), cv);
      EXPECT_LE(r.summary.causes, 10u) << Causes(r);
      EXPECT_EQ(r.summary.causes == 0, r.summary.errors + r.summary.warnings == 0);
    }
  }
}

// The acceptance case of issue 21: a raw fake-quant ViT with Python-number qparams.
TEST(RealExportCauses, VitNumbersOp17FewCausesEachWithAHint) {
  for (bool cv : {false, true}) {
    SCOPED_TRACE(cv ? "-c" : "without -c");
    const Report r = Real("vit_manual_numbers_op17", cv);
    EXPECT_EQ(r.summary.errors, cv ? 472u : 212u);
    EXPECT_EQ(r.summary.causes, cv ? 5u : 4u) << Causes(r);
    for (const auto& g : GroupCauses(r)) {
      EXPECT_FALSE(g.hint.id.empty()) << "cause without a hint: " << g.key;
    }
    EXPECT_ROOT(r, "onnx/constant-node", "/fq_in/Constant_1", "qparams-as-numbers");
    EXPECT_CAUSED_BY(r, "qdq/scale-not-initializer", "/fq_in/QuantizeLinear", "onnx/constant-node",
                     "/fq_in/Constant_1");
    EXPECT_ROOT(r, "closure/uncovered-node", "/Shape", "shape-subgraph");
    EXPECT_EQ(Primary(r, "closure/uncovered-node", "/Shape")->hint.rewrite, "reshape-copy-dims");
    EXPECT_CAUSED_BY(r, "onnx/constant-node", "/Constant", "closure/uncovered-node", "/Shape");
    EXPECT_ROOT(r, "op/output-not-quantized", "/Div", "gelu-decomposed");
    EXPECT_CAUSED_BY(r, "op/output-not-quantized", "/Erf", "op/output-not-quantized", "/Div");
    EXPECT_CAUSED_BY(r, "qdq/const-form", "/Add_2", "op/output-not-quantized", "/Div");
    EXPECT_ROOT(r, "op/static-param", "/ln2/LayerNormalization", "torch-dedup-identity");
    if (cv) {
      EXPECT_CAUSED_BY(r, "onnx/value-info-missing", "/fq_in/Constant", "onnx/constant-node",
                       "/fq_in/Constant");
      EXPECT_CAUSED_BY(r, "onnx/value-info-missing", "/Erf", "op/output-not-quantized", "/Div");
    }
  }
}

TEST(RealExportCauses, VitNumbersOp13DecomposedLayerNorm) {
  for (bool cv : {false, true}) {
    SCOPED_TRACE(cv ? "-c" : "without -c");
    const Report r = Real("vit_manual_numbers_op13", cv);
    EXPECT_EQ(r.summary.causes, cv ? 5u : 4u) << Causes(r);
    for (const auto& g : GroupCauses(r)) {
      EXPECT_FALSE(g.hint.id.empty()) << "cause without a hint: " << g.key;
    }
    EXPECT_ROOT(r, "op/output-not-quantized", "/ln1/ReduceMean", "layernorm-decomposed");
    EXPECT_CAUSED_BY(r, "op/static-param", "/ln1/Pow", "onnx/constant-node", "/ln1/Constant");
    EXPECT_EQ(RootOf(r, *Primary(r, "op/static-param", "/ln1/Pow")),
              Primary(r, "op/output-not-quantized", "/ln1/ReduceMean"));
    EXPECT_CAUSED_BY(r, "op/input-not-quantized", "/ln2/Mul", "op/output-not-quantized",
                     "/ln2/ReduceMean");
  }
}

TEST(RealExportCauses, Relu6LayerIsOneCause) {
  const Report r = Real("manual_cnn_buffers_op17", false);
  EXPECT_ROOT(r, "op/relu-form", "/Relu_1", "relu6-as-relu-clip");
  EXPECT_CAUSED_BY(r, "op/relu-form", "/Clip", "op/relu-form", "/Relu_1");
  // Each bound's finding is caused by the Constant it names (nodes[1]).
  std::size_t bounds = 0;
  for (const auto& f : r.findings) {
    if (f.rule != "op/clip-dynamic") continue;
    ++bounds;
    ASSERT_EQ(f.nodes.size(), 2u);
    EXPECT_EQ(f.cause, Primary(r, "onnx/constant-node", f.nodes[1])->id) << Causes(r);
  }
  EXPECT_EQ(bounds, 2u);
  EXPECT_CAUSED_BY(r, "onnx/constant-node", "/Constant", "op/relu-form", "/Relu_1");
  EXPECT_CAUSED_BY(r, "onnx/constant-node", "/Constant_1", "op/relu-form", "/Relu_1");
  EXPECT_EQ(r.summary.errors, 6u);
  EXPECT_EQ(r.summary.causes, 1u) << Causes(r);
}

TEST(RealExportCauses, HardSwishAtOpset13) {
  const Report r = Real("manual_cnn_buffers_op13", false);
  EXPECT_ROOT(r, "op/output-not-quantized", "/HardSigmoid", "hardswish-as-hardsigmoid-mul");
  EXPECT_EQ(r.summary.causes, 2u) << Causes(r);
}

TEST(RealExportCauses, DedupIdentityScalesOfTheBuffersExport) {
  const Report r = Real("vit_manual_buffers_op17", false);
  EXPECT_ROOT(r, "qdq/scale-not-initializer", "/fc2/fq_b/QuantizeLinear", "torch-dedup-identity");
  EXPECT_ROOT(r, "op/static-param", "/ln2/LayerNormalization", "torch-dedup-identity");
  EXPECT_EQ(r.summary.causes, 3u) << Causes(r);
}

TEST(RealExportCauses, EagerQatConvBnAndUnobservedPool) {
  const Report r = Real("eager_qat_cnn_op13", false);
  EXPECT_ROOT(r, "op/output-not-quantized", "/conv/Conv", "qat-conv-bn-unfolded");
  EXPECT_CAUSED_BY(r, "op/output-not-quantized", "/conv/Div", "op/output-not-quantized",
                   "/conv/Conv");
  // GlobalAveragePool -> Flatten -> Gemm: one float edge through a pass-through node.
  EXPECT_ROOT(r, "op/output-not-quantized", "/pool/GlobalAveragePool", "");
  EXPECT_CAUSED_BY(r, "op/input-not-quantized", "/fc/Gemm", "op/output-not-quantized",
                   "/pool/GlobalAveragePool");
  EXPECT_ROOT(r, "op/output-not-quantized", "/hs/HardSigmoid", "hardswish-as-hardsigmoid-mul");
}

TEST(RealExportCauses, FxTransformerLinearAndSlices) {
  const Report r = Real("fx_qat_transformer_op13", false);
  EXPECT_ROOT(r, "op/passive-params", "/qkv/Transpose", "linear-as-matmul");
  EXPECT_CAUSED_BY(r, "op/output-not-quantized", "/qkv/MatMul", "op/passive-params",
                   "/qkv/Transpose");
  bool split = false;
  for (const auto& f : r.findings) split |= f.hint.id == "split-as-slices";
  EXPECT_TRUE(split) << Causes(r);
  EXPECT_ROOT(r, "op/output-not-quantized", "/act/Div", "gelu-decomposed");
}

TEST(RealExportCauses, DefectsAreTheirOwnCauses) {
  const Report r = Real("defect_missing_qdq_op17", false);
  EXPECT_ROOT(r, "op/relu-form", "/Relu_1", "");
  EXPECT_EQ(r.summary.causes, 1u);
  const Report rc = Real("defect_missing_qdq_op17", true);
  EXPECT_EQ(rc.summary.causes, 2u) << Causes(rc);  // + the missing value_info
}

// ------------------------------------------------------------------ rendering

TEST(CausesRender, TextFoldsConsequencesUnderTheirCause) {
  const Report r = Real("manual_cnn_numbers_op17", false);
  const std::string t = RenderText(r);
  EXPECT_NE(t.find("NON_CONFORMANT  (2 causes; 58 errors, 0 warnings, 0 info)"), std::string::npos)
      << t;
  const auto c1 = t.find(
      "cause 1 of 2: qparams given as Python numbers  (52 findings: 26 at the "
      "root, 26 consequences)");
  const auto c2 = t.find(
      "cause 2 of 2: relu6 exported as Relu -> Clip  (6 findings: 1 at the "
      "root, 5 consequences)");
  ASSERT_NE(c1, std::string::npos) << t;
  ASSERT_NE(c2, std::string::npos) << t;
  EXPECT_LT(c1, c2);
  // The consequences are folded under their cause, every rule ID is still there.
  const auto folded = t.find("  caused by it:\n    error qdq/scale-not-initializer [3.1] x26", c1);
  EXPECT_NE(folded, std::string::npos) << t;
  EXPECT_LT(folded, c2);
  for (const auto& [rule, n] : r.summary.by_rule) {
    EXPECT_NE(t.find(rule), std::string::npos) << rule << " missing from the text";
  }
  EXPECT_NE(t.find("hint [qparams-as-numbers]: "), std::string::npos);
  EXPECT_NE(t.find("--only constant-to-initializer"), std::string::npos);
  EXPECT_NE(t.find("hint [relu6-as-relu-clip]: "), std::string::npos);
}

TEST(CausesRender, JsonKeepsEveryFindingWithIdCauseAndHint) {
  const Report r = Real("vit_manual_numbers_op17", true);
  const auto j = nlohmann::json::parse(RenderJson(r));
  ASSERT_EQ(j["findings"].size(), r.findings.size());
  EXPECT_EQ(j["summary"]["causes"], 5);
  std::size_t roots = 0;
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    const auto& jf = j["findings"][i];
    EXPECT_EQ(jf["id"], r.findings[i].id);
    if (r.findings[i].cause.empty()) {
      ++roots;
      EXPECT_TRUE(jf["cause"].is_null());
    } else {
      EXPECT_EQ(jf["cause"], r.findings[i].cause);
    }
    if (r.findings[i].hint.id.empty()) {
      EXPECT_TRUE(jf["hint"].is_null());
    } else {
      EXPECT_EQ(jf["hint"]["id"], r.findings[i].hint.id);
      EXPECT_EQ(jf["hint"]["text"], r.findings[i].hint.text);
    }
  }
  EXPECT_GT(roots, 0u);
  // The streamed writer and the json tree agree, and reading it back keeps the causes.
  EXPECT_EQ(j, ReportToJson(r));
  const Report back = ReportFromJson(j);
  ASSERT_EQ(back.findings.size(), r.findings.size());
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    EXPECT_EQ(back.findings[i].id, r.findings[i].id);
    EXPECT_EQ(back.findings[i].cause, r.findings[i].cause);
    EXPECT_EQ(back.findings[i].hint.id, r.findings[i].hint.id);
    EXPECT_EQ(back.findings[i].hint.rewrite, r.findings[i].hint.rewrite);
  }
  EXPECT_EQ(back.summary.causes, r.summary.causes);
}

TEST(CausesRender, SarifNamesTheCauseAsARelatedLocation) {
  const Report r = Real("manual_cnn_buffers_op17", false);
  const auto s = SarifJson(std::span<const Report>(&r, 1));
  bool related = false;
  for (const auto& res : s["runs"][0]["results"]) {
    if (res["ruleId"] == "op/clip-dynamic") {
      ASSERT_TRUE(res.contains("relatedLocations")) << res.dump(2);
      // The related location is the Constant the finding names as its second node.
      EXPECT_EQ(res["relatedLocations"][0]["logicalLocations"][0]["name"],
                res["properties"]["nodes"][1]);
      EXPECT_TRUE(res["properties"].contains("cause"));
      related = true;
    }
    if (res["ruleId"] == "op/relu-form" &&
        res["locations"][0]["logicalLocations"][0]["name"] == "/Relu_1") {
      EXPECT_EQ(res["properties"]["hint"]["id"], "relu6-as-relu-clip");
    }
  }
  EXPECT_TRUE(related);
}

}  // namespace
}  // namespace axqc::test
