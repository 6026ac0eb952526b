// axqc: check quantized ONNX (QDQ) models against the ax quant spec.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "axqc/catalog.h"
#include "axqc/checker.h"
#include "axqc/operators.h"
#include "axqc/render.h"
#include "axqc/targets.h"
#include "axqc/version.h"
#include "cli.h"

namespace axqc::cli {

// `axqc rules ID...`: each rule's catalog entry; an unknown ID is an error naming the closest.
int RunRuleIds(const std::vector<std::string>& ids, const std::string& format) {
  nlohmann::json list = nlohmann::json::array();
  std::ostringstream text;
  for (const auto& id : ids) {
    const RuleInfo* r = FindRule(id);
    if (r == nullptr) {
      const RuleInfo* near = ClosestRule(id);
      std::cerr << "axqc: unknown rule '" << (id.size() > 80 ? id.substr(0, 80) + "..." : id) << "'"
                << (near != nullptr ? " (did you mean '" + std::string(near->id) + "'?)" : "")
                << "; `axqc rules` lists them\n";
      return kExitError;
    }
    if (format == "json") {
      const nlohmann::json catalog = RulesToJson();
      for (const auto& j : catalog.at("rules")) {
        if (j.at("id").get<std::string>() == r->id) list.push_back(j);
      }
      continue;
    }
    text << r->id << "  " << SeverityName(r->severity) << (r->check_value ? " [cv]" : "")
         << "  spec " << r->section << "\n  " << r->summary << "\n  fix: " << r->fix
         << "\n  page: docs/rules/" << RulePageName(r->id) << ".md\n";
    if (r->check_value) text << "  runs only with -c / --check-value (spec 2.5)\n";
    text << "\n";
  }
  if (format == "json") {
    std::cout << list.dump(2) << "\n";
  } else {
    std::cout << text.str();
  }
  return 0;
}

int RunRules(const std::string& format, bool operators) {
  if (operators) {
    std::cout << OperatorsMarkdown();
    return 0;
  }
  if (format == "json") {
    std::cout << RulesToJson().dump(2) << "\n";
    return 0;
  }
  std::cout << "ax quant spec rule set " << kRuleSetVersion << "\n";
  for (const auto& r : Rules()) {
    std::string sev(SeverityName(r.severity));
    std::cout << "  " << r.id << std::string(r.id.size() < 32 ? 32 - r.id.size() : 1, ' ') << sev
              << (r.check_value ? " [cv]" : "     ") << std::string(7 - sev.size(), ' ')
              << r.section << std::string(r.section.size() < 6 ? 6 - r.section.size() : 1, ' ')
              << r.summary << "\n";
  }
  return 0;
}

}  // namespace axqc::cli

namespace {

// --server and the connection flags, shared by check, rules, stats and health.
void AddRemoteOptions(CLI::App* cmd, axqc::cli::RemoteArgs* r, bool server_required) {
  auto* server = cmd->add_option(
      "--server", r->server,
      "axqc-server address HOST:PORT (remote mode; default: environment variable AXQC_SERVER)");
  server->envname("AXQC_SERVER");
  if (server_required) server->required();
  cmd->add_flag("--tls", r->tls, "Use TLS (implied by --ca, --cert, --key)");
  cmd->add_option("--ca", r->ca, "PEM file with the CA certificates to trust (default: system)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--cert", r->cert, "PEM client certificate chain (mutual TLS)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--key", r->key, "PEM client private key (mutual TLS)")->check(CLI::ExistingFile);
  cmd->add_option("--token", r->token,
                  "Bearer token for the server (default: environment variable AXQC_TOKEN)");
  cmd->add_option("--deadline", r->deadline_seconds,
                  "Deadline of each RPC in seconds (check default 600, others 30, health 5)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--retries", r->retries,
                  "Extra attempts when the server is UNAVAILABLE, with exponential backoff "
                  "(default: check 4, stats/rules 2, health 0)")
      ->check(CLI::Range(0, 20));
}

// --label k=v (repeatable) into a map.
bool ParseLabels(const std::vector<std::string>& in, std::map<std::string, std::string>* out) {
  for (const auto& l : in) {
    const auto eq = l.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "axqc: --label expects KEY=VALUE, got '" << l << "'\n";
      return false;
    }
    (*out)[l.substr(0, eq)] = l.substr(eq + 1);
  }
  return true;
}

