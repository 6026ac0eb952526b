#include "sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <system_error>
#include <utility>

namespace axqc::server {

namespace {

[[noreturn]] void Fail(sqlite3* db, const std::string& what) {
  throw StoreError("sqlite: " + what + ": " +
                   (db != nullptr ? sqlite3_errmsg(db) : "out of memory"));
}

void Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err != nullptr ? err : "unknown error";
    sqlite3_free(err);
    throw StoreError(std::string("sqlite: ") + msg + " in: " + sql);
  }
}

// RAII prepared statement with 1-based binds.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &stmt_, nullptr) !=
        SQLITE_OK) {
      Fail(db, "prepare");
    }
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& Bind(int i, const std::string& v) {
    Check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Stmt& BindBlob(int i, const std::string& v) {
    Check(sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Stmt& Bind(int i, std::int64_t v) {
    Check(sqlite3_bind_int64(stmt_, i, v));
    return *this;
  }
  Stmt& Bind(int i, double v) {
    Check(sqlite3_bind_double(stmt_, i, v));
    return *this;
  }
  // True when a row is available.
  bool Step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    Fail(db_, "step");
  }
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::int64_t Int(int col) { return sqlite3_column_int64(stmt_, col); }
  std::string Text(int col) {
    const auto* p = sqlite3_column_blob(stmt_, col);
    const int n = sqlite3_column_bytes(stmt_, col);
    return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), n);
  }

 private:
  void Check(int rc) {
    if (rc != SQLITE_OK) Fail(db_, "bind");
  }
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

sqlite3* Open(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
    std::string msg = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close_v2(db);
    throw StoreError("sqlite: cannot open " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_extended_result_codes(db, 1);
  return db;
}

// Migration N (1-based) brings the schema from version N-1 (PRAGMA user_version) to N. Never edit
// a released migration: append a new one (and raise SqliteStore::kSchemaVersion).
constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE IF NOT EXISTS reports (
  cache_key        TEXT PRIMARY KEY,
  sha256           TEXT NOT NULL,
  options          TEXT NOT NULL,
  rule_set_version TEXT NOT NULL,
  verdict          TEXT NOT NULL,
  report           BLOB NOT NULL,
  created_ms       INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS reports_sha256 ON reports(sha256);
CREATE TABLE IF NOT EXISTS history (
  id          INTEGER PRIMARY KEY,
  ts_ms       INTEGER NOT NULL,
  request_id  TEXT NOT NULL,
  method      TEXT NOT NULL,
  source      TEXT NOT NULL,
  sha256      TEXT NOT NULL,
  verdict     TEXT NOT NULL,
  cache       TEXT NOT NULL,
  errors      INTEGER NOT NULL,
  warnings    INTEGER NOT NULL,
  duration_ms REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS history_ts ON history(ts_ms);
CREATE TABLE IF NOT EXISTS history_labels (
  history_id INTEGER NOT NULL REFERENCES history(id) ON DELETE CASCADE,
  key        TEXT NOT NULL,
  value      TEXT NOT NULL,
  PRIMARY KEY (history_id, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS history_labels_kv ON history_labels(key, value);
CREATE TABLE IF NOT EXISTS history_rules (
  history_id INTEGER NOT NULL REFERENCES history(id) ON DELETE CASCADE,
  rule       TEXT NOT NULL,
  severity   TEXT NOT NULL,
  count      INTEGER NOT NULL,
  PRIMARY KEY (history_id, rule, severity)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS history_rules_rule ON history_rules(severity, rule);
)sql",
    // 2: the outcome of the client's CI gate (RecordGate); NULL gate = none recorded.
    R"sql(
ALTER TABLE history ADD COLUMN gate TEXT;
ALTER TABLE history ADD COLUMN counted_errors INTEGER;
ALTER TABLE history ADD COLUMN counted_warnings INTEGER;
ALTER TABLE history ADD COLUMN waived_errors INTEGER;
ALTER TABLE history ADD COLUMN waived_warnings INTEGER;
ALTER TABLE history ADD COLUMN baselined_errors INTEGER;
ALTER TABLE history ADD COLUMN baselined_warnings INTEGER;
CREATE INDEX IF NOT EXISTS history_request_id ON history(request_id);
)sql",
    // 3: the model's display name (ListModels) and the latest row per model.
    R"sql(
ALTER TABLE history ADD COLUMN name TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS history_sha256 ON history(sha256, id);
)sql",
    // 4: registry webhook deliveries (ReportStore::AddDelivery).
    R"sql(
CREATE TABLE IF NOT EXISTS deliveries (
  seq             INTEGER PRIMARY KEY,
  id              TEXT NOT NULL UNIQUE,
  source          TEXT NOT NULL,
  model           TEXT NOT NULL,
  revision        TEXT NOT NULL,
  event           TEXT NOT NULL,
  request         TEXT NOT NULL,
  state           TEXT NOT NULL,
  outcome         TEXT NOT NULL,
  error           TEXT NOT NULL,
  attempts        INTEGER NOT NULL,
  next_attempt_ms INTEGER NOT NULL,
  owner           TEXT NOT NULL,
  request_id      TEXT NOT NULL,
  sha256          TEXT NOT NULL,
  cache_key       TEXT NOT NULL,
  write_back      TEXT NOT NULL,
  created_ms      INTEGER NOT NULL,
  updated_ms      INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_model ON deliveries(source, model, revision, created_ms);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries(state, next_attempt_ms);
)sql",
    // 5: the check's options (wire::OptionsKey; '' = the defaults) for ListChecks' links.
    R"sql(
ALTER TABLE history ADD COLUMN options TEXT NOT NULL DEFAULT '';
)sql",
};
static_assert(std::size(kMigrations) == SqliteStore::kSchemaVersion);

// Takes the exclusive lock of `path` (see sqlite_store.h); returns its descriptor.
int LockStoreFile(const std::string& path) {
  const std::string lock_path = path + ".lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw StoreError("sqlite: cannot open the lock file " + lock_path + ": " +
                     std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder;
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
    if (n > 0) holder = std::string(buf, static_cast<std::size_t>(n));
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    ::close(fd);
    if (err == EWOULDBLOCK) {
      throw StoreError("sqlite: " + path + " is in use by another axqc-server" +
                       (holder.empty() ? std::string() : " (pid " + holder + ")") + " holding " +
                       lock_path +
                       ": run one server per SQLite file, or give several servers one "
                       "PostgreSQL store (--store postgresql://...)");
    }
    throw StoreError("sqlite: cannot lock " + lock_path + ": " + std::strerror(err));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The pid is only informative; the lock is what counts.
  }
  return fd;
}

