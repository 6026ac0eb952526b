#include "rpc/check_pipeline.h"

#include <boost/asio/steady_timer.hpp>
#include <string>
#include <utility>

#include "axqc/wire/report_proto.h"
#include "external_reads.h"
#include "labels.h"
#include "request_validation.h"
#include "rpc/respond.h"

namespace axqc::server {

namespace {

void SubmitCheck(ServiceContext& s, const std::shared_ptr<CheckCall>& call, CheckJob job) {
  const ServiceDeps& d = s.deps;
  const std::string key = job.key;
  auto ticket = d.engine->Submit(
      std::move(job),
      [&d, call](const CheckOutcome& o) {
        switch (o.kind) {
          case CheckOutcome::Kind::kReport:
            RespondWithReport(d, call, o.report,
                              o.shared ? v1::CACHE_RESULT_SHARED : v1::CACHE_RESULT_MISS);
            break;
          case CheckOutcome::Kind::kInputError:
            RespondInputError(d, call, o.error);
            break;
          case CheckOutcome::Kind::kShutdown:
            call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, o.error));
            break;
          case CheckOutcome::Kind::kCheckerFailed:
            if (d.failures != nullptr) {
              d.failures->Remember(call->Snapshot().sha256, o.cause, o.error, o.worker);
            }
            RespondCheckerFailure(d, call, o.cause, o.error, false);
            break;
          case CheckOutcome::Kind::kInternalError:
            call->Finish(grpc::Status(grpc::StatusCode::INTERNAL, "checker failed: " + o.error));
            break;
          case CheckOutcome::Kind::kRangesNeeded: {
            // The next step of a ranged upload: OK, no report, the ranges to send.
            auto& r = call->response;
            r.set_request_id(call->request_id);
            r.set_sha256(call->Snapshot().sha256);
            ToProto(o.needed, r.mutable_external_ranges());
            call->Update([](CallBase::Fields& f) { f.cache = "ranges"; });
            call->Finish(grpc::Status::OK);
            break;
          }
          case CheckOutcome::Kind::kRangesRefused:
            call->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, o.error));
            break;
        }
      },
      // Counted before the check can complete (and the client see its answer).
      [&d](CheckEngine::SubmitStatus st) {
        if (st == CheckEngine::SubmitStatus::kJoined) {
          d.metrics->CountCacheLookup("shared");
        } else if (st != CheckEngine::SubmitStatus::kStopped) {
          d.metrics->CountCacheLookup("miss");
        }
      });
  switch (ticket.status) {
    case CheckEngine::SubmitStatus::kQueued:
    case CheckEngine::SubmitStatus::kJoined:
      call->SetWaiter(key, ticket.waiter);
      break;
    case CheckEngine::SubmitStatus::kQueueFull:
      d.store->ReleaseClaim(key);
      call->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                "the check queue is full (" +
                                    std::to_string(d.config->queue_capacity) +
                                    " waiting); retry later"));
      break;
    case CheckEngine::SubmitStatus::kStopped:
      d.store->ReleaseClaim(key);
      call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
      break;
  }
}

// Another server sharing the store holds the claim: poll the store for its report, or take the
// claim over when it ends without one (or its holder stops renewing it).
void WaitForPeer(ServiceContext& s, const std::shared_ptr<CheckCall>& call, CheckJob job) {
  const ServiceDeps& d = s.deps;
  auto timer = std::make_shared<boost::asio::steady_timer>(d.io->get_executor(),
                                                           d.store->ClaimPollInterval());
  timer->async_wait([&s, call, timer, job = std::move(job)](const boost::system::error_code& ec) {
    const ServiceDeps& deps = s.deps;
    auto done_waiting = [&] { deps.metrics->claim_waits().Decrement(); };
    // A cancelled call (client gone, deadline, server past its grace period) stops waiting.
    if (ec || call->cancelled.load() || call->finished()) {
      done_waiting();
      return;
    }
    try {
      if (auto found = deps.reports->Get(job.key, job.sha256); found.report != nullptr) {
        done_waiting();
        deps.metrics->CountCacheLookup("shared");
        RespondWithReport(deps, call, std::move(found.report), v1::CACHE_RESULT_SHARED);
        return;
      }
      // No report yet: the claim is still held (wait on), was released without a report, or its
      // holder stopped renewing it (take it over).
      if (!deps.store->TryClaim(job.key)) {
        WaitForPeer(s, call, job);
        return;
      }
    } catch (const StoreError& e) {
      done_waiting();
      deps.metrics->CountStoreError();
      call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                std::string("store unavailable: ") + e.what()));
      return;
    }
    done_waiting();
    deps.metrics->CountClaimTakeover();
    deps.logger->Info("claim taken after waiting: checking here",
                      {{"request_id", call->request_id}, {"model_sha256", job.sha256}});
    SubmitCheck(s, call, job);
  });
}

