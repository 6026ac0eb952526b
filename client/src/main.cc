// axqc: check quantized ONNX (QDQ) models against the ax quant spec.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "axqc/catalog.h"
#include "axqc/checker.h"
#include "axqc/operators.h"
#include "axqc/render.h"
#include "cli.h"

namespace axqc::cli {

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

int main(int argc, char** argv) {
  using namespace axqc::cli;
  CLI::App app{"axqc: conformance checker for quantized ONNX (QDQ) models against the ax quant spec"};
  app.set_version_flag("--version", std::string("axqc ") + std::string(axqc::ToolVersion()) +
                                        " (rule set " + std::string(axqc::kRuleSetVersion) + ")");
  app.require_subcommand(1);

  CheckArgs check;
  auto* cmd = app.add_subcommand("check", "Check one or more ONNX models");
  cmd->add_option("models", check.models, "ONNX model files")->required()->check(CLI::ExistingPath);
  cmd->add_flag("-c,--check-value", check.check_value,
                "Run the numeric value checks of spec 2.5 (zero_point ranges, bias scale, "
                "pair values, Split exits, value_info completeness)");
  cmd->add_option("--format", check.format, "Report format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", check.output, "Write the report to FILE instead of stdout");
  cmd->add_flag("--explain", check.explain, "Print the ownership map (units and their Q/DQ)");
  cmd->add_option("--color", check.color, "Colour the text report")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  cmd->add_option("--max-locations", check.max_locations,
                  "Locations listed per grouped finding")
      ->capture_default_str();

  std::string rules_format = "text";
  bool operators = false;
  auto* rules = app.add_subcommand("rules", "List the rule catalog");
  rules->add_option("--format", rules_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  rules->add_flag("--operators", operators, "List the operator support matrix instead");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitError;
  }
  if (cmd->parsed()) return RunLocalCheck(check);
  if (rules->parsed()) return RunRules(rules_format, operators);
  return kExitError;
}
