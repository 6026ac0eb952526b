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


def test_apply_runs_an_opt_in_rewrite(tmp_path):
    """apply=[...] is `axqc fix --apply`: int4-weight-storage stores a 4-bit QAT weight held in an
    INT8 container as INT4, only when asked for."""
    onnx = pytest.importorskip("onnx")
    from qdq_models import int4_in_int8_conv

    path = tmp_path / "qat_int4.onnx"
    onnx.save(int4_in_int8_conv(onnx), str(path))
    by_id = {r.id: r for r in axqc.rewrites()}
    assert by_id["int4-weight-storage"].opt_in and not by_id["int4-weight-storage"].by_default
    assert not by_id["constant-to-initializer"].opt_in

    # Before: a conformant S8 weight whose values fit S4, and the finding that says so.
    before = axqc.check(path)
    assert before.conformant
    (fits,) = [f for f in before.findings if f.rule == "role/weight-fits-int4"]
    assert fits.severity is axqc.Severity.INFO and fits.node == "w_dq"
    assert "--apply int4-weight-storage" in fits.message
    # Not by default.
    default = axqc.fix(path)
    assert "int4-weight-storage" not in {r.id for r in default.rewrites}
    assert "role/weight-fits-int4" in {f.rule for f in default.after.findings}

    out = tmp_path / "fixed.onnx"
    result = axqc.fix(path, out, apply=["int4-weight-storage"])
    int4 = next(r for r in result.rewrites if r.id == "int4-weight-storage")
    assert int4.applied == 1 and int4.first == ("w_dq",) and int4.skipped == 0
    assert result.before.conformant and result.after.conformant
    assert "role/weight-fits-int4" in {f.rule for f in result.before.findings}
    assert [(f.rule, f.severity) for f in result.after.findings] == []
    fixed = onnx.load(str(out))
    weights = {t.name: t for t in fixed.graph.initializer}
    assert weights["w"].data_type == getattr(onnx.TensorProto, "INT4", 22)
    assert len(weights["w"].raw_data) == 8 * 4 * 3 * 3 // 2
    dq = next(n for n in fixed.graph.node if n.name == "w_dq")
    assert weights[dq.input[2]].data_type == getattr(onnx.TensorProto, "INT4", 22)
    # Same as the command line.
    cli = cli_fix("--dry-run", "--apply", "int4-weight-storage", str(path))
    assert {r["id"]: r["applied"] for r in cli["rewrites"] if r["applied"]} == result.changed
    assert cli["after"]["by_rule"] == result.after.counts.by_rule
    # In memory too, and with only: both sets run.
    mem = axqc.fix(path.read_bytes(), only=["value-info"], apply=["int4-weight-storage"])
    assert [r.id for r in mem.rewrites] == ["int4-weight-storage", "value-info"]
    assert mem.changed["int4-weight-storage"] == 1
    assert not any(f.rule == "role/weight-fits-int4" for f in mem.after.findings)


def test_apply_refusals(tmp_path, raw_export):
    with pytest.raises(axqc.FixRefusedError, match="opt-in"):
        axqc.fix(raw_export, apply=["constant-to-initializer"])
    with pytest.raises(axqc.FixRefusedError, match="--apply int4-weight-storage"):
        axqc.fix(raw_export, only=["int4-weight-storage"])
    with pytest.raises(TypeError):
        axqc.fix(raw_export, apply="int4-weight-storage")
