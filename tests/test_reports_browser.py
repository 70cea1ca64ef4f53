"""The report in a real browser: headless Chromium opens the index and a
finding page from disk.

Why the DevTools protocol over `--remote-debugging-pipe`: it needs no port,
no websocket library and no script in the page (the pages forbid scripts by
their Content-Security-Policy; DevTools evaluation is not subject to it).
Over one pipe the test measures SVG bounding boxes, follows links by clicking
them, and hears every console message, uncaught exception, CSP violation and
network request, instead of scraping `--enable-logging` output.

Artifacts (screenshots and the report itself) go to tests/artifacts/ (git
ignored); the test prints where.  Skips where Chromium is absent
(`.ci/install-chromium` installs Debian's `chromium`).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from tfsem.reports.examples import load_store_finding, sample_index_data
from tfsem.reports.finding import render_finding_page
from tfsem.reports.site import FindingPage, write_report

ARTIFACTS = Path(__file__).parent / "artifacts"
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    exe = os.environ.get("TFSEM_CHROMIUM")
    if exe:
        return exe if shutil.which(exe) else None
    return next((shutil.which(c) for c in CANDIDATES if shutil.which(c)), None)


CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (Debian: apt-get install chromium; CI runs .ci/install-chromium)")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--mute-audio", "--hide-scrollbars", "--window-size=1400,2000"]


class Browser:
    """A minimal Chrome DevTools Protocol client over the debugging pipe
    (Chromium reads commands on fd 3 and writes replies on fd 4, each message
    a JSON text ended by a NUL byte)."""

    def __init__(self, exe: str, workdir: Path, timeout: float = 30.0):
        self.timeout = timeout
        self.events: list[dict[str, Any]] = []
        self._buf = b""
        self._id = 0
        cmd_r, self._w = os.pipe()       # we write commands, Chromium reads fd 3
        self._r, out_w = os.pipe()       # Chromium writes fd 4, we read

        def child_fds() -> None:  # runs in the child, before exec
            a = fcntl.fcntl(cmd_r, fcntl.F_DUPFD_CLOEXEC, 10)
            b = fcntl.fcntl(out_w, fcntl.F_DUPFD_CLOEXEC, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.log_path = workdir / "chromium.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={workdir / 'profile'}", "--remote-debugging-pipe",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
            preexec_fn=child_fds, close_fds=False)
        os.close(cmd_r)
        os.close(out_w)
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": page["targetId"], "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1400, "height": 2000, "deviceScaleFactor": 1, "mobile": False}, session=True)

    # -- transport --------------------------------------------------------

    def _send(self, msg: dict[str, Any]) -> None:
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self._w, data):]

    def _recv(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"Chromium closed the pipe; see {self.log_path}")
                self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method: str, params: dict[str, Any] | None = None, session: bool = False) -> dict:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        self._send(msg)
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._recv(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str, since: int) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for ev in self.events[since:]:
                if ev["method"] == method:
                    return ev
            since = len(self.events)
            msg = self._recv(deadline)
            if "method" in msg:
                self.events.append(msg)

    # -- page helpers -----------------------------------------------------

    def evaluate(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True}, session=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"page script failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def open(self, url: str) -> None:
        mark = len(self.events)
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_event("Page.loadEventFired", mark)

    def click_and_wait(self, selector: str) -> None:
        mark = len(self.events)
        self.evaluate(f"document.querySelector({json.dumps(selector)}).click()")
        self.wait_event("Page.loadEventFired", mark)

    def screenshot(self, path: Path, height: int | None = None) -> tuple[int, int]:
        """A PNG of the whole page (or of its first `height` pixels)."""
        size = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
        w, h = 1400, min(int(size["height"]) + 1, height or 16000)
        r = self.call("Page.captureScreenshot",
                      {"format": "png", "captureBeyondViewport": True,
                       "clip": {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}}, session=True)
        path.write_bytes(base64.b64decode(r["data"]))
        return w, h

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions, CSP violations, and requests
        for anything but file: and data: URLs."""
        out = []
        for ev in self.events:
            m, p = ev["method"], ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append("uncaught: " + json.dumps(p.get("exceptionDetails", {}))[:300])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console error: " + json.dumps(p.get("args", []))[:300])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log error: " + p["entry"].get("text", "")[:300])
            elif m == "Network.requestWillBeSent":
                url = p.get("request", {}).get("url", "")
                if not url.startswith(("file:", "data:")):
                    out.append("network request: " + url)
        return out

    def close(self) -> None:
        try:
            self._send({"id": self._id + 1, "method": "Browser.close", "params": {}})
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(timeout=10)
        finally:
            os.close(self._r)
            os.close(self._w)
            self._log.close()


