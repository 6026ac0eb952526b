#include "lru_cache.h"

namespace axqc::server {

std::shared_ptr<const CachedReport> LruCache::Get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  return it->second->report;
}

std::size_t LruCache::Cost(const std::string& key, const CachedReport& report) {
  // The report's estimate, plus the key twice (list entry and index), the list node and the index
  // node.
  return 2 * key.size() + report.EstimatedBytes() + sizeof(Entry) + 64;
}

std::size_t LruCache::Put(const std::string& key, std::shared_ptr<const CachedReport> report) {
  const std::size_t cost = Cost(key, *report);
  std::size_t released = 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    bytes_ -= it->second->cost;
    released += it->second->cost;
    order_.erase(it->second);
    index_.erase(it);
  }
  if (cost > capacity_) return released;
  order_.push_front(Entry{key, std::move(report), cost});
  index_[key] = order_.begin();
  bytes_ += cost;
  while (bytes_ > capacity_ && !order_.empty()) {
    bytes_ -= order_.back().cost;
    released += order_.back().cost;
    index_.erase(order_.back().key);
    order_.pop_back();
  }
  return released;
}

std::size_t LruCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

std::size_t LruCache::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return index_.size();
}

}  // namespace axqc::server
