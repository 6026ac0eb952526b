#include "pg_store.h"

#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <random>
#include <regex>
#include <utility>

namespace axqc::server {

namespace {

// Key of the advisory lock that serialises schema migrations ("axqc" in ASCII, then "mig").
constexpr std::int64_t kMigrationLock = 0x61787163006d6967;

// Migration N (1-based) brings the schema from version N-1 to N. Never edit a released migration:
// append a new one.
constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE axqc_reports (
  cache_key        text PRIMARY KEY,
  sha256           text NOT NULL,
  options          text NOT NULL,
  rule_set_version text NOT NULL,
  verdict          text NOT NULL,
  report           bytea NOT NULL,
  created_ms       bigint NOT NULL
);
CREATE INDEX axqc_reports_sha256 ON axqc_reports (sha256);
CREATE TABLE axqc_history (
  id          bigserial PRIMARY KEY,
  ts_ms       bigint NOT NULL,
  request_id  text NOT NULL,
  replica     text NOT NULL,
  method      text NOT NULL,
  source      text NOT NULL,
  sha256      text NOT NULL,
  verdict     text NOT NULL,
  cache       text NOT NULL,
  errors      bigint NOT NULL,
  warnings    bigint NOT NULL,
  duration_ms double precision NOT NULL
);
CREATE INDEX axqc_history_ts ON axqc_history (ts_ms);
CREATE TABLE axqc_history_labels (
  history_id bigint NOT NULL REFERENCES axqc_history (id) ON DELETE CASCADE,
  key        text NOT NULL,
  value      text NOT NULL,
  PRIMARY KEY (history_id, key)
);
CREATE INDEX axqc_history_labels_kv ON axqc_history_labels (key, value);
CREATE TABLE axqc_history_rules (
  history_id bigint NOT NULL REFERENCES axqc_history (id) ON DELETE CASCADE,
  rule       text NOT NULL,
  severity   text NOT NULL,
  count      bigint NOT NULL,
  PRIMARY KEY (history_id, rule, severity)
);
CREATE INDEX axqc_history_rules_rule ON axqc_history_rules (severity, rule);
CREATE TABLE axqc_check_claims (
  cache_key  text PRIMARY KEY,
  owner      text NOT NULL,
  claimed_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
)sql",
    // 2: reservations of announced uploads ('upload') beside the claims of running checks.
    R"sql(
ALTER TABLE axqc_check_claims ADD COLUMN state text NOT NULL DEFAULT 'check';
)sql",
    // 3: the outcome of the client's CI gate (RecordGate); NULL gate = none recorded.
    R"sql(
ALTER TABLE axqc_history ADD COLUMN gate text;
ALTER TABLE axqc_history ADD COLUMN counted_errors bigint;
ALTER TABLE axqc_history ADD COLUMN counted_warnings bigint;
ALTER TABLE axqc_history ADD COLUMN waived_errors bigint;
ALTER TABLE axqc_history ADD COLUMN waived_warnings bigint;
ALTER TABLE axqc_history ADD COLUMN baselined_errors bigint;
ALTER TABLE axqc_history ADD COLUMN baselined_warnings bigint;
CREATE INDEX axqc_history_request_id ON axqc_history (request_id);
)sql",
    // 4: the model's display name (ListModels) and the latest row per model.
    R"sql(
ALTER TABLE axqc_history ADD COLUMN name text NOT NULL DEFAULT '';
CREATE INDEX axqc_history_sha256 ON axqc_history (sha256, id);
)sql",
    // 5: registry webhook deliveries (ReportStore::AddDelivery).
    R"sql(
CREATE TABLE axqc_deliveries (
  seq             bigserial PRIMARY KEY,
  id              text NOT NULL UNIQUE,
  source          text NOT NULL,
  model           text NOT NULL,
  revision        text NOT NULL,
  event           text NOT NULL,
  request         text NOT NULL,
  state           text NOT NULL,
  outcome         text NOT NULL,
  error           text NOT NULL,
  attempts        bigint NOT NULL,
  next_attempt_ms bigint NOT NULL,
  owner           text NOT NULL,
  request_id      text NOT NULL,
  sha256          text NOT NULL,
  cache_key       text NOT NULL,
  write_back      text NOT NULL,
  created_ms      bigint NOT NULL,
  updated_ms      bigint NOT NULL
);
CREATE INDEX axqc_deliveries_model ON axqc_deliveries (source, model, revision, created_ms);
CREATE INDEX axqc_deliveries_due ON axqc_deliveries (state, next_attempt_ms);
)sql",
    // 6: the check's options (wire::OptionsKey; '' = the defaults) for ListChecks' links.
    R"sql(
ALTER TABLE axqc_history ADD COLUMN options text NOT NULL DEFAULT '';
)sql",
};

// Key of the advisory lock that serialises AddDelivery's duplicate check and insert.
constexpr std::int64_t kDeliveryLock = 0x6178716300646c76;

