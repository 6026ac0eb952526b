// The validation layer of every request, shared by the gRPC handlers (their Validate()), the
// HTTP/JSON API (which builds the same request messages) and the upload assembler: labels, check
// options, identifiers, the length of every string a client sends, and the time bounds of the
// statistics queries. Each refusal is INVALID_ARGUMENT naming the field and the allowed range
// (HTTP 400). The limits are documented in docs/api.md ("Limits of a request").
#pragma once

#include <google/protobuf/duration.pb.h>
#include <google/protobuf/timestamp.pb.h>
#include <grpcpp/support/status.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/pulsar2.h"
#include "axqc/targets.h"
#include "axqc/utf8.h"
#include "axqc/v1/axqc.pb.h"
#include "axqc/wire/report_proto.h"

namespace axqc::server {

// ---- limits of the strings a client sends (bytes)
inline constexpr std::size_t kMaxLabels = 16;
inline constexpr std::size_t kMaxLabelKey = 63;
inline constexpr std::size_t kMaxLabelValue = 256;
// Display names: CheckRequest.name, UploadMetadata.file_name, GetReportRequest.name (HTTP ?name=).
inline constexpr std::size_t kMaxNameBytes = 1024;
// Labels the server sets on request-history rows itself; a request may filter and group by them
// but not send them. axqc.target: the chip targets of the check, comma-separated.
inline constexpr const char* kServerLabelPrefix = "axqc.";
inline constexpr const char* kTargetLabel = "axqc.target";
// Chip targets of CheckOptions.targets: how many values, and the length of one.
inline constexpr std::size_t kMaxTargets = 16;
inline constexpr std::size_t kMaxTargetBytes = 32;
// CheckRequest.path: PATH_MAX of Linux.
inline constexpr std::size_t kMaxPathBytes = 4096;
// CheckRequest.url.
inline constexpr std::size_t kMaxUrlBytes = 8192;
// Request ids (x-request-id, RecordGateRequest.request_id).
inline constexpr std::size_t kMaxRequestIdBytes = 64;
// How much of a client's string an error message or a log line repeats.
inline constexpr std::size_t kMaxEchoBytes = 64;

// ---- time bounds of GetStats and ListModels (milliseconds since the Unix epoch)
// since / until: 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z.
inline constexpr std::int64_t kMinTimeMs = 0;
inline constexpr std::int64_t kMaxTimeMs = 253402300799999;
// window and step: at most 36525 days (100 years); step at least 1 s.
inline constexpr std::int64_t kMaxSpanMs = std::int64_t{36525} * 86400 * 1000;
inline constexpr std::int64_t kMinStepMs = 1000;
// Most buckets one GetStats answers with (GetStatsRequest.step).
inline constexpr std::int64_t kMaxStatsBuckets = 10000;
inline constexpr const char* kTimeRange = "1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z";
inline constexpr const char* kSpanRange = "36525d (100 years)";

// Non-empty, at most `max` characters of [A-Za-z0-9_.-] (and ':' when `allow_colon`).
inline bool ValidToken(std::string_view s, std::size_t max, bool allow_colon) {
  if (s.empty() || s.size() > max) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-' || (allow_colon && c == ':');
    if (!ok) return false;
  }
  return true;
}

inline grpc::Status Invalid(const std::string& msg) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, msg);
}

// RESOURCE_EXHAUSTED because a model or a message is bigger than a configured size limit, as
// opposed to a busy server (the in-flight byte budgets, the queue): HTTP 413 instead of 429, and a
// webhook delivery that is not retried. Where such a refusal is made (SourceError::Kind::kTooLarge
// in model_source.cc and url_fetch.cc, UploadError::kTooLarge, rpc/check.cc's inline limit,
// rpc/upload.cc's message limit) its status is made by OverSizeLimitStatus, which marks it in the
// status's error_details; the HTTP API and the hook deliveries read the mark (OverSizeLimit), never
// the message. The mark stays inside the server: the gRPC front door sends statuses without
// details (ForClient).
inline constexpr std::string_view kOverSizeLimitMark = "axqc.over-size-limit";

