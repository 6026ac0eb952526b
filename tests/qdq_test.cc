// Basic Q/DQ rules (section 3) and quantization roles (section 4): for every rule one model that
// triggers it and a close sibling that does not; [cv] rules in both modes.
#include "check_helpers.h"

namespace axqc::test {
namespace {

// x -> Q/DQ(in) -> Sigmoid -> Q/DQ(out) -> output. Node names: x_q, x_dq, sig, y_q, y_dq.
ModelBuilder Unary(const QParams& in = QParams::U8(), const QParams& out = QParams::U8(0.004f, 0),
                   const std::string& op = "Sigmoid") {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", in);
  b.Node(op, {x}, {"s"}, {}, "sig");
  b.Output(b.QDQ("s", "y", out));
  return b;
}

TEST(Qdq, SiblingIsClean) { EXPECT_CLEAN(RunCheck(Unary(), true)); }

TEST(Qdq, FloatSideType) {
  ModelBuilder b;
  b.Input("x", TP::DOUBLE, {1, 4});
  b.Node("Cast", {"x"}, {"xf"}, {ModelBuilder::AttrI("to", TP::FLOAT)}, "cast");
  auto q = QParams::U8();
  b.InitF32("s64", {}, {0.02f});
  // A DOUBLE scale: Q(x, double scale) is valid ONNX at opset 21 (T1 = double).
  b.Input("xd", TP::DOUBLE, {1, 4});
  auto sd = ModelBuilder::MakeF32("sd", {}, {0.02f});
  sd.set_data_type(TP::DOUBLE);
  sd.clear_raw_data();
  sd.clear_float_data();
  sd.add_double_data(0.02);
  b.InitTensor(sd);
  b.InitInt("zp", TP::UINT8, {}, {128});
  b.Node("QuantizeLinear", {"xd", "sd", "zp"}, {"q"}, {}, "q_double");
  b.Node("DequantizeLinear", {"q", "sd", "zp"}, {"dq"}, {}, "dq_double");
  b.Node("Sigmoid", {"dq"}, {"s"}, {}, "sig");
  b.Output(b.QDQ("s", "y", QParams::U8(0.004f, 0)));
  b.Output("xf");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "qdq/float-side-type", "q_double", "DOUBLE");
  EXPECT_FINDING(r, "qdq/float-side-type", "dq_double", "DOUBLE");
  EXPECT_NO_RULE(RunCheck(Unary()), "qdq/float-side-type");
}

TEST(Qdq, ScaleNotInitializer) {
  auto b = Unary();
  b.InitF32("s_src", {}, {0.02f});
  b.Node("Identity", {"s_src"}, {"s_id"}, {}, "scale_id");
  b.InitInt("zp2", TP::UINT8, {}, {0});
  b.Node("QuantizeLinear", {"s", "s_id", "zp2"}, {"q2"}, {}, "q2");
  b.Node("DequantizeLinear", {"q2", "s_id", "zp2"}, {"dq2"}, {}, "dq2");
  b.Output("dq2");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "qdq/scale-not-initializer", "q2", "Identity 'scale_id'");
  EXPECT_FINDING(r, "qdq/scale-not-initializer", "dq2", "'s_id'");
  EXPECT_NO_RULE(RunCheck(Unary()), "qdq/scale-not-initializer");
}

TEST(Qdq, ZeroPointComputedByIdentityIsAllowedAndRead) {
  auto b = Unary();
  b.InitInt("zp_src", TP::UINT8, {}, {7});
  b.Node("Identity", {"zp_src"}, {"zp_id"}, {}, "zp_id");
  b.InitF32("sc", {}, {0.1f});
  b.Node("QuantizeLinear", {"s", "sc", "zp_id"}, {"q2"}, {}, "q2");
  b.Node("DequantizeLinear", {"q2", "sc", "zp_id"}, {"dq2"}, {}, "dq2");
  b.Output("dq2");
  auto r = RunCheck(b, true);
  EXPECT_NO_RULE(r, "qdq/scale-not-initializer");
  EXPECT_NO_RULE(r, "qdq/value-unreadable");
  EXPECT_NO_RULE(r, "qdq/zero-point-value");
}

