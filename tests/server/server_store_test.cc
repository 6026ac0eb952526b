// The report and history stores (server/store.h): SQLite, and the contract every backend keeps
// (SQLite always; PostgreSQL when AXQC_TEST_PG_DSN is set).
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "pg_store.h"
#include "report_cache.h"
#include "server_test_util.h"
#include "sqlite_store.h"

namespace axqc::test {
namespace {
// ------------------------------------------------------------------------------------------------
// SQLite store

server::HistoryRow Row(std::int64_t t, const std::string& verdict,
                       std::map<std::string, std::string> labels,
                       std::vector<server::RuleTally> rules = {}) {
  server::HistoryRow r;
  r.time_ms = t;
  r.request_id = "r" + std::to_string(t);
  r.method = "Check";
  r.source = "inline";
  r.sha256 = std::string(64, 'b');
  r.verdict = verdict;
  r.cache = "miss";
  r.labels = std::move(labels);
  r.rules = std::move(rules);
  return r;
}

TEST(SqliteStore, ReportsPersistAcrossReopen) {
  TempDir dir;
  const std::string path = (dir / "s.db").string();
  {
    server::SqliteStore s(path);
    EXPECT_FALSE(s.GetReport("k").has_value());
    s.PutReport({"k", "sha", "cv=0;ml=5", "v", "conformant", std::string("\0bytes", 6)});
    s.PutReport({"k", "sha", "cv=0;ml=5", "v", "conformant", std::string("\0newer", 6)});
    EXPECT_EQ(s.GetReport("k").value(), std::string("\0newer", 6));
    s.Flush();
  }
  server::SqliteStore again(path);
  EXPECT_EQ(again.GetReport("k").value(), std::string("\0newer", 6));
  EXPECT_EQ(again.Describe(), "sqlite:" + path);
}

// ------------------------------------------------------------------------------------------------
// Store contract: the same assertions against every backend. SQLite always; PostgreSQL when
// AXQC_TEST_PG_DSN names an empty database (tests/server/pg/replicas_test.sh provides one).

std::string PgDsn() {
  const char* dsn = std::getenv("AXQC_TEST_PG_DSN");
  return dsn != nullptr ? dsn : "";
}

class StoreContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgresql") {
      if (PgDsn().empty()) GTEST_SKIP() << "AXQC_TEST_PG_DSN is not set";
      // Every test starts from empty tables.
      server::StoreOptions o;
      o.claim_lease_seconds = 1;
      auto s = server::OpenStore(PgDsn(), o);
      PgExec(
          "TRUNCATE axqc_reports, axqc_history, axqc_history_labels, axqc_history_rules, "
          "axqc_check_claims, axqc_deliveries");
    }
  }
  std::unique_ptr<server::ReportStore> Open(double lease_seconds = 30) {
    server::StoreOptions o;
    o.claim_lease_seconds = lease_seconds;
    return server::OpenStore(GetParam() == "postgresql" ? PgDsn() : ":memory:", o);
  }
  static std::string PgExec(const std::string& sql) {
    PGconn* c = PQconnectdb(PgDsn().c_str());
    std::string out;
    if (PQstatus(c) == CONNECTION_OK) {
      PGresult* r = PQexec(c, sql.c_str());
      EXPECT_TRUE(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK)
          << PQresultErrorMessage(r);
      if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
      PQclear(r);
    } else {
      ADD_FAILURE() << PQerrorMessage(c);
    }
    PQfinish(c);
    return out;
  }
};

TEST_P(StoreContract, ReportsInsertReplaceAndKeepBinaryBytes) {
  auto s = Open();
  EXPECT_FALSE(s->GetReport("k").has_value());
  s->PutReport({"k", "sha", "cv=0;ml=5", "v", "conformant", std::string("\0bytes\xff", 7)});
  EXPECT_EQ(s->GetReport("k").value(), std::string("\0bytes\xff", 7));
  s->PutReport({"k", "sha", "cv=0;ml=5", "v", "conformant", std::string("\0newer", 6)});
  EXPECT_EQ(s->GetReport("k").value(), std::string("\0newer", 6));
  EXPECT_FALSE(s->GetReport("other").has_value());
  // A second connection (another replica, for PostgreSQL) sees the same report.
  auto again = Open();
  EXPECT_EQ(again->GetReport("k").value_or(""),
            GetParam() == "sqlite" ? std::string() : std::string("\0newer", 6));
  s->Flush();
}

