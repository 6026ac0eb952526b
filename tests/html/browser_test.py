#!/usr/bin/env python3
"""The HTML report and the dashboard pages in a real browser (ctest html_browser).

    tests/html/browser_test.py BUILD_DIR

1. `axqc check --format html` of a failing real export (tests/data/real_exports), opened in
   Debian's headless Chromium: the DOM after the page's scripts ran must have a finding row per
   first location of every group (rule IDs and primary nodes as the JSON report says), every
   group's graph view with its primary nodes drawn as SVG elements of class "offending", Q/DQ edge
   labels with scale and zero point, and the graph explorer filled by its script.
   Every page has a table of contents that jumps to each cause and finding group, every finding
   of the JSON report has its row (those beyond a group's first locations in a <details>), every
   "caused by" links to the cause's row, and every in-page link leads to an element.
1b. A generated model of 400+ nodes (axqc-bench-gen --violations): its map of the whole model with
   linear chains collapsed, and a deep link (#<finding id>) that opens the folded group.
2. axqc-server (release binary, HTTP port, no token, Hugging Face webhooks against a stub Hub)
   after checks with labels and options and two webhook deliveries (one checked, one whose
   download failed): "/" must show a pass-rate chart with data points, the failing rules of those
   checks, every check (one row each, linked to the report of its options; search, filters and
   pages through the page's own URL parameters) and the deliveries with their outcome, error,
   request id and report link; "/models/{sha256}" must show the stored report with its graph
   views, every stored report of the model and its check history, and say so and list the stored
   reports when none has the options asked for.

Screenshots of each view are written to $AXQC_SCREENSHOTS when set (scripts/screenshots.sh writes
docs/images/), else into a temporary directory. Exit 77 (skipped) when Chromium is not installed.
Each check names what it expects; the first failure ends the test with exit code 1.
"""
import html.parser
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/release")
SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
AXQC = os.path.join(BUILD, "client", "axqc")
SERVER = os.path.join(BUILD, "server", "axqc-server")
BENCH_GEN = os.path.join(BUILD, "bench", "axqc-bench-gen")
EXPORTS = os.path.join(SOURCE, "tests", "data", "real_exports")
FAILING = os.path.join(EXPORTS, "vit_manual_numbers_op13.onnx")
RULES_URL = "https://docs.example.com/rules/{page}/"
FAILING_CNN = os.path.join(EXPORTS, "defect_weight_u8_op17.onnx")
PASSING = os.path.join(EXPORTS, "spec_cnn_op17.onnx")
WORK = tempfile.mkdtemp(prefix="axqc-browser-")
SHOTS = os.environ.get("AXQC_SCREENSHOTS") or os.path.join(WORK, "shots")
SERVER_PROC = None
HF_SECRET = "browser-test-hf-secret"
HF_REVISION = "5" * 40
sys.path.insert(0, os.path.join(SOURCE, "tests", "server", "http"))
import registry_stub  # noqa: E402  (tests/server/http/registry_stub.py)


def finish(rc):
    if SERVER_PROC is not None and SERVER_PROC.poll() is None:
        SERVER_PROC.send_signal(signal.SIGTERM)
        try:
            SERVER_PROC.wait(20)
        except subprocess.TimeoutExpired:
            SERVER_PROC.kill()
    if rc == 0:
        shutil.rmtree(WORK, ignore_errors=True)
    else:
        print("work directory kept:", WORK)
    return rc


def check(cond, what):
    if not cond:
        print("FAIL:", what, flush=True)
        raise SystemExit(finish(1))
    print("ok:", what, flush=True)


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


CHROME = chromium()


def browser(url, *, screenshot=None, size="1400,1800", budget=5000):
    """The DOM after the page's scripts ran (--dump-dom), or a screenshot."""
    args = [CHROME, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", "--user-data-dir=" + os.path.join(WORK, "profile"),
            "--window-size=" + size, "--virtual-time-budget=%d" % budget]
    if screenshot:
        os.makedirs(os.path.dirname(screenshot), exist_ok=True)
        args.append("--screenshot=" + screenshot)
    else:
        args.append("--dump-dom")
    args.append(url)
    r = subprocess.run(args, capture_output=True, timeout=180)
    if screenshot:
        check(r.returncode == 0 and os.path.getsize(screenshot) > 10000,
              f"screenshot {os.path.basename(screenshot)} of {url}")
        return None
    check(r.returncode == 0 and r.stdout, f"Chromium loads {url}")
    return r.stdout.decode("utf-8", "replace")


