"""`tfsem check SESSION REWRITTEN --timeout T` of a session with critical
sections or queues (tfsem/commands/blocking_sessions.py `check`, an
enumeration at up to 24 σ): the same clock as the other `tfsem check`
paths (docs/budgets.md).  Each test makes one stage slow - an enumeration
(a large session, or one that ignores its clock), the report - and checks
that the command ends in time and says what was cut: `unknown` when no σ
was compared in full, `no-counterexample` naming the cut after some, an
`unsound` verdict standing without what the report had no time for.  The
last two run the command as a process of its own, where the watchdog
writes the report at T."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import settings

from tfsem.cli import EXIT_FOUND, EXIT_OK, EXIT_UNKNOWN, main

SESSIONS = Path(__file__).resolve().parent.parent / "examples" / "sessions"
CRITICAL = SESSIONS / "counter_critical.session.json"
DROPPED = SESSIONS / "counter_critical_dropped.json"
#: the command ends within T and this much (the report, the machine's load)
MARGIN = 0.8


def queue_session(tmp_path: Path, n: int) -> tuple[Path, Path]:
    """A session of `n` concurrent runs, each reading x, writing x + 1 (no
    critical section) and enqueueing what it read on one queue, and the same
    program with a node renamed (no proof is attempted: every σ is
    enumerated).  At n = 5 one σ's enumeration takes a minute."""
    nodes = [{"name": "v", "op": "Var", "var": "x"},
             {"name": "r", "op": "Read", "inputs": ["v"]},
             {"name": "one", "op": "Const", "value": 1},
             {"name": "add", "op": "Add", "inputs": ["r", "one"]},
             {"name": "v2", "op": "Var", "var": "x"},
             {"name": "w", "op": "Write", "inputs": ["v2", "add"]},
             {"name": "enq", "op": "QueueEnqueue", "queue": "q", "inputs": ["r"]}]
    prog = {"format": "tfsem.program/1", "variables": ["x"], "queues": {"q": {"capacity": n}},
            "nodes": nodes, "outputs": {"old": "r"}}
    session = {"format": "tfsem.session/1", "program": prog, "order": "concurrent",
               "runs": [{"name": f"s{i}", "fetch": ["old"], "targets": ["w", "enq"]}
                        for i in range(n)]}
    s, r = tmp_path / f"q{n}.session.json", tmp_path / f"q{n}_renamed.json"
    s.write_text(json.dumps(session))
    r.write_text(json.dumps(prog).replace('"one"', '"one_b"'))
    return s, r


def _check(capsys, *argv) -> tuple[int, str, float]:
    capsys.readouterr()
    t = time.monotonic()
    rc = main(["check", *map(str, argv)])
    return rc, capsys.readouterr().out, time.monotonic() - t


def test_an_enumeration_past_the_budget_is_unknown_in_time(capsys, tmp_path):
    """One σ of a 5-run queue session takes a minute to enumerate: at a 1 s
    budget the enumeration is cut at its clock, and no σ was compared in
    full: `unknown`, saying so (before, it was the enumeration's own 1 s
    per call, and the report was not held to the clock)."""
    s, r = queue_session(tmp_path, 5)
    rc, out, seconds = _check(capsys, s, r, "--timeout", "1", "--json")
    assert seconds < 1 + MARGIN
    data = json.loads(out)
    assert rc == EXIT_UNKNOWN and data["verdict"] == "unknown" and data["budget"] is True
    assert data["tried"] == 0
    assert data["reason"].startswith("the time budget of 1 s ran out while σ 1 of 24 was "
                                     "enumerated: no σ was compared in full")


def test_a_budget_that_ends_after_some_sigma_says_how_many(monkeypatch, capsys, tmp_path):
    """The third σ's enumeration runs out of the time it was given: two σ
    were compared in full, so `no-counterexample`, and its reason and
    `budget` say the budget ended it."""
    from tfsem.oracle import blocking
    from tfsem.oracle.budget import BudgetExceeded
    real, calls = blocking.outcomes, []

    def third_is_slow(*args, max_seconds=60.0, **kwargs):
        calls.append(max_seconds)
        if len(calls) > 4:      # the original's set at σ 3
            time.sleep(max_seconds)
            raise BudgetExceeded("seconds", max_seconds, 256)
        return real(*args, max_seconds=max_seconds, **kwargs)

    monkeypatch.setattr(blocking, "outcomes", third_is_slow)
    r = tmp_path / "renamed.json"
    r.write_text(json.dumps(json.loads(CRITICAL.read_text())["program"])
                 .replace('"one"', '"one_b"'))
    rc, out, seconds = _check(capsys, CRITICAL, r, "--timeout", "1", "--json")
    assert seconds < 1 + MARGIN
    data = json.loads(out)
    assert rc == EXIT_OK and data["verdict"] == "no-counterexample" and data["tried"] == 2
    assert data["budget"] is True
    assert data["reason"].startswith("2 of 24 σ tried (the time budget of 1 s ran out while σ 3 "
                                     "of 24 was enumerated), every outcome")
    # each enumeration was given what was left of the budget, less the report's reserve
    assert all(0 < m <= 1 for m in calls)


