// The public view of the rule registry (core/src/rules.h): every rule and a lookup by ID.
#include "axqc/catalog.h"

#include "rules.h"

namespace axqc {

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarn:
      return "warn";
    case Severity::kInfo:
      return "info";
  }
  return "error";
}

std::span<const RuleInfo> Rules() { return detail::kCatalog; }

const RuleInfo* FindRule(std::string_view id) {
  for (const auto& r : detail::kCatalog) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

}  // namespace axqc
