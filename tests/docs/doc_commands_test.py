#!/usr/bin/env python3
"""Runs every command line of the user documentation as written, against real servers.

    tests/docs/doc_commands_test.py [BUILD_DIR]      (default: build/release; ctest docs_commands)

What is extracted:
  * README.md, docs/ci.md, docs/api.md, docs/operations.md, docs/install.md, docs/targets.md,
    docs/pulsar2.md: every command of every ```sh block
    (a command ends where bash's own parser says it is complete, so continuation lines, quotes and
    { ...; } groups are one command);
  * examples/ci/github-actions.yml: every step (the axqc Action runs, other actions are skipped);
    examples/ci/gitlab-ci.yml: the job, which extends the template's `.axqc-check`.
EXPECTED below lists each of them with its exit code, "server" (an axqc-server start: run in the
background, must become ready and exit 0 on SIGTERM at the end), or SKIP with the reason. The test
fails when the documents and EXPECTED differ in either direction, so a command cannot be added,
changed or dropped without this test running it.

How they run: one session per document, in a fresh directory with the fixtures the commands name
(model.onnx, a.onnx, models/, event.json, a test CA and certificates, ...), `build/release` linking
to BUILD_DIR and BUILD_DIR's `axqc` and `axqc-server` first on PATH. Documents that do not start a
server themselves get one from the test. Addresses are the only thing rewritten: the documented
127.0.0.1:50051, axqc.internal:50051 and 127.0.0.1:9464 go to the session's server,
0.0.0.0:50443 and axqc.internal:50443 to the TLS server ci.md starts, /tmp/ to the session
directory; a server started without --listen gets its port through AXQC_LISTEN (flags win over the
environment, so every documented flag still applies). `export NAME=...` and `NAME=$(...)` lines
set variables for the following commands of the session. The CI examples run as their CI systems
would (tests/ci/runners.py): the job's `with:` goes to the Action (action.yml), whose steps run as
GitHub's runner runs a composite action; the GitLab job is merged with the template it extends
(ci/axqc.gitlab-ci.yml) and its script runs as gitlab-runner's shell gets it, with the project's
CI/CD variables (server, token, CA).
Both jobs gate on the repository's baseline, which the session writes first as docs/ci.md says
(`axqc check --write-baseline axqc-baseline.json ...`), and each job runs in the situations of
CI_SCENARIOS: it passes on conformant models and on a non-conformant model that is in the
baseline, and fails (with its reports still written) on a new finding in a known model and on a
new non-conformant model.
"""
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ci"))
import runners  # noqa: E402  tests/ci/runners.py: the CI runners' conventions

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/release"))
SERVER_BIN = os.path.join(BUILD, "server", "axqc-server")
CLIENT_BIN = os.path.join(BUILD, "client", "axqc")
EXAMPLES = os.path.join(BUILD, "examples")

SKIP_BUILD = "builds and runs the whole project (setup, build, test suite); this test runs on its output"
SKIP_DOCKER = "needs a container engine (none on the test machines); tests/deploy checks the files statically"
SKIP_IMAGE = ("builds the container image with podman (36 CPU-minutes): deploy/docker/test-image.sh is run "
              "by hand, docs/operations.md")
SKIP_COMPOSE = ("runs the PostgreSQL compose stack with podman-compose on the image of test-image.sh "
                "(36 CPU-minutes to build): deploy/docker/test-compose.sh is run by hand, docs/operations.md")
SKIP_GRPCURL = ("grpcurl is not packaged for Debian 12 and nothing may be downloaded here; the same "
                "requests are made by the server tests (tests/server) through the generated stubs, "
                "and reflection v1 by ServerTest.ServerReflectionV1DescribesTheServices")
SKIP_EXTERNAL = "fetches from an external host (models.example.com)"
SKIP_BENCH = "the benchmark: minutes of CPU time and timings, not a functional check"
SKIP_EXTDATA = ("needs a model with external data files, which the documentation session has no "
                "generator for; tests/server/server_external_data_test.cc makes the same requests "
                "(path, Upload, tar stream, URL, webhooks) through the real binary")
SKIP_ACTION = "a GitHub action (uses:), run by GitHub only"
SKIP_PACKAGE = ("builds the Debian packages and the wheel (scripts/package), installs them with apt or "
                "builds the CLI image: deploy/docker/test-packages.sh and test-cli-image.sh install "
                "and run them in clean containers, by hand (docs/install.md)")
SKIP_CI_STEP = ("runs the GitHub Action and the GitLab template in containers of the CLI image and of "
                "debian:bookworm-slim with podman, by hand (docs/ci.md); ctest ci_step and this test run "
                "the same steps without containers")
SKIP_PIP = ("installs the Python package from the source tree; ctest python_pip_install runs "
            "`pip install ./python` offline in fresh venvs and a prefix, and ctest python runs the "
            "README's Python example (python/tests/test_docs.py)")


def skip(reason):
    return ("skip", reason)


