#include <algorithm>
#include <map>
#include <tuple>

#include "axqc/report.h"

namespace axqc {

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kConformant: return "conformant";
    case Verdict::kNonConformant: return "non_conformant";
    case Verdict::kNotApplicable: return "not_applicable";
  }
  return "non_conformant";
}

void FinalizeReport(Report& report, std::size_t max_locations) {
  Summary& s = report.summary;
  s.errors = s.warnings = s.infos = 0;
  s.by_rule.clear();
  s.errors_by_op.clear();
  report.groups.clear();
  std::map<std::pair<std::string, std::string>, std::size_t> index;
  for (const auto& f : report.findings) {
    switch (f.severity) {
      case Severity::kError: ++s.errors; break;
      case Severity::kWarn: ++s.warnings; break;
      case Severity::kInfo: ++s.infos; break;
    }
    s.by_rule[f.rule]++;
    if (f.severity == Severity::kError && !f.op_type.empty()) s.errors_by_op[f.op_type]++;
    auto key = std::make_pair(f.rule, f.group_key);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, report.groups.size()).first;
      FindingGroup g;
      g.rule = f.rule;
      g.severity = f.severity;
      g.section = f.section;
      g.summary = f.group_key;
      report.groups.push_back(std::move(g));
    }
    auto& g = report.groups[it->second];
    ++g.count;
    if (g.first.size() < max_locations) g.first.push_back(f);
  }
  // Groups: errors first, then warnings, then infos; within a severity by first appearance.
  std::stable_sort(report.groups.begin(), report.groups.end(),
                   [](const FindingGroup& a, const FindingGroup& b) {
                     return static_cast<int>(a.severity) < static_cast<int>(b.severity);
                   });
  report.verdict = s.errors > 0 ? Verdict::kNonConformant : Verdict::kConformant;
}

}  // namespace axqc
