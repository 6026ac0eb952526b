"""axqc.check and the Report: inputs, verdicts, findings, errors, and the renderings, which must be
exactly those of the axqc command line of the same build."""

from __future__ import annotations

import json
import pathlib
import pickle

import pytest

import axqc
from conftest import run_cli


def cli_report(model, *args):
    """The report object of one model in ``axqc check --format json`` (schema axqc.report/v2)."""
    doc = json.loads(run_cli("check", "--format", "json", *args, str(model)).stdout)
    assert doc["schema"] == "axqc.report/v2"
    [report] = doc["reports"]
    return report


def json_document(report):
    """``axqc check --format json`` of one model: the report's to_json() as the one entry of
    ``reports``, indented by four spaces."""
    entry = "\n".join("    " + line for line in report.to_json().rstrip("\n").split("\n"))
    return '{\n  "schema": "axqc.report/v2",\n  "reports": [\n' + entry + "\n  ]\n}\n"


def test_version_and_rule_set_match_the_command_line():
    out = run_cli("rules", "--format", "json").stdout
    doc = json.loads(out)
    assert axqc.RULE_SET_VERSION == doc["rule_set_version"]
    version = run_cli("--version").stdout
    assert axqc.__version__ in version
    assert axqc.ONNX_VERSION.count(".") == 2


def test_rules_are_the_catalog():
    doc = json.loads(run_cli("rules", "--format", "json").stdout)
    rules = axqc.rules()
    assert [r.id for r in rules] == [r["id"] for r in doc["rules"]]
    by_id = {r.id: r for r in rules}
    weight = by_id["role/weight-type"]
    cli = next(r for r in doc["rules"] if r["id"] == "role/weight-type")
    assert weight.severity is axqc.Severity.ERROR
    assert (weight.section, weight.summary, weight.fix, weight.check_value) == (
        cli["section"], cli["summary"], cli["fix"], cli["check_value"])
    assert any(r.check_value for r in rules)  # the [cv] rules are in the catalog too


def test_conformant_model(conformant):
    r = axqc.check(conformant)
    assert r.verdict is axqc.Verdict.CONFORMANT
    assert r.verdict == "conformant"
    assert r.conformant
    assert r.errors == []
    assert r.error_count == 0
    assert r.file == str(conformant)
    assert r.model.node_count > 0 and r.model.q_count > 0 and r.model.dq_count > 0
    assert r.model.opsets[0] == axqc.Opset("", 21)
    assert repr(r) == f"<axqc.Report {conformant}: CONFORMANT  (0 errors, 0 warnings, 0 info)>"
    assert r.rule_set_version == axqc.RULE_SET_VERSION
    assert r.tool_version == axqc.__version__
    assert not r.check_value
    assert any(u.kind == "op" and u.op_type == "Conv" and "conv1" in u.nodes for u in r.units)


def test_non_conformant_finding_fields(broken):
    r = axqc.check(broken)
    assert r.verdict is axqc.Verdict.NON_CONFORMANT
    assert not r.conformant
    assert r.rules_violated == ["role/weight-type"]
    [f] = r.errors
    assert f.rule == "role/weight-type"
    assert f.severity is axqc.Severity.ERROR
    assert f.section == "4"
    assert f.section == next(x.section for x in axqc.rules() if x.id == "role/weight-type")
    # the weight's DequantizeLinear first, then the Conv it feeds
    assert f.node == "conv1_w_dq"
    assert f.nodes == ("conv1_w_dq", "conv1")
    assert f.op_type == "Conv"
    assert f.tensors == ("conv1_w_dq_out",)
    assert f.values == (axqc.Value("granularity", "per-tensor"),)
    assert dict(f.values) == {"granularity": "per-tensor"}
    assert f.message == ("weight 'conv1_w_dq_out' of Conv 'conv1' is quantized per-tensor; "
                         "weights must be per-channel along axis 0")
    assert f.group == "Conv weight quantized per-tensor"
    # the name-free fingerprint of the JSON report, which baselines and waivers match
    [jf] = cli_report(broken)["findings"]
    assert len(f.fingerprint) == 16 and set(f.fingerprint) <= set("0123456789abcdef")
    assert f.fingerprint == jf["fingerprint"]
    assert r.counts.errors == 1 and r.counts.by_rule["role/weight-type"] == 1
    assert r.counts.errors_by_op == {"Conv": 1}
    [g] = [g for g in r.groups if g.severity is axqc.Severity.ERROR]
    assert (g.rule, g.count, g.first) == ("role/weight-type", 1, (f,))
    assert repr(r) == (f"<axqc.Report {broken}: NON_CONFORMANT  "
                       "(1 cause; 1 error, 0 warnings, 0 info)>")
    assert str(f) == f"error role/weight-type [4]: {f.message} (node conv1_w_dq)"


