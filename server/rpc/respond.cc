#include "rpc/respond.h"

#include <map>
#include <utility>

#include "axqc/render.h"
#include "axqc/wire/report_proto.h"
#include "labels.h"
#include "request_validation.h"

namespace axqc::server {

namespace {

// Fills `resp` with `cached` in the requested format; the report's file name becomes `name`
// when not empty.
void BuildResponse(const ServiceDeps& d, const std::string& request_id, const std::string& name,
                   const v1::CheckOptions& options, const CachedReport& cached,
                   v1::CacheResult cache, v1::CheckResponse* resp) {
  const v1::Report& report = cached.proto();
  resp->set_request_id(request_id);
  resp->set_sha256(report.model().sha256());
  resp->set_verdict(report.verdict());
  resp->set_cache(cache);
  resp->set_rule_set_version(report.rule_set_version());
  if (options.format() == v1::REPORT_FORMAT_JSON) {
    const bool rendered = cached.json_ready();
    const auto t0 = Clock::now();
    resp->set_report_json(cached.Json(name));
    // The stage counts the renderings, not the answers served from the kept text.
    if (!rendered) d.metrics->ObserveStage("render", SecondsSince(t0));
  } else {
    *resp->mutable_report() = report;
    if (!name.empty()) resp->mutable_report()->mutable_model()->set_file(name);
  }
}

}  // namespace

bool FillResponse(const ServiceDeps& d, const std::shared_ptr<CheckCall>& call,
                  const std::shared_ptr<const CachedReport>& cached, v1::CacheResult cache,
                  v1::CheckResponse* grpc_resp) {
  const v1::Report* report = &cached->proto();
  const auto fields = call->Snapshot();
  const bool borrow = grpc_resp != nullptr && fields.options.format() != v1::REPORT_FORMAT_JSON &&
                      (fields.name.empty() || fields.name == report->model().file());
  try {
    if (borrow) {
      auto& r = call->response;
      r.set_request_id(call->request_id);
      r.set_sha256(report->model().sha256());
      r.set_verdict(report->verdict());
      r.set_cache(cache);
      r.set_rule_set_version(report->rule_set_version());
      auto* shared = const_cast<v1::Report*>(report);  // read-only from here on
      r.unsafe_arena_set_allocated_report(shared);
      call->on_done = [call_raw = call.get(), grpc_resp, shared, keep = cached]() {
        for (auto* m : {grpc_resp, &call_raw->response}) {
          if (m->has_report() && &m->report() == shared) (void)m->unsafe_arena_release_report();
        }
      };
    } else {
      BuildResponse(d, call->request_id, fields.name, fields.options, *cached, cache,
                    &call->response);
    }
  } catch (const std::exception& e) {
    call->Finish(grpc::Status(grpc::StatusCode::INTERNAL,
                              std::string("cannot encode the report: ") + e.what()));
    return false;
  }
  call->Update([&](CallBase::Fields& f) {
    // A model with data files: the report's key (external_reads.h), not the one the request had.
    if (!report->model().sha256().empty()) f.sha256 = report->model().sha256();
    f.verdict = VerdictLabel(report->verdict());
    f.cache = CacheLabel(cache);
    f.errors = report->summary().errors();
    f.warnings = report->summary().warnings();
  });
  return true;
}

void RecordHistory(const ServiceDeps& d, const CheckCall& call, const v1::Report* report) {
  const auto fields = call.Snapshot();
  HistoryRow row;
  row.time_ms = NowMs();
  row.request_id = call.request_id;
  row.method = call.method;
  row.name = fields.name;
  row.source = fields.source;
  row.sha256 = fields.sha256;
  row.verdict = fields.verdict;
  row.cache = fields.cache;
  row.errors = fields.errors;
  row.warnings = fields.warnings;
  row.duration_ms = SecondsSince(call.start) * 1e3;
  row.labels = fields.labels;
  try {
    row.options = wire::OptionsKey(fields.options);
  } catch (const std::exception&) {
    // Options that never reached a check (an unknown chip): the row keeps the defaults.
  }
  if (!fields.options.targets().empty()) {
    // The chips as resolved (the cache key's order), so that group_by=axqc.target counts the
    // same request the same way however it named them.
    const auto core = wire::CoreOptions(fields.options);
    std::string chips;
    for (const auto& t : core.targets) chips += (chips.empty() ? "" : ",") + t;
    row.labels[kTargetLabel] = chips;
  }
  if (report != nullptr) {
    std::map<std::pair<std::string, std::string>, std::uint64_t> tally;
    for (const auto& f : report->findings()) {
      const char* sev = f.severity() == v1::SEVERITY_ERROR  ? "error"
                        : f.severity() == v1::SEVERITY_WARN ? "warn"
                                                            : "info";
      ++tally[{f.rule(), sev}];
    }
    for (const auto& [k, n] : tally) row.rules.push_back(RuleTally{k.first, k.second, n});
  }
  try {
    d.store->AppendHistory(row);
  } catch (const StoreError& e) {
    d.metrics->CountStoreError();
    d.logger->Warn("history write failed", {{"error", e.what()}, {"request_id", call.request_id}});
  }
}

void RespondWithReport(const ServiceDeps& d, const std::shared_ptr<CheckCall>& call,
                       const std::shared_ptr<const CachedReport>& report, v1::CacheResult cache) {
  if (call->cancelled.load() || call->finished()) return;
  if (!FillResponse(d, call, report, cache, nullptr)) return;
  if (!call->Claim()) return;
  RecordHistory(d, *call, &report->proto());
  d.metrics->CountCheck(VerdictLabel(report->proto().verdict()), call->Snapshot().source);
  d.metrics->CountFindings(report->proto());
  call->Complete(grpc::Status::OK);
}

void RespondInputError(const ServiceDeps& d, const std::shared_ptr<CheckCall>& call,
                       const std::string& message) {
  call->Update([](CallBase::Fields& f) {
    f.verdict = "invalid_input";
    f.cache = "miss";
  });
  if (!call->Claim()) return;
  RecordHistory(d, *call, nullptr);
  d.metrics->CountCheck("invalid_input", call->Snapshot().source);
  call->Complete(Invalid("not a readable ONNX model: " + message));
}

}  // namespace axqc::server

