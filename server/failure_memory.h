// Models whose check made a worker process fail (crash, memory or CPU limit) are remembered for a
// while (--worker-failure-memory-seconds): a request for the same model within that time is
// answered at once with the same status instead of running the checker on it again.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "check_engine.h"

namespace axqc::server {

class FailureMemory {
 public:
  using Clock = std::chrono::steady_clock;
  // `seconds` 0 remembers nothing; at most `capacity` models (the oldest entries go first).
  explicit FailureMemory(double seconds, std::size_t capacity = 10000);

  struct Entry {
    CheckerFailure::Cause cause;
    std::string message;
    Clock::time_point until;
  };
  void Remember(const std::string& sha256, CheckerFailure::Cause cause, const std::string& message,
                Clock::time_point now = Clock::now());
  std::optional<Entry> Find(const std::string& sha256, Clock::time_point now = Clock::now());
  double seconds() const { return seconds_; }

 private:
  const double seconds_;
  const std::size_t capacity_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace axqc::server