// The columns of a delivery in the order ReadDelivery reads them.
constexpr const char* kDeliveryColumns =
    "seq, id, source, model, revision, event, request, state, outcome, error, attempts, "
    "next_attempt_ms, owner, request_id, sha256, cache_key, write_back, created_ms, updated_ms";

// The gate columns of the stats queries (after the verdict count): rows with an outcome, passed
// ones, waived and baselined findings.
constexpr const char* kGateColumns =
    "COUNT(h.gate), COALESCE(SUM(CASE WHEN h.gate = 'pass' THEN 1 ELSE 0 END), 0), "
    "COALESCE(SUM(h.waived_errors + h.waived_warnings), 0), "
    "COALESCE(SUM(h.baselined_errors + h.baselined_warnings), 0)";

std::string Trimmed(const char* msg) {
  std::string s = msg != nullptr ? msg : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

struct Param {
  std::string value;
  bool binary = false;
};

// Owns a PGresult.
class Result {
 public:
  explicit Result(PGresult* r) : r_(r) {}
  ~Result() { PQclear(r_); }
  Result(Result&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result& operator=(Result&&) = delete;

  int rows() const { return PQntuples(r_); }
  std::string Text(int row, int col) const {
    return std::string(PQgetvalue(r_, row, col),
                       static_cast<std::size_t>(PQgetlength(r_, row, col)));
  }
  bool IsNull(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
  std::int64_t Int(int row, int col) const {
    const std::string t = Text(row, col);
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc()) throw StoreError("postgresql: not an integer: '" + t + "'");
    (void)p;
    return v;
  }
  std::uint64_t Count(int row, int col) const {
    // COUNT(*) is bigint; SUM(bigint) is numeric (still an integer here).
    const std::int64_t v = Int(row, col);
    return v < 0 ? 0 : static_cast<std::uint64_t>(v);
  }
  std::string Affected() const { return PQcmdTuples(r_); }

 private:
  PGresult* r_;
};

// Runs `sql` and throws StoreError unless it succeeded.
Result Run(PGconn* c, const std::string& sql, const std::vector<Param>& params = {},
           bool binary_result = false) {
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
  for (const auto& p : params) {
    values.push_back(p.value.data());
    lengths.push_back(static_cast<int>(p.value.size()));
    formats.push_back(p.binary ? 1 : 0);
  }
  PGresult* res =
      PQexecParams(c, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(),
                   lengths.data(), formats.data(), binary_result ? 1 : 0);
  const ExecStatusType st = PQresultStatus(res);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
    std::string msg =
        res != nullptr ? Trimmed(PQresultErrorMessage(res)) : Trimmed(PQerrorMessage(c));
    PQclear(res);
    if (msg.empty()) msg = "query failed";
    throw StoreError("postgresql: " + msg);
  }
  return Result(res);
}

Param Text(std::string v) { return Param{std::move(v), false}; }
Param Int(std::int64_t v) { return Param{std::to_string(v), false}; }

std::string FormatDouble(double v) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  (void)ec;
  return std::string(buf, p);
}

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Delivery ReadDelivery(const Result& r, int i) {
  Delivery d;
  d.seq = r.Int(i, 0);
  d.id = r.Text(i, 1);
  d.source = r.Text(i, 2);
  d.model = r.Text(i, 3);
  d.revision = r.Text(i, 4);
  d.event = r.Text(i, 5);
  d.request = r.Text(i, 6);
  d.state = r.Text(i, 7);
  d.outcome = r.Text(i, 8);
  d.error = r.Text(i, 9);
  d.attempts = static_cast<std::uint32_t>(std::clamp<std::int64_t>(r.Int(i, 10), 0, 1 << 30));
  d.next_attempt_ms = r.Int(i, 11);
  d.owner = r.Text(i, 12);
  d.request_id = r.Text(i, 13);
  d.sha256 = r.Text(i, 14);
  d.cache_key = r.Text(i, 15);
  d.write_back = r.Text(i, 16);
  d.created_ms = r.Int(i, 17);
  d.updated_ms = r.Int(i, 18);
  return d;
}

std::string MakeReplicaId() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::random_device rd;
  const std::uint32_t r = rd();
  static constexpr char kHex[] = "0123456789abcdef";
  std::string suffix;
  for (int i = 7; i >= 0; --i) suffix.push_back(kHex[(r >> (4 * i)) & 0xf]);
  return std::string(host[0] != '\0' ? host : "axqc") + ":" + std::to_string(::getpid()) + ":" +
         suffix;
}

void Finish(pg_conn* c) {
  if (c != nullptr) PQfinish(c);
}

}  // namespace

std::string RedactConnectionString(const std::string& location) {
  const auto scheme = location.find("://");
  if (scheme != std::string::npos) {
    std::string out = location;
    const std::size_t start = scheme + 3;
    std::size_t end = out.find_first_of("/?", start);
    if (end == std::string::npos) end = out.size();
    const std::size_t at = out.rfind('@', end);
    if (at != std::string::npos && at >= start) {
      const std::size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.erase(colon, at - colon);
    }
    static const std::regex kQueryPassword(R"(([?&])password=[^&]*&?)");
    out = std::regex_replace(out, kQueryPassword, "$1");
    if (!out.empty() && (out.back() == '&' || out.back() == '?')) out.pop_back();
    return out;
  }
  static const std::regex kPassword(R"(\s*password\s*=\s*('([^'\\]|\\.)*'|\S*))");
  return std::regex_replace(location, kPassword, "");
}

