#include "service.h"

#include <google/protobuf/util/time_util.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "auth.h"
#include "axqc/catalog.h"
#include "axqc/render.h"
#include "report_proto.h"
#include "request_validation.h"
#include "sha256.h"
#include "status_name.h"
#include "upload_assembler.h"
#include "url_fetch.h"

namespace axqc::server {

using Clock = std::chrono::steady_clock;
using google::protobuf::util::TimeUtil;

namespace {

std::string RandomRequestId() {
  unsigned char b[8];
  if (RAND_bytes(b, sizeof(b)) != 1) {
    const auto t = static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
    for (std::size_t i = 0; i < sizeof(b); ++i) b[i] = static_cast<unsigned char>(t >> (8 * i));
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

std::string MetadataValue(const grpc::CallbackServerContext* ctx, const char* key) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(key);
  if (it == md.end()) return {};
  return std::string(it->second.data(), it->second.size());
}

const char* VerdictLabel(v1::Verdict v) {
  switch (v) {
    case v1::VERDICT_CONFORMANT:
      return "conformant";
    case v1::VERDICT_NON_CONFORMANT:
      return "non_conformant";
    case v1::VERDICT_NOT_APPLICABLE:
      return "not_applicable";
    default:
      return "unknown";
  }
}

const char* CacheLabel(v1::CacheResult c) {
  switch (c) {
    case v1::CACHE_RESULT_MISS:
      return "miss";
    case v1::CACHE_RESULT_MEMORY_HIT:
      return "memory_hit";
    case v1::CACHE_RESULT_STORE_HIT:
      return "store_hit";
    case v1::CACHE_RESULT_SHARED:
      return "shared";
    default:
      return "";
  }
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

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

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Per-RPC state shared by the reactor and the asynchronous work. Completion happens exactly once:
// whoever wins Claim() (the pipeline, or OnCancel) calls Complete(), which records the request
// (metric, log line) and hands the status to the reactor.

class CheckerService::CallBase : public std::enable_shared_from_this<CallBase> {
 public:
  // Mutable request facts, written by whichever thread works on the request.
  struct Fields {
    std::string source;  // "path", "url", "inline", "upload"
    std::string name;
    std::string url;  // redacted
    std::string sha256;
    std::uint64_t size_bytes = 0;
    std::string verdict;
    std::string cache;
    std::uint64_t errors = 0;
    std::uint64_t warnings = 0;
    std::map<std::string, std::string> labels;
    v1::CheckOptions options;
    bool record = true;  // a check request (history row, checks metric); false: plain GetReport
  };

  CallBase(const ServiceDeps& d, KeyWatch* key_watch, std::string method_name,
           grpc::CallbackServerContext* ctx)
      : deps(d),
        watch(key_watch),
        method(std::move(method_name)),
        start(Clock::now()),
        deadline(ctx->deadline()),
        peer(ctx->peer()) {
    std::string id = MetadataValue(ctx, "x-request-id");
    request_id = ValidToken(id, 64, true) ? id : RandomRequestId();
    ctx->AddInitialMetadata("x-request-id", request_id);
  }
  virtual ~CallBase() = default;

  template <typename F>
  void Update(F&& f) {
    std::lock_guard<std::mutex> lock(fields_mu_);
    f(fields_);
  }
  Fields Snapshot() const {
    std::lock_guard<std::mutex> lock(fields_mu_);
    return fields_;
  }

  bool Claim() { return !finished_.exchange(true); }
  bool finished() const { return finished_.load(); }
  bool Finish(const grpc::Status& s) {
    if (!Claim()) return false;
    Complete(s);
    return true;
  }

  // After a successful Claim().
  void Complete(const grpc::Status& status) {
    auto self = shared_from_this();
    const double seconds = SecondsSince(start);
    const char* code = StatusCodeName(status.error_code());
    deps.metrics->CountRequest(method, code, seconds);
    const Fields f = Snapshot();
    nlohmann::json j = {{"request_id", request_id},
                        {"method", method},
                        {"code", code},
                        {"duration_ms", std::round(seconds * 1e6) / 1e3},
                        {"peer", peer}};
    if (!f.source.empty()) j["source"] = f.source;
    if (!f.name.empty()) j["model_name"] = f.name;
    if (!f.url.empty()) j["url"] = f.url;
    if (!f.sha256.empty()) j["model_sha256"] = f.sha256;
    if (f.size_bytes > 0) j["size_bytes"] = f.size_bytes;
    if (!f.verdict.empty()) {
      j["verdict"] = f.verdict;
      j["errors"] = f.errors;
      j["warnings"] = f.warnings;
    }
    if (!f.cache.empty()) j["cache"] = f.cache;
    if (!f.labels.empty()) j["labels"] = f.labels;
    if (!status.ok()) j["error"] = status.error_message();
    // The check of this key is over for this request: lookups waiting for it look again.
    std::string held;
    {
      std::lock_guard<std::mutex> lock(waiter_mu_);
      held = std::move(held_key_);
      held_key_.clear();
      released_ = true;
    }
    if (!held.empty()) watch->Release(held);
    LogLevel level = LogLevel::kInfo;
    switch (status.error_code()) {
      case grpc::StatusCode::INTERNAL:
      case grpc::StatusCode::UNKNOWN:
      case grpc::StatusCode::DATA_LOSS:
        level = LogLevel::kError;
        break;
      case grpc::StatusCode::RESOURCE_EXHAUSTED:
      case grpc::StatusCode::UNAVAILABLE:
        level = LogLevel::kWarn;
        break;
      default:
        break;
    }
    deps.logger->Log(level, "request", std::move(j));
    finisher(status);
  }

  // Marks `key` as being checked for this request until it completes (first key only).
  void HoldKey(const std::string& key) {
    {
      std::lock_guard<std::mutex> lock(waiter_mu_);
      if (released_ || !held_key_.empty()) return;
      held_key_ = key;
    }
    watch->Hold(key);
  }

  void SetWaiter(const std::string& key, std::uint64_t id) {
    {
      std::lock_guard<std::mutex> lock(waiter_mu_);
      if (!cancelled.load()) {
        waiter_key_ = key;
        waiter_id_ = id;
        return;
      }
    }
    deps.engine->Cancel(key, id);
  }

  // From the reactor's OnCancel: stop waiting, free the queue slot, finish with the right code.
  void OnCancelled() {
    cancelled.store(true);
    std::string key;
    std::uint64_t id = 0;
    {
      std::lock_guard<std::mutex> lock(waiter_mu_);
      key = std::move(waiter_key_);
      id = std::exchange(waiter_id_, 0);
    }
    if (id != 0) deps.engine->Cancel(key, id);
    if (Claim()) {
      // The client's own deadline fires first (the server's copy starts when the call arrives)
      // and arrives as a cancellation shortly before the server's deadline: within a second of
      // the deadline, count it as DEADLINE_EXCEEDED.
      const bool expired = deadline != std::chrono::system_clock::time_point::max() &&
                           std::chrono::system_clock::now() + std::chrono::seconds(1) >= deadline;
      Complete(expired ? grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline exceeded")
                       : grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client"));
    }
  }

  const ServiceDeps& deps;
  KeyWatch* const watch;
  const std::string method;
  const Clock::time_point start;
  const std::chrono::system_clock::time_point deadline;
  const std::string peer;
  std::string request_id;
  std::string expected_sha256;  // Check only; written before any asynchronous work starts
  std::mutex stream_mu;         // Upload: orders StartRead against Finish
  std::atomic<bool> cancelled{false};
  // Set by the reactor: sends the status (and on OK the response) to the client.
  std::function<void(const grpc::Status&)> finisher;
  // Run by the reactor once gRPC is done with the call (the response has been sent or dropped).
  std::function<void()> on_done;

 private:
  std::atomic<bool> finished_{false};
  mutable std::mutex fields_mu_;
  Fields fields_;
  std::mutex waiter_mu_;
  std::string waiter_key_;
  std::uint64_t waiter_id_ = 0;
  std::string held_key_;   // HoldKey
  bool released_ = false;  // Complete() ran: no more holds
};

template <typename Resp>
class CheckerService::Call final : public CheckerService::CallBase {
 public:
  using CallBase::CallBase;
  Resp response;  // copied to gRPC's response on OK
};

namespace {

class UnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit UnaryReactor(std::shared_ptr<CheckerService::CallBase> call) : call_(std::move(call)) {}
  void OnCancel() override { call_->OnCancelled(); }
  void OnDone() override {
    if (call_->on_done) call_->on_done();
    delete this;
  }

 private:
  std::shared_ptr<CheckerService::CallBase> call_;
};

template <typename Resp>
std::pair<UnaryReactor*, std::shared_ptr<CheckerService::Call<Resp>>> StartUnary(
    const ServiceDeps& d, KeyWatch* watch, const char* method, grpc::CallbackServerContext* ctx,
    Resp* resp) {
  auto call = std::make_shared<CheckerService::Call<Resp>>(d, watch, method, ctx);
  auto* reactor = new UnaryReactor(call);
  auto* raw = call.get();
  call->finisher = [reactor, resp, raw](const grpc::Status& s) {
    if (s.ok()) *resp = std::move(raw->response);
    reactor->Finish(s);
  };
  return {reactor, std::move(call)};
}

grpc::Status Admit(const ServiceDeps& d, const grpc::CallbackServerContext* ctx) {
  if (d.draining->load()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
  }
  if (!d.auth_token.empty()) {
    if (!BearerTokenMatches(MetadataValue(ctx, "authorization"), d.auth_token)) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "missing or wrong bearer token (authorization metadata)");
    }
  }
  return grpc::Status::OK;
}

// Fills `resp` with `report` in the requested format; the report's file name becomes `name`
// when not empty.
void BuildResponse(const ServiceDeps& d, const std::string& request_id, const std::string& name,
                   const v1::CheckOptions& options, const v1::Report& report, v1::CacheResult cache,
                   v1::CheckResponse* resp) {
  resp->set_request_id(request_id);
  resp->set_sha256(report.model().sha256());
  resp->set_verdict(report.verdict());
  resp->set_cache(cache);
  resp->set_rule_set_version(report.rule_set_version());
  if (options.format() == v1::REPORT_FORMAT_JSON) {
    const auto t0 = Clock::now();
    Report core = service::FromProto(report);
    if (!name.empty()) core.model.file = name;
    resp->set_report_json(RenderJson(core));
    d.metrics->ObserveStage("render", SecondsSince(t0));
  } else {
    *resp->mutable_report() = report;
    if (!name.empty()) resp->mutable_report()->mutable_model()->set_file(name);
  }
}

}  // namespace

CheckerService::CheckerService(ServiceDeps deps)
    : d_(std::move(deps)),
      upload_budget_(d_.config->max_inflight_upload_bytes, &d_.metrics->inflight_upload_bytes(),
                     "the server holds too many bytes of uploads in progress right now; retry "
                     "later"),
      upload_watchdog_(std::chrono::milliseconds(
          static_cast<std::int64_t>(std::llround(d_.config->upload_idle_timeout_seconds * 1e3)))),
      // A key nobody here works on any more gives up this server's claim in a shared store (taken
      // when an upload announced its sha256), unless a check of it is still running (the engine
      // releases that claim when the check ends). On the I/O pool: never wait for the store on a
      // gRPC thread.
      watch_([this](const std::string& key) {
        if (d_.engine->HasFlight(key)) return;
        boost::asio::post(*d_.io, [store = d_.store, key] { store->ReleaseClaim(key); });
      }) {}

// ------------------------------------------------------------------------------------------------
// Check and Upload pipeline

void CheckerService::StoreResult(const ServiceDeps& d, const CheckJob& job,
                                 const std::shared_ptr<const v1::Report>& report) {
  const auto t0 = Clock::now();
  try {
    StoredReport r;
    r.cache_key = job.key;
    r.sha256 = job.sha256;
    r.options = job.options_key;
    r.rule_set_version = std::string(kRuleSetVersion);
    r.verdict = VerdictLabel(report->verdict());
    r.report = report->SerializeAsString();
    d.store->PutReport(r);
  } catch (const StoreError& e) {
    d.metrics->CountStoreError();
    d.logger->Warn("store write failed", {{"error", e.what()}, {"model_sha256", job.sha256}});
  }
  d.cache->Put(job.key, report);
  d.metrics->cache_bytes().Set(static_cast<double>(d.cache->bytes()));
  d.metrics->cache_entries().Set(static_cast<double>(d.cache->entries()));
  d.metrics->ObserveStage("store", SecondsSince(t0));
}

void CheckerService::RecordHistory(const CheckCall& call, const v1::Report* report) {
  const auto fields = call.Snapshot();
  HistoryRow row;
  row.time_ms = NowMs();
  row.request_id = call.request_id;
  row.method = call.method;
  row.source = fields.source;
  row.sha256 = fields.sha256;
  row.verdict = fields.verdict;
  row.cache = fields.cache;
  row.errors = fields.errors;
  row.warnings = fields.warnings;
  row.duration_ms = SecondsSince(call.start) * 1e3;
  row.labels = fields.labels;
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
    d_.store->AppendHistory(row);
  } catch (const StoreError& e) {
    d_.metrics->CountStoreError();
    d_.logger->Warn("history write failed", {{"error", e.what()}, {"request_id", call.request_id}});
  }
}

// Fills the call's response with `report` and records its verdict in the call's fields; false
// when encoding failed (the call is then finished with INTERNAL). With `grpc_resp` (GetReport), a
// protobuf response without a renamed file borrows the cached (immutable) report instead of
// copying it; the reactor gives it back when gRPC is done with the call.
bool CheckerService::FillResponse(const std::shared_ptr<CheckCall>& call,
                                  const std::shared_ptr<const v1::Report>& report,
                                  v1::CacheResult cache, v1::CheckResponse* grpc_resp) {
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
      auto* shared = const_cast<v1::Report*>(report.get());  // read-only from here on
      r.unsafe_arena_set_allocated_report(shared);
      call->on_done = [call_raw = call.get(), grpc_resp, shared, keep = report]() {
        for (auto* m : {grpc_resp, &call_raw->response}) {
          if (m->has_report() && &m->report() == shared) (void)m->unsafe_arena_release_report();
        }
      };
    } else {
      BuildResponse(d_, call->request_id, fields.name, fields.options, *report, cache,
                    &call->response);
    }
  } catch (const std::exception& e) {
    call->Finish(grpc::Status(grpc::StatusCode::INTERNAL,
                              std::string("cannot encode the report: ") + e.what()));
    return false;
  }
  call->Update([&](CallBase::Fields& f) {
    f.verdict = VerdictLabel(report->verdict());
    f.cache = CacheLabel(cache);
    f.errors = report->summary().errors();
    f.warnings = report->summary().warnings();
  });
  return true;
}

