// The gtest name of a test parameterized by a file name: every character that is not a letter or a
// digit written '_' ("hostile/a-b.json" -> "hostile_a_b_json").
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <string>

namespace axqc::test {

inline std::string FileParamName(const testing::TestParamInfo<std::string>& param) {
  std::string name = param.param;
  for (char& c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '_';
  }
  return name;
}

}  // namespace axqc::test
