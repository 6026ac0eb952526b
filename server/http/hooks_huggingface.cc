// POST /v1/hooks/huggingface: Hugging Face Hub webhooks. The Hub sends the secret configured on
// the webhook in X-Webhook-Secret and a JSON body {"event": {"action", "scope"}, "repo": {"type",
// "name", "headSha", ...}, "updatedRefs": [...], "webhook": {...}}. Content updates of model repos
// (scope "repo.content", action "create" or "update") check the repo's model file
// (--huggingface-model-file) at the pushed revision, downloaded from
// {--huggingface-url}/{repo}/resolve/{headSha}/{file} (the host must be allowlisted). Deliveries
// are identified by repo, revision and event, so a retried delivery is not checked twice. There
// is no write-back: the verdict is in the history (GET /v1/models?label.hf.repo=...).
#include <string>

#include "http/api.h"
#include "http/hooks.h"
#include "request_validation.h"

namespace axqc::server::http {

namespace {

std::string PathEncode(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

grpc::Status VerifyAndParse(Hooks* hooks, const Request& request, HookDelivery& d) {
  const HookSettings& h = hooks->settings();
  const std::string secret = request.Header("x-webhook-secret");
  if (secret.empty()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing X-Webhook-Secret");
  }
  if (!SecretsEqual(secret, h.huggingface_secret)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "X-Webhook-Secret does not match");
  }
  nlohmann::json body;
  try {
    body = nlohmann::json::parse(request.body);
  } catch (const std::exception& e) {
    return Invalid(std::string("webhook body is not JSON: ") + e.what());
  }
  const auto event = body.value("event", nlohmann::json::object());
  const auto repo = body.value("repo", nlohmann::json::object());
  const std::string action = event.value("action", "");
  const std::string scope = event.value("scope", "");
  const std::string type = repo.value("type", "");
  const std::string name = repo.value("name", "");
  std::string sha = repo.value("headSha", "");
  if (action.empty() || scope.empty() || name.empty()) {
    return Invalid("webhook body has no event.action, event.scope and repo.name");
  }
  if (name.find("..") != std::string::npos || (!sha.empty() && !ValidToken(sha, 64, false))) {
    return Invalid("repo.name or repo.headSha is malformed");
  }
  d.registry = "huggingface";
  d.hooks = hooks;
  d.event = scope + "." + action;
  d.delivery_id = name + "@" + (sha.empty() ? "main" : sha) + ":" + d.event;
  if (type != "model") {
    d.ignore_reason = "repo type " + type + " is not a model";
  } else if (scope != "repo.content" || (action != "update" && action != "create")) {
    d.ignore_reason = "event " + d.event + " is not a content update (repo.content.update)";
  }
  const std::string revision = sha.empty() ? "main" : sha;
  d.check.registry = "huggingface";
  d.check.delivery_id = sha.empty() ? "" : "hf-" + sha.substr(0, 40);
  d.check.name = name + "@" + revision.substr(0, 12);
  d.check.labels = {{"source", "huggingface"},
                    {"hf.repo", name.substr(0, kMaxLabelValue)},
                    {"hf.revision", revision}};
  d.check.options.set_check_value(h.check_value);
  if (!h.huggingface_token.empty()) {
    d.check.headers = {{"Authorization", "Bearer " + h.huggingface_token}};
  }
  const std::string url = h.huggingface_url + "/" + PathEncode(name) + "/resolve/" + revision +
                          "/" + PathEncode(h.huggingface_model_file);
  d.check.resolve_url = [url] { return url; };
  return grpc::Status::OK;
}

}  // namespace

void AddHuggingFaceRoute(Router& router, Api api) {
  Route r;
  r.method = "POST";
  r.pattern = "/v1/hooks/huggingface";
  r.handle = [api](Request& request, Reply reply) {
    Hooks* hooks = api.hooks;
    api.admission->HttpSigned<HookRpc<kHuggingFaceWebhook>>(
        OriginOf(request),
        [hooks, &request](HookDelivery& d) {
          if (hooks == nullptr || hooks->settings().huggingface_secret.empty()) {
            return grpc::Status(grpc::StatusCode::NOT_FOUND,
                                "the Hugging Face webhook is not enabled on this server "
                                "(--huggingface-webhook-secret-file)");
          }
          return VerifyAndParse(hooks, request, d);
        },
        Answer<nlohmann::json>(std::move(reply),
                               [](const std::string& request_id, nlohmann::json& resp) {
                                 const bool accepted = resp.value("status", "") == "accepted";
                                 resp["request_id"] = request_id;
                                 return JsonResponse(resp.dump(), request_id, accepted ? 202 : 200);
                               }));
  };
  router.Add(std::move(r));
}

}  // namespace axqc::server::http
