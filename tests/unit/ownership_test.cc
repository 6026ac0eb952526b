// The ownership engine (2.3, 6.1-6.7; RULES.md readings 1, 2, 4): every pattern with a
// conformant instance, a Q/DQ inside, an escaping internal tensor and an overlapping smaller
// pattern; passive subgraphs and the Split pattern (5.10, 5.11); Relu/Clip forms (5.15, 5.16);
// ambiguous overlaps, uncovered/unsupported nodes, orphan Q/DQ and the not_applicable shapes.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "check_helpers.h"

namespace axqc::test {
namespace {

using modelgen::Storage;

// ------------------------------------------------------------------ report helpers

// The unit of the ownership map that contains `node` (main nodes or tails), or nullptr.
const UnitInfo* UnitWith(const Report& r, const std::string& node) {
  for (const auto& u : r.units) {
    if (std::find(u.nodes.begin(), u.nodes.end(), node) != u.nodes.end()) return &u;
  }
  return nullptr;
}

std::size_t KindCount(const Report& r, const std::string& kind) {
  auto it = r.summary.units_by_kind.find(kind);
  return it == r.summary.units_by_kind.end() ? 0 : it->second;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string Units(const Report& r) {
  std::string s;
  for (const auto& u : r.units) {
    s += "  unit " + std::to_string(u.id) + " " + u.kind + " (" + u.mode + "):";
    for (const auto& n : u.nodes) s += " " + n;
    s += " | in:";
    for (const auto& n : u.input_qdq) s += " " + n;
    s += " | out:";
    for (const auto& n : u.output_qdq) s += " " + n;
    s += "\n";
  }
  return s;
}

// Asserts the unit containing `node` has `kind` (and, if non-empty, contains every `with`).
#define EXPECT_UNIT(report, node_, kind_, ...)                                              \
  do {                                                                                      \
    const auto* u_ = UnitWith(report, node_);                                               \
    ASSERT_NE(u_, nullptr) << "no unit owns " << node_ << "\n" << Units(report);            \
    EXPECT_EQ(u_->kind, kind_) << "unit of " << node_ << "\n" << Units(report);             \
    for (const std::string& w_ : std::vector<std::string>{__VA_ARGS__}) {                   \
      EXPECT_TRUE(Contains(u_->nodes, w_)) << w_ << " not in the unit of " << node_ << "\n" \
                                           << Units(report);                                \
    }                                                                                       \
  } while (0)

// Like EXPECT_FINDING, for a node with several findings of one rule: some finding of `rule` at
// `node` has a message containing `needle`.
#define EXPECT_FINDING_MSG(report, rule_, node_, needle_)                                        \
  do {                                                                                           \
    bool found_ = false;                                                                         \
    for (const auto& f_ : (report).findings) {                                                   \
      if (f_.rule == rule_ && Contains(f_.nodes, node_) &&                                       \
          f_.message.find(needle_) != std::string::npos) {                                       \
        found_ = true;                                                                           \
        EXPECT_EQ(f_.severity, ::axqc::FindRule(rule_)->severity);                               \
      }                                                                                          \
    }                                                                                            \
    EXPECT_TRUE(found_) << "expected " << rule_ << " at " << node_ << " mentioning '" << needle_ \
                        << "'\n"                                                                 \
                        << Dump(report);                                                         \
  } while (0)

#define EXPECT_VERDICT(report, v) EXPECT_EQ((report).verdict, v) << Dump(report) << Units(report)

// ------------------------------------------------------------------ model pieces

const QParams kIn = QParams::U8(0.02f, 128);

// x [1,4,8,8] -> Q/DQ "x" (U8 0.02/128); returns the DQ output.
std::string QInput(ModelBuilder& b, const std::string& name = "x",
                   std::vector<int64_t> shape = {1, 4, 8, 8}, const QParams& p = kIn) {
  b.Input(name, TP::FLOAT, shape);
  return b.QDQ(name, name, p);
}

// x -> Q/DQ -> Conv/ConvTranspose "conv" (8 output channels, S8 per-channel weight, INT32 bias
// through DQ) -> "conv_out". Returns "conv_out".
std::string ConvHead(ModelBuilder& b, const std::string& op = "Conv") {
  auto x = QInput(b);
  const bool t = op == "ConvTranspose";
  auto wq = QParams::PerChannel(QType::kS8, Scales(8), t ? 1 : 0);
  auto w =
      b.WeightQDQ("w", t ? std::vector<int64_t>{4, 8, 3, 3} : std::vector<int64_t>{8, 4, 3, 3}, wq);
  auto bias = b.BiasInt32DQ("b", 8, modelgen::BiasScales(kIn.scale[0], wq.scale));
  b.Node(op, {x, w, bias}, {"conv_out"}, {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})}, "conv");
  return "conv_out";
}

// BatchNormalization `name` over 8 channels with FP32 initializer parameters.
std::string AddBN(ModelBuilder& b, const std::string& in, const std::string& name = "bn") {
  b.InitF32Fill(name + "_scale", {8}, 1.0f);
  b.InitF32Fill(name + "_bias", {8}, 0.0f);
  b.InitF32Fill(name + "_mean", {8}, 0.0f);
  b.InitF32Fill(name + "_var", {8}, 1.0f);
  b.Node("BatchNormalization", {in, name + "_scale", name + "_bias", name + "_mean", name + "_var"},
         {name + "_out"}, {}, name);
  return name + "_out";
}

// Clip `name` with static FP32 initializer bounds [0, 6].
std::string AddClip(ModelBuilder& b, const std::string& in, const std::string& name = "clip") {
  b.InitF32(name + "_min", {}, {0.0f});
  b.InitF32(name + "_max", {}, {6.0f});
  b.Node("Clip", {in, name + "_min", name + "_max"}, {name + "_out"}, {}, name);
  return name + "_out";
}

// Output through Q/DQ `prefix` (U8 zp 0 by default) as a graph output.
void QOutput(ModelBuilder& b, const std::string& t, const std::string& prefix = "y",
             const QParams& p = QParams::U8(0.05f, 0)) {
  b.Output(b.QDQ(t, prefix, p));
}

// A separate conformant quantized block (x2 -> Q/DQ -> Sigmoid "side_sig" -> Q/DQ -> output),
// so that models testing float-only parts stay in scope.
void SideBlock(ModelBuilder& b) {
  auto x = QInput(b, "x2", {1, 4});
  b.Node("Sigmoid", {x}, {"side_s"}, {}, "side_sig");
  QOutput(b, "side_s", "side_y", QParams::U8(0.004f, 0));
}

// ================================================================== SiLU (6.2)

// x -> Q/DQ -> Sigmoid "sig" -> Mul "mul" (<- x) -> Q/DQ -> y.
ModelBuilder Silu() {
  ModelBuilder b;
  auto x = QInput(b);
  b.Node("Sigmoid", {x}, {"sig_out"}, {}, "sig");
  b.Node("Mul", {x, "sig_out"}, {"mul_out"}, {}, "mul");
  return b;
}

TEST(OwnershipSilu, ConformantInstanceIsOnePatternUnit) {
  auto b = Silu();
  QOutput(b, "mul_out", "y", QParams::U8(0.03f, 10));
  for (bool cv : {false, true}) {
    auto r = RunCheck(b, cv);
    EXPECT_CLEAN(r);
    EXPECT_EQ(KindCount(r, "pattern:silu"), 1u) << Units(r);
    EXPECT_UNIT(r, "sig", "pattern:silu", "sig", "mul");
    const auto* u = UnitWith(r, "mul");
    ASSERT_NE(u, nullptr);
    EXPECT_TRUE(Contains(u->input_qdq, "x_dq")) << Units(r);
    EXPECT_TRUE(Contains(u->output_qdq, "y_q")) << Units(r);
    // The internal nodes are not separate Sigmoid / Mul operator units.
    EXPECT_EQ(KindCount(r, "op"), 0u) << Units(r);
  }
}

TEST(OwnershipSilu, OperandOrderOfMulDoesNotMatter) {
  ModelBuilder b;
  auto x = QInput(b);
  b.Node("Sigmoid", {x}, {"sig_out"}, {}, "sig");
  b.Node("Mul", {"sig_out", x}, {"mul_out"}, {}, "mul");
  QOutput(b, "mul_out");
  auto r = RunCheck(b);
  EXPECT_CLEAN(r);
  EXPECT_UNIT(r, "sig", "pattern:silu", "mul");
}

// The domain "ai.onnx" is the default domain spelt out: the pattern matchers and the operator
// table share one predicate (IsOnnxOp), so an explicit domain changes no unit.
TEST(OwnershipSilu, ExplicitAiOnnxDomainIsStillOnePatternUnit) {
  auto b = Silu();
  QOutput(b, "mul_out", "y", QParams::U8(0.03f, 10));
  onnx::ModelProto m = b.Build();
  for (auto& n : *m.mutable_graph()->mutable_node()) n.set_domain("ai.onnx");
  std::string bytes;
  m.SerializeToString(&bytes);
  CheckOptions o;
  const Report r = CheckBytes(bytes, "explicit_domain.onnx", o);
  // ONNX 1.17's checker looks schemas up under "" only (onnx/invalid-model); the units and the
  // ownership rules do not depend on the spelling.
  EXPECT_FALSE(Has(r, "closure/uncovered-node")) << Dump(r);
  EXPECT_FALSE(Has(r, "closure/orphan-qdq")) << Dump(r);
  EXPECT_FALSE(Has(r, "pattern/internal-qdq")) << Dump(r);
  EXPECT_EQ(KindCount(r, "pattern:silu"), 1u) << Units(r);
  EXPECT_UNIT(r, "sig", "pattern:silu", "sig", "mul");
  EXPECT_UNIT(r, "mul", "pattern:silu", "sig", "mul");
  EXPECT_EQ(KindCount(r, "op"), 0u) << Units(r);
  EXPECT_EQ(r.units.size(), 1u) << Units(r);
}

// RULES.md reading 1: a Q/DQ between Sigmoid and Mul means there is no SiLU instance; both are
// quant-only operator units and the Q/DQ between them is what their rules ask for.
TEST(OwnershipSilu, QdqBetweenSigmoidAndMulMeansNoPattern) {
  ModelBuilder b;
  auto x = QInput(b);
  b.Node("Sigmoid", {x}, {"sig_out"}, {}, "sig");
  auto g = b.QDQ("sig_out", "g", QParams::U8(0.004f, 0));
  b.Node("Mul", {x, g}, {"mul_out"}, {}, "mul");
  QOutput(b, "mul_out");
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_EQ(KindCount(r, "pattern:silu"), 0u) << Units(r);
  EXPECT_UNIT(r, "sig", "op");
  EXPECT_UNIT(r, "mul", "op");
  EXPECT_NO_RULE(r, "pattern/internal-qdq");
  EXPECT_TRUE(Contains(UnitWith(r, "sig")->output_qdq, "g_q")) << Units(r);
  EXPECT_TRUE(Contains(UnitWith(r, "mul")->input_qdq, "g_dq")) << Units(r);
}

// Reading 1, second sentence: the internal tensor feeds Mul directly and also leaves through a Q.
TEST(OwnershipSilu, InternalTensorLeavingThroughQIsInternalQdq) {
  auto b = Silu();
  QOutput(b, "mul_out");
  auto g = b.QDQ("sig_out", "g", QParams::U8(0.004f, 0));
  b.Node("Tanh", {g}, {"t"}, {}, "tanh");
  QOutput(b, "t", "z", QParams::U8(0.01f, 128));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "pattern/internal-qdq", "g_q", "sig_out");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  EXPECT_UNIT(r, "sig", "pattern:silu", "mul");
  EXPECT_NO_RULE(r, "closure/orphan-qdq");  // the inserted Q/DQ is reported once, as internal-qdq
}

