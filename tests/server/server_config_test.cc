// Configuration of axqc-server (server/config.h): flags, environment, the TOML config file and
// the formats of earlier releases, --print-config, --help, and the consistency checks.
#include <gtest/gtest.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "axqc/catalog.h"
#include "config.h"
#include "server_test_util.h"

namespace axqc::test {
namespace {
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
  WriteFile(dir / "c.toml",
            "# axqc-server\nworkers = 3\nqueue-capacity = 5\ncache-bytes = \"1MiB\"\n"
            "allowed-root = [\"/a\", \"/b\"]\nlog_level = \"debug\"\nlisten = \"0.0.0.0:1\"\n");
  auto r = server::LoadConfig({"axqc-server", "--config", (dir / "c.toml").string(), "--workers",
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
  EXPECT_TRUE(r.notes.empty());
}

// The config file is TOML: numbers, booleans, strings (sizes and durations with their units) and
// arrays, as they are typed; from --config or AXQC_CONFIG.
TEST(Config, TomlFileWithTypedValues) {
  TempDir dir;
  WriteFile(dir / "c.toml",
            "# axqc-server\nmax-model-bytes = 2147483648\nmax-inflight-bytes = \"3GiB\"\n\n"
            "store-path = \"/var/lib/axqc/s.db\"\ngrace-period-seconds = 2.5\n"
            "claim-lease-seconds = \"1m\"\nupload-idle-timeout-seconds = \"1500ms\"\n"
            "allowed-root = [\"/m1\", \"/m2\"]\nwebhook-check-value = true\n"
            "metrics-listen = \"\"\n");
  auto r = server::LoadConfig({"axqc-server"}, Env({{"AXQC_CONFIG", (dir / "c.toml").string()}}));
  ASSERT_FALSE(r.exit_code) << r.message;
  EXPECT_EQ(r.config.max_model_bytes, 2ull << 30);
  EXPECT_EQ(r.config.max_inflight_bytes, 3ull << 30);
  EXPECT_EQ(r.config.store_path, "/var/lib/axqc/s.db");
  EXPECT_DOUBLE_EQ(r.config.grace_period_seconds, 2.5);
  EXPECT_DOUBLE_EQ(r.config.claim_lease_seconds, 60);
  EXPECT_DOUBLE_EQ(r.config.upload_idle_timeout_seconds, 1.5);
  EXPECT_EQ(r.config.allowed_roots, (std::vector<std::string>{"/m1", "/m2"}));
  EXPECT_TRUE(r.config.webhook_check_value);
  EXPECT_EQ(r.config.metrics_listen, "");
  EXPECT_TRUE(r.notes.empty());
}

// Files of earlier releases still work: a JSON object and unquoted key=value lines, each with a
// note that says how to write the same configuration as TOML.
TEST(Config, EarlierFormatsAreReadWithADeprecationNote) {
  TempDir dir;
  WriteFile(dir / "c.json",
            R"({"workers": 3, "allowed-root": ["/a", "/b"], "log_level": "debug"})");
  auto json = server::LoadConfig({"axqc-server", "--config", (dir / "c.json").string()}, Env({}));
  ASSERT_FALSE(json.exit_code) << json.message;
  EXPECT_EQ(json.config.workers, 3u);
  EXPECT_EQ(json.config.allowed_roots, (std::vector<std::string>{"/a", "/b"}));
  ASSERT_EQ(json.notes.size(), 1u);
  EXPECT_NE(json.notes[0].find("is a JSON object, which is deprecated"), std::string::npos)
      << json.notes[0];
  EXPECT_NE(json.notes[0].find("--print-config > server.toml"), std::string::npos);

  WriteFile(dir / "c.conf",
            "# axqc-server\nmax-model-bytes = 2GiB\nmax-inflight-bytes=3GiB\n\nstore-path = "
            "/var/lib/axqc/s.db\ngrace-period-seconds=2.5\nallowed-root = /m1,/m2\n");
  auto kv = server::LoadConfig({"axqc-server"}, Env({{"AXQC_CONFIG", (dir / "c.conf").string()}}));
  ASSERT_FALSE(kv.exit_code);
  EXPECT_EQ(kv.config.max_model_bytes, 2ull << 30);
  EXPECT_EQ(kv.config.store_path, "/var/lib/axqc/s.db");
  EXPECT_DOUBLE_EQ(kv.config.grace_period_seconds, 2.5);
  EXPECT_EQ(kv.config.allowed_roots, (std::vector<std::string>{"/m1", "/m2"}));
  ASSERT_EQ(kv.notes.size(), 1u);
  EXPECT_NE(kv.notes[0].find("unquoted key=value format of earlier releases"), std::string::npos)
      << kv.notes[0];
}

TEST(Config, ErrorsNameTheOptionAndItsSource) {
  TempDir dir;
  WriteFile(dir / "bad.toml", "# workers\nworkers = \"many\"\n");
  try {
    server::LoadConfig({"axqc-server", "--config", (dir / "bad.toml").string()}, Env({}));
    FAIL() << "expected ConfigError";
  } catch (const server::ConfigError& e) {
    EXPECT_NE(
        std::string(e.what()).find("workers (config file " + (dir / "bad.toml").string() + ":2)"),
        std::string::npos)
        << e.what();
  }
  // Neither TOML nor the earlier key=value lines: the TOML error, with its line.
  WriteFile(dir / "unquoted.toml", "workers = 3\nlog-level = [debug\n");
  try {
    server::LoadConfig({"axqc-server", "--config", (dir / "unquoted.toml").string()}, Env({}));
    FAIL() << "expected ConfigError";
  } catch (const server::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unquoted.toml:2: not TOML"), std::string::npos)
        << e.what();
  }
  WriteFile(dir / "list.toml", "workers = [1, 2]\n");
  try {
    server::LoadConfig({"axqc-server", "--config", (dir / "list.toml").string()}, Env({}));
    FAIL() << "expected ConfigError";
  } catch (const server::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("list.toml:1: workers: takes one value, not a list"),
              std::string::npos)
        << e.what();
  }
  WriteFile(dir / "unknown.toml", "colour = \"blue\"\n");
  try {
    server::LoadConfig({"axqc-server", "--config", (dir / "unknown.toml").string()}, Env({}));
    FAIL() << "expected ConfigError";
  } catch (const server::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown.toml:1: unknown option 'colour'"),
              std::string::npos)
        << e.what();
  }
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
  EXPECT_EQ(toml::parse(printed.message)["store"].value<std::string>(),
            "postgresql://axqc@db:5432/axqc");
  EXPECT_EQ(printed.message.find(":pw@"), std::string::npos);

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
  const auto t = toml::parse(printed.message);
  EXPECT_EQ(t["workers"].value<std::int64_t>(), 3);
  EXPECT_EQ(server::OptionDocs().size(), t.size());
}

// --print-config prints TOML, each value as its type (integers, floats, booleans, arrays,
// strings), so that its output is a config file: read back with --config, it gives the same
// configuration.
TEST(Config, PrintConfigIsTypedTomlAndReadsBackAsAConfigFile) {
  auto printed =
      server::LoadConfig({"axqc-server", "--print-config", "--workers", "3", "--cache-bytes",
                          "2MiB", "--allowed-root", "/srv/a,/srv/b", "--webhook-check-value",
                          "true", "--claim-lease-seconds", "2.5", "--log-level", "debug"},
                         Env({}));
  ASSERT_TRUE(printed.exit_code);
  const auto t = toml::parse(printed.message);
  EXPECT_TRUE(t["workers"].is_integer());
  EXPECT_EQ(t["workers"].value<std::int64_t>(), 3);
  EXPECT_EQ(t["cache-bytes"].value<std::int64_t>(), 2 << 20);
  ASSERT_TRUE(t["allowed-root"].is_array());
  EXPECT_EQ(t["allowed-root"][0].value<std::string>(), "/srv/a");
  EXPECT_EQ(t["allowed-root"][1].value<std::string>(), "/srv/b");
  ASSERT_TRUE(t["url-allow-host"].is_array());
  EXPECT_TRUE(t["url-allow-host"].as_array()->empty());
  EXPECT_EQ(t["webhook-check-value"].value<bool>(), true);
  EXPECT_EQ(t["claim-lease-seconds"].value<double>(), 2.5);
  EXPECT_TRUE(t["grace-period-seconds"].is_floating_point());
  EXPECT_EQ(t["log-level"].value<std::string>(), "debug");
  const auto path = std::filesystem::temp_directory_path() /
                    ("axqc-print-config-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(path) << printed.message;
  auto again =
      server::LoadConfig({"axqc-server", "--print-config", "--config", path.string()}, Env({}));
  std::filesystem::remove(path);
  ASSERT_TRUE(again.exit_code);
  EXPECT_EQ(*again.exit_code, 0) << again.message;
  EXPECT_TRUE(again.notes.empty());
  EXPECT_EQ(again.message, printed.message);
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
}  // namespace
}  // namespace axqc::test