void CheckerService::Respond(const std::shared_ptr<CheckCall>& call,
                             std::shared_ptr<const v1::Report> report, v1::CacheResult cache) {
  if (call->cancelled.load() || call->finished()) return;
  if (!FillResponse(call, report, cache, nullptr)) return;
  if (!call->Claim()) return;
  RecordHistory(*call, report.get());
  d_.metrics->CountCheck(VerdictLabel(report->verdict()), call->Snapshot().source);
  d_.metrics->CountFindings(*report);
  call->Complete(grpc::Status::OK);
}

void CheckerService::RecordInputError(const std::shared_ptr<CheckCall>& call,
                                      const std::string& message) {
  call->Update([](CallBase::Fields& f) {
    f.verdict = "invalid_input";
    f.cache = "miss";
  });
  if (!call->Claim()) return;
  RecordHistory(*call, nullptr);
  d_.metrics->CountCheck("invalid_input", call->Snapshot().source);
  call->Complete(Invalid("not a readable ONNX model: " + message));
}

void CheckerService::Process(const std::shared_ptr<CheckCall>& call, LoadedModel model) {
  if (call->cancelled.load() || call->finished()) return;
  const auto fields = call->Snapshot();
  call->Update([&](CallBase::Fields& f) {
    f.sha256 = model.sha256;
    f.size_bytes = model.bytes->size();
  });
  const std::string& expected = call->expected_sha256;
  if (!expected.empty() && expected != model.sha256) {
    model.bytes.reset();  // give the memory budget back before answering
    call->Finish(Invalid("sha256 mismatch: declared " + expected + ", received bytes hash to " +
                         model.sha256));
    return;
  }
  const std::string key = service::CacheKey(model.sha256, fields.options);
  call->HoldKey(key);  // lookups of this model wait for this request's answer
  if (auto hit = d_.cache->Get(key)) {
    model.bytes.reset();
    d_.metrics->CountCacheLookup("memory_hit");
    Respond(call, std::move(hit), v1::CACHE_RESULT_MEMORY_HIT);
    return;
  }
  try {
    if (auto blob = d_.store->GetReport(key)) {
      auto report = std::make_shared<v1::Report>();
      if (report->ParseFromString(*blob)) {
        d_.cache->Put(key, report);
        d_.metrics->cache_bytes().Set(static_cast<double>(d_.cache->bytes()));
        d_.metrics->cache_entries().Set(static_cast<double>(d_.cache->entries()));
        d_.metrics->CountCacheLookup("store_hit");
        model.bytes.reset();
        Respond(call, std::move(report), v1::CACHE_RESULT_STORE_HIT);
        return;
      }
      d_.metrics->CountStoreError();
      d_.logger->Warn("stored report unreadable; checking again", {{"model_sha256", model.sha256}});
    }
  } catch (const StoreError& e) {
    d_.metrics->CountStoreError();
    d_.logger->Warn("store read failed", {{"error", e.what()}, {"model_sha256", model.sha256}});
  }

  CheckJob job;
  job.key = key;
  job.sha256 = model.sha256;
  job.name = fields.name;
  job.options_key = service::OptionsKey(fields.options);
  job.options = service::CoreOptions(fields.options);
  job.bytes = std::move(model.bytes);
  ClaimAndSubmit(call, std::move(job));
}

