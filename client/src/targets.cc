// `axqc targets`: the portability matrix of models over the chip profiles, a chip's profile in
// readable form, the list of profiles and the difference between two (docs/targets.md).
#include "axqc/targets.h"

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "axqc/checker.h"
#include "axqc/render.h"
#include "cli.h"

namespace axqc::cli {

namespace {

using json = nlohmann::json;

// "GridSample 'gs1', GatherElements 'ge3' not supported; DepthToSpace 'd2s' attribute-value"
std::string Blocking(const TargetResult& t) {
  constexpr std::size_t kShown = 8;
  std::string unsupported, other;
  std::size_t shown = 0;
  for (const auto& b : t.blocking) {
    if (shown == kShown) break;
    ++shown;
    const std::string what =
        b.node.empty() ? std::string("model") : b.op_type + " '" + b.node + "'";
    if (b.rule == "target/op-unsupported") {
      unsupported += (unsupported.empty() ? "" : ", ") + what;
    } else {
      const auto slash = b.rule.find('/');
      other += (other.empty() ? "" : ", ") + what + " (" + b.rule.substr(slash + 1) + ")";
    }
  }
  std::string out;
  if (!unsupported.empty()) out = unsupported + " not supported";
  if (!other.empty()) out += (out.empty() ? "" : "; ") + other;
  if (t.blocking.size() > shown)
    out += "; and " + std::to_string(t.blocking.size() - shown) + " more";
  return out;
}

json ProfileListJson() {
  json list = json::array();
  for (const auto& p : TargetProfiles()) {
    list.push_back({{"chip", p.chip},
                    {"name", p.name},
                    {"covers", p.covers},
                    {"aliases", p.aliases},
                    {"operators", p.ops.size()},
                    {"source",
                     {{"repository", p.source_repository},
                      {"file", p.source_file},
                      {"commit", p.source_commit},
                      {"doc_version", p.doc_version}}},
                    {"profile", p.file}});
  }
  return list;
}

}  // namespace

int RunTargets(const TargetsArgs& args) {
  const bool as_json = args.format == "json";
  try {
    if (args.list) {
      if (as_json) {
        std::cout << json{{"targets", ProfileListJson()}}.dump(2) << "\n";
        return 0;
      }
      std::cout << "chip targets (documented NPU operator tables of Pulsar2):\n";
      for (const auto& p : TargetProfiles()) {
        std::string covers;
        for (const auto& c : p.covers) covers += (covers.empty() ? "" : ", ") + c;
        std::cout << "  " << p.chip << std::string(p.chip.size() < 8 ? 8 - p.chip.size() : 1, ' ')
                  << covers << "; " << p.ops.size() << " operators; " << p.Source() << " ("
                  << p.doc_version << ")\n";
      }
      return 0;
    }
    if (!args.diff.empty()) {
      if (args.diff.size() != 2 || !args.args.empty()) {
        std::cerr << "axqc: targets --diff takes two chips and nothing else\n";
        return kExitError;
      }
      const TargetProfile* a = FindTargetProfile(args.diff[0]);
      const TargetProfile* b = FindTargetProfile(args.diff[1]);
      for (std::size_t i = 0; i < 2; ++i) {
        if ((i == 0 ? a : b) == nullptr) {
          std::cerr << "axqc: unknown target '" << args.diff[i] << "' (see axqc targets --list)\n";
          return kExitError;
        }
      }
      std::cout << TargetProfileDiffText(*a, *b);
      return 0;
    }
    if (args.args.empty()) {
      std::cerr << "axqc: targets needs model files, a chip name, --list or --diff\n";
      return kExitError;
    }
    // One argument that names a chip and no file: that chip's profile.
    std::error_code ec;
    if (args.args.size() == 1 && !std::filesystem::exists(args.args[0], ec)) {
      if (const TargetProfile* p = FindTargetProfile(args.args[0])) {
        std::cout << (as_json ? p->json_text : TargetProfileText(*p));
        return 0;
      }
    }
    CheckOptions opts;
    opts.check_value = args.check_value;
    opts.include_units = false;
    opts.targets = {"all"};
    int worst = 0;
    json models = json::array();
    bool first = true;
    for (const auto& path : args.args) {
      Report r;
      try {
        r = CheckFile(path, opts);
      } catch (const std::exception& e) {
        std::cerr << "axqc: input error: " << e.what() << "\n";
        worst = kExitError;
        if (as_json) models.push_back({{"file", path}, {"input_error", e.what()}});
        continue;
      }
      if (as_json) {
        models.push_back({{"file", r.model.file},
                          {"sha256", r.model.sha256},
                          {"verdict", VerdictName(r.verdict)},
                          {"targets", TargetsToJson(r)}});
      } else {
        if (!first) std::cout << "\n";
        first = false;
        std::cout << r.model.file << "  (spec verdict: " << VerdictName(r.verdict) << ")\n";
        for (const auto& t : r.targets) {
          const std::string v(TargetVerdictName(t.verdict));
          std::string detail;
          if (t.verdict == TargetVerdict::kDoesNotFit) {
            detail = Blocking(t);
          } else if (t.notes > 0) {
            detail = std::to_string(t.notes) + (t.notes == 1 ? " note" : " notes") +
                     " (axqc check --target " + t.chip + ")";
          }
          std::cout << "  " << t.name << std::string(t.name.size() < 8 ? 8 - t.name.size() : 1, ' ')
                    << v;
          if (!detail.empty())
            std::cout << std::string(v.size() < 17 ? 17 - v.size() : 1, ' ') << detail;
          std::cout << "\n";
        }
      }
      for (const auto& t : r.targets) {
        if (t.verdict == TargetVerdict::kDoesNotFit && worst != kExitError) worst = 1;
      }
    }
    if (as_json) std::cout << json{{"models", models}}.dump(2) << "\n";
    return worst;
  } catch (const TargetProfileError& e) {
    std::cerr << "axqc: broken target profile: " << e.what() << "\n";
    return kExitError;
  }
}

}  // namespace axqc::cli
