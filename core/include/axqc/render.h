// Renderers over the one report model.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "axqc/report.h"

namespace axqc {

struct TextOptions {
  bool color = false;     // ANSI colours (only on a TTY)
  bool explain = false;   // print the ownership map
};

std::string RenderText(const Report& report, const TextOptions& options = {});

// JSON of the report, schema "axqc.report/v1" (docs/report-schema.md).
nlohmann::json ReportToJson(const Report& report);
std::string RenderJson(const Report& report, int indent = 2);
// Inverse of ReportToJson (used by the remote client). Throws nlohmann::json::exception.
Report ReportFromJson(const nlohmann::json& j);

// Rule catalog as JSON (for `axqc rules --format json`).
nlohmann::json RulesToJson();

}  // namespace axqc