class Dom(html.parser.HTMLParser):
    """Elements as (tag, attrs, text) in document order; text of <text>/<td>/<li> collected."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements = []
        self.stack = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        e = {"tag": tag, "attrs": dict(attrs), "text": "",
             "ancestors": [(a["tag"], a["attrs"]) for a in self.stack]}
        self.elements.append(e)
        if tag not in ("br", "meta", "input", "img", "link", "path", "polygon", "ellipse",
                       "line", "circle", "polyline", "rect"):
            self.stack.append(e)

    def handle_endtag(self, tag):
        while self.stack:
            e = self.stack.pop()
            if e["tag"] == tag:
                break

    def handle_data(self, data):
        for e in self.stack:
            e["text"] += data

    def find(self, tag=None, cls=None, **attrs):
        out = []
        for e in self.elements:
            if tag and e["tag"] != tag:
                continue
            if cls and cls not in e["attrs"].get("class", "").split():
                continue
            if any(e["attrs"].get(k.replace("_", "-")) != v for k, v in attrs.items()):
                continue
            out.append(e)
        return out


def json_report(model):
    r = subprocess.run([AXQC, "check", "--format", "json", "--no-config", model],
                       capture_output=True, cwd=SOURCE)
    return json.loads(r.stdout)["reports"][0]


def in_details(e):
    return any(tag == "details" for tag, _ in e["ancestors"])


def check_links(dom, report, where):
    """Table of contents, anchors of the findings, "caused by" links, every in-page link."""
    ids = [e["attrs"]["id"] for e in dom.elements if "id" in e["attrs"]]
    check(len(ids) == len(set(ids)), f"{where}: every id of the page is unique")
    ids = set(ids)
    internal = [e["attrs"]["href"] for e in dom.find("a") if e["attrs"].get("href", "")[:1] == "#"]
    dangling = [h for h in internal if h[1:] not in ids]
    check(internal and not dangling,
          f"{where}: every in-page link ({len(internal)}) leads to an element ({dangling[:3]})")
    toc = dom.find("nav", id="toc")
    check(toc != [], f"{where}: the page has a table of contents")
    toc_links = [e["attrs"]["href"] for e in dom.find("a")
                 if any(t == "nav" and a.get("id") == "toc" for t, a in e["ancestors"])]
    causes = report["summary"]["causes"]
    check(all(f"#cause-{n}" in toc_links for n in range(1, causes + 1)) and
          all(f"#group-{k}" in toc_links for k in range(len(report["groups"]))) and
          "#findings" in toc_links,
          f"{where}: the contents jump to each of the {causes} causes and "
          f"{len(report['groups'])} finding groups")
    rows = dom.find("tr", cls="finding")
    by_id = {r["attrs"].get("data-id"): r for r in rows}
    check(sorted(by_id) == sorted(f["id"] for f in report["findings"]) and
          len(rows) == len(report["findings"]),
          f"{where}: every one of the {len(report['findings'])} findings has its row")
    caused = [f for f in report["findings"] if f.get("cause")]
    for f in caused:
        row = by_id[f["id"]]
        links = [e for e in dom.find("a", cls="caused-by")
                 if any(a is row["attrs"] for _, a in e["ancestors"])]
        cause_row = by_id.get(f["cause"])
        check(links and cause_row is not None and
              links[0]["attrs"]["href"] == "#" + cause_row["attrs"]["id"] and
              (not cause_row["attrs"]["data-node"] or
               cause_row["attrs"]["data-node"] in links[0]["text"]),
              f"{where}: finding {f['id']} links to its cause's row with its node name")
    return rows


def check_report_dom(dom, report, where):
    """Finding rows, offending nodes in every group's view, Q/DQ edge labels."""
    rows = [r for r in dom.find("tr", cls="finding") if not in_details(r)]
    want = [(f["rule"], (f["nodes"] or [""])[0]) for g in report["groups"] for f in g["first"]]
    got = [(r["attrs"].get("data-rule"), r["attrs"].get("data-node")) for r in rows]
    check(got == want, f"{where}: one finding row per first location, rule IDs and primary "
                       f"nodes as in the JSON report ({len(want)} rows; got {got[:3]}...)")
    check_links(dom, report, where)
    ids = {e["attrs"].get("id") for e in dom.elements if "id" in e["attrs"]}
    offending = {e["attrs"].get("id") for e in dom.find("g", cls="offending")}
    for k, g in enumerate(report["groups"]):
        check(dom.find("div", id=f"view-{k}") != [],
              f"{where}: group {k} ({g['rule']}) has a graph view")
        for f in g["first"]:
            node = f["nodes"][0]
            nid = f"g{k}-node-{node}"
            check(nid in ids and nid in offending,
                  f"{where}: group {k} ({g['rule']}): primary node {node} is an SVG element "
                  f"#{nid} of class offending")
    labels = [e["text"] for e in dom.find("text") if "scale=" in e["text"] and "zp=" in e["text"]]
    check(labels, f"{where}: Q/DQ edges are labelled with scale and zero point ({labels[:1]})")
    check(dom.find("li") != [] and dom.find("g", cls="selected") != [],
          f"{where}: the graph explorer's script listed nodes and drew a neighbourhood")
    # Links to the rule pages (the server's --rules-url) are links, not resources.
    external = [f"{e['tag']} {k}={e['attrs'][k]}" for e in dom.elements for k in ("src", "href")
                if (e["attrs"].get(k) or "").startswith(("http:", "https:", "//")) and not (
                    e["tag"] == "a" and k == "href" and
                    e["attrs"][k].startswith(RULES_URL.split("{page}")[0]))]
    check(not external and dom.find("link") == [],
          f"{where}: no external resource (src/href to another site: {external[:3]})")


