"""σ's minimization on the control-flow path (checking/control_flow.py
`_CFChecker.minimized`): the box is check.py's (minimize.py's two numbers), a
confirmation is begun only where the check's costliest comparison says it
ends inside the box, and a σ whose one comparison costs more than the box is
shown as found, with the reason in the stats.  The verdict never depends on
it: a minimized σ is one the reference engine confirmed.

The program: tf2_tensor_array_loop.pbtxt (a tf.while_loop over a
TensorArray adding v[i] to a variable), the rewrite dropping the read's
control edge from the AssignAdd (tests/test_check_control_flow_confirm.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfsem.checking import check as check_module
from tfsem.checking import control_flow, minimize
from tfsem.checking.check import check_rewrite
from tfsem.graphdef import import_path
from tfsem.oracle.jsonio import program_from_json, program_to_json

CASE = Path(__file__).parent / "cases" / "controlflow" / "tf2_tensor_array_loop.pbtxt"
READ, ADD = "loop/body/Read/ReadVariableOp", "loop/body/AssignAddVariableOp"


@pytest.fixture(scope="module")
def programs():
    p = import_path(CASE, fetch=["out"]).program
    raw = program_to_json(p)
    for n in raw["nodes"]:
        if n["name"] == READ:
            n["inputs"] = [i for i in n["inputs"] if i != "^" + ADD]
    return p, program_from_json(raw)


def test_the_box_is_check_pys(programs, monkeypatch):
    """One cap, minimize.py's two numbers, which check.py names too: the
    control-flow checker's box follows them (changed here, the box ends
    where they say)."""
    assert check_module.MINIMIZE_SHARE == minimize.MINIMIZE_SHARE
    assert check_module.MINIMIZE_MAX_SECONDS_FLOOR == minimize.MINIMIZE_MAX_SECONDS_FLOOR
    assert not hasattr(control_flow, "MINIMIZE_SHARE")
    assert not hasattr(control_flow, "MINIMIZE_MIN_SECONDS")
    p, q = programs
    monkeypatch.setattr(minimize, "MINIMIZE_SHARE", 0.0)
    monkeypatch.setattr(minimize, "MINIMIZE_MAX_SECONDS_FLOOR", 0.0)
    v = check_rewrite(p, q, timeout=10, backends=False)
    assert v.verdict == "unsound"
    assert "more than the minimization's budget" in v.stats["minimize"]


def _counting(monkeypatch):
    """Counts the comparisons made inside `minimized`."""
    calls = {"inside": 0}
    compare, minimized = control_flow._CFChecker.compare, control_flow._CFChecker.minimized
    inside = [False]

    def counted_compare(self, sigma, seconds):
        if inside[0]:
            calls["inside"] += 1
        return compare(self, sigma, seconds)

    def counted_minimized(self, found):
        inside[0] = True
        try:
            return minimized(self, found)
        finally:
            inside[0] = False
    monkeypatch.setattr(control_flow._CFChecker, "compare", counted_compare)
    monkeypatch.setattr(control_flow._CFChecker, "minimized", counted_minimized)
    return calls


def test_a_comparison_costlier_than_the_box_is_not_begun(programs, monkeypatch):
    """One comparison said to cost more than the box: no confirmation, σ as
    found (the same as with minimization off), the reason in the stats, and
    the verdict unsound all the same."""
    p, q = programs
    plain = check_rewrite(p, q, timeout=10, backends=False, minimize=False)
    calls = _counting(monkeypatch)
    monkeypatch.setattr(control_flow._CFChecker, "cost", lambda self: 60.0)
    v = check_rewrite(p, q, timeout=10, backends=False)
    assert v.verdict == plain.verdict == "unsound"
    assert calls["inside"] == 0
    assert "σ not minimized" in v.stats["minimize"]
    assert v.counterexample.feeds == plain.counterexample.feeds
    assert v.counterexample.init == plain.counterexample.init


def test_minimization_confirms_when_a_comparison_fits(programs, monkeypatch):
    """The program's comparisons take milliseconds: minimization runs (some
    confirmations inside the box), no note in the stats, unsound."""
    p, q = programs
    calls = _counting(monkeypatch)
    v = check_rewrite(p, q, timeout=10, backends=False)
    assert v.verdict == "unsound"
    assert calls["inside"] > 0
    assert "minimize" not in v.stats


def test_no_confirmation_is_begun_past_the_box(programs, monkeypatch):
    """A comparison said to cost 0.2 s of the 0.5 s box: at most the
    confirmations begun while 0.2 s were left, each ending in time -- with
    the cost said, never one begun in the last 0.2 s."""
    p, q = programs
    begun: list[float] = []
    box_end: list[float] = []
    minimized, compare = control_flow._CFChecker.minimized, control_flow._CFChecker.compare
    import time
    inside = [False]

    def timed_minimized(self, found):
        box_end.append(time.monotonic() + max(minimize.MINIMIZE_MAX_SECONDS_FLOOR,
                                              minimize.MINIMIZE_SHARE * self.timeout))
        inside[0] = True
        try:
            return minimized(self, found)
        finally:
            inside[0] = False

    def timed_compare(self, sigma, seconds):
        if inside[0]:
            begun.append(time.monotonic())
            time.sleep(0.05)   # (a costlier comparison than this program's)
        return compare(self, sigma, seconds)
    monkeypatch.setattr(control_flow._CFChecker, "minimized", timed_minimized)
    monkeypatch.setattr(control_flow._CFChecker, "compare", timed_compare)
    monkeypatch.setattr(control_flow._CFChecker, "cost", lambda self: 0.2)
    v = check_rewrite(p, q, timeout=10, backends=False)
    assert v.verdict == "unsound"
    assert begun and all(t + 0.2 <= box_end[0] + 1e-3 for t in begun)
