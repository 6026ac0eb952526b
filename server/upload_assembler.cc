#include "upload_assembler.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "axqc/external_data.h"
#include "external_reads.h"
#include "protocol.h"
#include "request_validation.h"

namespace axqc::server {

// The threads of one large upload: one hashes the chunks in order, the other appends them to the
// model buffer, side by side on the same queued chunk (both only read it); a chunk leaves the
// queue when both are done with it, and its emptied string goes back for the next chunks (so
// that the transport parses into warm memory instead of fresh pages). A hash-only upload has no
// writer.
class UploadAssembler::Pipeline {
 public:
  // `buffer` null: hash only. At most this many bytes wait for the threads; Push blocks beyond
  // (back-pressure).
  static constexpr std::size_t kMaxQueuedBytes = 4u << 20;
  static constexpr std::size_t kMaxFree = 4;

  Pipeline(Sha256 hasher, isolate::ModelBuffer* buffer)
      : hasher_(std::move(hasher)), buffer_(buffer) {
    hash_thread_ = std::thread([this] { Run(kHash); });
    if (buffer_ != nullptr) write_thread_ = std::thread([this] { Run(kWrite); });
  }
  ~Pipeline() { Stop(); }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // A chunk: a string taken from the transport, or views into memory that `keep` holds (the
  // slices gRPC received it in).
  struct Chunk {
    std::string owned;
    std::vector<std::string_view> views;
    std::shared_ptr<const void> keep;
    std::size_t size = 0;
  };

  // Queues a chunk. False when writing the buffer failed (error()).
  bool Push(std::string&& chunk) {
    Chunk c;
    c.size = chunk.size();
    c.owned = std::move(chunk);
    return Push(std::move(c));
  }
  bool Push(Chunk&& chunk) {
    std::unique_lock<std::mutex> lock(mu_);
    space_cv_.wait(lock, [&] {
      return failed_ || queue_.empty() || queued_bytes_ + chunk.size <= kMaxQueuedBytes;
    });
    if (failed_) return false;
    queued_bytes_ += chunk.size;
    queue_.push_back(std::move(chunk));
    work_cv_.notify_all();
    return true;
  }

  // An empty string, with the capacity of an earlier chunk when one is free.
  std::string Recycled() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return {};
    std::string s = std::move(free_.back());
    free_.pop_back();
    return s;
  }

  // Waits for every queued chunk; the digest, or nullopt when writing failed (error()).
  std::optional<std::string> Finish() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      finishing_ = true;
      work_cv_.notify_all();
    }
    Join();
    if (failed_) return std::nullopt;
    return hasher_.HexDigest();
  }

  // Drops what is queued and ends the threads. Idempotent.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      work_cv_.notify_all();
    }
    Join();
  }

  const std::string& error() const { return error_; }

 private:
  enum Worker { kHash = 0, kWrite = 1 };

  void Join() {
    if (hash_thread_.joinable()) hash_thread_.join();
    if (write_thread_.joinable()) write_thread_.join();
  }

  void Run(Worker w) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_cv_.wait(lock,
                    [&] { return stop_ || failed_ || finishing_ || next_[w] < queue_.size(); });
      if (stop_ || failed_) return;
      if (next_[w] == queue_.size()) return;  // finishing, and nothing is left
      // Stays in place until both workers are past it (Retire); push_back keeps references.
      const Chunk& chunk = queue_[next_[w]];
      lock.unlock();
      bool ok = true;
      std::string error;
      try {
        if (chunk.views.empty()) {
          Process(w, chunk.owned);
        }
        for (const std::string_view v : chunk.views) Process(w, v);
      } catch (const std::system_error& e) {
        ok = false;
        error = e.what();
      }
      lock.lock();
      ++next_[w];
      if (!ok) {
        failed_ = true;
        error_ = std::move(error);
        work_cv_.notify_all();
        space_cv_.notify_all();
        return;
      }
      Retire();
      space_cv_.notify_all();
    }
  }

  void Process(Worker w, std::string_view bytes) {
    if (w == kHash) {
      hasher_.Update(bytes);
    } else {
      buffer_->Append(bytes);
    }
  }

  // Drops the chunks every worker is done with (under mu_): the slices go back to gRPC, the
  // strings to free_.
  void Retire() {
    while (!queue_.empty() && next_[kHash] > 0 && (buffer_ == nullptr || next_[kWrite] > 0)) {
      Chunk& c = queue_.front();
      queued_bytes_ -= c.size;
      c.views.clear();
      c.keep.reset();
      c.owned.clear();
      if (free_.size() < kMaxFree && c.owned.capacity() > 0) free_.push_back(std::move(c.owned));
      queue_.pop_front();
      --next_[kHash];
      if (buffer_ != nullptr) --next_[kWrite];
    }
  }

  Sha256 hasher_;
  isolate::ModelBuffer* buffer_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable space_cv_;
  std::deque<Chunk> queue_;
  std::size_t next_[2] = {0, 0};  // per worker: its next chunk, counted from queue_.front()
  std::vector<std::string> free_;
  std::size_t queued_bytes_ = 0;
  bool finishing_ = false;
  bool stop_ = false;
  bool failed_ = false;
  std::string error_;
  std::thread hash_thread_;  // started in the constructor, after the members above exist
  std::thread write_thread_;
};

