#!/usr/bin/env bash
# Installs the artifacts of scripts/package into clean Debian 12 containers (podman) and checks
# each as a user would (docs/install.md, "Testing the packages"):
#
#   cli     apt-get install ./axqc_*.deb into bookworm-slim: the example models get their documented
#           verdicts and exit codes (0, 1, 3; 1 with --fail-on not_applicable; 2 for a file that is
#           not ONNX), `--isolate` finds axqc-worker, the HTML report has its Graphviz views, every
#           shared library resolves, `apt-get remove` removes the files
#   server  apt-get install ./axqc_*.deb ./axqc-server_*.deb: the system user axqc, /var/lib/axqc,
#           the conffile /etc/axqc/server.conf, the unit; then the unit's ExecStart run as the
#           unit's User in its WorkingDirectory (no systemd in the container; only the ports are
#           moved by AXQC_LISTEN/AXQC_METRICS_LISTEN, which win over the file), `axqc health` and
#           `axqc check --server` (upload; verdicts and exit codes as locally), the store written as
#           axqc, a clean SIGTERM stop; `systemd-analyze verify` of the unit; purge
#   systemd the same packages in a container booted with systemd (Debian's systemd package on the
#           base image, `podman run --systemd=always`): the postinst enables and starts
#           axqc-server.service with the unit's hardening, `axqc check --server` against it,
#           `systemctl stop` drains and exits 0, an upgrade (reinstall) restarts it, `apt-get
#           remove` stops it. A drop-in moves the ports and lowers LimitNOFILE to the
#           container's hard limit (16384)
#   wheel   apt-get install python3-pip, `pip install --break-system-packages` of the wheel into
#           /usr/bin/python3: axqc.check on the examples; then, with Debian's python3-grpcio and the
#           server package, axqc.Client against a running axqc-server; pip uninstall
#
#   deploy/docker/test-packages.sh [cli|server|systemd|wheel|all]   (default all; as root or with
#                                                                    a working rootless podman)
# Environment:
#   AXQC_PACKAGE_OUT   the artifacts (default out/packages); missing ones are built with
#                      scripts/package first (AXQC_REBUILD=1: always)
#   AXQC_EXAMPLES_DIR  the example models (default build/package/examples, made by
#                      scripts/package deb)
#   AXQC_IMAGE_WORK    work directory (default /var/tmp/axqc-packages)
# Base image: docker.io/library/debian:bookworm-slim, made locally by
# `AXQC_BASE_ONLY=1 deploy/docker/test-image.sh` when missing (debootstrap; no registry needed).
# Containers use runc, the host network (apt reaches the Debian mirror; the server listens on
# free 127.0.0.1 ports) and bounded ulimits. Each test needs the Debian archive (apt-get) and takes
# 1-3 minutes; not part of .ci/run (docs/operations.md, "What the tests cover").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WHAT=${1:-all}
case "$WHAT" in cli | server | systemd | wheel | all) ;; *) echo "usage: $0 [cli|server|systemd|wheel|all]" >&2; exit 2 ;; esac
OUT=${AXQC_PACKAGE_OUT:-$ROOT/out/packages}
EXAMPLES=${AXQC_EXAMPLES_DIR:-$ROOT/build/package/examples}
WORK=${AXQC_IMAGE_WORK:-/var/tmp/axqc-packages}
BASE=docker.io/library/debian:bookworm-slim
PODMAN_RUN_OPTS=(--runtime runc --network host --ulimit nofile=1024:1024 --ulimit nproc=4096:4096)

