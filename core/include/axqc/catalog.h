// The rule catalog: every rule ID of the ax quant spec with its severity, spec section and summary.
// Rule IDs are a public contract (reports, CI scripts and docs key on them): never rename one.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace axqc {

enum class Severity { kError, kWarn, kInfo };

std::string_view SeverityName(Severity s);  // "error", "warn", "info"

struct RuleInfo {
  std::string_view id;              // e.g. "qdq/scale-value"
  Severity severity;                // default severity
  bool check_value;                 // true: runs only with check_value (-c)
  std::string_view section;         // spec section, e.g. "3.1"
  std::string_view summary;         // one line
  std::string_view fix;             // how a fix usually looks
  std::string_view implementation;  // files under core/src that emit it, space-separated
  std::string_view tests;           // files under tests/ that assert it, space-separated
};

// All rules, in catalog order.
std::span<const RuleInfo> Rules();
// nullptr when unknown.
const RuleInfo* FindRule(std::string_view id);
// The known rule whose ID is closest to an unknown `id` (a misspelling: at most a third of its
// characters differ, at least 2), for "did you mean"; nullptr when none is that close.
const RuleInfo* ClosestRule(std::string_view id);
// The name of a rule's page under docs/rules, without ".md": "qdq/scale-value" ->
// "qdq--scale-value".
std::string RulePageName(std::string_view id);
// The link to a rule's page under the base `rules_url` (the reports' --rules-url): each "{page}"
// in it replaced by RulePageName(id) (a docs site, "https://docs.example.com/rules/{page}/"),
// else RulePageName(id) + ".md" appended (a folder of the Markdown pages).
std::string RuleUrl(std::string_view rules_url, std::string_view id);

// Version of the rule set; part of every cache key and report.
inline constexpr std::string_view kRuleSetVersion = "2026.12.1";

}  // namespace axqc
