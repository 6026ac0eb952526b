// GET /v1/reports/{sha256} (GetReport: the stored report of a model already checked, waiting for
// a check in progress) and GET /v1/rules (ListRules).
#include <charconv>
#include <utility>
#include <string>

#include "axqc/render_graph.h"
#include "axqc/wire/report_proto.h"
#include "http/api.h"
#include "http/query.h"
#include "http/report_html.h"
#include "labels.h"
#include "request_validation.h"

namespace axqc::server::http {

namespace {

// HTML reports waiting for the render thread beyond the running one, and rendered documents kept.
constexpr std::size_t kHtmlQueue = 8;
constexpr std::size_t kHtmlCacheBytes = std::size_t{64} << 20;

// GetReport's request from the path and the query: sha256, check_value, max_locations, target,
// name.
grpc::Status ReportRequest(Request& request, v1::ReportFormat format, v1::GetReportRequest& req) {
  req.set_sha256(request.path_params["sha256"]);
  req.mutable_options()->set_format(format);
  if (auto st = ParseCheckOptionsQuery(request, *req.mutable_options()); !st.ok()) return st;
  if (auto v = request.Query("name")) req.set_name(*v);
  return grpc::Status::OK;
}

}  // namespace

void AddLookupRoutes(Router& router, Api api) {
  Route report;
  report.method = "GET";
  report.pattern = "/v1/reports/{sha256}";
  report.handle = [api](Request& request, Reply reply) {
    api.admission->Http<GetReportRpc>(
        OriginOf(request), request.Header("authorization"),
        [&request](v1::GetReportRequest& req) {
          return ReportRequest(request, v1::REPORT_FORMAT_JSON, req);
        },
        Answer<v1::CheckResponse>(
            std::move(reply), [](const std::string& request_id, v1::CheckResponse& resp) {
              Response r = JsonResponse(std::move(*resp.mutable_report_json()), request_id);
              r.headers.emplace_back("X-Axqc-Verdict", VerdictLabel(resp.verdict()));
              r.headers.emplace_back("X-Axqc-Cache", CacheLabel(resp.cache()));
              return r;
            }));
  };
  router.Add(std::move(report));

  // The same report as the HTML report (render_graph.h), with the graph excerpt stored with it,
  // rendered on the HtmlReports thread (never on a listener thread) and cached.
  HtmlOptions options;
  options.home_url = "/";
  options.repair_by_file_name = true;  // the model is not where (or named as) the server read it
  // The rule pages are not served here: --rules-url points the links at them (a docs site, the
  // repository); without it the page shows each rule's summary and fix without a link.
  options.rules_url =
      api.s != nullptr && api.s->deps.config != nullptr ? api.s->deps.config->rules_url : "";
  auto renderer = std::make_shared<HtmlReports>(
      options, kHtmlQueue, kHtmlCacheBytes,
      api.s == nullptr ? HtmlRenderFn(RenderHtmlInProcess) : api.s->deps.render_html);
  Route html;
  html.method = "GET";
  html.pattern = "/v1/reports/{sha256}/html";
  html.handle = [api, renderer](Request& request, Reply reply) {
    api.admission->Http<GetReportRpc>(
        OriginOf(request), request.Header("authorization"),
        [&request](v1::GetReportRequest& req) {
          return ReportRequest(request, v1::REPORT_FORMAT_PROTOBUF, req);
        },
        [reply = std::move(reply), renderer](const std::string& request_id,
                                             const grpc::Status& status,
                                             v1::CheckResponse& resp) mutable {
          if (!status.ok()) {
            reply(ErrorResponse(status, request_id));
            return;
          }
          std::string verdict = VerdictLabel(resp.verdict());
          std::string cache = CacheLabel(resp.cache());
          renderer->Render(resp.report(), [reply = std::move(reply), request_id,
                                           verdict = std::move(verdict), cache = std::move(cache)](
                                              std::shared_ptr<const std::string> body,
                                              HtmlReports::Outcome outcome) {
            if (body == nullptr) {
              reply(ErrorResponse(
                  outcome == HtmlReports::Outcome::kBusy
                      ? grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                     "too many HTML reports are being rendered; retry later")
                      : grpc::Status(grpc::StatusCode::INTERNAL,
                                     "the HTML report could not be rendered"),
                  request_id));
              return;
            }
            Response r;
            r.content_type = "text/html; charset=utf-8";
            r.body = *body;
            r.request_id = request_id;
            r.headers.emplace_back("X-Axqc-Verdict", verdict);
            r.headers.emplace_back("X-Axqc-Cache", cache);
            r.headers.emplace_back(
                "X-Axqc-Html", outcome == HtmlReports::Outcome::kCached         ? "cached"
                               : outcome == HtmlReports::Outcome::kWithoutGraph ? "without-graph"
                                                                                : "rendered");
            r.headers.emplace_back("X-Content-Type-Options", "nosniff");
            r.headers.emplace_back("Content-Security-Policy",
                                   HtmlReportCsp() + "; frame-ancestors 'none'");
            reply(std::move(r));
          });
        });
  };
  router.Add(std::move(html));

  Route rules;
  rules.method = "GET";
  rules.pattern = "/v1/rules";
  rules.handle = [api](Request& request, Reply reply) {
    api.admission->Http<ListRulesRpc>(
        OriginOf(request), request.Header("authorization"),
        [](v1::ListRulesRequest& /*req*/) { return grpc::Status::OK; },
        Answer<v1::ListRulesResponse>(
            std::move(reply), [](const std::string& request_id, v1::ListRulesResponse& resp) {
              return JsonResponse(ToJson(resp), request_id);
            }));
  };
  router.Add(std::move(rules));
}

}  // namespace axqc::server::http
