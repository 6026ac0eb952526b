#!/usr/bin/env bash
# `pip install ./python` as docs/python.md documents it, offline (--no-index), from the staged
# package of this build (AXQC_PYTHON_STAGE, so that no second CMake build runs inside the test):
#   1. a plain venv (no system packages): local checks work; axqc.Client explains what it needs;
#      `pip uninstall` removes every file (the wheel's RECORD is right);
#   2. a venv with --system-site-packages: Debian's onnx (both import orders) and grpcio;
#   3. a prefix install with Debian's own pip and interpreter (the system-wide layout).
# Usage: pip_install_test.sh SITE_DIR   (ctest python_pip_install; env from python/CMakeLists.txt)
set -euo pipefail
SITE=$1
SRC=${AXQC_SOURCE_DIR:?}
EXAMPLES=${AXQC_EXAMPLES_DIR:?}
PY=/usr/bin/python3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
unset PYTHONPATH  # the installed package, not the build's staged one
export AXQC_PYTHON_STAGE=$SITE PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
say() { printf '[pip-test] %s\n' "$*"; }

smoke='
import sys, axqc
ex = sys.argv[1]
assert axqc.__file__.startswith(sys.argv[2]), axqc.__file__
r = axqc.check(ex + "/broken_weight_per_tensor.onnx")
assert r.rules_violated == ["role/weight-type"] and r.errors[0].node == "conv1_w_dq", r
assert axqc.check(open(ex + "/conformant_cnn.onnx", "rb").read()).conformant
from axqc.testing import assert_conformant
assert_conformant(ex + "/conformant_cnn.onnx")
print("smoke ok", axqc.__version__, axqc.RULE_SET_VERSION)
'

say "1. plain venv"
$PY -m venv "$T/plain"
(cd "$SRC" && "$T/plain/bin/pip" install ./python) > "$T/pip1.log" 2>&1 || { cat "$T/pip1.log"; exit 1; }
(cd "$T" && "$T/plain/bin/python" -c "$smoke" "$EXAMPLES" "$T/plain/")
(cd "$T" && "$T/plain/bin/python" - <<'PY'
import axqc
try:
    axqc.Client("127.0.0.1:1")
except ImportError as e:
    assert "python3-grpcio" in str(e), e
    print("client without grpcio:", str(e).split(". ")[0])
else:
    raise SystemExit("axqc.Client worked without grpcio in a plain venv?")
PY
)
files=$("$T/plain/bin/python" -c 'import axqc, os; print(os.path.dirname(axqc.__file__))')
ls "$files"/_native*.so "$files"/py.typed "$files"/_native.pyi "$files"/v1/axqc_pb2_grpc.py >/dev/null
"$T/plain/bin/pip" uninstall -y axqc > /dev/null
if [ -e "$files" ] && [ -n "$(find "$files" -type f ! -name '*.pyc')" ]; then
  say "FAIL: files left after pip uninstall:"; find "$files" -type f; exit 1
fi

say "2. venv with the system's packages (onnx, grpcio)"
$PY -m venv --system-site-packages "$T/sys"
(cd "$SRC" && "$T/sys/bin/pip" install ./python) > "$T/pip2.log" 2>&1 || { cat "$T/pip2.log"; exit 1; }
(cd "$T" && "$T/sys/bin/python" -c "$smoke" "$EXAMPLES" "$T/sys/")
for order in "import onnx, axqc" "import axqc, onnx"; do
  (cd "$T" && "$T/sys/bin/python" -c "$order
m = onnx.load('$EXAMPLES/broken_weight_per_tensor.onnx')
assert axqc.check(m).errors[0].node == 'conv1_w_dq'
onnx.checker.check_model(onnx.helper.make_model(onnx.helper.make_graph([], 'g', [], []),
                                                opset_imports=[onnx.helper.make_opsetid('', 17)]))
c = axqc.Client('127.0.0.1:1')
c.close()
print('$order: ok')")
done

say "3. prefix install with Debian's pip (system-wide layout)"
(cd "$SRC" && $PY -m pip install --break-system-packages --prefix "$T/prefix" ./python) \
  > "$T/pip3.log" 2>&1 || { cat "$T/pip3.log"; exit 1; }
pkg=$(find "$T/prefix" -type d -name axqc -path '*-packages/*' | head -1)
[ -n "$pkg" ] || { say "FAIL: no axqc package under $T/prefix"; find "$T/prefix"; exit 1; }
(cd "$T" && PYTHONPATH=$(dirname "$pkg") $PY -c "$smoke" "$EXAMPLES" "$pkg")
say "all passed"
