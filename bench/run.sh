#!/usr/bin/env bash
# bench/run.sh [WORK_DIR]: the checker and service benchmarks in one command (docs/performance.md).
#
# Builds axqc, axqc-bench-gen and axqc-bench-check (release preset), generates the synthetic
# models into WORK_DIR (default: a new directory under ${TMPDIR:-/tmp}; models already there are
# reused, nothing is written into the source tree), checks that every model gets its expected
# verdict with `axqc check`, then runs axqc-bench-check (each model in a fresh process, min/median
# of N runs, wall and thread-CPU clocks, peak RSS), prints the tables and writes
# bench/results/<date>-<host>.json; then runs axqc-bench-service against axqc-server processes it
# starts itself (GetReport/Upload latency with 1, 8 and 32 clients, upload throughput against a
# raw loopback copy, an overload burst) and writes bench/results/<date>-<host>-service.json; then
# axqc-bench-isolate (per-check cost of process isolation) -> <date>-<host>-isolation.json.
#
# Environment: AXQC_BENCH_REPEAT (runs per model, default 5), AXQC_BENCH_SCALES (node counts,
# default "1000 10000 100000"), AXQC_BENCH_JOBS (build jobs, default 2), AXQC_BENCH_SECONDS
# (duration of each service scenario, default 3), AXQC_BENCH_SERVICE=0 (skip the service part),
# AXQC_BENCH_BASELINE (an earlier results file for the wall-time target; default
# bench/results/2026-11-29-vm.json, empty to skip), AXQC_BENCH_ONLY=isolation (only the
# upload-throughput and isolation targets: the two models they need, axqc-bench-service's upload
# scenario and axqc-bench-isolate; a few minutes).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build/release
work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/axqc-bench.XXXXXX")}
repeat=${AXQC_BENCH_REPEAT:-5}
scales=${AXQC_BENCH_SCALES:-"1000 10000 100000"}
mkdir -p "$work" "$root/bench/results"

if [[ ! -f $build/CMakeCache.txt ]]; then
  (cd "$root" && cmake --preset release ${AXQC_ONNX_PREFIX:+-DCMAKE_PREFIX_PATH=$AXQC_ONNX_PREFIX})
fi
targets=(axqc axqc-bench-gen axqc-bench-check)
if [[ ${AXQC_BENCH_SERVICE:-1} != 0 ]]; then targets+=(axqc-server axqc-bench-service axqc-bench-isolate); fi
cmake --build "$build" -j"${AXQC_BENCH_JOBS:-2}" --target "${targets[@]}"

gen=$build/bench/axqc-bench-gen
axqc=$build/client/axqc
label() { if (($1 % 1000 == 0)); then echo "$(($1 / 1000))k"; else echo "$1"; fi; }

models=()    # checked by the benchmark, in table order
expect=()    # expected `axqc check` exit code per model (0 conformant, 1 non_conformant)
add() {      # add NAME EXIT GENERATOR-ARGS...
  local name=$1 code=$2
  shift 2
  if [[ ! -f $work/$name.onnx ]]; then "$gen" "$@" -o "$work/$name.onnx"; fi
  models+=("$work/$name.onnx")
  expect+=("$code")
}

if [[ ${AXQC_BENCH_ONLY:-} == isolation ]]; then
  cmake --build "$build" -j"${AXQC_BENCH_JOBS:-2}" --target axqc-server axqc-worker \
    axqc-bench-service axqc-bench-isolate axqc-bench-gen
  [[ -f $work/mixed-1k.onnx ]] || "$gen" --nodes 1000 -o "$work/mixed-1k.onnx"
  [[ -f $work/cnn-w256-1k.onnx ]] ||
    "$gen" --nodes 1000 --kind cnn --width 256 -o "$work/cnn-w256-1k.onnx"
  out=$root/bench/results/$(date +%F)-$(hostname -s)
  echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$build/bench/axqc-bench-service" --server-bin "$build/server/axqc-server" \
    --small "$work/mixed-1k.onnx" --large "$work/cnn-w256-1k.onnx" --only upload \
    --json "$out-upload.json"
  "$build/bench/axqc-bench-isolate" --worker "$build/server/axqc-worker" \
    --repeat "${AXQC_BENCH_ISOLATE_REPEAT:-30}" --json "$out-isolation.json" \
    "$work/mixed-1k.onnx" "$work/cnn-w256-1k.onnx"
  "$build/bench/axqc-bench-isolate" --worker "$build/server/axqc-worker" --no-trim \
    --repeat "${AXQC_BENCH_ISOLATE_REPEAT:-30}" --json "$out-isolation-no-trim.json" \
    "$work/mixed-1k.onnx" "$work/cnn-w256-1k.onnx"
  echo "results: $out-upload.json $out-isolation.json $out-isolation-no-trim.json (models in $work)"
  exit 0
