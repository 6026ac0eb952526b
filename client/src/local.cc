// Local mode: check the models in this process (or, with --isolate, in a sandboxed worker
// process each), then the gate and the output shared with remote mode (results.cc).
#include <iostream>
#include <memory>

#include "axqc/checker.h"
#include "cli.h"
#include "exit_codes.h"
#include "isolated.h"

namespace axqc::cli {

int RunLocalCheck(const CheckArgs& args, GateSetup& gate) {
  CheckOptions opts;
  opts.check_value = args.check_value;
  opts.max_locations = args.max_locations;
  opts.include_graph = args.format == "html" || args.format == "dot";
  opts.targets = args.targets;
  opts.pulsar2_config = args.pulsar2_config_text;
  std::unique_ptr<IsolatedChecker> isolated;
  if (args.isolate) {
    try {
      isolated = MakeIsolatedChecker();
    } catch (const std::exception& e) {
      std::cerr << "axqc: --isolate: " << e.what() << "\n";
      return kExitError;
    }
  }
  std::vector<ModelResult> results;
  for (const auto& path : args.models) {
    ModelResult m;
    m.file = path;
    try {
      m.report = isolated != nullptr ? isolated->Check(path, opts) : CheckFile(path, opts);
      m.ok = true;
      m.exit_code = ExitCodeFor(m.report.verdict);
    } catch (const InputError& e) {
      m.exit_code = kExitError;
      m.error = e.what();
    } catch (const std::exception& e) {
      m.exit_code = kExitError;
      m.error_kind = "internal error while checking " + path;
      m.error = e.what();
    }
    results.push_back(std::move(m));
  }
  if (!ApplyGateToResults(args, gate, results)) return kExitError;
  ApplyTargetExitCodes(args, results);
  ApplyNotApplicableExitCodes(args, results);
  return EmitResults(args, results);
}

}  // namespace axqc::cli
