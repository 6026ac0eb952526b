#!/usr/bin/env bash
# Runs the PostgreSQL compose stack (deploy/docker/compose.postgres.yaml: PostgreSQL, two
# axqc-server replicas, nginx balancing every gRPC call over them) with Debian's podman-compose,
# kills one replica while checks are in flight, and checks that nothing is lost: every check that
# got an answer is in the shared history (read through the other replica), and every check the
# dead replica had in flight was reported failed to its client and answered when sent again.
#
#   deploy/docker/test-compose.sh                 (as root, or with a working rootless podman)
#   deploy/docker/test-compose.sh --images-only   only build and check the postgres and nginx images
#
# Not run by CI (.ci/run, ctest): it needs the axqc-server image of test-image.sh, whose build takes
# 36 CPU-minutes (docs/operations.md).
#
# Images, all local: nothing is pulled from a registry.
#   axqc-server:local     the image of test-image.sh ($AXQC_IMAGE, default localhost/axqc-server:test)
#                         tagged with the name compose.postgres.yaml gives it. Run
#                         deploy/docker/test-image.sh first, or set AXQC_BUILD_IMAGE=1.
#   postgres:15-bookworm  built here FROM debian:bookworm-slim with Debian's postgresql (15) and a
#                         small entrypoint doing what the official image's does with POSTGRES_USER,
#                         POSTGRES_DB, POSTGRES_PASSWORD and PGDATA (initdb on an empty volume,
#                         password authentication over TCP).
#   nginx:1.27-bookworm   built here FROM debian:bookworm-slim with Debian's nginx (1.22).
# The Debian base image is the one test-image.sh makes locally (debootstrap); when it is missing,
# `AXQC_BASE_ONLY=1 deploy/docker/test-image.sh` makes it. Prometheus and Grafana are not started
# (not Debian packages): `podman-compose up grpc-lb` starts grpc-lb and what it depends on.
#
# The compose file is used as it is, with an override file for three things:
#   * Debian's nginx 1.22 has no `resolve` parameter on upstream servers (open-source nginx has it
#     from 1.27.3, the compose file's nginx:1.27-bookworm): grpc-lb mounts a copy of
#     nginx-grpc.conf without it, so nginx resolves the replicas once, at its start (after both
#     replicas are SERVING);
#   * the replicas get AXQC_TEST_CHECK_DELAY_SECONDS (every check takes that long, so checks are in
#     flight when a replica is killed) and AXQC_CLAIM_LEASE_SECONDS (the other replica takes a dead
#     replica's claim over after that long);
#   * bounded ulimits for every service (nofile 16384, nproc 4096), as for every container the
#     script runs itself.
#
# Steps:
#   1. both replicas SERVING on the shared database, then nginx answering on 127.0.0.1:50051;
#   2. AXQC_CHECKS new models (distinct bytes; conformant and non-conformant alternately) checked
#      at once through nginx with the image's `axqc check --retries 0`, labelled run=RUN, item=I;
#   3. as soon as a replica is running checks (axqc_busy_workers), it is killed (podman kill);
#   4. every check ends with its expected verdict (exit 0 / 1) or is reported failed (exit 4 with
#      an error message); at least one must have been in flight on the killed replica and reported
#      failed, else the run proved nothing and fails;
#   5. each failed check is sent again (`--retries 4`, the client's default) and must be answered
#      with its expected verdict;
#   6. the history, read from the surviving replica directly (GetStats by item): every check
#      answered at the first attempt is there exactly once with its verdict, every check answered
#      on retry at least once with its verdict.
#
# Packages: podman podman-compose runc netavark aardvark-dns iptables debootstrap python3
# (apt-get install ...; without iptables podman's bridge networks fail: "netavark: No such file").
# Environment:
#   AXQC_IMAGE          axqc-server image (default localhost/axqc-server:test)
#   AXQC_BUILD_IMAGE=1  run deploy/docker/test-image.sh first when AXQC_IMAGE does not exist
#   AXQC_HOST_BUILD=DIR instead of test-image.sh's image, make one from the runtime stage of
#                       deploy/docker/Dockerfile with the binaries of a release build on this
#                       (Debian 12) machine: DIR/server/axqc-server, DIR/server/axqc-worker,
#                       DIR/client/axqc (minutes instead of 36 CPU-minutes)
#   AXQC_COMPOSE_WORK   work directory (default /var/tmp/axqc-compose)
#   AXQC_CHECKS         checks sent at once (default 8)
#   AXQC_CHECK_DELAY    seconds every check takes (default 15)
#   AXQC_KEEP=1         leave the stack running (remove it with the podman-compose `down -v` the
#                       script prints)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IMAGE=${AXQC_IMAGE:-localhost/axqc-server:test}
WORK=${AXQC_COMPOSE_WORK:-/var/tmp/axqc-compose}
CHECKS=${AXQC_CHECKS:-8}
DELAY=${AXQC_CHECK_DELAY:-15}
LEASE=5
PROJECT=axqc-pg-test
COMPOSE_FILE=$ROOT/deploy/docker/compose.postgres.yaml
BASE_SLIM=docker.io/library/debian:bookworm-slim
# The names compose.postgres.yaml gives its images.
PG_IMAGE=postgres:15-bookworm
LB_IMAGE=nginx:1.27-bookworm
SERVER_IMAGE=axqc-server:local
LB_PORT=50051
RUN_ID=compose-$(date +%s)-$$
# Bounded ulimits: podman's default RLIMIT_NOFILE (1048576) is above the hard limit of some
# sandboxes and CI machines, where every container would fail to start ("error setting rlimit").
NOFILE=16384
NPROC=4096
PODMAN_RUN_OPTS=(--runtime runc --ulimit "nofile=$NOFILE:$NOFILE" --ulimit "nproc=$NPROC:$NPROC")
IMAGES_ONLY=0
[ "${1:-}" = --images-only ] && IMAGES_ONLY=1