def test_root_causes_ids_and_hints(broken):
    # One defect: one root cause, no hint (a real defect, not a producer artifact).
    r = axqc.check(broken)
    [f] = r.findings
    assert f.id == f.fingerprint + ":1"
    assert f.cause is None and f.is_root and f.hint is None
    assert r.counts.causes == 1
    assert r.root_causes == [f]
    assert r.consequences(f) == []
    # A raw PyTorch export with qparams given as Python numbers: each scale is a Constant node,
    # the root cause, with a hint naming the `axqc fix` rewrite; the scale-not-initializer
    # findings at the Q/DQ nodes reading it are its consequences. The JSON of the command line
    # carries the same ids and links.
    path = (pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "real_exports"
            / "manual_cnn_numbers_op17.onnx")
    r = axqc.check(path, check_value=True)
    root = next(x for x in r.findings if x.node == "/fq_in/Constant_1")
    assert root.rule == "onnx/constant-node"
    assert root.is_root
    assert isinstance(root.hint, axqc.Hint)
    assert root.hint.id == "qparams-as-numbers"
    assert root.hint.rewrite == "constant-to-initializer"
    assert root.hint.title and "Python number" in root.hint.text
    caused = r.consequences(root)
    assert {x.rule for x in caused} == {"qdq/scale-not-initializer", "onnx/value-info-missing"}
    assert any(x.node == "/fq_in/QuantizeLinear" for x in caused)
    assert all(x.cause == root.id and x.hint is None for x in caused)
    # 58 errors without -c (123 with): qparams as numbers, relu6 as Relu -> Clip, no value_info
    assert r.counts.causes == 3
    assert {x.hint.id for x in r.root_causes if x.hint} == {
        "qparams-as-numbers", "relu6-as-relu-clip", "value-info-missing"}
    doc = cli_report(path, "-c")
    assert [(x["id"], x["cause"]) for x in doc["findings"]] == [(x.id, x.cause) for x in r.findings]
    assert doc["summary"]["causes"] == 3
    assert "3 causes; 123 errors" in repr(r)


def test_not_applicable(float_only):
    r = axqc.check(float_only)
    assert r.verdict is axqc.Verdict.NOT_APPLICABLE
    assert not r.conformant
    assert [(f.rule, f.severity) for f in r.findings] == [
        ("scope/no-quantized-edge", axqc.Severity.INFO)]
    assert r.errors == [] and [f.rule for f in r.infos] == ["scope/no-quantized-edge"]
    # not_applicable is no error: raise_on_error does not raise
    assert axqc.check(float_only, raise_on_error=True).verdict is axqc.Verdict.NOT_APPLICABLE


def test_path_pathlike_bytes_and_buffers_give_the_same_report(broken):
    by_path = axqc.check(str(broken))
    by_pathlike = axqc.check(pathlib.Path(broken))
    data = broken.read_bytes()
    by_bytes = axqc.check(data)
    assert by_bytes.file == "inline.onnx"
    named = axqc.check(data, name="broken.onnx")
    assert named.file == "broken.onnx"
    assert axqc.check(bytearray(data)).to_json() == by_bytes.to_json()
    assert axqc.check(memoryview(data)).to_json() == by_bytes.to_json()
    assert by_pathlike.to_json() == by_path.to_json()
    # Only the display name differs between a path and its bytes.
    a, b = by_path.to_dict(), by_bytes.to_dict()
    a["model"].pop("file")
    b["model"].pop("file")
    assert a == b
    assert by_bytes.sha256 == by_path.sha256 == by_path.model.sha256
    # `name` also renames a path
    assert axqc.check(broken, name="x/y.onnx").file == "x/y.onnx"


