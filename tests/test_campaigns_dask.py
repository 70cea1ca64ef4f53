"""`tfsem fuzz --dask`: the campaign's work on a real Dask cluster (a
`distributed.LocalCluster` on loopback), findings flowing back to the
coordinator's database."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from hypothesis import settings

distributed = pytest.importorskip(
    "distributed", reason="dask's distributed is not installed (the optional extra: "
                          "pip install 'tfsem[campaign]' or 'dask[distributed]')")

from tfsem.campaigns.campaign import HYPOTHESIS_DIR, CampaignSettings, run_campaign  # noqa: E402
from tfsem.campaigns.store import Store  # noqa: E402

TESTS = Path(__file__).resolve().parent


@pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                    reason="nightly profile only: a local dask cluster starts in ~15 s")
def test_campaign_on_a_local_dask_cluster(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    settings = CampaignSettings(passes=["campaign_fakes:drop_assigns", "campaign_fakes:crash_on_add"],
                                budget=8.0, out=str(tmp_path), cells=[("atomic", "outputs+state")],
                                checker="concrete", generator="campaign_fakes:small_generator")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        settings.dask = cluster.scheduler_address
        log = io.StringIO()
        result = run_campaign(settings, stream=log, live=False)
    assert result.status == "finished", log.getvalue()
    assert not result.errors, result.errors
    kinds = {(f["pass"], f["kind"]) for f in result.new}
    assert ("fake-drop-assigns", "unsound") in kinds and ("fake-crash-on-add", "crash") in kinds
    with Store(tmp_path, readonly=True) as s:
        stats = {t["pass"]: t for t in s.pass_totals(result.campaign_id)}
        assert stats["fake-drop-assigns"]["programs"] > 0 and stats["fake-crash-on-add"]["programs"] > 0
        assert s.campaigns()[0]["settings"]["dask"] == settings.dask
    # the workers' Hypothesis databases came home with their results
    assert any((tmp_path / HYPOTHESIS_DIR).rglob("*")), "no example saved under DIR/hypothesis"
