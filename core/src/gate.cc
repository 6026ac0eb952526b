#include "axqc/gate.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <system_error>
#include <tuple>
#include <unordered_map>

#include "axqc/catalog.h"
#include "edit_distance.h"
#include "fingerprint.h"

namespace axqc {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Matches a bracket class starting at pattern[p] == '['. Sets `end` past the ']' and returns
// whether `c` is in the class; returns false with end = npos when the class is not closed.
bool MatchClass(std::string_view pattern, std::size_t p, char c, std::size_t* end) {
  std::size_t i = p + 1;
  bool negate = false;
  if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) {
    negate = true;
    ++i;
  }
  bool matched = false;
  bool first = true;
  for (; i < pattern.size(); ++i) {
    char lo = pattern[i];
    if (lo == ']' && !first) {
      *end = i + 1;
      return matched != negate;
    }
    first = false;
    if (lo == '\\' && i + 1 < pattern.size()) lo = pattern[++i];
    char hi = lo;
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      hi = pattern[i + 2];
      if (hi == '\\' && i + 3 < pattern.size()) {
        hi = pattern[i + 3];
        ++i;
      }
      i += 2;
    }
    if (lo <= c && c <= hi) matched = true;
  }
  *end = std::string_view::npos;
  return false;
}

void AddSelector(std::string& out, const char* name, const std::vector<std::string>& v) {
  if (v.empty()) return;
  if (!out.empty()) out += " ";
  out += name;
  out += "=";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i > 0 ? "," : "") + v[i];
}

bool AnyGlob(const std::vector<std::string>& patterns, std::string_view text) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return GlobMatch(p, text); });
}

bool AnyGlobOfAny(const std::vector<std::string>& patterns, const std::vector<std::string>& texts) {
  return std::any_of(texts.begin(), texts.end(),
                     [&](const std::string& t) { return AnyGlob(patterns, t); });
}

// The model file relative to `dir` (both made absolute, lexically); "" when that fails.
std::string RelativePath(const std::string& file, const std::string& dir) {
  if (dir.empty() || file.empty() || file.find("://") != std::string::npos) return "";
  std::error_code ec;
  if (!fs::exists(file, ec)) return "";
  const fs::path abs_file = fs::absolute(file, ec).lexically_normal();
  if (ec) return "";
  const fs::path abs_dir = fs::absolute(dir, ec).lexically_normal();
  if (ec) return "";
  const fs::path rel = abs_file.lexically_relative(abs_dir);
  return rel.empty() ? "" : rel.generic_string();
}

struct WaiverUse {
  std::size_t matched = 0;
  bool applies = false;  // applies to at least one report of the run
};

bool WaiverAppliesTo(const Waiver& w, const Report& r, const std::string& config_dir,
                     const RuleSelection& selection) {
  if (!w.models.empty()) {
    const std::string rel = RelativePath(r.model.file, config_dir);
    if (!AnyGlob(w.models, r.model.file) && (rel.empty() || !AnyGlob(w.models, rel))) return false;
  }
  if (w.rules.empty() || (r.check_value && selection.all())) return true;
  // Without -c the value-check rules do not run, and rules left out by the selection are not
  // reported: a waiver of only those has nothing to match.
  for (const RuleInfo& info : Rules()) {
    if ((r.check_value || !info.check_value) && selection.Selects(info.id) &&
        AnyGlob(w.rules, info.id)) {
      return true;
    }
  }
  // Rules unknown to this catalog (a newer server's): assume they run.
  for (const auto& p : w.rules) {
    if (p.find_first_of("*?[") == std::string::npos && FindRule(p) == nullptr &&
        selection.Selects(p)) {
      return true;
    }
  }
  return false;
}

