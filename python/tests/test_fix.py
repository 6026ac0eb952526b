"""axqc.fix: the rewrites of `axqc fix` in this process. Results must be those of the command line
of the same build (same rewrites, counts and first places; same before/after reports)."""

from __future__ import annotations

import json
import pathlib

import pytest

import axqc
from conftest import SOURCE_DIR, run_cli

REAL_EXPORTS = SOURCE_DIR / "tests" / "data" / "real_exports"


@pytest.fixture(scope="module")
def raw_export() -> pathlib.Path:
    """A raw torch.onnx.export of a fake-quant CNN with Python-number qparams (opset 13): 59
    errors, 56 of them exporter artifacts (28 Constant nodes, 26 scales from Constants, ...)."""
    path = REAL_EXPORTS / "manual_cnn_numbers_op13.onnx"
    if not path.is_file():
        pytest.fail(f"{path} missing")
    return path


def cli_fix(*args: str) -> dict:
    return json.loads(run_cli("fix", "--format", "json", *args).stdout)


def test_rewrites_are_those_of_the_command_line():
    listed = run_cli("fix", "--list").stdout
    ids = [r.id for r in axqc.rewrites()]
    assert ids[:3] == ["ir-version", "inline-functions", "constant-to-initializer"]
    assert "value-info" in ids and "requantize-identity" in ids
    for rewrite in axqc.rewrites():
        assert f"  {rewrite.id} " in listed
    by_id = {r.id: r for r in axqc.rewrites()}
    assert by_id["ir-version"].by_default is False
    assert by_id["constant-to-initializer"].by_default is True


def test_fix_a_raw_export_to_its_real_defects(raw_export, tmp_path):
    out = tmp_path / "fixed.onnx"
    result = axqc.fix(raw_export, out)
    assert result.written and not result.dry_run
    assert result.output == str(out) and out.is_file()
    assert result.data_file is None
    assert result.changed == {"constant-to-initializer": 28, "value-info": 38}
    assert result.applied == 66
    c2i = next(r for r in result.rewrites if r.id == "constant-to-initializer")
    assert c2i.first[:2] == ("/fq_in/Constant", "/fq_in/Constant_1")
    assert c2i.skipped == 0 and c2i.first_skips == ()
    # Before: the artifacts; after: exactly the model's real defects.
    assert result.before.error_count == 59
    assert "onnx/constant-node" in result.before.rules_violated
    assert "qdq/scale-not-initializer" in result.before.rules_violated
    assert result.after.verdict is axqc.Verdict.NON_CONFORMANT
    assert result.after.rules_violated == ["op/output-not-quantized", "op/relu-form"]
    assert result.after.error_count == 3
    assert sorted(f.node for f in result.after.errors if f.rule == "op/relu-form") == [
        "/Clip", "/Relu_1"]
    # The written file is the model the after-report describes.
    again = axqc.check(out)
    assert again.error_count == 3 and again.rules_violated == result.after.rules_violated
    # Same result as the command line.
    cli = cli_fix("--dry-run", str(raw_export))
    assert {r["id"]: r["applied"] for r in cli["rewrites"] if r["applied"]} == result.changed
    assert [(r["id"], r["first"]) for r in cli["rewrites"]] == [
        (r.id, list(r.first)) for r in result.rewrites]
    assert cli["after"]["by_rule"] == result.after.counts.by_rule
    assert cli["before"]["errors"] == result.before.error_count


def test_dry_run_writes_nothing(raw_export, tmp_path):
    out = tmp_path / "fixed.onnx"
    result = axqc.fix(raw_export, out, dry_run=True)
    assert result.dry_run and not result.written and result.output is None
    assert not out.exists()
    assert result.changed == {"constant-to-initializer": 28, "value-info": 38}
    assert result.after.error_count == 3
    # No output at all is a dry run too.
    assert axqc.fix(raw_export).dry_run


def test_only_selected_rewrites_and_check_value(raw_export):
    result = axqc.fix(raw_export, only=["constant-to-initializer"], check_value=True)
    assert [r.id for r in result.rewrites] == ["constant-to-initializer"]
    assert result.changed == {"constant-to-initializer": 28}
    assert result.before.check_value and result.after.check_value
    # Without value-info, -c still reports the missing value_info of the fixed model.
    assert "onnx/value-info-missing" in {f.rule for f in result.after.findings}
    cli = cli_fix("--dry-run", "-c", "--only", "constant-to-initializer", str(raw_export))
    assert cli["after"]["errors"] == result.after.error_count


def test_bytes_and_model_proto_inputs(raw_export, tmp_path):
    onnx = pytest.importorskip("onnx")
    data = raw_export.read_bytes()
    result = axqc.fix(data)
    assert result.input == "inline.onnx"
    assert result.model is not None and result.output is None and not result.written
    assert result.changed == {"constant-to-initializer": 28, "value-info": 38}
    fixed = axqc.check(result.model)
    assert fixed.rules_violated == ["op/output-not-quantized", "op/relu-form"]
    proto = result.to_onnx()
    assert not any(n.op_type == "Constant" for n in proto.graph.node)
    assert len(proto.graph.value_info) >= 38
    # A ModelProto in, a file out.
    out = tmp_path / "from_proto.onnx"
    from_proto = axqc.fix(onnx.load(str(raw_export)), out, name="raw.onnx")
    assert from_proto.input == "raw.onnx" and from_proto.written and out.is_file()
    assert out.read_bytes() == from_proto.model
    assert axqc.check(out).error_count == 3


def test_a_conformant_model_is_left_alone(conformant, tmp_path):
    result = axqc.fix(conformant, tmp_path / "same.onnx")
    assert result.before.conformant and result.after.conformant
    assert result.changed.keys() <= {"value-info"}


def test_refusals_and_input_errors(raw_export, tmp_path):
    with pytest.raises(axqc.FixRefusedError, match="no-such-rewrite"):
        axqc.fix(raw_export, only=["no-such-rewrite"])
    with pytest.raises(axqc.FixRefusedError) as refused:
        axqc.fix(raw_export, ir_version=3)
    assert isinstance(refused.value, ValueError)
    assert refused.value.before is None or refused.value.before.error_count == 59
    with pytest.raises(axqc.InputError):
        axqc.fix(b"not an onnx model")
    with pytest.raises(axqc.InputError):
        axqc.fix(tmp_path / "missing.onnx")
    with pytest.raises(TypeError):
        axqc.fix(raw_export, only="constant-to-initializer")
    with pytest.raises(OSError):
        axqc.fix(raw_export, tmp_path / "no" / "such" / "dir" / "out.onnx")
