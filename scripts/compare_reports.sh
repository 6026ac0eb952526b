#!/usr/bin/env bash
# Golden reports for refactors that must not change behaviour.
#
#   scripts/compare_reports.sh record DIR    write the reports of every corpus model into DIR
#   scripts/compare_reports.sh compare DIR   write them again into a temporary folder and diff
#                                            against DIR; exit 1 and list the models that differ
#
# Record with the build BEFORE the change, compare with the build after it. Each corpus is
# checked in one run per report form (all its models at once), into DIR/<corpus>/:
#   report.json    axqc check --format json M...        (units included: the ownership map)
#   report-c.json  axqc check --format json -c M...     (check_value rules)
#   report.txt     axqc check --format text --color never --explain M...  (text + ownership map)
#   report-c.txt   axqc check --format text --color never -c M...
#   report.sarif, report.junit, report.gitlab   the CI formats, with -c
#   *.stderr       what each run printed on stderr (input errors)
#   exit-codes     the exit code of each run;  models.list  the models, in order
# Corpus: build/<preset>/examples/*.onnx, tests/data/**/*.onnx, the ONNX backend test models
# ($AXQC_ONNX_TEST_DATA/**/*.onnx, ~1400 small models, node and pattern coverage) and, when
# axqc-bench-gen was built, the benchmark models it generates (400 nodes; mixed, cnn and
# transformer, each with and without --violations).
#
# The JSON reports are compared as the list of model reports (the "reports" of the document;
# a recording of a build that printed one bare report or an array is read the same way).
# Fields that vary from run to run are removed before comparing (nothing else is):
#   JSON   "timings" (seconds per stage), "generated_at" and "duration", should a report ever
#          carry them (today none does: the reports are deterministic); keys are sorted (jq -S).
#   all    models are passed relative to the corpus root, and any absolute corpus root left in
#          the output is replaced by "<root>", so DIR recorded in one checkout compares in another.
# Environment: AXQC_BIN (default build/release/client/axqc), AXQC_PRESET (default release),
# AXQC_COMPARE_QUICK=1 skips the ONNX backend models (~1400; the full run takes about 40 s).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
preset=${AXQC_PRESET:-release}
bin=${AXQC_BIN:-$root/build/$preset/client/axqc}
mode=${1:-}
dest=${2:-}
if [[ -z "$mode" || -z "$dest" || ("$mode" != record && "$mode" != compare) ]]; then
  sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 2
fi
[[ -x "$bin" ]] || { echo "axqc binary not found: $bin (build first or set AXQC_BIN)" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq is required" >&2; exit 2; }

# corpus name -> folder; files listed relative to it.
declare -A corpus=(
  [examples]="$root/build/$preset/examples"
  [tests-data]="$root/tests/data"
)
if [[ "${AXQC_COMPARE_QUICK:-0}" != 1 ]]; then
  onnx_data=${AXQC_ONNX_TEST_DATA:-}
  if [[ -z "$onnx_data" ]]; then
    onnx_data=$(ls -d /opt/axqc-deps/src/onnx-*/onnx/backend/test/data 2>/dev/null | head -1 || true)
  fi
  [[ -n "$onnx_data" && -d "$onnx_data" ]] && corpus[onnx-backend]="$onnx_data"
fi
gen="$root/build/$preset/bench/axqc-bench-gen"
bench_dir=""
if [[ -x "$gen" ]]; then
  bench_dir=$(mktemp -d)
  trap 'rm -rf "$bench_dir"' EXIT
  for kind in mixed cnn transformer; do
    for v in "" --violations; do
      "$gen" --nodes 400 --kind "$kind" $v -o "$bench_dir/$kind${v:+-violations}.onnx" \
        >/dev/null 2>&1 || true
    done
  done
  compgen -G "$bench_dir/*.onnx" >/dev/null && corpus[bench]="$bench_dir"
fi

# `axqc check --format json` prints an axqc.report/v2 document ({"schema", "reports": [...]}); a
# recording made before it (axqc.report/v1: one report object, or an array of them for several
# models) is brought to the same form first, so either compares with the other.
json_filter='(if type == "object" and .schema? == "axqc.report/v2" then .reports elif type == "object" and (.schema? // "" | startswith("axqc.report/")) then [.] else . end) | del(.. | objects | .timings?, .generated_at?, .duration?) | walk(if type == "object" and has("file") and (.file | type) == "string" then .file |= sub("^" + $root + "/"; "") else . end)'

render() {  # render OUTDIR CORPUS_ROOT: one invocation per form over all models of the corpus
  local out=$1 croot=$2
  mkdir -p "$out"
  local models=()
  while IFS= read -r -d '' m; do models+=("${m#"$croot"/}"); done \
    < <(find "$croot" -name '*.onnx' -type f -print0 | LC_ALL=C sort -z)
  printf '%s\n' "${models[@]}" >"$out/models.list"
  local rcs=()
  run() {  # run NAME KIND ARGS...
    local name=$1 kind=$2
    shift 2
    local rc=0
    (cd "$croot" && "$bin" check --no-config --local "$@" "${models[@]}") \
      >"$out/$name.raw" 2>"$out/$name.stderr" || rc=$?
    rcs+=("$name=$rc")
    if [[ "$kind" == json ]] && jq -e . >/dev/null 2>&1 <"$out/$name.raw"; then
      jq -S --arg root "$croot" "$json_filter" <"$out/$name.raw" >"$out/$name"
    else
      sed "s|$croot|<root>|g" <"$out/$name.raw" >"$out/$name"
    fi
    rm -f "$out/$name.raw"
    sed -i "s|$croot|<root>|g" "$out/$name.stderr"
  }
  run report.json json --format json
  run report-c.json json --format json -c
  run report.txt text --format text --color never --explain
  run report-c.txt text --format text --color never -c
  run report.sarif json --format sarif -c
  run report.junit text --format junit -c
  run report.gitlab json --format gitlab -c
  printf '%s\n' "${rcs[@]}" >"$out/exit-codes"
  echo "  ${#models[@]} models"
}

record_into() {
  local out=$1
  mkdir -p "$out"
  for name in $(printf '%s\n' "${!corpus[@]}" | sort); do
    echo "$name: ${corpus[$name]}"
    render "$out/$name" "${corpus[$name]}"
  done
}

case "$mode" in
  record)
    rm -rf "$dest"
    record_into "$dest"
    echo "recorded into $dest"
    ;;
  compare)
    [[ -d "$dest" ]] || { echo "no recording at $dest" >&2; exit 2; }
    now=$(mktemp -d)
    record_into "$now"
    if diff -r -q "$dest" "$now" >/tmp/compare_reports.$$ 2>&1; then
      echo "identical: every report matches $dest"
      rm -rf "$now" /tmp/compare_reports.$$
    else
      echo "DIFFERENT (first 40; the reports of now are in $now):"
      head -40 /tmp/compare_reports.$$
      rm -f /tmp/compare_reports.$$
      exit 1
    fi
    ;;
esac