UploadAssembler::UploadAssembler(std::uint64_t max_model_bytes, ByteBudget* model_budget,
                                 ByteBudget* upload_budget)
    : max_model_bytes_(max_model_bytes),
      model_budget_(model_budget),
      upload_budget_(upload_budget),
      model_reservation_(model_budget),
      upload_reservation_(upload_budget) {}

UploadAssembler::~UploadAssembler() { Abort(); }

namespace {

UploadStatus Refused(UploadError kind, std::string message) { return {kind, std::move(message)}; }

UploadStatus InvalidUpload(std::string message) {
  return Refused(UploadError::kInvalid, std::move(message));
}

// A refusal of the validation layer (request_validation.h: INVALID_ARGUMENT).
UploadStatus FromValidation(const grpc::Status& s) {
  if (s.ok()) return UploadStatus::Ok();
  return InvalidUpload(s.error_message());
}

constexpr const char* kEnded = "the upload has already ended";

}  // namespace

unsigned HttpStatusOf(UploadError kind) {
  switch (kind) {
    case UploadError::kNone:
      return 0;
    case UploadError::kInvalid:
      return 400;
    case UploadError::kTooLarge:
      return 413;
    case UploadError::kBusy:
    case UploadError::kNoDataFiles:
    case UploadError::kStorage:
      return 429;
    case UploadError::kInternal:
      return 500;
  }
  return 500;
}

UploadStatus UploadAssembler::Begin(const v1::UploadMetadata& m) {
  switch (state_) {
    case State::kDone:
      return InvalidUpload(kEnded);
    case State::kReceiving:
      return Fail(InvalidUpload("the upload's metadata came twice"));
    case State::kExpectMetadata:
      break;
  }
  metadata_ = m;
  grpc::Status v = ValidateLabels(m.labels(), "metadata.labels");
  if (v.ok()) v = ValidateOptions(m.options());
  if (v.ok()) v = ValidateName(m.file_name(), "metadata.file_name", kMaxNameBytes);
  if (!v.ok()) return Fail(FromValidation(v));
  if (!m.sha256().empty() && !IsSha256Hex(m.sha256())) {
    return Fail(InvalidUpload("metadata.sha256 must be 64 lowercase hex characters"));
  }
  if (m.size_bytes() > max_model_bytes_) return Fail(TooBig(m.size_bytes()));
  declared_size_ = m.size_bytes();
  // Nothing is reserved for the declared size (the bytes are charged as they arrive), but an
  // upload that cannot fit now is refused before its bytes are sent.
  if (declared_size_ > 0) {
    if (UploadStatus room = CheckRoom(declared_size_); !room.ok()) return Fail(room);
  }
  if (UploadStatus data = OpenDataFiles(m); !data.ok()) return Fail(data);
  // The size hint sizes a heap buffer up front (when no memfd can be made): never more than a
  // pipeline's worth for a size nobody has sent yet.
  buffer_.emplace(isolate::ModelBuffer::Backing::kMemfd,
                  std::min<std::uint64_t>(declared_size_, kPipelineBytes));
  state_ = State::kReceiving;
  return UploadStatus::Ok();
}

bool UploadAssembler::HashOnly() {
  if (state_ != State::kReceiving || received_ != 0 || !data_files_.empty() ||
      metadata_.sha256().empty()) {
    return false;
  }
  hash_only_ = true;
  buffer_.reset();
  return true;
}

