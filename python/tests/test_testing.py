"""axqc.testing: the pytest helpers and what a failure looks like in a real pytest run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from axqc.testing import assert_conformant, assert_violates


def test_assert_conformant_passes_and_returns_the_report(conformant):
    r = assert_conformant(conformant)
    assert r.conformant
    assert assert_conformant(r) is r  # an existing report is not checked again


def test_assert_conformant_message(broken):
    with pytest.raises(AssertionError) as e:
        assert_conformant(broken)
    msg = str(e.value)
    first, rest = msg.split("\n", 1)
    assert first == f"{broken} is NON_CONFORMANT: 1 error finding (role/weight-type)"
    assert rest.strip().startswith(f"{broken}: NON_CONFORMANT")  # the text report follows
    assert "error role/weight-type [4]" in msg and "(node conv1_w_dq)" in msg and "fix:" in msg


def test_not_applicable_and_warnings(float_only, conformant):
    with pytest.raises(AssertionError, match="is NOT_APPLICABLE: no Q/DQ edge"):
        assert_conformant(float_only)
    assert assert_conformant(float_only, allow_not_applicable=True).verdict == "not_applicable"
    # The conformant example has no warning, so allow_warnings=False passes too.
    assert assert_conformant(conformant, allow_warnings=False).warning_count == 0


def test_assert_violates(broken, conformant):
    r = assert_violates(broken, "role/weight-type", node="conv1")
    assert r.rules_violated == ["role/weight-type"]
    with pytest.raises(AssertionError, match="expected error findings of role/weight-type at "
                                             "node conv2, got role/weight-type"):
        assert_violates(broken, "role/weight-type", node="conv2")
    with pytest.raises(AssertionError, match=r"got none \(conformant\)"):
        assert_violates(conformant, ["role/weight-type"])


def test_failure_output_in_a_pytest_run(tmp_path, broken):
    """A user's test that fails: pytest shows the user's line and the report, not the helper."""
    test = tmp_path / "test_user_model.py"
    test.write_text(textwrap.dedent(f"""
        from axqc.testing import assert_conformant

        def test_exported_model():
            assert_conformant({str(broken)!r})
    """))
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(test)], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    out = p.stdout
    assert "assert_conformant(" in out  # the user's line
    assert f"AssertionError: {broken} is NON_CONFORMANT: 1 error finding (role/weight-type)" in out
    assert "error role/weight-type [4]" in out and "(node conv1_w_dq)" in out
    assert "__tracebackhide__" not in out and "axqc/testing.py" not in out