# Per document: (command as written, expectation). Keys are compared after shell tokenizing, so
# alignment and trailing comments do not matter.
EXPECTED = {
    "README.md": [
        ("scripts/run-examples", skip(SKIP_BUILD)),
        ("scripts/test", skip(SKIP_BUILD)),
        ("AXQC_ONNX_TARBALL=/path/to/onnx-1.22.0.tar.gz scripts/test", skip(SKIP_BUILD)),
        ("build/release/client/axqc check model.onnx", 0),
        ("build/release/client/axqc check -c model.onnx", 0),
        ("build/release/client/axqc check --format json -o report.json a.onnx b.onnx", 1),
        ("build/release/client/axqc check --explain model.onnx", 0),
        ("build/release/client/axqc check --statistics build/release/examples", 1),
        ("build/release/client/axqc check --ignore role/ --exit-zero a.onnx b.onnx", 0),
        ("build/release/client/axqc check --format html -o report.html model.onnx", 0),
        ("build/release/client/axqc rules", 0),
        ("build/release/client/axqc rules qdq/scale-value", 0),
        ("build/release/client/axqc check --write-baseline axqc-baseline.json b.onnx", 0),
        ("build/release/client/axqc check --baseline axqc-baseline.json b.onnx", 0),
        ("build/release/client/axqc fix model.onnx -o model.fixed.onnx", 0),
        ("build/release/client/axqc fix --dry-run -c b.onnx", 1),
        ("build/release/client/axqc fix --list", 0),
        ("bench/run.sh [WORK_DIR]", skip(SKIP_BENCH)),
        ("build/release/server/axqc-server --allowed-root build/release/examples "
         "--store-path /tmp/axqc.sqlite3 &", "server"),
        ("build/release/client/axqc check --server 127.0.0.1:50051 model.onnx", 0),
        ("build/release/client/axqc check --server 127.0.0.1:50051 --ref conformant_cnn.onnx "
         "--format junit", 0),
        ("build/release/client/axqc stats --server 127.0.0.1:50051 --since 7d", 0),
        ("build/release/client/axqc health --server 127.0.0.1:50051", 0),
        ("curl -s http://127.0.0.1:9464/metrics | grep '^axqc_checks_total'", 0),
        ("/usr/bin/python3 -m venv --system-site-packages .venv && .venv/bin/pip install --no-index ./python",
         skip(SKIP_PIP)),
        ("scripts/package", skip(SKIP_PACKAGE)),
        ("apt-get install ./out/packages/axqc_0.1.0-1_amd64.deb", skip(SKIP_PACKAGE)),
        ("docker build -f deploy/docker/Dockerfile.cli -t axqc-cli out/packages", skip(SKIP_PACKAGE)),
    ],
    "docs/ci.md": [
        ("export AXQC_SERVER=axqc.internal:50051", 0),
        ("axqc check models/*.onnx", 1),
        ("axqc check -c --label project=detector --label source=ci models/a.onnx models/b.onnx", 1),
        ("axqc check --ref detector/yolo-int8.onnx", 1),
        ("axqc check --ref https://models.example.com/yolo.onnx", skip(SKIP_EXTERNAL)),
        ("axqc stats --since 7d --by project", 0),
        ("axqc rules", 0),
        ("axqc health", 0),
        ("axqc check --local models/a.onnx", 0),
        ("axqc check llm/model.onnx", skip(SKIP_EXTDATA)),
        ("axqc check --full-upload llm/model.onnx", skip(SKIP_EXTDATA)),
        ("axqc check --ref llm/model.onnx", skip(SKIP_EXTDATA)),
        ("axqc check --ref https://models.example.com/llm/model.onnx", skip(SKIP_EXTERNAL)),
        ("""tar --format=ustar -C llm -cf - model.onnx model.onnx_data |
  curl -s -H 'Content-Type: application/x-tar' --data-binary @- http://axqc.internal:8080/v1/check""",
         skip(SKIP_EXTDATA)),
        ("axqc-server --listen 0.0.0.0:50443 --tls-cert-file server.pem --tls-key-file server.key "
         "--tls-client-ca-file clients-ca.pem --auth-token-file axqc-token &", "server"),
        ("AXQC_TOKEN=$(cat axqc-token) axqc check --server axqc.internal:50443 --ca ca.pem "
         "--cert ci.pem --key ci.key model.onnx", 0),
        ("axqc check --write-baseline axqc-baseline.json models/*.onnx", 0),
        ("axqc check --baseline axqc-baseline.json models/*.onnx", 0),
        ("axqc check --config examples/ci/axqc.toml models/*.onnx", 0),
        ("cp broken_two_defects.onnx models/b.onnx", 0),
        ("axqc check --baseline axqc-baseline.json models/*.onnx", 1),
        ("axqc check --baseline axqc-baseline.json --format gitlab -o gl-code-quality.json "
         "models/*.onnx", 1),
        ("axqc check models/", 1),
        ("axqc check --exclude b.onnx models/", 0),
        ("axqc check --statistics models/", 1),
        ("axqc check --ignore role/weight-type,op/output-not-quantized models/", 0),
        ("axqc check --select role/ --baseline axqc-baseline.json models/", 0),
        ("axqc check --exit-zero --format sarif -o axqc.sarif models/", 0),
        ("deploy/docker/test-ci-step.sh", skip(SKIP_CI_STEP)),
        ("examples/ci/registry_hook.py --server axqc.internal:50051 --map file:///models/= "
         "< event.json", 1),
        ("examples/ci/registry_hook.py --server axqc.internal:50051 --map file:///models/= "
         "--fix-plan --local-root /tmp/models < event.json", 1),
    ],
    "docs/api.md": [
        ("grpcurl -plaintext 127.0.0.1:50051 list", skip(SKIP_GRPCURL)),
        ("grpcurl -plaintext 127.0.0.1:50051 describe axqc.v1.Checker", skip(SKIP_GRPCURL)),
        ("""grpcurl -plaintext -d '{"path": "detector/yolo-int8.onnx", "labels": {"project": "detector"}}' \\
  127.0.0.1:50051 axqc.v1.Checker/Check""", skip(SKIP_GRPCURL)),
        ("""grpcurl -plaintext -max-msg-sz 67108864 \\
  -d "{\\"content\\": \\"$(base64 -w0 model.onnx)\\", \\"name\\": \\"model.onnx\\",
       \\"options\\": {\\"check_value\\": true, \\"format\\": \\"REPORT_FORMAT_JSON\\"}}" \\
  127.0.0.1:50051 axqc.v1.Checker/Check""", skip(SKIP_GRPCURL)),
        ("""grpcurl -plaintext -d '{"url": "https://models.example.com/yolo-int8.onnx?sig=...",
                        "expected_sha256": "3b0f5c...e1"}' \\
  127.0.0.1:50051 axqc.v1.Checker/Check""", skip(SKIP_GRPCURL)),
        ("""{
  echo "{\\"metadata\\": {\\"file_name\\": \\"yolo-int8.onnx\\", \\"size_bytes\\": $(stat -c%s yolo-int8.onnx),
         \\"sha256\\": \\"$(sha256sum yolo-int8.onnx | cut -d' ' -f1)\\",
         \\"labels\\": {\\"project\\": \\"detector\\", \\"source\\": \\"registry\\"}}}"
  split -b 1048576 --filter='echo "{\\"chunk\\": \\"$(base64 -w0)\\"}"' yolo-int8.onnx
} | grpcurl -plaintext -d @ 127.0.0.1:50051 axqc.v1.Checker/Upload""", skip(SKIP_GRPCURL)),
        ("""grpcurl -plaintext -d '{"path": "llm/model.onnx"}' 127.0.0.1:50051 axqc.v1.Checker/Check""",
         skip(SKIP_GRPCURL)),
        ("""{
  echo "{\\"metadata\\": {\\"file_name\\": \\"model.onnx\\", \\"size_bytes\\": $(stat -c%s model.onnx),
         \\"data_files\\": [{\\"name\\": \\"model.onnx_data\\", \\"size_bytes\\": $(stat -c%s model.onnx_data),
                           \\"sha256\\": \\"$(sha256sum model.onnx_data | cut -d' ' -f1)\\"}]}}"
  split -b 1048576 --filter='echo "{\\"chunk\\": \\"$(base64 -w0)\\"}"' model.onnx
  split -b 1048576 --filter='echo "{\\"data_chunk\\": {\\"file\\": 0, \\"data\\": \\"$(base64 -w0)\\"}}"' model.onnx_data
} | grpcurl -plaintext -d @ 127.0.0.1:50051 axqc.v1.Checker/Upload""", skip(SKIP_GRPCURL)),
        ("""grpcurl -plaintext -d '{"url": "https://models.example.com/llm/model.onnx",
                        "data_file_urls": {"model.onnx_data": "https://blobs.example.com/abc?sig=..."}}' \\
  127.0.0.1:50051 axqc.v1.Checker/Check""", skip(SKIP_GRPCURL)),
        ("sha=$(sha256sum model.onnx | cut -d' ' -f1)", 0),
        ("""grpcurl -plaintext -d "{\\"sha256\\": \\"$sha\\", \\"options\\": {\\"format\\": \\"REPORT_FORMAT_JSON\\"}}" \\
  127.0.0.1:50051 axqc.v1.Checker/GetReport""", skip(SKIP_GRPCURL)),
        ("""grpcurl -plaintext -d "{\\"sha256\\": \\"$sha\\", \\"record_check\\": true, \\"labels\\": {\\"project\\": \\"detector\\"}}" \\
  127.0.0.1:50051 axqc.v1.Checker/GetReport""", skip(SKIP_GRPCURL)),
        ("""grpcurl -plaintext -d '{"window": "86400s", "group_by": "project", "top_rules": 5}' \\
  127.0.0.1:50051 axqc.v1.Checker/GetStats""", skip(SKIP_GRPCURL)),
        ("grpcurl -plaintext 127.0.0.1:50051 axqc.v1.Checker/ListRules", skip(SKIP_GRPCURL)),
        ("grpcurl -plaintext 127.0.0.1:50051 grpc.health.v1.Health/Check", skip(SKIP_GRPCURL)),
        ("""grpcurl -plaintext -d '{"service": "axqc.v1.Checker"}' 127.0.0.1:50051 grpc.health.v1.Health/Check""",
         skip(SKIP_GRPCURL)),
        # The HTTP/JSON API and the webhooks (the session's server has --http-listen, both webhook
        # secrets and the stub registry; tests/server/http asserts the answers in detail).
        ("curl -s --data-binary @model.onnx 'http://127.0.0.1:8080/v1/check?name=model.onnx&label.project=detector'", 0),
        ("""curl -s -H 'Content-Type: application/json' \\
  -d '{"path": "detector/yolo-int8.onnx", "labels": {"project": "detector"}, "options": {"check_value": true}}' \\
  http://127.0.0.1:8080/v1/check""", 0),
        ("""tar --format=ustar -cf - model.onnx model.onnx_data |
  curl -s -H 'Content-Type: application/x-tar' --data-binary @- \\
    'http://127.0.0.1:8080/v1/check?label.project=llm'""", skip(SKIP_EXTDATA)),
        ("curl -s --data-binary @model.onnx 'http://127.0.0.1:8080/v1/check?name=model.onnx&target=ax650&target=ax620e'", 0),
        ("curl -s 'http://127.0.0.1:8080/v1/stats?group_by=axqc.target'", 0),
        ("""curl -s --data-binary @model.onnx --url-query pulsar2_config@config.json \\
  'http://127.0.0.1:8080/v1/check?name=model.onnx&target=ax650'""", 0),
        ('curl -s "http://127.0.0.1:8080/v1/reports/$sha"', 0),
        ('curl -s "http://127.0.0.1:8080/v1/reports/$sha/html" -o report.html', 0),
        ("curl -s http://127.0.0.1:8080/v1/rules", 0),
        ("curl -s -H 'X-Request-Id: ci-1234' http://127.0.0.1:8080/v1/reports/0000000000000000000000000000000000000000000000000000000000000000", 0),
        ("curl -s 'http://127.0.0.1:8080/v1/stats?window=1d&step=1h&label.project=detector'", 0),
        ("curl -s 'http://127.0.0.1:8080/v1/stats?window=7d&group_by=project&top_rules=5'", 0),
        ("curl -s 'http://127.0.0.1:8080/v1/models?label.project=detector'", 0),
        ("curl -s http://127.0.0.1:8080/v1/openapi.json", 0),
        ("curl -s 'http://127.0.0.1:8080/v1/checks?verdict=non_conformant&q=yolo&limit=20'", 0),
        ('curl -s "http://127.0.0.1:8080/v1/models/$sha/reports"', 0),
        ("curl -s 'http://127.0.0.1:8080/v1/deliveries?outcome=download_failed&limit=20'", 0),
        ("""body='{"entity":"model_version","action":"created","timestamp":"2026-12-01T10:00:00Z","data":{"name":"detector","version":"3","run_id":"4f1c9a"}}'""", 0),
        ("id=0f8a2c4e-delivery-1", 0),
        ("ts=$(date +%s)", 0),
        ("""sig=$(printf '%s' "$id.$ts.$body" | openssl dgst -sha256 -hmac "$(cat mlflow-secret)" -binary | base64 -w0)""", 0),
        ('curl -s -X POST http://127.0.0.1:8080/v1/hooks/mlflow -H \'Content-Type: application/json\' \\\n'
         '  -H "X-MLflow-Delivery-Id: $id" -H "X-MLflow-Timestamp: $ts" -H "X-MLflow-Signature: v1,$sig" -d "$body"', 0),
        ("""curl -s -X POST http://127.0.0.1:8080/v1/hooks/huggingface -H "X-Webhook-Secret: $(cat hf-secret)" \\
  -H 'Content-Type: application/json' \\
  -d '{"event":{"action":"update","scope":"repo.content"},"repo":{"type":"model","name":"org/classifier","headSha":"main"}}'""", 0),
    ],
    "docs/operations.md": [
        ("cmake --preset release && cmake --build --preset release --target axqc-server axqc_examples",
         skip(SKIP_BUILD)),
        ("build/release/server/axqc-server --allowed-root build/release/examples "
         "--store-path /tmp/axqc.sqlite3", "server"),
        ("build/release/client/axqc check --server 127.0.0.1:50051 --ref conformant_cnn.onnx", 0),
        ("""grpcurl -plaintext -d '{"path": "broken_weight_per_tensor.onnx"}' 127.0.0.1:50051 axqc.v1.Checker/Check""",
         skip(SKIP_GRPCURL)),
        ("build/release/client/axqc health --server 127.0.0.1:50051", 0),
        ("curl -s http://127.0.0.1:9464/metrics | grep '^axqc_checks_total'", 0),
        ("build/release/server/axqc-server --print-config --workers 8 --queue-capacity 128", 0),
        ("build/release/server/axqc-server --print-config --workers 8 > server.toml", 0),
        ("build/release/server/axqc-server --config server.toml --print-config", 0),
        ("build/release/server/axqc-server --workers lots", 2),
        ("build/release/server/axqc-server --no-such-option", 2),
        ("docker build -f deploy/docker/Dockerfile -t axqc-server .", skip(SKIP_DOCKER)),
        ("""docker run --rm -p 127.0.0.1:50051:50051 -v axqc-store:/var/lib/axqc \\
  -v "$PWD/models:/models:ro" --stop-timeout 45 axqc-server""", skip(SKIP_DOCKER)),
        ("deploy/docker/test-image.sh", skip(SKIP_IMAGE)),
        ("deploy/docker/test-compose.sh", skip(SKIP_COMPOSE)),
        ("docker compose -f deploy/docker/compose.yaml up -d --build", skip(SKIP_DOCKER)),
        ("AXQC_PG_PASSWORD=... docker compose -f deploy/docker/compose.postgres.yaml up -d --build",
         skip(SKIP_DOCKER)),
        ("docker compose -f deploy/docker/compose.postgres.yaml up -d --scale axqc-server=4",
         skip(SKIP_DOCKER)),
        ("""kubectl create secret generic axqc-store \\
    --from-literal=postgres-password='<password>' \\
    --from-literal=dsn='postgresql://axqc:<password>@axqc-postgres:5432/axqc'""",
         skip("needs a Kubernetes cluster (none on the test machines)")),
        ("kubectl apply -k deploy/k8s-postgres",
         skip("needs a Kubernetes cluster (none on the test machines)")),
    ],
    # CI examples: one entry per `run:` step (by step name) or `script:` line; the exit code is
    # that of a passing job; the job's verdict step (GitHub) or last line (GitLab) fails in the
    # failing scenarios.
    "examples/ci/github-actions.yml": [
        ("actions/checkout@v4", skip(SKIP_ACTION)),
        ("example/axqc@v0.1.0", 0),
        ("mikepenz/action-junit-report@v4", skip(SKIP_ACTION)),
    ],
    # The job extends the template's hidden job: its script is ci/axqc.gitlab-ci.yml's.
    "examples/ci/gitlab-ci.yml": [
        ("extends: .axqc-check", 0),
    ],
}