bool HasGlob(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

// How specifically `selector` matches `rule`: 0 = not at all; an exact ID beats every pattern,
// a longer pattern a shorter one (patterns score their length + 1, at least 2).
std::size_t SelectorScore(std::string_view selector, std::string_view rule) {
  if (selector == rule) return std::numeric_limits<std::size_t>::max();
  if (HasGlob(selector)) return GlobMatch(selector, rule) ? selector.size() + 1 : 0;
  if (!selector.empty() && selector.back() == '/' && rule.starts_with(selector)) {
    return selector.size() + 1;
  }
  return 0;
}

bool WaiverMatches(const Waiver& w, const Finding& f) {
  if (!w.rules.empty() && !AnyGlob(w.rules, f.rule)) return false;
  if (!w.fingerprints.empty() && std::find(w.fingerprints.begin(), w.fingerprints.end(),
                                           FingerprintOf(f)) == w.fingerprints.end()) {
    return false;
  }
  if (!w.nodes.empty() && !AnyGlobOfAny(w.nodes, f.nodes)) return false;
  if (!w.tensors.empty() && !AnyGlobOfAny(w.tensors, f.tensors)) return false;
  if (!w.op_types.empty() && !AnyGlob(w.op_types, f.op_type)) return false;
  return true;
}

const BaselineModel* FindBaselineModel(const Baseline& b, const std::string& key,
                                       const std::string& sha256) {
  for (const auto& m : b.models) {
    if (m.file == key) return &m;
  }
  for (const auto& m : b.models) {
    if (!sha256.empty() && m.sha256 == sha256) return &m;
  }
  return nullptr;
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view text) {
  // Iterative matcher with one backtrack point for the last '*' (linear in practice).
  std::size_t p = 0;
  std::size_t t = 0;
  std::size_t star_p = std::string_view::npos;
  std::size_t star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size()) {
      const char c = pattern[p];
      if (c == '*') {
        star_p = p++;
        star_t = t;
        continue;
      }
      if (c == '?') {
        ++p;
        ++t;
        continue;
      }
      if (c == '[') {
        std::size_t end = 0;
        const bool in = MatchClass(pattern, p, text[t], &end);
        if (end != std::string_view::npos) {
          if (in) {
            p = end;
            ++t;
            continue;
          }
        } else if (text[t] == '[') {  // an unclosed '[' is a literal
          ++p;
          ++t;
          continue;
        }
      } else {
        char lit = c;
        std::size_t next = p + 1;
        if (c == '\\' && p + 1 < pattern.size()) {
          lit = pattern[p + 1];
          next = p + 2;
        }
        if (lit == text[t]) {
          p = next;
          ++t;
          continue;
        }
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p + 1;
    t = ++star_t;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::string Waiver::Source() const { return line > 0 ? file + ":" + std::to_string(line) : file; }

std::string Waiver::Describe() const {
  std::string out;
  AddSelector(out, "rule", rules);
  AddSelector(out, "fingerprint", fingerprints);
  AddSelector(out, "node", nodes);
  AddSelector(out, "tensor", tensors);
  AddSelector(out, "op_type", op_types);
  AddSelector(out, "model", models);
  return out;
}

bool IsIsoDate(std::string_view d) {
  if (d.size() != 10 || d[4] != '-' || d[7] != '-') return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (d[i] < '0' || d[i] > '9') return false;
  }
  const int y = std::stoi(std::string(d.substr(0, 4)));
  const int m = std::stoi(std::string(d.substr(5, 2)));
  const int day = std::stoi(std::string(d.substr(8, 2)));
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12 || day < 1) return false;
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return day <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

std::string TodayUtc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm);
  return buf;
}

void ValidateWaiver(const Waiver& w) {
  auto where = [&] { return "waiver at " + w.Source() + ": "; };
  if (w.reason.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw std::invalid_argument(where() + "`reason` is required (why the finding is accepted)");
  }
  if (w.rules.empty() && w.fingerprints.empty()) {
    throw std::invalid_argument(where() +
                                "needs `rule` (a rule ID or glob) or `fingerprint`: a waiver of "
                                "every rule is not allowed");
  }
  for (const auto* v : {&w.rules, &w.nodes, &w.tensors, &w.op_types, &w.models}) {
    for (const auto& p : *v) {
      if (p.empty()) throw std::invalid_argument(where() + "empty pattern");
    }
  }
  for (const auto& f : w.fingerprints) {
    if (f.size() != 16 || f.find_first_not_of("0123456789abcdef") != std::string::npos) {
      throw std::invalid_argument(where() + "fingerprint '" + f +
                                  "' is not 16 lowercase hex digits (the `fingerprint` of a "
                                  "finding in the JSON report or the baseline)");
    }
  }
  if (!w.expires.empty() && !IsIsoDate(w.expires)) {
    throw std::invalid_argument(where() + "expires '" + w.expires + "' is not a date YYYY-MM-DD");
  }
}

