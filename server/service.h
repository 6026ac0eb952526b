// The axqc.v1.Checker gRPC service on the callback API. Every RPC is registered here through the
// admission layer (rpc/admission.h: request id, draining, bearer token, request validation, one
// metric and log line per request) and handled in its own file under rpc/:
//   Check       rpc/check.cc        path / URL / inline bytes -> rpc/check_pipeline.cc
//   Upload      rpc/upload.cc       client stream -> rpc/check_pipeline.cc
//   GetReport   rpc/get_report.cc   report cache, waiting for a check in progress
//   GetStats    rpc/get_stats.cc    request history
//   ListRules   rpc/list_rules.cc   rule catalog
//   RecordGate  rpc/record_gate.cc  gate outcome of a check in the history
//   ListModels  rpc/list_models.cc  latest verdict per model from the history
// The HTTP/JSON API (http/) goes through the same admission layer and handlers.
// The check pipeline: source work on the I/O pool (read file / fetch URL / verify upload, sha256)
// -> report cache (report_cache.h: memory LRU, then the store) -> claim in the store (single
// flight across servers sharing it; wait for the claiming server's report) -> check engine
// (bounded queue, in-process single flight) -> response + history row + metrics + log line.
#pragma once

#include "axqc/v1/axqc.grpc.pb.h"
#include "axqc/wire/status_name.h"
#include "rpc/admission.h"
#include "rpc/context.h"

namespace axqc::server {

// Upload is a raw method (its messages are read where gRPC received them, rpc/upload.cc).
class CheckerService final
    : public v1::Checker::WithRawCallbackMethod_Upload<v1::Checker::CallbackService> {
 public:
  explicit CheckerService(ServiceDeps deps);

  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* ctx, const v1::CheckRequest* req,
                                  v1::CheckResponse* resp) override;
  grpc::ServerReadReactor<grpc::ByteBuffer>* Upload(grpc::CallbackServerContext* ctx,
                                                    grpc::ByteBuffer* resp) override;
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
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* ctx,
                                       const v1::ListModelsRequest* req,
                                       v1::ListModelsResponse* resp) override;

  // Keys with a check in progress on this server (GetReport waits for them).
  KeyWatch& watch() { return context_.watch; }
  // The state and admission layer shared with the HTTP/JSON API.
  ServiceContext& context() { return context_; }
  Admission& admission() { return admission_; }

 private:
  ServiceContext context_;
  Admission admission_;
};

using wire::StatusCodeName;  // axqc/wire/status_name.h

}  // namespace axqc::server
