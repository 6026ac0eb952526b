#include "http/query.h"

#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "axqc/duration.h"
#include "request_validation.h"

namespace axqc::server::http {

namespace {

grpc::Status TimeParam(const Request& request, const char* name, google::protobuf::Timestamp* out,
                       bool* set) {
  *set = false;
  auto v = request.Query(name);
  if (!v) return grpc::Status::OK;
  auto ms = ParseTimeMs(*v);
  if (!ms) {
    return Invalid(std::string(name) +
                   " must be an RFC 3339 time (2026-12-01T00:00:00Z) or Unix seconds, from " +
                   kTimeRange);
  }
  *out = TimestampOfMs(*ms);
  *set = true;
  return grpc::Status::OK;
}

grpc::Status DurationParam(const Request& request, const char* name,
                           google::protobuf::Duration* out, bool* set) {
  *set = false;
  auto v = request.Query(name);
  if (!v) return grpc::Status::OK;
  auto ms = ParseDurationMs(*v);
  if (!ms) {
    return Invalid(std::string(name) +
                   " must be a duration such as 30s, 15m, 1h, 7d, 2w (at most " + kSpanRange + ")");
  }
  // Clamped: anything over the range of Duration is over kMaxSpanMs too and refused by the
  // validation with the allowed range.
  *out = DurationOfMs(*ms);
  *set = true;
  return grpc::Status::OK;
}

grpc::Status UintParam(const Request& request, const char* name, std::uint32_t* out) {
  auto v = request.Query(name);
  if (!v) return grpc::Status::OK;
  auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), *out);
  if (ec != std::errc() || p != v->data() + v->size()) {
    return Invalid(std::string(name) + " must be a number");
  }
  return grpc::Status::OK;
}

}  // namespace

std::map<std::string, std::string> LabelParams(const Request& request) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : request.query) {
    if (k.rfind("label.", 0) == 0) out[k.substr(6)] = v;
  }
  return out;
}

std::optional<std::int64_t> ParseDurationMs(const std::string& text) {
  const auto seconds = ParseDurationSeconds(text, "s");
  if (!seconds) return std::nullopt;
  constexpr std::int64_t kSaturated = std::numeric_limits<std::int64_t>::max();
  const double ms = *seconds * 1000;
  // 2^63 is exactly representable; anything at or above it saturates.
  if (!(ms < 9223372036854775808.0)) return kSaturated;
  return std::llround(ms);
}

std::optional<std::int64_t> ParseTimeMs(const std::string& text) {
  if (text.empty()) return std::nullopt;
  bool all_digits = true;
  for (char c : text) all_digits = all_digits && std::isdigit(static_cast<unsigned char>(c));
  if (all_digits) {
    std::int64_t s = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), s);
    (void)p;
    if (ec != std::errc() || s > kTimestampMaxSeconds) return std::nullopt;
    return s * 1000;
  }
  // FromString parses into a Timestamp and refuses what is outside its range; it never aborts.
  google::protobuf::Timestamp t;
  if (!google::protobuf::util::TimeUtil::FromString(text, &t) || !TimestampValid(t)) {
    return std::nullopt;
  }
  return MsOf(t);
}

std::optional<bool> ParseBool(const std::string& text) {
  if (text == "true" || text == "1" || text.empty()) return true;
  if (text == "false" || text == "0") return false;
  return std::nullopt;
}

grpc::Status ParseCheckOptionsQuery(const Request& request, v1::CheckOptions& options) {
  if (auto v = request.Query("check_value")) {
    auto b = ParseBool(*v);
    if (!b) return Invalid("check_value must be true or false");
    options.set_check_value(*b);
  }
  if (auto v = request.Query("max_locations")) {
    unsigned n = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
    if (ec != std::errc() || p != v->data() + v->size()) {
      return Invalid("max_locations must be a number");
    }
    options.set_max_locations(n);
  }
  // pulsar2_config=<the configuration's text, URL-encoded> (curl --url-query pulsar2_config@FILE);
  // validated with the other options.
  if (auto v = request.Query("pulsar2_config")) options.set_pulsar2_config(*v);
  // target=ax650&target=ax620e or target=ax650,ax620e; validated with the other options.
  for (const auto& [k, v] : request.query) {
    if (k != "target") continue;
    std::size_t start = 0;
    while (start <= v.size()) {
      const std::size_t comma = std::min(v.find(',', start), v.size());
      if (options.targets_size() > static_cast<int>(kMaxTargets)) {
        return Invalid("target: at most " + std::to_string(kMaxTargets) + " values");
      }
      options.add_targets(v.substr(start, comma - start));
      start = comma + 1;
    }
  }
  return grpc::Status::OK;
}

