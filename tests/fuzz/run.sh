#!/usr/bin/env bash
# Builds a libFuzzer target (clang-14, ASan + UBSan + libFuzzer) in build/fuzz and runs it.
#
#   tests/fuzz/run.sh [SECONDS] [TARGET]   default 600 s, TARGET check; one process, one core
#
# TARGET http_query: fuzz_http_query (a request target of the HTTP/JSON API -> router, query
# string and duration/time parsing, the validation of /v1/stats and /v1/models, see
# http_query_fuzz_input.h); seeds tests/fuzz/http_query_seeds/, working corpus
# build/fuzz/http-query-corpus, findings in build/fuzz/http-query-artifacts/, kept in
# tests/fuzz/http_query_regressions/ (run by tests/server/http_query_fuzz_test.cc).
#
# TARGET check: fuzz_check (model bytes -> load + check). TARGET upload: fuzz_upload (a sequence
# of Upload messages -> the server's upload state machine, see upload_fuzz_input.h); its seeds are
# the same models encoded as uploads (build/fuzz/upload-seeds), its working corpus
# build/fuzz/upload-corpus, its findings go to build/fuzz/upload-artifacts/ and are kept in
# tests/fuzz/upload_regressions/ (run by tests/server/upload_fuzz_regressions_test.cc).
#
# TARGET upload_frame: fuzz_upload_frame (an Upload message in slices -> the raw Upload handler's
# in-place reader, server/upload_frame.h, compared with protobuf's parser; see
# upload_frame_fuzz_input.h). Seeds tests/fuzz/upload_frame_seeds/, working corpus
# build/fuzz/upload-frame-corpus, findings in build/fuzz/upload-frame-artifacts/, kept in
# tests/fuzz/upload_frame_regressions/ (replayed by tests/server/upload_frame_test.cc).
#
# TARGET dot: fuzz_dot (a report whose graph has fuzzed node/tensor/op names -> RenderDot and
# RenderHtml, asserting the escaping invariants of dot_fuzz_input.h). Seeds tests/fuzz/dot_seeds
# and tests/fuzz/dot_regressions, working corpus build/fuzz/dot-corpus, findings in
# build/fuzz/dot-artifacts/, kept in tests/fuzz/dot_regressions/ (replayed by
# tests/unit/dot_fuzz_regressions_test.cc).
# TARGET pulsar2_config: fuzz_pulsar2_config (config.json bytes -> the Pulsar2 configuration reader
# and checks, docs/pulsar2.md, with the invariants of pulsar2_config_fuzz_input.h); dictionary
# tests/fuzz/pulsar2.dict, working corpus build/fuzz/pulsar2-config-corpus, findings in
# build/fuzz/pulsar2-config-artifacts/, kept in tests/fuzz/pulsar2_config_regressions/ (replayed by
# tests/unit/pulsar2_config_fuzz_regressions_test.cc).
# TARGETs hook_hf, hook_mlflow, json_body: fuzz_hook_hf, fuzz_hook_mlflow, fuzz_json_body (JSON
# from the network -> the server's bounded, typed parsing: Hugging Face and MLflow webhook bodies,
# MLflow's get-download-uri answer and artifact URIs, POST /v1/check JSON bodies; see
# hook_fuzz_input.h). Seeds: tests/fuzz/TARGET_seeds/ (the payloads of the webhook tests) and
# tests/fuzz/TARGET_regressions/, dictionary tests/fuzz/hook.dict; working corpus
# build/fuzz/TARGET-corpus; findings go to build/fuzz/TARGET-artifacts/ and are kept in
# tests/fuzz/TARGET_regressions/ (run by tests/server/hook_input_test.cc).
#
# Seed corpus (rebuilt each run in build/fuzz/seeds): the example models, the models written by
# the test builder (fuzz_seeds) and every Nth model of the ONNX backend test data
# (AXQC_FUZZ_SAMPLE_EVERY, default 4). The working corpus build/fuzz/corpus persists between runs.
# Crashes, leaks, timeouts and OOMs are written to build/fuzz/artifacts/; keep each one as a
# regression test in tests/fuzz/regressions/ (tests/unit/fuzz_regressions_test.cc runs them).
#
# Environment: CXX (default clang++-14), AXQC_DEPS_DIR (default /opt/axqc-deps),
# AXQC_ONNX_SRC (ONNX source tree with the backend test data), JOBS (build parallelism, default 2),
# AXQC_FUZZ_ARGS (extra libFuzzer flags).
set -euo pipefail

