// In-memory LRU of reports, bounded in bytes (key + the report's estimated memory with its JSON
// text, CachedReport::EstimatedBytes, + the bookkeeping of one entry). Inserting past the bound
// evicts the least recently used entries until the total is within it again. Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cached_report.h"

namespace axqc::server {

class LruCache {
 public:
  explicit LruCache(std::size_t capacity_bytes) : capacity_(capacity_bytes) {}

  std::shared_ptr<const CachedReport> Get(const std::string& key);
  // An entry larger than the whole capacity is not cached. Returns the estimated bytes that left
  // the cache (evicted entries and a replaced entry), so the caller can give memory back.
  std::size_t Put(const std::string& key, std::shared_ptr<const CachedReport> report);

  // The estimated memory of one entry (what bytes() counts for it).
  static std::size_t Cost(const std::string& key, const CachedReport& report);

  std::size_t capacity() const { return capacity_; }
  std::size_t bytes() const;
  std::size_t entries() const;

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const CachedReport> report;
    std::size_t cost;
  };
  std::size_t capacity_;
  mutable std::mutex mu_;
  std::list<Entry> order_;  // front = most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  std::size_t bytes_ = 0;
};

}  // namespace axqc::server