UploadStatus UploadAssembler::AddChunk(std::string_view bytes) {
  return AddModelBytes(bytes, nullptr);
}

UploadStatus UploadAssembler::AddChunk(std::string* bytes) { return AddModelBytes(*bytes, bytes); }

UploadStatus UploadAssembler::AddChunkPieces(std::vector<std::string_view> pieces,
                                             std::shared_ptr<const void> keep) {
  std::size_t size = 0;
  for (const std::string_view p : pieces) size += p.size();
  if (UploadStatus st = TakeModelBytes(size); !st.ok()) return st;
  if (pipeline_ == nullptr) {
    for (const std::string_view p : pieces) {
      if (UploadStatus st = HashAndStore(p); !st.ok()) return st;
    }
    return UploadStatus::Ok();
  }
  Pipeline::Chunk chunk;
  chunk.views = std::move(pieces);
  chunk.keep = std::move(keep);
  chunk.size = size;
  if (!pipeline_->Push(std::move(chunk))) {
    return Fail(Refused(UploadError::kStorage, pipeline_->error()));
  }
  return UploadStatus::Ok();
}

UploadStatus UploadAssembler::HashAndStore(std::string_view bytes) {
  hasher_.Update(bytes);
  if (!buffer_) return UploadStatus::Ok();
  try {
    buffer_->Append(bytes);
  } catch (const std::system_error& e) {
    return Fail(Refused(UploadError::kStorage, e.what()));
  }
  return UploadStatus::Ok();
}

UploadStatus UploadAssembler::TakeModelBytes(std::uint64_t size) {
  switch (state_) {
    case State::kDone:
      return InvalidUpload(kEnded);
    case State::kExpectMetadata:
      return Fail(InvalidUpload("model bytes before the upload's metadata"));
    case State::kReceiving:
      break;
  }
  const std::uint64_t total = received_ + size;
  if (total > max_model_bytes_) return Fail(TooBig(total));
  if (declared_size_ > 0 && total > declared_size_) {
    return Fail(InvalidUpload("received more bytes than the declared size_bytes " +
                              std::to_string(declared_size_)));
  }
  if (!hash_only_) {
    try {
      ReserveUpTo(total);
    } catch (const SourceError& e) {
      return Fail(Refused(UploadError::kBusy, e.what()));
    }
  }
  received_ = total;
  isolate::ModelBuffer* buffer = buffer_ ? &*buffer_ : nullptr;
  if (pipeline_ == nullptr && (declared_size_ >= kPipelineBytes || total >= kPipelineBytes)) {
    pipeline_ = std::make_unique<Pipeline>(std::move(hasher_), buffer);
  }
  return UploadStatus::Ok();
}

UploadStatus UploadAssembler::AddModelBytes(std::string_view chunk, std::string* owned) {
  if (UploadStatus st = TakeModelBytes(chunk.size()); !st.ok()) return st;
  if (pipeline_ == nullptr) return HashAndStore(chunk);
  std::string taken;
  if (owned != nullptr) {
    taken = pipeline_->Recycled();
    taken.swap(*owned);
  } else {
    taken = pipeline_->Recycled();
    taken.assign(chunk);
  }
  if (!pipeline_->Push(std::move(taken))) {
    return Fail(Refused(UploadError::kStorage, pipeline_->error()));
  }
  return UploadStatus::Ok();
}

UploadStatus UploadAssembler::Finish(SourcedModel* model) {
  switch (state_) {
    case State::kDone:
      return InvalidUpload(kEnded);
    case State::kExpectMetadata:
      return Fail(InvalidUpload("empty Upload stream: metadata and model bytes expected"));
    case State::kReceiving:
      break;
  }
  if (declared_size_ > 0 && received_ != declared_size_) {
    return Fail(InvalidUpload("received " + std::to_string(received_) +
                              " bytes, declared size_bytes " + std::to_string(declared_size_)));
  }
  std::string sha256;
  if (pipeline_ != nullptr) {
    std::optional<std::string> digest = pipeline_->Finish();
    if (!digest) return Fail(Refused(UploadError::kStorage, pipeline_->error()));
    sha256 = std::move(*digest);
    pipeline_.reset();
  } else {
    sha256 = hasher_.HexDigest();
  }
  if (!metadata_.sha256().empty() && metadata_.sha256() != sha256) {
    return Fail(InvalidUpload("sha256 mismatch: declared " + metadata_.sha256() +
                              ", received bytes hash to " + sha256));
  }
  model->sha256 = sha256;
  if (UploadStatus data = FinishDataFiles(model); !data.ok()) return Fail(data);
  state_ = State::kDone;
  if (hash_only_) return UploadStatus::Ok();
  try {
    model->bytes = AccountedBytes(std::move(*buffer_), std::move(model_reservation_));
  } catch (const std::system_error& e) {
    return Fail(Refused(UploadError::kInternal, e.what()));
  }
  buffer_.reset();
  upload_reservation_.Reset();
  return UploadStatus::Ok();
}