TEST_P(StoreContract, StatsCountsGroupsFiltersAndTopRules) {
  auto store = Open();
  auto& s = *store;
  s.AppendHistory(Row(100, "conformant", {{"project", "a"}}));
  s.AppendHistory(Row(200, "non_conformant", {{"project", "a"}},
                      {{"r1", "error", 2}, {"r2", "error", 1}, {"w1", "warn", 5}}));
  s.AppendHistory(
      Row(300, "non_conformant", {{"project", "b"}, {"team", "t"}}, {{"r2", "error", 3}}));
  s.AppendHistory(Row(400, "invalid_input", {}));
  s.AppendHistory(Row(500, "not_applicable", {{"project", "b"}}));
  // Byte-wise order of groups and of ties between rules: "B" < "a", "Zr" < "ar".
  s.AppendHistory(Row(600, "non_conformant", {{"project", "B"}}, {{"ar", "error", 1}}));
  s.AppendHistory(Row(700, "non_conformant", {{"project", "B"}}, {{"Zr", "error", 1}}));
  s.AppendHistory(Row(2000, "conformant", {{"project", "a"}}));  // after `until`

  server::StatsQuery q;
  q.until_ms = 1000;
  q.group_by = "project";
  auto r = s.QueryStats(q);
  EXPECT_EQ(r.total.requests(), 7u);
  EXPECT_EQ(r.total.conformant, 1u);
  EXPECT_EQ(r.total.non_conformant, 4u);
  EXPECT_EQ(r.total.invalid_input, 1u);
  EXPECT_EQ(r.total.not_applicable, 1u);
  ASSERT_EQ(r.groups.size(), 4u);
  EXPECT_EQ(r.groups[0].first, "");
  EXPECT_EQ(r.groups[0].second.invalid_input, 1u);
  EXPECT_EQ(r.groups[1].first, "B");
  EXPECT_EQ(r.groups[1].second.non_conformant, 2u);
  EXPECT_EQ(r.groups[2].first, "a");
  EXPECT_EQ(r.groups[2].second.requests(), 2u);
  EXPECT_EQ(r.groups[2].second.conformant, 1u);
  EXPECT_EQ(r.groups[3].first, "b");
  EXPECT_EQ(r.groups[3].second.non_conformant, 1u);
  EXPECT_EQ(r.groups[3].second.not_applicable, 1u);
  ASSERT_EQ(r.top_failing_rules.size(), 4u);  // warn rules are not failing rules
  EXPECT_EQ(r.top_failing_rules[0].rule, "r2");
  EXPECT_EQ(r.top_failing_rules[0].requests, 2u);
  EXPECT_EQ(r.top_failing_rules[0].findings, 4u);
  EXPECT_EQ(r.top_failing_rules[1].rule, "r1");
  EXPECT_EQ(r.top_failing_rules[1].requests, 1u);
  EXPECT_EQ(r.top_failing_rules[1].findings, 2u);
  EXPECT_EQ(r.top_failing_rules[2].rule, "Zr");
  EXPECT_EQ(r.top_failing_rules[3].rule, "ar");

  server::StatsQuery top1;
  top1.until_ms = 1000;
  top1.top_rules = 1;
  auto t = s.QueryStats(top1);
  ASSERT_EQ(t.top_failing_rules.size(), 1u);
  EXPECT_EQ(t.top_failing_rules[0].rule, "r2");
  EXPECT_TRUE(t.groups.empty());

  server::StatsQuery window;
  window.since_ms = 200;
  window.until_ms = 400;  // [200, 400)
  auto w = s.QueryStats(window);
  EXPECT_EQ(w.total.requests(), 2u);
  EXPECT_EQ(w.total.non_conformant, 2u);

  server::StatsQuery filtered;
  filtered.until_ms = 1000;
  filtered.label_filter = {{"project", "b"}, {"team", "t"}};
  auto f = s.QueryStats(filtered);
  EXPECT_EQ(f.total.requests(), 1u);
  ASSERT_EQ(f.top_failing_rules.size(), 1u);
  EXPECT_EQ(f.top_failing_rules[0].findings, 3u);

  server::StatsQuery all;
  all.until_ms = 3000;
  EXPECT_EQ(s.QueryStats(all).total.requests(), 8u);
}

