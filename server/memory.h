// Giving memory back to the operating system. glibc's malloc keeps freed memory of its heaps and
// per-thread arenas mapped, so after a big check (a parsed model is 2-3x its file size, in many
// allocations) the server's resident size would stay near its peak for good. Two measures:
//   * ConfigureAllocator: a fixed mmap threshold (8 MiB), so every big buffer (model bytes, tensor
//     data, upload buffers) is its own mapping and is unmapped when freed. glibc's default raises
//     the threshold after the first big free, which moves later big buffers into the heaps.
//     A fixed mmap threshold also fixes glibc's trim threshold, which would then stay at its
//     128 KiB default: every free at the top of an arena would give its pages back (madvise) and
//     the next allocation fault them in again; gRPC frees and allocates receive buffers all the
//     time, and a 65 MB upload took up to 16k page faults and 3-6x the CPU. So the trim threshold
//     is fixed too (kTrimThresholdBytes): free memory at the top of an arena is kept up to that
//     size for the next request;
//   * MemoryTrimmer: malloc_trim(0) (releases the free pages of every arena, whatever the trim
//     threshold) after checks of a model of at least kTrimAfterBytes, but not right after each:
//     the pages it gives back are the ones the next big check would use again, and faulting them
//     back in costs that check more than its own work on a VM (cnn-w256-1k, 65 MB: 335 ms of CPU
//     against 51 ms with a warm heap). So the trim waits until no check has run for a moment (the
//     server is idle: nothing reuses the pages soon), or happens at once when the resident size is
//     over a ceiling.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace axqc::server {

inline constexpr std::uint64_t kTrimAfterBytes = 4ull << 20;
// Free memory at the top of an arena is given back beyond this size (and by ReturnFreeMemory).
inline constexpr std::uint64_t kTrimThresholdBytes = 64ull << 20;

// Idempotent; call before the first big allocation.
void ConfigureAllocator();
void ReturnFreeMemory();
// This process's resident size (/proc/self/statm); 0 when unreadable.
std::uint64_t ResidentBytes();

struct TrimPolicy {
  // Trim once no check has run for this long after a big one; 0 = right after every big check.
  std::chrono::milliseconds idle_delay{1000};
  // Trim right after a big check when the resident size exceeds this, busy or not; 0 = never.
  std::uint64_t rss_ceiling = 0;
};

// Decides when to trim; checks report their start and end. One thread waits for idle periods.
class MemoryTrimmer {
 public:
  // Why a trim happened: "idle" (no check for idle_delay), "rss" (over the ceiling), "check"
  // (idle_delay 0: after every big check).
  using OnTrim = std::function<void(const char* reason)>;
  // `trim` and `rss` replace ReturnFreeMemory and ResidentBytes (tests).
  explicit MemoryTrimmer(TrimPolicy policy, OnTrim on_trim = {},
                         std::function<void()> trim = ReturnFreeMemory,
                         std::function<std::uint64_t()> rss = ResidentBytes);
  ~MemoryTrimmer();
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  void CheckStarted();
  // After a check, once its model bytes are released.
  void CheckEnded(std::uint64_t model_bytes);
  // Memory freed outside checks (entries evicted from the in-memory caches). Once kTrimAfterBytes
  // or more have been freed since the last trim, the next idle period trims as after a big check.
  void MemoryReleased(std::uint64_t bytes);

 private:
  using Clock = std::chrono::steady_clock;
  void Loop();
  void Trim(const char* reason);

  const TrimPolicy policy_;
  const OnTrim on_trim_;
  const std::function<void()> trim_;
  const std::function<std::uint64_t()> rss_;
  std::mutex mu_;
  std::condition_variable cv_;
  unsigned running_ = 0;        // checks running now
  bool due_ = false;            // a big check ended since the last trim
  std::uint64_t released_ = 0;  // bytes freed by MemoryReleased since the last trim
  Clock::time_point last_end_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace axqc::server
