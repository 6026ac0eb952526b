// Model-registry webhooks (POST /v1/hooks/mlflow, POST /v1/hooks/huggingface). A delivery is
// authenticated by the registry's own proof (MLflow: HMAC-SHA256 signature; Hugging Face: the
// shared X-Webhook-Secret), recorded in the store (deliveries: without secrets) and only then
// acknowledged (202 with the delivery id and the request id its check will have; 503 when it
// cannot be recorded, so that the registry retries). The model version it announces is checked
// asynchronously: fetched through the registry's download API from an allowlisted host
// (--url-allow-host), checked like any Check (report cache, store, engine, history row with the
// registry's labels), and with write-back configured the verdict is written to the registry
// (MLflow: model-version tags, all of them again until every one was written; Hugging Face: a
// discussion on the repo, or a comment on the pull request of a push to refs/pr/N). Temporary
// failures (registry 5xx, connection errors, a busy or stopping server) are retried with
// exponential backoff (--webhook-retry-seconds, --webhook-max-attempts); deliveries in progress
// when the server stopped are resumed when it starts again. A delivery recorded before (same id,
// or the same model version or commit within --webhook-dedup-seconds) is answered "duplicate"
// without a second check, also after a restart. Every delivery is listed by GET /v1/deliveries
// and counted in axqc_webhook_deliveries_total{source,outcome}.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "config.h"
#include "rpc/admission.h"
#include "store.h"

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
  std::string huggingface_write_back = "off";  // off, failures, all (a discussion or PR comment)
  std::string public_url;  // the dashboard's address: write-backs link the report ("" = none)
  bool check_value = false;           // options of webhook checks
  std::vector<std::string> targets;  // chip targets of webhook checks (resolved, profile order)
  // The registries' origins (ParsedUrl::Origin of mlflow_url, huggingface_url): their tokens are
  // sent to these origins only.
  std::string mlflow_origin;
  std::string huggingface_origin;
};

// Reads the secret and token files of `config`, checks the registry URLs and the model file
// names (relative paths without dot segments). Throws std::runtime_error.
HookSettings LoadHookSettings(const ServerConfig& config);

// One model version to check for a webhook delivery (made from the delivery's stored request by
// Hooks with the credentials of the server's configuration).
struct HookCheck {
  std::string registry;  // "mlflow", "huggingface"
  std::string name;      // display name, e.g. "detector/3"
  std::map<std::string, std::string> labels;
  v1::CheckOptions options;
  // Runs on the I/O pool: the model's URL (registry API calls); throws SourceError.
  std::function<std::string()> resolve_url;
  // Headers for the model download (the registry's token), sent only when the model's URL has
  // the registry's own origin `credential_origin` (CredentialsFor): never to another host, even
  // an allowlisted one.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string credential_origin;
  // Set once the model was downloaded and handed to the checker: a failure before is a download
  // failure, one after a check failure.
  std::shared_ptr<std::atomic<bool>> reached_checker = std::make_shared<std::atomic<bool>>(false);
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
  std::string event;          // e.g. "model_version.created"
  std::string ignore_reason;  // set: acknowledged, nothing to check
  std::string name;           // display name of the model version
  std::map<std::string, std::string> labels;
  // What is recorded in the store (id, source, model, revision, event, request).
  Delivery record;
  // Duplicates are also deliveries of the same model and revision (an immutable one: an MLflow
  // version, a Hugging Face commit) within --webhook-dedup-seconds.
  bool dedup_model = false;
  class Hooks* hooks = nullptr;
};

// The webhook delivery as an RPC of the admission layer (method "MlflowWebhook" or
// "HuggingFaceWebhook"): records the delivery, answers, starts the check.
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

// GET /v1/deliveries as an RPC of the admission layer (method "ListDeliveries", bearer token).
struct ListDeliveriesRpc {
  static constexpr const char* kMethod = "ListDeliveries";
  using Request = DeliveriesQuery;
  using Response = nlohmann::json;
  static grpc::Status Validate(const Request& /*req*/) { return grpc::Status::OK; }
  static void Run(ServiceContext& s, const std::shared_ptr<Call<Response>>& call,
                  const Request& req, Response* grpc_resp);
};

