"""`tfsem run SESSION --timeout T` of a session with critical sections or
queues (tfsem/commands/blocking_sessions.py `run_tensorflow` and `run`;
docs/budgets.md): on TensorFlow the budget of the other `tfsem run
--backend tensorflow` paths (default 300 s), on numpy one read between
runs.  TensorFlow is replaced by slow stand-ins (monkeypatch): its import,
the trials (one that honours its deadline as the real loop does, one that
ignores it), the oracle's enumeration.  The last test runs the real trial
loop on TensorFlow (skipped without it)."""

from __future__ import annotations

import importlib.util
import json
import time
from collections import Counter
from pathlib import Path

import pytest

from tfsem.cli import EXIT_BAD_INPUT, EXIT_FOUND, EXIT_OK, EXIT_UNKNOWN, main

SESSIONS = Path(__file__).resolve().parent.parent / "examples" / "sessions"
DEADLOCK = SESSIONS / "queue_deadlock.session.json"
#: what one trial of DEADLOCK gives on TensorFlow: consumer2 waits, consumer1 got the item
TRIAL = (("consumer2",), (("consumer1/item", 1),))
#: the command ends within T and this much
MARGIN = 0.8   # (T and this much: the report, a trial that ignores the deadline, the load)


@pytest.fixture
def fake_tensorflow(monkeypatch):
    """TensorFlow's import sleeps `import_sleep`; each trial `trial_sleep`
    and gives `result`, honouring its deadline as the real loop does (no
    trial starts when less is left than one takes), unless `ignore_deadline`."""
    from tfsem.backends import tensorflow as tfb
    from tfsem.backends import tensorflow_blocking as tb
    setting = {"import_sleep": 0.0, "trial_sleep": 0.0, "result": TRIAL,
               "ignore_deadline": False, "calls": []}

    def trials(session, init, n, timeout_ms=2000, max_seconds=120.0, deadline=None, seen=None):
        setting["calls"].append(deadline)
        seen = Counter() if seen is None else seen
        done = 0
        while done < n:
            if not setting["ignore_deadline"] and deadline is not None and \
                    time.monotonic() + setting["trial_sleep"] >= deadline:
                break
            time.sleep(setting["trial_sleep"])
            seen[setting["result"]] += 1
            done += 1
        return seen, done

    monkeypatch.setattr(tfb, "tensorflow", lambda: time.sleep(setting["import_sleep"]))
    monkeypatch.setattr(tb, "run_blocking_session_threads", trials)
    return setting


def _run(capsys, *argv, path=DEADLOCK, backend="tensorflow"):
    capsys.readouterr()
    t = time.monotonic()
    rc = main(["run", str(path), "--backend", backend, "--json", *map(str, argv)])
    return rc, json.loads(capsys.readouterr().out), time.monotonic() - t


def test_the_default_budget_is_300_s_and_a_full_run_is_judged(fake_tensorflow, capsys):
    rc, data, _ = _run(capsys, "--runs", "3")
    assert rc == EXIT_OK and data["trials"] == 3 and "budget" not in data
    assert data["outcomes"] == [{"waiting": ["consumer2"], "values": {"consumer1/item": 1},
                                 "trials": 3, "in_oracle": True}]
    assert data["oracle_count"] == 2 and data["findings"] == 0
    (deadline,) = fake_tensorflow["calls"]
    assert 290 < deadline - time.monotonic() <= 300


def test_tensorflow_s_import_past_the_budget_is_left_behind(fake_tensorflow, capsys):
    fake_tensorflow["import_sleep"] = 3.0
    rc, data, seconds = _run(capsys, "--timeout", "0.6")
    assert seconds < 0.6 + MARGIN
    assert rc == EXIT_UNKNOWN and data == {
        "verdict": "unknown", "budget": True,
        "reason": "the time budget of 0.6 s ran out while TensorFlow was imported: no trial"}
    assert fake_tensorflow["calls"] == []


def test_no_trial_starts_past_the_budget(fake_tensorflow, capsys):
    fake_tensorflow["trial_sleep"] = 0.1
    rc, data, seconds = _run(capsys, "--runs", "1000", "--timeout", "1")
    assert seconds < 1 + MARGIN
    assert rc == EXIT_UNKNOWN and data["budget"] is True and 0 < data["trials"] < 1000
    assert data["reason"] == (f"the time budget of 1 s ran out after {data['trials']} of 1000 "
                              "trials: the trials above are all that were made")
    assert data["outcomes"][0]["trials"] == data["trials"]
    assert data["outcomes"][0]["in_oracle"] is True     # each trial made is judged


def test_trials_that_outlast_the_budget_are_left_behind_with_those_made(fake_tensorflow,
                                                                         capsys):
    """The trials ignore their deadline (a trial whose calls TensorFlow does
    not cancel): left behind at the budget, the trials made so far reported
    and judged, then `unknown`."""
    fake_tensorflow.update(trial_sleep=0.4, ignore_deadline=True)
    rc, data, seconds = _run(capsys, "--runs", "50", "--timeout", "1")
    assert seconds < 1 + MARGIN
    made = data["trials"]
    assert rc == EXIT_UNKNOWN and 0 < made < 50
    assert data["reason"] == (f"the time budget of 1 s ran out during trial {made + 1} of 50, "
                              "which was left behind: the trials above are all that were made")
    assert sum(o["trials"] for o in data["outcomes"]) == made


