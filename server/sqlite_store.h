// The embedded default store: one SQLite file in WAL mode holding reports (by cache key) and the
// request history. A writer connection and a reader connection (WAL lets GetStats queries run
// beside writes), each serialised by its own mutex. One server per file: the store holds an
// exclusive lock on "<path>.lock" (flock, released when the process ends, also by a crash; it
// names the holder's pid) and one on the database file itself (flock on its inode, so that a
// second server reaching the same file through a symbolic or hard link is refused too). A second
// server on the same file is refused at startup.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "store.h"

struct sqlite3;

namespace axqc::server {

class SqliteStore final : public ReportStore {
 public:
  // Opens or creates the database at `path` (":memory:" for a private in-memory database) and
  // migrates its schema. Throws StoreError.
  explicit SqliteStore(const std::string& path);
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

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
  void RecoverDeliveries(std::int64_t now_ms) override;
  void Flush() override;
  std::string Describe() const override { return "sqlite:" + path_; }

  // Schema version written to PRAGMA user_version: the number of migrations
  // (sqlite_store.cc, kMigrations).
  static constexpr int kSchemaVersion = 5;

 private:
  std::string path_;
  int lock_fd_ = -1;     // "<path>.lock", held while the store is open
  int db_lock_fd_ = -1;  // the database file, flock held; closed after the connections
  sqlite3* writer_ = nullptr;
  sqlite3* reader_ = nullptr;  // == writer_ for ":memory:"
  std::mutex writer_mu_;
  std::mutex reader_mu_;
  std::mutex& ReaderMutex() { return reader_ == writer_ ? writer_mu_ : reader_mu_; }
};

}  // namespace axqc::server