TEST_P(StoreContract, StatsSeriesBucketsAndFailingModels) {
  auto store = Open();
  auto& s = *store;
  auto row = [](std::int64_t t, const std::string& verdict, char model,
                std::vector<server::RuleTally> rules = {}) {
    auto r = Row(t, verdict, {{"project", "a"}}, std::move(rules));
    r.sha256 = std::string(64, model);
    return r;
  };
  // Buckets of 1000 ms: [0,1000) two rows, [1000,2000) none, [2000,3000) two rows.
  s.AppendHistory(row(100, "conformant", 'a'));
  s.AppendHistory(row(999, "non_conformant", 'b', {{"r1", "error", 2}}));
  s.AppendHistory(row(2000, "non_conformant", 'b', {{"r1", "error", 2}}));
  s.AppendHistory(row(2500, "non_conformant", 'c', {{"r1", "error", 1}, {"r2", "error", 1}}));
  s.AppendHistory(Row(2600, "conformant", {{"project", "other"}}));  // filtered out

  server::StatsQuery q;
  q.until_ms = 3000;
  q.step_ms = 1000;
  q.label_filter = {{"project", "a"}};
  const auto r = s.QueryStats(q);
  ASSERT_EQ(r.series.size(), 2u);  // non-empty buckets only; the service fills the gaps
  EXPECT_EQ(r.series[0].first, 0);
  EXPECT_EQ(r.series[0].second.conformant, 1u);
  EXPECT_EQ(r.series[0].second.non_conformant, 1u);
  EXPECT_EQ(r.series[1].first, 2000);
  EXPECT_EQ(r.series[1].second.non_conformant, 2u);
  EXPECT_EQ(r.series[1].second.conformant, 0u);
  ASSERT_EQ(r.top_failing_rules.size(), 2u);
  EXPECT_EQ(r.top_failing_rules[0].rule, "r1");
  EXPECT_EQ(r.top_failing_rules[0].requests, 3u);
  EXPECT_EQ(r.top_failing_rules[0].findings, 5u);
  EXPECT_EQ(r.top_failing_rules[0].models, 2u);  // b twice, c once
  EXPECT_EQ(r.top_failing_rules[1].rule, "r2");
  EXPECT_EQ(r.top_failing_rules[1].models, 1u);
}

TEST_P(StoreContract, LatestModelsTakesTheNewestRowOfEachModel) {
  auto store = Open();
  auto& s = *store;
  auto row = [](std::int64_t t, const std::string& verdict, char model, const std::string& name,
                std::map<std::string, std::string> labels) {
    auto r = Row(t, verdict, std::move(labels));
    r.sha256 = std::string(64, model);
    r.name = name;
    r.errors = verdict == "non_conformant" ? 2 : 0;
    return r;
  };
  s.AppendHistory(row(100, "non_conformant", 'a', "a-v1.onnx", {{"project", "p"}}));
  s.AppendHistory(row(200, "conformant", 'b', "b.onnx", {{"project", "p"}, {"team", "t"}}));
  s.AppendHistory(row(300, "conformant", 'a', "a-again.onnx", {{"project", "p"}}));
  s.AppendHistory(row(400, "non_conformant", 'c', "c.onnx", {{"project", "q"}}));
  auto invalid = row(500, "invalid_input", 'x', "x", {{"project", "p"}});
  invalid.sha256.clear();  // no sha256: not a model
  s.AppendHistory(invalid);

  server::ModelsQuery q;
  q.label_filter = {{"project", "p"}};
  const auto m = s.LatestModels(q);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].sha256, std::string(64, 'a'));  // newest first
  EXPECT_EQ(m[0].verdict, "conformant");
  EXPECT_EQ(m[0].name, "a-again.onnx");
  EXPECT_EQ(m[0].time_ms, 300);
  EXPECT_EQ(m[0].request_id, "r300");
  EXPECT_EQ(m[0].labels, (std::map<std::string, std::string>{{"project", "p"}}));
  EXPECT_EQ(m[1].sha256, std::string(64, 'b'));
  EXPECT_EQ(m[1].labels.at("team"), "t");

  server::ModelsQuery all;
  all.limit = 2;
  const auto latest = s.LatestModels(all);
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest[0].sha256, std::string(64, 'c'));
  EXPECT_EQ(latest[0].errors, 2u);
  server::ModelsQuery since;
  since.since_ms = 250;
  EXPECT_EQ(s.LatestModels(since).size(), 2u);  // a (300) and c (400)
}

