"""The demand-driven test of minimization's candidate σ (checking/demand.py),
against full runs and full confirmation on generated programs.

- A part's cone program gives the part's value of a full run of a
  race-free program (every part, both semantics modes, both observe modes).
- Over every part of the outcome, the cone tests find a difference exactly
  where the full confirmation (check.py `_Checker.confirm`, one run of the
  race-free original) finds a counterexample: a cone test never accepts a σ
  the full oracle refuses.
- Checks with and without the shortcut give the same verdicts, and every
  `unsound` one shows a σ whose outcome the enumerating oracle confirms."""

from __future__ import annotations

import numpy as np

from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import demand as D
from tfsem.checking import refute as ref
from tfsem.checking.structural import race_free
from tfsem.generators.strategies import random_programs
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.rewrites import builtin_passes

SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]


def _race_free(count, seed, max_nodes):
    return [p for p in random_programs(count, seed, max_nodes=max_nodes)
            if race_free(p) and not p.has_control_flow]


def test_a_parts_cone_program_gives_the_parts_value_of_a_full_run():
    checked = smaller = 0
    for i, p in enumerate(_race_free(100, 31, 10)):
        sem, obs = SETTINGS[i % 4]
        gen = C._refute_sigmas(p, np.random.default_rng(i))
        for _ in range(2):
            feeds, init = next(gen)
            full, _ = ref.canonical_outcome(p, feeds, init, sem, obs)
            for part, value in full.parts():
                cone = D.cone_program(p, part)
                assert race_free(cone)
                assert len(cone.nodes) <= len(p.nodes)
                smaller += len(cone.nodes) < len(p.nodes)
                part_outcome, _ = ref.canonical_outcome(cone, feeds, init, sem, obs)
                assert (D.part_value(part_outcome, part),) == (value,), (i, part, sem, obs)
                checked += 1
    # (most cones leave nodes out: the test is about them)
    assert checked >= 100 and smaller >= checked // 2, (checked, smaller)


def _pairs(count, max_nodes, seed):
    passes = builtin_passes()
    for i, p in enumerate(_race_free(count, seed, max_nodes)):
        for j, (name, ps) in enumerate(passes.items()):
            q = ps.function(p)
            if q != p and D.Demand.usable(p, q, race_free(p) and race_free(q)):
                yield i, name, p, q, SETTINGS[(i + j) % 4]


def test_the_cone_tests_find_a_difference_exactly_where_full_confirmation_does():
    agreed = differ = 0
    for i, name, p, q, (sem, obs) in _pairs(60, 10, 7):
        demand = D.Demand(p, q, sem, obs)
        checker = C._Checker(p, q, sem, obs, 0.0, 10.0, False, 0, False)
        gen = C._refute_sigmas(p, np.random.default_rng(i))
        for _ in range(3):
            feeds, init = next(gen)
            o2, schedule = ref.canonical_outcome(q, feeds, init, sem, obs)
            found = checker.confirm((feeds, init), schedule, 5.0)
            parts = [part for part, _ in o2.parts()]
            by_cones = [part for part in parts if demand.confirm(feeds, init, part)]
            # (each part a cone test finds different makes σ a counterexample,
            # and a counterexample differs in some part a cone test finds)
            assert bool(by_cones) == (found is not None), (i, name, sem, obs, by_cones)
            if found is not None:
                assert by_cones == D.differing_parts(found.outcome, list(found.original))
                differ += 1
            else:
                agreed += 1
    assert differ >= 10 and agreed >= 10, (differ, agreed)


def confirmed_by_the_oracle(p, q, cx, sem, obs, where):
    """The σ shown is confirmed by the full oracle: the schedule shown, run
    on the rewrite `q`, gives the outcome shown, which is none of the
    enumerated original's (returned); `where` names the case on failure."""
    state = run_schedule(q, cx.feeds, cx.init, cx.schedule, sem)
    assert outcome_of(q, graph_of(q), state, obs) == cx.outcome, where
    full = outcome_set(p, cx.feeds, cx.init, sem, obs, max_seconds=5)
    assert cx.outcome not in full, where
    return full


def test_checks_with_and_without_the_cone_test_give_the_same_verdicts(monkeypatch):
    # (cone tests run where a full confirmation is dear: here, everywhere)
    monkeypatch.setattr(C, "MINIMIZE_CHEAP_SECONDS", -1.0)
    unsound = tested = 0
    for i, name, p, q, (sem, obs) in _pairs(90, 10, 17):
        verdicts = []
        for on in (True, False):
            monkeypatch.setattr(C, "DEMAND_CONFIRM", on)
            v = check_rewrite(p, q, sem, obs, timeout=5, structural=False, backends=False,
                              classify=False)
            verdicts.append(v)
            if v.verdict != "unsound":
                continue
            cx = v.counterexample
            full = confirmed_by_the_oracle(p, q, cx, sem, obs, (i, name))
            assert list(full) == [o for o, _ in cx.original_outcomes]
            assert "final" not in v.stats.get("minimization", {}), v.stats
            if on:
                unsound += 1
                tested += v.stats.get("minimization", {}).get("cone_tests", 0) > 0
        assert verdicts[0].verdict == verdicts[1].verdict, (i, name, sem, obs)
    assert unsound >= 5 and tested >= 3, (unsound, tested)
