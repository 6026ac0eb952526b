// The CI gate: waivers, a baseline and a failure threshold applied to checker reports, on the
// client side (the service's reports and cache stay per model). docs/ci.md describes the
// configuration file and the baseline; docs/report-schema.md the fingerprints and the JSON.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "axqc/report.h"

namespace axqc {

// Shell-style glob: '*' any run of characters ('/' included: node names are paths like
// "/backbone/conv1/Conv"), '?' one character, "[abc]", "[a-z]", "[!abc]" a class; a backslash
// escapes the next character. Case-sensitive; the whole text must match.
bool GlobMatch(std::string_view pattern, std::string_view text);

// One waiver of the configuration. A finding matches when every given selector matches; a list
// selector matches when any of its patterns does.
struct Waiver {
  std::vector<std::string> rules;         // rule ID globs
  std::vector<std::string> nodes;         // globs over the finding's node names (any of them)
  std::vector<std::string> tensors;       // globs over its tensor names (any of them)
  std::vector<std::string> op_types;      // globs over its op type
  std::vector<std::string> models;        // globs over the model file: the path as given, or
                                          // relative to the configuration's directory
  std::vector<std::string> fingerprints;  // exact Finding::fingerprint values
  std::string reason;                     // required
  std::string expires;                    // "YYYY-MM-DD": the last day it applies; "" = never
  std::string file;                       // where it is declared (for messages)
  int line = 0;

  std::string Source() const;    // "axqc.toml:12"
  std::string Describe() const;  // "rule=role/* node=/backbone/*"
};

// Throws std::invalid_argument when the waiver cannot work: no reason, neither a rule nor a
// fingerprint, an empty pattern, a malformed date or fingerprint.
void ValidateWaiver(const Waiver& w);

// True when `date` is a valid "YYYY-MM-DD" calendar date.
bool IsIsoDate(std::string_view date);
// Today's date in UTC, "YYYY-MM-DD".
std::string TodayUtc();

// A baseline: the known findings of each model, by fingerprint and count.
struct BaselineEntry {
  std::string fingerprint;
  std::string rule;
  std::string severity;  // "error" or "warn"
  std::size_t count = 0;
  std::string node;     // primary node of the first occurrence (for people reading the file)
  std::string message;  // message of the first occurrence (likewise)
};

struct BaselineModel {
  std::string file;    // path relative to the baseline file's directory, or as given
  std::string sha256;  // of the model the entries were taken from
  std::vector<BaselineEntry> findings;
};

struct Baseline {
  static constexpr const char* kSchema = "axqc.baseline/v1";
  std::string tool_version;
  std::string rule_set_version;
  std::vector<BaselineModel> models;  // sorted by file
};

// Throws std::invalid_argument (wrong schema, malformed entries).
Baseline BaselineFromJson(const nlohmann::json& j);
// Keys in a fixed order (schema first), models sorted by file, entries by rule and fingerprint:
// rewriting an unchanged baseline gives the same bytes.
nlohmann::ordered_json BaselineToJson(const Baseline& b);

// The key of a model file in a baseline whose file lies in `baseline_dir`: the path relative to
// that directory when the model is a local file, else the name as given (a server reference).
std::string BaselineModelKey(const std::string& model_file, const std::string& baseline_dir);

// The baseline of `reports`: their counted errors and warnings (waived findings are left out:
// the waivers cover them). Models of `previous` that are not among the reports keep their
// entries. Model files are keyed with BaselineModelKey(file, baseline_dir).
Baseline MakeBaseline(std::span<const Report> reports, const std::string& baseline_dir,
                      const Baseline* previous = nullptr);

// Which rules a run reports: `axqc check --select/--ignore` and the `select`/`ignore` keys of the
// configuration's [check] table (docs/ci.md, "Selecting rules"). A selector is a rule ID
// ("qdq/scale-value"), a prefix ending in '/' ("qdq/") or a glob over rule IDs ("qdq/*-value").
// For each rule the most specific selector that matches it decides: an exact ID before a pattern,
// a longer pattern before a shorter one, `ignore` on a tie; an empty `select` selects every rule
// (less specific than any selector).
struct RuleSelection {
  std::vector<std::string> select;  // empty: every rule
  std::vector<std::string> ignore;
  bool all() const { return select.empty() && ignore.empty(); }
  bool Selects(std::string_view rule) const;
};

// "" when `selector` matches at least one rule of the catalog; else what is wrong, for the user,
// naming the closest rule ID or prefix when one is close ("did you mean").
std::string CheckRuleSelector(std::string_view selector);

// Removes the findings of the rules `selection` leaves out and recomputes the summary, the groups
// and the verdict from the rest (a not_applicable verdict stays: it is about Q/DQ edges, not
// findings). A finding whose cause was removed points at the nearest finding left on its cause
// chain, or none. The chip summaries (Report::targets) are left as the checker wrote them.
void ApplyRuleSelection(const RuleSelection& selection, Report& report,
                        std::size_t max_locations = 5);

struct GatePolicy {
  bool active = false;  // show the gate in the reports (a config, baseline or --fail-on was given)
  Severity fail_on = Severity::kError;  // kError or kWarn
  std::vector<Waiver> waivers;
  std::string config;      // the configuration file ("" = none), for the reports
  std::string config_dir;  // waivers' model globs also match paths relative to it
  std::optional<Baseline> baseline;
  std::string baseline_path;  // for the reports
  std::string baseline_dir;   // BaselineModelKey's directory
  std::string today;          // "YYYY-MM-DD"; "" = TodayUtc()
  // The rules of the run (ApplyRuleSelection was applied to the reports before): a waiver of
  // rules that are all left out does not apply (it is not reported unused).
  RuleSelection selection;
};

// Applies `policy` to the reports of one run: marks each finding kCounted, kWaived or
// kBaselined, fills Report::gate (counts, verdict, the stale waivers relevant to the model) and
// regroups the findings (FindingGroup::first carries the states). A waiver is stale when it has
// expired, or when it applies to a checked model and matched no finding in the whole run. A
// waiver applies to a model when its model globs match it and its rules include one that runs:
// one the selection keeps and, for a report without check_value, one that runs without -c. Returns
// the run's stale waivers.
std::vector<StaleWaiver> ApplyGate(const GatePolicy& policy, std::span<Report> reports,
                                   std::size_t max_locations = 5);


// f.fingerprint; for a finding without one (a report of a server that predates fingerprints) a
// hash of its rule, kind, op type, node and tensor names, which does not survive renames.
std::string FingerprintOf(const Finding& f);

// For each finding of `report`, its 1-based number among the findings with the same fingerprint,
// in report order. fingerprint + ":" + number is unique within a report.
std::vector<std::size_t> FingerprintOccurrences(const Report& report);

}  // namespace axqc
