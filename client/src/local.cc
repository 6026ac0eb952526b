// Local mode: check models in-process and render the reports.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "axqc/checker.h"
#include "axqc/render.h"
#include "cli.h"

namespace axqc::cli {

namespace {

// Worst exit code: input error (2) > non_conformant (1) > not_applicable (3) > conformant (0).
int Rank(int code) {
  switch (code) {
    case 2: return 3;
    case 1: return 2;
    case 3: return 1;
    default: return 0;
  }
}

}  // namespace

int RunLocalCheck(const CheckArgs& args) {
  CheckOptions opts;
  opts.check_value = args.check_value;
  opts.max_locations = args.max_locations;
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
  const bool tty = args.output.empty() && ::isatty(STDOUT_FILENO) != 0;
  TextOptions text;
  text.color = args.color == "always" || (args.color == "auto" && tty);
  text.explain = args.explain;
  int worst = 0;
  nlohmann::json reports = nlohmann::json::array();
  for (std::size_t i = 0; i < args.models.size(); ++i) {
    const auto& path = args.models[i];
    int code = 0;
    try {
      auto report = CheckFile(path, opts);
      code = ExitCodeFor(report.verdict);
      if (args.format == "json") {
        reports.push_back(ReportToJson(report));
      } else {
        if (i > 0) *out << "\n";
        *out << RenderText(report, text);
      }
    } catch (const InputError& e) {
      code = kExitError;
      std::cerr << "axqc: input error: " << e.what() << "\n";
      if (args.format == "json") {
        reports.push_back({{"schema", Report::kSchema}, {"model", {{"file", path}}},
                           {"verdict", nullptr}, {"input_error", e.what()}});
      }
    } catch (const std::exception& e) {
      code = kExitError;
      std::cerr << "axqc: internal error while checking " << path << ": " << e.what() << "\n";
    }
    if (Rank(code) > Rank(worst)) worst = code;
  }
  if (args.format == "json") {
    *out << (reports.size() == 1 ? reports[0] : reports).dump(2) << "\n";
  }
  return worst;
}

}  // namespace axqc::cli
