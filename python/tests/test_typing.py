"""The type information a user's type checker sees: the annotations of the package, the .pyi stub
of the native module against the module itself (mypy.stubtest), and a user's code checked with
mypy, whose mistakes must be caught (so the types are real, not Any)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import axqc

pytest.importorskip("mypy")  # python3-mypy (scripts/setup)

SITE = os.path.dirname(os.path.dirname(axqc.__file__))
CONFIG = """\
[mypy]
ignore_missing_imports = True
# protoc's generated stubs of the axqc.v1 messages are not ours to fix
[mypy-axqc.v1.*]
ignore_errors = True
"""


def mypy(tmp_path, *args):
    cfg = tmp_path / "mypy.ini"
    cfg.write_text(CONFIG)
    return subprocess.run([sys.executable, "-m", *args, "--config-file", str(cfg)]
                          if args[0] == "mypy" else
                          [sys.executable, "-m", *args, "--mypy-config-file", str(cfg)],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "MYPYPATH": SITE,
                               "MYPY_CACHE_DIR": str(tmp_path / "cache")})


def test_package_annotations_are_consistent(tmp_path):
    p = mypy(tmp_path, "mypy", "-p", "axqc")
    assert p.returncode == 0, p.stdout + p.stderr


def test_native_stub_matches_the_module(tmp_path):
    allow = tmp_path / "allow.txt"
    # pybind11 classes have their own metaclass and a generic __init__; nothing else may differ.
    allow.write_text("axqc._native.NativeReport\naxqc._native.NativeReport.__init__\n")
    p = mypy(tmp_path, "mypy.stubtest", "axqc._native", "--allowlist", str(allow))
    assert p.returncode == 0, p.stdout + p.stderr


def test_user_code_is_type_checked(tmp_path):
    user = tmp_path / "user.py"
    user.write_text(textwrap.dedent("""\
        import pathlib
        import axqc
        from axqc.testing import assert_conformant

        r: axqc.Report = axqc.check(pathlib.Path("m.onnx"), check_value=True, max_locations=3)
        ok: bool = r.conformant
        v: axqc.Verdict = r.verdict
        nodes: tuple[str, ...] = r.errors[0].nodes
        first: str | None = r.findings[0].node
        text: str = r.to_sarif() + r.to_junit() + r.summary()
        rules: list[axqc.Rule] = axqc.rules()
        assert_conformant(b"...", allow_not_applicable=True)
        c = axqc.Client("h:1", token="t", tls=True)
        got: axqc.Report | None = c.get_report("00")
        s: axqc.Stats = c.stats(since="7d", group_by="project")
        rate: float | None = s.total.pass_rate
        # mistakes mypy must report:
        bad1: int = r.verdict
        bad2 = axqc.check(42)
        bad3 = axqc.check("m.onnx", max_locations="5")
        bad4: str = r.errors[0].values
        bad5 = c.check("m.onnx", labels=["project"])
    """))
    p = mypy(tmp_path, "mypy", str(user))
    flagged = sorted({int(line.split(":")[1]) for line in p.stdout.splitlines()
                      if line.startswith("user.py:") and ": error:" in line})
    assert flagged == [18, 19, 20, 21, 22], p.stdout
