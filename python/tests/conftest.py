"""Fixtures of the Python package tests (ctest `python`; environment set by python/CMakeLists.txt).

AXQC_EXAMPLES_DIR  the example models of the build (conformant_cnn.onnx, broken_*.onnx, ...)
AXQC_CLI           the axqc command line of the same build (reports must be identical)
AXQC_SERVER_BIN    axqc-server (remote tests; skipped when the build has no server)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

EXAMPLES = Path(os.environ.get("AXQC_EXAMPLES_DIR", ""))
CLI = os.environ.get("AXQC_CLI", "")
SERVER_BIN = os.environ.get("AXQC_SERVER_BIN", "")
SOURCE_DIR = Path(os.environ.get("AXQC_SOURCE_DIR", Path(__file__).resolve().parents[2]))


def example(name: str) -> Path:
    path = EXAMPLES / name
    if not path.is_file():
        pytest.fail(f"example model {path} missing (AXQC_EXAMPLES_DIR; build axqc_examples)")
    return path


@pytest.fixture(scope="session")
def conformant() -> Path:
    return example("conformant_cnn.onnx")


@pytest.fixture(scope="session")
def broken() -> Path:
    """conv1's weight is quantized per-tensor: role/weight-type at conv1."""
    return example("broken_weight_per_tensor.onnx")


@pytest.fixture(scope="session")
def missing_qdq() -> Path:
    return example("broken_missing_qdq.onnx")


@pytest.fixture(scope="session")
def float_only() -> Path:
    return example("float_only.onnx")


def run_cli(*args: str, check_codes=(0, 1, 3)) -> subprocess.CompletedProcess:
    if not CLI:
        pytest.skip("AXQC_CLI not set")
    p = subprocess.run([CLI, *args], capture_output=True, text=True)
    assert p.returncode in check_codes, p.stderr
    return p


class Server:
    """An axqc-server of this build on a free port, with its own store."""

    def __init__(self, workdir: Path, *extra: str) -> None:
        if not SERVER_BIN:
            pytest.skip("built without axqc-server (AXQC_BUILD_SERVER=OFF)")
        self.dir = Path(tempfile.mkdtemp(prefix="axqc-srv-", dir=workdir))
        ready = self.dir / "ready.json"
        self.log = open(self.dir / "server.log", "w")
        self.proc = subprocess.Popen(
            [SERVER_BIN, "--listen", "127.0.0.1:0", "--metrics-listen", "",
             "--ready-file", str(ready), "--store-path", str(self.dir / "store.sqlite3"),
             "--allowed-root", str(EXAMPLES), "--workers", "2",
             "--shutdown-delay-seconds", "0", "--grace-period-seconds", "5", *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not ready.exists() or not ready.read_text().strip().endswith("}"):
            if self.proc.poll() is not None:
                raise RuntimeError(f"axqc-server exited {self.proc.returncode}: "
                                   f"{(self.dir / 'server.log').read_text()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("axqc-server did not become ready")
            time.sleep(0.05)
        self.port = json.loads(ready.read_text())["grpc_port"]
        self.target = f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def workdir():
    d = Path(tempfile.mkdtemp(prefix="axqc-pytest-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def server(workdir):
    s = Server(workdir)
    yield s
    s.stop()


def python_subprocess(code: str, env_extra=None) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter (this one) with this environment."""
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300)
