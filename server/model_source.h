// Getting model bytes: files under allowed roots, allowlisted URLs, and a global budget of model
// bytes held in memory.
#pragma once

#include <grpcpp/support/status.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "data_files.h"
#include "metrics.h"
#include "model_buffer.h"
#include "request_validation.h"

namespace axqc::server {

// A failure with the gRPC status code to return.
class SourceError : public std::runtime_error {
 public:
  // kTooLarge: over a size limit of the server (max-model-bytes, max-external-data-bytes), as
  // opposed to a busy server or a failed transfer.
  enum class Kind { kOther, kTooLarge };

  SourceError(grpc::StatusCode code, const std::string& message, Kind kind = Kind::kOther)
      : std::runtime_error(message), code_(code), kind_(kind) {}
  grpc::StatusCode code() const { return code_; }
  // Marked as over a size limit for kTooLarge (request_validation.h).
  grpc::Status status() const {
    return kind_ == Kind::kTooLarge ? OverSizeLimitStatus(what()) : grpc::Status(code_, what());
  }
  Kind kind() const { return kind_; }
  bool too_large() const { return kind_ == Kind::kTooLarge; }

 private:
  grpc::StatusCode code_;
  Kind kind_;
};

// A bound on bytes held in memory, exported as a gauge: the model bytes of all requests together
// (--max-inflight-bytes, gauge axqc_inflight_model_bytes), and the bytes of uploads still being
// received (--max-inflight-upload-bytes, gauge axqc_inflight_upload_bytes).
class ByteBudget {
 public:
  // `gauge` may be null. `exhausted` is the message of the RESOURCE_EXHAUSTED error of
  // Reservation::Grow.
  ByteBudget(std::uint64_t limit, prometheus::Gauge* gauge,
             std::string exhausted = "the server holds too many model bytes right now; retry later")
      : limit_(limit), gauge_(gauge), exhausted_(std::move(exhausted)) {}
  // The model-bytes budget with the gauge axqc_inflight_model_bytes.
  ByteBudget(std::uint64_t limit, Metrics* metrics)
      : ByteBudget(limit, metrics != nullptr ? &metrics->inflight_bytes() : nullptr) {}
  // False when `n` more bytes would exceed the limit.
  bool TryReserve(std::uint64_t n);
  // Whether `n` more bytes would fit now (nothing is reserved).
  bool Fits(std::uint64_t n) const {
    const std::uint64_t cur = used_.load();
    return n <= limit_ && cur <= limit_ - n;
  }
  void Release(std::uint64_t n);
  std::uint64_t used() const { return used_.load(); }
  std::uint64_t limit() const { return limit_; }
  const std::string& exhausted_message() const { return exhausted_; }

 private:
  const std::uint64_t limit_;
  prometheus::Gauge* gauge_;
  const std::string exhausted_;
  std::atomic<std::uint64_t> used_{0};
};

// Owns `n` reserved bytes of a budget until released or moved into AccountedBytes.
class Reservation {
 public:
  Reservation() = default;
  explicit Reservation(ByteBudget* budget) : budget_(budget) {}
  ~Reservation() { Reset(); }
  Reservation(Reservation&& o) noexcept : budget_(o.budget_), bytes_(o.bytes_) { o.bytes_ = 0; }
  Reservation& operator=(Reservation&& o) noexcept;
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  // Throws SourceError(RESOURCE_EXHAUSTED) when the budget is exhausted.
  void Grow(std::uint64_t n);
  void Reset();
  std::uint64_t bytes() const { return bytes_; }

 private:
  ByteBudget* budget_ = nullptr;
  std::uint64_t bytes_ = 0;
};

// A sealed model buffer whose reservation is released when the last reference goes away.
std::shared_ptr<const isolate::ModelBuffer> AccountedBytes(isolate::ModelBuffer&& buffer,
                                                           Reservation&& reservation);

// A model as a source delivered it (a path under the roots, a URL, an upload): its sealed bytes,
// their hashes and its data files, not parsed yet (the checker parses it into its own
// detail::LoadedModel, core/src/loader.h).
struct SourcedModel {
  std::shared_ptr<const isolate::ModelBuffer> bytes;  // sealed
  // Computed by this server from the bytes, never taken from a client. With data files: the
  // bundle hash of the graph file and the data files (DataFileSet::BundleSha256).
  std::string sha256;
  // The external data files the model's tensors name, or null (a model without external data).
  std::shared_ptr<const isolate::DataFileSet> data;
  std::string graph_sha256;  // with data files: the sha256 of the graph file alone
};

// Path references: a request path is accepted only when it lies inside one of the allowed roots
// both lexically (no ".." component) and after resolving symbolic links; the file is then opened
// component by component with O_NOFOLLOW from the root, so a symlink swapped in after the check is
// refused too. Only regular files are read.
class PathResolver {
 public:
  // Throws std::runtime_error when a root does not exist or is not a directory.
  explicit PathResolver(const std::vector<std::string>& roots);
  bool enabled() const { return !roots_.empty(); }
  // Throws SourceError: INVALID_ARGUMENT (empty, NUL, not a regular file), PERMISSION_DENIED
  // (outside the roots, "..", symlink escape, path references disabled), NOT_FOUND,
  // RESOURCE_EXHAUSTED (larger than max_bytes or over the byte budget).
  // A model whose tensors name external data files gets them opened beside it (SourcedModel::data)
  // the same way (below the model's directory, no symbolic link, regular files only), together at
  // most `max_data_bytes`; NOT_FOUND for a missing one.
  SourcedModel Load(const std::string& request_path, std::uint64_t max_bytes, ByteBudget& budget,
                    std::uint64_t max_data_bytes = 0) const;

 private:
  struct Root {
    std::filesystem::path configured;  // absolute, lexically normal
    std::filesystem::path canonical;
  };
  std::vector<Root> roots_;
};

// Opens the data files `locations` (ExternalDataLocations of a model) below the directory
// `model_dir` (a descriptor) without following symbolic links, and hashes them. Locations the
// checker refuses are skipped (the check reports them). Throws SourceError.
std::shared_ptr<const isolate::DataFileSet> OpenDataFiles(int model_dir,
                                                          const std::vector<std::string>& locations,
                                                          std::uint64_t max_data_bytes,
                                                          const std::string& shown_model);

// True when `path` equals `root` or lies below it, comparing whole components.
bool IsWithin(const std::filesystem::path& path, const std::filesystem::path& root);

}  // namespace axqc::server
