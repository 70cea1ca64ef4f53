"""A race-free rewrite's outcome at σ by its canonical run (checking/check.py
`_Checker._confirm`'s `run`, in minimization's confirmations;
`RACE_FREE_REWRITTEN_RUN`) instead of a replay of the schedule given,
against that replay and against the enumerating oracle.

- At generated σ, the canonical run's outcome is the replay's, and the
  schedule it shows replays to that outcome.
- Checks with and without it give the same verdicts, and every `unsound`
  one's schedule replays to the outcome shown, which the enumerated
  original does not have.
- A racy rewrite is replayed along the schedule given, as before."""

from __future__ import annotations

import numpy as np

from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import refute as ref
from tfsem.checking.structural import race_free
from tfsem.generators.strategies import random_programs
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.rewrites import builtin_passes

from test_check_demand_confirm import confirmed_by_the_oracle
from test_check_race_free_confirm import ORDERED, RACY

SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]


def _pairs(count, max_nodes, seed):
    passes = builtin_passes()
    for i, p in enumerate(random_programs(count, seed, max_nodes=max_nodes)):
        if p.has_control_flow:
            continue
        for j, (name, ps) in enumerate(passes.items()):
            q = ps.function(p)
            if q != p and race_free(q):
                yield i, name, p, q, SETTINGS[(i + j) % 4]


def _replayed(q, feeds, init, schedule, sem, obs):
    return outcome_of(q, graph_of(q), run_schedule(q, feeds, init, schedule, sem), obs)


def test_the_canonical_run_gives_the_replays_outcome_and_a_schedule_that_replays(monkeypatch):
    compared = found = 0
    for i, name, p, q, (sem, obs) in _pairs(60, 10, 23):
        gen = C._refute_sigmas(p, np.random.default_rng(i))
        first = next(gen)
        _, schedule = ref.canonical_outcome(q, *first, sem, obs)
        # (a run of q other than its canonical one where q allows it: the
        # latest steps in canonical order first)
        schedule = _a_run(q, list(reversed(C.mini.canonical_order(q, schedule))), sem, *first)
        assert sorted(schedule) == sorted(C.mini.canonical_order(q, schedule))
        for _ in range(3):
            feeds, init = next(gen)
            answers = []
            for on in (True, False):
                monkeypatch.setattr(C, "RACE_FREE_REWRITTEN_RUN", on)
                checker = C._Checker(p, q, sem, obs, 0.0, 10.0, False, 0, False)
                answers.append(checker._confirm(feeds, init, list(schedule), 5.0, run=True))
            fast, slow = answers
            assert (fast is None) == (slow is None), (i, name, sem, obs)
            if fast is not None:
                assert fast.outcome == slow.outcome
                assert _replayed(q, feeds, init, fast.schedule, sem, obs) == fast.outcome
                found += 1
            compared += 1
    assert compared >= 60 and found >= 5, (compared, found)


def complete_run(q, sem, feeds, init, choose):
    """A complete run of q on the reference stepper, `choose` picking each
    step among the enabled ones (a list)."""
    from tfsem.oracle.semantics import enabled, fire, initial_state
    g = graph_of(q)
    s = initial_state(q, g, feeds, init)
    run = []
    while True:
        steps = enabled(q, g, s, sem)
        if not steps:
            return run
        step = choose(steps)
        run.append(step)
        s = fire(q, g, s, step)


def _a_run(q, preferred, sem, feeds, init):
    """A complete run of q firing, among the enabled steps, the first in
    `preferred` (a run other than the canonical one where q allows it)."""
    rank = {label: k for k, label in enumerate(preferred)}
    return complete_run(q, sem, feeds, init,
                        lambda steps: min(steps, key=lambda x: rank.get(x, len(rank))))


def test_checks_with_and_without_it_give_the_same_verdicts(monkeypatch):
    unsound = 0
    for i, name, p, q, (sem, obs) in _pairs(90, 10, 29):
        verdicts = []
        for on in (True, False):
            monkeypatch.setattr(C, "RACE_FREE_REWRITTEN_RUN", on)
            v = check_rewrite(p, q, sem, obs, timeout=5, structural=False, backends=False,
                              classify=False)
            verdicts.append(v.verdict)
            if v.verdict != "unsound":
                continue
            cx = v.counterexample
            confirmed_by_the_oracle(p, q, cx, sem, obs, (i, name))
            unsound += on
        assert verdicts[0] == verdicts[1], (i, name, sem, obs)
    assert unsound >= 5, unsound


def test_a_racy_rewrite_is_replayed_along_the_schedule_given(monkeypatch):
    assert not race_free(RACY) and race_free(ORDERED)
    ran = []
    real = ref.canonical_outcome

    def counted(q, *a, **k):
        ran.append(q)
        return real(q, *a, **k)

    monkeypatch.setattr(C.ref, "canonical_outcome", counted)
    for schedule in (["v", "one", "two", "a1", "a2", "r"], ["v", "one", "two", "a2", "a1", "r"]):
        checker = C._Checker(ORDERED, RACY, "atomic", "outputs+state", 0.0, 10.0, False, 0, False)
        found = checker._confirm({}, {"x": C.Tensor(np.zeros(2, np.float32), "float32")},
                                 schedule, 5.0, run=True)
        assert RACY not in ran
        # (a1 last: x = 1, the original's outcome; a2 last: x = 2, none of its)
        assert (found is not None) == (schedule[4] == "a2"), schedule
        if found is not None:
            assert found.schedule == schedule
