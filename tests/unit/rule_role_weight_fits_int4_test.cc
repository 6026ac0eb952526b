// role/weight-fits-int4 (docs/rules/role--weight-fits-int4.md): an INT8 weight whose values fit
// S4 gets an info finding naming the opt-in rewrite; 8-bit values, INT4 storage, tiny tensors and
// MatMul operands do not.
#include "check_helpers.h"

namespace axqc::test {
namespace {

using B = ModelBuilder;

struct WeightOpts {
  int64_t opset = 21;
  int64_t cout = 8, cin = 4, k = 3;
  int64_t zero_point = 0;
  int64_t big_value = 0;  // when not 0: the weight's first value (e.g. 100, outside [-8, 7])
  modelgen::Storage storage = modelgen::Storage::kRaw;  // of the weight's values
};

// x -> Q/DQ U8 -> Conv "conv" (INT8 initializer "w" [cout, cin, k, k] with values -8..7 ->
// DequantizeLinear "w_dq", per-channel along axis 0) -> Q/DQ U8 -> y.
B Int8WeightConv(WeightOpts o = {}) {
  B b(o.opset, o.opset >= 21 ? 10 : 8);
  b.Input("x", TP::FLOAT, {1, o.cin, 8, 8});
  const auto x = b.QDQ("x", "x", QParams::U8(0.02f, 128));
  std::vector<int64_t> v;
  for (int64_t i = 0; i < o.cout * o.cin * o.k * o.k; ++i) v.push_back(i % 16 - 8);
  if (o.big_value != 0) v[0] = o.big_value;
  b.InitInt("w", TP::INT8, {o.cout, o.cin, o.k, o.k}, v, o.storage);
  QParams wp = QParams::PerChannel(QType::kS8, Scales(o.cout), 0);
  wp.zero_point = std::vector<int64_t>(static_cast<std::size_t>(o.cout), o.zero_point);
  const auto w = b.Dequantize("w", "w", wp);
  const int64_t pad = o.k / 2;
  b.Node("Conv", {x, w}, {"conv_out"}, {B::AttrInts("pads", {pad, pad, pad, pad})}, "conv");
  b.Output(b.QDQ("conv_out", "y", QParams::U8(0.05f, 0)));
  return b;
}

const Finding& Only(const Report& r) {
  const auto found = Find(r, "role/weight-fits-int4");
  EXPECT_EQ(found.size(), 1u) << Dump(r);
  static const Finding none;
  return found.empty() ? none : *found.front();
}

std::string Value(const Finding& f, const std::string& key) {
  for (const auto& [k, v] : f.values) {
    if (k == key) return v;
  }
  return "(none)";
}

TEST(RoleWeightFitsInt4, FiresOnAModelThatBreaksIt) {
  const auto r = RunCheck(Int8WeightConv());
  EXPECT_FINDING(r, "role/weight-fits-int4", "w_dq",
                 "`axqc fix MODEL -o FIXED.onnx --apply int4-weight-storage` stores it as INT4 "
                 "(it applies to this weight)");
  const Finding& f = Only(r);
  EXPECT_EQ(f.nodes, (std::vector<std::string>{"w_dq", "conv"}));
  EXPECT_EQ(f.tensors, std::vector<std::string>{"w"});
  EXPECT_EQ(Value(f, "min"), "-8");
  EXPECT_EQ(Value(f, "max"), "7");
  EXPECT_EQ(Value(f, "elements"), "288");
  EXPECT_NE(f.message.find("INT8 weight 'w' of Conv 'conv': all 288 values (-8 to 7) and its zero "
                           "point lie in [-8, 7]"),
            std::string::npos)
      << f.message;
  // Information only: the S8 weight conforms.
  EXPECT_CLEAN(r);
  EXPECT_EQ(r.summary.causes, 0u);
  // Values in int32_data instead of raw_data.
  EXPECT_FINDING(RunCheck(Int8WeightConv({.storage = modelgen::Storage::kTyped})),
                 "role/weight-fits-int4", "w_dq", "all 288 values (-8 to 7)");
}

TEST(RoleWeightFitsInt4, StaysQuietOnTheConformantTwin) {
  // An 8-bit weight: the builder's S8 values span [-127, 127].
  const auto r = RunCheck(ConvModel({.int_weight = true}));
  EXPECT_CLEAN(r);
  EXPECT_NO_RULE(r, "role/weight-fits-int4");
  // One value outside [-8, 7] is enough.
  EXPECT_NO_RULE(RunCheck(Int8WeightConv({.big_value = 100})), "role/weight-fits-int4");
  EXPECT_NO_RULE(RunCheck(Int8WeightConv({.big_value = -9})), "role/weight-fits-int4");
  // A zero point outside [-8, 7] (an asymmetric weight is role/weight-type besides).
  EXPECT_NO_RULE(RunCheck(Int8WeightConv({.zero_point = 9})), "role/weight-fits-int4");
  // FP32 initializer -> Q -> DQ: the integers are computed, not stored.
  EXPECT_NO_RULE(RunCheck(ConvModel()), "role/weight-fits-int4");
}

TEST(RoleWeightFitsInt4, QuietOnAWeightAlreadyStoredAsInt4) {
  const auto r =
      RunCheck(ConvModel({.w = QParams::PerChannel(QType::kS4, {}, 0), .int_weight = true}));
  EXPECT_CLEAN(r);
  EXPECT_NO_RULE(r, "role/weight-fits-int4");
}

TEST(RoleWeightFitsInt4, QuietBelowSixteenValues) {
  // 2 x 1 x 2 x 2 = 8 values in [-8, 7]: too few to say anything.
  EXPECT_NO_RULE(RunCheck(Int8WeightConv({.cout = 2, .cin = 1, .k = 2})), "role/weight-fits-int4");
  // 2 x 2 x 2 x 2 = 16: the threshold.
  EXPECT_FINDING(RunCheck(Int8WeightConv({.cout = 2, .cin = 2, .k = 2})), "role/weight-fits-int4",
                 "w_dq", "all 16 values");
}

TEST(RoleWeightFitsInt4, SaysWhyTheRewriteWouldLeaveTheWeightAlone) {
  EXPECT_FINDING(RunCheck(Int8WeightConv({.opset = 17})), "role/weight-fits-int4", "w_dq",
                 "but not this weight as the model is: it needs ai.onnx opset >= 21 (INT4 "
                 "DequantizeLinear) and the model imports opset 17");
  EXPECT_FINDING(RunCheck(Int8WeightConv({.cout = 3})), "role/weight-fits-int4", "w_dq",
                 "the weight has 3 output channels and an S4 weight needs an even count "
                 "(role/int4-channels)");
}

TEST(RoleWeightFitsInt4, GemmWeightsButNotMatMulOperands) {
  B b;
  b.Input("x", TP::FLOAT, {1, 16});
  const auto x = b.QDQ("x", "x", QParams::S8(0.02f));
  std::vector<int64_t> v;
  for (int i = 0; i < 4 * 16; ++i) v.push_back(i % 15 - 7);
  b.InitInt("fc_w", TP::INT8, {4, 16}, v);
  const auto w = b.Dequantize("fc_w", "fc_w", QParams::PerChannel(QType::kS8, Scales(4), 0));
  b.Node("Gemm", {x, w}, {"g"}, {B::AttrI("transB", 1)}, "fc");
  const auto g = b.QDQ("g", "g", QParams::S8(0.1f));
  // MatMul's constant operand is data (symmetric per-tensor S8/S16, 5.3), where S4 is no type.
  b.InitInt("mm_w", TP::INT8, {4, 4}, std::vector<int64_t>(v.begin(), v.begin() + 16));
  const auto m = b.Dequantize("mm_w", "mm_w", QParams::S8(0.01f));
  b.Node("MatMul", {g, m}, {"mm"}, {}, "mm");
  b.Output(b.QDQ("mm", "y", QParams::S8(0.1f)));
  const auto r = RunCheck(b);
  EXPECT_FINDING(r, "role/weight-fits-int4", "fc_w_dq", "INT8 weight 'fc_w' of Gemm 'fc'");
  EXPECT_EQ(Value(Only(r), "min"), "-7");
  EXPECT_EQ(At(r, "role/weight-fits-int4", "mm_w_dq"), nullptr) << Dump(r);
}

}  // namespace
}  // namespace axqc::test