// Takes an exclusive flock on the database file itself, that is on its inode, whatever name (a
// symbolic or hard link) reaches it; returns its descriptor. SQLite's own locks are fcntl
// byte-range locks, which Linux keeps apart from flock locks. The descriptor must stay open until
// SQLite's connections are closed: closing any descriptor of a file drops the process's fcntl
// locks on it.
int LockDatabaseFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw StoreError("sqlite: cannot open " + path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      std::error_code ec;
      const auto real = std::filesystem::canonical(path, ec);
      throw StoreError(
          "sqlite: " + path + (ec || real == path ? "" : " (" + real.string() + ")") +
          " is in use by another axqc-server: the same database file, reached through another "
          "name (a symbolic or hard link): run one server per SQLite file, or give several "
          "servers one PostgreSQL store (--store postgresql://...)");
    }
    throw StoreError("sqlite: cannot lock " + path + ": " + std::strerror(err));
  }
  return fd;
}

// The gate columns of the stats queries (after the verdict count): rows with an outcome, passed
// ones, waived and baselined findings.
constexpr const char* kGateColumns =
    "COUNT(h.gate), COALESCE(SUM(h.gate = 'pass'), 0), "
    "COALESCE(SUM(h.waived_errors + h.waived_warnings), 0), "
    "COALESCE(SUM(h.baselined_errors + h.baselined_warnings), 0)";

void AddGateColumns(Stmt& s, int first, VerdictTally& t) {
  auto col = [&](int i) { return static_cast<std::uint64_t>(std::max<std::int64_t>(0, s.Int(i))); };
  t.AddGate(col(first), col(first + 1), col(first + 2), col(first + 3));
}

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The columns of a delivery in the order ReadDelivery reads them.
constexpr const char* kDeliveryColumns =
    "seq, id, source, model, revision, event, request, state, outcome, error, attempts, "
    "next_attempt_ms, owner, request_id, sha256, cache_key, write_back, created_ms, updated_ms";

