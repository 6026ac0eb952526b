"""`import onnx` (Debian's python3-onnx, 1.12, which registers onnx/onnx-ml.proto in the shared
libprotobuf) before or after `import axqc` in one process. A module that registered its own copy
of ONNX's protos in the same descriptor pool would abort the process with "File already exists
in database". Each order runs in a fresh interpreter and uses both sides afterwards."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import axqc
from conftest import python_subprocess

import onnx  # noqa: E402,F401  Debian python3-onnx (scripts/setup): a missing one fails

USE_BOTH = r"""
import sys
broken, conformant = sys.argv[1], sys.argv[2]
from onnx import TensorProto, helper
# onnx's own C++ (checker, shape inference) and protobuf runtime after both imports, on a model
# onnx 1.12 knows (the examples are IR 10 / opset 21, newer than it)
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
small = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
small.ir_version = 8
onnx.checker.check_model(small, full_check=True)
out = onnx.shape_inference.infer_shapes(small).graph.output[0]
assert out.type.tensor_type.shape.dim[1].dim_value == 4
assert axqc.check(small).verdict == "not_applicable"
# axqc's checker, from a path, from bytes and from the ModelProto
m = onnx.load(broken)
assert axqc.check(broken).rules_violated == ["role/weight-type"]
assert axqc.check(m.SerializeToString()).errors[0].nodes == ("conv1_w_dq", "conv1")
assert axqc.check(m).errors[0].nodes == ("conv1_w_dq", "conv1")
assert axqc.check(onnx.load(conformant)).conformant
# onnx still parses what it serialized (its descriptor pool is intact)
assert onnx.load_from_string(m.SerializeToString()) == m
print("ok", onnx.__version__, axqc.__version__)
"""


@pytest.mark.parametrize("first,second", [("onnx", "axqc"), ("axqc", "onnx")])
def test_import_order(first, second, broken, conformant):
    code = f"import {first}\nimport {second}\n" + USE_BOTH
    p = python_subprocess(f"import sys; sys.argv[1:] = [{str(broken)!r}, {str(conformant)!r}]\n"
                          + code)
    assert p.returncode == 0, f"{first} then {second}: exit {p.returncode}\n{p.stderr}"
    assert p.stdout.startswith("ok 1."), p.stdout
    assert "File already exists in database" not in p.stderr


def test_google_protobuf_and_generated_stubs_coexist(broken):
    """The generated axqc.v1 messages live in Python's protobuf next to onnx's."""
    p = python_subprocess(
        "import axqc, onnx\n"
        "from axqc.v1 import axqc_pb2\n"
        "from google.protobuf import descriptor_pool\n"
        "pool = descriptor_pool.Default()\n"
        "assert pool.FindFileByName('axqc/v1/axqc.proto')\n"
        "assert pool.FindMessageTypeByName('onnx.ModelProto')\n"
        f"assert axqc.check(onnx.load({str(broken)!r})).errors\n")
    assert p.returncode == 0, p.stderr


def _native_path() -> str:
    return axqc._native.__file__


@pytest.mark.skipif(not shutil.which("readelf"), reason="readelf (binutils) missing")
def test_native_module_shares_no_protobuf():
    """The module depends on no shared protobuf or ONNX and exports its init function only."""
    dynamic = subprocess.run(["readelf", "-dW", _native_path()], capture_output=True, text=True,
                             check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    assert needed, dynamic
    assert not [n for n in needed if "protobuf" in n or "onnx" in n], needed
    symbols = subprocess.run(["readelf", "--dyn-syms", "-W", _native_path()], capture_output=True,
                             text=True, check=True).stdout
    defined = []
    undefined = []
    for line in symbols.splitlines():
        parts = line.split()
        if len(parts) < 8 or not parts[0].rstrip(":").isdigit():
            continue
        bind, ndx, name = parts[4], parts[6], parts[7]
        if bind not in ("GLOBAL", "WEAK"):
            continue
        (undefined if ndx == "UND" else defined).append(name)
    assert defined == ["PyInit__native"], defined
    leaked = [s for s in undefined if "protobuf" in s or "onnx" in s]
    assert not leaked, leaked