EXPECTED["docs/install.md"] = [
    ("scripts/package", skip(SKIP_PACKAGE)),
    ("scripts/package deb", skip(SKIP_PACKAGE)),
    ("scripts/package wheel", skip(SKIP_PACKAGE)),
    ("apt-get install ./out/packages/axqc_0.1.0-1_amd64.deb", skip(SKIP_PACKAGE)),
    ("axqc check model.onnx", 0),
    ("apt-get install ./out/packages/axqc_0.1.0-1_amd64.deb "
     "./out/packages/axqc-server_0.1.0-1_amd64.deb", skip(SKIP_PACKAGE)),
    ("systemctl status axqc-server", skip("the service of the installed package: deploy/docker/"
                                          "test-packages.sh systemd runs it under systemd")),
    ("axqc health --server 127.0.0.1:50051", 0),
    ("pip install out/packages/axqc-0.1.0-cp311-cp311-linux_x86_64.whl", skip(SKIP_PACKAGE)),
    ("scripts/package deb", skip(SKIP_PACKAGE)),
    ("docker build -f deploy/docker/Dockerfile.cli -t axqc-cli out/packages", skip(SKIP_PACKAGE)),
    ("""docker run --rm -v "$PWD:/w" -w /w axqc-cli axqc check model.onnx""", skip(SKIP_DOCKER)),
    ("deploy/docker/test-packages.sh", skip(SKIP_PACKAGE)),
    ("deploy/docker/test-cli-image.sh", skip(SKIP_PACKAGE)),
]
EXPECTED["docs/targets.md"] = [
    ("axqc check --target ax620e model.onnx", 0),
    ("axqc check --target ax650 --target ax620e --format json -o report.json model.onnx", 0),
    ("axqc targets model.onnx", 0),
    ("axqc targets --format json model.onnx", 0),
    ("axqc targets --list", 0),
    ("axqc targets ax620e", 0),
    ("axqc targets --diff ax650 ax620e", 0),
    ("axqc check --server 127.0.0.1:50051 --target ax620e model.onnx", 0),
]

