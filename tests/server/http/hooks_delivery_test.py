#!/usr/bin/env python3
"""Webhook deliveries that are never lost, against the real release binary and a stub registry
(ctest server_http_hooks_delivery).

    tests/server/http/hooks_delivery_test.py BUILD_DIR

One SQLite store, two server processes:
  1. the first server answers a Hugging Face delivery 202 (with its delivery id and the request id
     of its check) and is killed with SIGKILL while the check runs;
  2. the second server, on the same store, resumes that delivery and finishes it (attempt 2, the
     announced request id, one history row); the same delivery sent again, and another event for
     the same commit, are answered "duplicate" without a second check;
  3. a download answered 503 once is retried and checked (attempt 2);
  4. a download answered 404 ends as download_failed (no retry), listed by GET /v1/deliveries;
  5. an MLflow write-back that fails after 3 of 6 tags is retried as a whole until every tag is
     written;
  6. GET /v1/deliveries filters, pages and validates its parameters;
  7. Hugging Face write-back (--huggingface-write-back failures): the 404 of step 4 is written to
     the repo as a discussion; a non-conformant model pushed to refs/pr/7 gets a comment on that
     pull request (a 503 answer retried) naming its rule, node and the report's public URL, while
     the conformant deliveries of steps 1-3 are not written back; the metric
     axqc_webhook_deliveries_total{source,outcome} counts every outcome.
Each check names what it expects; the first failure ends the test with exit code 1. Deadlines
are generous (nothing is timed): the test polls until the expected state is reached.
"""
import base64
import hashlib
import hmac
import http.client
import json
import os
import re
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
TOKEN = "delivery-test-token"
MLFLOW_SECRET = "mlflow-webhook-secret"
MLFLOW_TOKEN = "mlflow-api-token-77"
HF_SECRET = "hf-webhook-secret"
HF_TOKEN = "hf-write-token-5"
PUBLIC_URL = "https://axqc.example.com"
SHA_BAD = "4" * 40
SHA_KILLED = "1" * 40
SHA_FLAKY = "2" * 40
SHA_MISSING = "3" * 40
PROC = None
WORK = None
DEADLINE = 120  # seconds; generous for a loaded machine


def stop_server(expect_clean=True):
    global PROC
    rc = 0
    if PROC is not None and PROC.poll() is None:
        PROC.send_signal(signal.SIGTERM)
        try:
            code = PROC.wait(timeout=60)
        except subprocess.TimeoutExpired:
            PROC.kill()
            code = "timeout"
        if code != 0 and expect_clean:
            print(f"FAIL: axqc-server exited {code} on SIGTERM", flush=True)
            rc = 1
    PROC = None
    return rc


def finish(rc):
    rc = stop_server() or rc
    if rc != 0 and WORK:
        for name in ("server1.log", "server2.log"):
            path = os.path.join(WORK, name)
            if os.path.exists(path):
                print(f"--- {name} (tail) ---")
                print(open(path).read()[-5000:])
    if WORK:
        shutil.rmtree(WORK, ignore_errors=True)
    return rc


def check(cond, what):
    if not cond:
        print("FAIL:", what, flush=True)
        raise SystemExit(finish(1))
    print("ok:", what, flush=True)


def wait_for(pred, what, timeout=DEADLINE):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.25)
    check(False, what + " (waited %d s)" % timeout)


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
        j = data.decode("utf-8", "replace")
    return r.status, j


def start_server(cmd, log_name):
    global PROC
    ready = os.path.join(WORK, "ready.json")
    if os.path.exists(ready):
        os.unlink(ready)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AXQC_")}
    PROC = subprocess.Popen(cmd + ["--ready-file", ready],
                            stdout=open(os.path.join(WORK, log_name), "w"),
                            stderr=subprocess.STDOUT, env=env)
    wait_for(lambda: os.path.exists(ready) and os.path.getsize(ready) > 0, "server ready", 60)
    return json.load(open(ready))


