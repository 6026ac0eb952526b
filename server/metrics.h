// Prometheus metrics of axqc-server (names per Prometheus conventions, prefix axqc_). No label ever
// carries a model name, path, URL or hash: label values come from small fixed sets (verdicts,
// sources, cache results, rule IDs, severities, RPC methods and status codes, stages).
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>

#include "axqc/v1/axqc.pb.h"

namespace axqc::server {

class Metrics {
 public:
  Metrics();

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // A report (or an input error) returned for a Check/Upload: verdict is "conformant",
  // "non_conformant", "not_applicable" or "invalid_input"; source "path", "url", "inline",
  // "upload".
  void CountCheck(const std::string& verdict, const std::string& source);
  // The findings of a returned report, per rule and severity.
  void CountFindings(const v1::Report& report);
  // Where the report of a check request came from (one per Check/Upload that reached the cache,
  // and per GetReport with record_check that found a report): "memory_hit", "store_hit",
  // "shared", "miss".
  void CountCacheLookup(const std::string& result);
  // Every GetReport answer: "memory_hit", "store_hit", "shared" (waited for a check in progress),
  // "not_found".
  void CountReportLookup(const std::string& result);
  void CountRequest(const std::string& method, const std::string& code, double seconds);
  // stage: "load", "check" (and the checker's own stages "check_parse", "check_onnx",
  // "check_index", "check_quant", "check_units", "check_rules", "check_report"), "store", "render".
  void ObserveStage(const std::string& stage, double seconds);
  void ObserveQueueWait(double seconds);
  void AddUploadBytes(double bytes);
  void CountStoreError();
  // A server that waited for another server's check claimed the model itself (the other server
  // released its claim without a report, or stopped renewing it).
  void CountClaimTakeover();
  // Process isolation (--isolation process): a worker process replaced, by cause ("crashed",
  // "memory", "cpu_time", "deadline", "protocol", "max_checks", "max_rss"); a check a worker ran,
  // by outcome ("ok", "input_error", "crashed", "memory", "cpu_time", "deadline", "protocol");
  // the workers' resident set size (sum and largest).
  void CountWorkerRestart(const std::string& cause);
  void CountWorkerCheck(const std::string& outcome);
  void SetWorkerResidentBytes(double sum, double max);
  // Freed memory given back to the operating system (server/memory.h), by reason: "idle", "rss",
  // "check".
  void CountMemoryTrim(const std::string& reason);
  // The HTTP listener: a failed accept, by reason ("emfile", "enfile", "enobufs", "enomem",
  // "other"); a connection refused over --http-max-connections; connections open now.
  void CountAcceptError(const std::string& reason);
  void CountHttpConnectionRefused();
  // A registry webhook delivery (axqc_webhook_deliveries_total): its source and its outcome when
  // it ended, "retry" per failed attempt that is retried, "duplicate" and "ignored" answers.
  void CountWebhookDelivery(const std::string& source, const std::string& outcome);
  prometheus::Gauge& http_connections() { return *http_connections_; }

  prometheus::Gauge& queue_depth() { return *queue_depth_; }
  prometheus::Gauge& busy_workers() { return *busy_workers_; }
  prometheus::Gauge& workers() { return *workers_; }
  prometheus::Gauge& queue_capacity() { return *queue_capacity_; }
  prometheus::Gauge& cache_bytes() { return *cache_bytes_; }
  prometheus::Gauge& cache_entries() { return *cache_entries_; }
  // The worker failure memory (server/failure_memory.h): bytes and models held.
  prometheus::Gauge& failure_memory_bytes() { return *failure_memory_bytes_; }
  prometheus::Gauge& failure_memory_entries() { return *failure_memory_entries_; }
  prometheus::Gauge& inflight_bytes() { return *inflight_bytes_; }
  // Check/Upload requests waiting for a check that another server sharing the store runs.
  prometheus::Gauge& claim_waits() { return *claim_waits_; }
  prometheus::Gauge& inflight_upload_bytes() { return *inflight_upload_bytes_; }
  // GetReport requests waiting for a check in progress (here or on another replica).
  prometheus::Gauge& lookup_waits() { return *lookup_waits_; }
  prometheus::Gauge& uploads_in_flight() { return *uploads_in_flight_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* checks_;
  prometheus::Family<prometheus::Counter>* findings_;
  prometheus::Family<prometheus::Counter>* cache_lookups_;
  prometheus::Family<prometheus::Counter>* report_lookups_;
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Counter>* accept_errors_;
  prometheus::Family<prometheus::Counter>* webhook_deliveries_;
  prometheus::Counter* http_refused_;
  prometheus::Gauge* http_connections_;
  prometheus::Family<prometheus::Histogram>* request_duration_;
  prometheus::Family<prometheus::Histogram>* check_duration_;
  prometheus::Histogram* queue_wait_;
  prometheus::Counter* upload_bytes_;
  prometheus::Counter* store_errors_;
  prometheus::Counter* claim_takeovers_;
  prometheus::Gauge* queue_depth_;
  prometheus::Gauge* busy_workers_;
  prometheus::Gauge* workers_;
  prometheus::Gauge* queue_capacity_;
  prometheus::Gauge* cache_bytes_;
  prometheus::Gauge* cache_entries_;
  prometheus::Gauge* failure_memory_bytes_;
  prometheus::Gauge* failure_memory_entries_;
  prometheus::Gauge* inflight_bytes_;
  prometheus::Gauge* claim_waits_;
  prometheus::Gauge* inflight_upload_bytes_;
  prometheus::Gauge* lookup_waits_;
  prometheus::Gauge* uploads_in_flight_;
  prometheus::Family<prometheus::Counter>* worker_restarts_;
  prometheus::Family<prometheus::Counter>* worker_checks_;
  prometheus::Gauge* worker_rss_sum_;
  prometheus::Gauge* worker_rss_max_;
  prometheus::Family<prometheus::Counter>* memory_trims_;
};

}  // namespace axqc::server
