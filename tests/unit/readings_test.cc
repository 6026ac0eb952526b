// RULES.md decided readings 8-13 and the precise findings that real exports needed: one test (or
// more) per reading, each with the rule IDs, node names and verdicts it must produce.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <string>
#include <vector>

#include "axqc/render.h"
#include "check_helpers.h"
#include "exit_codes.h"

namespace axqc::test {
namespace {

using B = ModelBuilder;

#define EXPECT_VERDICT(report, v) EXPECT_EQ((report).verdict, v) << Dump(report)

bool Names(const Finding& f, const std::string& node) {
  return std::find(f.nodes.begin(), f.nodes.end(), node) != f.nodes.end();
}

const UnitInfo* UnitWith(const Report& r, const std::string& node) {
  for (const auto& u : r.units) {
    if (std::find(u.nodes.begin(), u.nodes.end(), node) != u.nodes.end()) return &u;
  }
  return nullptr;
}

// A conformant quantized block (z -> Q/DQ -> Sigmoid "anchor" -> Q/DQ -> output) that keeps a
// model in scope.
void AddQuantizedAnchor(ModelBuilder& b) {
  b.Input("z", TP::FLOAT, {1, 4});
  auto z = b.QDQ("z", "z", QParams::U8());
  b.Node("Sigmoid", {z}, {"zs"}, {}, "anchor");
  b.Output(b.QDQ("zs", "zo", QParams::U8(0.004f, 0)));
}

std::string QInput(ModelBuilder& b, const std::string& name, std::vector<int64_t> shape,
                   const QParams& p = QParams::U8()) {
  b.Input(name, TP::FLOAT, shape);
  return b.QDQ(name, name, p);
}

// ======================================================================== reading 8

// Only Add, Sub, Mul (5.5) and Concat (5.12) have a native-integer mode. Any other operator
// computing on integer data is covered by no rule.
TEST(Reading8NativeInteger, OtherOperatorsOnIntegerDataAreUncovered) {
  struct Case {
    std::string op;
    std::vector<std::string> inputs;
    std::vector<onnx::AttributeProto> attrs;
  };
  const std::vector<Case> cases = {
      {"Div", {"n", "k"}, {}},
      {"Max", {"n", "k"}, {}},
      {"Min", {"n", "k"}, {}},
      {"Pow", {"n", "k"}, {}},
      {"Where", {"c", "n", "k"}, {}},
      {"Relu", {"n"}, {}},
      {"Clip", {"n"}, {}},
      {"ReduceSum", {"n"}, {B::AttrI("keepdims", 1)}},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.op);
    ModelBuilder b;
    AddQuantizedAnchor(b);
    b.Input("n", TP::INT64, {2});
    b.InitInt("k", TP::INT64, {2}, {2, 3});
    b.InitInt("c", TP::BOOL, {2}, {1, 0});
    b.Node(tc.op, tc.inputs, {"o"}, tc.attrs, "op");
    b.Output("o");
    auto r = RunCheck(b, true);
    EXPECT_FINDING(r, "closure/uncovered-node", "op", "has no native-integer mode");
    EXPECT_FINDING(r, "closure/uncovered-node", "op", "(INT64)");
    EXPECT_FINDING(r, "closure/uncovered-node", "op", "initializer");
    EXPECT_EQ(Find(r, "closure/uncovered-node").size(), 1u) << Dump(r);
    ASSERT_NE(UnitWith(r, "op"), nullptr);
    EXPECT_EQ(UnitWith(r, "op")->kind, "uncovered");
    EXPECT_VERDICT(r, Verdict::kNonConformant);
  }
}

TEST(Reading8NativeInteger, GrantedOperatorsAndNonQuantModesStayConformant) {
  for (const std::string op : {"Add", "Sub", "Mul", "Concat", "Reshape", "Cast"}) {
    SCOPED_TRACE(op);
    ModelBuilder b;
    AddQuantizedAnchor(b);
    b.Input("n", TP::INT64, {2});
    std::vector<onnx::AttributeProto> attrs;
    std::vector<std::string> ins{"n", "k"};
    if (op == "Concat") attrs.push_back(B::AttrI("axis", 0));
    if (op == "Cast") {
      attrs.push_back(B::AttrI("to", TP::INT32));
      ins = {"n"};
    }
    b.InitInt("k", TP::INT64, {op == "Reshape" ? 1 : 2},
              op == "Reshape" ? std::vector<int64_t>{-1} : std::vector<int64_t>{2, 3});
    b.Node(op, ins, {"o"}, attrs, "op");
    b.Output("o");
    auto r = RunCheck(b, true);
    EXPECT_CLEAN(r);
    EXPECT_TRUE(r.findings.empty()) << Dump(r);
  }
}

// ======================================================================== reading 9

// Conv with input x [1,4,8,8], the given weight DQ output, FP32 bias and Q/DQ output.
ModelBuilder ConvWith(ModelBuilder b, const std::string& w) {
  auto x = QInput(b, "x", {1, 4, 8, 8});
  b.InitF32Fill("bias", {8}, 0.1f);
  b.Node("Conv", {x, w, "bias"}, {"conv_out"}, {B::AttrInts("pads", {1, 1, 1, 1})}, "conv");
  b.Output(b.QDQ("conv_out", "y", QParams::U8(0.05f, 0)));
  return b;
}

// A weight built as integer initializer -> DQ -> Q -> DQ is neither weight form of 3.6: the
// extra edge is named by qdq/const-form, not left unowned and silent.
TEST(Reading9EveryEdgeOwnedOrNamed, ConstantQuantizedTwiceIsConstForm) {
  const auto wp = QParams::PerChannel(QType::kS8, Scales(8), 0);
  for (bool int_root : {true, false}) {
    SCOPED_TRACE(int_root ? "integer initializer root" : "FP32 initializer root");
    ModelBuilder b;
    const std::string w1 =
        int_root ? b.WeightIntDQ("w", {8, 4, 3, 3}, wp) : b.WeightQDQ("w", {8, 4, 3, 3}, wp);
    const std::string w2 = b.QDQ(w1, "w2", wp);
    auto r = RunCheck(ConvWith(std::move(b), w2));
    EXPECT_FINDING(r, "qdq/const-form", "w_dq", "neither constant form of 3.6");
    const auto* f = At(r, "qdq/const-form", "w_dq");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(Names(*f, "conv") && Names(*f, "w2_q") && Names(*f, "w2_dq")) << Dump(r);
    EXPECT_EQ(f->op_type, "Conv");
    EXPECT_NO_RULE(r, "closure/orphan-qdq");
    EXPECT_EQ(r.summary.qdq_edges, 4u);  // x, w, w2, y
    EXPECT_EQ(r.summary.owned_qdq_edges, 3u);
    EXPECT_VERDICT(r, Verdict::kNonConformant);
  }
}

// A runtime activation quantized twice with the same parameters (DQ1 -> Q2 directly, 3.5) is
// part of the boundary: owned, no finding.
TEST(Reading9EveryEdgeOwnedOrNamed, SameParameterChainOnAnActivationIsOwned) {
  ModelBuilder b;
  AddQuantizedAnchor(b);
  auto x = QInput(b, "x", {1, 4});
  b.Node("Sigmoid", {b.QDQ(x, "x2", QParams::U8())}, {"s"}, {}, "sig");
  b.Output(b.QDQ("s", "s", QParams::U8(0.004f, 0)));
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_EQ(r.summary.owned_qdq_edges, r.summary.qdq_edges);
}

// Q/DQ next to an unsupported operator: not owned, named by the operator's finding.
TEST(Reading9EveryEdgeOwnedOrNamed, QdqOfAnUnsupportedOperatorIsNamedByItsFinding) {
  ModelBuilder b;
  auto x = QInput(b, "x", {5, 1, 4});
  b.InitF32Rand("W", {1, 32, 4});
  b.InitF32Rand("R", {1, 32, 8});
  b.Node("LSTM", {x, "W", "R"}, {"Y"}, {B::AttrI("hidden_size", 8)}, "rnn");
  b.Output(b.QDQ("Y", "y", QParams::U8(0.05f, 0)));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "closure/unsupported-op", "rnn", "its Q/DQ 'x_dq', 'y_q' serve no rule");
  const auto* f = At(r, "closure/unsupported-op", "rnn");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(Names(*f, "x_dq") && Names(*f, "y_q")) << Dump(r);
  EXPECT_NO_RULE(r, "closure/orphan-qdq");
  EXPECT_EQ(r.summary.qdq_edges, 2u);
  EXPECT_EQ(r.summary.owned_qdq_edges, 0u);
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// ======================================================================== reading 10

// Conv with `cout` output channels whose weight DQ uses `w`.
ModelBuilder OneConv(int64_t cout, const QParams& w, bool quantized_bias = false,
                     QParams bias = QParams::S32()) {
  ModelBuilder b;
  auto x = QInput(b, "x", {1, 4, 8, 8});
  auto wd = b.WeightQDQ("w", {cout, 4, 3, 3}, w);
  std::vector<std::string> ins{x, wd};
  if (quantized_bias) {
    b.InitInt("b", TP::INT32, {cout}, std::vector<int64_t>(static_cast<std::size_t>(cout), 3));
    ins.push_back(b.Dequantize("b", "b", bias));
  }
  b.Node("Conv", ins, {"conv_out"}, {B::AttrInts("pads", {1, 1, 1, 1})}, "conv");
  b.Output(b.QDQ("conv_out", "y", QParams::U8(0.05f, 0)));
  return b;
}

TEST(Reading10PerChannel, OneChannelWeightNeedsTheOneElementFormWithAnAxis) {
  // [1] scale and zero_point with axis 0: per-channel over one channel.
  auto ok = QParams::PerChannel(QType::kS8, {0.01f}, 0);
  EXPECT_CLEAN(RunCheck(OneConv(1, ok), true));
  // [1] without an axis attribute: per-tensor.
  auto no_axis = ok;
  no_axis.axis.reset();
  auto r = RunCheck(OneConv(1, no_axis));
  EXPECT_FINDING(r, "role/weight-type", "w_dq", "quantized per-tensor");
  EXPECT_FINDING(r, "role/weight-type", "w_dq", "a [1] scale and zero_point with axis=0");
  // Rank-0 with an axis attribute: per-tensor too, not a wrong axis.
  auto rank0 = QParams::S8(0.01f);
  rank0.axis = 0;
  auto r0 = RunCheck(OneConv(1, rank0));
  EXPECT_FINDING(r0, "role/weight-type", "w_dq", "the axis attribute does not make it per-channel");
  EXPECT_NO_RULE(r0, "qdq/weight-axis");
}

// Real exports: a per-tensor weight (rank-0 scale) that carries axis=1 is reported as per-tensor,
// not as "quantized along axis 1".
TEST(Reading10PerChannel, PerTensorWeightWithAnAxisAttributeIsPerTensor) {
  for (bool one_element : {false, true}) {
    SCOPED_TRACE(one_element ? "[1] scale" : "rank-0 scale");
    auto p = QParams::S8(0.01f);
    p.scalar = !one_element;
    p.axis = 1;
    auto r = RunCheck(OneConv(8, p));
    EXPECT_FINDING(r, "role/weight-type", "w_dq",
                   std::string("is quantized per-tensor (its ") +
                       (one_element ? "one-element" : "rank-0") + " scale is per-tensor");
    EXPECT_NO_RULE(r, "qdq/weight-axis");
    EXPECT_NO_RULE(r, "qdq/granularity");
    EXPECT_EQ(Find(r, "role/weight-type").size(), 1u) << Dump(r);
    EXPECT_VERDICT(r, Verdict::kNonConformant);
  }
}

TEST(Reading10PerChannel, OneChannelBiasNeedsTheOneElementFormWithAnAxis) {
  const auto w = QParams::PerChannel(QType::kS8, {0.01f}, 0);
  const float bs = 0.02f * 0.01f;
  EXPECT_CLEAN(RunCheck(OneConv(1, w, true, QParams::PerChannel(QType::kS32, {bs}, 0)), true));
  auto r = RunCheck(OneConv(1, w, true, QParams::S32(bs)));
  EXPECT_FINDING(r, "role/bias-type", "b_dq", "quantized per-tensor");
  EXPECT_FINDING(r, "role/bias-type", "b_dq", "one channel: a [1] scale");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// An activation in the [1]-with-axis form is per-channel (one channel), and activations are
// per-tensor only.
TEST(Reading10PerChannel, OneElementScaleWithAxisOnAnActivationIsPerChannel) {
  ModelBuilder b;
  auto p = QParams::PerChannel(QType::kU8, {0.02f}, 1);
  p.zero_point = {128};
  auto x = QInput(b, "x", {1, 1, 4, 4}, p);
  b.Node("Sigmoid", {x}, {"s"}, {}, "sig");
  b.Output(b.QDQ("s", "y", QParams::U8(0.004f, 0)));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "role/activation-type", "x_dq", "per-channel");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// ======================================================================== reading 11

// A Q that feeds a Concat directly: broken Q/DQ on a data path keeps the model in scope.
TEST(Reading11Scope, BrokenQdqOnADataPathIsInScope) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4});
  auto q = b.Quantize("x", "x", QParams::U8());
  b.InitInt("k", TP::UINT8, {1, 4}, {1, 2, 3, 4});
  b.Node("Concat", {q, "k"}, {"cat"}, {B::AttrI("axis", 0)}, "concat");
  b.Output("cat");
  auto r = RunCheck(b);
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  EXPECT_FINDING(r, "qdq/q-fanout", "x_q", "Concat 'concat'");
  EXPECT_NO_RULE(r, "scope/no-quantized-edge");
}

