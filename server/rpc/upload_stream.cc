#include "rpc/upload_stream.h"

#include <string>
#include <utility>

#include "request_validation.h"

namespace axqc::server {

namespace {

UploadStatus AddMessage(UploadAssembler& a, const v1::UploadRequest& msg, std::string* chunk) {
  if (a.ended()) return {UploadError::kInvalid, "the upload has already ended"};
  const auto part = msg.part_case();
  if (!a.started()) {
    if (part == v1::UploadRequest::kMetadata) return a.Begin(msg.metadata());
    a.Abort();
    return {UploadError::kInvalid, "the first Upload message must carry metadata"};
  }
  switch (part) {
    case v1::UploadRequest::kChunk:
      return chunk != nullptr ? a.AddChunk(chunk) : a.AddChunk(msg.chunk());
    case v1::UploadRequest::kDataChunk:
      return a.AddDataBytes(msg.data_chunk().file(), msg.data_chunk().data());
    case v1::UploadRequest::kMetadata:
      a.Abort();
      return {UploadError::kInvalid, "only the first Upload message may carry metadata"};
    case v1::UploadRequest::PART_NOT_SET:
      break;
  }
  a.Abort();
  return {UploadError::kInvalid, "every Upload message after the first must carry a chunk"};
}

}  // namespace

UploadStatus AddUploadMessage(UploadAssembler& assembler, const v1::UploadRequest& msg) {
  return AddMessage(assembler, msg, nullptr);
}

UploadStatus TakeUploadMessage(UploadAssembler& assembler, v1::UploadRequest* msg) {
  return AddMessage(assembler, *msg,
                    msg->part_case() == v1::UploadRequest::kChunk ? msg->mutable_chunk() : nullptr);
}

grpc::Status GrpcStatusOf(const UploadStatus& status) {
  switch (status.kind) {
    case UploadError::kNone:
      return grpc::Status::OK;
    case UploadError::kInvalid:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, status.message);
    case UploadError::kTooLarge:
      return OverSizeLimitStatus(status.message);
    case UploadError::kBusy:
    case UploadError::kNoDataFiles:
    case UploadError::kStorage:
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, status.message);
    case UploadError::kInternal:
      break;
  }
  return grpc::Status(grpc::StatusCode::INTERNAL, status.message);
}

}  // namespace axqc::server
