// POST /v1/hooks/huggingface: Hugging Face Hub webhooks. The Hub sends the secret configured on
// the webhook in X-Webhook-Secret and a JSON body {"event": {"action", "scope"}, "repo": {"type",
// "name", "headSha", ...}, "updatedRefs": [...], "webhook": {...}}. Content updates of model repos
// (scope "repo.content", action "create" or "update") check the repo's model file
// (--huggingface-model-file) at the pushed revision, downloaded from
// {--huggingface-url}/{repo}/resolve/{headSha}/{file} (the host must be allowlisted; the token
// goes to that origin only). The body is parsed and validated by ParseHuggingFacePayload
// (hook_payloads.h: bounded, typed, repo id and revision checked). Deliveries
// are identified by repo, revision and event, and recorded in the store (hooks.h), so a retried
// delivery is not checked twice, also after a restart. The verdict is in the history
// (GET /v1/models?label.hf.repo=...) and the delivery in GET /v1/deliveries; with
// --huggingface-write-back failures|all it is also written to the Hub (HfWriteBack): a comment on
// the pull request when the push updated refs/pr/N, else a new discussion on the repo.
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
  if (!p.pull_request.empty()) d.labels["hf.pull_request"] = p.pull_request;
  const std::string url =
      HuggingFaceModelUrl(h.huggingface_url, p.name, p.revision, h.huggingface_model_file);
  nlohmann::json stored = {
      {"name", d.name}, {"labels", d.labels}, {"check_value", h.check_value}, {"url", url}};
  if (!h.targets.empty()) stored["targets"] = h.targets;
  stored["hf"] = {{"repo", p.name}, {"revision", p.revision}};
  if (!p.pull_request.empty()) {
    stored["hf"]["pull_request"] = p.pull_request;
  }
  if (h.huggingface_write_back != "off") stored["write_back"] = "huggingface";
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

void HfWriteBack(const Hooks& hooks, const nlohmann::json& request, const nlohmann::json& post) {
  const HookSettings& h = hooks.settings();
  const std::string repo = request.at("hf").at("repo").get<std::string>();
  if (!ValidHfRepoName(repo)) {
    throw SourceError(grpc::StatusCode::INVALID_ARGUMENT, "stored repo name is not a repo id");
  }
  std::string url = h.huggingface_url + "/api/models/" + repo + "/discussions";
  nlohmann::json body;
  if (post.contains("pull_request")) {
    const std::string pr = post.at("pull_request").get<std::string>();
    if (pr.empty() || pr.size() > 9 || pr.find_first_not_of("0123456789") != std::string::npos) {
      throw SourceError(grpc::StatusCode::INVALID_ARGUMENT, "stored pull request is not a number");
    }
    url += "/" + pr + "/comment";
    body = {{"comment", post.at("text")}};
  } else {
    body = {{"title", post.at("title")}, {"description", post.at("text")}, {"pullRequest", false}};
  }
  hooks.RegistryCall("POST", url,
                     body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                     CredentialsFor(url, h.huggingface_origin,
                                    {{"Authorization", "Bearer " + h.huggingface_token}}));
}

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