Delivery ReadDelivery(Stmt& s) {
  Delivery d;
  d.seq = s.Int(0);
  d.id = s.Text(1);
  d.source = s.Text(2);
  d.model = s.Text(3);
  d.revision = s.Text(4);
  d.event = s.Text(5);
  d.request = s.Text(6);
  d.state = s.Text(7);
  d.outcome = s.Text(8);
  d.error = s.Text(9);
  d.attempts = static_cast<std::uint32_t>(std::clamp<std::int64_t>(s.Int(10), 0, 1 << 30));
  d.next_attempt_ms = s.Int(11);
  d.owner = s.Text(12);
  d.request_id = s.Text(13);
  d.sha256 = s.Text(14);
  d.cache_key = s.Text(15);
  d.write_back = s.Text(16);
  d.created_ms = s.Int(17);
  d.updated_ms = s.Int(18);
  return d;
}

}  // namespace

void VerdictTally::AddGate(std::uint64_t gated_rows, std::uint64_t passed, std::uint64_t waived,
                           std::uint64_t baselined) {
  gated += gated_rows;
  gate_passed += passed;
  waived_findings += waived;
  baselined_findings += baselined;
}

void VerdictTally::Add(const std::string& verdict, std::uint64_t n) {
  if (verdict == "conformant") {
    conformant += n;
  } else if (verdict == "non_conformant") {
    non_conformant += n;
  } else if (verdict == "not_applicable") {
    not_applicable += n;
  } else if (verdict == "checker_failed") {
    // The worker process failed on the model (isolation): no verdict about the model; these rows
    // are in the history and in axqc_checks_total, not in the stats' verdict counts.
  } else {
    invalid_input += n;
  }
}

