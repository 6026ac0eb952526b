#include "http/errors.h"

#include <google/protobuf/util/json_util.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <string>

#include "axqc/wire/status_name.h"
#include "json_input.h"
#include "request_validation.h"

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
                       {{"code", wire::StatusCodeName(status.error_code())},
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

namespace {

using OrderedJson = nlohmann::ordered_json;
namespace pb = google::protobuf;

// "CacheResult" -> "CACHE_RESULT_": the prefix of its values' names.
std::string EnumPrefix(const pb::EnumDescriptor& e) {
  std::string out;
  for (const char c : e.name()) {
    if (std::isupper(static_cast<unsigned char>(c)) && !out.empty()) out += '_';
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out + "_";
}

// One value of `field` as the HTTP API writes it (see ToJson); `to_proto`: the other way, an
// enum value named as the reports do ("json") back to its proto name ("REPORT_FORMAT_JSON").
void NormalizeValue(const pb::FieldDescriptor& field, OrderedJson& v, bool to_proto);

void NormalizeMessage(const pb::Descriptor& d, OrderedJson& j, bool to_proto = false) {
  if (!j.is_object() || d.full_name().starts_with("google.protobuf.")) return;
  for (int i = 0; i < d.field_count(); ++i) {
    const pb::FieldDescriptor& f = *d.field(i);
    const auto it = j.find(f.name());
    if (it == j.end()) continue;
    if (f.is_map()) {
      if (!it->is_object()) continue;
      for (auto& [key, value] : it->items()) {
        NormalizeValue(*f.message_type()->map_value(), value, to_proto);
      }
    } else if (f.is_repeated()) {
      if (!it->is_array()) continue;
      for (auto& value : *it) NormalizeValue(f, value, to_proto);
    } else {
      NormalizeValue(f, *it, to_proto);
    }
  }
}

void NormalizeValue(const pb::FieldDescriptor& field, OrderedJson& v, bool to_proto) {
  switch (field.cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT64:
      if (!to_proto && v.is_string()) v = std::stoll(v.get<std::string>());
      break;
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      if (!to_proto && v.is_string()) v = std::stoull(v.get<std::string>());
      break;
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      if (to_proto) {
        if (!v.is_string()) break;
        std::string name = EnumPrefix(*field.enum_type()) + v.get<std::string>();
        for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        // Only a short name of a real value is rewritten; anything else reaches protobuf as sent.
        if (field.enum_type()->FindValueByName(name) != nullptr) v = name;
      } else if (v.is_string()) {
        std::string name = v.get<std::string>();
        const std::string prefix = EnumPrefix(*field.enum_type());
        if (name.starts_with(prefix)) name.erase(0, prefix.size());
        for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        v = name;
      }
      break;
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      NormalizeMessage(*field.message_type(), v, to_proto);
      break;
    default:
      break;
  }
}

}  // namespace

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  // proto3's JSON mapping writes 64-bit integers as strings and enum values by their full names;
  // the HTTP API answers counts as numbers and names enum values as the reports do.
  OrderedJson j = OrderedJson::parse(out, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return out;
  NormalizeMessage(*message.GetDescriptor(), j);
  return j.dump();
}

grpc::Status FromJson(const std::string& json, google::protobuf::Message* message) {
  // The size is the listener's limit (--http-max-json-bytes, 413); the depth is bounded here,
  // before protobuf's recursive parser sees the text.
  JsonLimits limits;
  limits.max_bytes = json.size();
  if (grpc::Status st = CheckJsonBounds(json, limits, "request body"); !st.ok()) return st;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  // Enum values may be named as the answers name them ("format": "json"), or as proto names.
  std::string text = json;
  OrderedJson j = OrderedJson::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded() && j.is_object()) {
    NormalizeMessage(*message->GetDescriptor(), j, /*to_proto=*/true);
    text = j.dump();
  }
  const auto st = google::protobuf::util::JsonStringToMessage(text, message, options);
  if (!st.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "request body is not a valid JSON " +
                                                                message->GetDescriptor()->name() +
                                                                ": " + std::string(st.message()));
  }
  return grpc::Status::OK;
}

}  // namespace axqc::server::http
