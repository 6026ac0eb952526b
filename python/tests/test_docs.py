"""Every ```python block of docs/python.md (and of README.md) runs, in order, in one namespace
per document, in a directory with the files the examples name (model.onnx: the conformant
example, broken.onnx: a non-conformant one, raw_export.onnx: a raw torch export of
tests/data/real_exports, qat_int4.onnx: 4-bit weights in an INT8 container, models/*.onnx),
against a real axqc-server: the documented address 127.0.0.1:50051 is rewritten to the test
server's. Blocks defining test_* functions have them called."""

from __future__ import annotations

import re
import shutil

import pytest

from conftest import SOURCE_DIR

DOCS = ["docs/python.md", "README.md"]


def python_blocks(text: str):
    return [m.group(1) for m in re.finditer(r"^```python\n(.*?)^```$", text, re.S | re.M)]


@pytest.mark.parametrize("doc", DOCS)
def test_docs_python_examples(doc, tmp_path, server, conformant, broken, float_only, monkeypatch):
    blocks = python_blocks((SOURCE_DIR / doc).read_text(encoding="utf-8"))
    assert len(blocks) >= (5 if doc == "docs/python.md" else 1), f"{doc} lost its examples"
    shutil.copy(conformant, tmp_path / "model.onnx")
    shutil.copy(broken, tmp_path / "broken.onnx")
    shutil.copy(SOURCE_DIR / "tests/data/real_exports/manual_cnn_numbers_op13.onnx",
                tmp_path / "raw_export.onnx")
    onnx = pytest.importorskip("onnx")
    from qdq_models import int4_in_int8_conv

    onnx.save(int4_in_int8_conv(onnx), str(tmp_path / "qat_int4.onnx"))
    (tmp_path / "models").mkdir()
    shutil.copy(conformant, tmp_path / "models" / "a.onnx")
    shutil.copy(broken, tmp_path / "models" / "b.onnx")
    shutil.copy(float_only, tmp_path / "models" / "c.onnx")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AXQC_TOKEN", raising=False)
    namespace = {"__name__": "docs_python_md"}
    for i, block in enumerate(blocks, 1):
        code = block.replace("127.0.0.1:50051", server.target)
        before = set(namespace)
        try:
            exec(compile(code, f"{doc} block {i}", "exec"), namespace)
            for name in sorted(set(namespace) - before):
                if name.startswith("test_") and callable(namespace[name]):
                    namespace[name]()
        except Exception as e:
            raise AssertionError(f"{doc} block {i} failed: {e!r}\n{block}") from e