TEST(Reading11Scope, QuantizationByOtherMeansIsInScopeAndNamed) {
  struct Case {
    std::string op, domain, needle;
  };
  for (const Case& tc : std::vector<Case>{
           {"QuantizeLinear", "com.microsoft", "domain 'com.microsoft'"},
           {"DynamicQuantizeLinear", "", "dynamic quantization"},
           {"QLinearSigmoid", "com.microsoft", "QOperator-format"},
       }) {
    SCOPED_TRACE(tc.op);
    ModelBuilder b;
    b.Input("x", TP::FLOAT, {1, 4});
    std::vector<std::string> outs{"o"};
    std::vector<std::string> ins{"x"};
    if (tc.op == "QuantizeLinear") {
      b.InitF32("s", {}, {0.02f});
      b.InitInt("zp", TP::UINT8, {}, {128});
      ins = {"x", "s", "zp"};
    } else if (tc.op == "DynamicQuantizeLinear") {
      outs = {"o", "o_scale", "o_zp"};
    } else {
      b.InitF32("s", {}, {0.02f});
      b.InitInt("zp", TP::UINT8, {}, {128});
      b.Input("xq", TP::UINT8, {1, 4});
      ins = {"xq", "s", "zp", "s", "zp"};
    }
    b.Node(tc.op, ins, outs, {}, "quant", tc.domain);
    b.Output("o", TP::UINT8, {1, 4});
    auto r = RunCheck(b.AutoValueInfo(false));
    EXPECT_VERDICT(r, Verdict::kNonConformant);
    EXPECT_FINDING(r, "closure/uncovered-node", "quant", tc.needle);
    EXPECT_FINDING(r, "closure/uncovered-node", "quant", "fix:");
    EXPECT_NO_RULE(r, "scope/no-quantized-edge");
  }
}

