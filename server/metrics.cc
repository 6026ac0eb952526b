#include "metrics.h"

#include "axqc/catalog.h"
#include "axqc/checker.h"

namespace axqc::server {

namespace {

const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
  return kBuckets;
}

const char* SeverityLabel(v1::Severity s) {
  switch (s) {
    case v1::SEVERITY_ERROR:
      return "error";
    case v1::SEVERITY_WARN:
      return "warn";
    case v1::SEVERITY_INFO:
      return "info";
    default:
      return "unknown";
  }
}

}  // namespace

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  checks_ = &prometheus::BuildCounter()
                 .Name("axqc_checks_total")
                 .Help(
                     "Check and Upload requests answered with a report (or an input error), by "
                     "verdict and model source; cache hits included")
                 .Register(r);
  findings_ = &prometheus::BuildCounter()
                   .Name("axqc_rule_findings_total")
                   .Help("Findings in the reports returned to clients, by rule ID and severity")
                   .Register(r);
  cache_lookups_ = &prometheus::BuildCounter()
                        .Name("axqc_cache_lookups_total")
                        .Help(
                            "Where the reports of check requests (Check, Upload, GetReport with "
                            "record_check) came from, one per check: memory_hit, store_hit, shared "
                            "(joined an identical check in progress), miss (checked for it)")
                        .Register(r);
  report_lookups_ = &prometheus::BuildCounter()
                         .Name("axqc_report_lookups_total")
                         .Help(
                             "GetReport answers by result: memory_hit, store_hit, shared (waited "
                             "for a check in progress), not_found")
                         .Register(r);
  requests_ = &prometheus::BuildCounter()
                   .Name("axqc_requests_total")
                   .Help("axqc.v1 RPCs by method and gRPC status code")
                   .Register(r);
  request_duration_ = &prometheus::BuildHistogram()
                           .Name("axqc_request_duration_seconds")
                           .Help("Duration of axqc.v1 RPCs by method, from arrival to completion")
                           .Register(r);
  check_duration_ = &prometheus::BuildHistogram()
                         .Name("axqc_check_duration_seconds")
                         .Help(
                             "Duration of the stages of a check: load (read file / fetch URL / "
                             "hash), check (the checker itself; check_* are its own stages), "
                             "store (persist report), render "
                             "(JSON report)")
                         .Register(r);
  queue_wait_ = &prometheus::BuildHistogram()
                     .Name("axqc_queue_wait_seconds")
                     .Help("Time checks waited in the queue for a worker")
                     .Register(r)
                     .Add({}, DurationBuckets());
  upload_bytes_ = &prometheus::BuildCounter()
                       .Name("axqc_upload_bytes_total")
                       .Help("Model bytes received through Upload streams")
                       .Register(r)
                       .Add({});
  store_errors_ = &prometheus::BuildCounter()
                       .Name("axqc_store_errors_total")
                       .Help("Failed operations on the persistent store")
                       .Register(r)
                       .Add({});
  claim_takeovers_ =
      &prometheus::BuildCounter()
           .Name("axqc_claim_takeovers_total")
           .Help(
               "Checks run after waiting for another server sharing the store (PostgreSQL): its "
               "claim ended without a report or was not renewed in time (server died)")
           .Register(r)
           .Add({});
  claim_waits_ = &prometheus::BuildGauge()
                      .Name("axqc_claim_waiting_requests")
                      .Help(
                          "Check/Upload requests waiting for a check that another server sharing "
                          "the store (PostgreSQL) runs")
                      .Register(r)
                      .Add({});
  lookup_waits_ = &prometheus::BuildGauge()
                       .Name("axqc_lookup_waiting_requests")
                       .Help(
                           "GetReport requests waiting for the report of a check in progress "
                           "(an upload being received, a check queued or running; with "
                           "PostgreSQL also on another replica)")
                       .Register(r)
                       .Add({});
  queue_depth_ = &prometheus::BuildGauge()
                      .Name("axqc_queue_depth")
                      .Help("Checks waiting for a worker")
                      .Register(r)
                      .Add({});
  busy_workers_ = &prometheus::BuildGauge()
                       .Name("axqc_busy_workers")
                       .Help("Workers running a check")
                       .Register(r)
                       .Add({});
  workers_ = &prometheus::BuildGauge()
                  .Name("axqc_workers")
                  .Help("Configured check workers")
                  .Register(r)
                  .Add({});
  queue_capacity_ = &prometheus::BuildGauge()
                         .Name("axqc_queue_capacity")
                         .Help("Configured queue capacity")
                         .Register(r)
                         .Add({});
  cache_bytes_ = &prometheus::BuildGauge()
                      .Name("axqc_cache_memory_bytes")
                      .Help("Bytes held by the in-memory report cache")
                      .Register(r)
                      .Add({});
  cache_entries_ = &prometheus::BuildGauge()
                        .Name("axqc_cache_entries")
                        .Help("Reports held by the in-memory report cache")
                        .Register(r)
                        .Add({});
  failure_memory_bytes_ =
      &prometheus::BuildGauge()
           .Name("axqc_worker_failure_memory_bytes")
           .Help("Bytes held by the memory of models that made a worker process fail")
           .Register(r)
           .Add({});
  failure_memory_entries_ =
      &prometheus::BuildGauge()
           .Name("axqc_worker_failure_memory_entries")
           .Help("Models held by the memory of models that made a worker process fail")
           .Register(r)
           .Add({});
  inflight_bytes_ = &prometheus::BuildGauge()
                         .Name("axqc_inflight_model_bytes")
                         .Help("Model bytes held in memory by requests and running checks")
                         .Register(r)
                         .Add({});
  inflight_upload_bytes_ = &prometheus::BuildGauge()
                                .Name("axqc_inflight_upload_bytes")
                                .Help("Bytes reserved by Upload streams still being received")
                                .Register(r)
                                .Add({});
  uploads_in_flight_ = &prometheus::BuildGauge()
                            .Name("axqc_uploads_in_flight")
                            .Help("Upload streams still being received")
                            .Register(r)
                            .Add({});
  worker_restarts_ = &prometheus::BuildCounter()
                          .Name("axqc_worker_restarts_total")
                          .Help(
                              "Worker processes replaced (--isolation process), by cause: crashed, "
                              "memory, cpu_time, deadline, protocol, max_checks, max_rss, "
                              "idle_exit (died while it had no check)")
                          .Register(r);
  worker_checks_ = &prometheus::BuildCounter()
                        .Name("axqc_worker_checks_total")
                        .Help(
                            "Checks run by worker processes, by outcome: ok, input_error, crashed, "
                            "memory, cpu_time, deadline, protocol")
                        .Register(r);
  auto& worker_rss = prometheus::BuildGauge()
                         .Name("axqc_worker_resident_bytes")
                         .Help("Resident set size of the worker processes: sum and largest (max)")
                         .Register(r);
  worker_rss_sum_ = &worker_rss.Add({{"stat", "sum"}});
  worker_rss_max_ = &worker_rss.Add({{"stat", "max"}});
  memory_trims_ = &prometheus::BuildCounter()
                       .Name("axqc_memory_trims_total")
                       .Help(
                           "Free memory given back to the operating system after big checks, by "
                           "reason: idle (no check for memory-trim-idle-seconds), rss (resident "
                           "size over memory-trim-rss), check (memory-trim-idle-seconds 0)")
                       .Register(r);
  webhook_deliveries_ =
      &prometheus::BuildCounter()
           .Name("axqc_webhook_deliveries_total")
           .Help(
               "Registry webhook deliveries by source (huggingface, mlflow) and outcome: the "
               "verdict (conformant, non_conformant, not_applicable, invalid_input) or "
               "download_failed, policy_refused, check_failed, writeback_failed when it ended; "
               "retry (an attempt failed, another follows); duplicate, ignored when answered")
           .Register(r);
  accept_errors_ = &prometheus::BuildCounter()
                        .Name("axqc_accept_errors_total")
                        .Help(
                            "Failed accepts of the HTTP listener, by reason: emfile, enfile "
                            "(descriptor limits), enobufs, enomem, other; it backs off after each")
                        .Register(r);
  http_refused_ = &prometheus::BuildCounter()
                       .Name("axqc_http_connections_refused_total")
                       .Help("HTTP connections answered 503 and closed: http-max-connections open")
                       .Register(r)
                       .Add({});
  http_connections_ = &prometheus::BuildGauge()
                           .Name("axqc_http_connections")
                           .Help("HTTP connections open")
                           .Register(r)
                           .Add({});
  prometheus::BuildGauge()
      .Name("axqc_build_info")
      .Help("Always 1; labels carry the checker version and rule-set version")
      .Register(r)
      .Add({{"version", std::string(ToolVersion())},
            {"rule_set_version", std::string(kRuleSetVersion)}})
      .Set(1);
}