def test_model_proto_from_debian_onnx(broken, conformant):
    import onnx  # python3-onnx (1.12)
    proto = onnx.load(str(broken))
    r = axqc.check(proto)
    assert r.rules_violated == ["role/weight-type"]
    assert r.errors[0].nodes == ("conv1_w_dq", "conv1")
    assert r.file == "inline.onnx"
    assert axqc.check(proto, name="exported.onnx").file == "exported.onnx"
    assert axqc.check(onnx.load(str(conformant))).conformant
    # A ModelProto built with onnx.helper: a float model, in scope of nothing.
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    assert axqc.check(m).verdict is axqc.Verdict.NOT_APPLICABLE


def test_other_objects_are_a_type_error():
    with pytest.raises(TypeError, match="expected a model path"):
        axqc.check(42)
    with pytest.raises(TypeError, match="expected a model path"):
        axqc.check(None)


def test_input_errors(tmp_path):
    with pytest.raises(axqc.InputError) as e:
        axqc.check(b"this is not an ONNX model")
    assert isinstance(e.value, ValueError) and isinstance(e.value, axqc.Error)
    assert "inline.onnx" in str(e.value)
    assert e.value.code is None
    with pytest.raises(axqc.InputError, match="nope.onnx"):
        axqc.check(tmp_path / "nope.onnx")
    with pytest.raises(ValueError, match="max_locations"):
        axqc.check(b"", max_locations=-1)
    with pytest.raises(TypeError, match="max_locations"):
        axqc.check(b"", max_locations="5")


def test_external_data_needs_the_path(tmp_path, conformant):
    import onnx
    m = onnx.load(str(conformant))
    path = tmp_path / "ext.onnx"
    onnx.save_model(m, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="ext.onnx.data", size_threshold=0)
    assert (tmp_path / "ext.onnx.data").stat().st_size > 0
    r = axqc.check(path)
    assert r.conformant, r.summary()
    with pytest.raises(axqc.InputError, match="external data"):
        axqc.check(path.read_bytes())
    with pytest.raises(axqc.InputError, match="external data"):
        axqc.check(onnx.load(str(path), load_external_data=False))


def test_raise_on_error(broken, conformant):
    with pytest.raises(axqc.NonConformantError) as e:
        axqc.check(broken, raise_on_error=True)
    assert e.value.report.rules_violated == ["role/weight-type"]
    assert str(e.value) == e.value.report.summary()
    assert "role/weight-type" in str(e.value) and "(node conv1_w_dq)" in str(e.value)
    assert axqc.check(conformant, raise_on_error=True).conformant
    # The error pickles with its report (multiprocessing).
    again = pickle.loads(pickle.dumps(e.value))
    assert again.report.to_json() == e.value.report.to_json()


def test_check_value_option(conformant):
    assert axqc.check(conformant, check_value=True).check_value
    cli = run_cli("check", "-c", "--format", "json", str(conformant)).stdout
    assert json_document(axqc.check(conformant, check_value=True)) == cli


