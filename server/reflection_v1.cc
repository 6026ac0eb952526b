#include "reflection_v1.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <set>

#include "grpc/health/v1/health.pb.h"

namespace axqc::server {

namespace pb = google::protobuf;
namespace rv1 = grpc::reflection::v1;

namespace {

// Adds `file` and, depth first, its dependencies not yet in `seen`.
void AddFile(const pb::FileDescriptor* file, std::set<std::string>* seen,
             rv1::FileDescriptorResponse* out) {
  if (!seen->insert(file->name()).second) return;
  pb::FileDescriptorProto proto;
  file->CopyTo(&proto);
  out->add_file_descriptor_proto(proto.SerializeAsString());
  for (int i = 0; i < file->dependency_count(); ++i) AddFile(file->dependency(i), seen, out);
}

void Error(rv1::ServerReflectionResponse* resp, grpc::StatusCode code, const std::string& message) {
  auto* e = resp->mutable_error_response();
  e->set_error_code(static_cast<int>(code));
  e->set_error_message(message);
}

}  // namespace

ReflectionV1Service::ReflectionV1Service(std::vector<std::string> services)
    : services_(std::move(services)) {}

rv1::ServerReflectionResponse ReflectionV1Service::Answer(
    const rv1::ServerReflectionRequest& req) const {
  const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
  rv1::ServerReflectionResponse resp;
  resp.set_valid_host(req.host());
  *resp.mutable_original_request() = req;
  std::set<std::string> seen;
  switch (req.message_request_case()) {
    case rv1::ServerReflectionRequest::kListServices:
      for (const auto& name : services_) {
        resp.mutable_list_services_response()->add_service()->set_name(name);
      }
      break;
    case rv1::ServerReflectionRequest::kFileByFilename:
      if (const auto* file = pool->FindFileByName(req.file_by_filename())) {
        AddFile(file, &seen, resp.mutable_file_descriptor_response());
      } else {
        Error(&resp, grpc::StatusCode::NOT_FOUND, "File not found.");
      }
      break;
    case rv1::ServerReflectionRequest::kFileContainingSymbol:
      if (const auto* file = pool->FindFileContainingSymbol(req.file_containing_symbol())) {
        AddFile(file, &seen, resp.mutable_file_descriptor_response());
      } else {
        Error(&resp, grpc::StatusCode::NOT_FOUND, "Symbol not found.");
      }
      break;
    case rv1::ServerReflectionRequest::kFileContainingExtension: {
      const auto& ext = req.file_containing_extension();
      const auto* type = pool->FindMessageTypeByName(ext.containing_type());
      const auto* field =
          type == nullptr ? nullptr : pool->FindExtensionByNumber(type, ext.extension_number());
      if (field != nullptr) {
        AddFile(field->file(), &seen, resp.mutable_file_descriptor_response());
      } else {
        Error(&resp, grpc::StatusCode::NOT_FOUND,
              type == nullptr ? "Type not found." : "Extension not found.");
      }
      break;
    }
    case rv1::ServerReflectionRequest::kAllExtensionNumbersOfType: {
      const auto* type = pool->FindMessageTypeByName(req.all_extension_numbers_of_type());
      if (type == nullptr) {
        Error(&resp, grpc::StatusCode::NOT_FOUND, "Type not found.");
        break;
      }
      std::vector<const pb::FieldDescriptor*> extensions;
      pool->FindAllExtensions(type, &extensions);
      auto* out = resp.mutable_all_extension_numbers_response();
      out->set_base_type_name(type->full_name());
      for (const auto* f : extensions) out->add_extension_number(f->number());
      break;
    }
    case rv1::ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET:
      Error(&resp, grpc::StatusCode::INVALID_ARGUMENT, "Empty reflection request.");
      break;
  }
  return resp;
}

grpc::Status ReflectionV1Service::ServerReflectionInfo(
    grpc::ServerContext* /*context*/,
    grpc::ServerReaderWriter<rv1::ServerReflectionResponse, rv1::ServerReflectionRequest>* stream) {
  rv1::ServerReflectionRequest req;
  while (stream->Read(&req)) {
    if (!stream->Write(Answer(req))) break;
  }
  return grpc::Status::OK;
}

void LinkHealthDescriptors() { (void)grpc::health::v1::HealthCheckRequest::descriptor(); }

}  // namespace axqc::server