int Main(int argc, char** argv) {
  using namespace axqc::cli;
  CLI::App app{
      "axqc: conformance checker for quantized ONNX (QDQ) models against the ax quant spec"};
  app.set_version_flag("--version", std::string("axqc ") + std::string(axqc::ToolVersion()) +
                                        " (rule set " + std::string(axqc::kRuleSetVersion) + "; " +
                                        axqc::LinkedOnnxDescription() + ")");
  app.require_subcommand(1);

  CheckArgs check;
  std::vector<std::string> check_labels;
  auto* cmd = app.add_subcommand(
      "check", "Check one or more ONNX models (locally, or on axqc-server with --server)");
  cmd->add_option("models", check.models,
                  "ONNX model files, or directories: every *.onnx file below one (recursive, in "
                  "path order; see --exclude)")
      ->check(CLI::ExistingPath);
  cmd->footer(
      "Exit codes (with several models the worst wins: 4 > 2 > 1 > 3 > 0):\n"
      "  0  conformant; with a gate (axqc.toml, --baseline, --fail-on): passed\n"
      "  1  non_conformant; with a gate: a finding that is neither waived nor in the baseline\n"
      "     reaches --fail-on (with --fail-on warn also a stale waiver)\n"
      "  2  usage or input error: bad option, unreadable or non-ONNX model, a configuration\n"
      "     or baseline that cannot be read (or, with --write-baseline, written)\n"
      "  3  not_applicable (no owned Q/DQ edge); with --fail-on not_applicable: 1\n"
      "  4  no verdict from the server (remote: unreachable, TLS or token refused, deadline)\n"
      "With --target, a model that does not fit a requested chip exits 1 (docs/targets.md).\n"
      "With --exit-zero, 1 and 3 become 0; 2 and 4 stay.\n"
      "See docs/ci.md.");
  auto* check_value = cmd->add_flag(
      "-c,--check-value,!--no-check-value", check.check_value,
      "Run the numeric value checks of spec 2.5 (zero_point ranges, bias scale, pair values, "
      "Split exits, value_info completeness); --no-check-value overrides the configuration");
  cmd->add_option("--format", check.format,
                  "Report format (json: one axqc.report/v2 document, {schema, reports: [...]}, "
                  "whatever the number of models; html: one self-contained page with graph "
                  "views; dot: the graph in Graphviz's language; both take one model)")
      ->check(CLI::IsMember({"text", "json", "junit", "sarif", "github", "gitlab", "html", "dot"}))
      ->capture_default_str();
  cmd->add_option("--rules-url", check.rules_url,
                  "--format html and sarif: base of the links to the rule pages (<URL><rule>.md, "
                  "'/' in the rule ID written '--'; a {page} in URL is replaced by <rule> "
                  "instead); an absolute http(s) URL also gives each SARIF rule its helpUri")
      ->capture_default_str();
  cmd->add_option("-o,--output", check.output, "Write the report to FILE instead of stdout");
  cmd->add_flag("--explain", check.explain, "Print the ownership map (units and their Q/DQ)");
  cmd->add_option("--color", check.color, "Colour the text report")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  auto* max_locations = cmd->add_option("--max-locations", check.max_locations,
                                        "Locations listed per grouped finding")
                            ->capture_default_str();
  // The CI gate: waivers (configuration file), a baseline, the failure threshold.
  cmd->add_option("--config", check.config,
                  "Configuration file (default: axqc.toml or .axqc.toml in the working directory "
                  "or the nearest parent that has one)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--no-config", check.no_config, "Use no configuration file");
  cmd->add_option("--baseline", check.baseline,
                  "Fail only on findings that are not in this baseline file (known findings pass)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--write-baseline", check.write_baseline,
                  "Write the findings of this run (except waived ones) as the baseline FILE; the "
                  "run is then judged against it");
  std::vector<std::string> fail_on;
  cmd->add_option("--fail-on", fail_on,
                  "Findings of this severity or worse fail: error (default) or warn; "
                  "not_applicable: a model that is not a QDQ model fails too (exit 1 instead of "
                  "3). Repeatable or comma-separated")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::IsMember({"error", "warn", "not_applicable"}));
  auto* select = cmd->add_option("--select", check.select,
                                 "Report only these rules: rule IDs, prefixes (qdq/) or globs; "
                                 "comma-separated or repeated. Replaces the select and ignore of "
                                 "axqc.toml")
                     ->delimiter(',')
                     ->allow_extra_args(false)
                     ->type_name("RULE");
  cmd->add_option("--ignore", check.ignore,
                  "Leave these rules out (IDs, prefixes or globs; comma-separated or repeated), "
                  "in addition to the ignore of axqc.toml. The most specific selector wins")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->type_name("RULE");
  cmd->add_option("--exclude", check.exclude,
                  "Directory arguments: leave out the paths this glob matches (a pattern without "
                  "'/' matches any file or directory name, one with '/' the path relative to the "
                  "directory); repeatable. Files given by name are always checked")
      ->allow_extra_args(false)
      ->type_name("GLOB");
  cmd->add_flag("--exit-zero", check.exit_zero,
                "Exit 0 even when findings fail the check or a model is not_applicable; input "
                "and usage errors still exit 2, a missing server verdict 4");
  cmd->add_flag("--statistics", check.statistics,
                "Print the number of findings of each rule (count, rule, severity, summary) "
                "instead of the reports (text); json adds them to the document");
  cmd->add_flag("--github-annotations", check.github_annotations,
                "Also write GitHub Actions annotations (workflow commands) to stderr, beside the "
                "report in --format");
  AddRemoteOptions(cmd, &check.remote, false);
  // One value per --ref / --label (repeat the option for more): the model files after them stay
  // model files.
  cmd->add_option("--ref", check.refs,
                  "Remote: check a model the server reads itself (a path under its allowed roots, "
                  "or an allowlisted http(s) URL); one per option, repeatable")
      ->allow_extra_args(false)
      ->type_name("PATH|URL")
      ->needs("--server");
  cmd->add_option("--label", check_labels,
                  "Remote: label KEY=VALUE for the request history; one per option, repeatable")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE")
      ->needs("--server");
  bool no_record = false;
  cmd->add_flag("--no-record", no_record,
                "Remote: a model the server knows is only looked up, not recorded as another check "
                "in its history (e.g. a second call of the same CI job for another report format)")
      ->needs("--server");
  cmd->add_flag("--full-upload", check.full_upload,
                "Remote: send a model's external data files whole instead of only the byte ranges "
                "the check reads (docs/api.md)")
      ->needs("--server");
  bool local = false;
  cmd->add_flag("--local", local, "Check locally even when AXQC_SERVER is set");
  cmd->add_flag("--isolate", check.isolate,
                "Local: run the checker in a sandboxed worker process (axqc-worker) with memory "
                "and CPU limits, as axqc-server does; a crash is then reported as an error for "
                "that model");
  cmd->add_option("--target", check.targets,
                  "Also judge the model against a chip's documented NPU operator table (ax650, "
                  "ax620e, ax615, ax637, m57, aliases, or all); one per option, repeatable. A "
                  "model that does not fit a requested chip fails (exit 1). docs/targets.md")
      ->allow_extra_args(false)
      ->type_name("CHIP");
  cmd->add_option("--pulsar2-config", check.pulsar2_config,
                  "Also judge a Pulsar2 build configuration (pulsar2 build --config) against the "
                  "model and the documented schema (rules pulsar2/*); a pulsar2 error fails the "
                  "check (exit 1). docs/pulsar2.md")
      ->type_name("FILE");
  cmd->add_option("--progress", check.progress, "Remote: upload progress on stderr")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();

  FixArgs fix;
  bool fix_list = false;
  auto* fix_cmd = app.add_subcommand(
      "fix",
      "Rewrite exporter artifacts without changing what the model computes (Constant nodes, "
      "de-duplication Identity nodes, static shape subgraphs, value_info, ...), write the result "
      "and check it; exit code = the fixed model's verdict");
  fix_cmd->add_option("model", fix.model, "ONNX model file to fix")->check(CLI::ExistingFile);
  fix_cmd->add_option("-o,--output", fix.output,
                      "Write the fixed model to FILE (external data goes to FILE.data beside it)");
  fix_cmd
      ->add_option("--only", fix.only,
                   "Run only these rewrites (comma-separated IDs, see --list; repeatable)")
      ->allow_extra_args(false)
      ->type_name("ID,...");
  fix_cmd
      ->add_option("--apply", fix.apply,
                   "Also run these opt-in rewrites, which never run otherwise (e.g. "
                   "int4-weight-storage; comma-separated IDs; repeatable)")
      ->allow_extra_args(false)
      ->type_name("ID,...");
  fix_cmd->add_flag("--dry-run", fix.dry_run, "Print what would change; write nothing");
  fix_cmd->add_flag("-c,--check-value", fix.check_value,
                    "Check before and after with the numeric value checks (spec 2.5)");
  fix_cmd->add_option("--format", fix.format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  fix_cmd
      ->add_option("--ir-version", fix.ir_version,
                   "Lower the model's ir_version to N (refused when the model uses anything newer)")
      ->check(CLI::Range(3, 99));
  fix_cmd->add_option("--max-locations", fix.max_locations, "Places listed per rewrite")
      ->capture_default_str();
  fix_cmd->add_flag("--list", fix_list, "List the rewrites and exit");

  std::string rules_format = "text";
  bool operators = false;
  RemoteArgs rules_remote;
  auto* rules = app.add_subcommand("rules", "List the rule catalog (of axqc-server with --server)");
  rules->add_option("--format", rules_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  rules->add_flag("--operators", operators, "List the operator support matrix instead");
  std::vector<std::string> rule_ids;
  rules->add_option("ids", rule_ids,
                    "Rule IDs: print these rules' entries (severity, spec section, summary, fix, "
                    "page) instead of the catalog");
  AddRemoteOptions(rules, &rules_remote, false);

  TargetsArgs targets;
  auto* targets_cmd = app.add_subcommand(
      "targets",
      "Chip targets: the portability matrix of models (which chips' documented NPU operator "
      "tables they fit), or a chip's profile (docs/targets.md)");
  targets_cmd->add_option("args", targets.args, "ONNX model files, or one chip name (its profile)");
  targets_cmd->add_flag("--list", targets.list, "List the chip profiles");
  targets_cmd->add_option("--diff", targets.diff, "Differences between two chips' profiles")
      ->expected(2)
      ->type_name("CHIP");
  targets_cmd->add_option("--format", targets.format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  targets_cmd->add_flag("-c,--check-value", targets.check_value,
                        "Models: run the numeric value checks of the spec as well");
  targets_cmd->footer(
      "Exit codes: 0 every model fits every chip (possibly with notes); 1 a model does not fit "
      "a chip; 2 usage or input error.");

  Pulsar2ConfigArgs p2c;
  auto* p2c_cmd = app.add_subcommand(
      "pulsar2-config",
      "Write a Pulsar2 build configuration for a QDQ model: model_type QuantONNX, the target, "
      "the model's inputs, its 16-bit regions and bias type (docs/pulsar2.md)");
  p2c_cmd->add_option("model", p2c.model, "ONNX model file")->required();
  p2c_cmd
      ->add_option("--target", p2c.target,
                   "Chip to build for (ax650, ax620e, ax615, m57 or an alias such as m76h)")
      ->type_name("CHIP")
      ->capture_default_str();
  p2c_cmd->add_option("-o,--output", p2c.output, "Write the configuration here (default: stdout)")
      ->type_name("FILE");
  p2c_cmd->footer("Exit codes: 0 written; 2 usage or input error.");

  StatsArgs stats;
  std::vector<std::string> stats_labels;
  auto* stats_cmd = app.add_subcommand("stats", "Pass rates from axqc-server's request history");
  AddRemoteOptions(stats_cmd, &stats.remote, true);
  stats_cmd->add_option("--since", stats.since,
                        "Window before now, with a unit: 2w, 7d, 24h, 30m, 90s (default: all)");
  stats_cmd->add_option("--by", stats.by, "Group by this label (e.g. project)");
  stats_cmd
      ->add_option("--label", stats_labels,
                   "Only requests with label KEY=VALUE; one per option, repeatable")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  stats_cmd->add_option("--top", stats.top, "Failing rules to list")->capture_default_str();
  stats_cmd->add_option("--format", stats.format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  RemoteArgs health_remote;
  std::string health_service;
  auto* health = app.add_subcommand(
      "health", "Ask axqc-server's health service; exit 0 only when SERVING (container probe)");
  AddRemoteOptions(health, &health_remote, true);
  health->add_option("--service", health_service,
                     "Service to ask about (\"\" = the server, or axqc.v1.Checker)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitError;
  }
  if (cmd->parsed()) {
    if (!ParseLabels(check_labels, &check.labels)) return kExitError;
    check.record = !no_record;
    check.check_value_given = check_value->count() > 0;
    for (const auto& v : fail_on) {
      if (v == "not_applicable") {
        check.fail_on_not_applicable = true;
      } else {
        check.fail_on = v;
      }
    }
    check.max_locations_given = max_locations->count() > 0;
    if (!check.config.empty() && check.no_config) {
      std::cerr << "axqc: --config and --no-config exclude each other\n";
      return kExitError;
    }
    if (local) {
      if (!check.refs.empty() || !check.labels.empty()) {
        std::cerr << "axqc: --ref and --label need a server (--local was given)\n";
        return kExitError;
      }
      check.remote.server.clear();
    }
    if (check.isolate && !check.remote.server.empty()) {
      std::cerr << "axqc: --isolate applies to local checks (the server isolates its own)\n";
      return kExitError;
    }
    check.select_given = select->count() > 0;
    if (!ExpandModelPaths(check)) return kExitError;
    if (check.statistics && check.format != "text" && check.format != "json") {
      std::cerr << "axqc: --statistics takes --format text or json, not " << check.format << "\n";
      return kExitError;
    }
    if (check.remote.server.empty()) {
      if (check.models.empty()) {
        std::cerr << "axqc: check needs at least one model\n";
        return kExitError;
      }
    } else if (check.models.empty() && check.refs.empty()) {
      std::cerr << "axqc: check needs at least one model or --ref\n";
      return kExitError;
    }
    if ((check.format == "html" || check.format == "dot") &&
        check.models.size() + check.refs.size() != 1) {
      std::cerr << "axqc: --format " << check.format << " takes one model\n";
      return kExitError;
    }
    if (!check.targets.empty()) {
      try {
        check.targets = axqc::ResolveTargets(check.targets);
      } catch (const std::exception& e) {
        std::cerr << "axqc: --target: " << e.what() << "\n";
        return kExitError;
      }
    }
    if (!check.pulsar2_config.empty() && !ReadPulsar2Config(check)) return kExitError;
    auto gate = PrepareGate(check);
    if (!gate) return kExitError;
    return check.remote.server.empty() ? RunLocalCheck(check, *gate) : RunRemoteCheck(check, *gate);
  }
  if (fix_cmd->parsed()) {
    if (fix_list) return RunFixList();
    if (fix.model.empty()) {
      std::cerr << "axqc: fix needs a model\n";
      return kExitError;
    }
    if (fix.output.empty() && !fix.dry_run) {
      std::cerr << "axqc: fix needs -o OUT (or --dry-run)\n";
      return kExitError;
    }
    return RunFix(fix);
  }
  if (rules->parsed()) {
    if (!rules_remote.server.empty() && !operators)
      return RunRemoteRules(rules_remote, rules_format);
    if (!rule_ids.empty()) {
      if (operators || !rules_remote.server.empty()) {
        std::cerr << "axqc: rules ID... prints this build's catalog entries; without --operators "
                     "or --server\n";
        return kExitError;
      }
      return RunRuleIds(rule_ids, rules_format);
    }
    return RunRules(rules_format, operators);
  }
  if (targets_cmd->parsed()) return RunTargets(targets);
  if (p2c_cmd->parsed()) return RunPulsar2Config(p2c);
  if (stats_cmd->parsed()) {
    if (!ParseLabels(stats_labels, &stats.labels)) return kExitError;
    return RunRemoteStats(stats);
  }
  if (health->parsed()) return RunHealth(health_remote, health_service);
  return kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "axqc: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "axqc: unknown error\n";
  }
  return axqc::cli::kExitError;
}
