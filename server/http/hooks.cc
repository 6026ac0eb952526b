#include "http/hooks.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <boost/asio/post.hpp>
#include <stdexcept>

#include "auth.h"
#include "axqc/targets.h"
#include "http/hook_payloads.h"
#include "request_validation.h"
#include "rpc/check_pipeline.h"
#include "url_fetch.h"

namespace axqc::server::http {

namespace {

std::string ReadOptional(const std::string& path) {
  return path.empty() ? std::string() : ReadTokenFile(path);
}

// The origin of a registry's configured URL; "" when it is not set.
std::string OriginOfSetting(const char* flag, const std::string& url) {
  if (url.empty()) return {};
  try {
    return ParseUrl(url).Origin();
  } catch (const SourceError& e) {
    throw std::runtime_error(std::string(flag) + " " + url + ": " + e.what());
  }
}

void CheckModelFile(const char* flag, const std::string& file) {
  if (const std::string why = UnsafePathReason(file); !why.empty()) {
    throw std::runtime_error(std::string(flag) + " " + file +
                             ": must be a relative path inside the model's directory: " + why);
  }
}

}  // namespace

HookSettings LoadHookSettings(const ServerConfig& c) {
  HookSettings h;
  h.mlflow_secret = ReadOptional(c.mlflow_webhook_secret_file);
  h.mlflow_url = c.mlflow_url;
  while (!h.mlflow_url.empty() && h.mlflow_url.back() == '/') h.mlflow_url.pop_back();
  h.mlflow_token = ReadOptional(c.mlflow_token_file);
  h.mlflow_model_file = c.mlflow_model_file;
  h.mlflow_write_back = c.mlflow_write_back;
  h.huggingface_secret = ReadOptional(c.huggingface_webhook_secret_file);
  h.huggingface_url = c.huggingface_url;
  while (!h.huggingface_url.empty() && h.huggingface_url.back() == '/') {
    h.huggingface_url.pop_back();
  }
  h.huggingface_token = ReadOptional(c.huggingface_token_file);
  h.huggingface_model_file = c.huggingface_model_file;
  h.huggingface_write_back = c.huggingface_write_back;
  h.public_url = c.public_url;
  while (!h.public_url.empty() && h.public_url.back() == '/') h.public_url.pop_back();
  h.check_value = c.webhook_check_value;
  try {
    h.targets = ResolveTargets(c.webhook_targets);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string("--webhook-target: ") + e.what());
  }
  h.mlflow_origin = OriginOfSetting("--mlflow-url", h.mlflow_url);
  h.huggingface_origin = OriginOfSetting("--huggingface-url", h.huggingface_url);
  CheckModelFile("--mlflow-model-file", h.mlflow_model_file);
  CheckModelFile("--huggingface-model-file", h.huggingface_model_file);
  if (h.huggingface_write_back != "off" && h.huggingface_token.empty()) {
    throw std::runtime_error(
        "huggingface-write-back is " + h.huggingface_write_back +
        " but huggingface-token-file is not set: writing a discussion on the Hub needs a token "
        "with write access to the repos");
  }
  if (!h.mlflow_secret.empty() && h.mlflow_url.empty()) {
    throw std::runtime_error(
        "mlflow-webhook-secret-file is set but mlflow-url is not: the MLflow webhook needs the "
        "registry's address to download model versions");
  }
  return h;
}

std::string HmacSha256Base64(const std::string& key, const std::string& data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &len);
  std::string out(4 * ((len + 2) / 3) + 1, '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), mac, static_cast<int>(len));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::vector<std::pair<std::string, std::string>> CredentialsFor(
    const std::string& url, const std::string& registry_origin,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  if (registry_origin.empty() || ParseUrl(url).Origin() != registry_origin) return {};
  return headers;
}

bool SecretsEqual(const std::string& a, const std::string& b) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> ha{};
  std::array<unsigned char, EVP_MAX_MD_SIZE> hb{};
  unsigned int la = 0;
  unsigned int lb = 0;
  EVP_Digest(a.data(), a.size(), ha.data(), &la, EVP_sha256(), nullptr);
  EVP_Digest(b.data(), b.size(), hb.data(), &lb, EVP_sha256(), nullptr);
  return CRYPTO_memcmp(ha.data(), hb.data(), ha.size()) == 0;
}

