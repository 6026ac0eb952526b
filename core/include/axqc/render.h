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
// The report's chip targets (Report::targets) as the JSON report's "targets" array.
nlohmann::json TargetsToJson(const Report& report);
std::string RenderJson(const Report& report, int indent = 2);
// Inverse of ReportToJson (used by the remote client). Throws nlohmann::json::exception.
Report ReportFromJson(const nlohmann::json& j);

// Rule catalog as JSON (for `axqc rules --format json`).
nlohmann::json RulesToJson();

// ---- CI formats (core/src/render_ci.cc). Every function takes all reports of one run plus the
// models that could not be checked (input or infrastructure errors), so one invocation gives one
// document.

// A model without a report: the file as given and why it could not be checked. `input`: the model
// or the request is at fault (not ONNX, unreadable, refused); false: no verdict for another reason
// (a server that cannot be reached or failed), which is not the model's fault.
struct ModelError {
  std::string file;
  std::string message;
  bool input = true;
};

// With a gate (Report::gate.active, Finding::state), a finding "fails" when it counts (neither
// waived nor in the baseline) and its severity reaches gate.fail_on; without one, every error
// finding fails. Stale waivers (gate.stale_waivers) are reported once per run.

// JUnit XML: <testsuites> with one <testsuite> per model (name = model file) and one <testcase>
// per rule of the catalog (name = rule ID). Each failing finding is a <failure> of its rule's
// testcase; the others (warn/info, waived, baselined) go to the testcase's <system-out>;
// value-check rules that did not run (no -c) and every rule of a not_applicable model are
// <skipped>. Stale waivers are a testcase "axqc/stale-waivers" (a failure with fail_on warn).
// testsuite "failures" counts the testcases with at least one failure. A ModelError is a
// testsuite with one testcase "input" (or "service" when it is not the model's fault) holding an
// <error> of type input_error (service_error). Testcase classnames are the model path with its
// dots written '_' (viewers split class names at dots).
std::string RenderJunit(std::span<const Report> reports, std::span<const ModelError> errors = {});

// SARIF 2.1.0 (GitHub code scanning): one run, tool.driver.rules = the catalog (with help text),
// one result per finding (ruleId, ruleIndex, level error/warning/note, message, the model file as
// artifact location, the node as logical location, partialFingerprints "axqcFingerprint/v1" =
// fingerprint:occurrence). Waived findings carry `suppressions` (external, accepted, the reason,
// the waiver's location); with a baseline the others carry baselineState new/unchanged. Stale
// waivers are toolConfigurationNotifications located in the configuration file. ModelErrors
// become toolExecutionNotifications and executionSuccessful=false. A finding's physical location
// is the model file with region startLine 1 (a binary file has no lines; GitHub code scanning
// places a result only with a startLine). `rules_url`: the base of the rule pages as in
// HtmlOptions::rules_url; when it is an absolute http(s) URL each rule gets its helpUri there.
nlohmann::json SarifJson(std::span<const Report> reports, std::span<const ModelError> errors = {},
                         std::string_view rules_url = {});
std::string RenderSarif(std::span<const Report> reports, std::span<const ModelError> errors = {},
                        std::string_view rules_url = {});

// GitHub Actions workflow commands: "::error file=F,title=RULE::message" per error finding,
// ::warning per warn, ::notice per info (the first locations of each group, plus a line for the
// rest; waived and baselined findings are not annotated), then one plain summary line per model;
// stale waivers as ::warning (::error with fail_on warn) at their line of the configuration.
std::string RenderGithub(std::span<const Report> reports, std::span<const ModelError> errors = {});

// GitLab Code Quality (JSON array of issues): one issue per finding that is not waived
// (check_name = rule ID, description = rule, message and node, severity error -> major,
// warn -> minor, info -> info, location.path = the model file, lines.begin = 1, fingerprint =
// 32 hex digits unique per finding and stable across runs), one per stale waiver (located at its
// line of the configuration) and one "blocker" per model that could not be checked.
nlohmann::json GitlabJson(std::span<const Report> reports, std::span<const ModelError> errors = {});
std::string RenderGitlab(std::span<const Report> reports, std::span<const ModelError> errors = {});

}  // namespace axqc