// One row per check (not per model), newest first, paged with a total, filtered by verdict,
// source, sha256 and labels, searched by a substring of the name; values that look like SQL are
// data.
TEST_P(StoreContract, ListChecksPagesFiltersAndSearches) {
  auto store = Open();
  auto& s = *store;
  auto row = [](std::int64_t t, const std::string& verdict, char model, const std::string& name,
                const std::string& source, const std::string& options,
                std::map<std::string, std::string> labels) {
    auto r = Row(t, verdict, std::move(labels));
    r.sha256 = std::string(64, model);
    r.name = name;
    r.source = source;
    r.options = options;
    r.errors = verdict == "non_conformant" ? 3 : 0;
    r.warnings = 1;
    return r;
  };
  s.AppendHistory(row(100, "non_conformant", 'a', "Detector-v1.onnx", "upload", "cv=1;ml=5",
                      {{"project", "det"}}));
  s.AppendHistory(row(200, "conformant", 'a', "org/detector", "webhook", "cv=1;ml=5",
                      {{"hf.repo", "org/detector"}}));
  s.AppendHistory(
      row(300, "conformant", 'b', "classifier.onnx", "upload", "cv=0;ml=5", {{"project", "cls"}}));
  s.AppendHistory(row(400, "invalid_input", 'c', "it's'; DROP TABLE history;--", "path", "", {}));
  s.AppendHistory(row(500, "non_conformant", 'b', "classifier-100%_done.onnx", "upload",
                      "cv=0;ml=5;t=ax650", {{"project", "cls"}}));

  server::ChecksQuery all;
  auto page = s.ListChecks(all);
  EXPECT_EQ(page.total, 5u);
  ASSERT_EQ(page.checks.size(), 5u);
  EXPECT_EQ(page.checks[0].time_ms, 500);  // newest first
  EXPECT_EQ(page.checks[0].options, "cv=0;ml=5;t=ax650");
  EXPECT_EQ(page.checks[0].labels.at("project"), "cls");
  EXPECT_EQ(page.checks[0].errors, 3u);
  EXPECT_EQ(page.checks[0].warnings, 1u);
  EXPECT_EQ(page.checks[0].request_id, "r500");
  EXPECT_EQ(page.checks[4].name, "Detector-v1.onnx");
  EXPECT_EQ(page.checks[4].source, "upload");
  EXPECT_EQ(page.checks[4].options, "cv=1;ml=5");
  // The same model under two names (CI upload, registry webhook): both rows.
  server::ChecksQuery of_a;
  of_a.sha256 = std::string(64, 'a');
  page = s.ListChecks(of_a);
  EXPECT_EQ(page.total, 2u);
  ASSERT_EQ(page.checks.size(), 2u);
  EXPECT_EQ(page.checks[0].name, "org/detector");
  EXPECT_EQ(page.checks[0].source, "webhook");
  EXPECT_EQ(page.checks[1].name, "Detector-v1.onnx");

  server::ChecksQuery paged;
  paged.limit = 2;
  paged.offset = 2;
  page = s.ListChecks(paged);
  EXPECT_EQ(page.total, 5u);
  ASSERT_EQ(page.checks.size(), 2u);
  EXPECT_EQ(page.checks[0].time_ms, 300);
  EXPECT_EQ(page.checks[1].time_ms, 200);
  paged.offset = 4;
  EXPECT_EQ(s.ListChecks(paged).checks.size(), 1u);
  paged.offset = 99;
  page = s.ListChecks(paged);
  EXPECT_TRUE(page.checks.empty());
  EXPECT_EQ(page.total, 5u);

  server::ChecksQuery q;
  q.search = "DETECTOR";  // case-insensitive substring
  EXPECT_EQ(s.ListChecks(q).total, 2u);
  q.search = "100%_";  // LIKE wildcards are plain text
  page = s.ListChecks(q);
  ASSERT_EQ(page.total, 1u);
  EXPECT_EQ(page.checks[0].time_ms, 500);
  q.search = "%";
  EXPECT_EQ(s.ListChecks(q).total, 1u);
  q.search = "'; DROP TABLE history;--";
  EXPECT_EQ(s.ListChecks(q).total, 1u);
  EXPECT_EQ(s.ListChecks(all).total, 5u);  // still there

  server::ChecksQuery f;
  f.verdict = "non_conformant";
  EXPECT_EQ(s.ListChecks(f).total, 2u);
  f.source = "upload";
  f.label_filter = {{"project", "cls"}};
  page = s.ListChecks(f);
  ASSERT_EQ(page.total, 1u);
  EXPECT_EQ(page.checks[0].time_ms, 500);
  f.label_filter = {{"project", "det"}};
  EXPECT_EQ(s.ListChecks(f).total, 1u);
  f.verdict = "conformant";
  EXPECT_EQ(s.ListChecks(f).total, 0u);
  server::ChecksQuery none;
  none.sha256 = std::string(64, 'f');
  EXPECT_EQ(s.ListChecks(none).total, 0u);
}

