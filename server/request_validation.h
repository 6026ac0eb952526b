// Validation of request fields shared by the RPC handlers and the upload assembler: labels, check
// options, identifiers.
#pragma once

#include <grpcpp/support/status.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "axqc/v1/axqc.pb.h"
#include "report_proto.h"

namespace axqc::server {

inline constexpr std::size_t kMaxLabels = 16;
inline constexpr std::size_t kMaxLabelValue = 256;

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

template <typename LabelMap>
grpc::Status ValidateLabels(const LabelMap& labels, const char* what) {
  if (labels.size() > kMaxLabels) {
    return Invalid(std::string(what) + ": at most " + std::to_string(kMaxLabels) + " labels");
  }
  for (const auto& [k, v] : labels) {
    if (!ValidToken(k, 63, false)) {
      return Invalid(std::string(what) + ": label key '" + k + "' must match [A-Za-z0-9_.-]{1,63}");
    }
    if (v.size() > kMaxLabelValue) {
      return Invalid(std::string(what) + ": value of label '" + k + "' is longer than " +
                     std::to_string(kMaxLabelValue) + " bytes");
    }
  }
  return grpc::Status::OK;
}

inline grpc::Status ValidateOptions(const v1::CheckOptions& o) {
  if (o.max_locations() > service::kMaxLocations) {
    return Invalid("options.max_locations is at most " + std::to_string(service::kMaxLocations));
  }
  if (!v1::ReportFormat_IsValid(o.format())) return Invalid("options.format is unknown");
  return grpc::Status::OK;
}

}  // namespace axqc::server
