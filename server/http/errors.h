// JSON errors of the HTTP/JSON API: {"error":{"code":"INVALID_ARGUMENT","http_status":400,
// "message":"..."},"request_id":"..."} with the gRPC status name and the matching HTTP status.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/support/status.h>

#include <string>

#include "http/types.h"

namespace axqc::server::http {

// The HTTP status of a gRPC status code (the mapping of google.rpc.Code to HTTP).
unsigned HttpStatusOf(grpc::StatusCode code);

// The error response of `status`; `http_status` 0 = HttpStatusOf(code).
Response ErrorResponse(const grpc::Status& status, const std::string& request_id,
                       unsigned http_status = 0);

// A JSON response with body `json`.
Response JsonResponse(std::string json, const std::string& request_id, unsigned status = 200);

// The proto3 JSON mapping with the proto's field names and zero values printed, except that 64-bit
// integers are JSON numbers (not strings) and enum values are named as in the reports: without
// their enum's prefix, lowercase (SEVERITY_ERROR -> "error", VERDICT_NON_CONFORMANT ->
// "non_conformant").
std::string ToJson(const google::protobuf::Message& message);

// Parses `json` into `message` (proto3 JSON mapping; unknown fields are refused). INVALID_ARGUMENT
// naming the problem when it is not valid or nests deeper than kMaxJsonDepth (json_input.h; the
// size limit is the listener's --http-max-json-bytes).
grpc::Status FromJson(const std::string& json, google::protobuf::Message* message);

}  // namespace axqc::server::http
