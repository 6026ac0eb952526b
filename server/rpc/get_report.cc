// GetReport: the report of a sha256 + options from the report cache (memory, store). A model whose
// check is in progress (KeyWatch here, claims of other servers in the store) is waited for;
// NOT_FOUND to a hash-first client (record_check) reserves its upload.
#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "axqc/catalog.h"
#include "axqc/sha256.h"
#include "axqc/wire/report_proto.h"
#include "labels.h"
#include "request_validation.h"
#include "rpc/handlers.h"
#include "rpc/respond.h"

namespace axqc::server {

namespace {

// How long NOT_FOUND reserves a model for the upload of the hash-first client that got it.
constexpr double kReservationSeconds = 10;
// Waiting lookups look again at least this often (a reservation may have run out).
constexpr auto kLookupPoll = std::chrono::milliseconds(500);

// A GetReport in progress (shared by its steps on the I/O pool).
struct Lookup {
  ServiceContext* s = nullptr;
  std::shared_ptr<CheckCall> call;
  v1::CheckResponse* grpc_resp = nullptr;
  std::string key;
  std::string sha256;
  bool record = false;
  Clock::time_point wait_until;  // waiting for a check in progress ends here
  bool waited = false;           // counted in axqc_lookup_waiting_requests while it waits
  bool waited_for_peer = false;  // waited for another server's claim
  bool still_waiting = false;
};

void LookupStep(const std::shared_ptr<Lookup>& lk);

// Answers GetReport with a report. A recorded lookup is a check request: history row and the
// check metrics, like the answer of a Check or Upload.
void RespondLookup(const ServiceDeps& d, const std::shared_ptr<CheckCall>& call,
                   v1::CheckResponse* grpc_resp, const std::shared_ptr<const CachedReport>& report,
                   v1::CacheResult cache) {
  d.metrics->CountReportLookup(CacheLabel(cache));
  const bool record = call->Snapshot().record;
  if (!FillResponse(d, call, report, cache, grpc_resp)) return;
  if (!record) {
    call->Finish(grpc::Status::OK);
    return;
  }
  if (!call->Claim()) return;
  d.metrics->CountCacheLookup(CacheLabel(cache));
  RecordHistory(d, *call, &report->proto());
  d.metrics->CountCheck(VerdictLabel(report->proto().verdict()), "hash");
  d.metrics->CountFindings(report->proto());
  call->Complete(grpc::Status::OK);
}

void WaitAndLookAgain(const std::shared_ptr<Lookup>& lk, bool poll_store_only) {
  ServiceContext& s = *lk->s;
  if (!lk->waited) s.deps.metrics->lookup_waits().Increment();
  lk->waited = true;
  lk->still_waiting = true;
  if (poll_store_only) lk->waited_for_peer = true;
  auto fired = std::make_shared<std::atomic<bool>>(false);
  auto again = [lk, fired] {
    if (!fired->exchange(true)) boost::asio::post(*lk->s->deps.io, [lk] { LookupStep(lk); });
  };
  std::uint64_t id = 0;
  if (!poll_store_only) {
    id = s.watch.Wait(lk->key, again);
    if (id == 0) {  // idle again already
      again();
      return;
    }
  }
  // Poll as well: a reservation runs out without waking anyone, another server's check ends
  // without telling this one, and the call may be cancelled meanwhile.
  const auto poll = poll_store_only
                        ? std::max<std::chrono::milliseconds>(s.deps.store->ClaimPollInterval(),
                                                              std::chrono::milliseconds(1))
                        : kLookupPoll;
  auto timer = std::make_shared<boost::asio::steady_timer>(
      s.deps.io->get_executor(), std::min<Clock::time_point>(Clock::now() + poll, lk->wait_until));
  timer->async_wait([lk, fired, id, timer](const boost::system::error_code& /*ec*/) {
    if (fired->exchange(true)) return;
    if (id != 0) lk->s->watch.Cancel(lk->key, id);
    LookupStep(lk);
  });
}

// What the report cache and the check registries said about a lookup's key.
struct Probe {
  bool answered = false;  // the call got its answer (a report, or UNAVAILABLE)
  bool unreadable = false;
  bool local_busy = false;  // a check of this model runs on this server
  bool peer_busy = false;   // ... on another server sharing the store
};

void StoreUnavailable(const ServiceDeps& d, CheckCall& call, const StoreError& e) {
  d.metrics->CountStoreError();
  call.Finish(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string("store unavailable: ") + e.what()));
}

// The report cache (memory, then store); answers the call on a hit.
Probe ProbeCache(const std::shared_ptr<Lookup>& lk) {
  ServiceContext& s = *lk->s;
  const ServiceDeps& d = s.deps;
  Probe p;
  try {
    auto found = d.reports->Get(lk->key, lk->sha256);
    if (found.report != nullptr) {
      RespondLookup(d, lk->call, lk->grpc_resp, std::move(found.report),
                    lk->waited ? v1::CACHE_RESULT_SHARED : found.where);
      p.answered = true;
      return p;
    }
    // An unreadable stored report is a miss, like for Check and Upload: a check in progress is
    // waited for, a hash-first client is asked to upload the model (which checks it again).
    p.unreadable = found.unreadable;
    p.local_busy = s.watch.Busy(lk->key);
    p.peer_busy = !p.local_busy && d.store->ClaimedElsewhere(lk->key);
  } catch (const StoreError& e) {
    StoreUnavailable(d, *lk->call, e);
    p.answered = true;
  }
  return p;
}

// Nobody checks this model: reserve its key for this client's upload, here and in the shared
// store, so that identical lookups meanwhile wait for it. False when the lookup goes on later
// (another request took the key, it waits again) or was answered (store unavailable); true
// when it is to be answered NOT_FOUND now.
bool ReserveUpload(const std::shared_ptr<Lookup>& lk, bool can_wait) {
  ServiceContext& s = *lk->s;
  const ServiceDeps& d = s.deps;
  const auto expiry = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(kReservationSeconds));
  if (!s.watch.Reserve(lk->key, expiry)) {  // another request here took the key just now
    boost::asio::post(*d.io, [lk] { LookupStep(lk); });
    return false;
  }
  bool reserved = false;
  try {
    reserved = d.store->TryReserve(lk->key, kReservationSeconds);
  } catch (const StoreError& e) {
    s.watch.Unreserve(lk->key);
    StoreUnavailable(d, *lk->call, e);
    return false;
  }
  if (!reserved) {  // another server sharing the store took it just now
    s.watch.Unreserve(lk->key);
    if (can_wait) {
      WaitAndLookAgain(lk, true);
      return false;
    }
  } else if (lk->waited_for_peer) {
    // The server this lookup waited for ended its claim without a report, or stopped renewing
    // it (died): the check runs here, after this client's upload.
    d.metrics->CountClaimTakeover();
    d.logger->Info("claim taken after waiting: checking here",
                   {{"request_id", lk->call->request_id}, {"model_sha256", lk->sha256}});
  }
  return true;
}