void CheckerService::ClaimAndSubmit(const std::shared_ptr<CheckCall>& call, CheckJob job) {
  if (call->cancelled.load() || call->finished()) return;
  bool claimed = false;
  try {
    claimed = d_.store->TryClaim(job.key);
  } catch (const StoreError& e) {
    d_.metrics->CountStoreError();
    call->Finish(
        grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string("store unavailable: ") + e.what()));
    return;
  }
  if (claimed) {
    SubmitCheck(call, std::move(job));
    return;
  }
  // Another server sharing the store is checking this model: wait for its report.
  d_.metrics->claim_waits().Increment();
  WaitForPeer(call, std::move(job));
}

void CheckerService::WaitForPeer(const std::shared_ptr<CheckCall>& call, CheckJob job) {
  auto timer = std::make_shared<boost::asio::steady_timer>(d_.io->get_executor(),
                                                           d_.store->ClaimPollInterval());
  timer->async_wait([this, call, timer, job = std::move(job)](const boost::system::error_code& ec) {
    auto done_waiting = [&] { d_.metrics->claim_waits().Decrement(); };
    // A cancelled call (client gone, deadline, server past its grace period) stops waiting.
    if (ec || call->cancelled.load() || call->finished()) {
      done_waiting();
      return;
    }
    try {
      if (auto blob = d_.store->GetReport(job.key)) {
        auto report = std::make_shared<v1::Report>();
        if (report->ParseFromString(*blob)) {
          done_waiting();
          d_.cache->Put(job.key, report);
          d_.metrics->cache_bytes().Set(static_cast<double>(d_.cache->bytes()));
          d_.metrics->cache_entries().Set(static_cast<double>(d_.cache->entries()));
          d_.metrics->CountCacheLookup("shared");
          Respond(call, std::move(report), v1::CACHE_RESULT_SHARED);
          return;
        }
      }
      // No report yet: the claim is still held (wait on), was released without a report, or its
      // holder stopped renewing it (take it over).
      if (!d_.store->TryClaim(job.key)) {
        WaitForPeer(call, job);
        return;
      }
    } catch (const StoreError& e) {
      done_waiting();
      d_.metrics->CountStoreError();
      call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                std::string("store unavailable: ") + e.what()));
      return;
    }
    done_waiting();
    d_.metrics->CountClaimTakeover();
    d_.logger->Info("claim taken after waiting: checking here",
                    {{"request_id", call->request_id}, {"model_sha256", job.sha256}});
    SubmitCheck(call, job);
  });
}