int PgStore::SchemaVersion() { return static_cast<int>(std::size(kMigrations)); }

PgStore::PgStore(const std::string& location, const StoreOptions& options)
    : dsn_(location),
      described_(RedactConnectionString(location)),
      options_(options),
      replica_id_(MakeReplicaId()),
      poll_interval_(std::clamp(
          std::chrono::milliseconds(static_cast<std::int64_t>(options.claim_lease_seconds * 125)),
          std::chrono::milliseconds(50), std::chrono::milliseconds(500))) {
  if (options_.pool_size == 0) throw StoreError("postgresql: the pool needs at least 1 connection");
  Migrate();
  heartbeat_ = std::thread([this] { Heartbeat(); });
}

PgStore::~PgStore() {
  std::set<std::string> held;
  {
    std::lock_guard<std::mutex> lock(claims_mu_);
    stopping_ = true;
    held = held_;
  }
  heartbeat_cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  for (const auto& key : held) ReleaseClaim(key);
  std::lock_guard<std::mutex> lock(pool_mu_);
  idle_.clear();
}

PgStore::ConnPtr PgStore::Connect() {
  const std::string connect_timeout =
      std::to_string(std::max(2, static_cast<int>(std::ceil(options_.connect_timeout_seconds))));
  const std::string statement_timeout =
      "-c statement_timeout=" +
      std::to_string(static_cast<std::int64_t>(options_.statement_timeout_seconds * 1000));
  const std::string user_timeout =
      std::to_string(static_cast<std::int64_t>(options_.statement_timeout_seconds * 1000));
  // Defaults first: the location (expanded from "dbname") overrides any of them.
  const char* keys[] = {"connect_timeout", "application_name", "options", "keepalives",
                        "keepalives_idle", "tcp_user_timeout", "dbname",  nullptr};
  const char* values[] = {connect_timeout.c_str(),
                          "axqc-server",
                          statement_timeout.c_str(),
                          "1",
                          "30",
                          user_timeout.c_str(),
                          dsn_.c_str(),
                          nullptr};
  ConnPtr c(PQconnectdbParams(keys, values, 1), Finish);
  if (c == nullptr) throw StoreError("postgresql: out of memory");
  if (PQstatus(c.get()) != CONNECTION_OK) {
    throw StoreError("postgresql: cannot connect to " + described_ + ": " +
                     Trimmed(PQerrorMessage(c.get())));
  }
  // Notices (e.g. "relation already exists, skipping") are not for the server's log.
  PQsetNoticeProcessor(
      c.get(), [](void*, const char*) {}, nullptr);
  return c;
}

PgStore::ConnPtr PgStore::Acquire() {
  std::unique_lock<std::mutex> lock(pool_mu_);
  const auto wait = std::chrono::duration<double>(options_.statement_timeout_seconds);
  if (!pool_cv_.wait_for(lock, wait,
                         [&] { return !idle_.empty() || open_ < options_.pool_size; })) {
    throw StoreError("postgresql: all " + std::to_string(options_.pool_size) +
                     " connections stayed busy for " +
                     FormatDouble(options_.statement_timeout_seconds) + " s");
  }
  if (!idle_.empty()) {
    ConnPtr c = std::move(idle_.back());
    idle_.pop_back();
    return c;
  }
  ++open_;
  lock.unlock();
  try {
    return Connect();
  } catch (...) {
    lock.lock();
    --open_;
    pool_cv_.notify_one();
    throw;
  }
}

void PgStore::Release(ConnPtr conn, bool broken) {
  if (!broken && PQtransactionStatus(conn.get()) != PQTRANS_IDLE) {
    PGresult* r = PQexec(conn.get(), "ROLLBACK");
    PQclear(r);
    broken =
        PQstatus(conn.get()) != CONNECTION_OK || PQtransactionStatus(conn.get()) != PQTRANS_IDLE;
  }
  std::vector<ConnPtr> closing;
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (broken) {
      // The database probably restarted: the idle connections are as dead as this one.
      closing = std::move(idle_);
      idle_.clear();
      open_ -= static_cast<unsigned>(closing.size()) + 1;
      closing.push_back(std::move(conn));
    } else {
      idle_.push_back(std::move(conn));
    }
  }
  pool_cv_.notify_all();
}

template <typename F>
auto PgStore::With(F&& f) {
  for (int attempt = 0;; ++attempt) {
    ConnPtr c = Acquire();
    try {
      auto result = f(c.get());
      Release(std::move(c), false);
      return result;
    } catch (const StoreError&) {
      const bool broken = PQstatus(c.get()) != CONNECTION_OK;
      Release(std::move(c), broken);
      if (!broken || attempt > 0) throw;
    } catch (...) {
      Release(std::move(c), true);
      throw;
    }
  }
}

