#!/usr/bin/env python3
"""Static checks of deploy/ that need no container engine and no cluster (PyYAML + dpkg).

  validate_deploy.py ROOT SERVER_BIN CLIENT_BIN TMPDIR

* The image's and the ConfigMap's server config files are accepted by the real axqc-server
  (`--config FILE --print-config`); ports, store path and shutdown timings are read from there.
* Dockerfile: bookworm builder running scripts/setup and the release preset; slim runtime whose
  apt package list covers every shared library axqc-server and axqc load (ldd + dpkg, closure
  over Depends); non-root USER; store VOLUME; HEALTHCHECK `axqc health --server 127.0.0.1:PORT`;
  COPY sources exist and are not excluded by .dockerignore.
* compose.yaml: mounts exist, the scrape target is the compose service on the metrics port, the
  Grafana datasource points at the Prometheus service, the dashboard provider reads the mounted
  dashboards, stop_grace_period exceeds the server's shutdown delay + grace period.
* deploy/k8s: every manifest parses; the kustomization lists them all; Deployment ports, gRPC probe
  ports, annotations and mounts agree with the ConfigMap; terminationGracePeriodSeconds exceeds
  shutdown delay + grace period; Services, HPA and PDB select/target the Deployment.
* PostgreSQL variants: compose.postgres.yaml (replicas, store URI on the postgres service, the
  load balancer's upstream and the DNS scrape target on the right ports) and the deploy/k8s-postgres
  overlay (patch of the base Deployment, store secret shared with the StatefulSet, Service port;
  rendered with `kubectl kustomize` when kubectl is installed); the server accepts the configs
  with a postgresql:// store.
"""
import json
import os
import re
import shlex
import subprocess
import sys

import yaml

FAILURES = []
OKS = []


def check(cond, msg):
    (OKS if cond else FAILURES).append(msg)
    if not cond:
        print("FAIL: " + msg)
    return cond


def port_of(addr):
    return int(addr.rsplit(":", 1)[1])


def server_config(server_bin, conf_path):
    out = subprocess.run([server_bin, "--config", conf_path, "--print-config"],
                         capture_output=True, text=True, env={"PATH": os.environ.get("PATH", "")})
    if out.returncode != 0:
        raise SystemExit("FAIL: axqc-server rejects %s: %s" % (conf_path, out.stderr.strip()))
    return json.loads(out.stdout)


def seconds(text):
    m = re.fullmatch(r"(\d+)(ms|s|m)?", str(text).strip())
    if not m:
        raise ValueError("not a duration: %r" % text)
    n = int(m.group(1))
    return {"ms": n / 1000, "s": n, "m": n * 60, None: n}[m.group(2)]


# ------------------------------------------------------------------------------------------------
# Dockerfile

def dockerfile_instructions(path):
    """(instruction, argument text) with continuation lines joined and comments dropped."""
    out, cur = [], ""
    for line in open(path):
        s = line.rstrip("\n")
        if not cur and (s.strip().startswith("#") or not s.strip()):
            continue
        if s.strip().startswith("#"):
            continue
        if s.endswith("\\"):
            cur += s[:-1] + " "
            continue
        cur += s
        word, _, rest = cur.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        cur = ""
    return out


def runtime_packages(path):
    text = open(path).read()
    m = re.search(r"AXQC_RUNTIME_PACKAGES_BEGIN(.*?)AXQC_RUNTIME_PACKAGES_END", text, re.S)
    if not m:
        raise SystemExit("FAIL: %s has no AXQC_RUNTIME_PACKAGES markers" % path)
    block = m.group(1).replace("\\\n", " ")
    m2 = re.search(r"--no-install-recommends(.*?)&&", block, re.S)
    return m2.group(1).split() if m2 else []


def dpkg_owners(paths):
    """Debian package owning each path (or its resolved path); one dpkg call for all."""
    candidates = {p: [p, os.path.realpath(p)] for p in paths}
    args = sorted({c for cs in candidates.values() for c in cs})
    r = subprocess.run(["dpkg", "-S"] + args, capture_output=True, text=True)
    owner_of = {}
    for line in r.stdout.splitlines():
        pkgs, _, path = line.partition(": ")
        owner_of[path.strip()] = pkgs.split(",")[0].split(":")[0].strip()
    return {p: next((owner_of[c] for c in cs if c in owner_of), None) for p, cs in candidates.items()}


