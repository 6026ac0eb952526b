// GET /healthz and GET /readyz: the gRPC health service's answer over HTTP, for probes that
// speak HTTP only (load balancers, Kubernetes httpGet, curl). No authentication, no request log:
// they carry no data.
//   /healthz  the process answers requests: 200 while it runs, also while it drains (a liveness
//             probe must not restart a server that is finishing its checks)
//   /readyz   it takes new work: 200 {"status":"SERVING"} like grpc.health.v1 Check, 503
//             {"status":"NOT_SERVING"} once it drains (SIGTERM)
#include <nlohmann/json.hpp>

#include "http/api.h"

namespace axqc::server::http {

namespace {

Response Health(const Request& request, bool serving, bool ready_probe) {
  nlohmann::json body;
  body["status"] = serving ? "SERVING" : "NOT_SERVING";
  if (!ready_probe) body["draining"] = !serving;
  Response r = JsonResponse(body.dump(), request.Header("x-request-id"),
                            ready_probe && !serving ? 503 : 200);
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

}  // namespace

void AddHealthRoutes(Router& router, Api api) {
  const std::atomic<bool>* draining = api.s == nullptr ? nullptr : api.s->deps.draining;
  for (const bool ready_probe : {false, true}) {
    Route route;
    route.method = "GET";
    route.pattern = ready_probe ? "/readyz" : "/healthz";
    route.handle = [draining, ready_probe](Request& request, Reply reply) {
      const bool serving = draining == nullptr || !draining->load();
      reply(Health(request, serving, ready_probe));
    };
    router.Add(std::move(route));
  }
}

}  // namespace axqc::server::http
