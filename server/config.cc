#include "config.h"

#include <toml++/toml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "axqc/catalog.h"
#include "axqc/checker.h"
#include "axqc/duration.h"
#include "axqc/version.h"
#include "pg_store.h"

namespace axqc::server {

namespace {

// How far gRPC's receive limit lies above MessageLimit (see GrpcReceiveLimit).
constexpr std::uint64_t kGrpcReceiveSlack = 64ull << 20;

using Values = std::vector<std::string>;

struct Opt {
  std::string name;
  std::string help;
  bool list = false;
  std::string type_name;  // placeholder in --help
  std::function<void(ServerConfig&, const Values&)> set;
  std::function<std::string(const ServerConfig&)> get;
  // The value as --print-config prints it: a JSON number, boolean, string or array, so that the
  // output is a config file (--config) as it stands.
  std::function<nlohmann::json(const ServerConfig&)> typed;
};

std::string Trim(std::string s) {
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

Values SplitList(const std::string& text) {
  Values out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    item = Trim(item);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string Join(const Values& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += ",";
    out += s;
  }
  return out;
}

std::uint64_t ParseUint(const std::string& text, std::uint64_t max) {
  const std::string t = Trim(text);
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || ptr != t.data() + t.size() || t.empty()) {
    throw ConfigError("not a non-negative integer: '" + text + "'");
  }
  if (v > max) throw ConfigError("value " + t + " is above the maximum " + std::to_string(max));
  return v;
}

double ParseSeconds(const std::string& text) {
  const auto v = ParseDurationSeconds(text, "s");
  if (!v) throw ConfigError("not a number of seconds: '" + text + "'");
  if (*v > 86400) throw ConfigError("seconds must be within 0..86400: '" + text + "'");
  return *v;
}

std::string FormatDouble(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

const std::string& Last(const Values& v) {
  static const std::string kEmpty;
  return v.empty() ? kEmpty : v.back();
}

template <typename T>
Opt UintOpt(std::string name, std::string help, T ServerConfig::*field,
            std::uint64_t max = std::numeric_limits<T>::max()) {
  return Opt{std::move(name),
             std::move(help),
             false,
             "N",
             [field, max](ServerConfig& c, const Values& v) {
               c.*field = static_cast<T>(ParseUint(Last(v), max));
             },
             [field](const ServerConfig& c) { return std::to_string(c.*field); },
             [field](const ServerConfig& c) { return nlohmann::json(c.*field); }};
}

Opt BytesOpt(std::string name, std::string help, std::uint64_t ServerConfig::*field) {
  return Opt{std::move(name),
             std::move(help),
             false,
             "SIZE",
             [field](ServerConfig& c, const Values& v) { c.*field = ParseBytes(Last(v)); },
             [field](const ServerConfig& c) { return std::to_string(c.*field); },
             [field](const ServerConfig& c) { return nlohmann::json(c.*field); }};
}

Opt StringOpt(std::string name, std::string help, std::string ServerConfig::*field) {
  return Opt{std::move(name),
             std::move(help),
             false,
             "TEXT",
             [field](ServerConfig& c, const Values& v) { c.*field = Last(v); },
             [field](const ServerConfig& c) { return c.*field; },
             [field](const ServerConfig& c) { return nlohmann::json(c.*field); }};
}

Opt BoolOpt(std::string name, std::string help, bool ServerConfig::*field) {
  return Opt{std::move(name),
             std::move(help),
             false,
             "BOOL",
             [field](ServerConfig& c, const Values& v) {
               const std::string t = Trim(Last(v));
               if (t == "true" || t == "1" || t == "yes") {
                 c.*field = true;
               } else if (t == "false" || t == "0" || t == "no") {
                 c.*field = false;
               } else {
                 throw ConfigError("not a boolean (true or false): '" + Last(v) + "'");
               }
             },
             [field](const ServerConfig& c) { return std::string(c.*field ? "true" : "false"); },
             [field](const ServerConfig& c) { return nlohmann::json(c.*field); }};
}

Opt SecondsOpt(std::string name, std::string help, double ServerConfig::*field) {
  return Opt{std::move(name),
             std::move(help),
             false,
             "SECONDS",
             [field](ServerConfig& c, const Values& v) { c.*field = ParseSeconds(Last(v)); },
             [field](const ServerConfig& c) { return FormatDouble(c.*field); },
             [field](const ServerConfig& c) { return nlohmann::json(c.*field); }};
}

Opt ListOpt(std::string name, std::string help, std::vector<std::string> ServerConfig::*field) {
  return Opt{std::move(name),
             std::move(help),
             true,
             "TEXT",
             [field](ServerConfig& c, const Values& v) {
               Values all;
               for (const auto& item : v) {
                 for (auto& part : SplitList(item)) all.push_back(std::move(part));
               }
               c.*field = std::move(all);
             },
             [field](const ServerConfig& c) { return Join(c.*field); },
             [field](const ServerConfig& c) { return nlohmann::json(c.*field); }};
}

const std::vector<Opt>& Options() {
  static const std::vector<Opt> kOptions = {
      StringOpt("listen", "gRPC listen address host:port (port 0 picks a free port)",
                &ServerConfig::listen),
      StringOpt("metrics-listen", "Prometheus /metrics listen address host:port; empty disables",
                &ServerConfig::metrics_listen),
      StringOpt("ready-file",
                "file written once serving, JSON {\"grpc_port\":N,\"metrics_port\":M,"
                "\"http_port\":H} (0 for a listener that is off)",
                &ServerConfig::ready_file),
      UintOpt("workers",
              "checks that run at once: worker processes (isolation process) or threads "
              "(isolation off); 0 = number of hardware cores",
              &ServerConfig::workers, 1024),
      StringOpt("isolation",
                "process: every check runs in a sandboxed worker process (a crash or runaway "
                "model ends only that check); off: checks run on threads in the server",
                &ServerConfig::isolation),
      StringOpt("worker-program", "the worker executable; empty = axqc-worker next to axqc-server",
                &ServerConfig::worker_program),
      BytesOpt("worker-memory-limit",
               "address-space limit of each worker process (e.g. 4GiB); 0 = physical memory / "
               "workers, at least 1GiB. Each check gets at most its start-up size + 512MiB + 8 x "
               "the model size of it",
               &ServerConfig::worker_memory_limit),
      UintOpt("worker-cpu-seconds",
              "CPU time one check may use in a worker (then DEADLINE_EXCEEDED); 0 = unlimited",
              &ServerConfig::worker_cpu_seconds, 86400),
      UintOpt("worker-max-checks", "a worker process is replaced after this many checks; 0 = never",
              &ServerConfig::worker_max_checks, 100000000),
      BytesOpt("worker-max-rss",
               "a worker process whose resident size exceeds this after a check is replaced; 0 = "
               "never",
               &ServerConfig::worker_max_rss),
      SecondsOpt("worker-failure-memory-seconds",
                 "a model that crashed a worker or exceeded its limits is answered with the same "
                 "error at once for this long, without checking it again; 0 = not remembered",
                 &ServerConfig::worker_failure_memory_seconds),
      BytesOpt("worker-failure-memory-bytes",
               "memory of models that made a worker fail, at most (e.g. 1MiB; the least recently "
               "used models are forgotten first); 0 = not remembered",
               &ServerConfig::worker_failure_memory_bytes),
      SecondsOpt("memory-trim-idle-seconds",
                 "after checks of models of 4MiB or more, free memory is given back to the "
                 "operating system once no check has run for this long; 0 = right after every "
                 "such check (each big check then faults its memory in again)",
                 &ServerConfig::memory_trim_idle_seconds),
      BytesOpt("memory-trim-rss",
               "give free memory back right after a check of a model of 4MiB or more when the "
               "server's resident size exceeds this (e.g. 2GiB), even while busy; 0 = never",
               &ServerConfig::memory_trim_rss),
      UintOpt("queue-capacity",
              "checks that may wait for a worker; beyond it requests get RESOURCE_EXHAUSTED",
              &ServerConfig::queue_capacity, 1000000),
      UintOpt("io-threads", "threads that read files, fetch URLs and serve lookups",
              &ServerConfig::io_threads, 256),
      BytesOpt("max-inline-bytes", "largest CheckRequest.content (e.g. 4MiB)",
               &ServerConfig::max_inline_bytes),
      BytesOpt("max-model-bytes", "largest model by Upload, path or URL (e.g. 1GiB)",
               &ServerConfig::max_model_bytes),
      BytesOpt("max-external-data-bytes",
               "largest total of a model's external data files (the files its tensors name), by "
               "Upload, path or URL (e.g. 16GiB); counted apart from max-model-bytes, which "
               "bounds the graph file. Uploaded and downloaded data files are written to unlinked "
               "files in data-file-dir, not held in memory; 0 refuses models with external data",
               &ServerConfig::max_external_data_bytes),
      StringOpt("data-file-dir",
                "directory for the unlinked temporary files that hold uploaded and downloaded "
                "external data files; empty = $TMPDIR or /tmp",
                &ServerConfig::data_file_dir),
      BytesOpt("max-inflight-bytes",
               "model bytes held in memory by all requests together (e.g. 4GiB)",
               &ServerConfig::max_inflight_bytes),
      BytesOpt("max-inflight-upload-bytes",
               "bytes held by Upload streams and HTTP model bodies still being received, all "
               "together (e.g. 2GiB); an upload that would exceed it gets RESOURCE_EXHAUSTED. "
               "Received bytes are charged, not a declared size (an upload whose declared size "
               "does not fit in what is free is refused at once)",
               &ServerConfig::max_inflight_upload_bytes),
      SecondsOpt("upload-idle-timeout-seconds",
                 "an Upload stream that sends no message for this long is ended with "
                 "DEADLINE_EXCEEDED and its buffer freed; an HTTP request body with no byte for "
                 "this long is abandoned and its connection closed; 0 disables (HTTP: 120 s)",
                 &ServerConfig::upload_idle_timeout_seconds),
      SecondsOpt(
          "lookup-wait-seconds",
          "a GetReport for a model whose check is in progress (on this server, or on another "
          "replica sharing a PostgreSQL store) waits at most this long for that check's "
          "report (besides the client's deadline), then answers NOT_FOUND; 0 never waits",
          &ServerConfig::lookup_wait_seconds),
      ListOpt("allowed-root",
              "directory that path references may read from (repeatable, comma-separated in "
              "env/file); none disables path references",
              &ServerConfig::allowed_roots),
      ListOpt("url-allow-host",
              "host or host:port that URL references may fetch from (repeatable); none disables "
              "URL references",
              &ServerConfig::url_allow_hosts),
      UintOpt("url-timeout-seconds", "overall timeout of one URL fetch",
              &ServerConfig::url_timeout_seconds, 3600),
      UintOpt("url-max-redirects", "redirects followed per URL fetch (targets must be allowed)",
              &ServerConfig::url_max_redirects, 10),
      StringOpt("store-path", "SQLite store file (WAL mode); \":memory:\" keeps nothing on disk",
                &ServerConfig::store_path),
      Opt{"store",
          "store location, replaces store-path when set: a SQLite file, sqlite:PATH, or a "
          "PostgreSQL URI postgresql://USER@HOST:PORT/DB shared by several replicas (password "
          "from PGPASSWORD or ~/.pgpass preferably)",
          false, "LOCATION", [](ServerConfig& c, const Values& v) { c.store = Last(v); },
          [](const ServerConfig& c) { return RedactConnectionString(c.store); },
          [](const ServerConfig& c) { return nlohmann::json(RedactConnectionString(c.store)); }},
      UintOpt("store-pool-size", "PostgreSQL store: connections at most",
              &ServerConfig::store_pool_size, 256),
      SecondsOpt("store-connect-timeout-seconds",
                 "PostgreSQL store: timeout of one connection attempt",
                 &ServerConfig::store_connect_timeout_seconds),
      SecondsOpt("store-statement-timeout-seconds",
                 "PostgreSQL store: timeout of one statement (and of waiting for a free "
                 "connection)",
                 &ServerConfig::store_statement_timeout_seconds),
      SecondsOpt("claim-lease-seconds",
                 "PostgreSQL store: a replica checking a model renews its claim every third of "
                 "this; a claim not renewed this long (replica died) is taken over by a waiting "
                 "replica",
                 &ServerConfig::claim_lease_seconds),
      BytesOpt("cache-bytes",
               "in-memory report cache size (e.g. 256MiB; the least recently used reports are "
               "evicted beyond it); 0 disables",
               &ServerConfig::cache_bytes),
      SecondsOpt("grace-period-seconds",
                 "on SIGTERM/SIGINT, time in-flight RPCs get before they are cancelled",
                 &ServerConfig::grace_period_seconds),
      SecondsOpt("shutdown-delay-seconds",
                 "on SIGTERM/SIGINT, time between reporting NOT_SERVING and draining",
                 &ServerConfig::shutdown_delay_seconds),
      StringOpt("log-level", "debug, info, warn or error", &ServerConfig::log_level),
      StringOpt("log-file", "JSON-lines log file (appended); empty = stderr",
                &ServerConfig::log_file),
      StringOpt("auth-token-file",
                "file holding a bearer token that every axqc.v1 RPC must present; empty = no "
                "authentication",
                &ServerConfig::auth_token_file),
      StringOpt("tls-cert-file", "PEM certificate chain of the gRPC port; empty = plaintext",
                &ServerConfig::tls_cert_file),
      StringOpt("tls-key-file", "PEM private key for tls-cert-file", &ServerConfig::tls_key_file),
      StringOpt("tls-client-ca-file",
                "PEM CA certificates; when set, clients must present a certificate signed by one "
                "of them (mutual TLS)",
                &ServerConfig::tls_client_ca_file),
      StringOpt("http-listen",
                "HTTP/JSON API listen address host:port (port 0 picks a free port); empty "
                "disables. Same token, TLS/mTLS, limits and metrics as the gRPC port",
                &ServerConfig::http_listen),
      UintOpt("http-max-connections",
              "HTTP connections open at once; a connection beyond it is answered 503 and closed "
              "(TLS: closed); keep it below the descriptor limit (ulimit -n)",
              &ServerConfig::http_max_connections, 1000000),
      BytesOpt("http-max-json-bytes",
               "largest JSON request body of the HTTP API (e.g. 1MiB); model bytes sent to "
               "POST /v1/check are limited by max-model-bytes",
               &ServerConfig::http_max_json_bytes),
      StringOpt("mlflow-webhook-secret-file",
                "file holding the secret of the MLflow model-registry webhook (HMAC signature); "
                "empty disables POST /v1/hooks/mlflow",
                &ServerConfig::mlflow_webhook_secret_file),
      StringOpt("mlflow-url",
                "MLflow tracking server the webhook downloads model versions from (and writes "
                "tags to), e.g. http://mlflow:5000; its host must be in url-allow-host",
                &ServerConfig::mlflow_url),
      StringOpt("mlflow-token-file", "file holding a bearer token for MLflow's REST API; optional",
                &ServerConfig::mlflow_token_file),
      StringOpt("mlflow-model-file",
                "file of the model version's artifacts that is checked (the ONNX flavor's "
                "model.onnx)",
                &ServerConfig::mlflow_model_file),
      BoolOpt("mlflow-write-back",
              "write each webhook check's verdict to MLflow as model-version tags axqc.*",
              &ServerConfig::mlflow_write_back),
      StringOpt("huggingface-webhook-secret-file",
                "file holding the Hugging Face webhook secret (X-Webhook-Secret); empty disables "
                "POST /v1/hooks/huggingface",
                &ServerConfig::huggingface_webhook_secret_file),
      StringOpt("huggingface-url", "Hugging Face Hub the webhook downloads model files from",
                &ServerConfig::huggingface_url),
      StringOpt("huggingface-token-file",
                "file holding a Hugging Face access token (private repos); optional",
                &ServerConfig::huggingface_token_file),
      StringOpt("huggingface-model-file", "file of the repo that is checked",
                &ServerConfig::huggingface_model_file),
      StringOpt("huggingface-write-back",
                "off, failures or all: webhook checks written back to the Hub as a discussion "
                "(a comment on the pull request of a push to refs/pr/N); needs "
                "huggingface-token-file with write access",
                &ServerConfig::huggingface_write_back),
      StringOpt("public-url",
                "address people open this server's dashboard at, e.g. https://axqc.example.com; "
                "registry write-backs link the report there",
                &ServerConfig::public_url),
      StringOpt("rules-url",
                "base of the rule links on the HTML pages, e.g. "
                "https://github.com/ORG/axqc/blob/main/docs/rules/ (PAGE.md is appended; {page} "
                "is replaced by PAGE); empty: the rule's summary and fix without a link",
                &ServerConfig::rules_url),
      BoolOpt("webhook-check-value", "run the value checks (check_value) in webhook checks",
              &ServerConfig::webhook_check_value),
      ListOpt("webhook-target",
              "chip target of webhook checks (repeatable; a chip, an alias or all; "
              "docs/targets.md): their reports also say whether the model fits the chip",
              &ServerConfig::webhook_targets),
      UintOpt("webhook-max-attempts",
              "attempts of one webhook delivery (download and check, then write-back) before it "
              "is recorded as failed; 1 = no retries",
              &ServerConfig::webhook_max_attempts, 100),
      SecondsOpt("webhook-retry-seconds",
                 "delay before the first retry of a webhook delivery that failed for a "
                 "temporary reason (registry 5xx, connection error, busy server); doubled after "
                 "each attempt",
                 &ServerConfig::webhook_retry_seconds),
      SecondsOpt("webhook-retry-max-seconds", "longest delay between two attempts of a delivery",
                 &ServerConfig::webhook_retry_max_seconds),
      SecondsOpt("webhook-dedup-seconds",
                 "a delivery for a model version (MLflow) or commit (Hugging Face) recorded this "
                 "recently is answered as a duplicate without a second check; 0 = only the same "
                 "delivery id",
                 &ServerConfig::webhook_dedup_seconds),
      SecondsOpt("webhook-lease-seconds",
                 "a delivery a server works on is leased to it this long; one whose server died "
                 "is taken over after it (PostgreSQL store; a restarted server with a SQLite "
                 "store resumes at once); longer than the longest check",
                 &ServerConfig::webhook_lease_seconds),
      SecondsOpt("test-check-delay-seconds",
                 "TESTING ONLY: every check sleeps this long first (simulates slow checks in "
                 "tests); keep 0 in production",
                 &ServerConfig::test_check_delay_seconds),
  };
  return kOptions;
}

std::string EnvName(const std::string& option) {
  std::string out = "AXQC_";
  for (char c : option) {
    out.push_back(c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return out;
}

const Opt* FindOpt(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  for (const auto& o : Options()) {
    if (o.name == key) return &o;
  }
  return nullptr;
}

void Apply(const Opt& opt, ServerConfig& c, const Values& v, const std::string& where) {
  try {
    opt.set(c, v);
  } catch (const ConfigError& e) {
    throw ConfigError(opt.name + " (" + where + "): " + e.what());
  }
}

std::string JsonScalarToString(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number_float()) return FormatDouble(v.get<double>());
  throw ConfigError("unsupported JSON value " + v.dump());
}

// A TOML scalar as a flag would give it: strings as they are, numbers and booleans in their
// usual spelling ("8", "2.5", "true").
std::string TomlScalarToString(const toml::node& v) {
  if (const auto* s = v.as_string()) return s->get();
  if (const auto* i = v.as_integer()) return std::to_string(i->get());
  if (const auto* f = v.as_floating_point()) return FormatDouble(f->get());
  if (const auto* b = v.as_boolean()) return b->get() ? "true" : "false";
  throw ConfigError("takes a string, number or boolean, not a TOML " +
                    std::string(v.is_table()   ? "table"
                                : v.is_array() ? "array"
                                               : "date or time"));
}

std::string Where(const std::string& where, const toml::source_region& at) {
  return at.begin.line == 0 ? where : where + ":" + std::to_string(at.begin.line);
}

void ApplyTomlConfig(const toml::table& root, const std::string& where, ServerConfig& c) {
  for (const auto& [key, value] : root) {
    const std::string name(key.str());
    const std::string at = Where(where, key.source());
    const Opt* opt = FindOpt(name);
    if (opt == nullptr) throw ConfigError(at + ": unknown option '" + name + "'");
    Values values;
    try {
      if (const auto* array = value.as_array()) {
        if (!opt->list) throw ConfigError("takes one value, not a list");
        for (const auto& item : *array) values.push_back(TomlScalarToString(item));
      } else {
        values.push_back(TomlScalarToString(value));
      }
    } catch (const ConfigError& e) {
      throw ConfigError(at + ": " + name + ": " + e.what());
    }
    Apply(*opt, c, values, at);
  }
}

// The key = value lines of axqc-server 1.x (unquoted values, '#' comments): still read.
void ApplyKeyValueLines(const std::string& text, const std::string& where, ServerConfig& c) {
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) {
      throw ConfigError(where + ":" + std::to_string(number) + ": expected key=value");
    }
    const std::string key = Trim(line.substr(0, eq));
    const std::string value = Trim(line.substr(eq + 1));
    // Values of that format were never quoted, bracketed or braced: a line with one is TOML
    // with a mistake, and the TOML error is the one to show.
    if (!value.empty() && std::string_view("\"'[{").find(value[0]) != std::string_view::npos) {
      throw ConfigError(where + ":" + std::to_string(number) + ": a TOML value");
    }
    const Opt* opt = FindOpt(key);
    if (opt == nullptr) {
      throw ConfigError(where + ":" + std::to_string(number) + ": unknown option '" + key + "'");
    }
    Apply(*opt, c, Values{value}, where + ":" + std::to_string(number));
  }
}

std::string DeprecationNote(const std::string& path, const char* format) {
  return "config file " + path + " is " + format +
         ", which is deprecated: axqc-server reads TOML (key = value with quoted strings and "
         "[lists], as axqc.toml); `axqc-server --config " +
         path + " --print-config > server.toml` writes this configuration as TOML";
}

// The config file: TOML (docs/operations.md, "Configuration"); a JSON object or the unquoted
// key=value lines of earlier releases are still read, each with a deprecation note.
void ApplyConfigFile(const std::string& path, ServerConfig& c, std::vector<std::string>& notes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot read config file " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  const std::string where = "config file " + path;

  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw ConfigError(where + ": invalid JSON: " + e.what());
    }
    for (const auto& [key, value] : j.items()) {
      const Opt* opt = FindOpt(key);
      if (opt == nullptr) throw ConfigError(where + ": unknown option '" + key + "'");
      Values values;
      try {
        if (value.is_array()) {
          for (const auto& item : value) values.push_back(JsonScalarToString(item));
        } else {
          values.push_back(JsonScalarToString(value));
        }
      } catch (const ConfigError& e) {
        throw ConfigError(where + ": " + key + ": " + e.what());
      }
      if (value.is_array() && !opt->list) {
        throw ConfigError(where + ": " + key + " takes one value, not a list");
      }
      Apply(*opt, c, values, where);
    }
    notes.push_back(DeprecationNote(path, "a JSON object"));
    return;
  }

  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    // Not TOML: the key=value lines of earlier releases (`listen = 0.0.0.0:50051`, unquoted)?
    // Read as such only when the whole file reads that way; otherwise the TOML error stands.
    ServerConfig legacy = c;
    try {
      ApplyKeyValueLines(text, where, legacy);
    } catch (const ConfigError&) {
      throw ConfigError(Where(where, e.source()) + ": not TOML: " + std::string(e.description()));
    }
    c = std::move(legacy);
    notes.push_back(DeprecationNote(path, "in the unquoted key=value format of earlier releases"));
    return;
  }
  ApplyTomlConfig(root, where, c);
}