std::string Hooks::RegistryCall(
    const std::string& method, const std::string& url, const std::string& body,
    const std::vector<std::pair<std::string, std::string>>& headers) const {
  UrlPolicy policy;
  policy.allow_hosts = config_->url_allow_hosts;
  policy.timeout = std::chrono::seconds(config_->url_timeout_seconds);
  policy.max_redirects = config_->url_max_redirects;
  policy.max_bytes = 16 << 20;
  policy.method = method;
  policy.body = body;
  if (!body.empty()) policy.content_type = "application/json";
  policy.headers = headers;
  std::atomic<bool> never{false};
  ByteBudget unlimited(1ull << 40, static_cast<prometheus::Gauge*>(nullptr));
  SourcedModel out = FetchUrl(url, policy, unlimited, never);
  return out.bytes == nullptr ? std::string() : std::string(out.bytes->view());
}

grpc::Status HookCheckRpc::Validate(const Request& req) {
  grpc::Status status = ValidateLabels(req.labels, "labels");
  if (status.ok()) status = ValidateName(req.name, "name", kMaxNameBytes);
  return status;
}

void HookCheckRpc::Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                       const Request& req, Response* /*grpc_resp*/) {
  call->Update([&](CallBase::Fields& f) {
    f.source = "webhook";
    f.name = req.name;
    f.labels = req.labels;
    f.options = req.options;
    f.options.set_format(v1::REPORT_FORMAT_PROTOBUF);
  });
  boost::asio::post(*s.deps.io, [&s, call = call, req = req]() {
    const ServiceDeps& deps = s.deps;
    const auto t0 = Clock::now();
    try {
      const std::string url = req.resolve_url();
      const ParsedUrl parsed = ParseUrl(url);
      call->Update([&](CallBase::Fields& f) { f.url = parsed.Redacted(); });
      UrlPolicy policy;
      policy.allow_hosts = deps.config->url_allow_hosts;
      policy.timeout = std::chrono::seconds(deps.config->url_timeout_seconds);
      policy.max_redirects = deps.config->url_max_redirects;
      policy.max_bytes = deps.config->max_model_bytes;
      policy.headers = CredentialsFor(url, req.credential_origin, req.headers);
      SourcedModel model = FetchUrl(url, policy, *deps.budget, call->cancelled);
      // The data files the model names, from the registry beside it (same credentials policy).
      FetchDataFiles(model, url, {}, policy, deps.config->max_external_data_bytes,
                     deps.config->data_file_dir, call->cancelled);
      deps.metrics->ObserveStage("load", SecondsSince(t0));
      req.reached_checker->store(true);
      CheckModel(s, call, std::move(model));
    } catch (const SourceError& e) {
      call->Finish(e.status());
    }
  });
}

template <const char* kName>
void HookRpc<kName>::Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                         const Request& req, Response* /*grpc_resp*/) {
  call->Update([&](CallBase::Fields& f) {
    f.source = "webhook";
    f.name = req.name;
    f.labels = req.labels;
  });
  if (!req.ignore_reason.empty()) {
    auto& out = call->response;
    out["event"] = req.event;
    out["status"] = "ignored";
    out["reason"] = req.ignore_reason;
    s.deps.metrics->CountWebhookDelivery(req.registry, "ignored");
    call->Finish(grpc::Status::OK);
    return;
  }
  // Recorded before the answer (a store call may block: on the I/O pool).
  boost::asio::post(*s.deps.io, [&s, call = call, req = req]() mutable {
    Delivery d = req.record;
    std::optional<Delivery> duplicate;
    try {
      duplicate = req.hooks->Record(d, req.dedup_model);
    } catch (const StoreError& e) {
      s.deps.metrics->CountStoreError();
      call->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                std::string("the delivery could not be recorded (") + e.what() +
                                    "); it was not accepted: send it again"));
      return;
    }
    auto& out = call->response;
    out["event"] = req.event;
    if (duplicate) {
      out["status"] = "duplicate";
      out["reason"] = duplicate->id == d.id
                          ? "this delivery was received before; its check is not repeated"
                          : "this model version was received before (delivery " + duplicate->id +
                                "); its check is not repeated";
      out["delivery_id"] = duplicate->id;
      out["request_id"] = duplicate->request_id;
      out["state"] = duplicate->state;
      if (!duplicate->outcome.empty()) out["outcome"] = duplicate->outcome;
      s.deps.metrics->CountWebhookDelivery(req.registry, "duplicate");
      call->Finish(grpc::Status::OK);
      return;
    }
    out["status"] = "accepted";
    out["model"] = req.name;
    out["delivery_id"] = d.id;
    out["request_id"] = d.request_id;
    call->Finish(grpc::Status::OK);
    req.hooks->Begin(std::move(d));
  });
}

template struct HookRpc<kMlflowWebhook>;
template struct HookRpc<kHuggingFaceWebhook>;

}  // namespace axqc::server::http
