"""A campaign in which a task fails (here: its generator breaks while drawing
programs) did not try its passes as asked: it is stored `incomplete` and
`tfsem fuzz` exits 1 with the reason, never `finished` with exit 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def broken_generator(max_nodes: int = 8, observe: str = "outputs+state"):
    """A `--generator` whose strategy fails when drawn (not when loaded)."""
    from hypothesis import strategies as st

    def boom(_):
        raise RuntimeError("the generator broke while drawing")
    return st.integers().map(boom)


def test_a_campaign_with_a_failed_task_is_incomplete_and_fails(tmp_path):
    from scaled_budgets import scaled

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    # a worker that starts slower than the budget (a busy machine) skips its
    # task and draws nothing: the campaign runs again, afresh, with a larger one
    for budget in scaled(4):
        out = tmp_path / f"campaign-{budget:g}"
        r = subprocess.run([sys.executable, "-m", "tfsem", "fuzz", "--budget", f"{budget:g}s", "--out", str(out),
                            "--pass", "dce", "--checker", "concrete",
                            "--generator", "test_campaigns_task_errors:broken_generator",
                            "--semantics", "atomic", "--observe", "outputs+state"],
                           env=env, capture_output=True, text=True, timeout=120 + 3 * budget)
        if "the generator failed" in r.stdout:
            break
    assert r.returncode == 1, (r.stdout, r.stderr[-2000:])
    assert "result: FAIL" in r.stdout and "the generator failed" in r.stdout, r.stdout
    assert "Traceback" not in r.stdout
    from tfsem.campaigns.store import Store
    with Store(out, readonly=True) as s:
        assert s.latest_campaign()["status"] == "incomplete"