void CheckerService::SubmitCheck(const std::shared_ptr<CheckCall>& call, CheckJob job) {
  const std::string key = job.key;
  auto ticket = d_.engine->Submit(
      std::move(job),
      [this, call](const CheckOutcome& o) {
        switch (o.kind) {
          case CheckOutcome::Kind::kReport:
            Respond(call, o.report, o.shared ? v1::CACHE_RESULT_SHARED : v1::CACHE_RESULT_MISS);
            break;
          case CheckOutcome::Kind::kInputError:
            RecordInputError(call, o.error);
            break;
          case CheckOutcome::Kind::kShutdown:
            call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, o.error));
            break;
          case CheckOutcome::Kind::kInternalError:
            call->Finish(grpc::Status(grpc::StatusCode::INTERNAL, "checker failed: " + o.error));
            break;
        }
      },
      // Counted before the check can complete (and the client see its answer).
      [this](CheckEngine::SubmitStatus st) {
        if (st == CheckEngine::SubmitStatus::kJoined) {
          d_.metrics->CountCacheLookup("shared");
        } else if (st != CheckEngine::SubmitStatus::kStopped) {
          d_.metrics->CountCacheLookup("miss");
        }
      });
  switch (ticket.status) {
    case CheckEngine::SubmitStatus::kQueued:
    case CheckEngine::SubmitStatus::kJoined:
      call->SetWaiter(key, ticket.waiter);
      break;
    case CheckEngine::SubmitStatus::kQueueFull:
      d_.store->ReleaseClaim(key);
      call->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                "the check queue is full (" +
                                    std::to_string(d_.config->queue_capacity) +
                                    " waiting); retry later"));
      break;
    case CheckEngine::SubmitStatus::kStopped:
      d_.store->ReleaseClaim(key);
      call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
      break;
  }
}

