#!/usr/bin/env python3
"""Helpers of tests/deploy/prometheus_test.sh (standard library + PyYAML only).

  deploy_check.py prom-config SRC OUT TARGET INTERVAL
      Writes a Prometheus config derived from the repo's deploy/prometheus/prometheus.yml: the
      `axqc` job scrapes TARGET (127.0.0.1:PORT), every interval is INTERVAL, rule files are made
      absolute. Fails when the repo file no longer has an `axqc` job.
  deploy_check.py frame IN OUT        gRPC length-prefixed message (uncompressed) of IN's bytes.
  deploy_check.py unframe IN OUT      the message of a single-message gRPC response body.
  deploy_check.py validate-dashboard DASHBOARD
      The Grafana dashboard parses and is well formed (ids, grid, datasource, targets).
  deploy_check.py exprs DASHBOARD     prints "title | refId | expr" per target (one line each).
  deploy_check.py evaluate DASHBOARD PROM_URL WORKERS QUEUE_CAPACITY VERSION WINDOW
      Evaluates every expression of the dashboard through Prometheus' HTTP API, with Grafana's
      range variables set to WINDOW (e.g. 17s), and asserts the results expected after the checks
      prometheus_test.sh runs (see EXPECTED below).
"""
import json
import math
import os
import struct
import sys
import urllib.parse
import urllib.request

# Values Grafana substitutes in the dashboard's expressions. The range variables are set by
# `evaluate` to the measured window (see EXPECTED below); "All" instances is the regex ".*".
GRAFANA_VARS = {
    "$__rate_interval": None,
    "$__range": None,
    "${instance}": ".*",
    "$instance": ".*",
}

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL: " + msg)


def walk_panels(panels):
    for p in panels:
        yield p
        yield from walk_panels(p.get("panels", []))


def targets(dashboard):
    """(panel title, refId, expr) of every query target, in dashboard order."""
    out = []
    for p in walk_panels(dashboard["panels"]):
        for t in p.get("targets", []):
            out.append((p["title"], t["refId"], t["expr"]))
    return out


def substitute(expr, window="1m"):
    for var, value in GRAFANA_VARS.items():
        expr = expr.replace(var, value if value is not None else window)
    if "$" in expr:
        raise ValueError("unknown Grafana variable left in: " + expr)
    return expr


# ------------------------------------------------------------------------------------------------
# Expected results. prometheus_test.sh runs two phases of checks against one server (started with
# --worker-max-checks 1: every check that runs recycles its worker, cause max_checks):
#   phase 1 (creates every series; Prometheus' increase()/rate() cannot count the increment that
#            creates a series): conformant c0 (miss), non-conformant b0 (miss), c0 again (memory
#            hit), a missing path (NOT_FOUND), a hash-first GetReport of an unknown sha256
#            (NOT_FOUND: a lookup miss), a Hugging Face webhook delivery that is ignored;
#   phase 2 (what the windows measure): conformant c1 (miss), c1 again (memory hit),
#            non-conformant b1 (miss; same rules as b0), a missing path (NOT_FOUND), the same
#            lookup miss and ignored delivery.
# The expressions are evaluated over a window that starts after phase 1 was scraped and ends now
# ($__range and $__rate_interval are both set to it), so every series has samples over the whole
# window. Over the window the increments are: conformant +2, non_conformant +1, memory_hit +1,
# miss +2, Check/OK +3, Check/NOT_FOUND +1, GetReport/NOT_FOUND +1, HuggingFaceWebhook/OK +1,
# worker restarts max_checks +2, worker checks ok +2, webhook deliveries huggingface/ignored +1.
# Series scraped together share their sample
# timestamps, so increase()'s extrapolation factor cancels in every ratio: the ratios are exact.

def one_value(result):
    if len(result) != 1:
        raise AssertionError("expected one series, got %d: %s" % (len(result), result))
    return float(result[0]["value"][1])


def by_label(result, label):
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in result}


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def expect_close(want):
    def check(result, ctx):
        v = one_value(result)
        assert close(v, want), "value %r, expected %r" % (v, want)
        return "%.6g (expected %.6g)" % (v, want)
    return check