// --print-config: the effective configuration as a TOML config file, each value as its type.
std::string PrintConfig(const ServerConfig& c) {
  toml::table out;
  for (const auto& o : Options()) {
    const nlohmann::json v = o.typed(c);
    if (v.is_array()) {
      toml::array items;
      for (const auto& item : v) items.push_back(item.get<std::string>());
      out.insert(o.name, std::move(items));
    } else if (v.is_boolean()) {
      out.insert(o.name, v.get<bool>());
    } else if (v.is_number_unsigned()) {
      // TOML integers are 64-bit signed: a larger byte size is written as a string.
      const auto u = v.get<std::uint64_t>();
      if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        out.insert(o.name, static_cast<std::int64_t>(u));
      } else {
        out.insert(o.name, std::to_string(u));
      }
    } else if (v.is_number_integer()) {
      out.insert(o.name, v.get<std::int64_t>());
    } else if (v.is_number_float()) {
      out.insert(o.name, v.get<double>());
    } else {
      out.insert(o.name, v.get<std::string>());
    }
  }
  std::ostringstream text;
  text << "# axqc-server " << ToolVersion()
       << ": the effective configuration (a config file for --config)\n"
       << out << "\n";
  return text.str();
}

}  // namespace

std::uint64_t ParseBytes(const std::string& text) {
  const std::string t = Trim(text);
  std::size_t i = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
  if (i == 0) throw ConfigError("not a byte size: '" + text + "'");
  const std::uint64_t number = ParseUint(t.substr(0, i), std::numeric_limits<std::uint64_t>::max());
  std::string unit = Trim(t.substr(i));
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  static const std::pair<const char*, std::uint64_t> kUnits[] = {{"", 1},
                                                                 {"b", 1},
                                                                 {"kb", 1000},
                                                                 {"kib", 1ull << 10},
                                                                 {"mb", 1000000},
                                                                 {"mib", 1ull << 20},
                                                                 {"gb", 1000000000ull},
                                                                 {"gib", 1ull << 30},
                                                                 {"tb", 1000000000000ull},
                                                                 {"tib", 1ull << 40}};
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) {
      if (number > std::numeric_limits<std::uint64_t>::max() / factor) {
        throw ConfigError("byte size too large: '" + text + "'");
      }
      return number * factor;
    }
  }
  throw ConfigError("unknown byte unit in '" + text + "' (use B, kB, KiB, MB, MiB, GB, GiB)");
}