TEST(OwnershipSilu, InternalTensorConsumedOutsideIsEscape) {
  auto b = Silu();
  QOutput(b, "mul_out");
  b.Node("Tanh", {"sig_out"}, {"t"}, {}, "tanh");
  QOutput(b, "t", "z", QParams::U8(0.01f, 128));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "pattern/internal-escape", "sig", "Tanh 'tanh'");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

TEST(OwnershipSilu, InternalTensorAsGraphOutputIsEscape) {
  auto b = Silu();
  QOutput(b, "mul_out");
  b.Output("sig_out");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "pattern/internal-escape", "sig", "graph output");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// The largest match wins: SiLU (plus its Relu fusion tail, 6.5) instead of Sigmoid and Mul
// operator units and a standalone Relu.
TEST(OwnershipSilu, PatternWinsOverOperatorsAndTakesAReluTail) {
  auto b = Silu();
  b.Node("Relu", {"mul_out"}, {"relu_out"}, {}, "relu");
  QOutput(b, "relu_out");
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_UNIT(r, "relu", "pattern:silu", "sig", "mul", "relu");
  EXPECT_EQ(r.units.size(), 1u) << Units(r);
  EXPECT_NO_RULE(r, "op/relu-form");
}

// 6.1: one Sigmoid feeding two Muls that both form SiLU with the same X: two largest patterns of
// equal size overlap.
TEST(OwnershipSilu, SharedSigmoidIsAmbiguous) {
  auto b = Silu();
  QOutput(b, "mul_out");
  b.Node("Mul", {"x_dq_out", "sig_out"}, {"mul2_out"}, {}, "mul2");
  QOutput(b, "mul2_out", "y2");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "closure/ambiguous-ownership", "mul2", "silu/silu");
  EXPECT_FINDING(r, "closure/ambiguous-ownership", "mul", "'sig'");
  EXPECT_EQ(Find(r, "closure/ambiguous-ownership").size(), 1u) << Dump(r);
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// 6.2 "X 和 Y 是 Pattern 的量化边界": an unquantized X or Y is reported at the pattern.
TEST(OwnershipSilu, BoundariesMustBeQuantized) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  b.Node("Sigmoid", {"x"}, {"sig_out"}, {}, "sig");
  b.Node("Mul", {"x", "sig_out"}, {"mul_out"}, {}, "mul");
  QOutput(b, "mul_out");
  auto r = RunCheck(b);
  EXPECT_UNIT(r, "sig", "pattern:silu", "mul");
  EXPECT_FINDING(r, "op/input-not-quantized", "mul", "graph input 'x'");
  EXPECT_VERDICT(r, Verdict::kNonConformant);

  auto y = Silu();
  y.Output("mul_out");
  auto ry = RunCheck(y);
  EXPECT_FINDING(ry, "op/output-not-quantized", "mul", "graph output without Q/DQ");
  EXPECT_VERDICT(ry, Verdict::kNonConformant);
}

// ================================================================== GLU (6.3)

// x [1,8,4,4] -> Q/DQ -> Split "split" (axis 1) -> a, b; Sigmoid "sig"(b) -> g; Mul "mul"(a, g).
ModelBuilder Glu() {
  ModelBuilder b;
  auto x = QInput(b, "x", {1, 8, 4, 4});
  b.Node("Split", {x}, {"a", "bb"},
         {ModelBuilder::AttrI("axis", 1), ModelBuilder::AttrI("num_outputs", 2)}, "split");
  b.Node("Sigmoid", {"bb"}, {"g"}, {}, "sig");
  b.Node("Mul", {"a", "g"}, {"mul_out"}, {}, "mul");
  return b;
}