fi

largest=0
for n in $scales; do
  add "mixed-$(label "$n")" 0 --nodes "$n"
  ((n > largest)) && largest=$n
done
# Report grouping under load: the largest model with thousands of violations.
add "violations-$(label "$largest")" 1 --nodes "$largest" --violations
# External data: the same 10k-node graph with 16x more weight bytes (width 128 vs 32).
add ext-small-10k 0 --nodes 10000 --width 32 --external ext-small-10k.onnx.data
add ext-large-10k 0 --nodes 10000 --width 128 --external ext-large-10k.onnx.data
# Weight-dominated models, like real CNNs and transformers (memory target: RSS vs file size).
add cnn-w256-1k 0 --nodes 1000 --kind cnn --width 256
add transformer-w512-2k 0 --nodes 2000 --kind transformer --width 512

for i in "${!models[@]}"; do
  code=0
  "$axqc" check "${models[$i]}" >/dev/null || code=$?
  if [[ $code != "${expect[$i]}" ]]; then
    echo "bench/run.sh: ${models[$i]}: axqc check exit $code, expected ${expect[$i]}" >&2
    exit 1
  fi
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
mem_kb=$(sed -n 's/^MemTotal:[[:space:]]*\([0-9]*\) kB/\1/p' /proc/meminfo)
machine=$(printf '{"host":"%s","nproc":%s,"cpu":"%s","mem_kb":%s,"kernel":"%s","loadavg_start":"%s","date":"%s","commit":"%s"}' \
  "$(hostname -s)" "$(nproc)" "$cpu" "$mem_kb" "$(uname -r)" "$(cut -d' ' -f1-3 /proc/loadavg)" \
  "$(date -u +%FT%TZ)" "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)")
out=$root/bench/results/$(date +%F)-$(hostname -s).json
# The #26 checker targets are printed after the tables (met / missed with the measured values);
# the wall-time target compares against AXQC_BENCH_BASELINE (default: the 2026-11-29 results).
baseline=${AXQC_BENCH_BASELINE-$root/bench/results/2026-11-29-vm.json}
baseline_args=()
if [[ -n $baseline && -f $baseline ]]; then baseline_args=(--baseline "$baseline"); fi
"$build/bench/axqc-bench-check" --repeat "$repeat" --machine "$machine" --json "$out" \
  "${baseline_args[@]}" "${models[@]}"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "results: $out  (models in $work)"

if [[ ${AXQC_BENCH_SERVICE:-1} != 0 ]]; then
  service_out=${out%.json}-service.json
  [[ -f $work/mixed-1k.onnx ]] || "$gen" --nodes 1000 -o "$work/mixed-1k.onnx"
  "$build/bench/axqc-bench-service" --server-bin "$build/server/axqc-server" \
    --small "$work/mixed-1k.onnx" --large "$work/cnn-w256-1k.onnx" \
    --seconds "${AXQC_BENCH_SECONDS:-3}" --machine "$machine" --json "$service_out"
  echo "service results: $service_out"

  # Process isolation: per-check cost of a worker process against the in-process checker, on a
  # 1k-node model and a 65 MB weight-heavy one (docs/performance.md, "Process isolation").
  isolation_out=${out%.json}-isolation.json
  "$build/bench/axqc-bench-isolate" --worker "$build/server/axqc-worker" \
    --repeat "${AXQC_BENCH_ISOLATE_REPEAT:-30}" --json "$isolation_out" \
    "$work/mixed-1k.onnx" "$work/cnn-w256-1k.onnx"
  "$build/bench/axqc-bench-isolate" --worker "$build/server/axqc-worker" --no-trim \
    --repeat "${AXQC_BENCH_ISOLATE_REPEAT:-30}" --json "${isolation_out%.json}-no-trim.json" \
    "$work/mixed-1k.onnx" "$work/cnn-w256-1k.onnx"
  echo "isolation results: $isolation_out ${isolation_out%.json}-no-trim.json"
fi
