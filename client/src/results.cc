// What local and remote mode share once the reports are there (cli.h): the CI gate (PrepareGate,
// ApplyGateToResults), the exit codes of targets and not_applicable, and the output of every
// format (EmitResults).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "axqc/gate.h"
#include "axqc/pulsar2.h"
#include "axqc/render.h"
#include "axqc/render_graph.h"
#include "cli.h"
#include "config.h"
#include "exit_codes.h"

namespace axqc::cli {

namespace fs = std::filesystem;

namespace {

std::string DirOf(const std::string& file) {
  const fs::path parent = fs::path(file).parent_path();
  return parent.empty() ? "." : parent.string();
}

// Reads a baseline file; prints why and returns nullopt when it cannot be used.
std::optional<Baseline> ReadBaseline(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "axqc: baseline " << path << ": cannot read the file\n";
    return std::nullopt;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  try {
    return BaselineFromJson(nlohmann::json::parse(buf.str()));
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "axqc: baseline " << path << ": not JSON: " << e.what() << "\n";
  } catch (const std::invalid_argument& e) {
    std::cerr << "axqc: baseline " << path << ": " << e.what() << "\n";
  }
  return std::nullopt;
}

// `text` with every line indented by `n` spaces (JSON text: line breaks are structural only).
std::string Indent(const std::string& text, std::size_t n) {
  const std::string pad(n, ' ');
  std::string out = pad;
  out.reserve(text.size() + text.size() / 8);
  for (const char c : text) {
    out.push_back(c);
    if (c == '\n') out += pad;
  }
  return out;
}

// --statistics: the findings of one rule over every report of the run.
struct RuleCount {
  std::string rule;
  Severity severity = Severity::kInfo;  // the most severe of its findings
  std::size_t count = 0;
  std::size_t waived = 0;
  std::size_t baselined = 0;
  std::string summary;  // the catalog's ("" for a rule this build does not know)
};

// Most findings first, then by rule ID (like `ruff --statistics`).
std::vector<RuleCount> CountByRule(const std::vector<ModelResult>& results) {
  std::map<std::string, RuleCount> by_rule;
  for (const auto& r : results) {
    if (!r.ok) continue;
    for (const auto& f : r.report.findings) {
      RuleCount& c = by_rule[f.rule];
      if (c.count == 0) {
        c.rule = f.rule;
        c.severity = f.severity;
        if (const RuleInfo* info = FindRule(f.rule)) c.summary = std::string(info->summary);
      }
      if (static_cast<int>(f.severity) < static_cast<int>(c.severity)) c.severity = f.severity;
      ++c.count;
      if (f.state == FindingState::kWaived) ++c.waived;
      if (f.state == FindingState::kBaselined) ++c.baselined;
    }
  }
  std::vector<RuleCount> out;
  out.reserve(by_rule.size());
  for (auto& [rule, c] : by_rule) out.push_back(std::move(c));
  std::stable_sort(out.begin(), out.end(),
                   [](const RuleCount& a, const RuleCount& b) { return a.count > b.count; });
  return out;
}

// One line per rule: count, rule ID, severity, summary; waived and baselined findings noted.
std::string StatisticsText(const std::vector<RuleCount>& counts) {
  std::size_t count_width = 1;
  std::size_t rule_width = 1;
  for (const auto& c : counts) {
    count_width = std::max(count_width, std::to_string(c.count).size());
    rule_width = std::max(rule_width, c.rule.size());
  }
  std::ostringstream o;
  for (const auto& c : counts) {
    const std::string n = std::to_string(c.count);
    const std::string sev(SeverityName(c.severity));
    o << std::string(count_width - n.size(), ' ') << n << "  " << c.rule
      << std::string(rule_width - c.rule.size(), ' ') << "  " << sev
      << std::string(5 - std::min<std::size_t>(5, sev.size()), ' ') << "  " << c.summary;
    if (c.waived > 0 || c.baselined > 0) {
      o << " (";
      if (c.waived > 0) o << c.waived << " waived" << (c.baselined > 0 ? ", " : "");
      if (c.baselined > 0) o << c.baselined << " baselined";
      o << ")";
    }
    o << "\n";
  }
  return o.str();
}

}  // namespace

std::optional<GateSetup> PrepareGate(CheckArgs& args) {
  GateSetup g;
  std::optional<Config> cfg;
  try {
    if (!args.config.empty()) {
      cfg = LoadConfig(args.config);
    } else if (!args.no_config) {
      std::error_code ec;
      if (auto found = FindConfig(fs::current_path(ec))) cfg = LoadConfig(found->string());
    }
  } catch (const ConfigError& e) {
    std::cerr << "axqc: configuration " << e.what() << "\n";
    return std::nullopt;
  }
  GatePolicy& p = g.policy;
  p.today = TodayUtc();
  if (cfg) {
    if (!args.check_value_given && cfg->check_value) args.check_value = *cfg->check_value;
    if (!args.max_locations_given && cfg->max_locations) args.max_locations = *cfg->max_locations;
    p.config = cfg->path;
    p.config_dir = cfg->dir;
    p.waivers = cfg->waivers;
    if (cfg->fail_on) p.fail_on = *cfg->fail_on;
    if (cfg->fail_on_not_applicable && !args.fail_on_not_applicable) {
      args.fail_on_not_applicable = *cfg->fail_on_not_applicable;
    }
  }
  if (!args.fail_on.empty())
    p.fail_on = args.fail_on == "warn" ? Severity::kWarn : Severity::kError;
  // Rules: as ruff composes them, --select replaces the configuration's select and ignore,
  // --ignore adds to the ignore in force.
  for (const auto* list : {&args.select, &args.ignore}) {
    for (const auto& selector : *list) {
      const std::string problem = CheckRuleSelector(selector);
      if (!problem.empty()) {
        std::cerr << "axqc: " << (list == &args.select ? "--select" : "--ignore") << ": " << problem
                  << "\n";
        return std::nullopt;
      }
    }
  }
  if (cfg) {
    if (cfg->select) p.selection.select = *cfg->select;
    p.selection.ignore = cfg->ignore;
  }
  if (args.select_given) {
    p.selection.select = args.select;
    p.selection.ignore.clear();
  }
  p.selection.ignore.insert(p.selection.ignore.end(), args.ignore.begin(), args.ignore.end());
  // The baseline judged against: --baseline, else the configuration's; with --write-baseline and
  // no --baseline, the one written (ApplyGateToResults).
  std::string baseline = args.baseline;
  if (baseline.empty() && args.write_baseline.empty() && cfg) baseline = cfg->baseline;
  if (!baseline.empty()) {
    auto b = ReadBaseline(baseline);
    if (!b) return std::nullopt;
    p.baseline = std::move(*b);
    p.baseline_path = baseline;
    p.baseline_dir = DirOf(baseline);
  }
  g.write_baseline = args.write_baseline;
  if (!g.write_baseline.empty()) {
    std::error_code ec;
    if (fs::exists(g.write_baseline, ec)) {
      // Its entries of models not checked in this run are kept.
      g.previous = ReadBaseline(g.write_baseline);
      if (!g.previous) {
        std::cerr << "axqc: --write-baseline " << g.write_baseline
                  << " names a file that is not a baseline; remove it or choose another path\n";
        return std::nullopt;
      }
    }
  }
  p.active =
      cfg.has_value() || !baseline.empty() || !args.fail_on.empty() || !g.write_baseline.empty();
  return g;
}

bool ApplyGateToResults(const CheckArgs& args, GateSetup& gate, std::vector<ModelResult>& results) {
  GatePolicy& p = gate.policy;
  std::vector<Report> reports;
  for (auto& r : results) {
    if (!r.ok) continue;
    ApplyRuleSelection(p.selection, r.report, args.max_locations);
    reports.push_back(std::move(r.report));
  }
  // Stale waivers end up in the reports' gates (rendered once per run by EmitResults).
  ApplyGate(p, reports, args.max_locations);
  if (!gate.write_baseline.empty()) {
    const std::string dir = DirOf(gate.write_baseline);
    Baseline b = MakeBaseline(reports, dir, gate.previous ? &*gate.previous : nullptr);
    std::size_t entries = 0;
    for (const auto& m : b.models) {
      for (const auto& e : m.findings) entries += e.count;
    }
    {
      std::ofstream out(gate.write_baseline, std::ios::binary | std::ios::trunc);
      out << BaselineToJson(b).dump(2) << "\n";
      out.flush();
      if (!out) {
        std::cerr << "axqc: cannot write the baseline " << gate.write_baseline << "\n";
        return false;
      }
    }
    std::cerr << "axqc: wrote the baseline " << gate.write_baseline << ": " << entries << " finding"
              << (entries == 1 ? "" : "s") << " of " << b.models.size() << " model"
              << (b.models.size() == 1 ? "" : "s") << "\n";
    if (args.baseline.empty()) {
      p.baseline = std::move(b);
      p.baseline_path = gate.write_baseline;
      p.baseline_dir = dir;
      ApplyGate(p, reports, args.max_locations);
    }
  }
  std::size_t next = 0;
  std::size_t fixed = 0;
  for (auto& r : results) {
    if (!r.ok) continue;
    r.report = std::move(reports[next++]);
    r.exit_code = ExitCodeFor(r.report.gate);
    fixed += r.report.gate.baseline_fixed;
  }
  if (fixed > 0 && gate.write_baseline.empty() && args.format != "text") {
    std::cerr << "axqc: " << fixed << " finding" << (fixed == 1 ? "" : "s") << " of the baseline "
              << p.baseline_path << (fixed == 1 ? " is" : " are")
              << " gone; shrink it with --write-baseline " << p.baseline_path << "\n";
  }
  return true;
}

int EmitResults(const CheckArgs& args, const std::vector<ModelResult>& results) {
  std::ofstream file;
  std::ostream* out = &std::cout;
  if (!args.output.empty()) {
    file.open(args.output);
    if (!file) {
      std::cerr << "axqc: cannot write " << args.output << "\n";
      return kExitError;
    }
    out = &file;
  }
  int worst = 0;
  std::vector<Report> reports;  // copies, for the CI formats only
  const bool ci_format = args.format == "junit" || args.format == "sarif" ||
                         args.format == "github" || args.format == "gitlab" ||
                         args.github_annotations;
  std::vector<ModelError> errors;
  std::vector<StaleWaiver> stale;  // of the whole run, once each
  std::set<std::string> stale_seen;
  for (const auto& r : results) {
    if (ExitCodeRank(r.exit_code) > ExitCodeRank(worst)) worst = r.exit_code;
    if (r.ok) {
      if (ci_format) reports.push_back(r.report);
      for (const auto& w : r.report.gate.stale_waivers) {
        if (stale_seen.insert(w.source).second) stale.push_back(w);
      }
    } else {
      std::cerr << "axqc: " << r.error_kind << ": " << r.error << "\n";
      errors.push_back({r.file, r.error, r.exit_code != kExitNoVerdict});
    }
  }
  if (args.format == "json") {
    // One document whatever the number of models (docs/report-schema.md): each entry of
    // "reports" is the model's report object as the service returns it (RenderJson: written
    // directly, without a JSON tree of the findings), or its input error.
    *out << "{\n  \"schema\": \"" << kReportDocumentSchema << "\",\n  \"reports\": [";
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      std::string entry = r.ok ? RenderJson(r.report)
                               : nlohmann::json{{"schema", Report::kSchema},
                                                {"model", {{"file", r.file}}},
                                                {"verdict", nullptr},
                                                {"input_error", r.error}}
                                     .dump(2);
      while (!entry.empty() && entry.back() == '\n') entry.pop_back();
      *out << (i == 0 ? "\n" : ",\n") << Indent(entry, 4);
    }
    *out << "\n  ]";
    if (args.statistics) {
      nlohmann::ordered_json stats = nlohmann::ordered_json::array();
      for (const auto& c : CountByRule(results)) {
        stats.push_back({{"rule", c.rule},
                         {"severity", SeverityName(c.severity)},
                         {"count", c.count},
                         {"waived", c.waived},
                         {"baselined", c.baselined},
                         {"summary", c.summary}});
      }
      std::string text = stats.dump(2);
      *out << ",\n  \"statistics\": " << Indent(text, 2).substr(2);
    }
    *out << "\n}\n";
  } else if (args.format == "html" || args.format == "dot") {
    // One model per page; a model that could not be checked has no page (its error is above).
    for (const auto& r : results) {
      if (!r.ok) continue;
      if (args.format == "dot") {
        if (r.report.graph) {
          *out << RenderDot(r.report);
        } else {
          std::cerr << "axqc: " << r.file << ": the report carries no graph\n";
          worst = WorstExitCode(worst, kExitError);
        }
      } else {
        HtmlOptions html;
        html.rules_url = args.rules_url;
        *out << RenderHtml(r.report, html);
      }
    }
  } else if (args.format == "junit") {
    *out << RenderJunit(reports, errors);
  } else if (args.format == "sarif") {
    *out << RenderSarif(reports, errors, args.rules_url);
  } else if (args.format == "github") {
    *out << RenderGithub(reports, errors);
  } else if (args.format == "gitlab") {
    *out << RenderGitlab(reports, errors);
  } else {
    const bool tty = args.output.empty() && ::isatty(STDOUT_FILENO) != 0;
    TextOptions text;
    text.color = args.color == "always" || (args.color == "auto" && tty);
    text.explain = args.explain;
    bool first = true;
    for (const auto& r : results) {
      if (!r.ok || args.statistics) continue;
      if (!first) *out << "\n";
      first = false;
      *out << RenderText(r.report, text);
    }
    if (args.statistics) *out << StatisticsText(CountByRule(results));
    if (!stale.empty()) {
      *out << "\nstale waivers:\n";
      for (const auto& w : stale) *out << "  " << w.source << ": " << w.Message() << "\n";
    }
  }
  // Machine-readable formats carry the stale waivers themselves (text: above); a line each on
  // stderr for the job log.
  if (args.format != "text") {
    for (const auto& w : stale) std::cerr << "axqc: " << w.source << ": " << w.Message() << "\n";
  }
  out->flush();
  if (!*out) {
    std::cerr << "axqc: cannot write the report\n";
    return kExitError;
  }
  // Annotations for GitHub Actions beside another report: on stderr (the runner reads workflow
  // commands from both streams), so stdout stays the report.
  if (args.github_annotations && args.format != "github")
    std::cerr << RenderGithub(reports, errors);
  // --exit-zero: findings and not_applicable models pass; input errors (2) and a missing verdict
  // of the server (4) still fail.
  if (args.exit_zero && (worst == 1 || worst == ExitCodeFor(Verdict::kNotApplicable))) worst = 0;
  return worst;
}

void ApplyNotApplicableExitCodes(const CheckArgs& args, std::vector<ModelResult>& results) {
  if (!args.fail_on_not_applicable) return;
  for (auto& r : results) {
    if (r.ok && r.report.verdict == Verdict::kNotApplicable && r.exit_code == kExitNotApplicable) {
      r.exit_code = kExitFail;
    }
  }
}

void ApplyTargetExitCodes(const CheckArgs& args, std::vector<ModelResult>& results) {
  if (args.targets.empty() && !args.pulsar2_config_text) return;
  for (auto& r : results) {
    if (!r.ok || ExitCodeRank(r.exit_code) >= ExitCodeRank(kExitFail)) continue;
    const bool blocked =
        std::any_of(r.report.findings.begin(), r.report.findings.end(), [](const Finding& f) {
          return (IsTargetRule(f.rule) || IsPulsar2Rule(f.rule)) &&
                 f.severity == Severity::kError && f.state == FindingState::kCounted;
        });
    if (blocked) r.exit_code = kExitFail;
  }
}

}  // namespace axqc::cli