TEST(Qdq, ZeroPointMissing) {
  auto p = QParams::U8();
  p.omit_zero_point = true;
  auto r = RunCheck(Unary(p));
  EXPECT_FINDING(r, "qdq/zero-point-missing", "x_q", "omits zero_point");
  EXPECT_FINDING(r, "qdq/zero-point-missing", "x_dq", "omits zero_point");
}

TEST(Qdq, ScaleValue) {
  for (float bad : {0.0f, -1.0f, std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    auto r = RunCheck(Unary(QParams::U8(bad)));
    EXPECT_FINDING(r, "qdq/scale-value", "x_dq", "scale = ");
    EXPECT_EQ(Find(r, "qdq/scale-value").size(), 1u) << "shared scale reported once";
    EXPECT_EQ(r.verdict, Verdict::kNonConformant);
  }
  auto pc = ConvOpts{};
  pc.w = QParams::PerChannel(QType::kS8, {0.1f, 0.1f, 0.1f, 0.0f, 0.1f, 0.1f, 0.1f, 0.1f}, 0);
  auto r = RunCheck(ConvModel(pc));
  EXPECT_FINDING(r, "qdq/scale-value", "w_dq", "scale[3] = 0");
}

TEST(Qdq, ZeroPointValueOnlyWithCheckValue) {
  auto sym = QParams::S8();
  sym.zero_point = {3};
  auto b = Unary(sym);
  EXPECT_NO_RULE(RunCheck(b, false), "qdq/zero-point-value");
  auto r = RunCheck(b, true);
  EXPECT_FINDING(r, "qdq/zero-point-value", "x_dq", "zero_point = 3");
  EXPECT_EQ(r.verdict, Verdict::kConformant);  // warn only
  EXPECT_EQ(r.summary.warnings, 1u);
  // Asymmetric: out of range needs typed storage to express (int32_data 300 for UINT8).
  auto u = QParams::U8(0.02f, 300);
  u.storage = modelgen::Storage::kTyped;
  auto r2 = RunCheck(Unary(u), true);
  EXPECT_FINDING(r2, "qdq/zero-point-value", "x_dq", "outside the U8 range 0..255");
  EXPECT_NO_RULE(RunCheck(Unary(QParams::U8(0.02f, 255)), true), "qdq/zero-point-value");
}

TEST(Qdq, GranularityAndAxis) {
  // Rank-2 scale: neither per-tensor nor per-channel.
  auto b = Unary();
  b.InitF32("s2", {2, 2}, {0.1f, 0.1f, 0.1f, 0.1f});
  b.InitInt("z2", TP::UINT8, {2, 2}, {0, 0, 0, 0});
  b.Node("QuantizeLinear", {"s", "s2", "z2"}, {"q2"}, {ModelBuilder::AttrI("block_size", 2)}, "qb");
  b.Node("DequantizeLinear", {"q2", "s2", "z2"}, {"dq2"}, {ModelBuilder::AttrI("block_size", 2)},
         "dqb");
  b.Output("dq2");
  auto r = RunCheck(b.AutoValueInfo(false));
  EXPECT_FINDING(r, "qdq/granularity", "qb", "block_size");
  // Rank-0 scale with [1] zero_point: mixed per-tensor forms.
  auto mix = Unary();
  mix.InitF32("s0", {}, {0.1f});
  mix.InitInt("z1", TP::UINT8, {1}, {0});
  mix.Node("QuantizeLinear", {"s", "s0", "z1"}, {"q3"}, {}, "qmix");
  mix.Node("DequantizeLinear", {"q3", "s0", "z1"}, {"dq3"}, {}, "dqmix");
  mix.Output("dq3");
  auto r2 = RunCheck(mix);
  EXPECT_FINDING(r2, "qdq/granularity", "qmix", "differ");
  // [1] scale with [1] zero_point is per-tensor and fine.
  auto one = QParams::U8();
  one.scalar = false;
  EXPECT_CLEAN(RunCheck(Unary(one)));
  // Per-channel without axis attribute.
  auto w = QParams::PerChannel(QType::kS8, Scales(8), 0);
  w.axis.reset();
  auto r3 = RunCheck(ConvModel({.w = w}));
  EXPECT_FINDING(r3, "qdq/axis-missing", "w_dq", "without an explicit axis");
}

TEST(Qdq, WeightAxis) {
  // Rank-4 Conv weight: axis 1 instead of 0 (4 input channels, 4 scales).
  ConvOpts o;
  o.cin = 4;
  o.cout = 4;
  o.w = QParams::PerChannel(QType::kS8, Scales(4), 1);
  auto r = RunCheck(ConvModel(o));
  EXPECT_FINDING(r, "qdq/weight-axis", "w_dq", "axis 1");
  // Negative form of the right axis is rejected too.
  o.w = QParams::PerChannel(QType::kS8, Scales(4), -4);
  auto r2 = RunCheck(ConvModel(o));
  EXPECT_FINDING(r2, "qdq/weight-axis", "w_dq", "negative");
  // ConvTranspose wants axis 1; rank-2 Gemm weight wants axis 0.
  ConvOpts t;
  t.op = "ConvTranspose";
  t.w = QParams::PerChannel(QType::kS8, Scales(8), 1);
  EXPECT_CLEAN(RunCheck(ConvModel(t)));
  t.w = QParams::PerChannel(QType::kS8, Scales(4), 0);
  EXPECT_FINDING(RunCheck(ConvModel(t)), "qdq/weight-axis", "w_dq", "use axis 1");
}

ModelBuilder GemmModel(const QParams& w, bool bias = true, int64_t k = 16, int64_t n = 10) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {2, k});
  auto x = b.QDQ("x", "x", QParams::U8());
  auto wdq = b.WeightQDQ("w", {n, k}, w);
  std::vector<std::string> ins{x, wdq};
  if (bias) ins.push_back(b.BiasInt32DQ("b", n, modelgen::BiasScales(0.02f, w.scale)));
  b.Node("Gemm", ins, {"g"}, {ModelBuilder::AttrI("transB", 1)}, "gemm");
  b.Output(b.QDQ("g", "y", QParams::U8(0.1f, 0)));
  return b;
}