def test_renderings_are_the_command_lines(broken, conformant, missing_qdq):
    for model in (broken, conformant, missing_qdq):
        r = axqc.check(model)
        assert json_document(r) == run_cli("check", "--format", "json", str(model)).stdout
        assert axqc.Report.from_json(run_cli("check", "--format", "json", str(model)).stdout
                                     ).to_json() == r.to_json()
        assert r.summary() == run_cli("check", str(model)).stdout
        assert r.to_sarif() == run_cli("check", "--format", "sarif", str(model)).stdout
        assert r.to_junit() == run_cli("check", "--format", "junit", str(model)).stdout
        assert r.to_github() == run_cli("check", "--format", "github", str(model)).stdout
        assert r.to_gitlab() == run_cli("check", "--format", "gitlab", str(model)).stdout
        assert r.summary(explain=True) == run_cli("check", "--explain", str(model)).stdout
    reports = [axqc.check(m) for m in (broken, conformant)]
    assert axqc.to_junit(reports) == run_cli("check", "--format", "junit", str(broken),
                                             str(conformant)).stdout
    assert axqc.to_sarif(reports) == run_cli("check", "--format", "sarif", str(broken),
                                             str(conformant)).stdout
    assert axqc.to_gitlab(reports) == run_cli("check", "--format", "gitlab", str(broken),
                                              str(conformant)).stdout
    [issue] = json.loads(axqc.to_gitlab(reports))  # the conformant model has none
    assert (issue["check_name"], issue["severity"], issue["location"]) == (
        "role/weight-type", "major", {"path": str(broken), "lines": {"begin": 1}})
    assert f"`{reports[0].errors[0].fingerprint}`" in issue["content"]["body"]
    sarif = json.loads(axqc.to_sarif(reports, errors={"gone.onnx": "cannot open the file"}))
    assert sarif["runs"][0]["invocations"][0]["executionSuccessful"] is False
    junit = axqc.to_junit(reports, errors=[("gone.onnx", "cannot open the file")])
    assert 'name="gone.onnx"' in junit and "cannot open the file" in junit


def test_json_round_trip_and_pickle(broken):
    r = axqc.check(broken)
    again = axqc.Report.from_json(r.to_json())
    assert again.to_json() == r.to_json()
    assert axqc.Report.from_json(r.to_json().encode()).to_json() == r.to_json()
    p = pickle.loads(pickle.dumps(r))
    assert p.to_json() == r.to_json() and p.errors == r.errors
    with pytest.raises(ValueError, match="axqc.report/v1"):
        axqc.Report.from_json("{}")


def test_max_locations_bounds_groups_not_findings(tmp_path):
    import onnx
    from qdq_models import per_tensor_conv_chain

    model = per_tensor_conv_chain(onnx, 7)
    r = axqc.check(model, max_locations=2)
    weight = [f for f in r.errors if f.rule == "role/weight-type"]
    assert [f.nodes for f in weight] == [(f"w{i}_dq", f"conv{i}") for i in range(7)]
    [g] = [g for g in r.groups if g.rule == "role/weight-type"]
    assert g.count == 7 and [f.node for f in g.first] == ["w0_dq", "w1_dq"]
    assert "... and 5 more" in r.summary()
    [g0] = [g for g in axqc.check(model, max_locations=0).groups if g.rule == "role/weight-type"]
    assert g0.count == 7 and g0.first == ()


def test_targets_beside_the_spec_verdict(conformant):
    r = axqc.check(conformant, target="all")
    assert r.verdict is axqc.Verdict.CONFORMANT
    assert [t.chip for t in r.targets] == ["ax650", "ax620e", "ax615", "ax637", "m57"]
    assert all(t.verdict == "fits" and t.fits and t.blocking == () for t in r.targets)
    assert r.targets[0].source.startswith("AXERA-TECH/pulsar2-docs@b32f7c1:")
    assert axqc.check(conformant).targets == []
    assert [t.chip for t in axqc.check(conformant, target=["m76h", "ax630c"]).targets] == [
        "ax650", "ax620e"]
    with pytest.raises(ValueError, match="ax999"):
        axqc.check(conformant, target="ax999")
    with pytest.raises(TypeError):
        axqc.check(conformant, target=[650])  # type: ignore[list-item]


def test_target_that_does_not_fit():
    from conftest import SOURCE_DIR

    model = SOURCE_DIR / "tests" / "data" / "real_exports" / "fx_qat_transformer_op13.onnx"
    r = axqc.check(model, target="ax620e")
    (t,) = r.targets
    assert t.chip == "ax620e" and t.verdict == "does_not_fit" and not t.fits
    assert any(b.rule == "target/input-constraint" and b.op_type == "Gather" for b in t.blocking)
    assert any(f.rule == "target/input-constraint" for f in r.findings)
    assert r.verdict == axqc.check(model).verdict
    assert json.loads(r.to_json())["targets"][0]["verdict"] == "does_not_fit"


