#!/usr/bin/env python3
"""The ready-made CI step, run the way the runners run it, with the built `axqc` on PATH.

    tests/ci/ci_step_test.py [BUILD_DIR]      (default build/release; ctest ci_step)

* The GitHub Action (action.yml): its steps run as GitHub's runner runs a composite action
  (tests/ci/runners.py: inputs and `${{ }}` expressions, `bash --noprofile --norc -eo pipefail`,
  GITHUB_WORKSPACE, RUNNER_TEMP, GITHUB_ACTION_PATH, per-step GITHUB_OUTPUT / GITHUB_ENV /
  GITHUB_PATH / GITHUB_STEP_SUMMARY, `if:`), with `axqc` on PATH as in a `container:` job of the
  CLI image. The upload-sarif step is recorded, not run.
* The GitLab CI template (ci/axqc.gitlab-ci.yml): a project's .gitlab-ci.yml includes it and
  extends `.axqc-check`; the job script gitlab-runner's bash shell would get (variables exported,
  `cd $CI_PROJECT_DIR`, the script lines) is fed to bash on stdin after `set -eo pipefail`, as the
  Docker executor's shell gets it.

Both gate the same scenarios: conformant models and a known finding in the baseline pass; a new
finding fails (its reports still written: SARIF, JUnit, Code Quality with the rule IDs and node
names); a float model fails with fail-on not_applicable (and passes as not_applicable without);
an unreachable server fails with exit 4 and a message that blames the server, not the models; a
real axqc-server judges remotely and records each model once although the step calls it once per
report. deploy/docker/test-ci-step.sh runs the same in the CLI image and a clean Debian container.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import runners  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/release"))
AXQC_DIR = os.path.join(BUILD, "client")
SERVER_BIN = os.path.join(BUILD, "server", "axqc-server")
EXAMPLES = os.path.join(BUILD, "examples")
TEMPLATE = os.path.join(ROOT, "ci", "axqc.gitlab-ci.yml")
USER_GITLAB_CI = """include:
  - project: tools/axqc
    ref: v0.1.0
    file: ci/axqc.gitlab-ci.yml
axqc:
  extends: .axqc-check
  stage: test
  variables:
    AXQC_MODELS: models
    AXQC_BASELINE: axqc-baseline.json
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def env_with_axqc():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AXQC_", "GITHUB_", "RUNNER_"))}
    env["PATH"] = AXQC_DIR + ":" + os.environ["PATH"]
    return env