namespace axqc::server {

void RespondCheckerFailure(const ServiceDeps& d, const std::shared_ptr<CheckCall>& call,
                           CheckerFailure::Cause cause, const std::string& message,
                           bool remembered) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  if (cause == CheckerFailure::Cause::kMemory) code = grpc::StatusCode::RESOURCE_EXHAUSTED;
  if (cause == CheckerFailure::Cause::kCpuTime || cause == CheckerFailure::Cause::kDeadline) {
    code = grpc::StatusCode::DEADLINE_EXCEEDED;
  }
  if (cause == CheckerFailure::Cause::kUnavailable) code = grpc::StatusCode::UNAVAILABLE;
  call->Update([remembered](CallBase::Fields& f) {
    f.verdict = "checker_failed";
    f.cache = remembered ? "failure_memory" : "miss";
  });
  if (!call->Claim()) return;
  RecordHistory(d, *call, nullptr);
  d.metrics->CountCheck("checker_failed", call->Snapshot().source);
  std::string text = message;
  if (remembered) {
    text += "; remembered from an earlier check of this model, not checked again for up to " +
            std::to_string(static_cast<long long>(d.failures->seconds())) +
            " s (worker-failure-memory-seconds)";
  }
  d.logger->Warn("check failed in the worker process", {{"request_id", call->request_id},
                                                        {"model_sha256", call->Snapshot().sha256},
                                                        {"error", message},
                                                        {"remembered", remembered}});
  call->Complete(grpc::Status(code, text));
}

}  // namespace axqc::server
