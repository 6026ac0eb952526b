#include "report_cache.h"

#include <chrono>
#include <utility>

#include "axqc/catalog.h"
#include "labels.h"

namespace axqc::server {

ReportCache::ReportCache(std::size_t capacity_bytes, ReportStore* store, Metrics* metrics,
                         Logger* logger)
    : memory_(capacity_bytes), store_(store), metrics_(metrics), logger_(logger) {}

std::shared_ptr<const CachedReport> ReportCache::GetMemory(const std::string& key) {
  return memory_.Get(key);
}

ReportCache::Found ReportCache::Get(const std::string& key, const std::string& sha256) {
  Found found;
  if (auto report = memory_.Get(key)) {
    found.report = std::move(report);
    found.where = v1::CACHE_RESULT_MEMORY_HIT;
    return found;
  }
  auto blob = store_->GetReport(key);
  if (!blob) return found;
  v1::Report parsed;
  if (!parsed.ParseFromString(*blob)) {
    metrics_->CountStoreError();
    logger_->Warn("stored report unreadable", {{"model_sha256", sha256}});
    found.unreadable = true;
    return found;
  }
  auto report = MakeCachedReport(std::move(parsed));
  Put(key, report);
  found.report = std::move(report);
  found.where = v1::CACHE_RESULT_STORE_HIT;
  return found;
}

void ReportCache::Put(const std::string& key, std::shared_ptr<const CachedReport> report) {
  const std::size_t released = memory_.Put(key, std::move(report));
  UpdateGauges();
  if (released > 0 && trimmer_ != nullptr) trimmer_->MemoryReleased(released);
}

void ReportCache::Store(const CheckJob& job, const std::shared_ptr<const CachedReport>& report) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    StoredReport r;
    r.cache_key = job.key;
    r.sha256 = job.sha256;
    r.options = job.options_key;
    r.rule_set_version = std::string(kRuleSetVersion);
    r.verdict = VerdictLabel(report->proto().verdict());
    r.report = report->proto().SerializeAsString();
    store_->PutReport(r);
  } catch (const StoreError& e) {
    metrics_->CountStoreError();
    logger_->Warn("store write failed", {{"error", e.what()}, {"model_sha256", job.sha256}});
  }
  Put(job.key, report);
  metrics_->ObserveStage(
      "store", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

void ReportCache::UpdateGauges() {
  metrics_->cache_bytes().Set(static_cast<double>(memory_.bytes()));
  metrics_->cache_entries().Set(static_cast<double>(memory_.entries()));
}

}  // namespace axqc::server
