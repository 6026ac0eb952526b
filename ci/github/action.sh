#!/usr/bin/env bash
# The steps of the GitHub Action (action.yml at the repository root):
#
#   action.sh setup     install the .deb (INPUT_DEB), check for docker and the image (INPUT_IMAGE)
#                       or for `axqc` on PATH
#   action.sh check     expand the models, run `axqc check` once for the gate (text report in the
#                       log, annotations of the findings that count, job summary) and once per
#                       report file; never fails itself: the outputs carry the exit code
#   action.sh verdict   fail the step with the check's exit code and say why (INPUT_FAIL=false:
#                       never)
#
# The inputs arrive as INPUT_* variables (action.yml maps each `inputs.X` into the step's env);
# the runner provides GITHUB_WORKSPACE, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY and RUNNER_TEMP.
# docs/ci.md, "The GitHub Action", documents inputs, outputs and exit codes.
set -euo pipefail

out() { printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"; }
die() { printf '::error title=axqc::%s\n' "$*"; exit 2; }
# words TEXT [SEPARATORS]: one word per line (split on whitespace and the extra separators).
words() {
  local -a w
  read -ra w <<<"$(printf '%s' "$1" | tr "\n\t${2:-}" ' ')" || true
  [ "${#w[@]}" = 0 ] || printf '%s\n' "${w[@]}"
}

# axqc on PATH, or in the CLI image with the workspace and the runner's temp folder mounted at
# the same paths (so every path means the same inside), as the runner's user, host network (a
# server on the runner's loopback stays reachable).
run_axqc() {
  if [ -n "${INPUT_IMAGE:-}" ]; then
    local ws=${GITHUB_WORKSPACE:-$PWD}
    docker run --rm --network host --user "$(id -u):$(id -g)" \
      -v "$ws:$ws" -v "${RUNNER_TEMP:-/tmp}:${RUNNER_TEMP:-/tmp}" -w "$PWD" \
      -e AXQC_TOKEN -e AXQC_SERVER "$INPUT_IMAGE" axqc "$@"
  else
    axqc "$@"
  fi
}

setup() {
  if [ -n "${INPUT_IMAGE:-}" ]; then
    command -v docker >/dev/null ||
      die "input image: docker is not available on this runner; use the image as the job's container: instead"
    run_axqc --version || die "cannot run axqc in the image $INPUT_IMAGE"
    return
  fi
  if [ -n "${INPUT_DEB:-}" ]; then
    local deb=$INPUT_DEB
    case "$deb" in
      http://* | https://*)
        local dst
        dst="${RUNNER_TEMP:-/tmp}/$(basename "${deb%%\?*}")"
        case "$dst" in *.deb) ;; *) dst="${RUNNER_TEMP:-/tmp}/axqc.deb" ;; esac
        curl -fsSL -o "$dst" "$deb" || die "cannot download $deb"
        deb=$dst ;;
      *)
        local m
        m=$(compgen -G "$deb" | head -1) || true
        { [ -n "$m" ] && [ -f "$m" ]; } || die "input deb: no file matches $deb"
        deb=$(cd "$(dirname "$m")" && pwd)/$(basename "$m") ;;
    esac
    local sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo -n)
    echo "axqc: apt-get install $deb"
    { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
      "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" >/dev/null; } ||
      die "apt-get install $deb failed (the package is built for Debian 12; on other runners use the CLI image)"
  fi
  command -v axqc >/dev/null ||
    die "axqc is not installed: run the job in the CLI image (container: registry.example.com/axqc-cli) or give the action deb: or image:"
  axqc --version
}

