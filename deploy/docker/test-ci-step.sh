#!/usr/bin/env bash
# Runs the ready-made CI step (docs/ci.md) in containers, the way the runners run it:
#
#   1. the GitLab CI template (ci/axqc.gitlab-ci.yml): a project's .gitlab-ci.yml includes it and
#      extends .axqc-check; the job script gitlab-runner's bash shell would get (tests/ci/
#      runners.py gitlab) goes to the CLI image through the Docker executor's convention (no
#      entrypoint, `sh -c <shell detection>`, the script on stdin; lib-runners.sh);
#   2. the GitHub Action (action.yml) in a `container:` job of the CLI image: the runner's job
#      container (`--entrypoint tail ... -f /dev/null`), the action checked out under
#      /__w/_actions, each `run:` step by `docker exec ... bash --noprofile --norc -eo pipefail`
#      with the runner's variables (tests/ci/runners.py github --container);
#   3. the Action with `deb:` in a job container of plain debian:bookworm-slim: the setup step
#      installs the package with apt-get, then checks;
#   4. the Action with `image:` on a runner without axqc: its steps run here and start the CLI
#      image with `docker run` (podman behind a `docker` command on PATH).
#
# Each gates the scenarios: conformant models and a known finding of the baseline pass (exit 0);
# a new finding fails (1) with its reports written (SARIF / Code Quality / JUnit with the rule ID
# and the node); a float model fails with fail-on not_applicable (1); an unreachable server fails
# with 4 and a message that names the server, not the models.
#
#   deploy/docker/test-ci-step.sh [gitlab|container|deb|image|all]   (default all; as root or
#                                                                     with a working rootless podman)
# Environment: AXQC_CLI_IMAGE (default localhost/axqc-cli:latest; built by test-cli-image.sh when
# missing), AXQC_PACKAGE_OUT (the .deb, default out/packages), AXQC_EXAMPLES_DIR (example models,
# default build/package/examples), AXQC_IMAGE_WORK (default /var/tmp/axqc-ci-step). Needs python3
# with PyYAML, and the Debian archive for part 3 (deb). 57 s on an idle 2-core machine with the image's
# layers cached, 3-5 minutes when other builds load it; not part of .ci/run
# (docs/operations.md, "What the tests cover"); tests/ci/ci_step_test.py (ctest ci_step) runs the
# same steps without containers.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WHAT=${1:-all}
case "$WHAT" in gitlab | container | deb | image | all) ;; *) echo "usage: $0 [gitlab|container|deb|image|all]" >&2; exit 2 ;; esac
part() { [ "$WHAT" = all ] || [ "$WHAT" = "$1" ]; }
IMAGE=${AXQC_CLI_IMAGE:-localhost/axqc-cli:latest}
OUT=${AXQC_PACKAGE_OUT:-$ROOT/out/packages}
EXAMPLES=${AXQC_EXAMPLES_DIR:-$ROOT/build/package/examples}
WORK=${AXQC_IMAGE_WORK:-/var/tmp/axqc-ci-step}
BASE=docker.io/library/debian:bookworm-slim
RUNNERS="$ROOT/tests/ci/runners.py"
NAME=axqc-ci-step-$$
# shellcheck source=deploy/docker/lib-runners.sh
source "$ROOT/deploy/docker/lib-runners.sh"

