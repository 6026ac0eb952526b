// The admission layer: the only way a request of axqc.v1.Checker reaches its handler. For every
// RPC, in this order:
//   1. a call (rpc/call.h) with its request id (x-request-id, echoed in the initial metadata);
//      its completion writes the axqc_requests_total metric and the JSON log line, whatever the
//      outcome, exactly once;
//   2. Admit(): UNAVAILABLE while the server drains, UNAUTHENTICATED without the bearer token
//      (when --auth-token-file is set);
//   3. the handler's Validate() (unary RPCs): INVALID_ARGUMENT naming the first bad field;
//   4. the handler's Run() / the stream reactor's Begin().
// CheckerService (service.cc) registers every RPC through Unary<Rpc>() or ClientStream<Rpc>();
// handlers cannot create calls themselves (CallBase::Key). The test
// ServerTest.EveryRpcIsAdmitted calls every method of the service descriptor without a token.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>
#include <utility>

#include "rpc/call.h"
#include "rpc/context.h"
#include "rpc/handlers.h"

namespace axqc::server {

class Admission {
 public:
  explicit Admission(ServiceContext& s) : s_(s) {}

  template <typename Rpc>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* ctx,
                                  const typename Rpc::Request* req, typename Rpc::Response* resp) {
    using Resp = typename Rpc::Response;
    auto call = std::make_shared<Call<Resp>>(CallBase::Key(), s_.d, &s_.watch, Rpc::kMethod, ctx);
    auto* reactor = new UnaryReactor(call);
    auto* raw = call.get();
    call->finisher = [reactor, resp, raw](const grpc::Status& st) {
      if (st.ok()) *resp = std::move(raw->response);
      reactor->Finish(st);
    };
    grpc::Status status = Admit(ctx);
    if (status.ok()) status = Rpc::Validate(*req);
    if (!status.ok()) {
      call->Finish(status);
      return reactor;
    }
    Rpc::Run(s_, call, *req, resp);
    return reactor;
  }

  template <typename Rpc>
  grpc::ServerReadReactor<typename Rpc::Request>* ClientStream(grpc::CallbackServerContext* ctx,
                                                               typename Rpc::Response* resp) {
    using Resp = typename Rpc::Response;
    auto call = std::make_shared<Call<Resp>>(CallBase::Key(), s_.d, &s_.watch, Rpc::kMethod, ctx);
    auto* reactor = Rpc::NewReactor(s_, ctx, call);
    auto* raw = call.get();
    call->finisher = [reactor, resp, raw](const grpc::Status& st) {
      if (st.ok()) *resp = std::move(raw->response);
      // Never Finish while a read is being started (the reactor takes the same lock).
      std::lock_guard<std::mutex> lock(raw->stream_mu);
      reactor->Finish(st);
    };
    if (auto st = Admit(ctx); !st.ok()) {
      call->Finish(st);
      return reactor;
    }
    reactor->Begin();
    return reactor;
  }

 private:
  // Reactor of the unary RPCs: forwards cancellation to the call, runs its on_done.
  class UnaryReactor final : public grpc::ServerUnaryReactor {
   public:
    explicit UnaryReactor(std::shared_ptr<CallBase> call) : call_(std::move(call)) {}
    void OnCancel() override { call_->OnCancelled(); }
    void OnDone() override {
      if (call_->on_done) call_->on_done();
      delete this;
    }

   private:
    std::shared_ptr<CallBase> call_;
  };

  // Draining and authentication.
  grpc::Status Admit(const grpc::CallbackServerContext* ctx) const;

  ServiceContext& s_;
};

}  // namespace axqc::server
