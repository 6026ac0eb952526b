#include "model_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

namespace axqc::isolate {

namespace {

// Seal attempts on EBUSY, sleeping 10, 20, 40, 80, 160 and 320 ms between them (plus the kernel's
// own wait in each).
constexpr int kSealAttempts = 7;

[[noreturn]] void Throw(int err, const char* what) {
  throw std::system_error(err, std::generic_category(), what);
}

}  // namespace

ModelBuffer::ModelBuffer(Backing backing, std::uint64_t size_hint) {
  if (backing == Backing::kMemfd) {
    fd_ = ::memfd_create("axqc-model", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  }
  if (fd_ < 0 && size_hint > 0) heap_.reserve(size_hint);
}

ModelBuffer ModelBuffer::FromString(std::string bytes) {
  ModelBuffer b(Backing::kHeap);
  b.size_ = bytes.size();
  b.heap_ = std::move(bytes);
  b.sealed_ = true;
  return b;
}

ModelBuffer::~ModelBuffer() {
  if (map_ != nullptr) ::munmap(const_cast<char*>(map_), size_);
  if (fd_ >= 0) ::close(fd_);
}

ModelBuffer::ModelBuffer(ModelBuffer&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      heap_(std::move(o.heap_)),
      size_(std::exchange(o.size_, 0)),
      sealed_(o.sealed_),
      map_(std::exchange(o.map_, nullptr)) {}

ModelBuffer& ModelBuffer::operator=(ModelBuffer&& o) noexcept {
  if (this != &o) {
    if (map_ != nullptr) ::munmap(const_cast<char*>(map_), size_);
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    heap_ = std::move(o.heap_);
    size_ = std::exchange(o.size_, 0);
    sealed_ = o.sealed_;
    map_ = std::exchange(o.map_, nullptr);
  }
  return *this;
}

void ModelBuffer::Append(std::string_view bytes) {
  if (sealed_) throw std::logic_error("ModelBuffer::Append after Seal");
  if (fd_ < 0) {
    heap_.append(bytes);
    size_ += bytes.size();
    return;
  }
  // write() at the end: the kernel copies into the memfd's pages (no page faults in this process,
  // which on a VM cost several times the copy).
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) Throw(n < 0 ? errno : ENOSPC, "cannot write the model buffer");
    done += static_cast<std::size_t>(n);
    size_ += static_cast<std::uint64_t>(n);
  }
}

std::uint64_t ModelBuffer::AppendFrom(int fd, std::uint64_t max) {
  if (sealed_) throw std::logic_error("ModelBuffer::AppendFrom after Seal");
  if (fd_ < 0) {
    const std::size_t old = heap_.size();
    heap_.resize(old + max);
    ssize_t n = 0;
    do {
      n = ::read(fd, heap_.data() + old, max);
    } while (n < 0 && errno == EINTR);
    heap_.resize(old + (n > 0 ? static_cast<std::size_t>(n) : 0));
    if (n < 0) Throw(errno, "cannot read the model file");
    size_ += static_cast<std::uint64_t>(n);
    return static_cast<std::uint64_t>(n);
  }
  // File to memfd in the kernel (no copy through this process).
  ssize_t n = 0;
  do {
    n = ::sendfile(fd_, fd, nullptr,
                   static_cast<std::size_t>(std::min<std::uint64_t>(max, 1 << 30)));
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
    thread_local std::string chunk(std::size_t{1} << 20, '\0');
    do {
      n = ::read(fd, chunk.data(),
                 static_cast<std::size_t>(std::min<std::uint64_t>(max, chunk.size())));
    } while (n < 0 && errno == EINTR);
    if (n < 0) Throw(errno, "cannot read the model file");
    Append(std::string_view(chunk.data(), static_cast<std::size_t>(n)));
    return static_cast<std::uint64_t>(n);
  }
  if (n < 0) Throw(errno, "cannot copy the model file");
  size_ += static_cast<std::uint64_t>(n);
  return static_cast<std::uint64_t>(n);
}

void ModelBuffer::Seal() {
  if (sealed_) return;
  if (fd_ >= 0) {
    // F_SEAL_WRITE fails with EBUSY while any page of the memfd has a reference other than its
    // mappings: the kernel waits about 150 ms for such pins to go, but page migration and
    // compaction (kcompactd, after a big free) can hold them longer; measured once in a few
    // thousand seals of 65 MB buffers after malloc_trim. Nothing of this process maps the buffer
    // writably, so the pins are transient: try again for up to about a second before failing
    // the request.
    int err = 0;
    for (int attempt = 0; attempt < kSealAttempts; ++attempt) {
      if (::fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) ==
          0) {
        err = 0;
        break;
      }
      err = errno;
      if (err != EBUSY && err != EINTR) break;
      if (err == EBUSY) std::this_thread::sleep_for(std::chrono::milliseconds(10 << attempt));
    }
    if (err != 0) Throw(err, "cannot seal the model buffer");
  }
  sealed_ = true;
}

std::string_view ModelBuffer::view() const {
  if (!sealed_) throw std::logic_error("ModelBuffer::view before Seal");
  if (fd_ < 0) return heap_;
  if (size_ == 0) return {};
  std::lock_guard<std::mutex> lock(map_mu_);
  if (map_ == nullptr) {
    void* m = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED | MAP_POPULATE, fd_, 0);
    if (m == MAP_FAILED) Throw(errno, "cannot map the model buffer");
    map_ = static_cast<const char*>(m);
  }
  return {map_, static_cast<std::size_t>(size_)};
}

}  // namespace axqc::isolate