log() { printf '[test-ci-step %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() { printf '[test-ci-step] FAILED: %s\n' "$*" >&2; exit 1; }
cleanup() { podman rm -f -t 0 "$NAME" >/dev/null 2>&1 || true; }
trap cleanup EXIT
T0=$(date +%s)

command -v podman >/dev/null || fail "podman is missing (apt-get install podman runc)"
python3 -c 'import yaml' 2>/dev/null || fail "python3-yaml is missing"
if ! podman image exists "$IMAGE" || [ ! -f "$EXAMPLES/conformant_cnn.onnx" ]; then
  log "no $IMAGE or no example models: deploy/docker/test-cli-image.sh builds them"
  "$ROOT/deploy/docker/test-cli-image.sh"
fi
debs=("$OUT"/axqc_*.deb)
[ -f "${debs[0]}" ] || fail "no axqc_*.deb in $OUT (scripts/package deb)"
UNREACHABLE=127.0.0.1:$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# py FILE EXPR: asserts the Python expression over `d` (the JSON file) or `x` (the XML root).
py() {
  python3 - "$1" "$2" <<'PY' || fail "$1: not true: $2"
import json, sys, xml.etree.ElementTree as ET
path, expr = sys.argv[1], sys.argv[2]
d = x = None
if path.endswith(".xml"):
    x = ET.parse(path).getroot()
else:
    d = json.load(open(path))
sys.exit(0 if eval(expr) else 1)
PY
}
# SARIF results as (ruleId, baselineState, node), JUnit failures as (suite, type, text), Code
# Quality issues as (check_name, path).
SARIF='sorted((r["ruleId"], r.get("baselineState"), r["locations"][0]["logicalLocations"][0]["name"]) for r in d["runs"][0]["results"])'
JFAIL='sorted((s.get("name"), f.get("type"), "[nodes: add gap]" in (f.text or "")) for s in x.iter("testsuite") for f in s.iter("failure"))'
CQ='sorted((i["check_name"], i["location"]["path"]) for i in d)'

# A repository: models/a.onnx conformant, models/b.onnx with role/weight-type (in the baseline).
# scenario DIR NAME: the models of that scenario (pass, new-finding, float, unreachable).
repo() {
  local dir=$1
  rm -rf "$dir" && mkdir -p "$dir/models"
  cp "$EXAMPLES/conformant_cnn.onnx" "$dir/models/a.onnx"
  cp "$EXAMPLES/broken_weight_per_tensor.onnx" "$dir/models/b.onnx"
  cp "$WORK/axqc-baseline.json" "$dir/axqc-baseline.json"
}
scenario() {
  local dir=$1
  repo "$dir"
  case "$2" in
    new-finding) cp "$EXAMPLES/broken_two_defects.onnx" "$dir/models/b.onnx" ;;
    float) cp "$EXAMPLES/float_only.onnx" "$dir/models/float.onnx" ;;
  esac
  chown -R 1001:1001 "$dir" 2>/dev/null || true   # files of the runner's user
}

# The baseline with b's finding, written once by the image's axqc.
rm -rf "$WORK/base" && mkdir -p "$WORK/base/models"
cp "$EXAMPLES/conformant_cnn.onnx" "$WORK/base/models/a.onnx"
cp "$EXAMPLES/broken_weight_per_tensor.onnx" "$WORK/base/models/b.onnx"
podman run --rm "${PODMAN_RUN_OPTS[@]}" -v "$WORK/base:/w" -w /w "$IMAGE" \
  axqc check --no-config --write-baseline axqc-baseline.json models/a.onnx models/b.onnx >/dev/null ||
  fail "axqc check --write-baseline in $IMAGE"
cp "$WORK/base/axqc-baseline.json" "$WORK/axqc-baseline.json"

