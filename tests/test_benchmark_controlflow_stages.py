"""benchmarks/controlflow_stages.py's split of a check's CPU: each stage net
of the stages nested in it (a new application inside an Assign update,
both inside an exploration inside a run), with a clock that moves only
where the stand-in functions say they work, so that every second is
counted once."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import controlflow_stages as stages  # noqa: E402


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def work(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def world(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(stages.time, "process_time", lambda: clock.now)

    class Function:
        def _apply(self, args, attrs, xp):
            clock.work(1.0)
            return args

    fns = SimpleNamespace(Function=Function)
    cf = SimpleNamespace()

    def assigned(fn, w, v, old):
        clock.work(0.5)
        fns.Function()._apply([v], None, None)      # (a sparse update's function: 1 s)
        return v

    def behaviours(*a, **k):
        clock.work(2.0)
        cf._assigned(None, 0, 1, 2)                 # 0.5 s + 1 s nested
        yield "run"

    def outcomes(p, explore=False):
        clock.work(3.0)                             # the replay's own steps
        fns.Function()._apply([1], None, None)      # 1 s
        if explore:
            list(cf.behaviours())
        return p

    cf.outcomes, cf.behaviours, cf._assigned = outcomes, behaviours, assigned

    class _CFChecker:
        def minimized(self, found):
            return cf.outcomes("P2")

    control_flow = SimpleNamespace(_CFChecker=_CFChecker)
    timers = stages._Timers()
    timers.install(cf, fns, control_flow)
    return SimpleNamespace(clock=clock, cf=cf, fns=fns, checker=_CFChecker(), timers=timers)


def test_each_second_is_counted_once_in_its_own_stage(world):
    t, cf = world.timers, world.cf
    t.original = original = object()
    cf.outcomes(original, explore=True)     # 3 + 1 + explore 2 + assign 0.5 + its apply 1
    cf.outcomes("P2")                       # 3 + 1
    world.checker.minimized(None)           # 3 + 1, in the minimization
    world.clock.work(0.25)                  # outside the runs
    fns_outside = world.fns.Function()._apply([0], None, None)   # not in a run: 1 s of "other"
    assert fns_outside == [0]
    row = t.row(world.clock.now)
    assert row["refute P"] == 7.5
    assert row["refute P'"] == 4.0
    assert row["mini P'"] == 4.0 and row["mini P"] == 0.0
    assert row["explore"] == 2.0
    assert row["assigns"] == 0.5
    assert row["new apps"] == 4.0           # three in the runs and the Assign's: not the outside one
    assert row["replays"] == 9.0            # 3 s in each of the three runs
    assert row["other"] == 1.25
    assert row["check"] == sum(row[c] for c in ("explore", "new apps", "assigns", "replays",
                                                "other"))


def test_bad_arguments_exit_2(capsys):
    assert stages.main(["--repeat", "0"]) == 2
    assert "--repeat" in capsys.readouterr().err
