// GetStats: verdict counts, gate outcomes and failing rules from the request history.
#include <google/protobuf/util/time_util.h>

#include <boost/asio/post.hpp>
#include <map>
#include <string>
#include <utility>

#include "request_validation.h"
#include "rpc/handlers.h"

namespace axqc::server {

using google::protobuf::util::TimeUtil;

namespace {

bool TimestampValid(const google::protobuf::Timestamp& t) {
  return t.seconds() >= TimeUtil::kTimestampMinSeconds &&
         t.seconds() <= TimeUtil::kTimestampMaxSeconds && t.nanos() >= 0 && t.nanos() < 1000000000;
}

bool DurationValid(const google::protobuf::Duration& d) {
  return d.seconds() >= TimeUtil::kDurationMinSeconds &&
         d.seconds() <= TimeUtil::kDurationMaxSeconds && d.nanos() > -1000000000 &&
         d.nanos() < 1000000000 && !(d.seconds() > 0 && d.nanos() < 0) &&
         !(d.seconds() < 0 && d.nanos() > 0);
}

// Unset `until` means "up to and including now".
std::int64_t UntilMs(const v1::GetStatsRequest& req) {
  return req.has_until() ? TimeUtil::TimestampToMilliseconds(req.until()) : NowMs() + 1;
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

grpc::Status GetStatsRpc::Validate(const Request& req) {
  if (req.has_until() && !TimestampValid(req.until())) {
    return Invalid("until is not a valid timestamp");
  }
  if (req.has_since() && !TimestampValid(req.since())) {
    return Invalid("since is not a valid timestamp");
  }
  if (req.has_window() &&
      (!DurationValid(req.window()) || TimeUtil::DurationToMilliseconds(req.window()) < 0)) {
    return Invalid("window must be a non-negative duration");
  }
  if (req.has_since()) {
    const std::int64_t until_ms = UntilMs(req);
    if (TimeUtil::TimestampToMilliseconds(req.since()) > until_ms) {
      return Invalid("since (" + TimeUtil::ToString(req.since()) + ") is after until (" +
                     TimeUtil::ToString(TimeUtil::MillisecondsToTimestamp(until_ms)) + ")");
    }
  }
  if (!req.group_by().empty() && !ValidToken(req.group_by(), 63, false)) {
    return Invalid("group_by must be a label key ([A-Za-z0-9_.-]{1,63})");
  }
  if (auto s = ValidateLabels(req.label_filter(), "label_filter"); !s.ok()) return s;
  if (req.top_rules() > 100) return Invalid("top_rules is at most 100");
  return grpc::Status::OK;
}

void GetStatsRpc::Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                      const Request& req, Response* /*grpc_resp*/) {
  StatsQuery q;
  q.until_ms = UntilMs(req);
  if (req.has_since()) {
    q.since_ms = TimeUtil::TimestampToMilliseconds(req.since());
  } else if (req.has_window()) {
    q.since_ms = q.until_ms - TimeUtil::DurationToMilliseconds(req.window());
  }
  q.group_by = req.group_by();
  q.label_filter =
      std::map<std::string, std::string>(req.label_filter().begin(), req.label_filter().end());
  q.top_rules = req.top_rules() == 0 ? 10 : req.top_rules();

  boost::asio::post(*s.d.io, [&d = s.d, call = call, q = std::move(q)]() {
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
    if (q.since_ms) *out.mutable_since() = TimeUtil::MillisecondsToTimestamp(*q.since_ms);
    *out.mutable_until() = TimeUtil::MillisecondsToTimestamp(q.until_ms);
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
    }
    call->Finish(grpc::Status::OK);
  });
}

}  // namespace axqc::server