SqliteStore::SqliteStore(const std::string& path) : path_(path) {
  const bool memory = path == ":memory:";
  if (!memory) {
    lock_fd_ = LockStoreFile(path);
    try {
      db_lock_fd_ = LockDatabaseFile(path);
    } catch (...) {
      ::close(lock_fd_);
      throw;
    }
  }
  try {
    writer_ = Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  } catch (...) {
    if (db_lock_fd_ >= 0) ::close(db_lock_fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);
    throw;
  }
  try {
    if (!memory) {
      Exec(writer_, "PRAGMA journal_mode=WAL");
      Exec(writer_, "PRAGMA synchronous=NORMAL");
    }
    Exec(writer_, "PRAGMA foreign_keys=ON");
    Exec(writer_, "BEGIN IMMEDIATE");
    try {
      int version = 0;
      {
        Stmt s(writer_, "PRAGMA user_version");
        if (s.Step()) version = static_cast<int>(s.Int(0));
      }
      if (version > kSchemaVersion) {
        throw StoreError("sqlite: " + path + " has schema version " + std::to_string(version) +
                         ", newer than this server's " + std::to_string(kSchemaVersion));
      }
      for (int next = version + 1; next <= kSchemaVersion; ++next) {
        try {
          Exec(writer_, kMigrations[next - 1]);
        } catch (const StoreError& e) {
          throw StoreError("sqlite: migration of " + path + " to schema version " +
                           std::to_string(next) + " failed: " + e.what());
        }
      }
      Exec(writer_, ("PRAGMA user_version=" + std::to_string(kSchemaVersion)).c_str());
      Exec(writer_, "COMMIT");
    } catch (...) {
      sqlite3_exec(writer_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    reader_ = memory ? writer_ : Open(path, SQLITE_OPEN_READONLY);
  } catch (...) {
    sqlite3_close_v2(writer_);
    writer_ = nullptr;
    if (db_lock_fd_ >= 0) ::close(db_lock_fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);
    throw;
  }
}

SqliteStore::~SqliteStore() {
  if (reader_ != nullptr && reader_ != writer_) sqlite3_close_v2(reader_);
  if (writer_ != nullptr) {
    // The last connection to close checkpoints the WAL into the database file.
    sqlite3_close_v2(writer_);
  }
  if (db_lock_fd_ >= 0) ::close(db_lock_fd_);  // after the connections (see LockDatabaseFile)
  if (lock_fd_ >= 0) ::close(lock_fd_);        // releases the lock
}

std::optional<std::string> SqliteStore::GetReport(const std::string& cache_key) {
  std::lock_guard<std::mutex> lock(ReaderMutex());
  Stmt s(reader_, "SELECT report FROM reports WHERE cache_key = ?1");
  s.Bind(1, cache_key);
  if (!s.Step()) return std::nullopt;
  return s.Text(0);
}

void SqliteStore::PutReport(const StoredReport& r) {
  std::lock_guard<std::mutex> lock(writer_mu_);
  Stmt s(writer_,
         "INSERT OR REPLACE INTO reports (cache_key, sha256, options, rule_set_version, verdict, "
         "report, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  s.Bind(1, r.cache_key)
      .Bind(2, r.sha256)
      .Bind(3, r.options)
      .Bind(4, r.rule_set_version)
      .Bind(5, r.verdict)
      .BindBlob(6, r.report)
      .Bind(7, NowMs());
  s.Step();
}

void SqliteStore::AppendHistory(const HistoryRow& row) {
  std::lock_guard<std::mutex> lock(writer_mu_);
  Exec(writer_, "BEGIN IMMEDIATE");
  try {
    {
      Stmt s(
          writer_,
          "INSERT INTO history (ts_ms, request_id, method, source, sha256, verdict, cache, "
          "errors, warnings, duration_ms, name, options) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
          "?9, ?10, ?11, ?12)");
      s.Bind(1, row.time_ms)
          .Bind(2, row.request_id)
          .Bind(3, row.method)
          .Bind(4, row.source)
          .Bind(5, row.sha256)
          .Bind(6, row.verdict)
          .Bind(7, row.cache)
          .Bind(8, static_cast<std::int64_t>(row.errors))
          .Bind(9, static_cast<std::int64_t>(row.warnings))
          .Bind(10, row.duration_ms)
          .Bind(11, row.name)
          .Bind(12, row.options);
      s.Step();
    }
    const std::int64_t id = sqlite3_last_insert_rowid(writer_);
    if (!row.labels.empty()) {
      Stmt s(writer_, "INSERT INTO history_labels (history_id, key, value) VALUES (?1, ?2, ?3)");
      for (const auto& [k, v] : row.labels) {
        s.Bind(1, id).Bind(2, k).Bind(3, v);
        s.Step();
        s.Reset();
      }
    }
    if (!row.rules.empty()) {
      Stmt s(writer_,
             "INSERT INTO history_rules (history_id, rule, severity, count) VALUES (?1, ?2, ?3, "
             "?4) ON CONFLICT (history_id, rule, severity) DO UPDATE SET count = count + "
             "excluded.count");
      for (const auto& t : row.rules) {
        s.Bind(1, id)
            .Bind(2, t.rule)
            .Bind(3, t.severity)
            .Bind(4, static_cast<std::int64_t>(t.count));
        s.Step();
        s.Reset();
      }
    }
    Exec(writer_, "COMMIT");
  } catch (...) {
    sqlite3_exec(writer_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

bool SqliteStore::RecordGate(const std::string& request_id, const std::string& sha256,
                             const GateRecord& g) {
  std::lock_guard<std::mutex> lock(writer_mu_);
  Stmt s(writer_,
         "UPDATE history SET gate = ?3, counted_errors = ?4, counted_warnings = ?5, "
         "waived_errors = ?6, waived_warnings = ?7, baselined_errors = ?8, baselined_warnings = ?9 "
         "WHERE id = (SELECT id FROM history WHERE request_id = ?1 AND sha256 = ?2 AND gate IS "
         "NULL ORDER BY id DESC LIMIT 1)");
  s.Bind(1, request_id)
      .Bind(2, sha256)
      .Bind(3, std::string(g.passed ? "pass" : "fail"))
      .Bind(4, static_cast<std::int64_t>(g.counted_errors))
      .Bind(5, static_cast<std::int64_t>(g.counted_warnings))
      .Bind(6, static_cast<std::int64_t>(g.waived_errors))
      .Bind(7, static_cast<std::int64_t>(g.waived_warnings))
      .Bind(8, static_cast<std::int64_t>(g.baselined_errors))
      .Bind(9, static_cast<std::int64_t>(g.baselined_warnings));
  s.Step();
  return sqlite3_changes(writer_) > 0;
}

namespace {

// The history rows carrying every label of `count` key=value filters, as SQL with parameters
// ?first, ?first+1, ... (a key and its value each); BindLabels binds them and returns the next
// parameter's number.
std::string LabelFilterSql(std::size_t count, int first) {
  std::string sql;
  for (std::size_t i = 0; i < count; ++i, first += 2) {
    sql += " AND EXISTS (SELECT 1 FROM history_labels f WHERE f.history_id = h.id AND f.key = ?" +
           std::to_string(first) + " AND f.value = ?" + std::to_string(first + 1) + ")";
  }
  return sql;
}

int BindLabels(Stmt& s, const std::map<std::string, std::string>& labels, int first) {
  for (const auto& [k, v] : labels) {
    s.Bind(first, k).Bind(first + 1, v);
    first += 2;
  }
  return first;
}

}  // namespace

StatsResult SqliteStore::QueryStats(const StatsQuery& q) {
  // Window and label filters shared by all three queries; ?1 = since, ?2 = until, then filters.
  std::string where = "h.ts_ms >= ?1 AND h.ts_ms < ?2";
  int next = 3;
  where += LabelFilterSql(q.label_filter.size(), next);
  next += 2 * static_cast<int>(q.label_filter.size());
  auto bind_common = [&](Stmt& s) {
    s.Bind(1, q.since_ms.value_or(std::numeric_limits<std::int64_t>::min())).Bind(2, q.until_ms);
    return BindLabels(s, q.label_filter, 3);
  };

  StatsResult out;
  std::lock_guard<std::mutex> lock(ReaderMutex());
  // One read transaction: the three queries see the same snapshot.
  Exec(reader_, "BEGIN");
  try {
    {
      Stmt s(reader_, "SELECT h.verdict, COUNT(*), " + std::string(kGateColumns) +
                          " FROM history h WHERE " + where + " GROUP BY h.verdict");
      bind_common(s);
      while (s.Step()) {
        out.total.Add(s.Text(0), static_cast<std::uint64_t>(s.Int(1)));
        AddGateColumns(s, 2, out.total);
      }
    }
    if (!q.group_by.empty()) {
      const std::string key_param = "?" + std::to_string(next);
      Stmt s(reader_, "SELECT COALESCE(g.value, ''), h.verdict, COUNT(*), " +
                          std::string(kGateColumns) +
                          " FROM history h "
                          "LEFT JOIN history_labels g ON g.history_id = h.id AND g.key = " +
                          key_param + " WHERE " + where + " GROUP BY 1, 2 ORDER BY 1");
      const int i = bind_common(s);
      s.Bind(i, q.group_by);
      while (s.Step()) {
        const std::string value = s.Text(0);
        if (out.groups.empty() || out.groups.back().first != value) {
          out.groups.emplace_back(value, VerdictTally{});
        }
        out.groups.back().second.Add(s.Text(1), static_cast<std::uint64_t>(s.Int(2)));
        AddGateColumns(s, 3, out.groups.back().second);
      }
    }
    if (q.top_rules > 0) {
      const std::string limit_param = "?" + std::to_string(next);
      Stmt s(reader_,
             "SELECT r.rule, COUNT(*), SUM(r.count), COUNT(DISTINCT h.sha256) FROM history_rules "
             "r JOIN history h ON h.id = r.history_id WHERE r.severity = 'error' AND " +
                 where + " GROUP BY r.rule ORDER BY 2 DESC, 3 DESC, 1 ASC LIMIT " + limit_param);
      const int i = bind_common(s);
      s.Bind(i, static_cast<std::int64_t>(q.top_rules));
      while (s.Step()) {
        out.top_failing_rules.push_back(RuleStat{s.Text(0), static_cast<std::uint64_t>(s.Int(1)),
                                                 static_cast<std::uint64_t>(s.Int(2)),
                                                 static_cast<std::uint64_t>(s.Int(3))});
      }
    }
    if (q.step_ms > 0) {
      const std::string step_param = "?" + std::to_string(next);
      Stmt s(reader_, "SELECT h.ts_ms - (h.ts_ms % " + step_param +
                          ") AS b, h.verdict, COUNT(*), " + std::string(kGateColumns) +
                          " FROM history h WHERE " + where + " GROUP BY 1, 2 ORDER BY 1");
      const int i = bind_common(s);
      s.Bind(i, q.step_ms);
      while (s.Step()) {
        const std::int64_t start = s.Int(0);
        if (out.series.empty() || out.series.back().first != start) {
          out.series.emplace_back(start, VerdictTally{});
        }
        out.series.back().second.Add(s.Text(1), static_cast<std::uint64_t>(s.Int(2)));
        AddGateColumns(s, 3, out.series.back().second);
      }
    }
    Exec(reader_, "COMMIT");
  } catch (...) {
    sqlite3_exec(reader_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return out;
}

std::vector<ModelRow> SqliteStore::LatestModels(const ModelsQuery& q) {
  std::string where = "h.sha256 <> '' AND h.ts_ms >= ?1";
  int next = 2;
  where += LabelFilterSql(q.label_filter.size(), next);
  next += 2 * static_cast<int>(q.label_filter.size());
  std::vector<ModelRow> out;
  std::vector<std::int64_t> ids;
  std::lock_guard<std::mutex> lock(ReaderMutex());
  Exec(reader_, "BEGIN");
  try {
    {
      Stmt s(reader_,
             "SELECT h.id, h.sha256, h.name, h.verdict, h.ts_ms, h.errors, h.warnings, "
             "h.request_id FROM history h WHERE h.id IN (SELECT MAX(h.id) FROM history h WHERE " +
                 where + " GROUP BY h.sha256) ORDER BY h.ts_ms DESC, h.id DESC LIMIT ?" +
                 std::to_string(next));
      s.Bind(1, q.since_ms.value_or(std::numeric_limits<std::int64_t>::min()));
      s.Bind(BindLabels(s, q.label_filter, 2), static_cast<std::int64_t>(q.limit));
      while (s.Step()) {
        ids.push_back(s.Int(0));
        ModelRow row;
        row.sha256 = s.Text(1);
        row.name = s.Text(2);
        row.verdict = s.Text(3);
        row.time_ms = s.Int(4);
        row.errors = static_cast<std::uint64_t>(std::max<std::int64_t>(0, s.Int(5)));
        row.warnings = static_cast<std::uint64_t>(std::max<std::int64_t>(0, s.Int(6)));
        row.request_id = s.Text(7);
        out.push_back(std::move(row));
      }
    }
    {
      Stmt s(reader_, "SELECT key, value FROM history_labels WHERE history_id = ?1");
      for (std::size_t n = 0; n < ids.size(); ++n) {
        s.Bind(1, ids[n]);
        while (s.Step()) out[n].labels[s.Text(0)] = s.Text(1);
        s.Reset();
      }
    }
    Exec(reader_, "COMMIT");
  } catch (...) {
    sqlite3_exec(reader_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return out;
}

ChecksPage SqliteStore::ListChecks(const ChecksQuery& q) {
  // ?1 verdict, ?2 source, ?3 sha256, ?4 search ('' = any), then the label pairs.
  std::string where =
      "(?1 = '' OR h.verdict = ?1) AND (?2 = '' OR h.source = ?2) AND (?3 = '' OR h.sha256 = ?3) "
      "AND (?4 = '' OR instr(lower(h.name), lower(?4)) > 0)";
  int next = 5;
  where += LabelFilterSql(q.label_filter.size(), next);
  next += 2 * static_cast<int>(q.label_filter.size());
  auto bind_common = [&](Stmt& s) {
    s.Bind(1, q.verdict).Bind(2, q.source).Bind(3, q.sha256).Bind(4, q.search);
    return BindLabels(s, q.label_filter, 5);
  };
  ChecksPage out;
  std::lock_guard<std::mutex> lock(ReaderMutex());
  Exec(reader_, "BEGIN");
  try {
    {
      Stmt s(reader_, "SELECT COUNT(*) FROM history h WHERE " + where);
      bind_common(s);
      if (s.Step()) out.total = static_cast<std::uint64_t>(std::max<std::int64_t>(0, s.Int(0)));
    }
    {
      Stmt s(reader_,
             "SELECT h.id, h.ts_ms, h.request_id, h.method, h.name, h.source, h.sha256, "
             "h.verdict, h.cache, h.errors, h.warnings, h.options FROM history h WHERE " +
                 where + " ORDER BY h.id DESC LIMIT ?" + std::to_string(next) + " OFFSET ?" +
                 std::to_string(next + 1));
      const int i = bind_common(s);
      s.Bind(i, static_cast<std::int64_t>(q.limit))
          .Bind(i + 1, static_cast<std::int64_t>(std::min<std::uint64_t>(
                           q.offset, std::numeric_limits<std::int64_t>::max())));
      while (s.Step()) {
        CheckRow row;
        row.id = s.Int(0);
        row.time_ms = s.Int(1);
        row.request_id = s.Text(2);
        row.method = s.Text(3);
        row.name = s.Text(4);
        row.source = s.Text(5);
        row.sha256 = s.Text(6);
        row.verdict = s.Text(7);
        row.cache = s.Text(8);
        row.errors = static_cast<std::uint64_t>(std::max<std::int64_t>(0, s.Int(9)));
        row.warnings = static_cast<std::uint64_t>(std::max<std::int64_t>(0, s.Int(10)));
        row.options = s.Text(11);
        out.checks.push_back(std::move(row));
      }
    }
    {
      Stmt s(reader_, "SELECT key, value FROM history_labels WHERE history_id = ?1");
      for (auto& row : out.checks) {
        s.Bind(1, row.id);
        while (s.Step()) row.labels[s.Text(0)] = s.Text(1);
        s.Reset();
      }
    }
    Exec(reader_, "COMMIT");
  } catch (...) {
    sqlite3_exec(reader_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return out;
}

std::vector<ReportInfo> SqliteStore::ListReports(const std::string& sha256, std::uint32_t limit) {
  std::lock_guard<std::mutex> lock(ReaderMutex());
  Stmt s(reader_,
         "SELECT cache_key, options, rule_set_version, verdict, created_ms FROM reports WHERE "
         "sha256 = ?1 ORDER BY created_ms DESC, cache_key LIMIT ?2");
  s.Bind(1, sha256).Bind(2, static_cast<std::int64_t>(limit));
  std::vector<ReportInfo> out;
  while (s.Step()) {
    out.push_back(ReportInfo{s.Text(0), s.Text(1), s.Text(2), s.Text(3), s.Int(4)});
  }
  return out;
}

std::optional<Delivery> SqliteStore::AddDelivery(const Delivery& d, bool dedup_model,
                                                 std::int64_t dedup_since_ms) {
  std::lock_guard<std::mutex> lock(writer_mu_);
  Exec(writer_, "BEGIN IMMEDIATE");
  try {
    {
      Stmt s(writer_, std::string("SELECT ") + kDeliveryColumns +
                          " FROM deliveries WHERE id = ?1 OR (?2 AND source = ?3 AND model = ?4 "
                          "AND revision = ?5 AND created_ms >= ?6) ORDER BY seq LIMIT 1");
      s.Bind(1, d.id)
          .Bind(2, std::int64_t{dedup_model ? 1 : 0})
          .Bind(3, d.source)
          .Bind(4, d.model)
          .Bind(5, d.revision)
          .Bind(6, dedup_since_ms);
      if (s.Step()) {
        Delivery existing = ReadDelivery(s);
        Exec(writer_, "COMMIT");
        return existing;
      }
    }
    Stmt s(writer_,
           "INSERT INTO deliveries (id, source, model, revision, event, request, state, outcome, "
           "error, attempts, next_attempt_ms, owner, request_id, sha256, cache_key, write_back, "
           "created_ms, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
           "?13, ?14, ?15, ?16, ?17, ?18)");
    s.Bind(1, d.id)
        .Bind(2, d.source)
        .Bind(3, d.model)
        .Bind(4, d.revision)
        .Bind(5, d.event)
        .Bind(6, d.request)
        .Bind(7, d.state)
        .Bind(8, d.outcome)
        .Bind(9, d.error)
        .Bind(10, static_cast<std::int64_t>(d.attempts))
        .Bind(11, d.next_attempt_ms)
        .Bind(12, d.owner)
        .Bind(13, d.request_id)
        .Bind(14, d.sha256)
        .Bind(15, d.cache_key)
        .Bind(16, d.write_back)
        .Bind(17, d.created_ms)
        .Bind(18, d.updated_ms);
    s.Step();
    Exec(writer_, "COMMIT");
  } catch (...) {
    sqlite3_exec(writer_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return std::nullopt;
}

void SqliteStore::UpdateDelivery(const Delivery& d) {
  std::lock_guard<std::mutex> lock(writer_mu_);
  Stmt s(writer_,
         "UPDATE deliveries SET state = ?2, outcome = ?3, error = ?4, attempts = ?5, "
         "next_attempt_ms = ?6, owner = ?7, sha256 = ?8, cache_key = ?9, write_back = ?10, "
         "updated_ms = ?11 WHERE id = ?1");
  s.Bind(1, d.id)
      .Bind(2, d.state)
      .Bind(3, d.outcome)
      .Bind(4, d.error)
      .Bind(5, static_cast<std::int64_t>(d.attempts))
      .Bind(6, d.next_attempt_ms)
      .Bind(7, d.owner)
      .Bind(8, d.sha256)
      .Bind(9, d.cache_key)
      .Bind(10, d.write_back)
      .Bind(11, d.updated_ms);
  s.Step();
}

std::optional<Delivery> SqliteStore::GetDelivery(const std::string& id) {
  std::lock_guard<std::mutex> lock(ReaderMutex());
  Stmt s(reader_, std::string("SELECT ") + kDeliveryColumns + " FROM deliveries WHERE id = ?1");
  s.Bind(1, id);
  if (!s.Step()) return std::nullopt;
  return ReadDelivery(s);
}

std::vector<Delivery> SqliteStore::DueDeliveries(std::int64_t now_ms, std::uint32_t limit) {
  std::lock_guard<std::mutex> lock(ReaderMutex());
  Stmt s(reader_, std::string("SELECT ") + kDeliveryColumns +
                      " FROM deliveries WHERE state IN ('pending', 'checking', 'writing_back') "
                      "AND next_attempt_ms <= ?1 ORDER BY next_attempt_ms, seq LIMIT ?2");
  s.Bind(1, now_ms).Bind(2, static_cast<std::int64_t>(limit));
  std::vector<Delivery> out;
  while (s.Step()) out.push_back(ReadDelivery(s));
  return out;
}

bool SqliteStore::ClaimDelivery(const std::string& id, const std::string& owner,
                                std::int64_t expected_next_ms, std::int64_t lease_until_ms) {
  std::lock_guard<std::mutex> lock(writer_mu_);
  Stmt s(writer_,
         "UPDATE deliveries SET owner = ?2, next_attempt_ms = ?4, attempts = attempts + 1, "
         "updated_ms = ?5 WHERE id = ?1 AND next_attempt_ms = ?3 AND state IN ('pending', "
         "'checking', 'writing_back')");
  s.Bind(1, id).Bind(2, owner).Bind(3, expected_next_ms).Bind(4, lease_until_ms).Bind(5, NowMs());
  s.Step();
  return sqlite3_changes(writer_) > 0;
}

std::vector<Delivery> SqliteStore::ListDeliveries(const DeliveriesQuery& q) {
  std::lock_guard<std::mutex> lock(ReaderMutex());
  Stmt s(reader_, std::string("SELECT ") + kDeliveryColumns +
                      " FROM deliveries WHERE (?1 = '' OR source = ?1) AND (?2 = '' OR outcome = "
                      "?2) AND (?3 = '' OR state = ?3) AND (?4 <= 0 OR seq < ?4) ORDER BY seq "
                      "DESC LIMIT ?5");
  s.Bind(1, q.source)
      .Bind(2, q.outcome)
      .Bind(3, q.state)
      .Bind(4, q.before_seq)
      .Bind(5, static_cast<std::int64_t>(q.limit));
  std::vector<Delivery> out;
  while (s.Step()) out.push_back(ReadDelivery(s));
  return out;
}

void SqliteStore::RecoverDeliveries(std::int64_t now_ms) {
  // One server per SQLite file (the file locks): an owner recorded here was a previous process.
  std::lock_guard<std::mutex> lock(writer_mu_);
  Stmt s(writer_,
         "UPDATE deliveries SET owner = '', next_attempt_ms = MIN(next_attempt_ms, ?1) WHERE "
         "owner <> '' AND state IN ('pending', 'checking', 'writing_back')");
  s.Bind(1, now_ms);
  s.Step();
}

void SqliteStore::Flush() {
  std::lock_guard<std::mutex> lock(writer_mu_);
  if (path_ == ":memory:") return;
  Exec(writer_, "PRAGMA wal_checkpoint(TRUNCATE)");
}

}  // namespace axqc::server