// Q/DQ inside a model-local function body: in scope, the call is named with the remedy.
TEST(Reading11Scope, QdqInsideAModelLocalFunctionIsInScope) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4});
  b.Node("QBlock", {"x"}, {"y"}, {}, "call", "local");
  b.Output("y", TP::FLOAT, {1, 4});
  auto m = b.AutoValueInfo(false).Build();
  auto* f = m.add_functions();
  f->set_name("QBlock");
  f->set_domain("local");
  f->add_input("a");
  f->add_output("d");
  auto* imp = f->add_opset_import();
  imp->set_domain("");
  imp->set_version(21);
  auto* s = f->add_node();
  s->set_op_type("Constant");
  s->add_output("s");
  auto* av = s->add_attribute();
  av->set_name("value_float");
  av->set_type(onnx::AttributeProto::FLOAT);
  av->set_f(0.02f);
  auto* q = f->add_node();
  q->set_op_type("QuantizeLinear");
  q->set_name("fq");
  q->add_input("a");
  q->add_input("s");
  q->add_output("qa");
  auto* dq = f->add_node();
  dq->set_op_type("DequantizeLinear");
  dq->add_input("qa");
  dq->add_input("s");
  dq->add_output("d");
  std::string bytes;
  m.SerializeToString(&bytes);
  auto r = CheckBytes(bytes, "fn.onnx", {});
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  EXPECT_FINDING(r, "closure/uncovered-node", "call", "model-local function 'local.QBlock'");
  EXPECT_FINDING(r, "closure/uncovered-node", "call", "QuantizeLinear 'fq'");
  EXPECT_FINDING(r, "closure/uncovered-node", "call", "inline_local_functions");
}