inline grpc::Status OverSizeLimitStatus(const std::string& message) {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, message,
                      std::string(kOverSizeLimitMark));
}

inline bool OverSizeLimit(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
         s.error_details() == kOverSizeLimitMark;
}

// A status as a gRPC client gets it: code and message, without the server's in-process marks.
inline grpc::Status ForClient(const grpc::Status& s) {
  if (s.error_details().empty()) return s;
  return grpc::Status(s.error_code(), s.error_message());
}

// At most `max` bytes of a client's string for a message or a log line: longer ones are cut (at a
// UTF-8 character boundary) and end in "...(N bytes)".
inline std::string Clip(std::string_view s, std::size_t max = kMaxEchoBytes) {
  if (s.size() <= max) return std::string(s);
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // not mid-character
  return std::string(s.substr(0, n)) + "...(" + std::to_string(s.size()) + " bytes)";
}

// Well-formed UTF-8 (axqc/utf8.h). Strings of the axqc.v1 messages must be: a label or name that
// is not would be stored, then served in responses that gRPC clients cannot parse. gRPC and JSON
// requests cannot carry such bytes; a percent-decoded query string can.
using ::axqc::ValidUtf8;

// `field` holds at most `max` bytes.
inline grpc::Status ValidateLength(std::string_view value, const char* field, std::size_t max) {
  if (value.size() <= max) return grpc::Status::OK;
  return Invalid(std::string(field) + " is " + std::to_string(value.size()) +
                 " bytes long; the limit is " + std::to_string(max) + " bytes");
}

// A display name: at most `max` bytes of UTF-8.
inline grpc::Status ValidateName(std::string_view value, const char* field, std::size_t max) {
  if (auto s = ValidateLength(value, field, max); !s.ok()) return s;
  if (!ValidUtf8(value)) return Invalid(std::string(field) + " is not valid UTF-8");
  return grpc::Status::OK;
}

template <typename LabelMap>
grpc::Status ValidateLabels(const LabelMap& labels, const char* what) {
  const bool filter = std::string_view(what) == "label_filter";
  if (labels.size() > kMaxLabels) {
    return Invalid(std::string(what) + ": at most " + std::to_string(kMaxLabels) + " labels");
  }
  for (const auto& [k, v] : labels) {
    if (!ValidToken(k, kMaxLabelKey, false)) {
      return Invalid(std::string(what) + ": label key '" + Clip(k) +
                     "' must match [A-Za-z0-9_.-]{1,63}");
    }
    if (!filter && std::string_view(k).starts_with(kServerLabelPrefix)) {
      return Invalid(std::string(what) + ": label keys starting with '" + kServerLabelPrefix +
                     "' are set by the server (e.g. " + kTargetLabel + ")");
    }
    if (v.size() > kMaxLabelValue) {
      return Invalid(std::string(what) + ": value of label '" + k + "' is longer than " +
                     std::to_string(kMaxLabelValue) + " bytes");
    }
    if (!ValidUtf8(v)) {
      return Invalid(std::string(what) + ": value of label '" + k + "' is not valid UTF-8");
    }
  }
  return grpc::Status::OK;
}