EXPECTED["docs/pulsar2.md"] = [
    ("axqc pulsar2-config model.onnx --target ax650 -o config.json", 0),
    ("axqc check --target ax650 --pulsar2-config config.json model.onnx", 0),
    ("axqc fix model.onnx -o model.fixed.onnx", 0),
    ("axqc check --target ax650 model.fixed.onnx", 0),
    ("axqc pulsar2-config model.fixed.onnx --target ax650 -o config.json", 0),
    ("axqc check --target ax650 --pulsar2-config config.json model.fixed.onnx", 0),
    ("printf '%s' '{\"quant\": {\"layer_configs\": [{\"layer_name\": \"Conv_0\", \"data_type\": \"U16\"}, "
     "{\"layer_name\": \"flatten\", \"data_type\": \"U16\"}]}}' > bad.json", 0),
    ("axqc check --target ax650 --pulsar2-config bad.json model.onnx", 1),
    ("axqc check --server 127.0.0.1:50051 --target ax650 --pulsar2-config config.json model.onnx", 0),
]

# Documents whose first server command starts the server their other commands talk to; the test
# starts one for the others.
DOCS_STARTING_THEIR_SERVER = {"README.md", "docs/operations.md"}

FAILURES = []
SKIPPED = []
PASSED = []


def log(msg):
    print(f"[docs] {msg}", flush=True)


