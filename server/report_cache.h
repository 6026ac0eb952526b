// The read-through report cache of the service: the in-memory LRU in front of the store, and the
// cache gauges. Every path that looks up or keeps a report goes through it (Check, Upload, waiting
// for another server's check, GetReport, the check engine's result sink), so that they agree on
// what a hit is, keep the gauges true and treat an unreadable stored report the same way.
//
// An unreadable stored report (bytes that do not parse as a Report) counts as a store error
// (axqc_store_errors_total), is logged once as a warning and is a miss: a request that has the
// model checks it again (and the fresh report replaces the stored one); a lookup by hash answers
// NOT_FOUND saying so (docs/api.md, GetReport).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "axqc/v1/axqc.pb.h"
#include "cached_report.h"
#include "check_engine.h"
#include "logger.h"
#include "lru_cache.h"
#include "memory.h"
#include "metrics.h"
#include "store.h"

namespace axqc::server {

class ReportCache {
 public:
  // Where a report was found; `report` is null on a miss.
  struct Found {
    std::shared_ptr<const CachedReport> report;
    v1::CacheResult where = v1::CACHE_RESULT_MISS;  // MEMORY_HIT or STORE_HIT when found
    bool unreadable = false;                        // the store held bytes that do not parse
  };

  ReportCache(std::size_t capacity_bytes, ReportStore* store, Metrics* metrics, Logger* logger);

  // The memory cache only: never waits for the store (safe on a gRPC thread).
  std::shared_ptr<const CachedReport> GetMemory(const std::string& key);
  // Memory, then the store; a store hit is kept in memory. `sha256` names the model in the log.
  // Throws StoreError when the store cannot be read (callers decide: check anyway, or UNAVAILABLE).
  Found Get(const std::string& key, const std::string& sha256);
  // Keeps `report` in memory, evicting the least recently used reports beyond the byte bound, and
  // updates the cache gauges (axqc_cache_memory_bytes, axqc_cache_entries).
  void Put(const std::string& key, std::shared_ptr<const CachedReport> report);
  // Persists a fresh report in the store (a failed write is counted and logged, not thrown) and
  // keeps it in memory: the check engine's result sink.
  void Store(const CheckJob& job, const std::shared_ptr<const CachedReport>& report);

  // Evicted reports are reported to `trimmer` (may be null), which gives the freed memory back to
  // the operating system once the server is idle. Set before the first request.
  void set_memory_trimmer(MemoryTrimmer* trimmer) { trimmer_ = trimmer; }

  std::size_t capacity() const { return memory_.capacity(); }
  std::size_t bytes() const { return memory_.bytes(); }
  std::size_t entries() const { return memory_.entries(); }

 private:
  void UpdateGauges();

  LruCache memory_;
  ReportStore* store_;
  Metrics* metrics_;
  Logger* logger_;
  MemoryTrimmer* trimmer_ = nullptr;
};

}  // namespace axqc::server
