#!/usr/bin/env python3
"""Hostile webhook deliveries and JSON bodies against the real release binary (ctest
server_http_hooks_hostile).

    tests/server/http/hooks_hostile_test.py BUILD_DIR

Starts axqc-server with both webhooks pointed at a stub registry (registry_stub.py, with a token)
and a second stub on another loopback port (another origin, also allowlisted), then checks:
  - mistyped and deeply nested bodies (Hugging Face, signed MLflow, POST /v1/check JSON) are
    400 INVALID_ARGUMENT naming the field or the depth limit, and the server still answers;
  - the MLflow token goes to the registry's own origin only: an artifact_uri on the other host
    is downloaded without it;
  - artifact locations and Hub names/revisions with '..' segments (plain, percent-encoded,
    backslashes) are refused and never requested.
Each check names what it expects; the first failure ends the test with exit code 1.
"""
import base64
import hashlib
import hmac
import http.client
import json
import os
import shutil
import signal
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
TOKEN = "hostile-test-token"
MLFLOW_SECRET = "mlflow-webhook-secret"
MLFLOW_TOKEN = "mlflow-api-token-4f1c"
HF_SECRET = "hf-webhook-secret"
HF_TOKEN = "hf-api-token-9a2b"
SHA = "8f1c2a9d0e3b4c5d6e7f8091a2b3c4d5e6f70812"
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
    if rc != 0 and WORK and os.path.exists(os.path.join(WORK, "server.log")):
        print("--- server log (tail) ---")
        print(open(os.path.join(WORK, "server.log")).read()[-4000:])
    if WORK:
        shutil.rmtree(WORK, ignore_errors=True)
    return rc


def check(cond, what):
    if not cond:
        print("FAIL:", what, flush=True)
        raise SystemExit(finish(1))
    print("ok:", what, flush=True)


def call(port, method, path, body=None, headers=None, token=TOKEN):
    h = dict(headers or {})
    if token is not None:
        h["Authorization"] = "Bearer " + token
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    try:
        j = json.loads(data) if data else None
    except ValueError:
        j = None
    return r.status, j


def message(j):
    return (j or {}).get("error", {}).get("message", "")


