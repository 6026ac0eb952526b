// Operator rules of spec section 5: for every operator one conformant model and, per constraint
// it has, a non-conformant sibling. Conformant models are checked with check_value on and must
// be clean (verdict conformant, no warnings). Table-driven where operators share their rules.
#include "axqc/operators.h"

#include <functional>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "check_helpers.h"

namespace axqc::test {
namespace {

using B = ModelBuilder;

// ------------------------------------------------------------------------------------------
// Shared helpers

#define EXPECT_NON_CONFORMANT(report) \
  EXPECT_EQ((report).verdict, ::axqc::Verdict::kNonConformant) << ::axqc::test::Dump(report)

// No finding of any severity except info.
void ExpectNoErrorsOrWarnings(const Report& r) {
  for (const auto& f : r.findings) {
    EXPECT_EQ(f.severity, Severity::kInfo) << Dump(r);
  }
}

// A small quantized region that keeps a model in scope while another part is under test:
// z -> Q/DQ -> Sigmoid 'anchor' -> Q/DQ -> z_out.
void AddQuantizedAnchor(ModelBuilder& b) {
  b.Input("z", TP::FLOAT, {1, 4});
  auto z = b.QDQ("z", "z", QParams::U8());
  b.Node("Sigmoid", {z}, {"zs"}, {}, "anchor");
  b.Output(b.QDQ("zs", "zo", QParams::U8(0.004f, 0)));
}

std::vector<float> Ramp(std::size_t n, float base = 0.1f) {
  std::vector<float> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(base * static_cast<float>(i + 1));
  return v;
}

std::vector<modelgen::Dim> AsDims(const std::vector<int64_t>& v) {
  return std::vector<modelgen::Dim>(v.begin(), v.end());
}

std::int64_t Count(const std::vector<int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

// How a parameter that must be a direct FP32 initializer is written.
enum class Form { kInit, kIntDq, kQdq, kGraphInput, kConstant };

const char* FormName(Form f) {
  switch (f) {
    case Form::kInit:
      return "Init";
    case Form::kIntDq:
      return "IntDq";
    case Form::kQdq:
      return "Qdq";
    case Form::kGraphInput:
      return "GraphInput";
    case Form::kConstant:
      return "Constant";
  }
  return "?";
}

// An FP32 tensor `name` in form `f`; returns the tensor name the consumer reads.
std::string F32In(ModelBuilder& b, const std::string& name, const std::vector<int64_t>& dims,
                  const std::vector<float>& values, Form f) {
  switch (f) {
    case Form::kInit:
      b.InitF32(name, dims, values);
      return name;
    case Form::kIntDq: {
      std::vector<int64_t> q(values.size(), 3);
      b.InitInt(name, TP::INT8, dims, q);
      return b.Dequantize(name, name, QParams::S8(0.1f));
    }
    case Form::kQdq:
      b.InitF32(name, dims, values);
      return b.QDQ(name, name, QParams::S8(0.1f));
    case Form::kGraphInput:
      b.Input(name, TP::FLOAT, dims);
      return name;
    case Form::kConstant:
      b.Node("Constant", {}, {name}, {B::AttrT("value", B::MakeF32(name, dims, values))},
             name + "_const");
      return name;
  }
  return name;
}

// An extra (non-data) input of an operator under test.
struct Extra {
  enum Kind { kStatic, kInt64, kFloat, kEmpty } kind = kEmpty;
  std::string name = {};
  std::vector<int64_t> dims = {};
  std::vector<float> f = {};
  std::vector<int64_t> i = {};
};
Extra Static(std::string name, std::vector<int64_t> dims, std::vector<float> v) {
  return {Extra::kStatic, std::move(name), std::move(dims), std::move(v), {}};
}
Extra Int64(std::string name, std::vector<int64_t> dims, std::vector<int64_t> v) {
  return {Extra::kInt64, std::move(name), std::move(dims), {}, std::move(v)};
}
Extra Float(std::string name, std::vector<int64_t> dims, std::vector<float> v) {
  return {Extra::kFloat, std::move(name), std::move(dims), std::move(v), {}};
}
Extra Empty() { return {}; }

// One operator with one float data input (input 0), extra inputs and one data output.
struct OpCase {
  std::string op = {};
  std::vector<int64_t> shape = {1, 4, 8, 8};
  std::vector<Extra> extras = {};
  std::vector<onnx::AttributeProto> attrs = {};
  // Declared type of the output (for operators ONNX shape inference leaves without a shape).
  std::vector<int64_t> out_shape = {};
};

void PrintTo(const OpCase& c, std::ostream* os) { *os << c.op; }

// Adds the extras; the static extra with index `bad` (counted among all extras) is written in
// form `f` instead of a direct FP32 initializer.
std::vector<std::string> AddExtras(ModelBuilder& b, const OpCase& c, int bad = -1,
                                   Form f = Form::kInit) {
  std::vector<std::string> names;
  for (std::size_t k = 0; k < c.extras.size(); ++k) {
    const auto& e = c.extras[k];
    switch (e.kind) {
      case Extra::kStatic:
        names.push_back(
            F32In(b, e.name, e.dims, e.f, static_cast<int>(k) == bad ? f : Form::kInit));
        break;
      case Extra::kInt64:
        b.InitInt(e.name, TP::INT64, e.dims, e.i);
        names.push_back(e.name);
        break;
      case Extra::kFloat:
        b.InitF32(e.name, e.dims, e.f);
        names.push_back(e.name);
        break;
      case Extra::kEmpty:
        names.emplace_back();
        break;
    }
  }
  return names;
}

// kFp32InitQdq / kIntInitDq: a constant data input in the forms of 3.6 (FP32 initializer -> Q/DQ
// 'x', integer initializer of pin's type -> DQ 'x').
enum class In { kQdq, kGraphInput, kFp32Init, kFp32InitQdq, kIntInitDq };
// kQdqIntoOp: o -> Q/DQ 'y' -> Tanh 'tanh' -> Q/DQ 'z' -> output (the Q/DQ is Tanh's input).
enum class Out { kQdq, kGraphOutput, kIntoOp, kQdqIntoOp };

struct Build {
  In in = In::kQdq;
  Out out = Out::kQdq;
  QParams pin = QParams::U8(0.02f, 128);
  QParams pout = QParams::U8(0.05f, 3);
  int bad = -1;
  Form form = Form::kInit;
};

// x -> Q/DQ 'x' -> op 'op' -> Q/DQ 'y' -> output (each side replaceable).
ModelBuilder SingleInput(const OpCase& c, const Build& o = {}) {
  ModelBuilder b;
  std::string x = "x";
  switch (o.in) {
    case In::kQdq:
      b.Input("x", TP::FLOAT, c.shape);
      x = b.QDQ("x", "x", o.pin);
      break;
    case In::kGraphInput:
      b.Input("x", TP::FLOAT, c.shape);
      break;
    case In::kFp32Init:
      b.InitF32Rand("x", c.shape, 0.1f, 1.0f);
      break;
    case In::kFp32InitQdq:
      b.InitF32Rand("x", c.shape, 0.1f, 1.0f);
      x = b.QDQ("x", "x", o.pin);
      break;
    case In::kIntInitDq:
      b.InitInt("x", o.pin.ElemType(), c.shape,
                std::vector<int64_t>(static_cast<std::size_t>(Count(c.shape)), 1));
      x = b.Dequantize("x", "x", o.pin);
      break;
  }
  std::vector<std::string> ins{x};
  for (auto& n : AddExtras(b, c, o.bad, o.form)) ins.push_back(n);
  b.Node(c.op, ins, {"o"}, c.attrs, "op");
  const bool declare = !c.out_shape.empty();
  if (declare && o.out != Out::kGraphOutput) b.ValueInfo("o", TP::FLOAT, AsDims(c.out_shape));
  switch (o.out) {
    case Out::kQdq:
      if (declare) {
        b.ValueInfo("y_q_out", o.pout.ElemType(), AsDims(c.out_shape));
        b.Output(b.QDQ("o", "y", o.pout), TP::FLOAT, c.out_shape);
      } else {
        b.Output(b.QDQ("o", "y", o.pout));
      }
      break;
    case Out::kGraphOutput:
      if (declare) {
        b.Output("o", TP::FLOAT, c.out_shape);
      } else {
        b.Output("o");
      }
      break;
    case Out::kIntoOp:
      b.Node("Tanh", {"o"}, {"t"}, {}, "tanh");
      b.Output(b.QDQ("t", "y", o.pout));
      break;
    case Out::kQdqIntoOp:
      b.Node("Tanh", {b.QDQ("o", "y", o.pout)}, {"t"}, {}, "tanh");
      b.Output(b.QDQ("t", "z", QParams::U8(0.008f, 128)));
      break;
  }
  return b;
}

std::string CaseName(const ::testing::TestParamInfo<OpCase>& i) { return i.param.op; }

// ------------------------------------------------------------------------------------------
// Quant-only operators with one float data input: 5.5 (LogSoftmax, LpNormalization, Pow), 5.6
// (unary), 5.7 (activation, normalisation, pooling), 5.8 (CumSum, PRelu, Reduce*, RoiAlign).

std::vector<OpCase> QuantOnlyCases() {
  std::vector<OpCase> v;
  // 5.5
  v.push_back({.op = "LogSoftmax", .attrs = {B::AttrI("axis", 1)}});
  v.push_back({.op = "LpNormalization", .attrs = {B::AttrI("axis", 1), B::AttrI("p", 2)}});
  v.push_back({.op = "Pow", .extras = {Float("exponent", {}, {2.0f})}});
  // 5.6
  for (const char* op : {"Cos", "Elu", "Erf", "Exp", "HardSigmoid", "HardSwish", "Log", "Mish",
                         "Sin", "Softplus", "Sqrt", "Tanh", "Reciprocal"}) {
    v.push_back({.op = op});
  }
  // 5.7
  for (const char* op : {"Sigmoid", "Gelu", "LeakyRelu", "Softmax", "GlobalAveragePool"}) {
    v.push_back({.op = op});
  }
  v.push_back({.op = "AveragePool", .attrs = {B::AttrInts("kernel_shape", {2, 2})}});
  v.push_back({.op = "LayerNormalization",
               .shape = {1, 4, 8},
               .extras = {Static("ln_scale", {8}, Ramp(8)), Static("ln_bias", {8}, Ramp(8))},
               .attrs = {B::AttrI("axis", -1)}});
  v.push_back({.op = "GroupNormalization",
               .extras = {Static("gn_scale", {4}, Ramp(4)), Static("gn_bias", {4}, Ramp(4))},
               .attrs = {B::AttrI("num_groups", 2)},
               .out_shape = {1, 4, 8, 8}});
  v.push_back({.op = "InstanceNormalization",
               .extras = {Static("in_scale", {4}, Ramp(4)), Static("in_bias", {4}, Ramp(4))}});
  v.push_back({.op = "BatchNormalization",
               .extras = {Static("bn_scale", {4}, Ramp(4)), Static("bn_bias", {4}, Ramp(4)),
                          Static("bn_mean", {4}, Ramp(4)), Static("bn_var", {4}, Ramp(4))}});
  // 5.8
  v.push_back({.op = "CumSum", .shape = {1, 4, 8}, .extras = {Int64("axis", {}, {1})}});
  v.push_back({.op = "PRelu", .extras = {Static("slope", {4, 1, 1}, Ramp(4))}});
  for (const char* op : {"ReduceL2", "ReduceMean", "ReduceSum"}) {
    v.push_back({.op = op, .extras = {Int64("axes", {1}, {1})}});
  }
  v.push_back({.op = "RoiAlign",
               .extras = {Float("rois", {2, 4}, {0, 0, 4, 4, 1, 1, 6, 6}),
                          Int64("batch_indices", {2}, {0, 0})},
               .attrs = {B::AttrI("output_height", 2), B::AttrI("output_width", 2)}});
  return v;
}

class QuantOnly : public ::testing::TestWithParam<OpCase> {};

TEST_P(QuantOnly, ConformantWithQdqOnBothSides) {
  auto r = RunCheck(SingleInput(GetParam()), true);
  EXPECT_CLEAN(r);
  ExpectNoErrorsOrWarnings(r);
}

TEST_P(QuantOnly, InputAndOutputParamsAreIndependent) {
  EXPECT_CLEAN(RunCheck(
      SingleInput(GetParam(), {.pin = QParams::S16(0.001f), .pout = QParams::U8(0.1f, 200)}),
      true));
  EXPECT_CLEAN(
      RunCheck(SingleInput(GetParam(), {.pin = QParams::U16(), .pout = QParams::S8(0.03f)}), true));
}

TEST_P(QuantOnly, InputFromGraphInputWithoutQdq) {
  auto r = RunCheck(SingleInput(GetParam(), {.in = In::kGraphInput}));
  EXPECT_FINDING(r, "op/input-not-quantized", "op", "'x'");
  EXPECT_NON_CONFORMANT(r);
}

// 3.6: constant data of a quant-only operator is FP32 initializer -> Q -> DQ or integer
// initializer -> DQ.
TEST_P(QuantOnly, ConstantInputInAllowedForms) {
  EXPECT_CLEAN(RunCheck(SingleInput(GetParam(), {.in = In::kFp32InitQdq}), true));
  EXPECT_CLEAN(RunCheck(SingleInput(GetParam(), {.in = In::kIntInitDq}), true));
}

TEST_P(QuantOnly, S32DataInputIsNotAnActivationType) {
  auto r = RunCheck(SingleInput(GetParam(), {.in = In::kIntInitDq, .pin = QParams::S32()}));
  EXPECT_FINDING(r, "role/activation-type", "x_dq", "S32");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(QuantOnly, InputFromFp32InitializerWithoutQdq) {
  auto r = RunCheck(SingleInput(GetParam(), {.in = In::kFp32Init}));
  EXPECT_FINDING(r, "qdq/const-form", "op", "FP32 initializer");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(QuantOnly, OutputIsGraphOutputWithoutQdq) {
  auto r = RunCheck(SingleInput(GetParam(), {.out = Out::kGraphOutput}));
  EXPECT_FINDING(r, "op/output-not-quantized", "op", "graph output");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(QuantOnly, OutputFeedsAnotherOperatorWithoutQdq) {
  auto r = RunCheck(SingleInput(GetParam(), {.out = Out::kIntoOp}));
  EXPECT_FINDING(r, "op/output-not-quantized", "op", "Tanh 'tanh'");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(QuantOnly, U4InputIsNotAnActivationTypeHere) {
  auto r = RunCheck(SingleInput(GetParam(), {.pin = QParams::U4(0.02f, 8)}));
  EXPECT_FINDING(r, "role/activation-type", "x_dq", "U4");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(QuantOnly, U4OutputIsNotAnActivationTypeHere) {
  auto r = RunCheck(SingleInput(GetParam(), {.pout = QParams::U4(0.02f, 8)}));
  EXPECT_FINDING(r, "role/activation-type", "y_dq", "U4");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(QuantOnly, PerChannelInputIsNotAnActivation) {
  auto r =
      RunCheck(SingleInput(GetParam(), {.pin = QParams::PerChannel(QType::kS8, Scales(4), 1)}));
  EXPECT_FINDING(r, "role/activation-type", "x_dq", "per-channel");
  EXPECT_NON_CONFORMANT(r);
}

INSTANTIATE_TEST_SUITE_P(Section5, QuantOnly, ::testing::ValuesIn(QuantOnlyCases()), CaseName);

// Every parameter that must be a direct FP32 initializer (5.7 affine scale/bias of
// Layer/Group/InstanceNormalization, BatchNormalization scale/bias/mean/var; 5.8 PRelu slope):
// through DQ, through Q/DQ, from a graph input or from a Constant it is op/static-param.
struct StaticCase {
  OpCase op;
  int slot;  // index into op.extras
  Form form;
};

void PrintTo(const StaticCase& c, std::ostream* os) {
  *os << c.op.op << " " << c.op.extras[static_cast<std::size_t>(c.slot)].name << " "
      << FormName(c.form);
}

std::vector<StaticCase> StaticCases() {
  std::vector<StaticCase> v;
  for (const auto& c : QuantOnlyCases()) {
    for (std::size_t k = 0; k < c.extras.size(); ++k) {
      if (c.extras[k].kind != Extra::kStatic) continue;
      for (Form f : {Form::kIntDq, Form::kQdq, Form::kGraphInput, Form::kConstant}) {
        v.push_back({c, static_cast<int>(k), f});
      }
    }
  }
  return v;
}

class StaticParam : public ::testing::TestWithParam<StaticCase> {};

TEST_P(StaticParam, NotADirectFp32Initializer) {
  const auto& p = GetParam();
  auto r = RunCheck(SingleInput(p.op, {.bad = p.slot, .form = p.form}));
  const auto& name = p.op.extras[static_cast<std::size_t>(p.slot)].name;
  EXPECT_FINDING(r, "op/static-param", "op", "'" + name);
  EXPECT_NON_CONFORMANT(r);
}

INSTANTIATE_TEST_SUITE_P(Section5, StaticParam, ::testing::ValuesIn(StaticCases()),
                         [](const ::testing::TestParamInfo<StaticCase>& i) {
                           return i.param.op.op + "_" +
                                  i.param.op.extras[static_cast<std::size_t>(i.param.slot)].name +
                                  "_" + FormName(i.param.form);
                         });

// Multi-output LayerNormalization (5.1): only used outputs need Q/DQ.
TEST(LayerNormalization, WithoutBiasIsConformant) {
  OpCase c{.op = "LayerNormalization",
           .shape = {1, 4, 8},
           .extras = {Static("ln_scale", {8}, Ramp(8))},
           .attrs = {B::AttrI("axis", -1)}};
  EXPECT_CLEAN(RunCheck(SingleInput(c), true));
}

// 5.1: a branch may skip Q/DQ only into a pattern that takes the edge over; SiLU's X is a
// quantization boundary (6.2), so Conv -> SiLU needs Q/DQ in between.
TEST(OutputBranch, ConvIntoSiluWithoutQdq) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8(0.02f, 128));
  auto ws = Scales(8);
  auto w = b.WeightQDQ("w", {8, 4, 3, 3}, QParams::PerChannel(QType::kS8, ws, 0));
  b.Node("Conv", {x, w}, {"c"}, {B::AttrInts("pads", {1, 1, 1, 1})}, "conv");
  b.Node("Sigmoid", {"c"}, {"s"}, {}, "sig");
  b.Node("Mul", {"c", "s"}, {"m"}, {}, "mul");
  b.Output(b.QDQ("m", "y", QParams::U8()));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/output-not-quantized", "conv", "'c'");
  EXPECT_NON_CONFORMANT(r);
}

TEST(LayerNormalization, UnusedMeanAndInvStdDevNeedNoQdq) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8});
  auto x = b.QDQ("x", "x", QParams::U8());
  b.InitF32("s", {8}, Ramp(8));
  b.InitF32("bi", {8}, Ramp(8));
  b.Node("LayerNormalization", {x, "s", "bi"}, {"o", "mean", "inv"}, {B::AttrI("axis", -1)}, "op");
  b.Output(b.QDQ("o", "y", QParams::U8()));
  EXPECT_CLEAN(RunCheck(b, true));
  // A used Mean output is a float data output: it needs Q/DQ too.
  auto used = b;
  used.Output("mean");
  auto r = RunCheck(used);
  EXPECT_FINDING(r, "op/output-not-quantized", "op", "'mean'");
  EXPECT_NON_CONFORMANT(r);
  auto quantized = b;
  quantized.Output(quantized.QDQ("mean", "m", QParams::U8(0.01f, 0)));
  EXPECT_CLEAN(RunCheck(quantized, true));
}

// Conv/ConvTranspose + BatchNormalization may be fused (5.7 last line, 6.4): no Q/DQ between them.
TEST(BatchNormalization, AfterConvIsTakenOverByTheFusionPattern) {
  ModelBuilder m;
  m.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = m.QDQ("x", "x", QParams::U8(0.02f, 128));
  auto ws = Scales(8);
  auto w = m.WeightQDQ("w", {8, 4, 3, 3}, QParams::PerChannel(QType::kS8, ws, 0));
  auto bias = m.BiasInt32DQ("b", 8, modelgen::BiasScales(0.02f, ws));
  m.Node("Conv", {x, w, bias}, {"c"}, {B::AttrInts("pads", {1, 1, 1, 1})}, "conv");
  for (const char* p : {"bn_scale", "bn_bias", "bn_mean", "bn_var"}) m.InitF32(p, {8}, Ramp(8));
  m.Node("BatchNormalization", {"c", "bn_scale", "bn_bias", "bn_mean", "bn_var"}, {"o"}, {}, "bn");
  m.Output(m.QDQ("o", "y", QParams::U8()));
  auto r = RunCheck(m, true);
  EXPECT_CLEAN(r);
  EXPECT_NO_RULE(r, "op/output-not-quantized");
}

// ------------------------------------------------------------------------------------------
// 5.5 Pow: base and output quantized; the exponent is not quantized, a static one is an
// initializer.

ModelBuilder PowModel(const std::function<std::string(ModelBuilder&)>& exponent) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8());
  auto e = exponent(b);
  b.Node("Pow", {x, e}, {"o"}, {}, "op");
  b.Output(b.QDQ("o", "y", QParams::U8(0.05f, 3)));
  return b;
}

TEST(Pow, ExponentInitializerIsConformant) {
  auto r = RunCheck(PowModel([](ModelBuilder& b) {
                      b.InitF32("e", {}, {2.0f});
                      return std::string("e");
                    }),
                    true);
  EXPECT_CLEAN(r);
}

TEST(Pow, IntegerExponentInitializerIsConformant) {
  auto r = RunCheck(PowModel([](ModelBuilder& b) {
                      b.InitInt("e", TP::INT64, {}, {3});
                      return std::string("e");
                    }),
                    true);
  EXPECT_CLEAN(r);
}

TEST(Pow, RuntimeFp32ExponentIsNotQuantizedAndConformant) {
  auto r = RunCheck(PowModel([](ModelBuilder& b) {
                      b.Input("e", TP::FLOAT, {});
                      return std::string("e");
                    }),
                    true);
  EXPECT_CLEAN(r);
  EXPECT_NO_RULE(r, "op/static-param");
}

TEST(Pow, ExponentThroughDqIsStaticParam) {
  auto r = RunCheck(PowModel([](ModelBuilder& b) {
    b.InitInt("e", TP::INT8, {}, {2});
    return b.Dequantize("e", "e", QParams::S8(1.0f));
  }));
  EXPECT_FINDING(r, "op/static-param", "op", "exponent 'e_dq_out'");
  EXPECT_NON_CONFORMANT(r);
}

TEST(Pow, RuntimeExponentThroughQdqIsStaticParam) {
  auto r = RunCheck(PowModel([](ModelBuilder& b) {
    b.Input("e", TP::FLOAT, {});
    return b.QDQ("e", "e", QParams::S8(0.1f));
  }));
  EXPECT_FINDING(r, "op/static-param", "op", "not quantized");
  EXPECT_NON_CONFORMANT(r);
}

TEST(Pow, ExponentFromConstantIsStaticParam) {
  auto r = RunCheck(PowModel([](ModelBuilder& b) {
    b.Node("Constant", {}, {"e"}, {B::AttrT("value", B::MakeF32("e", {}, {2.0f}))}, "e_const");
    return std::string("e");
  }));
  EXPECT_FINDING(r, "op/static-param", "op", "Constant");
  EXPECT_FINDING(r, "onnx/constant-node", "e_const", "initializer");
  EXPECT_NON_CONFORMANT(r);
}

// ------------------------------------------------------------------------------------------
// 5.5 Add Sub Mul Div Max Min: every float data input (Max/Min: every variadic input) and the
// output quantized, independently.

struct ArithCase {
  std::string op;
  int inputs = 2;
  std::string name;
};

void PrintTo(const ArithCase& c, std::ostream* os) { *os << c.name; }

std::vector<ArithCase> ArithCases() {
  return {{"Add", 2, "Add"}, {"Sub", 2, "Sub"}, {"Mul", 2, "Mul"},  {"Div", 2, "Div"},
          {"Max", 2, "Max"}, {"Min", 2, "Min"}, {"Max", 3, "Max3"}, {"Min", 3, "Min3"}};
}

// Input k: 'a<k>' through Q/DQ 'a<k>' (types alternate U8, S16, S8 to show independence), or as
// `raw` says: -1 none, k = graph input 'a<k>' without Q/DQ.
enum class Operand { kQdq, kGraphInput, kFp32Init, kFp32InitQdq, kIntInitDq, kConstant };

ModelBuilder Arith(const ArithCase& c, int slot = -1, Operand form = Operand::kQdq,
                   Out out = Out::kQdq) {
  static const std::vector<QParams> kTypes{QParams::U8(0.02f, 128), QParams::S16(0.001f),
                                           QParams::S8(0.03f)};
  ModelBuilder b;
  std::vector<std::string> ins;
  for (int k = 0; k < c.inputs; ++k) {
    const std::string a = "a" + std::to_string(k);
    const auto& p = kTypes[static_cast<std::size_t>(k) % kTypes.size()];
    const std::vector<int64_t> dims{1, 4, 8, 8};
    Operand f = k == slot ? form : Operand::kQdq;
    switch (f) {
      case Operand::kQdq:
        b.Input(a, TP::FLOAT, dims);
        ins.push_back(b.QDQ(a, a, p));
        break;
      case Operand::kGraphInput:
        b.Input(a, TP::FLOAT, dims);
        ins.push_back(a);
        break;
      case Operand::kFp32Init:
        b.InitF32Rand(a, dims, 0.5f, 1.0f);
        ins.push_back(a);
        break;
      case Operand::kFp32InitQdq:
        b.InitF32Rand(a, dims, 0.5f, 1.0f);
        ins.push_back(b.QDQ(a, a, QParams::U8(0.004f, 0)));
        break;
      case Operand::kIntInitDq:
        b.InitInt(a, TP::UINT8, dims,
                  std::vector<int64_t>(static_cast<std::size_t>(Count(dims)), 9));
        ins.push_back(b.Dequantize(a, a, QParams::U8(0.004f, 0)));
        break;
      case Operand::kConstant:
        b.Node("Constant", {}, {a},
               {B::AttrT("value", B::MakeF32(a, dims, std::vector<float>(256, 0.5f)))},
               a + "_const");
        ins.push_back(a);
        break;
    }
  }
  b.Node(c.op, ins, {"o"}, {}, "op");
  if (out == Out::kQdq) {
    b.Output(b.QDQ("o", "y", QParams::U8(0.05f, 100)));
  } else {
    b.Output("o");
  }
  return b;
}

class Arithmetic : public ::testing::TestWithParam<ArithCase> {};

TEST_P(Arithmetic, ConformantWithIndependentParams) {
  auto r = RunCheck(Arith(GetParam()), true);
  EXPECT_CLEAN(r);
  ExpectNoErrorsOrWarnings(r);
}

TEST_P(Arithmetic, EveryInputMustBeQuantized) {
  for (int k = 0; k < GetParam().inputs; ++k) {
    SCOPED_TRACE("input " + std::to_string(k));
    auto r = RunCheck(Arith(GetParam(), k, Operand::kGraphInput));
    EXPECT_FINDING(r, "op/input-not-quantized", "op", "'a" + std::to_string(k) + "'");
    EXPECT_NON_CONFORMANT(r);
  }
}

TEST_P(Arithmetic, OutputMustBeQuantized) {
  auto r = RunCheck(Arith(GetParam(), -1, Operand::kQdq, Out::kGraphOutput));
  EXPECT_FINDING(r, "op/output-not-quantized", "op", "'o'");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(Arithmetic, StaticFp32OperandWithoutQdqIsConstForm) {
  const int last = GetParam().inputs - 1;
  auto r = RunCheck(Arith(GetParam(), last, Operand::kFp32Init));
  EXPECT_FINDING(r, "qdq/const-form", "op", "FP32 initializer used directly");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(Arithmetic, StaticOperandFromConstantIsConstForm) {
  auto r = RunCheck(Arith(GetParam(), 1, Operand::kConstant));
  EXPECT_FINDING(r, "qdq/const-form", "op", "Constant");
  EXPECT_FINDING(r, "onnx/constant-node", "a1_const", "initializer");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(Arithmetic, StaticOperandThroughQdqOrIntDqIsConformant) {
  EXPECT_CLEAN(RunCheck(Arith(GetParam(), 1, Operand::kFp32InitQdq), true));
  EXPECT_CLEAN(RunCheck(Arith(GetParam(), 1, Operand::kIntInitDq), true));
}

INSTANTIATE_TEST_SUITE_P(Section5_5, Arithmetic, ::testing::ValuesIn(ArithCases()),
                         [](const ::testing::TestParamInfo<ArithCase>& i) { return i.param.name; });

// Add, Sub, Mul on INT64 shape/index arithmetic: native-integer mode without Q/DQ (5.5).
class NativeInteger : public ::testing::TestWithParam<std::string> {};

TEST_P(NativeInteger, Int64ArithmeticWithoutQdqHasNoFindings) {
  ModelBuilder b;
  AddQuantizedAnchor(b);
  b.Input("n", TP::INT64, {2});
  b.InitInt("k", TP::INT64, {2}, {2, 3});
  b.Node(GetParam(), {"n", "k"}, {"o"}, {}, "op");
  b.Output("o");
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_TRUE(r.findings.empty()) << Dump(r);
}

INSTANTIATE_TEST_SUITE_P(Section5_5, NativeInteger, ::testing::Values("Add", "Sub", "Mul"));

// ------------------------------------------------------------------------------------------
// 5.2 Conv, ConvTranspose, Gemm

enum class Bias { kNone, kF32, kInt32Dq, kS32PerTensor, kS8PerChannel, kF32QdqS32, kGraphInput };

struct LinOpts {
  std::string op = "Conv";
  QParams in = QParams::U8(0.02f, 128);
  QType wtype = QType::kS8;
  bool int_weight = false;
  std::optional<int64_t> waxis = std::nullopt;  // default: the op's weight axis
  bool w_per_tensor = false;
  Bias bias = Bias::kInt32Dq;
  QParams out = QParams::U8(0.05f, 0);
  In input = In::kQdq;
  Out output = Out::kQdq;
};

// Conv: x [1,4,8,8], w [8,4,3,3]; ConvTranspose: w [4,8,3,3]; Gemm: x [2,16], w [8,16]
// (transB=1). 8 output channels. Node 'op'; Q/DQ 'x', 'w', 'b', 'y'.
ModelBuilder Linear(const LinOpts& o) {
  ModelBuilder b;
  const bool gemm = o.op == "Gemm";
  const std::vector<int64_t> xd =
      gemm ? std::vector<int64_t>{2, 16} : std::vector<int64_t>{1, 4, 8, 8};
  std::vector<int64_t> wd = gemm                      ? std::vector<int64_t>{8, 16}
                            : o.op == "ConvTranspose" ? std::vector<int64_t>{4, 8, 3, 3}
                                                      : std::vector<int64_t>{8, 4, 3, 3};
  const int64_t axis = o.waxis.value_or(o.op == "ConvTranspose" ? 1 : 0);
  b.Input("x", TP::FLOAT, xd);
  std::string x = "x";
  if (o.input == In::kQdq) x = b.QDQ("x", "x", o.in);
  const auto ws = Scales(wd[static_cast<std::size_t>(axis)]);
  QParams wp = o.w_per_tensor ? QParams::S8(0.01f) : QParams::PerChannel(o.wtype, ws, axis);
  if (o.w_per_tensor) wp.type = o.wtype;
  auto w = o.int_weight ? b.WeightIntDQ("w", wd, wp) : b.WeightQDQ("w", wd, wp);
  std::vector<std::string> ins{x, w};
  const auto bs = modelgen::BiasScales(o.in.scale[0], ws);
  switch (o.bias) {
    case Bias::kNone:
      break;
    case Bias::kF32:
      b.InitF32("bias", {8}, Ramp(8));
      ins.emplace_back("bias");
      break;
    case Bias::kInt32Dq:
      ins.push_back(b.BiasInt32DQ("b", 8, bs));
      break;
    case Bias::kS32PerTensor:
      b.InitInt("b", TP::INT32, {8}, {1, 2, 3, 4, 5, 6, 7, 8});
      ins.push_back(b.Dequantize("b", "b", QParams::S32(0.0002f)));
      break;
    case Bias::kS8PerChannel:
      b.InitInt("b", TP::INT8, {8}, {1, 2, 3, 4, 5, 6, 7, 8});
      ins.push_back(b.Dequantize("b", "b", QParams::PerChannel(QType::kS8, bs, 0)));
      break;
    case Bias::kF32QdqS32:
      b.InitF32("b", {8}, Ramp(8));
      ins.push_back(b.QDQ("b", "b", QParams::PerChannel(QType::kS32, bs, 0)));
      break;
    case Bias::kGraphInput:
      b.Input("bias", TP::FLOAT, {8});
      ins.emplace_back("bias");
      break;
  }
  std::vector<onnx::AttributeProto> attrs;
  if (gemm) {
    attrs.push_back(B::AttrI("transB", 1));
  } else {
    attrs.push_back(B::AttrInts("pads", {1, 1, 1, 1}));
  }
  b.Node(o.op, ins, {"o"}, attrs, "op");
  if (o.output == Out::kQdq) {
    b.Output(b.QDQ("o", "y", o.out));
  } else {
    b.Output("o");
  }
  return b;
}

class LinearOp : public ::testing::TestWithParam<std::string> {};

TEST_P(LinearOp, S8AndS4PerChannelWeightsAreConformant) {
  for (QType t : {QType::kS8, QType::kS4}) {
    for (bool int_weight : {false, true}) {
      SCOPED_TRACE(std::string(modelgen::QTypeName(t)) + (int_weight ? " int init" : " Q/DQ"));
      auto r = RunCheck(Linear({.op = GetParam(), .wtype = t, .int_weight = int_weight}), true);
      EXPECT_CLEAN(r);
      ExpectNoErrorsOrWarnings(r);
    }
  }
}

TEST_P(LinearOp, U4ActivationInputIsAllowed) {
  EXPECT_CLEAN(RunCheck(Linear({.op = GetParam(), .in = QParams::U4(0.02f, 8)}), true));
}

TEST_P(LinearOp, InputAndOutputParamsAreIndependent) {
  EXPECT_CLEAN(RunCheck(
      Linear({.op = GetParam(), .in = QParams::S16(0.001f), .out = QParams::U16(0.001f, 7)}),
      true));
}

TEST_P(LinearOp, WeightPerTensorIsWeightType) {
  auto r = RunCheck(Linear({.op = GetParam(), .w_per_tensor = true, .bias = Bias::kF32}));
  EXPECT_FINDING(r, "role/weight-type", "w_dq", "per-tensor");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(LinearOp, WeightTypeOtherThanS4S8IsWeightType) {
  for (QType t : {QType::kU8, QType::kS16, QType::kU4}) {
    SCOPED_TRACE(modelgen::QTypeName(t));
    auto r = RunCheck(Linear({.op = GetParam(), .wtype = t, .int_weight = true}));
    EXPECT_FINDING(r, "role/weight-type", "w_dq", modelgen::QTypeName(t));
    EXPECT_NON_CONFORMANT(r);
  }
}

TEST_P(LinearOp, WrongWeightAxis) {
  const int64_t wrong = GetParam() == "ConvTranspose" ? 0 : 1;
  auto r = RunCheck(Linear({.op = GetParam(), .waxis = wrong, .bias = Bias::kF32}));
  EXPECT_FINDING(r, "qdq/weight-axis", "w_dq", "axis " + std::to_string(wrong));
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(LinearOp, WeightWithoutQdqIsConstForm) {
  // The weight an FP32 initializer straight into the op.
  ModelBuilder m;
  const bool gemm = GetParam() == "Gemm";
  m.Input("x", TP::FLOAT, gemm ? std::vector<int64_t>{2, 16} : std::vector<int64_t>{1, 4, 8, 8});
  auto x = m.QDQ("x", "x", QParams::U8());
  m.InitF32Rand("wf", gemm                   ? std::vector<int64_t>{8, 16}
                      : GetParam() == "Conv" ? std::vector<int64_t>{8, 4, 3, 3}
                                             : std::vector<int64_t>{4, 8, 3, 3});
  m.Node(GetParam(), {x, "wf"}, {"o"},
         {gemm ? B::AttrI("transB", 1) : B::AttrInts("pads", {1, 1, 1, 1})}, "op");
  m.Output(m.QDQ("o", "y", QParams::U8()));
  auto r = RunCheck(m);
  EXPECT_FINDING(r, "qdq/const-form", "op", "weight 'wf'");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(LinearOp, InputNotQuantized) {
  auto r = RunCheck(Linear({.op = GetParam(), .input = In::kGraphInput}));
  EXPECT_FINDING(r, "op/input-not-quantized", "op", "'x'");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(LinearOp, OutputNotQuantized) {
  auto r = RunCheck(Linear({.op = GetParam(), .output = Out::kGraphOutput}));
  EXPECT_FINDING(r, "op/output-not-quantized", "op", "'o'");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(LinearOp, BiasFp32InitializerDirectIsConformant) {
  EXPECT_CLEAN(RunCheck(Linear({.op = GetParam(), .bias = Bias::kF32}), true));
}

TEST_P(LinearOp, BiasInt32InitializerThroughDqIsConformant) {
  EXPECT_CLEAN(RunCheck(Linear({.op = GetParam(), .bias = Bias::kInt32Dq}), true));
}

TEST_P(LinearOp, NoBiasIsConformant) {
  EXPECT_CLEAN(RunCheck(Linear({.op = GetParam(), .bias = Bias::kNone}), true));
}

TEST_P(LinearOp, PerTensorS32BiasIsBiasType) {
  auto r = RunCheck(Linear({.op = GetParam(), .bias = Bias::kS32PerTensor}));
  EXPECT_FINDING(r, "role/bias-type", "b_dq", "per-tensor");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(LinearOp, S8BiasIsBiasType) {
  auto r = RunCheck(Linear({.op = GetParam(), .bias = Bias::kS8PerChannel}));
  EXPECT_FINDING(r, "role/bias-type", "b_dq", "S8");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(LinearOp, RuntimeBiasIsConstForm) {
  auto r = RunCheck(Linear({.op = GetParam(), .bias = Bias::kGraphInput}));
  EXPECT_FINDING(r, "qdq/const-form", "op", "bias 'bias'");
  EXPECT_NON_CONFORMANT(r);
}

// RULES.md reading 6: "FP32 bias -> S32 Q/DQ" cannot be expressed (no INT32 QuantizeLinear).
TEST_P(LinearOp, Fp32BiasThroughS32QdqIsInvalidOnnx) {
  auto r = RunCheck(Linear({.op = GetParam(), .bias = Bias::kF32QdqS32}));
  ASSERT_TRUE(Has(r, "onnx/invalid-model")) << Dump(r);
  EXPECT_NON_CONFORMANT(r);
}

INSTANTIATE_TEST_SUITE_P(Section5_2, LinearOp, ::testing::Values("Conv", "ConvTranspose", "Gemm"));

// ConvTranspose with group > 1: no quantized bias; no bias or a direct FP32 bias is fine (5.2, 4).
ModelBuilder GroupedDeconv(Bias bias) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8(0.02f, 128));
  const auto ws = Scales(2);
  auto w = b.WeightQDQ("w", {4, 2, 3, 3}, QParams::PerChannel(QType::kS8, ws, 1));
  std::vector<std::string> ins{x, w};
  if (bias == Bias::kF32) {
    b.InitF32("bias", {4}, Ramp(4));
    ins.emplace_back("bias");
  } else if (bias == Bias::kInt32Dq) {
    ins.push_back(b.BiasInt32DQ("b", 4, modelgen::BiasScales(0.02f, {0.01f, 0.02f, 0.01f, 0.02f})));
  }
  b.Node("ConvTranspose", ins, {"o"}, {B::AttrI("group", 2)}, "op");
  b.Output(b.QDQ("o", "y", QParams::U8()));
  return b;
}

TEST(ConvTranspose, GroupedWithoutOrWithFp32BiasIsConformant) {
  EXPECT_CLEAN(RunCheck(GroupedDeconv(Bias::kNone), true));
  EXPECT_CLEAN(RunCheck(GroupedDeconv(Bias::kF32), true));
}

TEST(ConvTranspose, GroupedWithQuantizedBias) {
  auto r = RunCheck(GroupedDeconv(Bias::kInt32Dq));
  EXPECT_FINDING(r, "role/convtranspose-group-bias", "op", "group=2");
  EXPECT_NON_CONFORMANT(r);
}

TEST(Gemm, U4ActivationWithS4Weights) {
  EXPECT_CLEAN(RunCheck(Linear({.op = "Gemm",
                                .in = QParams::U4(0.02f, 8),
                                .wtype = QType::kS4,
                                .int_weight = true,
                                .bias = Bias::kF32}),
                        true));
}

// Gemm canonical fully-connected form: transA=0, transB=1, alpha=1, beta=1.
struct GemmForm {
  std::string name = {};
  int64_t trans_a = 0, trans_b = 1;
  float alpha = 1.0f, beta = 1.0f;
  bool bias = true;
  std::string needle = {};
};

void PrintTo(const GemmForm& g, std::ostream* os) { *os << g.name; }

ModelBuilder GemmWith(const GemmForm& g) {
  ModelBuilder b;
  // A: [M=2, K=16] or transposed; B: [N=8, K=16] (transB=1) or [K, N].
  b.Input("x", TP::FLOAT, g.trans_a ? std::vector<int64_t>{16, 2} : std::vector<int64_t>{2, 16});
  auto x = b.QDQ("x", "x", QParams::U8());
  const std::vector<int64_t> wd =
      g.trans_b ? std::vector<int64_t>{8, 16} : std::vector<int64_t>{16, 8};
  auto w = b.WeightQDQ("w", wd, QParams::PerChannel(QType::kS8, Scales(wd[0]), 0));
  std::vector<std::string> ins{x, w};
  if (g.bias) {
    b.InitF32("bias", {8}, Ramp(8));
    ins.emplace_back("bias");
  }
  b.Node("Gemm", ins, {"o"},
         {B::AttrI("transA", g.trans_a), B::AttrI("transB", g.trans_b), B::AttrF("alpha", g.alpha),
          B::AttrF("beta", g.beta)},
         "op");
  b.Output(b.QDQ("o", "y", QParams::U8()));
  return b;
}

class GemmCanonicalForm : public ::testing::TestWithParam<GemmForm> {};

TEST_P(GemmCanonicalForm, NonCanonicalAttributesAreGemmForm) {
  auto r = RunCheck(GemmWith(GetParam()));
  EXPECT_FINDING(r, "op/gemm-form", "op", GetParam().needle);
  EXPECT_NON_CONFORMANT(r);
}

INSTANTIATE_TEST_SUITE_P(
    Section5_2, GemmCanonicalForm,
    ::testing::Values(
        GemmForm{.name = "TransA1", .trans_a = 1, .needle = "transA=1"},
        GemmForm{.name = "TransB0", .trans_b = 0, .needle = "transB=0"},
        GemmForm{.name = "Alpha2", .alpha = 2.0f, .needle = "alpha=2"},
        GemmForm{.name = "Beta05", .beta = 0.5f, .needle = "beta=0.5"},
        // 5.2 lists beta = 1 as part of the only accepted form, with or without C.
        GemmForm{.name = "Beta05NoBias", .beta = 0.5f, .bias = false, .needle = "beta=0.5"}),
    [](const ::testing::TestParamInfo<GemmForm>& i) { return i.param.name; });

TEST(GemmCanonicalForm, ExplicitCanonicalAttributesAreConformant) {
  EXPECT_CLEAN(RunCheck(GemmWith({.name = "canonical"}), true));
}

// 5.2: a linear layer decomposed into Transpose + MatMul + Add is not an FC pattern: each node
// keeps its own rule and its own Q/DQ.
struct Decomp {
  bool qdq_after_transpose = true;
  bool qdq_after_matmul = true;
  bool bias_qdq = true;
};

ModelBuilder Decomposed(const Decomp& d) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {2, 16});
  auto x = b.QDQ("x", "x", QParams::S8(0.02f));
  auto w = b.WeightQDQ("w", {8, 16}, QParams::S8(0.01f));
  b.Node("Transpose", {w}, {"wt"}, {B::AttrInts("perm", {1, 0})}, "transpose");
  std::string wt = d.qdq_after_transpose ? b.QDQ("wt", "wt", QParams::S8(0.01f)) : "wt";
  b.Node("MatMul", {x, wt}, {"mm"}, {}, "matmul");
  std::string mm = d.qdq_after_matmul ? b.QDQ("mm", "mm", QParams::U8(0.05f, 128)) : "mm";
  b.InitF32("bias", {8}, Ramp(8));
  std::string bias = d.bias_qdq ? b.QDQ("bias", "bias", QParams::U8(0.004f, 0)) : "bias";
  b.Node("Add", {mm, bias}, {"o"}, {}, "add");
  b.Output(b.QDQ("o", "y", QParams::U8(0.06f, 128)));
  return b;
}

TEST(LinearDecomposition, EachNodeWithItsOwnQdqIsConformant) {
  auto r = RunCheck(Decomposed({}), true);
  EXPECT_CLEAN(r);
  for (const auto& u : r.units) {
    EXPECT_EQ(u.kind.rfind("pattern", 0), std::string::npos) << u.kind;
  }
}

TEST(LinearDecomposition, NoQdqBetweenMatMulAndAdd) {
  auto r = RunCheck(Decomposed({.qdq_after_matmul = false}));
  EXPECT_FINDING(r, "op/output-not-quantized", "matmul", "Add 'add'");
  EXPECT_NON_CONFORMANT(r);
}

TEST(LinearDecomposition, NoQdqBetweenTransposeAndMatMul) {
  auto r = RunCheck(Decomposed({.qdq_after_transpose = false}));
  EXPECT_FINDING(r, "op/passive-params", "transpose", "MatMul 'matmul'");
  EXPECT_NON_CONFORMANT(r);
}

TEST(LinearDecomposition, AddBiasIsNotAGemmBiasAndNeedsQdq) {
  auto r = RunCheck(Decomposed({.bias_qdq = false}));
  EXPECT_FINDING(r, "qdq/const-form", "add", "'bias'");
  EXPECT_NON_CONFORMANT(r);
}

// ------------------------------------------------------------------------------------------
// 5.3 MatMul: both inputs symmetric per-tensor S8 or S16 of the same type; scales may differ;
// output independent; constant input via Q/DQ or integer initializer -> DQ.

struct MatMulOpts {
  QParams a = QParams::S8(0.02f);
  QParams w = QParams::S8(0.01f);
  enum { kRuntime, kFp32Qdq, kIntDq, kFp32Direct } b_form = kFp32Qdq;
  QParams out = QParams::U8(0.05f, 128);
};

ModelBuilder MatMulModel(const MatMulOpts& o) {
  ModelBuilder b;
  b.Input("a", TP::FLOAT, {2, 16});
  auto a = b.QDQ("a", "a", o.a);
  std::string w = "w";
  switch (o.b_form) {
    case MatMulOpts::kRuntime:
      b.Input("w", TP::FLOAT, {16, 8});
      w = b.QDQ("w", "w", o.w);
      break;
    case MatMulOpts::kFp32Qdq:
      w = b.WeightQDQ("w", {16, 8}, o.w);
      break;
    case MatMulOpts::kIntDq:
      w = b.WeightIntDQ("w", {16, 8}, o.w);
      break;
    case MatMulOpts::kFp32Direct:
      b.InitF32Rand("w", {16, 8});
      break;
  }
  b.Node("MatMul", {a, w}, {"o"}, {}, "op");
  b.Output(b.QDQ("o", "y", o.out));
  return b;
}

TEST(MatMul, SymmetricS8OrS16InputsAreConformant) {
  EXPECT_CLEAN(RunCheck(MatMulModel({}), true));
  EXPECT_CLEAN(
      RunCheck(MatMulModel({.a = QParams::S16(0.001f), .w = QParams::S16(0.0005f)}), true));
  EXPECT_CLEAN(RunCheck(MatMulModel({.b_form = MatMulOpts::kRuntime}), true));
  // Output from the activation range, independent of the inputs.
  EXPECT_CLEAN(RunCheck(MatMulModel({.out = QParams::S16(0.002f)}), true));
}

TEST(MatMul, ConstantInputFromIntegerInitializerThroughDq) {
  EXPECT_CLEAN(RunCheck(MatMulModel({.b_form = MatMulOpts::kIntDq}), true));
}

TEST(MatMul, ConstantFp32InputWithoutQdqIsConstForm) {
  auto r = RunCheck(MatMulModel({.b_form = MatMulOpts::kFp32Direct}));
  EXPECT_FINDING(r, "qdq/const-form", "op", "'w'");
  EXPECT_NON_CONFORMANT(r);
}

TEST(MatMul, UnsignedInputIsMatMulType) {
  for (const auto& p : {QParams::U8(0.02f, 128), QParams::U16()}) {
    auto r = RunCheck(MatMulModel({.a = p}));
    EXPECT_FINDING(r, "op/matmul-type", "a_dq", modelgen::QTypeName(p.type));
    EXPECT_NON_CONFORMANT(r);
  }
  auto r = RunCheck(MatMulModel({.w = QParams::U8(0.01f, 128)}));
  EXPECT_FINDING(r, "op/matmul-type", "w_dq", "U8");
}

TEST(MatMul, S4InputIsMatMulType) {
  auto r = RunCheck(MatMulModel({.w = QParams::S4(0.1f), .b_form = MatMulOpts::kIntDq}));
  EXPECT_FINDING(r, "op/matmul-type", "w_dq", "S4");
  EXPECT_NON_CONFORMANT(r);
}

TEST(MatMul, PerChannelInputIsMatMulType) {
  auto r = RunCheck(MatMulModel({.w = QParams::PerChannel(QType::kS8, Scales(8), 1)}));
  EXPECT_FINDING(r, "op/matmul-type", "w_dq", "per-channel");
  EXPECT_NON_CONFORMANT(r);
}

TEST(MatMul, MixedS8AndS16IsSameTypeInputs) {
  auto r = RunCheck(MatMulModel({.a = QParams::S8(0.02f), .w = QParams::S16(0.001f)}));
  EXPECT_FINDING(r, "op/same-type-inputs", "op", "S16");
  EXPECT_NON_CONFORMANT(r);
}

// RULES.md reading 3: a non-zero zero_point on a symmetric input is a check_value warning.
TEST(MatMul, NonZeroZeroPointIsOnlyAValueWarning) {
  auto a = QParams::S8(0.02f);
  a.zero_point = {5};
  auto m = MatMulModel({.a = a});
  EXPECT_NO_RULE(RunCheck(m), "op/matmul-type");
  auto r = RunCheck(m, true);
  EXPECT_FINDING(r, "qdq/zero-point-value", "a_dq", "zero_point = 5");
  EXPECT_EQ(r.verdict, Verdict::kConformant) << Dump(r);
}

// ------------------------------------------------------------------------------------------
// 5.4 GridSample: feature symmetric per-tensor S8/S16; grid FP32 (static: initializer) or
// symmetric per-tensor S16 (runtime Q/DQ, static integer initializer -> DQ); never S8.

enum class Grid {
  kFp32Init,
  kFp32Runtime,
  kS16IntDq,
  kS16RuntimeQdq,
  kS8RuntimeQdq,
  kS8IntDq,
  kU16RuntimeQdq,
  kConstant
};

ModelBuilder GridModel(Grid g, QParams feature = QParams::S8(0.02f)) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", feature);
  const std::vector<int64_t> gd{1, 6, 6, 2};
  std::vector<float> gv(72);
  for (std::size_t i = 0; i < gv.size(); ++i) gv[i] = -0.9f + 0.025f * static_cast<float>(i);
  std::vector<int64_t> gi(72);
  for (std::size_t i = 0; i < gi.size(); ++i) gi[i] = -30000 + 800 * static_cast<int64_t>(i);
  std::string grid = "grid";
  switch (g) {
    case Grid::kFp32Init:
      b.InitF32("grid", gd, gv);
      break;
    case Grid::kFp32Runtime:
      b.Input("grid", TP::FLOAT, gd);
      break;
    case Grid::kS16IntDq:
      b.InitInt("grid", TP::INT16, gd, gi);
      grid = b.Dequantize("grid", "grid", QParams::S16(1.0f / 32767.0f));
      break;
    case Grid::kS16RuntimeQdq:
      b.Input("grid", TP::FLOAT, gd);
      grid = b.QDQ("grid", "grid", QParams::S16(1.0f / 32767.0f));
      break;
    case Grid::kS8RuntimeQdq:
      b.Input("grid", TP::FLOAT, gd);
      grid = b.QDQ("grid", "grid", QParams::S8(1.0f / 127.0f));
      break;
    case Grid::kS8IntDq: {
      std::vector<int64_t> g8(72, 5);
      b.InitInt("grid", TP::INT8, gd, g8);
      grid = b.Dequantize("grid", "grid", QParams::S8(1.0f / 127.0f));
      break;
    }
    case Grid::kU16RuntimeQdq:
      b.Input("grid", TP::FLOAT, gd);
      grid = b.QDQ("grid", "grid", QParams::U16(1.0f / 32767.0f, 32768));
      break;
    case Grid::kConstant:
      b.Node("Constant", {}, {"grid"}, {B::AttrT("value", B::MakeF32("grid", gd, gv))},
             "grid_const");
      break;
  }
  b.Node("GridSample", {x, grid}, {"o"}, {}, "op");
  b.Output(b.QDQ("o", "y", QParams::U8(0.05f, 128)));
  return b;
}

TEST(GridSample, ConformantGridForms) {
  for (Grid g : {Grid::kFp32Init, Grid::kFp32Runtime, Grid::kS16IntDq, Grid::kS16RuntimeQdq}) {
    SCOPED_TRACE(static_cast<int>(g));
    EXPECT_CLEAN(RunCheck(GridModel(g), true));
    EXPECT_CLEAN(RunCheck(GridModel(g, QParams::S16(0.001f)), true));
  }
}

TEST(GridSample, S8GridIsGridSampleType) {
  for (Grid g : {Grid::kS8RuntimeQdq, Grid::kS8IntDq}) {
    auto r = RunCheck(GridModel(g));
    EXPECT_FINDING(r, "op/gridsample-type", "grid_dq", "S8");
    EXPECT_NON_CONFORMANT(r);
  }
}

TEST(GridSample, PerChannelS16GridIsGridSampleType) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::S8());
  b.Input("grid", TP::FLOAT, {1, 6, 6, 2});
  auto g = b.QDQ("grid", "grid", QParams::PerChannel(QType::kS16, {1e-4f, 1e-4f}, 3));
  b.Node("GridSample", {x, g}, {"o"}, {}, "op");
  b.Output(b.QDQ("o", "y", QParams::U8()));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/gridsample-type", "grid_dq", "per-channel");
  EXPECT_NON_CONFORMANT(r);
}

TEST(GridSample, UnsignedGridIsGridSampleType) {
  auto r = RunCheck(GridModel(Grid::kU16RuntimeQdq));
  EXPECT_FINDING(r, "op/gridsample-type", "grid_dq", "U16");
  EXPECT_NON_CONFORMANT(r);
}

TEST(GridSample, StaticGridFromConstantIsGridSampleType) {
  auto r = RunCheck(GridModel(Grid::kConstant));
  EXPECT_FINDING(r, "op/gridsample-type", "op", "initializer");
  EXPECT_NON_CONFORMANT(r);
}

TEST(GridSample, UnsignedOrPerChannelFeatureIsGridSampleType) {
  for (const auto& p : {QParams::U8(0.02f, 128), QParams::U16()}) {
    auto r = RunCheck(GridModel(Grid::kFp32Init, p));
    EXPECT_FINDING(r, "op/gridsample-type", "x_dq", modelgen::QTypeName(p.type));
    EXPECT_NON_CONFORMANT(r);
  }
  auto r = RunCheck(GridModel(Grid::kFp32Init, QParams::PerChannel(QType::kS8, Scales(4), 1)));
  EXPECT_FINDING(r, "op/gridsample-type", "x_dq", "per-channel");
  EXPECT_NON_CONFORMANT(r);
}

TEST(GridSample, FeatureNotQuantized) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  b.InitF32Rand("grid", {1, 6, 6, 2});
  b.Node("GridSample", {"x", "grid"}, {"o"}, {}, "op");
  b.Output(b.QDQ("o", "y", QParams::U8()));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/input-not-quantized", "op", "'x'");
  EXPECT_NON_CONFORMANT(r);
}

TEST(GridSample, OutputNotQuantized) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::S8());
  b.InitF32Rand("grid", {1, 6, 6, 2});
  b.Node("GridSample", {x, "grid"}, {"o"}, {}, "op");
  b.Output("o");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/output-not-quantized", "op", "'o'");
  EXPECT_NON_CONFORMANT(r);
}

// ------------------------------------------------------------------------------------------
// 5.8 ScatterElements, ScatterND, Where: two data inputs of one integer type, scales may differ;
// indices / condition native.

enum class TwoData { kScatterElements, kScatterND, kWhere };

struct TwoDataOpts {
  QParams p0 = QParams::U8(0.02f, 128);
  QParams p1 = QParams::U8(0.03f, 100);  // same type, different scale and zero_point
  bool raw1 = false;                     // second data input without Q/DQ (graph input)
  bool init1 = false;                    // second data input a direct FP32 initializer
  bool raw_out = false;
};

ModelBuilder TwoDataModel(TwoData op, const TwoDataOpts& o) {
  ModelBuilder b;
  auto data1 = [&](const std::string& name, const std::vector<int64_t>& d) {
    if (o.init1) {
      b.InitF32Rand(name, d);
      return name;
    }
    b.Input(name, TP::FLOAT, d);
    return o.raw1 ? name : b.QDQ(name, name, o.p1);
  };
  switch (op) {
    case TwoData::kScatterElements: {
      b.Input("data", TP::FLOAT, {4, 4});
      auto d = b.QDQ("data", "data", o.p0);
      b.InitInt("indices", TP::INT64, {1, 4}, {1, 0, 2, 3});
      auto u = data1("updates", {1, 4});
      b.Node("ScatterElements", {d, "indices", u}, {"o"}, {B::AttrI("axis", 0)}, "op");
      break;
    }
    case TwoData::kScatterND: {
      b.Input("data", TP::FLOAT, {4, 4});
      auto d = b.QDQ("data", "data", o.p0);
      b.InitInt("indices", TP::INT64, {2, 1}, {0, 2});
      auto u = data1("updates", {2, 4});
      b.Node("ScatterND", {d, "indices", u}, {"o"}, {}, "op");
      break;
    }
    case TwoData::kWhere: {
      b.Input("cond", TP::BOOL, {4, 4});
      b.Input("data", TP::FLOAT, {4, 4});
      auto d = b.QDQ("data", "data", o.p0);
      auto u = data1("updates", {4, 4});
      b.Node("Where", {"cond", d, u}, {"o"}, {}, "op");
      break;
    }
  }
  if (o.raw_out) {
    b.Output("o");
  } else {
    b.Output(b.QDQ("o", "y", QParams::S8(0.05f)));
  }
  return b;
}

class TwoDataInputs : public ::testing::TestWithParam<TwoData> {};

TEST_P(TwoDataInputs, SameTypeDifferentScalesIsConformant) {
  EXPECT_CLEAN(RunCheck(TwoDataModel(GetParam(), {}), true));
  EXPECT_CLEAN(RunCheck(
      TwoDataModel(GetParam(), {.p0 = QParams::S16(0.001f), .p1 = QParams::S16(0.002f)}), true));
}

TEST_P(TwoDataInputs, DifferentIntegerTypesIsSameTypeInputs) {
  auto r = RunCheck(TwoDataModel(GetParam(), {.p1 = QParams::S8(0.03f)}));
  EXPECT_FINDING(r, "op/same-type-inputs", "op", "S8");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(TwoDataInputs, SecondDataInputNotQuantized) {
  auto r = RunCheck(TwoDataModel(GetParam(), {.raw1 = true}));
  EXPECT_FINDING(r, "op/input-not-quantized", "op", "'updates'");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(TwoDataInputs, SecondDataInputDirectFp32InitializerIsConstForm) {
  auto r = RunCheck(TwoDataModel(GetParam(), {.init1 = true}));
  EXPECT_FINDING(r, "qdq/const-form", "op", "'updates'");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(TwoDataInputs, OutputNotQuantized) {
  auto r = RunCheck(TwoDataModel(GetParam(), {.raw_out = true}));
  EXPECT_FINDING(r, "op/output-not-quantized", "op", "'o'");
  EXPECT_NON_CONFORMANT(r);
}

INSTANTIATE_TEST_SUITE_P(Section5_8, TwoDataInputs,
                         ::testing::Values(TwoData::kScatterElements, TwoData::kScatterND,
                                           TwoData::kWhere),
                         [](const ::testing::TestParamInfo<TwoData>& i) {
                           switch (i.param) {
                             case TwoData::kScatterElements:
                               return std::string("ScatterElements");
                             case TwoData::kScatterND:
                               return std::string("ScatterND");
                             case TwoData::kWhere:
                               return std::string("Where");
                           }
                           return std::string("?");
                         });

// RoiAlign rois are FP32 (5.8): a quantized rois edge has no purpose in any rule.
TEST(RoiAlign, QuantizedRoisAreNotConformant) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8());
  b.Input("rois", TP::FLOAT, {2, 4});
  auto rois = b.QDQ("rois", "rois", QParams::U8(0.05f, 0));
  b.InitInt("bi", TP::INT64, {2}, {0, 0});
  b.Node("RoiAlign", {x, rois, "bi"}, {"o"},
         {B::AttrI("output_height", 2), B::AttrI("output_width", 2)}, "op");
  b.Output(b.QDQ("o", "y", QParams::U8()));
  auto r = RunCheck(b);
  EXPECT_NON_CONFORMANT(r);
  // Runtime FP32 rois are the conformant sibling.
  ModelBuilder ok;
  ok.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x2 = ok.QDQ("x", "x", QParams::U8());
  ok.Input("rois", TP::FLOAT, {2, 4});
  ok.InitInt("bi", TP::INT64, {2}, {0, 0});
  ok.Node("RoiAlign", {x2, "rois", "bi"}, {"o"},
          {B::AttrI("output_height", 2), B::AttrI("output_width", 2)}, "op");
  ok.Output(ok.QDQ("o", "y", QParams::U8()));
  EXPECT_CLEAN(RunCheck(ok, true));
}

// ------------------------------------------------------------------------------------------
// 5.9 non-quant-only operators: own no Q/DQ; they may sit between quantized regions
// (DQ -> Abs -> Q) or consume a DQ output.

// x -> Q/DQ -> Sigmoid 's1' -> Q/DQ 'm' -> ... (op under test) ... -> Q/DQ 'n' -> Sigmoid 's2'
ModelBuilder NonQuantBetween(const std::string& op) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8());
  b.Node("Sigmoid", {x}, {"s1"}, {}, "s1");
  auto m = b.QDQ("s1", "m", QParams::U8(0.004f, 0));
  if (op == "ArgMax" || op == "ArgMin") {
    b.Node(op, {m}, {"o"}, {B::AttrI("axis", 1)}, "op");
    b.Output("o");
    return b;
  }
  if (op == "And" || op == "Not" || op == "Equal" || op == "Greater" || op == "GreaterOrEqual" ||
      op == "Less" || op == "LessOrEqual") {
    const std::string cmp = (op == "And" || op == "Not") ? "Greater" : op;
    b.InitF32("half", {1}, {0.5f});
    b.Node(cmp, {m, "half"}, {"c"}, {}, op == cmp ? "op" : "cmp");
    b.Node("Not", {"c"}, {"nc"}, {}, op == "Not" ? "op" : "not");
    b.Node("And", {"c", "nc"}, {"o"}, {}, op == "And" ? "op" : "and");
    b.Output("o");
    return b;
  }
  std::vector<onnx::AttributeProto> attrs;
  if (op == "Cast") attrs.push_back(B::AttrI("to", TP::FLOAT));
  b.Node(op, {m}, {"o"}, attrs, "op");
  auto n = b.QDQ("o", "n", QParams::U8(0.004f, 0));
  b.Node("Sigmoid", {n}, {"s2"}, {}, "s2");
  b.Output(b.QDQ("s2", "y", QParams::U8(0.004f, 0)));
  return b;
}

class NonQuantOnly : public ::testing::TestWithParam<std::string> {};

TEST_P(NonQuantOnly, BetweenQuantizedRegionsIsConformant) {
  auto r = RunCheck(NonQuantBetween(GetParam()), true);
  EXPECT_CLEAN(r);
  ExpectNoErrorsOrWarnings(r);
  for (const auto& u : r.units) {
    if (u.op_type == GetParam()) {
      EXPECT_TRUE(u.input_qdq.empty() && u.output_qdq.empty()) << "owns no Q/DQ";
    }
  }
}

// A Q/DQ whose only consumer is a non-quant-only op has no purpose: the op does not own it
// (operators with a float input; And and Not take BOOL).
TEST(NonQuantOnlyOwnsNoQdq, QdqUsedOnlyByTheOperatorIsOrphan) {
  for (const std::string op : {"Abs", "Ceil", "Floor", "Neg", "Round", "ArgMax", "ArgMin", "Cast",
                               "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"}) {
    SCOPED_TRACE(op);
    ModelBuilder b;
    AddQuantizedAnchor(b);
    b.Input("x", TP::FLOAT, {1, 4, 8, 8});
    auto x = b.QDQ("x", "x", QParams::U8());
    std::vector<std::string> ins{x};
    std::vector<onnx::AttributeProto> attrs;
    if (op == "ArgMax" || op == "ArgMin") attrs.push_back(B::AttrI("axis", 1));
    if (op == "Cast") attrs.push_back(B::AttrI("to", TP::FLOAT));
    if (op == "Equal" || op == "Greater" || op == "GreaterOrEqual" || op == "Less" ||
        op == "LessOrEqual") {
      b.InitF32("half", {1}, {0.5f});
      ins.emplace_back("half");
    }
    b.Node(op, ins, {"o"}, attrs, "op");
    b.Output("o");
    auto r = RunCheck(b);
    EXPECT_FINDING(r, "closure/orphan-qdq", "x_dq", "no purpose");
    EXPECT_NON_CONFORMANT(r);
  }
}

INSTANTIATE_TEST_SUITE_P(Section5_9, NonQuantOnly,
                         ::testing::Values("Abs", "Ceil", "Floor", "Neg", "Round", "And", "ArgMax",
                                           "ArgMin", "Cast", "Equal", "Greater", "GreaterOrEqual",
                                           "Less", "LessOrEqual", "Not"));

// ------------------------------------------------------------------------------------------
// 5.10 passive operators (and Pad, 5.13): non-quant mode, or quantized pass-through whose data
// exits share the entry's full quantization parameters.

std::vector<OpCase> PassiveCases() {
  const std::vector<int64_t> s{1, 4, 4, 4};
  std::vector<OpCase> v;
  v.push_back({.op = "DepthToSpace", .shape = s, .attrs = {B::AttrI("blocksize", 2)}});
  v.push_back({.op = "Expand", .shape = s, .extras = {Int64("shape", {4}, {2, 4, 4, 4})}});
  v.push_back({.op = "Flatten", .shape = s, .attrs = {B::AttrI("axis", 1)}});
  v.push_back({.op = "Gather",
               .shape = s,
               .extras = {Int64("indices", {2}, {0, 1})},
               .attrs = {B::AttrI("axis", 1)}});
  v.push_back({.op = "Reshape", .shape = s, .extras = {Int64("shape", {2}, {1, 64})}});
  v.push_back(
      {.op = "Slice",
       .shape = s,
       .extras = {Int64("starts", {1}, {0}), Int64("ends", {1}, {2}), Int64("axes", {1}, {1})}});
  v.push_back({.op = "SpaceToDepth", .shape = s, .attrs = {B::AttrI("blocksize", 2)}});
  v.push_back({.op = "Squeeze", .shape = s, .extras = {Int64("axes", {1}, {0})}});
  v.push_back({.op = "Transpose", .shape = s, .attrs = {B::AttrInts("perm", {0, 2, 3, 1})}});
  v.push_back({.op = "Unsqueeze", .shape = s, .extras = {Int64("axes", {1}, {0})}});
  v.push_back({.op = "MaxPool", .shape = s, .attrs = {B::AttrInts("kernel_shape", {2, 2})}});
  v.push_back({.op = "ReduceMax", .shape = s, .extras = {Int64("axes", {1}, {1})}});
  v.push_back({.op = "Resize",
               .shape = s,
               .extras = {Empty(), Float("scales", {4}, {1, 1, 2, 2})},
               .attrs = {B::AttrS("mode", "nearest")}});
  v.push_back({.op = "Tile", .shape = s, .extras = {Int64("repeats", {4}, {1, 1, 2, 2})}});
  v.push_back({.op = "GatherElements",
               .shape = s,
               .extras = {Int64("indices", {1, 4, 4, 4}, std::vector<int64_t>(64, 0))},
               .attrs = {B::AttrI("axis", 1)}});
  v.push_back({.op = "GatherND", .shape = s, .extras = {Int64("indices", {1, 1}, {0})}});
  v.push_back({.op = "ReduceMin", .shape = s, .extras = {Int64("axes", {1}, {1})}});
  v.push_back({.op = "GlobalMaxPool", .shape = s});
  v.push_back({.op = "Pad",
               .shape = s,
               .extras = {Int64("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1}),
                          Static("constant_value", {}, {0.0f})}});
  return v;
}

class Passive : public ::testing::TestWithParam<OpCase> {};

const QParams kEntry = QParams::U8(0.02f, 128);

TEST_P(Passive, PassThroughSharingEntryParamsIsConformant) {
  for (const auto& p :
       {kEntry, QParams::S8(0.03f), QParams::U16(0.0002f, 30000), QParams::S16(0.0005f)}) {
    SCOPED_TRACE(modelgen::QTypeName(p.type));
    auto r = RunCheck(SingleInput(GetParam(), {.pin = p, .pout = p}), true);
    EXPECT_CLEAN(r);
    ExpectNoErrorsOrWarnings(r);
  }
}

TEST_P(Passive, ExitWithDifferentScaleIsPassiveParams) {
  auto r = RunCheck(SingleInput(GetParam(), {.pin = kEntry, .pout = QParams::U8(0.04f, 128)}));
  EXPECT_FINDING(r, "op/passive-params", "y_q", "scale");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(Passive, ExitWithDifferentZeroPointIsPassiveParams) {
  auto r = RunCheck(SingleInput(GetParam(), {.pin = kEntry, .pout = QParams::U8(0.02f, 100)}));
  EXPECT_FINDING(r, "op/passive-params", "y_q", "");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(Passive, ExitWithDifferentTypeIsPassiveParams) {
  auto r = RunCheck(SingleInput(GetParam(), {.pin = kEntry, .pout = QParams::S8(0.02f)}));
  EXPECT_FINDING(r, "op/passive-params", "y_q", "");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(Passive, ExitIntoAnotherOperatorWithoutQdq) {
  auto r = RunCheck(SingleInput(GetParam(), {.out = Out::kIntoOp, .pin = kEntry}));
  EXPECT_FINDING(r, "op/passive-params", "op", "Tanh 'tanh'");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(Passive, ExitIsGraphOutputWithoutQdq) {
  auto r = RunCheck(SingleInput(GetParam(), {.out = Out::kGraphOutput, .pin = kEntry}));
  EXPECT_FINDING(r, "op/passive-params", "op", "graph output");
  EXPECT_NON_CONFORMANT(r);
}

// Non-quant mode: fed by plain FP32, the operator owns no Q/DQ; its output may enter the next
// operator's input Q/DQ.
TEST_P(Passive, NonQuantModeIsConformant) {
  auto r = RunCheck(
      SingleInput(GetParam(), {.in = In::kGraphInput, .out = Out::kQdqIntoOp, .pout = kEntry}),
      true);
  EXPECT_CLEAN(r);
}

INSTANTIATE_TEST_SUITE_P(Section5_10, Passive, ::testing::ValuesIn(PassiveCases()), CaseName);

// Several passive operators form one pass-through subgraph: no Q/DQ inside, every exit shares the
// entry's parameters.
TEST(PassiveSubgraph, ChainWithBranchesSharesEntryParams) {
  auto make = [](const QParams& exit2) {
    ModelBuilder b;
    b.Input("x", TP::FLOAT, {1, 4, 4, 4});
    auto x = b.QDQ("x", "x", kEntry);
    b.Node("Transpose", {x}, {"t"}, {B::AttrInts("perm", {0, 2, 3, 1})}, "transpose");
    b.InitInt("shape", TP::INT64, {2}, {1, 64});
    b.Node("Reshape", {"t", "shape"}, {"r"}, {}, "reshape");
    b.Node("Flatten", {"t"}, {"f"}, {B::AttrI("axis", 2)}, "flatten");
    b.Output(b.QDQ("r", "y1", kEntry));
    b.Output(b.QDQ("f", "y2", exit2));
    return b;
  };
  EXPECT_CLEAN(RunCheck(make(kEntry), true));
  auto r = RunCheck(make(QParams::U8(0.05f, 128)));
  EXPECT_FINDING(r, "op/passive-params", "y2_q", "scale");
  EXPECT_NON_CONFORMANT(r);
}

TEST(PassiveSubgraph, QdqInsideIsARequantizeOrSharedBoundary) {
  // DQ -> Transpose -> Q/DQ (same params) -> Reshape -> Q/DQ: two pass-through units.
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 4, 4});
  auto x = b.QDQ("x", "x", kEntry);
  b.Node("Transpose", {x}, {"t"}, {B::AttrInts("perm", {0, 2, 3, 1})}, "transpose");
  auto t = b.QDQ("t", "t", kEntry);
  b.InitInt("shape", TP::INT64, {2}, {1, 64});
  b.Node("Reshape", {t, "shape"}, {"r"}, {}, "reshape");
  b.Output(b.QDQ("r", "y", kEntry));
  EXPECT_CLEAN(RunCheck(b, true));
}

// Auxiliary inputs use native types (5.10): a Reshape shape computed by native-integer Concat.
TEST(PassiveSubgraph, AuxInputComputedByNativeIntegerOperator) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 4, 4});
  auto x = b.QDQ("x", "x", kEntry);
  b.InitInt("d0", TP::INT64, {1}, {1});
  b.InitInt("d1", TP::INT64, {1}, {64});
  b.Node("Concat", {"d0", "d1"}, {"shape"}, {B::AttrI("axis", 0)}, "shape_concat");
  b.Node("Reshape", {x, "shape"}, {"r"}, {}, "op");
  b.Output(b.QDQ("r", "y", kEntry));
  auto r = RunCheck(b);
  EXPECT_EQ(r.verdict, Verdict::kConformant) << Dump(r);
  ExpectNoErrorsOrWarnings(r);
}

// MaxPool: the Indices output is native and needs no Q/DQ (5.10).
TEST(MaxPool, IndicesOutputIsNative) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 4, 4});
  auto x = b.QDQ("x", "x", kEntry);
  b.Node("MaxPool", {x}, {"o", "idx"}, {B::AttrInts("kernel_shape", {2, 2})}, "op");
  b.Output(b.QDQ("o", "y", kEntry));
  b.Output("idx");
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  ExpectNoErrorsOrWarnings(r);
  // Only Indices used: Y unused needs nothing.
  ModelBuilder i;
  i.Input("x", TP::FLOAT, {1, 4, 4, 4});
  auto x2 = i.QDQ("x", "x", kEntry);
  i.Node("MaxPool", {x2}, {"o", "idx"}, {B::AttrInts("kernel_shape", {2, 2})}, "op");
  i.Output("idx");
  AddQuantizedAnchor(i);
  EXPECT_CLEAN(RunCheck(i, true));
}

