// The HTTP/JSON API's query parsing and the time bounds of the validation layer: the replay of the
// fuzz target http_query's seeds and regression inputs (tests/fuzz/http_query_seeds/,
// tests/fuzz/http_query_regressions/), its route table against the server's, and the limits one
// by one (durations that overflow, windows beyond the range of Timestamp, step 0, the bucket
// limit with window instead of since).
#include <google/protobuf/util/time_util.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "http/api.h"
#include "http_query_fuzz_input.h"
#include "request_validation.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;
using server::http::ParseDurationMs;
using server::http::ParseTimeMs;
using server::http::Request;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<fs::path> FilesIn(const char* dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(AXQC_SOURCE_DIR) / "tests" / "fuzz" / dir)) {
    if (e.is_regular_file()) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string RunTarget(const std::string& target) {
  return fuzz::RunHttpQueryInput(reinterpret_cast<const std::uint8_t*>(target.data()),
                                 target.size());
}

TEST(HttpQueryFuzz, RegressionInputsAndSeedsPass) {
  std::size_t n = 0;
  for (const char* dir : {"http_query_regressions", "http_query_seeds"}) {
    for (const auto& p : FilesIn(dir)) {
      EXPECT_EQ(RunTarget(ReadAll(p)), "") << p;
      ++n;
    }
  }
  EXPECT_GE(n, 20u);
}

TEST(HttpQueryFuzz, RouteTableIsTheServers) {
  const auto router = server::http::BuildRouter(server::http::Api{});
  auto routes = router->Routes();
  const auto pages = router->PageRoutes();
  routes.insert(routes.end(), pages.begin(), pages.end());
  auto want = fuzz::HttpRoutePatterns();
  std::sort(routes.begin(), routes.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(routes, want);
}

Request Query(const std::string& target) {
  Request r;
  r.method = "GET";
  r.target = target;
  EXPECT_TRUE(server::http::SplitTarget(target, &r.path, &r.query)) << target;
  return r;
}

// The status of GET /v1/stats?... after parsing and validation (now = 2025-12-01T00:00:00Z).
grpc::Status Stats(const std::string& query) {
  v1::GetStatsRequest req;
  grpc::Status st = server::http::ParseStatsQuery(Query("/v1/stats?" + query), req);
  if (st.ok()) st = server::ValidateStatsRequest(req, 1764547200000);
  return st;
}

TEST(HttpQuery, DurationsSaturateInsteadOfOverflowing) {
  EXPECT_EQ(ParseDurationMs("90"), 90000);
  EXPECT_EQ(ParseDurationMs("250ms"), 250);
  EXPECT_EQ(ParseDurationMs("2w"), std::int64_t{14} * 86400 * 1000);
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(ParseDurationMs("1099511627776w"), max);  // 2^40 weeks: n * ms overflows int64
  EXPECT_EQ(ParseDurationMs("99999999999999999999999s"), max);
  EXPECT_EQ(ParseDurationMs("1.5h"), 5400000);  // the one grammar (axqc/duration.h)
  EXPECT_EQ(ParseDurationMs("1y"), std::nullopt);
  EXPECT_EQ(ParseDurationMs("-1s"), std::nullopt);
  EXPECT_EQ(ParseTimeMs("253402300800"), std::nullopt);  // after 9999-12-31T23:59:59Z
  EXPECT_EQ(ParseTimeMs("1970-01-01T00:00:01Z"), 1000);
}

TEST(HttpQuery, WindowBeyondTheRangeOfTimestampIsRefusedNamingTheRange) {
  for (const char* q : {"window=106000w", "window=1099511627776w", "window=36526d",
                        "window=99999999999999999999999s"}) {
    const grpc::Status st = Stats(q);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << q;
    EXPECT_EQ(st.error_message(),
              "window is out of range: it must be a duration from 0s to 36525d (100 years)")
        << q;
  }
  EXPECT_TRUE(Stats("window=36525d").ok());
  // Within the window limit, but until - window before year 1 in the old arithmetic: until must
  // be from 1970 on.
  const grpc::Status early = Stats("until=0001-01-02T00:00:00Z&window=2d");
  EXPECT_EQ(early.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(early.error_message(),
            "until is out of range: it must be a time from 1970-01-01T00:00:00Z to "
            "9999-12-31T23:59:59.999Z");
}

TEST(HttpQuery, StepZeroAndTooManyBucketsAreRefused) {
  const grpc::Status zero = Stats("step=0s");
  EXPECT_EQ(zero.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(zero.error_message().find("step must be at least 1s"), std::string::npos)
      << zero.error_message();
  EXPECT_EQ(Stats("step=0").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Stats("step=500ms").error_message(), "step must be at least 1s");
  // 86400 buckets: refused with window as with since.
  const std::string buckets =
      "step gives more than 10000 buckets in the window; use a larger step or a shorter window";
  EXPECT_EQ(Stats("window=1d&step=1s").error_message(), buckets);
  EXPECT_EQ(Stats("since=1764460800&until=1764547200&step=1s").error_message(), buckets);
  EXPECT_TRUE(Stats("window=1d&step=10s").ok());
  EXPECT_EQ(Stats("step=36526d").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(TimeBounds, ConversionsClampInsteadOfAborting) {
  using google::protobuf::util::TimeUtil;
  const std::int64_t min = std::numeric_limits<std::int64_t>::min();
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(server::TimestampOfMs(min).seconds(), TimeUtil::kTimestampMinSeconds);
  EXPECT_EQ(server::TimestampOfMs(max).seconds(), TimeUtil::kTimestampMaxSeconds);
  EXPECT_EQ(server::DurationOfMs(max).seconds(), TimeUtil::kDurationMaxSeconds);
  EXPECT_EQ(server::DurationOfMs(min).seconds(), TimeUtil::kDurationMinSeconds);
  for (std::int64_t ms : {std::int64_t{-1}, std::int64_t{0}, std::int64_t{1764547200123},
                          std::int64_t{-62135596800000}, std::int64_t{253402300799999}}) {
    EXPECT_EQ(server::TimestampOfMs(ms), TimeUtil::MillisecondsToTimestamp(ms)) << ms;
    EXPECT_EQ(server::MsOf(server::TimestampOfMs(ms)), ms);
    EXPECT_EQ(server::DurationOfMs(ms), TimeUtil::MillisecondsToDuration(ms)) << ms;
  }
  EXPECT_EQ(server::Rfc3339OfMs(1764547200123), "2025-12-01T00:00:00.123Z");
  EXPECT_EQ(server::TimestampOfMs(server::kMaxTimeMs).seconds(), server::kTimestampMaxSeconds);
  EXPECT_EQ(server::kTimestampMinSeconds, TimeUtil::kTimestampMinSeconds);
  EXPECT_EQ(server::kDurationMaxSeconds, TimeUtil::kDurationMaxSeconds);
}

TEST(RequestLimits, LabelValuesAndNamesMustBeUtf8) {
  EXPECT_TRUE(server::ValidUtf8("detector \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
  for (const char* bad : {"\xff", "\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
                          "\xf4\x90\x80\x80", "a\xe2\x82"}) {
    EXPECT_FALSE(server::ValidUtf8(bad)) << bad;
  }
  const grpc::Status st = Stats("label.project=%ff%fe");
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message(), "label_filter: value of label 'project' is not valid UTF-8");
  EXPECT_EQ(server::ValidateName("m\xff.onnx", "name", 1024).error_message(),
            "name is not valid UTF-8");
}

TEST(RequestLimits, ClipCutsAtACharacterBoundary) {
  EXPECT_EQ(server::Clip("short"), "short");
  const std::string big(1000, 'a');
  EXPECT_EQ(server::Clip(big, 10), "aaaaaaaaaa...(1000 bytes)");
  // "é" is two bytes; a cut inside it moves before it.
  EXPECT_EQ(server::Clip("aaaaaaaaa\xc3\xa9zz", 10), "aaaaaaaaa...(13 bytes)");
}

}  // namespace
}  // namespace axqc::test