SVG_BOXES = """
Array.from(document.querySelectorAll('svg.graph')).map(s => {
  const b = s.getBBox(), r = s.getBoundingClientRect();
  return {cls: s.getAttribute('class'), role: s.dataset.role, w: b.width, h: b.height,
          rw: r.width, rh: r.height,
          nodes: s.querySelectorAll('g.node').length, edges: s.querySelectorAll('g.edge').length};
})
"""

# Labels must fit in their boxes with the fonts the browser really has (the
# layout estimates text widths without a browser).
LABEL_OVERFLOW = """
Array.from(document.querySelectorAll('svg.program-graph g.node')).flatMap(g => {
  const rect = g.querySelector('rect:not(.halo)');
  return Array.from(g.querySelectorAll('text.op, text.name'))
    .filter(t => t.getComputedTextLength() > rect.width.baseVal.value + 0.5)
    .map(t => g.dataset.node + ': ' + t.textContent);
})
"""

LINKS = "Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"

# Every edge's arrowhead must be visible: the point just before the end of
# the edge's path lies outside every node box of its drawing (a node is drawn
# over the edges; an arrowhead under a box cannot be seen).
HIDDEN_ARROWHEADS = """
Array.from(document.querySelectorAll('svg.graph')).flatMap(svg => {
  const rects = Array.from(svg.querySelectorAll('g.node > rect:not(.halo)')).map(r => r.getBBox());
  return Array.from(svg.querySelectorAll('g.edge path.stroke')).flatMap(p => {
    const L = p.getTotalLength();
    if (L < 8) return [];
    const q = p.getPointAtLength(L - 6);
    const inside = rects.some(b => q.x > b.x + 0.5 && q.x < b.x + b.width - 0.5 &&
                                   q.y > b.y + 0.5 && q.y < b.y + b.height - 0.5);
    return inside ? [(svg.dataset.role || '') + ' ' + p.parentNode.dataset.edge] : [];
  });
})
"""


def _file_of(url: str) -> Path:
    parsed = urllib.parse.urlparse(url)
    return Path(urllib.parse.unquote(parsed.path))


def _check_links(b: Browser) -> list[str]:
    """Every non-data link points at an existing file."""
    hrefs = b.evaluate(LINKS)
    bad = []
    for href in hrefs:
        if href.startswith("data:"):
            continue
        if not href.startswith("file:") or not _file_of(href).is_file():
            bad.append(href)
    return bad


@pytest.fixture(scope="module")
def report() -> Path:
    """A report folder with one finding per semantics mode, plus a page with
    hostile names."""
    out = ARTIFACTS / "report"
    if out.exists():
        shutil.rmtree(out)
    campaigns, stats, findings, history = sample_index_data()
    pages = [FindingPage(f, *load_store_finding(f["semantics"])) for f in findings]
    index = write_report(out, campaigns, stats, pages, history)
    return index


def test_report_pages_render_in_chromium(report: Path) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    print(f"\nbrowser test artifacts (screenshots, report): {ARTIFACTS.resolve()}")
    with tempfile.TemporaryDirectory() as tmp:
        b = Browser(CHROMIUM, Path(tmp))
        try:
            # the index
            b.open(report.resolve().as_uri())
            assert b.evaluate("document.title") == "tfsem campaign report"
            plots = b.evaluate(SVG_BOXES)
            assert plots and all(p["w"] > 100 and p["h"] > 50 for p in plots), plots
            assert _check_links(b) == []
            n_links = b.evaluate("document.querySelectorAll('a.finding-link').length")
            assert n_links == 2
            b.screenshot(ARTIFACTS / "index.png")

            # follow a link to a finding page
            target = b.evaluate("document.querySelector('a.finding-link').href")
            b.click_and_wait("a.finding-link")
            assert b.evaluate("location.href") == target
            boxes = b.evaluate(SVG_BOXES)
            programs = [x for x in boxes if "program-graph" in x["cls"]]
            assert [x["role"] for x in programs] == ["original", "rewritten"]
            for x in programs:
                assert x["w"] > 200 and x["h"] > 100 and x["rw"] > 200 and x["rh"] > 100, x
                assert x["nodes"] == 11
            assert [x["edges"] for x in programs] == [17, 16]  # the hoisted Read lost ^wx1
            states = [x for x in boxes if "state-graph" in x["cls"]]
            steps = b.evaluate("document.querySelectorAll('table.steps tr.step').length")
            key_rows = b.evaluate("document.querySelectorAll('table.steps tr.step.key').length")
            # by default: the initial state, the steps that access a variable, the last one
            assert steps >= 11 and 2 <= len(states) <= key_rows + 2 < steps + 1
            assert all(x["w"] > 100 and x["h"] > 80 and x["rw"] > 100 for x in states)
            assert b.evaluate(LABEL_OVERFLOW) == []
            assert _check_links(b) == []
            assert b.evaluate("document.querySelectorAll('script').length") == 0
            assert b.evaluate(HIDDEN_ARROWHEADS) == []
            b.screenshot(ARTIFACTS / "finding.png")
            b.screenshot(ARTIFACTS / "finding-first-screen.png", height=2000)

            # every step drawn, one link away
            finding_url = b.evaluate("location.href")
            b.click_and_wait("a.all-steps")
            states = [x for x in b.evaluate(SVG_BOXES) if "state-graph" in x["cls"]]
            assert len(states) == steps + 1
            assert b.evaluate(HIDDEN_ARROWHEADS) == []
            b.open(finding_url)

            # and back
            b.click_and_wait("a.back")
            assert b.evaluate("location.href") == report.resolve().as_uri()
            assert b.problems() == []
        finally:
            b.close()