// Identity: a plain Identity is passive; DQ -> Identity -> Q marks a requantize (3.5).
TEST(Identity, RequantizeBoundaryWithSameOrDifferentParams) {
  for (const auto& p : {kEntry, QParams::S8(0.05f)}) {
    auto r = RunCheck(SingleInput({.op = "Identity"}, {.pin = kEntry, .pout = p}), true);
    EXPECT_CLEAN(r);
    EXPECT_FINDING(r, "qdq/requantize", "op", "requantize boundary");
  }
}

TEST(Identity, PassThroughIntoAnotherPassiveOp) {
  auto make = [](const QParams& exit) {
    ModelBuilder b;
    b.Input("x", TP::FLOAT, {1, 4, 4, 4});
    auto x = b.QDQ("x", "x", kEntry);
    b.Node("Identity", {x}, {"i"}, {}, "op");
    b.Node("Transpose", {"i"}, {"t"}, {B::AttrInts("perm", {0, 2, 3, 1})}, "transpose");
    b.Output(b.QDQ("t", "y", exit));
    return b;
  };
  EXPECT_CLEAN(RunCheck(make(kEntry), true));
  auto r = RunCheck(make(QParams::U8(0.05f, 128)));
  EXPECT_FINDING(r, "op/passive-params", "y_q", "scale");
  EXPECT_NON_CONFORMANT(r);
}

