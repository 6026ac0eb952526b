"""PEP 517 build backend of the axqc Python package (in-tree, standard library only).

`pip install ./python` calls build_wheel, which
  1. builds the CMake target axqc_python of this repository (the native module axqc._native, the
     Python sources and the gRPC code generated from proto/) in a build directory, unless a
     staged package is given;
  2. packs the staged package (<build>/python/site/axqc) into a wheel for this interpreter.

Settings (environment variable, or pip's --config-settings KEY=VALUE):
  AXQC_PYTHON_BUILD_DIR  / build-dir  CMake build directory (default: <repo>/build/python; an
                                      existing preset tree such as build/release works too)
  AXQC_PYTHON_STAGE      / stage      a staged site directory of an earlier build (containing
                                      axqc/_native*.so): pack it, build nothing
  AXQC_ONNX_PREFIX                    the ONNX prefix of scripts/setup (default: run
                                      scripts/setup, which prints it; as scripts/env.sh does)
  CMAKE_BUILD_PARALLEL_LEVEL          parallel compile jobs
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NAME = "axqc"
SUMMARY = ("Conformance checker for quantized ONNX QDQ models against the ax quant spec "
           "(Axera NPUs)")


def _log(msg: str) -> None:
    print(f"[axqc build] {msg}", file=sys.stderr, flush=True)


def _setting(config_settings, key: str, env: str):
    if config_settings and config_settings.get(key):
        return config_settings[key]
    return os.environ.get(env) or None


def get_requires_for_build_wheel(config_settings=None):
    return []


def _onnx_prefix() -> str:
    prefix = os.environ.get("AXQC_ONNX_PREFIX")
    if prefix:
        return prefix
    setup = ROOT / "scripts" / "setup"
    _log(f"AXQC_ONNX_PREFIX is not set: running {setup}")
    out = subprocess.run([str(setup)], check=True, stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r"^AXQC_ONNX_PREFIX=(.+)$", out, re.M)
    if not m:
        raise RuntimeError(f"{setup} did not print AXQC_ONNX_PREFIX")
    return m.group(1).strip()


def _build(build_dir: Path) -> Path:
    if not (ROOT / "CMakeLists.txt").is_file():
        raise RuntimeError(f"{ROOT} is not the axqc source tree (python/ must stay inside it)")
    env = dict(os.environ)
    # The shared compiler cache of scripts/env.sh, when it exists.
    deps = Path(env.get("AXQC_DEPS_DIR", "/opt/axqc-deps"))
    if "CCACHE_DIR" not in env and os.access(deps / "ccache", os.W_OK):
        env["CCACHE_DIR"] = str(deps / "ccache")
    env.setdefault("CCACHE_BASEDIR", str(ROOT))
    env.setdefault("CCACHE_NOHASHDIR", "1")
    env["AXQC_ONNX_PREFIX"] = _onnx_prefix()
    configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir),
                 f"-DCMAKE_PREFIX_PATH={env['AXQC_ONNX_PREFIX']}",
                 f"-DPython_EXECUTABLE={sys.executable}", "-DAXQC_BUILD_PYTHON=ON"]
    if not (build_dir / "CMakeCache.txt").exists():
        # A tree of its own: only what the package needs, with the release preset's build type
        # (the debug information is stripped from the wheel). A compiler warning must not fail
        # an installation: no -Werror here (the project's own builds keep it).
        configure += ["-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DAXQC_WERROR=OFF",
                      "-DAXQC_BUILD_TESTS=OFF", "-DAXQC_BUILD_SERVER=OFF",
                      "-DAXQC_BUILD_BENCH=OFF"]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
    _log(" ".join(configure))
    subprocess.run(configure, check=True, env=env, stdout=sys.stderr)
    build = ["cmake", "--build", str(build_dir), "--target", "axqc_python"]
    _log(" ".join(build))
    subprocess.run(build, check=True, env=env, stdout=sys.stderr)
    return build_dir / "python" / "site"


def _staged(config_settings) -> Path:
    stage = _setting(config_settings, "stage", "AXQC_PYTHON_STAGE")
    if stage:
        site = Path(stage).resolve()
    else:
        build_dir = _setting(config_settings, "build-dir", "AXQC_PYTHON_BUILD_DIR")
        site = _build(Path(build_dir).resolve() if build_dir else ROOT / "build" / "python")
    pkg = site / NAME
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    natives = sorted(pkg.glob("_native*.so"))
    if not natives:
        raise RuntimeError(f"{pkg} has no native module _native*.so: build the target axqc_python")
    if not any(n.name == f"_native{suffix}" for n in natives):
        raise RuntimeError(f"{pkg} has {', '.join(n.name for n in natives)}, built for another "
                           f"Python than this one ({sys.executable}, _native{suffix})")
    return pkg


def _version(pkg: Path) -> str:
    m = re.search(r'^__version__ = "([^"]+)"', (pkg / "_version.py").read_text(), re.M)
    if not m:
        raise RuntimeError(f"no __version__ in {pkg / '_version.py'}")
    return m.group(1)


def _tag() -> str:
    impl = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{impl}-{impl}-{plat}"


def _metadata(version: str) -> str:
    return "\n".join([
        "Metadata-Version: 2.1",
        f"Name: {NAME}",
        f"Version: {version}",
        f"Summary: {SUMMARY}",
        "Requires-Python: >=3.9",
        "Provides-Extra: remote",
        'Requires-Dist: grpcio>=1.51; extra == "remote"',
        'Requires-Dist: protobuf>=3.20; extra == "remote"',
        "",
        "axqc checks quantized ONNX models in QDQ form against the ax quant spec: "
        "axqc.check(model) -> Report; axqc.Client for axqc-server. See docs/python.md.",
        "",
    ])


def _stripped(path: Path) -> bytes:
    """The shared object without debug information (a RelWithDebInfo tree has ~30 MB of it)."""
    strip = shutil.which("strip")
    if not strip:
        return path.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / path.name
        done = subprocess.run([strip, "--strip-debug", "-o", str(out), str(path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return out.read_bytes() if done.returncode == 0 else path.read_bytes()


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    pkg = _staged(config_settings)
    version = _version(pkg)
    tag = _tag()
    dist_info = f"{NAME}-{version}.dist-info"
    wheel_name = f"{NAME}-{version}-{tag}.whl"
    files = []
    for path in sorted(pkg.rglob("*")):
        if path.is_dir() or "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        data = _stripped(path) if path.suffix == ".so" else path.read_bytes()
        files.append((f"{NAME}/{path.relative_to(pkg).as_posix()}", data,
                      0o755 if os.access(path, os.X_OK) else 0o644))
    files.append((f"{dist_info}/METADATA", _metadata(version).encode(), 0o644))
    files.append((f"{dist_info}/WHEEL", (
        "Wheel-Version: 1.0\nGenerator: axqc_build_backend\nRoot-Is-Purelib: false\n"
        f"Tag: {tag}\n").encode(), 0o644))
    files.append((f"{dist_info}/top_level.txt", f"{NAME}\n".encode(), 0o644))
    record = [_record_line(name, data) for name, data, _ in files]
    record.append(f"{dist_info}/RECORD,,")
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode(), 0o644))

    out = Path(wheel_directory) / wheel_name
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data, mode in files:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    out.write_bytes(buf.getvalue())
    _log(f"built {out}")
    return wheel_name
