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

std::string RuleUrl(std::string_view rules_url, std::string_view id) {
  constexpr std::string_view kPage = "{page}";
  const std::string page = RulePageName(id);
  if (rules_url.find(kPage) == std::string_view::npos) return std::string(rules_url) + page + ".md";
  std::string out;
  std::size_t from = 0;
  for (std::size_t at = rules_url.find(kPage); at != std::string_view::npos;
       at = rules_url.find(kPage, from)) {
    out.append(rules_url.substr(from, at - from)).append(page);
    from = at + kPage.size();
  }
  return out.append(rules_url.substr(from));
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
