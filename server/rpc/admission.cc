#include "rpc/admission.h"

#include "auth.h"

namespace axqc::server {

grpc::Status Admission::Admit(const grpc::CallbackServerContext* ctx) const {
  if (s_.d.draining->load()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
  }
  if (!s_.d.auth_token.empty()) {
    if (!BearerTokenMatches(MetadataValue(ctx, "authorization"), s_.d.auth_token)) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "missing or wrong bearer token (authorization metadata)");
    }
  }
  return grpc::Status::OK;
}

}  // namespace axqc::server
