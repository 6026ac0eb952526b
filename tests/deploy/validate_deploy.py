#!/usr/bin/env python3
"""Static checks of deploy/ that need no container engine and no cluster (PyYAML + dpkg).

  validate_deploy.py ROOT SERVER_BIN CLIENT_BIN TMPDIR
  validate_deploy.py --k8s-layout ROOT      (only the Kubernetes layout checks below; no binaries)
  validate_deploy.py --monitoring ROOT SERVER_BIN TMPDIR   (only the monitoring checks below)

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
  shutdown delay + grace period; Services select the Deployment's pods.
* Kubernetes layout (deploy/k8s and deploy/k8s-postgres rendered as `kustomize build` does, and by
  `kubectl kustomize` too when kubectl is installed): the base is exactly one replica, strategy
  Recreate, its SQLite store on a ReadWriteOnce PersistentVolumeClaim, no HPA and no PDB (not even
  an unlisted file); the overlay has the HPA (2..10) and a PDB, no `replicas`, rolling updates, no
  volume claim, and every replica's store is AXQC_STORE from the required secret.
* PostgreSQL variants: compose.postgres.yaml (replicas, store URI on the postgres service, the
  load balancer's upstream and the DNS scrape target on the right ports) and the deploy/k8s-postgres
  overlay (patch of the base Deployment, store secret shared with the StatefulSet, Service port;
  rendered with `kubectl kustomize` when kubectl is installed); the server accepts the configs
  with a postgresql:// store.
* Debian packages (deploy/debian, cmake/Packaging.cmake): the package's server.conf is accepted and
  listens on loopback only, its store lies in the unit's StateDirectory; the unit starts
  /usr/bin/axqc-server with the conffile CPack installs, as the user the postinst creates, in its
  state directory, and gives the drain more time than shutdown delay + grace period; the
  maintainer scripts are executable and parse (sh -n).
* Monitoring (deploy/grafana, deploy/prometheus/alerts.yml): the real axqc-server is started and
  scraped; every metric name of the dashboard's and the alert rules' PromQL is one it exports (or a
  family of server/metrics.cc without series yet), every label is one of that family, every label
  value selected on is one the server produces (read from the sources that make them: gRPC codes,
  worker restart causes and outcomes, webhook outcomes and sources, methods); no panel counts
  every non-OK code as a failure; every alert has severity, summary, description and a runbook
  section of docs/operations.md; `promtool check rules` and `promtool test rules
  tests/deploy/alerts_test.yml` when promtool is installed.
* Dockerfile.cli: FROM a slim Debian image, installs the axqc .deb with apt, no ENTRYPOINT (CI
  runners hand the job's script to the image's shell), no USER (root, for GitHub container jobs).
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib

try:
    import yaml
except ImportError:  # Debian: python3-yaml
    print("SKIP: PyYAML is not installed (apt-get install python3-yaml)")
    sys.exit(77)

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
    # The shipped files are TOML, not a format axqc-server reads with a deprecation note.
    check("note:" not in out.stderr, "%s is read without a note (%s)" % (conf_path, out.stderr.strip()))
    return tomllib.loads(out.stdout)


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
# Debian packages and the CLI image

def unit_settings(path):
    """Key -> value of a systemd unit file (the last one wins; no continuation lines)."""
    out = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")) and "=" in line:
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
    return out


def validate_debian(root, server_bin):
    d = os.path.join(root, "deploy/debian")
    cfg = server_config(server_bin, os.path.join(d, "server.conf"))
    check(True, "axqc-server accepts deploy/debian/server.conf")
    for key in ("listen", "metrics-listen", "http-listen"):
        addr = cfg.get(key, "")
        check(not addr or addr.startswith(("127.0.0.1:", "[::1]:", "localhost:")),
              "the package's %s is loopback only (%r)" % (key, addr))
    unit = unit_settings(os.path.join(d, "axqc-server.service"))
    argv = shlex.split(unit.get("ExecStart", ""))
    conffiles = open(os.path.join(d, "axqc-server/conffiles")).read().split()
    cmake = open(os.path.join(root, "cmake/Packaging.cmake")).read()
    installed = re.search(r'install\(FILES "\$\{_axqc_deb_dir\}/server\.conf" DESTINATION (\S+)', cmake)
    conf_path = (installed.group(1) + "/server.conf") if installed else None
    check(argv[:1] == ["/usr/bin/axqc-server"], "the unit starts /usr/bin/axqc-server (%r)" % argv)
    check("--config" in argv and argv[argv.index("--config") + 1:][:1] == [conf_path],
          "the unit's --config is the installed server.conf (%s)" % conf_path)
    check(conffiles == [conf_path], "conffiles lists %s (%r)" % (conf_path, conffiles))
    state = "/var/lib/" + unit.get("StateDirectory", "?")
    check(cfg.get("store-path", "").startswith(state + "/") and cfg.get("store", "") == "",
          "the package's store %s is in the unit's StateDirectory %s" % (cfg.get("store-path"), state))
    check(unit.get("WorkingDirectory") == state, "the unit works in %s" % state)
    # Continuation lines joined.
    postinst = re.sub(r"\\\n\s*", " ", open(os.path.join(d, "axqc-server/postinst")).read())
    user = unit.get("User")
    check(user and re.search(r"adduser --system .*--home %s .*\b%s$" % (re.escape(state), user),
                             postinst, re.M) is not None,
          "the postinst creates the unit's user %s with home %s" % (user, state))
    check(re.search(r"addgroup --system .*\b%s$" % unit.get("Group"), postinst, re.M) is not None,
          "the postinst creates the unit's group %s" % unit.get("Group"))
    check(seconds(unit.get("TimeoutStopSec", "90")) > image_cfg_seconds(cfg),
          "the unit's TimeoutStopSec %s > shutdown delay + grace period (%gs)" % (
              unit.get("TimeoutStopSec"), image_cfg_seconds(cfg)))
    for script in ("postinst", "prerm", "postrm"):
        path = os.path.join(d, "axqc-server", script)
        check(os.access(path, os.X_OK), "deploy/debian/axqc-server/%s is executable" % script)
        check(subprocess.run(["sh", "-n", path]).returncode == 0, "sh -n %s" % script)
        check(("axqc-server/%s" % script) in cmake, "cmake/Packaging.cmake ships %s" % script)

    ins = dockerfile_instructions(os.path.join(root, "deploy/docker/Dockerfile.cli"))
    words = [w for w, _ in ins]
    froms = [a for w, a in ins if w == "FROM"]
    check(len(froms) == 1 and froms[0].split()[0].endswith("-slim"),
          "Dockerfile.cli: one stage FROM a slim Debian image (%r)" % froms)
    check("ENTRYPOINT" not in words, "Dockerfile.cli: no ENTRYPOINT")
    check("USER" not in words, "Dockerfile.cli: no USER (root)")
    check(any(w == "RUN" and "apt-get install" in a and "axqc_*.deb" in a for w, a in ins),
          "Dockerfile.cli: installs axqc_*.deb with apt-get")

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
    for kind in ("Deployment", "Service", "ConfigMap", "PersistentVolumeClaim"):
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
    for root_dir in [r for r in cfg["allowed-root"] if r]:  # --print-config: a TOML array
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
    # Replicas, strategy, store claim, no HPA/PDB: validate_k8s_layout.


# ------------------------------------------------------------------------------------------------
# Kubernetes layout: what `kubectl apply -k` creates from the base and from the PostgreSQL overlay.
#
# render_kustomization() resolves a kustomization the way `kustomize build` does for what these
# manifests use: `resources` (files and directories with their own kustomization), `patches` with
# strategic-merge patches (maps merged, `null` deletes a field, lists of containers / env /
# volumes / volumeMounts / ports merged by their key, retainKeys for a Deployment's strategy and
# a volume's source, `$patch: delete` drops a resource) and `images`. When kubectl is installed,
# `kubectl kustomize` renders too and both renderings must agree and pass the same checks.

MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name", "volumes": "name",
              "volumeMounts": "mountPath", "ports": "containerPort"}
RETAIN_KEYS = {"strategy", "volumes"}  # patch maps of these replace the fields they do not name


def _merge(base, patch, field=None):
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        if field in RETAIN_KEYS:
            out = {k: v for k, v in out.items() if k in patch or k == "name"}
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            elif k in out:
                out[k] = _merge(out[k], v, k)
            else:
                out[k] = _merge({}, v, k) if isinstance(v, dict) else v
        return out
    if isinstance(base, list) and isinstance(patch, list) and field in MERGE_KEYS:
        key = MERGE_KEYS[field]
        out = [dict(x) for x in base]
        pos = {x.get(key): i for i, x in enumerate(out)}
        head = []
        for item in patch:
            if item.get("$patch") == "delete":
                out = [x for x in out if x.get(key) != item.get(key)]
                pos = {x.get(key): i for i, x in enumerate(out)}
            elif item.get(key) in pos:
                # retainKeys for a volume's source
                out[pos[item[key]]] = _merge(out[pos[item[key]]], item,
                                             "volumes" if field == "volumes" else None)
            else:
                head.append(_merge({}, item))
        return head + out
    return patch


def _ident(doc):
    return (doc.get("kind"), doc.get("metadata", {}).get("name"))


def render_kustomization(d):
    """The resources `kustomize build d` emits (list of dicts); raises ValueError on what it would
    refuse (a missing file, a patch of a resource that is not there, a duplicate resource)."""
    kust = yaml.safe_load(open(os.path.join(d, "kustomization.yaml")))
    docs = []
    for r in kust.get("resources", []):
        path = os.path.normpath(os.path.join(d, r))
        if os.path.isdir(path):
            docs.extend(render_kustomization(path))
        elif os.path.isfile(path):
            docs.extend(x for x in yaml.safe_load_all(open(path)) if x)
        else:
            raise ValueError("%s: resource %s does not exist" % (d, r))
    seen = set()
    for doc in docs:
        if _ident(doc) in seen:
            raise ValueError("%s: resource %s/%s listed twice" % ((d,) + _ident(doc)))
        seen.add(_ident(doc))
    for p in kust.get("patches", []) + [{"path": x} for x in kust.get("patchesStrategicMerge", [])]:
        patch = yaml.safe_load(open(os.path.join(d, p["path"])))
        target = [i for i, doc in enumerate(docs) if _ident(doc) == _ident(patch)]
        if not target:
            raise ValueError("%s: patch %s targets %s/%s, which is not among the resources" % (
                (d, p["path"]) + _ident(patch)))
        if patch.get("$patch") == "delete":
            docs.pop(target[0])
            continue
        body = {k: v for k, v in patch.items() if k not in ("apiVersion", "kind")}
        docs[target[0]] = _merge(docs[target[0]], body)
    for img in kust.get("images", []):
        for doc in docs:
            for c in doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                name, _, tag = c.get("image", "").partition(":")
                if name == img["name"]:
                    c["image"] = "%s:%s" % (img.get("newName", name), img.get("newTag", tag))
    if kust.get("namespace"):
        for doc in docs:
            doc.setdefault("metadata", {})["namespace"] = kust["namespace"]
    return docs


def kubectl_kustomize(d):
    """`kubectl kustomize d` as a list of dicts; None when kubectl is not installed."""
    if shutil.which("kubectl") is None:
        return None
    out = subprocess.run(["kubectl", "kustomize", d], capture_output=True, text=True)
    if out.returncode != 0:
        raise ValueError("kubectl kustomize %s: %s" % (d, out.stderr.strip()[:400]))
    return [x for x in yaml.safe_load_all(out.stdout) if x]


def _by_kind(docs):
    out = {}
    for doc in docs:
        out.setdefault(doc["kind"], []).append(doc)
    return out


def _conf_value(conf_text, key):
    """The last `key = value` of a server config file (the server's own rule: the last one wins)."""
    value = None
    for line in conf_text.splitlines():
        s = line.split("#", 1)[0].strip()
        k, sep, v = s.partition("=")
        if sep and k.strip() == key:
            value = v.strip().strip('"')
    return value


def effective_store(dep, configmaps):
    """(store location, where it is set) of the Deployment's server, by the server's precedence:
    `store` (AXQC_STORE, else the mounted config file's `store`) replaces `store-path`
    (AXQC_STORE_PATH, else the file's `store-path`, else the built-in default); the environment
    wins over the file."""
    spec = dep["spec"]["template"]["spec"]
    ctr = spec["containers"][0]
    env = {e["name"]: e for e in ctr.get("env", [])}
    text, cm_name = "", None
    conf_path = env.get("AXQC_CONFIG", {}).get("value")
    if conf_path:
        mounts = {m["mountPath"]: m["name"] for m in ctr.get("volumeMounts", [])}
        vols = {v["name"]: v for v in spec.get("volumes", [])}
        cm_name = vols.get(mounts.get(os.path.dirname(conf_path)), {}).get("configMap", {}).get("name")
        cm = [c for c in configmaps if c["metadata"]["name"] == cm_name]
        text = cm[0]["data"].get(os.path.basename(conf_path), "") if cm else ""

    def from_env(name):
        e = env[name]
        if "value" in e:
            return e["value"], name
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            return "secret:%s/%s" % (ref["name"], ref["key"]), name + (
                " (optional secret)" if ref.get("optional") else "")
        return "?", name

    for env_name, key in (("AXQC_STORE", "store"), ("AXQC_STORE_PATH", "store-path")):
        if env_name in env:
            return from_env(env_name)
        v = _conf_value(text, key)
        if v:
            return v, "%s in ConfigMap %s" % (key, cm_name)
    return "axqc-store.sqlite3", "default"


def is_postgres(location):
    return location.startswith(("postgresql://", "postgres://"))


def _store_volume(dep, store_location):
    spec = dep["spec"]["template"]["spec"]
    mounts = {m["mountPath"]: m["name"] for m in spec["containers"][0].get("volumeMounts", [])}
    path = store_location[len("sqlite:"):] if store_location.startswith("sqlite:") else store_location
    name = mounts.get(os.path.dirname(path))
    return name, {v["name"]: v for v in spec.get("volumes", [])}.get(name, {})


def check_k8s_base_layout(docs, where):
    """deploy/k8s: exactly one replica on its own SQLite file on a PersistentVolumeClaim."""
    kinds = _by_kind(docs)
    check("HorizontalPodAutoscaler" not in kinds,
          "%s: no HorizontalPodAutoscaler (one SQLite store, one replica; the HPA belongs in "
          "deploy/k8s-postgres) %s" % (where, [_ident(x) for x in kinds.get("HorizontalPodAutoscaler", [])]))
    check("PodDisruptionBudget" not in kinds,
          "%s: no PodDisruptionBudget (with one replica minAvailable 1 would block every node "
          "drain) %s" % (where, [_ident(x) for x in kinds.get("PodDisruptionBudget", [])]))
    deps = kinds.get("Deployment", [])
    if not check(len(deps) == 1, "%s: one Deployment (%d)" % (where, len(deps))):
        return
    dep = deps[0]
    check(dep["spec"].get("replicas") == 1, "%s: replicas: 1 (%s)" % (where, dep["spec"].get("replicas")))
    strategy = dep["spec"].get("strategy", {})
    check(strategy.get("type") == "Recreate" and "rollingUpdate" not in strategy,
          "%s: strategy Recreate, so two pods never open one SQLite file (%s)" % (where, strategy))
    store, how = effective_store(dep, kinds.get("ConfigMap", []))
    check(not is_postgres(store) and store != ":memory:",
          "%s: the store is a SQLite file (%s, from %s)" % (where, store, how))
    vol_name, vol = _store_volume(dep, store)
    claim = vol.get("persistentVolumeClaim", {}).get("claimName")
    pvcs = {p["metadata"]["name"]: p for p in kinds.get("PersistentVolumeClaim", [])}
    check(claim is not None and set(vol) == {"name", "persistentVolumeClaim"},
          "%s: the store directory of %s is on a PersistentVolumeClaim (volume %s: %s)" % (
              where, store, vol_name, vol))
    pvc = pvcs.get(claim)
    if check(pvc is not None, "%s: the claim %s is one of the resources (%s)" % (where, claim, sorted(pvcs))):
        spec = pvc["spec"]
        check(spec.get("accessModes") == ["ReadWriteOnce"],
              "%s: the store claim is ReadWriteOnce (%s)" % (where, spec.get("accessModes")))
        check(bool(spec.get("resources", {}).get("requests", {}).get("storage")),
              "%s: the store claim requests a size (%s)" % (where, spec.get("resources")))


def check_k8s_postgres_layout(docs, where):
    """deploy/k8s-postgres: the HPA and the PDB, and every replica's store is PostgreSQL."""
    kinds = _by_kind(docs)
    deps = kinds.get("Deployment", [])
    if not check(len(deps) == 1, "%s: one Deployment (%d)" % (where, len(deps))):
        return
    dep = deps[0]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    hpas = kinds.get("HorizontalPodAutoscaler", [])
    if check(len(hpas) == 1, "%s: a HorizontalPodAutoscaler (%d)" % (where, len(hpas))):
        h = hpas[0]["spec"]
        ref = h.get("scaleTargetRef", {})
        check(ref.get("kind") == "Deployment" and ref.get("name") == dep["metadata"]["name"],
              "%s: the HPA targets Deployment %s (%s)" % (where, dep["metadata"]["name"], ref))
        check(h.get("minReplicas") == 2 and h.get("maxReplicas") == 10,
              "%s: the HPA scales 2..10 (%s..%s)" % (where, h.get("minReplicas"), h.get("maxReplicas")))
        check("replicas" not in dep["spec"],
              "%s: no `replicas` in the Deployment: the HPA owns the count (%s)" % (
                  where, dep["spec"].get("replicas")))
    pdbs = kinds.get("PodDisruptionBudget", [])
    if check(len(pdbs) == 1, "%s: a PodDisruptionBudget (%d)" % (where, len(pdbs))):
        p = pdbs[0]["spec"]
        sel = p.get("selector", {}).get("matchLabels", {})
        check(bool(sel) and all(labels.get(k) == v for k, v in sel.items()),
              "%s: the PDB selects the server pods (%s)" % (where, sel))
        check(p.get("minAvailable") is not None and int(p["minAvailable"]) >= 1,
              "%s: the PDB keeps a replica serving (minAvailable %s)" % (where, p.get("minAvailable")))
        if hpas and hpas[0]["spec"].get("minReplicas") is not None:
            min_replicas = hpas[0]["spec"]["minReplicas"]
            check(p.get("minAvailable") is not None and int(p["minAvailable"]) < min_replicas,
                  "%s: PDB minAvailable %s < the HPA's minReplicas %s (a drain can evict one)" % (
                      where, p.get("minAvailable"), min_replicas))
    strategy = dep["spec"].get("strategy", {})
    check(strategy.get("type") == "RollingUpdate"
          and str(strategy.get("rollingUpdate", {}).get("maxUnavailable")) == "0",
          "%s: rolling updates with maxUnavailable 0 (%s)" % (where, strategy))
    store, how = effective_store(dep, kinds.get("ConfigMap", []))
    check(how == "AXQC_STORE" and store == "secret:axqc-store/dsn",
          "%s: every replica's store is AXQC_STORE from the required secret axqc-store/dsn "
          "(%s, from %s)" % (where, store, how))
    for p in kinds.get("PersistentVolumeClaim", []):
        check(False, "%s: no SQLite volume claim (%s)" % (where, p["metadata"]["name"]))
    spec = dep["spec"]["template"]["spec"]
    for v in spec.get("volumes", []):
        check("persistentVolumeClaim" not in v,
              "%s: no server volume is a claim (several replicas on several nodes) (%s)" % (where, v))
    secrets = set()
    for sts in kinds.get("StatefulSet", []):
        for c in sts["spec"]["template"]["spec"]["containers"]:
            for e in c.get("env", []):
                ref = e.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    secrets.add(ref["name"])
    check("axqc-store" in secrets or not kinds.get("StatefulSet"),
          "%s: the bundled PostgreSQL takes its password from the same secret axqc-store" % where)


def _same_rendering(mine, theirs, where):
    ids = sorted(_ident(x) for x in mine)
    check(ids == sorted(_ident(x) for x in theirs),
          "%s: kubectl kustomize renders the same resources (%s vs %s)" % (
              where, ids, sorted(_ident(x) for x in theirs)))
    a = [x for x in mine if x["kind"] == "Deployment"]
    b = [x for x in theirs if x["kind"] == "Deployment"]
    if a and b:
        def key(dep):
            s = dep["spec"]
            t = s["template"]["spec"]
            return (s.get("replicas"), s.get("strategy"),
                    sorted((v["name"], sorted(v)) for v in t.get("volumes", [])),
                    sorted(e["name"] for e in t["containers"][0].get("env", [])))
        check(key(a[0]) == key(b[0]),
              "%s: kubectl kustomize renders the same Deployment (%s vs %s)" % (where, key(a[0]), key(b[0])))


def validate_k8s_layout(root):
    """Render deploy/k8s and deploy/k8s-postgres and check their replica/store invariants."""
    for sub, checker in (("deploy/k8s", check_k8s_base_layout),
                         ("deploy/k8s-postgres", check_k8s_postgres_layout)):
        d = os.path.join(root, sub)
        try:
            docs = render_kustomization(d)
        except (ValueError, OSError, KeyError) as e:
            check(False, "%s renders: %s" % (sub, e))
            continue
        check(True, "%s renders (%d resources)" % (sub, len(docs)))
        checker(docs, sub)
        try:
            theirs = kubectl_kustomize(d)
        except ValueError as e:
            check(False, str(e))
            continue
        if theirs is None:
            print("note: no kubectl here: %s rendered by validate_deploy.py only" % sub)
            continue
        checker(theirs, sub + " (kubectl kustomize)")
        _same_rendering(docs, theirs, sub)
    # A manifest in the base directory that the kustomization does not list is a trap (someone
    # adds it back to `resources`): the base holds no HPA or PDB file at all.
    for f in sorted(os.listdir(os.path.join(root, "deploy/k8s"))):
        if f.endswith((".yaml", ".yml")):
            for doc in yaml.safe_load_all(open(os.path.join(root, "deploy/k8s", f))):
                if doc and doc.get("kind") in ("HorizontalPodAutoscaler", "PodDisruptionBudget"):
                    check(False, "deploy/k8s/%s: a %s in the single-replica base" % (f, doc["kind"]))


# ------------------------------------------------------------------------------------------------
# PostgreSQL variants

def server_config_env(server_bin, conf_path, env):
    e = {"PATH": os.environ.get("PATH", "")}
    e.update(env)
    out = subprocess.run([server_bin, "--config", conf_path, "--print-config"],
                         capture_output=True, text=True, env=e)
    if out.returncode != 0:
        raise SystemExit("FAIL: axqc-server rejects %s with %s: %s" % (conf_path, env, out.stderr.strip()))
    return tomllib.loads(out.stdout)


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
    base = _by_kind(render_kustomization(os.path.join(root, "deploy/k8s")))
    dep = base["Deployment"][0]
    ctr_name = dep["spec"]["template"]["spec"]["containers"][0]["name"]
    patches = [yaml.safe_load(open(os.path.join(d, p["path"]))) for p in kust.get("patches", [])]
    dpatch = [p for p in patches if p.get("kind") == "Deployment"]
    check(len(dpatch) == 1 and dpatch[0]["metadata"]["name"] == dep["metadata"]["name"],
          "k8s-postgres patches the base Deployment")
    pctrs = (dpatch[0] if dpatch else {}).get("spec", {}).get("template", {}).get("spec", {}).get(
        "containers", [{}])
    check(pctrs[0].get("name") == ctr_name, "the patch names the container %s" % ctr_name)
    # What the overlay creates: the rendered Deployment (base + patches).
    rendered = _by_kind(render_kustomization(d))
    rdep = rendered["Deployment"][0]
    rctr = rdep["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in rctr.get("env", [])}
    ref = env.get("AXQC_STORE", {}).get("valueFrom", {}).get("secretKeyRef", {})
    check(ref.get("name") == "axqc-store" and ref.get("key") == "dsn" and not ref.get("optional"),
          "AXQC_STORE comes from secret axqc-store, key dsn, not optional (%s)" % ref)
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
    # The real server with the rendered ConfigMap and the rendered container's environment (the
    # secret's dsn filled in): its store is the PostgreSQL URI, whatever the file's store-path says.
    cm = rendered["ConfigMap"][0]
    conf = os.path.join(tmpdir, "k8s-pg-server.conf")
    with open(conf, "w") as f:
        f.write(cm["data"]["server.conf"])
    dsn = "postgresql://axqc@axqc-postgres:5432/axqc"
    run_env = {name: e["value"] for name, e in env.items() if "value" in e and name != "AXQC_CONFIG"}
    run_env["AXQC_STORE"] = dsn
    cfg = server_config_env(server_bin, conf, run_env)
    check(cfg["store"] == dsn, "the overlay's server (ConfigMap + environment %s) opens %s (%s)" % (
        sorted(run_env), dsn, cfg["store"]))
    check(float(cfg["claim-lease-seconds"]) == float(env["AXQC_CLAIM_LEASE_SECONDS"]["value"]),
          "claim-lease-seconds from the overlay's environment (%s)" % cfg["claim-lease-seconds"])


# ------------------------------------------------------------------------------------------------
# Monitoring: the Grafana dashboard and the Prometheus alert rules against what the server exports

# PromQL functions, aggregations and keywords the expressions may use (anything else that is not a
# metric name fails: add it here when an expression needs a new function).
PROMQL_FUNCTIONS = {
    "sum", "min", "max", "avg", "count", "topk", "bottomk", "quantile", "stddev", "count_values",
    "group", "rate", "irate", "increase", "delta", "idelta", "deriv", "resets", "changes",
    "histogram_quantile", "absent", "absent_over_time", "vector", "scalar", "label_replace",
    "clamp_min", "clamp_max", "clamp", "abs", "ceil", "floor", "round", "time", "timestamp",
    "avg_over_time", "max_over_time", "min_over_time", "sum_over_time", "count_over_time",
    "last_over_time", "predict_linear",
}
PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "or", "and",
                   "unless", "bool", "offset", "inf", "nan"}
# Series Prometheus adds to every scrape target.
SCRAPE_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped",
                 "scrape_samples_post_metric_relabeling", "scrape_series_added"}