namespace {

// A byte count as people read it, in binary units: 1048576 -> "1 MiB", 1536 -> "1.5 KiB",
// 100 -> "100 B" (the --help texts show it next to each byte-size default).
std::string ReadableBytes(std::uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t unit = 0;
  std::uint64_t whole = bytes;
  while (unit + 1 < std::size(kUnits) && whole >= 1024) {
    whole /= 1024;
    ++unit;
  }
  if (unit == 0) return std::to_string(bytes) + " B";
  const std::uint64_t scale = 1ull << (10 * unit);
  if (bytes % scale == 0) return std::to_string(bytes / scale) + " " + kUnits[unit];
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << static_cast<double>(bytes) / static_cast<double>(scale) << " " << kUnits[unit];
  return out.str();
}

}  // namespace

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

std::vector<OptionDoc> OptionDocs() {
  std::vector<OptionDoc> out;
  const ServerConfig defaults;
  for (const auto& o : Options()) out.push_back({o.name, EnvName(o.name), o.get(defaults), o.help});
  return out;
}

void FinalizeConfig(ServerConfig& c) {
  if (c.workers == 0) c.workers = std::max(1u, std::thread::hardware_concurrency());
  if (c.io_threads == 0) throw ConfigError("io-threads must be at least 1");
  if (c.huggingface_write_back != "off" && c.huggingface_write_back != "failures" &&
      c.huggingface_write_back != "all") {
    throw ConfigError("huggingface-write-back must be off, failures or all, not '" +
                      c.huggingface_write_back + "'");
  }
  for (const auto& [flag, url] :
       {std::pair<const char*, const std::string*>{"public-url", &c.public_url},
        {"rules-url", &c.rules_url}}) {
    if (url->empty()) continue;
    if (url->rfind("http://", 0) != 0 && url->rfind("https://", 0) != 0) {
      throw ConfigError(std::string(flag) + " must be an http:// or https:// URL, not '" + *url +
                        "'");
    }
    for (const char ch : *url) {
      const auto u = static_cast<unsigned char>(ch);
      if (u <= 0x20 || u >= 0x7f || ch == '"' || ch == '<' || ch == '>' || ch == '\\') {
        throw ConfigError(std::string(flag) +
                          " contains a character a URL does not (space, "
                          "quote, angle bracket, backslash or non-ASCII): '" +
                          *url + "'");
      }
    }
  }
  if (c.isolation != "process" && c.isolation != "off") {
    throw ConfigError("isolation must be process or off, not '" + c.isolation + "'");
  }
  if (c.worker_memory_limit != 0 && c.worker_memory_limit < (64ull << 20)) {
    throw ConfigError("worker-memory-limit must be at least 64MiB (or 0 for the default)");
  }
  if (c.worker_failure_memory_seconds < 0) {
    throw ConfigError("worker-failure-memory-seconds must not be negative");
  }
  if (c.listen.empty()) throw ConfigError("listen must not be empty");
  if (c.max_inline_bytes > (1ull << 30)) throw ConfigError("max-inline-bytes is at most 1GiB");
  if (c.max_inline_bytes > c.max_model_bytes) {
    throw ConfigError("max-inline-bytes must not exceed max-model-bytes");
  }
  if (c.max_model_bytes > c.max_inflight_bytes) {
    throw ConfigError("max-model-bytes must not exceed max-inflight-bytes");
  }
  if (c.max_model_bytes > (2ull << 30)) {
    throw ConfigError("max-model-bytes is at most 2GiB (the protobuf limit of one ModelProto)");
  }
  static const char* kLevels[] = {"debug", "info", "warn", "error"};
  if (std::find(std::begin(kLevels), std::end(kLevels), c.log_level) == std::end(kLevels)) {
    throw ConfigError("log-level must be debug, info, warn or error, not '" + c.log_level + "'");
  }
  if (c.url_timeout_seconds == 0) throw ConfigError("url-timeout-seconds must be at least 1");
  if (c.store_path.empty()) throw ConfigError("store-path must not be empty (use :memory:)");
  if (c.store_pool_size == 0) throw ConfigError("store-pool-size must be at least 1");
  if (c.store_connect_timeout_seconds < 1) {
    throw ConfigError("store-connect-timeout-seconds must be at least 1");
  }
  if (c.store_statement_timeout_seconds < 1) {
    throw ConfigError("store-statement-timeout-seconds must be at least 1");
  }
  if (c.claim_lease_seconds < 1) throw ConfigError("claim-lease-seconds must be at least 1");
  if (c.http_max_connections == 0) throw ConfigError("http-max-connections must be at least 1");
  if (c.webhook_max_attempts == 0) throw ConfigError("webhook-max-attempts must be at least 1");
  if (c.webhook_retry_seconds < 0.1) {
    throw ConfigError("webhook-retry-seconds must be at least 0.1");
  }
  if (c.webhook_retry_max_seconds < c.webhook_retry_seconds) {
    throw ConfigError("webhook-retry-max-seconds must be at least webhook-retry-seconds");
  }
  if (c.webhook_lease_seconds < 10) {
    throw ConfigError("webhook-lease-seconds must be at least 10");
  }
}

