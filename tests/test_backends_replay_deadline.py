"""backends/tensorflow.py's replays under a deadline: past it, a Replay that
is not confirmed, says why, and is marked ``budget``, before TensorFlow is
even imported (so no TensorFlow is needed here)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tfsem.backends import tensorflow as tfb
from tfsem.checking import check_case
from tfsem.oracle.jsonio import case_from_json, read_json_file

CASE = Path(__file__).resolve().parent / "cases" / "pass_cse_ignore_control.json"


def _unsound():
    case = case_from_json(read_json_file(str(CASE)), where=str(CASE))
    verdict = check_case(case, timeout=10.0)
    assert verdict.verdict == "unsound"
    return case.rewritten(), verdict.counterexample


def test_a_replay_past_its_deadline_is_not_confirmed_and_says_budget():
    p, cx = _unsound()
    past = time.monotonic() - 1.0
    had_tf = "tensorflow" in sys.modules
    for rep in (tfb.replay_program(p, cx, deadline=past),
                tfb.replay_graph(object(), p, cx, deadline=past)):
        assert not rep.confirmed and rep.budget and rep.outcome is None
        assert rep.reason == "the time budget ran out before the replay on TensorFlow started"
        data = rep.to_json()
        assert data["status"] == "not-replayed" and data["budget"] is True
        assert rep.describe().startswith("not replayed on TensorFlow within the time budget")
        assert rep.describe().endswith("(the verdict is the oracle's alone)")
    assert had_tf or "tensorflow" not in sys.modules      # cut before TensorFlow's import


def test_a_replay_without_a_deadline_is_not_marked_budget():
    rep = tfb.Replay(False, "the export refuses it")
    assert rep.to_json()["budget"] is False
    assert rep.describe() == "not replayed on TensorFlow: the export refuses it"
