// The one duration grammar of the command line (axqc stats --since), the server's seconds options
// and the HTTP API's window and step (core/include/axqc/duration.h).
#include "axqc/duration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace axqc {
namespace {

TEST(Duration, NumbersWithEveryUnit) {
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("250ms"), 0.25);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("90s"), 90);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("15m"), 900);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("1.5h"), 5400);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("7d"), 604800);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("2w"), 1209600);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds(" 0.5 "), 0.5);  // spaces around, the bare unit (s)
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds(".5s"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("3."), 3);
}

TEST(Duration, TheBareUnitIsTheCallers) {
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("500", "ms"), 0.5);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("2", "h"), 7200);
  // An empty bare unit: a unit is required.
  EXPECT_EQ(ParseDurationSeconds("30", ""), std::nullopt);
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("30m", ""), 1800);
}

TEST(Duration, WhatIsNotADuration) {
  for (const char* text : {"", " ", "s", "ms", ".", "-1s", "+1s", "1e3s", "1y", "1 s", "1S",
                           "1.2.3s", "inf", "nan", "0x10s", "1sec", "s1", "1,5h"}) {
    EXPECT_EQ(ParseDurationSeconds(text), std::nullopt) << text;
  }
}

TEST(Duration, HugeValuesStayNumbers) {
  const auto huge = ParseDurationSeconds(std::string(400, '9') + "w");
  ASSERT_TRUE(huge.has_value());
  EXPECT_TRUE(std::isinf(*huge));
  EXPECT_DOUBLE_EQ(*ParseDurationSeconds("1099511627776w"), 1099511627776.0 * 604800);
}

}  // namespace
}  // namespace axqc
