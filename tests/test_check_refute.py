"""The refutation stage (checking/refute.py): its searches against the concrete
oracle's enumeration on generated programs, and its verdicts through the
checker (confirmed counterexamples only, never a proof)."""

from __future__ import annotations

import time

import numpy as np
from tfsem.checking import check as check_module
from tfsem.checking import check_rewrite
from tfsem.checking import refute as ref
from tfsem.generators.strategies import random_programs
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import Budget, BudgetExceeded, components
from tfsem.oracle.outcomes import Outcome
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import Tensor, value_from_json, value_to_json
from tfsem.rewrites import builtin_passes

SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]


def _sigmas(p, k, seed=0):
    gen = check_module._refute_sigmas(p, np.random.default_rng(seed))
    return [next(gen) for _ in range(k)]


def _mutants(outcomes: list[Outcome], rng) -> list[Outcome]:
    """Outcomes made by taking one part's value from another outcome: some are
    outcomes, many are not (the parts of an outcome are correlated)."""
    out = []
    for _ in range(min(20, 3 * len(outcomes))):
        a, b = (outcomes[i] for i in rng.integers(len(outcomes), size=2))
        parts = [("o", i) for i in range(len(a.outputs))] + \
            [("s", i) for i in range(len(a.state or ()))]
        if not parts:
            continue
        kind, i = parts[int(rng.integers(len(parts)))]
        fresh = rng.random() < 0.3     # a value moved by one, else another outcome's

        def moved(kv):
            k, v = kv
            if isinstance(v, Tensor):
                return k, Tensor((v.array + 1).astype(v.array.dtype), v.dtype)
            return kv

        if kind == "o":
            outs = list(a.outputs)
            outs[i] = moved(a.outputs[i]) if fresh else b.outputs[i]
            out.append(Outcome(tuple(outs), a.state))
        else:
            st = list(a.state)
            st[i] = moved(a.state[i]) if fresh else b.state[i]
            out.append(Outcome(a.outputs, tuple(st)))
    return out


def _pairs(count, max_nodes, seed):
    passes = builtin_passes()
    for i, p in enumerate(random_programs(count, seed, max_nodes=max_nodes)):
        for j, (name, ps) in enumerate(passes.items()):
            q = ps.function(p)
            if q != p:
                yield i, name, p, q, SETTINGS[(i + j) % 4]


def test_unreached_is_exact_against_the_oracle():
    """unreached(), with and without projections, on candidates made of the
    original's own outcomes, the rewritten programs' sampled outcomes and
    mutants of both: exactly the candidates not in Outcomes(P, σ) without
    projections; with them a non-empty subset of those (and each one's part,
    when named, takes a value no outcome of P has there)."""
    rng = np.random.default_rng(7)
    checked = missing_seen = 0
    for i, name, p, q, (sem, obs) in _pairs(40, 16, 3):
        for feeds, init in _sigmas(p, 1, seed=i):
            try:
                full = outcome_set(p, feeds, init, sem, obs, max_seconds=5)
            except BudgetExceeded:
                continue
            mine = list(full)[:30]
            theirs = list(ref.sample_outcomes(q, feeds, init, sem, obs, rng, 16,
                                              time.monotonic() + 1))
            cands = list(dict.fromkeys(mine + theirs + _mutants(mine + theirs, rng)))
            truth = {c for c in cands if c not in full}
            exact = ref.unreached(p, feeds, init, sem, obs, cands, Budget(10**6, 30),
                                  projections=False)
            assert {c for c, _ in exact} == truth, (i, name, sem, obs)
            assert all(part is None for _, part in exact)
            proj = ref.unreached(p, feeds, init, sem, obs, cands, Budget(10**6, 30))
            assert {c for c, _ in proj} <= truth
            assert bool(proj) == bool(truth)
            partial = ref.unreached(p, feeds, init, sem, obs, cands, Budget(10**6, 30),
                                    joint=False)
            assert {c for c, _ in partial} <= truth
            for c, parts in proj:
                if parts is not None:
                    values = {tuple(ref.part_of(o, part) for part in parts) for o in full}
                    assert tuple(ref.part_of(c, part) for part in parts) not in values
            checked += 1
            missing_seen += bool(truth)
    assert checked >= 200 and missing_seen >= 50