_DEPENDS = {}


def installed_depends(pkg):
    """Alternatives lists of the Pre-Depends and Depends of an installed package."""
    if not _DEPENDS:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Pre-Depends}, ${Depends}\n"],
                           capture_output=True, text=True)
        for line in r.stdout.splitlines():
            name, _, deps = line.partition("\t")
            items = []
            for item in deps.split(","):
                alts = [re.sub(r"\(.*?\)|:\S+", "", a).strip() for a in item.split("|")]
                alts = [a for a in alts if a]
                if alts:
                    items.append(alts)
            _DEPENDS[name] = items
    return _DEPENDS.get(pkg, [])


def closure(pkgs):
    seen, todo = set(), list(pkgs)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        for alts in installed_depends(p):
            todo.extend(alts)  # any alternative may be the one installed: follow all
    return seen


# Packages of debian:bookworm-slim itself (Priority required) that the binaries link.
BASE_IMAGE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"}


def validate_dockerfile(root, binaries, image_cfg):
    path = os.path.join(root, "deploy/docker/Dockerfile")
    ins = dockerfile_instructions(path)
    args = {}
    stages = []
    for word, rest in ins:
        if word == "ARG" and "=" in rest and not stages:
            k, v = rest.split("=", 1)
            args[k] = v
        if word == "FROM":
            image = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), rest.split()[0])
            name = rest.split()[-1] if " AS " in rest.upper() else ""
            stages.append({"image": image, "name": name, "ins": []})
        elif stages:
            stages[-1]["ins"].append((word, rest))
    check(len(stages) >= 2, "Dockerfile is multi-stage (%d stages)" % len(stages))
    builder, runtime = stages[0], stages[-1]
    check(builder["image"] == "debian:bookworm", "builder stage is debian:bookworm (%s)" % builder["image"])
    check(runtime["image"] == "debian:bookworm-slim",
          "runtime stage is debian:bookworm-slim (%s)" % runtime["image"])
    brun = " ".join(r for w, r in builder["ins"] if w == "RUN")
    check("scripts/setup" in brun, "builder runs scripts/setup")
    check("--preset release" in brun, "builder uses the CMake release preset")
    check("--target axqc axqc-server axqc-worker" in brun,
          "builder builds only axqc, axqc-server and its worker axqc-worker")

    rins = runtime["ins"]
    users = [r for w, r in rins if w == "USER"]
    check(users and users[-1].split(":")[0] not in ("0", "root"), "runtime USER is not root (%s)" % users)
    uid = users[-1].split(":")[0] if users else None
    store_dir = os.path.dirname(image_cfg["store-path"])
    vols = " ".join(r for w, r in rins if w == "VOLUME")
    check(store_dir in vols, "the store directory %s is a VOLUME (%s)" % (store_dir, vols))
    hc = [r for w, r in rins if w == "HEALTHCHECK"]
    grpc_port = port_of(image_cfg["listen"])
    want = '["axqc", "health", "--server", "127.0.0.1:%d"]' % grpc_port
    check(hc and hc[-1].split("CMD", 1)[-1].strip() == want,
          "HEALTHCHECK CMD is %s (%s)" % (want, hc))
    expose = " ".join(r for w, r in rins if w == "EXPOSE").split()
    check(str(grpc_port) in expose and str(port_of(image_cfg["metrics-listen"])) in expose,
          "EXPOSE has the gRPC and metrics ports (%s)" % expose)
    check(any(w == "ENTRYPOINT" and "axqc-server" in r for w, r in rins), "ENTRYPOINT is axqc-server")
    envs = " ".join(r for w, r in rins if w == "ENV")
    m = re.search(r"AXQC_CONFIG=(\S+)", envs)
    conf_in_image = m.group(1) if m else None
    copies = [r for w, r in rins if w == "COPY" and not r.startswith("--from")]
    check(any(c.split()[-1] == conf_in_image and c.split()[0] == "deploy/docker/server.conf"
              for c in copies),
          "deploy/docker/server.conf is copied to AXQC_CONFIG=%s" % conf_in_image)

    ignore = [l.strip().rstrip("/") for l in open(os.path.join(root, ".dockerignore"))
              if l.strip() and not l.startswith("#")]
    for w, r in ins:
        if w == "COPY" and not r.startswith("--from"):
            for src in shlex.split(r)[:-1]:
                check(src == "." or os.path.exists(os.path.join(root, src)),
                      "COPY source %s exists" % src)
                first = src.split("/")[0]
                check(first not in ignore, "COPY source %s is not excluded by .dockerignore" % src)

    pkgs = runtime_packages(path)
    check(bool(pkgs), "runtime package list: %s" % " ".join(pkgs))
    if subprocess.run(["sh", "-c", "command -v dpkg-query && command -v ldd"],
                      capture_output=True).returncode != 0:
        print("note: no dpkg/ldd here: runtime library coverage not checked")
        return uid
    covered = closure(pkgs) | BASE_IMAGE_PACKAGES
    for b in binaries:
        out = subprocess.run(["ldd", b], capture_output=True, text=True).stdout
        libs = re.findall(r"=>\s*(/\S+)", out)
        check(bool(libs) and "not found" not in out, "%s: ldd resolves all libraries" % b)
        missing = {}
        owners = dpkg_owners(libs)
        for lib in libs:
            owner = owners[lib]
            if owner is None:
                missing[lib] = "(no Debian package owns it)"
            elif owner not in covered:
                missing[lib] = owner
        check(not missing, "%s: every library (%d) comes with the runtime packages%s" % (
            os.path.basename(b), len(libs),
            "" if not missing else "; missing: " + ", ".join("%s from %s" % kv for kv in missing.items())))
    return uid


