# Sourced by the onnxruntime tests: makes onnxruntime-node available as $AXQC_ORT_NODE (its module
# directory), for scripts/ort_run.mjs.
#   1. $AXQC_ORT_NODE when it names a module that loads;
#   2. else the cache outside the repository, $AXQC_ORT_CACHE (default
#      ${XDG_CACHE_HOME:-$HOME/.cache}/axqc/onnxruntime-node-<version>), installing it there with
#      `npm install onnxruntime-node@<version> --ignore-scripts` (the CPU binding ships in the
#      package; --ignore-scripts skips the optional CUDA download) under a lock, once per machine.
# Exits 77 (ctest: skipped) only when node or npm is missing or npm's registry cannot be reached;
# a failed install with a reachable registry is a failure (exit 1).
# shellcheck shell=bash
AXQC_ORT_VERSION=${AXQC_ORT_VERSION:-1.30.0}

ort_loads() {  # ort_loads DIR: the module loads (native binding included)
  [ -n "$1" ] && [ -f "$1/package.json" ] &&
    node -e 'require(process.argv[1])' "$1" >/dev/null 2>&1
}

command -v node >/dev/null || { echo "SKIP: node is not installed (apt-get install nodejs npm)"; exit 77; }
if ! ort_loads "${AXQC_ORT_NODE:-}"; then
  ort_cache=${AXQC_ORT_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/axqc/onnxruntime-node-$AXQC_ORT_VERSION}
  ort_module=$ort_cache/node_modules/onnxruntime-node
  if ! ort_loads "$ort_module"; then
    command -v npm >/dev/null || { echo "SKIP: npm is not installed; onnxruntime-node cannot be installed"; exit 77; }
    command -v flock >/dev/null || { echo "SKIP: flock is not installed"; exit 77; }
    mkdir -p "$ort_cache"
    echo "installing onnxruntime-node@$AXQC_ORT_VERSION into $ort_cache"
    if ! (
      flock 9
      ort_loads "$ort_module" ||
        npm install --prefix "$ort_cache" --no-audit --no-fund --ignore-scripts \
          "onnxruntime-node@$AXQC_ORT_VERSION" >"$ort_cache/install.log" 2>&1
    ) 9>"$ort_cache/.lock"; then
      if ! timeout 60 npm ping >/dev/null 2>&1; then
        echo "SKIP: npm's registry ($(npm config get registry 2>/dev/null)) is unreachable; onnxruntime-node cannot be installed"
        exit 77
      fi
      echo "FAIL: npm install onnxruntime-node@$AXQC_ORT_VERSION failed:"
      tail -n 30 "$ort_cache/install.log"
      exit 1
    fi
    ort_loads "$ort_module" || { echo "FAIL: onnxruntime-node installed in $ort_cache does not load"; exit 1; }
  fi
  AXQC_ORT_NODE=$ort_module
fi
export AXQC_ORT_NODE