TEST_P(StoreContract, ListReportsGivesEveryReportOfAModel) {
  auto s = Open();
  const std::string a(64, 'a');
  s->PutReport({a + "|cv=0;ml=5|v1|r4", a, "cv=0;ml=5", "v1", "non_conformant", "x"});
  s->PutReport({a + "|cv=1;ml=5|v1|r4", a, "cv=1;ml=5", "v1", "conformant", "y"});
  s->PutReport({std::string(64, 'b') + "|cv=0;ml=5|v1|r4", std::string(64, 'b'), "cv=0;ml=5", "v1",
                "conformant", "z"});
  const auto reports = s->ListReports(a, 10);
  ASSERT_EQ(reports.size(), 2u);
  std::set<std::string> options;
  for (const auto& r : reports) {
    options.insert(r.options);
    EXPECT_EQ(r.rule_set_version, "v1");
    EXPECT_GT(r.created_ms, 0);
    EXPECT_EQ(r.cache_key, a + "|" + r.options + "|v1|r4");
    EXPECT_EQ(r.verdict, r.options == "cv=1;ml=5" ? "conformant" : "non_conformant");
  }
  EXPECT_EQ(options, (std::set<std::string>{"cv=0;ml=5", "cv=1;ml=5"}));
  EXPECT_EQ(s->ListReports(a, 1).size(), 1u);
  EXPECT_TRUE(s->ListReports(std::string(64, 'c'), 10).empty());
}

TEST_P(StoreContract, GateOutcomesGoToTheirHistoryRowOnce) {
  auto store = Open();
  auto& s = *store;
  server::HistoryRow a = Row(100, "non_conformant", {{"project", "a"}}, {{"r1", "error", 2}});
  server::HistoryRow b = Row(200, "non_conformant", {{"project", "b"}}, {{"r1", "error", 1}});
  s.AppendHistory(a);
  s.AppendHistory(b);
  s.AppendHistory(Row(300, "conformant", {{"project", "a"}}));
  server::GateRecord pass;
  pass.passed = true;
  pass.waived_errors = 1;
  pass.baselined_errors = 1;
  pass.baselined_warnings = 2;
  EXPECT_TRUE(s.RecordGate(a.request_id, a.sha256, pass));
  EXPECT_FALSE(s.RecordGate(a.request_id, a.sha256, pass));              // one outcome per row
  EXPECT_FALSE(s.RecordGate(b.request_id, std::string(64, 'c'), pass));  // another model
  EXPECT_FALSE(s.RecordGate("r-unknown", b.sha256, pass));
  server::GateRecord fail;
  fail.counted_errors = 1;
  fail.waived_warnings = 3;
  EXPECT_TRUE(s.RecordGate(b.request_id, b.sha256, fail));

  server::StatsQuery q;
  q.until_ms = 1000;
  q.group_by = "project";
  const auto r = s.QueryStats(q);
  EXPECT_EQ(r.total.requests(), 3u);
  EXPECT_EQ(r.total.non_conformant, 2u);
  EXPECT_EQ(r.total.gated, 2u);
  EXPECT_EQ(r.total.gate_passed, 1u);
  EXPECT_EQ(r.total.waived_findings, 4u);
  EXPECT_EQ(r.total.baselined_findings, 3u);
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].first, "a");
  EXPECT_EQ(r.groups[0].second.gated, 1u);
  EXPECT_EQ(r.groups[0].second.gate_passed, 1u);
  EXPECT_EQ(r.groups[0].second.baselined_findings, 3u);
  EXPECT_EQ(r.groups[1].first, "b");
  EXPECT_EQ(r.groups[1].second.gated, 1u);
  EXPECT_EQ(r.groups[1].second.gate_passed, 0u);
  EXPECT_EQ(r.groups[1].second.waived_findings, 3u);
  // The failing rules stay the checker's (the gate does not hide them from the statistics).
  ASSERT_EQ(r.top_failing_rules.size(), 1u);
  EXPECT_EQ(r.top_failing_rules[0].findings, 3u);
}

