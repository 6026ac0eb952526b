// Replays the inputs of the `dot` fuzz target (tests/fuzz/fuzz_dot.cc): its seeds
// (tests/fuzz/dot_seeds) and every finding kept in tests/fuzz/dot_regressions, each one test
// asserting the escaping invariants of dot_fuzz_input.h on the DOT and HTML output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "dot_fuzz_input.h"
#include "param_name.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Inputs() {
  std::vector<std::string> out;
  for (const char* dir : {"dot_seeds", "dot_regressions"}) {
    std::error_code ec;
    for (const auto& e :
         fs::directory_iterator(fs::path(AXQC_SOURCE_DIR) / "tests" / "fuzz" / dir, ec)) {
      if (e.is_regular_file() && !e.path().filename().string().starts_with(".")) {
        out.push_back(std::string(dir) + "/" + e.path().filename().string());
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

class DotFuzzInput : public testing::TestWithParam<std::string> {};

TEST_P(DotFuzzInput, KeepsTheEscapingInvariants) {
  std::ifstream in(fs::path(AXQC_SOURCE_DIR) / "tests" / "fuzz" / GetParam(), std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const Report r = fuzz::DotFuzzReport(bytes);
  EXPECT_EQ(fuzz::DotProblems(r), "");
  HtmlOptions o;
  o.rules_url.clear();
  EXPECT_EQ(fuzz::HtmlProblems(r, o), "");
}

INSTANTIATE_TEST_SUITE_P(Inputs, DotFuzzInput, testing::ValuesIn(Inputs()), FileParamName);

}  // namespace
}  // namespace axqc::test
