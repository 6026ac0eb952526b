// Local mode: check models in-process. Rendering (shared with remote mode): EmitResults.
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

// Worst exit code: no verdict (4) > input error (2) > non_conformant (1) > not_applicable (3) >
// conformant (0).
int Rank(int code) {
  switch (code) {
    case kExitNoVerdict:
      return 4;
    case kExitError:
      return 3;
    case 1:
      return 2;
    case 3:
      return 1;
    default:
      return 0;
  }
}

}  // namespace

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
  const bool ci_format =
      args.format == "junit" || args.format == "sarif" || args.format == "github";
  std::vector<ModelError> errors;
  for (const auto& r : results) {
    if (Rank(r.exit_code) > Rank(worst)) worst = r.exit_code;
    if (r.ok) {
      if (ci_format) reports.push_back(r.report);
    } else {
      std::cerr << "axqc: " << r.error_kind << ": " << r.error << "\n";
      errors.push_back({r.file, r.error});
    }
  }
  if (args.format == "json" && results.size() == 1 && results[0].ok) {
    *out << RenderJson(results[0].report);  // same text as below, without the json tree
  } else if (args.format == "json") {
    nlohmann::json docs = nlohmann::json::array();
    for (const auto& r : results) {
      if (r.ok) {
        docs.push_back(ReportToJson(r.report));
      } else {
        docs.push_back({{"schema", Report::kSchema},
                        {"model", {{"file", r.file}}},
                        {"verdict", nullptr},
                        {"input_error", r.error}});
      }
    }
    *out << (docs.size() == 1 ? docs[0] : docs).dump(2) << "\n";
  } else if (args.format == "junit") {
    *out << RenderJunit(reports, errors);
  } else if (args.format == "sarif") {
    *out << RenderSarif(reports, errors);
  } else if (args.format == "github") {
    *out << RenderGithub(reports, errors);
  } else {
    const bool tty = args.output.empty() && ::isatty(STDOUT_FILENO) != 0;
    TextOptions text;
    text.color = args.color == "always" || (args.color == "auto" && tty);
    text.explain = args.explain;
    bool first = true;
    for (const auto& r : results) {
      if (!r.ok) continue;
      if (!first) *out << "\n";
      first = false;
      *out << RenderText(r.report, text);
    }
  }
  out->flush();
  if (!*out) {
    std::cerr << "axqc: cannot write the report\n";
    return kExitError;
  }
  return worst;
}

int RunLocalCheck(const CheckArgs& args) {
  CheckOptions opts;
  opts.check_value = args.check_value;
  opts.max_locations = args.max_locations;
  std::vector<ModelResult> results;
  for (const auto& path : args.models) {
    ModelResult m;
    m.file = path;
    try {
      m.report = CheckFile(path, opts);
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
  return EmitResults(args, results);
}

}  // namespace axqc::cli
