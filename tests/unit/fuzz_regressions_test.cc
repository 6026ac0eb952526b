// Regression tests for the fuzzer's findings (tests/fuzz). Every file in tests/fuzz/regressions/
// is an input that once crashed, hung, leaked or ran out of memory in "model bytes -> load +
// check"; each becomes one test that checks it in both check_value modes, where an InputError
// is an acceptable outcome and anything else (another exception, a crash) fails. The named tests
// below rebuild the underlying causes as readable models.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "check_helpers.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

fs::path RegressionDir() { return fs::path(AXQC_SOURCE_DIR) / "tests" / "fuzz" / "regressions"; }

std::vector<std::string> RegressionFiles() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(RegressionDir(), ec)) {
    if (e.is_regular_file()) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class FuzzRegression : public testing::TestWithParam<std::string> {};

TEST_P(FuzzRegression, ChecksWithoutCrashing) {
  const auto bytes = ReadAll(RegressionDir() / GetParam());
  for (bool check_value : {false, true}) {
    try {
      auto r = CheckBytes(bytes, GetParam(), {.check_value = check_value});
      EXPECT_FALSE(r.model.sha256.empty());
    } catch (const InputError&) {
      // An input error is a valid outcome for a mangled file.
    } catch (const std::exception& e) {
      ADD_FAILURE() << GetParam() << " (check_value " << check_value << "): " << e.what();
    }
  }
}

std::string TestName(const testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(Files, FuzzRegression, testing::ValuesIn(RegressionFiles()), TestName);

TEST(FuzzRegressionCorpus, IsNotEmpty) {
  EXPECT_FALSE(RegressionFiles().empty()) << RegressionDir();
}

// ------------------------------------------------------------------ the causes, as models

bool HasMessage(const Report& r, const std::string& rule, const std::string& needle) {
  for (const auto* f : Find(r, rule)) {
    if (f->message.find(needle) != std::string::npos) return true;
  }
  return false;
}

// ONNX's ConvTranspose shape inference reads W.dim(1) without checking W's rank: a declared
// rank-0 or rank-1 W (or a non-tensor W) crashed the process (fuzzer, first finding).
TEST(FuzzRegressionCause, ConvTransposeWithLowRankWeight) {
  for (int rank : {0, 1}) {
    ModelBuilder b;
    b.Input("x", TP::FLOAT, {1, 1, 3, 3});
    b.Input("w", TP::FLOAT, std::vector<int64_t>(static_cast<std::size_t>(rank), 2));
    b.Node("ConvTranspose", {"x", "w"}, {"y"}, {}, "convt");
    b.Output("y", TP::FLOAT, {1, 2, 5, 5});
    for (bool cv : {false, true}) {
      auto r = RunCheck(b.AutoValueInfo(false), cv);
      EXPECT_TRUE(HasMessage(r, "onnx/invalid-model",
                             "ConvTranspose input 1 must be a tensor of rank >= 2 (has rank " +
                                 std::to_string(rank) + ")"))
          << Dump(r);
    }
  }
}

// The same unchecked read in MaxUnpool (input I) and in RNN-1, GRU-3 and LSTM-1 inference (X):
// found by reading onnx/defs after the first finding.
TEST(FuzzRegressionCause, MaxUnpoolWithLowRankIndices) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 1, 2, 2});
  b.Input("i", TP::INT64, {4});
  b.Node("MaxUnpool", {"x", "i"}, {"y"}, {ModelBuilder::AttrInts("kernel_shape", {2, 2})},
         "unpool");
  b.Output("y", TP::FLOAT, {1, 1, 4, 4});
  auto r = RunCheck(b.AutoValueInfo(false));
  EXPECT_TRUE(
      HasMessage(r, "onnx/invalid-model", "MaxUnpool input 1 must be a tensor of rank >= 2"))
      << Dump(r);
}

TEST(FuzzRegressionCause, OldRecurrentOpsWithLowRankInput) {
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    ModelBuilder b(op == "GRU" ? 3 : 1, 3);
    b.Input("x", TP::FLOAT, {5});
    b.Input("w", TP::FLOAT, {1, 4, 5});
    b.Input("r", TP::FLOAT, {1, 4, 4});
    b.Node(op, {"x", "w", "r"}, {"y", "y_h"}, {ModelBuilder::AttrI("hidden_size", 4)}, "rnn");
    b.Output("y", TP::FLOAT, {5, 1, 1, 4});
    b.Output("y_h", TP::FLOAT, {1, 1, 4});
    auto r = RunCheck(b.AutoValueInfo(false));
    EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", op + " input 0 must be a tensor of rank >= 2"))
        << op << "\n"
        << Dump(r);
  }
}

