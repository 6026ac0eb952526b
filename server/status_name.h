// Names of gRPC status codes ("OK", "NOT_FOUND"), as used in the server's logs and the
// requests_total metric and in the client's error messages.
#pragma once

#include <grpcpp/support/status.h>

namespace axqc::service {

const char* StatusCodeName(grpc::StatusCode code);

}  // namespace axqc::service