void UploadAssembler::Abort() {
  state_ = State::kDone;
  if (pipeline_ != nullptr) pipeline_->Stop();  // before the buffer it writes goes away
  pipeline_.reset();
  buffer_.reset();
  received_ = 0;
  CloseDataFiles();
  model_reservation_.Reset();
  upload_reservation_.Reset();
}

void UploadAssembler::AllowDataFiles(std::uint64_t max_bytes, std::string dir) {
  max_data_bytes_ = max_bytes;
  data_dir_ = std::move(dir);
}

void UploadAssembler::CloseDataFiles() {
  for (auto& f : data_files_) {
    if (f.write_fd >= 0) ::close(f.write_fd);
    if (f.read_fd >= 0) ::close(f.read_fd);
  }
  data_files_.clear();
}

UploadStatus UploadAssembler::CheckDataFile(const std::string& field, std::string_view name,
                                            std::uint64_t size, std::uint64_t total_before,
                                            std::string* normalized) const {
  if (max_data_bytes_ == 0) {
    return Refused(UploadError::kNoDataFiles,
                   "this server takes no external data files (max-external-data-bytes 0)");
  }
  if (std::string why = ExternalDataNameProblem(name); !why.empty()) {
    return InvalidUpload(field + " " + why);
  }
  *normalized = NormalizeExternalDataName(name);
  for (const auto& f : data_files_) {
    if (f.name == *normalized)
      return InvalidUpload(field + " '" + *normalized + "' is listed twice");
  }
  if (size > max_data_bytes_ || total_before > max_data_bytes_ - size) {
    return Refused(UploadError::kTooLarge, "the external data files are over the limit of " +
                                               std::to_string(max_data_bytes_) +
                                               " bytes all together (max-external-data-bytes)");
  }
  return UploadStatus::Ok();
}

UploadStatus UploadAssembler::NewDataFile(std::string name, std::uint64_t size,
                                          std::string sha256) {
  DataFile d;
  d.name = std::move(name);
  d.declared = size;
  d.sha256 = std::move(sha256);
  d.expected = size;
  d.hasher = std::make_unique<Sha256>();
  try {
    d.read_fd = isolate::TempDataFile(data_dir_, &d.write_fd);
  } catch (const std::system_error& e) {
    return Refused(UploadError::kInternal, e.what());
  }
  data_files_.push_back(std::move(d));
  return UploadStatus::Ok();
}

