"""`tfsem serve DIR` over a real campaign database: the JSON routes and the
report pages, read live (a finding recorded while the server runs shows up at
the next request)."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from test_serve_support import Server  # noqa: E402

from tfsem.campaigns.findings import FindingRecord  # noqa: E402
from tfsem.campaigns.store import Store  # noqa: E402
from tfsem.oracle.jsonio import case_to_json  # noqa: E402
from tfsem.reports.examples import load_store_finding  # noqa: E402


def unsound_record(semantics: str = "atomic") -> FindingRecord:
    case, verdict = load_store_finding(semantics)
    cj = case_to_json(case)
    cx = verdict["counterexample"]
    return FindingRecord(pass_name="hoist-reads", pass_spec="hoist-reads", kind="unsound", semantics=semantics,
                         observe="outputs+state", original=cj["original"], rewritten=cj["rewritten"],
                         verdict=verdict, message="variable 'X' differs", feeds=cx["feeds"], init=cx["init"],
                         schedule=cx["schedule"], claim="unsound")


def crash_record() -> FindingRecord:
    case, _ = load_store_finding()
    return FindingRecord(pass_name="cse", pass_spec="cse", kind="crash", semantics="atomic",
                         observe="outputs+state", original=case_to_json(case)["original"],
                         message="KeyError: 'r0'", detail={"error_type": "KeyError", "traceback": "..."},
                         claim="sound")


@pytest.fixture(scope="module")
def campaign_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("campaigns")
    with Store(d) as st:
        first = st.start_campaign(60.0, {"workers": 1}, "0.1.0")
        st.add_stats(first, "hoist-reads", "atomic", "outputs+state", {"programs": 50, "seconds": 1.0},
                     claim="unsound")
        st.record_finding(first, unsound_record())
        st.finish_campaign(first)
        second = st.start_campaign(60.0, {"workers": 2}, "0.1.0")
        st.add_stats(second, "hoist-reads", "atomic", "outputs+state", {"programs": 80, "seconds": 2.0},
                     claim="unsound")
        st.add_stats(second, "cse", "atomic", "outputs+state", {"programs": 120, "seconds": 2.0}, claim="sound")
        st.record_finding(second, unsound_record())  # seen again: known
        st.record_finding(second, crash_record())    # new
        st.finish_campaign(second)
    return d


@pytest.fixture(scope="module")
def server(campaign_dir):
    s = Server(campaign_dir, "--workers", "1")
    yield s
    s.stop()


def test_campaigns_newest_first_with_pass_totals(server):
    campaigns = server.get("/v1/campaigns").json()["campaigns"]
    assert [c["id"] for c in campaigns] == [2, 1]
    assert campaigns[0]["settings"] == {"workers": 2}
    totals = {p["pass"]: p for p in campaigns[0]["passes"]}
    assert totals["cse"]["programs"] == 120 and totals["cse"]["findings"]["crash"] == 1
    assert totals["hoist-reads"]["findings"]["unsound"] == 1


def test_findings_filtered(server):
    everything = server.get("/v1/findings").json()["findings"]
    assert {(f["pass"], f["kind"], f["status"]) for f in everything} == {
        ("hoist-reads", "unsound", "known"), ("cse", "crash", "new")}
    assert all("original" not in f and f["href"] == f"/v1/findings/{f['id']}" for f in everything)
    assert [f["kind"] for f in server.get("/v1/findings?kind=crash").json()["findings"]] == ["crash"]
    assert [f["pass"] for f in server.get("/v1/findings?pass=hoist-reads").json()["findings"]] == ["hoist-reads"]
    assert server.get("/v1/findings?status=fixed").json()["findings"] == []
    assert server.get("/v1/findings?pass=cse&kind=unsound").json()["findings"] == []


def test_a_finding_has_a_replayable_case(server):
    unsound = server.get("/v1/findings?kind=unsound").json()["findings"][0]
    detail = server.get(unsound["href"]).json()
    assert detail["finding"]["times_seen"] == 2
    assert detail["verdict"]["verdict"] == "unsound"
    # the stored case, posted back to the same server, gets the same verdict
    replay = server.post("/v1/check", detail["case"])
    assert replay.status == 200 and replay.json()["verdict"] == "unsound"
    assert replay.json()["differs"] == detail["verdict"]["differs"]
    crash = server.get("/v1/findings?kind=crash").json()["findings"][0]
    detail = server.get(crash["href"]).json()
    assert detail["case"] is None and detail["original"]["nodes"]
    for bad in ("/v1/findings/999", "/v1/findings/abc", "/v1/findings/-1"):
        assert server.get(bad).status == 404


def test_report_pages_live(server, campaign_dir):
    index = server.get("/")
    assert index.status == 200
    html = index.body.decode()
    finding_ids = [f["id"] for f in server.get("/v1/findings").json()["findings"]]
    for fid in finding_ids:
        assert f'href="findings/finding-{fid}.html"' in html
        page = server.get(f"/findings/finding-{fid}.html")
        assert page.status == 200 and page.headers["content-type"].startswith("text/html")
        assert "../index.html" in page.body.decode()
    assert "<svg" in server.get(f"/findings/finding-{finding_ids[0]}.html").body.decode()
    assert server.get("/index.html").body == index.body
    assert server.get("/findings/finding-999.html").status == 404
    assert server.get("/findings/../../etc/passwd").status == 404

    # live: a finding recorded now is on the next page
    with Store(campaign_dir) as st:
        third = st.start_campaign(10.0, {"workers": 3}, "0.1.0")
        st.record_finding(third, unsound_record("decomposed"))
    assert len(server.get("/v1/findings").json()["findings"]) == 3
    assert server.get("/v1/campaigns").json()["campaigns"][0]["status"] == "running"
    assert "finding-3.html" in server.get("/").body.decode()