grpc::ServerUnaryReactor* CheckerService::Check(grpc::CallbackServerContext* ctx,
                                                const v1::CheckRequest* req,
                                                v1::CheckResponse* resp) {
  auto [reactor, call] = StartUnary(d_, &watch_, "Check", ctx, resp);
  if (auto s = Admit(d_, ctx); !s.ok()) {
    call->Finish(s);
    return reactor;
  }
  grpc::Status status = ValidateLabels(req->labels(), "labels");
  if (status.ok()) status = ValidateOptions(req->options());
  if (status.ok() && !req->expected_sha256().empty() &&
      !service::IsSha256Hex(req->expected_sha256())) {
    status = Invalid("expected_sha256 must be 64 lowercase hex characters");
  }
  if (!status.ok()) {
    call->Finish(status);
    return reactor;
  }
  call->expected_sha256 = req->expected_sha256();
  call->Update([&](CallBase::Fields& f) {
    f.labels = std::map<std::string, std::string>(req->labels().begin(), req->labels().end());
    f.options = req->options();
  });

  switch (req->model_case()) {
    case v1::CheckRequest::kContent: {
      const std::string& content = req->content();
      call->Update([&](CallBase::Fields& f) {
        f.source = "inline";
        f.name = req->name().empty() ? "inline.onnx" : req->name();
      });
      if (content.size() > d_.config->max_inline_bytes) {
        call->Finish(grpc::Status(
            grpc::StatusCode::RESOURCE_EXHAUSTED,
            "inline content is " + std::to_string(content.size()) +
                " bytes, over the server's limit of " +
                std::to_string(d_.config->max_inline_bytes) +
                " bytes (max-inline-bytes); use Upload for bigger models (axqc check --server "
                "does)"));
        return reactor;
      }
      Reservation reservation(d_.budget);
      try {
        reservation.Grow(content.size());
      } catch (const SourceError& e) {
        call->Finish(e.status());
        return reactor;
      }
      auto bytes = AccountedBytes(std::string(content), std::move(reservation));
      boost::asio::post(*d_.io, [this, call = call, bytes = std::move(bytes)]() mutable {
        const auto t0 = Clock::now();
        LoadedModel model;
        model.sha256 = service::Sha256Hex(*bytes);
        model.bytes = std::move(bytes);
        d_.metrics->ObserveStage("load", SecondsSince(t0));
        Process(call, std::move(model));
      });
      return reactor;
    }
    case v1::CheckRequest::kPath: {
      call->Update([&](CallBase::Fields& f) {
        f.source = "path";
        f.name = req->name().empty() ? req->path() : req->name();
      });
      boost::asio::post(*d_.io, [this, call = call, path = req->path()]() {
        if (call->cancelled.load()) return;
        const auto t0 = Clock::now();
        try {
          LoadedModel model = d_.paths->Load(path, d_.config->max_model_bytes, *d_.budget);
          d_.metrics->ObserveStage("load", SecondsSince(t0));
          Process(call, std::move(model));
        } catch (const SourceError& e) {
          call->Finish(e.status());
        }
      });
      return reactor;
    }
    case v1::CheckRequest::kUrl: {
      ParsedUrl parsed;
      try {
        parsed = ParseUrl(req->url());
      } catch (const SourceError& e) {
        call->Update([&](CallBase::Fields& f) { f.source = "url"; });
        call->Finish(e.status());
        return reactor;
      }
      call->Update([&](CallBase::Fields& f) {
        f.source = "url";
        f.url = parsed.Redacted();
        f.name = req->name().empty() ? parsed.FileName() : req->name();
      });
      boost::asio::post(*d_.io, [this, call = call, url = req->url()]() {
        if (call->cancelled.load()) return;
        const auto t0 = Clock::now();
        UrlPolicy policy;
        policy.allow_hosts = d_.config->url_allow_hosts;
        policy.timeout = std::chrono::seconds(d_.config->url_timeout_seconds);
        policy.max_redirects = d_.config->url_max_redirects;
        policy.max_bytes = d_.config->max_model_bytes;
        try {
          LoadedModel model = FetchUrl(url, policy, *d_.budget, call->cancelled);
          d_.metrics->ObserveStage("load", SecondsSince(t0));
          Process(call, std::move(model));
        } catch (const SourceError& e) {
          call->Finish(e.status());
        }
      });
      return reactor;
    }
    case v1::CheckRequest::MODEL_NOT_SET:
      break;
  }
  call->Finish(Invalid("one of path, url or content is required"));
  return reactor;
}

// ------------------------------------------------------------------------------------------------
// Upload: client streaming. Reads are serialised by gRPC; OnCancel may run concurrently and only
// touches the thread-safe call state.

class CheckerService::UploadReactor final : public grpc::ServerReadReactor<v1::UploadRequest> {
 public:
  UploadReactor(CheckerService* service, grpc::CallbackServerContext* ctx,
                std::shared_ptr<CheckCall> call)
      : service_(service),
        ctx_(ctx),
        call_(std::move(call)),
        assembler_(service->d_.config->max_model_bytes, service->d_.budget,
                   &service->upload_budget_) {
    service_->d_.metrics->uploads_in_flight().Increment();
  }
  ~UploadReactor() override { EndReceiving(); }

