// Model-registry webhooks (POST /v1/hooks/mlflow, POST /v1/hooks/huggingface). A delivery is
// authenticated by the registry's own proof (MLflow: HMAC-SHA256 signature; Hugging Face: the
// shared X-Webhook-Secret), acknowledged at once (202), and the model version it announces is
// checked asynchronously: fetched through the registry's download API from an allowlisted host
// (--url-allow-host), checked like any Check (report cache, store, engine, history row with the
// registry's labels), and with write-back configured the verdict is written to the registry
// (MLflow: model-version tags). A delivery id seen before is acknowledged again without a second
// check (registries retry deliveries).
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "config.h"
#include "rpc/admission.h"

namespace axqc::server::http {

// Settings of the webhooks (ServerConfig, with the secrets read from their files).
struct HookSettings {
  std::string mlflow_secret;  // empty: /v1/hooks/mlflow disabled
  std::string mlflow_url;     // registry base URL, e.g. http://mlflow:5000
  std::string mlflow_token;   // bearer token of the registry's REST API (optional)
  std::string mlflow_model_file = "model.onnx";
  bool mlflow_write_back = false;
  std::string huggingface_secret;  // empty: /v1/hooks/huggingface disabled
  std::string huggingface_url = "https://huggingface.co";
  std::string huggingface_token;
  std::string huggingface_model_file = "model.onnx";
  bool check_value = false;  // options of webhook checks
  // The registries' origins (ParsedUrl::Origin of mlflow_url, huggingface_url): their tokens are
  // sent to these origins only.
  std::string mlflow_origin;
  std::string huggingface_origin;
};

// Reads the secret and token files of `config`, checks the registry URLs and the model file
// names (relative paths without dot segments). Throws std::runtime_error.
HookSettings LoadHookSettings(const ServerConfig& config);

// One model version to check for a webhook delivery.
struct HookCheck {
  std::string registry;  // "mlflow", "huggingface"
  std::string delivery_id;
  std::string name;  // display name, e.g. "detector/3"
  std::map<std::string, std::string> labels;
  v1::CheckOptions options;
  // Runs on the I/O pool: the model's URL (registry API calls); throws SourceError.
  std::function<std::string()> resolve_url;
  // Headers for the model download (the registry's token), sent only when the model's URL has
  // the registry's own origin `credential_origin` (CredentialsFor): never to another host, even
  // an allowlisted one.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string credential_origin;
  // With write-back: called with the outcome on the I/O pool.
  std::function<void(const grpc::Status&, const v1::CheckResponse&)> write_back;
};

// The check of a webhook delivery as an RPC of the admission layer (method "Check", source
// "webhook"): one metric sample, one log line and one history row like every check.
struct HookCheckRpc {
  static constexpr const char* kMethod = "Check";
  using Request = HookCheck;
  using Response = v1::CheckResponse;
  static grpc::Status Validate(const Request& req);
  static void Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                  const Request& req, Response* grpc_resp);
};

// A verified webhook delivery, as parsed by its registry's endpoint.
struct HookDelivery {
  std::string registry;
  std::string delivery_id;
  std::string event;          // e.g. "model_version.created"
  std::string ignore_reason;  // set: acknowledged, nothing to check
  HookCheck check;
  class Hooks* hooks = nullptr;
};

// The webhook delivery as an RPC of the admission layer (method "MlflowWebhook" or
// "HuggingFaceWebhook"): answers at once, starts the check.
template <const char* kName>
struct HookRpc {
  static constexpr const char* kMethod = kName;
  using Request = HookDelivery;
  using Response = nlohmann::json;
  static grpc::Status Validate(const Request& /*req*/) { return grpc::Status::OK; }
  static void Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                  const Request& req, Response* grpc_resp);
};

inline constexpr char kMlflowWebhook[] = "MlflowWebhook";
inline constexpr char kHuggingFaceWebhook[] = "HuggingFaceWebhook";

class Hooks {
 public:
  Hooks(HookSettings settings, Admission* admission, const ServerConfig* config, Logger* logger);

  const HookSettings& settings() const { return settings_; }
  // False when `key` (registry + delivery id) was seen before; remembers it otherwise.
  bool Remember(const std::string& key);
  // Starts the check of a delivery (the admission layer's Internal entry).
  void StartCheck(HookCheck check);

  // Registry REST calls through the URL policy (allowlist, timeout); throws SourceError.
  std::string RegistryCall(const std::string& method, const std::string& url,
                           const std::string& body,
                           const std::vector<std::pair<std::string, std::string>>& headers) const;
  Logger* logger() const { return logger_; }

 private:
  HookSettings settings_;
  Admission* admission_;
  const ServerConfig* config_;
  Logger* logger_;
  std::mutex mu_;
  std::unordered_set<std::string> seen_;
  std::deque<std::string> order_;
};

// `headers` when `url` has the origin `registry_origin` (scheme://host:port, ParsedUrl::Origin),
// else none. Throws SourceError(INVALID_ARGUMENT) for a malformed URL.
std::vector<std::pair<std::string, std::string>> CredentialsFor(
    const std::string& url, const std::string& registry_origin,
    const std::vector<std::pair<std::string, std::string>>& headers);

// Lowercase hex HMAC-SHA256 and base64 helpers (hooks_mlflow.cc).
std::string HmacSha256Base64(const std::string& key, const std::string& data);
// Constant-time comparison of two secrets (hashed first: nothing leaks through timing).
bool SecretsEqual(const std::string& a, const std::string& b);

}  // namespace axqc::server::http
