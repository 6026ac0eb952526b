// Persistent report store and request history, behind an interface with two backends: the
// embedded SQLite store (one server) and PostgreSQL (several replicas sharing reports, history and
// check claims). The service only sees this interface.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace axqc::server {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A report as stored: the serialized axqc.v1.Report plus its key parts.
struct StoredReport {
  std::string cache_key;  // sha256|options|rule-set version (wire::CacheKey)
  std::string sha256;
  std::string options;  // wire::OptionsKey
  std::string rule_set_version;
  std::string verdict;  // "conformant", ...
  std::string report;   // serialized axqc.v1.Report
};

// Findings of one rule at one severity in one request.
struct RuleTally {
  std::string rule;
  std::string severity;  // "error", "warn", "info"
  std::uint64_t count = 0;
};

// One row per Check/Upload request that reached the checker stage.
struct HistoryRow {
  std::int64_t time_ms = 0;  // Unix epoch milliseconds
  std::string request_id;
  std::string method;  // "Check", "Upload"
  std::string name;    // display name of the model (file name, URL file name, registry name)
  std::string source;  // "path", "url", "inline", "upload"
  std::string sha256;
  std::string verdict;  // "conformant", "non_conformant", "not_applicable", "invalid_input"
  std::string cache;    // "miss", "memory_hit", "store_hit", "shared"
  std::uint64_t errors = 0;
  std::uint64_t warnings = 0;
  double duration_ms = 0;
  std::map<std::string, std::string> labels;
  std::vector<RuleTally> rules;
  // The check's options (wire::OptionsKey); "" = the defaults (and rows recorded before the
  // options were).
  std::string options;
};

// The outcome of a client's CI gate for one history row (RecordGate): whether it passed and its
// findings by how they counted (errors and warnings).
struct GateRecord {
  bool passed = false;
  std::uint64_t counted_errors = 0;
  std::uint64_t counted_warnings = 0;
  std::uint64_t waived_errors = 0;
  std::uint64_t waived_warnings = 0;
  std::uint64_t baselined_errors = 0;
  std::uint64_t baselined_warnings = 0;
};

struct StatsQuery {
  std::optional<std::int64_t> since_ms;  // inclusive; unset = from the beginning
  std::int64_t until_ms = 0;             // exclusive
  std::string group_by;                  // label key; "" = no groups
  std::map<std::string, std::string> label_filter;
  std::uint32_t top_rules = 10;
  std::int64_t step_ms = 0;  // > 0: StatsResult.series in buckets of this width (epoch-aligned)
};

struct VerdictTally {
  std::uint64_t conformant = 0;
  std::uint64_t non_conformant = 0;
  std::uint64_t not_applicable = 0;
  std::uint64_t invalid_input = 0;
  // Rows with a recorded gate outcome; of those, the passed ones; their waived and baselined
  // findings (errors + warnings).
  std::uint64_t gated = 0;
  std::uint64_t gate_passed = 0;
  std::uint64_t waived_findings = 0;
  std::uint64_t baselined_findings = 0;
  void Add(const std::string& verdict, std::uint64_t n);
  void AddGate(std::uint64_t gated_rows, std::uint64_t passed, std::uint64_t waived,
               std::uint64_t baselined);
  std::uint64_t requests() const {
    return conformant + non_conformant + not_applicable + invalid_input;
  }
};

struct RuleStat {
  std::string rule;
  std::uint64_t requests = 0;  // requests with >= 1 error finding of the rule
  std::uint64_t findings = 0;  // error findings of the rule over those requests
  std::uint64_t models = 0;    // distinct sha256 among those requests
};

struct StatsResult {
  VerdictTally total;
  std::vector<std::pair<std::string, VerdictTally>> groups;  // sorted by label value
  std::vector<RuleStat> top_failing_rules;
  // With step_ms: (bucket start ms, counts) of the non-empty buckets, in time order (the service
  // fills the empty ones in between).
  std::vector<std::pair<std::int64_t, VerdictTally>> series;
};

struct ModelsQuery {
  std::map<std::string, std::string> label_filter;
  std::optional<std::int64_t> since_ms;  // inclusive
  std::uint32_t limit = 100;
};

// The newest history row of one model (sha256).
struct ModelRow {
  std::string sha256;
  std::string name;
  std::string verdict;
  std::int64_t time_ms = 0;
  std::uint64_t errors = 0;
  std::uint64_t warnings = 0;
  std::string request_id;
  std::map<std::string, std::string> labels;
};

