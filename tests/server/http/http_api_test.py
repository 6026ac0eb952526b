#!/usr/bin/env python3
"""End-to-end test of axqc-server's HTTP/JSON API and registry webhooks against the real release
binary (ctest server_http_api).

    tests/server/http/http_api_test.py BUILD_DIR

Starts axqc-server with --http-listen on a free port, a bearer token, tight size limits, and both
webhooks pointed at a stub registry (registry_stub.py, on a thread of this process), then checks
status codes, error JSON, reports, stats time series, latest verdicts per model, and the MLflow
and Hugging Face webhook flows (signature checks, asynchronous check, tag write-back, idempotent
retries). Each check names what it expects; the first failure ends the test with exit code 1.
"""
import base64
import datetime
import hashlib
import hmac
import http.client
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import registry_stub  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/release")
SERVER = os.path.join(BUILD, "server", "axqc-server")
EXAMPLES = os.path.join(BUILD, "examples")
TOKEN = "http-test-token"
MLFLOW_SECRET = "mlflow-webhook-secret"
MLFLOW_TOKEN = "mlflow-api-token"
HF_SECRET = "hf-webhook-secret"
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
        raise SystemExit(finish(1))
    print("ok:", what, flush=True)


class Api:
    def __init__(self, port):
        self.port = port

    def call(self, method, path, body=None, headers=None, token=TOKEN):
        h = dict(headers or {})
        if token is not None:
            h["Authorization"] = "Bearer " + token
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        try:
            j = json.loads(data) if data else None
        except ValueError:
            j = None
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), j

    def get(self, path, **kw):
        return self.call("GET", path, **kw)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def error_code(j):
    return (j or {}).get("error", {}).get("code")


SERVER_PROC = None
WORK = None


def finish(rc):
    if SERVER_PROC is not None and SERVER_PROC.poll() is None:
        SERVER_PROC.send_signal(signal.SIGTERM)
        try:
            code = SERVER_PROC.wait(timeout=30)
        except subprocess.TimeoutExpired:
            SERVER_PROC.kill()
            code = "timeout"
        if code != 0:
            print(f"FAIL: axqc-server exited {code} on SIGTERM", flush=True)
            rc = 1
    if rc != 0 and WORK:
        log = os.path.join(WORK, "server.log")
        if os.path.exists(log):
            print("--- server log (tail) ---")
            print(open(log).read()[-4000:])
    if WORK:
        shutil.rmtree(WORK, ignore_errors=True)
    return rc


def mlflow_delivery(api, payload, delivery_id=None, secret=MLFLOW_SECRET, ts=None):
    body = json.dumps(payload)
    delivery_id = delivery_id or str(uuid.uuid4())
    ts = str(int(time.time())) if ts is None else ts
    sig = "v1," + base64.b64encode(hmac.new(secret.encode(), f"{delivery_id}.{ts}.{body}".encode(),
                                            hashlib.sha256).digest()).decode()
    return api.call("POST", "/v1/hooks/mlflow", body=body, token=None,
                    headers={"Content-Type": "application/json", "X-MLflow-Delivery-Id": delivery_id,
                             "X-MLflow-Timestamp": ts, "X-MLflow-Signature": sig})