# ---- 1. GitLab template, Docker executor ---------------------------------------------------------
GL="$WORK/gitlab"
gitlab() {  # gitlab SCENARIO [VAR=VALUE...]: the job's exit code; the project in $GL/project
  local s=$1
  shift
  scenario "$GL/project" "$s"
  printf '%s\n' 'include:' '  - project: tools/axqc' '    ref: v0.1.0' '    file: ci/axqc.gitlab-ci.yml' \
    'axqc:' '  extends: .axqc-check' '  variables:' '    AXQC_MODELS: models' \
    '    AXQC_BASELINE: axqc-baseline.json' >"$GL/project/.gitlab-ci.yml"
  local vars=(--var "AXQC_IMAGE=$IMAGE")
  for v in "$@"; do vars+=(--var "$v"); done
  python3 "$RUNNERS" gitlab "$GL/project/.gitlab-ci.yml" axqc --include "ci/axqc.gitlab-ci.yml=$ROOT/ci/axqc.gitlab-ci.yml" \
    "${vars[@]}" --project-dir "$GITLAB_PROJECT_DIR" --script "$GL/job.sh" --result "$GL/job.json"
  gitlab_docker_job "$IMAGE" -v "$GL/project:$GITLAB_PROJECT_DIR" <"$GL/job.sh"
}
mkdir -p "$GL"
if part gitlab; then
expect_rc 0 "GitLab: pass" gitlab pass
py "$GL/job.json" "d['image'] == '$IMAGE' and d['artifacts']['reports'] == {'codequality': 'axqc-reports/gl-code-quality.json', 'junit': 'axqc-reports/axqc-junit.xml'}"
py "$GL/project/axqc-reports/gl-code-quality.json" "$CQ == [('role/weight-type', 'models/b.onnx')]"
py "$GL/project/axqc-reports/axqc-junit.xml" "$JFAIL == []"
expect_rc 1 "GitLab: new finding" gitlab new-finding
py "$GL/project/axqc-reports/gl-code-quality.json" "$CQ == [('op/output-not-quantized', 'models/b.onnx'), ('role/weight-type', 'models/b.onnx')]"
py "$GL/project/axqc-reports/axqc-junit.xml" "$JFAIL == [('models/b.onnx', 'op/output-not-quantized', True)]"
expect_rc 1 "GitLab: float model" gitlab float
grep -q 'models/float.onnx: NOT_APPLICABLE' "$WORK/out.txt" || fail "GitLab: no NOT_APPLICABLE in the job log"
expect_rc 0 "GitLab: float model, AXQC_FAIL_ON empty" gitlab float AXQC_FAIL_ON=
expect_rc 4 "GitLab: unreachable server" gitlab pass "AXQC_SERVER=$UNREACHABLE" "AXQC_ARGS=--retries 1"
grep -q "no verdict from axqc-server $UNREACHABLE" "$WORK/err.txt" || fail "GitLab: no message about the server: $(cat "$WORK/err.txt")"
[ ! -e "$GL/project/axqc-reports/gl-code-quality.json" ] || fail "GitLab: a Code Quality report without a verdict"
fi
part gitlab && log "1. GitLab template in $IMAGE (Docker executor): pass 0, new finding 1 (Code Quality + JUnit: op/output-not-quantized at add), float 1 (0 without not_applicable), unreachable server 4"

# ---- GitHub: the runner's folders, the action under _actions -------------------------------------
GH="$WORK/github"
# github_job SCENARIO IMAGE|local [INPUT=VALUE...]: runs the action as a step of a job in a job
# container of IMAGE (or on this machine: local); the runner's result in $GH/result.json.
github_job() {
  local s=$1 img=$2 ws
  shift 2
  rm -rf "$GH" && mkdir -p "$GH/work/_actions/example/axqc/v0" "$GH/temp"
  cp -r "$ROOT/action.yml" "$ROOT/ci" "$GH/work/_actions/example/axqc/v0/"
  ws="$GH/work/repo/repo"
  scenario "$ws" "$s"
  mkdir -p "$ws/pkgs" && cp "${debs[0]}" "$ws/pkgs/"
  local args=(--workspace "$ws" --temp "$GH/temp" --result "$GH/result.json")
  for v in "$@"; do args+=(--input "$v"); done
  if [ "$img" = local ]; then
    python3 "$RUNNERS" github "$GH/work/_actions/example/axqc/v0" "${args[@]}" \
      --env "PATH=$WORK/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  else
    cleanup
    chown -R 1001:1001 "$GH" 2>/dev/null || true
    github_job_container "$NAME" "$img" "$GH"
    python3 "$RUNNERS" github "$GH/work/_actions/example/axqc/v0" "${args[@]}" --container "$NAME" \
      --map "$GH/work=/__w" --map "$GH/temp=/__w/_temp"
  fi
}
OUTS="d['outputs']['exit-code'], d['outputs']['verdict']"
WS="$GH/work/repo/repo"
github_scenarios() {  # github_scenarios IMAGE|local WHAT [INPUT=VALUE...]
  local img=$1 what=$2
  shift 2
  expect_rc 0 "GitHub ($what): pass" github_job pass "$img" models=models baseline=axqc-baseline.json upload-sarif=true "$@"
  py "$GH/result.json" "($OUTS) == ('0', 'pass') and d['uses'][0]['with']['sarif_file'] == 'axqc-reports/axqc.sarif'"
  py "$WS/axqc-reports/axqc.sarif" "$SARIF == [('role/weight-type', 'unchanged', 'conv1_w_dq')]"
  expect_rc 1 "GitHub ($what): new finding" github_job new-finding "$img" models=models baseline=axqc-baseline.json "$@"
  py "$GH/result.json" "($OUTS) == ('1', 'fail')"
  grep -q '::error file=models/b.onnx,title=op/output-not-quantized' "$WORK/out.txt" || fail "GitHub ($what): no annotation of the new finding"
  py "$WS/axqc-reports/axqc.sarif" "$SARIF == [('op/output-not-quantized', 'new', 'add'), ('role/weight-type', 'unchanged', 'conv1_w_dq')]"
  py "$WS/axqc-reports/axqc-junit.xml" "$JFAIL == [('models/b.onnx', 'op/output-not-quantized', True)]"
  expect_rc 1 "GitHub ($what): float model" github_job float "$img" models=models baseline=axqc-baseline.json "$@"
  py "$GH/result.json" "($OUTS) == ('1', 'fail')"
  expect_rc 1 "GitHub ($what): unreachable server" github_job pass "$img" models=models "server=$UNREACHABLE" "args=--retries 1" "$@"
  py "$GH/result.json" "($OUTS) == ('4', 'no_verdict') and d['outputs']['reports'] == ''"
  grep -q "no verdict from axqc-server $UNREACHABLE" "$WORK/out.txt" || fail "GitHub ($what): no message about the server"
  ! grep -q '::error file=models/' "$WORK/out.txt" || fail "GitHub ($what): the server's failure annotated on a model"
}