def expect_positive(result, ctx):
    v = one_value(result)
    assert math.isfinite(v) and v > 0, "value %r, expected a finite number > 0" % v
    return "%.6g > 0" % v


def expect_equal_config(key):
    def check(result, ctx):
        v = one_value(result)
        assert v == ctx[key], "value %r, expected %s = %r" % (v, key, ctx[key])
        return "%g (= %s)" % (v, key)
    return check


def expect_version(result, ctx):
    assert len(result) == 1, "expected one version series, got %s" % result
    m = result[0]["metric"]
    assert m.get("version") == ctx["version"], "version label %r, expected %r" % (
        m.get("version"), ctx["version"])
    assert float(result[0]["value"][1]) == 1, "expected 1 replica"
    return "version %s, rule set %s, 1 replica" % (m["version"], m.get("rule_set_version"))


def expect_verdict_rates(result, ctx):
    v = by_label(result, "verdict")
    assert set(v) == {"conformant", "non_conformant"}, "verdict series %s" % sorted(v)
    assert v["non_conformant"] > 0 and close(v["conformant"] / v["non_conformant"], 2.0), (
        "conformant/non_conformant = %r, expected 2" % (v["conformant"] / v["non_conformant"]))
    return "conformant %.4g/s, non_conformant %.4g/s (ratio 2)" % (
        v["conformant"], v["non_conformant"])


def expect_pass_by_source(result, ctx):
    v = by_label(result, "source")
    assert set(v) == {"path"}, "sources %s, expected only path" % sorted(v)
    assert close(v["path"], 2 / 3), "path pass rate %r, expected 2/3" % v["path"]
    return "source=path %.6g (expected 2/3)" % v["path"]


def expect_top_rules(result, ctx):
    v = by_label(result, "rule")
    assert "role/weight-type" in v and v["role/weight-type"] > 0, "rules %s" % v
    assert all(x > 0 for x in v.values()), "a rule with no failing finding is listed: %s" % v
    return ", ".join("%s %.3g" % kv for kv in sorted(v.items()))


def expect_quantile(name):
    def check(result, ctx):
        v = one_value(result)
        assert math.isfinite(v) and v > 0, "%s = %r, expected a finite number > 0" % (name, v)
        ctx.setdefault("quantiles", {})[name] = v
        return "%s = %.6g s" % (name, v)
    return check


def expect_stage_p95(result, ctx):
    v = by_label(result, "stage")
    for stage in ("load", "check", "store"):
        assert stage in v, "no %s stage series: %s" % (stage, v)
        assert math.isfinite(v[stage]) and v[stage] > 0, "stage %s p95 = %r" % (stage, v[stage])
    return ", ".join("%s %.3g s" % kv for kv in sorted(v.items()))


def expect_queue_wait(result, ctx):
    v = one_value(result)
    assert math.isfinite(v) and v >= 0, "queue wait p95 = %r" % v
    return "%.3g s" % v


def expect_rpc_codes(result, ctx):
    got = {(r["metric"].get("method"), r["metric"].get("code")): float(r["value"][1])
           for r in result}
    ok, nf = got.get(("Check", "OK"), 0), got.get(("Check", "NOT_FOUND"), 0)
    assert ok > 0 and nf > 0, "series %s" % got
    assert close(ok / nf, 3.0), "Check OK/NOT_FOUND = %r, expected 3" % (ok / nf)
    return "Check OK %.4g/s, Check NOT_FOUND %.4g/s (ratio 3)" % (ok, nf)


def expect_zero(result, ctx):
    v = one_value(result)
    assert v == 0, "value %r, expected 0" % v
    return "0"


def expect_between(lo, hi):
    def check(result, ctx):
        v = one_value(result)
        assert math.isfinite(v) and lo < v < hi, "value %r, expected in (%g, %g)" % (v, lo, hi)
        return "%.4g in (%g, %g)" % (v, lo, hi)
    return check