# Model paths: files as given, globs (globstar) and folders (every *.onnx below, sorted), in the
# order of the input, each once; then the excludes.
expand_models() {
  shopt -s globstar nullglob
  local p m e skip
  local -a found=() matches
  local -A seen=()
  while IFS= read -r p; do
    [ -n "$p" ] || continue
    if [[ $p == *[*?[]* ]]; then
      local IFS=
      # shellcheck disable=SC2206  # the glob is the point
      matches=($p)
      unset IFS
      [ "${#matches[@]}" -gt 0 ] || { echo "::warning title=axqc::no model matches $p"; continue; }
    elif [ -e "$p" ]; then
      matches=("$p")
    else
      die "no such model file or folder: $p"
    fi
    for m in "${matches[@]}"; do
      if [ -d "$m" ]; then
        while IFS= read -r f; do found+=("${f#./}"); done < <(find "$m" -type f -name '*.onnx' | LC_ALL=C sort)
      else
        found+=("${m#./}")
      fi
    done
  done < <(words "$INPUT_MODELS")
  MODELS=()
  for m in "${found[@]}"; do
    [ -z "${seen[$m]:-}" ] || continue
    seen[$m]=1
    skip=0
    while IFS= read -r e; do
      # shellcheck disable=SC2053  # the exclude is a glob
      if [ -n "$e" ] && [[ $m == $e ]]; then skip=1; fi
    done < <(words "${INPUT_EXCLUDE:-}")
    [ "$skip" = 1 ] || MODELS+=("$m")
  done
}

check() {
  local dir=${INPUT_OUTPUT_DIR:-axqc-reports} tmp=${RUNNER_TEMP:-/tmp} server=${INPUT_SERVER:-}
  local -a args=() later=() reports=()
  local v code=0
  out exit-code 2; out verdict error
  expand_models
  [ "${#MODELS[@]}" -gt 0 ] || die "no model matches: $INPUT_MODELS"
  out models "${#MODELS[@]}"

  # Remote when the input or the job's AXQC_SERVER names a server (and --local is not in args).
  if [ -z "$server" ] && [ -n "${AXQC_SERVER:-}" ] && [[ " ${INPUT_ARGS:-} " != *" --local "* ]]; then
    server=$AXQC_SERVER
  fi
  [ -z "${INPUT_TOKEN:-}" ] || export AXQC_TOKEN=$INPUT_TOKEN
  if [ -n "$server" ]; then
    args+=(--server "$server")
    # The report calls only look the models up: each model is one check in the server's history.
    later+=(--no-record)
    while IFS= read -r v; do [ -z "$v" ] || args+=(--label "$v"); done < <(words "${INPUT_LABELS:-}")
  elif [ -n "${INPUT_LABELS:-}" ]; then
    echo "::warning title=axqc::labels are for remote checks (input server); ignored"
  fi
  if [ -n "${INPUT_CA:-}" ]; then
    if [[ $INPUT_CA == *"-----BEGIN"* ]]; then
      printf '%s\n' "$INPUT_CA" >"$tmp/axqc-ca.pem"
      args+=(--ca "$tmp/axqc-ca.pem")
    else
      args+=(--ca "$INPUT_CA")
    fi
  fi
  [ "${INPUT_TLS:-false}" != true ] || args+=(--tls)
  [ -z "${INPUT_BASELINE:-}" ] || args+=(--baseline "$INPUT_BASELINE")
  [ -z "${INPUT_CONFIG:-}" ] || args+=(--config "$INPUT_CONFIG")
  while IFS= read -r v; do [ -z "$v" ] || args+=(--target "$v"); done < <(words "${INPUT_TARGET:-}" ,)
  [ -z "${INPUT_FAIL_ON:-}" ] || args+=(--fail-on "$(words "$INPUT_FAIL_ON" , | paste -sd, -)")
  # shellcheck disable=SC2206  # extra options are split on spaces
  [ -z "${INPUT_ARGS:-}" ] || args+=($INPUT_ARGS)

  local -a formats=()
  while IFS= read -r v; do [ -z "$v" ] || formats+=("$v"); done < <(words "${INPUT_FORMAT:-}" ,)
  if [ "${INPUT_UPLOAD_SARIF:-false}" = true ] && [[ " ${formats[*]} " != *" sarif "* ]]; then
    formats+=(sarif)
  fi
  for v in "${formats[@]}"; do
    case "$v" in sarif | junit | json | gitlab | text | html | github) ;;
      *) die "input format: unknown report format $v (sarif, junit, json, gitlab, text, html)" ;;
    esac
  done

  # The gate: text report in the log, annotations of what counts on stderr.
  echo "axqc check ${args[*]} (${#MODELS[@]} models)"
  run_axqc check "${args[@]}" --github-annotations "${MODELS[@]}" >"$tmp/axqc-report.txt" || code=$?
  cat "$tmp/axqc-report.txt"
  out exit-code "$code"
  case "$code" in
    0) v=pass ;; 1) v=fail ;; 3) v=not_applicable ;; 4) v=no_verdict ;; *) v=error ;;
  esac
  out verdict "$v"
  out server "$server"

  if [ "$code" = 4 ]; then
    echo "::error title=axqc::no verdict from axqc-server $server (unreachable, TLS, token or deadline; see above): the models were not judged and no report was written; re-run the job when the server answers"
  else
    mkdir -p "$dir"
    local f rc
    for v in "${formats[@]}"; do
      case "$v" in
        sarif) f=$dir/axqc.sarif; out sarif "$f" ;;
        junit) f=$dir/axqc-junit.xml; out junit "$f" ;;
        json) f=$dir/axqc.json ;;
        gitlab) f=$dir/gl-code-quality.json ;;
        text) f=$dir/axqc.txt ;;
        github) continue ;;
        html)
          local m
          mkdir -p "$dir/html"
          for m in "${MODELS[@]}"; do
            f=$dir/html/$(printf '%s' "${m%.onnx}" | tr '/' '_').html
            rc=0; run_axqc check "${args[@]}" "${later[@]}" --format html -o "$f" "$m" >/dev/null || rc=$?
            if [ "$rc" != 2 ] && [ "$rc" != 4 ]; then reports+=("$f"); fi
          done
          continue ;;
      esac
      rc=0; run_axqc check "${args[@]}" "${later[@]}" --format "$v" -o "$f" "${MODELS[@]}" || rc=$?
      [ "$rc" = "$code" ] || echo "::warning title=axqc::the $v report call exited $rc (the gate $code)"
      if [ -s "$f" ]; then reports+=("$f"); fi
    done
  fi
  out reports "${reports[*]}"

  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    {
      printf '### axqc: %s (exit %s)\n\n' "$(verdict_text "$code")" "$code"
      printf '%s models%s; reports: %s\n\n' "${#MODELS[@]}" "${server:+ checked on $server}" "${reports[*]:-none}"
      printf '<details><summary>Report</summary>\n\n```text\n'
      head -n 400 "$tmp/axqc-report.txt"
      printf '```\n</details>\n'
    } >>"$GITHUB_STEP_SUMMARY"
  fi
}