// One check of the history (ListChecks).
struct CheckRow {
  std::int64_t id = 0;  // the history row's id (unique, increasing)
  std::int64_t time_ms = 0;
  std::string request_id;
  std::string method;
  std::string name;
  std::string source;
  std::string sha256;
  std::string verdict;
  std::string cache;
  std::uint64_t errors = 0;
  std::uint64_t warnings = 0;
  std::string options;  // wire::OptionsKey; "" = the defaults
  std::map<std::string, std::string> labels;
};

// Every filter is optional ("" / empty = any); all given ones must hold. The values are bound as
// SQL parameters, never written into the statement.
struct ChecksQuery {
  std::string verdict;
  std::string source;
  std::string sha256;
  std::map<std::string, std::string> label_filter;
  std::string search;  // a substring of the name, ASCII letters case-insensitive
  std::uint32_t limit = 50;
  std::uint64_t offset = 0;  // rows skipped (newest first)
};

struct ChecksPage {
  std::vector<CheckRow> checks;  // newest first
  std::uint64_t total = 0;       // rows matching the filters
};

// A stored report without its bytes (ListReports).
struct ReportInfo {
  std::string cache_key;
  std::string options;  // wire::OptionsKey
  std::string rule_set_version;
  std::string verdict;
  std::int64_t created_ms = 0;
};

// A registry webhook delivery (server/http/hooks.h): recorded before the registry is answered
// 202, worked on until it is done or failed, retried with backoff, resumed after a restart.
// `request` holds what is needed to redo it (model URL or registry coordinates, check options,
// labels, write-back target) and never a secret: credentials come from the server's
// configuration when the delivery is worked on.
struct Delivery {
  std::string id;                 // "<source>:<the registry's delivery id>", unique
  std::string source;             // "huggingface", "mlflow"
  std::string model;              // Hugging Face repo id, MLflow registered model name
  std::string revision;           // Hugging Face revision, MLflow version
  std::string event;              // e.g. "repo.content.update", "model_version.created"
  std::string request;            // JSON (see above)
  std::string state = "pending";  // pending, checking, writing_back, done, failed
  // "" while unfinished; the verdict (conformant, non_conformant, not_applicable, invalid_input)
  // or download_failed, policy_refused, check_failed, writeback_failed.
  std::string outcome;
  std::string error;  // the last error (kMaxDeliveryErrorBytes at most)
  std::uint32_t attempts = 0;
  // Not before this time the delivery is worked on again; while `owner` works on it, the end of
  // its lease (after which another server may take it over).
  std::int64_t next_attempt_ms = 0;
  std::string owner;       // the server working on it, "" when none
  std::string request_id;  // the request id of its check
  std::string sha256;      // of the checked model
  std::string cache_key;   // of its report
  // JSON {"tags": [[key, value], ...], "check_error": ...}: the registry tags still to be
  // written and the check's error, kept once they are; "" none.
  std::string write_back;
  std::int64_t created_ms = 0;
  std::int64_t updated_ms = 0;
  std::int64_t seq = 0;  // assigned by the store: listing order and paging cursor
};

inline constexpr std::size_t kMaxDeliveryErrorBytes = 1000;

struct DeliveriesQuery {
  std::string source;           // "" = any
  std::string outcome;          // "" = any
  std::string state;            // "" = any
  std::int64_t before_seq = 0;  // paging: deliveries with seq < this; 0 = from the newest
  std::uint32_t limit = 50;
};

// Settings of the backends that connect to a database server (PostgreSQL); SQLite ignores them.
struct StoreOptions {
  unsigned pool_size = 4;              // connections at most
  double connect_timeout_seconds = 5;  // per connection attempt (libpq connect_timeout, >= 2)
  double statement_timeout_seconds = 30;
  double claim_lease_seconds = 30;  // a claim not renewed this long may be taken over
};