log() { printf '[test-packages %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() { printf '[test-packages] FAILED: %s\n' "$*" >&2; exit 1; }
now() { date +%s; }

command -v podman >/dev/null || fail "podman is missing (apt-get install podman runc)"
if ! podman image exists "$BASE"; then
  log "no $BASE: making it (deploy/docker/test-image.sh, AXQC_BASE_ONLY=1)"
  AXQC_BASE_ONLY=1 "$ROOT/deploy/docker/test-image.sh"
fi

# ---- artifacts ---------------------------------------------------------------------------------
have() { compgen -G "$OUT/$1" >/dev/null; }
need_deb=0 need_wheel=0
case "$WHAT" in
  cli) have 'axqc_*.deb' || need_deb=1 ;;
  server | systemd) { have 'axqc_*.deb' && have 'axqc-server_*.deb'; } || need_deb=1 ;;
  wheel) { have 'axqc_*.deb' && have 'axqc-server_*.deb'; } || need_deb=1; have 'axqc-*.whl' || need_wheel=1 ;;
  all) { have 'axqc_*.deb' && have 'axqc-server_*.deb'; } || need_deb=1; have 'axqc-*.whl' || need_wheel=1 ;;
esac
[ "${AXQC_REBUILD:-0}" = 1 ] && need_deb=1 && { [ "$WHAT" = wheel ] || [ "$WHAT" = all ]; } && need_wheel=1
[ -f "$EXAMPLES/conformant_cnn.onnx" ] || need_deb=1
if [ "$need_deb" = 1 ]; then log "scripts/package deb"; AXQC_PACKAGE_OUT=$OUT "$ROOT/scripts/package" deb; fi
if [ "$need_wheel" = 1 ]; then log "scripts/package wheel"; AXQC_PACKAGE_OUT=$OUT "$ROOT/scripts/package" wheel; fi
for f in "$OUT"/axqc_*.deb "$OUT"/axqc-server_*.deb "$OUT"/axqc-*.whl; do
  [ -e "$f" ] && log "artifact $(basename "$f"): $(du -k "$f" | cut -f1) KiB"
done

