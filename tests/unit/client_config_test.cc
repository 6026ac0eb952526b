// The configuration file of `axqc check` (client/src/config.cc): axqc.toml with [check] defaults
// and [[waiver]] tables, parsed with toml++; errors name the file and line; the file is found from
// the working directory upwards.
#include "config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace axqc::test {
namespace {

namespace fs = std::filesystem;
using cli::ConfigError;
using cli::ParseConfig;

std::string ErrorOf(const std::string& text) {
  try {
    ParseConfig(text, "cfg/axqc.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ClientConfig, ParsesDefaultsAndWaivers) {
  const auto c = ParseConfig(R"toml(
# Known findings of the detector exports.
[check]
check_value = true
max_locations = 12
fail_on = "warn"
baseline = "ci/axqc-baseline.json"

[[waiver]]
rule = "role/*"
node = ["/backbone/*", "/neck/*"]
reason = "vendor backbone, re-export planned"
expires = 2026-06-30

[[waiver]]
fingerprint = "0123456789abcdef"
model = "models/detector*.onnx"
op_type = "Add"
tensor = "*_out"
reason = "JIRA-12"
expires = "2027-01-31"
)toml",
                             "cfg/axqc.toml");
  EXPECT_EQ(c.path, "cfg/axqc.toml");
  EXPECT_EQ(c.dir, "cfg");
  EXPECT_EQ(c.check_value, true);
  EXPECT_EQ(c.max_locations, 12u);
  EXPECT_EQ(c.fail_on, Severity::kWarn);
  EXPECT_EQ(c.baseline, "cfg/ci/axqc-baseline.json");  // relative to the file
  ASSERT_EQ(c.waivers.size(), 2u);
  const Waiver& w = c.waivers[0];
  EXPECT_EQ(w.rules, std::vector<std::string>{"role/*"});
  EXPECT_EQ(w.nodes, (std::vector<std::string>{"/backbone/*", "/neck/*"}));
  EXPECT_EQ(w.expires, "2026-06-30");
  EXPECT_EQ(w.Source(), "cfg/axqc.toml:9");
  const Waiver& v = c.waivers[1];
  EXPECT_TRUE(v.rules.empty());
  EXPECT_EQ(v.fingerprints, std::vector<std::string>{"0123456789abcdef"});
  EXPECT_EQ(v.models, std::vector<std::string>{"models/detector*.onnx"});
  EXPECT_EQ(v.op_types, std::vector<std::string>{"Add"});
  EXPECT_EQ(v.tensors, std::vector<std::string>{"*_out"});
  EXPECT_EQ(v.expires, "2027-01-31");
  EXPECT_EQ(v.line, 15);
}

TEST(ClientConfig, FailOnNotApplicable) {
  EXPECT_EQ(
      ParseConfig("[check]\nfail_on_not_applicable = true\n", "axqc.toml").fail_on_not_applicable,
      true);
  EXPECT_FALSE(ParseConfig("[check]\n", "axqc.toml").fail_on_not_applicable.has_value());
  EXPECT_EQ(ErrorOf("[check]\nfail_on_not_applicable = \"yes\"\n"),
            "cfg/axqc.toml:2: `fail_on_not_applicable` must be true or false");
}

TEST(ClientConfig, AnUnknownRuleIdInAWaiverIsAnErrorNamingTheClosest) {
  EXPECT_EQ(ErrorOf("[[waiver]]\nrule = \"qdq/scale-valu\"\nreason = \"r\"\n"),
            "cfg/axqc.toml:2: unknown rule `qdq/scale-valu` in `rule` (did you mean "
            "`qdq/scale-value`?)");
  EXPECT_EQ(ErrorOf("[[waiver]]\nrule = [\"role/*\", \"nothing-like-it\"]\nreason = \"r\"\n"),
            "cfg/axqc.toml:2: unknown rule `nothing-like-it` in `rule` (`axqc rules` lists them)");
  // Globs and known IDs are taken as they are.
  EXPECT_EQ(ParseConfig("[[waiver]]\nrule = [\"role/*\", \"qdq/scale-value\", \"target/*\"]\n"
                        "reason = \"r\"\n",
                        "axqc.toml")
                .waivers.at(0)
                .rules.size(),
            3u);
}

TEST(ClientConfig, ErrorsNameTheLineAndTheProblem) {
  EXPECT_EQ(ErrorOf("[check]\nfail_on = \"info\"\n"),
            "cfg/axqc.toml:2: `fail_on` must be \"error\" or \"warn\", not \"info\"");
  EXPECT_NE(ErrorOf("[check]\ncheck_values = true\n")
                .find("cfg/axqc.toml:2: unknown key "
                      "`check_values` in [check]"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[[waiver]]\nrule = \"op/*\"\nreasons = \"typo\"\n")
                .find("cfg/axqc.toml:3: unknown key `reasons` in [[waiver]]"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[[waiver]]\nrule = \"op/*\"\n").find("cfg/axqc.toml:1: `reason` is required"),
            std::string::npos)
      << ErrorOf("[[waiver]]\nrule = \"op/*\"\n");
  EXPECT_NE(ErrorOf("[[waiver]]\nnode = \"n\"\nreason = \"r\"\n").find("needs `rule`"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[[waiver]]\nrule = \"op/*\"\nreason = \"r\"\nexpires = 2026-13-01\n")
                .find("cfg/axqc.toml:4"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[[waiver]]\nrule = \"op/*\"\nreason = \"r\"\nexpires = \"soon\"\n")
                .find("cfg/axqc.toml:4: `expires` 'soon' is not a date"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[[waiver]]\nrule = 3\nreason = \"r\"\n")
                .find("`rule` must be a string or a list of strings"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[waivers]\n").find("unknown key `waivers`"), std::string::npos);
  EXPECT_NE(ErrorOf("waiver = 1\n").find("array of tables"), std::string::npos);
  EXPECT_NE(ErrorOf("[check\n").find("cfg/axqc.toml:1:"), std::string::npos);  // TOML syntax
  EXPECT_NE(ErrorOf("[check]\nmax_locations = 0\n").find("from 1 to 1000"), std::string::npos);
}

TEST(ClientConfig, FoundFromTheWorkingDirectoryUpwards) {
  const fs::path root = fs::temp_directory_path() / "axqc-config-test";
  fs::remove_all(root);
  fs::create_directories(root / "repo" / "models" / "deep");
  const auto none = cli::FindConfig(root / "repo" / "models" / "deep");
  EXPECT_TRUE(!none || none->string().rfind(root.string(), 0) != 0);  // nothing inside `root`
  std::ofstream(root / "repo" / ".axqc.toml") << "[check]\n";
  EXPECT_EQ(cli::FindConfig(root / "repo" / "models" / "deep"), root / "repo" / ".axqc.toml");
  std::ofstream(root / "repo" / "axqc.toml") << "[check]\n";  // preferred over .axqc.toml
  EXPECT_EQ(cli::FindConfig(root / "repo" / "models" / "deep"), root / "repo" / "axqc.toml");
  std::ofstream(root / "repo" / "models" / "axqc.toml") << "[check]\n";  // the nearest wins
  EXPECT_EQ(cli::FindConfig(root / "repo" / "models" / "deep"),
            root / "repo" / "models" / "axqc.toml");
  EXPECT_THROW(cli::LoadConfig((root / "missing.toml").string()), ConfigError);
  fs::remove_all(root);
}

// Only TOML is read. A YAML configuration where axqc would look for one is an error naming the
// file, not silently ignored (its waivers would go unused); a TOML file beside it wins.
TEST(ClientConfig, YamlIsRefusedNotIgnored) {
  const fs::path root = fs::temp_directory_path() / "axqc-config-yaml-test";
  fs::remove_all(root);
  fs::create_directories(root / "repo" / "models");
  std::ofstream(root / "repo" / ".axqc.yaml") << "waivers: []\n";
  try {
    cli::FindConfig(root / "repo" / "models");
    ADD_FAILURE() << "a .axqc.yaml was not refused";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(".axqc.yaml"), std::string::npos) << what;
    EXPECT_NE(what.find("TOML only"), std::string::npos) << what;
  }
  try {
    cli::LoadConfig((root / "repo" / ".axqc.yaml").string());  // --config .axqc.yaml
    ADD_FAILURE() << "--config with a YAML file was not refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("not YAML"), std::string::npos) << e.what();
  }
  std::ofstream(root / "repo" / "axqc.toml") << "[check]\n";
  EXPECT_EQ(cli::FindConfig(root / "repo" / "models"), root / "repo" / "axqc.toml");
  std::ofstream(root / "repo" / "models" / "axqc.yml") << "check: {}\n";  // nearer: refused
  EXPECT_THROW(cli::FindConfig(root / "repo" / "models"), ConfigError);
  fs::remove_all(root);
}

// [check] select / ignore: rule selectors checked against the catalog.
TEST(ClientConfig, SelectAndIgnoreRules) {
  const auto c = ParseConfig(
      "[check]\nselect = [\"qdq/\", \"role/weight-type\"]\n"
      "ignore = \"qdq/*-value\"\n",
      "axqc.toml");
  ASSERT_TRUE(c.select.has_value());
  EXPECT_EQ(*c.select, (std::vector<std::string>{"qdq/", "role/weight-type"}));
  EXPECT_EQ(c.ignore, (std::vector<std::string>{"qdq/*-value"}));
  EXPECT_FALSE(ParseConfig("[check]\n", "axqc.toml").select.has_value());
  EXPECT_EQ(ErrorOf("[check]\nignore = [\"role/weight-typ\"]\n"),
            "cfg/axqc.toml:2: `ignore`: unknown rule 'role/weight-typ' (did you mean "
            "'role/weight-type'?); `axqc rules` lists them");
  EXPECT_EQ(ErrorOf("[check]\nselect = []\n"), "cfg/axqc.toml:2: `select` is an empty list");
}

}  // namespace
}  // namespace axqc::test
