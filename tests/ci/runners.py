#!/usr/bin/env python3
"""Runs CI configuration the way GitHub's runner and gitlab-runner do, without the services.

GitHub Actions, a composite action (action.yml):
  * inputs: the given values, else the declared defaults; `${{ }}` expressions (contexts inputs,
    steps.ID.outputs / .outcome, github, runner, env; operators == != && || ! and parentheses;
    functions always() success() failure() cancelled() contains() startsWith()) are evaluated in
    `env:`, `with:`, `run:` and `if:` (an `if:` without a status function means success() && ...);
  * each `run:` step is written to a file in RUNNER_TEMP and run with `shell: bash`'s command line
    `bash --noprofile --norc -eo pipefail FILE` in the workspace, with GITHUB_WORKSPACE,
    GITHUB_ACTION_PATH, RUNNER_TEMP, GITHUB_ACTIONS=true, CI=true and fresh file-command files per
    step (GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH, GITHUB_STEP_SUMMARY: `k=v` and `k<<EOF` forms)
    whose contents become steps.ID.outputs, the next steps' environment and PATH, and the summary;
  * `uses:` steps are not run (they are other people's actions): they are recorded with their
    evaluated `with:` so a test can check what they would get;
  * a failed step fails the action; later steps run only when their `if:` says so.
  Steps run on this machine, or in a job container (`container:` jobs: deploy/docker/
  lib-runners.sh github_exec, as `docker exec`), with host folders mapped to container paths.

GitLab CI, a job of a .gitlab-ci.yml:
  * `include:` (local, project + file, remote, template) is resolved to local files by the caller's
    map; `extends:` is merged as GitLab does (hashes deeply, everything else replaced);
  * variables: global, then the job's, then predefined CI_* ones, then the project's CI/CD
    settings (highest); references `$VAR` / `${VAR}` in values are expanded;
  * the job script is what gitlab-runner's bash shell writes: `export` of every variable, `cd
    $CI_PROJECT_DIR`, then each before_script/script line preceded by its echo. Run it with
    `bash` (here) or hand it to a container's shell on stdin (lib-runners.sh gitlab_docker_job).

    runners.py github ACTION_DIR --workspace DIR --temp DIR [--input K=V]... [--env K=V]...
               [--container NAME --map HOST=CONTAINER]... [--result FILE.json]
    runners.py gitlab CI_FILE JOB --include SPEC=FILE... [--var K=V]... [--project-dir DIR]
               --script FILE [--result FILE.json]
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
LIB = os.path.join(ROOT, "deploy", "docker", "lib-runners.sh")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def yaml_load(path):
    import yaml  # python3-yaml

    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


# ------------------------------------------------------------------------------------------------
# GitHub expressions

_TOKEN = re.compile(r"""\s*(?:(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|&&|\|\||!|\(|\)|,)|"""
                    r"""(?P<num>\d+(?:\.\d+)?)|(?P<id>[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*))""")


def _tokens(text):
    pos, out = 0, []
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot parse expression at {text[pos:]!r}")
        pos = m.end()
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
    return out


def truthy(v):
    return v not in (None, "", False, 0)


def as_string(v):
    if v is True:
        return "true"
    if v is False:
        return "false"
    return "" if v is None else str(v)


class Expression:
    """GitHub's expression language, the part actions use."""

    def __init__(self, contexts, status):
        self.contexts = contexts  # dict of dicts
        self.status = status      # "success" or "failure"

    def evaluate(self, text):
        self.toks = _tokens(text)
        self.i = 0
        v = self._or()
        if self.i != len(self.toks):
            raise ValueError(f"trailing tokens in {text!r}")
        return v

    def _peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def _take(self, value=None):
        tok = self._peek()
        if value is not None and tok[1] != value:
            raise ValueError(f"expected {value!r}, got {tok[1]!r}")
        self.i += 1
        return tok

    def _or(self):
        v = self._and()
        while self._peek()[1] == "||":
            self._take()
            r = self._and()
            v = v if truthy(v) else r
        return v

    def _and(self):
        v = self._unary()
        while self._peek()[1] == "&&":
            self._take()
            r = self._unary()
            v = r if truthy(v) else v
        return v

    def _unary(self):
        if self._peek()[1] == "!":
            self._take()
            return not truthy(self._unary())
        return self._cmp()

    def _cmp(self):
        v = self._primary()
        if self._peek()[1] in ("==", "!="):
            op = self._take()[1]
            r = self._primary()
            eq = as_string(v).lower() == as_string(r).lower()
            return eq if op == "==" else not eq
        return v

    def _primary(self):
        kind, val = self._take()
        if kind == "str":
            return val[1:-1].replace("''", "'")
        if kind == "num":
            return val
        if val == "(":
            v = self._or()
            self._take(")")
            return v
        if kind == "id":
            if self._peek()[1] == "(":
                self._take("(")
                args = []
                while self._peek()[1] != ")":
                    args.append(self._or())
                    if self._peek()[1] == ",":
                        self._take()
                self._take(")")
                return self._call(val, args)
            if val in ("true", "false"):
                return val == "true"
            if val == "null":
                return None
            obj = self.contexts
            for part in val.split("."):
                obj = obj.get(part) if isinstance(obj, dict) else None
            return obj
        raise ValueError(f"unexpected {val!r}")

    def _call(self, name, args):
        if name == "always":
            return True
        if name == "success":
            return self.status == "success"
        if name == "failure":
            return self.status == "failure"
        if name == "cancelled":
            return False
        if name == "contains":
            return as_string(args[1]).lower() in as_string(args[0]).lower()
        if name == "startsWith":
            return as_string(args[0]).lower().startswith(as_string(args[1]).lower())
        raise ValueError(f"function {name}() is not emulated")


def interpolate(text, expr):
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: as_string(expr.evaluate(m.group(1))), str(text))


