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

std::string_view FindingStateName(FindingState s) {
  switch (s) {
    case FindingState::kCounted: return "counted";
    case FindingState::kWaived: return "waived";
    case FindingState::kBaselined: return "baselined";
  }
  return "counted";
}

std::string_view GateVerdictName(GateVerdict v) {
  switch (v) {
    case GateVerdict::kPass: return "pass";
    case GateVerdict::kFail: return "fail";
    case GateVerdict::kNotApplicable: return "not_applicable";
  }
  return "fail";
}

void SeverityCounts::Add(Severity s) {
  switch (s) {
    case Severity::kError: ++errors; break;
    case Severity::kWarn: ++warnings; break;
    case Severity::kInfo: ++infos; break;
  }
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
