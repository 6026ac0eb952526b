// Upload: one model streamed by the client (metadata, then chunks). Reads are serialised by gRPC;
// OnCancel may run concurrently and only touches the thread-safe call state.
//
// A raw method: each message arrives as the byte buffer gRPC received. A model or data chunk in
// its plain encoding (upload_frame.h) goes to the assembler as views into gRPC's slices, which
// the assembler's hashing thread holds until it has hashed and stored them: no copy of the bytes
// into a protobuf string. Every other message is parsed as an axqc.v1.UploadRequest.
#include <grpcpp/impl/codegen/proto_utils.h>

#include <boost/asio/post.hpp>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "axqc/sha256.h"
#include "axqc/wire/report_proto.h"
#include "request_validation.h"
#include "rpc/check_pipeline.h"
#include "rpc/handlers.h"
#include "rpc/upload_stream.h"
#include "upload_assembler.h"
#include "upload_frame.h"

namespace axqc::server {

namespace {

class UploadReactor final : public AdmittedReadReactor<grpc::ByteBuffer> {
 public:
  UploadReactor(ServiceContext& s, grpc::CallbackServerContext* ctx,
                std::shared_ptr<CheckCall> call)
      : s_(s),
        ctx_(ctx),
        call_(std::move(call)),
        assembler_(s.deps.config->max_model_bytes, s.deps.budget, &s.upload_budget) {
    assembler_.AllowDataFiles(s.deps.config->max_external_data_bytes, s.deps.config->data_file_dir);
    s_.deps.metrics->uploads_in_flight().Increment();
  }
  ~UploadReactor() override { EndReceiving(); }

  void Begin() override {
    const auto seconds = std::chrono::duration<double>(s_.upload_watchdog.timeout());
    idle_ = s_.upload_watchdog.Watch([call = call_, seconds]() {
      std::ostringstream text;
      text << "no Upload message for " << seconds.count()
           << " s (the server's upload idle timeout); upload abandoned";
      call->Finish(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, text.str()));
    });
    StartRead(&buffer_);
  }

  void OnReadDone(bool ok) override {
    if (call_->finished() || call_->cancelled.load()) {  // stop reading
      EndReceiving();
      return;
    }
    if (!ok) {
      // A failed read is either the client's half-close or a cancellation (then OnCancel
      // finishes the call).
      if (ctx_->IsCancelled()) {
        EndReceiving();
      } else {
        EndOfStream();
      }
      return;
    }
    IdleWatchdog::Touch(idle_);
    const grpc::Status st = Receive();
    buffer_.Clear();
    if (!st.ok()) {
      EndReceiving();
      call_->Finish(st);
      return;
    }
    // Never start a read after Finish: the finisher takes the same lock (the mutex lives in the
    // call state, which outlives the reactor).
    std::lock_guard<std::mutex> lock(call_->stream_mu);
    if (!call_->finished()) StartRead(&buffer_);
  }

  void OnCancel() override { call_->OnCancelled(); }
  void OnDone() override { delete this; }

 private:
  // The message in buffer_: a chunk read in place, or any message parsed.
  grpc::Status Receive() {
    auto slices = std::make_shared<std::vector<grpc::Slice>>();
    if (assembler_.started() && !assembler_.ended() && buffer_.Dump(slices.get()).ok()) {
      std::vector<std::string_view> views;
      views.reserve(slices->size());
      for (const grpc::Slice& s : *slices) {
        views.emplace_back(reinterpret_cast<const char*>(s.begin()), s.size());
      }
      UploadFrame frame = ReadUploadFrame(views);
      if (frame.kind == UploadFrame::Kind::kChunk) {
        s_.deps.metrics->AddUploadBytes(static_cast<double>(frame.size));
        if (grpc::Status st = CheckChunkSize(frame.size); !st.ok()) return st;
        return GrpcStatusOf(assembler_.AddChunkPieces(std::move(frame.data), std::move(slices)));
      }
      if (frame.kind == UploadFrame::Kind::kDataChunk) {
        s_.deps.metrics->AddUploadBytes(static_cast<double>(frame.size));
        for (const std::string_view piece : frame.data) {
          if (UploadStatus st = assembler_.AddDataBytes(frame.file, piece); !st.ok()) {
            return GrpcStatusOf(st);
          }
        }
        return grpc::Status::OK;
      }
    }
    if (!grpc::SerializationTraits<v1::UploadRequest>::Deserialize(&buffer_, &msg_).ok()) {
      return {grpc::StatusCode::INVALID_ARGUMENT,
              "an Upload message is not a valid axqc.v1.UploadRequest"};
    }
    const bool metadata = !assembler_.started() && msg_.part_case() == v1::UploadRequest::kMetadata;
    if (metadata) OnMetadata(msg_.metadata());
    if (msg_.part_case() == v1::UploadRequest::kChunk) {
      s_.deps.metrics->AddUploadBytes(static_cast<double>(msg_.chunk().size()));
      if (grpc::Status st = CheckChunkSize(msg_.chunk().size()); !st.ok()) return st;
    }
    if (msg_.part_case() == v1::UploadRequest::kDataChunk) {
      s_.deps.metrics->AddUploadBytes(static_cast<double>(msg_.data_chunk().data().size()));
    }
    if (UploadStatus st = TakeUploadMessage(assembler_, &msg_); !st.ok()) return GrpcStatusOf(st);
    if (metadata) HashOnlyWhenCached();
    return grpc::Status::OK;
  }