void PgStore::Migrate() {
  With([&](PGconn* c) {
    Run(c, "BEGIN");
    // Replicas starting together queue here; each migration runs once.
    Run(c, "SELECT pg_advisory_xact_lock(" + std::to_string(kMigrationLock) + ")");
    Run(c,
        "CREATE TABLE IF NOT EXISTS axqc_schema_version (version integer PRIMARY KEY, "
        "applied_at timestamptz NOT NULL DEFAULT now())");
    const Result v = Run(c, "SELECT COALESCE(MAX(version), 0) FROM axqc_schema_version");
    const int current = static_cast<int>(v.Int(0, 0));
    if (current > SchemaVersion()) {
      throw StoreError("postgresql: " + described_ + " has schema version " +
                       std::to_string(current) + ", newer than this server's " +
                       std::to_string(SchemaVersion()));
    }
    for (int next = current + 1; next <= SchemaVersion(); ++next) {
      PGresult* r = PQexec(c, kMigrations[next - 1]);
      const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
      const std::string msg = Trimmed(PQresultErrorMessage(r));
      PQclear(r);
      if (!ok) {
        throw StoreError("postgresql: migration to schema version " + std::to_string(next) +
                         " failed: " + msg);
      }
      Run(c, "INSERT INTO axqc_schema_version (version) VALUES ($1)", {Int(next)});
    }
    Run(c, "COMMIT");
    return true;
  });
}

std::optional<std::string> PgStore::GetReport(const std::string& cache_key) {
  return With([&](PGconn* c) -> std::optional<std::string> {
    const Result r =
        Run(c, "SELECT report FROM axqc_reports WHERE cache_key = $1", {Text(cache_key)}, true);
    if (r.rows() == 0) return std::nullopt;
    return r.Text(0, 0);
  });
}

void PgStore::PutReport(const StoredReport& rep) {
  With([&](PGconn* c) {
    Run(c,
        "INSERT INTO axqc_reports (cache_key, sha256, options, rule_set_version, verdict, report, "
        "created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (cache_key) DO UPDATE SET "
        "sha256 = EXCLUDED.sha256, options = EXCLUDED.options, rule_set_version = "
        "EXCLUDED.rule_set_version, verdict = EXCLUDED.verdict, report = EXCLUDED.report, "
        "created_ms = EXCLUDED.created_ms",
        {Text(rep.cache_key), Text(rep.sha256), Text(rep.options), Text(rep.rule_set_version),
         Text(rep.verdict), Param{rep.report, true}, Int(NowMs())});
    return true;
  });
}

void PgStore::AppendHistory(const HistoryRow& row) {
  With([&](PGconn* c) {
    Run(c, "BEGIN");
    const Result id = Run(
        c,
        "INSERT INTO axqc_history (ts_ms, request_id, replica, method, source, sha256, verdict, "
        "cache, errors, warnings, duration_ms, name, options) VALUES ($1, $2, $3, $4, $5, $6, $7, "
        "$8, $9, $10, $11, $12, $13) RETURNING id",
        {Int(row.time_ms), Text(row.request_id), Text(replica_id_), Text(row.method),
         Text(row.source), Text(row.sha256), Text(row.verdict), Text(row.cache),
         Int(static_cast<std::int64_t>(row.errors)), Int(static_cast<std::int64_t>(row.warnings)),
         Text(FormatDouble(row.duration_ms)), Text(row.name), Text(row.options)});
    const std::string history_id = id.Text(0, 0);
    for (const auto& [k, v] : row.labels) {
      Run(c, "INSERT INTO axqc_history_labels (history_id, key, value) VALUES ($1, $2, $3)",
          {Text(history_id), Text(k), Text(v)});
    }
    for (const auto& t : row.rules) {
      Run(c,
          "INSERT INTO axqc_history_rules (history_id, rule, severity, count) VALUES ($1, $2, $3, "
          "$4) ON CONFLICT (history_id, rule, severity) DO UPDATE SET count = "
          "axqc_history_rules.count + EXCLUDED.count",
          {Text(history_id), Text(t.rule), Text(t.severity),
           Int(static_cast<std::int64_t>(t.count))});
    }
    Run(c, "COMMIT");
    return true;
  });
}

bool PgStore::RecordGate(const std::string& request_id, const std::string& sha256,
                         const GateRecord& g) {
  return With([&](PGconn* c) {
    const Result r = Run(
        c,
        "UPDATE axqc_history SET gate = $3, counted_errors = $4, counted_warnings = $5, "
        "waived_errors = $6, waived_warnings = $7, baselined_errors = $8, baselined_warnings = $9 "
        "WHERE id = (SELECT id FROM axqc_history WHERE request_id = $1 AND sha256 = $2 AND gate "
        "IS NULL ORDER BY id DESC LIMIT 1)",
        {Text(request_id), Text(sha256), Text(g.passed ? "pass" : "fail"),
         Int(static_cast<std::int64_t>(g.counted_errors)),
         Int(static_cast<std::int64_t>(g.counted_warnings)),
         Int(static_cast<std::int64_t>(g.waived_errors)),
         Int(static_cast<std::int64_t>(g.waived_warnings)),
         Int(static_cast<std::int64_t>(g.baselined_errors)),
         Int(static_cast<std::int64_t>(g.baselined_warnings))});
    return r.Affected() == "1";
  });
}

