"""The GIL is released while a check runs: checks from several Python threads run at once.

The proof does not time anything. A test hook of the native module makes every check wait,
inside the checker with the GIL released, until N checks are inside at the same time (or a
timeout passes) and counts the checks that saw all N. With the GIL held during a check, the
first thread would wait alone until its timeout and the count would stay 0."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import axqc
from axqc import _native

N = 4


@pytest.fixture
def rendezvous():
    _native._debug_set_rendezvous(N, 60.0)
    yield
    _native._debug_set_rendezvous(0, 0.0)


def test_checks_from_threads_overlap(rendezvous, broken, conformant):
    data = broken.read_bytes()
    inputs = [broken, data, conformant, data]  # paths and bytes: both entry points
    with ThreadPoolExecutor(max_workers=N) as pool:
        reports = list(pool.map(axqc.check, inputs))
    assert _native._debug_rendezvous_met() == N
    assert [r.verdict.value for r in reports] == [
        "non_conformant", "non_conformant", "conformant", "non_conformant"]
    assert all(r.errors[0].node == "conv1_w_dq" for r in reports if not r.conformant)


def test_python_runs_while_a_check_waits(broken):
    """One check parked inside the checker (rendezvous of 2, the second never comes until the
    main thread, which must still run Python, starts it)."""
    _native._debug_set_rendezvous(2, 60.0)
    try:
        started = threading.Event()
        result = {}

        def first():
            started.set()
            result["r"] = axqc.check(broken)

        t = threading.Thread(target=first)
        t.start()
        started.wait()
        # This thread runs Python code and enters a second check while the first is inside.
        second = axqc.check(broken.read_bytes())
        t.join()
        assert _native._debug_rendezvous_met() == 2
        assert result["r"].rules_violated == second.rules_violated == ["role/weight-type"]
    finally:
        _native._debug_set_rendezvous(0, 0.0)


def test_concurrent_results_equal_sequential(broken, conformant, missing_qdq, float_only):
    models = [broken, conformant, missing_qdq, float_only] * 4
    expected = [axqc.check(m).to_json() for m in models]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda m: axqc.check(m).to_json(), models))
    assert got == expected
