// Persistent report store and request history, behind an interface so that backends other than
// the embedded SQLite one (e.g. PostgreSQL) can be added without touching the service.
#pragma once

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
  std::string cache_key;  // sha256|options|rule-set version (service::CacheKey)
  std::string sha256;
  std::string options;  // service::OptionsKey
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
  std::string source;  // "path", "url", "inline", "upload"
  std::string sha256;
  std::string verdict;  // "conformant", "non_conformant", "not_applicable", "invalid_input"
  std::string cache;    // "miss", "memory_hit", "store_hit", "shared"
  std::uint64_t errors = 0;
  std::uint64_t warnings = 0;
  double duration_ms = 0;
  std::map<std::string, std::string> labels;
  std::vector<RuleTally> rules;
};

struct StatsQuery {
  std::optional<std::int64_t> since_ms;  // inclusive; unset = from the beginning
  std::int64_t until_ms = 0;             // exclusive
  std::string group_by;                  // label key; "" = no groups
  std::map<std::string, std::string> label_filter;
  std::uint32_t top_rules = 10;
};

struct VerdictTally {
  std::uint64_t conformant = 0;
  std::uint64_t non_conformant = 0;
  std::uint64_t not_applicable = 0;
  std::uint64_t invalid_input = 0;
  void Add(const std::string& verdict, std::uint64_t n);
  std::uint64_t requests() const {
    return conformant + non_conformant + not_applicable + invalid_input;
  }
};

struct RuleStat {
  std::string rule;
  std::uint64_t requests = 0;  // requests with >= 1 error finding of the rule
  std::uint64_t findings = 0;  // error findings of the rule over those requests
};

struct StatsResult {
  VerdictTally total;
  std::vector<std::pair<std::string, VerdictTally>> groups;  // sorted by label value
  std::vector<RuleStat> top_failing_rules;
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
  // Throws StoreError.
  virtual StatsResult QueryStats(const StatsQuery& query) = 0;
  // Makes everything written so far durable (checkpoint). Throws StoreError.
  virtual void Flush() = 0;
  // Human-readable description for logs, e.g. "sqlite:/var/lib/axqc/axqc.sqlite3".
  virtual std::string Describe() const = 0;
};

// Opens the store named by `location`: a file path or "sqlite:<path>" for the embedded SQLite
// store (":memory:" = not persisted). Throws StoreError.
std::unique_ptr<ReportStore> OpenStore(const std::string& location);

}  // namespace axqc::server