// The outcome of one failed attempt of a delivery: what it is called when it is the last one,
// and whether another attempt may succeed (registry 5xx, connection errors, a busy or stopping
// server) or not (4xx answers, policy refusals, invalid models).
struct AttemptFailure {
  std::string outcome;  // download_failed, policy_refused, check_failed
  bool retry = false;
};
AttemptFailure ClassifyFailure(const grpc::Status& status, bool reached_checker);

// The delay before attempt `attempts + 1` after `attempts` attempts: `first` doubled each time,
// at most `max`.
std::int64_t RetryDelayMs(std::uint32_t attempts, double first_seconds, double max_seconds);

// Webhook deliveries: recorded in the store before the registry is answered, then checked,
// written back (MLflow), retried with backoff and resumed after a restart by a loop that looks
// for due deliveries (Start).
class Hooks {
 public:
  Hooks(HookSettings settings, Admission* admission, const ServerConfig* config, Logger* logger);
  ~Hooks();
  Hooks(const Hooks&) = delete;
  Hooks& operator=(const Hooks&) = delete;

  const HookSettings& settings() const { return settings_; }

  // Makes the deliveries a previous process of this server left due (RecoverDeliveries) and
  // starts the loop that works on due deliveries. Throws StoreError.
  void Start();
  // Stops the loop (deliveries in progress finish or are resumed later). Idempotent.
  void Stop();

  // Fills in the server's parts of a new delivery (request id, owner, lease, times) and records
  // it, unless it is a duplicate: then the recorded delivery. Throws StoreError.
  std::optional<Delivery> Record(Delivery& d, bool dedup_model);
  // Works on a delivery this server owns (Record, or claimed by the loop).
  void Begin(Delivery d);

  // Registry REST calls through the URL policy (allowlist, timeout); throws SourceError.
  std::string RegistryCall(const std::string& method, const std::string& url,
                           const std::string& body,
                           const std::vector<std::pair<std::string, std::string>>& headers) const;
  Logger* logger() const { return logger_; }

 private:
  void Loop();
  void ResumeDue();
  // The check of a stored delivery; false (and `why`) when its request cannot be read.
  bool CheckOf(const Delivery& d, HookCheck* check, std::string* why) const;
  void Checked(Delivery d, const grpc::Status& status, const v1::CheckResponse& resp,
               bool reached_checker, const v1::CheckOptions& options);
  void WriteBack(Delivery d);
  void Retry(Delivery d, const std::string& error);
  void Settle(Delivery d, const std::string& outcome, const std::string& error);
  void Save(const Delivery& d);
  void Release(const std::string& id);

  HookSettings settings_;
  Admission* admission_;
  const ServerConfig* config_;
  Logger* logger_;
  ReportStore* store_;
  Metrics* metrics_;
  const std::string owner_;  // this server process (leases)
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread loop_;
  std::set<std::string> in_flight_;  // deliveries this process works on
};

// MLflow (hooks_mlflow.cc): the URL of a model version's model file (registry API call), the tags
// of an outcome, and writing them (all, in order; SourceError naming how many were written).
std::string MlflowModelVersionUrl(const Hooks& hooks, const std::string& name,
                                  const std::string& version);
// `report_url`: the report on the server's dashboard (--public-url), written as axqc.report_url
// ("" = no such tag).
std::vector<std::pair<std::string, std::string>> MlflowTags(const grpc::Status& status,
                                                            const v1::CheckResponse& resp,
                                                            const std::string& report_url = {});
void MlflowWriteTags(const Hooks& hooks, const std::string& name, const std::string& version,
                     const std::vector<std::pair<std::string, std::string>>& tags);

// Hugging Face (hooks_huggingface.cc): posts a write-back made by HfWriteBackPost
// (hook_payloads.h) as a comment on pull request N (POST /api/models/REPO/discussions/N/comment)
// or a new discussion (POST /api/models/REPO/discussions) with the token.
// Throws SourceError (registry answer, network) or nlohmann::json::exception (a malformed post).
void HfWriteBack(const Hooks& hooks, const nlohmann::json& request, const nlohmann::json& post);

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
