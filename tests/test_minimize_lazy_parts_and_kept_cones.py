"""Two shortcuts of σ's minimization against the minimization without them:
the differing parts of a fully confirmed σ made only where cone tests run
(checking/check.py `_Checker.minimized`, `MINIMIZE_LAZY_PARTS`), and a
program's cones kept per program object (checking/demand.py `cone`,
`CONES_PER_PROGRAM`).

- With each shortcut on and off, a check gives the same verdict, the same
  σ (bit for bit), the same schedule and the same steps (tried, taken, full
  confirmations, cone tests, steps taken with no run): where full
  confirmations are cheap (no cone tests), where they are dear from the
  start (cone tests everywhere), and where the first full confirmation in
  minimization turns the cone tests on (`rescale`: the lazy parts are made
  then).  Every `unsound` σ is one the enumerating oracle confirms.
- A cone kept for one program object is never another's: a rewrite made
  anew with one more node in a part's cone gets its own cone, and the kept
  cone equals a fresh walk; so do the feeds and variables a set of nodes
  reads (`sigma_names`, from a kept table of the nodes that read σ)."""

from __future__ import annotations

import time

import pytest

from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import canonical_memo, sigma_memo
from tfsem.checking import demand as D
from tfsem.checking import minimize as M
from tfsem.oracle.values import exact

from test_check_demand_confirm import _pairs, confirmed_by_the_oracle
from test_check_minimize_rescale import DEAR, _made_up_costs
from test_check_one_outcome import as_if_kernels, no_solver_candidates  # noqa: F401


def _shown(v) -> tuple:
    """What a verdict shows and how minimization got there."""
    record = v.stats.get("minimization") or {}
    steps = tuple(record.get(k) for k in ("tried", "taken", "full_confirmations",
                                          "cone_tests", "cone_accepted", "unchanged_cones",
                                          "remembered", "rescaled", "finished", "final"))
    cx = v.counterexample
    if cx is None:
        return v.verdict, steps
    sigma = tuple(sorted((name, exact(value)) for table in (cx.feeds, cx.init)
                         for name, value in table.items()))
    return v.verdict, steps, sigma, tuple(cx.schedule)


def _untimed(monkeypatch):
    """The decisions minimization makes on measured times made on none: the
    boxes larger than these programs' minimizations, and a candidate whose
    tested parts agree never confirmed in full where cone tests run (its
    rule compares a full confirmation's time with a cone test's, which the
    kept cones change; DEMAND_REST_RATIO)."""
    monkeypatch.setattr(C, "MINIMIZE_MIN_SECONDS", 50.0)
    monkeypatch.setattr(M, "MINIMIZE_COLD_FLOOR", 50.0)
    monkeypatch.setattr(M, "MINIMIZE_FIND_FLOOR", 50.0)
    monkeypatch.setattr(C, "DEMAND_REST_RATIO", 0.0)


def _compare(monkeypatch, flag_owner, flag, pairs):
    unsound = coned = 0
    for i, name, p, q, (sem, obs) in pairs:
        shown = []
        for on in (True, False):
            monkeypatch.setattr(flag_owner, flag, on)
            # (nothing remembered between the two runs: each starts as the
            # first check of its original)
            D._PER_PROGRAM.clear()
            sigma_memo.clear()
            canonical_memo.clear()
            with as_if_kernels():
                v = check_rewrite(p, q, sem, obs, timeout=100, structural=False,
                                  backends=False, classify=False)
            shown.append(_shown(v))
            if v.verdict == "unsound" and on:
                confirmed_by_the_oracle(p, q, v.counterexample, sem, obs, (i, name))
                unsound += 1
                coned += (v.stats.get("minimization") or {}).get("cone_tests", 0) > 0
        assert shown[0] == shown[1], (i, name, sem, obs, shown)
    return unsound, coned


def _dear_after(monkeypatch, cheap: int):
    """Made-up costs (as test_check_minimize_rescale.py's): the probe's
    measure and the first `cheap` full confirmations inside minimization
    0 s, every later one DEAR: σ are kept while no cone tests run, and a
    later confirmation turns them on (`rescale` makes the parts then)."""
    real_minimized, real_confirm = C._Checker.minimized, C._Checker.confirm

    def minimized(self, found):
        self.confirm_seconds = 0.0
        self.started = min(self.started, time.monotonic() - DEAR)
        self._made = 0
        try:
            return real_minimized(self, found)
        finally:
            self._made = None

    def confirm(self, *a, **k):
        result = real_confirm(self, *a, **k)
        if getattr(self, "_made", None) is not None:
            self._made += 1
            self.confirm_seconds = DEAR if self._made > cheap else 0.0
        return result

    monkeypatch.setattr(C._Checker, "minimized", minimized)
    monkeypatch.setattr(C._Checker, "confirm", confirm)


def test_parts_made_late_are_those_made_at_each_confirmation(monkeypatch,
                                                             no_solver_candidates):  # noqa: F811
    _dear_after(monkeypatch, 1)
    _untimed(monkeypatch)
    made = {True: 0, False: 0}
    real = C._differing_parts

    def counted(demand, found):
        made[C.MINIMIZE_LAZY_PARTS] += 1
        return real(demand, found)

    monkeypatch.setattr(C, "_differing_parts", counted)
    unsound, coned = _compare(monkeypatch, C, "MINIMIZE_LAZY_PARTS", _pairs(300, 10, 41))
    assert unsound >= 8 and coned >= 3, (unsound, coned)
    # (fewer made, the same steps and σ: `_compare`)
    assert made[True] < made[False], made