def wait_for(pred, what, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    check(False, what + " (waited %d s)" % timeout)


def main():
    global SERVER_PROC, WORK
    if not os.path.exists(SERVER):
        print("axqc-server not built:", SERVER)
        return 1
    WORK = tempfile.mkdtemp(prefix="axqc-http-")
    ok = os.path.join(EXAMPLES, "conformant_cnn.onnx")
    bad = os.path.join(EXAMPLES, "broken_weight_per_tensor.onnx")
    root = os.path.join(WORK, "root")
    os.makedirs(os.path.join(root, "detector"))
    shutil.copy(bad, os.path.join(root, "detector", "yolo-int8.onnx"))
    # The registry's models: MLflow model "detector" version 3 (non-conformant), Hub repo
    # org/classifier at revision abc123 (conformant).
    models = os.path.join(WORK, "registry")
    os.makedirs(os.path.join(models, "detector", "3"))
    shutil.copy(bad, os.path.join(models, "detector", "3", "model.onnx"))
    os.makedirs(os.path.join(models, "org", "classifier", "abc123"))
    shutil.copy(ok, os.path.join(models, "org", "classifier", "abc123", "model.onnx"))
    stub, stub_port = registry_stub.start(models, MLFLOW_TOKEN)

    for name, value in (("token", TOKEN), ("mlflow-secret", MLFLOW_SECRET),
                        ("mlflow-token", MLFLOW_TOKEN), ("hf-secret", HF_SECRET)):
        with open(os.path.join(WORK, name), "w") as f:
            f.write(value + "\n")
    ready = os.path.join(WORK, "ready.json")
    cmd = [SERVER, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
           "--http-listen", "127.0.0.1:0", "--ready-file", ready,
           "--store-path", os.path.join(WORK, "store.sqlite3"),
           "--auth-token-file", os.path.join(WORK, "token"),
           "--allowed-root", root, "--max-model-bytes", "1MiB", "--max-inline-bytes", "1MiB",
           "--http-max-json-bytes", "64KiB",
           "--url-allow-host", f"127.0.0.1:{stub_port}",
           "--mlflow-webhook-secret-file", os.path.join(WORK, "mlflow-secret"),
           "--mlflow-url", f"http://127.0.0.1:{stub_port}",
           "--mlflow-token-file", os.path.join(WORK, "mlflow-token"),
           "--mlflow-write-back", "true",
           "--huggingface-webhook-secret-file", os.path.join(WORK, "hf-secret"),
           "--huggingface-url", f"http://127.0.0.1:{stub_port}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AXQC_")}
    SERVER_PROC = subprocess.Popen(cmd, stdout=open(os.path.join(WORK, "server.log"), "w"),
                                   stderr=subprocess.STDOUT, env=env)
    wait_for(lambda: os.path.exists(ready) and os.path.getsize(ready) > 0, "server ready", 30)
    ports = json.load(open(ready))
    check(ports.get("http_port", 0) > 0, "the ready file names the HTTP port")
    api = Api(ports["http_port"])

    # --- authentication ---
    st, h, j = api.get("/v1/rules", token=None)
    check(st == 401 and error_code(j) == "UNAUTHENTICATED" and j.get("request_id"),
          f"no token: 401 UNAUTHENTICATED with a request id (got {st} {j})")
    check(h.get("x-request-id") == j["request_id"], "X-Request-Id header = request_id field")
    st, _, j = api.get("/v1/rules", token="wrong")
    check(st == 401 and error_code(j) == "UNAUTHENTICATED", f"wrong token: 401 (got {st})")
    st, _, j = api.call("POST", "/v1/check", body=read(ok), token=None)
    check(st == 401 and error_code(j) == "UNAUTHENTICATED", f"model upload without token: 401 (got {st})")

    # --- rules ---
    st, h, j = api.get("/v1/rules", headers={"X-Request-Id": "rules-req-1"})
    check(st == 200 and h.get("x-request-id") == "rules-req-1", "a valid X-Request-Id is echoed")
    ids = [r["id"] for r in j["rules"]]
    check("role/weight-type" in ids and j["rule_set_version"], "/v1/rules lists role/weight-type")
    # The severity names of the reports, not the proto enum's.
    sev = {r["id"]: r["severity"] for r in j["rules"]}
    check(sev.get("role/weight-type") == "error" and set(sev.values()) == {"error", "warn", "info"},
          f"/v1/rules names severities as the reports do (got {sorted(set(sev.values()))})")

    # --- check: raw bytes ---
    st, h, j = api.call("POST", "/v1/check?name=cnn.onnx&label.project=detector", body=read(ok),
                        headers={"Content-Type": "application/octet-stream"})
    check(st == 200 and j["schema"] == "axqc.report/v1" and j["verdict"] == "conformant",
          f"raw conformant model: 200, schema axqc.report/v1, conformant (got {st} {j and j.get('verdict')})")
    check(j["model"]["file"] == "cnn.onnx" and h.get("x-axqc-verdict") == "conformant"
          and h.get("x-axqc-sha256") == sha(ok), "report names cnn.onnx; verdict and sha256 headers")
    for _ in range(2):  # the same non-conformant model twice: 2 requests, 1 model
        st, h, j = api.call("POST", "/v1/check?name=bad.onnx&label.project=detector", body=read(bad))
        check(st == 200 and j["verdict"] == "non_conformant", "raw broken model: 200 non_conformant")
        rules = {f["rule"] for f in j["findings"]}
        check("role/weight-type" in rules, f"finding role/weight-type (got {sorted(rules)})")
    check(h.get("x-axqc-cache") in ("memory_hit", "store_hit"), "second check is a cache hit")

    # --- check: JSON ---
    st, _, j = api.call("POST", "/v1/check", headers={"Content-Type": "application/json"},
                        body=json.dumps({"path": "detector/yolo-int8.onnx",
                                         "labels": {"project": "detector"}}))
    check(st == 200 and j["verdict"] == "non_conformant" and j["model"]["file"] == "detector/yolo-int8.onnx",
          f"JSON path check: 200 non_conformant (got {st})")
    st, _, j = api.call("POST", "/v1/check", headers={"Content-Type": "application/json"},
                        body=json.dumps({"content": base64.b64encode(read(ok)).decode(),
                                         "name": "inline.onnx", "labels": {"project": "other"}}))
    check(st == 200 and j["verdict"] == "conformant", f"JSON inline content: 200 conformant (got {st})")
    st, _, j = api.call("POST", "/v1/check", headers={"Content-Type": "application/json"},
                        body='{"path": ')
    check(st == 400 and error_code(j) == "INVALID_ARGUMENT", f"bad JSON: 400 INVALID_ARGUMENT (got {st} {j})")
    st, _, j = api.call("POST", "/v1/check", headers={"Content-Type": "application/json"},
                        body=json.dumps({"path": "../etc/passwd"}))
    check(st == 403 and error_code(j) == "PERMISSION_DENIED", f"path outside the root: 403 (got {st})")
    st, _, j = api.call("POST", "/v1/check", headers={"Content-Type": "application/json"},
                        body=json.dumps({"url": "http://example.invalid/m.onnx"}))
    check(st == 403 and error_code(j) == "PERMISSION_DENIED", f"URL host not allowlisted: 403 (got {st})")
    st, _, j = api.call("POST", "/v1/check", body=b"not an onnx model")
    check(st == 400 and error_code(j) == "INVALID_ARGUMENT" and "ONNX" in j["error"]["message"],
          f"garbage bytes: 400 INVALID_ARGUMENT (got {st} {j})")

    # --- limits ---
    st, _, j = api.call("POST", "/v1/check", body=b"\0" * (2 << 20), headers={"Expect": "100-continue"})
    check(st == 413 and error_code(j) == "RESOURCE_EXHAUSTED" and "1048576" in j["error"]["message"],
          f"2 MiB body over max-model-bytes 1MiB: 413 RESOURCE_EXHAUSTED (got {st} {j})")
    # Chunked (no Content-Length): refused once the received bytes pass the limit.
    conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=60)
    conn.putrequest("POST", "/v1/check")
    conn.putheader("Authorization", "Bearer " + TOKEN)
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()
    try:
        for _ in range(40):
            chunk = b"\1" * 65536
            conn.send(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        conn.send(b"0\r\n\r\n")
    except OSError:
        pass  # the server answered and closed
    r = conn.getresponse()
    j = json.loads(r.read())
    check(r.status == 413 and error_code(j) == "RESOURCE_EXHAUSTED",
          f"chunked body over the limit: 413 (got {r.status})")
    st, _, j = api.call("POST", "/v1/check", headers={"Content-Type": "application/json"},
                        body=json.dumps({"path": "x" * (70 << 10)}))
    check(st == 413 and error_code(j) == "RESOURCE_EXHAUSTED", f"JSON body over 64KiB: 413 (got {st})")

    # --- reports ---
    st, h, j = api.get(f"/v1/reports/{sha(bad)}")
    check(st == 200 and j["verdict"] == "non_conformant" and h.get("x-axqc-cache") in ("memory_hit", "store_hit"),
          f"GET /v1/reports/<sha of the broken model>: 200 non_conformant (got {st})")
    st, _, j = api.get(f"/v1/reports/{sha(bad)}?check_value=true")
    check(st == 404 and error_code(j) == "NOT_FOUND", f"report with other options: 404 NOT_FOUND (got {st})")
    st, _, j = api.get("/v1/reports/XYZ")
    check(st == 400 and error_code(j) == "INVALID_ARGUMENT", f"malformed sha256: 400 (got {st})")

    # --- routing ---
    st, _, j = api.get("/v1/nope")
    check(st == 404 and error_code(j) == "NOT_FOUND", f"unknown path: 404 JSON (got {st})")
    st, h, j = api.call("DELETE", "/v1/rules")
    check(st == 405 and h.get("allow") == "GET", f"wrong method: 405 with Allow (got {st})")
    st, _, j = api.get("/v1/openapi.json", token=None)
    check(st == 200 and j["openapi"].startswith("3.") and "/v1/stats" in j["paths"],
          "/v1/openapi.json is served without a token")

    # --- webhooks: MLflow ---
    payload = {"entity": "model_version", "action": "created",
               "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(),
               "data": {"name": "detector", "version": "3", "source": "models:/m-1",
                        "run_id": "run42", "tags": {}, "description": None}}
    st, _, j = mlflow_delivery(api, payload, secret="not-the-secret")
    check(st == 401 and error_code(j) == "UNAUTHENTICATED", f"MLflow: bad signature: 401 (got {st} {j})")
    st, _, j = mlflow_delivery(api, payload, ts=str(int(time.time()) - 3600))
    check(st == 401 and error_code(j) == "UNAUTHENTICATED", f"MLflow: hour-old timestamp: 401 (got {st})")
    delivery = str(uuid.uuid4())
    st, _, j = mlflow_delivery(api, payload, delivery_id=delivery)
    check(st == 202 and j["status"] == "accepted" and j["model"] == "detector/3",
          f"MLflow model_version.created: 202 accepted (got {st} {j})")

    def tags():
        with stub.lock:
            return {json.loads(c["body"])["key"]: json.loads(c["body"])["value"]
                    for c in stub.calls if c["path"] == "/api/2.0/mlflow/model-versions/set-tag"}
    got = wait_for(lambda: tags() if "axqc.request_id" in tags() else None, "MLflow tags written back")
    check(got["axqc.verdict"] == "non_conformant" and got["axqc.sha256"] == sha(bad)
          and got["axqc.errors"] != "0", f"MLflow tags: axqc.verdict non_conformant, sha256 (got {got})")
    with stub.lock:
        auth = {c["authorization"] for c in stub.calls if c["path"].startswith("/api/2.0/")}
        downloads = sum(1 for c in stub.calls if c["path"].endswith("/detector/3/model.onnx"))
        ncalls = len(stub.calls)
    check(auth == {"Bearer " + MLFLOW_TOKEN}, "every MLflow API call carries the registry token")
    check(downloads == 1, f"the model version was downloaded once (got {downloads})")
    st, _, j = mlflow_delivery(api, payload, delivery_id=delivery)
    check(st == 200 and j["status"] == "duplicate", f"MLflow retry of the same delivery: 200 duplicate (got {st} {j})")
    tag_event = {"entity": "model_version_tag", "action": "set", "timestamp": "",
                 "data": {"name": "detector", "version": "3", "key": "axqc.verdict", "value": "x"}}
    st, _, j = mlflow_delivery(api, tag_event)
    check(st == 200 and j["status"] == "ignored", f"MLflow: own axqc.* tag event ignored (got {st} {j})")
    time.sleep(1)
    with stub.lock:
        check(len(stub.calls) == ncalls, "no registry call after the duplicate and ignored deliveries")
    st, _, j = api.get("/v1/models?label.source=mlflow")
    check(st == 200 and len(j["models"]) == 1, f"/v1/models?label.source=mlflow: one model (got {j})")
    m = j["models"][0]
    check(m["name"] == "detector/3" and m["verdict"] == "non_conformant" and m["sha256"] == sha(bad)
          and m["labels"].get("mlflow.model") == "detector" and m["labels"].get("mlflow.version") == "3"
          and m["labels"].get("mlflow.run_id") == "run42", f"MLflow labels recorded (got {m})")

    # --- webhooks: Hugging Face ---
    hf = {"event": {"action": "update", "scope": "repo.content"},
          "repo": {"type": "model", "name": "org/classifier", "headSha": "abc123"},
          "webhook": {"id": "w1", "version": 3}}
    st, _, j = api.call("POST", "/v1/hooks/huggingface", body=json.dumps(hf), token=None,
                        headers={"X-Webhook-Secret": "wrong", "Content-Type": "application/json"})
    check(st == 401 and error_code(j) == "UNAUTHENTICATED", f"Hub: wrong secret: 401 (got {st})")
    st, _, j = api.call("POST", "/v1/hooks/huggingface", body=json.dumps(hf), token=None,
                        headers={"X-Webhook-Secret": HF_SECRET, "Content-Type": "application/json"})
    check(st == 202 and j["status"] == "accepted", f"Hub repo update: 202 accepted (got {st} {j})")
    m = wait_for(lambda: (api.get("/v1/models?label.hf.repo=org/classifier")[2] or {}).get("models"),
                 "Hub model checked")
    check(m[0]["verdict"] == "conformant" and m[0]["labels"]["hf.revision"] == "abc123"
          and m[0]["sha256"] == sha(ok), f"Hub check recorded: conformant at abc123 (got {m})")
    st, _, j = api.call("POST", "/v1/hooks/huggingface", body=json.dumps(hf), token=None,
                        headers={"X-Webhook-Secret": HF_SECRET, "Content-Type": "application/json"})
    check(st == 200 and j["status"] == "duplicate", f"Hub retry: 200 duplicate (got {st})")

    # --- stats: totals, failing models, time series ---
    now = int(time.time())
    hour = now - now % 3600
    since = datetime.datetime.fromtimestamp(hour - 7200, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    st, _, j = api.get(f"/v1/stats?since={since}&until={hour + 3600}&step=1h&label.project=detector")
    check(st == 200, f"/v1/stats: 200 (got {st} {j})")
    total = j["total"]
    check(total["requests"] == 4 and total["conformant"] == 1 and total["non_conformant"] == 3,
          f"project detector: 4 requests, 1 conformant, 3 non_conformant (got {total})")
    check(abs(total["pass_rate"] - 0.25) < 1e-9, "pass rate 0.25")
    rule = [r for r in j["top_failing_rules"] if r["rule"] == "role/weight-type"]
    check(rule and rule[0]["requests"] == 3 and rule[0]["models"] == 1,
          f"role/weight-type failed 3 requests of 1 model (got {rule})")
    series = j["series"]
    starts = [s["start"] for s in series]
    want = [datetime.datetime.fromtimestamp(hour + k * 3600, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            for k in (-2, -1, 0)]
    check(starts == want, f"series: 3 hourly buckets {want} (got {starts})")
    check(sum(int(s["counts"]["requests"]) for s in series) == 4, "series buckets add up to the total")
    check(series[0]["counts"]["requests"] == 0 and "pass_rate" not in series[0]["counts"],
          "an empty bucket has zero counts and no pass rate")
    st, _, j = api.get("/v1/stats?window=1d&group_by=project")
    groups = {g["label_value"]: g["counts"]["requests"] for g in j["groups"]}
    check(groups.get("detector") == 4 and groups.get("other") == 1,
          f"group_by=project: detector 4, other 1 (got {groups})")
    st, _, j = api.get("/v1/stats?step=10ms")
    check(st == 400 and error_code(j) == "INVALID_ARGUMENT", f"step below 1s: 400 (got {st})")
    st, _, j = api.get("/v1/stats?since=yesterday")
    check(st == 400 and error_code(j) == "INVALID_ARGUMENT", f"malformed since: 400 (got {st})")
    st, _, j = api.get("/v1/stats?labels.project=x")
    check(st == 400 and "labels.project" in j["error"]["message"], "unknown query parameter: 400")

    # --- latest verdict per model ---
    st, _, j = api.get("/v1/models?label.project=detector")
    got = {m["sha256"]: (m["verdict"], m["name"]) for m in j["models"]}
    check(got == {sha(ok): ("conformant", "cnn.onnx"), sha(bad): ("non_conformant", "detector/yolo-int8.onnx")},
          f"/v1/models?label.project=detector: the latest verdict of 2 models (got {got})")
    check(all(isinstance(m["errors"], int) and isinstance(m["warnings"], int) for m in j["models"])
          and {m["errors"] for m in j["models"]} == {0, 1},
          f"/v1/models: counts are JSON numbers (got {[(m['errors'], m['warnings']) for m in j['models']]})")

    # --- every check: GET /v1/checks, with the options that open its report ---
    st, _, j = api.call("POST", "/v1/check?name=cnn-cv.onnx&check_value=true&label.project=cv",
                        body=read(ok), headers={"Content-Type": "application/octet-stream"})
    check(st == 200 and j["verdict"] == "conformant" and j["check_value"] is True,
          f"a check with check_value: 200 conformant (got {st})")
    st, _, j = api.get("/v1/checks?label.project=cv")
    check(st == 200 and j["total"] == 1 and len(j["checks"]) == 1 and "next_offset" not in j,
          f"/v1/checks?label.project=cv: one check (got {st} {j})")
    c = j["checks"][0]
    check(c["name"] == "cnn-cv.onnx" and c["source"] == "upload" and c["sha256"] == sha(ok)
          and c["check_value"] is True and c["options"].startswith("cv=1;")
          and c["report_query"] == "check_value=true"
          and c["model_page"] == f"/models/{sha(ok)}?check_value=true" and c["targets"] == []
          and c["labels"] == {"project": "cv"} and c["request_id"],
          f"the check carries its options and the page of its report (got {c})")
    st, _, j = api.get(f"/v1/reports/{sha(ok)}?{c['report_query']}")
    check(st == 200 and j["check_value"] is True, f"its report_query opens its report (got {st})")
    st, _, j = api.get(f"/v1/checks?sha256={sha(ok)}&limit=200")
    names = sorted(x["name"] for x in j["checks"])
    check(st == 200 and j["total"] == len(j["checks"]) and
          {"cnn.onnx", "inline.onnx", "org/classifier@abc123", "cnn-cv.onnx"} <= set(names) and
          {x["source"] for x in j["checks"]} >= {"upload", "inline", "webhook"},
          f"/v1/checks?sha256=: one model under every name it was checked with (got {names})")
    st, _, j = api.get("/v1/checks?label.project=detector&limit=3")
    check(st == 200 and j["total"] == 4 and len(j["checks"]) == 3 and j["next_offset"] == 3
          and j["offset"] == 0 and j["limit"] == 3,
          f"label.project=detector: 4 checks, a page of 3, next_offset 3 (got {st} {j.get('total')} "
          f"{len(j.get('checks', []))} {j.get('next_offset')})")
    first = [x["request_id"] for x in j["checks"]]
    times = [x["time"] for x in j["checks"]]
    check(times == sorted(times, reverse=True), "checks newest first")
    check(all(isinstance(x["errors"], int) and isinstance(x["warnings"], int) for x in j["checks"])
          and isinstance(j["total"], int), "counts are JSON numbers")
    st, _, j = api.get("/v1/checks?label.project=detector&limit=3&offset=3")
    check(st == 200 and j["total"] == 4 and len(j["checks"]) == 1 and "next_offset" not in j
          and j["checks"][0]["request_id"] not in first,
          f"the second page: the 4th check, no next_offset (got {j})")
    st, _, j = api.get("/v1/checks?q=YOLO")
    check(st == 200 and j["total"] == 1 and j["checks"][0]["name"] == "detector/yolo-int8.onnx"
          and j["checks"][0]["source"] == "path",
          f"q=YOLO: the name search is case-insensitive (got {j})")
    st, _, j = api.get("/v1/checks?q=%25")
    check(st == 200 and j["total"] == 0, f"q=%: a percent sign is text, not a wildcard (got {j})")
    st, _, j = api.get("/v1/checks?verdict=non_conformant&source=webhook")
    check(st == 200 and j["total"] == 1 and j["checks"][0]["name"] == "detector/3"
          and j["checks"][0]["labels"].get("mlflow.model") == "detector",
          f"verdict=non_conformant&source=webhook: the MLflow check (got {j})")
    for query, word in (("verdict=bad", "verdict"), ("source=ftp", "source"), ("limit=0", "limit"),
                        ("limit=201", "limit"), ("offset=-1", "offset"), ("offset=x", "offset"),
                        ("sha256=XYZ", "sha256"), ("q=" + "x" * 101, "q"), ("q=%01", "q"),
                        ("foo=1", "foo"), ("label.=x", "label")):
        st, _, j = api.get("/v1/checks?" + query)
        check(st == 400 and error_code(j) == "INVALID_ARGUMENT" and word in j["error"]["message"],
              f"/v1/checks?{query[:30]}: 400 INVALID_ARGUMENT naming {word} (got {st} {j})")
    st, _, j = api.get("/v1/checks", token=None)
    check(st == 401 and error_code(j) == "UNAUTHENTICATED", f"/v1/checks without token: 401 (got {st})")

    # --- the stored reports of a model ---
    st, _, j = api.get(f"/v1/models/{sha(ok)}/reports")
    check(st == 200 and j["sha256"] == sha(ok) and j["rule_set_version"], f"model reports: 200 (got {st} {j})")
    by_query = {r.get("report_query"): r for r in j["reports"]}
    check(set(by_query) == {"", "check_value=true"} and all(r["current"] for r in j["reports"])
          and by_query[""]["model_page"] == f"/models/{sha(ok)}"
          and by_query["check_value=true"]["model_page"] == f"/models/{sha(ok)}?check_value=true"
          and all(r["verdict"] == "conformant" and r["rule_set_version"] == j["rule_set_version"]
                  for r in j["reports"]),
          f"two stored reports of the model: defaults and check_value, each with its page (got {j})")
    st, _, j = api.get("/v1/models/XYZ/reports")
    check(st == 400 and error_code(j) == "INVALID_ARGUMENT", f"malformed sha256: 400 (got {st})")
    st, _, j = api.get(f"/v1/models/{sha(ok)}/reports?check_value=true")
    check(st == 400 and "check_value" in j["error"]["message"], f"no query parameters: 400 (got {st} {j})")
    st, _, j = api.get(f"/v1/models/{'0' * 64}/reports")
    check(st == 200 and j["reports"] == [], f"a model never checked: no reports (got {j})")
    st, _, j = api.get("/v1/deliveries?source=huggingface")
    d = j["deliveries"][0]
    check(d["model_page"] == f"/models/{sha(ok)}", f"a delivery links its report's page (got {d})")

    # --- the same metrics and request log as gRPC ---
    conn = http.client.HTTPConnection("127.0.0.1", ports["metrics_port"], timeout=30)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    for method, code in (("Upload", "OK"), ("Check", "OK"), ("ListModels", "OK"), ("GetStats", "OK"),
                         ("ListRules", "UNAUTHENTICATED"), ("MlflowWebhook", "OK"),
                         ("ListChecks", "OK"), ("ListModelReports", "OK")):
        check(f'axqc_requests_total{{code="{code}",method="{method}"}}' in text,
              f"metric axqc_requests_total{{method={method},code={code}}}")
    SERVER_PROC.send_signal(signal.SIGTERM)
    SERVER_PROC.wait(timeout=30)
    check(SERVER_PROC.returncode == 0, "axqc-server exits 0 on SIGTERM")
    log = [json.loads(l) for l in open(os.path.join(WORK, "server.log")) if l.startswith("{")]
    reqs = [l for l in log if l.get("msg") == "request" and l.get("request_id") == "rules-req-1"]
    check(len(reqs) == 1 and reqs[0].get("transport") == "http" and reqs[0].get("method") == "ListRules",
          "one request log line per HTTP request, transport http")
    tls_checks()
    return finish(0)


def make_pki(d):
    def ossl(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
         "-days", "2", "-subj", "/CN=axqc-test-ca")
    with open(os.path.join(d, "ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for name, cn in (("srv", "localhost"), ("cli", "client")):
        ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr",
             "-subj", "/CN=" + cn)
        ossl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", name + ".pem", "-days", "2", "-extfile", "ext")


def tls_checks():
    """The HTTP port with the gRPC port's TLS files and client CA: mutual TLS, as on gRPC."""
    global SERVER_PROC
    if shutil.which("openssl") is None:
        print("skip: TLS checks need openssl")
        return
    d = os.path.join(WORK, "pki")
    os.makedirs(d)
    make_pki(d)
    ready = os.path.join(WORK, "ready-tls.json")
    SERVER_PROC = subprocess.Popen(
        [SERVER, "--listen", "127.0.0.1:0", "--metrics-listen", "", "--http-listen", "127.0.0.1:0",
         "--ready-file", ready, "--store-path", ":memory:",
         "--tls-cert-file", os.path.join(d, "srv.pem"), "--tls-key-file", os.path.join(d, "srv.key"),
         "--tls-client-ca-file", os.path.join(d, "ca.pem")],
        stdout=open(os.path.join(WORK, "server.log"), "a"), stderr=subprocess.STDOUT)
    wait_for(lambda: os.path.exists(ready) and os.path.getsize(ready) > 0, "TLS server ready", 30)
    port = json.load(open(ready))["http_port"]

    def get(with_cert):
        ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.pem"))
        if with_cert:
            ctx.load_cert_chain(os.path.join(d, "cli.pem"), os.path.join(d, "cli.key"))
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=30)
        try:
            conn.request("GET", "/v1/rules")
            r = conn.getresponse()
            return r.status, json.loads(r.read())
        except (ssl.SSLError, OSError) as e:
            return None, str(e)
        finally:
            conn.close()
    st, j = get(True)
    check(st == 200 and j["rules"], f"HTTPS with a client certificate signed by the client CA: 200 (got {st})")
    st, j = get(False)
    check(st is None, f"HTTPS without a client certificate: refused in the handshake (got {st} {j})")


if __name__ == "__main__":
    sys.exit(main())