TEST(Identity, PassThroughExitWithoutQdq) {
  auto r = RunCheck(SingleInput({.op = "Identity"}, {.out = Out::kIntoOp, .pin = kEntry}));
  EXPECT_FINDING(r, "op/passive-params", "op", "Tanh 'tanh'");
  EXPECT_NON_CONFORMANT(r);
}

// Split (5.11): exits may change type; with check_value, same-type exits must match the input
// (and each other): warn only.
ModelBuilder SplitModel(const QParams& e0, const QParams& e1, bool use1 = true, bool raw0 = false) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 4, 4, 4});
  auto x = b.QDQ("x", "x", kEntry);
  b.InitInt("split", TP::INT64, {2}, {2, 2});
  b.Node("Split", {x, "split"}, {"o0", "o1"}, {B::AttrI("axis", 1)}, "op");
  if (raw0) {
    b.Node("Tanh", {"o0"}, {"t"}, {}, "tanh");
    b.Output(b.QDQ("t", "y0", e0));
  } else {
    b.Output(b.QDQ("o0", "y0", e0));
  }
  if (use1) b.Output(b.QDQ("o1", "y1", e1));
  return b;
}

TEST(Split, ExitsSharingTheInputParamsAreConformant) {
  EXPECT_CLEAN(RunCheck(SplitModel(kEntry, kEntry), true));
}