# ------------------------------------------------------------------------------------------------
# compose

def validate_compose(root, image_cfg):
    d = os.path.join(root, "deploy/docker")
    c = yaml.safe_load(open(os.path.join(d, "compose.yaml")))
    svcs = c.get("services", {})
    check({"axqc-server", "prometheus", "grafana"} <= set(svcs),
          "compose services: %s" % sorted(svcs))
    srv = svcs.get("axqc-server", {})
    b = srv.get("build", {})
    check(os.path.isfile(os.path.join(d, b.get("context", "."), b.get("dockerfile", "Dockerfile"))),
          "compose builds deploy/docker/Dockerfile from the repo root")
    grace = image_cfg_seconds(image_cfg)
    check(seconds(srv.get("stop_grace_period", "10s")) > grace,
          "axqc-server stop_grace_period %s > shutdown delay + grace period (%gs)" % (
              srv.get("stop_grace_period"), grace))
    grpc_port = port_of(image_cfg["listen"])
    check(any(str(p).endswith(":%d" % grpc_port) and str(p).startswith("127.0.0.1:")
              for p in srv.get("ports", [])),
          "gRPC port %d published on the host's loopback" % grpc_port)
    mounts = {}
    for name, s in svcs.items():
        for v in s.get("volumes", []):
            parts = str(v).split(":")
            src = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", ":".join(parts[:-2] if parts[-1] in ("ro", "rw") else parts[:-1]))
            dst = parts[-2] if parts[-1] in ("ro", "rw") else parts[-1]
            if src.startswith((".", "/")):
                check(os.path.exists(os.path.join(d, src)), "%s mount source %s exists" % (name, src))
                mounts[os.path.normpath(os.path.join(d, src))] = (name, dst)
    prom_dir = os.path.normpath(os.path.join(root, "deploy/prometheus"))
    check(mounts.get(prom_dir, (None, None)) == ("prometheus", "/etc/prometheus"),
          "deploy/prometheus is mounted at /etc/prometheus in prometheus")
    pcfg = yaml.safe_load(open(os.path.join(prom_dir, "prometheus.yml")))
    job = [j for j in pcfg["scrape_configs"] if j["job_name"] == "axqc"]
    targets = [t for sc in job[0].get("static_configs", []) for t in sc["targets"]] if job else []
    want = "axqc-server:%d" % port_of(image_cfg["metrics-listen"])
    check(targets == [want], "Prometheus job axqc scrapes %s (%s)" % (want, targets))

    gdir = os.path.normpath(os.path.join(root, "deploy/grafana"))
    prov = mounts.get(os.path.join(gdir, "provisioning"), (None, None))
    check(prov == ("grafana", "/etc/grafana/provisioning"), "Grafana provisioning mounted (%s)" % (prov,))
    dash = mounts.get(os.path.join(gdir, "dashboards"), (None, None))
    dsrc = yaml.safe_load(open(os.path.join(gdir, "provisioning/datasources/prometheus.yml")))
    ds = dsrc["datasources"][0]
    check(ds["url"] == "http://prometheus:9090", "Grafana datasource is the prometheus service")
    dprov = yaml.safe_load(open(os.path.join(gdir, "provisioning/dashboards/axqc.yml")))
    check(dprov["providers"][0]["options"]["path"] == dash[1],
          "dashboard provider reads the mounted dashboards (%s)" % (dash,))
    board = json.load(open(os.path.join(gdir, "dashboards/axqc-server.json")))
    dsvar = [v for v in board["templating"]["list"] if v["type"] == "datasource"]
    check(dsvar and dsvar[0]["current"]["value"] == ds["uid"],
          "dashboard's datasource variable defaults to the provisioned uid %s" % ds["uid"])
    home = svcs.get("grafana", {}).get("environment", {}).get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
    check(home is None or home == dash[1] + "/axqc-server.json", "Grafana home dashboard path")


