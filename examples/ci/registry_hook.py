#!/usr/bin/env python3
"""Model-registry upload hook: check a newly registered model version on axqc-server.

Reads a registry webhook payload (an MLflow-style "model version created" event) from a file or
stdin, takes the artifact location of the new version, and runs

    axqc check --server HOST:PORT --ref <location> --format json --label ...

so the server reads the model itself (a path under its --allowed-root, or an allowlisted http(s)
URL). Prints the verdict and exits with the verdict's code, like axqc:
0 conformant, 1 non_conformant, 3 not_applicable, 2 error (bad payload, server or input error).

With --fix-plan, a non-conformant model is also given to `axqc fix --dry-run --format json`
(locally: the model must be readable here, a relative location under --local-root), and the hook
prints which semantics-preserving rewrites would apply and the verdict the fixed model would get,
so the user sees which findings are exporter artifacts and which are the model's own. The exit
code stays the verdict of the check.

Payload shapes understood (the first artifact location found wins):
  {"entity": "model_version", "action": "created",
   "data": {"name": "detector", "version": "3", "source": "file:///models/detector/3/model.onnx"}}
  {"event": "MODEL_VERSION_CREATED", "model_name": "detector", "version": "3",
   "source": "...", ...}
  {"model_version": {"name": ..., "version": ..., "source" | "storage_location": ...}}
Keys searched for the location: source, storage_location, artifact_location, artifact_uri.

Python 3 standard library only. Token and TLS flags are passed through to axqc (the token can
also come from the environment variable AXQC_TOKEN, which axqc reads itself).
"""
import argparse
import json
import os
import subprocess
import sys

LOCATION_KEYS = ("source", "storage_location", "artifact_location", "artifact_uri")
EXIT_ERROR = 2


def find_version(payload):
    """Returns (name, version, location) from the payload; location is None when absent."""
    candidates = [payload]
    for key in ("data", "model_version", "modelVersion", "payload"):
        if isinstance(payload.get(key), dict):
            candidates.insert(0, payload[key])
    name = version = location = None
    for c in candidates:
        name = name or c.get("name") or c.get("model_name")
        v = c.get("version")
        version = version or (str(v) if v is not None else None)
        for key in LOCATION_KEYS:
            if location is None and isinstance(c.get(key), str) and c[key]:
                location = c[key]
    return name, version, location


