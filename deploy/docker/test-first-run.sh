#!/usr/bin/env bash
# Times the README's commands on a fresh Debian 12 machine: a clean clone of HEAD in a clean
# bookworm container (podman), nothing installed or cached beforehand (no /opt/axqc-deps, no
# ccache, an empty apt cache).
#
#   deploy/docker/test-first-run.sh [--full]
#
# Runs `scripts/run-examples` (the first command: Debian build packages, ONNX, the `axqc` target and
# the example models) and checks that it printed a report of every example with its exit code.
# With --full it then runs `scripts/test` in the same container (the second command: the rest of
# the packages, the whole build, the test suite and the sanitizer pass; about an hour on two
# cores) and reports its time too. Prints the
# times as "first-run: ... s" lines; the README quotes them.
# Environment:
#   AXQC_ONNX_TARBALL  the ONNX release source handed to setup (default: ../shared/deps or the
#                      repository's parent's shared/deps/onnx-1.22.0.tar.gz when present; without it
#                      setup downloads the release)
#   AXQC_IMAGE_WORK    work directory (default /var/tmp/axqc-first-run)
# Base image docker.io/library/debian:bookworm, made locally by
# `AXQC_BASE_ONLY=1 deploy/docker/test-image.sh` when missing. Not part of .ci/run (it needs the
# Debian archive and takes 10+ minutes; docs/operations.md, "What the tests cover").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
FULL=0
case "${1:-}" in --full) FULL=1 ;; "") ;; *) echo "usage: $0 [--full]" >&2; exit 2 ;; esac
WORK=${AXQC_IMAGE_WORK:-/var/tmp/axqc-first-run}
BASE=docker.io/library/debian:bookworm
TARBALL=${AXQC_ONNX_TARBALL:-}
if [ -z "$TARBALL" ]; then
  for t in "$ROOT/../shared/deps/onnx-1.22.0.tar.gz" "$ROOT/../../shared/deps/onnx-1.22.0.tar.gz"; do
    [ -f "$t" ] && { TARBALL=$(cd "$(dirname "$t")" && pwd)/$(basename "$t"); break; }
  done
fi

log() { printf '[test-first-run %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() { printf '[test-first-run] FAILED: %s\n' "$*" >&2; exit 1; }

command -v podman >/dev/null || fail "podman is missing (apt-get install podman runc)"
if ! podman image exists "$BASE"; then
  log "no $BASE: making it (deploy/docker/test-image.sh, AXQC_BASE_ONLY=1)"
  AXQC_BASE_ONLY=1 "$ROOT/deploy/docker/test-image.sh"
fi

rm -rf "$WORK"
mkdir -p "$WORK"
git clone -q "$ROOT" "$WORK/axqc"
log "clean clone of $(git -C "$WORK/axqc" rev-parse --short HEAD) in $WORK/axqc"
mounts=(-v "$WORK/axqc:/src/axqc")
envs=()
if [ -n "$TARBALL" ]; then
  mounts+=(-v "$TARBALL:/deps/$(basename "$TARBALL"):ro")
  envs+=(-e AXQC_ONNX_TARBALL="/deps/$(basename "$TARBALL")")
fi

# The container's own clock measures each command; its output is kept in the work directory.
# shellcheck disable=SC2016 # expanded in the container
script='set -euo pipefail
cd /src/axqc
start=$(date +%s.%N)
scripts/run-examples >/src/out/run-examples.log 2>&1 || { tail -40 /src/out/run-examples.log; exit 1; }
end=$(date +%s.%N)
echo "first-run: scripts/run-examples $(echo "$end - $start" | bc) s"
grep -E "^run-examples: |^\[setup\] (Debian packages installed|ONNX .* built) in" /src/out/run-examples.log || true
if [ "$FULL" = 1 ]; then
  start=$(date +%s.%N)
  scripts/test >/src/out/test.log 2>&1 || { tail -60 /src/out/test.log; exit 1; }
  end=$(date +%s.%N)
  echo "first-run: scripts/test $(echo "$end - $start" | bc) s"
  grep -E "^\[setup\] (Debian packages installed|ONNX .* built) in|tests passed|Total Test time" \
    /src/out/test.log || true
fi'
mkdir -p "$WORK/out"
log "scripts/run-examples in a clean $BASE (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
podman run --rm --runtime runc --network host --ulimit nofile=1024:1024 \
  --ulimit nproc=4096:4096 "${mounts[@]}" -v "$WORK/out:/src/out" \
  "${envs[@]}" -e FULL="$FULL" "$BASE" bash -c "apt-get update -q >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends bc git \
      ca-certificates >/dev/null && $script" | tee "$WORK/times.txt"
log "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Every example was checked, with the exit code its README entry documents.
out=$WORK/out/run-examples.log
[ -f "$out" ] || fail "no output of scripts/run-examples"
expect() {  # expect MODEL RC
  grep -A200 "$1" "$out" | grep -m1 '^exit code:' | grep -qx "exit code: $2" ||
    fail "$1: expected exit code $2 in $out"
}
expect conformant_cnn.onnx 0
expect broken_weight_per_tensor.onnx 1
expect broken_two_defects.onnx 1
expect broken_missing_qdq.onnx 1
expect float_only.onnx 3
grep -q "role/weight-type" "$out" || fail "no role/weight-type finding in $out"
log "every example checked; times in $WORK/times.txt"
# The clone's build trees and dependency builds take about 10 GB: keep only the logs and times.
rm -rf "$WORK/axqc"
