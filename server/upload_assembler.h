// The Upload stream as a state machine without gRPC: metadata first, then chunks, then the
// client's half-close. Enforces the order of messages, the metadata's validity, the per-model size
// limit, the declared size and sha256, and charges the received bytes to two byte budgets: the
// model bytes of all requests (--max-inflight-bytes) and the bytes of uploads still being received
// (--max-inflight-upload-bytes). Only bytes that arrived are charged: a declared size is a claim
// of the client and holds nothing (two idle streams declaring 1 GiB each would otherwise hold the
// whole upload budget and refuse every other upload). An upload whose declared size does not fit
// in what both budgets have free when its metadata arrives is refused before its bytes are sent.

//
// The bytes go into a model buffer (isolate/model_buffer.h: a memfd, later handed to a worker
// process as it is). Small uploads are hashed and written on the caller's thread; from
// kPipelineBytes on, each chunk (its string, or its pieces in gRPC's slices) is handed to two
// threads of the upload, one hashing the chunks in order and one writing them into the buffer,
// while the caller receives the next chunk (the transport thread then only moves chunks; no byte
// is copied on it).
//
// It takes the metadata (a v1::UploadMetadata) and bytes: the front doors adapt to it. The
// Upload RPC's messages go through rpc/upload_stream.h (which also maps a refusal to its gRPC
// status); the HTTP body sink (http/check.cc) hands it the body's bytes as they arrive, or the
// members of a tar stream. A refusal carries its kind (UploadError): the HTTP status (413 for a
// size limit, 429 for a busy server) is chosen from it. The fuzz target tests/fuzz/fuzz_upload.cc
// drives it with arbitrary message sequences.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/sha256.h"
#include "axqc/v1/axqc.pb.h"
#include "model_source.h"

namespace axqc::server {

// Why the assembler refused. Every refusal ends the upload.
enum class UploadError {
  kNone,
  // The order of the calls, the metadata, or bytes that do not match what was declared (sizes,
  // sha256): INVALID_ARGUMENT, HTTP 400.
  kInvalid,
  // Over a size limit of the server (max-model-bytes, max-external-data-bytes): the same upload
  // will never fit. RESOURCE_EXHAUSTED, HTTP 413.
  kTooLarge,
  // The in-flight byte budgets have no room now (max-inflight-bytes, max-inflight-upload-bytes):
  // RESOURCE_EXHAUSTED, HTTP 429.
  kBusy,
  // External data files on a server that takes none (max-external-data-bytes 0):
  // RESOURCE_EXHAUSTED, HTTP 429.
  kNoDataFiles,
  // The bytes could not be stored (the model buffer or a data file could not grow):
  // RESOURCE_EXHAUSTED, HTTP 429.
  kStorage,
  // INTERNAL, HTTP 500.
  kInternal,
};

// The outcome of one call: ok, or the refusal's kind and message.
struct UploadStatus {
  UploadError kind = UploadError::kNone;
  std::string message;

  bool ok() const { return kind == UploadError::kNone; }
  static UploadStatus Ok() { return {}; }
};

// The HTTP status of a refusal (0 for kNone).
unsigned HttpStatusOf(UploadError kind);

class UploadAssembler {
 public:
  // Either budget may be null (not charged).
  UploadAssembler(std::uint64_t max_model_bytes, ByteBudget* model_budget,
                  ByteBudget* upload_budget);

  ~UploadAssembler();
  UploadAssembler(const UploadAssembler&) = delete;
  UploadAssembler& operator=(const UploadAssembler&) = delete;

  // Accepts external data files (UploadMetadata.data_files): at most `max_bytes` all together,
  // written to unlinked files in `dir` (empty: $TMPDIR or /tmp). Without this call (or with 0)
  // an upload listing data files is refused. Call before the first message.
  void AllowDataFiles(std::uint64_t max_bytes, std::string dir);

  // The upload's metadata, before any bytes: validated (labels, options, name, sha256, sizes, data
  // files) and checked against the size limit and the budgets' room.
  UploadStatus Begin(const v1::UploadMetadata& metadata);

  // The next bytes of the model (as an UploadRequest.chunk).
  UploadStatus AddChunk(std::string_view bytes);
  // The same, but may take the string instead of copying it (leaving an empty string, often one
  // with capacity from an earlier chunk, in its place).
  UploadStatus AddChunk(std::string* bytes);
  // The same for one chunk given as pieces (in order) of memory that `keep` holds: the slices an
  // Upload message arrived in (rpc/upload.cc). The pieces are hashed and stored where they lie,
  // on the threads of a large upload, which hold `keep` until they are done with them.
  UploadStatus AddChunkPieces(std::vector<std::string_view> pieces,
                              std::shared_ptr<const void> keep);

  // Hash the model's bytes without keeping them: for an upload whose declared sha256 names a model
  // whose report is already cached, so that its bytes are only hashed (to prove the declaration)
  // and never written. Only right after Begin (no bytes yet), with a declared sha256 and no data
  // files; false otherwise (nothing changes). The bytes are then charged to no budget (none is
  // held beyond the chunk being hashed), and Finish gives the sha256 with `model->bytes` null.
  bool HashOnly();
  bool hash_only() const { return hash_only_; }