  grpc::Status CheckChunkSize(std::size_t size) const {
    const std::uint64_t limit = MessageLimit(*s_.deps.config);
    if (size <= limit) return grpc::Status::OK;
    return OverSizeLimitStatus("Upload chunk of " + std::to_string(size) +
                               " bytes is over the server's limit of " + std::to_string(limit) +
                               " bytes per message; send the model in chunks of 64 KiB to 1 MiB");
  }

  void OnMetadata(const v1::UploadMetadata& m) {
    call_->Update([&](CallBase::Fields& f) {
      f.source = "upload";
      f.name = m.file_name().empty() ? "upload.onnx" : m.file_name();
      f.labels = std::map<std::string, std::string>(m.labels().begin(), m.labels().end());
      f.options = m.options();
      f.size_bytes = m.size_bytes();
    });
    // The declared sha256 names the model before its bytes arrive: lookups of it wait for this
    // upload, and other servers sharing the store see this server's claim (it takes over the
    // reservation a hash-first lookup made for this upload, on whichever server).
    if (axqc::IsSha256Hex(m.sha256()) && ValidateOptions(m.options()).ok()) {
      const std::string key = wire::CacheKey(m.sha256(), m.options());
      call_->HoldKey(key);
      boost::asio::post(*s_.deps.io, [store = s_.deps.store, metrics = s_.deps.metrics, key] {
        try {
          (void)store->TryClaim(key);
        } catch (const StoreError&) {
          metrics->CountStoreError();  // the check itself claims again (and reports the error)
        }
      });
    }
  }

  // A declared sha256 whose report (with these options) is in the memory cache: the bytes only
  // prove the declaration (hashed, never stored); CheckModel answers from the cache.
  void HashOnlyWhenCached() {
    const v1::UploadMetadata& m = assembler_.metadata();
    if (!axqc::IsSha256Hex(m.sha256()) || m.data_files_size() > 0 ||
        !ValidateOptions(m.options()).ok()) {
      return;
    }
    if (s_.deps.reports->GetMemory(wire::CacheKey(m.sha256(), m.options())) == nullptr) return;
    (void)assembler_.HashOnly();
  }

  // The stream is over (half-close, failure, cancellation, timeout): stop the idle timer, free
  // what was received, count the upload out. Idempotent.
  void EndReceiving() {
    if (receiving_done_) return;
    receiving_done_ = true;
    s_.upload_watchdog.Unwatch(idle_);
    idle_.reset();
    assembler_.Abort();
    s_.deps.metrics->uploads_in_flight().Decrement();
  }

  void EndOfStream() {
    s_.upload_watchdog.Unwatch(idle_);
    SourcedModel model;
    const grpc::Status st = GrpcStatusOf(assembler_.Finish(&model));
    call_->Update([&](CallBase::Fields& f) {
      if (!model.sha256.empty()) f.sha256 = model.sha256;
      f.size_bytes = model.bytes != nullptr ? model.bytes->size() : assembler_.received();
    });
    EndReceiving();
    if (!st.ok()) {
      call_->Finish(st);
      return;
    }
    boost::asio::post(*s_.deps.io, [&s = s_, call = call_, model = std::move(model)]() mutable {
      CheckModel(s, call, std::move(model));
    });
  }

  ServiceContext& s_;
  grpc::CallbackServerContext* ctx_;
  std::shared_ptr<CheckCall> call_;
  grpc::ByteBuffer buffer_;
  v1::UploadRequest msg_;  // a message that is not a plain chunk
  UploadAssembler assembler_;
  IdleWatchdog::Handle idle_;
  bool receiving_done_ = false;
};

}  // namespace

AdmittedReadReactor<grpc::ByteBuffer>* UploadRpc::NewReactor(ServiceContext& s,
                                                             grpc::CallbackServerContext* ctx,
                                                             std::shared_ptr<Call<Response>> call) {
  return new UploadReactor(s, ctx, std::move(call));
}

}  // namespace axqc::server
