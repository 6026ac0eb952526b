// The bytes of one model held by a checking process: written once (chunks appended as they arrive,
// or a file read into it), then sealed and read-only. By default the bytes live in a memfd from
// the first byte, so that a worker process (--isolation process) is handed the very same file
// (sealed: no write, grow or shrink by anyone) without a copy, and the in-process checker reads
// it through a read-only mapping. When no memfd can be made (descriptor limit, no memfd support),
// the bytes live on the heap instead and a worker gets a sealed copy.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace axqc::isolate {

class ModelBuffer {
 public:
  enum class Backing { kMemfd, kHeap };
  // kMemfd falls back to kHeap when memfd_create fails. `size_hint`: the expected size (heap:
  // reserved up front).
  explicit ModelBuffer(Backing backing = Backing::kMemfd, std::uint64_t size_hint = 0);
  // Heap buffer holding `bytes` (already sealed): tests, callers that have a string.
  static ModelBuffer FromString(std::string bytes);
  ~ModelBuffer();
  ModelBuffer(ModelBuffer&& o) noexcept;
  ModelBuffer& operator=(ModelBuffer&& o) noexcept;
  ModelBuffer(const ModelBuffer&) = delete;
  ModelBuffer& operator=(const ModelBuffer&) = delete;

  // Appends bytes (before Seal). Throws std::system_error when the memfd cannot take them (ENOSPC,
  // ENOMEM), std::logic_error after Seal.
  void Append(std::string_view bytes);
  // Appends up to `max` bytes read from `fd` (its current offset); returns the bytes read (0 at
  // end of file). Throws std::system_error on a read or write error.
  std::uint64_t AppendFrom(int fd, std::uint64_t max);
  // Ends writing: the memfd gets F_SEAL_WRITE, F_SEAL_GROW, F_SEAL_SHRINK and F_SEAL_SEAL.
  // Idempotent. Throws std::system_error when the kernel refuses the seals.
  void Seal();

  bool sealed() const { return sealed_; }
  Backing backing() const { return fd_ >= 0 ? Backing::kMemfd : Backing::kHeap; }
  std::uint64_t size() const { return size_; }
  // The sealed memfd (kMemfd), -1 otherwise. Owned by the buffer: send it (SCM_RIGHTS dups it),
  // never close it.
  int fd() const { return fd_; }
  // The bytes (after Seal). A memfd is mapped read-only on the first call (all pages at once,
  // MAP_POPULATE); thread-safe. Throws std::system_error when the mapping fails.
  std::string_view view() const;

 private:
  int fd_ = -1;
  std::string heap_;
  std::uint64_t size_ = 0;
  bool sealed_ = false;
  mutable std::mutex map_mu_;
  mutable const char* map_ = nullptr;
};

}  // namespace axqc::isolate
