// Check: one model named by path (under --allowed-root), URL (allowlisted hosts) or sent inline.
#include <boost/asio/post.hpp>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <utility>

#include "axqc/external_data.h"
#include "axqc/sha256.h"
#include "axqc/wire/report_proto.h"
#include "protocol.h"
#include "request_validation.h"
#include "rpc/check_pipeline.h"
#include "rpc/handlers.h"
#include "url_fetch.h"

namespace axqc::server {

namespace {

// Inline bytes: accounted in the model-bytes budget, copied into a model buffer, hashed on the I/O
// pool.
void StartInline(ServiceContext& s, const std::shared_ptr<CheckCall>& call,
                 const v1::CheckRequest& req) {
  const ServiceDeps& d = s.deps;
  const std::string& content = req.content();
  call->Update([&](CallBase::Fields& f) {
    f.source = "inline";
    f.name = req.name().empty() ? "inline.onnx" : req.name();
  });
  if (content.size() > d.config->max_inline_bytes) {
    call->Finish(OverSizeLimitStatus(
        "inline content is " + std::to_string(content.size()) +
        " bytes, over the server's limit of " + std::to_string(d.config->max_inline_bytes) +
        " bytes (max-inline-bytes); use Upload for bigger models (axqc check --server "
        "does)"));
    return;
  }
  Reservation reservation(d.budget);
  try {
    reservation.Grow(content.size());
  } catch (const SourceError& e) {
    call->Finish(e.status());
    return;
  }
  // Into a model buffer (a memfd, written with write(): later handed to a worker process as it
  // is, and no page faults of a fresh heap copy here).
  isolate::ModelBuffer buffer(isolate::ModelBuffer::Backing::kMemfd, content.size());
  try {
    buffer.Append(content);
  } catch (const std::system_error& e) {
    call->Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                              std::string("cannot hold the inline content: ") + e.what()));
    return;
  }
  auto bytes = AccountedBytes(std::move(buffer), std::move(reservation));
  boost::asio::post(*d.io, [&s, call = call, bytes = std::move(bytes)]() mutable {
    const auto t0 = Clock::now();
    SourcedModel model;
    model.sha256 = axqc::Sha256Hex(bytes->view());
    model.bytes = std::move(bytes);
    s.deps.metrics->ObserveStage("load", SecondsSince(t0));
    CheckModel(s, call, std::move(model));
  });
}

// A path under an allowed root: read (and hashed) on the I/O pool.
void StartPath(ServiceContext& s, const std::shared_ptr<CheckCall>& call,
               const v1::CheckRequest& req) {
  call->Update([&](CallBase::Fields& f) {
    f.source = "path";
    f.name = req.name().empty() ? req.path() : req.name();
  });
  boost::asio::post(*s.deps.io, [&s, call = call, path = req.path()]() {
    if (call->cancelled.load()) return;
    const ServiceDeps& deps = s.deps;
    const auto t0 = Clock::now();
    try {
      SourcedModel model = deps.paths->Load(path, deps.config->max_model_bytes, *deps.budget,
                                            deps.config->max_external_data_bytes);
      deps.metrics->ObserveStage("load", SecondsSince(t0));
      CheckModel(s, call, std::move(model));
    } catch (const SourceError& e) {
      call->Finish(e.status());
    }
  });
}

