// The axqc.v1.Checker gRPC service on the callback API. Request handling:
//   RPC arrives -> admission (draining? auth?) -> source work on the I/O pool (read file / fetch
//   URL / verify upload, sha256) -> cache: memory LRU, then the store -> claim in the store
//   (single flight across servers sharing it; wait for the claiming server's report) -> check
//   engine (bounded queue, in-process single flight) -> response + history row + metrics + one
//   JSON log line.
// GetReport: cache, store; a model whose check is in progress (KeyWatch here, claims of other
// servers in the store) is waited for; NOT_FOUND to a hash-first client reserves its upload.
#pragma once

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <string>

#include "axqc/v1/axqc.grpc.pb.h"
#include "check_engine.h"
#include "config.h"
#include "idle_watchdog.h"
#include "key_watch.h"
#include "logger.h"
#include "lru_cache.h"
#include "metrics.h"
#include "model_source.h"
#include "status_name.h"
#include "store.h"

namespace axqc::server {

struct ServiceDeps {
  const ServerConfig* config = nullptr;
  Logger* logger = nullptr;
  Metrics* metrics = nullptr;
  ReportStore* store = nullptr;
  LruCache* cache = nullptr;
  CheckEngine* engine = nullptr;
  ByteBudget* budget = nullptr;
  const PathResolver* paths = nullptr;
  boost::asio::thread_pool* io = nullptr;
  const std::atomic<bool>* draining = nullptr;
  std::string auth_token;  // empty: no authentication
};

class CheckerService final : public v1::Checker::CallbackService {
 public:
  explicit CheckerService(ServiceDeps deps);

  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* ctx, const v1::CheckRequest* req,
                                  v1::CheckResponse* resp) override;
  grpc::ServerReadReactor<v1::UploadRequest>* Upload(grpc::CallbackServerContext* ctx,
                                                     v1::CheckResponse* resp) override;
  grpc::ServerUnaryReactor* GetReport(grpc::CallbackServerContext* ctx,
                                      const v1::GetReportRequest* req,
                                      v1::CheckResponse* resp) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* ctx,
                                     const v1::GetStatsRequest* req,
                                     v1::GetStatsResponse* resp) override;
  grpc::ServerUnaryReactor* ListRules(grpc::CallbackServerContext* ctx,
                                      const v1::ListRulesRequest* req,
                                      v1::ListRulesResponse* resp) override;
  grpc::ServerUnaryReactor* RecordGate(grpc::CallbackServerContext* ctx,
                                       const v1::RecordGateRequest* req,
                                       v1::RecordGateResponse* resp) override;

  // Persists and caches a fresh report (the engine's result sink).
  static void StoreResult(const ServiceDeps& d, const CheckJob& job,
                          const std::shared_ptr<const v1::Report>& report);

  class CallBase;
  template <typename Resp>
  class Call;
  class UploadReactor;
  struct Lookup;

  // Keys with a check in progress on this server (GetReport waits for them).
  KeyWatch& watch() { return watch_; }

 private:
  using CheckCall = Call<v1::CheckResponse>;
  // One step of a GetReport: cache, store, then wait for a check in progress, reserve the upload of
  // a hash-first client, or answer NOT_FOUND.
  void LookupStep(const std::shared_ptr<Lookup>& lookup);
  void WaitAndLookAgain(const std::shared_ptr<Lookup>& lookup, bool poll_store_only);
  void RespondLookup(const std::shared_ptr<CheckCall>& call, v1::CheckResponse* grpc_resp,
                     std::shared_ptr<const v1::Report> report, v1::CacheResult cache);
  void Process(const std::shared_ptr<CheckCall>& call, LoadedModel model);
  // Claims the check in the store (single flight across servers), then submits it to the engine;
  // when another server holds the claim, waits for its report instead.
  void ClaimAndSubmit(const std::shared_ptr<CheckCall>& call, CheckJob job);
  void WaitForPeer(const std::shared_ptr<CheckCall>& call, CheckJob job);
  void SubmitCheck(const std::shared_ptr<CheckCall>& call, CheckJob job);
  void Respond(const std::shared_ptr<CheckCall>& call, std::shared_ptr<const v1::Report> report,
               v1::CacheResult cache);
  bool FillResponse(const std::shared_ptr<CheckCall>& call,
                    const std::shared_ptr<const v1::Report>& report, v1::CacheResult cache,
                    v1::CheckResponse* grpc_resp);
  void RecordInputError(const std::shared_ptr<CheckCall>& call, const std::string& message);
  void RecordHistory(const CheckCall& call, const v1::Report* report);

  ServiceDeps d_;
  // Bytes of Upload streams still being received (--max-inflight-upload-bytes).
  ByteBudget upload_budget_;
  // Ends Upload streams that stay silent (--upload-idle-timeout-seconds).
  IdleWatchdog upload_watchdog_;
  KeyWatch watch_;
};

using service::StatusCodeName;  // status_name.h

}  // namespace axqc::server