def expect_outcome(name, ratio_to_ok):
    """RPC outcome classes over the window: OK = Check 3 + webhook 1; one lookup miss (GetReport
    NOT_FOUND) and one client refusal (Check NOT_FOUND of a missing path) per 4 OK; no
    cancellations and no server faults. A lookup miss counted as a refusal or a fault breaks it."""
    def check(result, ctx):
        v = one_value(result)
        outcomes = ctx.setdefault("outcomes", {})
        outcomes[name] = v
        if name == "ok":
            assert math.isfinite(v) and v > 0, "OK rate %r" % v
            return "%.4g/s" % v
        assert "ok" in outcomes, "the OK series is evaluated first"
        assert close(v / outcomes["ok"], ratio_to_ok), "%s / OK = %r, expected %g" % (
            name, v / outcomes["ok"], ratio_to_ok)
        return "%.4g/s (%g x OK)" % (v, ratio_to_ok)
    return check


def expect_one_instance_positive(result, ctx):
    assert len(result) == 1, "expected one instance, got %s" % result
    v = float(result[0]["value"][1])
    assert math.isfinite(v) and v > 0, "value %r" % v
    return "%s %.4g" % (result[0]["metric"].get("instance", "?"), v)


def expect_one_instance_nonnegative(result, ctx):
    assert len(result) == 1, "expected one instance, got %s" % result
    v = float(result[0]["value"][1])
    assert math.isfinite(v) and v >= 0, "value %r" % v
    return "%s %.4g" % (result[0]["metric"].get("instance", "?"), v)


def expect_one_instance_zero(result, ctx):
    assert len(result) == 1, "expected one instance, got %s" % result
    v = float(result[0]["value"][1])
    assert v == 0, "value %r, expected 0 (idle)" % v
    return "%s 0" % result[0]["metric"].get("instance", "?")


def expect_worker_rss(stat):
    def check(result, ctx):
        v = one_value(result)
        assert math.isfinite(v) and v >= 0, "worker RSS %s = %r" % (stat, v)
        rss = ctx.setdefault("worker_rss", {})
        rss[stat] = v
        if len(rss) == 2:
            assert rss["max"] <= rss["sum"], "largest worker %r > all workers %r" % (
                rss["max"], rss["sum"])
        return "%s %.4g bytes" % (stat, v)
    return check


def expect_restarts(result, ctx):
    v = by_label(result, "cause")
    assert set(v) == {"max_checks"}, "restart causes %s, expected only max_checks" % sorted(v)
    assert v["max_checks"] > 0, "max_checks rate %r" % v["max_checks"]
    ctx["restart_rate"] = v["max_checks"]
    return "max_checks %.4g/s" % v["max_checks"]


def expect_worker_checks(result, ctx):
    v = by_label(result, "outcome")
    assert set(v) == {"ok"}, "worker check outcomes %s, expected only ok" % sorted(v)
    want = ctx.get("restart_rate")
    assert want is not None and close(v["ok"], want), (
        "ok %r/s, expected the max_checks restart rate %r/s (--worker-max-checks 1)" % (v["ok"], want))
    return "ok %.4g/s (= restarts)" % v["ok"]


def expect_deliveries(result, ctx):
    got = {(r["metric"].get("source"), r["metric"].get("outcome")): float(r["value"][1])
           for r in result}
    assert set(got) == {("huggingface", "ignored")}, "deliveries %s" % got
    assert got[("huggingface", "ignored")] > 0, "ignored rate %r" % got
    return "huggingface ignored %.4g/s" % got[("huggingface", "ignored")]