TEST(Split, ExitsOfOtherTypesAreConformant) {
  auto r = RunCheck(SplitModel(QParams::S8(0.05f), QParams::U16(0.0001f, 100)), true);
  EXPECT_CLEAN(r);
  EXPECT_NO_RULE(r, "op/passive-params");
}

TEST(Split, SameTypeExitWithOtherValuesWarnsOnlyWithCheckValue) {
  auto m = SplitModel(kEntry, QParams::U8(0.05f, 128));
  auto off = RunCheck(m, false);
  EXPECT_CLEAN(off);
  EXPECT_NO_RULE(off, "op/passive-params");
  auto on = RunCheck(m, true);
  EXPECT_FINDING(on, "op/split-exit-params", "y1_q", "");
  EXPECT_EQ(on.verdict, Verdict::kConformant) << Dump(on);
}

TEST(Split, SameTypeExitsDifferingFromEachOtherWarn) {
  auto on = RunCheck(SplitModel(QParams::S8(0.05f), QParams::S8(0.06f)), true);
  EXPECT_FINDING(on, "op/split-exit-params", "y1_q", "");
  EXPECT_EQ(on.verdict, Verdict::kConformant) << Dump(on);
}

TEST(Split, UnusedOutputIsNoExit) {
  EXPECT_CLEAN(RunCheck(SplitModel(kEntry, kEntry, /*use1=*/false), true));
}