def test_a_finding_among_the_trials_made_stands(fake_tensorflow, capsys):
    """Both consumers waiting: not among the oracle's deadlocks (one item, two
    consumers: exactly one waits).  Cut by the budget, it is still a finding."""
    fake_tensorflow.update(trial_sleep=0.1, result=(("consumer1", "consumer2"), ()))
    rc, data, seconds = _run(capsys, "--runs", "1000", "--timeout", "1")
    assert seconds < 1 + MARGIN
    assert rc == EXIT_FOUND and data["findings"] == 1 and data["budget"] is True
    assert data["outcomes"][0]["in_oracle"] is False


def test_an_oracle_past_its_share_leaves_the_trials_unjudged(fake_tensorflow, monkeypatch,
                                                            capsys):
    """The oracle's outcome set gets at most half of what is left: past it,
    the trials made are reported without a judgement, `unknown`."""
    from tfsem.oracle import blocking
    from tfsem.oracle.budget import BudgetExceeded
    given = []

    def slow(*args, max_seconds=60.0, **kwargs):
        given.append(max_seconds)
        time.sleep(max_seconds)
        raise BudgetExceeded("seconds", max_seconds, 256)

    monkeypatch.setattr(blocking, "outcomes", slow)
    rc, data, seconds = _run(capsys, "--runs", "2", "--timeout", "2")
    assert seconds < 2 + MARGIN
    (share,) = given
    assert 0.5 < share <= 1.0
    assert rc == EXIT_UNKNOWN and data["trials"] == 2 and data["oracle_count"] is None
    assert data["outcomes"][0]["in_oracle"] is None and data["findings"] == 0
    assert data["oracle_note"].startswith("the oracle's outcomes were not computed: the time "
                                          "budget of 2 s left them")
    assert data["reason"] == ("the time budget of 2 s ran out while the oracle's outcome set "
                              "was computed: the trials are not judged")


def test_numpy_runs_of_a_blocking_session_stop_at_the_budget(monkeypatch, capsys):
    from tfsem.oracle import blocking
    rc, full, _ = _run(capsys, "--runs", "40", backend="numpy")
    assert rc == EXIT_OK and full["runs"] == 40 and "budget" not in full
    real = blocking.random_run

    def slow(*args, **kwargs):
        time.sleep(0.05)
        return real(*args, **kwargs)

    monkeypatch.setattr(blocking, "random_run", slow)
    rc, data, seconds = _run(capsys, "--runs", "10000", "--timeout", "0.8", backend="numpy")
    assert seconds < 0.8 + MARGIN
    made = data["runs"]
    assert rc == EXIT_UNKNOWN and 0 < made < 10000 and data["budget"] is True
    assert data["reason"] == (f"the time budget of 0.8 s ran out after {made} of 10000 runs: "
                              "the runs above are all that were made")
    assert sum(o["runs"] for o in data["outcomes"]) == made
    # other programs on numpy still take no budget
    assert main(["run", str(SESSIONS / "counter_two_steps.session.json"), "--backend", "numpy",
                 "--timeout", "5"]) == EXIT_BAD_INPUT


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                    reason="TensorFlow is not installed")
def test_the_real_trial_loop_starts_no_trial_it_cannot_finish():
    """TensorFlow's trials of the queue session (each waits out a consumer's
    1 s timeout): with a deadline 2.5 s away, the loop stops before it, where
    a trial would end past it, and every trial made is a whole one."""
    from tfsem.backends import tensorflow as tfb
    from tfsem.backends.tensorflow_blocking import run_blocking_session_threads
    from tfsem.oracle.session import load_session
    tfb.tensorflow()
    s = load_session(DEADLOCK)
    run_blocking_session_threads(s, {}, 1, timeout_ms=1000)      # (TensorFlow warmed up)
    seen = Counter()
    t = time.monotonic()
    got, done = run_blocking_session_threads(s, {}, 100, timeout_ms=1000,
                                             deadline=t + 2.5, seen=seen)
    assert got is seen and sum(seen.values()) == done
    assert 1 <= done < 100
    assert time.monotonic() < t + 2.5 + 0.5      # no trial was started that ends far past it
    assert all(len(waiting) == 1 for waiting, _ in seen)   # whole trials: one consumer waits


def test_a_session_graph_too_slow_to_import_is_unknown(monkeypatch, capsys):
    """The budget starts before the session's graph is read: its import past
    it is `unknown` (exit 3), not a traceback, and no trial is made."""
    from tfsem import graphdef
    from tfsem.graphdef import ImportTimeout

    def slow(*args, **kwargs):
        raise ImportTimeout("reading the graph")

    monkeypatch.setattr(graphdef, "import_path", slow)
    rc, data, _ = _run(capsys, "--timeout", "5",
                       path=SESSIONS / "critical_section_two_steps.session.json")
    assert rc == EXIT_UNKNOWN and data["budget"] is True
    assert data["reason"] == ("the time budget of 5 s ran out while the session's graph was "
                              "read and imported (the time budget ran out while reading the "
                              "graph): no run")
