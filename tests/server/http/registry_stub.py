#!/usr/bin/env python3
"""A stub model registry for the tests of axqc-server's webhooks: the parts of MLflow's REST API
and of the Hugging Face Hub that the server calls.

    registry_stub.py --port-file FILE --models DIR [--token TOKEN]

MLflow:  GET  /api/2.0/mlflow/model-versions/get-download-uri?name=N&version=V
              -> {"artifact_uri": "mlflow-artifacts:/models/N/V"}
         GET  /api/2.0/mlflow-artifacts/artifacts/models/N/V/model.onnx -> DIR/N/V/model.onnx
         POST /api/2.0/mlflow/model-versions/set-tag {"name","version","key","value"} -> {}
Hub:     GET  /ORG/REPO/resolve/REV/model.onnx -> DIR/ORG/REPO/REV/model.onnx
         POST /api/models/ORG/REPO/discussions {"title","description","pullRequest"} -> {"num"}
         POST /api/models/ORG/REPO/discussions/N/comment {"comment"} -> {"newMessage": {...}}
Test:    GET  /_calls -> every request received so far (method, path, body, authorization)

Scripted failures (importable use): server.failures is a list of
[path substring, status, count, pass first]; after `pass first` requests whose path contains the
substring were served, the next `count` of them are answered `status` instead.

With --token every MLflow call must carry "Authorization: Bearer TOKEN" (401 otherwise); with
hf_token (importable use) every Hub discussion call must carry that token. Also
importable: start(models_dir, token, artifact_uris, hf_token=...) runs it on a thread and returns
(server, port);
artifact_uris (model name -> artifact_uri, also server.artifact_uris) replaces the answer of
get-download-uri for those models.
"""
import argparse
import json
import os
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def make_handler(models, token, calls, lock, artifact_uris=None, failures=None, hf_token=""):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send(self, code, body, ctype="application/json"):
            if isinstance(body, str):
                body = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def record(self, body=b""):
            with lock:
                calls.append({"method": self.command, "path": self.path,
                              "body": body.decode("utf-8", "replace"),
                              "authorization": self.headers.get("Authorization", "")})

        def scripted_failure(self):
            with lock:
                for f in failures or []:
                    if f[2] > 0 and f[0] in self.path:
                        if len(f) > 3 and f[3] > 0:
                            f[3] -= 1
                            return False
                        f[2] -= 1
                        status = f[1]
                        break
                else:
                    return False
            self.send(status, json.dumps({"error_code": "SCRIPTED_FAILURE"}))
            return True

        def authorized(self):
            if token and self.headers.get("Authorization", "") != "Bearer " + token:
                self.send(401, json.dumps({"error_code": "UNAUTHENTICATED"}))
                return False
            return True

        def file(self, rel):
            path = os.path.realpath(os.path.join(models, rel))
            if not path.startswith(os.path.realpath(models) + os.sep) or not os.path.isfile(path):
                return self.send(404, json.dumps({"error_code": "RESOURCE_DOES_NOT_EXIST"}))
            with open(path, "rb") as f:
                self.send(200, f.read(), "application/octet-stream")

        def do_GET(self):
            self.record()
            url = urllib.parse.urlsplit(self.path)
            q = dict(urllib.parse.parse_qsl(url.query))
            if url.path == "/_calls":
                with lock:
                    return self.send(200, json.dumps(calls))
            if self.scripted_failure():
                return
            if url.path == "/api/2.0/mlflow/model-versions/get-download-uri":
                if not self.authorized():
                    return
                uri = (artifact_uris or {}).get(
                    q.get("name"), f"mlflow-artifacts:/models/{q['name']}/{q['version']}")
                return self.send(200, json.dumps({"artifact_uri": uri}))
            prefix = "/api/2.0/mlflow-artifacts/artifacts/models/"
            if url.path.startswith(prefix):
                if not self.authorized():
                    return
                return self.file(urllib.parse.unquote(url.path[len(prefix):]))
            parts = urllib.parse.unquote(url.path).strip("/").split("/")
            if len(parts) == 5 and parts[2] == "resolve":  # ORG/REPO/resolve/REV/FILE
                return self.file(os.path.join(parts[0], parts[1], parts[3], parts[4]))
            self.send(404, json.dumps({"error_code": "ENDPOINT_NOT_FOUND"}))

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n)
            self.record(body)
            if self.scripted_failure():
                return
            if self.path == "/api/2.0/mlflow/model-versions/set-tag":
                if not self.authorized():
                    return
                req = json.loads(body)
                if not all(k in req for k in ("name", "version", "key", "value")):
                    return self.send(400, json.dumps({"error_code": "INVALID_PARAMETER_VALUE"}))
                return self.send(200, "{}")
            m = re.fullmatch(r"/api/models/([A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)?)/discussions"
                             r"(?:/([0-9]+)/comment)?", self.path)
            if m:
                if self.headers.get("Authorization", "") != "Bearer " + hf_token:
                    return self.send(401, json.dumps({"error": "Invalid credentials"}))
                try:
                    req = json.loads(body)
                except ValueError:
                    return self.send(400, json.dumps({"error": "not JSON"}))
                if m.group(2):
                    if not isinstance(req.get("comment"), str) or not req["comment"]:
                        return self.send(400, json.dumps({"error": "comment is required"}))
                    return self.send(200, json.dumps({"newMessage": {"type": "comment"}}))
                if not isinstance(req.get("title"), str) or len(req["title"]) < 3:
                    return self.send(400, json.dumps({"error": "title is required"}))
                return self.send(200, json.dumps({"num": sum(
                    1 for c in calls if c["path"] == self.path and c["method"] == "POST")}))
            self.send(404, json.dumps({"error_code": "ENDPOINT_NOT_FOUND"}))

    return Handler


def start(models, token="", artifact_uris=None, port=0, hf_token=""):
    calls, lock, failures = [], threading.Lock(), []
    uris = {} if artifact_uris is None else artifact_uris
    server = ThreadingHTTPServer(("127.0.0.1", port),
                                 make_handler(models, token, calls, lock, uris, failures, hf_token))
    server.calls = calls
    server.failures = failures
    server.lock = lock
    server.artifact_uris = uris
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--token", default="")
    a = ap.parse_args()
    calls, lock = [], threading.Lock()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(a.models, a.token, calls, lock))
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(a.port_file + ".tmp", a.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