verdict_text() {
  case "$1" in
    0) echo "pass" ;;
    1) echo "fail: a finding that counts, or a model without Q/DQ (fail-on not_applicable)" ;;
    3) echo "not_applicable: models without Q/DQ (not quantized) passed; fail-on not_applicable fails them" ;;
    4) echo "no verdict: the server could not judge the models" ;;
    *) echo "usage or input error" ;;
  esac
}

verdict() {
  local code=${AXQC_EXIT_CODE:-} rc
  case "$code" in
    0) echo "axqc: pass"; rc=0 ;;
    3) echo "::notice title=axqc::$(verdict_text 3)"; rc=0 ;;
    1) echo "::error title=axqc::$(verdict_text 1); see the annotations and the report"; rc=1 ;;
    4) echo "::error title=axqc::no verdict from axqc-server ${AXQC_SERVER_USED:-}: it was unreachable or refused the request (see the step Check models); the models were not judged. Re-run the job when the server answers"; rc=4 ;;
    '') echo "::error title=axqc::the check did not run (see the steps above)"; rc=2 ;;
    *) echo "::error title=axqc::usage or input error (exit $code), see the step Check models"; rc=2 ;;
  esac
  if [ "${INPUT_FAIL:-true}" = false ]; then rc=0; fi
  exit "$rc"
}

case "${1:-}" in
  setup) setup ;;
  check) check ;;
  verdict) verdict ;;
  *) echo "usage: $0 setup|check|verdict" >&2; exit 2 ;;
esac