def fail(msg):
    FAILURES.append(msg)
    print(f"[docs] FAIL: {msg}", flush=True)


def key(command):
    try:
        return tuple(shlex.split(command.replace("\\\n", " "), comments=True))
    except ValueError:
        return (command.strip(),)


# ------------------------------------------------------------------------------------------------
# Extraction


def bash_complete(text):
    if text.rstrip().endswith("\\"):  # bash -n accepts a continuation at the end of its input
        return False
    return subprocess.run(["bash", "-n", "-c", text], capture_output=True).returncode == 0


def markdown_commands(path):
    out = []
    in_block = False
    indent = ""
    current = None
    for line in open(path, encoding="utf-8").read().split("\n"):
        stripped = line.strip()
        if stripped.startswith("```"):
            if not in_block:
                in_block = stripped in ("```sh", "```bash", "```shell")
                indent = line[: len(line) - len(line.lstrip())]
            else:
                in_block = False
            current = None
            continue
        if not in_block:
            continue
        if indent and line.startswith(indent):
            line = line[len(indent):]
        if current is None:
            if not stripped or stripped.startswith("#"):
                continue
            current = line
        else:
            current += "\n" + line
        if bash_complete(current):
            out.append(current)
            current = None
    return out


def yaml_load(path):
    import yaml  # python3-yaml (scripts/setup installs it)

    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def github_steps(path):
    steps = yaml_load(path)["jobs"]["conformance"]["steps"]
    return [(s.get("uses") or s.get("name"), s) for s in steps]


def gitlab_lines(path):
    job = yaml_load(path)["axqc"]
    return [f"extends: {job['extends']}"] if "extends" in job else list(job["script"])


# ------------------------------------------------------------------------------------------------
# Fixtures and servers


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def variant(src, dst, tag):
    """Same graph, other bytes: a ModelProto doc_string (field 6) appended."""
    data = open(src, "rb").read()
    t = tag.encode()
    with open(dst, "wb") as f:
        f.write(data + bytes([0x32, len(t)]) + t)


def run(cmd, cwd, env=None, timeout=120, **kw):
    return subprocess.run(cmd, cwd=cwd, env=env, timeout=timeout, capture_output=True, text=True, **kw)


def make_pki(d):
    script = r"""set -e
ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' > server.ext
printf 'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n' > client.ext
openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj '/CN=axqc docs test CA'
openssl req $ec -keyout server.key -out server.csr -subj '/CN=localhost'
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext -out server.pem
openssl req $ec -keyout ci.key -out ci.csr -subj '/CN=ci'
openssl x509 -req -in ci.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile client.ext -out ci.pem
cp ca.pem clients-ca.pem
printf 'docs-test-token\n' > axqc-token
"""
    r = run(["bash", "-c", script], cwd=d)
    if r.returncode != 0:
        raise RuntimeError("openssl: " + r.stderr)


