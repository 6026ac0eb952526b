#include "rpc/admission.h"

#include "auth.h"

namespace axqc::server {

grpc::Status Admission::Admit(const grpc::CallbackServerContext* ctx) const {
  return Admit(MetadataValue(ctx, "authorization"), true);
}

grpc::Status Admission::Admit(std::string_view authorization, bool check_token,
                              const char* carrier) const {
  if (s_.deps.draining->load()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
  }
  if (check_token && !s_.deps.auth_token.empty()) {
    if (!BearerTokenMatches(authorization, s_.deps.auth_token)) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          std::string("missing or wrong bearer token (") + carrier + ")");
    }
  }
  return grpc::Status::OK;
}

}  // namespace axqc::server