grpc::Status KnownParams(const Request& request, std::initializer_list<const char*> names) {
  for (const auto& [k, v] : request.query) {
    if (k.rfind("label.", 0) == 0) continue;
    bool known = false;
    for (const char* n : names) known = known || k == n;
    if (!known) return Invalid("unknown query parameter '" + Clip(k) + "'");
  }
  return grpc::Status::OK;
}

grpc::Status ParseStatsQuery(const Request& request, v1::GetStatsRequest& req) {
  if (auto st = KnownParams(request, {"since", "until", "window", "group_by", "step", "top_rules"});
      !st.ok()) {
    return st;
  }
  bool set = false;
  google::protobuf::Timestamp t;
  if (auto st = TimeParam(request, "since", &t, &set); !st.ok()) return st;
  if (set) *req.mutable_since() = t;
  if (auto st = TimeParam(request, "until", &t, &set); !st.ok()) return st;
  if (set) *req.mutable_until() = t;
  google::protobuf::Duration d;
  if (auto st = DurationParam(request, "window", &d, &set); !st.ok()) return st;
  if (set) *req.mutable_window() = d;
  if (auto st = DurationParam(request, "step", &d, &set); !st.ok()) return st;
  if (set) {
    // A step of 0 in the query is a mistake, not "no series" (that is: no step parameter).
    if (d.seconds() == 0 && d.nanos() == 0) {
      return Invalid(std::string("step must be at least 1s (at most ") + kSpanRange +
                     "); leave it out for no time series");
    }
    *req.mutable_step() = d;
  }
  if (auto v = request.Query("group_by")) req.set_group_by(*v);
  std::uint32_t top = 0;
  if (auto st = UintParam(request, "top_rules", &top); !st.ok()) return st;
  req.set_top_rules(top);
  const auto labels = LabelParams(request);
  req.mutable_label_filter()->insert(labels.begin(), labels.end());
  return grpc::Status::OK;
}

grpc::Status ParseModelsQuery(const Request& request, v1::ListModelsRequest& req) {
  if (auto st = KnownParams(request, {"since", "limit"}); !st.ok()) return st;
  bool set = false;
  google::protobuf::Timestamp t;
  if (auto st = TimeParam(request, "since", &t, &set); !st.ok()) return st;
  if (set) *req.mutable_since() = t;
  std::uint32_t limit = 0;
  if (auto st = UintParam(request, "limit", &limit); !st.ok()) return st;
  req.set_limit(limit);
  const auto labels = LabelParams(request);
  req.mutable_label_filter()->insert(labels.begin(), labels.end());
  return grpc::Status::OK;
}

namespace {

// The value of `name` when it is one of `values`; INVALID_ARGUMENT naming them otherwise.
grpc::Status OneOf(const Request& request, const char* name,
                   std::initializer_list<const char*> values, std::string* out) {
  auto v = request.Query(name);
  if (!v) return grpc::Status::OK;
  std::string allowed;
  for (const char* a : values) {
    if (*v == a) {
      *out = *v;
      return grpc::Status::OK;
    }
    allowed += allowed.empty() ? a : std::string(", ") + a;
  }
  return Invalid(std::string(name) + " must be one of " + allowed + ", not '" + Clip(*v, 64) + "'");
}

}  // namespace

bool IsSha256Hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

