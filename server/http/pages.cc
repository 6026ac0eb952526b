// The dashboard pages (docs/report-html.md): "/" and "/models/{sha256}" are HTML shells without
// data and /ui/dashboard.js (server/http/dashboard.js, embedded at build time) fills them from the
// JSON API, so every byte of data goes through the API's authentication and admission. Served
// without a token, like /v1/openapi.json.
#include <string>

#include "axqc/render_graph.h"
#include "dashboard_js.h"  // generated: kDashboardJs
#include "http/api.h"

namespace axqc::server::http {

namespace {

const char* kStyle = R"CSS(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{background:#fff;border-bottom:1px solid #d5d9de;padding:14px 24px}
header h1{font-size:20px;margin:0}
main{padding:8px 24px 40px;max-width:1200px}
section{background:#fff;border:1px solid #d5d9de;border-radius:6px;padding:12px 16px;margin:16px 0}
h2{font-size:16px;margin:0 0 8px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{border-bottom:1px solid #eaeef2;padding:4px 6px;text-align:left}
th{background:#f6f8fa}td.n{text-align:right}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.small{color:#57606a;font-size:12px}.error{color:#c62828}
.verdict{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-size:12px;font-weight:600}
.verdict-conformant{background:#2e7d32}.verdict-non_conformant{background:#c62828}
.verdict-not_applicable{background:#00838f}.verdict-invalid_input{background:#6d4c41}
.chart{width:100%;max-width:760px;height:auto}
.chart .grid{stroke:#e3e7eb}.chart .axis{font-size:11px;fill:#57606a}
.chart .line{fill:none;stroke:#1565c0;stroke-width:2}.chart .point{fill:#1565c0}
.controls label{margin-right:14px}div.controls{margin:0 0 8px}
.pager{margin:8px 0 0}.pager button{font-size:12px}
.outcome-failed{color:#c62828;font-weight:600}.outcome-done{color:#2e7d32;font-weight:600}
td.err{max-width:320px;overflow-wrap:anywhere;color:#c62828;font-size:12px}
tr.current td{background:#fff8c5}
)CSS";

std::string Shell(const std::string& title, const std::string& body_attrs,
                  const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta "
         "name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>" +
         title + "</title><style>" + kStyle + "</style></head>\n<body " + body_attrs + ">\n" +
         body +
         "<div id=\"token-box\" hidden><section>This server needs a token: <input id=\"token\" "
         "type=\"password\" size=\"40\"> <button id=\"token-save\" type=\"button\">Use "
         "token</button> <span class=\"small\">(kept in this browser's localStorage)</span>"
         "</section></div>\n<script src=\"/ui/dashboard.js\"></script>\n</body></html>\n";
}

const std::string& DashboardPage() {
  static const std::string page = Shell(
      "axqc dashboard", "data-page=\"dashboard\"",
      "<header><h1>axqc dashboard</h1></header><main>\n"
      "<section class=\"controls\"><label>Window <select id=\"window\"><option value=\"1d\">last "
      "day</option><option value=\"7d\" selected>last 7 days</option><option value=\"30d\">last "
      "30 days</option></select></label><label>Label <input id=\"label-key\" size=\"14\" "
      "placeholder=\"e.g. project\" list=\"label-keys\"><datalist id=\"label-keys\"><option "
      "value=\"axqc.target\">chip targets of the check</option><option value=\"source\">"
      "</option></datalist></label><label>Value <select id=\"label-value\"><option "
      "value=\"*\">all</option></select></label></section>\n"
      "<section><h2>Pass rate over time</h2><p id=\"summary\" class=\"small\"></p>"
      "<div id=\"chart\"></div></section>\n"
      "<section><h2>Top failing rules</h2><table><thead><tr><th>rule</th><th>checks</th>"
      "<th>models</th><th>findings</th></tr></thead><tbody id=\"rules-body\"></tbody></table>"
      "</section>\n"
      "<section id=\"checks\"><h2>Checks</h2><p class=\"small\">Every check, newest first; a "
      "model's name opens the report of that check's options. The label above filters these "
      "too.</p><div class=\"controls\"><label>Search <input id=\"checks-q\" type=\"search\" "
      "size=\"24\" maxlength=\"100\" placeholder=\"model name contains\"></label><label>Verdict "
      "<select id=\"checks-verdict\"><option value=\"\">any</option><option "
      "value=\"conformant\">conformant</option><option value=\"non_conformant\">non_conformant"
      "</option><option value=\"not_applicable\">not_applicable</option><option "
      "value=\"invalid_input\">invalid_input</option><option value=\"checker_failed\">"
      "checker_failed</option></select></label><label>Source <select id=\"checks-source\">"
      "<option value=\"\">any</option><option value=\"upload\">upload</option><option "
      "value=\"path\">path</option><option value=\"url\">url</option><option "
      "value=\"inline\">inline</option><option value=\"webhook\">webhook</option></select>"
      "</label></div><table><thead><tr><th>time (UTC)</th><th>model</th><th>source</th>"
      "<th>verdict</th><th>errors</th><th>warnings</th><th>labels</th><th>options</th></tr>"
      "</thead><tbody id=\"checks-body\"></tbody></table><p class=\"pager\"><button "
      "id=\"checks-prev\" type=\"button\">&larr; newer</button> <span id=\"checks-page\" "
      "class=\"small\"></span> <button id=\"checks-next\" type=\"button\">older &rarr;"
      "</button></p></section>\n"
      "<section id=\"deliveries\"><h2>Webhook deliveries</h2><p class=\"small\">Registry "
      "webhooks (MLflow, Hugging Face) as the server received them, newest first: state, outcome, "
      "last error, the request id of the check and its report.</p><div class=\"controls\">"
      "<label>Source <select id=\"deliveries-source\"><option value=\"\">any</option><option "
      "value=\"huggingface\">huggingface</option><option value=\"mlflow\">mlflow</option>"
      "</select></label><label>Outcome <select id=\"deliveries-outcome\"><option "
      "value=\"\">any</option><option value=\"conformant\">conformant</option><option "
      "value=\"non_conformant\">non_conformant</option><option value=\"not_applicable\">"
      "not_applicable</option><option value=\"invalid_input\">invalid_input</option><option "
      "value=\"download_failed\">download_failed</option><option value=\"policy_refused\">"
      "policy_refused</option><option value=\"check_failed\">check_failed</option><option "
      "value=\"writeback_failed\">writeback_failed</option></select></label></div><table>"
      "<thead><tr><th>received (UTC)</th><th>source</th><th>model</th><th>revision</th>"
      "<th>state</th><th>outcome</th><th>attempts</th><th>error</th><th>request id</th>"
      "<th>report</th></tr></thead><tbody id=\"deliveries-body\"></tbody></table><p "
      "class=\"pager\"><button id=\"deliveries-prev\" type=\"button\">&larr; newer</button> "
      "<span id=\"deliveries-page\" class=\"small\"></span> <button id=\"deliveries-next\" "
      "type=\"button\">older &rarr;</button></p></section>\n</main>\n");
  return page;
}

// Nothing is loaded from elsewhere. Scripts: /ui/dashboard.js and, on the model page (which
// writes the HTML report into itself), the report's one inline script by its hash; no other
// inline script, event handler attribute or javascript: URL runs.
const std::string& PageCsp() {
  static const std::string csp =
      "default-src 'self'; script-src 'self' " + HtmlReportScriptHash() +
      "; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src "
      "'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
  return csp;
}

Response Page(std::string body, const char* type, const Request& request) {
  Response r;
  r.content_type = type;
  r.body = std::move(body);
  r.request_id = request.Header("x-request-id");
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Content-Security-Policy", PageCsp());
  return r;
}

// The model page's lists (dashboard.js fills them; with a report they move into its document):
// the stored reports of the model and its check history.
std::string ModelSections() {
  return "<section id=\"model-reports\"><h2>Stored reports of this model</h2><p "
         "class=\"small\">One per option set and rule set version; each opens its report.</p>"
         "<table><thead><tr><th>options</th><th>rule set</th><th>verdict</th><th>stored (UTC)"
         "</th><th></th></tr></thead><tbody id=\"model-reports-body\"></tbody></table></section>"
         "<section id=\"model-history\"><h2>Check history of this model</h2><table><thead><tr>"
         "<th>time (UTC)</th><th>name</th><th>source</th><th>verdict</th><th>errors</th>"
         "<th>warnings</th><th>labels</th><th>options</th></tr></thead><tbody "
         "id=\"model-history-body\"></tbody></table><p class=\"pager\"><button "
         "id=\"model-history-prev\" type=\"button\">&larr; newer</button> <span "
         "id=\"model-history-page\" class=\"small\"></span> <button "
         "id=\"model-history-next\" type=\"button\">older &rarr;</button></p></section>";
}

}  // namespace

void AddPageRoutes(Router& router) {
  Route home;
  home.method = "GET";
  home.pattern = "/";
  home.page = true;
  home.handle = [](Request& request, Reply reply) {
    reply(Page(DashboardPage(), "text/html; charset=utf-8", request));
  };
  router.Add(std::move(home));

  Route model;
  model.method = "GET";
  model.pattern = "/models/{sha256}";
  model.page = true;
  model.handle = [](Request& request, Reply reply) {
    const std::string sha = request.path_params["sha256"];
    if (!IsSha256Hex(sha)) {
      reply(ErrorResponse(grpc::Status(grpc::StatusCode::NOT_FOUND,
                                       "a model page is /models/<sha256, lowercase hex>"),
                          request.Header("x-request-id")));
      return;
    }
    reply(Page(Shell("axqc report " + sha.substr(0, 12),
                     "data-page=\"report\" data-sha256=\"" + sha + "\"",
                     "<header><div class=\"small\"><a href=\"/\">&larr; dashboard</a></div><h1>"
                     "Report " +
                         sha.substr(0, 12) +
                         "&hellip;</h1></header><main><section id=\"report\">Loading the "
                         "report&hellip;</section>" +
                         ModelSections() + "</main>\n"),
               "text/html; charset=utf-8", request));
  };
  router.Add(std::move(model));

  Route js;
  js.method = "GET";
  js.pattern = "/ui/dashboard.js";
  js.page = true;
  js.handle = [](Request& request, Reply reply) {
    reply(Page(kDashboardJs, "text/javascript; charset=utf-8", request));
  };
  router.Add(std::move(js));
}

}  // namespace axqc::server::http
