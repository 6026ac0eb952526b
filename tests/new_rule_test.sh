#!/usr/bin/env bash
# scripts/new_rule.py on a copy of the registry and the rule index: the new entry lands after the
# last rule of its family, compiles into a handle and a catalog row (one more than before, in
# order), the index gets its row, the page states the catalog fields and carries the stub markers
# that RuleDocs.NoPageLeftAsWritten rejects, and the test file compiles; an existing ID, an
# unknown family or a malformed ID is refused with exit 2 and nothing written.
# Usage: new_rule_test.sh CXX SOURCE_DIR INCLUDE_DIR...
set -euo pipefail
cxx=$1
src=$2
shift 2
incs=()
for arg in "$@"; do  # CMake hands a list over as one argument with ';' between the items
  IFS=';' read -ra dirs <<<"$arg"
  for d in "${dirs[@]}"; do
    case $d in "" | /usr/include) ;; *) incs+=(-isystem "$d") ;; esac  # /usr/include: default
  done
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/core/src" "$tmp/docs/rules" "$tmp/tests/unit"
cp "$src/core/src/rules.h" "$src/core/src/rules.def" "$tmp/core/src/"
cp "$src/docs/rules/README.md" "$tmp/docs/rules/"
fail() { echo "FAIL: $*" >&2; exit 1; }
before=$(grep -c '^AXQC_RULE(' "$tmp/core/src/rules.def")

python3 "$src/scripts/new_rule.py" --root "$tmp" op/foo-bar --severity warn --section 5.3 \
  --summary 'A "quoted" summary that is long enough to be wrapped over two lines of the registry entry.' \
  --fix 'Do the right thing.' --check-value >"$tmp/out.txt"
grep -q "wrote core/src/rules.def" "$tmp/out.txt" || fail "no report of what was written"
after=$(grep -c '^AXQC_RULE(' "$tmp/core/src/rules.def")
[ "$after" = $((before + 1)) ] || fail "expected $((before + 1)) entries, got $after"
# After the last op/ entry, before the first target/ entry.
order=$(grep -o '^AXQC_RULE(k[A-Za-z0-9]*, "[a-z0-9]*/' "$tmp/core/src/rules.def" |
  sed 's/.*"//' | uniq | tr -d '\n')
[ "$order" = "scope/onnx/closure/pattern/qdq/role/op/target/pulsar2/" ] ||
  fail "families out of order: $order"
last_op=$(grep -o '^AXQC_RULE(k[A-Za-z0-9]*, "op/' "$tmp/core/src/rules.def" | tail -1)
[ "$last_op" = 'AXQC_RULE(kOpFooBar, "op/' ] || fail "the entry is not the last op/ rule: $last_op"

cat >"$tmp/check.cc" <<'CC'
#include "rules.h"
static_assert(axqc::rules::kOpFooBar.id() == "op/foo-bar");
static_assert(axqc::rules::kOpFooBar.info().severity == axqc::Severity::kWarn);
static_assert(axqc::rules::kOpFooBar.info().check_value);
static_assert(axqc::rules::kOpFooBar.info().section == "5.3");
static_assert(axqc::rules::kOpFooBar.info().summary ==
              "A \"quoted\" summary that is long enough to be wrapped over two lines of the "
              "registry entry.");
static_assert(axqc::kAllRules.size() == axqc::detail::kCatalog.size());
static_assert(axqc::kAllRules[axqc::rules::kOpFooBar.index() + 1] ==
              axqc::rules::kTargetOpUnsupported);
CC
"$cxx" -std=c++20 -fsyntax-only -I"$src/core/include" -I"$tmp/core/src" "$tmp/check.cc" ||
  fail "the new entry does not compile into a handle and a row"

grep -qF '| [`op/foo-bar`](op--foo-bar.md) | warn | yes | 5.3 |' "$tmp/docs/rules/README.md" ||
  fail "no index row"
page=$tmp/docs/rules/op--foo-bar.md
grep -qx '| severity | warn |' "$page" || fail "page: severity"
grep -qx '| spec section | 5.3 |' "$page" || fail "page: section"
grep -qx '| group | Operators |' "$page" || fail "page: group"
grep -q 'new_rule.py: write this section' "$page" || fail "page: no stub marker"
"$cxx" -std=c++20 -fsyntax-only -I"$src/core/include" -I"$src/tests/support" \
  -I"$src/tools" -I"$src/tools/modelgen" "${incs[@]}" -DONNX_ML=1 -DONNX_NAMESPACE=onnx \
  "$tmp/tests/unit/rule_op_foo_bar_test.cc" || fail "the test stub does not compile"

cp "$tmp/core/src/rules.def" "$tmp/rules.def.after"
for bad in "op/foo-bar" "nope/foo" "op/Foo_bar" "op/foo--bar"; do
  rc=0
  python3 "$src/scripts/new_rule.py" --root "$tmp" "$bad" --severity error --section 5.3 \
    --summary s --fix f 2>"$tmp/err.txt" || rc=$?
  [ "$rc" = 2 ] || fail "$bad: exit $rc, want 2"
  grep -q "new_rule.py: " "$tmp/err.txt" || fail "$bad: no reason given"
  cmp -s "$tmp/rules.def.after" "$tmp/core/src/rules.def" || fail "$bad: rules.def changed"
done
echo "ok: new_rule.py writes a compiling entry, the index row, the page stub and the test stub"
