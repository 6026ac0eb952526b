// RecordGate: the outcome of a client's gate (waivers, baseline, failure threshold) for a check
// request in the history.
#include <boost/asio/post.hpp>
#include <string>

#include "axqc/sha256.h"
#include "axqc/wire/report_proto.h"
#include "request_validation.h"
#include "rpc/handlers.h"

namespace axqc::server {

grpc::Status RecordGateRpc::Validate(const Request& req) {
  if (!ValidToken(req.request_id(), 64, true)) {
    return Invalid("request_id must be the request id of a check ([A-Za-z0-9_.:-]{1,64})");
  }
  if (!axqc::IsSha256Hex(req.sha256())) {
    return Invalid("sha256 must be 64 lowercase hex characters");
  }
  return grpc::Status::OK;
}

void RecordGateRpc::Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                        const Request& req, Response* /*grpc_resp*/) {
  call->Update([&](CallBase::Fields& f) { f.sha256 = req.sha256(); });
  GateRecord g;
  const auto& o = req.outcome();
  g.passed = o.passed();
  g.counted_errors = o.counted_errors();
  g.counted_warnings = o.counted_warnings();
  g.waived_errors = o.waived_errors();
  g.waived_warnings = o.waived_warnings();
  g.baselined_errors = o.baselined_errors();
  g.baselined_warnings = o.baselined_warnings();
  boost::asio::post(
      *s.deps.io, [&d = s.deps, call = call, id = req.request_id(), sha = req.sha256(), g]() {
        if (call->cancelled.load()) return;
        bool found = false;
        try {
          found = d.store->RecordGate(id, sha, g);
        } catch (const StoreError& e) {
          d.metrics->CountStoreError();
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
}

}  // namespace axqc::server