  void Begin() {
    const auto seconds = std::chrono::duration<double>(service_->upload_watchdog_.timeout());
    idle_ = service_->upload_watchdog_.Watch([call = call_, seconds]() {
      std::ostringstream text;
      text << "no Upload message for " << seconds.count()
           << " s (the server's upload idle timeout); upload abandoned";
      call->Finish(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, text.str()));
    });
    StartRead(&msg_);
  }

  void OnReadDone(bool ok) override {
    if (call_->finished() || call_->cancelled.load()) {  // stop reading
      EndReceiving();
      return;
    }
    if (!ok) {
      // A failed read is either the client's half-close or a cancellation (then OnCancel
      // finishes the call).
      if (ctx_->IsCancelled()) {
        EndReceiving();
      } else {
        EndOfStream();
      }
      return;
    }
    IdleWatchdog::Touch(idle_);
    if (!assembler_.started() && msg_.part_case() == v1::UploadRequest::kMetadata) {
      const auto& m = msg_.metadata();
      call_->Update([&](CallBase::Fields& f) {
        f.source = "upload";
        f.name = m.file_name().empty() ? "upload.onnx" : m.file_name();
        f.labels = std::map<std::string, std::string>(m.labels().begin(), m.labels().end());
        f.options = m.options();
        f.size_bytes = m.size_bytes();
      });
      // The declared sha256 names the model before its bytes arrive: lookups of it wait for this
      // upload, and other servers sharing the store see this server's claim (it takes over the
      // reservation a hash-first lookup made for this upload, on whichever server).
      if (service::IsSha256Hex(m.sha256()) && ValidateOptions(m.options()).ok()) {
        const std::string key = service::CacheKey(m.sha256(), m.options());
        call_->HoldKey(key);
        boost::asio::post(*service_->d_.io, [store = service_->d_.store,
                                             metrics = service_->d_.metrics, key] {
          try {
            (void)store->TryClaim(key);
          } catch (const StoreError&) {
            metrics->CountStoreError();  // the check itself claims again (and reports the error)
          }
        });
      }
    }
    if (msg_.part_case() == v1::UploadRequest::kChunk) {
      service_->d_.metrics->AddUploadBytes(static_cast<double>(msg_.chunk().size()));
      const std::uint64_t limit = MessageLimit(*service_->d_.config);
      if (msg_.chunk().size() > limit) {
        EndReceiving();
        call_->Finish(
            grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                         "Upload chunk of " + std::to_string(msg_.chunk().size()) +
                             " bytes is over the server's limit of " + std::to_string(limit) +
                             " bytes per message; send the model in chunks of 64 KiB to 1 MiB"));
        return;
      }
    }
    if (grpc::Status s = assembler_.Add(msg_); !s.ok()) {
      EndReceiving();
      call_->Finish(s);
      return;
    }
    // Never start a read after Finish: the finisher takes the same lock (the mutex lives in the
    // call state, which outlives the reactor).
    std::lock_guard<std::mutex> lock(call_->stream_mu);
    if (!call_->finished()) StartRead(&msg_);
  }

  void OnCancel() override { call_->OnCancelled(); }
  void OnDone() override { delete this; }

 private:
  // The stream is over (half-close, failure, cancellation, timeout): stop the idle timer, free
  // what was received, count the upload out. Idempotent.
  void EndReceiving() {
    if (receiving_done_) return;
    receiving_done_ = true;
    service_->upload_watchdog_.Unwatch(idle_);
    idle_.reset();
    assembler_.Abort();
    service_->d_.metrics->uploads_in_flight().Decrement();
  }

  void EndOfStream() {
    service_->upload_watchdog_.Unwatch(idle_);
    LoadedModel model;
    grpc::Status s = assembler_.Finish(&model);
    call_->Update([&](CallBase::Fields& f) {
      if (!model.sha256.empty()) f.sha256 = model.sha256;
      if (model.bytes != nullptr) f.size_bytes = model.bytes->size();
    });
    EndReceiving();
    if (!s.ok()) {
      call_->Finish(s);
      return;
    }
    boost::asio::post(*service_->d_.io,
                      [service = service_, call = call_, model = std::move(model)]() mutable {
                        service->Process(call, std::move(model));
                      });
  }

  CheckerService* service_;
  grpc::CallbackServerContext* ctx_;
  std::shared_ptr<CheckCall> call_;
  v1::UploadRequest msg_;
  UploadAssembler assembler_;
  IdleWatchdog::Handle idle_;
  bool receiving_done_ = false;
};

grpc::ServerReadReactor<v1::UploadRequest>* CheckerService::Upload(grpc::CallbackServerContext* ctx,
                                                                   v1::CheckResponse* resp) {
  auto call = std::make_shared<CheckCall>(d_, &watch_, "Upload", ctx);
  auto* reactor = new UploadReactor(this, ctx, call);
  auto* raw = call.get();
  call->finisher = [reactor, resp, raw](const grpc::Status& s) {
    if (s.ok()) *resp = std::move(raw->response);
    std::lock_guard<std::mutex> lock(raw->stream_mu);
    reactor->Finish(s);
  };
  if (auto s = Admit(d_, ctx); !s.ok()) {
    call->Finish(s);
    return reactor;
  }
  reactor->Begin();
  return reactor;
}

// ------------------------------------------------------------------------------------------------
// Lookups

// A GetReport in progress (shared by its steps on the I/O pool).
struct CheckerService::Lookup {
  std::shared_ptr<CheckCall> call;
  v1::CheckResponse* grpc_resp = nullptr;
  std::string key;
  bool record = false;
  Clock::time_point wait_until;  // waiting for a check in progress ends here
  bool waited = false;           // counted in axqc_lookup_waiting_requests while it waits
  bool waited_for_peer = false;  // waited for another server's claim
  bool still_waiting = false;
};

namespace {
// How long NOT_FOUND reserves a model for the upload of the hash-first client that got it.
constexpr double kReservationSeconds = 10;
// Waiting lookups look again at least this often (a reservation may have run out).
constexpr auto kLookupPoll = std::chrono::milliseconds(500);
}  // namespace

grpc::ServerUnaryReactor* CheckerService::GetReport(grpc::CallbackServerContext* ctx,
                                                    const v1::GetReportRequest* req,
                                                    v1::CheckResponse* resp) {
  auto [reactor, call] = StartUnary(d_, &watch_, "GetReport", ctx, resp);
  if (auto s = Admit(d_, ctx); !s.ok()) {
    call->Finish(s);
    return reactor;
  }
  if (!service::IsSha256Hex(req->sha256())) {
    call->Finish(Invalid("sha256 must be 64 lowercase hex characters"));
    return reactor;
  }
  grpc::Status status = ValidateOptions(req->options());
  if (status.ok()) status = ValidateLabels(req->labels(), "labels");
  if (!status.ok()) {
    call->Finish(status);
    return reactor;
  }
  call->Update([&](CallBase::Fields& f) {
    f.sha256 = req->sha256();
    f.options = req->options();
    f.name = req->name();
    f.record = req->record_check();
    if (f.record) {
      f.source = "hash";
      f.labels = std::map<std::string, std::string>(req->labels().begin(), req->labels().end());
    }
  });
  auto lookup = std::make_shared<Lookup>();
  lookup->call = call;
  lookup->grpc_resp = resp;
  lookup->key = service::CacheKey(req->sha256(), req->options());
  lookup->record = req->record_check();
  lookup->wait_until =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(d_.config->lookup_wait_seconds));
  // A plain lookup's memory-cache hit is answered on this thread; a recorded one writes a history
  // row, and the store is read, on the I/O pool.
  if (!lookup->record) {
    if (auto report = d_.cache->Get(lookup->key)) {
      RespondLookup(call, resp, std::move(report), v1::CACHE_RESULT_MEMORY_HIT);
      return reactor;
    }
  }
  boost::asio::post(*d_.io, [this, lookup] { LookupStep(lookup); });
  return reactor;
}