std::uint64_t MessageLimit(const ServerConfig& config) {
  return std::max<std::uint64_t>(config.max_inline_bytes, 4ull << 20);
}

int GrpcReceiveLimit(const ServerConfig& config) {
  const std::uint64_t limit = MessageLimit(config) + kGrpcReceiveSlack;
  return static_cast<int>(std::min<std::uint64_t>(limit, std::numeric_limits<int>::max()));
}

std::string StoreLocation(const ServerConfig& config) {
  return config.store.empty() ? config.store_path : config.store;
}

ConfigResult LoadConfig(const std::vector<std::string>& args, const EnvLookup& env) {
  ConfigResult result;
  CLI::App app{
      "axqc-server: conformance checker service for quantized ONNX QDQ models (ax quant "
      "spec). Options come from flags, AXQC_* environment variables and an optional "
      "config file, in that order of precedence.",
      "axqc-server"};
  app.set_help_flag("-h,--help", "print this help and exit");
  std::string config_file;
  app.add_option("--config", config_file,
                 "config file (TOML): keys are the option names, e.g. workers = 8, "
                 "allowed-root = [\"/srv/models\"] (env AXQC_CONFIG)");
  bool version = false;
  bool print_config = false;
  app.add_flag("--version", version, "print the version and exit");
  app.add_flag("--print-config", print_config, "print the effective configuration and exit");

  const auto& options = Options();
  // Storage bound to CLI11 (sized up front: CLI11 keeps pointers into it).
  std::vector<Values> list_values(options.size());
  std::vector<std::string> scalar_values(options.size());
  std::vector<CLI::Option*> cli_options(options.size());
  const ServerConfig defaults;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const auto& o = options[i];
    std::string shown = "'" + o.get(defaults) + "'";
    if (o.type_name == "SIZE")
      shown += " = " + ReadableBytes(o.typed(defaults).get<std::uint64_t>());
    std::string help = o.help + " (env " + EnvName(o.name) + ", default " + shown + ")";
    CLI::Option* opt = nullptr;
    if (o.list) {
      opt = app.add_option("--" + o.name, list_values[i], help)->delimiter(',');
    } else {
      opt = app.add_option("--" + o.name, scalar_values[i], help)
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
    opt->type_name(o.type_name);
    cli_options[i] = opt;
  }

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  if (!reversed.empty()) reversed.pop_back();  // program name
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out;
    std::ostringstream err;
    // --help is a "success" (0); every other parse error (unknown option, missing value, ...) is a
    // configuration error: exit 2, as for invalid values.
    result.exit_code = app.exit(e, out, err) == 0 ? 0 : 2;
    result.message = out.str() + err.str();
    if (const auto* extras = dynamic_cast<const CLI::ExtrasError*>(&e); extras != nullptr) {
      // The wording of docs/operations.md, as for an unknown key of a config file.
      std::string names;
      for (const auto& a : app.remaining()) {
        if (a.starts_with("-")) names += (names.empty() ? "" : ", ") + a;
      }
      if (names.empty()) names = "an argument";
      result.message = names + ": unknown option (--help lists every option)\n";
    }
    if (*result.exit_code != 0) result.message = "axqc-server: " + result.message;
    return result;
  }
  if (version) {
    result.exit_code = 0;
    result.message = "axqc-server " + std::string(ToolVersion()) + " (rule set " +
                     std::string(kRuleSetVersion) + "; " + LinkedOnnxDescription() + ")\n";
    return result;
  }

  ServerConfig c;
  if (config_file.empty()) {
    if (auto v = env("AXQC_CONFIG"); v && !v->empty()) config_file = *v;
  }
  if (!config_file.empty()) ApplyConfigFile(config_file, c, result.notes);
  for (const auto& o : options) {
    const std::string name = EnvName(o.name);
    if (auto v = env(name)) Apply(o, c, Values{*v}, "environment " + name);
  }
  for (std::size_t i = 0; i < options.size(); ++i) {
    if (cli_options[i]->count() == 0) continue;
    const Values given = options[i].list ? list_values[i] : Values{scalar_values[i]};
    Apply(options[i], c, given, "flag --" + options[i].name);
  }
  FinalizeConfig(c);
  result.config = c;

  if (print_config) {
    result.exit_code = 0;
    result.message = PrintConfig(c);
  }
  return result;
}

}  // namespace axqc::server
