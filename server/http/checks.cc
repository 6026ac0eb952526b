// GET /v1/checks (ListChecks: the request history, one row per check, with paging, filters and a
// search of the model name) and GET /v1/models/{sha256}/reports (ListModelReports: the reports
// stored for one model, every option set and rule set version). Both are RPCs of the admission
// layer that only the HTTP API has (bearer token, draining, metrics and request log as
// GET /v1/models). Each row says how to open its report: the query string of
// /models/{sha256} and /v1/reports/{sha256} for its options (report_query) and the page
// (model_page).
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "axqc/wire/report_proto.h"
#include "http/api.h"
#include "request_validation.h"

namespace axqc::server::http {

namespace {

// Reports of one model listed at most (option sets x rule set versions).
constexpr std::uint32_t kMaxModelReports = 100;

// The fields of a row that name its options and how to open its report.
void AddOptions(nlohmann::json& j, const std::string& sha256, const std::string& options) {
  j["options"] = options;
  j["targets"] = wire::TargetsOfKey(options);
  j["check_value"] = options.rfind("cv=1", 0) == 0;
  if (auto query = wire::OptionsQueryOfKey(options)) {
    j["report_query"] = *query;
    if (!sha256.empty()) {
      j["model_page"] = "/models/" + sha256 + (query->empty() ? "" : "?" + *query);
    }
  }
}

nlohmann::json::string_t Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Runs `read` against the store on the I/O context and hands its result to `answer`; a store
// error answers UNAVAILABLE ("the store cannot list <what>") and is counted.
template <class Call, class Read, class Answer>
void ReadStore(ServiceContext& s, const std::shared_ptr<Call>& call, const char* what, Read read,
               Answer answer) {
  boost::asio::post(*s.deps.io, [&s, call, what, read = std::move(read),
                                 answer = std::move(answer)] {
    if (call->cancelled.load()) return;
    decltype(read()) result;
    try {
      result = read();
    } catch (const StoreError& e) {
      s.deps.metrics->CountStoreError();
      call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                std::string("the store cannot list ") + what + ": " + e.what()));
      return;
    }
    answer(result);
  });
}

struct ListChecksRpc {
  static constexpr const char* kMethod = "ListChecks";
  using Request = ChecksQuery;
  using Response = nlohmann::json;
  static grpc::Status Validate(const Request& /*req*/) { return grpc::Status::OK; }
  static void Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                  const Request& req, Response* /*grpc_resp*/) {
    ReadStore(
        s, call, "checks", [&s, req] { return s.deps.store->ListChecks(req); },
        [call, req](const ChecksPage& page) {
          nlohmann::json list = nlohmann::json::array();
          for (const CheckRow& c : page.checks) {
            nlohmann::json j = {{"time", Rfc3339OfMs(c.time_ms)},
                                {"request_id", c.request_id},
                                {"method", c.method},
                                {"name", c.name},
                                {"source", c.source},
                                {"sha256", c.sha256},
                                {"verdict", c.verdict},
                                {"cache", c.cache},
                                {"errors", c.errors},
                                {"warnings", c.warnings},
                                {"labels", c.labels}};
            AddOptions(j, c.sha256, c.options);
            list.push_back(std::move(j));
          }
          auto& out = call->response;
          out["checks"] = std::move(list);
          out["total"] = page.total;
          out["offset"] = req.offset;
          out["limit"] = req.limit;
          if (req.offset + page.checks.size() < page.total) {
            out["next_offset"] = req.offset + page.checks.size();
          }
          call->Finish(grpc::Status::OK);
        });
  }
};

struct ModelReportsQuery {
  std::string sha256;
};

struct ListModelReportsRpc {
  static constexpr const char* kMethod = "ListModelReports";
  using Request = ModelReportsQuery;
  using Response = nlohmann::json;
  static grpc::Status Validate(const Request& /*req*/) { return grpc::Status::OK; }
  static void Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                  const Request& req, Response* /*grpc_resp*/) {
    ReadStore(
        s, call, "reports",
        [&s, req] { return s.deps.store->ListReports(req.sha256, kMaxModelReports); },
        [call, req](const std::vector<ReportInfo>& rows) {
          nlohmann::json list = nlohmann::json::array();
          for (const ReportInfo& r : rows) {
            // Served by GET /v1/reports only when written by this rule set and report revision;
            // older ones are checked again when asked for.
            const bool current = r.cache_key == wire::CacheKeyOf(req.sha256, r.options);
            nlohmann::json j = {{"rule_set_version", r.rule_set_version},
                                {"verdict", r.verdict},
                                {"created_time", Rfc3339OfMs(r.created_ms)},
                                {"current", current}};
            AddOptions(j, current ? req.sha256 : std::string(), r.options);
            list.push_back(std::move(j));
          }
          auto& out = call->response;
          out["sha256"] = req.sha256;
          out["rule_set_version"] = std::string(kRuleSetVersion);
          out["reports"] = std::move(list);
          call->Finish(grpc::Status::OK);
        });
  }
};

}  // namespace

void AddCheckListRoutes(Router& router, Api api) {
  Route checks;
  checks.method = "GET";
  checks.pattern = "/v1/checks";
  checks.handle = [api](Request& request, Reply reply) {
    api.admission->Http<ListChecksRpc>(
        OriginOf(request), request.Header("authorization"),
        [&request](ChecksQuery& q) { return ParseChecksQuery(request, q); },
        Answer<nlohmann::json>(std::move(reply),
                               [](const std::string& request_id, nlohmann::json& resp) {
                                 return JsonResponse(Dump(resp), request_id);
                               }));
  };
  router.Add(std::move(checks));

  Route reports;
  reports.method = "GET";
  reports.pattern = "/v1/models/{sha256}/reports";
  reports.handle = [api](Request& request, Reply reply) {
    api.admission->Http<ListModelReportsRpc>(
        OriginOf(request), request.Header("authorization"),
        [&request](ModelReportsQuery& q) -> grpc::Status {
          if (auto st = KnownParams(request, {}); !st.ok()) return st;
          if (!LabelParams(request).empty()) return Invalid("label filters are not taken here");
          q.sha256 = request.path_params["sha256"];
          if (!IsSha256Hex(q.sha256)) {
            return Invalid("the path is /v1/models/<sha256, 64 lowercase hex digits>/reports");
          }
          return grpc::Status::OK;
        },
        Answer<nlohmann::json>(std::move(reply),
                               [](const std::string& request_id, nlohmann::json& resp) {
                                 return JsonResponse(Dump(resp), request_id);
                               }));
  };
  router.Add(std::move(reports));
}

}  // namespace axqc::server::http
