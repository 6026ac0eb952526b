// Compiles: a handle made from a catalog ID (tests/rule_handle_compile_test.sh).
#include "rules.h"

constexpr axqc::RuleId kId = axqc::rules::kQdqScaleValue;
static_assert(kId.id() == "qdq/scale-value");
constexpr axqc::RuleId kSame{"qdq/scale-value"};
static_assert(kSame == kId);
int main() { return 0; }
