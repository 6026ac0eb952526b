// Rule IDs are a public contract and the catalog is their one source: an emit with an ID the
// catalog lacks must fail loudly, never drop the finding. Two guards: the emitter throws at run
// time, and this test reads every rule ID written in the checker's sources (emit sites, the
// operator table) and looks each up in the catalog, so a typo fails even on a path no other test
// reaches.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "axqc/catalog.h"
#include "axqc/operators.h"
#include "context.h"

namespace axqc {
namespace {

namespace fs = std::filesystem;

TEST(RuleIds, EmitterThrowsOnAnIdTheCatalogLacks) {
  detail::Emitter out(nullptr, true);
  EXPECT_THROW(out.Emit({.rule = "qdq/no-such-rule", .message = "x", .group_key = "x"}),
               std::logic_error);
  EXPECT_THROW((void)out.enabled("op/typo"), std::logic_error);
  EXPECT_NO_THROW(out.Emit({.rule = "qdq/scale-value", .message = "x", .group_key = "x"}));
  EXPECT_EQ(out.Take().size(), 1u);
}

// Every "family/id" string literal in core/src, with the files it is in.
std::map<std::string, std::set<std::string>> IdsInSources() {
  static const std::regex id(R"re("((scope|onnx|closure|pattern|qdq|role|op)/[a-z0-9-]+)")re");
  std::map<std::string, std::set<std::string>> ids;
  const fs::path src = fs::path(AXQC_SOURCE_DIR) / "core" / "src";
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    if (!e.is_regular_file()) continue;
    const auto ext = e.path().extension();
    if (ext != ".cc" && ext != ".h") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (std::sregex_iterator it(s.begin(), s.end(), id), end; it != end; ++it) {
      ids[(*it)[1].str()].insert(fs::relative(e.path(), src).string());
    }
  }
  return ids;
}

TEST(RuleIds, EveryIdInTheSourcesIsInTheCatalog) {
  const auto ids = IdsInSources();
  ASSERT_GT(ids.size(), 30u) << "the scan found too few rule IDs; is AXQC_SOURCE_DIR right?";
  for (const auto& [rule, files] : ids) {
    EXPECT_NE(FindRule(rule), nullptr) << "core/src/" << *files.begin() << " uses rule ID '" << rule
                                       << "', which is not in the catalog (core/src/catalog.cc)";
  }
  for (const auto& op : Operators()) {
    if (op.rule.empty()) continue;
    EXPECT_NE(FindRule(op.rule), nullptr) << op.op_type << ": " << op.rule;
  }
}

TEST(RuleIds, EveryCatalogRuleIsEmittedSomewhere) {
  const auto ids = IdsInSources();
  for (const auto& r : Rules()) {
    auto it = ids.find(std::string(r.id));
    const bool used =
        it != ids.end() && std::any_of(it->second.begin(), it->second.end(),
                                       [](const std::string& f) { return f != "catalog.cc"; });
    EXPECT_TRUE(used) << "catalog rule " << r.id << " is emitted nowhere in core/src";
  }
}

}  // namespace
}  // namespace axqc
