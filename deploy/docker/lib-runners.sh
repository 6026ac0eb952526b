# shellcheck shell=bash
# How CI runners start containers, emulated with podman; sourced by test-cli-image.sh and
# test-ci-step.sh (and by tests/ci/runners.py for the steps of a GitHub container job).
#
#   gitlab_docker_job IMAGE [podman run options...] < SCRIPT
#       gitlab-runner's Docker executor: the image's entrypoint (none in the CLI image) with
#       `sh -c <the runner's shell detection>` as command and the job's script on the shell's
#       stdin, in /builds/group/project (CI_PROJECT_DIR); the exit code is the job's.
#   github_job_container NAME IMAGE WORK [podman run options...]
#       GitHub's job container for `container:` jobs: `--entrypoint tail IMAGE -f /dev/null`, the
#       runner's work folder WORK/work at /__w and its temp folder WORK/temp at /__w/_temp (files
#       of the runner's user, uid 1001), workspace /__w/repo/repo, the image's user.
#   github_exec NAME FILE [podman exec options...]
#       one `run:` step of that job: `docker exec ... bash --noprofile --norc -eo pipefail FILE`
#       in the workspace (options: -w DIR, -e K=V of the step's environment).
#   expect_rc CODE DESCRIPTION COMMAND...
#       runs COMMAND with stdout and stderr in $WORK/out.txt and $WORK/err.txt; `fail`s unless it
#       exits CODE (the caller defines WORK and fail).
PODMAN_RUN_OPTS=(--runtime runc --network host --ulimit nofile=1024:1024 --ulimit nproc=4096:4096)
GITLAB_PROJECT_DIR=/builds/group/project

# gitlab-runner's shell detection (executors/docker, the command of the build container).
GITLAB_DETECT='if [ -x /usr/local/bin/bash ]; then
	exec /usr/local/bin/bash $@
elif [ -x /usr/bin/bash ]; then
	exec /usr/bin/bash $@
elif [ -x /bin/bash ]; then
	exec /bin/bash $@
elif [ -x /usr/local/bin/sh ]; then
	exec /usr/local/bin/sh $@
elif [ -x /usr/bin/sh ]; then
	exec /usr/bin/sh $@
elif [ -x /bin/sh ]; then
	exec /bin/sh $@
elif [ -x /busybox/sh ]; then
	exec /busybox/sh $@
else
	echo shell not found
	exit 1
fi'

gitlab_docker_job() {
  local image=$1
  shift
  { printf 'set -eo pipefail\nset +o noclobber\n'; cat; } |
    podman run --rm -i "${PODMAN_RUN_OPTS[@]}" -w "$GITLAB_PROJECT_DIR" \
      -e CI=true -e GITLAB_CI=true -e CI_PROJECT_DIR="$GITLAB_PROJECT_DIR" "$@" \
      "$image" sh -c "$GITLAB_DETECT"
}

github_job_container() {
  local name=$1 image=$2 work=$3
  shift 3
  mkdir -p "$work/work/repo/repo" "$work/temp/_runner_file_commands"
  podman run -d --name "$name" "${PODMAN_RUN_OPTS[@]}" -v "$work/work:/__w" -v "$work/temp:/__w/_temp" \
    -w /__w/repo/repo -e GITHUB_ACTIONS=true -e CI=true -e HOME=/github/home "$@" \
    --entrypoint tail "$image" -f /dev/null >/dev/null
}

github_exec() {
  local name=$1 file=$2
  shift 2
  podman exec -w /__w/repo/repo "$@" "$name" bash --noprofile --norc -eo pipefail "$file"
}

# shellcheck disable=SC2153  # WORK is the caller's
expect_rc() {
  local want=$1 what=$2 rc=0
  shift 2
  "$@" >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
  [ "$rc" = "$want" ] || fail "$what: exit $rc, expected $want: $(head -c 800 "$WORK/err.txt") $(head -c 800 "$WORK/out.txt")"
}