// Scan inference dereferenced num_scan_inputs unchecked (fuzzer: Scan without the attribute,
// reached through the best-effort inference that used to run on models the ONNX checker had
// rejected) and sizes vectors by it.
TEST(FuzzRegressionCause, ScanWithOutOfRangeNumScanInputs) {
  for (int64_t n : {int64_t{0}, int64_t{3}, int64_t{1} << 40}) {
    ModelBuilder b;
    b.Input("s", TP::FLOAT, {2});
    b.Input("x", TP::FLOAT, {5, 2});
    onnx::GraphProto body;
    body.set_name("body");
    auto in = [&](const std::string& name, std::vector<int64_t> dims) {
      auto* vi = body.add_input();
      vi->set_name(name);
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
      for (auto d : dims)
        vi->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
    };
    in("s_in", {2});
    in("x_in", {2});
    auto* add = body.add_node();
    add->set_op_type("Add");
    add->add_input("s_in");
    add->add_input("x_in");
    add->add_output("s_out");
    *body.add_output() = body.input(0);
    body.mutable_output(0)->set_name("s_out");
    b.Node("Scan", {"s", "x"}, {"s_final"},
           {ModelBuilder::AttrG("body", body), ModelBuilder::AttrI("num_scan_inputs", n)}, "scan");
    b.Output("s_final", TP::FLOAT, {2});
    auto r = RunCheck(b.AutoValueInfo(false));
    EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "num_scan_inputs must be between 1 and"))
        << n << "\n"
        << Dump(r);
  }
}

// Best-effort shape inference no longer runs on models the ONNX checker rejected: inference
// functions assume the checker's invariants (here: Scan's required attribute).
TEST(FuzzRegressionCause, NoInferenceOnModelsTheCheckerRejects) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {5, 2});
  onnx::GraphProto body;
  body.set_name("body");
  b.Node("Scan", {"x"}, {"y"}, {ModelBuilder::AttrG("body", body)}, "scan");
  b.Output("y", TP::FLOAT, {5, 2});
  auto r = RunCheck(b.AutoValueInfo(false));
  EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "ONNX checker")) << Dump(r);
  EXPECT_FALSE(HasMessage(r, "onnx/invalid-model", "shape inference")) << Dump(r);
}

// Conv/pool inference: a kernel rank (from W) above X's rank indexed X's dims out of bounds
// (fuzzer: Conv-10 with a rank-5 W); auto_pad with a stride and a huge declared dim looped
// dim / stride times (audit).
TEST(FuzzRegressionCause, ConvKernelRankAboveInputRank) {
  ModelBuilder b;
  b.Input("x", TP::FLOAT, {1, 2, 4, 4});
  b.Input("w", TP::FLOAT, {3, 2, 3, 3, 3});
  b.Node("Conv", {"x", "w"}, {"y"}, {}, "conv");
  b.Output("y", TP::FLOAT, {1, 3, 2, 2});
  auto r = RunCheck(b.AutoValueInfo(false));
  EXPECT_TRUE(HasMessage(r, "onnx/invalid-model",
                         "Conv input 1 (the kernel) must be a tensor of rank <= 4"))
      << Dump(r);
}

TEST(FuzzRegressionCause, AutoPadWithHugeSpatialDimDoesNotHang) {
  for (const std::string op : {"MaxPool", "AveragePool", "Conv"}) {
    ModelBuilder b;
    b.Input("x", TP::FLOAT, {1, 1, int64_t{1} << 62});
    std::vector<std::string> ins{"x"};
    if (op == "Conv") {
      b.InitF32Fill("w", {1, 1, 3}, 1.0f);
      ins.push_back("w");
    }
    b.Node(op, ins, {"y"},
           {ModelBuilder::AttrS("auto_pad", "SAME_UPPER"), ModelBuilder::AttrInts("strides", {2}),
            ModelBuilder::AttrInts("kernel_shape", {3})},
           "op");
    b.Output("y", TP::FLOAT, {1, 1, int64_t{1} << 61});
    auto r = RunCheck(b.AutoValueInfo(false));
    EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "is too large for auto_pad shape inference"))
        << op << "\n"
        << Dump(r);
  }
}

