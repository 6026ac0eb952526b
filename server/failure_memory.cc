#include "failure_memory.h"

#include <algorithm>

namespace axqc::server {

FailureMemory::FailureMemory(double seconds, std::size_t capacity)
    : seconds_(seconds), capacity_(std::max<std::size_t>(1, capacity)) {}

void FailureMemory::Remember(const std::string& sha256, CheckerFailure::Cause cause,
                             const std::string& message, Clock::time_point now) {
  if (seconds_ <= 0 || sha256.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.size() >= capacity_ && entries_.count(sha256) == 0) {
    // Expired entries first; else the one that expires soonest.
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = it->second.until <= now ? entries_.erase(it) : std::next(it);
    }
    if (entries_.size() >= capacity_) {
      entries_.erase(std::min_element(
          entries_.begin(), entries_.end(),
          [](const auto& a, const auto& b) { return a.second.until < b.second.until; }));
    }
  }
  entries_[sha256] = Entry{
      cause, message,
      now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds_))};
}

std::optional<FailureMemory::Entry> FailureMemory::Find(const std::string& sha256,
                                                        Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(sha256);
  if (it == entries_.end()) return std::nullopt;
  if (it->second.until <= now) {
    entries_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

}  // namespace axqc::server
