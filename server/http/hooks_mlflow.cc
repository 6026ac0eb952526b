// POST /v1/hooks/mlflow: MLflow model-registry webhooks (MLflow 3.3+). The delivery carries
//   X-MLflow-Delivery-Id, X-MLflow-Timestamp (Unix seconds) and
//   X-MLflow-Signature: "v1," + base64(HMAC-SHA256(secret, delivery_id + "." + timestamp + "." +
//   body)),
// and a JSON body {"entity": "model_version", "action": "created", "timestamp": ..., "data":
// {"name", "version", "source", "run_id", "tags", "description"}}. model_version.created and
// model_version_tag.set (tags not written by this server, "axqc.*") check the version: its
// artifact location comes from GET /api/2.0/mlflow/model-versions/get-download-uri, the model
// file (--mlflow-model-file) is downloaded through the registry's artifact proxy
// (/api/2.0/mlflow-artifacts/artifacts/...) or the http(s) artifact URL (the token goes to the
// registry's own origin only; artifact paths that leave their directory are refused), and with
// --mlflow-write-back the verdict is written back as model-version tags
// (POST /api/2.0/mlflow/model-versions/set-tag).
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdlib>
#include <string>

#include "axqc/wire/status_name.h"
#include "http/api.h"
#include "http/hook_payloads.h"
#include "http/hooks.h"
#include "labels.h"
#include "request_validation.h"
#include "url_fetch.h"

namespace axqc::server::http {

namespace {

// Deliveries older (or newer) than this are refused as replays.
constexpr std::int64_t kMaxSkewSeconds = 300;

std::string UrlEncode(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string Clip(std::string s, std::size_t n) {
  if (s.size() > n) s.resize(n);
  return s;
}

std::vector<std::pair<std::string, std::string>> TokenHeaders(const HookSettings& h) {
  if (h.mlflow_token.empty()) return {};
  return {{"Authorization", "Bearer " + h.mlflow_token}};
}

// A registry API call with the token, which goes to the registry's own origin only.
std::string MlflowCall(const Hooks& hooks, const std::string& method, const std::string& url,
                       const std::string& body) {
  const HookSettings& h = hooks.settings();
  return hooks.RegistryCall(method, url, body,
                            CredentialsFor(url, h.mlflow_origin, TokenHeaders(h)));
}

grpc::Status Unauthenticated(const std::string& why) {
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, why);
}

grpc::Status VerifyAndParse(Hooks* hooks, const Request& request, HookDelivery& d) {
  const HookSettings& h = hooks->settings();
  const std::string id = request.Header("x-mlflow-delivery-id");
  const std::string ts = request.Header("x-mlflow-timestamp");
  const std::string sig = request.Header("x-mlflow-signature");
  if (id.empty() || ts.empty() || sig.empty()) {
    return Unauthenticated(
        "missing X-MLflow-Signature, X-MLflow-Delivery-Id or X-MLflow-Timestamp (create the "
        "MLflow webhook with the secret in --mlflow-webhook-secret-file)");
  }
  const std::string expected =
      "v1," + HmacSha256Base64(h.mlflow_secret, id + "." + ts + "." + request.body);
  if (!SecretsEqual(sig, expected)) return Unauthenticated("X-MLflow-Signature does not match");
  char* end = nullptr;
  const long long sent = std::strtoll(ts.c_str(), &end, 10);
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  if (end == ts.c_str() || *end != '\0' || std::llabs(now - sent) > kMaxSkewSeconds) {
    return Unauthenticated("X-MLflow-Timestamp is more than " + std::to_string(kMaxSkewSeconds) +
                           " s away from this server's clock (replayed delivery?)");
  }
  MlflowPayload p;
  if (grpc::Status st = ParseMlflowPayload(request.body, &p); !st.ok()) return st;
  if (!ValidToken(id, 128, true)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "X-MLflow-Delivery-Id must be 1-128 characters of [A-Za-z0-9_.:-]");
  }
  d.registry = "mlflow";
  d.hooks = hooks;
  d.event = p.event;
  d.ignore_reason = p.ignore_reason;
  if (!d.ignore_reason.empty()) return grpc::Status::OK;
  const std::string& name = p.name;
  const std::string& version = p.version;
  d.name = name + "/" + version;
  d.labels = {{"source", "mlflow"},
              {"mlflow.model", Clip(name, kMaxLabelValue)},
              {"mlflow.version", Clip(version, kMaxLabelValue)}};
  if (!p.run_id.empty()) d.labels["mlflow.run_id"] = Clip(p.run_id, 256);
  nlohmann::json stored = {{"name", d.name},
                           {"labels", d.labels},
                           {"check_value", h.check_value},
                           {"mlflow", {{"model", name}, {"version", version}}}};
  if (!h.targets.empty()) stored["targets"] = h.targets;
  if (h.mlflow_write_back) stored["write_back"] = "mlflow";
  d.record.id = "mlflow:" + id;
  d.record.source = "mlflow";
  d.record.model = name;
  d.record.revision = version;
  d.record.event = p.event;
  d.record.request = stored.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  d.dedup_model = true;  // a model version's files do not change
  return grpc::Status::OK;
}

}  // namespace

