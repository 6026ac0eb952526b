#include "service.h"

#include <utility>

namespace axqc::server {

CheckerService::CheckerService(ServiceDeps deps)
    : context_(std::move(deps)), admission_(context_) {}

// Every RPC goes through the admission layer (rpc/admission.h); the handlers are in rpc/.

grpc::ServerUnaryReactor* CheckerService::Check(grpc::CallbackServerContext* ctx,
                                                const v1::CheckRequest* req,
                                                v1::CheckResponse* resp) {
  return admission_.Unary<CheckRpc>(ctx, req, resp);
}

grpc::ServerReadReactor<grpc::ByteBuffer>* CheckerService::Upload(grpc::CallbackServerContext* ctx,
                                                                  grpc::ByteBuffer* resp) {
  return admission_.ClientStream<UploadRpc>(ctx, resp);
}

grpc::ServerUnaryReactor* CheckerService::GetReport(grpc::CallbackServerContext* ctx,
                                                    const v1::GetReportRequest* req,
                                                    v1::CheckResponse* resp) {
  return admission_.Unary<GetReportRpc>(ctx, req, resp);
}

grpc::ServerUnaryReactor* CheckerService::GetStats(grpc::CallbackServerContext* ctx,
                                                   const v1::GetStatsRequest* req,
                                                   v1::GetStatsResponse* resp) {
  return admission_.Unary<GetStatsRpc>(ctx, req, resp);
}

grpc::ServerUnaryReactor* CheckerService::ListRules(grpc::CallbackServerContext* ctx,
                                                    const v1::ListRulesRequest* req,
                                                    v1::ListRulesResponse* resp) {
  return admission_.Unary<ListRulesRpc>(ctx, req, resp);
}

grpc::ServerUnaryReactor* CheckerService::RecordGate(grpc::CallbackServerContext* ctx,
                                                     const v1::RecordGateRequest* req,
                                                     v1::RecordGateResponse* resp) {
  return admission_.Unary<RecordGateRpc>(ctx, req, resp);
}

grpc::ServerUnaryReactor* CheckerService::ListModels(grpc::CallbackServerContext* ctx,
                                                     const v1::ListModelsRequest* req,
                                                     v1::ListModelsResponse* resp) {
  return admission_.Unary<ListModelsRpc>(ctx, req, resp);
}

}  // namespace axqc::server
