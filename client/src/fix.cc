// `axqc fix`: semantics-preserving rewrites of exporter artifacts (core: axqc/fix.h), with a
// before/after check. Exit code = the verdict of the fixed model (2: input error or refusal).
#include "axqc/fix.h"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "axqc/checker.h"
#include "cli.h"
#include "exit_codes.h"

namespace axqc::cli {

namespace {

std::string Pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

std::string PadLeft(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

nlohmann::ordered_json Summary(const Report& r) {
  nlohmann::ordered_json by_rule = nlohmann::ordered_json::object();
  for (const auto& [rule, n] : r.summary.by_rule) by_rule[rule] = n;
  return {{"verdict", VerdictName(r.verdict)},
          {"errors", r.summary.errors},
          {"warnings", r.summary.warnings},
          {"infos", r.summary.infos},
          {"by_rule", by_rule}};
}

std::string Counts(const Report& r) {
  return std::string(VerdictName(r.verdict)) + "  " + std::to_string(r.summary.errors) +
         " errors, " + std::to_string(r.summary.warnings) + " warnings, " +
         std::to_string(r.summary.infos) + " info";
}

nlohmann::ordered_json FixJson(const FixResult& r) {
  nlohmann::ordered_json rewrites = nlohmann::ordered_json::array();
  for (const auto& o : r.rewrites) {
    nlohmann::ordered_json skips = nlohmann::ordered_json::array();
    for (const auto& [at, why] : o.first_skips) skips.push_back({{"at", at}, {"reason", why}});
    const auto* info = FindRewrite(o.id);
    rewrites.push_back({{"id", o.id},
                        {"summary", info != nullptr ? std::string(info->summary) : ""},
                        {"applied", o.applied},
                        {"first", o.first},
                        {"skipped", o.skipped},
                        {"first_skips", skips},
                        {"note", o.note}});
  }
  return {
      {"schema", "axqc.fix/v1"},
      {"input", r.input},
      {"output", r.dry_run ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.output)},
      {"dry_run", r.dry_run},
      {"written", r.written},
      {"data_file",
       r.data_file.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.data_file)},
      {"applied", r.applied()},
      {"rewrites", rewrites},
      {"before", Summary(r.before)},
      {"after", Summary(r.after)}};
}

std::string FixText(const FixResult& r) {
  std::ostringstream s;
  if (r.dry_run) {
    s << "axqc fix (dry run, nothing written): " << r.input << "\n";
  } else {
    s << "axqc fix: " << r.input << " -> " << r.output << "\n";
  }
  for (const auto& o : r.rewrites) {
    s << "  " << Pad(o.id, 24) << PadLeft(o.applied ? std::to_string(o.applied) : "-", 5);
    if (!o.first.empty()) {
      s << "  ";
      for (std::size_t i = 0; i < o.first.size(); ++i) s << (i ? ", " : "") << o.first[i];
      if (o.applied > o.first.size()) s << " (+" << (o.applied - o.first.size()) << " more)";
    }
    if (!o.note.empty()) s << (o.first.empty() ? "  " : "; ") << o.note;
    s << "\n";
    for (const auto& [at, why] : o.first_skips) s << "      skipped " << at << ": " << why << "\n";
    if (o.skipped > o.first_skips.size()) {
      s << "      ... and " << (o.skipped - o.first_skips.size()) << " more skipped\n";
    }
  }
  s << "before: " << Counts(r.before) << "\n";
  s << (r.dry_run ? "after (not written): " : "after:  ") << Counts(r.after) << "\n";
  std::set<std::string> rules;
  for (const auto& [rule, n] : r.before.summary.by_rule) rules.insert(rule);
  for (const auto& [rule, n] : r.after.summary.by_rule) rules.insert(rule);
  for (const auto& rule : rules) {
    auto count = [&](const Report& rep) {
      auto it = rep.summary.by_rule.find(rule);
      return it == rep.summary.by_rule.end() ? std::size_t{0} : it->second;
    };
    s << "  " << Pad(rule, 32) << PadLeft(std::to_string(count(r.before)), 5) << " -> "
      << count(r.after) << "\n";
  }
  if (r.written) {
    s << "wrote " << r.output;
    if (!r.data_file.empty()) s << " (external data: " << r.data_file << ")";
    s << "\n";
  }
  return s.str();
}

std::vector<std::string> SplitIds(const std::vector<std::string>& in) {
  std::vector<std::string> out;
  for (const auto& item : in) {
    std::stringstream ss(item);
    std::string id;
    while (std::getline(ss, id, ',')) {
      if (!id.empty()) out.push_back(id);
    }
  }
  return out;
}

}  // namespace

int RunFixList() {
  std::cout << "axqc fix rewrites (in the order they run; docs/fixes/<id>.md):\n";
  for (const auto& r : Rewrites()) {
    std::cout << "  " << Pad(std::string(r.id), 24)
              << (r.by_default ? ""
                  : r.opt_in   ? "[--apply] "
                               : "[--ir-version] ")
              << r.summary << "\n";
  }
  return 0;
}

int RunFix(const FixArgs& args) {
  FixOptions o;
  o.only = SplitIds(args.only);
  o.apply = SplitIds(args.apply);
  o.check_value = args.check_value;
  o.max_locations = args.max_locations;
  if (args.ir_version >= 0) o.ir_version = args.ir_version;
  const bool json = args.format == "json";
  try {
    FixResult r = FixFile(args.model, args.dry_run ? std::string() : args.output, o);
    if (json) {
      std::cout << FixJson(r).dump(2) << "\n";
    } else {
      std::cout << FixText(r);
    }
    std::cout.flush();
    return ExitCodeFor(r.after.verdict);
  } catch (const FixRefused& e) {
    if (json) {
      nlohmann::ordered_json j = {
          {"schema", "axqc.fix/v1"}, {"input", args.model}, {"refused", e.what()}};
      if (e.before()) j["before"] = Summary(*e.before());
      std::cout << j.dump(2) << "\n";
    } else if (e.before()) {
      std::cout << "before: " << Counts(*e.before()) << "\n";
    }
    std::cerr << "axqc: fix refused: " << e.what() << "\n";
    return kExitError;
  } catch (const InputError& e) {
    std::cerr << "axqc: input error: " << e.what() << "\n";
    return kExitError;
  }
}

}  // namespace axqc::cli