def code(j):
    return (j or {}).get("error", {}).get("code")


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
    WORK = tempfile.mkdtemp(prefix="axqc-hooks-")
    ok = os.path.join(EXAMPLES, "conformant_cnn.onnx")
    models = os.path.join(WORK, "registry")
    for rel in ("elsewhere/1", f"org/classifier/{SHA}"):
        os.makedirs(os.path.join(models, *rel.split("/")))
        shutil.copy(ok, os.path.join(models, *rel.split("/"), "model.onnx"))
    registry, port_a = registry_stub.start(models, MLFLOW_TOKEN)
    other, port_b = registry_stub.start(models)  # another origin, allowlisted too
    for name, value in (("token", TOKEN), ("mlflow-secret", MLFLOW_SECRET),
                        ("mlflow-token", MLFLOW_TOKEN), ("hf-secret", HF_SECRET),
                        ("hf-token", HF_TOKEN)):
        with open(os.path.join(WORK, name), "w") as f:
            f.write(value + "\n")
    ready = os.path.join(WORK, "ready.json")
    cmd = [SERVER, "--listen", "127.0.0.1:0", "--metrics-listen", "", "--http-listen", "127.0.0.1:0",
           "--ready-file", ready, "--store-path", os.path.join(WORK, "store.sqlite3"),
           "--auth-token-file", os.path.join(WORK, "token"), "--max-model-bytes", "1MiB",
           "--max-inline-bytes", "1MiB",
           "--http-max-json-bytes", "1MiB",
           "--url-allow-host", f"127.0.0.1:{port_a}", "--url-allow-host", f"127.0.0.1:{port_b}",
           "--mlflow-webhook-secret-file", os.path.join(WORK, "mlflow-secret"),
           "--mlflow-url", f"http://127.0.0.1:{port_a}",
           "--mlflow-token-file", os.path.join(WORK, "mlflow-token"), "--mlflow-write-back", "true",
           "--huggingface-webhook-secret-file", os.path.join(WORK, "hf-secret"),
           "--huggingface-url", f"http://127.0.0.1:{port_a}",
           "--huggingface-token-file", os.path.join(WORK, "hf-token")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AXQC_")}
    SERVER_PROC = subprocess.Popen(cmd, stdout=open(os.path.join(WORK, "server.log"), "w"),
                                   stderr=subprocess.STDOUT, env=env)
    wait_for(lambda: os.path.exists(ready) and os.path.getsize(ready) > 0, "server ready", 30)
    port = json.load(open(ready))["http_port"]

    def alive(after):
        st, j = call(port, "GET", "/v1/rules")
        check(SERVER_PROC.poll() is None and st == 200 and j.get("rules"),
              f"the server still answers after {after}")

    def hf(body):
        return call(port, "POST", "/v1/hooks/huggingface", body=body, token=None,
                    headers={"X-Webhook-Secret": HF_SECRET, "Content-Type": "application/json"})

    def mlflow(body):
        delivery, ts = str(uuid.uuid4()), str(int(time.time()))
        sig = "v1," + base64.b64encode(hmac.new(
            MLFLOW_SECRET.encode(), f"{delivery}.{ts}.".encode() + body.encode(),
            hashlib.sha256).digest()).decode()
        return call(port, "POST", "/v1/hooks/mlflow", body=body, token=None,
                    headers={"Content-Type": "application/json", "X-MLflow-Delivery-Id": delivery,
                             "X-MLflow-Timestamp": ts, "X-MLflow-Signature": sig})

    # --- mistyped and deeply nested bodies: 400 naming the field, the server keeps running
    content = '{"event":{"action":"update","scope":"repo.content"},"repo":'
    for body, field in (('{"event":5,"repo":{}}', "field event must be an object, not number"),
                        ("[1,2]", "webhook body must be a JSON object, not array"),
                        (content + '{"type":"model","name":5}}',
                         "field repo.name must be a string, not number"),
                        ('{"event":{"action":["x"],"scope":"repo.content"},'
                         '"repo":{"type":"model","name":"org/m"}}',
                         "field event.action must be a string, not array"),
                        ("[" * 200000, "more than 64 levels deep")):
        st, j = hf(body)
        check(st == 400 and code(j) == "INVALID_ARGUMENT" and field in message(j),
              f"Hub body {body[:40]!r}: 400 '{field}' (got {st} {message(j)[:120]})")
        alive(f"the Hub body {body[:40]!r}")
    for body, field in (("[" * 200000, "more than 64 levels deep"),
                        ('{"entity":"model_version","action":["x"]}',
                         "field action must be a string, not array"),
                        ('{"entity":"model_version","action":"created","data":{"name":5,"version":"1"}}',
                         "field data.name must be a string, not number"),
                        ('{"entity":"model_version","action":"created","data":'
                         + "[" * 100 + "]" * 100 + "}", "more than 64 levels deep")):
        st, j = mlflow(body)
        check(st == 400 and code(j) == "INVALID_ARGUMENT" and field in message(j),
              f"signed MLflow body {body[:40]!r}: 400 '{field}' (got {st} {message(j)[:120]})")
        alive(f"the signed MLflow body {body[:40]!r}")
    for body, field in (('{"labels":' + "[" * 200000, "more than 64 levels deep"),
                        ('{"options":' + '{"a":' * 100 + "1" + "}" * 101, "more than 64 levels deep"),
                        ('{"path":5}', "not a valid JSON CheckRequest")):
        st, j = call(port, "POST", "/v1/check", body=body, headers={"Content-Type": "application/json"})
        check(st == 400 and code(j) == "INVALID_ARGUMENT" and field in message(j),
              f"check JSON {body[:30]!r}: 400 '{field}' (got {st} {message(j)[:120]})")
        alive(f"the check JSON {body[:30]!r}")

    # --- the MLflow token goes to the registry's origin only
    registry.artifact_uris["elsewhere"] = (
        f"http://127.0.0.1:{port_b}/api/2.0/mlflow-artifacts/artifacts/models/elsewhere/1")
    created = '{"entity":"model_version","action":"created","data":{"name":"%s","version":"1"}}'
    st, j = mlflow(created % "elsewhere")
    check(st == 202 and j["status"] == "accepted", f"MLflow elsewhere/1: 202 (got {st} {j})")

    def other_calls():
        with other.lock:
            return [c for c in other.calls if c["path"].endswith("/elsewhere/1/model.onnx")]
    got = wait_for(other_calls, "the model on the other host is downloaded")
    check(all(c["authorization"] == "" for c in got),
          f"the other allowlisted host gets no Authorization header (got {[c['authorization'] for c in got]})")
    models_j = wait_for(lambda: call(port, "GET", "/v1/models?label.mlflow.model=elsewhere")[1]["models"],
                        "elsewhere/1 checked")
    check(models_j[0]["verdict"] == "conformant", f"elsewhere/1 checked: conformant (got {models_j})")

    # --- artifact locations that leave the artifact directory are refused, never requested
    def tags(name):
        with registry.lock:
            bodies = [json.loads(c["body"]) for c in registry.calls
                      if c["path"] == "/api/2.0/mlflow/model-versions/set-tag"]
        return {b["key"]: b["value"] for b in bodies if b["name"] == name}
    for name, uri in (("escape", "mlflow-artifacts:/../../../../etc"),
                      ("escape-encoded", "mlflow-artifacts:/models/%2e%2E/%2E%2e/etc"),
                      ("escape-slash", "mlflow-artifacts:/models/x%2f..%2f..%2fetc"),
                      ("escape-backslash", "mlflow-artifacts:/models/..\\..\\etc"),
                      ("escape-http", f"http://127.0.0.1:{port_a}/api/2.0/mlflow-artifacts/artifacts/a/../../../x")):
        registry.artifact_uris[name] = uri
        st, j = mlflow(created % name)
        check(st == 202, f"MLflow {name}/1: 202 (got {st} {j})")
        t = wait_for(lambda: tags(name) if "axqc.error" in tags(name) else None,
                     f"the failure of {name}/1 is written back")
        check(t["axqc.verdict"] == "invalid_input" and "artifact location" in t["axqc.error"],
              f"{uri}: axqc.verdict invalid_input, axqc.error names the location (got {t})")
    with registry.lock:
        paths = [c["path"] for c in registry.calls]
        auth = {c["authorization"] for c in registry.calls if c["path"].startswith("/api/2.0/")}
    with other.lock:
        paths += [c["path"] for c in other.calls]
    fetched = [p for p in paths if "get-download-uri" not in p and "set-tag" not in p]
    check(not [p for p in fetched if "etc" in p or ".." in p or "%2" in p.lower() or "\\" in p or "/x" in p],
          f"no request for a location outside the artifact directory (requests: {fetched})")
    check(auth == {"Bearer " + MLFLOW_TOKEN},
          f"every call to the registry's origin carries its token (got {auth})")

    # --- Hub names and revisions
    for repo, field in (('{"type":"model","name":"org/classifier","headSha":".."}', "repo.headSha"),
                        ('{"type":"model","name":"org/classifier","headSha":"%2e%2e"}', "repo.headSha"),
                        ('{"type":"model","name":"org/classifier","headSha":"a/../../b"}', "repo.headSha"),
                        ('{"type":"model","name":"org/..","headSha":"' + SHA + '"}', "repo.name"),
                        ('{"type":"model","name":"org/%2e%2e","headSha":"' + SHA + '"}', "repo.name")):
        st, j = hf(content + repo + "}")
        check(st == 400 and code(j) == "INVALID_ARGUMENT" and field in message(j),
              f"Hub repo {repo}: 400 naming {field} (got {st} {message(j)[:120]})")
    st, j = hf(content + '{"type":"model","name":"org/classifier","headSha":"' + SHA + '"}}')
    check(st == 202 and j["status"] == "accepted", f"Hub update at a 40-hex sha: 202 (got {st} {j})")
    m = wait_for(lambda: call(port, "GET", "/v1/models?label.hf.repo=org/classifier")[1]["models"],
                 "Hub model checked")
    check(m[0]["verdict"] == "conformant" and m[0]["labels"]["hf.revision"] == SHA,
          f"Hub check at {SHA[:12]}: conformant (got {m})")
    with registry.lock:
        hub = [c for c in registry.calls if "/resolve/" in c["path"]]
    check([c["path"] for c in hub] == [f"/org/classifier/resolve/{SHA}/model.onnx"]
          and hub[0]["authorization"] == "Bearer " + HF_TOKEN,
          f"one Hub download, with the Hub token, and none for the refused deliveries (got {hub})")
    return finish(0)


if __name__ == "__main__":
    sys.exit(main())