  // A data file announced after the metadata, with its size but no declared sha256 (the HTTP tar
  // upload learns the files from the archive as it arrives): as a UploadMetadata.data_files entry
  // (same name, count and size limits). On OK `*index` is the file's index for AddDataBytes.
  UploadStatus BeginDataFile(std::string_view name, std::uint64_t size, std::uint32_t* index);
  // The next bytes of data file `index` (as an UploadRequest.data_chunk).
  UploadStatus AddDataBytes(std::uint32_t index, std::string_view bytes);
  // Each call above: OK, the upload goes on. A refusal ends the upload: the buffer and both
  // reservations are released, and later calls are refused (kInvalid).

  // Most byte ranges of a ranged upload (UploadMetadata.ranged_data), over all its data files.
  static constexpr std::size_t kMaxRanges = 65536;

  // Uploads of at least this many bytes (declared, or received so far) are hashed on their own
  // thread.
  static constexpr std::uint64_t kPipelineBytes = 4ull << 20;

  // All bytes have arrived (the client half-closed the stream, the HTTP body ended). On OK,
  // `model` holds the bytes and their sha256; they stay charged to the model budget until the last
  // reference to `model->bytes` goes away, and the upload budget is released (after HashOnly:
  // only the sha256, `model->bytes` null). Otherwise as above.
  UploadStatus Finish(SourcedModel* model);
  // Releases the buffer and both reservations (cancellation, timeout). Idempotent.
  void Abort();

  // True once a call has been accepted or refused.
  bool started() const { return state_ != State::kExpectMetadata; }
  // True once the upload has ended (finished, refused or aborted).
  bool ended() const { return state_ == State::kDone; }
  // Bytes of model received so far.
  std::uint64_t received() const { return received_; }
  // True when this upload's chunks are hashed (and written) on threads of their own (tests).
  bool pipelined() const { return pipeline_ != nullptr; }
  // Bytes charged to the upload budget right now.
  std::uint64_t reserved() const { return upload_reservation_.bytes(); }
  const v1::UploadMetadata& metadata() const { return metadata_; }

 private:
  enum class State { kExpectMetadata, kReceiving, kDone };
  class Pipeline;
  // `owned`: the chunk's string when it may be taken (null: `chunk` is copied).
  UploadStatus AddModelBytes(std::string_view chunk, std::string* owned);
  // The checks and accounting of `size` more model bytes (order, limits, budgets); starts the
  // hashing and writing threads when the upload becomes large.
  UploadStatus TakeModelBytes(std::uint64_t size);
  // Hashes and stores bytes on the calling thread (no threads of its own yet).
  UploadStatus HashAndStore(std::string_view bytes);
  UploadStatus AddDataChunk(std::uint32_t file, std::string_view bytes);
  UploadStatus OpenDataFiles(const v1::UploadMetadata& m);
  // Checks one more data file against the limits; `field` names it in messages.
  UploadStatus CheckDataFile(const std::string& field, std::string_view name, std::uint64_t size,
                             std::uint64_t total_before, std::string* normalized) const;
  UploadStatus NewDataFile(std::string name, std::uint64_t size, std::string sha256);
  UploadStatus FinishDataFiles(SourcedModel* model);
  UploadStatus Fail(UploadStatus status);
  UploadStatus TooBig(std::uint64_t size) const;
  // Makes both reservations cover `total` bytes.
  void ReserveUpTo(std::uint64_t total);
  // kBusy when `size` more bytes do not fit in what a budget has free now.
  UploadStatus CheckRoom(std::uint64_t size) const;

  const std::uint64_t max_model_bytes_;
  // External data files: each an unlinked file being written (write_fd) and its read-only twin.
  struct DataFile {
    std::string name;
    std::uint64_t declared = 0;
    std::uint64_t received = 0;
    std::string sha256;  // declared; empty: not declared (BeginDataFile) or ranged
    // Ranged uploads: the ranges sent (their bytes arrive concatenated in order), and the bytes
    // expected in all (the sum of their lengths; `declared` otherwise).
    bool ranged = false;
    std::vector<ExternalRange> ranges;
    std::uint64_t expected = 0;
    int write_fd = -1;
    int read_fd = -1;
    std::unique_ptr<Sha256> hasher;
  };
  std::uint64_t max_data_bytes_ = 0;
  std::string data_dir_;
  std::vector<DataFile> data_files_;
  void CloseDataFiles();
  // Writes `bytes` at `offset` of `f`; runs of zeros are not written (the file stays sparse).
  UploadStatus WriteData(DataFile& f, std::uint64_t offset, std::string_view bytes);

  State state_ = State::kExpectMetadata;
  v1::UploadMetadata metadata_;
  std::uint64_t declared_size_ = 0;
  std::uint64_t received_ = 0;
  bool hash_only_ = false;
  std::optional<isolate::ModelBuffer> buffer_;  // none after HashOnly  // from the metadata on
  Sha256 hasher_;                               // until the pipeline starts
  std::unique_ptr<Pipeline> pipeline_;
  ByteBudget* model_budget_;
  ByteBudget* upload_budget_;
  Reservation model_reservation_;
  Reservation upload_reservation_;
};

}  // namespace axqc::server
