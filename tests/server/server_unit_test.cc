// Unit tests of the server's parts: report <-> protobuf, sha256, configuration, LRU, the stores
// (SQLite; PostgreSQL when AXQC_TEST_PG_DSN is set), URL parsing, path containment, check engine.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "axqc/render.h"
#include "axqc/sha256.h"
#include "axqc/wire/report_proto.h"
#include "axqc/wire/status_name.h"
#include "check_engine.h"
#include "config.h"
#include "failure_memory.h"
#include "lru_cache.h"
#include "memory.h"
#include "metrics.h"
#include "model_source.h"
#include "pg_store.h"
#include "report_cache.h"
#include "server_test_util.h"
#include "sqlite_store.h"
#include "url_fetch.h"

namespace axqc::test {
namespace {

// ------------------------------------------------------------------------------------------------
// report <-> proto

Report FullReport() {
  Report r;
  r.verdict = Verdict::kNonConformant;
  r.check_value = true;
  r.tool_version = "0.1.0";
  r.rule_set_version = std::string(kRuleSetVersion);
  r.model.file = "m.onnx";
  r.model.sha256 = std::string(64, 'a');
  r.model.size_bytes = 1234;
  r.model.ir_version = 10;
  r.model.opsets = {{"", 21}, {"com.microsoft", 1}};
  r.model.producer_name = "p";
  r.model.producer_version = "9";
  r.model.node_count = 7;
  r.model.q_count = 2;
  r.model.dq_count = 3;
  r.model.initializer_count = 4;
  Finding f;
  f.rule = "qdq/scale-value";
  f.severity = Severity::kError;
  f.section = "3.1";
  f.message = "scale of x_q is 0";
  f.group_key = "scale <= 0";
  f.op_type = "QuantizeLinear";
  f.nodes = {"x_q", "x_dq"};
  f.tensors = {"x_scale"};
  f.values = {{"scale[0]", "0"}, {"scale[1]", "-1"}};
  f.fingerprint = "0123456789abcdef";
  f.id = "0123456789abcdef:1";
  f.hint = {"qparams-as-numbers", "qparams given as Python numbers", "fold them",
            "constant-to-initializer"};
  Finding w = f;
  w.rule = "qdq/zero-point-value";
  w.severity = Severity::kWarn;
  w.id = "0123456789abcdef:2";
  w.cause = f.id;
  w.hint = {};
  Finding i = f;
  i.rule = "scope/no-quantized-edge";
  i.severity = Severity::kInfo;
  r.findings = {f, w, i};
  FindingGroup g;
  g.rule = f.rule;
  g.severity = f.severity;
  g.section = f.section;
  g.summary = f.group_key;
  g.count = 1;
  g.first = {f};
  r.groups = {g};
  r.summary.causes = 1;
  r.summary.errors = 1;
  r.summary.warnings = 1;
  r.summary.infos = 1;
  r.summary.by_rule = {{"qdq/scale-value", 1}, {"qdq/zero-point-value", 1}};
  r.summary.units_by_kind = {{"op", 3}, {"pattern:silu", 1}};
  r.summary.units_by_op = {{"Conv", 2}};
  r.summary.errors_by_op = {{"QuantizeLinear", 1}};
  r.summary.qdq_edges = 5;
  r.summary.owned_qdq_edges = 4;
  UnitInfo u;
  u.id = 3;
  u.kind = "pattern:silu";
  u.op_type = "Sigmoid";
  u.mode = "quantized";
  u.nodes = {"sig", "mul"};
  u.input_qdq = {"a_dq"};
  u.output_qdq = {"b_q"};
  r.units = {u};
  return r;
}

TEST(ReportProto, RoundTripIsLossless) {
  const Report r = FullReport();
  const v1::Report p = wire::ToProto(r);
  EXPECT_EQ(p.schema(), "axqc.report/v1");
  EXPECT_EQ(p.verdict(), v1::VERDICT_NON_CONFORMANT);
  EXPECT_EQ(p.findings_size(), 3);
  EXPECT_EQ(p.findings(1).severity(), v1::SEVERITY_WARN);
  EXPECT_EQ(p.findings(0).values(1).name(), "scale[1]");
  EXPECT_EQ(p.findings(0).values(1).value(), "-1");
  EXPECT_EQ(p.model().opsets(1).domain(), "com.microsoft");
  EXPECT_EQ(p.summary().units_by_kind().at("pattern:silu"), 1u);
  EXPECT_EQ(p.units(0).output_qdq(0), "b_q");
  const Report back = wire::FromProto(p);
  // The JSON rendering covers every field of the report.
  EXPECT_EQ(RenderJson(back), RenderJson(r));
  EXPECT_EQ(back.model.opsets, r.model.opsets);
  EXPECT_EQ(back.findings[0].values, r.findings[0].values);
  EXPECT_EQ(back.summary.errors_by_op, r.summary.errors_by_op);
  EXPECT_EQ(back.units[0].input_qdq, r.units[0].input_qdq);
  EXPECT_EQ(back.groups[0].first[0].nodes, r.groups[0].first[0].nodes);
  EXPECT_EQ(p.findings(0).fingerprint(), "0123456789abcdef");
  EXPECT_EQ(back.findings[0].fingerprint, "0123456789abcdef");
  // Root causes (docs/causes.md): id, cause link, hint and the summary's cause count.
  EXPECT_EQ(p.findings(1).cause(), "0123456789abcdef:1");
  EXPECT_EQ(p.findings(0).hint().rewrite(), "constant-to-initializer");
  EXPECT_FALSE(p.findings(1).has_hint());
  EXPECT_EQ(p.summary().causes(), 1u);
  EXPECT_EQ(back.findings[1].id, "0123456789abcdef:2");
  EXPECT_EQ(back.findings[1].cause, "0123456789abcdef:1");
  EXPECT_EQ(back.findings[0].hint.id, "qparams-as-numbers");
  EXPECT_EQ(back.findings[0].hint.title, "qparams given as Python numbers");
  EXPECT_EQ(back.summary.causes, 1u);
}

TEST(ReportProto, RealReportRoundTrip) {
  const std::string model = NonConformantModel();
  const Report r = DirectReport(model, "bad.onnx", true);
  EXPECT_EQ(RenderJson(wire::FromProto(wire::ToProto(r))), RenderJson(r));
}

TEST(ReportProto, UnspecifiedEnumsAreRejected) {
  v1::Report p;
  EXPECT_THROW(wire::FromProto(p), std::invalid_argument);
}

TEST(ReportProto, CacheKeyHasShaOptionsAndRuleSet) {
  v1::CheckOptions o;
  EXPECT_EQ(wire::OptionsKey(o), "cv=0;ml=5");
  o.set_check_value(true);
  o.set_max_locations(7);
  o.set_format(v1::REPORT_FORMAT_JSON);  // not part of the key
  EXPECT_EQ(wire::OptionsKey(o), "cv=1;ml=7");
  EXPECT_EQ(wire::CacheKey("abc", o),
            "abc|cv=1;ml=7|" + std::string(kRuleSetVersion) + "|" + wire::kReportRevision);
}

// An OptionsKey back to the query string of the report lookups (the links of ListChecks).
TEST(ReportProto, OptionsQueryOfKeyInvertsOptionsKey) {
  v1::CheckOptions o;
  EXPECT_EQ(wire::OptionsQueryOfKey(wire::OptionsKey(o)).value(), "");
  EXPECT_EQ(wire::OptionsQueryOfKey("").value(), "");  // rows before the options were
  o.set_check_value(true);
  EXPECT_EQ(wire::OptionsQueryOfKey(wire::OptionsKey(o)).value(), "check_value=true");
  o.set_max_locations(7);
  o.add_targets("ax650");
  const std::string key = wire::OptionsKey(o);
  EXPECT_EQ(wire::OptionsQueryOfKey(key).value(),
            "check_value=true&max_locations=7&target=" + wire::TargetsOfKey(key).at(0));
  EXPECT_EQ(wire::TargetsOfKey(key).size(), 1u);
  EXPECT_EQ(wire::CacheKeyOf("abc", key), wire::CacheKey("abc", o));
  o.set_pulsar2_config("{}");
  EXPECT_FALSE(wire::OptionsQueryOfKey(wire::OptionsKey(o)).has_value());
  // Anything OptionsKey does not write is no query.
  for (const char* bad : {"cv=2", "ml=x", "t=AX650", "t=a&b", "zz=1", "cv", "t=,", "=1"}) {
    EXPECT_FALSE(wire::OptionsQueryOfKey(bad).has_value()) << bad;
  }
  EXPECT_TRUE(wire::TargetsOfKey("cv=0;ml=5").empty());
}

// ------------------------------------------------------------------------------------------------
// sha256

// axqc/wire/status_name.h names the codes by number (no gRPC header): the numbers are gRPC's.
TEST(StatusName, NamesEveryGrpcCodeByItsNumber) {
  using grpc::StatusCode;
  const std::vector<std::pair<StatusCode, std::string>> codes = {
      {StatusCode::OK, "OK"},
      {StatusCode::CANCELLED, "CANCELLED"},
      {StatusCode::UNKNOWN, "UNKNOWN"},
      {StatusCode::INVALID_ARGUMENT, "INVALID_ARGUMENT"},
      {StatusCode::DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED"},
      {StatusCode::NOT_FOUND, "NOT_FOUND"},
      {StatusCode::ALREADY_EXISTS, "ALREADY_EXISTS"},
      {StatusCode::PERMISSION_DENIED, "PERMISSION_DENIED"},
      {StatusCode::UNAUTHENTICATED, "UNAUTHENTICATED"},
      {StatusCode::RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"},
      {StatusCode::FAILED_PRECONDITION, "FAILED_PRECONDITION"},
      {StatusCode::ABORTED, "ABORTED"},
      {StatusCode::OUT_OF_RANGE, "OUT_OF_RANGE"},
      {StatusCode::UNIMPLEMENTED, "UNIMPLEMENTED"},
      {StatusCode::INTERNAL, "INTERNAL"},
      {StatusCode::UNAVAILABLE, "UNAVAILABLE"},
      {StatusCode::DATA_LOSS, "DATA_LOSS"},
  };
  for (const auto& [code, name] : codes) {
    EXPECT_EQ(wire::StatusCodeName(code), name);
    EXPECT_EQ(wire::StatusCodeName(static_cast<int>(code)), name);
  }
  EXPECT_STREQ(wire::StatusCodeName(17), "UNKNOWN");
  EXPECT_STREQ(wire::StatusCodeName(-1), "UNKNOWN");
}

TEST(Sha256, KnownVectorsAndStreaming) {
  EXPECT_EQ(axqc::Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(axqc::Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  axqc::Sha256 h;
  h.Update("a");
  h.Update("");
  h.Update("bc");
  EXPECT_EQ(h.HexDigest(), axqc::Sha256Hex("abc"));
  EXPECT_THROW(h.Update("x"), std::logic_error);
  EXPECT_TRUE(axqc::IsSha256Hex(axqc::Sha256Hex("abc")));
  EXPECT_FALSE(axqc::IsSha256Hex(std::string(64, 'A')));
  EXPECT_FALSE(axqc::IsSha256Hex("abc"));
}

// ------------------------------------------------------------------------------------------------
// Configuration

server::EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Config, DefaultsWhenNothingIsGiven) {
  auto r = server::LoadConfig({"axqc-server"}, Env({}));
  ASSERT_FALSE(r.exit_code);
  EXPECT_EQ(r.config.listen, "127.0.0.1:50051");
  EXPECT_EQ(r.config.metrics_listen, "127.0.0.1:9464");
  EXPECT_EQ(r.config.workers, std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(r.config.queue_capacity, 64u);
  EXPECT_EQ(r.config.cache_bytes, 256ull << 20);
  EXPECT_EQ(r.config.store_path, "axqc-store.sqlite3");
  EXPECT_TRUE(r.config.allowed_roots.empty());
}

TEST(Config, FlagsOverrideEnvironmentOverrideFile) {
  TempDir dir;
  WriteFile(dir / "c.json",
            R"({"workers": 3, "queue-capacity": 5, "cache-bytes": "1MiB",
                "allowed-root": ["/a", "/b"], "log_level": "debug", "listen": "0.0.0.0:1"})");
  auto r = server::LoadConfig({"axqc-server", "--config", (dir / "c.json").string(), "--workers",
                               "7", "--allowed-root", "/x", "--allowed-root", "/y,/z"},
                              Env({{"AXQC_WORKERS", "4"},
                                   {"AXQC_QUEUE_CAPACITY", "6"},
                                   {"AXQC_URL_ALLOW_HOST", "h1, h2"}}));
  ASSERT_FALSE(r.exit_code) << r.message;
  EXPECT_EQ(r.config.workers, 7u);            // flag > env > file
  EXPECT_EQ(r.config.queue_capacity, 6u);     // env > file
  EXPECT_EQ(r.config.cache_bytes, 1u << 20);  // file
  EXPECT_EQ(r.config.log_level, "debug");     // file, underscore spelling
  EXPECT_EQ(r.config.listen, "0.0.0.0:1");
  EXPECT_EQ(r.config.allowed_roots, (std::vector<std::string>{"/x", "/y", "/z"}));
  EXPECT_EQ(r.config.url_allow_hosts, (std::vector<std::string>{"h1", "h2"}));
}

TEST(Config, KeyValueFileFromEnvironment) {
  TempDir dir;
  WriteFile(dir / "c.conf",
            "# axqc-server\nmax-model-bytes = 2GiB\nmax-inflight-bytes=3GiB\n\nstore-path = "
            "/var/lib/axqc/s.db\ngrace-period-seconds=2.5\nallowed-root = /m1,/m2\n");
  auto r = server::LoadConfig({"axqc-server"}, Env({{"AXQC_CONFIG", (dir / "c.conf").string()}}));
  ASSERT_FALSE(r.exit_code);
  EXPECT_EQ(r.config.max_model_bytes, 2ull << 30);
  EXPECT_EQ(r.config.store_path, "/var/lib/axqc/s.db");
  EXPECT_DOUBLE_EQ(r.config.grace_period_seconds, 2.5);
  EXPECT_EQ(r.config.allowed_roots, (std::vector<std::string>{"/m1", "/m2"}));
}

TEST(Config, ErrorsNameTheOptionAndItsSource) {
  TempDir dir;
  WriteFile(dir / "bad.conf", "workers = many\n");
  try {
    server::LoadConfig({"axqc-server", "--config", (dir / "bad.conf").string()}, Env({}));
    FAIL() << "expected ConfigError";
  } catch (const server::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("workers (config file"), std::string::npos) << e.what();
  }
  WriteFile(dir / "unknown.conf", "colour = blue\n");
  EXPECT_THROW(
      server::LoadConfig({"axqc-server", "--config", (dir / "unknown.conf").string()}, Env({})),
      server::ConfigError);
  try {
    server::LoadConfig({"axqc-server"}, Env({{"AXQC_CACHE_BYTES", "12 parsecs"}}));
    FAIL() << "expected ConfigError";
  } catch (const server::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cache-bytes (environment AXQC_CACHE_BYTES)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(server::LoadConfig({"axqc-server", "--log-level", "loud"}, Env({})),
               server::ConfigError);
  EXPECT_THROW(server::LoadConfig({"axqc-server", "--max-inline-bytes", "2GiB"}, Env({})),
               server::ConfigError);
  auto unknown_flag = server::LoadConfig({"axqc-server", "--frobnicate"}, Env({}));
  ASSERT_TRUE(unknown_flag.exit_code);
  EXPECT_NE(*unknown_flag.exit_code, 0);
}

TEST(Config, StoreLocationAndPostgresOptions) {
  auto sqlite = server::LoadConfig({"axqc-server", "--store-path", "/d/s.db"}, Env({}));
  ASSERT_FALSE(sqlite.exit_code);
  EXPECT_EQ(server::StoreLocation(sqlite.config), "/d/s.db");
  EXPECT_DOUBLE_EQ(sqlite.config.claim_lease_seconds, 30);
  EXPECT_EQ(sqlite.config.store_pool_size, 4u);
  EXPECT_DOUBLE_EQ(sqlite.config.test_check_delay_seconds, 0);

  auto pg = server::LoadConfig(
      {"axqc-server", "--store-path", "/d/s.db", "--claim-lease-seconds", "2.5"},
      Env({{"AXQC_STORE", "postgresql://axqc:pw@db:5432/axqc"}, {"AXQC_STORE_POOL_SIZE", "8"}}));
  ASSERT_FALSE(pg.exit_code);
  EXPECT_EQ(server::StoreLocation(pg.config), "postgresql://axqc:pw@db:5432/axqc");
  EXPECT_DOUBLE_EQ(pg.config.claim_lease_seconds, 2.5);
  EXPECT_EQ(pg.config.store_pool_size, 8u);

  // --print-config never shows the password.
  auto printed = server::LoadConfig(
      {"axqc-server", "--print-config", "--store", "postgresql://axqc:pw@db:5432/axqc"}, Env({}));
  ASSERT_TRUE(printed.exit_code);
  EXPECT_EQ(nlohmann::json::parse(printed.message).at("store"), "postgresql://axqc@db:5432/axqc");

  EXPECT_THROW(server::LoadConfig({"axqc-server", "--claim-lease-seconds", "0.5"}, Env({})),
               server::ConfigError);
  EXPECT_THROW(server::LoadConfig({"axqc-server", "--store-pool-size", "0"}, Env({})),
               server::ConfigError);
}

TEST(Config, HelpVersionAndPrintConfig) {
  auto help = server::LoadConfig({"axqc-server", "--help"}, Env({}));
  ASSERT_TRUE(help.exit_code);
  EXPECT_EQ(*help.exit_code, 0);
  EXPECT_NE(help.message.find("--allowed-root"), std::string::npos);
  EXPECT_NE(help.message.find("AXQC_ALLOWED_ROOT"), std::string::npos);
  auto version = server::LoadConfig({"axqc-server", "--version"}, Env({}));
  ASSERT_TRUE(version.exit_code);
  EXPECT_NE(version.message.find(std::string(kRuleSetVersion)), std::string::npos);
  auto printed = server::LoadConfig({"axqc-server", "--print-config", "--workers", "3"}, Env({}));
  ASSERT_TRUE(printed.exit_code);
  const auto j = nlohmann::json::parse(printed.message);
  EXPECT_EQ(j.at("workers"), 3);
  EXPECT_EQ(server::OptionDocs().size(), j.size());
}

// --print-config prints each value as its type (numbers, booleans, lists, strings), so that its
// output is a config file: read back with --config, it gives the same configuration.
TEST(Config, PrintConfigIsTypedAndReadsBackAsAConfigFile) {
  auto printed =
      server::LoadConfig({"axqc-server", "--print-config", "--workers", "3", "--cache-bytes",
                          "2MiB", "--allowed-root", "/srv/a,/srv/b", "--webhook-check-value",
                          "true", "--claim-lease-seconds", "2.5", "--log-level", "debug"},
                         Env({}));
  ASSERT_TRUE(printed.exit_code);
  const auto j = nlohmann::json::parse(printed.message);
  EXPECT_EQ(j.at("workers"), nlohmann::json(3));
  EXPECT_TRUE(j.at("workers").is_number_unsigned());
  EXPECT_EQ(j.at("cache-bytes"), nlohmann::json(2u << 20));
  EXPECT_EQ(j.at("allowed-root"), nlohmann::json::array({"/srv/a", "/srv/b"}));
  EXPECT_EQ(j.at("url-allow-host"), nlohmann::json::array());
  EXPECT_EQ(j.at("webhook-check-value"), nlohmann::json(true));
  EXPECT_EQ(j.at("claim-lease-seconds"), nlohmann::json(2.5));
  EXPECT_EQ(j.at("log-level"), nlohmann::json("debug"));
  const auto path = std::filesystem::temp_directory_path() /
                    ("axqc-print-config-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << printed.message;
  auto again =
      server::LoadConfig({"axqc-server", "--print-config", "--config", path.string()}, Env({}));
  std::filesystem::remove(path);
  ASSERT_TRUE(again.exit_code);
  EXPECT_EQ(*again.exit_code, 0) << again.message;
  EXPECT_EQ(nlohmann::json::parse(again.message), j);
}

TEST(Config, HelpShowsByteSizesReadablyAndUnknownOptionsAsDocumented) {
  auto help = server::LoadConfig({"axqc-server", "--help"}, Env({}));
  ASSERT_TRUE(help.exit_code);
  // http-max-json-bytes: default 1 MiB (CLI11 may wrap the line, so without spaces).
  std::string flat;
  for (char c : help.message) {
    if (c != ' ' && c != '\n') flat += c;
  }
  EXPECT_NE(flat.find("default'1048576'=1MiB"), std::string::npos) << help.message;
  EXPECT_NE(flat.find("default'268435456'=256MiB"), std::string::npos) << "cache-bytes";
  EXPECT_NE(flat.find("\"http_port\":H"), std::string::npos) << "--ready-file names every field";
  // docs/operations.md: "axqc-server: --nope: unknown option".
  auto unknown = server::LoadConfig({"axqc-server", "--nope"}, Env({}));
  ASSERT_TRUE(unknown.exit_code);
  EXPECT_EQ(*unknown.exit_code, 2);
  EXPECT_TRUE(unknown.message.starts_with("axqc-server: --nope: unknown option"))
      << unknown.message;
}

TEST(Config, ParseBytes) {
  EXPECT_EQ(server::ParseBytes("0"), 0u);
  EXPECT_EQ(server::ParseBytes("1000"), 1000u);
  EXPECT_EQ(server::ParseBytes("64KiB"), 64u << 10);
  EXPECT_EQ(server::ParseBytes("10 kB"), 10000u);
  EXPECT_EQ(server::ParseBytes("3MB"), 3000000u);
  EXPECT_EQ(server::ParseBytes("1gib"), 1ull << 30);
  EXPECT_THROW(server::ParseBytes("MiB"), server::ConfigError);
  EXPECT_THROW(server::ParseBytes("-1"), server::ConfigError);
  EXPECT_THROW(server::ParseBytes("99999999999999999999"), server::ConfigError);
  EXPECT_THROW(server::ParseBytes("20000000TiB"), server::ConfigError);
}

// ------------------------------------------------------------------------------------------------
// LRU

std::shared_ptr<const v1::Report> ReportOfSize(std::size_t message_bytes) {
  auto r = std::make_shared<v1::Report>();
  r->mutable_model()->set_file(std::string(message_bytes, 'x'));
  return r;
}

TEST(LruCache, EvictsLeastRecentlyUsedWithinTheByteBound) {
  const auto probe = ReportOfSize(1000);
  server::LruCache sizing(1u << 30);
  sizing.Put("k1", probe);
  const std::size_t cost = sizing.bytes();
  ASSERT_GT(cost, 1000u);

  server::LruCache cache(3 * cost);  // room for exactly three entries of this size
  cache.Put("k1", ReportOfSize(1000));
  cache.Put("k2", ReportOfSize(1000));
  cache.Put("k3", ReportOfSize(1000));
  EXPECT_EQ(cache.entries(), 3u);
  ASSERT_NE(cache.Get("k1"), nullptr);  // k1 becomes the most recent
  cache.Put("k4", ReportOfSize(1000));  // evicts k2
  EXPECT_EQ(cache.entries(), 3u);
  EXPECT_EQ(cache.Get("k2"), nullptr);
  EXPECT_NE(cache.Get("k1"), nullptr);
  EXPECT_NE(cache.Get("k3"), nullptr);
  EXPECT_NE(cache.Get("k4"), nullptr);
  EXPECT_LE(cache.bytes(), 3 * cost);
  cache.Put("huge", ReportOfSize(10 * cost));  // larger than the cache: not kept
  EXPECT_EQ(cache.Get("huge"), nullptr);
  EXPECT_EQ(cache.entries(), 3u);
  server::LruCache off(0);
  off.Put("k", ReportOfSize(1));
  EXPECT_EQ(off.entries(), 0u);
}

// The report cache: past its byte bound the least recently used reports are evicted, the gauges
// axqc_cache_memory_bytes / axqc_cache_entries follow, and the freed bytes are reported to the
// memory trimmer, which gives them back to the operating system once the server is idle.
TEST(ReportCache, EvictsLeastRecentlyUsedBeyondItsBytesAndTheGaugesFollow) {
  const auto probe = ReportOfSize(1 << 20);
  const std::size_t cost = server::LruCache::Cost("k1", *probe);
  ASSERT_GT(cost, 2u << 20);
  auto store = server::OpenStore(":memory:");
  server::Metrics metrics;
  server::Logger logger(server::LogLevel::kError, "");
  server::ReportCache cache(3 * cost, store.get(), &metrics, &logger);
  std::atomic<int> trims{0};
  server::TrimPolicy policy;
  policy.idle_delay = std::chrono::milliseconds(1);
  server::MemoryTrimmer trimmer(
      policy, [](const char*) {}, [&] { trims.fetch_add(1); }, [] { return std::uint64_t{0}; });
  cache.set_memory_trimmer(&trimmer);

  cache.Put("k1", ReportOfSize(1 << 20));
  cache.Put("k2", ReportOfSize(1 << 20));
  cache.Put("k3", ReportOfSize(1 << 20));
  EXPECT_EQ(cache.entries(), 3u);
  EXPECT_EQ(cache.bytes(), 3 * cost);
  EXPECT_EQ(metrics.cache_entries().Value(), 3);
  EXPECT_EQ(metrics.cache_bytes().Value(), static_cast<double>(3 * cost));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(trims.load(), 0) << "nothing evicted yet: nothing to give back";

  ASSERT_NE(cache.GetMemory("k1"), nullptr);  // k1 becomes the most recently used
  cache.Put("k4", ReportOfSize(1 << 20));     // evicts k2
  EXPECT_EQ(cache.GetMemory("k2"), nullptr);
  EXPECT_NE(cache.GetMemory("k1"), nullptr);
  EXPECT_NE(cache.GetMemory("k3"), nullptr);
  EXPECT_NE(cache.GetMemory("k4"), nullptr);
  EXPECT_EQ(metrics.cache_entries().Value(), 3);
  EXPECT_EQ(metrics.cache_bytes().Value(), static_cast<double>(3 * cost));
  // A report twice the size of the others: evicts the two least recently used (k1, then k3: the
  // Gets above made k4 the most recent).
  const auto big = ReportOfSize(2 << 20);
  cache.Put("k5", big);
  const std::size_t big_cost = server::LruCache::Cost("k5", *big);
  EXPECT_EQ(cache.GetMemory("k1"), nullptr);
  EXPECT_EQ(cache.GetMemory("k3"), nullptr);
  EXPECT_NE(cache.GetMemory("k4"), nullptr);
  EXPECT_NE(cache.GetMemory("k5"), nullptr);
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_EQ(cache.bytes(), cost + big_cost);
  EXPECT_LE(cache.bytes(), cache.capacity());
  EXPECT_EQ(metrics.cache_entries().Value(), 2);
  EXPECT_EQ(metrics.cache_bytes().Value(), static_cast<double>(cost + big_cost));
  // 3 x ~2 MiB evicted (over kTrimAfterBytes, 4 MiB): one trim once idle.
  ASSERT_TRUE(WaitFor([&] { return trims.load() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(trims.load(), 1);
}

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

// ------------------------------------------------------------------------------------------------
// URL parsing and the allowlist

TEST(Url, ParseAndRedact) {
  auto u = server::ParseUrl("HTTPS://Models.Example.com:8443/a/b/m.onnx?sig=abc#frag");
  EXPECT_EQ(u.scheme, "https");
  EXPECT_EQ(u.host, "models.example.com");
  EXPECT_EQ(u.port, "8443");
  EXPECT_EQ(u.target, "/a/b/m.onnx?sig=abc");
  EXPECT_EQ(u.Redacted(), "https://models.example.com:8443/a/b/m.onnx");
  EXPECT_EQ(u.FileName(), "m.onnx");
  auto v6 = server::ParseUrl("http://[::1]:9000");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.target, "/");
  EXPECT_EQ(v6.HostHeader(), "[::1]:9000");
  EXPECT_EQ(server::ParseUrl("http://h").port, "80");
  EXPECT_THROW(server::ParseUrl("file:///etc/passwd"), server::SourceError);
  EXPECT_THROW(server::ParseUrl("http://u:p@h/x"), server::SourceError);
  EXPECT_THROW(server::ParseUrl("http://h:99999/x"), server::SourceError);
  EXPECT_THROW(server::ParseUrl("http:///x"), server::SourceError);
  EXPECT_THROW(server::ParseUrl("http://h/a b"), server::SourceError);
}

TEST(Url, Allowlist) {
  const std::vector<std::string> allow = {"models.example.com", "cdn.example.com:8443", "[::1]"};
  EXPECT_TRUE(server::HostAllowed(server::ParseUrl("https://MODELS.example.com/x"), allow));
  EXPECT_TRUE(server::HostAllowed(server::ParseUrl("http://models.example.com:81/x"), allow));
  EXPECT_TRUE(server::HostAllowed(server::ParseUrl("https://cdn.example.com:8443/x"), allow));
  EXPECT_FALSE(server::HostAllowed(server::ParseUrl("https://cdn.example.com/x"), allow));
  EXPECT_FALSE(server::HostAllowed(server::ParseUrl("https://evil.com/models.example.com"), allow));
  EXPECT_FALSE(
      server::HostAllowed(server::ParseUrl("https://models.example.com.evil.com/"), allow));
  EXPECT_TRUE(server::HostAllowed(server::ParseUrl("http://[::1]:5/x"), allow));
}

// ------------------------------------------------------------------------------------------------
// Paths

TEST(Paths, IsWithinComparesWholeComponents) {
  EXPECT_TRUE(server::IsWithin("/srv/models/a.onnx", "/srv/models"));
  EXPECT_TRUE(server::IsWithin("/srv/models/a.onnx", "/srv/models/"));
  EXPECT_TRUE(server::IsWithin("/srv/models", "/srv/models"));
  EXPECT_FALSE(server::IsWithin("/srv/models2/a.onnx", "/srv/models"));
  EXPECT_FALSE(server::IsWithin("/srv", "/srv/models"));
  EXPECT_TRUE(server::IsWithin("/anything", "/"));
}

TEST(Paths, MissingRootIsAStartupError) {
  EXPECT_THROW(server::PathResolver({"/nonexistent/axqc-root"}), std::runtime_error);
}

// ------------------------------------------------------------------------------------------------
// Memory trimmer (when freed memory goes back to the operating system)

struct TrimRecorder {
  std::mutex mu;
  std::vector<std::string> reasons;
  std::atomic<int> trims{0};
  std::atomic<std::uint64_t> rss{0};
  server::MemoryTrimmer Make(std::chrono::milliseconds idle, std::uint64_t ceiling) {
    server::TrimPolicy policy;
    policy.idle_delay = idle;
    policy.rss_ceiling = ceiling;
    return server::MemoryTrimmer(
        policy,
        [this](const char* reason) {
          std::lock_guard<std::mutex> lock(mu);
          reasons.emplace_back(reason);
        },
        [this] { trims.fetch_add(1); }, [this] { return rss.load(); });
  }
  std::vector<std::string> Reasons() {
    std::lock_guard<std::mutex> lock(mu);
    return reasons;
  }
};

constexpr std::uint64_t kBigModel = 64ull << 20;

TEST(MemoryTrimmer, TrimsOnceIdleAfterABigCheck) {
  TrimRecorder r;
  auto trimmer = r.Make(std::chrono::milliseconds(20), 0);
  trimmer.CheckStarted();
  trimmer.CheckEnded(kBigModel);
  ASSERT_TRUE(WaitFor([&] { return r.trims.load() == 1; }));
  EXPECT_EQ(r.Reasons(), std::vector<std::string>{"idle"});
  // Nothing new since: no second trim.
  trimmer.CheckStarted();
  trimmer.CheckEnded(1 << 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(r.trims.load(), 1);
}

TEST(MemoryTrimmer, WaitsWhileAnotherCheckRuns) {
  TrimRecorder r;
  auto trimmer = r.Make(std::chrono::milliseconds(1), 0);
  trimmer.CheckStarted();  // a
  trimmer.CheckStarted();  // b
  trimmer.CheckEnded(kBigModel);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(r.trims.load(), 0) << "b still runs: its pages would be faulted in again";
  trimmer.CheckEnded(1 << 20);
  ASSERT_TRUE(WaitFor([&] { return r.trims.load() == 1; }));
  EXPECT_EQ(r.Reasons(), std::vector<std::string>{"idle"});
}

TEST(MemoryTrimmer, SmallChecksNeverTrim) {
  TrimRecorder r;
  auto trimmer = r.Make(std::chrono::milliseconds(1), 1);
  r.rss = 1ull << 40;
  for (int i = 0; i < 3; ++i) {
    trimmer.CheckStarted();
    trimmer.CheckEnded(server::kTrimAfterBytes - 1);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(r.trims.load(), 0);
}

TEST(MemoryTrimmer, MemoryFreedOutsideChecksTrimsOnceIdle) {
  TrimRecorder r;
  auto trimmer = r.Make(std::chrono::milliseconds(1), 0);
  trimmer.MemoryReleased(server::kTrimAfterBytes / 2);
  trimmer.MemoryReleased(server::kTrimAfterBytes / 2 - 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(r.trims.load(), 0) << "less than kTrimAfterBytes freed";
  trimmer.MemoryReleased(1);
  ASSERT_TRUE(WaitFor([&] { return r.trims.load() == 1; }));
  EXPECT_EQ(r.Reasons(), std::vector<std::string>{"idle"});
  // The count starts again after a trim; a running check defers the trim.
  trimmer.CheckStarted();
  trimmer.MemoryReleased(server::kTrimAfterBytes);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(r.trims.load(), 1) << "a check runs: its pages would be faulted in again";
  trimmer.CheckEnded(1);
  ASSERT_TRUE(WaitFor([&] { return r.trims.load() == 2; }));
}

TEST(MemoryTrimmer, OverTheRssCeilingTrimsAtOnce) {
  TrimRecorder r;
  auto trimmer = r.Make(std::chrono::hours(1), 1000);
  trimmer.CheckStarted();
  trimmer.CheckStarted();
  r.rss = 999;
  trimmer.CheckEnded(kBigModel);
  EXPECT_EQ(r.trims.load(), 0) << "under the ceiling: waits for an idle hour";
  r.rss = 1001;
  trimmer.CheckEnded(kBigModel);
  EXPECT_EQ(r.trims.load(), 1);
  EXPECT_EQ(r.Reasons(), std::vector<std::string>{"rss"});
}

TEST(MemoryTrimmer, ZeroDelayTrimsAfterEveryBigCheck) {
  TrimRecorder r;
  auto trimmer = r.Make(std::chrono::milliseconds(0), 0);
  for (int i = 0; i < 2; ++i) {
    trimmer.CheckStarted();
    trimmer.CheckEnded(kBigModel);
  }
  trimmer.CheckStarted();
  trimmer.CheckEnded(1 << 20);
  EXPECT_EQ(r.trims.load(), 2);
  EXPECT_EQ(r.Reasons(), (std::vector<std::string>{"check", "check"}));
}

// ------------------------------------------------------------------------------------------------
// Check engine

TEST(CheckEngine, CancellingTheOnlyWaiterOfAQueuedCheckRemovesIt) {
  server::Metrics metrics;
  auto gate = std::make_shared<Gate>();
  std::atomic<int> sunk{0};
  server::CheckEngine engine(
      1, 4, GatedCheck(gate), [&](const server::CheckJob&, const auto&) { sunk.fetch_add(1); },
      &metrics);
  auto job = [](const std::string& key, const std::string& bytes) {
    server::CheckJob j;
    j.key = key;
    j.sha256 = key;
    j.name = key;
    j.bytes = std::make_shared<const isolate::ModelBuffer>(isolate::ModelBuffer::FromString(bytes));
    return j;
  };
  std::atomic<int> done_a{0}, done_b{0};
  auto ta = engine.Submit(job("a", ConformantModel("a")), [&](const auto&) { done_a++; });
  ASSERT_EQ(ta.status, server::CheckEngine::SubmitStatus::kQueued);
  ASSERT_TRUE(WaitFor([&] { return engine.busy_workers() == 1; }));
  auto tb = engine.Submit(job("b", ConformantModel("b")), [&](const auto&) { done_b++; });
  ASSERT_EQ(tb.status, server::CheckEngine::SubmitStatus::kQueued);
  EXPECT_EQ(engine.queue_depth(), 1u);
  EXPECT_EQ(metrics.queue_depth().Value(), 1);
  EXPECT_TRUE(engine.Cancel("b", tb.waiter));
  EXPECT_EQ(engine.queue_depth(), 0u);
  EXPECT_EQ(metrics.queue_depth().Value(), 0);
  EXPECT_FALSE(engine.Cancel("b", tb.waiter));
  gate->Open();
  ASSERT_TRUE(WaitFor([&] { return done_a.load() == 1; }));
  engine.Shutdown();
  EXPECT_EQ(done_b.load(), 0);
  EXPECT_EQ(gate->calls.load(), 1);
  EXPECT_EQ(sunk.load(), 1);
  EXPECT_EQ(engine.Submit(job("c", "x"), [](const auto&) {}).status,
            server::CheckEngine::SubmitStatus::kStopped);
}

TEST(CheckEngine, InputErrorsAndShutdownOfQueuedChecks) {
  server::Metrics metrics;
  auto gate = std::make_shared<Gate>();
  server::CheckEngine engine(1, 4, GatedCheck(gate), nullptr, &metrics);
  server::CheckJob bad;
  bad.key = "bad";
  bad.bytes = std::make_shared<const isolate::ModelBuffer>(
      isolate::ModelBuffer::FromString(NotOnnxBytes()));
  std::optional<server::CheckOutcome> out_bad, out_queued;
  engine.Submit(bad, [&](const server::CheckOutcome& o) { out_bad = o; });
  ASSERT_TRUE(WaitFor([&] { return engine.busy_workers() == 1; }));
  server::CheckJob queued = bad;
  queued.key = "queued";
  engine.Submit(queued, [&](const server::CheckOutcome& o) { out_queued = o; });
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate->Open();
  });
  engine.Shutdown();  // fails the queued check, waits for the running one
  opener.join();
  ASSERT_TRUE(out_bad);
  EXPECT_EQ(out_bad->kind, server::CheckOutcome::Kind::kInputError);
  ASSERT_TRUE(out_queued);
  EXPECT_EQ(out_queued->kind, server::CheckOutcome::Kind::kShutdown);
}

// Isolation settings: defaults, parsing, refusals.
TEST(Config, IsolationOptions) {
  const auto defaults = server::LoadConfig({"axqc-server"}, Env({}));
  EXPECT_EQ(defaults.config.isolation, "process");
  EXPECT_EQ(defaults.config.worker_cpu_seconds, 300u);
  EXPECT_EQ(defaults.config.worker_max_checks, 1000u);
  EXPECT_EQ(defaults.config.worker_max_rss, 1ull << 30);
  EXPECT_EQ(defaults.config.worker_memory_limit, 0u);
  EXPECT_EQ(defaults.config.worker_failure_memory_seconds, 600);
  EXPECT_EQ(defaults.config.worker_failure_memory_bytes, 1ull << 20);
  const auto set = server::LoadConfig(
      {"axqc-server", "--isolation", "off", "--worker-memory-limit", "2GiB", "--worker-cpu-seconds",
       "30", "--worker-failure-memory-seconds", "0"},
      Env({{"AXQC_WORKER_MAX_CHECKS", "50"}, {"AXQC_WORKER_FAILURE_MEMORY_BYTES", "64KiB"}}));
  EXPECT_EQ(set.config.isolation, "off");
  EXPECT_EQ(set.config.worker_memory_limit, 2ull << 30);
  EXPECT_EQ(set.config.worker_cpu_seconds, 30u);
  EXPECT_EQ(set.config.worker_max_checks, 50u);
  EXPECT_EQ(set.config.worker_failure_memory_seconds, 0);
  EXPECT_EQ(set.config.worker_failure_memory_bytes, 64u << 10);
  EXPECT_EQ(server::LoadConfig({"axqc-server", "--worker-failure-memory-bytes", "0"}, Env({}))
                .config.worker_failure_memory_bytes,
            0u);
  server::ServerConfig bad;
  bad.isolation = "container";
  EXPECT_THROW(server::FinalizeConfig(bad), server::ConfigError);
  server::ServerConfig tiny;
  tiny.worker_memory_limit = 1 << 20;
  EXPECT_THROW(server::FinalizeConfig(tiny), server::ConfigError);
}

// Models that made workers fail in two different workers are remembered for the configured time,
// then forgotten; the least recently used go first when the memory's byte bound is reached.
TEST(FailureMemory, RemembersForItsTimeAndBoundsItsSize) {
  using Cause = server::CheckerFailure::Cause;
  using std::chrono::seconds;
  const auto t0 = server::FailureMemory::Clock::now();
  // Room for exactly two entries of a one-character hash and message.
  server::FailureMemory memory(60, 2 * server::FailureMemory::Cost("a", "x"));
  EXPECT_FALSE(memory.Remember("aa", Cause::kCrashed, "crashed (signal 9: SIGKILL)", 1, t0));
  EXPECT_FALSE(memory.Find("aa", t0).has_value());  // noted, not remembered
  EXPECT_TRUE(memory.Remember("aa", Cause::kCrashed, "crashed (signal 11: SIGSEGV)", 2, t0));
  auto found = memory.Find("aa", t0 + seconds(59));
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->cause, Cause::kCrashed);
  EXPECT_EQ(found->message, "crashed (signal 11: SIGSEGV)");  // the second failure's
  EXPECT_FALSE(memory.Find("aa", t0 + seconds(61)).has_value());
  EXPECT_FALSE(memory.Find("bb", t0).has_value());
  EXPECT_EQ(memory.entries(), 0u);
  EXPECT_EQ(memory.bytes(), 0u);

  for (const char* sha : {"a", "b", "c"}) {
    const auto t = t0 + seconds(sha[0] - 'a');
    memory.Remember(sha, sha[0] == 'b' ? Cause::kCpuTime : Cause::kMemory, "x", 10, t);
    memory.Remember(sha, sha[0] == 'b' ? Cause::kCpuTime : Cause::kMemory, "x", 11, t);
  }
  EXPECT_FALSE(memory.Find("a", t0 + seconds(3)).has_value());
  EXPECT_EQ(memory.Find("b", t0 + seconds(3))->cause, Cause::kCpuTime);
  EXPECT_EQ(memory.Find("c", t0 + seconds(3))->cause, Cause::kMemory);

  server::FailureMemory off(0);
  off.Remember("aa", Cause::kCrashed, "x", 1, t0);
  off.Remember("aa", Cause::kCrashed, "x", 2, t0);
  EXPECT_FALSE(off.Find("aa", t0).has_value());
  server::FailureMemory no_room(60, 0);
  no_room.Remember("aa", Cause::kCrashed, "x", 1, t0);
  no_room.Remember("aa", Cause::kCrashed, "x", 2, t0);
  EXPECT_FALSE(no_room.Find("aa", t0).has_value());
}

// Remembering past the byte bound forgets the least recently used models (a hit counts as a use,
// whatever the expiry times), and the gauges show the bytes and entries held.
TEST(FailureMemory, EvictsLeastRecentlyUsedBeyondItsBytesAndTheGaugesFollow) {
  using Cause = server::CheckerFailure::Cause;
  const auto t0 = server::FailureMemory::Clock::now();
  const std::string msg(1000, 'e');
  const std::string h1(64, '1'), h2(64, '2'), h3(64, '3'), h4(64, '4');
  const std::size_t cost = server::FailureMemory::Cost(h1, msg);
  ASSERT_GT(cost, 1000u + 128u);
  server::Metrics metrics;
  server::FailureMemory memory(600, 3 * cost, &metrics);
  // Failed in two workers: remembered.
  auto remember = [&](const std::string& sha, Cause cause, const std::string& message) {
    memory.Remember(sha, cause, message, 1, t0);
    memory.Remember(sha, cause, message, 2, t0);
  };
  EXPECT_EQ(metrics.failure_memory_bytes().Value(), 0);
  EXPECT_EQ(metrics.failure_memory_entries().Value(), 0);
  remember(h1, Cause::kCrashed, msg);
  remember(h2, Cause::kMemory, msg);
  remember(h3, Cause::kCpuTime, msg);
  EXPECT_EQ(memory.entries(), 3u);
  EXPECT_EQ(memory.bytes(), 3 * cost);
  EXPECT_EQ(metrics.failure_memory_bytes().Value(), static_cast<double>(3 * cost));
  EXPECT_EQ(metrics.failure_memory_entries().Value(), 3);

  ASSERT_TRUE(memory.Find(h1, t0).has_value());  // h1 becomes the most recently used
  remember(h4, Cause::kCrashed, msg);            // over the bound: evicts h2
  EXPECT_EQ(memory.entries(), 3u);
  EXPECT_LE(memory.bytes(), 3 * cost);
  EXPECT_FALSE(memory.Find(h2, t0).has_value());
  EXPECT_TRUE(memory.Find(h1, t0).has_value());
  EXPECT_TRUE(memory.Find(h3, t0).has_value());
  EXPECT_TRUE(memory.Find(h4, t0).has_value());
  EXPECT_EQ(metrics.failure_memory_bytes().Value(), static_cast<double>(3 * cost));
  EXPECT_EQ(metrics.failure_memory_entries().Value(), 3);

  // A message longer than the whole bound is not kept; remembering a model again replaces it.
  remember(h2, Cause::kCrashed, std::string(4 * cost, 'x'));
  EXPECT_FALSE(memory.Find(h2, t0).has_value());
  remember(h3, Cause::kMemory, "short");
  EXPECT_EQ(memory.Find(h3, t0)->cause, Cause::kMemory);
  EXPECT_EQ(memory.bytes(), 2 * cost + server::FailureMemory::Cost(h3, "short"));
  EXPECT_EQ(metrics.failure_memory_bytes().Value(), static_cast<double>(memory.bytes()));

  // An expired entry found is dropped, and the gauges follow.
  EXPECT_FALSE(memory.Find(h1, t0 + std::chrono::seconds(601)).has_value());
  EXPECT_EQ(memory.entries(), 2u);
  EXPECT_EQ(metrics.failure_memory_entries().Value(), 2);
  EXPECT_EQ(metrics.failure_memory_bytes().Value(), static_cast<double>(memory.bytes()));
}

// One failure is only noted: a worker may be killed during a good model's check (the OOM killer).
// The model is remembered when its check fails in a second worker within the time; a note that
// expires is forgotten; the same worker twice is one failure; failures that are no worker's
// (kUnavailable: no worker took the check) are never noted.
TEST(FailureMemory, RemembersAModelOnlyAfterItFailedInTwoWorkers) {
  using Cause = server::CheckerFailure::Cause;
  using std::chrono::seconds;
  const auto t0 = server::FailureMemory::Clock::now();
  server::FailureMemory memory(60);
  EXPECT_FALSE(memory.Remember("m", Cause::kCrashed, "signal 9", 7, t0));
  EXPECT_FALSE(memory.Find("m", t0 + seconds(1)).has_value());
  EXPECT_FALSE(memory.Remember("m", Cause::kCrashed, "signal 9", 7, t0 + seconds(1)));
  EXPECT_FALSE(memory.Find("m", t0 + seconds(2)).has_value());
  EXPECT_TRUE(memory.Remember("m", Cause::kMemory, "out of memory", 8, t0 + seconds(2)));
  const auto found = memory.Find("m", t0 + seconds(3));
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->cause, Cause::kMemory);
  EXPECT_EQ(found->message, "out of memory");
  // Remembered for the time from the second failure.
  EXPECT_TRUE(memory.Find("m", t0 + seconds(61)).has_value());
  EXPECT_FALSE(memory.Find("m", t0 + seconds(63)).has_value());

  // The first note expires: a failure after that is a first one again.
  EXPECT_FALSE(memory.Remember("n", Cause::kCrashed, "x", 1, t0));
  EXPECT_FALSE(memory.Remember("n", Cause::kCrashed, "x", 2, t0 + seconds(61)));
  EXPECT_FALSE(memory.Find("n", t0 + seconds(62)).has_value());
  EXPECT_TRUE(memory.Remember("n", Cause::kCrashed, "x", 3, t0 + seconds(62)));

  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(memory.Remember("u", Cause::kUnavailable, "no worker", 0, t0));
  }
  EXPECT_FALSE(memory.Find("u", t0).has_value());
}

}  // namespace
}  // namespace axqc::test
