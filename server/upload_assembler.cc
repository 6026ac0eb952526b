#include "upload_assembler.h"

#include <utility>

#include "request_validation.h"

namespace axqc::server {

UploadAssembler::UploadAssembler(std::uint64_t max_model_bytes, ByteBudget* model_budget,
                                 ByteBudget* upload_budget)
    : max_model_bytes_(max_model_bytes),
      model_reservation_(model_budget),
      upload_reservation_(upload_budget) {}

grpc::Status UploadAssembler::Add(const v1::UploadRequest& msg) {
  switch (state_) {
    case State::kDone:
      return Invalid("the upload has already ended");
    case State::kExpectMetadata:
      if (msg.part_case() != v1::UploadRequest::kMetadata) {
        return Fail(Invalid("the first Upload message must carry metadata"));
      }
      return AddMetadata(msg.metadata());
    case State::kReceiving:
      if (msg.part_case() != v1::UploadRequest::kChunk) {
        return Fail(Invalid(msg.part_case() == v1::UploadRequest::kMetadata
                                ? "only the first Upload message may carry metadata"
                                : "every Upload message after the first must carry a chunk"));
      }
      return AddChunk(msg.chunk());
  }
  return Fail(grpc::Status(grpc::StatusCode::INTERNAL, "upload state"));
}

grpc::Status UploadAssembler::AddMetadata(const v1::UploadMetadata& m) {
  metadata_ = m;
  grpc::Status s = ValidateLabels(m.labels(), "metadata.labels");
  if (s.ok()) s = ValidateOptions(m.options());
  if (s.ok() && !m.sha256().empty() && !service::IsSha256Hex(m.sha256())) {
    s = Invalid("metadata.sha256 must be 64 lowercase hex characters");
  }
  if (!s.ok()) return Fail(s);
  if (m.size_bytes() > max_model_bytes_) return Fail(TooBig(m.size_bytes()));
  declared_size_ = m.size_bytes();
  if (declared_size_ > 0) {
    try {
      ReserveUpTo(declared_size_);
    } catch (const SourceError& e) {
      return Fail(e.status());
    }
    data_.reserve(declared_size_);
  }
  state_ = State::kReceiving;
  return grpc::Status::OK;
}

grpc::Status UploadAssembler::AddChunk(const std::string& chunk) {
  const std::uint64_t total = data_.size() + chunk.size();
  if (total > max_model_bytes_) return Fail(TooBig(total));
  if (declared_size_ > 0 && total > declared_size_) {
    return Fail(Invalid("received more bytes than the declared size_bytes " +
                        std::to_string(declared_size_)));
  }
  try {
    ReserveUpTo(total);
  } catch (const SourceError& e) {
    return Fail(e.status());
  }
  hasher_.Update(chunk);
  data_.append(chunk);
  return grpc::Status::OK;
}

grpc::Status UploadAssembler::Finish(LoadedModel* model) {
  switch (state_) {
    case State::kDone:
      return Invalid("the upload has already ended");
    case State::kExpectMetadata:
      return Fail(Invalid("empty Upload stream: metadata and model bytes expected"));
    case State::kReceiving:
      break;
  }
  if (declared_size_ > 0 && data_.size() != declared_size_) {
    return Fail(Invalid("received " + std::to_string(data_.size()) +
                        " bytes, declared size_bytes " + std::to_string(declared_size_)));
  }
  const std::string sha256 = hasher_.HexDigest();
  if (!metadata_.sha256().empty() && metadata_.sha256() != sha256) {
    return Fail(Invalid("sha256 mismatch: declared " + metadata_.sha256() +
                        ", received bytes hash to " + sha256));
  }
  state_ = State::kDone;
  model->sha256 = sha256;
  model->bytes = AccountedBytes(std::move(data_), std::move(model_reservation_));
  data_ = std::string();
  upload_reservation_.Reset();
  return grpc::Status::OK;
}

void UploadAssembler::Abort() {
  state_ = State::kDone;
  data_ = std::string();  // gives the capacity back too
  model_reservation_.Reset();
  upload_reservation_.Reset();
}

grpc::Status UploadAssembler::Fail(grpc::Status status) {
  Abort();
  return status;
}

grpc::Status UploadAssembler::TooBig(std::uint64_t size) const {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "model is " + std::to_string(size) + " bytes or more, over the limit of " +
                          std::to_string(max_model_bytes_));
}

void UploadAssembler::ReserveUpTo(std::uint64_t total) {
  // The upload budget first: it is the smaller one, and its message names uploads.
  if (total > upload_reservation_.bytes())
    upload_reservation_.Grow(total - upload_reservation_.bytes());
  if (total > model_reservation_.bytes())
    model_reservation_.Grow(total - model_reservation_.bytes());
}

}  // namespace axqc::server