log() { printf '[test-compose %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() {
  printf '[test-compose] FAILED: %s\n' "$*" >&2
  if [ "$IMAGES_ONLY" = 0 ] && command -v podman >/dev/null; then
    for c in $(podman ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}' 2>/dev/null); do
      echo "--- $c (last 15 log lines):" >&2
      podman logs --tail 15 "$c" >&2 2>&1 || true
    done
  fi
  exit 1
}
compose() {
  AXQC_MODELS_DIR="$WORK/models" AXQC_WORKERS=2 AXQC_PG_PASSWORD="$RUN_ID" \
    podman-compose -p "$PROJECT" -f "$COMPOSE_FILE" -f "$WORK/compose.test.yaml" "$@"
}
CLEANUP_STACK=0
cleanup() {
  if [ "$CLEANUP_STACK" = 1 ]; then
    if [ "${AXQC_KEEP:-0}" = 1 ]; then
      log "AXQC_KEEP=1: the stack stays up; remove it with:" \
        "AXQC_MODELS_DIR=$WORK/models podman-compose -p $PROJECT -f $COMPOSE_FILE -f $WORK/compose.test.yaml down -v"
    else
      # -v: also the anonymous volumes (the image's VOLUME /var/lib/axqc) that `down -v` leaves.
      for c in $(podman ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}'); do
        podman rm -f -v -t 0 "$c" >/dev/null 2>&1 || true
      done
      compose down -v >"$WORK/down.log" 2>&1 || true
    fi
  fi
  podman rm -f -t 0 "$PROJECT-pgcheck" "$PROJECT-lbcheck" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in podman python3; do
  command -v "$tool" >/dev/null || fail "$tool is missing (apt-get install podman podman-compose runc netavark aardvark-dns iptables debootstrap python3)"
done
[ "$IMAGES_ONLY" = 1 ] || command -v podman-compose >/dev/null ||
  fail "podman-compose is missing (apt-get install podman-compose)"
mkdir -p "$WORK"
T0=$(date +%s)

# ---- 1. images -------------------------------------------------------------------------------------
if ! podman image exists "$BASE_SLIM"; then
  log "no $BASE_SLIM: making the Debian base image with test-image.sh (AXQC_BASE_ONLY=1)"
  AXQC_BASE_ONLY=1 "$ROOT/deploy/docker/test-image.sh" || fail "could not make the base image"
fi
# Tagged under docker.io/library/ like the official images, so podman finds the compose file's
# short names locally and never pulls.
build_local() {  # build_local NAME:TAG CONTEXT_DIR
  log "podman build $1 (FROM $BASE_SLIM; log: $WORK/build-${1%%:*}.log)"
  podman build "${PODMAN_RUN_OPTS[@]}" --network host --format docker -t "docker.io/library/$1" "$2" \
    >"$WORK/build-${1%%:*}.log" 2>&1 || { tail -20 "$WORK/build-${1%%:*}.log" >&2; fail "podman build $1"; }
}

PGCTX=$WORK/postgres-image
rm -rf "$PGCTX" && mkdir -p "$PGCTX"
cat >"$PGCTX/Dockerfile" <<EOF
FROM $BASE_SLIM
# No cluster from the package: the entrypoint makes one in PGDATA, as the official image does.
RUN mkdir -p /etc/postgresql-common/createcluster.d \\
 && echo 'create_main_cluster = false' >/etc/postgresql-common/createcluster.d/no-main.conf \\
 && apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql-15 \\
 && rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/lib/postgresql/15/bin:\$PATH PGDATA=/var/lib/postgresql/data
COPY docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
# Fast shutdown, as the official image.
STOPSIGNAL SIGINT
EXPOSE 5432
EOF
cat >"$PGCTX/docker-entrypoint.sh" <<'EOF'
#!/bin/sh
# The parts of the official postgres image's entrypoint that compose.postgres.yaml uses.
set -eu
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pw=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" --auth-local=trust \
    --auth-host=scram-sha-256 >/dev/null
  rm -f "$pw"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    createdb -h /var/run/postgresql -U "$POSTGRES_USER" "$POSTGRES_DB"
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "database initialised: user $POSTGRES_USER, database $POSTGRES_DB"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
EOF
chmod 755 "$PGCTX/docker-entrypoint.sh"
build_local "$PG_IMAGE" "$PGCTX"

LBCTX=$WORK/nginx-image
rm -rf "$LBCTX" && mkdir -p "$LBCTX"
cat >"$LBCTX/Dockerfile" <<EOF
FROM $BASE_SLIM
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nginx \\
 && rm -rf /var/lib/apt/lists/* /etc/nginx/sites-enabled/default \\
 && ln -sf /dev/stdout /var/log/nginx/access.log && ln -sf /dev/stderr /var/log/nginx/error.log
EXPOSE 80
STOPSIGNAL SIGQUIT
CMD ["nginx", "-g", "daemon off;"]
EOF
build_local "$LB_IMAGE" "$LBCTX"

# The balancer's configuration: the repository's, without `resolve` (see above).
sed -E 's/^([[:space:]]*server[[:space:]]+[^;[:space:]]+)[[:space:]]+resolve;/\1;/' \
  "$ROOT/deploy/docker/nginx-grpc.conf" >"$WORK/nginx-grpc.conf"
grep -Eq '^[[:space:]]*server[[:space:]]+axqc-server:[0-9]+;' "$WORK/nginx-grpc.conf" ||
  fail "nginx-grpc.conf: no 'server axqc-server:PORT resolve;' line to adapt"

# Image checks: PostgreSQL initialises, accepts the password over TCP and has the database;
# nginx accepts the balancer's configuration (the upstream name given a local address).
log "checking $PG_IMAGE: initdb, password login over TCP"
podman rm -f -t 0 "$PROJECT-pgcheck" >/dev/null 2>&1 || true
podman run -d --name "$PROJECT-pgcheck" "${PODMAN_RUN_OPTS[@]}" -e POSTGRES_USER=axqc -e POSTGRES_DB=axqc \
  -e POSTGRES_PASSWORD=secret-1 "$PG_IMAGE" >"$WORK/pgcheck.log" 2>&1 ||
  fail "$PG_IMAGE does not start: $(cat "$WORK/pgcheck.log")"
ok=0
for _ in $(seq 1 60); do
  # Over TCP: during the first-start initialisation the server listens on its socket only.
  if podman exec "$PROJECT-pgcheck" pg_isready -h 127.0.0.1 -U axqc -d axqc >/dev/null 2>&1; then ok=1; break; fi
  sleep 1
done
[ "$ok" = 1 ] || fail "$PG_IMAGE: not ready within 60 s: $(podman logs --tail 10 "$PROJECT-pgcheck" 2>&1)"
got=$(podman exec -e PGPASSWORD=secret-1 "$PROJECT-pgcheck" \
  psql -h 127.0.0.1 -U axqc -d axqc -Atc 'select current_user || current_database()') ||
  fail "$PG_IMAGE: password login over TCP refused"
[ "$got" = axqcaxqc ] || fail "$PG_IMAGE: logged in as '$got', expected axqc on database axqc"
if podman exec -e PGPASSWORD=wrong "$PROJECT-pgcheck" psql -h 127.0.0.1 -U axqc -d axqc -Atc 'select 1' \
  >/dev/null 2>&1; then
  fail "$PG_IMAGE: a wrong password is accepted over TCP"
fi
podman stop -t 30 "$PROJECT-pgcheck" >/dev/null
[ "$(podman container inspect "$PROJECT-pgcheck" --format '{{.State.ExitCode}}')" = 0 ] ||
  fail "$PG_IMAGE: exit code $(podman container inspect "$PROJECT-pgcheck" --format '{{.State.ExitCode}}') on stop"
podman rm -f -t 0 "$PROJECT-pgcheck" >/dev/null
log "$PG_IMAGE: initialised, password login as axqc/axqc, wrong password refused, clean stop"

log "checking $LB_IMAGE: nginx -t with the balancer's configuration"
podman run --rm --name "$PROJECT-lbcheck" "${PODMAN_RUN_OPTS[@]}" --add-host axqc-server:127.0.0.1 \
  -v "$WORK/nginx-grpc.conf:/etc/nginx/conf.d/default.conf:ro" "$LB_IMAGE" nginx -t \
  >"$WORK/nginx-t.log" 2>&1 || fail "$LB_IMAGE rejects the configuration: $(cat "$WORK/nginx-t.log")"
log "$LB_IMAGE: $(grep -m1 'test is successful' "$WORK/nginx-t.log" || cat "$WORK/nginx-t.log")"
T1=$(date +%s)
if [ "$IMAGES_ONLY" = 1 ]; then
  log "PASSED (--images-only): postgres and nginx images built and checked in $((T1 - T0)) s"
  exit 0
fi

if [ -n "${AXQC_HOST_BUILD:-}" ]; then
  # The Dockerfile's runtime stage as it is, with the host build's binaries in place of the
  # builder stage's.
  IMAGE=localhost/axqc-server:host-build
  SCTX=$WORK/server-image
  rm -rf "$SCTX" && mkdir -p "$SCTX/bin" "$SCTX/share/axqc/proto/axqc/v1" "$SCTX/deploy/docker"
  for b in server/axqc-server server/axqc-worker client/axqc; do
    [ -x "$AXQC_HOST_BUILD/$b" ] || fail "AXQC_HOST_BUILD: no $AXQC_HOST_BUILD/$b"
    strip -o "$SCTX/bin/$(basename "$b")" "$AXQC_HOST_BUILD/$b"
  done
  cp "$ROOT/proto/axqc/v1/axqc.proto" "$SCTX/share/axqc/proto/axqc/v1/"
  cp "$ROOT/deploy/docker/server.conf" "$SCTX/deploy/docker/"
  {
    grep -m1 '^ARG DEBIAN_SUITE=' "$ROOT/deploy/docker/Dockerfile"
    sed -n '/^FROM .* AS runtime/,$p' "$ROOT/deploy/docker/Dockerfile" |
      sed -E 's#^COPY --from=builder /opt/axqc/#COPY #; s# /opt/axqc/bin/# bin/#g'
  } >"$SCTX/Dockerfile"
  grep -q '^COPY bin/axqc-server bin/axqc-worker bin/axqc /usr/local/bin/' "$SCTX/Dockerfile" ||
    fail "deploy/docker/Dockerfile: the runtime stage's COPY --from=builder lines changed; adapt AXQC_HOST_BUILD"
  log "podman build $IMAGE: runtime stage of deploy/docker/Dockerfile + $AXQC_HOST_BUILD (log: $WORK/build-server.log)"
  podman build "${PODMAN_RUN_OPTS[@]}" --network host --format docker -t "$IMAGE" "$SCTX" \
    >"$WORK/build-server.log" 2>&1 || { tail -20 "$WORK/build-server.log" >&2; fail "podman build $IMAGE"; }
fi
if ! podman image exists "$IMAGE"; then
  [ "${AXQC_BUILD_IMAGE:-0}" = 1 ] || fail "no image $IMAGE: run deploy/docker/test-image.sh first (or AXQC_BUILD_IMAGE=1)"
  log "building $IMAGE with test-image.sh (36 CPU-minutes)"
  AXQC_IMAGE=$IMAGE "$ROOT/deploy/docker/test-image.sh" || fail "test-image.sh failed"
fi
podman tag "$IMAGE" "localhost/$SERVER_IMAGE"
for i in "$PG_IMAGE" "$LB_IMAGE" "$SERVER_IMAGE"; do
  podman image exists "$i" || fail "podman does not find $i locally (it would pull it)"
done

# ---- 2. the stack ----------------------------------------------------------------------------------
(exec 3<>"/dev/tcp/127.0.0.1/$LB_PORT") 2>/dev/null && fail "127.0.0.1:$LB_PORT is in use (the balancer publishes it)"
MODELS=$WORK/models
rm -rf "$MODELS" && mkdir -p "$MODELS/in"
# New models for this run: real exports with a distinct ModelProto doc_string (field 6) appended,
# so every check is a real check (no cache hit from an earlier run). Even items conformant,
# odd items non-conformant (role/weight-type).
python3 - "$ROOT/tests/data/real_exports" "$MODELS/in" "$CHECKS" "$RUN_ID" <<'EOF'
import os, sys
src, dst, n, run = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
for i in range(n):
    base = "spec_cnn_op17.onnx" if i % 2 == 0 else "defect_weight_u8_op17.onnx"
    tag = ("%s item %d" % (run, i)).encode()
    assert len(tag) < 128
    data = open(os.path.join(src, base), "rb").read() + bytes([0x32, len(tag)]) + tag
    open(os.path.join(dst, "item%d.onnx" % i), "wb").write(data)
EOF
chmod -R a+rX "$MODELS"
cat >"$WORK/compose.test.yaml" <<EOF
# Override of compose.postgres.yaml for deploy/docker/test-compose.sh (written by it).
x-ulimits: &ulimits
  nofile: {soft: $NOFILE, hard: $NOFILE}
  nproc: {soft: $NPROC, hard: $NPROC}
services:
  postgres:
    ulimits: *ulimits
  axqc-server:
    environment:
      AXQC_TEST_CHECK_DELAY_SECONDS: "$DELAY"
      AXQC_CLAIM_LEASE_SECONDS: "$LEASE"
    ulimits: *ulimits
  grpc-lb:
    volumes:
      - $WORK/nginx-grpc.conf:/etc/nginx/conf.d/default.conf:ro
    ulimits: *ulimits
EOF
compose down -v >"$WORK/down.log" 2>&1 || true
CLEANUP_STACK=1
service_containers() {  # service_containers SERVICE: its containers, running or not
  podman ps -a --filter "label=io.podman.compose.project=$PROJECT" \
    --filter "label=com.docker.compose.service=$1" --format '{{.Names}}' | sort
}
# podman-compose 1.0.3 does not wait for `condition: service_healthy`: PostgreSQL first, until it
# accepts TCP connections (after its first-start initialisation), then the replicas.
log "podman-compose up -d postgres (log: $WORK/up.log)"
compose up -d postgres >"$WORK/up.log" 2>&1 || fail "podman-compose up postgres (see $WORK/up.log)"
PG=$(service_containers postgres)
[ -n "$PG" ] || fail "no postgres container (see $WORK/up.log)"
ok=0
for _ in $(seq 1 90); do
  if podman exec "$PG" pg_isready -h 127.0.0.1 -U axqc -d axqc >/dev/null 2>&1; then ok=1; break; fi
  sleep 1
done
[ "$ok" = 1 ] || fail "$PG: PostgreSQL not accepting connections within 90 s"
log "podman-compose up -d axqc-server (2 replicas)"
compose up -d axqc-server >>"$WORK/up.log" 2>&1 || fail "podman-compose up axqc-server (see $WORK/up.log)"
mapfile -t REPLICAS < <(service_containers axqc-server)
[ "${#REPLICAS[@]}" = 2 ] || fail "expected 2 axqc-server replicas, found: ${REPLICAS[*]:-none}"
for c in "${REPLICAS[@]}"; do
  up=0
  for _ in $(seq 1 90); do
    if podman exec "$c" axqc health --server 127.0.0.1:50051 >/dev/null 2>&1; then up=1; break; fi
    sleep 1
  done
  [ "$up" = 1 ] || fail "$c: not SERVING within 90 s"
done
log "replicas SERVING on the shared database: ${REPLICAS[*]}"
compose up -d grpc-lb >>"$WORK/up.log" 2>&1 || fail "podman-compose up grpc-lb (see $WORK/up.log)"

cli() {  # the image's command line on the host network, the models under /m
  podman run --rm "${PODMAN_RUN_OPTS[@]}" --no-healthcheck --network host -v "$MODELS:/m:ro" \
    --entrypoint axqc "$IMAGE" "$@"
}
up=0
for _ in $(seq 1 30); do
  if cli health --server "127.0.0.1:$LB_PORT" >/dev/null 2>&1; then up=1; break; fi
  sleep 1
done
[ "$up" = 1 ] || fail "no SERVING answer through nginx on 127.0.0.1:$LB_PORT within 30 s"
T2=$(date +%s)
log "nginx balances 127.0.0.1:$LB_PORT over the replicas ($((T2 - T1)) s)"

# ---- 3. checks in flight, one replica killed ---------------------------------------------------------
busy() {  # busy CONTAINER: axqc_busy_workers of that replica (its /metrics, over bash's /dev/tcp)
  podman exec "$1" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9464 &&
    printf "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3 && cat <&3' 2>/dev/null |
    awk '/^axqc_busy_workers /{print int($2); found=1} END{if(!found) print -1}'
}
OUT=$WORK/out
rm -rf "$OUT" && mkdir -p "$OUT"
log "$CHECKS checks through nginx at once (each takes $DELAY s), run=$RUN_ID"
PIDS=()
for i in $(seq 0 $((CHECKS - 1))); do
  (
    rc=0
    cli check --server "127.0.0.1:$LB_PORT" --retries 0 --deadline 120 --format json \
      --label "run=$RUN_ID" --label "item=$i" "/m/in/item$i.onnx" \
      >"$OUT/item$i.json" 2>"$OUT/item$i.err" || rc=$?
    echo "$rc" >"$OUT/item$i.rc"
  ) &
  PIDS+=($!)
done
VICTIM=
for _ in $(seq 1 60); do
  for c in "${REPLICAS[@]}"; do
    b=$(busy "$c")
    if [ "$b" -gt 0 ]; then VICTIM=$c; break 2; fi
  done
  sleep 0.2
done
[ -n "$VICTIM" ] || fail "no replica ever ran a check"
SURVIVOR=
for c in "${REPLICAS[@]}"; do [ "$c" = "$VICTIM" ] || SURVIVOR=$c; done
log "$VICTIM runs $b checks; podman kill $VICTIM"
podman kill "$VICTIM" >/dev/null || fail "podman kill $VICTIM"
for pid in "${PIDS[@]}"; do wait "$pid" || true; done
T3=$(date +%s)

# ---- 4. every check answered or reported failed ---------------------------------------------------------
expected_rc() { if [ $(($1 % 2)) = 0 ]; then echo 0; else echo 1; fi; }
ANSWERED=() FAILED=()
for i in $(seq 0 $((CHECKS - 1))); do
  [ -f "$OUT/item$i.rc" ] || fail "item $i: the client never ended"
  rc=$(cat "$OUT/item$i.rc")
  case "$rc" in
    0 | 1)
      [ "$rc" = "$(expected_rc "$i")" ] || fail "item $i: exit $rc, expected $(expected_rc "$i")"
      ANSWERED+=("$i") ;;
    4)
      grep -q '^axqc: ' "$OUT/item$i.err" || fail "item $i: exit 4 without an error message"
      FAILED+=("$i") ;;
    *) fail "item $i: exit $rc ($(head -c 400 "$OUT/item$i.err"))" ;;
  esac
done
log "first attempt: answered ${#ANSWERED[@]} (${ANSWERED[*]:-}), reported failed ${#FAILED[@]} (${FAILED[*]:-}) in $((T3 - T2)) s"
[ "${#FAILED[@]}" -ge 1 ] ||
  fail "no check was reported failed: none was in flight on $VICTIM when it was killed (raise AXQC_CHECK_DELAY)"
for i in "${FAILED[@]}"; do
  log "item $i reported failed: $(grep -m1 '^axqc: ' "$OUT/item$i.err" | head -c 200)"
done

# ---- 5. the failed checks sent again -----------------------------------------------------------------------
RETRIED=()
for i in "${FAILED[@]}"; do
  rc=0
  cli check --server "127.0.0.1:$LB_PORT" --retries 4 --deadline 180 --format json \
    --label "run=$RUN_ID" --label "item=$i" "/m/in/item$i.onnx" \
    >"$OUT/item$i.retry.json" 2>"$OUT/item$i.retry.err" || rc=$?
  [ "$rc" = "$(expected_rc "$i")" ] ||
    fail "item $i sent again: exit $rc, expected $(expected_rc "$i") ($(head -c 400 "$OUT/item$i.retry.err"))"
  RETRIED+=("$i")
done
T4=$(date +%s)
log "sent again: ${#RETRIED[@]} checks answered with their verdicts in $((T4 - T3)) s"

# ---- 6. the history, through the surviving replica --------------------------------------------------------
podman exec "$SURVIVOR" axqc stats --server 127.0.0.1:50051 --label "run=$RUN_ID" --by item \
  --format json >"$WORK/stats.json" 2>"$WORK/stats.err" ||
  fail "GetStats on $SURVIVOR: $(cat "$WORK/stats.err")"
python3 - "$WORK/stats.json" "${ANSWERED[*]:-}" "${RETRIED[*]:-}" <<'EOF' || fail "the history misses answered checks (above)"
import json, sys
stats = json.load(open(sys.argv[1]))
first = [int(x) for x in sys.argv[2].split()]
retried = [int(x) for x in sys.argv[3].split()]
groups = {g.get("label_value"): {k: int(v) for k, v in g["counts"].items() if k != "pass_rate" and v is not None}
          for g in stats.get("groups", [])}
bad = []
def verdict(i):
    return "conformant" if i % 2 == 0 else "non_conformant"
for i in first:
    c = groups.get(str(i), {})
    if c.get("requests") != 1 or c.get(verdict(i)) != 1:
        bad.append("item %d (answered at the first attempt): %s, expected 1 request, 1 %s" % (i, c, verdict(i)))
for i in retried:
    c = groups.get(str(i), {})
    if c.get("requests", 0) < 1 or c.get(verdict(i), 0) < 1:
        bad.append("item %d (answered when sent again): %s, expected >= 1 %s" % (i, c, verdict(i)))
total = int(stats["total"]["requests"])
if total < len(first) + len(retried):
    bad.append("total %d requests < %d answers" % (total, len(first) + len(retried)))
for b in bad:
    print("FAIL: " + b)
print("history on the surviving replica: %d requests of this run, %d items" % (total, len(groups)))
sys.exit(1 if bad else 0)
EOF
T5=$(date +%s)
log "PASSED: images $((T1 - T0)) s, stack up $((T2 - T1)) s, checks with a replica killed $((T3 - T2)) s," \
  "retries $((T4 - T3)) s, history $((T5 - T4)) s; total $((T5 - T0)) s"
