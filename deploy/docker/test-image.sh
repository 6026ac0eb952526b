#!/usr/bin/env bash
# Builds the container image of deploy/docker/Dockerfile with podman and checks it as a user would:
# the server starts and answers the health probe, checks a model by upload and by reference,
# serves /metrics, and drains cleanly on SIGTERM.
#
#   deploy/docker/test-image.sh            (from anywhere; needs root or a working rootless podman)
#
# It works where no registry is reachable: the Debian 12 base image is made locally with
# `debootstrap --variant=minbase bookworm` from the machine's Debian mirror, gets a deb822
# /etc/apt/sources.list.d/debian.sources like the official image (copied from this machine when it
# has one), and is imported as docker.io/library/debian:bookworm and :bookworm-slim (only when no
# such image exists yet). podman runs with runc, the host network and bounded ulimits.
#
# Packages: podman runc debootstrap (apt-get install podman runc debootstrap).
# Environment:
#   AXQC_IMAGE        image tag to build (default localhost/axqc-server:test)
#   AXQC_IMAGE_WORK   work directory: base rootfs, models, logs (default /var/tmp/axqc-image)
#   AXQC_DEBIAN_MIRROR  mirror for debootstrap (default: the first URIs of the machine's
#                     debian.sources, else http://deb.debian.org/debian)
#   AXQC_REBUILD_BASE=1 make the base image again even if it exists
#   AXQC_KEEP=1       keep the container after the run (for inspection)
#   AXQC_BASE_ONLY=1  only make the Debian base image (step 1) and stop (test-compose.sh uses it)
# The first run is long: base image 3.5 min; image build 36 CPU-minutes (scripts/setup builds
# ONNX, then the project, inside the builder stage; 46-75 min wall clock measured on 2 busy cores,
# 23 min when only the project is rebuilt with a warm ccache mount);
# later runs reuse the base image and podman's layer cache. The run itself takes seconds. Not part of .ci/run for that reason (docs/operations.md).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IMAGE=${AXQC_IMAGE:-localhost/axqc-server:test}
WORK=${AXQC_IMAGE_WORK:-/var/tmp/axqc-image}
NAME=axqc-image-test-$$
BASE=docker.io/library/debian:bookworm
PODMAN_RUN_OPTS=(--runtime runc --network host --ulimit nofile=1024:1024 --ulimit nproc=4096:4096)