void AnswerNotFound(const ServiceDeps& d, CheckCall& call, const Probe& p) {
  d.metrics->CountReportLookup("not_found");
  std::string message =
      p.unreadable ? "the stored report for this sha256 with these options and rule set " +
                         std::string(kRuleSetVersion) +
                         " is unreadable; send the model (Check or Upload) to check it again"
                   : "no report for this sha256 with these options and rule set " +
                         std::string(kRuleSetVersion);
  if (p.local_busy || p.peer_busy) {
    std::ostringstream text;
    text << "; a check of this model is still in progress after " << d.config->lookup_wait_seconds
         << " s (lookup-wait-seconds): upload it to join that check";
    message += text.str();
  }
  call.Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, message));
}

// One step of a GetReport: report cache, then wait for a check in progress, reserve the upload of
// a hash-first client, or answer NOT_FOUND.
void LookupStep(const std::shared_ptr<Lookup>& lk) {
  const ServiceDeps& d = lk->s->deps;
  // Every way out of this step except waiting again ends the wait (gauge).
  struct EndWait {
    const ServiceDeps& d;
    Lookup* lk;
    ~EndWait() {
      if (lk->still_waiting) return;
      if (lk->waited) d.metrics->lookup_waits().Decrement();
      lk->waited = false;
    }
  } end_wait{d, lk.get()};
  lk->still_waiting = false;
  if (lk->call->cancelled.load() || lk->call->finished()) return;
  const Probe p = ProbeCache(lk);
  if (p.answered) return;
  const bool busy = p.local_busy || p.peer_busy;
  const bool can_wait = Clock::now() < lk->wait_until;
  if (busy && can_wait) {
    WaitAndLookAgain(lk, p.peer_busy);
    return;
  }
  if (!busy && lk->record && !ReserveUpload(lk, can_wait)) return;
  AnswerNotFound(d, *lk->call, p);
}

}  // namespace

grpc::Status GetReportRpc::Validate(const Request& req) {
  if (!axqc::IsSha256Hex(req.sha256())) {
    return Invalid("sha256 must be 64 lowercase hex characters");
  }
  grpc::Status status = ValidateOptions(req.options());
  if (status.ok()) status = ValidateLabels(req.labels(), "labels");
  if (status.ok()) status = ValidateName(req.name(), "name", kMaxNameBytes);
  return status;
}

void GetReportRpc::Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                       const Request& req, Response* grpc_resp) {
  const ServiceDeps& d = s.deps;
  call->Update([&](CallBase::Fields& f) {
    f.sha256 = req.sha256();
    f.options = req.options();
    f.name = req.name();
    f.record = req.record_check();
    if (f.record) {
      f.source = "hash";
      f.labels = std::map<std::string, std::string>(req.labels().begin(), req.labels().end());
    }
  });
  auto lookup = std::make_shared<Lookup>();
  lookup->s = &s;
  lookup->call = call;
  lookup->grpc_resp = grpc_resp;
  lookup->key = wire::CacheKey(req.sha256(), req.options());
  lookup->sha256 = req.sha256();
  lookup->record = req.record_check();
  lookup->wait_until =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(d.config->lookup_wait_seconds));
  // A plain lookup's memory-cache hit is answered on this thread; a recorded one writes a history
  // row, and the store is read, on the I/O pool.
  if (!lookup->record) {
    if (auto report = d.reports->GetMemory(lookup->key)) {
      RespondLookup(d, call, grpc_resp, std::move(report), v1::CACHE_RESULT_MEMORY_HIT);
      return;
    }
  }
  boost::asio::post(*d.io, [lookup] { LookupStep(lookup); });
}

}  // namespace axqc::server
