#include "http/api.h"

#include <google/protobuf/util/time_util.h>

#include <cctype>
#include <charconv>

namespace axqc::server::http {

std::shared_ptr<Router> BuildRouter(Api api) {
  auto router = std::make_shared<Router>();
  AddCheckRoutes(*router, api);
  AddLookupRoutes(*router, api);
  AddStatsRoutes(*router, api);
  AddOpenApiRoutes(*router);
  AddPageRoutes(*router);
  AddHookRoutes(*router, api);
  return router;
}

CallOrigin OriginOf(const Request& request) {
  CallOrigin o;
  o.request_id = request.Header("x-request-id");
  o.peer = request.peer;
  o.transport = "http";
  return o;
}

std::map<std::string, std::string> LabelParams(const Request& request) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : request.query) {
    if (k.rfind("label.", 0) == 0) out[k.substr(6)] = v;
  }
  return out;
}

std::optional<std::int64_t> ParseDurationMs(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) return std::nullopt;
  std::int64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + digits, n);
  if (ec != std::errc() || n > (std::int64_t{1} << 40)) return std::nullopt;
  (void)p;
  const std::string unit = text.substr(digits);
  std::int64_t ms = 0;
  if (unit.empty() || unit == "s") {
    ms = 1000;
  } else if (unit == "ms") {
    ms = 1;
  } else if (unit == "m") {
    ms = std::int64_t{60} * 1000;
  } else if (unit == "h") {
    ms = std::int64_t{3600} * 1000;
  } else if (unit == "d") {
    ms = std::int64_t{86400} * 1000;
  } else if (unit == "w") {
    ms = std::int64_t{7} * 86400 * 1000;
  } else {
    return std::nullopt;
  }
  return n * ms;
}

std::optional<std::int64_t> ParseTimeMs(const std::string& text) {
  if (text.empty()) return std::nullopt;
  bool all_digits = true;
  for (char c : text) all_digits = all_digits && std::isdigit(static_cast<unsigned char>(c));
  if (all_digits) {
    std::int64_t s = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), s);
    (void)p;
    if (ec != std::errc() || s > google::protobuf::util::TimeUtil::kTimestampMaxSeconds) {
      return std::nullopt;
    }
    return s * 1000;
  }
  google::protobuf::Timestamp t;
  if (!google::protobuf::util::TimeUtil::FromString(text, &t)) return std::nullopt;
  return google::protobuf::util::TimeUtil::TimestampToMilliseconds(t);
}

std::optional<bool> ParseBool(const std::string& text) {
  if (text == "true" || text == "1" || text.empty()) return true;
  if (text == "false" || text == "0") return false;
  return std::nullopt;
}

}  // namespace axqc::server::http
