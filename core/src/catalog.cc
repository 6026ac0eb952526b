// The public view of the rule registry (core/src/rules.h): every rule and a lookup by ID.
#include "axqc/catalog.h"

#include <algorithm>

#include "edit_distance.h"
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

std::string RulePageName(std::string_view id) {
  std::string page(id);
  for (std::size_t p = page.find('/'); p != std::string::npos; p = page.find('/', p + 2)) {
    page.replace(p, 1, "--");
  }
  return page;
}

const RuleInfo* ClosestRule(std::string_view id) {
  const std::size_t bound = std::max<std::size_t>(3, id.size() / 3 + 1);
  const RuleInfo* best = nullptr;
  std::size_t best_d = bound;
  for (const auto& r : detail::kCatalog) {
    const std::size_t d = BoundedEditDistance(id, r.id, best_d);
    if (d < best_d) {
      best = &r;
      best_d = d;
    }
  }
  return best;
}

}  // namespace axqc
