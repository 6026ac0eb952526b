#!/usr/bin/env bash
# A typo in a rule ID does not compile: a RuleId is made only from an ID of the catalog (its
# constructor is consteval, core/src/rules.h). tests/compile/rule_handle_ok.cc must compile and
# tests/compile/rule_handle_typo.cc must fail with the catalog's message.
# Usage: rule_handle_compile_test.sh CXX SOURCE_DIR
set -euo pipefail
cxx=$1
src=$2
flags=(-std=c++20 -fsyntax-only -I"$src/core/include" -I"$src/core/src")
"$cxx" "${flags[@]}" "$src/tests/compile/rule_handle_ok.cc"
if out=$("$cxx" "${flags[@]}" "$src/tests/compile/rule_handle_typo.cc" 2>&1); then
  echo "FAIL: a RuleId with a misspelt ID compiled" >&2
  exit 1
fi
if ! grep -q "not in the catalog" <<<"$out"; then
  echo "FAIL: the misspelt ID failed for another reason:" >&2
  echo "$out" >&2
  exit 1
fi
echo "ok: a valid handle compiles, a misspelt rule ID does not"
