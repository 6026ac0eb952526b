#!/usr/bin/env bash
# Several axqc-server replicas on one PostgreSQL store, end to end: a private PostgreSQL cluster
# (initdb into a temporary directory, TCP on a free loopback port, its unix socket in the same
# directory), two real axqc-server binaries on it, the real axqc client.
#
#   tests/server/pg/replicas_test.sh [BUILD_DIR]      (default: build/release)
#
# Scenarios (each with exact expectations):
#   0. both replicas start at once against an empty database: the schema is migrated once;
#      the store contract tests of axqc_server_store_test run against PostgreSQL too;
#   1. models uploaded to A are store hits on B: hash-first GetReport, and Check of a path;
#   2. the same new model checked with the client on A and B at the same time is uploaded once and
#      checked once (the check-stage counts of both /metrics endpoints sum to 1): the other
#      client's hash lookup waits for that check (its reservation or claim in the store) and is
#      answered "shared";
#   3. GetStats on A and on B returns the combined, exact counts of both replicas;
#   4. A is SIGKILLed in the middle of a check that B's client waits for (its hash lookup): after
#      the lease (claim-lease-seconds) B takes the model over, the client uploads it to B, which
#      checks it;
#   5. PostgreSQL stops while B is idle: B answers UNAVAILABLE quickly (no hang, no crash); after
#      PostgreSQL starts again B serves checks and stats without a restart, also right after a
#      restart of PostgreSQL between two requests (stale pooled connections);
#   6. SIGTERM: B drains and exits 0.
#
# Needs PostgreSQL's server binaries (Debian package postgresql: /usr/lib/postgresql/*/bin, or
# AXQC_PG_BIN) and python3; exits 77 (ctest: skipped) without them. As root, PostgreSQL runs as
# the unprivileged user "postgres" (initdb refuses root). Everything listens on 127.0.0.1 or in the
# temporary directory, and every process started here is stopped on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
BUILD=$(cd "${1:-$ROOT/build/release}" && pwd)
SERVER_BIN=${AXQC_SERVER_BIN:-$BUILD/server/axqc-server}
CLIENT_BIN=${AXQC_BIN:-$BUILD/client/axqc}
UNIT_TEST_BIN=${AXQC_SERVER_STORE_TEST:-$BUILD/tests/server/axqc_server_store_test}
LEASE=2          # claim-lease-seconds of both replicas
CHECK_DELAY=3    # test-check-delay-seconds: every check takes at least this long

log() { printf '[pg-replicas] %s\n' "$*"; }
die() { printf '[pg-replicas] FAIL: %s\n' "$*" >&2; exit 1; }
skip() { printf '[pg-replicas] SKIP: %s\n' "$*"; exit 77; }

PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
command -v "$PY" >/dev/null || skip "python3 is missing"
PG_BIN=${AXQC_PG_BIN:-}
if [ -z "$PG_BIN" ]; then
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)
fi
[ -n "$PG_BIN" ] && [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] ||
  skip "no PostgreSQL server binaries (apt-get install postgresql, or set AXQC_PG_BIN)"
[ -x "$SERVER_BIN" ] || die "no axqc-server at $SERVER_BIN (build it first)"
[ -x "$CLIENT_BIN" ] || die "no axqc at $CLIENT_BIN (build it first)"

AS_PG=()
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || skip "running as root and there is no user 'postgres' to run PostgreSQL"
  AS_PG=(runuser -u postgres --)
fi