TEST_P(StoreContract, ClaimsGiveSingleFlightAcrossServers) {
  auto a = Open(1);
  auto b = Open(1);
  EXPECT_TRUE(a->TryClaim("k"));
  EXPECT_TRUE(a->TryClaim("k"));  // held already
  if (GetParam() == "sqlite") {
    EXPECT_TRUE(b->TryClaim("k"));  // a private store has nobody to share checks with
    return;
  }
  EXPECT_FALSE(b->TryClaim("k"));
  // The holder renews its claim (every lease / 3): still held after more than the lease.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_FALSE(b->TryClaim("k"));
  a->ReleaseClaim("k");
  EXPECT_TRUE(b->TryClaim("k"));
  EXPECT_FALSE(a->TryClaim("k"));
  // A claim nobody renews (its server died) expires after the lease and is taken over.
  PgExec("UPDATE axqc_check_claims SET owner = 'gone:1:0', expires_at = now() + interval '1 s'");
  EXPECT_FALSE(a->TryClaim("k"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  EXPECT_TRUE(a->TryClaim("k"));
  EXPECT_EQ(PgExec("SELECT count(*) FROM axqc_check_claims"), "1");
  a.reset();  // closing a store gives its claims up
  EXPECT_EQ(PgExec("SELECT count(*) FROM axqc_check_claims"), "0");
}

server::Delivery NewDelivery(const std::string& id, const std::string& model,
                             const std::string& revision, std::int64_t created_ms) {
  server::Delivery d;
  d.id = id;
  d.source = "huggingface";
  d.model = model;
  d.revision = revision;
  d.event = "repo.content.update";
  d.request = R"({"name":"x","labels":{},"url":"http://registry/m.onnx"})";
  d.state = "checking";
  d.attempts = 1;
  d.owner = "server-a";
  d.next_attempt_ms = created_ms + 600000;
  d.request_id = "req-" + id.substr(id.size() - 1);
  d.created_ms = created_ms;
  d.updated_ms = created_ms;
  return d;
}

// A delivery is recorded once: the same id, or the same model and revision within the window,
// is answered with the recorded one; outside the window (or without model deduplication) it is
// a new delivery.
TEST_P(StoreContract, DeliveriesAreRecordedOnceAndDeduplicated) {
  auto s = Open();
  EXPECT_FALSE(s->AddDelivery(NewDelivery("hf:a", "org/m", "rev1", 1000), true, 0).has_value());
  auto dup = s->AddDelivery(NewDelivery("hf:a", "org/other", "rev9", 2000), true, 0);
  ASSERT_TRUE(dup.has_value());
  EXPECT_EQ(dup->model, "org/m");
  EXPECT_EQ(dup->request_id, "req-a");
  EXPECT_EQ(dup->state, "checking");
  dup = s->AddDelivery(NewDelivery("hf:b", "org/m", "rev1", 2000), true, 500);
  ASSERT_TRUE(dup.has_value());
  EXPECT_EQ(dup->id, "hf:a");
  // Created before the window: not a duplicate; without model deduplication neither.
  EXPECT_FALSE(s->AddDelivery(NewDelivery("hf:c", "org/m", "rev1", 3000), true, 1001).has_value());
  EXPECT_FALSE(s->AddDelivery(NewDelivery("hf:d", "org/m", "rev1", 3000), false, 0).has_value());
  EXPECT_FALSE(s->AddDelivery(NewDelivery("hf:e", "org/m", "rev2", 3000), true, 0).has_value());
  const auto got = s->GetDelivery("hf:a");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->request, R"({"name":"x","labels":{},"url":"http://registry/m.onnx"})");
  EXPECT_EQ(got->attempts, 1u);
  EXPECT_EQ(got->owner, "server-a");
  EXPECT_GT(got->seq, 0);
  EXPECT_FALSE(s->GetDelivery("hf:zzz").has_value());
}

// The resume loop's view: due deliveries, a claim taken once (compare and set of
// next_attempt_ms), the fields an update writes, the listing with filters and paging.
TEST_P(StoreContract, DeliveriesAreClaimedUpdatedAndListed) {
  auto s = Open();
  for (const char* id : {"hf:1", "hf:2", "hf:3"}) {
    ASSERT_FALSE(
        s->AddDelivery(NewDelivery(id, std::string("m") + id, "r", 1000), true, 0).has_value());
  }
  auto d = s->GetDelivery("hf:2").value();
  d.state = "pending";
  d.owner = "";
  d.next_attempt_ms = 5000;
  d.error = "UNAVAILABLE: HTTP 503";
  d.updated_ms = 4000;
  s->UpdateDelivery(d);
  EXPECT_TRUE(s->DueDeliveries(4999, 10).empty());
  auto due = s->DueDeliveries(5000, 10);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].id, "hf:2");
  EXPECT_EQ(due[0].error, "UNAVAILABLE: HTTP 503");
  EXPECT_TRUE(s->ClaimDelivery("hf:2", "server-b", 5000, 9000));
  EXPECT_FALSE(s->ClaimDelivery("hf:2", "server-c", 5000, 9000));  // taken
  d = s->GetDelivery("hf:2").value();
  EXPECT_EQ(d.owner, "server-b");
  EXPECT_EQ(d.attempts, 2u);
  EXPECT_EQ(d.next_attempt_ms, 9000);
  d.state = "done";
  d.outcome = "conformant";
  d.sha256 = std::string(64, 'a');
  d.cache_key = "key";
  d.owner = "";
  d.next_attempt_ms = 0;
  s->UpdateDelivery(d);
  EXPECT_EQ(s->DueDeliveries(1LL << 50, 10).size(), 2u);        // hf:1, hf:3 (leases ran out)
  EXPECT_FALSE(s->ClaimDelivery("hf:2", "server-c", 0, 9000));  // finished
  d = s->GetDelivery("hf:2").value();
  EXPECT_EQ(d.outcome, "conformant");
  EXPECT_EQ(d.cache_key, "key");

  server::DeliveriesQuery q;
  auto all = s->ListDeliveries(q);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, "hf:3");  // newest first
  EXPECT_EQ(all[2].id, "hf:1");
  q.limit = 2;
  auto page = s->ListDeliveries(q);
  ASSERT_EQ(page.size(), 2u);
  q.before_seq = page.back().seq;
  page = s->ListDeliveries(q);
  ASSERT_EQ(page.size(), 1u);
  EXPECT_EQ(page[0].id, "hf:1");
  server::DeliveriesQuery f;
  f.outcome = "conformant";
  ASSERT_EQ(s->ListDeliveries(f).size(), 1u);
  f.outcome.clear();
  f.state = "checking";
  EXPECT_EQ(s->ListDeliveries(f).size(), 2u);
  f.source = "mlflow";
  EXPECT_TRUE(s->ListDeliveries(f).empty());
}

