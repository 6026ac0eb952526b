// Replays the inputs of the `pulsar2_config` fuzz target (tests/fuzz/fuzz_pulsar2_config.cc): every
// file kept in tests/fuzz/pulsar2_config_regressions, each one test asserting the invariants of
// pulsar2_config_fuzz_input.h (bounded findings, all pulsar2/*, the spec verdict unchanged, no
// exception).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "param_name.h"
#include "pulsar2_config_fuzz_input.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

fs::path RegressionDir() {
  return fs::path(AXQC_SOURCE_DIR) / "tests" / "fuzz" / "pulsar2_config_regressions";
}

std::vector<std::string> RegressionFiles() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(RegressionDir(), ec)) {
    if (e.is_regular_file() && !e.path().filename().string().starts_with(".")) {
      names.push_back(e.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Pulsar2ConfigFuzzRegression, DirectoryIsNotEmpty) { EXPECT_FALSE(RegressionFiles().empty()); }

class Pulsar2ConfigFuzzRegression : public testing::TestWithParam<std::string> {};

TEST_P(Pulsar2ConfigFuzzRegression, InvariantsHold) {
  std::ifstream in(RegressionDir() / GetParam(), std::ios::binary);
  ASSERT_TRUE(in) << GetParam();
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_EQ(fuzz::Pulsar2ConfigProblems(bytes), "") << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Inputs, Pulsar2ConfigFuzzRegression, testing::ValuesIn(RegressionFiles()),
                         FileParamName);

}  // namespace
}  // namespace axqc::test