// Q/DQ inside a control-flow body (project reading, docs/readings.md 17): in scope, the
// control-flow node is named.
TEST(Reading11Scope, QdqInsideAControlFlowBodyIsInScope) {
  auto branch = [](const std::string& name, bool quantize) {
    ModelBuilder body;
    body.InitF32("bs", {}, {0.02f});
    body.InitInt("bz", TP::UINT8, {}, {128});
    if (quantize) {
      body.Node("QuantizeLinear", {"x", "bs", "bz"}, {"bq"}, {}, name + "_q");
      body.Node("DequantizeLinear", {"bq", "bs", "bz"}, {name + "_out"}, {}, name + "_dq");
    } else {
      body.Node("Identity", {"x"}, {name + "_out"}, {}, name + "_id");
    }
    body.Output(name + "_out", TP::FLOAT, {1, 4});
    auto g = body.AutoValueInfo(false).Build().graph();
    g.set_name(name);
    return g;
  };
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4});
  b.Input("cond", TP::BOOL, {});
  b.Node("If", {"cond"}, {"y"},
         {B::AttrG("then_branch", branch("then", true)),
          B::AttrG("else_branch", branch("else", false))},
         "if");
  b.Output("y", TP::FLOAT, {1, 4});
  auto r = RunCheck(b.AutoValueInfo(false));
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  EXPECT_NO_RULE(r, "onnx/invalid-model");
  EXPECT_FINDING(r, "closure/uncovered-node", "if",
                 "control flow whose body contains QuantizeLinear 'then_q'");
  EXPECT_NO_RULE(r, "scope/no-quantized-edge");
}

