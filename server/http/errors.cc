#include "http/errors.h"

#include <google/protobuf/util/json_util.h>

#include <nlohmann/json.hpp>

#include "request_validation.h"
#include "json_input.h"
#include "status_name.h"

namespace axqc::server::http {

unsigned HttpStatusOf(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return 200;
    case grpc::StatusCode::CANCELLED:
      return 499;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
      return 400;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return 504;
    case grpc::StatusCode::NOT_FOUND:
      return 404;
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::ABORTED:
      return 409;
    case grpc::StatusCode::PERMISSION_DENIED:
      return 403;
    case grpc::StatusCode::UNAUTHENTICATED:
      return 401;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return 429;
    case grpc::StatusCode::UNIMPLEMENTED:
      return 501;
    case grpc::StatusCode::UNAVAILABLE:
      return 503;
    default:
      return 500;
  }
}

Response ErrorResponse(const grpc::Status& status, const std::string& request_id,
                       unsigned http_status) {
  unsigned code = http_status != 0 ? http_status : HttpStatusOf(status.error_code());
  // Over a size limit: the same request will never fit (413), unlike a busy server (429).
  if (http_status == 0 && OverSizeLimit(status)) code = 413;
  nlohmann::json j = {{"error",
                       {{"code", service::StatusCodeName(status.error_code())},
                        {"http_status", code},
                        {"message", status.error_message()}}},
                      {"request_id", request_id}};
  Response r;
  r.status = code;
  // A message may repeat bytes of the request (a query parameter's name) that are not UTF-8:
  // replaced, never thrown.
  r.body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  r.request_id = request_id;
  if (code == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"axqc\"");
  return r;
}

Response JsonResponse(std::string json, const std::string& request_id, unsigned status) {
  Response r;
  r.status = status;
  r.body = std::move(json);
  if (r.body.empty() || r.body.back() != '\n') r.body += '\n';
  r.request_id = request_id;
  return r;
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

grpc::Status FromJson(const std::string& json, google::protobuf::Message* message) {
  // The size is the listener's limit (--http-max-json-bytes, 413); the depth is bounded here,
  // before protobuf's recursive parser sees the text.
  JsonLimits limits;
  limits.max_bytes = json.size();
  if (grpc::Status st = CheckJsonBounds(json, limits, "request body"); !st.ok()) return st;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto st = google::protobuf::util::JsonStringToMessage(json, message, options);
  if (!st.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "request body is not a valid JSON " +
                                                                message->GetDescriptor()->name() +
                                                                ": " + std::string(st.message()));
  }
  return grpc::Status::OK;
}

}  // namespace axqc::server::http
