#include "axqc/report.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "axqc/pulsar2.h"

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

std::string_view TargetVerdictName(TargetVerdict v) {
  switch (v) {
    case TargetVerdict::kFits: return "fits";
    case TargetVerdict::kDoesNotFit: return "does_not_fit";
    case TargetVerdict::kFitsWithNotes: return "fits_with_notes";
  }
  return "does_not_fit";
}

TargetVerdict TargetVerdictFromName(std::string_view name) {
  if (name == "fits") return TargetVerdict::kFits;
  if (name == "fits_with_notes") return TargetVerdict::kFitsWithNotes;
  return TargetVerdict::kDoesNotFit;
}

bool IsTargetRule(std::string_view rule) { return rule.starts_with("target/"); }

bool IsPulsar2Rule(std::string_view rule) { return rule.starts_with("pulsar2/"); }

void SeverityCounts::Add(Severity s) {
  switch (s) {
    case Severity::kError: ++errors; break;
    case Severity::kWarn: ++warnings; break;
    case Severity::kInfo: ++infos; break;
  }
}

std::vector<std::size_t> RootOfEach(const Report& report) {
  const auto& fs = report.findings;
  std::unordered_map<std::string_view, std::size_t> by_id;
  for (std::size_t i = 0; i < fs.size(); ++i) {
    if (!fs[i].id.empty()) by_id.emplace(fs[i].id, i);
  }
  std::vector<std::size_t> root(fs.size());
  for (std::size_t i = 0; i < fs.size(); ++i) {
    std::size_t at = i;
    // A chain longer than the report loops; such a finding is its own root.
    for (std::size_t steps = 0; !fs[at].cause.empty(); ++steps) {
      auto it = by_id.find(fs[at].cause);
      if (it == by_id.end() || steps > fs.size()) {
        at = i;
        break;
      }
      at = it->second;
    }
    root[i] = at;
  }
  return root;
}

std::vector<CauseGroup> GroupCauses(const Report& report) {
  const auto& fs = report.findings;
  const auto root = RootOfEach(report);
  std::vector<CauseGroup> out;
  std::map<std::string, std::size_t> index;
  std::vector<std::size_t> group_of(fs.size(), 0);
  for (std::size_t i = 0; i < fs.size(); ++i) {
    if (root[i] != i) continue;
    const Finding& f = fs[i];
    std::string key = f.hint.id.empty() ? f.rule + "\n" + f.group_key : f.hint.id;
    auto [it, added] = index.emplace(key, out.size());
    if (added) {
      CauseGroup g;
      g.key = std::move(key);
      g.severity = f.severity;
      g.hint = f.hint;
      out.push_back(std::move(g));
    }
    auto& g = out[it->second];
    if (static_cast<int>(f.severity) < static_cast<int>(g.severity)) g.severity = f.severity;
    g.roots.push_back(i);
    group_of[i] = it->second;
  }
  for (std::size_t i = 0; i < fs.size(); ++i) {
    if (root[i] != i) out[group_of[root[i]]].consequences.push_back(i);
  }
  std::vector<std::size_t> order(out.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = out[a];
    const auto& y = out[b];
    if (x.severity != y.severity)
      return static_cast<int>(x.severity) < static_cast<int>(y.severity);
    const std::size_t nx = x.roots.size() + x.consequences.size();
    const std::size_t ny = y.roots.size() + y.consequences.size();
    if (nx != ny) return nx > ny;
    return x.roots.front() < y.roots.front();
  });
  std::vector<CauseGroup> sorted;
  sorted.reserve(out.size());
  for (std::size_t i : order) sorted.push_back(std::move(out[i]));
  return sorted;
}

void FinalizeReport(Report& report, std::size_t max_locations) {
  Summary& s = report.summary;
  s.causes = 0;
  for (const auto& g : GroupCauses(report)) {
    if (g.severity != Severity::kInfo) ++s.causes;
  }
  s.errors = s.warnings = s.infos = 0;
  std::size_t spec_errors = 0;  // target and pulsar2 findings never change the spec verdict
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
    if (f.severity == Severity::kError && !IsTargetRule(f.rule) && !IsPulsar2Rule(f.rule))
      ++spec_errors;
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
  report.verdict = spec_errors > 0 ? Verdict::kNonConformant : Verdict::kConformant;
}

}  // namespace axqc
