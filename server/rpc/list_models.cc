// ListModels: the latest verdict per model (sha256) from the request history.
#include <boost/asio/post.hpp>
#include <map>
#include <string>
#include <utility>

#include "request_validation.h"
#include "rpc/handlers.h"

namespace axqc::server {

grpc::Status ListModelsRpc::Validate(const Request& req) { return ValidateModelsRequest(req); }

void ListModelsRpc::Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                        const Request& req, Response* /*grpc_resp*/) {
  ModelsQuery q;
  q.label_filter =
      std::map<std::string, std::string>(req.label_filter().begin(), req.label_filter().end());
  if (req.has_since()) q.since_ms = MsOf(req.since());
  q.limit = req.limit() == 0 ? 100 : req.limit();
  boost::asio::post(*s.deps.io, [&d = s.deps, call = call, q = std::move(q)]() {
    if (call->cancelled.load()) return;
    std::vector<ModelRow> rows;
    try {
      rows = d.store->LatestModels(q);
    } catch (const StoreError& e) {
      d.metrics->CountStoreError();
      call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                std::string("store unavailable: ") + e.what()));
      return;
    }
    for (auto& row : rows) {
      auto* m = call->response.add_models();
      m->set_sha256(row.sha256);
      m->set_name(row.name);
      m->mutable_labels()->insert(row.labels.begin(), row.labels.end());
      m->set_verdict(row.verdict);
      *m->mutable_time() = TimestampOfMs(row.time_ms);
      m->set_errors(row.errors);
      m->set_warnings(row.warnings);
      m->set_request_id(row.request_id);
    }
    call->Finish(grpc::Status::OK);
  });
}

}  // namespace axqc::server