TEST(Split, ExitWithoutQdqIsPassiveParams) {
  auto r = RunCheck(SplitModel(kEntry, kEntry, true, /*raw0=*/true));
  EXPECT_FINDING(r, "op/passive-params", "op", "Tanh 'tanh'");
  EXPECT_NON_CONFORMANT(r);
}

// ------------------------------------------------------------------------------------------
// 5.12 Concat: quantized mode (all inputs one integer type, scales may differ, output
// independent) or native integer mode.

ModelBuilder ConcatModel(const QParams& p0, const QParams& p1, bool raw1 = false,
                         bool raw_out = false) {
  ModelBuilder b;
  b.Input("a", TP::FLOAT, {1, 4, 4, 4});
  b.Input("c", TP::FLOAT, {1, 2, 4, 4});
  b.Input("d", TP::FLOAT, {1, 2, 4, 4});
  auto a = b.QDQ("a", "a", p0);
  auto c = raw1 ? std::string("c") : b.QDQ("c", "c", p1);
  auto d = b.QDQ("d", "d", p0);
  b.Node("Concat", {a, c, d}, {"o"}, {B::AttrI("axis", 1)}, "op");
  if (raw_out) {
    b.Output("o");
  } else {
    b.Output(b.QDQ("o", "y", QParams::S16(0.001f)));
  }
  return b;
}