UploadStatus UploadAssembler::OpenDataFiles(const v1::UploadMetadata& m) {
  if (m.data_files_size() == 0) {
    if (m.ranged_data()) return InvalidUpload("metadata.ranged_data without metadata.data_files");
    return UploadStatus::Ok();
  }
  if (m.data_files_size() > static_cast<int>(isolate::kMaxDataFiles)) {
    return InvalidUpload("metadata.data_files lists " + std::to_string(m.data_files_size()) +
                         " files; at most " + std::to_string(isolate::kMaxDataFiles));
  }
  std::uint64_t total = 0;
  std::size_t range_count = 0;
  for (int i = 0; i < m.data_files_size(); ++i) {
    const auto& f = m.data_files(i);
    const std::string field = "metadata.data_files[" + std::to_string(i) + "]";
    std::string name;
    if (!m.ranged_data()) {
      if (UploadStatus s = CheckDataFile(field + ".name", f.name(), f.size_bytes(), total, &name);
          !s.ok()) {
        return s;
      }
      if (f.ranges_size() > 0) {
        return InvalidUpload(field + ".ranges is set, but metadata.ranged_data is not");
      }
      if (!IsSha256Hex(f.sha256())) {
        return InvalidUpload(field + ".sha256 must be 64 lowercase hex characters");
      }
      total += f.size_bytes();
      if (UploadStatus s = NewDataFile(std::move(name), f.size_bytes(), f.sha256()); !s.ok()) {
        return s;
      }
      continue;
    }
    // Ranged: the file's size is the model's claim (the file stays sparse); the bytes sent count
    // against the limit.
    if (!f.sha256().empty()) {
      return InvalidUpload(field +
                           ".sha256 must be empty in a ranged upload (the server hashes the " +
                           "bytes it receives)");
    }
    if (f.size_bytes() > static_cast<std::uint64_t>(INT64_MAX)) {
      return InvalidUpload(field + ".size_bytes " + std::to_string(f.size_bytes()) +
                           " is too large");
    }
    range_count += static_cast<std::size_t>(f.ranges_size());
    if (range_count > kMaxRanges) {
      return InvalidUpload("metadata.data_files lists more than " + std::to_string(kMaxRanges) +
                           " ranges");
    }
    std::vector<ExternalRange> ranges;
    ranges.reserve(static_cast<std::size_t>(f.ranges_size()));
    std::uint64_t bytes = 0;
    for (const auto& r : f.ranges()) {
      ranges.push_back({r.offset(), r.length()});
      bytes += std::min<std::uint64_t>(r.length(), f.size_bytes());  // no wrap: checked below
    }
    if (std::string why = RangesProblem(ranges, f.size_bytes()); !why.empty()) {
      return InvalidUpload(field + ".ranges: " + why);
    }
    if (UploadStatus s = CheckDataFile(field + ".name", f.name(), bytes, total, &name); !s.ok()) {
      return s;
    }
    total += bytes;
    if (UploadStatus s = NewDataFile(std::move(name), f.size_bytes(), {}); !s.ok()) return s;
    DataFile& d = data_files_.back();
    d.ranged = true;
    d.ranges = std::move(ranges);
    d.expected = bytes;
  }
  return UploadStatus::Ok();
}

UploadStatus UploadAssembler::BeginDataFile(std::string_view name, std::uint64_t size,
                                            std::uint32_t* index) {
  if (state_ != State::kReceiving) return Fail(InvalidUpload("a data file outside an upload"));
  if (data_files_.size() >= isolate::kMaxDataFiles) {
    return Fail(InvalidUpload("more than " + std::to_string(isolate::kMaxDataFiles) +
                              " external data files"));
  }
  std::uint64_t total = 0;
  for (const auto& f : data_files_) total += f.expected;
  std::string normalized;
  const std::string field = "data file '" + std::string(name.substr(0, 200)) + "':";
  if (UploadStatus s = CheckDataFile(field + " name", name, size, total, &normalized); !s.ok()) {
    return Fail(s);
  }
  if (UploadStatus s = NewDataFile(std::move(normalized), size, {}); !s.ok()) return Fail(s);
  *index = static_cast<std::uint32_t>(data_files_.size() - 1);
  return UploadStatus::Ok();
}

UploadStatus UploadAssembler::AddDataBytes(std::uint32_t index, std::string_view bytes) {
  if (state_ != State::kReceiving) return Fail(InvalidUpload("data bytes outside an upload"));
  return AddDataChunk(index, bytes);
}

UploadStatus UploadAssembler::AddDataChunk(std::uint32_t file, std::string_view bytes) {
  if (file >= data_files_.size()) {
    return Fail(InvalidUpload("data_chunk.file " + std::to_string(file) +
                              " is not an index into metadata.data_files"));
  }
  DataFile& f = data_files_[file];
  if (bytes.size() > f.expected - f.received) {
    return Fail(InvalidUpload(
        f.ranged ? "received more bytes of data file '" + f.name + "' than its ranges hold (" +
                       std::to_string(f.expected) + " bytes)"
                 : "received more bytes of data file '" + f.name +
                       "' than its declared size_bytes " + std::to_string(f.declared)));
  }
  f.hasher->Update(bytes);
  if (!f.ranged) {
    if (UploadStatus s = WriteData(f, f.received, bytes); !s.ok()) return Fail(s);
    f.received += bytes.size();
    return UploadStatus::Ok();
  }
  // The chunk continues the concatenation of the ranges: place each part at its range's offset.
  std::uint64_t before = 0;  // stream position of the range's first byte
  std::size_t r = 0;
  while (r < f.ranges.size() && before + f.ranges[r].length <= f.received) {
    before += f.ranges[r].length;
    ++r;
  }
  while (!bytes.empty() && r < f.ranges.size()) {
    const std::uint64_t into = f.received - before;
    const auto n =
        static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), f.ranges[r].length - into));
    if (UploadStatus s = WriteData(f, f.ranges[r].offset + into, bytes.substr(0, n)); !s.ok()) {
      return Fail(s);
    }
    bytes.remove_prefix(n);
    f.received += n;
    before += f.ranges[r].length;
    ++r;
  }
  return UploadStatus::Ok();
}

