// POST /v1/check: the model bytes as the request body (any content type but application/json;
// method Upload: streamed into the upload assembler with the same size and in-flight budgets), a
// tar stream (application/x-tar) of the model as its first member followed by its external data
// files (the same assembler, the files in unlinked temporary files), or
// a JSON CheckRequest {"url"|"path"|"content", "name", "labels", "options", "expected_sha256"}
// (method Check). Answers the JSON report (schema axqc.report/v1).
#include <atomic>
#include <boost/asio/post.hpp>
#include <charconv>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "axqc/sha256.h"
#include "http/api.h"
#include "http/query.h"
#include "labels.h"
#include "request_validation.h"
#include "rpc/check_pipeline.h"
#include "rpc/upload_stream.h"
#include "tar_reader.h"
#include "upload_assembler.h"

namespace axqc::server::http {

namespace {

bool IsJson(const Request& request) {
  std::string type = request.Header("content-type");
  for (auto& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return type.rfind("application/json", 0) == 0;
}

// A tar stream of the model and its external data files (application/x-tar).
bool IsTar(const Request& request) {
  std::string type = request.Header("content-type");
  for (auto& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return type.rfind("application/x-tar", 0) == 0;
}

Response ReportResponse(const std::string& request_id, v1::CheckResponse& resp) {
  Response r = JsonResponse(std::move(*resp.mutable_report_json()), request_id);
  r.headers.emplace_back("X-Axqc-Verdict", VerdictLabel(resp.verdict()));
  r.headers.emplace_back("X-Axqc-Cache", CacheLabel(resp.cache()));
  r.headers.emplace_back("X-Axqc-Sha256", resp.sha256());
  return r;
}

// Options from the query string: check_value, max_locations, target.
grpc::Status OptionsFromQuery(const Request& request, v1::CheckOptions* options) {
  options->set_format(v1::REPORT_FORMAT_JSON);
  return ParseCheckOptionsQuery(request, *options);
}

// The model bytes of one request, fed to the upload assembler as they arrive.
class UploadSink final : public BodySink {
 public:
  // `tar`: the body is a tar stream of the model (first member) and its external data files.
  UploadSink(ServiceContext& s, std::shared_ptr<CheckCall> call,
             std::shared_ptr<std::atomic<unsigned>> http_status, bool tar = false)
      : s_(s),
        call_(std::move(call)),
        http_status_(std::move(http_status)),
        assembler_(s.deps.config->max_model_bytes, s.deps.budget, &s.upload_budget) {
    assembler_.AllowDataFiles(s.deps.config->max_external_data_bytes, s.deps.config->data_file_dir);
    if (tar) {
      tar_ = std::make_unique<TarReader>(
          [this](const std::string& name, std::uint64_t size) { return Member(name, size); },
          [this](std::string_view bytes) { return MemberBytes(bytes); });
    }
    s_.deps.metrics->uploads_in_flight().Increment();
  }
  ~UploadSink() override { EndReceiving(); }

  // The metadata message; false when refused (the call is finished).
  bool Begin(const v1::UploadMetadata& m) {
    call_->Update([&](CallBase::Fields& f) {
      f.source = "upload";
      f.name = m.file_name();
      f.labels = std::map<std::string, std::string>(m.labels().begin(), m.labels().end());
      f.options = m.options();
      f.size_bytes = m.size_bytes();
    });
    if (tar_ != nullptr) {
      metadata_ = m;  // given when the archive's first member (the model) is known
      return true;
    }
    return Done(assembler_.Begin(m));
  }

  bool Chunk(std::string_view data) override {
    if (call_->finished()) return false;
    s_.deps.metrics->AddUploadBytes(static_cast<double>(data.size()));
    if (tar_ != nullptr) return Done(tar_->Feed(data));
    return Done(assembler_.AddChunk(data));
  }

  void End() override {
    if (tar_ != nullptr) {
      if (grpc::Status st = tar_->Finish(); !Done(st)) return;
    }
    SourcedModel model;
    const UploadStatus st = assembler_.Finish(&model);
    call_->Update([&](CallBase::Fields& f) {
      if (!model.sha256.empty()) f.sha256 = model.sha256;
      if (model.bytes != nullptr) f.size_bytes = model.bytes->size();
    });
    if (!st.ok()) {
      Done(st);
      return;
    }
    EndReceiving();
    boost::asio::post(*s_.deps.io, [&s = s_, call = call_, model = std::move(model)]() mutable {
      CheckModel(s, call, std::move(model));
    });
  }

  void Abort() override {
    EndReceiving();
    call_->OnCancelled();
  }

  // As the Upload stream's idle timeout (rpc/upload.cc): the bytes are freed, the call ends with
  // DEADLINE_EXCEEDED (metrics, history); the connection is closed without an answer.
  void IdleTimeout(double seconds) override {
    EndReceiving();
    std::ostringstream text;
    text << "no request body bytes for " << seconds
         << " s (the server's upload idle timeout); upload abandoned";
    call_->Finish(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, text.str()));
  }

 private:
  // Tar: a regular member starts. The first is the model; the others are its data files, named by
  // their path relative to the model's directory in the archive (below it, or refused).
  grpc::Status Member(const std::string& name, std::uint64_t size) {
    if (tar_->members() == 1) {
      const auto slash = name.rfind('/');
      model_dir_ = slash == std::string::npos ? "" : name.substr(0, slash + 1);
      if (metadata_.file_name().empty() || metadata_.file_name() == "upload.onnx") {
        metadata_.set_file_name(name.substr(slash == std::string::npos ? 0 : slash + 1));
      }
      metadata_.set_size_bytes(size);
      call_->Update([&](CallBase::Fields& f) {
        f.name = metadata_.file_name();
        f.size_bytes = size;
      });
      current_ = -1;
      return Assembler(assembler_.Begin(metadata_));
    }
    if (name.compare(0, model_dir_.size(), model_dir_) != 0) {
      return Invalid("tar: member '" + name.substr(0, 200) + "' is not below the model's folder '" +
                     model_dir_ + "' in the archive");
    }
    std::uint32_t index = 0;
    const UploadStatus st = assembler_.BeginDataFile(name.substr(model_dir_.size()), size, &index);
    current_ = static_cast<std::int64_t>(index);
    return Assembler(st);
  }
  grpc::Status MemberBytes(std::string_view bytes) {
    if (current_ >= 0) {
      return Assembler(assembler_.AddDataBytes(static_cast<std::uint32_t>(current_), bytes));
    }
    return Assembler(assembler_.AddChunk(bytes));
  }

  // The tar reader's callbacks: the assembler's refusal as a gRPC status, its HTTP status kept
  // for Done.
  grpc::Status Assembler(const UploadStatus& st) {
    if (!st.ok()) http_status_->store(HttpStatusOf(st.kind));
    return GrpcStatusOf(st);
  }
  // The assembler's refusal: its HTTP status from its kind (over a size limit 413, a busy server
  // 429, ...).
  bool Done(const UploadStatus& st) {
    if (st.ok()) return true;
    http_status_->store(HttpStatusOf(st.kind));
    return Done(GrpcStatusOf(st));
  }
  // A refusal of the tar reader, or of the assembler through it (http_status_ is set then).
  bool Done(const grpc::Status& st) {
    if (st.ok()) return true;
    EndReceiving();
    call_->Finish(st);
    return false;
  }

  void EndReceiving() {
    if (done_) return;
    done_ = true;
    assembler_.Abort();
    s_.deps.metrics->uploads_in_flight().Decrement();
  }

  ServiceContext& s_;
  std::shared_ptr<CheckCall> call_;
  std::shared_ptr<std::atomic<unsigned>> http_status_;
  UploadAssembler assembler_;
  bool done_ = false;
  std::unique_ptr<TarReader> tar_;  // tar bodies
  v1::UploadMetadata metadata_;     // tar: until the first member
  std::string model_dir_;           // tar: the model member's folder ("" or "dir/")
  std::int64_t current_ = -1;       // tar: the data file receiving bytes; -1: the model
};

std::unique_ptr<BodySink> StreamModel(Api api, Request& request, Reply reply) {
  auto http_status = std::make_shared<std::atomic<unsigned>>(0);
  auto call = api.admission->HttpStream<UploadRpc>(
      OriginOf(request), request.Header("authorization"),
      [reply, http_status](const std::string& request_id, const grpc::Status& status,
                           v1::CheckResponse& resp) {
        reply(status.ok() ? ReportResponse(request_id, resp)
                          : ErrorResponse(status, request_id, http_status->load()));
      });
  if (call == nullptr) return nullptr;
  v1::UploadMetadata m;
  m.set_file_name(request.Query("name").value_or("upload.onnx"));
  const auto labels = LabelParams(request);
  m.mutable_labels()->insert(labels.begin(), labels.end());
  if (auto sha = request.Query("sha256")) m.set_sha256(*sha);
  const bool tar = IsTar(request);
  if (request.content_length && !tar) m.set_size_bytes(*request.content_length);
  if (auto st = OptionsFromQuery(request, m.mutable_options()); !st.ok()) {
    call->Finish(st);
    return nullptr;
  }
  if (m.file_name().empty()) m.set_file_name("upload.onnx");
  auto sink = std::make_unique<UploadSink>(*api.s, call, http_status, tar);
  if (!sink->Begin(m)) return nullptr;
  return sink;
}

void CheckJson(Api api, Request& request, Reply reply) {
  const std::string body = request.body;
  api.admission->Http<CheckRpc>(
      OriginOf(request), request.Header("authorization"),
      [&body](v1::CheckRequest& req) {
        grpc::Status st = FromJson(body, &req);
        if (!st.ok()) return st;
        if (req.options().format() == v1::REPORT_FORMAT_PROTOBUF) {
          return Invalid("options.format: the HTTP API answers JSON reports only");
        }
        req.mutable_options()->set_format(v1::REPORT_FORMAT_JSON);
        return grpc::Status::OK;
      },
      Answer<v1::CheckResponse>(std::move(reply), ReportResponse));
}

}  // namespace

void AddCheckRoutes(Router& router, Api api) {
  Route r;
  r.method = "POST";
  r.pattern = "/v1/check";
  r.handle = [api](Request& request, Reply reply) { CheckJson(api, request, std::move(reply)); };
  r.streams = [](const Request& request) { return !IsJson(request); };
  r.stream = [api](Request& request, Reply reply) {
    return StreamModel(api, request, std::move(reply));
  };
  router.Add(std::move(r));
}

}  // namespace axqc::server::http