void CheckerService::LookupStep(const std::shared_ptr<Lookup>& lk) {
  const auto& call = lk->call;
  // Every way out of this step except waiting again ends the wait (gauge).
  struct EndWait {
    CheckerService* self;
    Lookup* lk;
    ~EndWait() {
      if (lk->still_waiting) return;
      if (lk->waited) self->d_.metrics->lookup_waits().Decrement();
      lk->waited = false;
    }
  } end_wait{this, lk.get()};
  lk->still_waiting = false;
  if (call->cancelled.load() || call->finished()) return;
  auto unavailable = [&](const StoreError& e) {
    d_.metrics->CountStoreError();
    call->Finish(
        grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string("store unavailable: ") + e.what()));
  };
  std::shared_ptr<const v1::Report> report = d_.cache->Get(lk->key);
  v1::CacheResult cache = v1::CACHE_RESULT_MEMORY_HIT;
  bool local_busy = false;
  bool peer_busy = false;
  try {
    if (report == nullptr) {
      if (auto blob = d_.store->GetReport(lk->key)) {
        auto parsed = std::make_shared<v1::Report>();
        if (parsed->ParseFromString(*blob)) {
          d_.cache->Put(lk->key, parsed);
          report = std::move(parsed);
          cache = v1::CACHE_RESULT_STORE_HIT;
        }
      }
    }
    if (report != nullptr) {
      RespondLookup(call, lk->grpc_resp, std::move(report),
                    lk->waited ? v1::CACHE_RESULT_SHARED : cache);
      return;
    }
    local_busy = watch_.Busy(lk->key);
    peer_busy = !local_busy && d_.store->ClaimedElsewhere(lk->key);
  } catch (const StoreError& e) {
    unavailable(e);
    return;
  }
  const bool can_wait = Clock::now() < lk->wait_until;
  if ((local_busy || peer_busy) && can_wait) {
    WaitAndLookAgain(lk, peer_busy);
    return;
  }
  if (!local_busy && !peer_busy && lk->record) {
    // Nobody checks this model: this client uploads it. Identical lookups meanwhile wait for that.
    const auto expiry = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(kReservationSeconds));
    if (!watch_.Reserve(lk->key, expiry)) {  // another request here took the key just now
      boost::asio::post(*d_.io, [this, lk] { LookupStep(lk); });
      return;
    }
    bool reserved = false;
    try {
      reserved = d_.store->TryReserve(lk->key, kReservationSeconds);
    } catch (const StoreError& e) {
      watch_.Unreserve(lk->key);
      unavailable(e);
      return;
    }
    if (!reserved) {  // another server sharing the store took it just now
      watch_.Unreserve(lk->key);
      if (can_wait) {
        WaitAndLookAgain(lk, true);
        return;
      }
    } else if (lk->waited_for_peer) {
      // The server this lookup waited for ended its claim without a report, or stopped renewing
      // it (died): the check runs here, after this client's upload.
      d_.metrics->CountClaimTakeover();
      d_.logger->Info(
          "claim taken after waiting: checking here",
          {{"request_id", call->request_id}, {"model_sha256", call->Snapshot().sha256}});
    }
  }
  d_.metrics->CountReportLookup("not_found");
  std::string message =
      "no report for this sha256 with these options and rule set " + std::string(kRuleSetVersion);
  if (local_busy || peer_busy) {
    std::ostringstream text;
    text << "; a check of this model is still in progress after " << d_.config->lookup_wait_seconds
         << " s (lookup-wait-seconds): upload it to join that check";
    message += text.str();
  }
  call->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, message));
}

void CheckerService::WaitAndLookAgain(const std::shared_ptr<Lookup>& lk, bool poll_store_only) {
  if (!lk->waited) d_.metrics->lookup_waits().Increment();
  lk->waited = true;
  lk->still_waiting = true;
  if (poll_store_only) lk->waited_for_peer = true;
  auto fired = std::make_shared<std::atomic<bool>>(false);
  auto again = [this, lk, fired] {
    if (!fired->exchange(true)) boost::asio::post(*d_.io, [this, lk] { LookupStep(lk); });
  };
  std::uint64_t id = 0;
  if (!poll_store_only) {
    id = watch_.Wait(lk->key, again);
    if (id == 0) {  // idle again already
      again();
      return;
    }
  }
  // Poll as well: a reservation runs out without waking anyone, another server's check ends
  // without telling this one, and the call may be cancelled meanwhile.
  const auto poll = poll_store_only
                        ? std::max<std::chrono::milliseconds>(d_.store->ClaimPollInterval(),
                                                              std::chrono::milliseconds(1))
                        : kLookupPoll;
  auto timer = std::make_shared<boost::asio::steady_timer>(
      d_.io->get_executor(), std::min<Clock::time_point>(Clock::now() + poll, lk->wait_until));
  timer->async_wait([this, lk, fired, id, timer](const boost::system::error_code& /*ec*/) {
    if (fired->exchange(true)) return;
    if (id != 0) watch_.Cancel(lk->key, id);
    LookupStep(lk);
  });
}

// Answers GetReport with a report. A recorded lookup is a check request: history row and the
// check metrics, like the answer of a Check or Upload.
void CheckerService::RespondLookup(const std::shared_ptr<CheckCall>& call,
                                   v1::CheckResponse* grpc_resp,
                                   std::shared_ptr<const v1::Report> report,
                                   v1::CacheResult cache) {
  d_.metrics->CountReportLookup(CacheLabel(cache));
  const bool record = call->Snapshot().record;
  if (!FillResponse(call, report, cache, grpc_resp)) return;
  if (!record) {
    call->Finish(grpc::Status::OK);
    return;
  }
  if (!call->Claim()) return;
  d_.metrics->CountCacheLookup(CacheLabel(cache));
  RecordHistory(*call, report.get());
  d_.metrics->CountCheck(VerdictLabel(report->verdict()), "hash");
  d_.metrics->CountFindings(*report);
  call->Complete(grpc::Status::OK);
}