TEST(Qdq, WeightAxisOnRank2Gemm) {
  EXPECT_CLEAN(RunCheck(GemmModel(QParams::PerChannel(QType::kS8, Scales(10), 0)), true));
  auto r = RunCheck(GemmModel(QParams::PerChannel(QType::kS8, Scales(10), -2)));
  EXPECT_FINDING(r, "qdq/weight-axis", "w_dq", "axis -2");
}

TEST(Qdq, PairMismatchAndValues) {
  auto b = Unary();
  b.InitF32("sa", {}, {0.1f});
  b.InitInt("za", TP::UINT8, {}, {0});
  b.InitInt("zb", TP::INT8, {}, {0});
  b.Node("QuantizeLinear", {"s", "sa", "za"}, {"q2"}, {}, "qm");
  b.Node("DequantizeLinear", {"q2", "sa", "zb"}, {"dq2"}, {}, "dqm");
  b.Output("dq2");
  auto r = RunCheck(b.AutoValueInfo(false));
  // (the DQ input type follows its Q; the zero_point dtype differs)
  EXPECT_FINDING(r, "qdq/pair-mismatch", "dqm", "differ");
  // Same structure, different scale values: warn with -c only.
  auto v = Unary();
  v.InitF32("s1", {}, {0.1f});
  v.InitF32("s2", {}, {0.2f});
  v.InitInt("z0", TP::UINT8, {}, {0});
  v.Node("QuantizeLinear", {"s", "s1", "z0"}, {"q2"}, {}, "qv");
  v.Node("DequantizeLinear", {"q2", "s2", "z0"}, {"dq2"}, {}, "dqv");
  v.Output("dq2");
  EXPECT_NO_RULE(RunCheck(v, false), "qdq/pair-value-mismatch");
  auto r2 = RunCheck(v, true);
  EXPECT_FINDING(r2, "qdq/pair-value-mismatch", "dqv", "scale[0] 0.1 vs 0.2");
  EXPECT_NO_RULE(r2, "qdq/pair-mismatch");
}

