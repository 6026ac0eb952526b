// Configuration of axqc-server: defaults < config file < environment (AXQC_*) < command-line flags.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace axqc::server {

struct ServerConfig {
  // Network.
  std::string listen = "127.0.0.1:50051";         // gRPC address; port 0 picks a free port
  std::string metrics_listen = "127.0.0.1:9464";  // Prometheus /metrics; "" disables
  std::string ready_file;  // written once serving: {"grpc_port":N,"metrics_port":M,"http_port":H}

  // Workers.
  unsigned workers = 0;             // checks at once (worker processes or threads); 0 = cores
  std::size_t queue_capacity = 64;  // checks waiting for a worker before RESOURCE_EXHAUSTED
  unsigned io_threads = 4;          // threads reading files, fetching URLs, serving lookups
  // Isolation (docs/security.md): "process" runs every check in a sandboxed worker process
  // (axqc-worker, one per worker); "off" runs checks on threads inside the server.
  std::string isolation = "process";
  std::string worker_program;             // "" = axqc-worker next to axqc-server
  std::uint64_t worker_memory_limit = 0;  // address space per worker; 0 = RAM / workers, >= 1GiB
  unsigned worker_cpu_seconds = 300;      // CPU time per check; 0 = unlimited
  unsigned worker_max_checks = 1000;      // a worker is replaced after this many checks; 0 = never
  std::uint64_t worker_max_rss = 1ull
                                 << 30;  // ... or once its resident size exceeds this; 0 = never
  double worker_failure_memory_seconds = 600;  // a model that made a worker fail is answered at
                                               // once for this long; 0 = not remembered
  std::uint64_t worker_failure_memory_bytes = 1ull << 20;  // ... bounded by bytes (LRU)

  // Memory (server/memory.h): after checks of models of 4 MiB or more, freed memory goes back to
  // the operating system once no check has run for this long (0: right after every such check)...
  double memory_trim_idle_seconds = 1;
  // ... or right after such a check when the resident size exceeds this (0 = never).
  std::uint64_t memory_trim_rss = 0;

  // Limits.
  std::uint64_t max_inline_bytes = 4ull << 20;  // CheckRequest.content
  std::uint64_t max_model_bytes = 1ull << 30;   // Upload, path and URL models
  // External data files of one model, all together (Upload, path and URL); 0 refuses them.
  std::uint64_t max_external_data_bytes = 16ull << 30;
  // Where uploaded and downloaded data files are written (unlinked); empty = $TMPDIR or /tmp.
  std::string data_file_dir;
  std::uint64_t max_inflight_bytes = 4ull << 30;  // model bytes held in memory at once
  // Bytes held by Upload streams still being received (part of max_inflight_bytes).
  std::uint64_t max_inflight_upload_bytes = 2ull << 30;
  // An Upload stream with no message for this long is ended with DEADLINE_EXCEEDED; 0 disables.
  double upload_idle_timeout_seconds = 60;
  // A GetReport for a model whose check is in progress waits at most this long for its report
  // (besides the client's deadline), then answers NOT_FOUND; 0 never waits.
  double lookup_wait_seconds = 300;

  // Model sources.
  std::vector<std::string> allowed_roots;    // directories path references may read from
  std::vector<std::string> url_allow_hosts;  // "host" or "host:port"; empty disables URLs
  unsigned url_timeout_seconds = 60;
  unsigned url_max_redirects = 3;

  // Cache and store.
  std::string store_path = "axqc-store.sqlite3";  // SQLite file (WAL); ":memory:" for none
  // Store location; when set it replaces store_path: a SQLite path, "sqlite:PATH", or a
  // PostgreSQL URI "postgresql://user@host:5432/db" shared by several replicas.
  std::string store;
  unsigned store_pool_size = 4;                 // PostgreSQL connections at most
  double store_connect_timeout_seconds = 5;     // PostgreSQL: per connection attempt
  double store_statement_timeout_seconds = 10;  // PostgreSQL: per statement
  double claim_lease_seconds = 30;  // PostgreSQL: a check claim not renewed this long is taken over
  std::uint64_t cache_bytes = 256ull << 20;  // in-memory LRU of reports

  // Testing only: every check sleeps this long first (simulates slow checks). Never set it in
  // production.
  double test_check_delay_seconds = 0;

  // Shutdown.
  double grace_period_seconds = 30;   // in-flight RPCs get this long to finish
  double shutdown_delay_seconds = 0;  // NOT_SERVING is announced this long before draining

  // Logs.
  std::string log_level = "info";  // debug, info, warn, error
  std::string log_file;            // JSON lines; "" = stderr