def step_condition(cond, expr):
    if cond is None:
        return expr.status == "success"
    text = str(cond).strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    if not re.search(r"\b(always|success|failure|cancelled)\s*\(", text):
        text = f"success() && ({text})"
    return truthy(expr.evaluate(text))


def read_file_commands(path):
    """k=v and k<<DELIM ... DELIM lines of a GITHUB_OUTPUT / GITHUB_ENV file."""
    out = {}
    if not os.path.exists(path):
        return out
    lines = read(path).split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            k, delim = line.split("<<", 1)
            value = []
            while i < len(lines) and lines[i] != delim:
                value.append(lines[i])
                i += 1
            i += 1
            out[k] = "\n".join(value)
        elif "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


# ------------------------------------------------------------------------------------------------
# Where steps run


class Local:
    """Steps run on this machine (a runner without a job container)."""

    def to_runner(self, host_path):
        return host_path

    def run(self, script_host, cwd_host, env):
        full = dict(os.environ)
        full.update(env)
        return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", script_host],
                              cwd=cwd_host, env=full, capture_output=True, text=True, timeout=900)


class Container:
    """Steps run in a job container by `docker exec` (lib-runners.sh github_exec)."""

    def __init__(self, name, mounts):
        self.name = name
        self.mounts = sorted(mounts, key=lambda m: -len(m[0]))  # (host, container)

    def to_runner(self, host_path):
        for host, cont in self.mounts:
            if host_path == host or host_path.startswith(host.rstrip("/") + "/"):
                return cont + host_path[len(host):]
        raise ValueError(f"{host_path} is not mounted into the job container")

    def run(self, script_host, cwd_host, env):
        opts = ["-w", self.to_runner(cwd_host)]
        for k, v in env.items():
            opts += ["-e", f"{k}={v}"]
        cmd = ["bash", "-c", 'source "$0"; github_exec "$@"', LIB, self.name,
               self.to_runner(script_host)] + opts
        return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


