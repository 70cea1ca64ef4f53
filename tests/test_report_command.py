"""`tfsem report DIR` after a short real campaign that finds something: the
pages exist, link to each other, and render in Chromium (issue 8's done-when)."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from test_reports_browser import ARTIFACTS, SVG_BOXES, Browser, _check_links, find_chromium


def tfsem(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tfsem", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("campaign")
    r = tfsem("fuzz", "--pass", "hoist-reads", "--semantics", "atomic", "--observe", "outputs+state",
              "--budget", "10s", "--seed", "1", "--out", str(out))
    # hoist-reads claims unsound here: its findings are expected, exit 0
    assert r.returncode == 0, r.stdout + r.stderr
    assert "hoist-reads" in r.stdout and "unsound" in r.stdout, r.stdout + r.stderr
    return out


def test_report_writes_an_index_and_a_page_per_finding(campaign: Path):
    r = tfsem("report", str(campaign))
    assert r.returncode == 0, r.stderr
    index = campaign / "report" / "index.html"
    html = index.read_text()
    pages = sorted((campaign / "report" / "findings").glob("finding-*.html"))
    assert pages and f"wrote {index} and {len(pages)} finding page" in r.stdout
    for page in pages:   # the index links every page
        assert f'href="findings/{page.name}"' in html
        text = page.read_text()
        assert text.count('class="graph program-graph') == 2
        assert "hoist-reads" in text and "tfsem check" in text
        assert not re.search(r"(src|href)=\"https?://", text)


def test_report_of_a_folder_without_a_campaign_is_bad_input(tmp_path: Path):
    r = tfsem("report", str(tmp_path))
    assert r.returncode == 2 and "no campaign database" in r.stderr
    r = tfsem("report", str(tmp_path / "missing"))
    assert r.returncode == 2 and "no such directory" in r.stderr


@pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed (.ci/install-chromium installs it)")
def test_campaign_report_renders_in_chromium(campaign: Path):
    assert tfsem("report", str(campaign)).returncode == 0
    index = (campaign / "report" / "index.html").resolve()
    with tempfile.TemporaryDirectory() as tmp:
        b = Browser(find_chromium(), Path(tmp))
        try:
            b.open(index.as_uri())
            assert _check_links(b) == []
            assert b.evaluate("document.querySelectorAll('a.finding-link').length") >= 1
            b.click_and_wait("a.finding-link")
            programs = [x for x in b.evaluate(SVG_BOXES) if "program-graph" in x["cls"]]
            assert [x["role"] for x in programs] == ["original", "rewritten"]
            assert all(x["w"] > 50 and x["h"] > 50 and x["nodes"] >= 2 for x in programs), programs
            assert b.evaluate("document.querySelectorAll('table.steps tr.step').length") >= 2
            assert _check_links(b) == []
            ARTIFACTS.mkdir(exist_ok=True)
            b.screenshot(ARTIFACTS / "campaign-finding.png")
            assert b.problems() == []
        finally:
            b.close()