def test_a_slow_report_leaves_out_what_it_had_no_time_for(monkeypatch, capsys):
    """Writing the original's outcomes at σ is slow (a large session has
    thousands): the verdict stands, the lines not written are counted, and
    the JSON says what it left out."""
    from tfsem.commands import blocking_sessions as bs
    rc, out, _ = _check(capsys, CRITICAL, DROPPED)
    assert rc == EXIT_FOUND and "  original outcomes at this σ (2):" in out
    assert "left out" not in out
    real_describe, real_json = bs._describe, bs._json

    def slow_describe(o, session):
        time.sleep(0.4)
        return real_describe(o, session)

    monkeypatch.setattr(bs, "_describe", slow_describe)
    rc, out, seconds = _check(capsys, CRITICAL, DROPPED, "--timeout", "0.6")
    assert seconds < 0.6 + MARGIN
    lines = out.splitlines()
    assert rc == EXIT_FOUND and lines[0] == "unsound: output 'step2/old' differs"
    assert lines[-1].startswith("  (the time budget ran out while the original's outcomes "
                                "were written: ")
    assert "the verdict stands" in lines[-1]
    monkeypatch.setattr(bs, "_describe", real_describe)

    def slow_json(o, session, **extra):
        time.sleep(0.4)
        return real_json(o, session, **extra)

    monkeypatch.setattr(bs, "_json", slow_json)
    rc, out, seconds = _check(capsys, CRITICAL, DROPPED, "--timeout", "0.6", "--json")
    assert seconds < 0.6 + MARGIN
    data = json.loads(out)
    assert rc == EXIT_FOUND and data["verdict"] == "unsound" and data["differs"]
    assert data["counterexample"]["original"] is None
    assert data["counterexample"]["schedule"]           # what was made stands
    assert "left out" in data["report_cut"]


WATCHDOG_SCRIPT = r'''
import sys, time
import tfsem.commands.blocking_sessions as bs
import tfsem.oracle.blocking as blocking
stage = sys.argv[1]
if stage == "enumeration":
    def stuck(*a, **k):              # an enumeration that ignores its clock
        time.sleep(30)
    blocking.outcomes = stuck
else:
    def stuck_report(*a, **k):       # the counterexample's report, far too slow
        time.sleep(30)
    bs._counterexample = stuck_report
from tfsem.commands.common import Deadline
# (the clock from main(): the process's start and these imports are not
# what is tested here)
Deadline.of_process = classmethod(lambda cls, seconds: cls(seconds))
from tfsem.cli import main
sys.argv = ["tfsem", "check", *sys.argv[2:]]
print(f"main at {time.monotonic()!r}", file=sys.stderr, flush=True)
try:
    main()
finally:
    print("main returned", file=sys.stderr)
'''


def _watchdog(stage: str, *argv: str):
    out = subprocess.run([sys.executable, "-c", WATCHDOG_SCRIPT, stage, *map(str, argv)],
                         capture_output=True, text=True, timeout=120)
    end = time.monotonic()
    started = [float(line.split()[-1]) for line in out.stderr.splitlines()
               if line.startswith("main at ")]
    assert started, out.stderr[-2000:]
    return out, end - started[0]


@pytest.mark.parametrize("mode", [
    "json", pytest.param("text", marks=pytest.mark.skipif(
        settings.get_current_profile_name() != "nightly",
        reason="a 4 s process: nightly profile (the default suite runs the --json one)"))])
def test_the_watchdog_ends_an_enumeration_that_ignores_its_clock(tmp_path, mode):
    """An enumeration that does not look at its clock (here: stuck for 30 s)
    is cut at T by the watchdog: `unknown`, naming the σ, exit 3."""
    same = tmp_path / "renamed.json"
    same.write_text(json.dumps(json.loads(CRITICAL.read_text())["program"])
                    .replace('"one"', '"one_b"'))
    out, wall = _watchdog("enumeration", CRITICAL, same, "--timeout", "1",
                          *(["--json"] if mode == "json" else []))
    assert out.returncode == EXIT_UNKNOWN, out.stderr[-2000:]
    assert "main returned" not in out.stderr and wall < 1.0 + 1.0
    reason = ("the time budget of 1 s ran out during the enumeration of the session's outcomes "
              "(σ 1 of 24), which overran its share of it: no verdict (0 σ compared in full "
              "before it; a longer --timeout may decide it)")
    if mode == "json":
        data = json.loads(out.stdout)
        assert data["verdict"] == "unknown" and data["reason"] == reason
    else:
        assert out.stdout == f"unknown: {reason}\n"


@pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                    reason="a 4 s process: nightly profile (the default suite runs the "
                           "watchdog in the test before this one)")
def test_the_watchdog_keeps_a_verdict_reached_when_its_report_overruns():
    out, wall = _watchdog("report", CRITICAL, DROPPED, "--timeout", "1", "--json")
    assert out.returncode == EXIT_FOUND, out.stderr[-2000:]
    assert "main returned" not in out.stderr and wall < 1.0 + 1.0
    data = json.loads(out.stdout)
    assert data["verdict"] == "unsound" and data["differs"] and data["counterexample"] is None
    assert data["report_cut"] == ("the time budget of 1 s ran out during the report, after the "
                                  "verdict: the verdict stands; its counterexample is left out")