TEST(Qdq, FanoutAndGraphOutput) {
  auto b = Unary();
  b.Node("DequantizeLinear", {"x_q_out", "x_scale", "x_zp"}, {"dq_extra"}, {}, "dq_extra");
  b.Node("Sigmoid", {"dq_extra"}, {"s2"}, {}, "sig2");
  b.Output(b.QDQ("s2", "y2", QParams::U8(0.004f, 0)));
  b.Output("x_q_out");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "qdq/q-fanout", "x_q", "2 DQs");
  EXPECT_FINDING(r, "qdq/q-graph-output", "x_q", "graph output");
  EXPECT_NO_RULE(RunCheck(Unary()), "qdq/q-fanout");
}

TEST(Qdq, DqInputSource) {
  ModelBuilder b;
  b.Input("xi", TP::UINT8, {1, 4, 8, 8});
  b.InitF32("sc", {}, {0.02f});
  b.InitInt("zp", TP::UINT8, {}, {128});
  b.Node("DequantizeLinear", {"xi", "sc", "zp"}, {"x"}, {}, "dq_in");
  b.Node("Sigmoid", {"x"}, {"s"}, {}, "sig");
  b.Output(b.QDQ("s", "y", QParams::U8(0.004f, 0)));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "qdq/dq-input-source", "dq_in", "graph input 'xi'");
  // An integer initializer -> DQ is a DQ-only constant: allowed.
  EXPECT_NO_RULE(RunCheck(ConvModel({.int_weight = true})), "qdq/dq-input-source");
}

TEST(Qdq, RequantizeNeedsIdentity) {
  auto make = [](bool identity, const QParams& p2) {
    auto b = Unary();
    std::string src = "y_dq_out";
    if (identity) {
      b.Node("Identity", {src}, {"rq"}, {}, "requant");
      src = "rq";
    }
    auto d = b.QDQ(src, "y2", p2);
    b.Node("Tanh", {d}, {"t"}, {}, "tanh");
    b.Output(b.QDQ("t", "z", QParams::U8(0.01f, 128)));
    return b;
  };
  auto r = RunCheck(make(false, QParams::S8(0.01f)));
  EXPECT_FINDING(r, "qdq/requantize-identity", "y2_q", "integer type U8 vs S8");
  auto ok = RunCheck(make(true, QParams::S8(0.01f)));
  EXPECT_NO_RULE(ok, "qdq/requantize-identity");
  EXPECT_FINDING(ok, "qdq/requantize", "requant", "requantize boundary");
  EXPECT_EQ(ok.verdict, Verdict::kConformant) << Dump(ok);
  // Identical parameters may connect directly.
  auto same = RunCheck(make(false, QParams::U8(0.004f, 0)));
  EXPECT_NO_RULE(same, "qdq/requantize-identity");
  EXPECT_EQ(same.verdict, Verdict::kConformant) << Dump(same);
}

