// The rule registry: the catalog (one row per rule ID: severity, spec section, summary, fix, the
// files that implement the rule and the tests that assert it) and a typed handle per row, both
// made from the entries of rules.def, the one place a rule is named.
//
// Code names a rule only through its handle, `rules::kQdqScaleValue`: a misspelt handle does not
// compile, and each handle is looked up in the catalog at compile time (RuleId's constructor is
// consteval: an ID missing from the catalog is a compile error). ID -> handle is mechanical
// ("qdq/scale-value" -> kQdqScaleValue), so `grep -rn kQdqScaleValue core/src` finds the code, and
// the entry's `implementation` names the same files (tests/unit/rule_ids_test.cc keeps the two
// equal and checks that each named test asserts the ID). The doc page
// docs/rules/<family>--<name>.md repeats both lists (tests/unit/operators_doc_test.cc keeps it in
// step). scripts/new_rule.py adds a rule: the entry, its page and a test to fill in.
//
// Rule IDs are a public contract (reports, CI scripts and docs key on them): never rename one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "axqc/catalog.h"

namespace axqc::detail {

using S = Severity;
inline constexpr bool kCv = true;
inline constexpr bool kAlways = false;

// The one catalog, in the order of rules.def (spec order, as in RULES.md).
inline constexpr std::array kCatalog{
#define AXQC_RULE(handle, ...) RuleInfo{__VA_ARGS__},
#include "rules.def"
#undef AXQC_RULE
};

}  // namespace axqc::detail

namespace axqc {

// A rule of the catalog, by index. Made only from a catalog ID at compile time.
class RuleId {
 public:
  consteval explicit RuleId(std::string_view id) : index_(IndexOf(id)) {}
  constexpr const RuleInfo& info() const { return detail::kCatalog[index_]; }
  constexpr std::string_view id() const { return info().id; }
  constexpr std::size_t index() const { return index_; }
  friend constexpr bool operator==(RuleId a, RuleId b) { return a.index_ == b.index_; }

 private:
  static consteval std::uint16_t IndexOf(std::string_view id) {
    for (std::size_t i = 0; i < detail::kCatalog.size(); ++i) {
      if (detail::kCatalog[i].id == id) return static_cast<std::uint16_t>(i);
    }
    // Not a constant expression: the ID is not in the catalog.
    throw "rule ID not in the catalog (core/src/rules.def)";
  }
  std::uint16_t index_;
};

// One handle per catalog row, in catalog order.
namespace rules {
#define AXQC_RULE(handle, id, ...) inline constexpr RuleId handle{id};
#include "rules.def"
#undef AXQC_RULE
}  // namespace rules

// Every handle, in catalog order: each row has exactly one.
inline constexpr std::array kAllRules{
#define AXQC_RULE(handle, ...) rules::handle,
#include "rules.def"
#undef AXQC_RULE
};
static_assert(kAllRules.size() == detail::kCatalog.size(), "one handle per catalog row");
static_assert(
    [] {
      for (std::size_t i = 0; i < kAllRules.size(); ++i) {
        if (kAllRules[i].index() != i) return false;
      }
      return true;
    }(),
    "handles in catalog order, none twice");

}  // namespace axqc