TARGET_LABELS = {"job", "instance"}


def cxx_sources(root, dirs=("server", "isolate", "src")):
    for d in dirs:
        for base, _, files in os.walk(os.path.join(root, d)):
            for f in files:
                if f.endswith((".cc", ".h")):
                    yield os.path.join(base, f)


def metrics_cc_families(root):
    """{family: (type, {label names})} from server/metrics.cc (prometheus-cpp builders)."""
    text = open(os.path.join(root, "server/metrics.cc")).read()
    fams, member_of = {}, {}
    for m in re.finditer(r"(?:(\w+)\s*=\s*&?\s*|auto&\s*(\w+)\s*=\s*)?prometheus::Build(\w+)\(\)"
                         r"\s*\.Name\(\"([a-z_:][a-z0-9_:]*)\"\)", text):
        member, typ, name = m.group(1) or m.group(2), m.group(3).lower(), m.group(4)
        fams[name] = (typ, set())
        if member:
            member_of[member] = name
        # Labels given where the family is built (.Add({{"label", ...}}) in the same statement).
        stmt = text[m.end():text.find(";", m.end())]
        fams[name][1].update(re.findall(r"\{\"(\w+)\",", stmt))
    for m in re.finditer(r"(\w+)(?:->|\.)Add\(\{((?:\{\"\w+\",[^}]*\},?\s*)+)\}", text):
        if m.group(1) in member_of:
            fams[member_of[m.group(1)]][1].update(re.findall(r"\{\"(\w+)\",", m.group(2)))
    return fams


