// POST /v1/hooks/huggingface: Hugging Face Hub webhooks. The Hub sends the secret configured on
// the webhook in X-Webhook-Secret and a JSON body {"event": {"action", "scope"}, "repo": {"type",
// "name", "headSha", ...}, "updatedRefs": [...], "webhook": {...}}. Content updates of model repos
// (scope "repo.content", action "create" or "update") check the repo's model file
// (--huggingface-model-file) at the pushed revision, downloaded from
// {--huggingface-url}/{repo}/resolve/{headSha}/{file} (the host must be allowlisted; the token
// goes to that origin only). The body is parsed and validated by ParseHuggingFacePayload
// (hook_payloads.h: bounded, typed, repo id and revision checked). Deliveries
// are identified by repo, revision and event, and recorded in the store (hooks.h), so a retried
// delivery is not checked twice, also after a restart. There is no write-back: the verdict is in
// the history (GET /v1/models?label.hf.repo=...) and the delivery in GET /v1/deliveries.
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
  d.ignore_reason = p.ignore_reason;
  if (!d.ignore_reason.empty()) return grpc::Status::OK;
  d.name = p.name + "@" + p.revision.substr(0, 12);
  d.labels = {{"source", "huggingface"},
              {"hf.repo", p.name.substr(0, kMaxLabelValue)},
              {"hf.revision", p.revision.substr(0, kMaxLabelValue)}};
  const std::string url =
      HuggingFaceModelUrl(h.huggingface_url, p.name, p.revision, h.huggingface_model_file);
  nlohmann::json stored = {
      {"name", d.name}, {"labels", d.labels}, {"check_value", h.check_value}, {"url", url}};
  if (!h.targets.empty()) stored["targets"] = h.targets;
  // The pushed commit (headSha) names fixed contents: a delivery for it is a duplicate of the
  // first one. Without headSha the branch "main" is checked, which moves: each such delivery is
  // checked.
  const bool commit = !p.head_sha.empty();
  d.record.id = "huggingface:" + p.name + "@" + p.revision + ":" + d.event;
  if (!commit) d.record.id += "@" + std::to_string(NowMs());
  d.record.source = "huggingface";
  d.record.model = p.name;
  d.record.revision = p.revision;
  d.record.event = p.event;
  d.record.request = stored.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  d.dedup_model = commit;
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
          // Accepted and duplicate answers carry the request id of the delivery's check.
          if (!resp.contains("request_id")) resp["request_id"] = request_id;
          return JsonResponse(resp.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                              request_id, accepted ? 202 : 200);
        }));
  };
  router.Add(std::move(r));
}

}  // namespace axqc::server::http