TEST(Concat, SameTypeDifferentScalesIsConformant) {
  EXPECT_CLEAN(RunCheck(ConcatModel(QParams::U8(0.02f, 128), QParams::U8(0.03f, 10)), true));
  EXPECT_CLEAN(RunCheck(ConcatModel(QParams::S8(0.02f), QParams::S8(0.07f)), true));
}

TEST(Concat, DifferentTypesIsSameTypeInputs) {
  auto r = RunCheck(ConcatModel(QParams::U8(0.02f, 128), QParams::S8(0.03f)));
  EXPECT_FINDING(r, "op/same-type-inputs", "op", "S8");
  EXPECT_NON_CONFORMANT(r);
}

TEST(Concat, InputNotQuantized) {
  auto r = RunCheck(ConcatModel(kEntry, kEntry, /*raw1=*/true));
  EXPECT_FINDING(r, "op/input-not-quantized", "op", "'c'");
  EXPECT_NON_CONFORMANT(r);
}

TEST(Concat, OutputNotQuantized) {
  auto r = RunCheck(ConcatModel(kEntry, kEntry, false, /*raw_out=*/true));
  EXPECT_FINDING(r, "op/output-not-quantized", "op", "'o'");
  EXPECT_NON_CONFORMANT(r);
}

TEST(Concat, NativeInt64ModeWithoutQdq) {
  ModelBuilder b;
  AddQuantizedAnchor(b);
  b.Input("n", TP::INT64, {2});
  b.InitInt("k", TP::INT64, {1}, {-1});
  b.Node("Concat", {"n", "k"}, {"o"}, {B::AttrI("axis", 0)}, "op");
  b.Output("o");
  auto r = RunCheck(b, true);
  EXPECT_CLEAN(r);
  EXPECT_TRUE(r.findings.empty()) << Dump(r);
}