grpc::Status ParseChecksQuery(const Request& request, ChecksQuery& q) {
  if (auto st = KnownParams(request, {"verdict", "source", "sha256", "q", "limit", "offset"});
      !st.ok()) {
    return st;
  }
  if (auto st = OneOf(
          request, "verdict",
          {"conformant", "non_conformant", "not_applicable", "invalid_input", "checker_failed"},
          &q.verdict);
      !st.ok()) {
    return st;
  }
  if (auto st = OneOf(request, "source", {"path", "url", "inline", "upload", "webhook"}, &q.source);
      !st.ok()) {
    return st;
  }
  if (auto v = request.Query("sha256")) {
    if (!IsSha256Hex(*v)) return Invalid("sha256 must be 64 lowercase hexadecimal digits");
    q.sha256 = *v;
  }
  if (auto v = request.Query("q")) {
    if (v->size() > kMaxChecksSearch) {
      return Invalid("q is longer than " + std::to_string(kMaxChecksSearch) + " bytes");
    }
    if (!ValidUtf8(*v)) return Invalid("q is not valid UTF-8");
    for (unsigned char c : *v) {
      if (c < 0x20 || c == 0x7f) return Invalid("q contains a control character");
    }
    q.search = *v;
  }
  q.label_filter = LabelParams(request);
  if (auto st = ValidateLabels(q.label_filter, "label_filter"); !st.ok()) return st;
  std::uint32_t limit = 50;
  if (request.Query("limit")) {
    if (auto st = UintParam(request, "limit", &limit); !st.ok()) return st;
    if (limit == 0 || limit > kMaxChecksLimit) {
      return Invalid("limit must be 1.." + std::to_string(kMaxChecksLimit));
    }
  }
  q.limit = limit;
  if (auto v = request.Query("offset")) {
    std::uint64_t offset = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), offset);
    if (ec != std::errc() || p != v->data() + v->size() || offset > kMaxChecksOffset) {
      return Invalid("offset must be a number 0.." + std::to_string(kMaxChecksOffset));
    }
    q.offset = offset;
  }
  return grpc::Status::OK;
}

grpc::Status ParseDeliveriesQuery(const Request& request, DeliveriesQuery& q) {
  for (const auto& [k, v] : request.query) {
    if (k != "source" && k != "outcome" && k != "state" && k != "limit" && k != "cursor") {
      return Invalid("unknown query parameter '" + Clip(k) + "'");
    }
  }
  auto one_of = [&](const char* name, std::initializer_list<const char*> values,
                    std::string* out) -> grpc::Status {
    auto v = request.Query(name);
    if (!v) return grpc::Status::OK;
    std::string allowed;
    for (const char* a : values) {
      if (*v == a) {
        *out = *v;
        return grpc::Status::OK;
      }
      allowed += allowed.empty() ? a : std::string(", ") + a;
    }
    return Invalid(std::string(name) + " must be one of " + allowed + ", not '" + Clip(*v, 64) +
                   "'");
  };
  if (auto st = one_of("source", {"huggingface", "mlflow"}, &q.source); !st.ok()) return st;
  if (auto st =
          one_of("state", {"pending", "checking", "writing_back", "done", "failed"}, &q.state);
      !st.ok()) {
    return st;
  }
  if (auto st = one_of("outcome",
                       {"conformant", "non_conformant", "not_applicable", "invalid_input",
                        "download_failed", "policy_refused", "check_failed", "writeback_failed"},
                       &q.outcome);
      !st.ok()) {
    return st;
  }
  std::uint32_t limit = 50;
  if (request.Query("limit")) {
    if (auto st = UintParam(request, "limit", &limit); !st.ok()) return st;
    if (limit == 0 || limit > kMaxDeliveriesLimit) {
      return Invalid("limit must be 1.." + std::to_string(kMaxDeliveriesLimit));
    }
  }
  q.limit = limit;
  if (auto v = request.Query("cursor")) {
    std::int64_t cursor = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), cursor);
    if (ec != std::errc() || p != v->data() + v->size() || cursor <= 0) {
      return Invalid("cursor must be the next_cursor of a previous answer");
    }
    q.before_seq = cursor;
  }
  return grpc::Status::OK;
}

}  // namespace axqc::server::http
