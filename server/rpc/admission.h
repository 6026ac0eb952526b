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
// ServiceLayers.EveryRpcOfTheServiceIsAdmitted (tests/server/server_admission_test.cc) calls every
// method of the service descriptor without a token.
//
// The HTTP/JSON API (http/) enters through Http<Rpc>() and HttpStream<Rpc>() with the same steps
// (its Authorization header in place of the metadata); the checks that registry webhooks start
// after verifying the registry's signature enter through Internal<Rpc>() (no bearer token).
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
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
    auto call =
        std::make_shared<Call<Resp>>(CallBase::Key(), s_.deps, &s_.watch, Rpc::kMethod, ctx);
    auto* reactor = new UnaryReactor(call);
    auto* raw = call.get();
    call->finisher = [reactor, resp, raw](const grpc::Status& st) {
      if (st.ok()) *resp = std::move(raw->response);
      reactor->Finish(ForClient(st));
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

  // Called once per request with its id, its status and (on OK) its response.
  template <typename Resp>
  using Done = std::function<void(const std::string& request_id, const grpc::Status&, Resp&)>;

  // Turns the HTTP request into the RPC's request (INVALID_ARGUMENT on malformed JSON or query
  // parameters); runs after authentication, before Validate().
  template <typename Req>
  using Parse = std::function<grpc::Status(Req&)>;

  // A unary RPC from the HTTP/JSON API; `authorization` is the Authorization header.
  template <typename Rpc>
  void Http(const CallOrigin& origin, std::string_view authorization,
            Parse<typename Rpc::Request> parse, Done<typename Rpc::Response> done) {
    auto call = NewHttpCall<Rpc>(origin, std::move(done));
    typename Rpc::Request req;
    grpc::Status status = Admit(authorization, true, kHttpCarrier);
    if (status.ok()) status = parse(req);
    if (status.ok()) status = Rpc::Validate(req);
    if (!status.ok()) {
      call->Finish(status);
      return;
    }
    Rpc::Run(s_, call, req, nullptr);
  }

  // An HTTP request that carries its own proof of origin instead of the bearer token (registry
  // webhooks: an HMAC signature, a shared secret). `verify_and_parse` checks it first
  // (UNAUTHENTICATED when wrong), then as Http().
  template <typename Rpc>
  void HttpSigned(const CallOrigin& origin, Parse<typename Rpc::Request> verify_and_parse,
                  Done<typename Rpc::Response> done) {
    auto call = NewHttpCall<Rpc>(origin, std::move(done));
    typename Rpc::Request req;
    grpc::Status status = Admit({}, false);
    if (status.ok()) status = verify_and_parse(req);
    if (status.ok()) status = Rpc::Validate(req);
    if (!status.ok()) {
      call->Finish(status);
      return;
    }
    Rpc::Run(s_, call, req, nullptr);
  }

  // A request of the HTTP/JSON API whose body the caller streams (the model bytes of POST
  // /v1/check, method Upload): the admitted call, or null when it was refused (then `done` has
  // run already).
  template <typename Rpc>
  std::shared_ptr<Call<typename Rpc::Response>> HttpStream(const CallOrigin& origin,
                                                           std::string_view authorization,
                                                           Done<typename Rpc::Response> done) {
    auto call = NewHttpCall<Rpc>(origin, std::move(done));
    if (auto st = Admit(authorization, true, kHttpCarrier); !st.ok()) {
      call->Finish(st);
      return nullptr;
    }
    return call;
  }

  // A unary RPC the server starts itself for an authenticated registry webhook (its signature
  // was verified by HttpSigned): no bearer token, otherwise as Http().
  template <typename Rpc>
  void Internal(const CallOrigin& origin, const typename Rpc::Request& req,
                Done<typename Rpc::Response> done) {
    auto call = NewHttpCall<Rpc>(origin, std::move(done));
    grpc::Status status = Admit({}, false);
    if (status.ok()) status = Rpc::Validate(req);
    if (!status.ok()) {
      call->Finish(status);
      return;
    }
    Rpc::Run(s_, call, req, nullptr);
  }

  static constexpr const char* kHttpCarrier = "Authorization: Bearer header";

  // Draining, then (with `check_token`) the bearer token in `authorization`.
  // `carrier` names where the token is expected (error message).
  grpc::Status Admit(std::string_view authorization, bool check_token,
                     const char* carrier = "authorization metadata") const;

  ServiceContext& context() { return s_; }

  // `resp`: the response message, or (a raw method) the byte buffer it is serialized into.
  template <typename Rpc, typename Out>
  grpc::ServerReadReactor<typename Rpc::Request>* ClientStream(grpc::CallbackServerContext* ctx,
                                                               Out* resp) {
    using Resp = typename Rpc::Response;
    auto call =
        std::make_shared<Call<Resp>>(CallBase::Key(), s_.deps, &s_.watch, Rpc::kMethod, ctx);
    auto* reactor = Rpc::NewReactor(s_, ctx, call);
    auto* raw = call.get();
    call->finisher = [reactor, resp, raw](const grpc::Status& st) {
      grpc::Status out = st;
      if (out.ok()) out = StoreResponse(raw->response, resp);
      // Never Finish while a read is being started (the reactor takes the same lock).
      std::lock_guard<std::mutex> lock(raw->stream_mu);
      reactor->Finish(ForClient(out));
    };
    if (auto st = Admit(ctx); !st.ok()) {
      call->Finish(st);
      return reactor;
    }
    reactor->Begin();
    return reactor;
  }

 private:
  template <typename Resp>
  static grpc::Status StoreResponse(Resp& response, Resp* out) {
    *out = std::move(response);
    return grpc::Status::OK;
  }
  template <typename Resp>
  static grpc::Status StoreResponse(const Resp& response, grpc::ByteBuffer* out) {
    bool own = false;
    return grpc::SerializationTraits<Resp>::Serialize(response, out, &own);
  }

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

  template <typename Rpc>
  std::shared_ptr<Call<typename Rpc::Response>> NewHttpCall(const CallOrigin& origin,
                                                            Done<typename Rpc::Response> done) {
    using Resp = typename Rpc::Response;
    auto call =
        std::make_shared<Call<Resp>>(CallBase::Key(), s_.deps, &s_.watch, Rpc::kMethod, origin);
    auto* raw = call.get();
    call->finisher = [raw, done = std::move(done)](const grpc::Status& st) {
      done(raw->request_id, st, raw->response);
      if (raw->on_done) raw->on_done();
    };
    return call;
  }

  // Draining and authentication.
  grpc::Status Admit(const grpc::CallbackServerContext* ctx) const;

  ServiceContext& s_;
};

}  // namespace axqc::server