std::string StaleWaiver::Message() const {
  std::string s = "waiver (" + what + ") ";
  if (status == "expired" && matched > 0) {
    s += "expired on " + expires + ": it no longer waives the " + std::to_string(matched) +
         " finding" + (matched == 1 ? "" : "s") +
         " it matches; fix them, or renew the waiver with a later date";
  } else if (status == "expired") {
    s += "expired on " + expires + " and matches no finding; remove it";
  } else {
    s += "matched no finding; remove it";
  }
  return s + " (reason: " + reason + ")";
}

// ------------------------------------------------------------------------------------------------
// Baselines

Baseline BaselineFromJson(const json& j) {
  if (!j.is_object() || j.value("schema", "") != Baseline::kSchema) {
    throw std::invalid_argument(std::string("not an axqc baseline (\"schema\": \"") +
                                Baseline::kSchema + "\" expected)");
  }
  Baseline b;
  try {
    b.tool_version = j.value("tool_version", "");
    b.rule_set_version = j.value("rule_set_version", "");
    for (const auto& m : j.at("models")) {
      BaselineModel model;
      model.file = m.at("file").get<std::string>();
      model.sha256 = m.value("sha256", "");
      for (const auto& f : m.at("findings")) {
        BaselineEntry e;
        e.fingerprint = f.at("fingerprint").get<std::string>();
        e.rule = f.value("rule", "");
        e.severity = f.value("severity", "error");
        e.count = f.value("count", std::size_t{1});
        e.node = f.value("node", "");
        e.message = f.value("message", "");
        if (e.fingerprint.empty() || e.count == 0) {
          throw std::invalid_argument("an entry of " + model.file +
                                      " has no fingerprint or a count of 0");
        }
        model.findings.push_back(std::move(e));
      }
      b.models.push_back(std::move(model));
    }
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("malformed baseline: ") + e.what());
  }
  return b;
}

nlohmann::ordered_json BaselineToJson(const Baseline& b) {
  using ojson = nlohmann::ordered_json;
  ojson models = ojson::array();
  for (const auto& m : b.models) {
    ojson findings = ojson::array();
    for (const auto& e : m.findings) {
      findings.push_back(ojson{{"rule", e.rule},
                               {"fingerprint", e.fingerprint},
                               {"severity", e.severity},
                               {"count", e.count},
                               {"node", e.node},
                               {"message", e.message}});
    }
    models.push_back(ojson{{"file", m.file}, {"sha256", m.sha256}, {"findings", findings}});
  }
  return ojson{{"schema", Baseline::kSchema},
               {"tool_version", b.tool_version},
               {"rule_set_version", b.rule_set_version},
               {"models", models}};
}

std::string BaselineModelKey(const std::string& model_file, const std::string& baseline_dir) {
  const std::string rel = RelativePath(model_file, baseline_dir.empty() ? "." : baseline_dir);
  return rel.empty() ? model_file : rel;
}

Baseline MakeBaseline(std::span<const Report> reports, const std::string& baseline_dir,
                      const Baseline* previous) {
  Baseline b;
  b.tool_version = reports.empty() ? std::string() : reports.front().tool_version;
  b.rule_set_version =
      reports.empty() ? std::string(kRuleSetVersion) : reports.front().rule_set_version;
  std::map<std::string, BaselineModel> models;
  for (const Report& r : reports) {
    BaselineModel m;
    m.file = BaselineModelKey(r.model.file, baseline_dir);
    m.sha256 = r.model.sha256;
    std::map<std::pair<std::string, std::string>, std::size_t> index;  // (rule, fp) -> entry
    for (const Finding& f : r.findings) {
      if (f.state == FindingState::kWaived || f.severity == Severity::kInfo) continue;
      const std::string fp = FingerprintOf(f);
      auto [it, added] = index.emplace(std::make_pair(f.rule, fp), m.findings.size());
      if (added) {
        m.findings.push_back({fp, f.rule, std::string(SeverityName(f.severity)), 0,
                              f.nodes.empty() ? std::string() : f.nodes.front(), f.message});
      }
      ++m.findings[it->second].count;
    }
    std::sort(m.findings.begin(), m.findings.end(), [](const auto& x, const auto& y) {
      return std::tie(x.rule, x.fingerprint) < std::tie(y.rule, y.fingerprint);
    });
    models[m.file] = std::move(m);
  }
  if (previous != nullptr) {
    for (const auto& m : previous->models) models.try_emplace(m.file, m);
  }
  for (auto& [file, m] : models) b.models.push_back(std::move(m));
  return b;
}