namespace {

// Narrows `where` to the history rows carrying every label of `labels`; the keys and values are
// appended to `params` as the next parameters.
void AddLabelFilter(const std::map<std::string, std::string>& labels, std::string& where,
                    std::vector<Param>& params) {
  for (const auto& [k, v] : labels) {
    const std::size_t n = params.size();
    where +=
        " AND EXISTS (SELECT 1 FROM axqc_history_labels f WHERE f.history_id = h.id AND "
        "f.key = $" +
        std::to_string(n + 1) + " AND f.value = $" + std::to_string(n + 2) + ")";
    params.push_back(Text(k));
    params.push_back(Text(v));
  }
}

}  // namespace

StatsResult PgStore::QueryStats(const StatsQuery& q) {
  // The same three queries as the SQLite store; text is compared byte-wise (COLLATE "C") so that
  // groups and ties sort as there.
  std::string where = "h.ts_ms >= $1 AND h.ts_ms < $2";
  std::vector<Param> common = {Int(q.since_ms.value_or(std::numeric_limits<std::int64_t>::min())),
                               Int(q.until_ms)};
  AddLabelFilter(q.label_filter, where, common);
  const std::string next = "$" + std::to_string(common.size() + 1);
  return With([&](PGconn* c) {
    StatsResult out;
    // One snapshot for the three queries.
    Run(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    {
      const Result r = Run(c,
                           "SELECT h.verdict, COUNT(*), " + std::string(kGateColumns) +
                               " FROM axqc_history h WHERE " + where + " GROUP BY h.verdict",
                           common);
      for (int i = 0; i < r.rows(); ++i) {
        out.total.Add(r.Text(i, 0), r.Count(i, 1));
        out.total.AddGate(r.Count(i, 2), r.Count(i, 3), r.Count(i, 4), r.Count(i, 5));
      }
    }
    if (!q.group_by.empty()) {
      auto params = common;
      params.push_back(Text(q.group_by));
      const Result r = Run(c,
                           "SELECT COALESCE(g.value, '') COLLATE \"C\", h.verdict, COUNT(*), " +
                               std::string(kGateColumns) +
                               " FROM axqc_history h LEFT JOIN axqc_history_labels g ON "
                               "g.history_id = h.id AND g.key = " +
                               next + " WHERE " + where + " GROUP BY 1, 2 ORDER BY 1",
                           params);
      for (int i = 0; i < r.rows(); ++i) {
        const std::string value = r.Text(i, 0);
        if (out.groups.empty() || out.groups.back().first != value) {
          out.groups.emplace_back(value, VerdictTally{});
        }
        out.groups.back().second.Add(r.Text(i, 1), r.Count(i, 2));
        out.groups.back().second.AddGate(r.Count(i, 3), r.Count(i, 4), r.Count(i, 5),
                                         r.Count(i, 6));
      }
    }
    if (q.top_rules > 0) {
      auto params = common;
      params.push_back(Int(q.top_rules));
      const Result r = Run(c,
                           "SELECT r.rule COLLATE \"C\", COUNT(*), SUM(r.count), COUNT(DISTINCT "
                           "h.sha256) FROM axqc_history_rules r JOIN axqc_history h ON h.id = "
                           "r.history_id WHERE r.severity = 'error' AND " +
                               where + " GROUP BY 1 ORDER BY 2 DESC, 3 DESC, 1 ASC LIMIT " + next,
                           params);
      for (int i = 0; i < r.rows(); ++i) {
        out.top_failing_rules.push_back(
            RuleStat{r.Text(i, 0), r.Count(i, 1), r.Count(i, 2), r.Count(i, 3)});
      }
    }
    if (q.step_ms > 0) {
      auto params = common;
      params.push_back(Int(q.step_ms));
      const Result r = Run(c,
                           "SELECT h.ts_ms - (h.ts_ms % " + next +
                               "::bigint), h.verdict, COUNT(*), " + std::string(kGateColumns) +
                               " FROM axqc_history h WHERE " + where + " GROUP BY 1, 2 ORDER BY 1",
                           params);
      for (int i = 0; i < r.rows(); ++i) {
        const std::int64_t start = r.Int(i, 0);
        if (out.series.empty() || out.series.back().first != start) {
          out.series.emplace_back(start, VerdictTally{});
        }
        out.series.back().second.Add(r.Text(i, 1), r.Count(i, 2));
        out.series.back().second.AddGate(r.Count(i, 3), r.Count(i, 4), r.Count(i, 5),
                                         r.Count(i, 6));
      }
    }
    Run(c, "COMMIT");
    return out;
  });
}

std::vector<ModelRow> PgStore::LatestModels(const ModelsQuery& q) {
  std::string where = "h.sha256 <> '' AND h.ts_ms >= $1";
  std::vector<Param> params = {Int(q.since_ms.value_or(std::numeric_limits<std::int64_t>::min()))};
  AddLabelFilter(q.label_filter, where, params);
  params.push_back(Int(q.limit));
  const std::string limit = "$" + std::to_string(params.size());
  return With([&](PGconn* c) {
    std::vector<ModelRow> out;
    Run(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    std::vector<std::string> ids;
    {
      const Result r = Run(c,
                           "SELECT id, sha256, name, verdict, ts_ms, errors, warnings, request_id "
                           "FROM (SELECT DISTINCT ON (h.sha256) h.* FROM axqc_history h WHERE " +
                               where +
                               " ORDER BY h.sha256, h.id DESC) latest ORDER BY ts_ms DESC, id "
                               "DESC LIMIT " +
                               limit,
                           params);
      for (int i = 0; i < r.rows(); ++i) {
        ids.push_back(r.Text(i, 0));
        ModelRow row;
        row.sha256 = r.Text(i, 1);
        row.name = r.Text(i, 2);
        row.verdict = r.Text(i, 3);
        row.time_ms = r.Int(i, 4);
        row.errors = r.Count(i, 5);
        row.warnings = r.Count(i, 6);
        row.request_id = r.Text(i, 7);
        out.push_back(std::move(row));
      }
    }
    for (std::size_t n = 0; n < ids.size(); ++n) {
      const Result r = Run(c, "SELECT key, value FROM axqc_history_labels WHERE history_id = $1",
                           {Text(ids[n])});
      for (int i = 0; i < r.rows(); ++i) out[n].labels[r.Text(i, 0)] = r.Text(i, 1);
    }
    Run(c, "COMMIT");
    return out;
  });
}

ChecksPage PgStore::ListChecks(const ChecksQuery& q) {
  // $1 verdict, $2 source, $3 sha256, $4 search ('' = any), then the label pairs. lower() under
  // the "C" collation folds ASCII letters only, as SQLite's does.
  std::string where =
      "($1 = '' OR h.verdict = $1) AND ($2 = '' OR h.source = $2) AND ($3 = '' OR h.sha256 = $3) "
      "AND ($4 = '' OR strpos(lower(h.name COLLATE \"C\"), lower($4 COLLATE \"C\")) > 0)";
  std::vector<Param> params = {Text(q.verdict), Text(q.source), Text(q.sha256), Text(q.search)};
  AddLabelFilter(q.label_filter, where, params);
  std::vector<Param> page = params;
  page.push_back(Int(q.limit));
  page.push_back(Int(static_cast<std::int64_t>(
      std::min<std::uint64_t>(q.offset, std::numeric_limits<std::int64_t>::max()))));
  const std::string limit = "$" + std::to_string(page.size() - 1);
  const std::string offset = "$" + std::to_string(page.size());
  return With([&](PGconn* c) {
    ChecksPage out;
    Run(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    {
      const Result r = Run(c, "SELECT COUNT(*) FROM axqc_history h WHERE " + where, params);
      out.total = r.Count(0, 0);
    }
    {
      const Result r = Run(c,
                           "SELECT h.id, h.ts_ms, h.request_id, h.method, h.name, h.source, "
                           "h.sha256, h.verdict, h.cache, h.errors, h.warnings, h.options FROM "
                           "axqc_history h WHERE " +
                               where + " ORDER BY h.id DESC LIMIT " + limit + " OFFSET " + offset,
                           page);
      for (int i = 0; i < r.rows(); ++i) {
        CheckRow row;
        row.id = r.Int(i, 0);
        row.time_ms = r.Int(i, 1);
        row.request_id = r.Text(i, 2);
        row.method = r.Text(i, 3);
        row.name = r.Text(i, 4);
        row.source = r.Text(i, 5);
        row.sha256 = r.Text(i, 6);
        row.verdict = r.Text(i, 7);
        row.cache = r.Text(i, 8);
        row.errors = r.Count(i, 9);
        row.warnings = r.Count(i, 10);
        row.options = r.Text(i, 11);
        out.checks.push_back(std::move(row));
      }
    }
    for (auto& row : out.checks) {
      const Result r =
          Run(c, "SELECT key, value FROM axqc_history_labels WHERE history_id = $1", {Int(row.id)});
      for (int i = 0; i < r.rows(); ++i) row.labels[r.Text(i, 0)] = r.Text(i, 1);
    }
    Run(c, "COMMIT");
    return out;
  });
}

std::vector<ReportInfo> PgStore::ListReports(const std::string& sha256, std::uint32_t limit) {
  return With([&](PGconn* c) {
    const Result r = Run(c,
                         "SELECT cache_key, options, rule_set_version, verdict, created_ms FROM "
                         "axqc_reports WHERE sha256 = $1 ORDER BY created_ms DESC, cache_key "
                         "COLLATE \"C\" LIMIT $2",
                         {Text(sha256), Int(limit)});
    std::vector<ReportInfo> out;
    for (int i = 0; i < r.rows(); ++i) {
      out.push_back(
          ReportInfo{r.Text(i, 0), r.Text(i, 1), r.Text(i, 2), r.Text(i, 3), r.Int(i, 4)});
    }
    return out;
  });
}

std::optional<Delivery> PgStore::AddDelivery(const Delivery& d, bool dedup_model,
                                             std::int64_t dedup_since_ms) {
  return With([&](PGconn* c) -> std::optional<Delivery> {
    Run(c, "BEGIN");
    // Replicas receiving the same delivery at once: one records it, the others see it.
    Run(c, "SELECT pg_advisory_xact_lock(" + std::to_string(kDeliveryLock) + ")");
    const Result r = Run(c,
                         std::string("SELECT ") + kDeliveryColumns +
                             " FROM axqc_deliveries WHERE id = $1 OR ($2 AND source = $3 AND "
                             "model = $4 AND revision = $5 AND created_ms >= $6) ORDER BY seq "
                             "LIMIT 1",
                         {Text(d.id), Text(dedup_model ? "true" : "false"), Text(d.source),
                          Text(d.model), Text(d.revision), Int(dedup_since_ms)});
    if (r.rows() > 0) {
      Delivery existing = ReadDelivery(r, 0);
      Run(c, "COMMIT");
      return existing;
    }
    Run(c,
        "INSERT INTO axqc_deliveries (id, source, model, revision, event, request, state, "
        "outcome, error, attempts, next_attempt_ms, owner, request_id, sha256, cache_key, "
        "write_back, created_ms, updated_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, "
        "$12, $13, $14, $15, $16, $17, $18)",
        {Text(d.id), Text(d.source), Text(d.model), Text(d.revision), Text(d.event),
         Text(d.request), Text(d.state), Text(d.outcome), Text(d.error),
         Int(static_cast<std::int64_t>(d.attempts)), Int(d.next_attempt_ms), Text(d.owner),
         Text(d.request_id), Text(d.sha256), Text(d.cache_key), Text(d.write_back),
         Int(d.created_ms), Int(d.updated_ms)});
    Run(c, "COMMIT");
    return std::nullopt;
  });
}

void PgStore::UpdateDelivery(const Delivery& d) {
  With([&](PGconn* c) {
    Run(c,
        "UPDATE axqc_deliveries SET state = $2, outcome = $3, error = $4, attempts = $5, "
        "next_attempt_ms = $6, owner = $7, sha256 = $8, cache_key = $9, write_back = $10, "
        "updated_ms = $11 WHERE id = $1",
        {Text(d.id), Text(d.state), Text(d.outcome), Text(d.error),
         Int(static_cast<std::int64_t>(d.attempts)), Int(d.next_attempt_ms), Text(d.owner),
         Text(d.sha256), Text(d.cache_key), Text(d.write_back), Int(d.updated_ms)});
    return true;
  });
}

std::optional<Delivery> PgStore::GetDelivery(const std::string& id) {
  return With([&](PGconn* c) -> std::optional<Delivery> {
    const Result r =
        Run(c, std::string("SELECT ") + kDeliveryColumns + " FROM axqc_deliveries WHERE id = $1",
            {Text(id)});
    if (r.rows() == 0) return std::nullopt;
    return ReadDelivery(r, 0);
  });
}

std::vector<Delivery> PgStore::DueDeliveries(std::int64_t now_ms, std::uint32_t limit) {
  return With([&](PGconn* c) {
    const Result r = Run(c,
                         std::string("SELECT ") + kDeliveryColumns +
                             " FROM axqc_deliveries WHERE state IN ('pending', 'checking', "
                             "'writing_back') AND next_attempt_ms <= $1 ORDER BY next_attempt_ms, "
                             "seq LIMIT $2",
                         {Int(now_ms), Int(limit)});
    std::vector<Delivery> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back(ReadDelivery(r, i));
    return out;
  });
}

bool PgStore::ClaimDelivery(const std::string& id, const std::string& owner,
                            std::int64_t expected_next_ms, std::int64_t lease_until_ms) {
  return With([&](PGconn* c) {
    const Result r =
        Run(c,
            "UPDATE axqc_deliveries SET owner = $2, next_attempt_ms = $4, attempts = attempts + "
            "1, updated_ms = $5 WHERE id = $1 AND next_attempt_ms = $3 AND state IN ('pending', "
            "'checking', 'writing_back')",
            {Text(id), Text(owner), Int(expected_next_ms), Int(lease_until_ms), Int(NowMs())});
    return r.Affected() == "1";
  });
}

std::vector<Delivery> PgStore::ListDeliveries(const DeliveriesQuery& q) {
  return With([&](PGconn* c) {
    const Result r =
        Run(c,
            std::string("SELECT ") + kDeliveryColumns +
                " FROM axqc_deliveries WHERE ($1 = '' OR source = $1) AND ($2 = '' "
                "OR outcome = $2) AND ($3 = '' OR state = $3) AND ($4 <= 0 OR seq < "
                "$4) ORDER BY seq DESC LIMIT $5",
            {Text(q.source), Text(q.outcome), Text(q.state), Int(q.before_seq), Int(q.limit)});
    std::vector<Delivery> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back(ReadDelivery(r, i));
    return out;
  });
}

bool PgStore::TryClaim(const std::string& cache_key) {
  const bool claimed = With([&](PGconn* c) {
    const Result r =
        Run(c,
            "INSERT INTO axqc_check_claims (cache_key, owner, expires_at, state) VALUES ($1, $2, "
            "now() + make_interval(secs => $3), 'check') ON CONFLICT (cache_key) DO UPDATE SET "
            "owner = EXCLUDED.owner, claimed_at = CASE WHEN axqc_check_claims.owner = "
            "EXCLUDED.owner THEN axqc_check_claims.claimed_at ELSE now() END, expires_at = "
            "EXCLUDED.expires_at, state = 'check' WHERE axqc_check_claims.owner = EXCLUDED.owner "
            "OR axqc_check_claims.expires_at < now() OR axqc_check_claims.state = 'upload' "
            "RETURNING 1",
            {Text(cache_key), Text(replica_id_), Text(FormatDouble(options_.claim_lease_seconds))});
    return r.rows() == 1;
  });
  if (claimed) {
    std::lock_guard<std::mutex> lock(claims_mu_);
    held_.insert(cache_key);
  }
  return claimed;
}

bool PgStore::ClaimedElsewhere(const std::string& cache_key) {
  return With([&](PGconn* c) {
    const Result r = Run(c,
                         "SELECT 1 FROM axqc_check_claims WHERE cache_key = $1 AND owner <> $2 AND "
                         "expires_at > now()",
                         {Text(cache_key), Text(replica_id_)});
    return r.rows() > 0;
  });
}

bool PgStore::TryReserve(const std::string& cache_key, double seconds) {
  return With([&](PGconn* c) {
    const Result r =
        Run(c,
            "INSERT INTO axqc_check_claims (cache_key, owner, expires_at, state) VALUES ($1, $2, "
            "now() + make_interval(secs => $3), 'upload') ON CONFLICT (cache_key) DO UPDATE SET "
            "owner = EXCLUDED.owner, claimed_at = now(), expires_at = EXCLUDED.expires_at, state "
            "= 'upload' WHERE axqc_check_claims.expires_at < now() OR (axqc_check_claims.owner = "
            "EXCLUDED.owner AND axqc_check_claims.state = 'upload') RETURNING 1",
            {Text(cache_key), Text(replica_id_), Text(FormatDouble(seconds))});
    return r.rows() == 1;
  });
}

void PgStore::ReleaseClaim(const std::string& cache_key) noexcept {
  {
    std::lock_guard<std::mutex> lock(claims_mu_);
    if (held_.erase(cache_key) == 0) return;
  }
  try {
    With([&](PGconn* c) {
      Run(c, "DELETE FROM axqc_check_claims WHERE cache_key = $1 AND owner = $2",
          {Text(cache_key), Text(replica_id_)});
      return true;
    });
  } catch (...) {
    // The claim expires with its lease.
  }
}

void PgStore::Heartbeat() {
  const auto period = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(options_.claim_lease_seconds / 3));
  std::unique_lock<std::mutex> lock(claims_mu_);
  while (!stopping_) {
    heartbeat_cv_.wait_for(lock, period, [&] { return stopping_; });
    if (stopping_) break;
    const std::set<std::string> held = held_;
    lock.unlock();
    for (const auto& key : held) {
      try {
        const bool renewed = With([&](PGconn* c) {
          const Result r =
              Run(c,
                  "UPDATE axqc_check_claims SET expires_at = now() + "
                  "make_interval(secs => $3) WHERE cache_key = $1 AND owner = $2",
                  {Text(key), Text(replica_id_), Text(FormatDouble(options_.claim_lease_seconds))});
          return r.Affected() == "1";
        });
        if (!renewed) {
          // Taken over (this server was too slow to renew): stop renewing it.
          std::lock_guard<std::mutex> relock(claims_mu_);
          held_.erase(key);
        }
      } catch (const StoreError&) {
        // Database unreachable: try again next period; the lease may run out meanwhile.
      }
    }
    // Claims of servers that died are taken over when the model is requested again; those of
    // models nobody asks for any more are deleted here after a while.
    try {
      With([&](PGconn* c) {
        Run(c, "DELETE FROM axqc_check_claims WHERE expires_at < now() - make_interval(secs => $1)",
            {Text(FormatDouble(std::max(600.0, 10 * options_.claim_lease_seconds)))});
        return true;
      });
    } catch (const StoreError&) {
    }
    lock.lock();
  }
}

}  // namespace axqc::server
