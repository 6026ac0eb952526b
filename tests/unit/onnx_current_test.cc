// Models of current ONNX releases (RULES.md readings 14-16): Q/DQ of opsets 19-25 with all their
// attributes and types, operators added in newer opsets, IR 11-13 files, uncalled local functions,
// control-flow bodies and the FP32 value checks. Every model is written by the repository's model
// builder (Python's onnx 1.12 cannot write them). Tests that need a newer opset than the linked
// ONNX library knows say so and are skipped (the library's own limit is onnx/invalid-model there).
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "axqc/fix.h"
#include "axqc/operators.h"
#include "check_helpers.h"

namespace axqc::test {
namespace {

using B = ModelBuilder;

int LibraryOpset() {
  const auto& m = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  return m.at(onnx::ONNX_DOMAIN).second;
}

#define NEED_OPSET(n)                                                                    \
  if (LibraryOpset() < (n))                                                              \
  GTEST_SKIP() << "the linked ONNX library knows ai.onnx opsets up to " << LibraryOpset() \
               << ", this model needs " << (n)

#define EXPECT_VERDICT(report, v) EXPECT_EQ((report).verdict, v) << Dump(report)

// x -> Q -> DQ -> Sigmoid "sig" -> Q/DQ U8 -> y, with the first Q/DQ pair written by hand so that
// each test can set its attributes and types. Q is "q", DQ is "dq".
struct Pair {
  int64_t opset = 21;
  int64_t ir = 10;
  std::vector<onnx::AttributeProto> q_attrs, dq_attrs;
  int zp_type = TP::UINT8;  // 0: no zero_point input
  int64_t zp = 128;
  onnx::TensorProto scale = B::MakeF32("s", {}, {0.02f});
};

B PairModel(const Pair& p) {
  B b(p.opset, p.ir);
  b.Input("x", TP::FLOAT, {1, 4});
  b.InitTensor(p.scale);
  std::vector<std::string> qin{"x", "s"}, dqin{"xq", "s"};
  if (p.zp_type != 0) {
    b.InitInt("zp", p.zp_type, {}, {p.zp});
    qin.push_back("zp");
    dqin.push_back("zp");
  }
  b.Node("QuantizeLinear", qin, {"xq"}, p.q_attrs, "q");
  b.Node("DequantizeLinear", dqin, {"xdq"}, p.dq_attrs, "dq");
  b.Node("Sigmoid", {"xdq"}, {"sg"}, {}, "sig");
  b.Output(b.QDQ("sg", "y", QParams::U8(0.004f, 0)));
  return b;
}

// ------------------------------------------------------------------ reading 14: Q/DQ attributes

TEST(Reading14QdqAttributes, Opset19SaturateOnAnIntegerTypeChangesNothing) {
  Pair p;
  p.opset = 19;
  p.ir = 9;
  p.q_attrs = {B::AttrI("saturate", 0)};
  auto r = RunCheck(PairModel(p));
  EXPECT_CLEAN(r);
}

TEST(Reading14QdqAttributes, Opset19Float8IsNotAnIntegerType) {
  Pair p;
  p.opset = 19;
  p.ir = 9;
  p.zp_type = TP::FLOAT8E4M3FN;
  p.zp = 0;
  p.q_attrs = {B::AttrI("saturate", 1)};
  auto r = RunCheck(PairModel(p));
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  EXPECT_FINDING(r, "qdq/integer-type", "q", "FLOAT8E4M3FN");
}

TEST(Reading14QdqAttributes, Opset21FourAndSixteenBitTypesNeedNoOtherDomain) {
  // Sigmoid takes U8/U16/S16 activations (5.7); U16 through ai.onnx Q/DQ at opset 21.
  Pair p;
  p.zp_type = TP::UINT16;
  p.zp = 32768;
  p.scale = B::MakeF32("s", {}, {0.0002f});
  EXPECT_CLEAN(RunCheck(PairModel(p)));
  // S4 weights of a Conv through ai.onnx DequantizeLinear at opset 21.
  ConvOpts o;
  o.w = QParams::PerChannel(QType::kS4, {}, 0);
  o.int_weight = true;
  EXPECT_CLEAN(RunCheck(ConvModel(o)));
}

TEST(Reading14QdqAttributes, Opset21OutputDtypeGivesTheIntegerType) {
  // No zero_point: the Q's storage type is output_dtype, not ONNX's default UINT8. FLOAT8E4M3FN is
  // no integer type of section 4, so the finding names it; the omitted zero_point is its own error
  // (3.2: explicit zero_point).
  Pair p;
  p.zp_type = 0;
  p.q_attrs = {B::AttrI("output_dtype", TP::FLOAT8E4M3FN)};
  auto r = RunCheck(PairModel(p));
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  EXPECT_FINDING(r, "qdq/integer-type", "q", "FLOAT8E4M3FN");
  EXPECT_FINDING(r, "qdq/zero-point-missing", "q", "omits zero_point");
  // output_dtype equal to the zero_point's type changes nothing.
  Pair same;
  same.q_attrs = {B::AttrI("output_dtype", TP::UINT8)};
  EXPECT_CLEAN(RunCheck(PairModel(same)));
}

TEST(Reading14QdqAttributes, Opset21BlockSizeIsBlockedQuantization) {
  B b(21, 10);
  b.Input("x", TP::FLOAT, {1, 4});
  b.InitF32("s", {1, 2}, {0.02f, 0.03f});
  b.InitInt("zp", TP::UINT8, {1, 2}, {128, 128});
  b.Node("QuantizeLinear", {"x", "s", "zp"}, {"xq"}, {B::AttrI("axis", 1), B::AttrI("block_size", 2)},
         "q");
  b.Node("DequantizeLinear", {"xq", "s", "zp"}, {"xdq"},
         {B::AttrI("axis", 1), B::AttrI("block_size", 2)}, "dq");
  b.Node("Sigmoid", {"xdq"}, {"sg"}, {}, "sig");
  b.Output(b.QDQ("sg", "y", QParams::U8(0.004f, 0)));
  auto r = RunCheck(b);
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  EXPECT_FINDING(r, "qdq/granularity", "q", "block_size");
}

TEST(Reading14QdqAttributes, Opset23DequantizeOutputDtypeOtherThanFloat) {
  NEED_OPSET(23);
  Pair p;
  p.opset = 23;
  p.ir = 11;
  p.dq_attrs = {B::AttrI("output_dtype", TP::FLOAT16)};
  auto r = RunCheck(PairModel(p));
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  EXPECT_FINDING(r, "qdq/float-side-type", "dq", "output_dtype = FLOAT16");
  // One finding for the attribute, not a second one for the FLOAT16 output it causes.
  int at_dq = 0;
  for (const auto* f : Find(r, "qdq/float-side-type")) {
    for (const auto& n : f->nodes) at_dq += n == "dq";
  }
  EXPECT_EQ(at_dq, 1) << Dump(r);
  // output_dtype = FLOAT is the FP32 float side, stated explicitly.
  p.dq_attrs = {B::AttrI("output_dtype", TP::FLOAT)};
  EXPECT_CLEAN(RunCheck(PairModel(p)));
}

TEST(Reading14QdqAttributes, Opset23Float4AndOpset25Int2AreNotSpecTypes) {
  NEED_OPSET(25);
  struct Case {
    int type;
    const char* name;
  };
  // By number: the enum names exist only in newer ONNX libraries.
  for (const Case& k : {Case{23, "FLOAT4E2M1"}, Case{26, "INT2"}, Case{25, "UINT2"}}) {
    Pair p;
    p.opset = 25;
    p.ir = 13;
    p.zp_type = k.type;
    p.zp = 0;
    auto r = RunCheck(PairModel(p));
    EXPECT_VERDICT(r, Verdict::kNonConformant);
    EXPECT_FINDING(r, "qdq/integer-type", "q", k.name);
  }
}

TEST(Reading14QdqAttributes, Opset24Float8E8M0ScaleIsNotFp32) {
  NEED_OPSET(24);
  Pair p;
  p.opset = 24;
  p.ir = 12;
  p.zp_type = TP::FLOAT8E4M3FN;
  p.zp = 0;
  auto s = B::MakeInt("s", 24 /* FLOAT8E8M0 */, {}, {127});  // 2^0
  p.scale = s;
  auto r = RunCheck(PairModel(p));
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  EXPECT_FINDING(r, "qdq/float-side-type", "dq", "FLOAT8E8M0");
}

TEST(Reading14QdqAttributes, Opset25PrecisionOtherThanFloat) {
  NEED_OPSET(25);
  Pair p;
  p.opset = 25;
  p.ir = 13;
  p.q_attrs = {B::AttrI("precision", TP::FLOAT16)};
  auto r = RunCheck(PairModel(p));
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  EXPECT_FINDING(r, "qdq/float-side-type", "q", "precision = FLOAT16");
  const auto& values = At(r, "qdq/float-side-type", "q")->values;
  EXPECT_NE(std::find(values.begin(), values.end(),
                      std::pair<std::string, std::string>{"precision", "FLOAT16"}),
            values.end());
  p.q_attrs = {B::AttrI("precision", TP::FLOAT)};
  EXPECT_CLEAN(RunCheck(PairModel(p)));
}

TEST(Reading14QdqAttributes, IrVersions11To13AreRead) {
  NEED_OPSET(25);
  // IR 11-13 files of an older opset, and the newest opset this test writes at IR 13.
  for (int64_t ir : {11, 12, 13}) {
    Pair p;
    p.opset = 22;
    p.ir = ir;
    EXPECT_CLEAN(RunCheck(PairModel(p)));
  }
  Pair p;
  p.opset = 25;
  p.ir = 13;
  EXPECT_CLEAN(RunCheck(PairModel(p)));
}

// ------------------------------------------------------------------ axqc fix --ir-version 10

// Toolchains pinned to IR 10 (onnxruntime 1.23 reads at most IR 11; Axera's QAT flow pins IR 10):
// an IR 11-13 file that uses nothing newer is lowered, one that does is refused with the reason.
TEST(IrVersion10, NewerFilesThatUseNothingNewerAreLowered) {
  for (int64_t ir : {11, 12, 13}) {
    Pair p;
    p.ir = ir;
    std::string bytes, fixed;
    PairModel(p).Build().SerializeToString(&bytes);
    FixOptions o;
    o.only = {"ir-version"};
    o.ir_version = 10;
    const FixResult r = FixBytes(bytes, "m.onnx", o, &fixed);
    onnx::ModelProto out;
    ASSERT_TRUE(out.ParseFromString(fixed));
    EXPECT_EQ(out.ir_version(), 10);
    EXPECT_EQ(r.after.verdict, Verdict::kConformant) << Dump(r.after);
    ASSERT_FALSE(r.rewrites.empty());
    EXPECT_EQ(r.rewrites[0].note.rfind("IR " + std::to_string(ir) + " -> 10", 0), 0u)
        << r.rewrites[0].note;
  }
}

TEST(IrVersion10, FilesThatUseAnIr11PlusTypeAreRefusedWithTheReason) {
  NEED_OPSET(25);
  struct Case {
    int type;
    const char* why;
  };
  for (const Case& k : {Case{23, "element type FLOAT4E2M1 needs IR 11"},
                        Case{26, "element type INT2 needs IR 13"}}) {
    // An opset-21 model (IR 10 would do) that carries one tensor of the newer type.
    Pair p;
    p.ir = 13;
    auto m = PairModel(p).Build();
    *m.mutable_graph()->add_initializer() = B::MakeInt("unused_new_type", k.type, {2}, {0, 1});
    std::string bytes;
    m.SerializeToString(&bytes);
    FixOptions o;
    o.only = {"ir-version"};
    o.ir_version = 10;
    try {
      FixBytes(bytes, "m.onnx", o, nullptr);
      ADD_FAILURE() << "expected FixRefused for " << k.why;
    } catch (const FixRefused& e) {
      EXPECT_NE(std::string(e.what()).find(k.why), std::string::npos) << e.what();
    }
  }
}

// ------------------------------------------------------------------ reading 14: new operators

TEST(Reading14NewOperators, AreUncoveredWithTheirOpsetAndRelease) {
  NEED_OPSET(24);
  struct Case {
    const char* op;
    int64_t opset;
    const char* since;
  };
  for (const Case& k : {Case{"RMSNormalization", 23, "since opset 23, ONNX 1.18"},
                        Case{"Swish", 24, "since opset 24, ONNX 1.19"}}) {
    B b(k.opset, k.opset == 23 ? 11 : 12);
    b.Input("x", TP::FLOAT, {1, 4});
    auto x = b.QDQ("x", "x", QParams::U8());
    std::vector<std::string> ins{x};
    if (std::string(k.op) == "RMSNormalization") {
      b.InitF32("g", {4}, {1, 1, 1, 1});
      ins.push_back("g");
    }
    b.Node(k.op, ins, {"o"}, {}, "newop");
    b.Output(b.QDQ("o", "y", QParams::U8(0.004f, 0)));
    auto r = RunCheck(b);
    EXPECT_VERDICT(r, Verdict::kNonConformant);
    EXPECT_FINDING(r, "closure/uncovered-node", "newop", std::string(k.op) + " (ai.onnx " + k.since);
    EXPECT_NO_RULE(r, "onnx/invalid-model");
  }
}

TEST(Reading14NewOperators, KnownOperatorsStateTheirOrigin) {
  const auto ops = Operators();
  bool conv = false, gelu = false;
  for (const auto& o : ops) {
    EXPECT_GT(o.since_opset, 0) << o.op_type;
    EXPECT_FALSE(o.since_release.empty()) << o.op_type;
    if (o.op_type == "Conv") conv = o.since_opset == 1 && o.since_release == "1.0";
    if (o.op_type == "Gelu") gelu = o.since_opset == 20 && o.since_release == "1.15";
  }
  EXPECT_TRUE(conv);
  EXPECT_TRUE(gelu);
}

// ------------------------------------------------------------------ reading 15

onnx::FunctionProto QdqFunction(const std::string& name) {
  onnx::FunctionProto f;
  f.set_name(name);
  f.set_domain("local");
  f.add_input("a");
  f.add_input("s");
  f.add_input("z");
  f.add_output("b");
  auto* im = f.add_opset_import();
  im->set_domain("");
  im->set_version(21);
  auto* q = f.add_node();
  q->set_op_type("QuantizeLinear");
  q->add_input("a");
  q->add_input("s");
  q->add_input("z");
  q->add_output("aq");
  auto* dq = f.add_node();
  dq->set_op_type("DequantizeLinear");
  dq->add_input("aq");
  dq->add_input("s");
  dq->add_input("z");
  dq->add_output("b");
  return f;
}

TEST(Reading15WhatTheModelComputes, AnUncalledLocalFunctionIsNotJudged) {
  // A float model (nothing quantized in the main graph) that carries an unused local function
  // full of Q/DQ: not in scope, so not_applicable, and nothing about the function.
  B b(21, 10);
  b.Input("x", TP::FLOAT, {1, 4});
  b.Node("Sigmoid", {"x"}, {"y"}, {}, "sig");
  b.Output("y", TP::FLOAT, {1, 4});
  auto m = b.Build();
  *m.add_functions() = QdqFunction("unused");
  auto* im = m.add_opset_import();
  im->set_domain("local");
  im->set_version(1);
  std::string bytes;
  m.SerializeToString(&bytes);
  CheckOptions o;
  auto r = CheckBytes(bytes, "t.onnx", o);
  EXPECT_VERDICT(r, Verdict::kNotApplicable);
  for (const auto& f : r.findings) {
    EXPECT_EQ(f.message.find("unused"), std::string::npos) << Dump(r);
  }
  // The same function, called: the model is in scope and the call is named (reading 11).
  auto* call = m.mutable_graph()->add_node();
  call->set_op_type("unused");
  call->set_domain("local");
  call->set_name("call");
  call->add_input("x");
  call->add_input("s");
  call->add_input("z");
  call->add_output("fy");
  auto* s = m.mutable_graph()->add_initializer();
  *s = B::MakeF32("s", {}, {0.02f});
  *m.mutable_graph()->add_initializer() = B::MakeInt("z", TP::UINT8, {}, {128});
  auto* out = m.mutable_graph()->add_output();
  out->set_name("fy");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
  bytes.clear();
  m.SerializeToString(&bytes);
  auto called = CheckBytes(bytes, "t.onnx", o);
  EXPECT_VERDICT(called, Verdict::kNonConformant);
  EXPECT_FINDING(called, "closure/uncovered-node", "call", "local function");
}

TEST(Reading15WhatTheModelComputes, ControlFlowBodiesArePartOfTheModel) {
  // An If whose branches quantize: the model is in scope, the If is uncovered by the spec.
  auto branch = [](const std::string& name) {
    B g(21, 10, name);
    g.InitF32(name + "_s", {}, {0.02f});
    g.InitInt(name + "_z", TP::UINT8, {}, {128});
    g.Node("QuantizeLinear", {"x", name + "_s", name + "_z"}, {name + "_q"}, {}, name + "_qn");
    g.Node("DequantizeLinear", {name + "_q", name + "_s", name + "_z"}, {name + "_o"}, {},
           name + "_dqn");
    g.Output(name + "_o", TP::FLOAT, {1, 4});
    return g.Build().graph();
  };
  B b(21, 10);
  b.Input("x", TP::FLOAT, {1, 4});
  b.Input("c", TP::BOOL, {});
  b.Node("If", {"c"}, {"o"},
         {B::AttrG("then_branch", branch("t")), B::AttrG("else_branch", branch("e"))}, "if");
  b.Output("o", TP::FLOAT, {1, 4});
  auto r = RunCheck(b);
  EXPECT_VERDICT(r, Verdict::kNonConformant);
  EXPECT_FINDING(r, "closure/uncovered-node", "if", "If");
}

// ------------------------------------------------------------------ reading 16

// bias_scale = input_scale * weight_scale is judged in FP32 (2.5, 4): products, differences and
// tolerances. The two scale triples below sit on the tolerance boundary, where FP32 and double
// arithmetic disagree; the FP32 answer is the one reported.
Report BiasBoundary(std::uint32_t in_bits, std::uint32_t w_bits, std::uint32_t b_bits) {
  const float in = std::bit_cast<float>(in_bits);
  const float w = std::bit_cast<float>(w_bits);
  const float bs = std::bit_cast<float>(b_bits);
  B m;
  m.Input("x", TP::FLOAT, {1, 1, 4, 4});
  auto x = m.QDQ("x", "x", QParams::U8(in, 128));
  auto wq = m.WeightQDQ("w", {1, 1, 3, 3}, QParams::PerChannel(QType::kS8, {w}, 0));
  auto bq = m.BiasInt32DQ("b", 1, {bs});
  m.Node("Conv", {x, wq, bq}, {"c"}, {}, "conv");
  m.Output(m.QDQ("c", "y", QParams::U8()));
  return RunCheck(m, true);
}

TEST(Reading16Fp32ValueChecks, BiasScaleAtTheToleranceBoundaryIsJudgedInFp32) {
  // In FP32 within the tolerance (double arithmetic would call it a violation).
  auto inside = BiasBoundary(1024052660u, 1006732758u, 965443373u);
  EXPECT_NO_RULE(inside, "role/bias-scale");
  EXPECT_CLEAN(inside);
  // In FP32 outside the tolerance (double arithmetic would accept it).
  auto outside = BiasBoundary(1033556741u, 1001511467u, 970403241u);
  EXPECT_FINDING(outside, "role/bias-scale", "b_dq", "bias_scale[0]=");
  EXPECT_VERDICT(outside, Verdict::kConformant);  // a warn, never an error (2.5)
}

}  // namespace
}  // namespace axqc::test