# ---- 2. GitHub container job of the CLI image -----------------------------------------------------
part container && github_scenarios "$IMAGE" "container: $IMAGE"
part container && log "2. GitHub Action in a container: job of $IMAGE: pass 0 (SARIF upload recorded), new finding 1 (annotation, SARIF new/unchanged, JUnit), float 1, unreachable server 4 (not annotated on a model)"

# ---- 3. deb: in a plain Debian container ------------------------------------------------------------
if part deb; then
expect_rc 0 "GitHub (deb): pass" github_job pass "$BASE" models=models baseline=axqc-baseline.json \
  "deb=pkgs/axqc_*.deb"
grep -q 'apt-get install /__w/repo/repo/pkgs/axqc_' "$WORK/out.txt" || fail "GitHub (deb): the package was not installed"
py "$GH/result.json" "($OUTS) == ('0', 'pass')"
expect_rc 1 "GitHub (deb): float model" github_job float "$BASE" models=models baseline=axqc-baseline.json \
  "deb=pkgs/axqc_*.deb"
py "$GH/result.json" "($OUTS) == ('1', 'fail')"
log "3. GitHub Action with deb: in $BASE: apt-get install, pass 0, float 1"
fi

# ---- 4. image: on a runner without axqc ---------------------------------------------------------------
if part image; then
mkdir -p "$WORK/bin"
# docker run -> podman run with the options of the other containers here (runc, bounded ulimits).
# shellcheck disable=SC2016  # the shim's own "$@"
printf '%s\n' '#!/bin/sh' \
  'if [ "$1" = run ]; then shift; exec podman --runtime runc run --ulimit nofile=1024:1024 --ulimit nproc=4096:4096 "$@"; fi' \
  'exec podman --runtime runc "$@"' >"$WORK/bin/docker"
chmod +x "$WORK/bin/docker"
! PATH="$WORK/bin:/usr/sbin:/usr/bin:/sbin:/bin" command -v axqc >/dev/null || fail "axqc is on this runner's PATH"
github_scenarios local "image: $IMAGE" "image=$IMAGE"
log "4. GitHub Action with image: (docker run on the runner): pass 0, new finding 1, float 1, unreachable server 4"
fi

log "PASSED ($WHAT, $(($(date +%s) - T0)) s)"
