// The input of the fuzz target http_query (fuzz_http_query.cc) and of its regression test
// (tests/server/http_query_fuzz_test.cc): the bytes are a request target as the HTTP listener
// receives it ("/v1/stats?window=2w&step=1h"). It goes through what the listener and the stats
// endpoints do with it before any server state is touched: SplitTarget (percent-decoding),
// Router::Find against the API's route patterns, the query parsing of GET /v1/stats and
// GET /v1/models, the validation layer (request_validation.h), the JSON error answer, and (for an
// accepted request) the conversions GetStats / ListModels then make with protobuf's TimeUtil,
// which abort the process on a value outside the range of Timestamp.
#pragma once

#include <google/protobuf/util/time_util.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "http/errors.h"
#include "http/query.h"
#include "http/router.h"
#include "request_validation.h"

namespace axqc::fuzz {

// (method, pattern) of every route of the server (BuildRouter; the regression test compares).
inline const std::vector<std::pair<std::string, std::string>>& HttpRoutePatterns() {
  static const std::vector<std::pair<std::string, std::string>> kRoutes = {
      {"POST", "/v1/check"},
      {"GET", "/v1/reports/{sha256}"},
      {"GET", "/v1/reports/{sha256}/html"},
      {"GET", "/v1/rules"},
      {"GET", "/v1/stats"},
      {"GET", "/v1/models"},
      {"GET", "/v1/checks"},
      {"GET", "/v1/models/{sha256}/reports"},
      {"GET", "/v1/deliveries"},
      {"GET", "/v1/openapi.json"},
      {"GET", "/healthz"},
      {"GET", "/readyz"},
      {"GET", "/"},
      {"GET", "/models/{sha256}"},
      {"GET", "/ui/dashboard.js"},
      {"POST", "/v1/hooks/mlflow"},
      {"POST", "/v1/hooks/huggingface"},
  };
  return kRoutes;
}

inline const server::http::Router& FuzzRouter() {
  static const server::http::Router router = [] {
    server::http::Router r;
    for (const auto& [method, pattern] : HttpRoutePatterns()) {
      server::http::Route route;
      route.method = method;
      route.pattern = pattern;
      r.Add(std::move(route));
    }
    return r;
  }();
  return router;
}

// A refused query: INVALID_ARGUMENT, a 400 JSON answer that parses, a bounded message.
inline std::string CheckRefusal(const grpc::Status& st) {
  if (st.error_code() != grpc::StatusCode::INVALID_ARGUMENT) {
    return "a query was refused with " + std::to_string(st.error_code()) + ": " +
           server::Clip(st.error_message(), 200);
  }
  const server::http::Response r = server::http::ErrorResponse(st, "fuzz");
  if (r.status != 400) return "refused query answered " + std::to_string(r.status);
  if (!nlohmann::json::accept(r.body)) return "error body is not JSON: " + r.body.substr(0, 200);
  if (st.error_message().size() > 1024) {
    return "error message of " + std::to_string(st.error_message().size()) + " bytes";
  }
  return "";
}

// An accepted request survives the wire format: its strings are UTF-8, as every gRPC peer
// requires (labels recorded from it are served in responses later).
inline std::string RoundTrips(const google::protobuf::Message& req) {
  std::unique_ptr<google::protobuf::Message> back(req.New());
  if (!back->ParseFromString(req.SerializeAsString())) {
    return "accepted request is not valid in the wire format (a string is not UTF-8)";
  }
  return "";
}

// The conversions of GetStatsRpc::Run, with TimeUtil's own CHECK-ing functions: an accepted
// request that would abort the server aborts here.
inline std::string RunAcceptedStats(const v1::GetStatsRequest& req) {
  using google::protobuf::util::TimeUtil;
  const std::int64_t now_ms = 1764547200000;  // 2025-12-01T00:00:00Z
  const std::int64_t until_ms = req.has_until() ? server::MsOf(req.until()) : now_ms + 1;
  std::int64_t since_ms = 0;
  bool bounded = false;
  if (req.has_since()) {
    since_ms = server::MsOf(req.since());
    bounded = true;
  } else if (req.has_window()) {
    since_ms = until_ms - server::MsOf(req.window());
    bounded = true;
  }
  if (bounded) (void)TimeUtil::MillisecondsToTimestamp(since_ms);
  (void)TimeUtil::MillisecondsToTimestamp(until_ms);
  if (req.has_step() && server::MsOf(req.step()) > 0) {
    const std::int64_t step = server::MsOf(req.step());
    const std::int64_t first = bounded ? since_ms - step : until_ms - step;
    (void)TimeUtil::MillisecondsToTimestamp(first);
    if (bounded && (until_ms - since_ms) / step >= server::kMaxStatsBuckets) {
      return "accepted a series of more than kMaxStatsBuckets buckets";
    }
  }
  if (req.has_window() && server::MsOf(req.window()) > server::kMaxSpanMs) {
    return "accepted a window over kMaxSpanMs";
  }
  (void)server::http::ToJson(req);
  return RoundTrips(req);
}

// "" or the invariant the input violated.
inline std::string RunHttpQueryInput(const std::uint8_t* data, std::size_t size) {
  server::http::Request request;
  request.method = "GET";
  request.target.assign(reinterpret_cast<const char*>(data), size);
  if (!server::http::SplitTarget(request.target, &request.path, &request.query)) {
    // The listener's answer to a malformed target.
    return CheckRefusal(server::Invalid("malformed request target"));
  }
  if (request.path.find('?') != std::string::npos) return "path keeps its query string";
  for (const char* method : {"GET", "POST", "PUT"}) {
    request.method = method;
    const auto match = FuzzRouter().Find(request);
    if (match.route != nullptr && match.route->method != method) return "route of another method";
    if (match.route != nullptr && !match.path_known) return "matched route of an unknown path";
    // The 404 answer repeats the path.
    if (match.route == nullptr && !match.path_known) {
      const auto r = server::http::ErrorResponse(
          grpc::Status(grpc::StatusCode::NOT_FOUND, "no such endpoint: " + request.path), "");
      if (r.status != 404 || !nlohmann::json::accept(r.body)) return "404 answer is not JSON";
    }
  }
  for (const auto& [k, v] : request.query) {
    (void)server::http::ParseDurationMs(v);
    (void)server::http::ParseTimeMs(v);
    (void)server::http::ParseBool(v);
  }
  {
    v1::GetStatsRequest req;
    grpc::Status st = server::http::ParseStatsQuery(request, req);
    if (st.ok()) st = server::ValidateStatsRequest(req, 1764547200000);
    const std::string err = st.ok() ? RunAcceptedStats(req) : CheckRefusal(st);
    if (!err.empty()) return "GET /v1/stats: " + err;
  }
  {
    v1::ListModelsRequest req;
    grpc::Status st = server::http::ParseModelsQuery(request, req);
    if (st.ok()) st = server::ValidateModelsRequest(req);
    if (st.ok()) {
      if (req.has_since()) {
        (void)google::protobuf::util::TimeUtil::MillisecondsToTimestamp(server::MsOf(req.since()));
      }
      (void)server::http::ToJson(req);
      if (const std::string err = RoundTrips(req); !err.empty()) return "GET /v1/models: " + err;
    } else if (const std::string err = CheckRefusal(st); !err.empty()) {
      return "GET /v1/models: " + err;
    }
  }
  {
    // GET /v1/checks: an accepted query is what the store binds as parameters; it must keep
    // within the bounds the parser promises.
    server::ChecksQuery q;
    const grpc::Status st = server::http::ParseChecksQuery(request, q);
    if (st.ok()) {
      if (q.limit == 0 || q.limit > server::http::kMaxChecksLimit) return "GET /v1/checks: limit";
      if (q.offset > server::http::kMaxChecksOffset) return "GET /v1/checks: offset";
      if (q.search.size() > server::http::kMaxChecksSearch || !server::ValidUtf8(q.search)) {
        return "GET /v1/checks: search accepted beyond its bounds";
      }
      if (!q.sha256.empty() && !server::http::IsSha256Hex(q.sha256)) {
        return "GET /v1/checks: sha256 accepted that is not 64 hex digits";
      }
      if (!server::ValidateLabels(q.label_filter, "label_filter").ok()) {
        return "GET /v1/checks: label filter accepted that the validation refuses";
      }
    } else if (const std::string err = CheckRefusal(st); !err.empty()) {
      return "GET /v1/checks: " + err;
    }
  }
  return "";
}

}  // namespace axqc::fuzz
