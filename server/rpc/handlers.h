// The handlers of axqc.v1.Checker, one file per RPC under server/rpc/. A handler is a struct that
// the admission layer (admission.h) instantiates for its RPC:
//   kMethod   the method name of the proto (metrics label `method`, log field `method`)
//   Request, Response
//   unary RPCs:   Validate(request) -> first invalid field, or OK (runs after authentication);
//                 Run(context, call, request, grpc_response) starts the work and finishes the call
//                 (now or later, on the I/O pool or the check engine)
//   client-streaming RPCs: NewReactor(context, grpc_context, call) -> the stream's reactor,
//                 whose Begin() starts reading once the call is admitted
// Handlers never see a call that was not admitted: only the admission layer can create one.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>

#include "axqc/v1/axqc.pb.h"
#include "rpc/call.h"
#include "rpc/context.h"

namespace axqc::server {

// A client-streaming reactor that starts reading once its call is admitted.
template <typename Req>
class AdmittedReadReactor : public grpc::ServerReadReactor<Req> {
 public:
  virtual void Begin() = 0;
};

// Check: one model by path, URL or inline bytes (rpc/check.cc).
struct CheckRpc {
  static constexpr const char* kMethod = "Check";
  using Request = v1::CheckRequest;
  using Response = v1::CheckResponse;
  static grpc::Status Validate(const Request& req);
  static void Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                  const Request& req, Response* grpc_resp);
};

// Upload: one model streamed in chunks (rpc/upload.cc). A raw method: each message arrives as
// the byte buffer gRPC received (an axqc.v1.UploadRequest, read in place by upload_frame.h).
struct UploadRpc {
  static constexpr const char* kMethod = "Upload";
  using Request = grpc::ByteBuffer;
  using Response = v1::CheckResponse;
  static AdmittedReadReactor<Request>* NewReactor(ServiceContext& s,
                                                  grpc::CallbackServerContext* ctx,
                                                  std::shared_ptr<Call<Response>> call);
};

// GetReport: the report of a sha256 + options, waiting for a check in progress (rpc/get_report.cc).
struct GetReportRpc {
  static constexpr const char* kMethod = "GetReport";
  using Request = v1::GetReportRequest;
  using Response = v1::CheckResponse;
  static grpc::Status Validate(const Request& req);
  static void Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                  const Request& req, Response* grpc_resp);
};

// GetStats: verdict counts from the request history (rpc/get_stats.cc).
struct GetStatsRpc {
  static constexpr const char* kMethod = "GetStats";
  using Request = v1::GetStatsRequest;
  using Response = v1::GetStatsResponse;
  static grpc::Status Validate(const Request& req);
  static void Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                  const Request& req, Response* grpc_resp);
};

// ListRules: the rule catalog (rpc/list_rules.cc).
struct ListRulesRpc {
  static constexpr const char* kMethod = "ListRules";
  using Request = v1::ListRulesRequest;
  using Response = v1::ListRulesResponse;
  static grpc::Status Validate(const Request& req);
  static void Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                  const Request& req, Response* grpc_resp);
};

// RecordGate: a client's gate outcome for a check in the history (rpc/record_gate.cc).
struct RecordGateRpc {
  static constexpr const char* kMethod = "RecordGate";
  using Request = v1::RecordGateRequest;
  using Response = v1::RecordGateResponse;
  static grpc::Status Validate(const Request& req);
  static void Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                  const Request& req, Response* grpc_resp);
};

// ListModels: the latest verdict per model from the request history (rpc/list_models.cc).
struct ListModelsRpc {
  static constexpr const char* kMethod = "ListModels";
  using Request = v1::ListModelsRequest;
  using Response = v1::ListModelsResponse;
  static grpc::Status Validate(const Request& req);
  static void Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                  const Request& req, Response* grpc_resp);
};

}  // namespace axqc::server