def image_cfg_seconds(cfg):
    return float(cfg["shutdown-delay-seconds"]) + float(cfg["grace-period-seconds"])


# ------------------------------------------------------------------------------------------------
# Kubernetes

def validate_k8s(root, server_bin, image_uid, tmpdir):
    d = os.path.join(root, "deploy/k8s")
    docs = {}
    files = sorted(f for f in os.listdir(d) if f.endswith(".yaml"))
    for f in files:
        for doc in yaml.safe_load_all(open(os.path.join(d, f))):
            if doc:
                docs.setdefault(doc["kind"], []).append(doc)
    kust = docs.get("Kustomization", [{}])[0]
    check(sorted(kust.get("resources", [])) == sorted(f for f in files if f != "kustomization.yaml"),
          "kustomization lists every manifest (%s)" % kust.get("resources"))
    for kind in ("Deployment", "Service", "HorizontalPodAutoscaler", "ConfigMap", "PodDisruptionBudget"):
        check(kind in docs, "deploy/k8s has a %s" % kind)
    dep = docs["Deployment"][0]
    cm = docs["ConfigMap"][0]
    pod = dep["spec"]["template"]
    spec = pod["spec"]
    ctr = spec["containers"][0]
    env = {e["name"]: e.get("value") for e in ctr.get("env", [])}
    conf_path = env.get("AXQC_CONFIG", "/etc/axqc/server.conf")
    key = os.path.basename(conf_path)
    check(key in cm["data"], "ConfigMap has %s" % key)
    conf_file = os.path.join(tmpdir, "k8s-" + key)
    with open(conf_file, "w") as f:
        f.write(cm["data"][key])
    cfg = server_config(server_bin, conf_file)
    check(True, "axqc-server accepts the ConfigMap's %s" % key)
    grpc_port, metrics_port = port_of(cfg["listen"]), port_of(cfg["metrics-listen"])
    ports = {p["name"]: p["containerPort"] for p in ctr["ports"]}
    check(ports.get("grpc") == grpc_port and ports.get("metrics") == metrics_port,
          "container ports %s match listen/metrics-listen" % ports)
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        g = ctr.get(probe, {}).get("grpc", {})
        check(g.get("port") == grpc_port, "%s is a gRPC probe on port %d (%s)" % (probe, grpc_port, g))
    check(ctr["readinessProbe"]["grpc"].get("service") in ("", None, "axqc.v1.Checker"),
          "readiness probe service is one the server reports")
    need = float(cfg["shutdown-delay-seconds"]) + float(cfg["grace-period-seconds"])
    tgps = spec.get("terminationGracePeriodSeconds", 30)
    check(tgps > need, "terminationGracePeriodSeconds %s > shutdown delay + grace period (%g)" % (tgps, need))
    res = ctr.get("resources", {})
    check(res.get("requests", {}).get("cpu") and res.get("requests", {}).get("memory")
          and res.get("limits", {}).get("memory"), "resources: cpu/memory requests and a memory limit")
    check(str(res.get("requests", {}).get("cpu")) == str(cfg["workers"]),
          "workers (%s) = requested CPUs (%s)" % (cfg["workers"], res.get("requests", {}).get("cpu")))
    sc = spec.get("securityContext", {})
    check(sc.get("runAsNonRoot") is True and str(sc.get("runAsUser")) == str(image_uid),
          "pod runs as non-root uid %s (the image's USER)" % image_uid)
    mounts = {m["mountPath"]: m["name"] for m in ctr.get("volumeMounts", [])}
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    cfg_vol = vols.get(mounts.get(os.path.dirname(conf_path)), {})
    check(cfg_vol.get("configMap", {}).get("name") == cm["metadata"]["name"],
          "ConfigMap mounted at %s" % os.path.dirname(conf_path))
    store_dir = os.path.dirname(cfg["store-path"])
    check(store_dir in mounts, "store directory %s is a volume" % store_dir)
    if ctr.get("securityContext", {}).get("readOnlyRootFilesystem"):
        check("/tmp" in mounts, "read-only root: /tmp is a volume (SQLite temporary files)")
    for root_dir in [r for r in cfg["allowed-root"].split(",") if r]:
        check(root_dir in mounts, "allowed root %s is mounted" % root_dir)
    ann = pod["metadata"].get("annotations", {})
    check(ann.get("prometheus.io/port") == str(metrics_port), "prometheus.io/port = %d" % metrics_port)
    labels = pod["metadata"]["labels"]
    for s in docs.get("Service", []):
        sel = s["spec"]["selector"]
        check(all(labels.get(k) == v for k, v in sel.items()), "Service %s selects the pods" % s["metadata"]["name"])
        for p in s["spec"]["ports"]:
            check(p["targetPort"] in ports or p["targetPort"] in ports.values(),
                  "Service %s port %s targets a container port" % (s["metadata"]["name"], p["name"]))
    hpa = docs["HorizontalPodAutoscaler"][0]["spec"]
    check(hpa["scaleTargetRef"]["kind"] == "Deployment" and hpa["scaleTargetRef"]["name"] == dep["metadata"]["name"],
          "HPA targets the Deployment")
    check(1 <= hpa["minReplicas"] <= hpa["maxReplicas"], "HPA replica bounds")
    pdb = docs["PodDisruptionBudget"][0]["spec"]["selector"]["matchLabels"]
    check(all(labels.get(k) == v for k, v in pdb.items()), "PDB selects the pods")