def test_hostile_names_stay_text_in_chromium(tmp_path: Path) -> None:
    """A node called <script>... is shown, not run (and the CSP would stop it)."""
    from tfsem.oracle import program as P
    from tfsem.reports.examples import unsound_verdict
    from tfsem.oracle.values import Tensor
    from tfsem.oracle.jsonio import make_case

    evil = "<script>window.pwned=1</script>"
    p = P.program([P.var("v1", "x"), P.write(evil, "v1", "$b"), P.var("v2", "x"),
                   P.read("r", "v2", "^" + evil)], {"out": "r"}, ["x"])
    q = P.program([P.var("v1", "x"), P.write(evil, "v1", "$b"), P.var("v2", "x"),
                   P.read("r", "v2")], {"out": "r"}, ["x"])
    verdict = unsound_verdict(p, q, {"b": Tensor(2)}, {"x": Tensor(1)})
    page = tmp_path / "evil.html"
    page.write_text(render_finding_page(make_case(p, q), verdict))
    with tempfile.TemporaryDirectory() as tmp:
        b = Browser(CHROMIUM, Path(tmp))
        try:
            b.open(page.as_uri())
            assert b.evaluate("typeof window.pwned") == "undefined"
            assert b.evaluate("document.querySelectorAll('script').length") == 0
            names = b.evaluate("Array.from(document.querySelectorAll('svg[data-role=original] g.node'))"
                               ".map(g => g.dataset.node)")
            assert evil in names
            assert b.problems() == []
        finally:
            b.close()


def test_reversed_edges_self_loops_and_big_pairs_in_chromium(tmp_path: Path) -> None:
    """Issue 16.8 / 18.6 in a browser: an edge the rewrite turns around and a
    control self-loop show their arrowheads; a pair past the drawing budget
    is drawn as the part around the change.  Screenshots: reversed-edges.png,
    budget.png."""
    from tfsem.oracle import program as P
    from tfsem.oracle.jsonio import make_case

    p = P.program([P.var("v", "x"), P.read("a", "v"), P.apply("b", "Neg", "a"),
                   P.apply("c", "Neg", "b", "^a")], {"out": "c"}, ["x"])
    nodes = [n.replace(inputs=tuple(i for i in n.inputs if not isinstance(i, P.ControlIn))) if n.name == "c"
             else n.replace(inputs=n.inputs + (P.ControlIn("c"),)) if n.name == "a"
             else n.replace(inputs=n.inputs + (P.ControlIn("b"),)) if n.name == "b" else n for n in p.nodes]
    q = p.replace(nodes=tuple(nodes))
    rev = tmp_path / "reversed.html"
    rev.write_text(render_finding_page(make_case(p, q), {"verdict": "invalid", "reason": "cycle a -> b -> c -> a"}))
    chain = [P.var("v", "x"), P.read("r0", "v")] + [P.apply(f"r{i}", "Neg", f"r{i - 1}") for i in range(1, 400)]
    big = P.program(chain, {"out": "r399"}, ["x"])
    big2 = big.replace(nodes=tuple(n.replace(op="Copy") if n.name == "r200" else n for n in big.nodes))
    budget = tmp_path / "budget.html"
    budget.write_text(render_finding_page(make_case(big, big2), {"verdict": "unsound"}))
    ARTIFACTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        b = Browser(CHROMIUM, Path(tmp))
        try:
            b.open(rev.as_uri())
            assert b.evaluate(HIDDEN_ARROWHEADS) == []
            assert b.evaluate("document.querySelectorAll('svg[data-role=rewritten] g.edge.added').length") == 2
            b.screenshot(ARTIFACTS / "reversed-edges.png", height=1200)
            b.open(budget.as_uri())
            assert b.evaluate("document.querySelectorAll('div.not-drawn').length") == 1
            assert b.evaluate("document.querySelectorAll('svg[data-role=original] g.node').length") == 7
            assert b.evaluate(HIDDEN_ARROWHEADS) == []
            b.screenshot(ARTIFACTS / "budget.png", height=1200)
            assert b.problems() == []
        finally:
            b.close()
