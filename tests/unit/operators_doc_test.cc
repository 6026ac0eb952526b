// The rule documentation cannot drift from the code: docs/rules/operators.md is byte-identical to
// the matrix generated from the operator table, every catalog rule ID has its page, and
// docs/causes.md lists every producer artifact of the artifact table.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "axqc/catalog.h"
#include "axqc/operators.h"
#include "causes.h"
#include "causes_artifacts.h"
#include "rule_handles.h"

namespace axqc::test {
namespace {

namespace fs = std::filesystem;

// docs/rules of the source tree: $AXQC_DOCS_DIR, else under AXQC_SOURCE_DIR (set by CMake;
// __FILE__ may be relative when ccache rewrites paths).
fs::path DocsDir() {
  if (const char* env = std::getenv("AXQC_DOCS_DIR"); env != nullptr && *env != '\0') {
    return fs::path(env);
  }
  return fs::path(AXQC_SOURCE_DIR) / "docs" / "rules";
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string PageName(std::string_view id) {
  std::string s;
  for (char c : id) {
    if (c == '/') {
      s += "--";
    } else {
      s += c;
    }
  }
  return s + ".md";
}

constexpr const char* kRegenerate =
    "docs/rules/operators.md is out of date; regenerate it with\n"
    "  build/core-dev/client/axqc rules --operators > docs/rules/operators.md";

TEST(OperatorsDoc, MatchesTheGeneratedMatrixByteForByte) {
  const auto path = DocsDir() / "operators.md";
  ASSERT_TRUE(fs::exists(path)) << path << " is missing\n" << kRegenerate;
  const std::string doc = ReadFile(path);
  const std::string generated = OperatorsMarkdown();
  if (doc != generated) {
    // Point at the first differing line to make the failure readable.
    std::istringstream a(doc), b(generated);
    std::string la, lb;
    int line = 0;
    while (true) {
      const bool ga = static_cast<bool>(std::getline(a, la));
      const bool gb = static_cast<bool>(std::getline(b, lb));
      ++line;
      if (!ga && !gb) break;
      if (!ga || !gb || la != lb) {
        ADD_FAILURE() << kRegenerate << "\nfirst difference at line " << line
                      << ":\n  file:      " << (ga ? la : "<end of file>")
                      << "\n  generated: " << (gb ? lb : "<end of text>");
        break;
      }
    }
  }
  EXPECT_EQ(doc.size(), generated.size());
  EXPECT_TRUE(doc == generated) << kRegenerate;
}

TEST(OperatorsDoc, ListsEveryOperatorOfTheTableOnce) {
  const std::string md = OperatorsMarkdown();
  std::set<std::string> seen;
  for (const auto& op : Operators()) {
    EXPECT_TRUE(seen.insert(op.op_type).second) << op.op_type << " listed twice";
    EXPECT_NE(md.find("| " + op.op_type + " | " + op.op_class + " | " + op.section + " |"),
              std::string::npos)
        << op.op_type;
    EXPECT_FALSE(op.section.empty()) << op.op_type;
    // The last cell: the opset and ONNX release that added the operator.
    const auto row = md.find("| " + op.op_type + " | ");
    ASSERT_NE(row, std::string::npos) << op.op_type;
    const std::string line = md.substr(row, md.find('\n', row) - row);
    EXPECT_NE(line.find("| opset " + std::to_string(op.since_opset) + " (ONNX " + op.since_release +
                        ") |"),
              std::string::npos)
        << line;
  }
  EXPECT_NE(md.find(std::to_string(Operators().size()) + " operators."), std::string::npos);
}

// The axqc binary: $AXQC_BIN, else the build's AXQC_BIN_PATH.
std::string AxqcBin() {
  if (const char* env = std::getenv("AXQC_BIN"); env != nullptr && *env != '\0') return env;
#ifdef AXQC_BIN_PATH
  return AXQC_BIN_PATH;
#else
  return {};
#endif
}

// `axqc rules --operators` prints exactly the matrix.
TEST(OperatorsDoc, CliPrintsTheMatrix) {
  const std::string bin = AxqcBin();
  if (bin.empty() || !fs::exists(bin)) GTEST_SKIP() << "axqc binary not found (set AXQC_BIN)";
  const std::string cmd = "\"" + bin + "\" rules --operators";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  ASSERT_NE(pipe, nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  EXPECT_EQ(out, OperatorsMarkdown());
}

TEST(RuleDocs, EveryCatalogRuleHasItsPage) {
  const auto dir = DocsDir();
  for (const auto& r : Rules()) {
    const auto page = dir / PageName(r.id);
    SCOPED_TRACE(std::string(r.id));
    ASSERT_TRUE(fs::exists(page)) << page << " is missing";
    const std::string text = ReadFile(page);
    EXPECT_NE(text.find("# `" + std::string(r.id) + "`"), std::string::npos)
        << "the page title names the rule ID";
    EXPECT_NE(text.find("| severity | " + std::string(SeverityName(r.severity)) + " |"),
              std::string::npos)
        << "the page states the catalog severity";
    EXPECT_NE(text.find("| check_value | " + std::string(r.check_value ? "yes" : "no")),
              std::string::npos)
        << "the page states whether check_value gates the rule";
    EXPECT_NE(text.find("| spec section | " + std::string(r.section) + " |"), std::string::npos)
        << "the page states the catalog spec section";
  }
}

// The "Code and tests" section of a rule page, from the registry entry (core/src/rules.def).
std::string CodeSection(const RuleInfo& r) {
  auto links = [](std::string_view list) {
    std::istringstream in{std::string(list)};
    std::string out;
    for (std::string f; in >> f;) {
      out += (out.empty() ? "" : ", ") + std::string("[`") + f + "`](../../" + f + ")";
    }
    return out;
  };
  return "## Code and tests\n\n"
         "- Handle: `rules::" +
         HandleName(r.id) +
         "` in the rule registry [`core/src/rules.def`](../../core/src/rules.def)\n" +
         "- Code: " + links(r.implementation) + "\n" + "- Tests: " + links(r.tests) + "\n\n";
}

// Rewrites the section in place (AXQC_UPDATE_RULE_PAGES=1): replaces an existing one, else
// inserts it before "## Related".
std::string WithCodeSection(std::string text, const std::string& section) {
  const auto at = text.find("## Code and tests\n");
  if (at != std::string::npos) {
    const auto next = text.find("\n## ", at + 1);
    text.erase(at, next == std::string::npos ? std::string::npos : next + 1 - at);
  }
  auto related = text.find("## Related\n");
  if (related == std::string::npos) related = text.size();
  text.insert(related, section);
  return text;
}

// scripts/new_rule.py writes a page whose sections are marked as still to be written; no page
// keeps such a marker.
TEST(RuleDocs, NoPageLeftAsWritten) {
  for (const auto& r : Rules()) {
    const auto page = DocsDir() / PageName(r.id);
    EXPECT_EQ(ReadFile(page).find("new_rule.py: write this section"), std::string::npos)
        << page << ": write the sections scripts/new_rule.py left as stubs";
  }
}

TEST(RuleDocs, EveryPageNamesTheCodeAndTheTests) {
  const bool update = std::getenv("AXQC_UPDATE_RULE_PAGES") != nullptr;
  for (const auto& r : Rules()) {
    SCOPED_TRACE(std::string(r.id));
    const auto page = DocsDir() / PageName(r.id);
    std::string text = ReadFile(page);
    ASSERT_FALSE(text.empty()) << page;
    const std::string section = CodeSection(r);
    if (update) {
      text = WithCodeSection(text, section);
      std::ofstream(page, std::ios::binary) << text;
    }
    EXPECT_NE(text.find(section), std::string::npos)
        << page << " lacks the registry's code and tests; regenerate the section with\n"
        << "  AXQC_UPDATE_RULE_PAGES=1 build/release/tests/operators_doc_test "
           "--gtest_filter=RuleDocs.*\nexpected:\n"
        << section;
  }
}

// The "Causes and consequences" section of a rule page, from the causal-link table
// (core/src/causes.cc): every link that names the rule, as cause or as consequence.
std::string CausesSection(const RuleInfo& r) {
  std::string caused_by, causes;
  for (const auto& l : detail::CausalLinks()) {
    const std::string rel =
        "(" + std::string(detail::RelationName(l.relation)) + "): " + std::string(l.why) + "\n";
    if (l.consequence.id() == r.id) {
      caused_by += "- caused by [`" + std::string(l.cause.id()) + "`](" + PageName(l.cause.id()) +
                   ") " + rel;
    }
    if (l.cause.id() == r.id) {
      causes += "- causes [`" + std::string(l.consequence.id()) + "`](" +
                PageName(l.consequence.id()) + ") " + rel;
    }
  }
  std::string s = "## Causes and consequences\n\n";
  if (caused_by.empty() && causes.empty()) {
    s += "No causal link names this rule: its findings are root causes unless they lie on a "
         "recognised producer artifact, whose anchor finding they are then folded under.\n";
  } else {
    s += "The report folds a finding under the finding that causes it (the `cause` field):\n\n" +
         caused_by + causes +
         "\nAny finding on a recognised producer artifact is also folded under the artifact's "
         "anchor finding.\n";
  }
  return s + "See [Root causes and hints](../causes.md).\n\n";
}

TEST(RuleDocs, EveryPageNamesItsCausalLinks) {
  const bool update = std::getenv("AXQC_UPDATE_RULE_PAGES") != nullptr;
  for (const auto& r : Rules()) {
    SCOPED_TRACE(std::string(r.id));
    const auto page = DocsDir() / PageName(r.id);
    std::string text = ReadFile(page);
    ASSERT_FALSE(text.empty()) << page;
    const std::string section = CausesSection(r);
    if (update) {
      const auto at = text.find("## Causes and consequences\n");
      if (at != std::string::npos) {
        const auto next = text.find("\n## ", at + 1);
        text.erase(at, next == std::string::npos ? std::string::npos : next + 1 - at);
      }
      auto code = text.find("## Code and tests\n");
      if (code == std::string::npos) code = text.size();
      text.insert(code, section);
      std::ofstream(page, std::ios::binary) << text;
    }
    EXPECT_NE(text.find(section), std::string::npos)
        << page << " lacks the causal links of core/src/causes.cc; regenerate the section with\n"
        << "  AXQC_UPDATE_RULE_PAGES=1 build/release/tests/operators_doc_test "
           "--gtest_filter=RuleDocs.*\nexpected:\n"
        << section;
  }
}

TEST(RuleDocs, IndexLinksEveryPageAndNoStrayPages) {
  const auto dir = DocsDir();
  const std::string index = ReadFile(dir / "README.md");
  ASSERT_FALSE(index.empty()) << dir / "README.md";
  std::set<std::string> pages;
  for (const auto& r : Rules()) {
    pages.insert(PageName(r.id));
    EXPECT_NE(index.find("](" + PageName(r.id) + ")"), std::string::npos) << r.id;
  }
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (name == "README.md" || name == "operators.md") continue;
    EXPECT_TRUE(pages.contains(name)) << name << " documents no catalog rule";
  }
}

// docs/causes.md's table of producer artifacts has one row per row of the artifact table
// (core/src/causes_hints.cc), with its `axqc fix` rewrite, or "producer:" when only the producer
// can repair it.
TEST(CausesDoc, ListsEveryArtifactWithItsRewrite) {
  const std::string doc = ReadFile(DocsDir().parent_path() / "causes.md");
  const auto at = doc.find("### Producer artifacts and hints");
  ASSERT_NE(at, std::string::npos);
  std::set<std::string> listed;
  std::istringstream lines(doc.substr(at, doc.find("\n## ", at) - at));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const auto end = line.find('`', 3);
    const std::string id = line.substr(3, end - 3);
    listed.insert(id);
    SCOPED_TRACE(id);
    const detail::ArtifactSpec* a = detail::FindArtifact(id);
    ASSERT_NE(a, nullptr) << "docs/causes.md lists a hint the artifact table does not have";
    const std::string fix = line.substr(line.rfind(" | ") + 3);
    if (a->rewrite.empty()) {
      EXPECT_EQ(fix.rfind("producer:", 0), 0u) << fix;
    } else {
      EXPECT_EQ(fix.rfind("`" + std::string(a->rewrite) + "`", 0), 0u) << fix;
    }
  }
  std::set<std::string> table;
  for (const auto& a : detail::ArtifactTable()) {
    table.insert(std::string(a.hint_id));
    EXPECT_EQ(&detail::Artifact(a.id), &a);
    EXPECT_EQ(detail::HintOf(a.id).id, a.hint_id);
  }
  EXPECT_EQ(table.size(), detail::ArtifactTable().size()) << "a hint ID used twice";
  EXPECT_EQ(listed, table);
}

}  // namespace
}  // namespace axqc::test
