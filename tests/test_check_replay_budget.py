"""`tfsem check --timeout T`: the replay of an `unsound` verdict on TensorFlow
(its import included) and the report come out of the same budget as the
check (tfsem/commands/check.py, docs/budgets.md).  No TensorFlow: the replay
is replaced by one that never looks at the clock, as TensorFlow's import and
graph loading do not."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

from tfsem.cli import main

CASE = Path(__file__).resolve().parent / "cases" / "pass_cse_ignore_control.json"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                                reason="without TensorFlow no replay is tried")


@pytest.fixture
def stuck_replay(monkeypatch):
    from tfsem.backends import tensorflow as tfb
    calls = []

    def stuck(p, cx, *, observe="outputs+state", mode="tensorflow",
              label="the rewritten program, exported", deadline=None):
        calls.append(deadline)
        time.sleep(3.0)
        return tfb.Replay(True, "confirmed, too late", label)

    monkeypatch.setattr(tfb, "replay_program", stuck)
    return calls


def test_a_replay_past_the_budget_is_left_behind_and_said(stuck_replay, capsys):
    # the checker's modules imported first: `check`'s clock starts after them
    main(["check", str(CASE), "--timeout", "5", "--json", "--no-tensorflow"])
    capsys.readouterr()
    t = time.monotonic()
    rc = main(["check", str(CASE), "--timeout", "1", "--json"])
    assert time.monotonic() - t < 1 + 0.4
    data = json.loads(capsys.readouterr().out)
    assert rc == 1 and data["verdict"] == "unsound"          # the verdict stands
    assert "tensorflow" not in data["confirmed"]
    rep = data["tensorflow_replay"]
    assert rep["status"] == "not-replayed" and rep["budget"] is True and not rep["confirmed"]
    assert "time budget of 1 s" in rep["reason"]
    assert stuck_replay and stuck_replay[0] is not None      # the replay was given the deadline
    rc = main(["check", str(CASE), "--timeout", "1"])
    out = capsys.readouterr().out
    assert rc == 1 and "not replayed on TensorFlow within the time budget" in out
    assert "the verdict is the oracle's alone" in out


def test_no_tensorflow_still_skips_without_a_budget_note(stuck_replay, capsys):
    rc = main(["check", str(CASE), "--timeout", "1", "--json", "--no-tensorflow"])
    rep = json.loads(capsys.readouterr().out)["tensorflow_replay"]
    assert rc == 1 and rep["status"] == "skipped" and not stuck_replay