# Models and packages are mounted read-only: /m (the examples and a file that is not ONNX), /pkgs.
mkdir -p "$WORK"
rm -rf "$WORK/m" && mkdir -p "$WORK/m"
cp "$EXAMPLES"/*.onnx "$WORK/m/"
echo "not an onnx model" >"$WORK/m/not_onnx.onnx"
chmod -R a+rX "$WORK/m"
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# in_container NAME: runs the bash script on stdin in a fresh container of the base image.
in_container() {
  local name=$1 rc=0
  podman run --rm -i "${PODMAN_RUN_OPTS[@]}" --name "axqc-pkg-test-$name-$$" \
    -e GRPC_PORT="$(free_port)" -e METRICS_PORT="$(free_port)" -e DEBIAN_FRONTEND=noninteractive \
    -v "$OUT:/pkgs:ro" -v "$WORK/m:/m:ro" "$BASE" bash -s >"$WORK/$name.log" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    tail -40 "$WORK/$name.log" >&2
    fail "$name (exit $rc; log: $WORK/$name.log)"
  fi
  grep '^\[in-container\]' "$WORK/$name.log" | sed 's/^/  /'
}

# Shell functions every container script starts with.
read -r -d '' PRELUDE <<'EOF' || true
set -euo pipefail
say() { printf '[in-container] %s\n' "$*"; }
die() { printf '[in-container] FAILED: %s\n' "$*"; exit 1; }
expect_rc() {  # expect_rc CODE DESCRIPTION COMMAND...
  local want=$1 what=$2 rc=0
  shift 2
  "$@" >/tmp/out.txt 2>/tmp/err.txt || rc=$?
  [ "$rc" = "$want" ] || die "$what: exit $rc, expected $want: $(head -c 600 /tmp/err.txt) $(head -c 600 /tmp/out.txt)"
}
apt_install() { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" >/tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; die "apt-get install $*"; }; }
EOF

# ---- cli ---------------------------------------------------------------------------------------
test_cli() {
  log "cli: apt-get install ./axqc_*.deb into a clean $BASE"
  in_container cli <<EOF
$PRELUDE
apt_install /pkgs/axqc_*.deb
say "installed: \$(dpkg-query -W -f '\${Package} \${Version}, \${Installed-Size} KiB' axqc); \$(axqc --version)"
for b in /usr/bin/axqc /usr/bin/axqc-worker; do
  ! ldd "\$b" | grep -q 'not found' || die "\$b: \$(ldd "\$b" | grep 'not found')"
done
! dpkg -L axqc | grep -q '^/opt' || die "files under /opt"
expect_rc 0 conformant axqc check /m/conformant_cnn.onnx
grep -q CONFORMANT /tmp/out.txt || die "no CONFORMANT in: \$(cat /tmp/out.txt)"
expect_rc 1 "weight per tensor" axqc check --format json /m/broken_weight_per_tensor.onnx
grep -q '"role/weight-type"' /tmp/out.txt || die "no role/weight-type finding"
expect_rc 1 "two defects" axqc check /m/broken_two_defects.onnx
grep -q 'op/output-not-quantized' /tmp/out.txt && grep -q 'role/weight-type' /tmp/out.txt ||
  die "broken_two_defects.onnx: not both findings"
expect_rc 3 "float model" axqc check /m/float_only.onnx
expect_rc 1 "float model, --fail-on not_applicable" axqc check --fail-on not_applicable /m/float_only.onnx
expect_rc 2 "not an ONNX file" axqc check /m/not_onnx.onnx
say "verdicts: conformant 0, broken_weight_per_tensor 1 (role/weight-type), broken_two_defects 1, float_only 3 (1 with --fail-on not_applicable), not ONNX 2"
expect_rc 1 "--isolate" axqc check --isolate /m/broken_weight_per_tensor.onnx
say "--isolate: the check ran in /usr/bin/axqc-worker (exit 1)"
expect_rc 1 "HTML report" axqc check --format html -o /tmp/r.html /m/broken_two_defects.onnx
grep -q '<svg' /tmp/r.html || die "the HTML report has no graph view (Graphviz)"
say "HTML report: \$(grep -o '<svg' /tmp/r.html | wc -l) graph views, \$(du -k /tmp/r.html | cut -f1) KiB"
apt-get remove -y -qq axqc >/dev/null
[ ! -e /usr/bin/axqc ] && [ ! -e /usr/bin/axqc-worker ] || die "files left after apt-get remove"
say "apt-get remove: no file left"
EOF
}

# ---- server ------------------------------------------------------------------------------------
test_server() {
  log "server: apt-get install ./axqc_*.deb ./axqc-server_*.deb into a clean $BASE"
  in_container server <<EOF
$PRELUDE
apt_install /pkgs/axqc_*.deb /pkgs/axqc-server_*.deb
say "installed: \$(dpkg-query -W -f '\${Package} \${Version} ' axqc axqc-server)"
unit=/lib/systemd/system/axqc-server.service
[ -f "\$unit" ] || die "no \$unit"
getent passwd axqc >/dev/null || die "no user axqc"
IFS=: read -r _ _ uid gid _ home shell < <(getent passwd axqc)
[ "\$uid" -lt 1000 ] && [ "\$shell" = /usr/sbin/nologin ] && [ "\$home" = /var/lib/axqc ] ||
  die "user axqc: uid \$uid home \$home shell \$shell"
[ "\$(stat -c '%U:%G %a' /var/lib/axqc)" = "axqc:axqc 750" ] || die "/var/lib/axqc: \$(stat -c '%U:%G %a' /var/lib/axqc)"
dpkg-query -W -f '\${Conffiles}\n' axqc-server | grep -q '^ /etc/axqc/server.conf ' ||
  die "/etc/axqc/server.conf is not a conffile"
say "user axqc (system uid \$uid, nologin), /var/lib/axqc axqc:axqc 750, conffile /etc/axqc/server.conf, \$unit"

# The unit's command line, user and directory, as systemd would run them.
exec_start=\$(sed -n 's/^ExecStart=//p' "\$unit")
user=\$(sed -n 's/^User=//p' "\$unit"); group=\$(sed -n 's/^Group=//p' "\$unit")
workdir=\$(sed -n 's/^WorkingDirectory=//p' "\$unit")
say "ExecStart=\$exec_start (User=\$user, WorkingDirectory=\$workdir)"
cd "\$workdir"
AXQC_LISTEN=127.0.0.1:\$GRPC_PORT AXQC_METRICS_LISTEN=127.0.0.1:\$METRICS_PORT \
  setpriv --reuid "\$user" --regid "\$group" --init-groups \$exec_start >/tmp/server.log 2>&1 &
pid=\$!
S=127.0.0.1:\$GRPC_PORT
for _ in \$(seq 1 60); do
  axqc health --server \$S >/dev/null 2>&1 && break
  kill -0 \$pid 2>/dev/null || { cat /tmp/server.log; die "axqc-server exited"; }
  sleep 1
done
axqc health --server \$S >/dev/null || { tail /tmp/server.log; die "not SERVING after 60 s"; }
say "SERVING on \$S"
expect_rc 0 "remote conformant" axqc check --server \$S /m/conformant_cnn.onnx
grep -q CONFORMANT /tmp/out.txt || die "no CONFORMANT: \$(cat /tmp/out.txt)"
expect_rc 1 "remote weight per tensor" axqc check --server \$S --format json /m/broken_weight_per_tensor.onnx
grep -q '"role/weight-type"' /tmp/out.txt || die "remote: no role/weight-type"
expect_rc 3 "remote float" axqc check --server \$S /m/float_only.onnx
expect_rc 0 "stats" axqc stats --server \$S
say "axqc check --server: conformant 0, broken_weight_per_tensor 1 (role/weight-type), float_only 3; stats answered"
[ "\$(stat -c %U /var/lib/axqc/axqc.sqlite3)" = axqc ] || die "store not written as axqc"
[ "\$(stat -c %U /proc/\$pid)" = axqc ] || die "the server does not run as axqc"
kill -TERM \$pid; rc=0; wait \$pid || rc=\$?
[ "\$rc" = 0 ] || { tail /tmp/server.log; die "exit \$rc after SIGTERM"; }
grep -q 'shutdown complete' /tmp/server.log || die "no 'shutdown complete'"
say "ran as axqc, store /var/lib/axqc/axqc.sqlite3 (\$(du -k /var/lib/axqc/axqc.sqlite3 | cut -f1) KiB), SIGTERM: exit 0"
cd /
apt_install systemd
systemd-analyze verify "\$unit" >/tmp/verify.log 2>&1 || { cat /tmp/verify.log; die "systemd-analyze verify"; }
! grep -v '^$' /tmp/verify.log | grep -q . || { cat /tmp/verify.log; die "systemd-analyze verify warned"; }
say "systemd-analyze verify \$unit: clean"
apt-get purge -y -qq axqc-server >/dev/null
[ ! -e /etc/axqc/server.conf ] && [ ! -e /usr/bin/axqc-server ] || die "files left after purge"
getent passwd axqc >/dev/null && [ -f /var/lib/axqc/axqc.sqlite3 ] || die "purge removed the user or the store"
say "apt-get purge: binary and conffile gone; the user axqc and the store stay"
EOF
}

# ---- systemd -----------------------------------------------------------------------------------
test_systemd() {
  local image=localhost/axqc-test-systemd:bookworm name=axqc-pkg-test-systemd-$$ g m rc=0
  log "systemd: image $image ($BASE + Debian's systemd)"
  mkdir -p "$WORK/systemd"
  printf '%s\n' "FROM $BASE" \
    'RUN apt-get update && apt-get install -y --no-install-recommends systemd systemd-sysv dbus && apt-get clean && rm -rf /var/lib/apt/lists/*' \
    'CMD ["/lib/systemd/systemd"]' >"$WORK/systemd/Containerfile"
  podman build --runtime runc --network host --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 \
    -t "$image" "$WORK/systemd" >"$WORK/systemd/build.log" 2>&1 ||
    { tail "$WORK/systemd/build.log" >&2; fail "systemd image (log: $WORK/systemd/build.log)"; }
  g=$(free_port) m=$(free_port)
  podman run -d --name "$name" --runtime runc --network host --ulimit nofile=16384:16384 \
    --ulimit nproc=4096:4096 --systemd=always -v "$OUT:/pkgs:ro" -v "$WORK/m:/m:ro" "$image" >/dev/null
  podman exec -i -e DEBIAN_FRONTEND=noninteractive -e GRPC_PORT="$g" -e METRICS_PORT="$m" "$name" \
    bash -s >"$WORK/systemd.log" 2>&1 <<EOF || rc=$?
$PRELUDE
$(cat <<'INNER'
for _ in $(seq 1 30); do
  case "$(systemctl is-system-running 2>/dev/null)" in running | degraded) break ;; esac; sleep 1
done
say "systemd $(systemctl --version | head -1 | cut -d' ' -f2) as PID 1: $(systemctl is-system-running || true)"
mkdir -p /etc/systemd/system/axqc-server.service.d
printf '[Service]\nEnvironment=AXQC_LISTEN=127.0.0.1:%s AXQC_METRICS_LISTEN=127.0.0.1:%s\nLimitNOFILE=16384\n' \
  "$GRPC_PORT" "$METRICS_PORT" >/etc/systemd/system/axqc-server.service.d/test.conf
apt_install /pkgs/axqc_*.deb /pkgs/axqc-server_*.deb
S=127.0.0.1:$GRPC_PORT
serving() { for _ in $(seq 1 30); do axqc health --server $S >/dev/null 2>&1 && return 0; sleep 1; done; return 1; }
serving || { journalctl -u axqc-server --no-pager | tail; die "not SERVING after the installation"; }
[ "$(systemctl is-enabled axqc-server)" = enabled ] && systemctl is-active --quiet axqc-server ||
  { systemctl status axqc-server --no-pager; die "not enabled and active after the installation"; }
pid1=$(systemctl show -p MainPID --value axqc-server)
say "postinst: axqc-server.service enabled and active (pid $pid1, user $(stat -c %U /proc/$pid1)), SERVING on $S"
expect_rc 1 "check --server" axqc check --server $S /m/broken_weight_per_tensor.onnx
grep -q role/weight-type /tmp/out.txt || die "no role/weight-type"
expect_rc 0 "check --server" axqc check --server $S /m/conformant_cnn.onnx
say "axqc check --server: broken_weight_per_tensor 1 (role/weight-type), conformant_cnn 0 (sandboxed axqc-worker processes under the unit's hardening)"
systemctl stop axqc-server
[ "$(systemctl show -p Result --value axqc-server)" = success ] &&
  [ "$(systemctl show -p ExecMainStatus --value axqc-server)" = 0 ] ||
  die "stop: $(systemctl show -p Result -p ExecMainStatus axqc-server)"
journalctl -u axqc-server --no-pager | grep -q 'shutdown complete' || die "no 'shutdown complete' in the journal"
say "systemctl stop: result success, exit status 0, 'shutdown complete' in the journal"
systemctl start axqc-server
serving || die "not SERVING after systemctl start"
pid2=$(systemctl show -p MainPID --value axqc-server)
apt-get install -y -qq --reinstall /pkgs/axqc-server_*.deb >/dev/null 2>&1 || die "reinstall"
serving || die "not SERVING after the upgrade"
pid3=$(systemctl show -p MainPID --value axqc-server)
[ "$pid3" != "$pid2" ] && [ "$pid3" != 0 ] || die "upgrade: not restarted ($pid2 -> $pid3)"
say "upgrade (reinstall): restarted (pid $pid2 -> $pid3), SERVING"
apt-get remove -y -qq axqc-server >/dev/null 2>&1 || die "apt-get remove"
! systemctl is-active --quiet axqc-server || die "still active after apt-get remove"
say "apt-get remove: service stopped"
INNER
)
EOF
  podman rm -f -t 0 "$name" >/dev/null 2>&1 || true
  if [ "$rc" != 0 ]; then tail -40 "$WORK/systemd.log" >&2; fail "systemd (exit $rc; log: $WORK/systemd.log)"; fi
  grep '^\[in-container\]' "$WORK/systemd.log" | sed 's/^/  /'
}

# ---- wheel -------------------------------------------------------------------------------------
test_wheel() {
  log "wheel: pip install into a clean $BASE's /usr/bin/python3"
  in_container wheel <<EOF
$PRELUDE
apt_install python3-pip
whl=\$(ls /pkgs/axqc-*.whl)
python3 -m pip install --quiet --no-index --break-system-packages "\$whl" >/tmp/pip.log 2>&1 || { cat /tmp/pip.log; die "pip install"; }
say "pip install \$(basename "\$whl") into \$(python3 --version)"
cd /
python3 - <<'PY' || die "Python API (local)"
import axqc
r = axqc.check("/m/broken_weight_per_tensor.onnx")
assert r.verdict == axqc.Verdict.NON_CONFORMANT and r.rules_violated == ["role/weight-type"], r
assert axqc.check(open("/m/conformant_cnn.onnx", "rb").read()).conformant
assert axqc.check("/m/float_only.onnx").verdict == "not_applicable"
print("[in-container] axqc.check:", axqc.__version__, axqc.__file__,
      "broken_weight_per_tensor non_conformant (role/weight-type), conformant_cnn conformant, float_only not_applicable")
PY
# axqc.Client needs Debian's grpcio and protobuf; the server comes from the package.
apt_install python3-grpcio python3-protobuf /pkgs/axqc_*.deb /pkgs/axqc-server_*.deb
cd /var/lib/axqc
AXQC_LISTEN=127.0.0.1:\$GRPC_PORT AXQC_METRICS_LISTEN=127.0.0.1:\$METRICS_PORT \
  setpriv --reuid axqc --regid axqc --init-groups axqc-server --config /etc/axqc/server.conf >/tmp/server.log 2>&1 &
pid=\$!
for _ in \$(seq 1 60); do axqc health --server 127.0.0.1:\$GRPC_PORT >/dev/null 2>&1 && break; sleep 1; done
cd /
python3 - 127.0.0.1:\$GRPC_PORT <<'PY' || die "Python API (axqc.Client)"
import sys, axqc
with axqc.Client(sys.argv[1]) as c:
    r = c.check("/m/broken_two_defects.onnx")
    assert r.verdict == "non_conformant" and r.remote.uploaded, r
    assert sorted(r.rules_violated) == ["op/output-not-quantized", "role/weight-type"], r.rules_violated
    again = c.check("/m/broken_two_defects.onnx")
    assert not again.remote.uploaded
    print("[in-container] axqc.Client:", sorted(r.rules_violated), "uploaded once, then known by hash")
PY
kill -TERM \$pid; wait \$pid || true
python3 -m pip uninstall --quiet -y --break-system-packages axqc >/dev/null 2>&1 || die "pip uninstall"
! python3 -c 'import axqc' 2>/dev/null || die "axqc still importable after pip uninstall"
say "pip uninstall: removed"
EOF
}

T0=$(now)
case "$WHAT" in
  cli) test_cli ;;
  server) test_server ;;
  systemd) test_systemd ;;
  wheel) test_wheel ;;
  all) test_cli; T1=$(now); log "cli passed ($((T1 - T0)) s)"; test_server; T2=$(now)
       log "server passed ($((T2 - T1)) s)"; test_systemd; T3=$(now)
       log "systemd passed ($((T3 - T2)) s)"; test_wheel; log "wheel passed ($(($(now) - T3)) s)" ;;
esac
log "PASSED ($WHAT, $(($(now) - T0)) s)"
