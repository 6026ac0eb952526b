// The shared store for several axqc-server replicas: PostgreSQL through libpq. Holds the same data
// as the SQLite store (reports by cache key, request history) plus the check claims that give
// single flight across replicas. A small pool of connections serves the calls; a connection that
// broke (database restart, network) is replaced on the next call, which is retried once on a new
// connection. Every call is bounded by the connect timeout and a statement timeout, so while the
// database is down calls fail quickly with StoreError instead of hanging.
//
// Schema: versioned migrations (table axqc_schema_version) applied at start-up under a
// transaction-level advisory lock, so replicas starting at the same time apply each migration once.
//
// Claims (table axqc_check_claims): one row per cache key being checked, with the owner (this
// server's replica id) and a lease expiry on the database's clock. The owner's heartbeat thread
// renews its claims every lease/3; a claim whose lease ran out belongs to whoever claims it next.
// A row in state 'upload' is a reservation for an upload a hash-first client announced: never
// renewed, taken over by the claim of whichever server receives that upload.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store.h"

struct pg_conn;

namespace axqc::server {

class PgStore final : public ReportStore {
 public:
  // Connects (one connection, the rest on demand), migrates the schema and starts the claim
  // heartbeat. `location` is a libpq URI (postgresql://...) or key=value connection string.
  // Throws StoreError.
  PgStore(const std::string& location, const StoreOptions& options);
  ~PgStore() override;
  PgStore(const PgStore&) = delete;
  PgStore& operator=(const PgStore&) = delete;

  std::optional<std::string> GetReport(const std::string& cache_key) override;
  void PutReport(const StoredReport& report) override;
  void AppendHistory(const HistoryRow& row) override;
  bool RecordGate(const std::string& request_id, const std::string& sha256,
                  const GateRecord& gate) override;
  StatsResult QueryStats(const StatsQuery& query) override;
  std::vector<ModelRow> LatestModels(const ModelsQuery& query) override;
  ChecksPage ListChecks(const ChecksQuery& query) override;
  std::vector<ReportInfo> ListReports(const std::string& sha256, std::uint32_t limit) override;
  std::optional<Delivery> AddDelivery(const Delivery& d, bool dedup_model,
                                      std::int64_t dedup_since_ms) override;
  void UpdateDelivery(const Delivery& d) override;
  std::optional<Delivery> GetDelivery(const std::string& id) override;
  std::vector<Delivery> DueDeliveries(std::int64_t now_ms, std::uint32_t limit) override;
  bool ClaimDelivery(const std::string& id, const std::string& owner, std::int64_t expected_next_ms,
                     std::int64_t lease_until_ms) override;
  std::vector<Delivery> ListDeliveries(const DeliveriesQuery& query) override;
  void Flush() override {}  // every write is committed (durable) when the call returns
  std::string Describe() const override { return described_; }

  bool TryClaim(const std::string& cache_key) override;
  void ReleaseClaim(const std::string& cache_key) noexcept override;
  std::chrono::milliseconds ClaimPollInterval() const override { return poll_interval_; }
  bool ClaimedElsewhere(const std::string& cache_key) override;
  bool TryReserve(const std::string& cache_key, double seconds) override;

  const std::string& replica_id() const { return replica_id_; }

  // Number of migrations (the highest schema version this server knows).
  static int SchemaVersion();

 private:
  class Conn;
  friend class Conn;
  using ConnPtr = std::unique_ptr<pg_conn, void (*)(pg_conn*)>;
  ConnPtr Connect();
  ConnPtr Acquire();
  void Release(ConnPtr conn, bool broken);
  // Runs `f(conn)` on a pooled connection; retried once on a fresh connection when the first one
  // turned out broken (e.g. the database restarted since it was opened).
  template <typename F>
  auto With(F&& f);
  void Migrate();
  void Heartbeat();

  const std::string dsn_;
  std::string described_;  // the location with any password removed
  const StoreOptions options_;
  std::string replica_id_;
  std::chrono::milliseconds poll_interval_;

  std::mutex pool_mu_;
  std::condition_variable pool_cv_;
  std::vector<ConnPtr> idle_;
  unsigned open_ = 0;  // connections handed out or idle

  std::mutex claims_mu_;
  std::condition_variable heartbeat_cv_;
  std::set<std::string> held_;  // claims this server holds and renews
  bool stopping_ = false;
  std::thread heartbeat_;
};

// "postgresql://user:secret@host/db" -> "postgresql://user@host/db"; password=... removed from
// key=value strings.
std::string RedactConnectionString(const std::string& location);

}  // namespace axqc::server
