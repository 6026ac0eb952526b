#!/usr/bin/env bash
# Builds the CLI image (deploy/docker/Dockerfile.cli) from the Debian package of scripts/package
# and runs it the ways CI runners and users start it (docs/install.md, "CLI image"):
#
#   1. `docker run IMAGE axqc check ...`: the verdict is the container's exit code (0, 1, 3);
#   2. GitLab's Docker executor: the image's entrypoint (none) with `sh -c <the runner's shell
#      detection script>` as command and the job's script on stdin; the job checks the examples,
#      writes a GitLab Code Quality report and gates on the exit code;
#   3. a GitHub Actions `container:` job: the runner's `--entrypoint tail ... -f /dev/null`
#      container, a workspace bind-mounted from the host, run steps by `exec` with
#      `bash --noprofile --norc -eo pipefail` as the default user (root: writing the runner's file
#      command files, as actions/checkout does, works) and the step's exit code;
#   4. the same check as an unprivileged user (`--user 1000:1000`).
#
#   deploy/docker/test-cli-image.sh          (as root or with a working rootless podman)
# Environment:
#   AXQC_CLI_IMAGE     image tag (default localhost/axqc-cli:latest)
#   AXQC_PACKAGE_OUT   the .deb (default out/packages; built with `scripts/package deb` when
#                      missing, or always with AXQC_REBUILD=1)
#   AXQC_EXAMPLES_DIR  example models (default build/package/examples)
#   AXQC_IMAGE_WORK    work directory (default /var/tmp/axqc-cli-image)
# The base image debian:bookworm-slim is made locally by test-image.sh (AXQC_BASE_ONLY=1) when
# missing. The build installs the .deb with apt (Debian archive needed, host network); about a
# minute. Not part of .ci/run (docs/operations.md, "What the tests cover").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IMAGE=${AXQC_CLI_IMAGE:-localhost/axqc-cli:latest}
OUT=${AXQC_PACKAGE_OUT:-$ROOT/out/packages}
EXAMPLES=${AXQC_EXAMPLES_DIR:-$ROOT/build/package/examples}
WORK=${AXQC_IMAGE_WORK:-/var/tmp/axqc-cli-image}
NAME=axqc-cli-test-$$
# shellcheck source=deploy/docker/lib-runners.sh
source "$ROOT/deploy/docker/lib-runners.sh"   # PODMAN_RUN_OPTS, the runners' conventions, expect_rc

log() { printf '[test-cli-image %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() { printf '[test-cli-image] FAILED: %s\n' "$*" >&2; exit 1; }
cleanup() { podman rm -f -t 0 "$NAME" >/dev/null 2>&1 || true; }
trap cleanup EXIT
now() { date +%s; }
T0=$(now)

command -v podman >/dev/null || fail "podman is missing (apt-get install podman runc)"
if ! podman image exists docker.io/library/debian:bookworm-slim; then
  AXQC_BASE_ONLY=1 "$ROOT/deploy/docker/test-image.sh"
fi
if [ "${AXQC_REBUILD:-0}" = 1 ] || ! compgen -G "$OUT/axqc_*.deb" >/dev/null ||
   [ ! -f "$EXAMPLES/conformant_cnn.onnx" ]; then
  log "scripts/package deb"
  AXQC_PACKAGE_OUT=$OUT "$ROOT/scripts/package" deb
fi

# ---- build: the context is a directory with the .deb only ---------------------------------------
mkdir -p "$WORK"
rm -rf "$WORK/context" && mkdir -p "$WORK/context"
debs=("$OUT"/axqc_*.deb)
[ "${#debs[@]}" = 1 ] || fail "expected one axqc_*.deb in $OUT, found ${#debs[@]}"
cp "${debs[0]}" "$WORK/context/"
log "podman build -f deploy/docker/Dockerfile.cli -t $IMAGE (context: $(basename "${debs[0]}"))"
podman build --runtime runc --network host --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 \
  --format docker -f "$ROOT/deploy/docker/Dockerfile.cli" -t "$IMAGE" "$WORK/context" \
  >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log" >&2; fail "podman build (log: $WORK/build.log)"; }
T1=$(now)
SIZE=$(podman image inspect "$IMAGE" --format '{{.Size}}')
ENTRY=$(podman image inspect "$IMAGE" --format '{{json .Config.Entrypoint}}')
USER_=$(podman image inspect "$IMAGE" --format '{{.Config.User}}')
case "$ENTRY" in null | '[]') ;; *) fail "the image has an entrypoint: $ENTRY" ;; esac
[ -z "$USER_" ] || [ "$USER_" = root ] || [ "$USER_" = 0 ] || fail "the image's user is $USER_, not root"
log "image $IMAGE: $((SIZE / 1000 / 1000)) MB, no entrypoint, user root ($((T1 - T0)) s)"

