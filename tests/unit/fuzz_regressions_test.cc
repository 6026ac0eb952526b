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

}  // namespace
}  // namespace axqc::test
