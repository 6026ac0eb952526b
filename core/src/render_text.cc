// The text report (render.h: RenderText): headline, root causes first with their consequences
// folded under them and the `axqc fix` command that repairs a cause, then the finding groups.
#include <sstream>

#include "axqc/render.h"
#include "fix_command.h"

namespace axqc {

namespace {

const char* Color(Severity s) {
  switch (s) {
    case Severity::kError:
      return "\033[31m";
    case Severity::kWarn:
      return "\033[33m";
    case Severity::kInfo:
      return "\033[36m";
  }
  return "";
}

}  // namespace

std::string RenderText(const Report& r, const TextOptions& o) {
  std::ostringstream os;
  auto c = [&](const char* code) { return o.color ? code : ""; };
  const char* reset = o.color ? "\033[0m" : "";
  const char* bold = o.color ? "\033[1m" : "";
  const char* vcol = r.verdict == Verdict::kConformant      ? "\033[32m"
                     : r.verdict == Verdict::kNotApplicable ? "\033[36m"
                                                            : "\033[31m";
  std::string verdict(VerdictName(r.verdict));
  for (auto& ch : verdict) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  const auto& s = r.summary;
  os << bold << r.model.file << reset << ": " << c(vcol) << bold << verdict << reset << "  (";
  if (s.causes > 0) os << s.causes << (s.causes == 1 ? " cause; " : " causes; ");
  os << s.errors << (s.errors == 1 ? " error, " : " errors, ") << s.warnings
     << (s.warnings == 1 ? " warning, " : " warnings, ") << s.infos << " info)"
     << (r.check_value ? "  [check_value on]" : "") << "\n";
  os << "  sha256 " << r.model.sha256 << "  IR " << r.model.ir_version << "  opsets";
  for (const auto& [d, v] : r.model.opsets) os << " " << (d.empty() ? "ai.onnx" : d) << ":" << v;
  if (!r.model.producer_name.empty()) {
    os << "  producer " << r.model.producer_name << " " << r.model.producer_version;
  }
  os << "\n  nodes " << r.model.node_count << " (Q " << r.model.q_count << ", DQ "
     << r.model.dq_count << "), Q/DQ edges " << s.qdq_edges << " (owned " << s.owned_qdq_edges
     << ")\n";
  // Root causes first, each with its consequences folded under it (GroupCauses); within a
  // cause, findings by rule and kind in order of first appearance.
  std::size_t max_locations = 1;
  for (const auto& g : r.groups) max_locations = std::max(max_locations, g.first.size());
  struct Sub {
    std::string rule;
    std::string kind;
    Severity severity = Severity::kInfo;
    std::vector<std::size_t> at;
  };
  auto split = [&](const std::vector<std::size_t>& idx) {
    std::vector<Sub> subs;
    std::map<std::pair<std::string, std::string>, std::size_t> where;
    for (std::size_t i : idx) {
      const Finding& f = r.findings[i];
      auto [it, added] = where.emplace(std::make_pair(f.rule, f.group_key), subs.size());
      if (added) subs.push_back({f.rule, f.group_key, f.severity, {}});
      subs[it->second].at.push_back(i);
    }
    return subs;
  };
  auto gate_note = [&](const Sub& sub) -> std::string {
    if (!r.gate.active) return "";
    std::size_t waived = 0, baselined = 0;
    for (std::size_t i : sub.at) {
      waived += r.findings[i].state == FindingState::kWaived ? 1 : 0;
      baselined += r.findings[i].state == FindingState::kBaselined ? 1 : 0;
    }
    const std::size_t n = sub.at.size();
    if (waived + baselined == 0) return "";
    if (waived + baselined == n) {
      return waived == n      ? "  [waived]"
             : baselined == n ? "  [in the baseline]"
                              : "  [waived or in the baseline]";
    }
    std::string t = "  [" + std::to_string(n - waived - baselined) + " new";
    if (waived > 0) t += ", " + std::to_string(waived) + " waived";
    if (baselined > 0) t += ", " + std::to_string(baselined) + " in the baseline";
    return t + "]";
  };
  auto location = [&](const Finding& f, const char* indent) {
    os << indent << "- " << f.message;
    if (!f.nodes.empty()) os << "  (node " << f.nodes.front() << ")";
    if (f.state == FindingState::kWaived) {
      os << "  [waived: " << f.waiver_reason << " (" << f.waiver_source << ")]";
    } else if (f.state == FindingState::kBaselined) {
      os << "  [baseline]";
    }
    os << "\n";
  };
  // "error RULE [section] xN: kind", then the first `shown` locations under `indent`.
  auto print_sub = [&](const Sub& sub, const std::string& head, const std::string& indent,
                       std::size_t shown, const std::string& tail) {
    const RuleInfo* info = FindRule(sub.rule);
    const std::string section = info ? std::string(info->section) : r.findings[sub.at[0]].section;
    os << head << c(Color(sub.severity)) << SeverityName(sub.severity) << reset << " " << bold
       << sub.rule << reset << " [" << section << "]";
    if (sub.at.size() > 1) os << " x" << sub.at.size();
    os << ": " << sub.kind << gate_note(sub) << tail << "\n";
    for (std::size_t k = 0; k < sub.at.size() && k < shown; ++k) {
      location(r.findings[sub.at[k]], indent.c_str());
    }
    if (sub.at.size() > shown) {
      os << indent << "... and " << (sub.at.size() - shown) << " more\n";
    }
  };
  const auto causes = GroupCauses(r);
  std::size_t number = 0;
  for (const auto& cause : causes) {
    const bool note = cause.severity == Severity::kInfo;
    const std::size_t total = cause.roots.size() + cause.consequences.size();
    std::string counts;
    if (!cause.consequences.empty()) {
      counts = "  (" + std::to_string(total) + " findings: " + std::to_string(cause.roots.size()) +
               " at the root, " + std::to_string(cause.consequences.size()) +
               (cause.consequences.size() == 1 ? " consequence)" : " consequences)");
    }
    const std::string label =
        note ? std::string("note: ")
             : "cause " + std::to_string(++number) + " of " + std::to_string(s.causes) + ": ";
    const auto roots = split(cause.roots);
    os << "\n";
    if (cause.hint.id.empty()) {
      // One rule and kind: the cause is that finding group.
      print_sub(roots.front(), label, "    ", max_locations, counts);
    } else {
      os << label << bold << cause.hint.title << reset << counts << "\n";
      for (const auto& sub : roots) print_sub(sub, "  ", "    ", max_locations, "");
    }
    if (!cause.consequences.empty()) {
      os << "  caused by it:\n";
      for (const auto& sub : split(cause.consequences)) print_sub(sub, "    ", "      ", 1, "");
    }
    if (!cause.hint.id.empty()) {
      os << "  hint [" << cause.hint.id << "]: " << cause.hint.text << "\n";
      if (!cause.hint.rewrite.empty()) {
        os << "  fix: " << detail::FixCommand(r.model.file, cause.hint.rewrite) << "\n";
      }
    } else if (!note) {
      if (const auto* info = FindRule(roots.front().rule)) os << "    fix: " << info->fix << "\n";
    }
  }
  if (!r.targets.empty()) {
    os << "\n  targets (documented NPU operator tables; not part of the spec verdict):\n";
    for (const auto& t : r.targets) {
      const char* tcol = t.verdict == TargetVerdict::kFits         ? "\033[32m"
                         : t.verdict == TargetVerdict::kDoesNotFit ? "\033[31m"
                                                                   : "\033[33m";
      os << "    " << t.name << std::string(t.name.size() < 8 ? 8 - t.name.size() : 1, ' ')
         << c(tcol) << TargetVerdictName(t.verdict) << reset;
      if (t.errors + t.notes > 0)
        os << "  (" << t.errors << (t.errors == 1 ? " error, " : " errors, ") << t.notes
           << (t.notes == 1 ? " note)" : " notes)");
      os << "\n";
    }
  }
  if (!s.units_by_kind.empty()) {
    os << "\n  units:";
    for (const auto& [k, n] : s.units_by_kind) os << " " << k << "=" << n;
    os << "\n";
  }
  if (!s.errors_by_op.empty()) {
    os << "  errors by op:";
    for (const auto& [k, n] : s.errors_by_op) os << " " << k << "=" << n;
    os << "\n";
  }
  if (r.gate.active) {
    const auto& g = r.gate;
    const char* gcol = g.verdict == GateVerdict::kPass   ? "\033[32m"
                       : g.verdict == GateVerdict::kFail ? "\033[31m"
                                                         : "\033[36m";
    std::string name(GateVerdictName(g.verdict));
    for (auto& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    os << "\n  gate: " << c(gcol) << bold << name << reset << "  (fail on "
       << SeverityName(g.fail_on) << "; " << (g.baseline.empty() ? "counted " : "new ")
       << g.counted.errors << (g.counted.errors == 1 ? " error, " : " errors, ")
       << g.counted.warnings << (g.counted.warnings == 1 ? " warning" : " warnings");
    if (g.waived.total() > 0) os << "; waived " << g.waived.total();
    if (!g.baseline.empty()) os << "; in the baseline " << g.baselined.total();
    if (!g.stale_waivers.empty()) {
      os << "; " << g.stale_waivers.size() << " stale waiver"
         << (g.stale_waivers.size() == 1 ? "" : "s");
    }
    os << ")\n";
    if (g.baseline_fixed > 0) {
      os << "  baseline: " << g.baseline_fixed << " known finding"
         << (g.baseline_fixed == 1 ? " is" : "s are")
         << " gone; shrink the baseline with --write-baseline " << g.baseline << "\n";
    }
  }
  if (o.explain) {
    os << "\n  ownership map:\n";
    for (const auto& u : r.units) {
      os << "    #" << u.id << " " << u.kind << " " << u.op_type;
      if (!u.mode.empty()) os << " (" << u.mode << ")";
      os << ": ";
      for (std::size_t i = 0; i < u.nodes.size(); ++i) os << (i ? ", " : "") << u.nodes[i];
      if (!u.input_qdq.empty()) {
        os << "  in:";
        for (const auto& n : u.input_qdq) os << " " << n;
      }
      if (!u.output_qdq.empty()) {
        os << "  out:";
        for (const auto& n : u.output_qdq) os << " " << n;
      }
      os << "\n";
    }
  }
  return os.str();
}

}  // namespace axqc