# ------------------------------------------------------------------ workspace and cleanup
BASE=${TMPDIR:-/tmp}
# PostgreSQL's user must reach its directories: fall back to /tmp when TMPDIR is private.
if [ ${#AS_PG[@]} -gt 0 ] && ! "${AS_PG[@]}" test -x "$BASE"; then BASE=/tmp; fi
WORK=$(mktemp -d "$BASE/axqc-pg-test.XXXXXX")
chmod 755 "$WORK"
# PostgreSQL's data directory, socket directory and log, owned by the user that runs it.
PGDIR=$WORK/pg
PGDATA=$PGDIR/data
PGSOCK=$PGDIR/sock
PGLOG=$PGDIR/postgresql.log
mkdir -p "$PGDATA" "$PGSOCK" "$WORK/models"
if [ ${#AS_PG[@]} -gt 0 ]; then chown -R postgres "$PGDIR"; fi
PIDS=()
cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -f "$PGDATA/postmaster.pid" ]; then
    "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$PGDATA" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
    for f in A.log B.log pg/postgresql.log; do
      [ -f "$WORK/$f" ] && { echo "--- last lines of $f"; tail -n 25 "$WORK/$f"; }
    done
  fi
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
now() { date +%s.%N; }
elapsed() { "$PY" -c 'import sys; print("%.2f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$1" "$2"; }

# ------------------------------------------------------------------ PostgreSQL
PGPORT=$(free_port)
pg_ctl() { "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$PGLOG" "$@"; }
pg_start() {
  pg_ctl -w -t 30 -o "-p $PGPORT -k $PGSOCK -c listen_addresses=127.0.0.1 -c fsync=off" start \
    >/dev/null || die "PostgreSQL did not start (postgresql.log above)"
}
psql_q() {  # psql_q DB SQL: one value
  "${AS_PG[@]}" "$PG_BIN/psql" -X -q -A -t -h "$PGSOCK" -p "$PGPORT" -U axqc -d "$1" -c "$2"
}
t0=$(now)
"${AS_PG[@]}" "$PG_BIN/initdb" -D "$PGDATA" -U axqc --auth=trust -E UTF8 --locale=C.UTF-8 \
  --no-sync >"$WORK/initdb.log" 2>&1 || { cat "$WORK/initdb.log"; die "initdb failed"; }
pg_start
for db in axqc axqc_contract; do
  "${AS_PG[@]}" "$PG_BIN/createdb" -h "$PGSOCK" -p "$PGPORT" -U axqc "$db" || die "createdb $db"
done
DSN="postgresql://axqc@127.0.0.1:$PGPORT/axqc"
log "PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PGPORT (ready in $(elapsed "$t0" "$(now)") s)"

# ------------------------------------------------------------------ store contract tests
if [ -x "$UNIT_TEST_BIN" ]; then
  AXQC_TEST_PG_DSN="postgresql://axqc@127.0.0.1:$PGPORT/axqc_contract" \
    "$UNIT_TEST_BIN" --gtest_filter='*StoreContract*/postgresql:PgStore.*' >"$WORK/contract.log" 2>&1 ||
    { cat "$WORK/contract.log"; die "store contract tests against PostgreSQL"; }
  passed=$(grep -c '^\[       OK \] .*StoreContract\..*/postgresql' "$WORK/contract.log" || true)
  [ "$passed" -ge 5 ] || { cat "$WORK/contract.log"; die "$passed store contract tests passed on PostgreSQL, expected 5"; }
  log "store contract tests on PostgreSQL: $passed passed"
else
  die "no $UNIT_TEST_BIN (build axqc_server_store_test)"
fi

# ------------------------------------------------------------------ models
EXAMPLES=$BUILD/examples
if [ ! -f "$EXAMPLES/conformant_cnn.onnx" ]; then
  EXAMPLES=$WORK/examples
  "$BUILD/tools/axqc-gen-examples" "$EXAMPLES" >/dev/null
fi
# Same graph, other bytes (so another sha256): a ModelProto doc_string (field 6) appended.
variant() {  # variant SRC DST TAG
  "$PY" -c 'import sys; d=open(sys.argv[1],"rb").read(); t=sys.argv[3].encode()
open(sys.argv[2],"wb").write(d+bytes([0x32,len(t)])+t)' "$1" "$2" "$3"
}
variant "$EXAMPLES/conformant_cnn.onnx" "$WORK/models/m1.onnx" "pg m1"
variant "$EXAMPLES/broken_weight_per_tensor.onnx" "$WORK/models/m2.onnx" "pg m2"
variant "$EXAMPLES/conformant_cnn.onnx" "$WORK/models/m3.onnx" "pg m3"
variant "$EXAMPLES/conformant_cnn.onnx" "$WORK/models/m4.onnx" "pg m4"
variant "$EXAMPLES/conformant_cnn.onnx" "$WORK/models/m5.onnx" "pg m5"

# ------------------------------------------------------------------ replicas
declare -A GRPC METRICS PID
start_server() {  # start_server NAME
  local n=$1
  rm -f "$WORK/$n.ready"
  "$SERVER_BIN" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --ready-file "$WORK/$n.ready" \
    --allowed-root "$WORK/models" --store "$DSN" --claim-lease-seconds $LEASE --test-check-delay-seconds $CHECK_DELAY \
    --workers 2 --store-connect-timeout-seconds 2 --store-statement-timeout-seconds 5 \
    --grace-period-seconds 5 >"$WORK/$n.log" 2>&1 &
  PID[$n]=$!
  PIDS+=("$!")
}
wait_ready() {  # wait_ready NAME
  local n=$1
  for _ in $(seq 300); do
    [ -s "$WORK/$n.ready" ] && break
    kill -0 "${PID[$n]}" 2>/dev/null || die "replica $n exited during startup"
    sleep 0.05
  done
  [ -s "$WORK/$n.ready" ] || die "replica $n was not ready in 15 s"
  GRPC[$n]=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["grpc_port"])' "$WORK/$n.ready")
  METRICS[$n]=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["metrics_port"])' "$WORK/$n.ready")
}

# metric NAME PORT [label=value...]: the sum of the matching series ("0" when there is none).
metric() {
  "$PY" - "$@" <<'EOF'
import re, sys, urllib.request
name, port, want = sys.argv[1], sys.argv[2], dict(a.split("=", 1) for a in sys.argv[3:])
text = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=5).read().decode()
total = 0.0
for line in text.splitlines():
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
    if not m or m.group(1) != name:
        continue
    labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
    if all(labels.get(k) == v for k, v in want.items()):
        total += float(m.group(4))
print(int(total) if total == int(total) else total)
EOF
}
metric_sum() {  # metric_sum NAME [label=value...]: over both replicas
  echo $(($(metric "$1" "${METRICS[A]}" "${@:2}") + $(metric "$1" "${METRICS[B]}" "${@:2}")))
}
# log_count FILE key=value...: JSON log lines of FILE with all the given fields.
log_count() {
  "$PY" - "$@" <<'EOF'
import json, sys
path, want = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
n = 0
for line in open(path):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if all(str(j.get(k)) == v for k, v in want.items()):
        n += 1
print(n)
EOF
}
sha() { sha256sum "$WORK/models/$1" | awk '{print $1}'; }
expect_eq() {  # expect_eq WHAT GOT WANT
  [ "$2" = "$3" ] || die "$1: got '$2', expected '$3'"
  log "  ok: $1 = $3"
}
client_check() {  # client_check REPLICA MODEL: prints the client's exit code
  local rc=0
  "$CLIENT_BIN" check --server "127.0.0.1:${GRPC[$1]}" --format json --deadline 60 --retries 0 \
    "$WORK/models/$2" >"$WORK/out-$1-$2.json" 2>"$WORK/err-$1-$2.txt" || rc=$?
  echo $rc
}

t0=$(now)
start_server A
start_server B
wait_ready A
wait_ready B
log "replicas: A gRPC :${GRPC[A]} metrics :${METRICS[A]}, B gRPC :${GRPC[B]} metrics :${METRICS[B]} (both ready in $(elapsed "$t0" "$(now)") s)"
log "0. concurrent start-up migrated the schema once"
expect_eq "rows of axqc_schema_version (one per migration)" "$(psql_q axqc 'SELECT count(*) FROM axqc_schema_version')" 6
expect_eq "schema version" "$(psql_q axqc 'SELECT max(version) FROM axqc_schema_version')" 6

# ------------------------------------------------------------------ 1. shared cache
log "1. uploads to A; on B a hash-first GetReport and a Check (path reference) are store hits"
client_check A m1.onnx >"$WORK/rc-A-m1" &
c1=$!
client_check A m5.onnx >"$WORK/rc-A-m5" &
c2=$!
wait $c1 $c2
expect_eq "axqc check --server A m1.onnx exit code" "$(cat "$WORK/rc-A-m1")" 0
expect_eq "axqc check --server A m5.onnx exit code" "$(cat "$WORK/rc-A-m5")" 0
expect_eq "A: Uploads that were misses" "$(log_count "$WORK/A.log" msg=request method=Upload code=OK cache=miss)" 2
expect_eq "axqc check --server B m1.onnx exit code" "$(client_check B m1.onnx)" 0
expect_eq "B: GetReport store_hit" "$(log_count "$WORK/B.log" msg=request method=GetReport code=OK cache=store_hit)" 1
expect_eq "B: uploads" "$(log_count "$WORK/B.log" msg=request method=Upload)" 0
rc=0
"$CLIENT_BIN" check --server "127.0.0.1:${GRPC[B]}" --retries 0 --ref m5.onnx >/dev/null || rc=$?
expect_eq "axqc check --server B --ref m5.onnx exit code" "$rc" 0
expect_eq "B: Check store_hit" "$(log_count "$WORK/B.log" msg=request method=Check code=OK cache=store_hit)" 1
expect_eq "checks run (A + B)" "$(metric_sum axqc_check_duration_seconds_count stage=check)" 2

# ------------------------------------------------------------------ 2. cross-replica single flight
log "2. the same new model checked on A and B at the same time: one upload, one check"
t0=$(now)
client_check A m2.onnx >"$WORK/rc-A-m2" &
c1=$!
client_check B m2.onnx >"$WORK/rc-B-m2" &
c2=$!
wait $c1 $c2
expect_eq "exit code on A (non_conformant)" "$(cat "$WORK/rc-A-m2")" 1
expect_eq "exit code on B (non_conformant)" "$(cat "$WORK/rc-B-m2")" 1
log "  both answered in $(elapsed "$t0" "$(now)") s"
expect_eq "checks run (A + B: m1, m5, m2)" "$(metric_sum axqc_check_duration_seconds_count stage=check)" 3
expect_eq "cache lookups 'shared' (A + B)" "$(metric_sum axqc_cache_lookups_total result=shared)" 1
expect_eq "uploads of m2 (A + B)" "$(( $(log_count "$WORK/A.log" msg=request method=Upload model_sha256="$(sha m2.onnx)") + $(log_count "$WORK/B.log" msg=request method=Upload model_sha256="$(sha m2.onnx)") ))" 1
expect_eq "lookups of m2 that waited for the other replica's check (A + B)" "$(metric_sum axqc_report_lookups_total result=shared)" 1
# m1, m5 uploads on A; m1 (hash-first re-check) and m5 (reference) on B; m2 once uploaded, once a
# recorded lookup.
expect_eq "answered check requests (A + B)" "$(metric_sum axqc_checks_total)" 6
same=$("$PY" -c 'import json,sys
a, b = (json.load(open(f))["reports"][0] for f in sys.argv[1:3])
print(len(a["findings"]) if a["findings"] and a["findings"] == b["findings"] and a["verdict"] == b["verdict"] else "differ")' \
  "$WORK/out-A-m2.onnx.json" "$WORK/out-B-m2.onnx.json")
[ "$same" != differ ] || die "A and B returned different reports for m2"
log "  ok: A and B returned the same verdict and the same $same findings"

# ------------------------------------------------------------------ 3. stats over all replicas
log "3. GetStats on either replica: the history of both"
stats() {  # stats REPLICA: "requests conformant non_conformant"
  "$CLIENT_BIN" stats --server "127.0.0.1:${GRPC[$1]}" --format json --retries 0 |
    "$PY" -c 'import json,sys; t=json.load(sys.stdin)["total"]
print(int(t["requests"]), int(t["conformant"]), int(t["non_conformant"]))'
}
# History rows: m1 and m5 uploads on A, m1 recorded lookup and m5 Check on B (conformant), m2 on
# A and B (non_conformant).
expect_eq "stats on A (requests conformant non_conformant)" "$(stats A)" "6 4 2"
expect_eq "stats on B (requests conformant non_conformant)" "$(stats B)" "6 4 2"
expect_eq "history rows by replica" \
  "$(psql_q axqc 'SELECT count(DISTINCT replica) FROM axqc_history')" 2

# ------------------------------------------------------------------ 4. takeover
log "4. SIGKILL A in the middle of a check that B's client waits for"
t0=$(now)
client_check A m3.onnx >"$WORK/rc-A-m3" &
ca=$!
for _ in $(seq 200); do
  [ "$(metric axqc_busy_workers "${METRICS[A]}")" = 1 ] && break
  sleep 0.05
done
expect_eq "A busy workers (checking m3)" "$(metric axqc_busy_workers "${METRICS[A]}")" 1
client_check B m3.onnx >"$WORK/rc-B-m3" &
cb=$!
for _ in $(seq 200); do
  [ "$(metric axqc_lookup_waiting_requests "${METRICS[B]}")" = 1 ] && break
  sleep 0.05
done
expect_eq "B lookups waiting for A's claim" "$(metric axqc_lookup_waiting_requests "${METRICS[B]}")" 1
expect_eq "claim row of m3 owned by A's replica id" \
  "$(psql_q axqc "SELECT count(*) FROM axqc_check_claims WHERE owner LIKE '%:${PID[A]}:%'")" 1
kill -KILL "${PID[A]}"
wait "${PID[A]}" 2>/dev/null || true
t_kill=$(now)
log "  A killed $(elapsed "$t0" "$t_kill") s after its upload started"
wait $cb || true
t_done=$(now)
wait $ca || true
expect_eq "B's client exit code (conformant)" "$(cat "$WORK/rc-B-m3")" 0
took=$(elapsed "$t_kill" "$t_done")
log "  B answered $took s after the kill (lease $LEASE s + check $CHECK_DELAY s)"
"$PY" -c 'import sys; t=float(sys.argv[1]); sys.exit(0 if float(sys.argv[2]) <= t < 20 else 1)' \
  "$took" "$CHECK_DELAY" || die "B answered $took s after the kill, expected within [$CHECK_DELAY, 20)"
expect_eq "B claim takeovers" "$(metric axqc_claim_takeovers_total "${METRICS[B]}")" 1
expect_eq "B: Upload of m3 answered as a fresh check" \
  "$(log_count "$WORK/B.log" msg=request method=Upload code=OK cache=miss model_sha256="$(sha m3.onnx)")" 1
expect_eq "B lookups still waiting" "$(metric axqc_lookup_waiting_requests "${METRICS[B]}")" 0
expect_eq "claims left in the database" "$(psql_q axqc 'SELECT count(*) FROM axqc_check_claims')" 0
expect_eq "A's client got no verdict (exit 4)" "$(cat "$WORK/rc-A-m3")" 4

# ------------------------------------------------------------------ 5. database restart
log "5. PostgreSQL stops while B is idle"
pg_ctl -m fast -w stop >/dev/null
t0=$(now)
rc=0
"$CLIENT_BIN" stats --server "127.0.0.1:${GRPC[B]}" --retries 0 >/dev/null 2>"$WORK/stats-down.txt" || rc=$?
expect_eq "stats while the database is down: exit code (no verdict)" "$rc" 4
grep -q UNAVAILABLE "$WORK/stats-down.txt" || die "stats while down: $(cat "$WORK/stats-down.txt")"
log "  ok: GetStats -> UNAVAILABLE ($(head -c 160 "$WORK/stats-down.txt"))"
rc=0
"$CLIENT_BIN" check --server "127.0.0.1:${GRPC[B]}" --retries 0 "$WORK/models/m4.onnx" \
  >/dev/null 2>"$WORK/check-down.txt" || rc=$?
expect_eq "check of a new model while the database is down: exit code (no verdict)" "$rc" 4
grep -q UNAVAILABLE "$WORK/check-down.txt" || die "check while down: $(cat "$WORK/check-down.txt")"
took=$(elapsed "$t0" "$(now)")
"$PY" -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 10 else 1)' "$took" ||
  die "answers while the database is down took $took s"
log "  ok: both answered UNAVAILABLE within $took s"
kill -0 "${PID[B]}" || die "B exited while the database was down"
expect_eq "B health while the database is down (axqc health exit code)" \
  "$("$CLIENT_BIN" health --server "127.0.0.1:${GRPC[B]}" >/dev/null 2>&1; echo $?)" 0
pg_start
log "  PostgreSQL started again"
expect_eq "axqc check --server B m4.onnx exit code" "$(client_check B m4.onnx)" 0
expect_eq "B: Upload of m4 was a miss" \
  "$(log_count "$WORK/B.log" msg=request method=Upload code=OK cache=miss model_sha256="$(sha m4.onnx)")" 1
# History: 6 rows before, m3 and m4 on B (A's m3 upload never finished).
expect_eq "stats on B after the restart" "$(stats B)" "8 6 2"
expect_eq "reports in the database" "$(psql_q axqc 'SELECT count(*) FROM axqc_reports')" 5
# A restart between two requests: B's pooled connections are stale, the next call replaces them.
pg_ctl -m fast -w restart >/dev/null
expect_eq "stats on B right after a restart of PostgreSQL" "$(stats B)" "8 6 2"

# ------------------------------------------------------------------ 6. graceful stop
log "6. a client's gate outcome (RecordGate) lands in the shared history"
rc=0
"$CLIENT_BIN" check --server "127.0.0.1:${GRPC[B]}" --no-config --deadline 60 --retries 0 \
  --write-baseline "$WORK/gate-baseline.json" "$WORK/models/m2.onnx" >"$WORK/gate.txt" 2>&1 || rc=$?
expect_eq "non-conformant m2 with its findings written as the baseline: exit code" "$rc" 0
expect_eq "history row of that check: gate, baselined errors" \
  "$(psql_q axqc "SELECT gate || ' ' || baselined_errors FROM axqc_history WHERE gate IS NOT NULL")" "pass 1"

log "7. SIGTERM B"
kill -TERM "${PID[B]}"
rc=0
wait "${PID[B]}" || rc=$?
expect_eq "B exit status" "$rc" 0
log "PASS"