MODELS="$WORK/models"
rm -rf "$MODELS" && mkdir -p "$MODELS" && cp "$EXAMPLES"/*.onnx "$MODELS/" && chmod -R a+rX "$MODELS"

# ---- 1. docker run IMAGE axqc ... ------------------------------------------------------------------
run() { podman run --rm "${PODMAN_RUN_OPTS[@]}" -v "$MODELS:/m:ro" "$IMAGE" "$@"; }
expect_rc 0 "docker run: conformant" run axqc check /m/conformant_cnn.onnx
expect_rc 1 "docker run: non-conformant" run axqc check /m/broken_weight_per_tensor.onnx
grep -q role/weight-type "$WORK/out.txt" || fail "no role/weight-type in the report"
expect_rc 3 "docker run: float model" run axqc check /m/float_only.onnx
log "1. run IMAGE axqc check: conformant 0, broken_weight_per_tensor 1 (role/weight-type), float_only 3"

# ---- 2. GitLab Docker executor ---------------------------------------------------------------------
# gitlab-runner starts the container with the image's entrypoint and `sh -c <shell detection>`
# as command, and writes the job's script to the shell's stdin (lib-runners.sh; an image
# entrypoint that is not a shell would get `sh -c ...` as its arguments instead).
gitlab_job() {  # gitlab_job SCRIPT: the exit code of the job
  mkdir -p "$WORK/builds"
  gitlab_docker_job "$IMAGE" -v "$MODELS:$GITLAB_PROJECT_DIR/models:ro" \
    -v "$WORK/builds:$GITLAB_PROJECT_DIR/out" <<<"$1"
}
rm -rf "$WORK/builds"
expect_rc 0 "GitLab job, conformant model" gitlab_job '
axqc --version
axqc check --format gitlab -o out/gl-code-quality-report.json models/conformant_cnn.onnx'
[ -s "$WORK/builds/gl-code-quality-report.json" ] || fail "GitLab job: no Code Quality report"
expect_rc 1 "GitLab job, non-conformant model" gitlab_job '
axqc check --format gitlab -o out/gl-code-quality-report.json models/broken_two_defects.onnx'
grep -q role/weight-type "$WORK/builds/gl-code-quality-report.json" || fail "GitLab job: report without the finding"
expect_rc 1 "GitLab job, float model with --fail-on not_applicable" gitlab_job '
axqc check --fail-on not_applicable models/float_only.onnx'
log "2. GitLab executor (sh -c <detect shell>, script on stdin): pass 0, findings 1 (Code Quality report written), float with --fail-on not_applicable 1"

# ---- 3. GitHub Actions container job -----------------------------------------------------------------
# The runner creates the job container with `--entrypoint tail IMAGE -f /dev/null`, mounts the
# workspace and its file-command directory (owned by the runner's user on the host), and runs each
# `run:` step with `docker exec ... bash --noprofile --norc -eo pipefail STEP.sh` as the image's user.
GH="$WORK/github"
rm -rf "$GH" && mkdir -p "$GH/work/repo/repo/models" "$GH/temp/_runner_file_commands"
cp "$MODELS"/*.onnx "$GH/work/repo/repo/models/"
chown -R 1001:1001 "$GH" 2>/dev/null || true   # as on a runner: files of the runner's user
github_job_container "$NAME" "$IMAGE" "$GH" \
  -e GITHUB_OUTPUT=/__w/_temp/_runner_file_commands/set_output_1 \
  -e GITHUB_STEP_SUMMARY=/__w/_temp/_runner_file_commands/step_summary_1
gh_step() {  # gh_step SCRIPT: the step's exit code
  local f="step-$RANDOM.sh"
  printf '%s\n' "$1" >"$GH/temp/$f"
  github_exec "$NAME" "/__w/_temp/$f"
}
# shellcheck disable=SC2016  # expanded by the step's shell in the container
expect_rc 0 "GitHub step: user and file commands" gh_step '
test "$(id -u)" = 0
echo "verdict=conformant" >> "$GITHUB_OUTPUT"
echo "### axqc" >> "$GITHUB_STEP_SUMMARY"
touch .checkout-probe && rm .checkout-probe'
expect_rc 0 "GitHub step: conformant" gh_step 'axqc check --format github models/conformant_cnn.onnx'
expect_rc 1 "GitHub step: findings" gh_step 'axqc check --format github models/broken_weight_per_tensor.onnx'
grep -q '^::error' "$WORK/out.txt" || fail "GitHub step: no ::error annotation"
expect_rc 0 "GitHub step: SARIF" gh_step '
axqc check --format sarif -o axqc.sarif models/broken_two_defects.onnx || test $? = 1
test -s axqc.sarif'
podman rm -f -t 0 "$NAME" >/dev/null
log "3. GitHub container job (tail -f /dev/null, exec bash -eo pipefail, root): file commands writable, pass 0, findings 1 (::error annotations), SARIF written"

# ---- 4. unprivileged user ----------------------------------------------------------------------------
expect_rc 1 "--user 1000:1000" podman run --rm "${PODMAN_RUN_OPTS[@]}" --user 1000:1000 \
  -v "$MODELS:/m:ro" "$IMAGE" axqc check --isolate /m/broken_weight_per_tensor.onnx
log "4. --user 1000:1000: axqc check --isolate works (exit 1)"

log "PASSED: image $IMAGE $((SIZE / 1000 / 1000)) MB; build $((T1 - T0)) s, runs $(($(now) - T1)) s"