// An unquantized model is not_applicable even when it is not valid ONNX; its validity findings
// are kept.
TEST(Reading11Scope, UnquantizedInvalidModelIsNotApplicableWithItsValidityFindings) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 3});
  b.InitF32Fill("w", {1, 4}, 0.1f);
  b.Node("Add", {"x", "w"}, {"y"}, {}, "add");
  b.Output("y", TP::FLOAT, {1, 4});
  auto r = RunCheck(b.AutoValueInfo(false));
  EXPECT_VERDICT(r, Verdict::kNotApplicable);
  EXPECT_EQ(Find(r, "onnx/invalid-model").size(), 1u) << Dump(r);
  EXPECT_TRUE(Has(r, "scope/no-quantized-edge")) << Dump(r);
  EXPECT_EQ(ExitCodeFor(r.verdict), 3);
}

// Q/DQ that only quantize a parameter (a Constant-fed scale, a BatchNormalization statistic) or
// sit between a graph input and output put nothing in scope.
TEST(Reading11Scope, QdqOffEveryDataPathIsNotInScope) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 2, 2});
  b.InitF32Fill("bn_scale", {4}, 1.0f);
  b.InitF32Fill("bn_bias", {4}, 0.0f);
  b.InitF32Fill("bn_mean", {4}, 0.0f);
  b.InitF32Fill("bn_var", {4}, 1.0f);
  auto scale = b.QDQ("bn_scale", "p", QParams::U8(0.01f, 0));
  b.Node("BatchNormalization", {"x", scale, "bn_bias", "bn_mean", "bn_var"}, {"y"}, {}, "bn");
  b.Output("y");
  b.Input("x2", TP::FLOAT, {1, 4});
  b.Output(b.QDQ("x2", "x2", QParams::U8()));
  auto r = RunCheck(b);
  EXPECT_VERDICT(r, Verdict::kNotApplicable);
  ASSERT_TRUE(Has(r, "scope/no-quantized-edge")) << Dump(r);
  EXPECT_NE(Find(r, "scope/no-quantized-edge")[0]->message.find("2 Q/DQ edges"), std::string::npos)
      << Dump(r);
}

// ======================================================================== reading 12

ModelBuilder Requantize(bool same_value) {
  ModelBuilder b;
  auto x = QInput(b, "x", {1, 4});  // rank-0 scale and zero_point
  auto p2 = QParams::U8(same_value ? 0.02f : 0.03f, 128);
  p2.scalar = false;  // [1]
  b.Node("Sigmoid", {b.QDQ(x, "r", p2)}, {"s"}, {}, "sig");
  b.Output(b.QDQ("s", "y", QParams::U8(0.004f, 0)));
  return b;
}