def run_action(action_dir, workspace, temp, inputs=None, env=None, where=None, log=print):
    """Runs the composite action in ACTION_DIR (host path) like a `uses:` step of a job whose
    workspace and RUNNER_TEMP are WORKSPACE and TEMP (host paths). Returns a dict: outcome,
    steps, outputs, summary, uses (the `uses:` steps with their `with:`), env (GITHUB_ENV)."""
    where = where or Local()
    action = yaml_load(os.path.join(action_dir, "action.yml"))
    assert action["runs"]["using"] == "composite", "not a composite action"
    given = dict(inputs or {})
    values = {}
    for name, spec in (action.get("inputs") or {}).items():
        spec = spec or {}
        if name in given:
            values[name] = as_string(given.pop(name))
        else:
            values[name] = as_string(spec.get("default", ""))
    if given:
        raise ValueError(f"inputs the action does not declare: {sorted(given)}")
    job_env = dict(env or {})
    file_env = {}   # GITHUB_ENV of earlier steps
    paths = []      # GITHUB_PATH of earlier steps
    steps_ctx = {}
    results, uses, summary = [], [], []
    status = "success"
    commands = os.path.join(temp, "_runner_file_commands")
    os.makedirs(commands, exist_ok=True)
    runner = {"temp": where.to_runner(temp), "os": "Linux"}
    github = {"workspace": where.to_runner(workspace), "action_path": where.to_runner(action_dir)}
    for n, step in enumerate(action["runs"]["steps"]):
        name = step.get("name") or step.get("uses") or f"step {n + 1}"
        sid = step.get("id") or f"__{n}"
        expr = Expression({"inputs": values, "steps": steps_ctx, "github": github, "runner": runner,
                           "env": {**job_env, **file_env}}, status)
        if not step_condition(step.get("if"), expr):
            steps_ctx[sid] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
            results.append({"name": name, "id": sid, "outcome": "skipped"})
            log(f"[runner] skip step {name!r}")
            continue
        if "uses" in step:
            with_ = {k: interpolate(v, expr) for k, v in (step.get("with") or {}).items()}
            uses.append({"name": name, "uses": step["uses"], "with": with_})
            steps_ctx[sid] = {"outputs": {}, "outcome": "success", "conclusion": "success"}
            results.append({"name": name, "id": sid, "outcome": "success", "uses": step["uses"]})
            log(f"[runner] uses {step['uses']} with {with_} (recorded, not run)")
            continue
        assert step.get("shell") == "bash", f"step {name!r}: only shell: bash is emulated"
        tag = uuid.uuid4().hex
        files = {k: os.path.join(commands, f"{k.lower()}_{tag}") for k in
                 ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")}
        for f in files.values():
            open(f, "w").close()
            os.chmod(f, 0o666)
        script = os.path.join(temp, f"{tag}.sh")
        with open(script, "w", encoding="utf-8") as f:
            f.write(interpolate(step["run"], expr) + "\n")
        step_env = {"GITHUB_ACTIONS": "true", "CI": "true", "RUNNER_OS": "Linux",
                    "GITHUB_WORKSPACE": github["workspace"], "GITHUB_ACTION_PATH": github["action_path"],
                    "RUNNER_TEMP": runner["temp"]}
        step_env.update({k: where.to_runner(v) for k, v in files.items()})
        step_env.update(job_env)
        step_env.update(file_env)
        step_env.update({k: interpolate(v, expr) for k, v in (step.get("env") or {}).items()})
        if paths:
            base = job_env.get("PATH") or (os.environ["PATH"] if isinstance(where, Local) else
                                           "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            step_env["PATH"] = ":".join(reversed(paths)) + ":" + base
        log(f"[runner] run step {name!r}")
        r = where.run(script, workspace, step_env)
        for stream in (r.stdout, r.stderr):
            for line in stream.splitlines():
                log(f"  | {line}")
        outputs = read_file_commands(files["GITHUB_OUTPUT"])
        file_env.update(read_file_commands(files["GITHUB_ENV"]))
        paths += [p for p in read(files["GITHUB_PATH"]).splitlines() if p]
        summary.append(read(files["GITHUB_STEP_SUMMARY"]))
        outcome = "success" if r.returncode == 0 else "failure"
        if outcome == "failure":
            status = "failure"
            log(f"[runner] step {name!r} failed: exit {r.returncode}")
        steps_ctx[sid] = {"outputs": outputs, "outcome": outcome, "conclusion": outcome}
        results.append({"name": name, "id": sid, "outcome": outcome, "rc": r.returncode,
                        "stdout": r.stdout, "stderr": r.stderr, "outputs": outputs})
    expr = Expression({"inputs": values, "steps": steps_ctx, "github": github, "runner": runner,
                       "env": {**job_env, **file_env}}, status)
    outputs = {k: interpolate((spec or {}).get("value", ""), expr)
               for k, spec in (action.get("outputs") or {}).items()}
    return {"outcome": status, "steps": results, "outputs": outputs, "summary": "".join(summary),
            "uses": uses, "env": file_env}


# ------------------------------------------------------------------------------------------------
# GitLab


def _merge(base, over):
    """GitLab's merge of `extends:` and includes: hashes deeply, anything else replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base[k], v) if k in base else v
        return out
    return over


def _expand(value, variables):
    def sub(m):
        name = m.group(1) or m.group(2)
        return str(variables.get(name, ""))
    return re.sub(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))", sub, str(value))


def _include_specs(doc):
    inc = doc.get("include") or []
    if not isinstance(inc, list):
        inc = [inc]
    out = []
    for e in inc:
        if isinstance(e, str):
            out.append(e)
        else:
            out.append(e.get("local") or e.get("file") or e.get("remote") or e.get("template"))
    return out


def gitlab_job(ci_file, job, includes, settings=None, project_dir="/builds/group/project",
               project_path="group/project", ref_slug="main"):
    """The job as gitlab-runner gets it: a dict with image, variables, script (the shell script),
    artifacts. `includes` maps an include's local/file/remote/template value to a local file."""
    doc = yaml_load(ci_file)
    merged = {}
    for spec in _include_specs(doc):
        if spec not in includes:
            raise ValueError(f"include {spec!r} is not mapped to a file")
        merged = _merge(merged, yaml_load(includes[spec]))
    merged = _merge(merged, {k: v for k, v in doc.items() if k != "include"})

    def resolve(name, seen=()):
        j = merged[name]
        if name in seen:
            raise ValueError(f"extends loop at {name}")
        ext = j.get("extends") or []
        if isinstance(ext, str):
            ext = [ext]
        base = {}
        for e in ext:
            base = _merge(base, resolve(e, seen + (name,)))
        return _merge(base, {k: v for k, v in j.items() if k != "extends"})

    j = resolve(job)
    variables = {}
    for k, v in {**(merged.get("variables") or {}), **(j.get("variables") or {})}.items():
        variables[k] = v["value"] if isinstance(v, dict) else v
    predefined = {"CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": project_dir,
                  "CI_BUILDS_DIR": os.path.dirname(os.path.dirname(project_dir)),
                  "CI_PROJECT_PATH": project_path, "CI_COMMIT_REF_SLUG": ref_slug,
                  "CI_COMMIT_REF_NAME": ref_slug, "CI_JOB_NAME": job}
    variables.update(predefined)
    variables.update(settings or {})
    expanded = {k: _expand(v, variables) for k, v in variables.items()}
    lines = list(j.get("before_script") or []) + list(j.get("script") or [])
    out = []
    for k, v in expanded.items():
        out.append(f"export {k}={shlex.quote(v)}")
    out.append(f"cd {shlex.quote(project_dir)}")
    for line in lines:
        out.append(f"echo {shlex.quote('$ ' + line.splitlines()[0])}")
        out.append(line.rstrip("\n"))
    image = j.get("image")
    if isinstance(image, dict):
        image = image.get("name")
    return {"image": _expand(image or "", expanded), "variables": expanded, "script": "\n".join(out) + "\n",
            "artifacts": j.get("artifacts") or {}, "allow_failure": j.get("allow_failure")}


# ------------------------------------------------------------------------------------------------


def _pairs(items):
    out = {}
    for item in items or []:
        k, _, v = item.partition("=")
        out[k] = v
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("github")
    g.add_argument("action_dir")
    g.add_argument("--workspace", required=True)
    g.add_argument("--temp", required=True)
    g.add_argument("--input", action="append")
    g.add_argument("--env", action="append")
    g.add_argument("--container")
    g.add_argument("--map", action="append")
    g.add_argument("--result")
    gl = sub.add_parser("gitlab")
    gl.add_argument("ci_file")
    gl.add_argument("job")
    gl.add_argument("--include", action="append")
    gl.add_argument("--var", action="append")
    gl.add_argument("--project-dir", default="/builds/group/project")
    gl.add_argument("--script", required=True)
    gl.add_argument("--result")
    a = ap.parse_args(argv)
    if a.cmd == "github":
        where = Local()
        if a.container:
            where = Container(a.container, [tuple(m.split("=", 1)) for m in a.map or []])
        res = run_action(os.path.abspath(a.action_dir), os.path.abspath(a.workspace),
                         os.path.abspath(a.temp), _pairs(a.input), _pairs(a.env), where)
        if a.result:
            with open(a.result, "w") as f:
                json.dump(res, f, indent=1)
        print(f"[runner] action {res['outcome']}; outputs {res['outputs']}")
        return 0 if res["outcome"] == "success" else 1
    job = gitlab_job(a.ci_file, a.job, _pairs(a.include), _pairs(a.var), a.project_dir)
    with open(a.script, "w") as f:
        f.write(job["script"])
    if a.result:
        with open(a.result, "w") as f:
            json.dump(job, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