grpc::ServerUnaryReactor* CheckerService::GetStats(grpc::CallbackServerContext* ctx,
                                                   const v1::GetStatsRequest* req,
                                                   v1::GetStatsResponse* resp) {
  auto [reactor, call] = StartUnary(d_, &watch_, "GetStats", ctx, resp);
  if (auto s = Admit(d_, ctx); !s.ok()) {
    call->Finish(s);
    return reactor;
  }
  StatsQuery q;
  if (req->has_until() && !TimestampValid(req->until())) {
    call->Finish(Invalid("until is not a valid timestamp"));
    return reactor;
  }
  if (req->has_since() && !TimestampValid(req->since())) {
    call->Finish(Invalid("since is not a valid timestamp"));
    return reactor;
  }
  if (req->has_window() &&
      (!DurationValid(req->window()) || TimeUtil::DurationToMilliseconds(req->window()) < 0)) {
    call->Finish(Invalid("window must be a non-negative duration"));
    return reactor;
  }
  // Unset `until` means "up to and including now".
  q.until_ms = req->has_until() ? TimeUtil::TimestampToMilliseconds(req->until()) : NowMs() + 1;
  if (req->has_since()) {
    q.since_ms = TimeUtil::TimestampToMilliseconds(req->since());
    if (*q.since_ms > q.until_ms) {
      call->Finish(Invalid("since (" + TimeUtil::ToString(req->since()) + ") is after until (" +
                           TimeUtil::ToString(TimeUtil::MillisecondsToTimestamp(q.until_ms)) +
                           ")"));
      return reactor;
    }
  } else if (req->has_window()) {
    q.since_ms = q.until_ms - TimeUtil::DurationToMilliseconds(req->window());
  }
  if (!req->group_by().empty() && !ValidToken(req->group_by(), 63, false)) {
    call->Finish(Invalid("group_by must be a label key ([A-Za-z0-9_.-]{1,63})"));
    return reactor;
  }
  if (auto s = ValidateLabels(req->label_filter(), "label_filter"); !s.ok()) {
    call->Finish(s);
    return reactor;
  }
  if (req->top_rules() > 100) {
    call->Finish(Invalid("top_rules is at most 100"));
    return reactor;
  }
  q.group_by = req->group_by();
  q.label_filter =
      std::map<std::string, std::string>(req->label_filter().begin(), req->label_filter().end());
  q.top_rules = req->top_rules() == 0 ? 10 : req->top_rules();

  boost::asio::post(*d_.io, [this, call = call, q = std::move(q)]() {
    if (call->cancelled.load()) return;
    StatsResult r;
    try {
      r = d_.store->QueryStats(q);
    } catch (const StoreError& e) {
      d_.metrics->CountStoreError();
      call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                std::string("store unavailable: ") + e.what()));
      return;
    }
    auto fill = [](const VerdictTally& t, v1::VerdictCounts* out) {
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
    };
    auto& out = call->response;
    if (q.since_ms) *out.mutable_since() = TimeUtil::MillisecondsToTimestamp(*q.since_ms);
    *out.mutable_until() = TimeUtil::MillisecondsToTimestamp(q.until_ms);
    fill(r.total, out.mutable_total());
    for (const auto& [value, tally] : r.groups) {
      auto* g = out.add_groups();
      g->set_label_value(value);
      fill(tally, g->mutable_counts());
    }
    for (const auto& rs : r.top_failing_rules) {
      auto* rc = out.add_top_failing_rules();
      rc->set_rule(rs.rule);
      rc->set_requests(rs.requests);
      rc->set_findings(rs.findings);
    }
    call->Finish(grpc::Status::OK);
  });
  return reactor;
}

grpc::ServerUnaryReactor* CheckerService::RecordGate(grpc::CallbackServerContext* ctx,
                                                     const v1::RecordGateRequest* req,
                                                     v1::RecordGateResponse* resp) {
  auto [reactor, call] = StartUnary(d_, &watch_, "RecordGate", ctx, resp);
  if (auto s = Admit(d_, ctx); !s.ok()) {
    call->Finish(s);
    return reactor;
  }
  if (!ValidToken(req->request_id(), 64, true)) {
    call->Finish(Invalid("request_id must be the request id of a check ([A-Za-z0-9_.:-]{1,64})"));
    return reactor;
  }
  if (!service::IsSha256Hex(req->sha256())) {
    call->Finish(Invalid("sha256 must be 64 lowercase hex characters"));
    return reactor;
  }
  call->Update([&](CallBase::Fields& f) { f.sha256 = req->sha256(); });
  GateRecord g;
  const auto& o = req->outcome();
  g.passed = o.passed();
  g.counted_errors = o.counted_errors();
  g.counted_warnings = o.counted_warnings();
  g.waived_errors = o.waived_errors();
  g.waived_warnings = o.waived_warnings();
  g.baselined_errors = o.baselined_errors();
  g.baselined_warnings = o.baselined_warnings();
  boost::asio::post(*d_.io, [this, call = call, id = req->request_id(), sha = req->sha256(), g]() {
    if (call->cancelled.load()) return;
    bool found = false;
    try {
      found = d_.store->RecordGate(id, sha, g);
    } catch (const StoreError& e) {
      d_.metrics->CountStoreError();
      call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                std::string("store unavailable: ") + e.what()));
      return;
    }
    if (!found) {
      call->Finish(grpc::Status(
          grpc::StatusCode::NOT_FOUND,
          "no check request " + id + " of this model without a gate outcome in the history"));
      return;
    }
    call->Finish(grpc::Status::OK);
  });
  return reactor;
}

grpc::ServerUnaryReactor* CheckerService::ListRules(grpc::CallbackServerContext* ctx,
                                                    const v1::ListRulesRequest* /*req*/,
                                                    v1::ListRulesResponse* resp) {
  auto [reactor, call] = StartUnary(d_, &watch_, "ListRules", ctx, resp);
  if (auto s = Admit(d_, ctx); !s.ok()) {
    call->Finish(s);
    return reactor;
  }
  for (const auto& rule : Rules()) service::RuleToProto(rule, call->response.add_rules());
  call->response.set_rule_set_version(std::string(kRuleSetVersion));
  call->response.set_tool_version(std::string(ToolVersion()));
  call->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace axqc::server