def hf_body(repo, sha, action="update", refs=None):
    body = {"event": {"action": action, "scope": "repo.content"},
            "repo": {"type": "model", "name": repo, "headSha": sha}}
    if refs:
        body["updatedRefs"] = [{"ref": r, "oldSha": "0" * 40, "newSha": sha} for r in refs]
    return json.dumps(body)


def hf(port, body):
    return call(port, "POST", "/v1/hooks/huggingface", body=body, token=None,
                headers={"X-Webhook-Secret": HF_SECRET, "Content-Type": "application/json"})


def mlflow(port, payload, delivery_id):
    body = json.dumps(payload)
    ts = str(int(time.time()))
    sig = "v1," + base64.b64encode(hmac.new(
        MLFLOW_SECRET.encode(), f"{delivery_id}.{ts}.{body}".encode(),
        hashlib.sha256).digest()).decode()
    return call(port, "POST", "/v1/hooks/mlflow", body=body, token=None,
                headers={"Content-Type": "application/json", "X-MLflow-Delivery-Id": delivery_id,
                         "X-MLflow-Timestamp": ts, "X-MLflow-Signature": sig})


def deliveries(port, query=""):
    st, j = call(port, "GET", "/v1/deliveries" + query)
    if st != 200 or not isinstance(j, dict):
        check(False, f"GET /v1/deliveries{query}: 200 (got {st} {j})")
    return j


def delivery(port, delivery_id):
    for d in deliveries(port, "?limit=1000")["deliveries"]:
        if d["delivery_id"] == delivery_id:
            return d
    return None


def settled(port, delivery_id):
    d = delivery(port, delivery_id)
    return d if d and d["state"] in ("done", "failed") else None