# ------------------------------------------------------------------------------------------------
# PostgreSQL variants

def server_config_env(server_bin, conf_path, env):
    e = {"PATH": os.environ.get("PATH", "")}
    e.update(env)
    out = subprocess.run([server_bin, "--config", conf_path, "--print-config"],
                         capture_output=True, text=True, env=e)
    if out.returncode != 0:
        raise SystemExit("FAIL: axqc-server rejects %s with %s: %s" % (conf_path, env, out.stderr.strip()))
    return json.loads(out.stdout)


def validate_compose_postgres(root, server_bin, image_cfg):
    d = os.path.join(root, "deploy/docker")
    c = yaml.safe_load(open(os.path.join(d, "compose.postgres.yaml")))
    svcs = c.get("services", {})
    check({"postgres", "axqc-server", "grpc-lb", "prometheus", "grafana"} <= set(svcs),
          "compose.postgres services: %s" % sorted(svcs))
    srv = svcs.get("axqc-server", {})
    env = srv.get("environment", {})
    store = env.get("AXQC_STORE", "")
    check(re.fullmatch(r"postgresql://axqc@postgres:5432/axqc", store) is not None,
          "compose.postgres: AXQC_STORE is the postgres service (%s)" % store)
    pg_env = svcs.get("postgres", {}).get("environment", {})
    check(env.get("PGPASSWORD") == pg_env.get("POSTGRES_PASSWORD"),
          "compose.postgres: the servers' PGPASSWORD is the database's password")
    check(srv.get("deploy", {}).get("replicas", 1) >= 2, "compose.postgres: 2+ axqc-server replicas")
    check(not srv.get("ports"), "compose.postgres: replicas publish no host port (the balancer does)")
    check("postgres" in srv.get("depends_on", {}), "compose.postgres: servers wait for postgres")
    check(seconds(srv.get("stop_grace_period", "10s")) > image_cfg_seconds(image_cfg),
          "compose.postgres: stop_grace_period exceeds shutdown delay + grace period")
    cfg = server_config_env(server_bin, os.path.join(root, "deploy/docker/server.conf"),
                            {"AXQC_STORE": store})
    check(cfg["store"] == store, "the image's server.conf with AXQC_STORE=%s is accepted" % store)
    grpc_port = port_of(image_cfg["listen"])
    lb = svcs.get("grpc-lb", {})
    check(any(str(p) == "127.0.0.1:%d:%d" % (grpc_port, grpc_port) for p in lb.get("ports", [])),
          "compose.postgres: the balancer publishes 127.0.0.1:%d" % grpc_port)
    nginx = open(os.path.join(d, "nginx-grpc.conf")).read()
    check(re.search(r"server\s+axqc-server:%d\b" % grpc_port, nginx) is not None
          and re.search(r"listen\s+%d\s+http2" % grpc_port, nginx) is not None,
          "nginx-grpc.conf: listens on and forwards to the gRPC port %d" % grpc_port)
    mounts = [str(v) for v in svcs.get("prometheus", {}).get("volumes", [])]
    check("./prometheus-replicas.yml:/etc/prometheus/prometheus.yml:ro" in mounts
          and "../prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro" in mounts,
          "compose.postgres: Prometheus gets prometheus-replicas.yml and the alert rules")
    pcfg = yaml.safe_load(open(os.path.join(d, "prometheus-replicas.yml")))
    job = [j for j in pcfg["scrape_configs"] if j["job_name"] == "axqc"]
    sd = job[0].get("dns_sd_configs", [{}])[0] if job else {}
    check(sd.get("names") == ["axqc-server"] and sd.get("port") == port_of(image_cfg["metrics-listen"]),
          "prometheus-replicas.yml: job axqc discovers axqc-server:%d by DNS (%s)" % (
              port_of(image_cfg["metrics-listen"]), sd))