SECONDS_TO_RUN="${1:-600}"
TARGET="${2:-check}"
case "$TARGET" in
  check | upload | upload_frame | dot | http_query | hook_hf | hook_mlflow | json_body | pulsar2_config) ;;
  *)
    echo "run.sh: unknown target '$TARGET' (check, upload, upload_frame, dot, http_query, hook_hf, hook_mlflow, json_body or pulsar2_config)" >&2
    exit 2
    ;;
esac
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$ROOT/build/fuzz"
DEPS="${AXQC_DEPS_DIR:-/opt/axqc-deps}"
# The ONNX prefix and source tree that scripts/setup provides (1.20.0, or 1.17.0).
SETUP_OUT="$("$(dirname "$0")/../../scripts/setup")"
ONNX_PREFIX="$(printf '%s\n' "$SETUP_OUT" | sed -n 's/^AXQC_ONNX_PREFIX=//p')"
ONNX_SRC="${AXQC_ONNX_SRC:-$(printf '%s\n' "$SETUP_OUT" | sed -n 's/^AXQC_ONNX_SOURCE=//p')}"
CXX_BIN="${CXX:-clang++-14}"
EVERY="${AXQC_FUZZ_SAMPLE_EVERY:-4}"

if ! command -v "$CXX_BIN" >/dev/null; then
  echo "run.sh: $CXX_BIN not found (apt-get install -y clang-14 libclang-rt-14-dev)" >&2
  exit 2
fi

if [ ! -f "$BUILD/CMakeCache.txt" ] || ! grep -q '^AXQC_BUILD_SERVER:BOOL=ON' "$BUILD/CMakeCache.txt"; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$CXX_BIN" \
    -DCMAKE_PREFIX_PATH="$ONNX_PREFIX" \
    -DAXQC_FUZZ=ON -DAXQC_SANITIZE=ON \
    -DAXQC_BUILD_TESTS=OFF -DAXQC_BUILD_SERVER=ON -DAXQC_BUILD_BENCH=OFF
fi
if [ "$TARGET" = dot ]; then
  cmake --build "$BUILD" -j"${JOBS:-2}" --target fuzz_dot
  mkdir -p "$BUILD/dot-corpus" "$BUILD/dot-artifacts"
  # No leak detection: Graphviz's context and fontconfig's font cache are process-wide allocations
  # that are never freed (libFuzzer reported them on the first input).
  export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=0:detect_stack_use_after_return=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  cd "$BUILD"
  # shellcheck disable=SC2086
  exec "$BUILD/tests/fuzz/fuzz_dot" "$BUILD/dot-corpus" "$ROOT/tests/fuzz/dot_seeds" \
    "$ROOT/tests/fuzz/dot_regressions" -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 \
    -max_len=4096 -timeout=20 -artifact_prefix="$BUILD/dot-artifacts/" -print_final_stats=1 \
    ${AXQC_FUZZ_ARGS:-}
fi
# A target that needs no models: build it and fuzz at once, with its seeds and regression inputs
# from tests/fuzz/<target>_seeds and _regressions. Arguments: the corpus/artifact name in
# build/fuzz, then extra libFuzzer flags (a dictionary).
fuzz_without_models() {
  local name=$1
  shift
  cmake --build "$BUILD" -j"${JOBS:-2}" --target "fuzz_$TARGET"
  mkdir -p "$BUILD/$name-corpus" "$BUILD/$name-artifacts" "$ROOT/tests/fuzz/${TARGET}_regressions"
  export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:detect_stack_use_after_return=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  cd "$BUILD"
  # shellcheck disable=SC2086
  exec "$BUILD/tests/fuzz/fuzz_$TARGET" "$BUILD/$name-corpus" "$ROOT/tests/fuzz/${TARGET}_seeds" \
    "$ROOT/tests/fuzz/${TARGET}_regressions" \
    -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 -max_len=4096 -timeout=10 "$@" \
    -artifact_prefix="$BUILD/$name-artifacts/" -print_final_stats=1 ${AXQC_FUZZ_ARGS:-}
}
if [ "$TARGET" = http_query ]; then
  fuzz_without_models http-query -dict="$ROOT/tests/fuzz/http_query.dict"
fi
if [ "$TARGET" = upload_frame ]; then
  fuzz_without_models upload-frame
