// Parsing of the HTTP/JSON API's query strings into the RPC request messages: durations, times,
// booleans, labels, and the query parameters of GET /v1/stats and GET /v1/models. Pure functions
// of the request (no server state), so that the fuzz target http_query (tests/fuzz) runs them as
// the server does. The limits themselves are checked by request_validation.h afterwards.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>

#include "axqc/v1/axqc.pb.h"
#include "http/types.h"
#include "store.h"

namespace axqc::server::http {

// Query parameters "label.KEY=VALUE" -> labels.
std::map<std::string, std::string> LabelParams(const Request& request);

// "1h", "15m", "30s", "7d", "2w", "500ms", "3600" (seconds) -> milliseconds; nullopt when
// malformed. Values beyond the range of int64 milliseconds saturate at INT64_MAX (the caller's
// range check refuses them with its own message).
std::optional<std::int64_t> ParseDurationMs(const std::string& text);
// RFC 3339 ("2026-12-01T00:00:00Z") or Unix seconds -> milliseconds; nullopt when malformed or
// outside 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59.999999999Z.
std::optional<std::int64_t> ParseTimeMs(const std::string& text);
// "true"/"1"/"false"/"0"/"" -> bool; nullopt otherwise.
std::optional<bool> ParseBool(const std::string& text);

// Check options of the query string: check_value, max_locations, target (repeatable, or a
// comma-separated list of chips). The values are validated by ValidateOptions afterwards.
grpc::Status ParseCheckOptionsQuery(const Request& request, v1::CheckOptions& options);

// INVALID_ARGUMENT naming the first query parameter that is neither in `names` nor "label.*".
grpc::Status KnownParams(const Request& request, std::initializer_list<const char*> names);

// GET /v1/stats: since, until, window, step, group_by, top_rules, label.KEY.
grpc::Status ParseStatsQuery(const Request& request, v1::GetStatsRequest& req);
// GET /v1/models: since, limit, label.KEY.
grpc::Status ParseModelsQuery(const Request& request, v1::ListModelsRequest& req);
// GET /v1/deliveries: source, outcome, state (each one of its known values), limit (1-1000,
// default 50), cursor (the next_cursor of the previous page).
inline constexpr std::uint32_t kMaxDeliveriesLimit = 1000;
grpc::Status ParseDeliveriesQuery(const Request& request, DeliveriesQuery& q);
// GET /v1/checks: verdict, source (each one of its known values), sha256 (64 lowercase hex
// digits), q (a substring of the model name, at most kMaxChecksSearch bytes of UTF-8 without
// control characters), label.KEY (as GET /v1/models), limit (1-kMaxChecksLimit, default 50),
// offset (at most kMaxChecksOffset). Validated here: the store binds them as they are.
inline constexpr std::uint32_t kMaxChecksLimit = 200;
inline constexpr std::uint64_t kMaxChecksOffset = 1000000;
inline constexpr std::size_t kMaxChecksSearch = 100;
grpc::Status ParseChecksQuery(const Request& request, ChecksQuery& q);
// "/v1/models/{sha256}/reports" and "/models/{sha256}": 64 lowercase hex digits.
bool IsSha256Hex(const std::string& s);

}  // namespace axqc::server::http
