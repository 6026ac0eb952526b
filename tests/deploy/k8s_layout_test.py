#!/usr/bin/env python3
"""The Kubernetes replica/store layout checks of validate_deploy.py, on the repository's manifests
and on broken copies of them.

    tests/deploy/k8s_layout_test.py        (ctest deploy_k8s_layout; exit 77 = no PyYAML)

The repository's deploy/k8s and deploy/k8s-postgres must pass `validate_deploy.py --k8s-layout`.
Each MUTATION below copies both directories, breaks one invariant the way an edit could (an HPA
put back into the base, a second replica, a rolling update on the SQLite file, the store back on
an emptyDir, the overlay without its HPA, PDB or PostgreSQL store, ...) and must make the checks
fail with the FAIL line it names. Both renderings are exercised: validate_deploy.py's own
kustomize resolution always, `kubectl kustomize` as well when kubectl is installed.
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VALIDATE = os.path.join(ROOT, "tests", "deploy", "validate_deploy.py")

try:
    import yaml  # noqa: F401 - validate_deploy.py needs it
except ImportError:
    print("SKIP: python3-yaml (PyYAML) is not installed")
    sys.exit(77)


def edit(path, old, new):
    def apply(root):
        p = os.path.join(root, path)
        text = open(p).read()
        if old not in text:
            raise AssertionError("%s: %r not found (the mutation is out of date)" % (path, old))
        with open(p, "w") as f:
            f.write(text.replace(old, new, 1))
    return apply


def write(path, text):
    def apply(root):
        with open(os.path.join(root, path), "w") as f:
            f.write(text)
    return apply


def move(src, dst):
    def apply(root):
        shutil.move(os.path.join(root, src), os.path.join(root, dst))
    return apply


def steps(*fns):
    def apply(root):
        for fn in fns:
            fn(root)
    return apply


BASE_RES = "  - pvc.yaml\n"
OVERLAY_RES = "  - hpa.yaml\n  - pdb.yaml\n"

# (name, mutation, text every expected FAIL line contains)
MUTATIONS = [
    ("HPA put back into the base",
     steps(move("deploy/k8s-postgres/hpa.yaml", "deploy/k8s/hpa.yaml"),
           edit("deploy/k8s/kustomization.yaml", BASE_RES, BASE_RES + "  - hpa.yaml\n"),
           edit("deploy/k8s-postgres/kustomization.yaml", OVERLAY_RES, "  - pdb.yaml\n")),
     "deploy/k8s: no HorizontalPodAutoscaler"),
    ("HPA file left in the base, not listed",
     write("deploy/k8s/hpa.yaml", open(os.path.join(ROOT, "deploy/k8s-postgres/hpa.yaml")).read()),
     "deploy/k8s/hpa.yaml: a HorizontalPodAutoscaler in the single-replica base"),
    ("PDB in the base",
     steps(move("deploy/k8s-postgres/pdb.yaml", "deploy/k8s/pdb.yaml"),
           edit("deploy/k8s/kustomization.yaml", BASE_RES, BASE_RES + "  - pdb.yaml\n"),
           edit("deploy/k8s-postgres/kustomization.yaml", OVERLAY_RES, "  - hpa.yaml\n")),
     "deploy/k8s: no PodDisruptionBudget"),
    ("two replicas in the base",
     edit("deploy/k8s/deployment.yaml", "  replicas: 1\n", "  replicas: 2\n"),
     "deploy/k8s: replicas: 1"),
    ("no replica count in the base",
     edit("deploy/k8s/deployment.yaml", "  replicas: 1\n", ""),
     "deploy/k8s: replicas: 1"),
    ("rolling update on the SQLite file",
     edit("deploy/k8s/deployment.yaml", "    type: Recreate\n",
          "    type: RollingUpdate\n    rollingUpdate:\n      maxUnavailable: 0\n      maxSurge: 1\n"),
     "deploy/k8s: strategy Recreate"),
    ("store back on an emptyDir",
     edit("deploy/k8s/deployment.yaml",
          "          persistentVolumeClaim:\n            claimName: axqc-server-store\n",
          "          emptyDir:\n            sizeLimit: 2Gi\n"),
     "deploy/k8s: the store directory of /var/lib/axqc/axqc.sqlite3 is on a PersistentVolumeClaim"),
    ("store claim not listed",
     edit("deploy/k8s/kustomization.yaml", BASE_RES, ""),
     "deploy/k8s: the claim axqc-server-store is one of the resources"),
    ("store moved off the claimed directory",
     edit("deploy/k8s/configmap.yaml", 'store-path = "/var/lib/axqc/axqc.sqlite3"',
          'store-path = "/tmp/axqc.sqlite3"'),
     "deploy/k8s: the store directory of /tmp/axqc.sqlite3 is on a PersistentVolumeClaim"),
    ("overlay without the HPA",
     edit("deploy/k8s-postgres/kustomization.yaml", OVERLAY_RES, "  - pdb.yaml\n"),
     "deploy/k8s-postgres: a HorizontalPodAutoscaler"),
    ("overlay without the PDB",
     edit("deploy/k8s-postgres/kustomization.yaml", OVERLAY_RES, "  - hpa.yaml\n"),
     "deploy/k8s-postgres: a PodDisruptionBudget"),
    ("overlay keeps the base's replica count",
     edit("deploy/k8s-postgres/deployment-patch.yaml", "  replicas: null\n", ""),
     "deploy/k8s-postgres: no `replicas` in the Deployment"),
    ("overlay keeps Recreate",
     edit("deploy/k8s-postgres/deployment-patch.yaml",
          "  strategy:\n    type: RollingUpdate\n    rollingUpdate:\n      maxUnavailable: 0\n"
          "      maxSurge: 1\n", ""),
     "deploy/k8s-postgres: rolling updates with maxUnavailable 0"),
    ("overlay without the PostgreSQL store (replicas on SQLite)",
     edit("deploy/k8s-postgres/deployment-patch.yaml",
          "            - name: AXQC_STORE\n              valueFrom:\n                secretKeyRef:\n"
          "                  name: axqc-store\n                  key: dsn\n                  optional: false\n",
          ""),
     "deploy/k8s-postgres: every replica's store is AXQC_STORE"),
    ("overlay store secret optional (a missing secret would fall back to SQLite)",
     edit("deploy/k8s-postgres/deployment-patch.yaml", "optional: false", "optional: true"),
     "deploy/k8s-postgres: every replica's store is AXQC_STORE"),
    ("overlay keeps the SQLite claim",
     edit("deploy/k8s-postgres/kustomization.yaml", "  - path: drop-sqlite-claim.yaml\n", ""),
     "deploy/k8s-postgres: no SQLite volume claim"),
    ("overlay keeps the claim as the store volume",
     edit("deploy/k8s-postgres/deployment-patch.yaml",
          "          persistentVolumeClaim: null\n          emptyDir:\n            sizeLimit: 64Mi\n",
          "          persistentVolumeClaim:\n            claimName: axqc-server-store\n"),
     "deploy/k8s-postgres: no server volume is a claim"),
    ("HPA down to one replica",
     edit("deploy/k8s-postgres/hpa.yaml", "minReplicas: 2", "minReplicas: 1"),
     "deploy/k8s-postgres: the HPA scales 2..10"),
]


def run(root):
    return subprocess.run([sys.executable, VALIDATE, "--k8s-layout", root],
                          capture_output=True, text=True)


def copy_tree(dst):
    for sub in ("deploy/k8s", "deploy/k8s-postgres"):
        shutil.copytree(os.path.join(ROOT, sub), os.path.join(dst, sub))


def main():
    failures = []
    r = run(ROOT)
    print(r.stdout.strip().splitlines()[-1] if r.stdout.strip() else "(no output)")
    if r.returncode != 0:
        failures.append("the repository's manifests fail the layout checks:\n" + r.stdout + r.stderr)
    kubectl = shutil.which("kubectl") is not None
    for name, mutate, want in MUTATIONS:
        with tempfile.TemporaryDirectory(prefix="axqc-k8s-layout.") as tmp:
            copy_tree(tmp)
            mutate(tmp)
            r = run(tmp)
            fails = [l for l in r.stdout.splitlines() if l.startswith("FAIL: ")]
            where, _, rest = want.partition(": ")
            wants = [want]
            if kubectl and where in ("deploy/k8s", "deploy/k8s-postgres"):
                # Both renderings must catch it: the second one names kubectl.
                wants.append("%s (kubectl kustomize): %s" % (where, rest))
            hits = [l for l in fails if want in l]
            need = len(wants)
            ok = r.returncode == 1 and all(any(w in l for l in fails) for w in wants)
            print("%s  %-72s %s" % ("ok  " if ok else "FAIL", name,
                                    hits[0][6:] if hits else "(no matching FAIL line)"))
            if not ok:
                failures.append("%s: expected exit 1 and %d FAIL line(s) containing %r; exit %d, "
                                "FAIL lines:\n  %s\n%s" % (name, need, want, r.returncode,
                                                          "\n  ".join(fails), r.stderr))
    print("%d mutations, %d not caught" % (len(MUTATIONS), len(failures)))
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
