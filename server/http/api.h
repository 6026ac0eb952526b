// The HTTP/JSON API: its routes, built on the gRPC service's admission layer and handlers (every
// endpoint is an RPC of axqc.v1.Checker, or a registry webhook, with the same authentication,
// limits, metrics and request log), one file per endpoint group:
//   POST /v1/check                   check.cc     model bytes (Upload) or JSON (Check)
//   GET  /v1/reports/{sha256}        lookup.cc    GetReport
//   GET  /v1/reports/{sha256}/html   lookup.cc    GetReport, as the HTML report
//   GET  /v1/rules                   lookup.cc    ListRules
//   GET  /v1/stats                   stats.cc     GetStats (+ time series)
//   GET  /v1/models                  stats.cc     ListModels
//   GET  /v1/checks                  checks.cc    ListChecks: the history, paged and filtered
//   GET  /v1/models/{sha256}/reports checks.cc    ListModelReports: a model's stored reports
//   GET  /v1/openapi.json            openapi.cc   the OpenAPI 3 document (docs/openapi.json)
//   GET  /healthz  GET /readyz       health.cc    the gRPC health service's answer
//   POST /v1/hooks/mlflow            hooks_mlflow.cc        MLflow model-registry webhooks
//   POST /v1/hooks/huggingface       hooks_huggingface.cc   Hugging Face Hub webhooks
//   GET  /v1/deliveries              hook_deliveries.cc     the webhooks' deliveries
// and the dashboard's pages (pages.cc; no data of their own, their script calls the API):
//   GET  /  GET /models/{sha256}  GET /ui/dashboard.js
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "http/errors.h"
#include "http/query.h"
#include "http/router.h"
#include "rpc/admission.h"

namespace axqc::server::http {

class Hooks;

struct Api {
  Admission* admission = nullptr;
  ServiceContext* s = nullptr;
  Hooks* hooks = nullptr;  // null: webhooks not configured (404 with an explanation)
};

// Every route of the API.
std::shared_ptr<Router> BuildRouter(Api api);

// The route groups (one file each).
void AddCheckRoutes(Router& router, Api api);
void AddLookupRoutes(Router& router, Api api);
void AddStatsRoutes(Router& router, Api api);
void AddOpenApiRoutes(Router& router);
void AddHealthRoutes(Router& router, Api api);      // health.cc: /healthz, /readyz
void AddPageRoutes(Router& router);                 // pages.cc
void AddHookRoutes(Router& router, Api api);        // hooks_mlflow.cc
void AddHuggingFaceRoute(Router& router, Api api);  // hooks_huggingface.cc
void AddDeliveryRoutes(Router& router, Api api);    // hook_deliveries.cc
void AddCheckListRoutes(Router& router, Api api);   // checks.cc

// The OpenAPI document served at /v1/openapi.json (docs/openapi.json, embedded at build time).
const std::string& OpenApiDocument();

// --- helpers shared by the endpoints (api.cc) ---

// The call origin of an HTTP request (its X-Request-Id, peer).
CallOrigin OriginOf(const Request& request);

// The Done callback of an RPC: OK -> `ok(request_id, response)`, errors -> the JSON error.
template <typename Resp>
Admission::Done<Resp> Answer(Reply reply, std::function<Response(const std::string&, Resp&)> ok) {
  return [reply = std::move(reply), ok = std::move(ok)](const std::string& request_id,
                                                        const grpc::Status& status, Resp& resp) {
    reply(status.ok() ? ok(request_id, resp) : ErrorResponse(status, request_id));
  };
}

}  // namespace axqc::server::http
