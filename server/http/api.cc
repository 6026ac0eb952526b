#include "http/api.h"

namespace axqc::server::http {

std::shared_ptr<Router> BuildRouter(Api api) {
  auto router = std::make_shared<Router>();
  AddCheckRoutes(*router, api);
  AddLookupRoutes(*router, api);
  AddStatsRoutes(*router, api);
  AddCheckListRoutes(*router, api);
  AddOpenApiRoutes(*router);
  AddHealthRoutes(*router, api);
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

}  // namespace axqc::server::http