def pure_assignment(text):
    """(NAME, VALUE) when `text` only sets a variable (`export NAME=word`, `NAME=$(...)`, a trailing
    comment allowed), else None."""
    m = re.match(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=", text)
    if not m:
        return None
    rest = text[m.end():]
    if rest.startswith("$("):
        depth = 0
        for i, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and ch == ")":
                value, tail = rest[: i + 1], rest[i + 1:]
                break
        else:
            return None
    else:
        value, _, tail = rest.partition(" ")
        tail = " " + tail
    tail = tail.strip()
    if tail and not tail.startswith("#"):
        return None
    return m.group(1), value


class Session:
    """A fresh directory with the fixtures, its servers and its variables."""

    def __init__(self, name):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="axqc-docs-")
        self.grpc = free_port()
        self.metrics = free_port()
        self.tls = free_port()
        self.http = free_port()
        self.servers = []  # (command, Popen, log path)
        self.vars = {}
        d = self.dir
        os.makedirs(os.path.join(d, "build"))
        os.symlink(BUILD, os.path.join(d, "build", "release"))
        os.makedirs(os.path.join(d, "examples"))
        os.symlink(os.path.join(ROOT, "examples", "ci"), os.path.join(d, "examples", "ci"))
        os.makedirs(os.path.join(d, "tmp"))
        ok = os.path.join(EXAMPLES, "conformant_cnn.onnx")
        bad = os.path.join(EXAMPLES, "broken_weight_per_tensor.onnx")
        shutil.copy(os.path.join(EXAMPLES, "broken_two_defects.onnx"),
                    os.path.join(d, "broken_two_defects.onnx"))
        shutil.copy(ok, os.path.join(d, "model.onnx"))
        # A Pulsar2 build configuration of model.onnx (docs/pulsar2.md, docs/api.md).
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write('{"model_type": "QuantONNX", "target_hardware": "AX650"}\n')
        shutil.copy(ok, os.path.join(d, "a.onnx"))
        shutil.copy(bad, os.path.join(d, "b.onnx"))
        os.makedirs(os.path.join(d, "models"))
        variant(ok, os.path.join(d, "models", "a.onnx"), name + " models/a")
        variant(bad, os.path.join(d, "models", "b.onnx"), name + " models/b")
        root = os.path.join(d, "srvroot")
        for rel, src in (("conformant_cnn.onnx", ok), ("broken_weight_per_tensor.onnx", bad),
                         ("detector/yolo-int8.onnx", bad), ("registry/detector/3/model.onnx", bad)):
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            shutil.copy(src, os.path.join(root, rel))
        shutil.copy(os.path.join(ROOT, "examples", "ci", "mlflow-payload.json"),
                    os.path.join(d, "event.json"))
        # The registry's artifact store as the hook's machine sees it (registry_hook --fix-plan).
        shutil.copytree(root, os.path.join(d, "tmp", "models"))
        make_pki(d)
        # The registry of the webhook examples (docs/api.md): a stub MLflow server and Hub on a
        # thread, serving srvroot/registry (model "detector" version 3, repo org/classifier).
        sys.path.insert(0, os.path.join(ROOT, "tests", "server", "http"))
        import registry_stub
        self.registry, self.registry_port = registry_stub.start(os.path.join(root, "registry"))
        os.makedirs(os.path.join(root, "registry", "org", "classifier", "main"))
        shutil.copy(ok, os.path.join(root, "registry", "org", "classifier", "main", "model.onnx"))
        for fname, secret in (("mlflow-secret", "docs-mlflow-secret"), ("hf-secret", "docs-hf-secret")):
            with open(os.path.join(d, fname), "w") as f:
                f.write(secret + "\n")
        self.env = dict(os.environ)
        for k in list(self.env):
            if k.startswith("AXQC_") or k.startswith("GRPC_"):
                del self.env[k]
        self.env["PATH"] = os.pathsep.join(
            [os.path.join(BUILD, "client"), os.path.join(BUILD, "server"), self.env.get("PATH", "")])

    def rewrite(self, text):
        for old, new in (("127.0.0.1:50051", f"127.0.0.1:{self.grpc}"),
                         ("axqc.internal:50051", f"127.0.0.1:{self.grpc}"),
                         ("127.0.0.1:9464", f"127.0.0.1:{self.metrics}"),
                         ("127.0.0.1:8080", f"127.0.0.1:{self.http}"),
                         ("0.0.0.0:50443", f"127.0.0.1:{self.tls}"),
                         ("axqc.internal:50443", f"localhost:{self.tls}"),
                         ("/tmp/", self.dir + "/tmp/")):
            text = text.replace(old, new)
        return text

    def command_env(self):
        env = dict(self.env)
        env.update(self.vars)
        return env

    def start_server(self, command, own=False):
        """Starts `command` (a documented axqc-server line, or the session's own server) in the
        background and waits until it is ready."""
        n = len(self.servers)
        ready = os.path.join(self.dir, f"ready-{n}.json")
        env = self.command_env()
        env["AXQC_READY_FILE"] = ready
        env["AXQC_STORE_PATH"] = os.path.join(self.dir, f"store-{n}.sqlite3")
        if n == 0:  # the session's server: the documented default addresses
            env["AXQC_LISTEN"] = f"127.0.0.1:{self.grpc}"
            env["AXQC_METRICS_LISTEN"] = f"127.0.0.1:{self.metrics}"
            # The HTTP API and the webhooks of docs/api.md, against the stub registry.
            env["AXQC_HTTP_LISTEN"] = f"127.0.0.1:{self.http}"
            env["AXQC_MLFLOW_WEBHOOK_SECRET_FILE"] = os.path.join(self.dir, "mlflow-secret")
            env["AXQC_MLFLOW_URL"] = f"http://127.0.0.1:{self.registry_port}"
            env["AXQC_MLFLOW_WRITE_BACK"] = "true"
            env["AXQC_HUGGINGFACE_WEBHOOK_SECRET_FILE"] = os.path.join(self.dir, "hf-secret")
            env["AXQC_HUGGINGFACE_URL"] = f"http://127.0.0.1:{self.registry_port}"
            env.setdefault("AXQC_URL_ALLOW_HOST", f"127.0.0.1:{self.registry_port}")
        else:
            env["AXQC_METRICS_LISTEN"] = ""
        if own:
            env["AXQC_ALLOWED_ROOT"] = os.path.join(self.dir, "srvroot")
        text = (command if own else self.rewrite(command)).rstrip()
        if text.endswith("&"):
            text = text[:-1]
        log_path = os.path.join(self.dir, f"server-{n}.log")
        with open(log_path, "w") as logf:
            proc = subprocess.Popen(["bash", "-c", "exec " + text], cwd=self.dir, env=env,
                                    stdout=logf, stderr=subprocess.STDOUT)
        self.servers.append((command, proc, log_path))
        for _ in range(300):
            if os.path.exists(ready) and os.path.getsize(ready) > 0:
                return True
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        fail(f"{self.name}: server did not become ready: {command}\n{open(log_path).read()[-2000:]}")
        return False

    def stop(self):
        for command, proc, log_path in self.servers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    rc = proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    rc = "timeout"
                if rc != 0:
                    fail(f"{self.name}: '{command}' exited {rc} after SIGTERM\n"
                         f"{open(log_path).read()[-2000:]}")
            else:
                fail(f"{self.name}: '{command}' exited early ({proc.returncode})\n"
                     f"{open(log_path).read()[-2000:]}")
        self.registry.shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_command(self, where, command, expected):
        text = self.rewrite(command)
        assignment = pure_assignment(text)
        if assignment:  # a variable for the following commands
            name, value = assignment
            r = run(["bash", "-c", f"{name}={value} || exit; printf %s \"${name}\""],
                    cwd=self.dir, env=self.command_env())
            got = r.returncode
            if got == 0:
                self.vars[name] = r.stdout
        else:
            r = run(["bash", "-c", text], cwd=self.dir, env=self.command_env())
            got = r.returncode
        one_line = " ".join(command.split())
        if got != expected:
            fail(f"{where}: exit {got}, expected {expected}: {one_line}\n"
                 f"--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}")
        else:
            PASSED.append(where)
            log(f"ok {where}: exit {got}: {one_line[:110]}")
        return r


