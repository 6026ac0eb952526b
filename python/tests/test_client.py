"""axqc.Client against a real axqc-server of this build: hash first, upload on a miss, the
lookup recorded as a check (record_check), reports identical to local ones, stats, rules, health,
errors, bearer token and TLS."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import socket
import subprocess

import pytest

import axqc
from conftest import Server

import grpc  # noqa: F401,E402  python3-grpcio (scripts/setup): a missing one fails


@pytest.fixture
def client(server):
    with axqc.Client(server.target, retries=0, timeout=60) as c:
        yield c


def test_check_path_uploads_once_then_hash_hits(server, client, broken, workdir):
    # Bytes of its own, unknown to the server: the model with a doc_string appended (a later
    # occurrence of a protobuf field wins).
    model = workdir / "client_first.onnx"
    note = b"copy for test_check_path_uploads_once_then_hash_hits"
    model.write_bytes(broken.read_bytes() + b"\x32" + bytes([len(note)]) + note)
    first = client.check(model, labels={"project": "first"})
    assert first.remote.uploaded and first.remote.cache == "miss"
    assert first.remote.server == server.target and first.remote.request_id
    assert first.rules_violated == ["role/weight-type"]
    assert first.errors[0].nodes == ("conv1_w_dq", "conv1")
    assert first.file == str(model)
    # Same bytes again (path, bytes, ModelProto): found by hash, nothing uploaded.
    again = client.check(model, labels={"project": "first"})
    assert not again.remote.uploaded and again.remote.cache in ("memory_hit", "store_hit")
    by_bytes = client.check(model.read_bytes(), labels={"project": "first"})
    assert not by_bytes.remote.uploaded and by_bytes.file == "inline.onnx"
    import onnx
    by_proto = client.check(onnx.load(str(model)), name="proto.onnx",
                            labels={"project": "first"})
    assert by_proto.file == "proto.onnx"
    assert by_proto.rules_violated == ["role/weight-type"]
    # Every check above, hash hits included, is in the history (record_check).
    stats = client.stats(labels={"project": "first"})
    assert stats.total.requests == 4
    assert stats.total.non_conformant == 4 and stats.total.pass_rate == 0.0
    assert [(r.rule, r.requests) for r in stats.top_failing_rules] == [("role/weight-type", 4)]


def test_remote_report_equals_local(client, conformant, broken, missing_qdq):
    for model in (conformant, broken, missing_qdq):
        for cv in (False, True):
            remote = client.check(model, check_value=cv)
            local = axqc.check(model, check_value=cv)
            assert remote.to_json() == local.to_json()
            assert remote.to_sarif() == local.to_sarif()


def test_record_false_is_a_plain_lookup(client, conformant):
    client.check(conformant, labels={"project": "plain"})  # known to the server now
    before = client.stats(labels={"project": "plain"}).total.requests
    r = client.check(conformant, labels={"project": "plain"}, record=False)
    assert r.conformant and not r.remote.uploaded
    assert client.stats(labels={"project": "plain"}).total.requests == before


def test_get_report(client, broken, workdir):
    sha = hashlib.sha256(broken.read_bytes()).hexdigest()
    client.check(broken)
    r = client.get_report(sha)
    assert r is not None and r.sha256 == sha and r.rules_violated == ["role/weight-type"]
    assert r.remote.cache in ("memory_hit", "store_hit")
    assert client.get_report("0" * 64) is None
    # Other options are another cache key.
    assert client.get_report(sha, check_value=True, max_locations=17) is None


def test_check_ref(client, conformant):
    r = client.check_ref(conformant.name, labels={"project": "ref"})
    assert r.conformant and r.file == conformant.name
    with pytest.raises(axqc.InputError) as e:
        client.check_ref("../etc/passwd")
    assert e.value.code == "PERMISSION_DENIED" and e.value.request_id


def test_stats_grouping_and_windows(client, conformant, broken, float_only):
    for model, project in ((conformant, "g-a"), (broken, "g-a"), (float_only, "g-b")):
        client.check(model, labels={"project": project, "suite": "grouping"})
    s = client.stats(since="1h", group_by="project", labels={"suite": "grouping"})
    assert s.since is not None and s.since < s.until
    assert set(s.groups) == {"g-a", "g-b"}
    a, b = s.groups["g-a"], s.groups["g-b"]
    assert (a.requests, a.conformant, a.non_conformant, a.pass_rate) == (2, 1, 1, 0.5)
    assert (b.requests, b.not_applicable, b.pass_rate) == (1, 1, None)
    hour = client.stats(since=dt.timedelta(hours=1), labels={"suite": "grouping"})
    assert hour.total.requests == 3
    future = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)
    assert client.stats(since=future, until=future + dt.timedelta(hours=1),
                        labels={"suite": "grouping"}).total.requests == 0
    with pytest.raises(ValueError, match="duration with a unit"):
        client.stats(since="7")


def test_rules_and_health(client):
    catalog = client.rules()
    assert catalog.rule_set_version == axqc.RULE_SET_VERSION
    assert catalog.tool_version == axqc.__version__
    assert catalog.rules == axqc.rules()
    assert client.health() == "SERVING"
    assert client.health("axqc.v1.Checker") == "SERVING"


def test_not_an_onnx_model_is_an_input_error(client):
    with pytest.raises(axqc.InputError) as e:
        client.check(b"definitely not ONNX " * 10)
    assert e.value.code == "INVALID_ARGUMENT"
    assert e.value.request_id


def test_raise_on_error(client, broken):
    with pytest.raises(axqc.NonConformantError) as e:
        client.check(broken, raise_on_error=True)
    assert e.value.report.remote is not None
    assert e.value.report.rules_violated == ["role/weight-type"]


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_unreachable_server_is_a_service_error(conformant):
    with axqc.Client(f"127.0.0.1:{_closed_port()}", retries=1, timeout=10) as c:
        with pytest.raises(axqc.ServiceError) as e:
            c.check(conformant)
    assert e.value.code == "UNAVAILABLE"
    assert "cannot reach axqc-server" in str(e.value) and "after 2 attempts" in str(e.value)
    assert e.value.request_id is None


def test_bearer_token(workdir, conformant, monkeypatch):
    token_file = workdir / "token"
    token_file.write_text("s3cret-token\n")
    s = Server(workdir, "--auth-token-file", str(token_file))
    try:
        monkeypatch.delenv("AXQC_TOKEN", raising=False)
        with axqc.Client(s.target, retries=0) as c:
            with pytest.raises(axqc.ServiceError) as e:
                c.check(conformant)
            assert e.value.code == "UNAUTHENTICATED"
            assert "needs a bearer token" in str(e.value)
            assert c.health() == "SERVING"  # health needs no token
        with axqc.Client(s.target, token="wrong", retries=0) as c:
            with pytest.raises(axqc.ServiceError, match="check the token"):
                c.check(conformant)
        with axqc.Client(s.target, token="s3cret-token") as c:
            assert c.check(conformant).conformant
        monkeypatch.setenv("AXQC_TOKEN", "s3cret-token")
        with axqc.Client(s.target) as c:  # from the environment, like the command line
            assert c.check(conformant).conformant
    finally:
        s.stop()


@pytest.mark.skipif(not shutil.which("openssl"), reason="openssl missing")
def test_tls_and_mutual_tls(workdir, conformant):
    d = workdir / "pki"
    d.mkdir()

    def ssl(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=axqc test CA")
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1"), ("client", "")):
        ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
            f"{name}.csr", "-subj", f"/CN={name}")
        extfile = d / f"{name}.ext"
        extfile.write_text(ext + "\n" if ext else "basicConstraints=CA:FALSE\n")
        ssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext")
    s = Server(workdir, "--tls-cert-file", str(d / "server.pem"), "--tls-key-file",
               str(d / "server.key"), "--tls-client-ca-file", str(d / "ca.pem"))
    try:
        with axqc.Client(s.target, ca=d / "ca.pem", cert=d / "client.pem",
                         key=d / "client.key") as c:
            assert c.tls and c.check(conformant).conformant
        # The CA as PEM bytes works the same; without a client certificate the server refuses.
        with axqc.Client(s.target, ca=(d / "ca.pem").read_bytes(), retries=0, timeout=10) as c:
            with pytest.raises(axqc.ServiceError) as e:
                c.check(conformant)
            assert e.value.code == "UNAVAILABLE"
        # Plaintext to a TLS port: no verdict.
        with axqc.Client(s.target, retries=0, timeout=10) as c:
            with pytest.raises(axqc.ServiceError):
                c.check(conformant)
    finally:
        s.stop()
    with pytest.raises(ValueError, match="both cert and key"):
        axqc.Client("127.0.0.1:1", cert=d / "client.pem")
    with pytest.raises(axqc.InputError, match="cannot read the CA certificate"):
        axqc.Client("127.0.0.1:1", ca=d / "missing.pem")


def test_check_model_with_external_data(server, client, broken, workdir):
    # The broken example with every initializer in model.onnx_data (onnx's own writer). By
    # default the client sends the graph file and only the byte ranges of the data file that the
    # check reads (a ranged upload); the report and its key are those of a full upload of the
    # same files (the graph's sha256 and the bytes read), and the local check's findings.
    import onnx

    folder = workdir / "external"
    folder.mkdir()
    m = onnx.load(str(broken))
    onnx.save_model(m, str(folder / "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.onnx_data", size_threshold=0)
    from axqc._client import _bundle_sha256, _hash_file, _local_data_files

    files = _local_data_files(str(folder / "model.onnx"))
    assert [(name, size) for name, _, size, _ in files] == [
        ("model.onnx_data", (folder / "model.onnx_data").stat().st_size)]
    graph_sha = _hash_file(str(folder / "model.onnx"))[0]
    ranged = client.check(folder / "model.onnx")
    assert ranged.remote.uploaded and ranged.remote.cache == "miss"
    assert ranged.rules_violated == ["role/weight-type"]
    assert ranged.sha256 not in (graph_sha, _bundle_sha256(graph_sha, files))
    local = axqc.check(folder / "model.onnx")
    assert [f.rule for f in ranged.findings] == [f.rule for f in local.findings]
    # The whole data file: checked again (its request names the bundle), the same key and report.
    first = client.check(folder / "model.onnx", full_upload=True)
    assert first.remote.uploaded and first.remote.cache == "miss"
    assert first.sha256 == ranged.sha256
    assert [f.rule for f in first.findings] == [f.rule for f in ranged.findings]
    # Known now: found by the bundle hash, nothing uploaded.
    again = client.check(folder / "model.onnx", full_upload=True)
    assert not again.remote.uploaded and again.sha256 == first.sha256
    # A ranged upload of known bytes: the report from the cache.
    cached = client.check(folder / "model.onnx")
    assert cached.remote.cache != "miss" and cached.sha256 == first.sha256
    # Without its data file the server refuses the model (the checker's input error).
    (folder / "model.onnx_data").rename(folder / "moved.bin")
    with pytest.raises(axqc.InputError, match="without their data files"):
        client.check(folder / "model.onnx")


def test_targets_are_judged_by_the_server(client, conformant):
    from conftest import SOURCE_DIR

    model = SOURCE_DIR / "tests" / "data" / "real_exports" / "fx_qat_transformer_op13.onnx"
    remote = client.check(model, target=["AX620E", "m76h"])
    local = axqc.check(model, target=["ax650", "ax620e"])
    assert remote.to_json() == local.to_json()
    assert [(t.chip, t.verdict) for t in remote.targets] == [
        (t.chip, t.verdict) for t in local.targets]
    assert [t.chip for t in remote.targets] == ["ax650", "ax620e"]
    assert remote.targets[1].verdict == "does_not_fit"
    assert any(b.rule == "target/input-constraint" and b.op_type == "Gather"
               for b in remote.targets[1].blocking)
    # The same chips named otherwise: the server's cached report, not an upload.
    again = client.check(model, target=["ax620e", "ax650"])
    assert not again.remote.uploaded and again.to_json() == remote.to_json()
    # Other chips (or none) are another cache key.
    sha = hashlib.sha256(model.read_bytes()).hexdigest()
    assert client.get_report(sha, target="ax615") is None
    assert client.get_report(sha, target=["ax650", "ax620e"]) is not None
    assert client.check_ref(conformant.name, target="all").targets[4].chip == "m57"
    with pytest.raises(axqc.InputError) as e:
        client.check(model, target="ax999")
    assert e.value.code == "INVALID_ARGUMENT" and "unknown target 'ax999'" in str(e.value)
    # The server records the chips as the label axqc.target.
    groups = client.stats(group_by="axqc.target").groups
    assert set(groups) >= {"ax650,ax620e", "ax650,ax620e,ax615,ax637,m57"}
    assert groups["ax650,ax620e"].requests >= 2


def test_pulsar2_config_is_judged_by_the_server(client, conformant, workdir):
    config = axqc.pulsar2_config(conformant, target="ax650")
    del config["model_type"]  # the default, ONNX, is wrong for a QDQ model
    config["quant"]["layer_configs"] = [{"layer_name": "no_such_node", "data_type": "U16"}]
    path = workdir / "pulsar2_bad.json"
    path.write_text(json.dumps(config))
    remote = client.check(conformant, pulsar2_config=path)
    local = axqc.check(conformant, pulsar2_config=path)
    assert remote.to_json() == local.to_json()
    assert sorted(f.rule for f in remote.findings if f.rule.startswith("pulsar2/")) == [
        "pulsar2/model-type", "pulsar2/selector-no-match"]
    assert remote.verdict == axqc.Verdict.CONFORMANT
    # The same text as a file or a mapping is one key; another configuration is another.
    again = client.check(conformant, pulsar2_config=path)
    assert not again.remote.uploaded and again.to_json() == remote.to_json()
    sha = hashlib.sha256(conformant.read_bytes()).hexdigest()
    assert client.get_report(sha, pulsar2_config=path) is not None
    assert client.get_report(sha, pulsar2_config={"model_type": "QuantONNX"}) is None
    ref = client.check_ref(conformant.name, pulsar2_config={"model_type": "QuantONNX"})
    assert not [f for f in ref.findings if f.rule == "pulsar2/model-type"]
    big = workdir / "pulsar2_big.json"
    big.write_text('{"x": "' + "a" * (1 << 20) + '"}')
    with pytest.raises(axqc.InputError) as e:
        client.check(conformant, pulsar2_config=big)
    assert e.value.code == "INVALID_ARGUMENT" and "pulsar2_config: at most 1048576" in str(e.value)