void Metrics::CountCheck(const std::string& verdict, const std::string& source) {
  checks_->Add({{"verdict", verdict}, {"source", source}}).Increment();
}

void Metrics::CountFindings(const v1::Report& report) {
  for (const auto& f : report.findings()) {
    findings_->Add({{"rule", f.rule()}, {"severity", SeverityLabel(f.severity())}}).Increment();
  }
}

void Metrics::CountCacheLookup(const std::string& result) {
  cache_lookups_->Add({{"result", result}}).Increment();
}

void Metrics::CountReportLookup(const std::string& result) {
  report_lookups_->Add({{"result", result}}).Increment();
}

void Metrics::CountRequest(const std::string& method, const std::string& code, double seconds) {
  requests_->Add({{"method", method}, {"code", code}}).Increment();
  request_duration_->Add({{"method", method}}, DurationBuckets()).Observe(seconds);
}

void Metrics::ObserveStage(const std::string& stage, double seconds) {
  check_duration_->Add({{"stage", stage}}, DurationBuckets()).Observe(seconds);
}

void Metrics::ObserveQueueWait(double seconds) { queue_wait_->Observe(seconds); }

void Metrics::AddUploadBytes(double bytes) { upload_bytes_->Increment(bytes); }

void Metrics::CountStoreError() { store_errors_->Increment(); }

void Metrics::CountClaimTakeover() { claim_takeovers_->Increment(); }

void Metrics::CountWorkerRestart(const std::string& cause) {
  worker_restarts_->Add({{"cause", cause}}).Increment();
}

void Metrics::CountAcceptError(const std::string& reason) {
  accept_errors_->Add({{"reason", reason}}).Increment();
}

void Metrics::CountWebhookDelivery(const std::string& source, const std::string& outcome) {
  webhook_deliveries_->Add({{"source", source}, {"outcome", outcome}}).Increment();
}

void Metrics::CountHttpConnectionRefused() { http_refused_->Increment(); }

void Metrics::CountMemoryTrim(const std::string& reason) {
  memory_trims_->Add({{"reason", reason}}).Increment();
}

void Metrics::CountWorkerCheck(const std::string& outcome) {
  worker_checks_->Add({{"outcome", outcome}}).Increment();
}

void Metrics::SetWorkerResidentBytes(double sum, double max) {
  worker_rss_sum_->Set(sum);
  worker_rss_max_->Set(max);
}

}  // namespace axqc::server