class Workspace:
    """A repository checkout: models/a.onnx (conformant), models/b.onnx (one finding,
    role/weight-type at conv1_w_dq) and axqc-baseline.json with b's finding."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="axqc-ci-step-")
        self.ws = os.path.join(self.dir, "repo")
        self.temp = os.path.join(self.dir, "runner-temp")
        os.makedirs(os.path.join(self.ws, "models"))
        os.makedirs(self.temp)
        self.model("a.onnx", "conformant_cnn.onnx")
        self.model("b.onnx", "broken_weight_per_tensor.onnx")
        r = subprocess.run(["axqc", "check", "--no-config", "--write-baseline", "axqc-baseline.json",
                            "models/a.onnx", "models/b.onnx"], cwd=self.ws, env=env_with_axqc(),
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        with open(os.path.join(self.ws, ".gitlab-ci.yml"), "w") as f:
            f.write(USER_GITLAB_CI)
        self.log = []

    def model(self, name, example):
        shutil.copy(os.path.join(EXAMPLES, example), os.path.join(self.ws, "models", name))

    def path(self, rel):
        return os.path.join(self.ws, rel)

    def github(self, env=None, **inputs):
        """Runs the action; inputs with '_' for '-'."""
        e = env_with_axqc() if env is None else env
        self.log = []
        res = runners.run_action(ROOT, self.ws, self.temp,
                                 {k.replace("_", "-"): v for k, v in inputs.items()},
                                 {"PATH": e["PATH"]}, log=self.log.append)
        res["step"] = {s["name"]: s for s in res["steps"]}
        return res

    def gitlab(self, **settings):
        """Runs the job `axqc` of .gitlab-ci.yml (extends .axqc-check) with the project's CI/CD
        variables `settings`; returns the CompletedProcess."""
        job = runners.gitlab_job(os.path.join(self.ws, ".gitlab-ci.yml"), "axqc",
                                 {"ci/axqc.gitlab-ci.yml": TEMPLATE}, settings, project_dir=self.ws,
                                 project_path="example/models")
        assert job["image"] == "registry.example.com/axqc-cli:0.1.0", job["image"]
        reports = job["artifacts"]["reports"]
        assert reports == {"codequality": "axqc-reports/gl-code-quality.json",
                           "junit": "axqc-reports/axqc-junit.xml"}, reports
        assert job["artifacts"]["when"] == "always"
        return subprocess.run(["bash"], input="set -eo pipefail\nset +o noclobber\n" + job["script"],
                              cwd=self.dir, env=env_with_axqc(), capture_output=True, text=True,
                              timeout=300)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def sarif_results(path):
    doc = json.loads(runners.read(path))
    assert doc["version"] == "2.1.0"
    out = []
    for res in doc["runs"][0]["results"]:
        loc = res["locations"][0]
        out.append((res["ruleId"], res.get("baselineState"),
                    loc["physicalLocation"]["artifactLocation"]["uri"],
                    [ll.get("name") for ll in loc.get("logicalLocations", [])]))
    return sorted(out)


def junit(path):
    """{testsuite name: (properties, {testcase name: failure text})}"""
    root = ET.parse(path).getroot()
    out = {}
    for ts in root.iter("testsuite"):
        props = {p.get("name"): p.get("value") for p in ts.iter("property")}
        fails = {}
        for tc in ts.iter("testcase"):
            f = tc.find("failure")
            if f is not None:
                fails[tc.get("name")] = (f.get("type"), f.text or "")
        out[ts.get("name")] = (props, fails)
    return out


def codequality(path):
    return sorted((i["check_name"], i["location"]["path"], i["severity"], i["content"]["body"])
                  for i in json.loads(runners.read(path)))


class ActionAndTemplate(unittest.TestCase):
    def setUp(self):
        self.w = Workspace()

    def tearDown(self):
        self.w.close()

    def explain(self, res):
        return "\n".join(self.w.log[-80:])

    # -- pass -------------------------------------------------------------------------------------
    def test_pass_conformant_and_known_finding(self):
        w = self.w
        res = w.github(models="models", baseline="axqc-baseline.json", upload_sarif="true")
        self.assertEqual(res["outcome"], "success", self.explain(res))
        self.assertEqual(res["outputs"]["exit-code"], "0")
        self.assertEqual(res["outputs"]["verdict"], "pass")
        self.assertEqual(res["outputs"]["models"], "2")
        self.assertEqual(res["outputs"]["reports"], "axqc-reports/axqc.sarif axqc-reports/axqc-junit.xml")
        self.assertEqual(res["uses"], [{"name": "Upload SARIF", "uses": "github/codeql-action/upload-sarif@v3",
                                        "with": {"sarif_file": "axqc-reports/axqc.sarif", "category": "axqc"}}])
        self.assertEqual(sarif_results(w.path("axqc-reports/axqc.sarif")),
                         [("role/weight-type", "unchanged", "models/b.onnx", ["conv1_w_dq"])])
        j = junit(w.path("axqc-reports/axqc-junit.xml"))
        self.assertEqual(sorted(j), ["models/a.onnx", "models/b.onnx"])
        self.assertEqual(j["models/b.onnx"][1], {})  # the known finding does not fail
        self.assertEqual(j["models/b.onnx"][0]["gate"], "pass")
        self.assertNotIn("::error file=", res["step"]["Check models"]["stderr"])
        self.assertIn("### axqc: pass (exit 0)", res["summary"])
        self.assertIn("models/b.onnx: NON_CONFORMANT", res["summary"])

        r = w.gitlab()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("axqc: pass", r.stdout)
        cq = codequality(w.path("axqc-reports/gl-code-quality.json"))
        self.assertEqual([c[:3] for c in cq], [("role/weight-type", "models/b.onnx", "major")])
        self.assertIn("in the baseline", cq[0][3])
        self.assertEqual(junit(w.path("axqc-reports/axqc-junit.xml"))["models/b.onnx"][1], {})

    # -- a new finding against the baseline -------------------------------------------------------
    def test_new_finding_fails_with_its_reports(self):
        w = self.w
        w.model("b.onnx", "broken_two_defects.onnx")  # the re-export adds op/output-not-quantized
        res = w.github(models="models", baseline="axqc-baseline.json", upload_sarif="true")
        self.assertEqual(res["outcome"], "failure", self.explain(res))
        self.assertEqual(res["step"]["Check models"]["outcome"], "success")
        self.assertEqual(res["step"]["Verdict"]["rc"], 1)
        self.assertEqual((res["outputs"]["exit-code"], res["outputs"]["verdict"]), ("1", "fail"))
        err = res["step"]["Check models"]["stderr"]
        self.assertIn("::error file=models/b.onnx,title=op/output-not-quantized (spec 5.1)::"
                      "output 'add_out' of Add 'add'", err)
        self.assertNotIn("title=role/weight-type", err)  # in the baseline: not annotated
        self.assertEqual(sarif_results(w.path("axqc-reports/axqc.sarif")),
                         [("op/output-not-quantized", "new", "models/b.onnx", ["add"]),
                          ("role/weight-type", "unchanged", "models/b.onnx", ["conv1_w_dq"])])
        self.assertEqual(len(res["uses"]), 1)  # SARIF uploaded for a failing gate too
        props, fails = junit(w.path("axqc-reports/axqc-junit.xml"))["models/b.onnx"]
        self.assertEqual(list(fails), ["op/output-not-quantized"])
        self.assertIn("[nodes: add gap]", fails["op/output-not-quantized"][1])
        self.assertEqual(props["gate"], "fail")
        self.assertIn("### axqc: fail", res["summary"])
        # fail: false: the step passes, the outputs carry the verdict
        res = w.github(models="models", baseline="axqc-baseline.json", fail="false")
        self.assertEqual(res["outcome"], "success", self.explain(res))
        self.assertEqual((res["outputs"]["exit-code"], res["outputs"]["verdict"]), ("1", "fail"))
        self.assertIn("::error title=axqc::fail", res["step"]["Verdict"]["stdout"])

        r = w.gitlab()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("axqc: fail", r.stderr)
        cq = codequality(w.path("axqc-reports/gl-code-quality.json"))
        self.assertEqual([c[:3] for c in cq], [("op/output-not-quantized", "models/b.onnx", "major"),
                                               ("role/weight-type", "models/b.onnx", "major")])
        self.assertIn("Nodes: `add` `gap`", cq[0][3])
        self.assertEqual(list(junit(w.path("axqc-reports/axqc-junit.xml"))["models/b.onnx"][1]),
                         ["op/output-not-quantized"])

    # -- a float model ------------------------------------------------------------------------------
    def test_float_model_fails_with_fail_on_not_applicable(self):
        w = self.w
        w.model("float.onnx", "float_only.onnx")
        res = w.github(models="models", baseline="axqc-baseline.json")  # default fail-on
        self.assertEqual(res["outcome"], "failure", self.explain(res))
        self.assertEqual((res["outputs"]["exit-code"], res["outputs"]["verdict"]), ("1", "fail"))
        self.assertIn("--fail-on not_applicable", res["step"]["Check models"]["stdout"])
        j = junit(w.path("axqc-reports/axqc-junit.xml"))
        self.assertEqual(j["models/float.onnx"][0]["verdict"], "not_applicable")

        res = w.github(models="models", baseline="axqc-baseline.json", fail_on="")
        self.assertEqual(res["outcome"], "success", self.explain(res))
        self.assertEqual((res["outputs"]["exit-code"], res["outputs"]["verdict"]), ("3", "not_applicable"))
        self.assertIn("::notice title=axqc::not_applicable", res["step"]["Verdict"]["stdout"])

        r = w.gitlab()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("models/float.onnx: NOT_APPLICABLE", r.stdout)
        r = w.gitlab(AXQC_FAIL_ON="")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("axqc: not_applicable", r.stdout)

    # -- an unreachable server -----------------------------------------------------------------------
    def test_unreachable_server_is_not_blamed_on_the_models(self):
        w = self.w
        server = f"127.0.0.1:{free_port()}"  # nothing listens there
        res = w.github(models="models", baseline="axqc-baseline.json", server=server, upload_sarif="true",
                       args="--retries 1")
        self.assertEqual(res["outcome"], "failure", self.explain(res))
        self.assertEqual((res["outputs"]["exit-code"], res["outputs"]["verdict"]), ("4", "no_verdict"))
        self.assertEqual(res["step"]["Verdict"]["rc"], 4)
        check = res["step"]["Check models"]
        self.assertIn(f"::error title=axqc::no verdict from axqc-server {server}", check["stdout"])
        self.assertIn("the models were not judged", res["step"]["Verdict"]["stdout"])
        # axqc's own explanation of the connection failure, annotated without a model file
        self.assertIn(f"::error title=axqc no verdict from the server::models/a.onnx: cannot reach "
                      f"axqc-server at {server}", check["stderr"])
        self.assertNotIn("::error file=models/", check["stdout"] + check["stderr"])
        self.assertEqual(res["outputs"]["reports"], "")
        self.assertEqual(res["uses"], [])  # nothing to upload
        self.assertFalse(os.path.exists(w.path("axqc-reports/axqc.sarif")))

        r = w.gitlab(AXQC_SERVER=server, AXQC_ARGS="--retries 1")
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        self.assertIn(f"no verdict from axqc-server {server}", r.stderr)
        self.assertIn("the models were not judged", r.stderr)
        self.assertNotIn("NON_CONFORMANT", r.stdout)
        self.assertFalse(os.path.exists(w.path("axqc-reports/gl-code-quality.json")))

    # -- a real server ----------------------------------------------------------------------------------
    def test_remote_checks_record_each_model_once(self):
        w = self.w
        port = free_port()
        env = env_with_axqc()
        env.update({"AXQC_LISTEN": f"127.0.0.1:{port}", "AXQC_METRICS_LISTEN": f"127.0.0.1:{free_port()}",
                    "AXQC_STORE_PATH": os.path.join(w.dir, "store.sqlite3"),
                    "AXQC_READY_FILE": os.path.join(w.dir, "ready.json")})
        with open(os.path.join(w.dir, "server.log"), "w") as logf:
            proc = subprocess.Popen([SERVER_BIN], env=env, stdout=logf, stderr=subprocess.STDOUT)
        try:
            for _ in range(300):
                if os.path.exists(env["AXQC_READY_FILE"]) and os.path.getsize(env["AXQC_READY_FILE"]):
                    break
                self.assertIsNone(proc.poll(), runners.read(os.path.join(w.dir, "server.log")))
                time.sleep(0.05)
            server = f"127.0.0.1:{port}"
            res = w.github(models="models", baseline="axqc-baseline.json", server=server,
                           labels="project=example/models source=ci", format="sarif,junit json")
            self.assertEqual(res["outcome"], "success", self.explain(res))
            self.assertEqual((res["outputs"]["exit-code"], res["outputs"]["verdict"]), ("0", "pass"))
            self.assertEqual(res["outputs"]["reports"],
                             "axqc-reports/axqc.sarif axqc-reports/axqc-junit.xml axqc-reports/axqc.json")
            self.assertIn(f"checked on {server}", res["summary"])
            self.assertEqual(sarif_results(w.path("axqc-reports/axqc.sarif")),
                             [("role/weight-type", "unchanged", "models/b.onnx", ["conv1_w_dq"])])
            stats = subprocess.run(["axqc", "stats", "--server", server, "--format", "json",
                                    "--label", "project=example/models"],
                                   env=env_with_axqc(), capture_output=True, text=True)
            self.assertEqual(stats.returncode, 0, stats.stderr)
            s = json.loads(stats.stdout)
            self.assertEqual(s["total"]["requests"], "2", s)  # 4 calls (gate, 3 reports), each model recorded once

            r = w.gitlab(AXQC_SERVER=server)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("--server " + server, r.stdout)
            self.assertIn("--label project=example/models", r.stdout)
            self.assertEqual([c[:2] for c in codequality(w.path("axqc-reports/gl-code-quality.json"))],
                             [("role/weight-type", "models/b.onnx")])
        finally:
            proc.terminate()
            proc.wait(timeout=60)

    # -- inputs -------------------------------------------------------------------------------------------
    def test_models_globs_folders_excludes_targets_and_formats(self):
        w = self.w
        os.makedirs(w.path("zoo/sub"))
        shutil.copy(os.path.join(EXAMPLES, "conformant_cnn.onnx"), w.path("zoo/sub/c.onnx"))
        shutil.copy(os.path.join(EXAMPLES, "float_only.onnx"), w.path("zoo/float.onnx"))
        res = w.github(models="models/*.onnx\nzoo models/a.onnx", exclude="zoo/float*",
                       baseline="axqc-baseline.json", target="ax650, ax620e", format="json text html")
        self.assertEqual(res["outcome"], "success", self.explain(res))
        self.assertEqual(res["outputs"]["models"], "3")  # a, b, zoo/sub/c; a once; float excluded
        out = res["step"]["Check models"]["stdout"]
        self.assertIn("--target ax650 --target ax620e", out)
        doc = json.loads(runners.read(w.path("axqc-reports/axqc.json")))
        reports = doc if isinstance(doc, list) else doc.get("reports", [doc])
        self.assertEqual(sorted(r["model"]["file"] for r in reports),
                         ["models/a.onnx", "models/b.onnx", "zoo/sub/c.onnx"])
        for f in ("axqc.txt", "html/models_a.html", "html/models_b.html", "html/zoo_sub_c.html"):
            self.assertGreater(os.path.getsize(w.path("axqc-reports/" + f)), 0, f)

        res = w.github(models="models/missing.onnx")
        self.assertEqual(res["outcome"], "failure")
        self.assertIn("no such model file or folder: models/missing.onnx", res["step"]["Check models"]["stdout"])
        self.assertEqual(res["outputs"]["exit-code"], "2")
        self.assertEqual(res["step"]["Verdict"]["rc"], 2)

        r = w.gitlab(AXQC_MODELS="models/*.onnx zoo", AXQC_EXCLUDE="zoo/float*", AXQC_TARGET="ax650")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("(3 models)", r.stdout)
        self.assertIn("--target ax650", r.stdout)

    def test_without_axqc_the_setup_says_how_to_get_it(self):
        env = env_with_axqc()
        env["PATH"] = "/usr/bin:/bin"
        res = self.w.github(env=env, models="models")
        self.assertEqual(res["outcome"], "failure")
        self.assertEqual(res["step"]["Set up axqc"]["outcome"], "failure")
        self.assertIn("axqc is not installed", res["step"]["Set up axqc"]["stdout"])
        self.assertEqual(res["step"]["Check models"]["outcome"], "skipped")
        self.assertIn("the check did not run", res["step"]["Verdict"]["stdout"])


if __name__ == "__main__":
    for path in (os.path.join(AXQC_DIR, "axqc"), SERVER_BIN, os.path.join(EXAMPLES, "conformant_cnn.onnx")):
        if not os.path.exists(path):
            print(f"ci_step_test: {path} is missing (build first)")
            sys.exit(1)
    try:
        import yaml  # noqa: F401
    except ImportError:
        print("ci_step_test: SKIP: python3-yaml is missing (scripts/setup installs it)")
        sys.exit(77)
    unittest.main(argv=[sys.argv[0], "-v"])