// After a restart a private store (SQLite) makes the deliveries of the previous process due at
// once; a shared one (PostgreSQL) leaves them to their lease (another replica may be alive).
TEST_P(StoreContract, RecoveredDeliveriesAreDueAfterARestart) {
  auto s = Open();
  ASSERT_FALSE(s->AddDelivery(NewDelivery("hf:1", "m", "r", 1000), true, 0).has_value());
  EXPECT_TRUE(s->DueDeliveries(2000, 10).empty());
  s->RecoverDeliveries(2000);
  auto due = s->DueDeliveries(2000, 10);
  if (GetParam() == "sqlite") {
    ASSERT_EQ(due.size(), 1u);
    EXPECT_EQ(due[0].owner, "");
    EXPECT_EQ(due[0].next_attempt_ms, 2000);
  } else {
    EXPECT_TRUE(due.empty());
  }
}

TEST_P(StoreContract, RefusesANewerSchema) {
  if (GetParam() == "sqlite") GTEST_SKIP() << "SqliteStore.RefusesANewerSchema";
  EXPECT_EQ(PgExec("SELECT max(version) FROM axqc_schema_version"),
            std::to_string(server::PgStore::SchemaVersion()));
  PgExec("INSERT INTO axqc_schema_version (version) VALUES (99)");
  try {
    Open();
    ADD_FAILURE() << "a schema newer than the server's was accepted";
  } catch (const server::StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99"), std::string::npos) << e.what();
  }
  PgExec("DELETE FROM axqc_schema_version WHERE version = 99");
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreContract, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& p) { return p.param; });

