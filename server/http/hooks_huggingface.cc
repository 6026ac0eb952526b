// POST /v1/hooks/huggingface: Hugging Face Hub webhooks. The Hub sends the secret configured on
// the webhook in X-Webhook-Secret and a JSON body {"event": {"action", "scope"}, "repo": {"type",
// "name", "headSha", ...}, "updatedRefs": [...], "webhook": {...}}. Content updates of model repos
// (scope "repo.content", action "create" or "update") check the repo's model file
// (--huggingface-model-file) at the pushed revision, downloaded from
// {--huggingface-url}/{repo}/resolve/{headSha}/{file} (the host must be allowlisted; the token
// goes to that origin only). The body is parsed and validated by ParseHuggingFacePayload
// (hook_payloads.h: bounded, typed, repo id and revision checked). Deliveries
// are identified by repo, revision and event, so a retried delivery is not checked twice. There
// is no write-back: the verdict is in the history (GET /v1/models?label.hf.repo=...).
#include <string>

#include "http/api.h"
#include "http/hook_payloads.h"
#include "http/hooks.h"
#include "request_validation.h"

namespace axqc::server::http {

namespace {

grpc::Status VerifyAndParse(Hooks* hooks, const Request& request, HookDelivery& d) {
  const HookSettings& h = hooks->settings();
  const std::string secret = request.Header("x-webhook-secret");
  if (secret.empty()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing X-Webhook-Secret");
  }
  if (!SecretsEqual(secret, h.huggingface_secret)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "X-Webhook-Secret does not match");
  }
  HfPayload p;
  if (grpc::Status st = ParseHuggingFacePayload(request.body, &p); !st.ok()) return st;
  d.registry = "huggingface";
  d.hooks = hooks;
  d.event = p.event;
  d.delivery_id = p.name + "@" + p.revision + ":" + d.event;
  d.ignore_reason = p.ignore_reason;
  d.check.registry = "huggingface";
  d.check.delivery_id = p.head_sha.empty() ? "" : "hf-" + p.head_sha.substr(0, 40);
  d.check.name = p.name + "@" + p.revision.substr(0, 12);
  d.check.labels = {{"source", "huggingface"},
                    {"hf.repo", p.name.substr(0, kMaxLabelValue)},
                    {"hf.revision", p.revision.substr(0, kMaxLabelValue)}};
  d.check.options.set_check_value(h.check_value);
  if (!h.huggingface_token.empty()) {
    d.check.headers = {{"Authorization", "Bearer " + h.huggingface_token}};
  }
  d.check.credential_origin = h.huggingface_origin;
  const std::string url =
      HuggingFaceModelUrl(h.huggingface_url, p.name, p.revision, h.huggingface_model_file);
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
        Answer<nlohmann::json>(std::move(reply), [](const std::string& request_id,
                                                    nlohmann::json& resp) {
          const bool accepted = resp.value("status", "") == "accepted";
          resp["request_id"] = request_id;
          return JsonResponse(resp.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                              request_id, accepted ? 202 : 200);
        }));
  };
  router.Add(std::move(r));
}

}  // namespace axqc::server::http