// ------------------------------------------------------------------------------------------
// 5.13 Pad: quantized mode shares full params; pads native; constant_value a direct FP32
// initializer. Non-quant mode has no such constraint.

OpCase PadCase() {
  return {.op = "Pad",
          .shape = {1, 4, 4, 4},
          .extras = {Int64("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1}),
                     Static("constant_value", {}, {0.0f})}};
}

TEST(Pad, QuantizedModeIsConformant) {
  EXPECT_CLEAN(RunCheck(SingleInput(PadCase(), {.pin = kEntry, .pout = kEntry}), true));
  // constant_value omitted.
  OpCase c = PadCase();
  c.extras.pop_back();
  EXPECT_CLEAN(RunCheck(SingleInput(c, {.pin = kEntry, .pout = kEntry}), true));
}

TEST(Pad, ConstantValueNotADirectFp32InitializerInQuantizedMode) {
  for (Form f : {Form::kIntDq, Form::kQdq, Form::kGraphInput, Form::kConstant}) {
    SCOPED_TRACE(FormName(f));
    auto r = RunCheck(SingleInput(PadCase(), {.pin = kEntry, .pout = kEntry, .bad = 1, .form = f}));
    EXPECT_FINDING(r, "op/static-param", "op", "constant_value");
    EXPECT_NON_CONFORMANT(r);
  }
}

TEST(Pad, OutputParamsDifferIsPassiveParams) {
  auto r = RunCheck(SingleInput(PadCase(), {.pin = kEntry, .pout = QParams::U8(0.03f, 128)}));
  EXPECT_FINDING(r, "op/passive-params", "y_q", "scale");
  EXPECT_NON_CONFORMANT(r);
}

TEST(Pad, NonQuantModeAcceptsRuntimeConstantValue) {
  auto r = RunCheck(SingleInput(PadCase(), {.in = In::kGraphInput,
                                            .out = Out::kQdqIntoOp,
                                            .pout = kEntry,
                                            .bad = 1,
                                            .form = Form::kGraphInput}),
                    true);
  EXPECT_CLEAN(r);
  EXPECT_NO_RULE(r, "op/static-param");
}

// ------------------------------------------------------------------------------------------
// 5.14 TopK: X quantized; Values share X's params and need Q/DQ only when used; Indices native.

struct TopKOpts {
  bool quantized_x = true;
  bool use_values = true;
  bool values_qdq = true;
  QParams values = QParams::U8(0.02f, 128);
};

ModelBuilder TopKModel(const TopKOpts& o) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 8});
  auto x = o.quantized_x ? b.QDQ("x", "x", kEntry) : std::string("x");
  b.InitInt("k", TP::INT64, {1}, {3});
  b.Node("TopK", {x, "k"}, {"values", "indices"}, {B::AttrI("axis", -1)}, "op");
  b.Output("indices");
  if (o.use_values) {
    if (o.values_qdq) {
      b.Output(b.QDQ("values", "v", o.values));
    } else {
      b.Output("values");
    }
  }
  if (!o.quantized_x) AddQuantizedAnchor(b);
  return b;
}

TEST(TopK, ValuesSharingXParamsAreConformant) {
  auto r = RunCheck(TopKModel({}), true);
  EXPECT_CLEAN(r);
  ExpectNoErrorsOrWarnings(r);
}

TEST(TopK, UnusedValuesNeedNoQdq) {
  EXPECT_CLEAN(RunCheck(TopKModel({.use_values = false}), true));
}

TEST(TopK, ValuesWithOtherParamsArePassiveParams) {
  auto r = RunCheck(TopKModel({.values = QParams::U8(0.04f, 128)}));
  EXPECT_FINDING(r, "op/passive-params", "v_q", "scale");
  EXPECT_NON_CONFORMANT(r);
}

TEST(TopK, UsedValuesWithoutQdq) {
  auto r = RunCheck(TopKModel({.values_qdq = false}));
  EXPECT_FINDING(r, "op/passive-params", "op", "'values'");
  EXPECT_NON_CONFORMANT(r);
}

TEST(TopK, NonQuantModeIsConformant) {
  EXPECT_CLEAN(RunCheck(TopKModel({.quantized_x = false, .values_qdq = false}), true));
}

// ------------------------------------------------------------------------------------------
// 5.15 Relu and 5.16 Clip (RULES.md readings 2 and 3).

// Conv 'conv' on x [1,4,8,8] with Q/DQ input, S8 weights, INT32 bias; returns its output.
std::string ConvOn(ModelBuilder& b) {
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8(0.02f, 128));
  auto ws = Scales(8);
  auto w = b.WeightQDQ("w", {8, 4, 3, 3}, QParams::PerChannel(QType::kS8, ws, 0));
  auto bias = b.BiasInt32DQ("b", 8, modelgen::BiasScales(0.02f, ws));
  b.Node("Conv", {x, w, bias}, {"c"}, {B::AttrInts("pads", {1, 1, 1, 1})}, "conv");
  return "c";
}

enum class ReluIn { kQdq, kConvTail, kGraphInput, kPassiveQuantized, kPassiveNonQuant };

// op (Relu or Clip with FP32 initializer bounds 0 / 6) named 'op'; output Q/DQ 'y' with `out`.
ModelBuilder ReluModel(const std::string& op, ReluIn in, const QParams& out,
                       const QParams& pin = QParams::U8(0.02f, 0), bool raw_out = false) {
  ModelBuilder b;
  std::string x;
  switch (in) {
    case ReluIn::kQdq:
      b.Input("x", TP::FLOAT, {1, 8, 8, 8});
      x = b.QDQ("x", "x", pin);
      break;
    case ReluIn::kConvTail:
      x = ConvOn(b);
      break;
    case ReluIn::kGraphInput:
      b.Input("x", TP::FLOAT, {1, 8, 8, 8});
      x = "x";
      AddQuantizedAnchor(b);
      break;
    case ReluIn::kPassiveQuantized:
      b.Input("x", TP::FLOAT, {1, 8, 8, 8});
      b.Node("Transpose", {b.QDQ("x", "x", pin)}, {"t"}, {B::AttrInts("perm", {0, 1, 3, 2})},
             "transpose");
      x = "t";
      break;
    case ReluIn::kPassiveNonQuant:
      b.Input("x", TP::FLOAT, {1, 8, 8, 8});
      b.Node("Transpose", {"x"}, {"t"}, {B::AttrInts("perm", {0, 1, 3, 2})}, "transpose");
      x = "t";
      AddQuantizedAnchor(b);
      break;
  }
  std::vector<std::string> ins{x};
  if (op == "Clip") {
    b.InitF32("lo", {}, {0.0f});
    b.InitF32("hi", {}, {6.0f});
    ins = {x, "lo", "hi"};
  }
  b.Node(op, ins, {"o"}, {}, "op");
  if (raw_out) {
    b.Output("o");
  } else {
    b.Output(b.QDQ("o", "y", out));
  }
  return b;
}

class ReluClip : public ::testing::TestWithParam<std::string> {};

TEST_P(ReluClip, StandaloneAsymmetricIsConformant) {
  auto r = RunCheck(ReluModel(GetParam(), ReluIn::kQdq, QParams::U8(0.02f, 0)), true);
  EXPECT_CLEAN(r);
  ExpectNoErrorsOrWarnings(r);
}

TEST_P(ReluClip, StandaloneSymmetricIsConformant) {
  EXPECT_CLEAN(
      RunCheck(ReluModel(GetParam(), ReluIn::kQdq, QParams::S8(0.02f), QParams::S8(0.02f)), true));
}

