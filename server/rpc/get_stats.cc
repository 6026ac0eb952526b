// GetStats: verdict counts, gate outcomes and failing rules from the request history.
#include <boost/asio/post.hpp>
#include <map>
#include <string>
#include <utility>

#include "request_validation.h"
#include "rpc/handlers.h"

namespace axqc::server {

namespace {

// Start of the bucket of width `step` that holds `t` (epoch-aligned; t may be negative).
std::int64_t BucketStart(std::int64_t t, std::int64_t step) {
  const std::int64_t r = t % step;
  return r < 0 ? t - r - step : t - r;
}

// Unset `until` means "up to and including now".
std::int64_t UntilMs(const v1::GetStatsRequest& req) {
  return req.has_until() ? MsOf(req.until()) : NowMs() + 1;
}

void Fill(const VerdictTally& t, v1::VerdictCounts* out) {
  out->set_requests(t.requests());
  out->set_conformant(t.conformant);
  out->set_non_conformant(t.non_conformant);
  out->set_not_applicable(t.not_applicable);
  out->set_invalid_input(t.invalid_input);
  // No decided request in the window: no pass rate (unset), rather than a made-up 0 %.
  const std::uint64_t decided = t.conformant + t.non_conformant;
  if (decided > 0) {
    out->set_pass_rate(static_cast<double>(t.conformant) / static_cast<double>(decided));
  }
  out->set_gated(t.gated);
  out->set_gate_passed(t.gate_passed);
  out->set_waived_findings(t.waived_findings);
  out->set_baselined_findings(t.baselined_findings);
}

}  // namespace

// Every bound is checked here (request_validation.h), so that Run's arithmetic stays within the
// range of Timestamp.
grpc::Status GetStatsRpc::Validate(const Request& req) {
  return ValidateStatsRequest(req, NowMs());
}

void GetStatsRpc::Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                      const Request& req, Response* /*grpc_resp*/) {
  StatsQuery q;
  q.until_ms = UntilMs(req);
  if (req.has_since()) {
    q.since_ms = MsOf(req.since());
  } else if (req.has_window()) {
    q.since_ms = q.until_ms - MsOf(req.window());
  }
  q.group_by = req.group_by();
  q.label_filter =
      std::map<std::string, std::string>(req.label_filter().begin(), req.label_filter().end());
  q.top_rules = req.top_rules() == 0 ? 10 : req.top_rules();
  if (req.has_step()) q.step_ms = MsOf(req.step());

  boost::asio::post(*s.deps.io, [&d = s.deps, call = call, q = std::move(q)]() {
    if (call->cancelled.load()) return;
    StatsResult r;
    try {
      r = d.store->QueryStats(q);
    } catch (const StoreError& e) {
      d.metrics->CountStoreError();
      call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                std::string("store unavailable: ") + e.what()));
      return;
    }
    auto& out = call->response;
    if (q.since_ms) *out.mutable_since() = TimestampOfMs(*q.since_ms);
    *out.mutable_until() = TimestampOfMs(q.until_ms);
    Fill(r.total, out.mutable_total());
    for (const auto& [value, tally] : r.groups) {
      auto* g = out.add_groups();
      g->set_label_value(value);
      Fill(tally, g->mutable_counts());
    }
    for (const auto& rs : r.top_failing_rules) {
      auto* rc = out.add_top_failing_rules();
      rc->set_rule(rs.rule);
      rc->set_requests(rs.requests);
      rc->set_findings(rs.findings);
      rc->set_models(rs.models);
    }
    if (q.step_ms > 0) {
      // Every bucket from the window's start (or the first request's bucket) to the bucket that
      // holds the window's last millisecond, empty ones included.
      std::int64_t first = 0;
      if (q.since_ms) {
        first = BucketStart(*q.since_ms, q.step_ms);
      } else if (!r.series.empty()) {
        first = r.series.front().first;
      } else {
        first = BucketStart(q.until_ms - 1, q.step_ms);
      }
      const std::int64_t last = BucketStart(q.until_ms - 1, q.step_ms);
      std::size_t next = 0;
      for (std::int64_t start = first; start <= last; start += q.step_ms) {
        auto* b = out.add_series();
        *b->mutable_start() = TimestampOfMs(start);
        VerdictTally empty;
        const bool has = next < r.series.size() && r.series[next].first == start;
        Fill(has ? r.series[next].second : empty, b->mutable_counts());
        if (has) ++next;
        if (out.series_size() >= kMaxStatsBuckets) break;
      }
    }
    call->Finish(grpc::Status::OK);
  });
}

}  // namespace axqc::server