log() { printf '[test-image %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() {
  printf '[test-image] FAILED: %s\n' "$*" >&2
  if podman container exists "$NAME" 2>/dev/null; then
    echo "--- container log (last 40 lines):" >&2
    podman logs --tail 40 "$NAME" >&2 || true
  fi
  exit 1
}
cleanup() {
  if [ "${AXQC_KEEP:-0}" != 1 ] && podman container exists "$NAME" 2>/dev/null; then
    podman rm -f -t 0 "$NAME" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

for tool in podman runc debootstrap curl; do
  command -v "$tool" >/dev/null || fail "$tool is missing (apt-get install podman runc debootstrap curl)"
done
mkdir -p "$WORK"
now() { date +%s; }
T0=$(now)

# ---- 1. the Debian 12 base image, made locally --------------------------------------------------
make_base() {
  local rootfs="$WORK/rootfs" mirror="${AXQC_DEBIAN_MIRROR:-}"
  if [ -z "$mirror" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
    mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  mirror=${mirror:-http://deb.debian.org/debian}
  log "debootstrap --variant=minbase bookworm from $mirror"
  rm -rf "$rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1 ||
    fail "debootstrap failed (see $WORK/debootstrap.log)"
  # apt sources as the official image has them: deb822, no sources.list.
  rm -f "$rootfs/etc/apt/sources.list"
  mkdir -p "$rootfs/etc/apt/sources.list.d"
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$rootfs/etc/apt/sources.list.d/debian.sources"
  else
    cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  fi
  chroot "$rootfs" apt-get clean
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin
  tar -C "$rootfs" --numeric-owner -cf - . |
    podman import --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      - "$BASE" >/dev/null
  podman tag "$BASE" docker.io/library/debian:bookworm-slim
  rm -rf "$rootfs"
}
if [ "${AXQC_REBUILD_BASE:-0}" = 1 ] || ! podman image exists "$BASE" ||
   ! podman image exists docker.io/library/debian:bookworm-slim; then
  make_base
else
  log "base image $BASE exists (AXQC_REBUILD_BASE=1 makes it again)"
fi
T1=$(now)
if [ "${AXQC_BASE_ONLY:-0}" = 1 ]; then
  log "base image ready ($((T1 - T0)) s); AXQC_BASE_ONLY=1: not building $IMAGE"
  exit 0
fi

# ---- 2. the image ----------------------------------------------------------------------------------
# The ONNX 1.22.0 source for a builder without internet access (deploy/docker/deps/README.md).
onnx_src=${AXQC_ONNX_TARBALL:-$ROOT/../shared/deps/onnx-1.22.0.tar.gz}
if [ -f "$onnx_src" ] && [ "$(basename "$onnx_src")" = onnx-1.22.0.tar.gz ]; then
  cmp -s "$onnx_src" "$ROOT/deploy/docker/deps/onnx-1.22.0.tar.gz" ||
    cp "$onnx_src" "$ROOT/deploy/docker/deps/onnx-1.22.0.tar.gz"
  log "ONNX 1.22.0 source for the builder: $onnx_src"
fi
log "podman build -f deploy/docker/Dockerfile -t $IMAGE (log: $WORK/build.log)"
podman build --runtime runc --network host --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 \
  --format docker -f "$ROOT/deploy/docker/Dockerfile" -t "$IMAGE" "$ROOT" >"$WORK/build.log" 2>&1 ||
  { tail -30 "$WORK/build.log" >&2; fail "podman build failed (see $WORK/build.log)"; }
T2=$(now)
SIZE=$(podman image inspect "$IMAGE" --format '{{.Size}}')
log "image $IMAGE built: $((SIZE / 1024 / 1024)) MiB"

# ---- 3. run it -------------------------------------------------------------------------------------
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# The image's HEALTHCHECK probes 127.0.0.1:50051: use the image's own ports when they are free.
if port_free 50051 && port_free 9464; then GRPC=50051 METRICS=9464; else GRPC=$(free_port) METRICS=$(free_port); fi
MODELS="$WORK/models"
rm -rf "$MODELS" && mkdir -p "$MODELS/detector"
cp "$ROOT/tests/data/real_exports/spec_cnn_op17.onnx" "$MODELS/conformant.onnx"
cp "$ROOT/tests/data/real_exports/defect_weight_u8_op17.onnx" "$MODELS/detector/weight_u8.onnx"
chmod -R a+rX "$MODELS"
log "podman run $IMAGE (gRPC 127.0.0.1:$GRPC, metrics 127.0.0.1:$METRICS)"
podman run -d --name "$NAME" "${PODMAN_RUN_OPTS[@]}" \
  -e AXQC_LISTEN="127.0.0.1:$GRPC" -e AXQC_METRICS_LISTEN="127.0.0.1:$METRICS" \
  -v "$MODELS:/models:ro" -v "$NAME-store:/var/lib/axqc" "$IMAGE" >/dev/null
# The image's command line, against the running server (no build on the host needed).
cli() {
  podman run --rm "${PODMAN_RUN_OPTS[@]}" -v "$MODELS:/m:ro" --entrypoint axqc "$IMAGE" "$@"
}
up=0
for _ in $(seq 1 60); do
  if podman exec "$NAME" axqc health --server "127.0.0.1:$GRPC" >/dev/null 2>&1; then up=1; break; fi
  podman container inspect "$NAME" --format '{{.State.Running}}' | grep -q true ||
    fail "the container exited: $(podman logs --tail 5 "$NAME" 2>&1)"
  sleep 1
done
[ "$up" = 1 ] || fail "no SERVING health answer within 60 s"
T3=$(now)
log "health: SERVING after $((T3 - T2)) s"
if [ "$GRPC" = 50051 ]; then
  podman healthcheck run "$NAME" >/dev/null || fail "the image's HEALTHCHECK failed"
  log "the image's HEALTHCHECK passes"
fi

expect_rc() {  # expect_rc CODE DESCRIPTION COMMAND...
  local want=$1 what=$2 rc=0
  shift 2
  "$@" >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
  [ "$rc" = "$want" ] || fail "$what: exit $rc, expected $want: $(head -c 600 "$WORK/err.txt") $(head -c 600 "$WORK/out.txt")"
}
# By upload: the CLI hashes first, uploads the unknown model.
expect_rc 0 "upload of a conformant model" cli check --server "127.0.0.1:$GRPC" /m/conformant.onnx
grep -q "CONFORMANT" "$WORK/out.txt" || fail "no CONFORMANT verdict: $(cat "$WORK/out.txt")"
expect_rc 1 "upload of a non-conformant model" \
  cli check --server "127.0.0.1:$GRPC" --format json /m/detector/weight_u8.onnx
python3 - "$WORK/out.txt" <<'EOF' || fail "the JSON report of weight_u8.onnx is not the expected one"
import json, sys
r = json.load(open(sys.argv[1]))["reports"][0]
assert r["verdict"] == "non_conformant", r["verdict"]
rules = {f["rule"] for f in r["findings"] if f["severity"] == "error"}
assert rules == {"role/weight-type"}, rules
EOF
log "upload: conformant.onnx CONFORMANT (exit 0), weight_u8.onnx role/weight-type (exit 1)"
# By reference: a path under the server's allowed root (/models), read by the server.
expect_rc 1 "reference check" cli check --server "127.0.0.1:$GRPC" --ref detector/weight_u8.onnx \
  --label source=test-image
grep -q "role/weight-type" "$WORK/out.txt" || fail "reference check without role/weight-type"
expect_rc 2 "reference outside the allowed root" \
  cli check --server "127.0.0.1:$GRPC" --ref ../etc/passwd
log "reference: detector/weight_u8.onnx role/weight-type (exit 1); ../etc/passwd refused (exit 2)"

# ---- 4. metrics ------------------------------------------------------------------------------------
METRICS_TEXT=$(curl -fsS "http://127.0.0.1:$METRICS/metrics") || fail "/metrics unreachable"
for m in axqc_requests_total axqc_check_duration_seconds axqc_cache_lookups_total; do
  grep -q "^$m" <<<"$METRICS_TEXT" || fail "/metrics lacks $m"
done
grep -Eq '^axqc_checks_total\{[^}]*verdict="non_conformant"[^}]*\} [1-9]' <<<"$METRICS_TEXT" ||
  fail "/metrics counts no non_conformant check"
log "/metrics: $(grep -c '^axqc_' <<<"$METRICS_TEXT") axqc samples, verdicts counted"

# ---- 5. SIGTERM: NOT_SERVING, drain, store flushed, exit 0 -------------------------------------------
log "podman stop (SIGTERM, 45 s timeout)"
TS=$(now)
podman stop -t 45 "$NAME" >/dev/null
T4=$(now)
EXIT=$(podman container inspect "$NAME" --format '{{.State.ExitCode}}')
LOGS=$(podman logs "$NAME" 2>&1)
[ "$EXIT" = 0 ] || fail "exit code $EXIT after SIGTERM"
grep -q '"signal received".*SIGTERM\|SIGTERM.*"signal received"' <<<"$LOGS" ||
  grep -q 'signal received.*SIGTERM' <<<"$LOGS" || fail "no 'signal received' SIGTERM log line"
grep -q 'shutdown complete' <<<"$LOGS" || fail "no 'shutdown complete' log line"
grep 'shutdown complete' <<<"$LOGS" | grep -q '"store_flushed": *true\|store_flushed=true' ||
  fail "the store was not flushed: $(grep 'shutdown complete' <<<"$LOGS")"
log "SIGTERM: exit 0 after $((T4 - TS)) s; $(grep 'shutdown complete' <<<"$LOGS" | head -c 300)"
podman volume rm -f "$NAME-store" >/dev/null 2>&1 || true

log "PASSED: base image $((T1 - T0)) s, image build $((T2 - T1)) s, start to SERVING $((T3 - T2)) s," \
  "checks and metrics $((TS - T3)) s, drain $((T4 - TS)) s; total $((T4 - T0)) s"