// Conv/pool inference divides by the strides: a zero stride raised SIGFPE (fuzzer: an old-opset
// pool, after all the fixes above).
TEST(FuzzRegressionCause, ZeroOrNegativeStride) {
  for (int64_t opset : {int64_t{7}, int64_t{21}}) {
    for (int64_t stride : {int64_t{0}, int64_t{-1}}) {
      ModelBuilder b(opset, opset == 7 ? 3 : 10);
      b.Input("x", TP::FLOAT, {1, 1, 8});
      b.Node("MaxPool", {"x"}, {"y"},
             {ModelBuilder::AttrInts("kernel_shape", {2}),
              ModelBuilder::AttrInts("strides", {stride})},
             "pool");
      b.Output("y", TP::FLOAT, {1, 1, 4});
      auto r = RunCheck(b.AutoValueInfo(false));
      EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "MaxPool strides must be positive"))
          << opset << " " << stride << "\n"
          << Dump(r);
    }
  }
}

// ONNX's ParseData resizes its buffer to raw_data.size() / sizeof(T) and then copies all
// raw_data bytes: a raw_data length that is not a multiple of the element size overflows the
// heap buffer (fuzzer: Reshape shape, Resize scales, scalar inputs). Every tensor's storage is
// now checked first (Constant values and subgraph initializers too), and no shape inference
// runs when one is inconsistent.
TEST(FuzzRegressionCause, RawDataNotAMultipleOfTheElementSize) {
  auto shape = ModelBuilder::MakeInt("shape", TP::INT64, {2}, {1, 4});
  shape.mutable_raw_data()->resize(15);
  {  // as a Constant node's value
    ModelBuilder b;
    b.Input("x", TP::FLOAT, {4});
    b.Node("Constant", {}, {"shape"}, {ModelBuilder::AttrT("value", shape)}, "const");
    b.Node("Reshape", {"x", "shape"}, {"y"}, {}, "reshape");
    b.Output("y", TP::FLOAT, {1, 4});
    auto r = RunCheck(b.AutoValueInfo(false));
    EXPECT_TRUE(
        HasMessage(r, "onnx/invalid-model",
                   "tensor 'shape' (attribute of Constant 'const'): raw_data holds 15 bytes"))
        << Dump(r);
    EXPECT_FALSE(HasMessage(r, "onnx/invalid-model", "shape inference")) << Dump(r);
  }
  {  // as an initializer of an If branch
    ModelBuilder branch;
    branch.InitTensor(shape);
    branch.Input("unused", TP::FLOAT, {1});  // dropped below: branches have no inputs
    branch.Node("Reshape", {"x", "shape"}, {"y_then"}, {}, "reshape");
    branch.Output("y_then", TP::FLOAT, {1, 4});
    auto g = branch.AutoValueInfo(false).Build().graph();
    g.clear_input();
    auto other = g;
    other.mutable_node(0)->set_output(0, "y_else");
    other.mutable_output(0)->set_name("y_else");
    ModelBuilder b;
    b.Input("x", TP::FLOAT, {4});
    b.Input("c", TP::BOOL, {});
    b.Node("If", {"c"}, {"y"},
           {ModelBuilder::AttrG("then_branch", g), ModelBuilder::AttrG("else_branch", other)},
           "if");
    b.Output("y", TP::FLOAT, {1, 4});
    auto r = RunCheck(b.AutoValueInfo(false));
    EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "subgraph initializer 'shape'")) << Dump(r);
  }
}

// 4-bit element counts near INT64_MAX overflowed the packed-size arithmetic (UBSan, fuzzer).
TEST(FuzzRegressionCause, FourBitElementCountAtInt64Max) {
  ModelBuilder b = ConvModel();
  onnx::TensorProto t;
  t.set_name("u4");
  t.set_data_type(TP::UINT4);
  t.add_dims(std::numeric_limits<int64_t>::max());
  t.add_int32_data(1);
  b.InitTensor(t);
  auto r = RunCheck(b);
  EXPECT_TRUE(HasMessage(r, "onnx/invalid-model", "needs 4611686018427387904 packed bytes"))
      << Dump(r);
  t.clear_int32_data();
  t.set_raw_data("x");
  ModelBuilder c = ConvModel();
  c.InitTensor(t);
  auto r2 = RunCheck(c, true);
  EXPECT_TRUE(HasMessage(r2, "onnx/invalid-model", "need 4611686018427387904")) << Dump(r2);
}

}  // namespace
}  // namespace axqc::test