fi
if [ "$TARGET" = pulsar2_config ]; then
  # A Pulsar2 build configuration against a built-in model: the generator's output is the seed.
  cmake --build "$BUILD" -j"${JOBS:-2}" --target fuzz_pulsar2_config
  mkdir -p "$BUILD/pulsar2-config-corpus" "$BUILD/pulsar2-config-artifacts"
  printf '{"model_type": "QuantONNX", "target_hardware": "AX650", "quant": {"layer_configs": [{"layer_names": ["sig"], "data_type": "U16"}]}, "input_processors": [{"tensor_name": "x"}]}' \
    >"$BUILD/pulsar2-config-corpus/seed.json"
  export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:detect_stack_use_after_return=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  cd "$BUILD"
  # shellcheck disable=SC2086
  exec "$BUILD/tests/fuzz/fuzz_pulsar2_config" "$BUILD/pulsar2-config-corpus" \
    "$ROOT/tests/fuzz/pulsar2_config_regressions" \
    -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 -max_len=16384 -timeout=10 \
    -dict="$ROOT/tests/fuzz/pulsar2.dict" \
    -artifact_prefix="$BUILD/pulsar2-config-artifacts/" -print_final_stats=1 ${AXQC_FUZZ_ARGS:-}
fi
case "$TARGET" in
  hook_hf | hook_mlflow | json_body)
    cmake --build "$BUILD" -j"${JOBS:-2}" --target "fuzz_$TARGET"
    mkdir -p "$BUILD/$TARGET-corpus" "$BUILD/$TARGET-artifacts"
    export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:detect_stack_use_after_return=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    cd "$BUILD"
    # shellcheck disable=SC2086
    exec "$BUILD/tests/fuzz/fuzz_$TARGET" "$BUILD/$TARGET-corpus" "$ROOT/tests/fuzz/${TARGET}_seeds" \
      "$ROOT/tests/fuzz/${TARGET}_regressions" -dict="$ROOT/tests/fuzz/hook.dict" \
      -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 -max_len=8192 -timeout=10 \
      -artifact_prefix="$BUILD/$TARGET-artifacts/" -print_final_stats=1 ${AXQC_FUZZ_ARGS:-}
    ;;
esac
if [ "$TARGET" = check ]; then
  cmake --build "$BUILD" -j"${JOBS:-2}" --target fuzz_check fuzz_seeds axqc-gen-examples
else
  cmake --build "$BUILD" -j"${JOBS:-2}" --target fuzz_upload upload_seeds fuzz_seeds \
    axqc-gen-examples
fi

# ---- seed corpus
SEEDS="$BUILD/seeds"
rm -rf "$SEEDS"
mkdir -p "$SEEDS" "$BUILD/corpus" "$BUILD/artifacts"
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"  # the generators are not under test
"$BUILD/tools/axqc-gen-examples" "$SEEDS/examples" >/dev/null
for f in "$SEEDS"/examples/*.onnx; do mv "$f" "$SEEDS/example_$(basename "$f")"; done
rmdir "$SEEDS/examples"
"$BUILD/tests/fuzz/fuzz_seeds" "$SEEDS" >/dev/null
if [ -d "$ONNX_SRC/onnx/backend/test/data" ]; then
  i=0
  while IFS= read -r m; do
    if [ $((i % EVERY)) -eq 0 ]; then
      rel="${m#"$ONNX_SRC/onnx/backend/test/data/"}"
      cp "$m" "$SEEDS/backend_$(dirname "$rel" | tr '/' '_').onnx"
    fi
    i=$((i + 1))
  done < <(find "$ONNX_SRC/onnx/backend/test/data" -name model.onnx | LC_ALL=C sort)
else
  echo "run.sh: no ONNX backend test data under $ONNX_SRC (seeding without it)" >&2
fi
echo "run.sh: $(find "$SEEDS" -type f | wc -l) seed files, $(find "$BUILD/corpus" -type f | wc -l) in the corpus"

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd "$BUILD"

# ---- fuzz (single process: one core)
if [ "$TARGET" = upload ]; then
  USEEDS="$BUILD/upload-seeds"
  rm -rf "$USEEDS"
  mkdir -p "$BUILD/upload-corpus" "$BUILD/upload-artifacts"
  # Models small enough for the fuzzed limits (upload_seeds skips the others).
  ASAN_OPTIONS="detect_leaks=0" "$BUILD/tests/fuzz/upload_seeds" "$USEEDS" "$SEEDS"/*
  # shellcheck disable=SC2086
  exec "$BUILD/tests/fuzz/fuzz_upload" "$BUILD/upload-corpus" "$USEEDS" \
    -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 -max_len=40000 -timeout=10 \
    -artifact_prefix="$BUILD/upload-artifacts/" -print_final_stats=1 ${AXQC_FUZZ_ARGS:-}
fi
# shellcheck disable=SC2086
exec "$BUILD/tests/fuzz/fuzz_check" "$BUILD/corpus" "$SEEDS" \
  -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 -max_len=200000 -timeout=10 \
  -artifact_prefix="$BUILD/artifacts/" -print_final_stats=1 ${AXQC_FUZZ_ARGS:-}
