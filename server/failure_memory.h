// Models whose check made a worker process fail (crash, memory or CPU limit) are remembered for a
// while (--worker-failure-memory-seconds): a request for the same model within that time is
// answered at once with the same status instead of running the checker on it again.
//
// One failure is not enough: a worker can die during a check for reasons that are not the model's
// (the kernel's OOM killer picks the largest process, an operator kills it). A model is
// remembered once its checks failed in two different worker processes within that time; the
// first failure is only noted. Failures that are no worker's (kUnavailable) are never noted.
//
// The memory is bounded in bytes (--worker-failure-memory-bytes: hash, message and the
// bookkeeping of each entry, noted or remembered): past the bound the least recently used models
// are forgotten first. Its size and entry count are the gauges axqc_worker_failure_memory_bytes
// and axqc_worker_failure_memory_entries.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "check_engine.h"
#include "metrics.h"

namespace axqc::server {

class FailureMemory {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kDefaultCapacityBytes = 1u << 20;
  // `seconds` 0 remembers nothing; at most `capacity_bytes` (see Cost) are held. `metrics` (may be
  // null) gets the byte and entry gauges.
  explicit FailureMemory(double seconds, std::size_t capacity_bytes = kDefaultCapacityBytes,
                         Metrics* metrics = nullptr);

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
  // The remembered failure of the model, if it failed in two workers and has not expired. A hit
  // makes the model the most recently used one.
  std::optional<Entry> Find(const std::string& sha256, Clock::time_point now = Clock::now());
  double seconds() const { return seconds_; }

  // The bytes one entry counts for.
  static std::size_t Cost(const std::string& sha256, const std::string& message);
  std::size_t capacity_bytes() const { return capacity_; }
  std::size_t bytes() const;
  std::size_t entries() const;

 private:
  struct Node {
    std::string sha256;
    Entry entry;
    std::size_t cost;
  };
  void EraseLocked(std::list<Node>::iterator it);
  void UpdateGaugesLocked();

  const double seconds_;
  const std::size_t capacity_;
  Metrics* metrics_;
  mutable std::mutex mu_;
  std::list<Node> order_;  // front = most recently used
  std::unordered_map<std::string, std::list<Node>::iterator> index_;
  std::size_t bytes_ = 0;
};

}  // namespace axqc::server
