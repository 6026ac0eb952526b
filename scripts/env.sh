# Sourced by the scripts: runs setup (idempotent) and exports the dependency locations.
# shellcheck shell=bash
AXQC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export AXQC_ROOT
setup_out=$("$AXQC_ROOT/scripts/setup")
AXQC_ONNX_PREFIX=$(printf '%s\n' "$setup_out" | sed -n 's/^AXQC_ONNX_PREFIX=//p')
AXQC_ONNX_SOURCE=$(printf '%s\n' "$setup_out" | sed -n 's/^AXQC_ONNX_SOURCE=//p')
AXQC_ONNX_VERSION=$(printf '%s\n' "$setup_out" | sed -n 's/^AXQC_ONNX_VERSION=//p')
AXQC_PROTOBUF_PIC=$(printf '%s\n' "$setup_out" | sed -n 's/^AXQC_PROTOBUF_PIC=//p')
export AXQC_ONNX_PREFIX AXQC_ONNX_SOURCE AXQC_ONNX_VERSION AXQC_PROTOBUF_PIC
export AXQC_ONNX_TEST_DATA=${AXQC_ONNX_TEST_DATA:-$AXQC_ONNX_SOURCE/onnx/backend/test/data}
export CCACHE_DIR=${CCACHE_DIR:-${AXQC_DEPS_DIR:-/opt/axqc-deps}/ccache}
# Clones in other folders (CI) share the cache: paths are hashed relative to the repository.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$AXQC_ROOT}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}

# axqc_build PRESET [CMAKE_ARGS...] [-- TARGETS...]: configure (the arguments before `--`) and
# build the preset (only TARGETS when given).
axqc_build() {
  local preset=$1 configure=() targets=()
  shift
  while (($#)) && [ "$1" != -- ]; do configure+=("$1"); shift; done
  if (($#)); then shift; targets=("$@"); fi
  cmake --preset "$preset" -DCMAKE_PREFIX_PATH="$AXQC_ONNX_PREFIX" "${configure[@]}" >/dev/null
  if ((${#targets[@]})); then
    cmake --build --preset "$preset" --target "${targets[@]}"
  else
    cmake --build --preset "$preset"
  fi
}