# ------------------------------------------------------------------------------------------------
# Documents


def check_sync(doc, found):
    want = [k for k, _ in EXPECTED[doc]]
    found_keys = [key(c) for c in found]
    want_keys = [key(c) for c in want]
    for c in found:
        if key(c) not in want_keys:
            fail(f"{doc}: command without an expectation in {os.path.basename(__file__)}: {c!r}")
    for c in want:
        if key(c) not in found_keys:
            fail(f"{doc}: expected command no longer in the document: {c!r}")
    if found_keys != want_keys and sorted(found_keys) == sorted(want_keys):
        for i, (f, w) in enumerate(zip(found_keys, want_keys)):
            if f != w:
                fail(f"{doc}: command #{i + 1} is {' '.join(f)[:80]!r} in the document but "
                     f"{' '.join(w)[:80]!r} in {os.path.basename(__file__)}: keep the order")
                break
    return found_keys == want_keys


def run_markdown(doc):
    commands = markdown_commands(os.path.join(ROOT, doc))
    if not check_sync(doc, commands):
        return
    session = Session(doc)
    try:
        if doc not in DOCS_STARTING_THEIR_SERVER:
            session.start_server(
                f"axqc-server --store-path {session.dir}/session.sqlite3", own=True)
        for i, (command, expected) in enumerate(EXPECTED[doc]):
            where = f"{doc} #{i + 1}"
            if isinstance(expected, tuple):
                SKIPPED.append((where, command, expected[1]))
                log(f"skip {where}: {' '.join(command.split())[:80]} ({expected[1][:60]})")
            elif expected == "server":
                if session.start_server(command):
                    PASSED.append(where)
                    log(f"ok {where}: server ready: {' '.join(command.split())[:100]}")
            else:
                session.run_command(where, command, expected)
    finally:
        session.stop()


# The situations each CI example job runs in: (name, models in the baseline written first,
# models replaced after it, whether the job passes, SARIF baseline states expected (GitHub)).
# models/a.onnx is conformant, models/b.onnx non-conformant (one finding); in "conformant models"
# models/b.onnx does not exist.
CI_SCENARIOS = [
    ("conformant models", ["models/a.onnx"], {}, True, []),
    ("a non-conformant model in the baseline", ["models/a.onnx", "models/b.onnx"], {}, True,
     ["unchanged"]),
    ("a new finding in a model of the baseline", ["models/a.onnx", "models/b.onnx"],
     {"models/b.onnx": "broken_two_defects.onnx"}, False, ["unchanged", "new"]),
    ("a new non-conformant model", ["models/a.onnx"], {}, False, ["new"]),
]


def prepare_ci_session(doc, scenario):
    """A session with its TLS server, the baseline of the scenario written as docs/ci.md says, and
    the models changed afterwards."""
    name, in_baseline, replaced, _, _ = scenario
    session = Session(doc)
    session.start_server(
        f"axqc-server --listen 127.0.0.1:{session.grpc} --tls-cert-file server.pem "
        "--tls-key-file server.key --auth-token-file axqc-token", own=True)
    if name == "conformant models":
        os.remove(os.path.join(session.dir, "models", "b.onnx"))
    r = run(["axqc", "check", "--local", "--no-config", "--write-baseline", "axqc-baseline.json"]
            + in_baseline, cwd=session.dir, env=session.command_env())
    if r.returncode != 0:
        fail(f"{doc}, {name}: writing the baseline: exit {r.returncode}\n{r.stderr[-2000:]}")
    for dst, src in replaced.items():
        shutil.copy(os.path.join(session.dir, src), os.path.join(session.dir, dst))
    return session


