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
.controls label{margin-right:14px}
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
      "<section id=\"models\"><h2>Recent checks</h2><p class=\"small\">The latest check of each "
      "model, newest first; a model's name opens its report.</p><table><thead><tr><th>time "
      "(UTC)</th><th>model</th><th>verdict</th><th>errors</th><th>warnings</th><th>labels</th>"
      "</tr></thead><tbody id=\"models-body\"></tbody></table></section>\n</main>\n");
  return page;
}

bool IsSha256(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
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
    if (!IsSha256(sha)) {
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
                         "report&hellip;</section></main>\n"),
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
