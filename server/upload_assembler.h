// The Upload stream as a state machine without gRPC: metadata first, then chunks, then the
// client's half-close. Enforces the order of messages, the metadata's validity, the per-model size
// limit, the declared size and sha256, and charges the received bytes to two byte budgets: the
// model bytes of all requests (--max-inflight-bytes) and the bytes of uploads still being received
// (--max-inflight-upload-bytes). A declared size is reserved in full when the metadata arrives, so
// an upload that cannot fit is refused before its bytes are sent.
//
// The service's Upload reactor feeds it; the fuzz target tests/fuzz/fuzz_upload.cc drives it with
// arbitrary message sequences.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <string>

#include "axqc/v1/axqc.pb.h"
#include "model_source.h"
#include "sha256.h"

namespace axqc::server {

class UploadAssembler {
 public:
  // Either budget may be null (not charged).
  UploadAssembler(std::uint64_t max_model_bytes, ByteBudget* model_budget,
                  ByteBudget* upload_budget);

  // One message of the stream. OK: the upload goes on. Any other status ends the upload: the
  // buffer and both reservations are released, and later calls return an error.
  grpc::Status Add(const v1::UploadRequest& msg);
  // The client half-closed the stream. On OK, `model` holds the bytes and their sha256; they stay
  // charged to the model budget until the last reference to `model->bytes` goes away, and the
  // upload budget is released. Otherwise as Add.
  grpc::Status Finish(LoadedModel* model);
  // Releases the buffer and both reservations (cancellation, timeout). Idempotent.
  void Abort();

  // True once a message has been accepted or refused.
  bool started() const { return state_ != State::kExpectMetadata; }
  // Bytes of model received so far.
  std::uint64_t received() const { return data_.size(); }
  // Bytes charged to the upload budget right now.
  std::uint64_t reserved() const { return upload_reservation_.bytes(); }
  const v1::UploadMetadata& metadata() const { return metadata_; }

 private:
  enum class State { kExpectMetadata, kReceiving, kDone };
  grpc::Status AddMetadata(const v1::UploadMetadata& m);
  grpc::Status AddChunk(const std::string& chunk);
  grpc::Status Fail(grpc::Status status);
  grpc::Status TooBig(std::uint64_t size) const;
  // Makes both reservations cover `total` bytes.
  void ReserveUpTo(std::uint64_t total);

  const std::uint64_t max_model_bytes_;
  State state_ = State::kExpectMetadata;
  v1::UploadMetadata metadata_;
  std::uint64_t declared_size_ = 0;
  std::string data_;
  service::Sha256 hasher_;
  Reservation model_reservation_;
  Reservation upload_reservation_;
};

}  // namespace axqc::server