// 5.15 reading 2: standalone after a quantized compute op with Q/DQ in between is allowed.
TEST_P(ReluClip, StandaloneAfterQuantizedComputeWithQdqIsConformant) {
  ModelBuilder b;
  auto c = ConvOn(b);
  auto cq = b.QDQ(c, "c", QParams::U8(0.05f, 128));
  std::vector<std::string> ins{cq};
  if (GetParam() == "Clip") {
    b.InitF32("lo", {}, {0.0f});
    b.InitF32("hi", {}, {6.0f});
    ins = {cq, "lo", "hi"};
  }
  b.Node(GetParam(), ins, {"o"}, {}, "op");
  b.Output(b.QDQ("o", "y", QParams::U8(0.05f, 0)));
  EXPECT_CLEAN(RunCheck(b, true));
}

TEST_P(ReluClip, AsymmetricFusionTailAfterConvIsConformant) {
  auto r = RunCheck(ReluModel(GetParam(), ReluIn::kConvTail, QParams::U8(0.03f, 0)), true);
  EXPECT_CLEAN(r);
  ExpectNoErrorsOrWarnings(r);
}

TEST_P(ReluClip, FusionTailOwnsOnlyItsBranch) {
  // Conv output feeds the tail and, through Q/DQ, a Sigmoid.
  ModelBuilder b = ReluModel(GetParam(), ReluIn::kConvTail, QParams::U8(0.03f, 0));
  auto c2 = b.QDQ("c", "c2", QParams::U8(0.05f, 128));
  b.Node("Sigmoid", {c2}, {"s"}, {}, "sig");
  b.Output(b.QDQ("s", "s", QParams::U8(0.004f, 0)));
  EXPECT_CLEAN(RunCheck(b, true));
}

TEST_P(ReluClip, SymmetricOutputCannotBeAFusionTail) {
  auto r = RunCheck(ReluModel(GetParam(), ReluIn::kConvTail, QParams::S8(0.03f)));
  EXPECT_FINDING(r, "op/relu-form", "op", "symmetric");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(ReluClip, AfterGraphInputWithoutQdq) {
  auto r = RunCheck(ReluModel(GetParam(), ReluIn::kGraphInput, QParams::U8(0.03f, 0)));
  EXPECT_FINDING(r, "op/relu-form", "op", "graph input");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(ReluClip, AfterNonQuantPassiveWithoutQdq) {
  auto r = RunCheck(ReluModel(GetParam(), ReluIn::kPassiveNonQuant, QParams::U8(0.03f, 0)));
  EXPECT_FINDING(r, "op/relu-form", "op", "passive");
  EXPECT_NON_CONFORMANT(r);
}

// RULES.md op/relu-form: "fusion tail on a passive ... producer"; 5.15: after a passive subgraph
// the Relu needs Q/DQ on both sides.
TEST_P(ReluClip, AfterQuantizedPassiveWithoutQdq) {
  auto r = RunCheck(ReluModel(GetParam(), ReluIn::kPassiveQuantized, QParams::U8(0.02f, 0)));
  EXPECT_FINDING(r, "op/relu-form", "op", "passive");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(ReluClip, OutputWithoutQdq) {
  auto r = RunCheck(ReluModel(GetParam(), ReluIn::kQdq, QParams::U8(), QParams::U8(0.02f, 0),
                              /*raw_out=*/true));
  EXPECT_FINDING(r, "op/relu-form", "op", "graph output");
  EXPECT_NON_CONFORMANT(r);
}

TEST_P(ReluClip, SymmetricOutputZeroPointNotZero) {
  auto s = QParams::S8(0.02f);
  s.zero_point = {4};
  auto r = RunCheck(ReluModel(GetParam(), ReluIn::kQdq, s, QParams::S8(0.02f)));
  EXPECT_FINDING(r, "op/relu-zero-point", "y_q", "zero_point 4");
  EXPECT_NON_CONFORMANT(r);
}

INSTANTIATE_TEST_SUITE_P(Section5_15_16, ReluClip, ::testing::Values("Relu", "Clip"));

// The fusion tail follows any non-passive quantized compute operator (5.15 X), not only Conv.
TEST(Relu, FusionTailAfterOtherQuantizedComputeOperators) {
  for (const std::string op : {"Add", "Sigmoid", "MatMul"}) {
    SCOPED_TRACE(op);
    ModelBuilder b;
    b.Input("x", TP::FLOAT, {4, 4});
    auto x = b.QDQ("x", "x", QParams::S8(0.02f));
    if (op == "Sigmoid") {
      b.Node(op, {x}, {"p"}, {}, "producer");
    } else {
      b.Input("x2", TP::FLOAT, {4, 4});
      b.Node(op, {x, b.QDQ("x2", "x2", QParams::S8(0.03f))}, {"p"}, {}, "producer");
    }
    b.Node("Relu", {"p"}, {"o"}, {}, "op");
    b.Output(b.QDQ("o", "y", QParams::U8(0.02f, 0)));
    auto r = RunCheck(b, true);
    EXPECT_CLEAN(r);
  }
}

TEST(Relu, AfterNonQuantOperatorWithoutQdq) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 8, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8(0.02f, 0));
  b.Node("Sigmoid", {x}, {"s"}, {}, "sig");
  b.Node("Abs", {b.QDQ("s", "s", QParams::U8(0.004f, 0))}, {"a"}, {}, "abs");
  b.Node("Relu", {"a"}, {"o"}, {}, "op");
  b.Output(b.QDQ("o", "y", QParams::U8(0.02f, 0)));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/relu-form", "op", "Abs 'abs'");
  EXPECT_NON_CONFORMANT(r);
}

TEST(Relu, TailOfATailWithoutQdq) {
  ModelBuilder b;
  auto c = ConvOn(b);
  b.Node("Relu", {c}, {"r1"}, {}, "relu1");
  b.Node("Relu", {"r1"}, {"o"}, {}, "op");
  b.Output(b.QDQ("o", "y", QParams::U8(0.02f, 0)));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/relu-form", "relu1", "Relu 'op'");
  // The second finding is located at 'op' itself (At() also matches 'op' as a secondary node).
  bool at_op = false;
  for (const auto* f : Find(r, "op/relu-form")) {
    at_op |=
        f->nodes.front() == "op" && f->message.find("itself a fusion tail") != std::string::npos;
  }
  EXPECT_TRUE(at_op) << Dump(r);
  EXPECT_NON_CONFORMANT(r);
}

TEST(Relu, ProducerOutputEscapingTheTailWithoutQdq) {
  ModelBuilder b = ReluModel("Relu", ReluIn::kConvTail, QParams::U8(0.03f, 0));
  b.Output("c");
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/output-not-quantized", "conv", "graph output");
  EXPECT_NON_CONFORMANT(r);
}

TEST(Relu, AsymmetricOutputZeroPointMustBeZero) {
  for (ReluIn in : {ReluIn::kQdq, ReluIn::kConvTail}) {
    auto r = RunCheck(ReluModel("Relu", in, QParams::U8(0.02f, 128)));
    EXPECT_FINDING(r, "op/relu-zero-point", "y_q", "zero_point 128");
    EXPECT_NON_CONFORMANT(r);
  }
}

TEST(Clip, AsymmetricOutputZeroPointIsFree) {
  for (ReluIn in : {ReluIn::kQdq, ReluIn::kConvTail}) {
    auto r = RunCheck(ReluModel("Clip", in, QParams::U8(0.02f, 128)), true);
    EXPECT_CLEAN(r);
    EXPECT_NO_RULE(r, "op/relu-zero-point");
  }
}

ModelBuilder ClipBounds(Form min_form, bool with_max = true, bool omit_min = false) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 8, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8(0.02f, 0));
  std::vector<std::string> ins{x};
  ins.push_back(omit_min ? std::string() : F32In(b, "lo", {}, {-1.0f}, min_form));
  if (with_max) {
    b.InitF32("hi", {}, {3.5f});
    ins.emplace_back("hi");
  }
  b.Node("Clip", ins, {"o"}, {}, "op");
  b.Output(b.QDQ("o", "y", QParams::U8(0.02f, 50)));
  return b;
}

TEST(Clip, StaticBoundsOfAnyRangeAreConformant) {
  EXPECT_CLEAN(RunCheck(ClipBounds(Form::kInit), true));
  EXPECT_CLEAN(RunCheck(ClipBounds(Form::kInit, /*with_max=*/false), true));
  EXPECT_CLEAN(RunCheck(ClipBounds(Form::kInit, true, /*omit_min=*/true), true));
  // No bounds at all.
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 8, 8, 8});
  auto x = b.QDQ("x", "x", QParams::U8(0.02f, 0));
  b.Node("Clip", {x}, {"o"}, {}, "op");
  b.Output(b.QDQ("o", "y", QParams::U8(0.02f, 50)));
  EXPECT_CLEAN(RunCheck(b, true));
}

TEST(Clip, FusionTailWithDynamicBound) {
  ModelBuilder b;
  auto c = ConvOn(b);
  b.Input("hi", TP::FLOAT, {});
  b.InitF32("lo", {}, {0.0f});
  b.Node("Clip", {c, "lo", "hi"}, {"o"}, {}, "op");
  b.Output(b.QDQ("o", "y", QParams::U8(0.03f, 0)));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "op/clip-dynamic", "op", "max 'hi'");
  EXPECT_NON_CONFORMANT(r);
}

TEST(Clip, DynamicBoundIsClipDynamic) {
  for (Form f : {Form::kGraphInput, Form::kIntDq, Form::kQdq, Form::kConstant}) {
    SCOPED_TRACE(FormName(f));
    auto r = RunCheck(ClipBounds(f));
    EXPECT_FINDING(r, "op/clip-dynamic", "op", "min 'lo");
    EXPECT_NON_CONFORMANT(r);
  }
}

// ------------------------------------------------------------------------------------------
// 5.17 AffineGrid, GRU, LSTM do not conform.

TEST(Unsupported, AffineGrid) {
  ModelBuilder b;
  b.Input("theta", TP::FLOAT, {1, 2, 3});
  b.InitInt("size", TP::INT64, {4}, {1, 4, 8, 8});
  b.Node("AffineGrid", {"theta", "size"}, {"grid"}, {}, "affine");
  b.Input("x", TP::FLOAT, {1, 4, 8, 8});
  auto x = b.QDQ("x", "x", QParams::S8());
  b.Node("GridSample", {x, "grid"}, {"o"}, {}, "gs");
  b.Output(b.QDQ("o", "y", QParams::U8()));
  auto r = RunCheck(b);
  EXPECT_FINDING(r, "closure/unsupported-op", "affine", "AffineGrid");
  EXPECT_NON_CONFORMANT(r);
}

ModelBuilder Recurrent(const std::string& op, bool anchor) {
  const int64_t gates = op == "GRU" ? 3 : 4;
  ModelBuilder b;
  if (anchor) AddQuantizedAnchor(b);
  b.Input("x", TP::FLOAT, {2, 1, 4});
  auto x = b.QDQ("x", "x", QParams::U8());
  b.InitF32Rand("W", {1, gates * 4, 4});
  b.InitF32Rand("R", {1, gates * 4, 4});
  b.Node(op, {x, "W", "R"}, {"o"}, {B::AttrI("hidden_size", 4)}, "rnn");
  b.Output(b.QDQ("o", "y", QParams::U8()));
  return b;
}

TEST(Unsupported, GruAndLstm) {
  for (const std::string op : {"GRU", "LSTM"}) {
    SCOPED_TRACE(op);
    auto r = RunCheck(Recurrent(op, /*anchor=*/true));
    EXPECT_FINDING(r, "closure/unsupported-op", "rnn", op);
    EXPECT_NON_CONFORMANT(r);
  }
}

// A quantized GRU/LSTM is the only operator of the model: its Q/DQ edges touch an operator's data
// path (2.1), so the model is in scope and does not conform (5.17).
TEST(Unsupported, GruAndLstmAsTheOnlyQuantizedOperator) {
  for (const std::string op : {"GRU", "LSTM"}) {
    SCOPED_TRACE(op);
    auto r = RunCheck(Recurrent(op, /*anchor=*/false));
    EXPECT_FINDING(r, "closure/unsupported-op", "rnn", op);
    EXPECT_NON_CONFORMANT(r);
  }
}

// ------------------------------------------------------------------------------------------
// Coverage: every operator of the table has a test above.

TEST(Coverage, EveryOperatorOfTheTableIsExercised) {
  std::set<std::string> tested;
  for (const auto& c : QuantOnlyCases()) tested.insert(c.op);
  for (const auto& c : PassiveCases()) tested.insert(c.op);
  for (const auto& c : ArithCases()) tested.insert(c.op);
  for (const char* op : {"Conv",       "ConvTranspose",
                         "Gemm",       "MatMul",
                         "GridSample", "ScatterElements",
                         "ScatterND",  "Where",
                         "Abs",        "Ceil",
                         "Floor",      "Neg",
                         "Round",      "And",
                         "ArgMax",     "ArgMin",
                         "Cast",       "Equal",
                         "Greater",    "GreaterOrEqual",
                         "Less",       "LessOrEqual",
                         "Not",        "Identity",
                         "Split",      "Concat",
                         "TopK",       "Relu",
                         "Clip",       "AffineGrid",
                         "GRU",        "LSTM"}) {
    tested.insert(op);
  }
  for (const auto& op : Operators()) {
    EXPECT_TRUE(tested.contains(op.op_type)) << op.op_type << " has no operator test";
  }
}

}  // namespace
}  // namespace axqc::test
