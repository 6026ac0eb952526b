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
# scenario and axqc-bench-isolate; a few minutes). AXQC_BENCH_ONLY=external: only the large
# external-data model (a 1000-node graph whose data file holds AXQC_BENCH_EXTERNAL_GB, default 4,
# GiB more as a sparse hole; AXQC_BENCH_EXTERNAL_WIDTH, default 32, its channel width): wall time and peak RSS of `axqc check` on it, and of axqc-server
# checking it by path, by Upload of the whole data file (--full-upload) and by ranged Upload (the
# graph and the bytes the check reads; also with -c) -> <date>-<host>-external[-<GB>g][-w<WIDTH>].json; it also runs at the end of the
# full benchmark unless AXQC_BENCH_EXTERNAL=0.
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

# The large external-data model: CLI, server by path, server by Upload (docs/performance.md).
external_bench() {
  cmake --build "$build" -j"${AXQC_BENCH_JOBS:-2}" --target axqc axqc-server axqc-worker \
    axqc-bench-gen
  local gb=${AXQC_BENCH_EXTERNAL_GB:-4}
  # Width 512 puts the per-channel scales (2 KiB) in the data file too: the ranged check reads them.
  local width=${AXQC_BENCH_EXTERNAL_WIDTH:-32}
  local dir=$work/ext-${gb}g-w$width
  mkdir -p "$dir"
  if [[ ! -f $dir/model.onnx ]]; then
    "$gen" --nodes 1000 --width "$width" --external model.onnx.data --pad-external $((gb << 30)) \
      -o "$dir/model.onnx"
  fi
  local graph_bytes data_bytes data_disk_kb
  graph_bytes=$(stat -c %s "$dir/model.onnx")
  data_bytes=$(stat -c %s "$dir/model.onnx.data")
  data_disk_kb=$(du -k "$dir/model.onnx.data" | cut -f1)
  # wall seconds and peak RSS (KiB) of a command; its exit code 0 or 1 (a verdict) is accepted.
  timed() {
    local t
    t=$(mktemp)
    /usr/bin/time -f '%e %M' -o "$t" "$@" >/dev/null || (($? == 1)) || {
      echo "bench/run.sh: failed: $*" >&2
      exit 1
    }
    cat "$t"
    rm -f "$t"
  }
  read -r cli_s cli_kb < <(timed "$axqc" check "$dir/model.onnx")
  # One server per door, so that each peak RSS is that door's.
  serve() {  # serve -> sets pid, port and mport
    rm -f "$work/ext-ready.json"
    "$build/server/axqc-server" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
      --ready-file "$work/ext-ready.json" --allowed-root "$dir" --store-path :memory: \
      --workers 1 --max-external-data-bytes $(((gb + 1) << 30)) --data-file-dir "$work" \
      2>"$work/ext-server.log" &
    pid=$!
    for _ in $(seq 300); do [[ -s $work/ext-ready.json ]] && break; sleep 0.1; done
    port=$(sed -n 's/.*"grpc_port":\([0-9]*\).*/\1/p' "$work/ext-ready.json")
    mport=$(sed -n 's/.*"metrics_port":\([0-9]*\).*/\1/p' "$work/ext-ready.json")
  }
  received() {  # bytes the server received in Upload messages (model and data chunks)
    curl -s "http://127.0.0.1:$mport/metrics" |
      sed -n 's/^axqc_upload_bytes_total \([0-9.e+]*\).*/\1/p' | awk '{printf "%.0f", $1}'
  }
  peak() {  # peak RSS (KiB) of the server and of its worker processes
    local w=0 c
    for c in $(pgrep -P "$pid"); do
      w=$((w + $(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$c/status" 2>/dev/null || echo 0)))
    done
    echo "$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$pid/status") $w"
  }
  serve
  read -r path_s path_client_kb < <(timed "$axqc" check --server "127.0.0.1:$port" \
    --ref "$dir/model.onnx")
  read -r path_server_kb path_worker_kb < <(peak)
  kill -TERM "$pid"
  wait "$pid" || true
  serve
  read -r upload_s upload_client_kb < <(timed "$axqc" check --server "127.0.0.1:$port" \
    --full-upload "$dir/model.onnx")
  read -r upload_server_kb upload_worker_kb < <(peak)
  upload_bytes=$(received)
  kill -TERM "$pid"
  wait "$pid" || true
  # Ranged upload (the default of axqc check --server): the graph and the bytes the check reads;
  # without and with -c (the value checks read more), each on a fresh server.
  serve
  read -r ranged_s ranged_client_kb < <(timed "$axqc" check --server "127.0.0.1:$port" \
    "$dir/model.onnx")
  read -r ranged_server_kb ranged_worker_kb < <(peak)
  ranged_bytes=$(received)
  kill -TERM "$pid"
  wait "$pid" || true
  serve
  read -r ranged_cv_s ranged_cv_client_kb < <(timed "$axqc" check --server "127.0.0.1:$port" \
    -c "$dir/model.onnx")
  read -r ranged_cv_server_kb ranged_cv_worker_kb < <(peak)
  ranged_cv_bytes=$(received)
  # The ranged reports are the command line's (but for the key).
  local same=true
  for cv in "" -c; do
    diff <("$axqc" check $cv --format json "$dir/model.onnx" | grep -v '"sha256"') \
      <("$axqc" check $cv --format json --server "127.0.0.1:$port" "$dir/model.onnx" |
        grep -v '"sha256"') >"$work/ext-report.diff" || same=false
  done
  kill -TERM "$pid"
  wait "$pid" || true
  local out
  # Sizes other than the default 4 GiB (and widths other than 32) get a file of their own.
  local suffix=""
  if ((gb != 4)); then suffix+="-${gb}g"; fi
  if ((width != 32)); then suffix+="-w$width"; fi
  out=$root/bench/results/$(date +%F)-$(hostname -s)-external$suffix.json
  cat >"$out" <<JSON
{"model": {"graph_bytes": $graph_bytes, "data_bytes": $data_bytes, "data_disk_kib": $data_disk_kb,
  "nodes": 1000, "generator": "axqc-bench-gen --nodes 1000 --width $width --external model.onnx.data --pad-external $((gb << 30))"},
 "machine": {"host": "$(hostname -s)", "nproc": $(nproc), "loadavg": "$(cut -d' ' -f1-3 /proc/loadavg)",
  "commit": "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"},
 "cli_local": {"wall_s": $cli_s, "peak_rss_kib": $cli_kb},
 "server_path": {"wall_s": $path_s, "client_peak_rss_kib": $path_client_kb,
  "server_peak_rss_kib": $path_server_kb, "worker_peak_rss_kib": $path_worker_kb},
 "server_upload": {"wall_s": $upload_s, "bytes_sent": $upload_bytes,
  "client_peak_rss_kib": $upload_client_kb, "server_peak_rss_kib": $upload_server_kb,
  "worker_peak_rss_kib": $upload_worker_kb},
 "ranged_report_equals_cli": $same,
 "server_ranged": {"wall_s": $ranged_s, "bytes_sent": $ranged_bytes,
  "client_peak_rss_kib": $ranged_client_kb, "server_peak_rss_kib": $ranged_server_kb,
  "worker_peak_rss_kib": $ranged_worker_kb},
 "server_ranged_check_value": {"wall_s": $ranged_cv_s, "bytes_sent": $ranged_cv_bytes,
  "client_peak_rss_kib": $ranged_cv_client_kb, "server_peak_rss_kib": $ranged_cv_server_kb,
  "worker_peak_rss_kib": $ranged_cv_worker_kb}}
JSON
  cat "$out"
  echo "external-data results: $out (model in $dir)"
}

if [[ ${AXQC_BENCH_ONLY:-} == external ]]; then
  external_bench
  exit 0
fi

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

if [[ ${AXQC_BENCH_EXTERNAL:-1} != 0 ]]; then external_bench; fi

# Every target of this run in one list (the checker's, the service's and isolation's), met or
# missed with its measured value; docs/performance.md explains the missed ones.
summary() {
  echo
  echo "targets of this run (docs/performance.md):"
  /usr/bin/python3 - "$out" "${service_out:-}" "${isolation_out:-}" <<'PY'
import json, os, sys
def load(p):
    return json.load(open(p)) if p and os.path.exists(p) else {}
rows = list(load(sys.argv[1]).get("targets", [])) + list(load(sys.argv[2]).get("targets", []))
for m in load(sys.argv[3]).get("models", []):
    rows.append({"target": "isolation overhead <= 10% (CPU median), " + os.path.basename(m["model"]),
                 "value": "%.1f%%" % m["overhead_cpu_median_pct"], "met": m["target_met"]})
for r in rows:
    print("  %s %s: %s" % ("met   " if r["met"] else "MISSED", r["target"], r["value"]))
PY
}
summary
