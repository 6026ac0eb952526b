// Models whose check made a worker process fail (crash, memory or CPU limit) are remembered for a
// while (--worker-failure-memory-seconds): a request for the same model within that time is
// answered at once with the same status instead of running the checker on it again.
//
// One failure is not enough: a worker can die during a check for reasons that are not the model's
// (the kernel's OOM killer picks the largest process, an operator kills it). A model is
// remembered once its checks failed in two different worker processes within that time; the
// first failure is only noted. Failures that are no worker's (kUnavailable) are never noted.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
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
    std::uint64_t first_worker = 0;  // the worker of the first failure
    bool confirmed = false;          // failed in a second worker: Find answers it
  };
  // Notes a failure of the model's check in worker `worker` (its serial number; 0 = unknown, each
  // counts as another worker). Returns true when the model is now remembered.
  bool Remember(const std::string& sha256, CheckerFailure::Cause cause, const std::string& message,
                std::uint64_t worker, Clock::time_point now = Clock::now());
  // The remembered failure of the model, if it failed in two workers and has not expired.
  std::optional<Entry> Find(const std::string& sha256, Clock::time_point now = Clock::now());
  double seconds() const { return seconds_; }

 private:
  const double seconds_;
  const std::size_t capacity_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace axqc::server
