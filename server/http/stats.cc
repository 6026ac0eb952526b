// GET /v1/stats (GetStats: verdict counts, pass rates, failing rules, a time series in `step`
// buckets) and GET /v1/models (ListModels: the latest verdict per model), for dashboards.
#include <string>

#include "http/api.h"
#include "request_validation.h"

namespace axqc::server::http {

void AddStatsRoutes(Router& router, Api api) {
  Route stats;
  stats.method = "GET";
  stats.pattern = "/v1/stats";
  stats.handle = [api](Request& request, Reply reply) {
    api.admission->Http<GetStatsRpc>(
        OriginOf(request), request.Header("authorization"),
        [&request](v1::GetStatsRequest& req) { return ParseStatsQuery(request, req); },
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
        [&request](v1::ListModelsRequest& req) { return ParseModelsQuery(request, req); },
        Answer<v1::ListModelsResponse>(
            std::move(reply), [](const std::string& request_id, v1::ListModelsResponse& resp) {
              return JsonResponse(ToJson(resp), request_id);
            }));
  };
  router.Add(std::move(models));
}

}  // namespace axqc::server::http
