// Renderers over the one report model.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>

#include "axqc/report.h"

namespace axqc {

struct TextOptions {
  bool color = false;    // ANSI colours (only on a TTY)
  bool explain = false;  // print the ownership map
};

std::string RenderText(const Report& report, const TextOptions& options = {});

// JSON of the report, schema "axqc.report/v1" (docs/report-schema.md).
nlohmann::json ReportToJson(const Report& report);
std::string RenderJson(const Report& report, int indent = 2);
// Inverse of ReportToJson (used by the remote client). Throws nlohmann::json::exception.
Report ReportFromJson(const nlohmann::json& j);

// Rule catalog as JSON (for `axqc rules --format json`).
nlohmann::json RulesToJson();

// ---- CI formats (core/src/render_ci.cc). Every function takes all reports of one run plus the
// models that could not be checked (input or infrastructure errors), so one invocation gives one
// document.

// A model without a report: the file as given and why it could not be checked.
struct ModelError {
  std::string file;
  std::string message;
};

// JUnit XML: <testsuites> with one <testsuite> per model (name = model file) and one <testcase>
// per rule of the catalog (name = rule ID). Each error finding is a <failure> of its rule's
// testcase; warn/info findings go to the testcase's <system-out>; value-check rules that did not
// run (no -c) and every rule of a not_applicable model are <skipped>. testsuite "failures" counts
// the testcases with at least one failure. A ModelError is a testsuite with one testcase "input"
// holding an <error>.
std::string RenderJunit(std::span<const Report> reports, std::span<const ModelError> errors = {});

// SARIF 2.1.0 (GitHub code scanning): one run, tool.driver.rules = the catalog (with help text),
// one result per finding (ruleId, ruleIndex, level error/warning/note, message, the model file as
// artifact location, the node as logical location, partialFingerprints stable across runs).
// ModelErrors become toolExecutionNotifications and executionSuccessful=false.
nlohmann::json SarifJson(std::span<const Report> reports, std::span<const ModelError> errors = {});
std::string RenderSarif(std::span<const Report> reports, std::span<const ModelError> errors = {});

// GitHub Actions workflow commands: "::error file=F,title=RULE::message" per error finding,
// ::warning per warn, ::notice per info (the first locations of each group, plus a line for the
// rest), then one plain summary line per model.
std::string RenderGithub(std::span<const Report> reports, std::span<const ModelError> errors = {});

}  // namespace axqc