def metric_values(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    out = {}
    for m in re.finditer(r'^axqc_webhook_deliveries_total\{([^}]*)\} (\S+)$', text, re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        out[(labels["source"], labels["outcome"])] = float(m.group(2))
    return out


def main():
    global WORK
    if not os.path.exists(SERVER):
        print("axqc-server not built:", SERVER)
        return 1
    WORK = tempfile.mkdtemp(prefix="axqc-deliveries-")
    ok = os.path.join(EXAMPLES, "conformant_cnn.onnx")
    models = os.path.join(WORK, "registry")
    for rel in (f"org/killed/{SHA_KILLED}", f"org/flaky/{SHA_FLAKY}", "detector/1"):
        os.makedirs(os.path.join(models, *rel.split("/")))
        shutil.copy(ok, os.path.join(models, *rel.split("/"), "model.onnx"))
    os.makedirs(os.path.join(models, "org", "bad", SHA_BAD))
    shutil.copy(os.path.join(EXAMPLES, "broken_missing_qdq.onnx"),
                os.path.join(models, "org", "bad", SHA_BAD, "model.onnx"))
    stub, stub_port = registry_stub.start(models, MLFLOW_TOKEN, hf_token=HF_TOKEN)
    for name, value in (("token", TOKEN), ("mlflow-secret", MLFLOW_SECRET),
                        ("mlflow-token", MLFLOW_TOKEN), ("hf-secret", HF_SECRET),
                        ("hf-token", HF_TOKEN)):
        with open(os.path.join(WORK, name), "w") as f:
            f.write(value + "\n")
    base = [SERVER, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
            "--http-listen", "127.0.0.1:0",
            "--store-path", os.path.join(WORK, "store.sqlite3"),
            "--auth-token-file", os.path.join(WORK, "token"), "--max-model-bytes", "1MiB",
            "--max-inline-bytes", "1MiB",
            "--url-allow-host", f"127.0.0.1:{stub_port}",
            "--mlflow-webhook-secret-file", os.path.join(WORK, "mlflow-secret"),
            "--mlflow-url", f"http://127.0.0.1:{stub_port}",
            "--mlflow-token-file", os.path.join(WORK, "mlflow-token"),
            "--mlflow-write-back", "true",
            "--huggingface-webhook-secret-file", os.path.join(WORK, "hf-secret"),
            "--huggingface-url", f"http://127.0.0.1:{stub_port}",
            "--huggingface-token-file", os.path.join(WORK, "hf-token"),
            "--huggingface-write-back", "failures", "--public-url", PUBLIC_URL + "/",
            "--webhook-retry-seconds", "1", "--webhook-retry-max-seconds", "2",
            "--webhook-max-attempts", "4"]

    def calls(substring):
        with stub.lock:
            return [c for c in stub.calls if substring in c["path"]]

    # --- 1. a 202 answered, then the server is killed while the check runs
    ports = start_server(base + ["--test-check-delay-seconds", "30"], "server1.log")
    port = ports["http_port"]
    st, j = hf(port, hf_body("org/killed", SHA_KILLED))
    check(st == 202 and j["status"] == "accepted" and j.get("delivery_id") and j.get("request_id"),
          f"Hub delivery: 202 with delivery_id and request_id (got {st} {j})")
    killed_id, killed_request = j["delivery_id"], j["request_id"]
    # The delivery is in the store before the answer: the second server sees it.
    wait_for(lambda: calls(f"/org/killed/resolve/{SHA_KILLED}/"), "the first server downloads the model")
    PROC.send_signal(signal.SIGKILL)
    PROC.wait(timeout=30)
    check(PROC.returncode == -signal.SIGKILL, "the first server was killed (SIGKILL) during the check")

    # --- 2. the second server resumes it
    ports = start_server(base, "server2.log")
    port, metrics_port = ports["http_port"], ports["metrics_port"]
    d = wait_for(lambda: settled(port, killed_id), "the killed server's delivery is resumed and finished")
    check(d["state"] == "done" and d["outcome"] == "conformant" and d["attempts"] == 2
          and d["request_id"] == killed_request and d["source"] == "huggingface"
          and d["model"] == "org/killed" and d["revision"] == SHA_KILLED
          and d["report"].startswith("/v1/reports/") and len(d["sha256"]) == 64,
          f"resumed delivery: done, conformant, attempt 2, the announced request id (got {d})")
    st, j = call(port, "GET", "/v1/models?label.hf.repo=org/killed")
    check(st == 200 and len(j["models"]) == 1 and j["models"][0]["request_id"] == killed_request,
          f"one history row for the resumed delivery, with its request id (got {j})")
    st, j = call(port, "GET", "/v1/stats?label.hf.repo=org/killed")
    check(st == 200 and int(j["total"]["requests"]) == 1, f"one check of org/killed (got {j.get('total')})")
    downloads = len(calls(f"/org/killed/resolve/{SHA_KILLED}/"))

    # --- the same delivery again after the restart: no second check
    st, j = hf(port, hf_body("org/killed", SHA_KILLED))
    check(st == 200 and j["status"] == "duplicate" and j["delivery_id"] == killed_id
          and j["request_id"] == killed_request and j["outcome"] == "conformant",
          f"the same delivery after the restart: 200 duplicate with the first request id (got {st} {j})")
    st, j = hf(port, hf_body("org/killed", SHA_KILLED, action="create"))
    check(st == 200 and j["status"] == "duplicate" and j["delivery_id"] == killed_id,
          f"another event for the same commit: 200 duplicate (got {st} {j})")

    # --- 3. a download answered 503 once: retried, checked
    stub.failures.append([f"/org/flaky/resolve/{SHA_FLAKY}/", 503, 1])
    st, j = hf(port, hf_body("org/flaky", SHA_FLAKY))
    check(st == 202 and j["status"] == "accepted", f"Hub delivery org/flaky: 202 (got {st} {j})")
    flaky_id = j["delivery_id"]
    d = wait_for(lambda: settled(port, flaky_id), "the delivery with a 503 download finishes")
    check(d["state"] == "done" and d["outcome"] == "conformant" and d["attempts"] == 2
          and d["error"] == "", f"503 then 200: done, conformant, attempt 2 (got {d})")
    check(len(calls(f"/org/flaky/resolve/{SHA_FLAKY}/")) == 2,
          "the model was requested twice (503, then 200)")

    # --- 4. a download answered 404: download_failed, not retried
    st, j = hf(port, hf_body("org/missing", SHA_MISSING))
    check(st == 202 and j["status"] == "accepted", f"Hub delivery org/missing: 202 (got {st} {j})")
    missing_id = j["delivery_id"]
    d = wait_for(lambda: settled(port, missing_id), "the delivery with a 404 download ends")
    check(d["state"] == "failed" and d["outcome"] == "download_failed" and d["attempts"] == 1
          and "HTTP 404" in d["error"] and "NOT_FOUND" in d["error"],
          f"404: failed, download_failed, one attempt, the error named (got {d})")
    j = deliveries(port, "?outcome=download_failed")
    check([x["delivery_id"] for x in j["deliveries"]] == [missing_id],
          f"GET /v1/deliveries?outcome=download_failed lists it (got {j})")

    # --- 5. the MLflow write-back fails after 3 of 6 tags, then recovers
    stub.failures.append(["/model-versions/set-tag", 503, 1, 3])
    created = {"entity": "model_version", "action": "created",
               "data": {"name": "detector", "version": "1", "run_id": "r1"}}
    mlflow_delivery = str(uuid.uuid4())
    st, j = mlflow(port, created, mlflow_delivery)
    check(st == 202 and j["status"] == "accepted" and j["delivery_id"] == "mlflow:" + mlflow_delivery,
          f"MLflow delivery: 202 accepted (got {st} {j})")
    mlflow_id, mlflow_request = j["delivery_id"], j["request_id"]
    d = wait_for(lambda: settled(port, mlflow_id), "the MLflow delivery finishes")
    check(d["state"] == "done" and d["outcome"] == "conformant" and d["attempts"] == 2,
          f"write-back failed midway, then all tags: done, conformant, attempt 2 (got {d})")
    tag_calls = calls("/model-versions/set-tag")
    check(len(tag_calls) == 11, f"set-tag: 3 written, 1 failed, then all 7 again (got {len(tag_calls)})")
    tags = {json.loads(c["body"])["key"]: json.loads(c["body"])["value"] for c in tag_calls}
    check(set(tags) == {"axqc.verdict", "axqc.errors", "axqc.warnings", "axqc.sha256",
                        "axqc.rule_set_version", "axqc.request_id", "axqc.report_url"}
          and tags["axqc.verdict"] == "conformant" and tags["axqc.request_id"] == mlflow_request
          and tags["axqc.report_url"] == f"{PUBLIC_URL}/models/{tags['axqc.sha256']}",
          f"every tag written, the request id announced in the 202, the report's URL (got {tags})")
    st, j = mlflow(port, created, mlflow_delivery)
    check(st == 200 and j["status"] == "duplicate", f"the MLflow delivery again: duplicate (got {st} {j})")
    st, j = mlflow(port, created, str(uuid.uuid4()))
    check(st == 200 and j["status"] == "duplicate" and j["delivery_id"] == mlflow_id,
          f"a new delivery of the same model version: duplicate (got {st} {j})")
    time.sleep(1.5)
    check(len(calls("/model-versions/set-tag")) == 11 and len(calls("/detector/1/model.onnx")) == 1,
          "no registry call after the duplicates")
    check(len(calls(f"/org/killed/resolve/{SHA_KILLED}/")) == downloads,
          "no download after the duplicates of the resumed delivery")

    # --- 6. the listing and its parameters
    j = deliveries(port)
    check([x["delivery_id"] for x in j["deliveries"]] == [mlflow_id, missing_id, flaky_id, killed_id]
          and "next_cursor" not in j, f"GET /v1/deliveries: all four, newest first (got {j})")
    j = deliveries(port, "?limit=3")
    check(len(j["deliveries"]) == 3 and j.get("next_cursor"), f"limit=3: a page and a cursor (got {j})")
    j = deliveries(port, "?limit=3&cursor=" + j["next_cursor"])
    check([x["delivery_id"] for x in j["deliveries"]] == [killed_id], f"the next page (got {j})")
    j = deliveries(port, "?source=mlflow&state=done")
    check([x["delivery_id"] for x in j["deliveries"]] == [mlflow_id], f"filters source, state (got {j})")
    for query, what in (("?limit=0", "limit must be 1..1000"), ("?limit=1001", "limit must be 1..1000"),
                        ("?source=github", "source must be one of"),
                        ("?state=lost", "state must be one of"),
                        ("?outcome=x", "outcome must be one of"),
                        ("?cursor=-1", "cursor must be"), ("?label.a=b", "unknown query parameter"),
                        ("?since=1h", "unknown query parameter")):
        st, j = call(port, "GET", "/v1/deliveries" + query)
        msg = (j or {}).get("error", {}).get("message", "") if isinstance(j, dict) else ""
        check(st == 400 and what in msg, f"GET /v1/deliveries{query}: 400 '{what}' (got {st} {msg})")
    st, j = call(port, "GET", "/v1/deliveries", token=None)
    check(st == 401, f"GET /v1/deliveries without the token: 401 (got {st})")

    # --- 7. Hugging Face write-back: failures only
    posts = calls("/api/models/")
    check([c["path"] for c in posts] == ["/api/models/org/missing/discussions"],
          f"one write-back so far: a discussion on org/missing, none for the conformant repos (got {posts})")
    post = json.loads(posts[0]["body"])
    check(posts[0]["authorization"] == "Bearer " + HF_TOKEN and post["pullRequest"] is False
          and "download_failed" in post["title"] and "HTTP 404" in post["description"]
          and "could not check" in post["description"] and "Report:" not in post["description"],
          f"the 404 written back: token, title with the outcome, the error, no report (got {post})")
    stub.failures.append(["/discussions/7/comment", 503, 1])
    st, j = hf(port, hf_body("org/bad", SHA_BAD, refs=["refs/pr/7"]))
    check(st == 202 and j["status"] == "accepted", f"Hub delivery for refs/pr/7: 202 (got {st} {j})")
    bad_id, bad_request = j["delivery_id"], j["request_id"]
    d = wait_for(lambda: settled(port, bad_id), "the delivery of the pull request finishes")
    check(d["state"] == "done" and d["outcome"] == "non_conformant" and d["attempts"] == 2
          and d["error"] == "", f"non-conformant, the 503 comment retried: done, attempt 2 (got {d})")
    comments = calls("/api/models/org/bad/discussions/7/comment")
    check(len(comments) == 2 and not [c for c in posts + calls("/api/models/org/bad/")
                                        if c["path"] == "/api/models/org/bad/discussions"],
          f"a comment on pull request 7 (503, then 200), no new discussion (got {comments})")
    text = json.loads(comments[-1]["body"])["comment"]
    for want in ("**axqc: non_conformant**", f"`{SHA_BAD[:12]}`", "op/output-not-quantized",
                 "| `` add `` |", f"request id `` {bad_request} ``", f"Report: {PUBLIC_URL}/models/{d['sha256']}"):
        check(want in text, f"the comment has {want!r} (got {text!r})")
    st, j = call(port, "GET", "/v1/models?label.hf.pull_request=7")
    check(st == 200 and [m["request_id"] for m in j["models"]] == [bad_request],
          f"the check carries the label hf.pull_request=7 (got {j})")

    got = metric_values(metrics_port)
    want = {("huggingface", "conformant"): 2, ("huggingface", "download_failed"): 1,
            ("huggingface", "duplicate"): 2, ("huggingface", "retry"): 2,
            ("huggingface", "non_conformant"): 1,
            ("mlflow", "conformant"): 1, ("mlflow", "retry"): 1, ("mlflow", "duplicate"): 2}
    check(got == want, f"axqc_webhook_deliveries_total{{source,outcome}} (got {got})")
    rc = stop_server()
    check(rc == 0, "axqc-server exits 0 on SIGTERM")
    return finish(0)


if __name__ == "__main__":
    sys.exit(main())
