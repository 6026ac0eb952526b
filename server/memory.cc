#include "memory.h"

#include <malloc.h>
#include <unistd.h>

#include <fstream>
#include <utility>

namespace axqc::server {

void ConfigureAllocator() {
  static std::once_flag once;
  std::call_once(once, [] {
#ifdef M_MMAP_THRESHOLD
    mallopt(M_MMAP_THRESHOLD, 8 << 20);
#endif
#ifdef M_TRIM_THRESHOLD
    // Setting the mmap threshold switches off glibc's dynamic thresholds, which would otherwise
    // raise the trim threshold with it; left at its 128 KiB default, every free at the top of an
    // arena gives the pages back (madvise) and the next gRPC receive buffer faults them in again.
    mallopt(M_TRIM_THRESHOLD, static_cast<int>(kTrimThresholdBytes));
#endif
  });
}

void ReturnFreeMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

std::uint64_t ResidentBytes() {
  std::ifstream in("/proc/self/statm");
  std::uint64_t size = 0;
  std::uint64_t resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

MemoryTrimmer::MemoryTrimmer(TrimPolicy policy, OnTrim on_trim, std::function<void()> trim,
                             std::function<std::uint64_t()> rss)
    : policy_(policy), on_trim_(std::move(on_trim)), trim_(std::move(trim)), rss_(std::move(rss)) {
  if (policy_.idle_delay.count() > 0) thread_ = std::thread([this] { Loop(); });
}

MemoryTrimmer::~MemoryTrimmer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MemoryTrimmer::CheckStarted() {
  std::lock_guard<std::mutex> lock(mu_);
  ++running_;
}

void MemoryTrimmer::CheckEnded(std::uint64_t model_bytes) {
  const bool big = model_bytes >= kTrimAfterBytes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_ > 0) --running_;
    last_end_ = Clock::now();
    if (big) due_ = true;
  }
  if (big && policy_.idle_delay.count() == 0) {
    Trim("check");
    return;
  }
  if (big && policy_.rss_ceiling != 0 && rss_() > policy_.rss_ceiling) {
    Trim("rss");
    return;
  }
  cv_.notify_all();
}

void MemoryTrimmer::MemoryReleased(std::uint64_t bytes) {
  if (bytes == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    released_ += bytes;
    if (released_ < kTrimAfterBytes) return;
    released_ = 0;
    due_ = true;
    last_end_ = Clock::now();
  }
  if (policy_.idle_delay.count() == 0) {
    Trim("check");
    return;
  }
  cv_.notify_all();
}

void MemoryTrimmer::Trim(const char* reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    due_ = false;
    released_ = 0;
  }
  trim_();
  if (on_trim_) on_trim_(reason);
}

void MemoryTrimmer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (!due_ || running_ > 0) {
      cv_.wait(lock);  // woken when a check ends
      continue;
    }
    const auto at = last_end_ + policy_.idle_delay;
    if (Clock::now() < at) {
      cv_.wait_until(lock, at);
      continue;
    }
    due_ = false;
    released_ = 0;
    lock.unlock();
    trim_();
    if (on_trim_) on_trim_("idle");
    lock.lock();
  }
}

}  // namespace axqc::server