// An allowlisted URL: fetched (and hashed) on the I/O pool.
void StartUrl(ServiceContext& s, const std::shared_ptr<CheckCall>& call,
              const v1::CheckRequest& req) {
  const ServiceDeps& d = s.deps;
  ParsedUrl parsed;
  try {
    parsed = ParseUrl(req.url());
  } catch (const SourceError& e) {
    call->Update([&](CallBase::Fields& f) { f.source = "url"; });
    call->Finish(e.status());
    return;
  }
  call->Update([&](CallBase::Fields& f) {
    f.source = "url";
    f.url = parsed.Redacted();
    f.name = req.name().empty() ? parsed.FileName() : req.name();
  });
  std::map<std::string, std::string> data_urls;
  for (const auto& [name, url] : req.data_file_urls()) {
    data_urls[NormalizeExternalDataName(name)] = url;  // validated in CheckRpc::Validate
  }
  boost::asio::post(*d.io, [&s, call = call, url = req.url(), data_urls]() {
    if (call->cancelled.load()) return;
    const ServiceDeps& deps = s.deps;
    const auto t0 = Clock::now();
    UrlPolicy policy;
    policy.allow_hosts = deps.config->url_allow_hosts;
    policy.timeout = std::chrono::seconds(deps.config->url_timeout_seconds);
    policy.max_redirects = deps.config->url_max_redirects;
    policy.max_bytes = deps.config->max_model_bytes;
    try {
      SourcedModel model = FetchUrl(url, policy, *deps.budget, call->cancelled);
      FetchDataFiles(model, url, data_urls, policy, deps.config->max_external_data_bytes,
                     deps.config->data_file_dir, call->cancelled);
      deps.metrics->ObserveStage("load", SecondsSince(t0));
      CheckModel(s, call, std::move(model));
    } catch (const SourceError& e) {
      call->Finish(e.status());
    }
  });
}

}  // namespace

grpc::Status CheckRpc::Validate(const Request& req) {
  grpc::Status status = ValidateLabels(req.labels(), "labels");
  if (status.ok()) status = ValidateOptions(req.options());
  if (status.ok()) status = ValidateName(req.name(), "name", kMaxNameBytes);
  if (status.ok() && req.model_case() == v1::CheckRequest::kPath) {
    status = ValidateLength(req.path(), "path", kMaxPathBytes);
  }
  if (status.ok() && req.model_case() == v1::CheckRequest::kUrl) {
    status = ValidateLength(req.url(), "url", kMaxUrlBytes);
  }
  if (status.ok() && !req.expected_sha256().empty() && !axqc::IsSha256Hex(req.expected_sha256())) {
    status = Invalid("expected_sha256 must be 64 lowercase hex characters");
  }
  if (status.ok() && !req.data_file_urls().empty()) {
    if (req.model_case() != v1::CheckRequest::kUrl) {
      status = Invalid("data_file_urls go with a url model reference only");
    } else if (req.data_file_urls().size() > isolate::kMaxDataFiles) {
      status = Invalid("data_file_urls has more than " + std::to_string(isolate::kMaxDataFiles) +
                       " entries");
    }
    std::set<std::string> names;
    for (const auto& [name, url] : req.data_file_urls()) {
      if (!status.ok()) break;
      if (std::string why = ExternalDataNameProblem(name); !why.empty()) {
        status = Invalid("data_file_urls key '" + Clip(name, 200) + "' " + why);
      } else if (!names.insert(NormalizeExternalDataName(name)).second) {
        status = Invalid("data_file_urls names '" + Clip(name, 200) + "' twice");
      } else {
        status = ValidateLength(url, "data_file_urls value", kMaxUrlBytes);
        if (status.ok()) {
          try {
            (void)ParseUrl(url);
          } catch (const SourceError& e) {
            status = e.status();
          }
        }
      }
    }
  }
  return status;
}

void CheckRpc::Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                   const Request& req, Response* /*grpc_resp*/) {
  call->expected_sha256 = req.expected_sha256();
  call->Update([&](CallBase::Fields& f) {
    f.labels = std::map<std::string, std::string>(req.labels().begin(), req.labels().end());
    f.options = req.options();
  });
  switch (req.model_case()) {
    case v1::CheckRequest::kContent:
      StartInline(s, call, req);
      return;
    case v1::CheckRequest::kPath:
      StartPath(s, call, req);
      return;
    case v1::CheckRequest::kUrl:
      StartUrl(s, call, req);
      return;
    case v1::CheckRequest::MODEL_NOT_SET:
      break;
  }
  call->Finish(Invalid("one of path, url or content is required"));
}

}  // namespace axqc::server
