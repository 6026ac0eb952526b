// grpc.reflection.v1.ServerReflection: server reflection, version v1. grpc++ 1.51 (Debian 12)
// ships only v1alpha (grpc::reflection::InitProtoReflectionServerBuilderPlugin, also served); the
// clients of today (grpcurl, grpcio-reflection, Postman) ask for v1 first. Answers from the
// generated descriptor pool of this binary, like grpc's own implementation: list_services,
// file_by_filename, file_containing_symbol, file_containing_extension,
// all_extension_numbers_of_type; a file comes with all its dependencies.
#pragma once

#include <string>
#include <vector>

#include "grpc/reflection/v1/reflection.grpc.pb.h"

namespace axqc::server {

class ReflectionV1Service final : public grpc::reflection::v1::ServerReflection::Service {
 public:
  // `services`: the fully qualified names list_services answers with.
  explicit ReflectionV1Service(std::vector<std::string> services);

  grpc::Status ServerReflectionInfo(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<grpc::reflection::v1::ServerReflectionResponse,
                               grpc::reflection::v1::ServerReflectionRequest>* stream) override;

  // Answers one request (public for tests).
  grpc::reflection::v1::ServerReflectionResponse Answer(
      const grpc::reflection::v1::ServerReflectionRequest& request) const;

 private:
  std::vector<std::string> services_;
};

// Makes sure the descriptors of grpc.health.v1 are in this binary's generated pool (the server's
// health service is implemented without them), so that reflection can describe it.
void LinkHealthDescriptors();

}  // namespace axqc::server