TEST(Reading12Requantize, PerTensorParametersAreComparedByValue) {
  EXPECT_CLEAN(RunCheck(Requantize(true), true));
  auto r = RunCheck(Requantize(false));
  EXPECT_FINDING(r, "qdq/requantize-identity", "r_q", "scale[0] 0.02 vs 0.03");
  // Within one Q/DQ pair the shapes must still match.
  ModelBuilder pair;
  pair.Input("x", TP::FLOAT, {1, 4});
  auto q = pair.Quantize("x", "xq", QParams::U8());
  auto p1 = QParams::U8();
  p1.scalar = false;
  pair.Node("Sigmoid", {pair.Dequantize(q, "xd", p1)}, {"s"}, {}, "sig");
  pair.Output(pair.QDQ("s", "y", QParams::U8(0.004f, 0)));
  auto rp = RunCheck(pair);
  EXPECT_FINDING(rp, "qdq/pair-mismatch", "xd_dq", "scale shape [] vs [1]");
}

// ======================================================================== reading 13

TEST(Reading13Constant, ConstantNodeIsReportedOnceAndNamedAsTheCause) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4});
  b.Node("Constant", {}, {"s"}, {B::AttrT("value", B::MakeF32("", {}, {0.02f}))}, "const_scale");
  b.Node("Constant", {}, {"lo"}, {B::AttrT("value", B::MakeF32("", {}, {0.0f}))}, "const_min");
  b.InitInt("zp", TP::UINT8, {}, {128});
  b.Node("QuantizeLinear", {"x", "s", "zp"}, {"xq"}, {}, "x_q");
  b.Node("DequantizeLinear", {"xq", "s", "zp"}, {"xd"}, {}, "x_dq");
  b.Node("Clip", {"xd", "lo"}, {"c"}, {}, "clip");
  b.Output(b.QDQ("c", "y", QParams::U8(0.02f, 0)));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "onnx/constant-node", "const_scale", "must be graph initializers");
  EXPECT_FINDING(r, "onnx/constant-node", "const_min", "must be graph initializers");
  EXPECT_NO_RULE(r, "closure/uncovered-node");
  ASSERT_NE(UnitWith(r, "const_scale"), nullptr);
  EXPECT_EQ(UnitWith(r, "const_scale")->kind, "constant");
  // Consequences name the Constant and say so.
  EXPECT_FINDING(r, "qdq/scale-not-initializer", "x_q", "from Constant node 'const_scale'");
  EXPECT_TRUE(Names(*At(r, "qdq/scale-not-initializer", "x_q"), "const_scale")) << Dump(r);
  EXPECT_FINDING(r, "op/clip-dynamic", "clip", "comes from Constant node 'const_min'");
  const auto* clip = At(r, "op/clip-dynamic", "clip");
  ASSERT_NE(clip, nullptr);
  EXPECT_TRUE(Names(*clip, "const_min"));
  EXPECT_EQ(clip->message.find("dynamic"), std::string::npos) << clip->message;
  EXPECT_EQ(clip->group_key, "Clip bound from a Constant node");
  EXPECT_VERDICT(r, Verdict::kNonConformant);
}

// ======================================================================== precise findings

// A quantized pass-through exit that reaches several consumers without Q/DQ names each of them.
TEST(PreciseFindings, PassiveExitToSeveralConsumersNamesEveryOne) {
  ModelBuilder b;
  auto x = QInput(b, "x", {1, 4});
  b.InitInt("shape", TP::INT64, {2}, {2, 2});
  b.Node("Reshape", {x, "shape"}, {"r"}, {}, "reshape");
  b.Node("Sigmoid", {"r"}, {"a"}, {}, "sig");
  b.Node("Tanh", {"r"}, {"t"}, {}, "tanh");
  b.Output(b.QDQ("a", "ya", QParams::U8(0.004f, 0)));
  b.Output(b.QDQ("t", "yt", QParams::U8(0.008f, 128)));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/passive-params", "reshape",
                 "feeds Sigmoid 'sig', Tanh 'tanh' without Q/DQ");
  const auto* f = At(r, "op/passive-params", "reshape");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(Names(*f, "sig") && Names(*f, "tanh") && Names(*f, "x_dq")) << Dump(r);
}

