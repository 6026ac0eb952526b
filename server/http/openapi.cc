// GET /v1/openapi.json: the OpenAPI 3 document of this API (docs/openapi.json, embedded at build
// time). Served without authentication, like the gRPC server's reflection.
#include "http/api.h"
#include "openapi_json.h"  // generated: kOpenApiJson

namespace axqc::server::http {

const std::string& OpenApiDocument() {
  static const std::string doc(kOpenApiJson);
  return doc;
}

void AddOpenApiRoutes(Router& router) {
  Route r;
  r.method = "GET";
  r.pattern = "/v1/openapi.json";
  r.handle = [](Request& request, Reply reply) {
    Response resp = JsonResponse(OpenApiDocument(), request.Header("x-request-id"));
    reply(std::move(resp));
  };
  router.Add(std::move(r));
}

}  // namespace axqc::server::http