inline grpc::Status ValidateOptions(const v1::CheckOptions& o) {
  if (o.max_locations() > wire::kMaxLocations) {
    return Invalid("options.max_locations is at most " + std::to_string(wire::kMaxLocations));
  }
  if (!v1::ReportFormat_IsValid(o.format())) return Invalid("options.format is unknown");
  if (o.targets_size() > static_cast<int>(kMaxTargets)) {
    return Invalid("options.targets: at most " + std::to_string(kMaxTargets) + " values");
  }
  for (const auto& t : o.targets()) {
    const bool word = !t.empty() && t.size() <= kMaxTargetBytes &&
                      t.find_first_not_of(
                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789_-") == std::string::npos;
    if (!word) {
      return Invalid("options.targets: a chip name is 1-" + std::to_string(kMaxTargetBytes) +
                     " characters of [A-Za-z0-9_-]");
    }
  }
  if (o.has_pulsar2_config()) {
    if (o.pulsar2_config().size() > kMaxPulsar2ConfigBytes) {
      return Invalid("options.pulsar2_config: at most " + std::to_string(kMaxPulsar2ConfigBytes) +
                     " bytes");
    }
    if (!ValidUtf8(o.pulsar2_config())) return Invalid("options.pulsar2_config is not valid UTF-8");
  }
  if (!o.targets().empty()) {
    try {
      const std::vector<std::string> requested(o.targets().begin(), o.targets().end());
      (void)ResolveTargets(requested);
    } catch (const std::invalid_argument& e) {
      return Invalid(std::string("options.targets: ") + e.what());
    }
  }
  return grpc::Status::OK;
}

// ---- times and durations without google::protobuf::util::TimeUtil's conversions, which abort the
// process (a CHECK) outside the range of Timestamp and Duration.

inline constexpr std::int64_t kTimestampMinSeconds = -62135596800;  // 0001-01-01T00:00:00Z
inline constexpr std::int64_t kTimestampMaxSeconds = 253402300799;  // 9999-12-31T23:59:59Z
inline constexpr std::int64_t kDurationMaxSeconds = 315576000000;   // 10000 years

// A well-formed Timestamp (the range of google.protobuf.Timestamp).
inline bool TimestampValid(const google::protobuf::Timestamp& t) {
  return t.seconds() >= kTimestampMinSeconds && t.seconds() <= kTimestampMaxSeconds &&
         t.nanos() >= 0 && t.nanos() < 1000000000;
}

// A well-formed Duration (the range of google.protobuf.Duration, matching signs).
inline bool DurationValid(const google::protobuf::Duration& d) {
  return d.seconds() >= -kDurationMaxSeconds && d.seconds() <= kDurationMaxSeconds &&
         d.nanos() > -1000000000 && d.nanos() < 1000000000 && !(d.seconds() > 0 && d.nanos() < 0) &&
         !(d.seconds() < 0 && d.nanos() > 0);
}

// Milliseconds of a valid Timestamp / Duration (rounded towards negative infinity / zero).
inline std::int64_t MsOf(const google::protobuf::Timestamp& t) {
  return t.seconds() * 1000 + t.nanos() / 1000000;
}
inline std::int64_t MsOf(const google::protobuf::Duration& d) {
  return d.seconds() * 1000 + d.nanos() / 1000000;
}

// The Timestamp of `ms`, clamped to the range of Timestamp.
inline google::protobuf::Timestamp TimestampOfMs(std::int64_t ms) {
  std::int64_t s = ms / 1000;
  std::int64_t r = ms % 1000;
  if (r < 0) {
    r += 1000;
    --s;
  }
  google::protobuf::Timestamp t;
  if (s < kTimestampMinSeconds) {
    t.set_seconds(kTimestampMinSeconds);
  } else if (s > kTimestampMaxSeconds) {
    t.set_seconds(kTimestampMaxSeconds);
    t.set_nanos(999000000);
  } else {
    t.set_seconds(s);
    t.set_nanos(static_cast<std::int32_t>(r * 1000000));
  }
  return t;
}

// The Duration of `ms`, clamped to the range of Duration.
inline google::protobuf::Duration DurationOfMs(std::int64_t ms) {
  google::protobuf::Duration d;
  const std::int64_t s = ms / 1000;
  if (s > kDurationMaxSeconds) {
    d.set_seconds(kDurationMaxSeconds);
  } else if (s < -kDurationMaxSeconds) {
    d.set_seconds(-kDurationMaxSeconds);
  } else {
    d.set_seconds(s);
    d.set_nanos(static_cast<std::int32_t>((ms % 1000) * 1000000));
  }
  return d;
}

// RFC 3339 UTC with milliseconds ("2026-12-01T00:00:00.000Z") of a time in [kMinTimeMs,
// kMaxTimeMs]; other values are clamped into that range.
inline std::string Rfc3339OfMs(std::int64_t ms) {
  if (ms < kMinTimeMs) ms = kMinTimeMs;
  if (ms > kMaxTimeMs) ms = kMaxTimeMs;
  const std::time_t s = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[40];
  const std::size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[8];
  std::snprintf(frac, sizeof(frac), ".%03dZ", static_cast<int>(ms % 1000));
  return std::string(buf, n) + frac;
}

// `name` (a since or until) is a valid Timestamp within [kMinTimeMs, kMaxTimeMs].
inline grpc::Status ValidateTimeBound(const google::protobuf::Timestamp& t, const char* name) {
  if (!TimestampValid(t) || MsOf(t) < kMinTimeMs || MsOf(t) > kMaxTimeMs) {
    return Invalid(std::string(name) + " is out of range: it must be a time from " + kTimeRange);
  }
  return grpc::Status::OK;
}

// GetStatsRequest: the time bounds (window and step at most kMaxSpanMs, step at least 1 s, at most
// kMaxStatsBuckets buckets in the window whether it is given by since or by window), labels,
// group_by, top_rules. `now_ms` stands for an unset until.
inline grpc::Status ValidateStatsRequest(const v1::GetStatsRequest& req, std::int64_t now_ms) {
  if (req.has_until()) {
    if (auto s = ValidateTimeBound(req.until(), "until"); !s.ok()) return s;
  }
  if (req.has_since()) {
    if (auto s = ValidateTimeBound(req.since(), "since"); !s.ok()) return s;
  }
  if (req.has_window() &&
      (!DurationValid(req.window()) || MsOf(req.window()) < 0 || MsOf(req.window()) > kMaxSpanMs)) {
    return Invalid(std::string("window is out of range: it must be a duration from 0s to ") +
                   kSpanRange);
  }
  const std::int64_t until_ms = req.has_until() ? MsOf(req.until()) : now_ms + 1;
  if (req.has_since() && MsOf(req.since()) > until_ms) {
    return Invalid("since (" + Rfc3339OfMs(MsOf(req.since())) + ") is after until (" +
                   Rfc3339OfMs(until_ms) + ")");
  }
  if (!req.group_by().empty() && !ValidToken(req.group_by(), kMaxLabelKey, false)) {
    return Invalid("group_by must be a label key ([A-Za-z0-9_.-]{1,63})");
  }
  if (auto s = ValidateLabels(req.label_filter(), "label_filter"); !s.ok()) return s;
  if (req.top_rules() > 100) return Invalid("top_rules is at most 100");
  if (req.has_step()) {
    if (!DurationValid(req.step()) || MsOf(req.step()) < 0 || MsOf(req.step()) > kMaxSpanMs) {
      return Invalid(std::string("step is out of range: it must be a duration from 1s to ") +
                     kSpanRange);
    }
    const std::int64_t step_ms = MsOf(req.step());
    // 0: no series (an unset step).
    if (step_ms != 0 && step_ms < kMinStepMs) return Invalid("step must be at least 1s");
    std::int64_t since_ms = 0;
    bool bounded = false;
    if (req.has_since()) {
      since_ms = MsOf(req.since());
      bounded = true;
    } else if (req.has_window()) {
      since_ms = until_ms - MsOf(req.window());
      bounded = true;
    }
    if (step_ms > 0 && bounded && (until_ms - since_ms) / step_ms >= kMaxStatsBuckets) {
      return Invalid("step gives more than " + std::to_string(kMaxStatsBuckets) +
                     " buckets in the window; use a larger step or a shorter window");
    }
  }
  return grpc::Status::OK;
}

// ListModelsRequest: labels, since, limit.
inline grpc::Status ValidateModelsRequest(const v1::ListModelsRequest& req) {
  if (auto s = ValidateLabels(req.label_filter(), "label_filter"); !s.ok()) return s;
  if (req.has_since()) {
    if (auto s = ValidateTimeBound(req.since(), "since"); !s.ok()) return s;
  }
  if (req.limit() > 1000) return Invalid("limit is at most 1000");
  return grpc::Status::OK;
}

}  // namespace axqc::server