def test_part_values_is_the_projection_of_the_outcome_set():
    for i, _name, p, _q, (sem, obs) in _pairs(12, 14, 5):
        if _name != "cse":
            continue
        for feeds, init in _sigmas(p, 1, seed=i):
            full = outcome_set(p, feeds, init, sem, obs, max_seconds=5)
            parts = [("output", k) for k in p.outputs]
            if obs != "outputs":
                parts += [("variable", x) for x in p.variables]
            g = graph_of(p)
            comp_of = {}
            for k, (_names, variables, outputs) in enumerate(components(p)):
                comp_of.update({("output", o): k for o in outputs})
                comp_of.update({("variable", x): k for x in variables})
            groups = [(a,) for a in parts] + [(a, b) for a in parts for b in parts
                                              if a < b and comp_of[a] == comp_of[b]]
            for group in groups:
                values = ref.part_values(p, feeds, init, sem, group, Budget(10**6, 10))
                assert set(values) == {tuple(ref.part_of(o, part) for part in group)
                                       for o in full}
                for value, witness in values.items():
                    state = run_schedule(p, feeds, init, witness, sem)
                    o = outcome_of(p, g, state, "outputs+state")
                    assert tuple(ref.part_of(o, part) for part in group) == value


def test_sampled_runs_are_runs_of_the_program():
    rng = np.random.default_rng(1)
    for i, _name, _p, q, (sem, obs) in _pairs(10, 16, 9):
        feeds, init = _sigmas(q, 1, seed=i)[0]
        sampled = ref.sample_outcomes(q, feeds, init, sem, obs, rng, 8, time.monotonic() + 1)
        assert sampled
        g = graph_of(q)
        for o, schedule in sampled.items():
            state = run_schedule(q, feeds, init, schedule, sem)
            assert outcome_of(q, g, state, obs) == o


def test_unchanged_components_are_those_the_rewrite_left_alone():
    for _i, _name, p, q, _cell in _pairs(10, 16, 2):
        same = ref.unchanged_components(p, q)
        assert ref.unchanged_components(p, p) == frozenset(
            (frozenset(names), tuple(v)) for names, v, _o in components(p))
        for names, _v in same:
            assert all(p.node[n] == q.node[n] for n in names)
            # no node of q outside the component touches it
            assert not any(n.name not in names and set(q.predecessors(n.name)) & names
                           for n in q.nodes)


def _check_counterexample(p, q, v):
    """A verdict's counterexample, re-checked with the reference semantics and
    the concrete oracle's full enumeration (no code of the refutation stage)."""
    j = v.to_json()
    cex = j["counterexample"]
    feeds = {k: value_from_json(x, dtype=p.feed_type(k).dtype) for k, x in cex["feeds"].items()}
    init = {k: value_from_json(x, dtype=p.variables[k].dtype) for k, x in cex["init"].items()}
    sem, obs = j["semantics"], j["observe"]
    state = run_schedule(q, feeds, init, cex["schedule"], sem)
    outcome = outcome_of(q, graph_of(q), state, obs)
    assert outcome.to_json() == cex["outcome"]
    assert outcome not in outcome_set(p, feeds, init, sem, obs, max_seconds=120)


def test_refuted_verdicts_agree_with_the_enumerating_checker(monkeypatch):
    """The stage forced first on every check of generated 24-node pairs:
    every `unsound` it gives is a real counterexample, and the checker with
    the stage off never proves such a rewrite `sound`; where the stage finds
    nothing the verdict is the previous engine's."""
    monkeypatch.setattr(check_module, "REFUTE_FIRST_MIN_ACCESSES", 0)
    refuted = 0
    for i, name, p, q, (sem, obs) in _pairs(12, 24, 11):
        v = check_rewrite(p, q, sem, obs, timeout=10, structural=False, backends=False)
        if v.stats.get("refute", {}).get("found"):
            refuted += 1
            assert v.verdict == "unsound"
            _check_counterexample(p, q, v)
            monkeypatch.setattr(check_module, "REFUTE", False)
            w = check_rewrite(p, q, sem, obs, timeout=10, structural=False, backends=False)
            monkeypatch.setattr(check_module, "REFUTE", True)
            assert w.verdict != "sound", (i, name, sem, obs)
    assert refuted >= 5


