// Must NOT compile: "qdq/scale-valeu" is not in the catalog (tests/rule_handle_compile_test.sh).
#include "rules.h"

constexpr axqc::RuleId kTypo{"qdq/scale-valeu"};
int main() { return static_cast<int>(kTypo.index()); }