UploadStatus UploadAssembler::WriteData(DataFile& f, std::uint64_t offset, std::string_view bytes) {
  // Runs of zeros are not written: the file stays sparse there (its size is set at the end).
  const bool zeros = std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
  std::size_t done = zeros ? bytes.size() : 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(f.write_fd, bytes.data() + done, bytes.size() - done,
                               static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return Refused(UploadError::kStorage,
                     "cannot store data file '" + f.name + "': " + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
  return UploadStatus::Ok();
}

UploadStatus UploadAssembler::FinishDataFiles(SourcedModel* model) {
  if (data_files_.empty()) return UploadStatus::Ok();
  auto set = std::make_shared<isolate::DataFileSet>();
  for (auto& f : data_files_) {
    if (f.received != f.expected) {
      return InvalidUpload("received " + std::to_string(f.received) + " bytes of data file '" +
                           f.name + (f.ranged ? "', its ranges hold " : "', declared size_bytes ") +
                           std::to_string(f.expected));
    }
    const std::string sha256 = f.hasher->HexDigest();
    if (!f.sha256.empty() && sha256 != f.sha256) {
      return InvalidUpload("sha256 mismatch for data file '" + f.name + "': declared " + f.sha256 +
                           ", received bytes hash to " + sha256);
    }
    if (::ftruncate(f.write_fd, static_cast<off_t>(f.declared)) != 0) {
      return Refused(UploadError::kStorage,
                     "cannot store data file '" + f.name + "': " + std::strerror(errno));
    }
    ::close(f.write_fd);
    f.write_fd = -1;
    const int fd = f.read_fd;
    f.read_fd = -1;
    set->Add(f.name, fd, f.declared, f.ranged ? std::string() : sha256);
    if (f.ranged) set->SetSent(set->count() - 1, std::move(f.ranges));
  }
  const bool ranged = metadata_.ranged_data();
  data_files_.clear();
  model->graph_sha256 = model->sha256;
  if (ranged) {
    // The key of the bytes sent: a check that reads other bytes is not answered with a report.
    try {
      model->sha256 = SentRangesKey(*set, model->graph_sha256);
    } catch (const ExternalRangesRefused& e) {
      return Refused(UploadError::kInternal, e.what());
    }
  } else {
    model->sha256 = set->BundleSha256(model->graph_sha256);
  }
  model->data = std::move(set);
  return UploadStatus::Ok();
}

UploadStatus UploadAssembler::Fail(UploadStatus status) {
  Abort();
  return status;
}

UploadStatus UploadAssembler::TooBig(std::uint64_t size) const {
  return Refused(UploadError::kTooLarge, "model is " + std::to_string(size) +
                                             " bytes or more, over the limit of " +
                                             std::to_string(max_model_bytes_));
}

UploadStatus UploadAssembler::CheckRoom(std::uint64_t size) const {
  // The upload budget first, as in ReserveUpTo.
  for (const ByteBudget* budget : {upload_budget_, model_budget_}) {
    if (budget != nullptr && !budget->Fits(size)) {
      return Refused(UploadError::kBusy, budget->exhausted_message());
    }
  }
  return UploadStatus::Ok();
}

void UploadAssembler::ReserveUpTo(std::uint64_t total) {
  // The upload budget first: it is the smaller one, and its message names uploads.
  if (total > upload_reservation_.bytes())
    upload_reservation_.Grow(total - upload_reservation_.bytes());
  if (total > model_reservation_.bytes())
    model_reservation_.Grow(total - model_reservation_.bytes());
}

}  // namespace axqc::server