def validate_k8s_postgres(root, server_bin, tmpdir):
    d = os.path.join(root, "deploy/k8s-postgres")
    kust = yaml.safe_load(open(os.path.join(d, "kustomization.yaml")))
    res = kust.get("resources", [])
    check("../k8s" in res, "k8s-postgres builds on ../k8s")
    for r in res:
        check(os.path.exists(os.path.join(d, r)), "k8s-postgres resource %s exists" % r)
    patches = [p["path"] for p in kust.get("patches", [])]
    base = {}
    for f in sorted(os.listdir(os.path.join(root, "deploy/k8s"))):
        if f.endswith(".yaml"):
            for doc in yaml.safe_load_all(open(os.path.join(root, "deploy/k8s", f))):
                if doc:
                    base.setdefault(doc["kind"], []).append(doc)
    dep = base["Deployment"][0]
    ctr_name = dep["spec"]["template"]["spec"]["containers"][0]["name"]
    patch = yaml.safe_load(open(os.path.join(d, patches[0]))) if patches else {}
    check(patch.get("kind") == "Deployment" and patch["metadata"]["name"] == dep["metadata"]["name"],
          "k8s-postgres patches the base Deployment")
    pctrs = patch.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])
    check(pctrs[0].get("name") == ctr_name, "the patch names the container %s" % ctr_name)
    env = {e["name"]: e for e in pctrs[0].get("env", [])}
    ref = env.get("AXQC_STORE", {}).get("valueFrom", {}).get("secretKeyRef", {})
    check(ref.get("name") == "axqc-store" and ref.get("key") == "dsn",
          "AXQC_STORE comes from secret axqc-store, key dsn (%s)" % ref)
    pg = {}
    for doc in yaml.safe_load_all(open(os.path.join(d, "postgres.yaml"))):
        if doc:
            pg[doc["kind"]] = doc
    sts = pg.get("StatefulSet", {})
    pctr = sts["spec"]["template"]["spec"]["containers"][0]
    penv = {e["name"]: e for e in pctr.get("env", [])}
    pref = penv.get("POSTGRES_PASSWORD", {}).get("valueFrom", {}).get("secretKeyRef", {})
    check(pref.get("name") == "axqc-store", "the StatefulSet's password comes from secret axqc-store")
    svc = pg.get("Service", {})
    cports = {p["name"]: p["containerPort"] for p in pctr["ports"]}
    check(svc.get("metadata", {}).get("name") == "axqc-postgres"
          and svc["spec"]["ports"][0]["port"] == 5432
          and svc["spec"]["ports"][0]["targetPort"] in cports,
          "Service axqc-postgres:5432 targets the database container")
    check(all(sts["spec"]["template"]["metadata"]["labels"].get(k) == v
              for k, v in svc["spec"]["selector"].items()), "Service axqc-postgres selects the pod")
    check(any(v["metadata"]["name"] in [m["name"] for m in pctr["volumeMounts"]]
              for v in sts["spec"].get("volumeClaimTemplates", [])),
          "the database directory is on a volume claim")
    cm = base["ConfigMap"][0]
    conf = os.path.join(tmpdir, "k8s-pg-server.conf")
    with open(conf, "w") as f:
        f.write(cm["data"]["server.conf"])
    dsn = "postgresql://axqc@axqc-postgres:5432/axqc"
    cfg = server_config_env(server_bin, conf, {"AXQC_STORE": dsn,
                                               "AXQC_CLAIM_LEASE_SECONDS": env["AXQC_CLAIM_LEASE_SECONDS"]["value"],
                                               "AXQC_STORE_POOL_SIZE": env["AXQC_STORE_POOL_SIZE"]["value"]})
    check(cfg["store"] == dsn, "the ConfigMap with the overlay's environment is accepted")
    if subprocess.run(["sh", "-c", "command -v kubectl"], capture_output=True).returncode == 0:
        out = subprocess.run(["kubectl", "kustomize", d], capture_output=True, text=True)
        docs = [x for x in yaml.safe_load_all(out.stdout) if x] if out.returncode == 0 else []
        kinds = sorted(x["kind"] for x in docs)
        rendered = [x for x in docs if x["kind"] == "Deployment"]
        names = [e["name"] for e in rendered[0]["spec"]["template"]["spec"]["containers"][0].get("env", [])] if rendered else []
        check(out.returncode == 0 and "StatefulSet" in kinds and "AXQC_STORE" in names
              and "AXQC_CONFIG" in names,
              "kubectl kustomize deploy/k8s-postgres renders (%s; %s)" % (kinds, out.stderr.strip()[:200]))
    else:
        print("note: no kubectl here: deploy/k8s-postgres not rendered")


def main(argv):
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    root, server_bin, client_bin, tmpdir = argv[1:]
    image_cfg = server_config(server_bin, os.path.join(root, "deploy/docker/server.conf"))
    check(True, "axqc-server accepts deploy/docker/server.conf")
    # The worker processes' executable (isolation) is built and shipped beside the server.
    worker_bin = os.path.join(os.path.dirname(server_bin), "axqc-worker")
    uid = validate_dockerfile(root, [server_bin, worker_bin, client_bin], image_cfg)
    validate_compose(root, image_cfg)
    validate_k8s(root, server_bin, uid, tmpdir)
    validate_compose_postgres(root, server_bin, image_cfg)
    validate_k8s_postgres(root, server_bin, tmpdir)
    print("deploy/ static checks: %d passed, %d failed" % (len(OKS), len(FAILURES)))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