// A Q feeding several DQs, one of which is a graph output: qdq/q-fanout names them all, and the
// graph-output DQ is not an extra orphan.
TEST(PreciseFindings, QFanoutWithAGraphOutputDqIsOneFinding) {
  ModelBuilder b;
  b.Node("Sigmoid", {QInput(b, "xi", {1, 4})}, {"s"}, {}, "sig");
  auto q = b.Quantize("s", "s", QParams::U8(0.004f, 0));
  auto d1 = b.Dequantize(q, "s", QParams::U8(0.004f, 0));
  b.Node("DequantizeLinear", {q, "s_scale", "s_zp"}, {"s_dq2_out"}, {}, "s_dq2");
  b.Node("Tanh", {d1}, {"t"}, {}, "tanh");
  b.Output(b.QDQ("t", "y", QParams::U8(0.008f, 128)));
  b.Output("s_dq2_out");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "qdq/q-fanout", "s_q", "has 2 consumers including 2 DQs");
  const auto* f = At(r, "qdq/q-fanout", "s_q");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(Names(*f, "s_dq") && Names(*f, "s_dq2")) << Dump(r);
  EXPECT_NO_RULE(r, "closure/orphan-qdq");
}

// A node that reads one tensor twice is listed once, with "1 consumer".
TEST(PreciseFindings, NodeReadingATensorTwiceIsListedOnce) {
  ModelBuilder b;
  AddQuantizedAnchor(b);
  b.Input("x", TP::FLOAT, {1, 4});
  auto q = b.Quantize("x", "x", QParams::U8());
  b.Node("Mul", {q, q}, {"m"}, {}, "mul");
  b.Output("m", TP::UINT8, {1, 4});
  auto r = RunCheck(b.AutoValueInfo(false));
  EXPECT_FINDING(r, "qdq/q-fanout", "x_q", "has 1 consumer (non-DQ: Mul 'mul')");
  // An orphan DQ read twice by one node.
  ModelBuilder o;
  AddQuantizedAnchor(o);
  auto d = QInput(o, "x", {1, 4});
  o.Node("Equal", {d, d}, {"e"}, {}, "eq");
  o.Output("e");
  auto ro = RunCheck(o);
  EXPECT_FINDING(ro, "closure/orphan-qdq", "x_dq", "consumed only by Equal 'eq', none");
}

// The ownership map calls a unit quantized only when it owns Q/DQ.
TEST(PreciseFindings, OwnershipMapNeverCallsAnUnquantizedUnitQuantized) {
  ModelBuilder b;
  AddQuantizedAnchor(b);
  b.Input("f", TP::FLOAT, {1, 4});
  b.Node("Sigmoid", {"f"}, {"fs"}, {}, "float_sig");
  b.Output("fs");
  auto r = RunCheck(b);
  const auto* u = UnitWith(r, "float_sig");
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->mode, "unquantized");
  EXPECT_EQ(UnitWith(r, "anchor")->mode, "quantized");
  TextOptions t;
  t.explain = true;
  const std::string text = RenderText(r, t);
  EXPECT_NE(text.find("op Sigmoid (unquantized): float_sig"), std::string::npos) << text;
}

// Weight path int -> DQ (per-channel, axis 1) -> Transpose(perm 1,0,2,3) -> Q/DQ -> Conv weight:
// the exit shares the entry's channels along the permuted axis 0.
ModelBuilder TransposedWeight(int64_t exit_axis) {
  ModelBuilder b;
  auto x = QInput(b, "x", {1, 8, 8, 8});
  const auto entry = QParams::PerChannel(QType::kS8, Scales(8), 1);
  auto w = b.WeightIntDQ("w", {8, 8, 3, 3}, entry);
  b.Node("Transpose", {w}, {"wt"}, {B::AttrInts("perm", {1, 0, 2, 3})}, "transpose");
  auto exit = QParams::PerChannel(QType::kS8, Scales(8), exit_axis);
  auto wq = b.QDQ("wt", "wt", exit);
  b.Node("Conv", {x, wq}, {"conv_out"}, {B::AttrInts("pads", {1, 1, 1, 1})}, "conv");
  b.Output(b.QDQ("conv_out", "y", QParams::U8(0.05f, 0)));
  return b;
}

