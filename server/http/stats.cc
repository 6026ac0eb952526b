// GET /v1/stats (GetStats: verdict counts, pass rates, failing rules, a time series in `step`
// buckets) and GET /v1/models (ListModels: the latest verdict per model), for dashboards.
#include <google/protobuf/util/time_util.h>

#include <charconv>
#include <string>

#include "http/api.h"
#include "request_validation.h"

namespace axqc::server::http {

namespace {

using google::protobuf::util::TimeUtil;

grpc::Status TimeParam(const Request& request, const char* name, google::protobuf::Timestamp* out,
                       bool* set) {
  *set = false;
  auto v = request.Query(name);
  if (!v) return grpc::Status::OK;
  auto ms = ParseTimeMs(*v);
  if (!ms) {
    return Invalid(std::string(name) +
                   " must be an RFC 3339 time (2026-12-01T00:00:00Z) or Unix seconds");
  }
  *out = TimeUtil::MillisecondsToTimestamp(*ms);
  *set = true;
  return grpc::Status::OK;
}

grpc::Status DurationParam(const Request& request, const char* name,
                           google::protobuf::Duration* out, bool* set) {
  *set = false;
  auto v = request.Query(name);
  if (!v) return grpc::Status::OK;
  auto ms = ParseDurationMs(*v);
  if (!ms) return Invalid(std::string(name) + " must be a duration such as 30s, 15m, 1h, 7d, 2w");
  *out = TimeUtil::MillisecondsToDuration(*ms);
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

// Query parameters other than these are refused (a typo must not silently widen a filter).
grpc::Status KnownParams(const Request& request, std::initializer_list<const char*> names) {
  for (const auto& [k, v] : request.query) {
    if (k.rfind("label.", 0) == 0) continue;
    bool known = false;
    for (const char* n : names) known = known || k == n;
    if (!known) return Invalid("unknown query parameter '" + k + "'");
  }
  return grpc::Status::OK;
}

grpc::Status ParseStats(const Request& request, v1::GetStatsRequest& req) {
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
  if (set) *req.mutable_step() = d;
  if (auto v = request.Query("group_by")) req.set_group_by(*v);
  std::uint32_t top = 0;
  if (auto st = UintParam(request, "top_rules", &top); !st.ok()) return st;
  req.set_top_rules(top);
  const auto labels = LabelParams(request);
  req.mutable_label_filter()->insert(labels.begin(), labels.end());
  return grpc::Status::OK;
}

grpc::Status ParseModels(const Request& request, v1::ListModelsRequest& req) {
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

}  // namespace

void AddStatsRoutes(Router& router, Api api) {
  Route stats;
  stats.method = "GET";
  stats.pattern = "/v1/stats";
  stats.handle = [api](Request& request, Reply reply) {
    api.admission->Http<GetStatsRpc>(
        OriginOf(request), request.Header("authorization"),
        [&request](v1::GetStatsRequest& req) { return ParseStats(request, req); },
        Answer<v1::GetStatsResponse>(std::move(reply),
                                     [](const std::string& request_id, v1::GetStatsResponse& resp) {
                                       return JsonResponse(ToJson(resp), request_id);
                                     }));
  };
  router.Add(std::move(stats));

  Route models;
  models.method = "GET";
  models.pattern = "/v1/models";
  models.handle = [api](Request& request, Reply reply) {
    api.admission->Http<ListModelsRpc>(
        OriginOf(request), request.Header("authorization"),
        [&request](v1::ListModelsRequest& req) { return ParseModels(request, req); },
        Answer<v1::ListModelsResponse>(
            std::move(reply), [](const std::string& request_id, v1::ListModelsResponse& resp) {
              return JsonResponse(ToJson(resp), request_id);
            }));
  };
  router.Add(std::move(models));
}

}  // namespace axqc::server::http
