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

void FailureMemory::Remember(const std::string& sha256, CheckerFailure::Cause cause,
                             const std::string& message, Clock::time_point now) {
  if (seconds_ <= 0 || sha256.empty()) return;
  const std::size_t cost = Cost(sha256, message);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(sha256); it != index_.end()) EraseLocked(it->second);
  if (cost <= capacity_) {
    order_.push_front(Node{sha256,
                           Entry{cause, message,
                                 now + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(seconds_))},
                           cost});
    index_[sha256] = order_.begin();
    bytes_ += cost;
    while (bytes_ > capacity_ && !order_.empty()) EraseLocked(std::prev(order_.end()));
  }
  UpdateGaugesLocked();
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