TEST(PreciseFindings, PerChannelPassiveExitAfterTransposeUsesThePermutedAxis) {
  EXPECT_CLEAN(RunCheck(TransposedWeight(0), true));
  auto r = RunCheck(TransposedWeight(1));
  EXPECT_FINDING(r, "op/passive-params", "wt_q", "quantize the exit along axis 0");
  EXPECT_FINDING(r, "op/passive-params", "wt_q",
                 "after Transpose 'transpose' the entry's channel axis 1 is axis 0");
}

// onnx/invalid-model says how to fix its cause.
TEST(PreciseFindings, InvalidModelHintsFollowTheCause) {
  const auto lib_ir = std::to_string(onnx::IR_VERSION);
  {
    ModelBuilder b(21, onnx::IR_VERSION + 1);
    b.Input("x", TP::FLOAT, {1});
    b.Node("Relu", {"x"}, {"y"}, {}, "relu");
    b.Output("y", TP::FLOAT, {1});
    auto r = RunCheck(b.AutoValueInfo(false));
    auto f = Find(r, "onnx/invalid-model");
    ASSERT_EQ(f.size(), 1u) << Dump(r);
    EXPECT_NE(f[0]->message.find("IR version " + std::to_string(onnx::IR_VERSION + 1)),
              std::string::npos)
        << f[0]->message;
    EXPECT_NE(f[0]->message.find("(IR " + lib_ir + ")"), std::string::npos) << f[0]->message;
    EXPECT_NE(f[0]->message.find("writing ir_version " + lib_ir + " back is safe"),
              std::string::npos)
        << f[0]->message;
    EXPECT_EQ(f[0]->message.find("re-export"), std::string::npos) << f[0]->message;
  }
  {
    ModelBuilder b(99);
    b.Input("x", TP::FLOAT, {1});
    b.Node("Relu", {"x"}, {"y"}, {}, "relu");
    b.Output("y", TP::FLOAT, {1});
    const auto r = RunCheck(b.AutoValueInfo(false));
    auto f = Find(r, "onnx/invalid-model");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0]->message.find("onnx.version_converter.convert_version"), std::string::npos)
        << f[0]->message;
  }
  {  // not topologically sorted
    ModelBuilder b;
    b.Input("x", TP::FLOAT, {1, 4});
    b.Node("Sigmoid", {"t"}, {"y"}, {}, "late");
    b.Node("Tanh", {"x"}, {"t"}, {}, "early");
    b.Output("y", TP::FLOAT, {1, 4});
    const auto r = RunCheck(b.AutoValueInfo(false));
    auto f = Find(r, "onnx/invalid-model");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0]->message.find("not topologically sorted"), std::string::npos) << f[0]->message;
    EXPECT_EQ(f[0]->group_key, "graph not topologically sorted (or a dangling input)");
  }
  {  // a dangling input
    ModelBuilder b;
    b.Input("x", TP::FLOAT, {1, 4});
    b.Node("Add", {"x", "nowhere"}, {"y"}, {}, "add");
    b.Output("y", TP::FLOAT, {1, 4});
    const auto r = RunCheck(b.AutoValueInfo(false));
    auto f = Find(r, "onnx/invalid-model");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0]->message.find("'nowhere' is produced by no node"), std::string::npos)
        << f[0]->message;
  }
  {  // a graph output without a type
    ModelBuilder b;
    b.Input("x", TP::FLOAT, {1, 4});
    b.Node("Relu", {"x"}, {"y"}, {}, "relu");
    b.Output("y", TP::FLOAT, {1, 4});
    auto m = b.AutoValueInfo(false).Build();
    m.mutable_graph()->mutable_output(0)->clear_type();
    std::string bytes;
    m.SerializeToString(&bytes);
    auto r = CheckBytes(bytes, "untyped.onnx", {});
    auto f = Find(r, "onnx/invalid-model");
    ASSERT_EQ(f.size(), 1u) << Dump(r);
    EXPECT_NE(f[0]->message.find("graph output 'y' has no type"), std::string::npos)
        << f[0]->message;
    EXPECT_NE(f[0]->message.find("make_tensor_value_info"), std::string::npos) << f[0]->message;
  }
}

}  // namespace
}  // namespace axqc::test
