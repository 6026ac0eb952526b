#!/usr/bin/env bash
# Proof that `axqc fix` does not change what a model computes: every model below is fixed, both
# the original and the fixed model run in onnxruntime (CPU, graph optimizations off) on the same
# seeded random inputs (scripts/ort_run.mjs), and their outputs must be identical: same names,
# types, shapes and bit-identical values (two seeds; symbolic dims batch=2, other=2). Models:
#   * tests/data/real_exports/*.onnx (raw PyTorch exports) and tests/data/modelled_exports/*.onnx
#     (newer exporters' output modelled with the model builder);
#   * one model per rewrite from axqc-fix-fixtures (tests/support/fix_models.h), each of which
#     must get its rewrite applied (so the comparison is never between two identical files);
#   * a model with external weights, fixed into another directory (data written next to it);
#   * the example models of the build.
#   fix_ort_test.sh AXQC FIXTURES_TOOL EXAMPLES_DIR
set -euo pipefail
exec </dev/null  # nothing here reads stdin (a terminal would stop a background run)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
axqc=$1
gen=$2
examples=$3
# shellcheck source=tests/ort/ort_env.sh
source "$root/tests/ort/ort_env.sh"
echo "onnxruntime-node: $AXQC_ORT_NODE"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$gen" "$tmp/fixtures"
fail=0
count=0

outputs() {  # outputs MODEL SEED -> JSON of the outputs on stdout
  node "$root/scripts/ort_run.mjs" --seed "$2" --dim batch=2 --dim other=2 "$1" |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{
      process.stdout.write(JSON.stringify(JSON.parse(s).outputs));});'
}

# check NAME MODEL REWRITE [ARGS...]: fix MODEL (REWRITE must apply when not "-"), compare.
check() {
  local name=$1 model=$2 rewrite=$3
  shift 3
  local out=$tmp/fixed/$name.onnx
  mkdir -p "$(dirname "$out")"
  local rc=0
  "$axqc" fix "$model" -o "$out" --format json "$@" >"$tmp/$name.fix.json" 2>"$tmp/$name.fix.err" || rc=$?
  if [ "$rc" -eq 2 ] || [ ! -f "$out" ]; then
    echo "FAIL $name: axqc fix exit $rc: $(cat "$tmp/$name.fix.err")"; fail=1; return
  fi
  if [ "$rewrite" != "-" ] && ! node -e '
      const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      const r = j.rewrites.find((x) => x.id === process.argv[2]);
      process.exit(r && r.applied > 0 ? 0 : 1);' "$tmp/$name.fix.json" "$rewrite"; then
    echo "FAIL $name: rewrite $rewrite did not apply"; fail=1; return
  fi
  local applied
  applied=$(node -e 'const j=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));
    console.log(j.rewrites.filter((x)=>x.applied>0).map((x)=>x.id+":"+x.applied).join(" "))' \
    "$tmp/$name.fix.json")
  for seed in 7 11; do
    local a b
    if ! a=$(outputs "$model" "$seed" 2>"$tmp/$name.a.err"); then
      echo "FAIL $name: the original does not run: $(cat "$tmp/$name.a.err")"; fail=1; return
    fi
    if ! b=$(outputs "$out" "$seed" 2>"$tmp/$name.b.err"); then
      echo "FAIL $name: the fixed model does not run: $(cat "$tmp/$name.b.err")"; fail=1; return
    fi
    if [ "$a" != "$b" ]; then
      echo "FAIL $name: outputs differ (seed $seed)"
      echo "  original: ${a:0:300}"
      echo "  fixed:    ${b:0:300}"
      fail=1; return
    fi
  done
  count=$((count + 1))
  echo "ok   $name: identical outputs ($applied)"
}

for f in "$root"/tests/data/real_exports/*.onnx; do
  check "$(basename "$f" .onnx)" "$f" value-info
done
for f in "$root"/tests/data/modelled_exports/*.onnx; do
  check "modelled_$(basename "$f" .onnx)" "$f" -
done
while IFS=$'\t' read -r file rewrite args; do
  # shellcheck disable=SC2086  # args is a word list (e.g. "--ir-version 8")
  check "fixture_$(basename "$file" .onnx)" "$tmp/fixtures/$file" "$rewrite" $args
done <"$tmp/fixtures/manifest.tsv"
# The external data of the fixed model lies next to it, not next to the input.
if [ -f "$tmp/fixed/fixture_external_weights.onnx.data" ] &&
   ! grep -q weights.bin "$tmp/fixed/fixture_external_weights.onnx"; then
  echo "ok   external data written next to the output"
else
  echo "FAIL external data: expected fixture_external_weights.onnx.data next to the fixed model"
  fail=1
fi
for f in "$examples"/*.onnx; do
  check "example_$(basename "$f" .onnx)" "$f" -
done
echo "$count models compared"
[ "$count" -ge 30 ] || { echo "FAIL: expected at least 30 models"; fail=1; }
exit $fail
