#!/usr/bin/env bash
# The sandboxed worker (axqc-worker) runs untrusted models: it links the checker, the report's
# messages (protobuf) and the wire library (proto/wire/), never gRPC (issue #41). Fails when
#   * its link line in the build tree (build.ninja, or link.txt of the Makefile generators) names a
#     gRPC library or a library of server/ (the linker may drop an unused shared library from the
#     binary, so the binary alone does not show what the build links);
#   * the binary needs a gRPC shared library (readelf -d) or carries gRPC code (nm).
# Usage: worker_links_no_grpc_test.sh WORKER_BINARY BUILD_DIR
set -euo pipefail
worker=$1
build=$2
[[ -x $worker ]] || { echo "FAIL: no worker binary at $worker" >&2; exit 1; }
grpc_libs='lib(grpc|grpc\+\+|grpc\+\+_reflection|gpr|address_sorting|upb)[._]|gRPC::|libaxqc_(service_common|server_lib|grpc_proto)\.a'

# The link line.
link=""
if [[ -f $build/build.ninja ]]; then
  # The worker's link statement: from its `build ...axqc-worker: ..._LINKER...` line to the blank
  # line after its variables (LINK_LIBRARIES).
  link=$(awk '/^build [^ ]*axqc-worker: [A-Z_]*LINKER/ {found = 1}
              found {print}
              found && /^$/ {exit}' "$build/build.ninja")
elif [[ -f $build/isolate/CMakeFiles/axqc-worker.dir/link.txt ]]; then
  link=$(cat "$build/isolate/CMakeFiles/axqc-worker.dir/link.txt")
fi
if [[ -z $link ]]; then
  echo "FAIL: the worker's link line is not in $build (build.ninja or link.txt)" >&2
  exit 1
fi
if bad=$(tr ' ' '\n' <<<"$link" | grep -E "$grpc_libs" | sort -u) && [[ -n $bad ]]; then
  echo "FAIL: the worker's link line names gRPC or server libraries:" >&2
  echo "$bad" >&2
  exit 1
fi

# The binary.
needed=$(readelf -d "$worker" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
if [[ -z $needed ]]; then
  echo "FAIL: readelf found no NEEDED entries in $worker" >&2
  exit 1
fi
if bad=$(grep -E "$grpc_libs" <<<"$needed") && [[ -n $bad ]]; then
  echo "FAIL: $worker needs gRPC libraries:" >&2
  echo "$bad" >&2
  exit 1
fi
if bad=$(nm -C --defined-only "$worker" 2>/dev/null | grep -E ' (grpc_init|grpc::)' | head -5) &&
  [[ -n $bad ]]; then
  echo "FAIL: $worker contains gRPC code:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "ok: axqc-worker links no gRPC. Its link libraries:"
tr ' ' '\n' <<<"$link" | grep -E '\.(a|so)(\.[0-9.]+)?$|^-l' | sort -u | sed 's/^/  /' || true
echo "It needs:"
echo "$needed" | sed 's/^/  /'