EXPECTED = {
    ("Pass rate", "A"): expect_close(2 / 3),
    ("Checks", "A"): expect_positive,
    ("Server faults per second", "A"): expect_zero,
    ("Replicas by version", "A"): expect_version,
    ("Checks per second by verdict", "A"): expect_verdict_rates,
    ("Pass rate over time", "A"): expect_close(2 / 3),
    ("Pass rate by source", "A"): expect_pass_by_source,
    ("Top failing rules", "A"): expect_top_rules,
    ("Cache hit ratio", "A"): expect_close(1 / 3),
    ("Check latency", "A"): expect_quantile("p50"),
    ("Check latency", "B"): expect_quantile("p95"),
    ("Check latency", "C"): expect_quantile("p99"),
    ("Time per stage (p95)", "A"): expect_stage_p95,
    ("Time per stage (p95)", "B"): expect_queue_wait,
    ("Queue depth and busy workers", "A"): expect_equal_config("idle"),
    ("Queue depth and busy workers", "B"): expect_equal_config("idle"),
    ("Queue depth and busy workers", "C"): expect_equal_config("workers"),
    ("Queue depth and busy workers", "D"): expect_equal_config("queue_capacity"),
    ("RPCs per second by method and code", "A"): expect_rpc_codes,
    ("RPC outcomes per second", "A"): expect_outcome("ok", None),
    ("RPC outcomes per second", "B"): expect_outcome("lookup misses", 0.25),
    ("RPC outcomes per second", "C"): expect_outcome("client refusals", 0.25),
    ("RPC outcomes per second", "D"): expect_outcome("cancelled", 0.0),
    ("RPC outcomes per second", "E"): expect_outcome("server faults", 0.0),
    ("Server fault ratio", "A"): expect_zero,
    ("Memory", "A"): expect_one_instance_positive,
    ("Memory", "B"): expect_one_instance_nonnegative,
    ("Memory", "C"): expect_one_instance_positive,
    ("Memory", "D"): expect_one_instance_zero,
    ("Worker memory", "A"): expect_worker_rss("max"),
    ("Worker memory", "B"): expect_worker_rss("sum"),
    ("Worker restarts by cause", "A"): expect_restarts,
    ("Worker checks by outcome", "A"): expect_worker_checks,
    ("File descriptors in use", "A"): expect_between(0, 1),
    ("Store errors per second", "A"): expect_zero,
    ("Store write time (p95)", "A"): expect_positive,
    ("Shared store (PostgreSQL) claims", "A"): expect_zero,
    ("Shared store (PostgreSQL) claims", "B"): expect_zero,
    ("Webhook deliveries by source and outcome", "A"): expect_deliveries,
    ("Failed webhook deliveries", "A"): expect_zero,
    ("Upload bytes per second", "A"): expect_zero,
    ("Bytes in flight", "A"): expect_zero,
    ("Bytes in flight", "B"): expect_zero,
    ("Requests in progress", "A"): expect_zero,
    ("Requests in progress", "B"): expect_zero,
    ("Requests in progress", "C"): expect_zero,
    ("Requests in progress", "D"): expect_zero,
}


def query(prom_url, expr):
    url = prom_url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as resp:
        body = json.load(resp)
    if body.get("status") != "success":
        raise AssertionError("query failed: %s" % body)
    if body["data"]["resultType"] != "vector":
        raise AssertionError("result type %s, expected vector" % body["data"]["resultType"])
    return body["data"]["result"]


def evaluate(dashboard_path, prom_url, workers, queue_capacity, version, window):
    with open(dashboard_path) as f:
        dashboard = json.load(f)
    ctx = {"workers": float(workers), "queue_capacity": float(queue_capacity), "idle": 0.0,
           "version": version}
    seen = set()
    evaluated = 0
    for title, ref, expr in targets(dashboard):
        key = (title, ref)
        seen.add(key)
        try:
            promql = substitute(expr, window)
            result = query(prom_url, promql)
            evaluated += 1
            if not result:
                raise AssertionError("empty result")
            if key not in EXPECTED:
                raise AssertionError("no expected result in tests/deploy/deploy_check.py "
                                     "EXPECTED for this panel target: add one")
            summary = EXPECTED[key](result, ctx)
            print("ok   %-36s %s  %s" % (title, ref, summary))
        except Exception as e:  # noqa: BLE001 - every failure is reported, then the test fails
            fail("%s / %s: %s\n       expr: %s" % (title, ref, e, expr.replace("\n", " ")))
    for key in EXPECTED:
        if key not in seen:
            fail("expected panel target %s / %s is not in the dashboard" % key)
    q = ctx.get("quantiles", {})
    if len(q) == 3:
        if q["p50"] <= q["p95"] <= q["p99"]:
            print("ok   latency quantiles ordered: p50 %.3g <= p95 %.3g <= p99 %.3g s" % (
                q["p50"], q["p95"], q["p99"]))
        else:
            fail("latency quantiles out of order: %s" % q)
    print("%d dashboard expressions evaluated over the last %s, %d failed" % (
        evaluated, window, len(FAILURES)))