class ReportStore {
 public:
  virtual ~ReportStore() = default;
  // Serialized report for `cache_key`, or nullopt. Throws StoreError.
  virtual std::optional<std::string> GetReport(const std::string& cache_key) = 0;
  // Inserts or replaces. Throws StoreError.
  virtual void PutReport(const StoredReport& report) = 0;
  // Throws StoreError.
  virtual void AppendHistory(const HistoryRow& row) = 0;
  // Adds a gate outcome to the newest history row of `request_id` and `sha256` that has none
  // yet. False when there is no such row. Throws StoreError.
  virtual bool RecordGate(const std::string& request_id, const std::string& sha256,
                          const GateRecord& gate) = 0;
  // Throws StoreError.
  virtual StatsResult QueryStats(const StatsQuery& query) = 0;
  // The newest history row of every sha256 matching the query, newest first. Throws StoreError.
  virtual std::vector<ModelRow> LatestModels(const ModelsQuery& query) = 0;
  // The history rows matching the query, newest first, one page of them and how many match.
  // Throws StoreError.
  virtual ChecksPage ListChecks(const ChecksQuery& query) = 0;
  // The reports stored for `sha256` (every option set and rule set version), newest first, at
  // most `limit`. Throws StoreError.
  virtual std::vector<ReportInfo> ListReports(const std::string& sha256, std::uint32_t limit) = 0;
  // Makes everything written so far durable (checkpoint). Throws StoreError.
  virtual void Flush() = 0;
  // Webhook deliveries. Records `d` (with the store's seq) unless it is a duplicate: a delivery
  // with the same id, or (`dedup_model`) one of the same source, model and revision created at or
  // after `dedup_since_ms`. Duplicate: that delivery, nothing written. Throws StoreError.
  virtual std::optional<Delivery> AddDelivery(const Delivery& d, bool dedup_model,
                                              std::int64_t dedup_since_ms) = 0;
  // Writes the mutable fields of `d` (state, outcome, error, attempts, next_attempt_ms, owner,
  // sha256, cache_key, write_back, updated_ms) to the delivery `d.id`. Throws StoreError.
  virtual void UpdateDelivery(const Delivery& d) = 0;
  // Throws StoreError.
  virtual std::optional<Delivery> GetDelivery(const std::string& id) = 0;
  // Unfinished deliveries (pending, checking, writing_back) due at `now_ms` (next_attempt_ms <=
  // now_ms), the earliest first, at most `limit`. Throws StoreError.
  virtual std::vector<Delivery> DueDeliveries(std::int64_t now_ms, std::uint32_t limit) = 0;
  // Takes the unfinished delivery `id` for `owner` when its next_attempt_ms is still
  // `expected_next_ms` (nobody took it meanwhile): owner set, next_attempt_ms = lease_until_ms,
  // attempts + 1. Throws StoreError.
  virtual bool ClaimDelivery(const std::string& id, const std::string& owner,
                             std::int64_t expected_next_ms, std::int64_t lease_until_ms) = 0;
  // Newest first. Throws StoreError.
  virtual std::vector<Delivery> ListDeliveries(const DeliveriesQuery& query) = 0;
  // At startup. A store private to this server (SQLite) makes the deliveries a previous process
  // was working on due at once (their owner died with it); a shared store (PostgreSQL) leaves them
  // to their lease. Throws StoreError.
  virtual void RecoverDeliveries(std::int64_t /*now_ms*/) {}
  // Human-readable description for logs, e.g. "sqlite:/var/lib/axqc/axqc.sqlite3".
  virtual std::string Describe() const = 0;

  // Single flight across servers that share this store. A server claims a cache key before it
  // checks the model; a server that finds the key claimed by another live server polls GetReport
  // (every ClaimPollInterval) instead of checking, and claims again: that succeeds once the claim
  // was released without a report (failed check) or its holder stopped renewing it (takeover).
  // A store private to one server (SQLite) grants every claim at once: the in-process single
  // flight of the check engine is all there is.
  //
  // True: this server runs the check (a new claim, one it holds already, or an expired one).
  // False: another server holds a live claim. Throws StoreError.
  virtual bool TryClaim(const std::string& /*cache_key*/) { return true; }
  // Gives the claim up (after the report is stored, or after a check without report). Never
  // throws; a claim that cannot be deleted expires with its lease.
  virtual void ReleaseClaim(const std::string& /*cache_key*/) noexcept {}
  virtual std::chrono::milliseconds ClaimPollInterval() const {
    return std::chrono::milliseconds(250);
  }
  // True when another server holds a live claim or reservation for the key (a hash lookup then
  // waits for its report). Throws StoreError.
  virtual bool ClaimedElsewhere(const std::string& /*cache_key*/) { return false; }
  // Reserves the key for an upload that a hash-first client announced (it was told NOT_FOUND), for
  // `seconds`, unless another server holds a live claim or reservation for it. A reservation is
  // not renewed; the server that receives the upload turns it into its claim (TryClaim). False:
  // another server is on it. Throws StoreError.
  virtual bool TryReserve(const std::string& /*cache_key*/, double /*seconds*/) { return true; }
};

// True for locations that name a PostgreSQL database (postgresql:// or postgres:// URIs).
bool IsPostgresLocation(const std::string& location);

// Opens the store named by `location`: a PostgreSQL URI (postgresql://... or postgres://...),
// a file path or "sqlite:<path>" for the embedded SQLite store (":memory:" = not persisted).
// Throws StoreError.
std::unique_ptr<ReportStore> OpenStore(const std::string& location,
                                       const StoreOptions& options = {});

}  // namespace axqc::server