def post(port, path, body, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", path, body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


def get_json(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, json.loads(data)


def settled_deliveries(port, want):
    deadline = time.time() + 120
    while time.time() < deadline:
        st, j = get_json(port, "/v1/deliveries")
        done = [d for d in j.get("deliveries", []) if d["state"] in ("done", "failed")]
        if st == 200 and len(done) >= want:
            return j["deliveries"]
        time.sleep(0.25)
    check(False, f"{want} webhook deliveries finished")


def main():
    global SERVER_PROC
    if CHROME is None:
        print("skipped: chromium is not installed")
        return 77
    os.makedirs(SHOTS, exist_ok=True)

    # --- 1. the HTML report of a failing real export ---
    report_html = os.path.join(WORK, "report.html")
    # Paths relative to the repository, as a user in a checkout would type them.
    r = subprocess.run([AXQC, "check", "--no-config", "--format", "html", "-o", report_html,
                        os.path.relpath(FAILING, SOURCE)], capture_output=True, cwd=SOURCE)
    check(r.returncode == 1 and os.path.getsize(report_html) > 0,
          f"axqc check --format html of a non-conformant export exits 1 (got {r.returncode})")
    report = json_report(FAILING)
    check(report["verdict"] == "non_conformant" and report["groups"],
          "the export is non_conformant with finding groups")
    dom = Dom(browser("file://" + report_html))
    check(dom.find("span", id="verdict")[0]["text"] == "non_conformant",
          "the headline shows the verdict non_conformant")
    causes = dom.find("div", cls="cause")
    check(len(causes) == report["summary"]["causes"],
          f"one root-cause block per root cause ({report['summary']['causes']})")
    check_report_dom(dom, report, "vit report")
    whole = [e for e in dom.find("g", cls="node") if e["attrs"].get("id", "").startswith("m-node-")]
    check(len(whole) == report["model"]["node_count"],
          f"a model of {report['model']['node_count']} nodes has the ownership map of the whole "
          f"model, every node drawn (got {len(whole)})")
    browser("file://" + report_html, screenshot=os.path.join(SHOTS, "report-html.png"))

    cnn_html = os.path.join(WORK, "cnn.html")
    subprocess.run([AXQC, "check", "--no-config", "--format", "html", "-o", cnn_html,
                    os.path.relpath(FAILING_CNN, SOURCE)], capture_output=True, cwd=SOURCE)
    cnn = json_report(FAILING_CNN)
    dom = Dom(browser("file://" + cnn_html))
    check_report_dom(dom, cnn, "cnn report")
    check([g["rule"] for g in cnn["groups"]][0] == "role/weight-type" and
          dom.find("g", id="g0-node-/conv_wq/DequantizeLinear", cls="offending") != [],
          "defect_weight_u8: the weight's DequantizeLinear is outlined in the role/weight-type view")
    check(dom.find("g", cls="selected") and
          dom.find("g", cls="selected")[0]["attrs"].get("id") == "x-node-/Conv",
          "defect_weight_u8: the explorer opens on the Conv of the finding")
    # The whole page: the group's view, the ownership map and the explorer.
    browser("file://" + cnn_html, screenshot=os.path.join(SHOTS, "report-cnn.png"),
            size="1400,3300")

    # --- 1b. a generated model of 400+ nodes with many findings per group ---
    large = os.path.join(WORK, "large.onnx")
    r = subprocess.run([BENCH_GEN, "--nodes", "400", "--kind", "cnn", "--violations", "-o", large],
                       capture_output=True)
    check(r.returncode == 0, f"axqc-bench-gen writes a 400-node model ({r.stderr[-200:]})")
    large_html = os.path.join(WORK, "large.html")
    subprocess.run([AXQC, "check", "--no-config", "--format", "html", "-o", large_html, large],
                   capture_output=True, cwd=SOURCE)
    big = json_report(large)
    print(f"size: HTML report of {big['model']['node_count']} nodes, {len(big['findings'])} "
          f"findings: {os.path.getsize(large_html)} bytes")
    dom = Dom(browser("file://" + large_html))
    check_report_dom(dom, big, "large report")
    more = [g for g in big["groups"] if g["count"] > len(g["first"])]
    check(more and dom.find("details", cls="more") != [],
          f"large report: a group of more than {len(more[0]['first']) if more else 5} findings "
          f"lists the others in a <details>")
    boxes = [e for e in dom.find("g", cls="node") if e["attrs"].get("id", "").startswith("c-node-")]
    chains = [e for e in boxes if "chain" in e["attrs"]["class"].split()]
    check(big["model"]["node_count"] > 300 and boxes and chains and
          len(boxes) < big["model"]["node_count"] / 2,
          f"large report: a map of the whole model of {big['model']['node_count']} nodes with its "
          f"chains collapsed ({len(boxes)} boxes, {len(chains)} of them chains)")
    # A deep link to a finding folded in a <details> opens it.
    folded = [r for r in dom.find("tr", cls="finding") if in_details(r)]
    target = folded[-1]["attrs"]["id"]
    dom = Dom(browser("file://" + large_html + "#" + target))
    row = dom.find("tr", id=target)
    check(row and any(t == "details" and "open" in a for t, a in row[0]["ancestors"]),
          f"large report: the address #{target} opens the <details> of its finding")
    browser("file://" + large_html, screenshot=os.path.join(SHOTS, "report-large.png"),
            size="1400,2600")

    # --- 2. the dashboard of a running server ---
    ready = os.path.join(WORK, "ready.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AXQC_")}
    # A stub Hub with one model (org/classifier at HF_REVISION); org/missing has none (404).
    hub = os.path.join(WORK, "hub")
    os.makedirs(os.path.join(hub, "org", "classifier", HF_REVISION))
    shutil.copy(PASSING, os.path.join(hub, "org", "classifier", HF_REVISION, "model.onnx"))
    stub, stub_port = registry_stub.start(hub, None)
    with open(os.path.join(WORK, "hf-secret"), "w") as f:
        f.write(HF_SECRET + "\n")
    SERVER_PROC = subprocess.Popen(
        [SERVER, "--listen", "127.0.0.1:0", "--metrics-listen", "", "--http-listen",
         "127.0.0.1:0", "--ready-file", ready, "--store-path",
         os.path.join(WORK, "store.sqlite3"), "--url-allow-host", f"127.0.0.1:{stub_port}",
         "--huggingface-webhook-secret-file", os.path.join(WORK, "hf-secret"),
         "--huggingface-url", f"http://127.0.0.1:{stub_port}", "--webhook-check-value", "true",
         "--webhook-max-attempts", "1", "--rules-url", RULES_URL],
        stdout=open(os.path.join(WORK, "server.log"), "w"), stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 30
    while time.time() < deadline and not (os.path.exists(ready) and os.path.getsize(ready) > 0):
        time.sleep(0.1)
    check(os.path.exists(ready), "the server is ready")
    port = json.load(open(ready))["http_port"]
    shas = {}
    for model, project in ((FAILING, "vit"), (FAILING_CNN, "cnn"), (PASSING, "cnn"),
                           (PASSING, "cnn")):
        with open(model, "rb") as f:
            st, data = post(port, f"/v1/check?name={os.path.basename(model)}&label.project={project}",
                            f.read(), {"Content-Type": "application/octet-stream"})
        check(st == 200, f"POST /v1/check {os.path.basename(model)} (got {st})")
        shas[model] = json.loads(data)["model"]["sha256"]
    base = f"http://127.0.0.1:{port}"
    dom = Dom(browser(base + "/"))
    points = dom.find("circle", cls="point")
    check(points and all(float(p["attrs"]["data-requests"]) > 0 for p in points),
          f"the pass-rate chart has data points ({len(points)})")
    requests = sum(float(p["attrs"]["data-requests"]) for p in points)
    passed = sum(float(p["attrs"]["data-requests"]) * float(p["attrs"]["data-pass-rate"])
                 for p in points)
    check(requests == 4 and abs(passed - 2) < 1e-6,
          f"the chart's points hold the 4 checks, 2 of them conformant (got {requests}, {passed})")
    rules = {e["attrs"]["data-rule"] for e in dom.find("tr", cls="rule-row")}
    check({"role/weight-type", "onnx/constant-node"} <= rules,
          f"top failing rules list the rules of the failing checks ({sorted(rules)[:5]})")
    rows = {e["attrs"]["data-sha256"]: e["attrs"]["data-verdict"]
            for e in dom.find("tr", cls="check-row")}
    check(rows.get(shas[FAILING]) == "non_conformant" and rows.get(shas[PASSING]) == "conformant",
          "recent checks show each model's verdict")
    links = {e["attrs"].get("href") for e in dom.find("a")}
    check(f"/models/{shas[FAILING]}" in links, "a recent check links to its report page")
    dom = Dom(browser(base + "/?label=project"))
    values = {e["attrs"].get("value") for e in dom.find("option")}
    check({"vit", "cnn"} <= values, f"the label's values are selectable ({sorted(values - {None})})")

    # --- 3. every check with its options, and the webhook deliveries ---
    with open(FAILING_CNN, "rb") as f:
        st, data = post(port, "/v1/check?name=cnn-value-checks.onnx&check_value=true"
                        "&label.project=cnn", f.read(), {"Content-Type": "application/octet-stream"})
    check(st == 200 and json.loads(data)["check_value"] is True, "POST /v1/check with check_value")
    for repo in ("org/classifier", "org/missing"):
        body = json.dumps({"event": {"action": "update", "scope": "repo.content"},
                           "repo": {"type": "model", "name": repo, "headSha": HF_REVISION}})
        st, data = post(port, "/v1/hooks/huggingface", body,
                        {"X-Webhook-Secret": HF_SECRET, "Content-Type": "application/json"})
        check(st == 202, f"Hub delivery of {repo}: 202 (got {st} {data[:200]})")
    deliveries = {d["model"]: d for d in settled_deliveries(port, 2)}
    good, bad = deliveries["org/classifier"], deliveries["org/missing"]
    check(good["state"] == "done" and good["outcome"] in ("conformant", "non_conformant") and
          bad["state"] == "failed" and bad["outcome"] == "download_failed",
          f"one delivery checked, one failed to download (got {good['outcome']}, {bad['outcome']})")
    dom = Dom(browser(base + "/"))
    rows = dom.find("tr", cls="check-row")
    check(len(rows) == 6, f"one row per check: 4 uploads, 1 with check_value, 1 webhook (got {len(rows)})")
    page = dom.find("span", id="checks-page")[0]
    check(page["attrs"].get("data-total") == "6" and "of 6 checks" in page["text"],
          f"the pager counts 6 checks (got {page})")
    hrefs = [a["attrs"].get("href") for a in dom.find("a", cls="report-link")]
    check(f"/models/{shas[FAILING_CNN]}?check_value=true" in hrefs and
          f"/models/{shas[FAILING_CNN]}" in hrefs,
          f"the same model's checks link the reports of their own options ({hrefs})")
    check(f"/models/{shas[PASSING]}?check_value=true" in hrefs and
          sum(1 for r in rows if r["attrs"].get("data-sha256") == shas[PASSING]) == 3,
          "the model checked by CI and by the registry under another name keeps both rows")
    webhook = [r for r in rows if r["attrs"].get("data-source") == "webhook"]
    check(len(webhook) == 1 and webhook[0]["attrs"]["data-request-id"] == good["request_id"],
          "the webhook's check is a row with the delivery's request id")
    drows = {r["attrs"]["data-delivery-id"]: r for r in dom.find("tr", cls="delivery-row")}
    check(set(drows) == {good["delivery_id"], bad["delivery_id"]},
          f"the deliveries section lists both deliveries ({sorted(drows)})")
    check(drows[bad["delivery_id"]]["attrs"]["data-state"] == "failed" and
          drows[bad["delivery_id"]]["attrs"]["data-outcome"] == "download_failed" and
          drows[good["delivery_id"]]["attrs"]["data-outcome"] == good["outcome"],
          "the deliveries' states and outcomes")
    cells = [e["text"] for e in dom.find("td", cls="err")]
    check(any("404" in c for c in cells), f"the failed delivery shows its error ({cells})")
    cells = [e["text"] for e in dom.find("td")]
    check(good["request_id"] in cells and bad["request_id"] in cells,
          "each delivery shows its check's request id")
    check(good["model_page"] in hrefs and good["model_page"].endswith("?check_value=true"),
          f"the checked delivery links the report of its options ({good['model_page']})")
    browser(base + "/", screenshot=os.path.join(SHOTS, "dashboard.png"), size="1280,1750")
    dom = Dom(browser(base + "/?delivery_source=huggingface&outcome=download_failed"))
    drows = [r["attrs"]["data-delivery-id"] for r in dom.find("tr", cls="delivery-row")]
    check(drows == [bad["delivery_id"]], f"outcome filter: only the failed delivery ({drows})")
    dom = Dom(browser(base + "/?q=" + urllib.parse.quote("VALUE-CHECKS")))
    names = [e["text"] for e in dom.find("a", cls="report-link") if e["text"] != "report"]
    check(names == ["cnn-value-checks.onnx"], f"the search finds the check by its name ({names})")
    dom = Dom(browser(base + "/?verdict=conformant&source=upload"))
    verdicts = {r["attrs"]["data-verdict"] for r in dom.find("tr", cls="check-row")}
    check(len(dom.find("tr", cls="check-row")) == 2 and verdicts == {"conformant"},
          f"verdict and source filters: the 2 conformant uploads ({verdicts})")
    # Pages of 25: 20 more checks of a stored model, then the second page.
    with open(PASSING, "rb") as f:
        passing = f.read()
    for i in range(20):
        st, _ = post(port, f"/v1/check?name=batch-{i:02d}.onnx", passing,
                     {"Content-Type": "application/octet-stream"})
        check(st == 200 or i > 0, "20 more checks")
    dom = Dom(browser(base + "/"))
    page = dom.find("span", id="checks-page")[0]["text"]
    nxt = dom.find("button", id="checks-next")[0]["attrs"]
    check(len(dom.find("tr", cls="check-row")) == 25 and "1\u201325 of 26" in page and
          "disabled" not in nxt, f"the first page of 26 checks: 25 rows, next enabled ({page})")
    dom = Dom(browser(base + "/?offset=25"))
    rows = dom.find("tr", cls="check-row")
    page = dom.find("span", id="checks-page")[0]["text"]
    check(len(rows) == 1 and "26\u201326 of 26" in page and
          "disabled" in dom.find("button", id="checks-next")[0]["attrs"],
          f"the second page: the oldest check ({page})")

    dom = Dom(browser(f"{base}/models/{shas[FAILING]}"))
    check(dom.find("span", id="verdict") and dom.find("span", id="verdict")[0]["text"] ==
          "non_conformant", "/models/{sha256}: the stored report with its verdict")
    check_report_dom(dom, report, "server report page")
    # Rule IDs link to the rule pages under --rules-url ({page} filled in).
    rule_links = {a["attrs"].get("href") for a in dom.find("a", cls="rule")}
    check(RULES_URL.replace("{page}", "onnx--constant-node") in rule_links and
          all(h.startswith("https://docs.example.com/rules/") and h.endswith("/") for h in rule_links),
          f"server page: rule links under --rules-url ({sorted(rule_links)[:3]})")
    # Each repair command the page prints runs as printed, on a copy of the model under the name
    # the page gives (what a reader of the page does).
    repairs = [c["text"] for c in dom.find("code") if c["text"].startswith("axqc fix ")]
    check(repairs, "server page: the causes print their repair commands")
    for cmd in repairs:
        words = cmd.split()
        run_dir = tempfile.mkdtemp(dir=WORK)
        shutil.copy(FAILING, os.path.join(run_dir, words[2]))
        r = subprocess.run([AXQC] + words[1:], cwd=run_dir, capture_output=True, text=True)
        # The exit code is the fixed model's verdict (1: other defects remain).
        check(r.returncode in (0, 1) and "wrote FIXED.onnx" in r.stdout and
              os.path.exists(os.path.join(run_dir, "FIXED.onnx")) and
              f"{words[-1]:<26}" in r.stdout,
              f"server page: `{cmd}` runs and applies {words[-1]} (exit {r.returncode}: "
              f"{r.stdout[-300:]} {r.stderr[-300:]})")
    # The server's page is the same document: a deep link into a folded group works there too.
    with open(large, "rb") as f:
        st, data = post(port, "/v1/check?name=large.onnx", f.read(),
                        {"Content-Type": "application/octet-stream"})
    check(st == 200, f"POST /v1/check large.onnx (got {st})")
    large_sha = json.loads(data)["model"]["sha256"]
    dom = Dom(browser(f"{base}/models/{large_sha}#{target}"))
    row = dom.find("tr", id=target)
    check(row and any(t == "details" and "open" in a for t, a in row[0]["ancestors"]) and
          dom.find("nav", id="toc") != [],
          f"/models/{{sha256}}#{target}: the table of contents, and the finding's <details> open")
    # The server stored the whole graph of the 400-node model: the same collapsed map as locally.
    server_boxes = [e for e in dom.find("g", cls="node")
                    if e["attrs"].get("id", "").startswith("c-node-")]
    check(sorted(e["attrs"]["id"] for e in server_boxes) == sorted(e["attrs"]["id"] for e in boxes),
          f"/models/{{sha256}} of the 400-node model: the map with chains collapsed, the same "
          f"{len(boxes)} boxes as the local report (got {len(server_boxes)})")
    # The model page: the report of the options asked for, every stored report, the history.
    dom = Dom(browser(f"{base}/models/{shas[FAILING_CNN]}?check_value=true"))
    check(dom.find("span", id="verdict") and dom.find("span", id="verdict")[0]["text"] ==
          "non_conformant", "/models/{sha256}?check_value=true: the report of those options")
    reps = dom.find("tr", cls="report-row")
    check(sorted(r["attrs"]["data-options"][:4] for r in reps) == ["cv=0", "cv=1"] and
          [r["attrs"]["data-options"][:4] for r in dom.find("tr", cls="current")] == ["cv=1"],
          f"both stored reports listed, the shown one marked ({[r['attrs'] for r in reps]})")
    hrefs = [a["attrs"].get("href") for a in dom.find("a", cls="report-link")]
    check(f"/models/{shas[FAILING_CNN]}" in hrefs, f"the other report is a link ({hrefs})")
    hist = dom.find("tr", cls="check-row")
    check(len(hist) == 2 and {r["attrs"]["data-sha256"] for r in hist} == {shas[FAILING_CNN]},
          f"the model's check history: its 2 checks ({len(hist)})")
    dom = Dom(browser(f"{base}/models/{shas[PASSING]}?check_value=true"))
    hist = dom.find("tr", cls="check-row")
    check(dom.find("span", id="verdict") and dom.find("span", id="verdict")[0]["text"] == good["outcome"],
          "the page of the model the registry delivered: the report of its options")
    page = dom.find("span", id="model-history-page")[0]["text"]
    check("of 23 checks" in page and len(hist) == 10,
          f"its history: 23 checks (2 uploads, 1 webhook, 20 more), 10 a page ({page}, {len(hist)})")
    browser(f"{base}/models/{shas[PASSING]}?check_value=true",
            screenshot=os.path.join(SHOTS, "server-report.png"), size="1400,1300")
    # No report with the options asked for: the page says so and lists the stored ones.
    dom = Dom(browser(f"{base}/models/{shas[FAILING]}?target=ax650"))
    missing = dom.find("p", id="report-missing")
    check(missing and "target=ax650" in missing[0]["text"] and not dom.find("span", id="verdict"),
          f"no report for target=ax650: the page says so ({missing})")
    reps = dom.find("tr", cls="report-row")
    check(len(reps) == 1 and dom.find("a", cls="report-link") and
          dom.find("a", cls="report-link")[0]["attrs"]["href"] == f"/models/{shas[FAILING]}",
          "and links the report that is stored")
    browser(f"{base}/models/{shas[FAILING]}?target=ax650",
            screenshot=os.path.join(SHOTS, "server-no-report.png"), size="1280,800")
    print("screenshots in", SHOTS)
    return finish(0)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except BaseException:
        finish(1)
        raise