def map_location(location, mappings, model_file):
    """Applies the first matching --map FROM=TO prefix, then appends model_file to directories."""
    for m in mappings:
        src, _, dst = m.partition("=")
        if location.startswith(src):
            location = dst + location[len(src):]
            break
    if not location.endswith(".onnx") and model_file:
        location = location.rstrip("/") + "/" + model_file
    return location


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("payload", nargs="?", default="-",
                    help="webhook payload JSON file ('-' or absent: stdin)")
    ap.add_argument("--server", default=os.environ.get("AXQC_SERVER", "127.0.0.1:50051"),
                    help="axqc-server HOST:PORT (default $AXQC_SERVER or 127.0.0.1:50051)")
    ap.add_argument("--axqc", default=os.environ.get("AXQC_BIN", "axqc"),
                    help="the axqc binary (default $AXQC_BIN or axqc on PATH)")
    ap.add_argument("--map", action="append", default=[], metavar="FROM=TO",
                    help="rewrite a location prefix, e.g. s3://models/=https://minio:9000/models/ "
                         "or file:///mnt/registry/= (repeatable; first match wins)")
    ap.add_argument("--model-file", default="model.onnx",
                    help="file inside a directory location (default model.onnx)")
    ap.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                    help="extra labels for the request history")
    ap.add_argument("-c", "--check-value", action="store_true", help="also run the value checks")
    ap.add_argument("--fix-plan", action="store_true",
                    help="for a non-conformant model, also print what `axqc fix --dry-run` would "
                         "change (runs locally)")
    ap.add_argument("--local-root", default=".",
                    help="directory in which relative model locations are found locally, for "
                         "--fix-plan (default: the current directory)")
    ap.add_argument("--tls", action="store_true")
    ap.add_argument("--ca")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--token")
    ap.add_argument("--deadline", type=float)
    args = ap.parse_args(argv)

    try:
        if args.payload == "-":
            payload = json.load(sys.stdin)
        else:
            with open(args.payload, encoding="utf-8") as f:
                payload = json.load(f)
    except (OSError, ValueError) as e:
        print(f"registry_hook: cannot read the payload: {e}", file=sys.stderr)
        return EXIT_ERROR
    if not isinstance(payload, dict):
        print("registry_hook: the payload is not a JSON object", file=sys.stderr)
        return EXIT_ERROR
    name, version, location = find_version(payload)
    if not location:
        print("registry_hook: no artifact location in the payload (looked for "
              + ", ".join(LOCATION_KEYS) + ")", file=sys.stderr)
        return EXIT_ERROR
    ref = map_location(location, args.map, args.model_file)

    cmd = [args.axqc, "check", "--server", args.server, "--ref", ref, "--format", "json",
           "--label", "source=registry"]
    if name:
        cmd += ["--label", f"model={name}"]
    if version:
        cmd += ["--label", f"model_version={version}"]
    for label in args.label:
        cmd += ["--label", label]
    if args.check_value:
        cmd.append("-c")
    if args.tls:
        cmd.append("--tls")
    for flag in ("ca", "cert", "key", "token", "deadline"):
        value = getattr(args, flag)
        if value is not None:
            cmd += [f"--{flag}", str(value)]

    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        print(f"registry_hook: cannot run {args.axqc}: {e}", file=sys.stderr)
        return EXIT_ERROR
    sys.stderr.write(proc.stderr)
    what = f"{name or '?'} version {version or '?'} ({ref})"
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        print(f"registry_hook: {what}: error (axqc exit {proc.returncode}, no report)")
        return EXIT_ERROR if proc.returncode == 0 else proc.returncode
    # axqc.report/v2: {"schema": "axqc.report/v2", "reports": [...]}, one entry per model; an
    # axqc that predates it printed the one report object itself.
    reports = doc.get("reports") if isinstance(doc, dict) and "reports" in doc else [doc]
    report = reports[0] if reports else {}
    verdict = report.get("verdict")
    if verdict is None:
        print(f"registry_hook: {what}: error ({report.get('input_error', 'no verdict')})")
        return EXIT_ERROR
    summary = report.get("summary", {})
    failing = sorted(summary.get("by_rule", {}))
    print(f"registry_hook: {what}: {verdict} ({summary.get('errors', 0)} errors, "
          f"{summary.get('warnings', 0)} warnings; sha256 {report.get('model', {}).get('sha256', '?')})")
    if verdict == "non_conformant" and failing:
        print("registry_hook: rules with findings: " + ", ".join(failing))
    if verdict == "non_conformant" and args.fix_plan:
        fix_plan(args, ref)
    return proc.returncode


def fix_plan(args, ref):
    """Prints what `axqc fix --dry-run` would change on the model and the verdict after it."""
    if ref.startswith(("http://", "https://")):
        print("registry_hook: no fix plan: the model is not a local file")
        return
    path = ref[len("file://"):] if ref.startswith("file://") else ref
    if not os.path.isabs(path):
        path = os.path.join(args.local_root, path)
    cmd = [args.axqc, "fix", "--dry-run", "--format", "json", path]
    if args.check_value:
        cmd.append("-c")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        plan = json.loads(proc.stdout)
    except (OSError, ValueError):
        print(f"registry_hook: no fix plan (axqc fix could not read {path})")
        return
    if "refused" in plan:
        print(f"registry_hook: no fix plan: {plan['refused']}")
        return
    applied = [f"{r['id']} {r['applied']}" for r in plan["rewrites"] if r["applied"]]
    after = plan["after"]
    if not applied:
        print("registry_hook: axqc fix would change nothing: the findings are the model's own")
        return
    print("registry_hook: axqc fix would apply: " + ", ".join(applied))
    left = sorted(after.get("by_rule", {}))
    print(f"registry_hook: after axqc fix: {after['verdict']} ({after['errors']} errors"
          + (": " + ", ".join(left) if left else "") + "); run `axqc fix MODEL -o FIXED` "
          "or fix the export")


if __name__ == "__main__":
    sys.exit(main())