@pytest.mark.parametrize("costs", ["cheap", "dear", "rescaled"])
def test_lazy_parts_take_the_same_steps_to_the_same_sigma(monkeypatch, costs,
                                                          no_solver_candidates):  # noqa: F811
    if costs == "dear":
        monkeypatch.setattr(C, "MINIMIZE_CHEAP_SECONDS", -1.0)
    elif costs == "rescaled":
        _made_up_costs(monkeypatch)
    _untimed(monkeypatch)
    unsound, coned = _compare(monkeypatch, C, "MINIMIZE_LAZY_PARTS", _pairs(160, 10, 29))
    assert unsound >= 8, unsound
    assert (coned == 0) if costs == "cheap" else coned >= 3, (costs, coned)


@pytest.mark.parametrize("costs", ["cheap", "dear"])
def test_kept_cones_take_the_same_steps_to_the_same_sigma(monkeypatch, costs,
                                                          no_solver_candidates):  # noqa: F811
    if costs == "dear":
        monkeypatch.setattr(C, "MINIMIZE_CHEAP_SECONDS", -1.0)
    _untimed(monkeypatch)
    unsound, coned = _compare(monkeypatch, D, "CONES_PER_PROGRAM", _pairs(300, 10, 31))
    assert unsound >= 6, unsound
    assert (coned == 0) if costs == "cheap" else coned >= 3, (costs, coned)


def test_a_kept_cone_is_the_fresh_walk_and_never_another_programs():
    from tfsem.oracle.program import ASSIGN
    checked = grown = 0
    for i, name, p, q, (sem, obs) in _pairs(60, 10, 37):
        parts = [("output", o) for o in p.outputs] + [("variable", x) for x in p.variables]
        for prog in (p, q):
            for part in parts:
                kept = D.cone(prog, part)
                assert D.cone(prog, part) is kept        # (kept: the same object)
                fresh = frozenset(prog.ancestors(
                    {prog.outputs[part[1]].node} if part[0] == "output" else
                    {n.name for n in prog.nodes if n.op == ASSIGN and
                     prog.accessed_variable(n.name) == part[1]}))
                assert kept == fresh, (i, name, part)
                # (what the cone reads, from the kept table of readers, is
                # what the walk of its nodes finds; and for any set of nodes)
                walked = _walked_sigma_names(prog, fresh)
                assert D.sigma_names(prog, fresh) == walked, (i, name, part)
                some = frozenset(sorted(n.name for n in prog.nodes)[::2])
                assert D.sigma_names(prog, some) == _walked_sigma_names(prog, some)
                checked += 1
        # (a program made anew with an output's node given one more control
        # input: its own cone, grown; the old program's kept one unchanged)
        for out, ref_ in p.outputs.items():
            node = p.node[ref_.node]
            others = [n.name for n in p.nodes
                      if n.name not in D.cone(p, ("output", out))]
            if not others:
                continue
            before = D.cone(p, ("output", out))
            edited = _with_control_input(p, node.name, others[0])
            if edited is None:
                continue
            after = D.cone(edited, ("output", out))
            assert others[0] in after and others[0] not in before
            assert D.cone(p, ("output", out)) == before
            grown += 1
            break
    assert checked >= 100 and grown >= 5, (checked, grown)


def _with_control_input(p, name, source):
    """p made anew with a control edge from `source` into `name`, or None
    where that makes a cycle."""
    from tfsem.oracle.program import ControlIn, ProgramError
    if name in p.ancestors({source}):
        return None
    nodes = tuple(n if n.name != name else
                  n.replace(inputs=tuple(n.inputs) + (ControlIn(source),))
                  for n in p.nodes)
    try:
        return p.replace(nodes=nodes)
    except (ProgramError, TypeError):
        return None


def test_the_cases_show_the_same_with_and_without_both_shortcuts(monkeypatch):
    from pathlib import Path

    from tfsem.oracle.jsonio import load_case
    _untimed(monkeypatch)
    compared = unsound = 0
    for f in sorted((Path(__file__).parent / "cases").glob("*.json")):
        case = load_case(f)
        shown = []
        for on in (True, False):
            monkeypatch.setattr(C, "MINIMIZE_LAZY_PARTS", on)
            monkeypatch.setattr(D, "CONES_PER_PROGRAM", on)
            D._PER_PROGRAM.clear()
            sigma_memo.clear()
            canonical_memo.clear()
            v = check_rewrite(case.original, case.rewritten_json, case.semantics, case.observe,
                              timeout=20, backends=False, classify=False)
            # (where the symbolic search found σ, the solver's ladder
            # follows, whose queries stop at a time: its steps are compared
            # by the verdict alone)
            shown.append(_shown(v) if v.stats.get("path") != "symbolic" else (v.verdict,))
        # (a box of 5% of the timeout, 1 s: these cases' concrete
        # minimizations end well within it)
        assert shown[0] == shown[1], f.name
        compared += 1
        unsound += shown[0][0] == "unsound"
    assert compared >= 50 and unsound >= 10, (compared, unsound)


def _walked_sigma_names(p, names):
    """`demand.sigma_names` without what is kept per program (the walk)."""
    was = D.CONES_PER_PROGRAM
    D.CONES_PER_PROGRAM = False
    try:
        return D.sigma_names(p, names)
    finally:
        D.CONES_PER_PROGRAM = was
