// Upload: one model streamed by the client (metadata, then chunks). Reads are serialised by gRPC;
// OnCancel may run concurrently and only touches the thread-safe call state.
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

namespace axqc::server {

namespace {

class UploadReactor final : public AdmittedReadReactor<v1::UploadRequest> {
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
    StartRead(&msg_);
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
    const bool metadata = !assembler_.started() && msg_.part_case() == v1::UploadRequest::kMetadata;
    if (metadata) OnMetadata(msg_.metadata());
    if (msg_.part_case() == v1::UploadRequest::kChunk) {
      s_.deps.metrics->AddUploadBytes(static_cast<double>(msg_.chunk().size()));
      const std::uint64_t limit = MessageLimit(*s_.deps.config);
      if (msg_.chunk().size() > limit) {
        EndReceiving();
        call_->Finish(
            OverSizeLimitStatus("Upload chunk of " + std::to_string(msg_.chunk().size()) +
                                " bytes is over the server's limit of " + std::to_string(limit) +
                                " bytes per message; send the model in chunks of 64 KiB to 1 MiB"));
        return;
      }
    }
    if (msg_.part_case() == v1::UploadRequest::kDataChunk) {
      s_.deps.metrics->AddUploadBytes(static_cast<double>(msg_.data_chunk().data().size()));
    }
    if (UploadStatus st = TakeUploadMessage(assembler_, &msg_); !st.ok()) {
      EndReceiving();
      call_->Finish(GrpcStatusOf(st));
      return;
    }
    if (metadata) HashOnlyWhenCached();
    // Never start a read after Finish: the finisher takes the same lock (the mutex lives in the
    // call state, which outlives the reactor).
    std::lock_guard<std::mutex> lock(call_->stream_mu);
    if (!call_->finished()) StartRead(&msg_);
  }

  void OnCancel() override { call_->OnCancelled(); }
  void OnDone() override { delete this; }

 private:
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
  v1::UploadRequest msg_;
  UploadAssembler assembler_;
  IdleWatchdog::Handle idle_;
  bool receiving_done_ = false;
};

}  // namespace

AdmittedReadReactor<v1::UploadRequest>* UploadRpc::NewReactor(
    ServiceContext& s, grpc::CallbackServerContext* ctx, std::shared_ptr<Call<Response>> call) {
  return new UploadReactor(s, ctx, std::move(call));
}

}  // namespace axqc::server