  // Authentication: when set, every axqc.v1 RPC needs "authorization: Bearer <token>".
  std::string auth_token_file;
  // TLS (server/auth.h): certificate chain and private key (PEM); with a client CA file, clients
  // must present a certificate signed by it (mutual TLS). All empty: plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;

  // HTTP/JSON API (server/http/): host:port; "" disables. Same authentication (bearer token,
  // TLS and mutual TLS with the files above), limits and handlers as the gRPC service.
  std::string http_listen;
  std::uint64_t http_max_json_bytes = 1ull << 20;  // JSON request bodies (413 above)
  unsigned http_max_connections = 1024;            // connections at once; beyond: 503 and close
  // Registry webhooks (server/http/hooks.h): secrets, registry addresses, write-back.
  std::string mlflow_webhook_secret_file;  // "" disables POST /v1/hooks/mlflow
  std::string mlflow_url;                  // MLflow tracking server, e.g. http://mlflow:5000
  std::string mlflow_token_file;           // bearer token of its REST API
  std::string mlflow_model_file = "model.onnx";
  bool mlflow_write_back = false;               // write the verdict as model-version tags
  std::string huggingface_webhook_secret_file;  // "" disables POST /v1/hooks/huggingface
  std::string huggingface_url = "https://huggingface.co";
  std::string huggingface_token_file;
  std::string huggingface_model_file = "model.onnx";
  // off, failures or all: which webhook checks are written back to the Hub as a discussion (a
  // comment on the pull request for a push to refs/pr/N); needs huggingface_token_file.
  std::string huggingface_write_back = "off";
  // The address people open the dashboard at (e.g. https://axqc.example.com): registry
  // write-backs link the report there. "" = no links.
  std::string public_url;
  // Base of the rule links on the server's HTML pages (HtmlOptions::rules_url): "" = the rule's
  // summary and fix without a link.
  std::string rules_url;
  bool webhook_check_value = false;          // check_value for webhook checks
  std::vector<std::string> webhook_targets;  // chip targets of webhook checks (--target)
  // Webhook deliveries (the store's deliveries table): retries with exponential backoff.
  unsigned webhook_max_attempts = 8;        // attempts of one delivery (check and write-back)
  double webhook_retry_seconds = 30;        // delay before the first retry, doubled each time
  double webhook_retry_max_seconds = 3600;  // longest delay between attempts
  double webhook_dedup_seconds = 86400;     // same model and revision again: a duplicate
  double webhook_lease_seconds = 600;       // a delivery whose server died is taken over then
};

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Outcome of command-line parsing: run with `config`, or exit with `exit_code` (after --help,
// --version or an error; the text to print is in `message`).
struct ConfigResult {
  ServerConfig config;
  std::optional<int> exit_code;
  std::string message;
  // Warnings to show whatever happens next (a config file in a deprecated format).
  std::vector<std::string> notes;
};

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment.
EnvLookup ProcessEnv();

// Parses args (args[0] is the program name). The config file comes from --config or AXQC_CONFIG;
// it is TOML, keys = flag names without the dashes (a JSON object or the unquoted key=value lines
// of earlier releases are still read, with a note in `notes`). --print-config prints TOML.
// Environment variables are read here rather than by CLI11, whose envname() ignores a variable
// set to "" (AXQC_METRICS_LISTEN= turns the metrics listener off).
// Throws ConfigError on invalid values (the message names the option and where it came from).
ConfigResult LoadConfig(const std::vector<std::string>& args, const EnvLookup& env);

// Key=value reference of all options: name, environment variable, default, help.
struct OptionDoc {
  std::string name;
  std::string env;
  std::string default_value;
  std::string help;
};
std::vector<OptionDoc> OptionDocs();

// Parses "64MiB", "1GiB", "1000", "10kB" into bytes. Throws ConfigError.
std::uint64_t ParseBytes(const std::string& text);

// The store to open: `store` when set, else `store_path`.
std::string StoreLocation(const ServerConfig& config);

// Largest inline content or Upload chunk the service accepts: max-inline-bytes, at least 4 MiB.
std::uint64_t MessageLimit(const ServerConfig& config);
// gRPC's own receive limit: far enough above MessageLimit that requests over it are answered by the
// service itself (RESOURCE_EXHAUSTED naming the limit and what to do) rather than by gRPC's
// generic "Received message larger than max".
int GrpcReceiveLimit(const ServerConfig& config);

// Applies defaults (workers = hardware cores) and checks consistency. Throws ConfigError.
void FinalizeConfig(ServerConfig& config);

}  // namespace axqc::server