def test_pulsar2_config_beside_the_spec_verdict(conformant, tmp_path):
    config = axqc.pulsar2_config(conformant, target="ax650")
    assert config["model_type"] == "QuantONNX" and config["target_hardware"] == "AX650"
    assert "input_configs" not in config.get("quant", {})
    r = axqc.check(conformant, target="ax650", pulsar2_config=config)
    assert r.verdict is axqc.Verdict.CONFORMANT
    assert not [f for f in r.findings if f.rule.startswith("pulsar2/")]
    bad = tmp_path / "config.json"
    bad.write_text('{"quant": {"layer_configs": [{"layer_name": "Conv_0", "op_type": "Conv"}]},'
                   ' // a comment, as Pulsar2 accepts\n}')
    r = axqc.check(conformant, pulsar2_config=bad)
    assert r.verdict is axqc.Verdict.CONFORMANT
    rules = sorted(f.rule for f in r.findings if f.rule.startswith("pulsar2/"))
    assert rules == ["pulsar2/model-type", "pulsar2/selector-conflict"]
    (conflict,) = [f for f in r.findings if f.rule == "pulsar2/selector-conflict"]
    assert ("field", "quant.layer_configs[0]") in [(v.name, v.value) for v in conflict.values]
    with pytest.raises(ValueError, match="ax999"):
        axqc.pulsar2_config(conformant, target="ax999")
    with pytest.raises(TypeError):
        axqc.check(conformant, pulsar2_config=3)  # type: ignore[arg-type]


def test_notebook_summary_escapes_names_and_lists_the_groups(broken, conformant):
    text = axqc.check(broken)._repr_html_()
    assert "NON_CONFORMANT" in text and "<code>role/weight-type</code>" in text
    assert "conv1" in text
    ok = axqc.check(conformant, target="ax650")._repr_html_()
    assert "CONFORMANT" in ok and "<table" not in ok and "AX650: fits" in ok
    # A hostile display name reaches the page only escaped.
    hostile = axqc.check(broken.read_bytes(), name="<img src=x onerror=alert(1)>.onnx")
    page = hostile._repr_html_()
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;.onnx" in page


def test_a_missing_grpcio_names_the_interpreter_and_its_fix(tmp_path):
    import os
    import subprocess
    import sys

    code = ("import sys; sys.modules['grpc'] = None\n"
            "import axqc\n"
            "try:\n"
            "    axqc.Client('127.0.0.1:1')\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    debian = subprocess.run(["/usr/bin/python3", "-c", code], env=env, capture_output=True,
                            text=True, check=True).stdout
    assert "/usr/bin/python3 cannot import" in debian
    assert "apt-get install python3-grpcio python3-protobuf" in debian
    # A virtual environment without the system's site packages (as pyenv, conda and plain venvs
    # are): pip for that interpreter, not apt.
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(tmp_path / "venv")],
                   check=True)
    venv_python = str(tmp_path / "venv" / "bin" / "python3")
    venv = subprocess.run([venv_python, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout
    assert f"{venv_python} -m pip install grpcio protobuf" in venv, venv
    assert "--system-site-packages" in venv, venv


def test_reports_of_the_json_document(broken, conformant, tmp_path):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\xff\xff not a model")
    text = run_cli("check", "--format", "json", str(broken), str(conformant)).stdout
    reports = axqc.Report.list_from_json(text)
    assert [r.verdict for r in reports] == [axqc.Verdict.NON_CONFORMANT, axqc.Verdict.CONFORMANT]
    assert reports[0].findings[0].rule == "role/weight-type"
    with pytest.raises(ValueError, match="holds 2 reports"):
        axqc.Report.from_json(text)
    with pytest.raises(ValueError, match="junk.onnx"):
        axqc.Report.list_from_json(
            run_cli("check", "--format", "json", str(junk), check_codes=(2,)).stdout)
    with pytest.raises(ValueError, match="not an axqc.report/v2 document"):
        axqc.Report.list_from_json(axqc.check(conformant).to_json())