// ------------------------------------------------------------------------------------------------
// The gate

bool RuleSelection::Selects(std::string_view rule) const {
  const auto best = [&](const std::vector<std::string>& selectors) {
    std::size_t score = 0;
    for (const auto& s : selectors) score = std::max(score, SelectorScore(s, rule));
    return score;
  };
  // An empty `select` matches every rule, below any selector (their scores are at least 2).
  const std::size_t selected = select.empty() ? 1 : best(select);
  return selected > 0 && selected > best(ignore);
}

std::string CheckRuleSelector(std::string_view selector) {
  if (selector.empty()) return "an empty rule selector";
  for (const RuleInfo& r : Rules()) {
    if (SelectorScore(selector, r.id) > 0) return "";
  }
  const std::string shown(selector.size() > 80 ? std::string(selector.substr(0, 80)) + "..."
                                               : std::string(selector));
  // The prefixes of the catalog ("qdq/", "role/", ...), for a misspelt or slash-less prefix.
  std::vector<std::string> prefixes;
  for (const RuleInfo& r : Rules()) {
    const std::string p(r.id.substr(0, r.id.find('/') + 1));
    if (std::find(prefixes.begin(), prefixes.end(), p) == prefixes.end()) prefixes.push_back(p);
  }
  std::string near;
  if (std::find(prefixes.begin(), prefixes.end(), std::string(selector) + "/") != prefixes.end()) {
    near = std::string(selector) + "/";
  } else if (!HasGlob(selector) && selector.back() == '/') {
    std::size_t best = std::max<std::size_t>(3, selector.size() / 3 + 1);
    for (const auto& p : prefixes) {
      const std::size_t d = BoundedEditDistance(selector, p, best);
      if (d < best) {
        best = d;
        near = p;
      }
    }
  } else if (!HasGlob(selector)) {
    if (const RuleInfo* r = ClosestRule(selector)) near = std::string(r->id);
  }
  return "unknown rule '" + shown + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
         "; `axqc rules` lists them";
}

void ApplyRuleSelection(const RuleSelection& selection, Report& report, std::size_t max_locations) {
  if (selection.all()) return;
  auto& fs = report.findings;
  std::vector<char> keep(fs.size());
  bool all_kept = true;
  for (std::size_t i = 0; i < fs.size(); ++i) {
    keep[i] = selection.Selects(fs[i].rule) ? 1 : 0;
    all_kept = all_kept && keep[i] != 0;
  }
  if (all_kept) return;
  std::unordered_map<std::string, std::size_t> by_id;
  for (std::size_t i = 0; i < fs.size(); ++i) {
    if (!fs[i].id.empty()) by_id.emplace(fs[i].id, i);
  }
  for (std::size_t i = 0; i < fs.size(); ++i) {
    if (keep[i] == 0) continue;
    std::string cause = fs[i].cause;
    for (std::size_t steps = 0; !cause.empty(); ++steps) {
      const auto it = by_id.find(cause);
      if (it == by_id.end() || keep[it->second] != 0) break;
      if (steps > fs.size()) {  // a loop of removed findings
        cause.clear();
        break;
      }
      cause = fs[it->second].cause;
    }
    fs[i].cause = std::move(cause);
  }
  std::vector<Finding> kept;
  kept.reserve(fs.size());
  for (std::size_t i = 0; i < fs.size(); ++i) {
    if (keep[i] != 0) kept.push_back(std::move(fs[i]));
  }
  fs = std::move(kept);
  const bool not_applicable = report.verdict == Verdict::kNotApplicable;
  FinalizeReport(report, max_locations);
  if (not_applicable) report.verdict = Verdict::kNotApplicable;
}

