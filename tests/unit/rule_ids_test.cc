// Rule IDs are a public contract and the registry (core/src/rules.def, made into the catalog and
// the handles by rules.h) is their one source. Code
// names a rule only through its typed handle (`rules::kQdqScaleValue`), which the compiler looks
// up in the catalog (tests/rule_handle_compile_test.sh proves that a typo does not compile).
// These tests keep the rest of the registry true: handle names follow the IDs, each catalog row
// names exactly the files that use its handle, the tests it names assert the ID, and no rule ID
// is written as a string in the checker's code.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "axqc/catalog.h"
#include "axqc/operators.h"
#include "context.h"
#include "rule_handles.h"
#include "rules.h"

namespace axqc {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = fs::path(AXQC_SOURCE_DIR);

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

using test::HandleName;

std::set<std::string> Words(std::string_view list) {
  std::set<std::string> out;
  std::istringstream in{std::string(list)};
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

// The checker's sources (core/src), repository-relative, with their text; rules.h excluded, and
// the causes stage, whose causal-link table (causes.cc) and artifact recognisers
// (causes_artifacts.cc) name rules without emitting any (docs/causes.md).
std::map<std::string, std::string> CoreSources() {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(kRoot / "core" / "src")) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
    const auto rel = fs::relative(e.path(), kRoot).generic_string();
    if (rel == "core/src/rules.h" || rel == "core/src/causes.cc" ||
        rel == "core/src/causes_artifacts.cc") {
      continue;
    }
    files[rel] = ReadFile(e.path());
  }
  return files;
}

TEST(RuleIds, HandleNamesFollowTheIds) {
  const std::string text = ReadFile(kRoot / "core" / "src" / "rules.def");
  static const std::regex decl(R"re(AXQC_RULE\((k\w+), "([^"]+)")re");
  std::size_t n = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), decl), end; it != end; ++it, ++n) {
    EXPECT_EQ((*it)[1].str(), HandleName((*it)[2].str())) << "handle of " << (*it)[2];
  }
  EXPECT_EQ(n, Rules().size()) << "one rules.def entry per catalog row";
  for (std::size_t i = 0; i < kAllRules.size(); ++i) {
    EXPECT_EQ(kAllRules[i].id(), Rules()[i].id);
    EXPECT_EQ(&kAllRules[i].info(), FindRule(Rules()[i].id));
  }
  EXPECT_EQ(rules::kQdqScaleValue.id(), "qdq/scale-value");
  EXPECT_EQ(rules::kQdqScaleValue.info().severity, Severity::kError);
}

TEST(RuleIds, EachRowNamesExactlyTheFilesThatUseItsHandle) {
  const auto sources = CoreSources();
  ASSERT_GT(sources.size(), 30u) << "is AXQC_SOURCE_DIR right?";
  for (const auto& r : Rules()) {
    SCOPED_TRACE(std::string(r.id));
    const std::regex use("rules::" + HandleName(r.id) + "\\b");
    std::set<std::string> using_files;
    for (const auto& [path, text] : sources) {
      if (std::regex_search(text, use)) using_files.insert(path);
    }
    EXPECT_FALSE(using_files.empty()) << "no code emits " << r.id;
    EXPECT_EQ(Words(r.implementation), using_files)
        << "update the entry's implementation files in core/src/rules.def";
  }
}

TEST(RuleIds, EachRowNamesTestsThatAssertTheId) {
  for (const auto& r : Rules()) {
    SCOPED_TRACE(std::string(r.id));
    const auto tests = Words(r.tests);
    EXPECT_FALSE(tests.empty()) << "the row names no test";
    for (const auto& t : tests) {
      ASSERT_TRUE(fs::exists(kRoot / t)) << t << " does not exist";
      EXPECT_NE(ReadFile(kRoot / t).find("\"" + std::string(r.id) + "\""), std::string::npos)
          << t << " does not assert " << r.id;
    }
  }
}

// Outside the registry, code never spells a rule ID (comments may).
TEST(RuleIds, NoRuleIdStringsInTheChecker) {
  static const std::regex id(
      R"re("((scope|onnx|closure|pattern|qdq|role|op|target|pulsar2)/[a-z0-9-]+)")re");
  for (const auto& [path, text] : CoreSources()) {
    std::istringstream lines(text);
    int n = 0;
    for (std::string line; std::getline(lines, line);) {
      ++n;
      const auto comment = line.find("//");
      const std::string code = comment == std::string::npos ? line : line.substr(0, comment);
      std::smatch m;
      if (std::regex_search(code, m, id) && FindRule(m[1].str()) != nullptr) {
        ADD_FAILURE() << path << ":" << n << " spells rule ID " << m[1]
                      << "; use its handle rules::" << HandleName(m[1].str());
      }
    }
  }
}

TEST(RuleIds, OperatorTableRulesAreInTheCatalog) {
  for (const auto& op : Operators()) {
    if (op.rule.empty()) continue;
    EXPECT_NE(FindRule(op.rule), nullptr) << op.op_type << ": " << op.rule;
  }
}

TEST(RuleIds, EmitterTakesTheHandle) {
  detail::Emitter out(nullptr, false);
  out.Emit({.rule = rules::kQdqScaleValue, .message = "x", .group_key = "x"});
  out.Emit({.rule = rules::kQdqZeroPointValue, .message = "y", .group_key = "y"});  // [cv]: off
  EXPECT_TRUE(out.enabled(rules::kQdqScaleValue));
  EXPECT_FALSE(out.enabled(rules::kQdqZeroPointValue));
  const auto found = out.Take();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rule, "qdq/scale-value");
  EXPECT_EQ(found[0].severity, Severity::kError);
  EXPECT_EQ(found[0].section, "3.1");
}

}  // namespace
}  // namespace axqc
