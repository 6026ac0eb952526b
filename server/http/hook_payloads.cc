#include "http/hook_payloads.h"

#include <algorithm>
#include <string>
#include <utility>

#include "json_input.h"

namespace axqc::server::http {

namespace {

grpc::Status Invalid(const std::string& msg) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, msg);
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 3986 pchar without pct-encoded: unreserved, sub-delims, ':' and '@'.
bool IsPathChar(char c) {
  if (IsAlnum(c)) return true;
  switch (c) {
    case '-':
    case '.':
    case '_':
    case '~':  // unreserved
    case '!':
    case '$':
    case '&':
    case '\'':
    case '(':
    case ')':
    case '*':
    case '+':  // sub-delims
    case ',':
    case ';':
    case '=':
    case ':':
    case '@':
      return true;
    default:
      return false;
  }
}

// A value quoted in an error message: at most 80 bytes, control characters as '?'.
std::string Quote(std::string_view s) {
  std::string out = "'";
  for (std::size_t i = 0; i < s.size() && i < 80; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    out.push_back(c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c));
  }
  if (s.size() > 80) out += "...";
  return out + "'";
}

std::string PercentEncodeAll(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (IsAlnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

bool IsLowerHex(std::string_view s) {
  for (const char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// HOST or HOST:PORT: a name of [A-Za-z0-9.-] or a bracketed IPv6 address, a port of 1-5 digits.
bool ValidAuthority(std::string_view a) {
  std::string_view port;
  if (!a.empty() && a.front() == '[') {
    const std::size_t close = a.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    for (const char c : a.substr(1, close - 1)) {
      if (HexValue(c) < 0 && c != ':' && c != '.') return false;
    }
    const std::string_view rest = a.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return false;
    port = rest.empty() ? rest : rest.substr(1);
    if (!rest.empty() && port.empty()) return false;
  } else {
    const std::size_t colon = a.find(':');
    const std::string_view host = a.substr(0, colon);
    if (host.empty()) return false;
    for (const char c : host) {
      if (!IsAlnum(c) && c != '.' && c != '-') return false;
    }
    if (colon != std::string_view::npos) {
      port = a.substr(colon + 1);
      if (port.empty()) return false;
    }
  }
  if (port.size() > 5) return false;
  for (const char c : port) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Text from a model or a registry (node names, messages, errors) inside a Markdown code span:
// no backtick, line break or control character, at most `max` bytes. Inside a code span the Hub
// renders no link, mention, HTML or emphasis, whatever the model's names contain. In a table cell
// (`cell`) a bar is escaped, as GitHub-flavoured tables split cells at bars inside code spans too.
std::string CodeSpan(std::string_view text, std::size_t max = 200, bool cell = false) {
  std::string out;
  for (const char c : text) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    if (cell && c == '|') {
      out += "\\|";
    } else {
      out += (c == '`' || u < 0x20 || u == 0x7f) ? ' ' : c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? "` `" : "`` " + out + " ``";
}

const char* SeverityWord(v1::Severity s) {
  switch (s) {
    case v1::SEVERITY_ERROR:
      return "error";
    case v1::SEVERITY_WARN:
      return "warn";
    case v1::SEVERITY_INFO:
      return "info";
    default:
      return "unspecified";
  }
}

// Findings listed in a write-back at most (the report has all of them).
constexpr int kWriteBackFindings = 10;

}  // namespace

std::string UnsafePathReason(std::string_view path) {
  if (path.empty()) return "the path is empty";
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = path.find('/', start);
    const std::string_view seg = path.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (seg.empty()) return "the path has an empty segment";
    std::string decoded;
    for (std::size_t i = 0; i < seg.size(); ++i) {
      const char c = seg[i];
      if (c == '%') {
        if (i + 2 >= seg.size()) return "the path has a malformed %-escape";
        const int h = HexValue(seg[i + 1]);
        const int l = HexValue(seg[i + 2]);
        if (h < 0 || l < 0) return "the path has a malformed %-escape";
        decoded.push_back(static_cast<char>(h * 16 + l));
        i += 2;
        continue;
      }
      if (c == '\\') return "the path contains a backslash";
      if (!IsPathChar(c)) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u >= 0x7f) return "the path contains a control or non-ASCII byte";
        return std::string("the path contains '") + c + "'";
      }
      decoded.push_back(c);
    }
    if (decoded == "." || decoded == "..") {
      return "the path has a '" + decoded + "' segment " +
             (decoded.size() == seg.size() ? std::string() : "(encoded as " + Quote(seg) + ") ") +
             "that would leave its directory";
    }
    for (const char d : decoded) {
      const auto u = static_cast<unsigned char>(d);
      if (d == '/' || d == '\\' || d == '%') {
        return "the path segment " + Quote(seg) + " encodes '" + std::string(1, d) + "'";
      }
      if (u < 0x20 || u == 0x7f)
        return "the path segment " + Quote(seg) + " encodes a control byte";
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return {};
}

bool ValidHfRepoName(std::string_view name) {
  const std::size_t slash = name.find('/');
  if (slash != std::string_view::npos && name.find('/', slash + 1) != std::string_view::npos) {
    return false;
  }
  auto part_ok = [](std::string_view p) {
    if (p.empty() || p.size() > 96 || p[0] == '.' || p[0] == '-') return false;
    if (p.find("..") != std::string_view::npos) return false;
    for (const char c : p) {
      if (!IsAlnum(c) && c != '.' && c != '_' && c != '-') return false;
    }
    return true;
  };
  if (slash == std::string_view::npos) return part_ok(name);
  return part_ok(name.substr(0, slash)) && part_ok(name.substr(slash + 1));
}

bool ValidHfRevision(std::string_view rev) {
  if (rev.size() == 40 && IsLowerHex(rev)) return true;
  if (rev.empty() || rev.size() > 255 || rev.back() == '/' || rev.back() == '.') return false;
  if (rev.find("..") != std::string_view::npos) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = rev.find('/', start);
    const std::string_view part =
        rev.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part.empty() || part[0] == '.' || EndsWith(part, ".lock")) return false;
    for (const char c : part) {
      if (!IsAlnum(c) && c != '.' && c != '_' && c != '-') return false;
    }
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

grpc::Status ParseHuggingFacePayload(std::string_view body, HfPayload* out) {
  nlohmann::json j;
  const JsonLimits limits{kMaxWebhookBodyBytes, kMaxJsonDepth};
  if (grpc::Status st = ParseJson(body, limits, "webhook body", &j); !st.ok()) return st;
  const JsonReader root(j, "webhook body");
  const JsonReader event = root.Object("event");
  const JsonReader repo = root.Object("repo");
  HfPayload p;
  p.action = event.String("action");
  p.scope = event.String("scope");
  p.type = repo.String("type");
  p.name = repo.String("name");
  p.head_sha = repo.String("headSha");
  if (!root.ok()) return root.status();
  if (p.action.empty() || p.scope.empty() || p.name.empty()) {
    return Invalid("webhook body has no event.action, event.scope and repo.name");
  }
  if (!ValidHfRepoName(p.name)) {
    return Invalid("webhook body: repo.name " + Quote(p.name) +
                   " is not a repo id (NAME or NAMESPACE/NAME of [A-Za-z0-9._-], no '..')");
  }
  if (!p.head_sha.empty() && !ValidHfRevision(p.head_sha)) {
    return Invalid("webhook body: repo.headSha " + Quote(p.head_sha) +
                   " is neither a 40-hex commit sha nor a branch or tag name");
  }
  // A push to a pull request's branch names it in updatedRefs: [{"ref": "refs/pr/N", ...}].
  if (const auto refs = j.find("updatedRefs"); refs != j.end() && !refs->is_null()) {
    if (!refs->is_array()) return Invalid("webhook body: updatedRefs is not an array");
    for (const auto& u : *refs) {
      if (!u.is_object())
        return Invalid("webhook body: an element of updatedRefs is not an object");
      const auto ref = u.find("ref");
      if (ref == u.end() || !ref->is_string()) continue;
      constexpr std::string_view kPrefix = "refs/pr/";
      const std::string_view r = ref->get_ref<const std::string&>();
      if (!StartsWith(r, kPrefix)) continue;
      const std::string_view num = r.substr(kPrefix.size());
      if (num.empty() || num.size() > 9 || num[0] == '0' ||
          num.find_first_not_of("0123456789") != std::string_view::npos) {
        return Invalid("webhook body: updatedRefs names " + Quote(r) +
                       ", not refs/pr/N with a pull request number N");
      }
      p.pull_request = std::string(num);
    }
  }
  p.event = p.scope + "." + p.action;
  p.revision = p.head_sha.empty() ? "main" : p.head_sha;
  if (p.type != "model") {
    p.ignore_reason = "repo type " + p.type + " is not a model";
  } else if (p.scope != "repo.content" || (p.action != "update" && p.action != "create")) {
    p.ignore_reason = "event " + p.event + " is not a content update (repo.content.update)";
  }
  *out = std::move(p);
  return grpc::Status::OK;
}

grpc::Status ParseMlflowPayload(std::string_view body, MlflowPayload* out) {
  nlohmann::json j;
  const JsonLimits limits{kMaxWebhookBodyBytes, kMaxJsonDepth};
  if (grpc::Status st = ParseJson(body, limits, "webhook body", &j); !st.ok()) return st;
  const JsonReader root(j, "webhook body");
  const std::string entity = root.String("entity");
  const std::string action = root.String("action");
  const JsonReader data = root.Object("data");
  if (!root.ok()) return root.status();
  if (entity.empty() || action.empty()) return Invalid("webhook body has no entity and action");
  MlflowPayload p;
  p.event = entity + "." + action;
  const bool tag_set = p.event == "model_version_tag.set";
  if (tag_set) p.tag_key = data.String("key");
  if (!root.ok()) return root.status();
  if (tag_set && StartsWith(p.tag_key, "axqc.")) {
    p.ignore_reason = "tag " + p.tag_key + " is this server's own write-back";
  } else if (!tag_set && p.event != "model_version.created") {
    p.ignore_reason = "event " + p.event +
                      " does not announce a model version to check (model_version.created, "
                      "model_version_tag.set do)";
  } else {
    p.name = data.String("name");
    p.version = data.StringOrInteger("version");
    p.run_id = data.String("run_id");
    if (!root.ok()) return root.status();
    if (p.name.empty() || p.version.empty()) {
      return Invalid("webhook data has no model name and version");
    }
    if (p.version.size() > 19 || p.version.find_first_not_of("0123456789") != std::string::npos) {
      return Invalid("webhook body: data.version " + Quote(p.version) + " is not a version number");
    }
    for (const char c : p.name) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f) {
        return Invalid("webhook body: data.name contains a control character");
      }
    }
  }
  *out = std::move(p);
  return grpc::Status::OK;
}

grpc::Status ParseMlflowDownloadUri(std::string_view answer, std::string* artifact_uri) {
  nlohmann::json j;
  const JsonLimits limits{kMaxRegistryAnswerBytes, kMaxJsonDepth};
  const char* what = "MLflow's get-download-uri answer";
  if (grpc::Status st = ParseJson(answer, limits, what, &j); !st.ok()) return st;
  const JsonReader root(j, what);
  std::string uri = root.String("artifact_uri");
  if (!root.ok()) return root.status();
  if (uri.empty()) return Invalid(std::string(what) + " has no artifact_uri");
  *artifact_uri = std::move(uri);
  return grpc::Status::OK;
}

grpc::Status MlflowModelUrl(std::string_view artifact_uri, std::string_view mlflow_url,
                            std::string_view model_file, std::string* url) {
  std::string_view uri = artifact_uri;
  while (!uri.empty() && uri.back() == '/') uri.remove_suffix(1);
  const std::string shown = Quote(uri);
  std::string base;
  if (StartsWith(uri, "mlflow-artifacts:")) {
    std::string_view path = uri.substr(std::string_view("mlflow-artifacts:").size());
    if (StartsWith(path, "//")) {  // mlflow-artifacts://host:port/path: the registry's proxy
      const std::size_t slash = path.find('/', 2);
      path = slash == std::string_view::npos ? std::string_view() : path.substr(slash);
    }
    while (!path.empty() && path.front() == '/') path.remove_prefix(1);
    if (const std::string why = UnsafePathReason(path); !why.empty()) {
      return Invalid("MLflow artifact location " + shown + ": " + why);
    }
    base = std::string(mlflow_url) + "/api/2.0/mlflow-artifacts/artifacts/" + std::string(path);
  } else if (StartsWith(uri, "http://") || StartsWith(uri, "https://")) {
    const std::size_t authority = uri.find("://") + 3;
    const std::size_t slash = uri.find('/', authority);
    if (!ValidAuthority(uri.substr(authority, slash - authority))) {
      return Invalid("MLflow artifact location " + shown + " has a malformed host");
    }
    if (slash != std::string_view::npos) {
      if (const std::string why = UnsafePathReason(uri.substr(slash + 1)); !why.empty()) {
        return Invalid("MLflow artifact location " + shown + ": " + why);
      }
    }
    base = std::string(uri);
  } else {
    std::string scheme;  // as far as it is a scheme (letters, digits, '+', '-', '.')
    for (const char c : uri.substr(0, std::min<std::size_t>(uri.find(':'), 40))) {
      if (!IsAlnum(c) && c != '+' && c != '-' && c != '.') break;
      scheme.push_back(c);
    }
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        "MLflow stores this model version at " + scheme +
            ":..., which this server cannot read; run the MLflow server with "
            "--serve-artifacts (mlflow-artifacts:/ locations) or http(s) artifacts");
  }
  if (EndsWith(base, ".onnx")) {
    *url = std::move(base);
    return grpc::Status::OK;
  }
  if (const std::string why = UnsafePathReason(model_file); !why.empty()) {
    return Invalid("model file name " + Quote(model_file) + ": " + why);
  }
  *url = base + "/" + std::string(model_file);
  return grpc::Status::OK;
}

std::string HuggingFaceModelUrl(std::string_view hf_url, std::string_view name,
                                std::string_view revision, std::string_view model_file) {
  return std::string(hf_url) + "/" + std::string(name) + "/resolve/" + PercentEncodeAll(revision) +
         "/" + std::string(model_file);
}

nlohmann::json HfWriteBackPost(const nlohmann::json& request, const grpc::Status& status,
                               const v1::CheckResponse& resp, const std::string& outcome,
                               const std::string& error, const std::string& report_url) {
  const nlohmann::json& hf = request.at("hf");
  const std::string revision = hf.at("revision").get<std::string>();
  const std::string short_rev = revision.substr(0, 12);
  nlohmann::json post;
  if (hf.contains("pull_request")) post["pull_request"] = hf.at("pull_request");
  std::string text;
  if (status.ok()) {
    const auto& r = resp.report();
    const auto& sum = r.summary();
    post["title"] = "axqc: " + outcome + " at " + short_rev;
    text = "**axqc: " + outcome + "** for the model at revision `" + short_rev +
           "`: " + std::to_string(sum.errors()) + (sum.errors() == 1 ? " error, " : " errors, ") +
           std::to_string(sum.warnings()) + (sum.warnings() == 1 ? " warning" : " warnings") +
           " in " + std::to_string(sum.causes()) +
           (sum.causes() == 1 ? " root cause" : " root causes") + " (rule set " +
           CodeSpan(resp.rule_set_version(), 40) + ").\n\n";
    int listed = 0;
    int shown = 0;
    for (const auto& f : r.findings()) {
      if (f.severity() != v1::SEVERITY_ERROR && f.severity() != v1::SEVERITY_WARN) continue;
      ++listed;
      if (shown == kWriteBackFindings) continue;
      if (shown == 0) text += "| rule | severity | node | finding |\n|---|---|---|---|\n";
      ++shown;
      text += "| " + CodeSpan(f.rule(), 80, true) + " | " + SeverityWord(f.severity()) + " | " +
              (f.nodes().empty() ? std::string("-") : CodeSpan(f.nodes(0), 120, true)) + " | " +
              CodeSpan(f.message(), 300, true) + " |\n";
    }
    if (listed > shown) {
      text += "\n... and " + std::to_string(listed - shown) +
              " more errors and warnings in the report.\n";
    }
    if (shown > 0) text += "\n";
    text += "sha256 `" + resp.sha256() + "`, request id " + CodeSpan(resp.request_id(), 64);
  } else {
    post["title"] = "axqc: the model at " + short_rev + " could not be checked (" + outcome + ")";
    text = "**axqc could not check the model** at revision `" + short_rev + "` (" + outcome +
           "): " + CodeSpan(error, 600) + ".\n\nNothing is known about its conformance; the " +
           "delivery can be found in the server's GET /v1/deliveries.";
  }
  if (!report_url.empty()) text += "\n\nReport: " + report_url;
  post["text"] = text;
  return post;
}

}  // namespace axqc::server::http