TEST(Qdq, ConstForms) {
  // FP32 initializer straight into a quant-only data input.
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4});
  auto x = b.QDQ("x", "x", QParams::U8());
  b.InitF32Fill("c", {1, 4}, 0.5f);
  b.Node("Add", {x, "c"}, {"a"}, {}, "add");
  b.Output(b.QDQ("a", "y", QParams::U8()));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "qdq/const-form", "add", "FP32 initializer used directly");
  // Sibling: FP32 init -> Q -> DQ, and int init -> DQ.
  ModelBuilder ok;
  ok.Input("x", TP::FLOAT, {1, 4});
  auto x2 = ok.QDQ("x", "x", QParams::U8());
  ok.InitF32Fill("c", {1, 4}, 0.5f);
  auto c = ok.QDQ("c", "c", QParams::U8());
  ok.InitInt("ci", TP::UINT8, {1, 4}, {1, 2, 3, 4});
  auto ci = ok.Dequantize("ci", "ci", QParams::U8());
  ok.Node("Add", {x2, c}, {"a"}, {}, "add");
  auto a = ok.QDQ("a", "a", QParams::U8());
  ok.Node("Mul", {a, ci}, {"m"}, {}, "mul");
  ok.Output(ok.QDQ("m", "y", QParams::U8()));
  EXPECT_CLEAN(RunCheck(ok));
  // Weight without Q/DQ.
  ModelBuilder w;
  w.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto xw = w.QDQ("x", "x", QParams::U8());
  w.InitF32Fill("wf", {8, 4, 3, 3}, 0.1f);
  w.Node("Conv", {xw, "wf"}, {"c"}, {}, "conv");
  w.Output(w.QDQ("c", "y", QParams::U8()));
  EXPECT_FINDING(RunCheck(w), "qdq/const-form", "conv", "weight 'wf'");
}

TEST(Qdq, TypedAndPackedFourBitStorageIsRead) {
  // S4 weight stored in typed int32_data (packed), per-channel zero_point with a non-zero entry:
  // the value must be read to be reported under -c.
  auto w = QParams::PerChannel(QType::kS4, Scales(8), 0);
  w.storage = modelgen::Storage::kTyped;
  w.zero_point = {0, 0, 0, 0, 0, 0, 0, -3};
  auto r = RunCheck(ConvModel({.w = w, .int_weight = true}), true);
  EXPECT_FINDING(r, "qdq/zero-point-value", "w_dq", "zero_point[7] = -3");
  // A one-element (odd count) UINT4 zero_point in raw storage is read: no value-unreadable note,
  // and an in-range value gives no warning.
  auto r2 = RunCheck(ConvModel({.in = QParams::U4(0.02f, 15)}), true);
  EXPECT_NO_RULE(r2, "qdq/value-unreadable");
  EXPECT_CLEAN(r2);
}

TEST(Qdq, IntegerType) {
  auto p = QParams::U8();
  p.elem_type_override = TP::FLOAT8E4M3FN;
  p.zero_point = {0};
  auto r = RunCheck(Unary(p));
  EXPECT_FINDING(r, "qdq/integer-type", "x_q", "FLOAT8E4M3FN");
}

// ---- roles (section 4)

TEST(Role, ActivationType) {
  // S32 is never an activation type; U4 only into Conv family.
  auto r = RunCheck(Unary(QParams::U8(), QParams::U4(0.1f, 0)));
  ASSERT_TRUE(Has(r, "role/activation-type")) << Dump(r);
  EXPECT_NE(At(r, "role/activation-type", "y_dq")->message.find("U4"), std::string::npos);
  auto u4in = RunCheck(Unary(QParams::U4()));
  EXPECT_FINDING(u4in, "role/activation-type", "x_dq", "only on the activation input of Conv");
  EXPECT_CLEAN(RunCheck(ConvModel({.in = QParams::U4(0.02f, 8)})));
  auto pc = RunCheck(Unary(QParams::PerChannel(QType::kU8, {0.1f, 0.1f, 0.1f, 0.1f}, 1)));
  EXPECT_FINDING(pc, "role/activation-type", "x_dq", "per-channel");
}

TEST(Role, WeightType) {
  auto r = RunCheck(ConvModel({.w = QParams::PerChannel(QType::kU8, Scales(8), 0)}));
  EXPECT_FINDING(r, "role/weight-type", "w_dq", "is U8");
  auto pt = RunCheck(ConvModel({.w = QParams::S8()}));
  EXPECT_FINDING(pt, "role/weight-type", "w_dq", "per-tensor");
  EXPECT_CLEAN(RunCheck(ConvModel({.w = QParams::PerChannel(QType::kS4, Scales(8), 0), .int_weight = true})));
}