std::vector<StaleWaiver> ApplyGate(const GatePolicy& policy, std::span<Report> reports,
                                   std::size_t max_locations) {
  const std::string today = policy.today.empty() ? TodayUtc() : policy.today;
  std::vector<WaiverUse> uses(policy.waivers.size());
  std::vector<bool> expired(policy.waivers.size());
  for (std::size_t w = 0; w < policy.waivers.size(); ++w) {
    // `expires` is the last day the waiver applies.
    expired[w] = !policy.waivers[w].expires.empty() && policy.waivers[w].expires < today;
  }
  std::vector<std::vector<std::size_t>> relevant(reports.size());  // report -> waivers
  for (std::size_t i = 0; i < reports.size(); ++i) {
    Report& r = reports[i];
    GateResult& g = r.gate;
    g = GateResult{};
    g.active = policy.active;
    g.fail_on = policy.fail_on;
    g.config = policy.config;
    g.baseline = policy.baseline_path;
    for (std::size_t w = 0; w < policy.waivers.size(); ++w) {
      if (WaiverAppliesTo(policy.waivers[w], r, policy.config_dir, policy.selection)) {
        relevant[i].push_back(w);
        uses[w].applies = true;
      }
    }
    // Remaining baseline counts of this model: fingerprint -> count.
    std::unordered_map<std::string, std::size_t> known;
    if (policy.baseline) {
      const auto* m = FindBaselineModel(
          *policy.baseline, BaselineModelKey(r.model.file, policy.baseline_dir), r.model.sha256);
      if (m != nullptr) {
        for (const auto& e : m->findings) known[e.fingerprint] += e.count;
      }
    }
    for (Finding& f : r.findings) {
      f.state = FindingState::kCounted;
      f.waiver_reason.clear();
      f.waiver_source.clear();
      for (const std::size_t w : relevant[i]) {
        if (!WaiverMatches(policy.waivers[w], f)) continue;
        ++uses[w].matched;
        if (expired[w]) continue;  // reported as expired; the finding counts
        f.state = FindingState::kWaived;
        f.waiver_reason = policy.waivers[w].reason;
        f.waiver_source = policy.waivers[w].Source();
        break;
      }
      if (f.state == FindingState::kCounted && f.severity != Severity::kInfo) {
        auto it = known.find(FingerprintOf(f));
        if (it != known.end() && it->second > 0) {
          --it->second;
          f.state = FindingState::kBaselined;
        }
      }
      switch (f.state) {
        case FindingState::kCounted:
          g.counted.Add(f.severity);
          break;
        case FindingState::kWaived:
          g.waived.Add(f.severity);
          break;
        case FindingState::kBaselined:
          g.baselined.Add(f.severity);
          break;
      }
    }
    for (const auto& [fp, left] : known) g.baseline_fixed += left;
    // Regroup: FindingGroup::first holds copies of the findings, with their states now.
    const Verdict verdict = r.verdict;
    const Summary summary = r.summary;
    FinalizeReport(r, max_locations);
    r.verdict = verdict;
    r.summary = summary;
  }

  std::vector<StaleWaiver> stale;
  std::vector<std::optional<std::size_t>> stale_index(policy.waivers.size());
  for (std::size_t w = 0; w < policy.waivers.size(); ++w) {
    const Waiver& wv = policy.waivers[w];
    if (!uses[w].applies) continue;  // about models not checked in this run
    if (!expired[w] && uses[w].matched > 0) continue;
    stale_index[w] = stale.size();
    stale.push_back({wv.Source(), wv.file, wv.line, expired[w] ? "expired" : "unused",
                     wv.Describe(), wv.reason, wv.expires, uses[w].matched});
  }
  for (std::size_t i = 0; i < reports.size(); ++i) {
    GateResult& g = reports[i].gate;
    for (const std::size_t w : relevant[i]) {
      if (stale_index[w]) g.stale_waivers.push_back(stale[*stale_index[w]]);
    }
    const bool fails =
        g.counted.errors > 0 ||
        (g.fail_on == Severity::kWarn && (g.counted.warnings > 0 || !g.stale_waivers.empty()));
    if (fails) {
      g.verdict = GateVerdict::kFail;
    } else if (reports[i].verdict == Verdict::kNotApplicable) {
      g.verdict = GateVerdict::kNotApplicable;
    } else {
      g.verdict = GateVerdict::kPass;
    }
  }
  return stale;
}

std::string FingerprintOf(const Finding& f) {
  if (!f.fingerprint.empty()) return f.fingerprint;
  std::string text = "axqc-fp/names\n" + f.rule + "\n" + f.group_key + "\n" + f.op_type + "\n";
  for (const auto& n : f.nodes) text += n + ",";
  text += "\n";
  for (const auto& t : f.tensors) text += t + ",";
  return detail::ShortHash(text);
}

std::vector<std::size_t> FingerprintOccurrences(const Report& report) {
  std::unordered_map<std::string, std::size_t> seen;
  std::vector<std::size_t> out;
  out.reserve(report.findings.size());
  for (const Finding& f : report.findings) out.push_back(++seen[FingerprintOf(f)]);
  return out;
}

}  // namespace axqc