TEST(OwnershipGlu, ConformantInstanceOwnsTheSplit) {
  auto b = Glu();
  QOutput(b, "mul_out", "y", QParams::S8(0.01f));  // X and Y types are independent
  for (bool cv : {false, true}) {
    auto r = RunCheck(b, cv);
    EXPECT_CLEAN(r);
    EXPECT_UNIT(r, "split", "pattern:glu", "split", "sig", "mul");
    EXPECT_EQ(r.units.size(), 1u) << Units(r);
    // The Split pass-through pattern (5.11) and SiLU do not apply inside GLU.
    EXPECT_EQ(KindCount(r, "passive:split"), 0u) << Units(r);
    EXPECT_EQ(KindCount(r, "pattern:silu"), 0u) << Units(r);
    EXPECT_NO_RULE(r, "op/split-exit-params");
    const auto* u = UnitWith(r, "mul");
    ASSERT_NE(u, nullptr);
    EXPECT_TRUE(Contains(u->input_qdq, "x_dq")) << Units(r);
    EXPECT_TRUE(Contains(u->output_qdq, "y_q")) << Units(r);
  }
}

// GLU (largest) wins over an overlapping SiLU: a second Mul(b, Sigmoid(b)) would be a SiLU
// sharing GLU's Sigmoid. The smaller match loses (no ambiguity), and its Mul consumes GLU's
// internal tensors from outside.
TEST(OwnershipGlu, GluWinsOverOverlappingSilu) {
  auto b = Glu();
  QOutput(b, "mul_out");
  b.Node("Mul", {"bb", "g"}, {"mul2_out"}, {}, "mul2");
  QOutput(b, "mul2_out", "y2");
  auto r = RunCheck(b);
  EXPECT_EQ(KindCount(r, "pattern:glu"), 1u) << Units(r);
  EXPECT_EQ(KindCount(r, "pattern:silu"), 0u) << Units(r);
  EXPECT_UNIT(r, "sig", "pattern:glu", "split", "mul");
  EXPECT_UNIT(r, "mul2", "op");
  EXPECT_NO_RULE(r, "closure/ambiguous-ownership");
  EXPECT_FINDING(r, "pattern/internal-escape", "sig", "Mul 'mul2'");
  EXPECT_FINDING(r, "pattern/internal-escape", "split", "Mul 'mul2'");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

TEST(OwnershipGlu, InternalTensorLeavingThroughQIsInternalQdq) {
  auto b = Glu();
  QOutput(b, "mul_out");
  auto gq = b.QDQ("g", "gq", QParams::U8(0.004f, 0));
  b.Node("Tanh", {gq}, {"t"}, {}, "tanh");
  QOutput(b, "t", "z", QParams::U8(0.01f, 128));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "pattern/internal-qdq", "gq_q", "'g'");
  EXPECT_UNIT(r, "split", "pattern:glu", "sig", "mul");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

TEST(OwnershipGlu, SplitHalfConsumedOutsideIsEscape) {
  auto b = Glu();
  QOutput(b, "mul_out");
  b.Node("Tanh", {"a"}, {"t"}, {}, "tanh");
  QOutput(b, "t", "z", QParams::U8(0.01f, 128));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "pattern/internal-escape", "split", "Tanh 'tanh'");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// 6.3 "X 和 Y 必须分别具有完整 Q/DQ".
TEST(OwnershipGlu, OutputWithoutQdqIsReported) {
  auto b = Glu();
  b.Node("Tanh", {"mul_out"}, {"t"}, {}, "tanh");
  QOutput(b, "t", "z", QParams::U8(0.01f, 128));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/output-not-quantized", "mul", "Tanh 'tanh'");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// Q/DQ between Sigmoid and Mul: no GLU (reading 1). What is left is a Split in quantized
// pass-through mode whose exits into Mul and Sigmoid have no Q/DQ (5.11: a used branch must
// leave the Split pattern through a full Q/DQ boundary).
TEST(OwnershipGlu, QdqBetweenSigmoidAndMulBreaksThePattern) {
  ModelBuilder b;
  auto x = QInput(b, "x", {1, 8, 4, 4});
  b.Node("Split", {x}, {"a", "bb"},
         {ModelBuilder::AttrI("axis", 1), ModelBuilder::AttrI("num_outputs", 2)}, "split");
  b.Node("Sigmoid", {"bb"}, {"g"}, {}, "sig");
  auto g = b.QDQ("g", "gq", QParams::U8(0.004f, 0));
  b.Node("Mul", {"a", g}, {"mul_out"}, {}, "mul");
  QOutput(b, "mul_out");
  auto r = RunCheck(b);
  EXPECT_EQ(KindCount(r, "pattern:glu"), 0u) << Units(r);
  EXPECT_UNIT(r, "split", "passive:split");
  EXPECT_FINDING_MSG(r, "op/passive-params", "split", "Mul 'mul'");
  EXPECT_FINDING_MSG(r, "op/passive-params", "split", "Sigmoid 'sig'");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// The sibling with full Q/DQ on every edge: Split pattern + two operator units, conformant.
TEST(OwnershipGlu, FullyQuantizedDecompositionIsConformant) {
  ModelBuilder b;
  auto x = QInput(b, "x", {1, 8, 4, 4});
  b.Node("Split", {x}, {"a", "bb"},
         {ModelBuilder::AttrI("axis", 1), ModelBuilder::AttrI("num_outputs", 2)}, "split");
  auto a = b.QDQ("a", "aq", kIn);
  auto bb = b.QDQ("bb", "bq", kIn);
  b.Node("Sigmoid", {bb}, {"g"}, {}, "sig");
  auto g = b.QDQ("g", "gq", QParams::U8(0.004f, 0));
  b.Node("Mul", {a, g}, {"mul_out"}, {}, "mul");
  QOutput(b, "mul_out");
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_UNIT(r, "split", "passive:split");
  EXPECT_UNIT(r, "sig", "op");
  EXPECT_UNIT(r, "mul", "op");
}

// ================================================================== Conv/ConvTranspose + BN (6.4)

TEST(OwnershipConvBn, ConformantInstanceIsOnePatternUnit) {
  for (const std::string op : {"Conv", "ConvTranspose"}) {
    ModelBuilder b;
    auto c = ConvHead(b, op);
    QOutput(b, AddBN(b, c));
    auto r = RunCheck(b, true);
    EXPECT_CLEAN(r);
    EXPECT_UNIT(r, "conv", "pattern:conv-bn", "conv", "bn");
    EXPECT_EQ(r.units.size(), 1u) << op << "\n" << Units(r);
    const auto* u = UnitWith(r, "bn");
    ASSERT_NE(u, nullptr);
    for (const auto* dq : {"x_dq", "w_dq", "b_dq"})
      EXPECT_TRUE(Contains(u->input_qdq, dq)) << dq << Units(r);
    EXPECT_TRUE(Contains(u->output_qdq, "y_q")) << Units(r);
  }
}

TEST(OwnershipConvBn, ReluAndStaticClipTails) {
  {
    ModelBuilder b;
    b.Node("Relu", {AddBN(b, ConvHead(b))}, {"relu_out"}, {}, "relu");
    QOutput(b, "relu_out");
    auto r = RunCheck(b, true);
    EXPECT_CLEAN(r);
    EXPECT_UNIT(r, "relu", "pattern:conv-bn", "conv", "bn", "relu");
    EXPECT_EQ(r.units.size(), 1u) << Units(r);
  }
  {
    ModelBuilder b;
    QOutput(b, AddClip(b, AddBN(b, ConvHead(b))), "y", QParams::U8(0.03f, 0));
    auto r = RunCheck(b, true);
    EXPECT_CLEAN(r);
    EXPECT_UNIT(r, "clip", "pattern:conv-bn", "conv", "bn", "clip");
    EXPECT_EQ(r.units.size(), 1u) << Units(r);
  }
}

// The pattern output Y feeds a Relu tail and also leaves through its own Q/DQ (6.5: the tail
// owns only its branch).
TEST(OwnershipConvBn, PatternOutputFeedsTailAndQ) {
  ModelBuilder b;
  auto y = AddBN(b, ConvHead(b));
  b.Node("Relu", {y}, {"relu_out"}, {}, "relu");
  QOutput(b, "relu_out", "r");
  QOutput(b, y, "y", QParams::U8(0.05f, 128));
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_UNIT(r, "relu", "pattern:conv-bn", "conv", "bn");
  const auto* u = UnitWith(r, "bn");
  ASSERT_NE(u, nullptr);
  EXPECT_TRUE(Contains(u->output_qdq, "r_q")) << Units(r);
  EXPECT_TRUE(Contains(u->output_qdq, "y_q")) << Units(r);
}

// Reading 1: Q/DQ between Conv and BN means no pattern: a Conv unit and a standalone
// BatchNormalization unit (5.7: data input and output quantized), both conformant.
TEST(OwnershipConvBn, QdqBetweenConvAndBnMeansTwoUnits) {
  ModelBuilder b;
  auto c = b.QDQ(ConvHead(b), "c", QParams::U8(0.05f, 128));
  QOutput(b, AddBN(b, c));
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_EQ(KindCount(r, "pattern:conv-bn"), 0u) << Units(r);
  EXPECT_UNIT(r, "conv", "op");
  EXPECT_UNIT(r, "bn", "op");
}

TEST(OwnershipConvBn, InternalTensorLeavingThroughQIsInternalQdq) {
  ModelBuilder b;
  auto c = ConvHead(b);
  QOutput(b, AddBN(b, c));
  auto c2 = b.QDQ(c, "c2", QParams::U8(0.05f, 128));
  b.Node("Sigmoid", {c2}, {"s"}, {}, "sig");
  QOutput(b, "s", "z", QParams::U8(0.004f, 0));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "pattern/internal-qdq", "c2_q", "conv_out");
  EXPECT_UNIT(r, "conv", "pattern:conv-bn", "bn");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

TEST(OwnershipConvBn, InternalTensorConsumedOutsideIsEscape) {
  ModelBuilder b;
  auto c = ConvHead(b);
  QOutput(b, AddBN(b, c));
  b.Node("Sigmoid", {c}, {"s"}, {}, "sig");
  QOutput(b, "s", "z", QParams::U8(0.004f, 0));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "pattern/internal-escape", "conv", "Sigmoid 'sig'");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

TEST(OwnershipConvBn, BnParametersMustBeDirectFp32Initializers) {
  ModelBuilder b;
  auto c = ConvHead(b);
  b.InitF32Fill("bn_scale", {8}, 1.0f);
  b.InitF32Fill("bn_bias", {8}, 0.0f);
  b.InitF32Fill("bn_var", {8}, 1.0f);
  b.InitF32Fill("mean_f", {8}, 0.0f);
  auto mean = b.QDQ("mean_f", "mean", QParams::U8(0.01f, 0));
  b.Node("BatchNormalization", {c, "bn_scale", "bn_bias", mean, "bn_var"}, {"bn_out"}, {}, "bn");
  QOutput(b, "bn_out");
  auto r = RunCheck(b);
  EXPECT_UNIT(r, "conv", "pattern:conv-bn", "bn");
  EXPECT_FINDING(r, "op/static-param", "bn", "mean_dq_out");
  EXPECT_NO_RULE(r, "closure/orphan-qdq");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// Two BatchNormalizations on one Conv: two conv-bn matches of equal size overlap at the Conv.
TEST(OwnershipConvBn, ConvFeedingTwoBnsIsAmbiguous) {
  ModelBuilder b;
  auto c = ConvHead(b);
  QOutput(b, AddBN(b, c, "bn1"), "y1");
  QOutput(b, AddBN(b, c, "bn2"), "y2");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "closure/ambiguous-ownership", "conv", "conv-bn/conv-bn");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// ================================================================== Relu/Clip tails
// (5.15, 5.16, 6.5)

TEST(OwnershipTail, ReluTailOnConvIsConformant) {
  ModelBuilder b;
  b.Node("Relu", {ConvHead(b)}, {"relu_out"}, {}, "relu");
  QOutput(b, "relu_out");
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_UNIT(r, "relu", "op", "conv", "relu");
  EXPECT_EQ(r.units.size(), 1u) << Units(r);
}

// 5.15 "融合只拥有选中的 Relu 分支; X 的其他消费者继续分别遵循各自的算子或 Pattern 规则": the Conv
// output also leaves through its own Q/DQ. Both branches are owned by the Conv unit.
TEST(OwnershipTail, ReluTailOnConvWhoseOutputAlsoFeedsAQ) {
  ModelBuilder b;
  auto c = ConvHead(b);
  b.Node("Relu", {c}, {"relu_out"}, {}, "relu");
  QOutput(b, "relu_out", "r");
  QOutput(b, c, "y", QParams::S8(0.05f));  // the plain branch may even be signed
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_UNIT(r, "conv", "op", "relu");
  const auto* u = UnitWith(r, "conv");
  ASSERT_NE(u, nullptr);
  EXPECT_TRUE(Contains(u->output_qdq, "r_q")) << Units(r);
  EXPECT_TRUE(Contains(u->output_qdq, "y_q")) << Units(r);
  EXPECT_NO_RULE(r, "pattern/internal-escape");
  EXPECT_NO_RULE(r, "closure/orphan-qdq");
  // The other branch still follows the Conv's own rule: without Q/DQ it is reported.
  ModelBuilder n;
  auto cn = ConvHead(n);
  n.Node("Relu", {cn}, {"relu_out"}, {}, "relu");
  QOutput(n, "relu_out", "r");
  n.Node("Sigmoid", {cn}, {"s"}, {}, "sig");
  QOutput(n, "s", "z", QParams::U8(0.004f, 0));
  auto rn = RunCheck(n);
  EXPECT_FINDING(rn, "op/output-not-quantized", "conv", "Sigmoid 'sig'");
  EXPECT_UNIT(rn, "relu", "op", "conv");
  EXPECT_VERDICT(rn, Verdict::kNonConformant);
}

TEST(OwnershipTail, StaticClipTailOnQuantOnlyOpWithAsymmetricZeroPoint) {
  ModelBuilder b;
  auto x = QInput(b, "x", {1, 4});
  auto x2 = QInput(b, "x2", {1, 4});
  b.Node("Add", {x, x2}, {"add_out"}, {}, "add");
  // Asymmetric Clip: the output zero_point may be anything in range (5.16).
  QOutput(b, AddClip(b, "add_out"), "y", QParams::U8(0.03f, 3));
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_UNIT(r, "clip", "op", "add", "clip");
  EXPECT_NO_RULE(r, "op/relu-zero-point");
}

// Reading 2: standalone Relu after a compute op with Q/DQ in between is always allowed.
TEST(OwnershipTail, StandaloneReluAfterConvIsConformant) {
  ModelBuilder b;
  auto c = b.QDQ(ConvHead(b), "c", QParams::U8(0.05f, 128));
  b.Node("Relu", {c}, {"relu_out"}, {}, "relu");
  QOutput(b, "relu_out");
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_UNIT(r, "relu", "op");
  EXPECT_UNIT(r, "conv", "op");
  EXPECT_EQ(UnitWith(r, "relu")->nodes.size(), 1u) << Units(r);
  // Symmetric standalone form: Q/DQ on both sides, zero_point 0.
  ModelBuilder s;
  auto cs = s.QDQ(ConvHead(s), "c", QParams::S8(0.05f));
  s.Node("Relu", {cs}, {"relu_out"}, {}, "relu");
  QOutput(s, "relu_out", "y", QParams::S8(0.05f));
  EXPECT_CLEAN(RunCheck(s, true));
}

// 5.15 对称量化形式: "Relu 前后都必须具有 Q/DQ … 不形成融合尾". A signed output Q directly after
// Conv is the symmetric form without input Q/DQ.
TEST(OwnershipTail, SignedReluOutputCannotBeATail) {
  ModelBuilder b;
  b.Node("Relu", {ConvHead(b)}, {"relu_out"}, {}, "relu");
  QOutput(b, "relu_out", "y", QParams::S8(0.05f));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/relu-form", "relu", "signed");
  EXPECT_UNIT(r, "relu", "op");
  EXPECT_EQ(UnitWith(r, "relu")->nodes.size(), 1u) << Units(r);
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  // Clip likewise (5.16: 对称量化 Clip 前后都必须具有 Q/DQ，不形成融合尾).
  ModelBuilder c;
  QOutput(c, AddClip(c, ConvHead(c)), "y", QParams::S8(0.05f));
  auto rc = RunCheck(c);
  EXPECT_FINDING(rc, "op/relu-form", "clip", "signed");
  EXPECT_VERDICT(rc, Verdict::kNonConformant);
}

TEST(OwnershipTail, ReluOutputZeroPointMustBeZero) {
  // As a fusion tail.
  ModelBuilder b;
  b.Node("Relu", {ConvHead(b)}, {"relu_out"}, {}, "relu");
  QOutput(b, "relu_out", "y", QParams::U8(0.05f, 128));
  auto r = RunCheck(b);  // an error even without check_value (op/relu-zero-point is not [cv])
  EXPECT_FINDING(r, "op/relu-zero-point", "y_q", "zero_point 128");
  EXPECT_UNIT(r, "relu", "op", "conv");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  // Standalone.
  ModelBuilder s;
  auto x = QInput(s);
  s.Node("Relu", {x}, {"relu_out"}, {}, "relu");
  QOutput(s, "relu_out", "y", QParams::U8(0.05f, 7));
  auto rs = RunCheck(s);
  EXPECT_FINDING(rs, "op/relu-zero-point", "y_q", "zero_point 7");
  EXPECT_VERDICT(rs, Verdict::kNonConformant);
  // Clip: only a symmetric output needs zero_point 0.
  ModelBuilder c;
  auto xc = QInput(c);
  auto sym = QParams::S8(0.05f);
  sym.zero_point = {5};
  QOutput(c, AddClip(c, xc), "y", sym);
  auto rc = RunCheck(c);
  EXPECT_FINDING(rc, "op/relu-zero-point", "y_q", "zero_point 5");
}

TEST(OwnershipTail, ClipWithDynamicMinIsAnError) {
  ModelBuilder b;
  auto c = ConvHead(b);
  b.Input("lo", TP::FLOAT, {});
  b.InitF32("hi", {}, {6.0f});
  b.Node("Clip", {c, "lo", "hi"}, {"clip_out"}, {}, "clip");
  QOutput(b, "clip_out");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/clip-dynamic", "clip", "graph input 'lo'");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  // Standalone Clip with a min computed at runtime.
  ModelBuilder s;
  auto x = QInput(s);
  s.InitF32("m0", {}, {0.0f});
  s.Node("Abs", {"m0"}, {"lo"}, {}, "abs_lo");
  s.Node("Clip", {x, "lo"}, {"clip_out"}, {}, "clip");
  QOutput(s, "clip_out");
  auto rs = RunCheck(s);
  EXPECT_FINDING(rs, "op/clip-dynamic", "clip", "Abs 'abs_lo'");
  // A bound through Q/DQ is dynamic too; the Q/DQ is reported there, not again as an orphan.
  ModelBuilder q;
  auto xq = QInput(q);
  q.InitF32("m0", {}, {0.0f});
  auto lo = q.QDQ("m0", "lo", QParams::U8(0.01f, 0));
  q.Node("Clip", {xq, lo}, {"clip_out"}, {}, "clip");
  QOutput(q, "clip_out");
  auto rq = RunCheck(q);
  EXPECT_FINDING(rq, "op/clip-dynamic", "clip", "lo_dq_out");
  EXPECT_NO_RULE(rq, "closure/orphan-qdq");
  // Omitted bounds are fine.
  ModelBuilder o;
  auto xo = QInput(o);
  o.Node("Clip", {xo}, {"clip_out"}, {}, "clip");
  QOutput(o, "clip_out");
  EXPECT_CLEAN(RunCheck(o, true));
}

// 5.15 非对称独立形式: "graph input 或被动传递子图之后的 Relu，前后都必须具有 Q/DQ" -- a fusion
// tail on a passive producer is op/relu-form (RULES.md op/relu-form: "fusion tail on a passive or
// non-quantized producer").
TEST(OwnershipTail, ReluAfterQuantizedPassiveOpNeedsInputQdq) {
  ModelBuilder b;
  auto x = QInput(b);
  b.Node("Transpose", {x}, {"t_out"}, {ModelBuilder::AttrInts("perm", {0, 2, 3, 1})}, "transpose");
  b.Node("Relu", {"t_out"}, {"relu_out"}, {}, "relu");
  QOutput(b, "relu_out");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/relu-form", "relu", "passive");
  EXPECT_FINDING(r, "op/passive-params", "transpose", "Relu 'relu'");
  EXPECT_UNIT(r, "relu", "op");
  EXPECT_UNIT(r, "transpose", "passive");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

TEST(OwnershipTail, ReluAfterNonQuantPassiveOpNeedsInputQdq) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  b.Node("Transpose", {"x"}, {"t_out"}, {ModelBuilder::AttrInts("perm", {0, 2, 3, 1})},
         "transpose");
  b.Node("Relu", {"t_out"}, {"relu_out"}, {}, "relu");
  QOutput(b, "relu_out");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/relu-form", "relu", "passive operator (Transpose 'transpose')");
  EXPECT_NO_RULE(r, "op/passive-params");  // the Transpose is in non-quant mode
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  // The sibling with Q/DQ between them is the standalone form: conformant.
  ModelBuilder ok;
  ok.Input("x", TP::FLOAT, {1, 4, 8, 8});
  ok.Node("Transpose", {"x"}, {"t_out"}, {ModelBuilder::AttrInts("perm", {0, 2, 3, 1})},
          "transpose");
  auto t = ok.QDQ("t_out", "t", kIn);
  ok.Node("Relu", {t}, {"relu_out"}, {}, "relu");
  QOutput(ok, "relu_out");
  auto rok = RunCheck(ok, true);
  EXPECT_CLEAN(rok);
  EXPECT_UNIT(rok, "transpose", "passive");
  EXPECT_EQ(UnitWith(rok, "transpose")->mode, "non_quant") << Units(rok);
}

TEST(OwnershipTail, ReluAfterGraphInputOrNonQuantOpNeedsInputQdq) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  b.Node("Relu", {"x"}, {"relu_out"}, {}, "relu");
  QOutput(b, "relu_out");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/relu-form", "relu", "graph input");
  EXPECT_VERDICT(r, Verdict::kNonConformant);

  ModelBuilder n;
  auto x = QInput(n);
  n.Node("Abs", {x}, {"abs_out"}, {}, "abs");
  n.Node("Relu", {"abs_out"}, {"relu_out"}, {}, "relu");
  QOutput(n, "relu_out");
  auto rn = RunCheck(n);
  EXPECT_FINDING(rn, "op/relu-form", "relu", "Abs 'abs'");
  EXPECT_VERDICT(rn, Verdict::kNonConformant);
}

// 5.15 融合尾: "Relu 输出必须具有 Q/DQ".
TEST(OwnershipTail, TailOutputWithoutQdqIsReluForm) {
  ModelBuilder b;
  b.Node("Relu", {ConvHead(b)}, {"relu_out"}, {}, "relu");
  b.Output("relu_out");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/relu-form", "relu", "graph output without Q/DQ");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// ================================================================== passive subgraphs (5.10, 6.6)

// x -> Q/DQ (entry) -> Transpose "t" -> Reshape "r1" -> exit e1
//                                   \-> Flatten "f"   -> exit e2
ModelBuilder PassiveTree(const QParams& e1, const std::optional<QParams>& e2) {
  ModelBuilder b;
  auto x = QInput(b);
  b.Node("Transpose", {x}, {"t_out"}, {ModelBuilder::AttrInts("perm", {0, 2, 3, 1})}, "t");
  b.InitInt("shape", TP::INT64, {2}, {1, 256});
  b.Node("Reshape", {"t_out", "shape"}, {"r1_out"}, {}, "r1");
  b.Node("Flatten", {"t_out"}, {"f_out"}, {ModelBuilder::AttrI("axis", 1)}, "f");
  QOutput(b, "r1_out", "e1", e1);
  if (e2) QOutput(b, "f_out", "e2", *e2);
  return b;
}

TEST(OwnershipPassive, BranchedSubgraphSharingEntryParamsIsConformant) {
  auto b = PassiveTree(kIn, kIn);
  for (bool cv : {false, true}) {
    auto r = RunCheck(b, cv);
    EXPECT_CLEAN(r);
    EXPECT_UNIT(r, "t", "passive", "t", "r1", "f");
    EXPECT_EQ(r.units.size(), 1u) << Units(r);
    const auto* u = UnitWith(r, "t");
    EXPECT_EQ(u->mode, "quantized");
    EXPECT_TRUE(Contains(u->input_qdq, "x_dq")) << Units(r);
    EXPECT_TRUE(Contains(u->output_qdq, "e1_q")) << Units(r);
    EXPECT_TRUE(Contains(u->output_qdq, "e2_q")) << Units(r);
  }
}

TEST(OwnershipPassive, ExitWithDifferentParamsIsPassiveParams) {
  auto r = RunCheck(PassiveTree(kIn, QParams::U8(0.04f, 128)));
  EXPECT_FINDING(r, "op/passive-params", "e2_q", "scale");
  EXPECT_EQ(At(r, "op/passive-params", "e1_q"), nullptr) << Dump(r);
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  // Different zero_point, different type: also errors (full params, 5.10).
  EXPECT_FINDING(RunCheck(PassiveTree(QParams::U8(0.02f, 127), kIn)), "op/passive-params", "e1_q",
                 "zero_point");
  EXPECT_FINDING(RunCheck(PassiveTree(kIn, QParams::S8(0.02f))), "op/passive-params", "e2_q",
                 "integer type");
}

TEST(OwnershipPassive, ExitWithoutQdqIsPassiveParams) {
  // Into a quant-only operator.
  auto b = PassiveTree(kIn, std::nullopt);
  b.Node("Sigmoid", {"f_out"}, {"s"}, {}, "sig");
  QOutput(b, "s", "z", QParams::U8(0.004f, 0));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/passive-params", "f", "Sigmoid 'sig'");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  // As a graph output.
  auto g = PassiveTree(kIn, std::nullopt);
  g.Output("f_out");
  auto rg = RunCheck(g);
  EXPECT_FINDING(rg, "op/passive-params", "f", "graph output");
  EXPECT_VERDICT(rg, Verdict::kNonConformant);
}

// Reading 4: fed by plain FP32 the subgraph is in non-quant mode and owns no Q/DQ.
TEST(OwnershipPassive, NonQuantModeHasNoFindings) {
  ModelBuilder b;
  SideBlock(b);
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  b.Node("Transpose", {"x"}, {"t_out"}, {ModelBuilder::AttrInts("perm", {0, 2, 3, 1})}, "t");
  b.InitInt("shape", TP::INT64, {2}, {1, 256});
  b.Node("Reshape", {"t_out", "shape"}, {"r1_out"}, {}, "r1");
  b.Node("Flatten", {"t_out"}, {"f_out"}, {ModelBuilder::AttrI("axis", 1)}, "f");
  b.Output("r1_out");
  b.Output("f_out");
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_TRUE(r.findings.empty()) << Dump(r);
  EXPECT_UNIT(r, "t", "passive", "r1", "f");
  EXPECT_EQ(UnitWith(r, "t")->mode, "non_quant") << Units(r);
  EXPECT_TRUE(UnitWith(r, "t")->input_qdq.empty()) << Units(r);
}

// Auxiliary outputs (MaxPool Indices) are not data exits (5.10, reading 4).
TEST(OwnershipPassive, MaxPoolIndicesAreNotAQuantizedExit) {
  ModelBuilder b;
  auto x = QInput(b);
  b.Node("MaxPool", {x}, {"mp_out", "mp_idx"}, {ModelBuilder::AttrInts("kernel_shape", {2, 2})},
         "maxpool");
  QOutput(b, "mp_out", "e", kIn);
  b.Output("mp_idx");
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_UNIT(r, "maxpool", "passive");
}

// ================================================================== Split pattern (5.11)

// x [1,6,4,4] -> Q/DQ (U8 0.02/128) -> Split "split" (3 outputs) -> s0, s1, s2.
ModelBuilder SplitModel() {
  ModelBuilder b;
  auto x = QInput(b, "x", {1, 6, 4, 4});
  b.Node("Split", {x}, {"s0", "s1", "s2"},
         {ModelBuilder::AttrI("axis", 1), ModelBuilder::AttrI("num_outputs", 3)}, "split");
  return b;
}

TEST(OwnershipSplit, ExitsOfDifferentTypesAreAllowed) {
  auto b = SplitModel();
  QOutput(b, "s0", "o0", kIn);                // same type, same values
  QOutput(b, "s1", "o1", QParams::S8(0.1f));  // another type
  b.Node("Transpose", {"s2"}, {"t2"}, {ModelBuilder::AttrInts("perm", {0, 2, 3, 1})}, "t2");
  QOutput(b, "t2", "o2", QParams::U16(0.0001f, 100));  // through a passive op, a third type
  for (bool cv : {false, true}) {
    auto r = RunCheck(b, cv);
    EXPECT_CLEAN(r);
    EXPECT_NO_RULE(r, "op/passive-params");
    EXPECT_UNIT(r, "split", "passive:split", "t2");
    const auto* u = UnitWith(r, "split");
    for (const auto* q : {"o0_q", "o1_q", "o2_q"})
      EXPECT_TRUE(Contains(u->output_qdq, q)) << q << Units(r);
  }
}

TEST(OwnershipSplit, SameTypeExitDifferingFromInputWarnsOnlyWithCheckValue) {
  auto b = SplitModel();
  QOutput(b, "s0", "o0", QParams::U8(0.05f, 128));  // U8 like the input, other scale
  QOutput(b, "s1", "o1", QParams::S8(0.1f));
  QOutput(b, "s2", "o2", QParams::U16(0.0001f, 100));
  auto off = RunCheck(b, false);
  EXPECT_CLEAN(off);
  EXPECT_NO_RULE(off, "op/split-exit-params");
  auto on = RunCheck(b, true);
  EXPECT_FINDING(on, "op/split-exit-params", "o0_q", "different values");
  EXPECT_EQ(Find(on, "op/split-exit-params").size(), 1u) << Dump(on);
  EXPECT_VERDICT(on, Verdict::kConformant);  // warn only
  EXPECT_EQ(on.summary.warnings, 1u) << Dump(on);
  EXPECT_NO_RULE(on, "op/passive-params");
}

TEST(OwnershipSplit, SameTypeExitsDifferingWarnOnlyWithCheckValue) {
  auto b = SplitModel();
  QOutput(b, "s0", "o0", QParams::S8(0.1f));
  QOutput(b, "s1", "o1", QParams::S8(0.2f));
  QOutput(b, "s2", "o2", QParams::U16(0.0001f, 100));
  EXPECT_CLEAN(RunCheck(b, false));
  auto on = RunCheck(b, true);
  EXPECT_FINDING(on, "op/split-exit-params", "o1_q", "share type S8");
  EXPECT_EQ(Find(on, "op/split-exit-params").size(), 1u) << Dump(on);
  EXPECT_VERDICT(on, Verdict::kConformant);
}

// 5.11 rule 1: a same-type exit's scale/zero_point must be statically readable; unknown values
// are a warn under check_value.
TEST(OwnershipSplit, SameTypeExitWithUnreadableZeroPointWarns) {
  auto b = SplitModel();
  b.Input("zp_in", TP::UINT8, {});
  b.InitF32("o0_scale", {}, {0.02f});
  b.Node("QuantizeLinear", {"s0", "o0_scale", "zp_in"}, {"o0_q_out"}, {}, "o0_q");
  b.Node("DequantizeLinear", {"o0_q_out", "o0_scale", "zp_in"}, {"o0_dq_out"}, {}, "o0_dq");
  b.Output("o0_dq_out");
  QOutput(b, "s1", "o1", QParams::S8(0.1f));
  QOutput(b, "s2", "o2", QParams::U16(0.0001f, 100));
  EXPECT_NO_RULE(RunCheck(b, false), "op/split-exit-params");
  auto on = RunCheck(b, true);
  EXPECT_FINDING(on, "op/split-exit-params", "o0_q", "not statically readable");
  EXPECT_EQ(on.verdict, Verdict::kConformant) << Dump(on);
}

TEST(OwnershipSplit, UnusedOutputIsNoExitButAUsedOneNeedsQdq) {
  auto b = SplitModel();
  QOutput(b, "s0", "o0", kIn);
  QOutput(b, "s1", "o1", kIn);
  auto r = RunCheck(b, true);  // s2 unused and not a graph output
  EXPECT_CLEAN(r);
  b.Node("Sigmoid", {"s2"}, {"sg"}, {}, "sig");
  QOutput(b, "sg", "z", QParams::U8(0.004f, 0));
  auto r2 = RunCheck(b);
  EXPECT_FINDING(r2, "op/passive-params", "split", "Sigmoid 'sig'");
  EXPECT_VERDICT(r2, Verdict::kNonConformant);
}

// 5.11 defines the Split pattern as "Split 以及其各分支上连续的被动传递算子": the passive ops
// downstream of the Split. A Transpose in front of the Split is an ordinary pass-through (5.10),
// so its own direct exit must share the entry's full parameters; only the Split's final exits
// get the 5.11 relaxation.
TEST(OwnershipSplit, ExitBeforeTheSplitIsAnOrdinaryPassiveExit) {
  ModelBuilder b;
  auto x = QInput(b, "x", {1, 6, 4, 4});
  b.Node("Transpose", {x}, {"t_out"}, {ModelBuilder::AttrInts("perm", {0, 1, 3, 2})}, "t");
  b.Node("Split", {"t_out"}, {"s0", "s1"},
         {ModelBuilder::AttrI("axis", 1), ModelBuilder::AttrI("num_outputs", 2)}, "split");
  QOutput(b, "s0", "o0", QParams::S8(0.1f));  // Split exit: may change type
  QOutput(b, "s1", "o1", kIn);
  QOutput(b, "t_out", "ot", QParams::S8(0.1f));  // Transpose exit: must share the entry
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/passive-params", "ot_q", "integer type");
  EXPECT_EQ(At(r, "op/passive-params", "o0_q"), nullptr) << Dump(r);
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// ================================================================== requantize (3.5, 6.7)

// x -> Q/DQ -> Sigmoid "sig" -> Q/DQ "a" (U8) -> Identity "rq" -> Q/DQ "b" (S8) -> Tanh "tanh" ->
// Q/DQ.
ModelBuilder Requant(const QParams& a = QParams::U8(0.004f, 0),
                     const QParams& bq = QParams::S8(0.01f)) {
  ModelBuilder b;
  auto x = QInput(b, "x", {1, 4});
  b.Node("Sigmoid", {x}, {"s"}, {}, "sig");
  auto ad = b.QDQ("s", "a", a);
  b.Node("Identity", {ad}, {"rq_out"}, {}, "rq");
  auto bd = b.QDQ("rq_out", "b", bq);
  b.Node("Tanh", {bd}, {"t"}, {}, "tanh");
  QOutput(b, "t", "z", QParams::U8(0.01f, 128));
  return b;
}

TEST(OwnershipRequantize, ConformantBoundaryIsARequantizeUnit) {
  auto r = RunCheck(Requant(), true);
  EXPECT_CLEAN(r);
  EXPECT_UNIT(r, "rq", "requantize");
  // The requantize reading wins over treating the Identity as a passive pass-through (which
  // would forbid the parameter change).
  EXPECT_EQ(KindCount(r, "passive"), 0u) << Units(r);
  EXPECT_NO_RULE(r, "op/passive-params");
  EXPECT_FINDING(r, "qdq/requantize", "rq", "requantize boundary");
  const auto* u = UnitWith(r, "rq");
  EXPECT_TRUE(Contains(u->input_qdq, "a_dq")) << Units(r);
  EXPECT_TRUE(Contains(u->output_qdq, "b_q")) << Units(r);
}

// 6.7: "Identity 只表示该分支发生 requantize，不要求其他共享上游 DQ 的分支同时改变参数".
TEST(OwnershipRequantize, OtherBranchOfTheSharedDqKeepsItsParams) {
  auto b = Requant();
  b.Node("Exp", {"a_dq_out"}, {"e"}, {}, "exp");
  QOutput(b, "e", "ze", QParams::U8(0.02f, 0));
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_UNIT(r, "rq", "requantize");
  EXPECT_UNIT(r, "exp", "op");
}

// An Identity whose output also escapes to a non-Q consumer is no requantize marker but an
// ordinary Identity, which must not change the parameters (3.5 last sentence, 5.10).
TEST(OwnershipRequantize, IdentityWithANonQConsumerIsPassive) {
  auto b = Requant();
  b.Node("Exp", {"rq_out"}, {"e"}, {}, "exp");
  QOutput(b, "e", "ze", QParams::U8(0.02f, 0));
  auto r = RunCheck(b);
  EXPECT_EQ(KindCount(r, "requantize"), 0u) << Units(r);
  EXPECT_UNIT(r, "rq", "passive");
  EXPECT_FINDING(r, "op/passive-params", "b_q", "integer type");
  EXPECT_FINDING(r, "op/passive-params", "rq", "Exp 'exp'");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// Two consecutive requantize markers on one path are two units, each owning its boundary.
TEST(OwnershipRequantize, ChainedRequantizeBoundaries) {
  ModelBuilder b;
  auto x = QInput(b, "x", {1, 4});
  b.Node("Sigmoid", {x}, {"s"}, {}, "sig");
  auto ad = b.QDQ("s", "a", QParams::U8(0.004f, 0));
  b.Node("Identity", {ad}, {"rq1_out"}, {}, "rq1");
  auto bd = b.QDQ("rq1_out", "b", QParams::S8(0.01f));
  b.Node("Identity", {bd}, {"rq2_out"}, {}, "rq2");
  auto cd = b.QDQ("rq2_out", "c", QParams::U16(0.0001f, 0));
  b.Node("Tanh", {cd}, {"t"}, {}, "tanh");
  QOutput(b, "t", "z", QParams::U8(0.01f, 128));
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_EQ(KindCount(r, "requantize"), 2u) << Units(r);
  EXPECT_FINDING(r, "qdq/requantize", "rq2", "requantize boundary");
}

// ================================================================== closure (2.3, 5.17)

TEST(OwnershipClosure, UncoveredShapeEinsumAndCustomDomain) {
  {
    auto b = Silu();
    QOutput(b, "mul_out");
    b.Node("Shape", {"x_dq_out"}, {"shp"}, {}, "shape");
    b.Output("shp");
    auto r = RunCheck(b);
    EXPECT_FINDING(r, "closure/uncovered-node", "shape", "Shape");
    EXPECT_NO_RULE(r, "closure/orphan-qdq");
    EXPECT_VERDICT(r, Verdict::kNonConformant);
  }
  {
    ModelBuilder b;
    SideBlock(b);  // keeps the model in scope (see LstmOnlyQuantizedModel below)
    auto a = QInput(b, "a", {2, 3});
    auto c = QInput(b, "c", {3, 4});
    b.Node("Einsum", {a, c}, {"e"}, {ModelBuilder::AttrS("equation", "ij,jk->ik")}, "einsum");
    QOutput(b, "e");
    auto r = RunCheck(b);
    EXPECT_FINDING(r, "closure/uncovered-node", "einsum", "Einsum");
    EXPECT_NO_RULE(r, "closure/orphan-qdq");  // Q/DQ next to an uncovered node: one finding
    EXPECT_VERDICT(r, Verdict::kNonConformant);
  }
  {
    ModelBuilder b;
    auto x = QInput(b, "x", {1, 4});
    b.Node("FancyAct", {x}, {"f"}, {}, "fancy", "com.example");
    b.Node("Sigmoid", {x}, {"s"}, {}, "sig");
    QOutput(b, "s");
    b.Output("f", TP::FLOAT, {1, 4});
    auto r = RunCheck(b);
    EXPECT_FINDING(r, "closure/uncovered-node", "fancy", "FancyAct");
    EXPECT_FINDING(r, "closure/uncovered-node", "fancy", "com.example");
    EXPECT_VERDICT(r, Verdict::kNonConformant);
  }
}

TEST(OwnershipClosure, LstmAndGruAreUnsupported) {
  for (const std::string op : {"LSTM", "GRU"}) {
    const int64_t gates = op == "LSTM" ? 4 : 3;
    ModelBuilder b;
    SideBlock(b);
    auto x = QInput(b, "x", {5, 1, 4});  // [seq, batch, input]
    b.InitF32Rand("W", {1, gates * 8, 4});
    b.InitF32Rand("R", {1, gates * 8, 8});
    b.Node(op, {x, "W", "R"}, {"Y"}, {ModelBuilder::AttrI("hidden_size", 8)}, "rnn");
    QOutput(b, "Y");
    auto r = RunCheck(b);
    EXPECT_FINDING(r, "closure/unsupported-op", "rnn", op);
    EXPECT_NO_RULE(r, "closure/uncovered-node");
    EXPECT_NO_RULE(r, "closure/orphan-qdq");  // its Q/DQ neighbours are not reported again
    EXPECT_VERDICT(r, Verdict::kNonConformant);
  }
}

// A Q/DQ-wrapped LSTM with no other operator. 2.1 excludes only models without Q/DQ edges and
// Q/DQ edges that touch no operator data path ("不接触任何算子或 Pattern 数据路径的 Q/DQ 边");
// these edges are the LSTM's data input and output, and 5.17 is the operator rule that names
// LSTM. Reading: in scope and non_conformant, not a silent not_applicable.
TEST(OwnershipClosure, LstmOnlyQuantizedModelIsNonConformant) {
  ModelBuilder b;
  auto x = QInput(b, "x", {5, 1, 4});
  b.InitF32Rand("W", {1, 32, 4});
  b.InitF32Rand("R", {1, 32, 8});
  b.Node("LSTM", {x, "W", "R"}, {"Y"}, {ModelBuilder::AttrI("hidden_size", 8)}, "rnn");
  QOutput(b, "Y");
  auto r = RunCheck(b);
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  EXPECT_FINDING(r, "closure/unsupported-op", "rnn", "LSTM");
}

// A parameter that must be a direct FP32 initializer but comes through Q/DQ (Pow exponent, PRelu
// slope) is reported once as op/static-param; that Q/DQ is not additionally an orphan (the same
// holds for the BatchNormalization and Clip cases above).
TEST(OwnershipClosure, ParameterThroughQdqIsReportedOnceNotAsOrphan) {
  ModelBuilder b;
  auto x = QInput(b, "x", {1, 4});
  b.InitF32("e", {}, {2.0f});
  auto e = b.QDQ("e", "e", QParams::U8(0.01f, 0));
  b.Node("Pow", {x, e}, {"p"}, {}, "pow");
  QOutput(b, "p");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/static-param", "pow", "exponent");
  EXPECT_NO_RULE(r, "closure/orphan-qdq");

  ModelBuilder s;
  auto xs = QInput(s, "x", {1, 4});
  s.InitF32Fill("slope", {4}, 0.1f);
  auto sl = s.QDQ("slope", "sl", QParams::U8(0.01f, 0));
  s.Node("PRelu", {xs, sl}, {"p"}, {}, "prelu");
  QOutput(s, "p");
  auto rs = RunCheck(s);
  EXPECT_FINDING(rs, "op/static-param", "prelu", "slope");
  EXPECT_NO_RULE(rs, "closure/orphan-qdq");
}

// A DQ whose output feeds only a non-quant-only op (5.9 owns no Q/DQ) and whose Q quantizes a
// graph input: the Q/DQ serves no rule.
TEST(OwnershipClosure, DqFeedingOnlyANonQuantOpIsOrphan) {
  ModelBuilder b;
  QOutput(b, ConvHead(b));
  auto x2 = QInput(b, "x2", {1, 4});
  b.Node("Abs", {x2}, {"abs_out"}, {}, "abs");
  b.Output("abs_out");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "closure/orphan-qdq", "x2_dq", "Abs 'abs'");
  EXPECT_EQ(Find(r, "closure/orphan-qdq").size(), 1u) << "one finding per Q/DQ edge\n" << Dump(r);
  EXPECT_UNIT(r, "abs", "non-quant");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  // A Q/DQ that is an operator's output edge may feed a non-quant op (5.9): not orphan.
  ModelBuilder ok;
  auto c = ok.QDQ(ConvHead(ok), "y", QParams::U8(0.05f, 0));
  ok.Node("Abs", {c}, {"abs_out"}, {}, "abs");
  ok.Output("abs_out");
  EXPECT_CLEAN(RunCheck(ok, true));
}

// In an otherwise quantized model, a Q/DQ between a graph input and a graph output is owned by
// nothing (2.1 last sentence, 2.3).
TEST(OwnershipClosure, QdqBetweenGraphInputAndOutputInAQuantizedModelIsOrphan) {
  ModelBuilder b;
  QOutput(b, ConvHead(b));
  b.Output(QInput(b, "x2", {1, 4}));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "closure/orphan-qdq", "x2_dq", "not consumed by any operator");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// ================================================================== scope (2.1)

TEST(OwnershipScope, FloatOnlyModelIsNotApplicable) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  b.InitF32Rand("w", {8, 4, 3, 3});
  b.Node("Conv", {"x", "w"}, {"c"}, {ModelBuilder::AttrInts("pads", {1, 1, 1, 1})}, "conv");
  b.Node("Relu", {"c"}, {"r"}, {}, "relu");
  b.Node("Shape", {"r"}, {"shp"}, {}, "shape");
  b.Output("r");
  b.Output("shp");
  auto r = RunCheck(b, true);
  EXPECT_VERDICT(r, Verdict::kNotApplicable);
  ASSERT_TRUE(Has(r, "scope/no-quantized-edge")) << Dump(r);
  EXPECT_NE(Find(r, "scope/no-quantized-edge")[0]->message.find("no Q/DQ nodes"), std::string::npos)
      << Dump(r);
  EXPECT_EQ(r.summary.errors, 0u) << Dump(r);
  EXPECT_EQ(r.findings.size(), 1u) << Dump(r);
}

TEST(OwnershipScope, QdqOnlyBetweenGraphInputAndOutputIsNotApplicable) {
  ModelBuilder b;
  b.Output(QInput(b));
  auto r = RunCheck(b, true);
  EXPECT_VERDICT(r, Verdict::kNotApplicable);
  EXPECT_EQ(r.summary.owned_qdq_edges, 0u);
  EXPECT_EQ(r.summary.qdq_edges, 1u);
  EXPECT_EQ(r.findings.size(), 1u) << Dump(r);
  ASSERT_TRUE(Has(r, "scope/no-quantized-edge")) << Dump(r);
  EXPECT_NE(Find(r, "scope/no-quantized-edge")[0]->message.find(
                "no Q/DQ node on an operator's data path"),
            std::string::npos)
      << Dump(r);
}

}  // namespace
}  // namespace axqc::test