def validate_dashboard(path):
    with open(path) as f:
        d = json.load(f)  # raises on invalid JSON
    for key in ("uid", "title", "panels", "templating", "schemaVersion"):
        if key not in d:
            fail("dashboard has no %s" % key)
    ids = set()
    var_names = {v["name"] for v in d.get("templating", {}).get("list", [])}
    n = 0
    for p in walk_panels(d.get("panels", [])):
        if p.get("id") in ids:
            fail("duplicate panel id %s" % p.get("id"))
        ids.add(p.get("id"))
        gp = p.get("gridPos", {})
        if not all(k in gp for k in ("x", "y", "w", "h")) or gp.get("x", 0) + gp.get("w", 0) > 24:
            fail("panel %r: bad gridPos %s" % (p.get("title"), gp))
        if p.get("type") == "row":
            continue
        if not p.get("targets"):
            fail("panel %r has no query" % p.get("title"))
        refs = [t.get("refId") for t in p.get("targets", [])]
        if len(set(refs)) != len(refs):
            fail("panel %r: duplicate refIds %s" % (p.get("title"), refs))
        for t in p.get("targets", []):
            n += 1
            if not t.get("expr", "").strip():
                fail("panel %r target %s has no expr" % (p.get("title"), t.get("refId")))
            ds = t.get("datasource", p.get("datasource", {}))
            if ds.get("type") != "prometheus":
                fail("panel %r target %s: datasource %s" % (p.get("title"), t.get("refId"), ds))
            uid = ds.get("uid", "")
            if uid.startswith("$") and uid.strip("${}") not in var_names:
                fail("panel %r: datasource variable %s is not defined" % (p.get("title"), uid))
            try:
                substitute(t.get("expr", ""))
            except ValueError as e:
                fail("panel %r: %s" % (p.get("title"), e))
    print("dashboard %s: %d panels, %d queries" % (os.path.basename(path), len(ids), n))


def prom_config(src, out, target, interval):
    import yaml  # PyYAML (Debian python3-yaml)

    with open(src) as f:
        cfg = yaml.safe_load(f)
    base = os.path.dirname(os.path.abspath(src))
    cfg.setdefault("global", {})
    cfg["global"]["scrape_interval"] = interval
    cfg["global"]["evaluation_interval"] = interval
    cfg["rule_files"] = [os.path.join(base, r) for r in cfg.get("rule_files", [])]
    jobs = [j for j in cfg.get("scrape_configs", []) if j.get("job_name") == "axqc"]
    if len(jobs) != 1:
        raise SystemExit("%s: expected exactly one scrape job named axqc" % src)
    job = jobs[0]
    job["scrape_interval"] = interval
    job["scrape_timeout"] = interval
    job["static_configs"] = [{"targets": [target]}]
    with open(out, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False)


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "prom-config" and len(argv) == 6:
        prom_config(*argv[2:])
    elif cmd == "frame" and len(argv) == 4:
        data = open(argv[2], "rb").read()
        open(argv[3], "wb").write(b"\0" + struct.pack(">I", len(data)) + data)
    elif cmd == "unframe" and len(argv) == 4:
        body = open(argv[2], "rb").read()
        if len(body) < 5 or body[0] != 0 or struct.unpack(">I", body[1:5])[0] != len(body) - 5:
            raise SystemExit("not a single uncompressed gRPC message (%d bytes)" % len(body))
        open(argv[3], "wb").write(body[5:])
    elif cmd == "validate-dashboard" and len(argv) == 3:
        validate_dashboard(argv[2])
    elif cmd == "exprs" and len(argv) == 3:
        with open(argv[2]) as f:
            for title, ref, expr in targets(json.load(f)):
                print("%s | %s | %s" % (title, ref, " ".join(expr.split())))
    elif cmd == "evaluate" and len(argv) == 8:
        evaluate(*argv[2:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
