#include "failure_memory.h"

#include <algorithm>

namespace axqc::server {

FailureMemory::FailureMemory(double seconds, std::size_t capacity)
    : seconds_(seconds), capacity_(std::max<std::size_t>(1, capacity)) {}

bool FailureMemory::Remember(const std::string& sha256, CheckerFailure::Cause cause,
                             const std::string& message, std::uint64_t worker,
                             Clock::time_point now) {
  if (seconds_ <= 0 || sha256.empty() || cause == CheckerFailure::Cause::kUnavailable) {
    return false;
  }
  const auto until =
      now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds_));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(sha256);
  if (it != entries_.end() && it->second.until <= now) {
    entries_.erase(it);
    it = entries_.end();
  }
  if (it != entries_.end()) {
    Entry& e = it->second;
    // The same worker cannot fail twice (a failed worker is replaced); 0 is no worker's number.
    if (!e.confirmed && (worker == 0 || worker != e.first_worker)) {
      e.confirmed = true;
      e.cause = cause;
      e.message = message;
      e.until = until;
    }
    return e.confirmed;
  }
  if (entries_.size() >= capacity_) {
    // Expired entries first; else the one that expires soonest.
    for (auto old = entries_.begin(); old != entries_.end();) {
      old = old->second.until <= now ? entries_.erase(old) : std::next(old);
    }
    if (entries_.size() >= capacity_) {
      entries_.erase(std::min_element(
          entries_.begin(), entries_.end(),
          [](const auto& a, const auto& b) { return a.second.until < b.second.until; }));
    }
  }
  entries_[sha256] = Entry{cause, message, until, worker, false};
  return false;
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
  if (!it->second.confirmed) return std::nullopt;
  return it->second;
}

}  // namespace axqc::server
