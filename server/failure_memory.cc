#include "failure_memory.h"

namespace axqc::server {

FailureMemory::FailureMemory(double seconds, std::size_t capacity_bytes, Metrics* metrics)
    : seconds_(seconds), capacity_(capacity_bytes), metrics_(metrics) {
  std::lock_guard<std::mutex> lock(mu_);
  UpdateGaugesLocked();
}

std::size_t FailureMemory::Cost(const std::string& sha256, const std::string& message) {
  // The hash twice (list node and index key), the message, the list node and the index node.
  return 2 * sha256.size() + message.size() + sizeof(Node) + 64;
}

void FailureMemory::EraseLocked(std::list<Node>::iterator it) {
  bytes_ -= it->cost;
  index_.erase(it->sha256);
  order_.erase(it);
}

void FailureMemory::UpdateGaugesLocked() {
  if (metrics_ == nullptr) return;
  metrics_->failure_memory_bytes().Set(static_cast<double>(bytes_));
  metrics_->failure_memory_entries().Set(static_cast<double>(index_.size()));
}

bool FailureMemory::Remember(const std::string& sha256, CheckerFailure::Cause cause,
                             const std::string& message, std::uint64_t worker,
                             Clock::time_point now) {
  if (seconds_ <= 0 || sha256.empty() || cause == CheckerFailure::Cause::kUnavailable) {
    return false;
  }
  const auto until =
      now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds_));
  std::lock_guard<std::mutex> lock(mu_);
  Entry entry{cause, message, until, worker, false};
  if (auto it = index_.find(sha256); it != index_.end()) {
    const Entry& old = it->second->entry;
    if (old.until > now) {
      // A remembered model takes the newer failure. A noted one is remembered when this failure
      // is another worker's: the same worker cannot fail twice (a failed worker is replaced), and
      // 0 is no worker's number.
      if (old.confirmed || worker == 0 || worker != old.first_worker) {
        entry.first_worker = old.first_worker;
        entry.confirmed = true;
      } else {
        entry = old;
      }
    }
    EraseLocked(it->second);
  }
  const std::size_t cost = Cost(sha256, entry.message);
  if (cost <= capacity_) {
    order_.push_front(Node{sha256, entry, cost});
    index_[sha256] = order_.begin();
    bytes_ += cost;
    while (bytes_ > capacity_ && !order_.empty()) EraseLocked(std::prev(order_.end()));
  }
  UpdateGaugesLocked();
  return entry.confirmed && cost <= capacity_;
}

std::optional<FailureMemory::Entry> FailureMemory::Find(const std::string& sha256,
                                                        Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(sha256);
  if (it == index_.end()) return std::nullopt;
  if (it->second->entry.until <= now) {
    EraseLocked(it->second);
    UpdateGaugesLocked();
    return std::nullopt;
  }
  if (!it->second->entry.confirmed) return std::nullopt;
  order_.splice(order_.begin(), order_, it->second);
  return it->second->entry;
}

std::size_t FailureMemory::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

std::size_t FailureMemory::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.size();
}

}  // namespace axqc::server