def test_projected_counterexample_when_the_full_set_is_too_large(monkeypatch):
    """When P's full outcome set at σ cannot be enumerated (simulated: the
    confirmation's enumeration runs out), the verdict lists the values the
    differing part takes over P's runs, each with a schedule of P, and the
    rewritten value is none of them (re-checked here by full enumeration)."""
    monkeypatch.setattr(check_module, "REFUTE_FIRST_MIN_ACCESSES", 0)
    real = check_module.outcome_set

    def too_large(*a, **kw):
        raise BudgetExceeded("seconds", 0.0, 0)

    monkeypatch.setattr(check_module, "outcome_set", too_large)
    # (a race-free original's one outcome is one run, never too large:
    # the enumeration is what is simulated to run out here)
    monkeypatch.setattr(check_module, "RACE_FREE_CONFIRM", False)
    done = 0
    for i, name, p, q, (sem, obs) in _pairs(12, 24, 11):
        if name != "prune":       # (the pass whose differences are in one part here)
            continue
        v = check_rewrite(p, q, sem, obs, timeout=1.5, structural=False, backends=False)
        if v.verdict != "unsound":
            continue
        assert v.stats["refute"]["found"] and v.stats.get("original_projected")
        j = v.to_json()
        cex = j["counterexample"]
        first = cex["original_outcomes"][0]
        parts = [("output", k) for k in first["outputs"]] + \
            [("variable", x) for x in first.get("state", {})]
        assert 1 <= len(parts) <= 2 and tuple(v.differs.items())[0] in parts
        feeds = {k: value_from_json(x, dtype=p.feed_type(k).dtype) for k, x in cex["feeds"].items()}
        init = {k: value_from_json(x, dtype=p.variables[k].dtype) for k, x in cex["init"].items()}
        full = real(p, feeds, init, sem, obs, max_seconds=120)
        values = {tuple(ref.part_of(o, part) for part in parts) for o in full}
        assert cex["original_count"] == len(values) == len(cex["original_outcomes"])
        state = run_schedule(q, feeds, init, cex["schedule"], sem)
        outcome = outcome_of(q, graph_of(q), state, obs)
        assert outcome.to_json() == cex["outcome"]
        assert tuple(ref.part_of(outcome, part) for part in parts) not in values
        for listed in cex["original_outcomes"]:
            st = run_schedule(p, feeds, init, listed["schedule"], sem)
            o = outcome_of(p, graph_of(p), st, "outputs+state")
            for kind, n in parts:
                table = listed["outputs"] if kind == "output" else listed["state"]
                assert value_to_json(ref.part_of(o, (kind, n))) == table[n]
        assert "projections onto" in v.reason
        done += 1
        if done >= 2:
            break
    assert done >= 2


def test_the_stage_never_claims_sound(monkeypatch):
    # a sound rewrite the structural rule is off for: the verdict comes from
    # the symbolic proof, after the stage found nothing
    monkeypatch.setattr(check_module, "REFUTE_FIRST_MIN_ACCESSES", 0)
    for i, name, p, q, (sem, obs) in _pairs(6, 16, 4):
        if name not in ("cse", "dce"):
            continue
        v = check_rewrite(p, q, sem, obs, timeout=10, structural=False, backends=False)
        assert v.verdict == "sound"
        assert not v.stats.get("refute", {}).get("found")
        assert v.stats["refute"]["sigmas"] >= 1


def test_a_failure_of_the_stage_is_no_verdict(monkeypatch):
    # the stage crashing is noted, and the symbolic path decides as before
    monkeypatch.setattr(check_module, "REFUTE_FIRST_MIN_ACCESSES", 0)

    def broken(*a, **kw):
        raise KeyError("boom")

    monkeypatch.setattr(ref, "sample_outcomes", broken)
    seen = set()
    for i, name, p, q, (sem, obs) in _pairs(6, 16, 4):
        v = check_rewrite(p, q, sem, obs, timeout=10, structural=False, backends=False)
        monkeypatch.setattr(check_module, "REFUTE", False)
        w = check_rewrite(p, q, sem, obs, timeout=10, structural=False, backends=False)
        monkeypatch.setattr(check_module, "REFUTE", True)
        assert v.verdict == w.verdict
        assert "KeyError" in v.stats["refute"]["error"]
        seen.add(v.verdict)
    assert {"sound", "unsound"} <= seen