std::string MlflowModelVersionUrl(const Hooks& hooks, const std::string& name,
                                  const std::string& version) {
  const HookSettings& h = hooks.settings();
  const std::string answer = MlflowCall(
      hooks, "GET",
      h.mlflow_url + "/api/2.0/mlflow/model-versions/get-download-uri?name=" + UrlEncode(name) +
          "&version=" + UrlEncode(version),
      "");
  std::string uri;
  if (grpc::Status st = ParseMlflowDownloadUri(answer, &uri); !st.ok()) {
    throw SourceError(grpc::StatusCode::UNAVAILABLE, st.error_message());
  }
  std::string url;
  if (grpc::Status st = MlflowModelUrl(uri, h.mlflow_url, h.mlflow_model_file, &url); !st.ok()) {
    throw SourceError(st.error_code(), st.error_message());
  }
  return url;
}

std::vector<std::pair<std::string, std::string>> MlflowTags(const grpc::Status& status,
                                                            const v1::CheckResponse& resp,
                                                            const std::string& report_url) {
  if (status.ok()) {
    std::vector<std::pair<std::string, std::string>> tags = {
        {"axqc.verdict", VerdictLabel(resp.verdict())},
        {"axqc.errors", std::to_string(resp.report().summary().errors())},
        {"axqc.warnings", std::to_string(resp.report().summary().warnings())},
        {"axqc.sha256", resp.sha256()},
        {"axqc.rule_set_version", resp.rule_set_version()},
        {"axqc.request_id", resp.request_id()}};
    if (!report_url.empty()) tags.emplace_back("axqc.report_url", report_url);
    return tags;
  }
  return {{"axqc.verdict",
           status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ? "invalid_input" : "error"},
          {"axqc.error", Clip(std::string(wire::StatusCodeName(status.error_code())) + ": " +
                                  status.error_message(),
                              1000)}};
}

void MlflowWriteTags(const Hooks& hooks, const std::string& name, const std::string& version,
                     const std::vector<std::pair<std::string, std::string>>& tags) {
  const HookSettings& h = hooks.settings();
  std::size_t written = 0;
  for (const auto& [k, v] : tags) {
    const nlohmann::json body = {{"name", name}, {"version", version}, {"key", k}, {"value", v}};
    try {
      MlflowCall(hooks, "POST", h.mlflow_url + "/api/2.0/mlflow/model-versions/set-tag",
                 body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      ++written;
    } catch (const SourceError& e) {
      throw SourceError(e.status().error_code(),
                        std::to_string(written) + " of " + std::to_string(tags.size()) +
                            " tags written, then tag " + k + ": " + e.what());
    }
  }
}

// Both webhook routes; a registry without a configured secret answers NOT_FOUND naming the flag.
void AddHookRoutes(Router& router, Api api) {
  Route mlflow;
  mlflow.method = "POST";
  mlflow.pattern = "/v1/hooks/mlflow";
  mlflow.handle = [api](Request& request, Reply reply) {
    Hooks* hooks = api.hooks;
    api.admission->HttpSigned<HookRpc<kMlflowWebhook>>(
        OriginOf(request),
        [hooks, &request](HookDelivery& d) {
          if (hooks == nullptr || hooks->settings().mlflow_secret.empty()) {
            return grpc::Status(grpc::StatusCode::NOT_FOUND,
                                "the MLflow webhook is not enabled on this server "
                                "(--mlflow-webhook-secret-file, --mlflow-url)");
          }
          return VerifyAndParse(hooks, request, d);
        },
        Answer<nlohmann::json>(std::move(reply), [](const std::string& request_id,
                                                    nlohmann::json& resp) {
          const bool accepted = resp.value("status", "") == "accepted";
          // Accepted and duplicate answers carry the request id of the delivery's check.
          if (!resp.contains("request_id")) resp["request_id"] = request_id;
          return JsonResponse(resp.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                              request_id, accepted ? 202 : 200);
        }));
  };
  router.Add(std::move(mlflow));
  AddHuggingFaceRoute(router, api);
  AddDeliveryRoutes(router, api);
}

}  // namespace axqc::server::http