TEST(Role, BiasType) {
  auto b = ConvModel({.bias = false});
  // Rebuild with a per-tensor INT32 bias.
  ModelBuilder m;
  m.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = m.QDQ("x", "x", QParams::U8());
  auto w = m.WeightQDQ("w", {8, 4, 3, 3}, QParams::PerChannel(QType::kS8, Scales(8), 0));
  m.InitInt("bias", TP::INT32, {8}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto bdq = m.Dequantize("bias", "b", QParams::S32(0.0002f));
  m.Node("Conv", {x, w, bdq}, {"c"}, {}, "conv");
  m.Output(m.QDQ("c", "y", QParams::U8()));
  auto r = RunCheck(m);
  EXPECT_FINDING(r, "role/bias-type", "b_dq", "per-tensor");
  // FP32 bias directly is fine.
  ModelBuilder f;
  f.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto xf = f.QDQ("x", "x", QParams::U8());
  auto wf = f.WeightQDQ("w", {8, 4, 3, 3}, QParams::PerChannel(QType::kS8, Scales(8), 0));
  f.InitF32Fill("bf", {8}, 0.1f);
  f.Node("Conv", {xf, wf, "bf"}, {"c"}, {}, "conv");
  f.Output(f.QDQ("c", "y", QParams::U8()));
  EXPECT_CLEAN(RunCheck(f, true));
  (void)b;
}

TEST(Role, Int4Channels) {
  auto r = RunCheck(ConvModel({.cout = 7, .w = QParams::PerChannel(QType::kS4, Scales(7), 0), .int_weight = true}));
  EXPECT_FINDING(r, "role/int4-channels", "w_dq", "7 output channels");
  auto a = RunCheck(ConvModel({.cin = 3, .in = QParams::U4(0.02f, 8)}));
  EXPECT_FINDING(a, "role/int4-channels", "x_dq", "3 channels");
  EXPECT_NO_RULE(RunCheck(ConvModel({.cin = 4, .in = QParams::U4(0.02f, 8)})), "role/int4-channels");
}

TEST(Role, BiasScaleOnlyWithCheckValue) {
  ModelBuilder m;
  m.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = m.QDQ("x", "x", QParams::U8(0.02f, 128));
  auto ws = Scales(8);
  auto w = m.WeightQDQ("w", {8, 4, 3, 3}, QParams::PerChannel(QType::kS8, ws, 0));
  auto bs = modelgen::BiasScales(0.02f, ws);
  bs[5] *= 1.01f;
  auto b = m.BiasInt32DQ("b", 8, bs);
  m.Node("Conv", {x, w, b}, {"c"}, {}, "conv");
  m.Output(m.QDQ("c", "y", QParams::U8()));
  EXPECT_NO_RULE(RunCheck(m, false), "role/bias-scale");
  auto r = RunCheck(m, true);
  EXPECT_FINDING(r, "role/bias-scale", "b_dq", "bias_scale[5]=");
  EXPECT_EQ(r.verdict, Verdict::kConformant);
  EXPECT_NO_RULE(RunCheck(ConvModel(), true), "role/bias-scale");
}

TEST(Role, ConvTransposeGroupBias) {
  ModelBuilder m;
  m.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = m.QDQ("x", "x", QParams::U8());
  auto ws = Scales(2);
  auto w = m.WeightQDQ("w", {4, 2, 3, 3}, QParams::PerChannel(QType::kS8, ws, 1));
  auto b = m.BiasInt32DQ("b", 4, modelgen::BiasScales(0.02f, {0.01f, 0.02f, 0.01f, 0.02f}));
  m.Node("ConvTranspose", {x, w, b}, {"c"}, {ModelBuilder::AttrI("group", 2)}, "deconv");
  m.Output(m.QDQ("c", "y", QParams::U8()));
  auto r = RunCheck(m);
  EXPECT_FINDING(r, "role/convtranspose-group-bias", "deconv", "group=2");
}

}  // namespace
}  // namespace axqc::test