def run_github(doc):
    """The job's steps: the axqc Action (action.yml of this repository, for its `uses:`) runs as
    GitHub's runner runs a composite action (tests/ci/runners.py) with the job's `with:`; the other
    actions are recorded."""
    steps = github_steps(os.path.join(ROOT, doc))
    if not check_sync(doc, [k for k, _ in steps]):
        return
    for scenario in CI_SCENARIOS:
        models, passes, states = scenario[0], scenario[3], scenario[4]
        verdict_rc = 0 if passes else 1
        session = prepare_ci_session(doc, scenario)
        try:
            runner_temp = os.path.join(session.dir, "runner-temp")
            os.makedirs(runner_temp)
            ca = open(os.path.join(session.dir, "ca.pem")).read()
            values = {"secrets.AXQC_CA_PEM": ca.strip(), "secrets.AXQC_TOKEN": "docs-test-token",
                      "vars.AXQC_SERVER": f"localhost:{session.grpc}",
                      "github.repository": "example/models", "github.ref_name": "main"}
            res = None
            for i, ((name, step), (_, expected)) in enumerate(zip(steps, EXPECTED[doc])):
                where = f"{doc} step {i + 1} ({name}), {models}"
                if isinstance(expected, tuple):
                    SKIPPED.append((where, name, expected[1]))
                    continue
                inputs = {k: re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", lambda m: values[m.group(1)], str(v))
                          for k, v in (step.get("with") or {}).items()}
                env = session.command_env()
                logs = []
                res = runners.run_action(ROOT, session.dir, runner_temp, inputs, {"PATH": env["PATH"]},
                                         log=logs.append)
                want = "success" if passes else "failure"
                if res["outcome"] != want or res["outputs"].get("exit-code") != str(verdict_rc):
                    fail(f"{where}: {res['outcome']} (exit code {res['outputs'].get('exit-code')}), expected "
                         f"{want} ({verdict_rc})\n" + "\n".join(logs[-60:]))
                else:
                    PASSED.append(where)
                    log(f"ok {where}: {res['outcome']}, exit code {verdict_rc}")
                check = next(s for s in res["steps"] if s["name"] == "Check models")
                if not passes and "::error file=models/b.onnx" not in check.get("stderr", ""):
                    fail(f"{where}: no annotation of the new finding on stderr\n{check.get('stderr', '')[-2000:]}")
                if [u["uses"] for u in res["uses"]] != ["github/codeql-action/upload-sarif@v3"]:
                    fail(f"{where}: SARIF not uploaded: {res['uses']}")
            if res is None:
                continue
            for key_, report in (("sarif", "axqc-reports/axqc.sarif"), ("junit", "axqc-reports/axqc-junit.xml")):
                if res["outputs"].get(key_) != report or not os.path.getsize(os.path.join(session.dir, report)):
                    fail(f"{doc}, {models}: {report} was not written ({res['outputs']})")
            import json
            results = json.load(open(os.path.join(session.dir, "axqc-reports/axqc.sarif")))["runs"][0]["results"]
            got = [r.get("baselineState") for r in results]
            if got != states:
                fail(f"{doc}, {models}: SARIF baseline states {got}, expected {states}")
        finally:
            session.stop()


def run_gitlab(doc):
    """The job (it extends the template's .axqc-check) as gitlab-runner's shell gets it
    (tests/ci/runners.py), with the project's CI/CD variables for the server, token and CA."""
    path = os.path.join(ROOT, doc)
    lines = gitlab_lines(path)
    if not check_sync(doc, lines):
        return
    for scenario in CI_SCENARIOS:
        models, job_ok, states = scenario[0], scenario[3], scenario[4]
        session = prepare_ci_session(doc, scenario)
        try:
            job = runners.gitlab_job(path, "axqc", {"ci/axqc.gitlab-ci.yml": os.path.join(ROOT, "ci", "axqc.gitlab-ci.yml")},
                                     {"AXQC_SERVER": f"localhost:{session.grpc}", "AXQC_TOKEN": "docs-test-token",
                                      "AXQC_CA_PEM": os.path.join(session.dir, "ca.pem")},
                                     project_dir=session.dir, project_path="example/models")
            r = run(["bash"], cwd=session.dir, env=session.command_env(),
                    input="set -eo pipefail\nset +o noclobber\n" + job["script"])
            where = f"{doc} job, {models}"
            want = 0 if job_ok else 1
            if r.returncode != want:
                fail(f"{where}: exit {r.returncode}, expected {want}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
            else:
                PASSED.append(where)
                log(f"ok {where}: exit {r.returncode}")
            for report in job["artifacts"]["reports"].values():
                if not os.path.exists(os.path.join(session.dir, report)):
                    fail(f"{doc}, {models}: {report} was not written")
            import json
            issues = json.load(open(os.path.join(session.dir, job["artifacts"]["reports"]["codequality"])))
            if len(issues) != len(states) or any(
                    not i.get("fingerprint") or i["location"]["lines"]["begin"] != 1 for i in issues):
                fail(f"{doc}, {models}: Code Quality issues {issues}, expected {len(states)}")
        finally:
            session.stop()


def check_yaml_excerpts(doc, examples):
    """Every line of a ```yaml block of `doc` is a line of one of the `examples` files (the
    documents quote the CI jobs; the jobs themselves are what runs)."""
    lines = set()
    for ex in examples:
        lines.update(l.rstrip() for l in open(os.path.join(ROOT, ex), encoding="utf-8"))
    in_block = False
    blocks = 0
    for line in open(os.path.join(ROOT, doc), encoding="utf-8").read().split("\n"):
        if line.strip().startswith("```"):
            in_block = line.strip() == "```yaml"
            blocks += in_block
            continue
        if in_block and line.strip() and line.rstrip() not in lines:
            fail(f"{doc}: yaml excerpt line not in {', '.join(examples)}: {line!r}")
    if blocks == 0:
        fail(f"{doc}: no yaml excerpt of the CI jobs")
    else:
        PASSED.append(f"{doc} yaml excerpts")
        log(f"ok {doc}: {blocks} yaml excerpts match the CI examples")


def main():
    for path in (SERVER_BIN, CLIENT_BIN, os.path.join(EXAMPLES, "conformant_cnn.onnx")):
        if not os.path.exists(path):
            print(f"[docs] FAIL: {path} is missing (build first)")
            return 1
    try:
        import yaml  # noqa: F401
    except ImportError:
        print("[docs] SKIP: python3-yaml is missing (scripts/setup installs it)")
        return 77
    for tool in ("curl", "openssl"):
        if shutil.which(tool) is None:
            print(f"[docs] SKIP: {tool} is missing (scripts/setup installs it)")
            return 77
    for doc in ("README.md", "docs/ci.md", "docs/api.md", "docs/operations.md", "docs/install.md",
                "docs/targets.md", "docs/pulsar2.md"):
        run_markdown(doc)
    check_yaml_excerpts("docs/ci.md", ["examples/ci/github-actions.yml", "examples/ci/gitlab-ci.yml",
                                       "action.yml", "ci/axqc.gitlab-ci.yml"])
    run_github("examples/ci/github-actions.yml")
    run_gitlab("examples/ci/gitlab-ci.yml")
    log("skipped commands (not runnable here):")
    for where, command, reason in SKIPPED:
        log(f"  {where}: {' '.join(command.split())[:70]}: {reason}")
    print(f"{len(PASSED)} passed, {len(FAILURES)} failed, {len(SKIPPED)} skipped")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