TEST(PgStore, UnreachableDatabaseFailsFastWithoutThePassword) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    server::OpenStore("postgresql://axqc:s3cret@127.0.0.1:1/axqc");
    ADD_FAILURE() << "no error";
  } catch (const server::StoreError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cannot connect to postgresql://axqc@127.0.0.1:1/axqc"), std::string::npos)
        << msg;
    EXPECT_EQ(msg.find("s3cret"), std::string::npos) << msg;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(PgStore, RedactsPasswords) {
  EXPECT_EQ(server::RedactConnectionString("postgresql://u:pw@h:5432/db?sslmode=require"),
            "postgresql://u@h:5432/db?sslmode=require");
  EXPECT_EQ(server::RedactConnectionString("postgres://u@h/db?password=pw&sslmode=disable"),
            "postgres://u@h/db?sslmode=disable");
  EXPECT_EQ(server::RedactConnectionString("postgresql://h/db?password=pw"), "postgresql://h/db");
  EXPECT_EQ(server::RedactConnectionString("host=h password='p w' dbname=d"), "host=h dbname=d");
  EXPECT_EQ(server::RedactConnectionString("/var/lib/axqc/s.sqlite3"), "/var/lib/axqc/s.sqlite3");
  EXPECT_TRUE(server::IsPostgresLocation("postgres://h/db"));
  EXPECT_TRUE(server::IsPostgresLocation("postgresql:///db?host=/tmp"));
  EXPECT_FALSE(server::IsPostgresLocation("sqlite:/x/postgresql://"));
}

// A store written by a server before the gate columns (schema version 1) is migrated in place:
// its reports and history stay, and gate outcomes can be recorded.
TEST(SqliteStore, MigratesAVersion1Store) {
  TempDir dir;
  const std::string path = (dir / "s.db").string();
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const char* v1 = R"sql(
CREATE TABLE reports (cache_key TEXT PRIMARY KEY, sha256 TEXT NOT NULL, options TEXT NOT NULL,
  rule_set_version TEXT NOT NULL, verdict TEXT NOT NULL, report BLOB NOT NULL,
  created_ms INTEGER NOT NULL);
CREATE TABLE history (id INTEGER PRIMARY KEY, ts_ms INTEGER NOT NULL, request_id TEXT NOT NULL,
  method TEXT NOT NULL, source TEXT NOT NULL, sha256 TEXT NOT NULL, verdict TEXT NOT NULL,
  cache TEXT NOT NULL, errors INTEGER NOT NULL, warnings INTEGER NOT NULL,
  duration_ms REAL NOT NULL);
CREATE TABLE history_labels (history_id INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY (history_id, key)) WITHOUT ROWID;
CREATE TABLE history_rules (history_id INTEGER NOT NULL, rule TEXT NOT NULL,
  severity TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (history_id, rule, severity))
  WITHOUT ROWID;
INSERT INTO reports VALUES ('k', 'sha', 'cv=0;ml=5', 'v', 'conformant', x'00ff', 1);
INSERT INTO history VALUES (1, 50, 'old-request', 'Check', 'path', 'bbbb', 'non_conformant',
  'miss', 1, 0, 2.5);
PRAGMA user_version=1;
)sql";
    ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  {
    server::SqliteStore s(path);
    EXPECT_EQ(s.GetReport("k").value(), std::string("\0\xff", 2));
    server::StatsQuery q;
    q.until_ms = 1000;
    const auto before = s.QueryStats(q);
    EXPECT_EQ(before.total.non_conformant, 1u);
    EXPECT_EQ(before.total.gated, 0u);
    server::GateRecord g;
    g.passed = true;
    g.waived_errors = 1;
    EXPECT_TRUE(s.RecordGate("old-request", "bbbb", g));
    EXPECT_EQ(s.QueryStats(q).total.gate_passed, 1u);
    // The deliveries table (schema version 4) exists.
    server::Delivery d;
    d.id = "mlflow:1";
    d.source = "mlflow";
    EXPECT_FALSE(s.AddDelivery(d, true, 0).has_value());
    EXPECT_EQ(s.ListDeliveries({}).size(), 1u);
    // The options of the checks (schema version 5): empty for the old row (the defaults).
    const auto checks = s.ListChecks({});
    ASSERT_EQ(checks.total, 1u);
    EXPECT_EQ(checks.checks.at(0).request_id, "old-request");
    EXPECT_EQ(checks.checks.at(0).options, "");
    auto row = Row(60, "conformant", {});
    row.options = "cv=1;ml=5";
    s.AppendHistory(row);
    EXPECT_EQ(s.ListChecks({}).checks.at(0).options, "cv=1;ml=5");
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), server::SqliteStore::kSchemaVersion);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST(SqliteStore, RefusesANewerSchema) {
  TempDir dir;
  const std::string path = (dir / "s.db").string();
  { server::SqliteStore s(path); }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  EXPECT_THROW(server::SqliteStore s(path), server::StoreError);
  EXPECT_THROW(server::OpenStore("mysql://db/axqc"), server::StoreError);
}

}  // namespace
}  // namespace axqc::test