// Claims the check in the store (single flight across servers), then submits it to the engine;
// when another server holds the claim, waits for its report instead.
void ClaimAndSubmit(ServiceContext& s, const std::shared_ptr<CheckCall>& call, CheckJob job) {
  const ServiceDeps& d = s.deps;
  if (call->cancelled.load() || call->finished()) return;
  bool claimed = false;
  try {
    claimed = d.store->TryClaim(job.key);
  } catch (const StoreError& e) {
    d.metrics->CountStoreError();
    call->Finish(
        grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string("store unavailable: ") + e.what()));
    return;
  }
  if (claimed) {
    SubmitCheck(s, call, std::move(job));
    return;
  }
  d.metrics->claim_waits().Increment();
  WaitForPeer(s, call, std::move(job));
}

}  // namespace

void CheckModel(ServiceContext& s, const std::shared_ptr<CheckCall>& call, SourcedModel model) {
  const ServiceDeps& d = s.deps;
  if (call->cancelled.load() || call->finished()) return;
  const auto fields = call->Snapshot();
  call->Update([&](CallBase::Fields& f) {
    f.sha256 = model.sha256;
    if (model.bytes != nullptr) f.size_bytes = model.bytes->size();
  });
  const std::string& expected = call->expected_sha256;
  // With data files, the graph file's own sha256 pins it too (the data files are in the key).
  if (!expected.empty() && expected != model.sha256 &&
      (model.graph_sha256.empty() || expected != model.graph_sha256)) {
    model.bytes.reset();  // give the memory budget back before answering
    call->Finish(Invalid("sha256 mismatch: declared " + expected + ", received bytes hash to " +
                         model.sha256));
    return;
  }
  const std::string key = wire::CacheKey(model.sha256, fields.options);
  call->HoldKey(key);  // lookups of this model wait for this request's answer
  try {
    // An unreadable stored report is a miss: the model is checked again and its report replaces
    // the stored one (report_cache.h).
    if (auto found = d.reports->Get(key, model.sha256); found.report != nullptr) {
      model.bytes.reset();
      d.metrics->CountCacheLookup(CacheLabel(found.where));
      RespondWithReport(d, call, std::move(found.report), found.where);
      return;
    }
  } catch (const StoreError& e) {
    d.metrics->CountStoreError();
    d.logger->Warn("store read failed", {{"error", e.what()}, {"model_sha256", model.sha256}});
  }
  if (model.bytes == nullptr) {
    // An upload that was only hashed (its report was cached when its metadata arrived, upload.cc)
    // and whose report left the memory cache and the store meanwhile: the bytes are gone too.
    call->Finish(grpc::Status(grpc::StatusCode::ABORTED,
                              "the report of this model was cached when the upload began and is "
                              "gone now; send the model again"));
    return;
  }

  // A model that made a worker fail a moment ago is not run again (isolation).
  if (d.failures != nullptr) {
    if (auto failed = d.failures->Find(model.sha256)) {
      model.bytes.reset();
      d.metrics->CountCacheLookup("failure_memory");
      RespondCheckerFailure(d, call, failed->cause, failed->message, true);
      return;
    }
  }

  CheckJob job;
  job.key = key;
  job.sha256 = model.sha256;
  job.name = fields.name;
  job.options_key = wire::OptionsKey(fields.options);
  job.options = wire::CoreOptions(fields.options);
  job.bytes = std::move(model.bytes);
  job.data = std::move(model.data);
  job.graph_sha256 = std::move(model.graph_sha256);
  ClaimAndSubmit(s, call, std::move(job));
}

}  // namespace axqc::server