def scrape_server(server_bin, tmpdir):
    """Families (# TYPE lines) and sample names of the real server's /metrics."""
    import signal
    import time
    import urllib.request
    ready = os.path.join(tmpdir, "monitoring-ready.json")
    if os.path.exists(ready):
        os.remove(ready)
    log = open(os.path.join(tmpdir, "monitoring-server.log"), "w")
    proc = subprocess.Popen([server_bin, "--listen", "127.0.0.1:0", "--metrics-listen",
                             "127.0.0.1:0", "--ready-file", ready, "--store-path", ":memory:"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 20
        while not (os.path.exists(ready) and os.path.getsize(ready) > 0):
            if proc.poll() is not None or time.time() > deadline:
                raise SystemExit("FAIL: axqc-server did not start (see %s)" % log.name)
            time.sleep(0.05)
        time.sleep(0.05)  # the ready file is written whole, but give the writer its close()
        port = json.load(open(ready))["metrics_port"]
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
            body = r.read().decode()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", body, re.M))
    samples = set(re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]", body, re.M))
    return types, samples


def allowed_label_values(root):
    """{(family, label): set of values the server can export} for the labels whose values the
    alerts and panels select on, each read from the code that produces it."""
    def read(rel):
        return open(os.path.join(root, rel)).read()

    codes = set(re.findall(r"return \"([A-Z_]+)\";", read("proto/wire/src/status_name.cc")))
    pool = read("isolate/worker_pool.cc")
    fn = lambda name: pool[pool.find("const char* %s(" % name):]  # noqa: E731
    body = lambda name: fn(name)[:fn(name).find("\n}\n")]  # noqa: E731
    failures = set(re.findall(r"return \"(\w+)\";", body("FailureName"))) - {"none", "unknown"}
    causes = failures | set(re.findall(r"return \"(\w+)\";", body("RestartCauseName")))
    worker_outcomes = failures | {lit for f in cxx_sources(root, ("server",))
                                  for lit in re.findall(r"CountWorkerCheck\(\"(\w+)\"\)", open(f).read())}
    query = read("server/http/query.cc")
    m = re.search(r"one_of\(\"outcome\",\s*\{([^}]*)\}", query)
    hook_outcomes = set(re.findall(r"\"(\w+)\"", m.group(1))) if m else set()
    hook_sources = set()
    for f in cxx_sources(root, ("server",)):
        t = open(f).read()
        hook_outcomes |= set(re.findall(r"CountWebhookDelivery\([^,]+,\s*\"(\w+)\"\)", t))
        hook_sources |= set(re.findall(r"\bregistry = \"(\w+)\";", t))
    methods = set(re.findall(r"^\s*rpc (\w+)\(", read("proto/axqc/v1/axqc.proto"), re.M))
    for f in cxx_sources(root, ("server",)):
        methods |= set(re.findall(r"\"(\w+Webhook|List\w+)\"", open(f).read()))
    return {
        ("axqc_requests_total", "code"): codes,
        ("axqc_requests_total", "method"): methods,
        ("axqc_request_duration_seconds_bucket", "method"): methods,
        ("axqc_worker_restarts_total", "cause"): causes,
        ("axqc_worker_checks_total", "outcome"): worker_outcomes,
        ("axqc_webhook_deliveries_total", "outcome"): hook_outcomes,
        ("axqc_webhook_deliveries_total", "source"): hook_sources,
    }


def cxx_string_literals(root):
    out = set()
    for f in cxx_sources(root):
        out |= set(re.findall(r"\"([a-z_][a-z0-9_]*)\"", open(f).read()))
    return out


def promql_parts(expr):
    """(metric names, [(metric or None, label, op, value)], [unknown words]) of a PromQL expr."""
    matchers = []
    # Selectors with label matchers: NAME{...} or {...}.
    for m in re.finditer(r"([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}", expr):
        for lm in re.finditer(r"(\w+)\s*(=~|!~|!=|=)\s*\"((?:[^\"\\]|\\.)*)\"", m.group(2)):
            matchers.append((m.group(1), lm.group(1), lm.group(2), lm.group(3)))
    s = re.sub(r"\{[^}]*\}", " ", expr)
    s = re.sub(r"\"(?:[^\"\\]|\\.)*\"", " ", s)          # label_replace arguments, ...
    s = re.sub(r"\[[^\]]*\]", " ", s)                     # range selectors
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    names, unknown = set(), []
    for m in re.finditer(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", s):
        word, call = m.group(1), m.group(2)
        if call:
            if word not in PROMQL_FUNCTIONS:
                unknown.append(word)
        elif word not in PROMQL_KEYWORDS and not re.fullmatch(r"\d\w*", word):
            names.add(word)
    return names, matchers, unknown


def github_anchors(md_text):
    anchors = set()
    for line in md_text.splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if m:
            a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            anchors.add(a)
    return anchors


def validate_monitoring(root, server_bin, tmpdir):
    dashboard_path = os.path.join(root, "deploy/grafana/dashboards/axqc-server.json")
    alerts_path = os.path.join(root, "deploy/prometheus/alerts.yml")
    docs = open(os.path.join(root, "docs/operations.md")).read()

    # What the server exports: the real binary's /metrics (families without any series yet, e.g.
    # labelled counters nothing incremented, are not in a fresh scrape: server/metrics.cc has them).
    types, samples = scrape_server(server_bin, tmpdir)
    fams = metrics_cc_families(root)
    check(len(fams) >= 20 and "axqc_requests_total" in fams and "axqc_worker_restarts_total" in fams,
          "server/metrics.cc: %d metric families read" % len(fams))
    for name, typ in sorted(types.items()):
        if name.startswith("axqc_"):
            check(name in fams and fams[name][0] == typ,
                  "scraped family %s (%s) is built in server/metrics.cc as a %s" % (
                      name, typ, fams.get(name, ("nothing",))[0]))
    check("process_resident_memory_bytes" in types and "process_max_fds" in types,
          "the scrape has the process_* metrics")
    exported = set(samples) | SCRAPE_SERIES
    labels_of = {}
    for name, (typ, labels) in fams.items():
        if typ == "histogram":
            for suffix, extra in (("_bucket", {"le"}), ("_sum", set()), ("_count", set())):
                exported.add(name + suffix)
                labels_of[name + suffix] = labels | extra
        else:
            exported.add(name)
            labels_of[name] = labels

    values = allowed_label_values(root)
    for key, vals in sorted(values.items()):
        check(len(vals) >= 2, "label values of %s{%s} read from the sources: %s" % (
            key[0], key[1], ",".join(sorted(vals))))
    literals = cxx_string_literals(root)

    def check_expr(where, expr):
        names, matchers, unknown = promql_parts(expr)
        check(not unknown, "%s: PromQL functions known (%s)" % (where, ",".join(unknown) or "all"))
        check(bool(names), "%s: references a metric" % where)
        for n in sorted(names):
            check(n in exported, "%s: metric %s is exported by axqc-server" % (where, n))
        for metric, label, op, value in matchers:
            if label in TARGET_LABELS or label == "__name__" or metric is None:
                continue
            if metric in labels_of:
                check(label in labels_of[metric],
                      "%s: %s has a label %s (it has %s)" % (
                          where, metric, label, ",".join(sorted(labels_of[metric])) or "none"))
            alts = value.split("|") if op in ("=~", "!~") else [value]
            if op in ("=~", "!~") and not all(re.fullmatch(r"[\w]+", a) for a in alts):
                check(False, "%s: %s{%s%s\"%s\"} is not a list of values a|b|c" % (
                    where, metric, label, op, value))
                continue
            allowed = values.get((metric, label))
            for a in alts:
                if allowed is not None:
                    check(a in allowed, "%s: %s{%s=\"%s\"} is a value the server exports" % (
                        where, metric, label, a))
                else:
                    check(a in literals or a.lower() in literals,
                          "%s: %s{%s=\"%s\"} is a string of the server's sources" % (
                              where, metric, label, a))

    # The dashboard's targets, with Grafana's variables as the deploy test substitutes them.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import deploy_check  # noqa: E402 - the dashboard helpers of prometheus_test.sh
    dashboard = json.load(open(dashboard_path))
    n_targets = 0
    for title, ref, expr in deploy_check.targets(dashboard):
        n_targets += 1
        check_expr("dashboard %r %s" % (title, ref), deploy_check.substitute(expr))
    titles = [p.get("title") for p in deploy_check.walk_panels(dashboard["panels"])]
    check("Failed RPCs per second" not in titles,
          "the dashboard has no 'Failed RPCs per second' (a GetReport NOT_FOUND is no failure)")
    for p in deploy_check.walk_panels(dashboard["panels"]):
        for t in p.get("targets", []):
            if re.search(r"code\s*!=\s*\"OK\"", t.get("expr", "")):
                check(False, "dashboard %r %s counts every non-OK code as a failure" % (
                    p.get("title"), t.get("refId")))

    # The alert rules: expressions, severity, annotations, runbook sections that exist.
    anchors = github_anchors(docs)
    rules = [r for g in yaml.safe_load(open(alerts_path))["groups"] for r in g["rules"]]
    names = [r.get("alert") for r in rules]
    check(len(set(names)) == len(names), "alert names unique: %s" % ",".join(map(str, names)))
    for want in ("AxqcDown", "AxqcAbsent", "AxqcWorkersFailing", "AxqcServerFaults",
                 "AxqcStoreErrors", "AxqcWebhookDeliveriesFailing", "AxqcNotServing"):
        check(want in names, "alerts.yml has %s" % want)
    for r in rules:
        a = r.get("alert", "?")
        check_expr("alert %s" % a, r.get("expr", ""))
        check(r.get("labels", {}).get("severity") in ("page", "warn"),
              "alert %s: severity page or warn" % a)
        ann = r.get("annotations", {})
        check(bool(ann.get("summary")) and bool(ann.get("description")),
              "alert %s: summary and description" % a)
        rb = ann.get("runbook", "")
        check(rb == "docs/operations.md#" + a.lower() and a.lower() in anchors,
              "alert %s: runbook %r is the section '%s' of docs/operations.md" % (a, rb, a))
        if "axqc_requests_total" in r.get("expr", "") and "code=~" in r.get("expr", ""):
            check("NOT_FOUND" not in r["expr"],
                  "alert %s: a NOT_FOUND (hash-first lookup miss) is not a server fault" % a)
    print("monitoring: %d dashboard queries and %d alert rules checked against %d exported "
          "metric families" % (n_targets, len(rules), len(fams)))

    promtool = shutil.which("promtool")
    if not promtool:
        print("SKIP: promtool is not installed (Debian: apt-get install prometheus): "
              "alerts.yml is not checked and its unit tests are not run")
        return
    r = subprocess.run([promtool, "check", "rules", alerts_path], capture_output=True, text=True)
    check(r.returncode == 0, "promtool check rules deploy/prometheus/alerts.yml%s" % (
        "" if r.returncode == 0 else ": " + (r.stdout + r.stderr).strip()))
    tests = os.path.join(root, "tests/deploy/alerts_test.yml")
    r = subprocess.run([promtool, "test", "rules", tests], capture_output=True, text=True)
    check(r.returncode == 0, "promtool test rules tests/deploy/alerts_test.yml%s" % (
        "" if r.returncode == 0 else ":\n" + (r.stdout + r.stderr).strip()))


def main(argv):
    if len(argv) == 3 and argv[1] == "--k8s-layout":
        # Only the Kubernetes replica/store layout: no server binary needed (ctest deploy_k8s_layout).
        validate_k8s_layout(argv[2])
        print("deploy/k8s layout checks: %d passed, %d failed" % (len(OKS), len(FAILURES)))
        return 1 if FAILURES else 0
    if len(argv) == 5 and argv[1] == "--monitoring":
        # Only the dashboard and alert checks (ctest deploy_monitoring, a few seconds).
        validate_monitoring(argv[2], argv[3], argv[4])
        print("monitoring checks: %d passed, %d failed" % (len(OKS), len(FAILURES)))
        return 1 if FAILURES else 0
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
    validate_k8s_layout(root)
    validate_compose_postgres(root, server_bin, image_cfg)
    validate_k8s_postgres(root, server_bin, tmpdir)
    validate_debian(root, server_bin)
    validate_monitoring(root, server_bin, tmpdir)
    print("deploy/ static checks: %d passed, %d failed" % (len(OKS), len(FAILURES)))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
