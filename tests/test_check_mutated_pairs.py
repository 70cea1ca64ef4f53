"""`check_rewrite`'s verdicts held to the concrete truth on mutated pairs.

For generated programs P and rewrites P' (every built-in pass, and random
mutations: a control edge dropped or added, an Assign's function replaced, a
binary function replaced, a node no one uses dropped, a node's control inputs
dropped, the edits of tests/test_structural.py), in a cell drawn at random:

* a `sound` verdict is wrong (a FALSE SOUND) when at some σ P' has an outcome
  that P lacks; σ are drawn by the generators' input strategy (edge values,
  uninitialized variables) and the sets are the reference engine's, which
  tests/test_oracle_engine_shortcuts.py and tests/test_oracle_properties.py hold to the
  brute force;
* an `unsound` verdict is wrong (a FALSE UNSOUND) when its counterexample does
  not reproduce: P' run on its schedule by the step semantics must give the
  outcome it names, and P's complete outcome set at its σ (the brute force)
  must lack it.

The default run tries a few dozen pairs; the `nightly` Hypothesis profile
(TFSEM_HYPOTHESIS_PROFILE=nightly) twenty times as many.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import settings

from tfsem.checking import check_rewrite
from tfsem.generators.strategies import random_inputs, random_programs
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.program import ControlIn, DataIn
from tfsem.oracle.semantics import graph_of, outcome_of, reference_outcomes, run_schedule
from tfsem.rewrites import builtin_passes

CELLS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs", "outputs+state")]
ASSIGNABLE = ["Add", "Sub", "Mul", "Snd", "Max", "Min"]
BINARY = ["Add", "Sub", "Mul", "Max", "Min"]


def _scale() -> int:
    return 20 if settings.get_current_profile_name() == "nightly" else 1


def _mutants(p, rng: random.Random):
    nodes = list(p.nodes)
    out = []

    def attempt(new_nodes):
        try:
            out.append(p.replace(nodes=tuple(new_nodes)).validated())
        except Exception:  # noqa: BLE001 - an edit that makes no valid program is skipped
            pass

    assigns = [n for n in nodes if n.op == "Assign"]
    if assigns:
        a = rng.choice(assigns)
        f = rng.choice([x for x in ASSIGNABLE if x != a.fn])
        attempt([m.replace(attrs={**dict(m.attrs), "fn": f}) if m is a else m for m in nodes])
    binary = [n for n in nodes if n.op in BINARY]
    if binary:
        b = rng.choice(binary)
        attempt([m.replace(op=rng.choice([x for x in BINARY if x != b.op])) if m is b else m
                 for m in nodes])
    used = {i.node for n in nodes for i in n.inputs if isinstance(i, (DataIn, ControlIn))}
    used |= {o.node for o in p.outputs.values()}
    unused = [n for n in nodes if n.name not in used]
    if unused:
        d = rng.choice(unused)
        attempt([m for m in nodes if m is not d])
    controlled = [n for n in nodes if any(isinstance(i, ControlIn) for i in n.inputs)]
    if controlled:
        c = rng.choice(controlled)
        attempt([m.replace(inputs=tuple(i for i in m.inputs if not isinstance(i, ControlIn)))
                 if m is c else m for m in nodes])
    if len(nodes) >= 2:
        u, v = rng.sample([n.name for n in nodes], 2)
        attempt([m.replace(inputs=m.inputs + (ControlIn(u),)) if m.name == v else m for m in nodes])
    return out


def _pairs(count: int, seed: int):
    rng = random.Random(seed)
    passes = builtin_passes()
    programs = random_programs(count, seed, max_nodes=8) \
        + random_programs(count // 2, seed, max_nodes=8, dtype="float32")
    for k, p in enumerate(programs):
        for name, ps in sorted(passes.items()):
            try:
                q = ps(p)
            except Exception:  # noqa: BLE001 - a pass that declines this program
                continue
            if q != p:
                yield k, p, q, rng.choice(CELLS)
        for q in _mutants(p, rng):
            yield k, p, q, rng.choice(CELLS)


def _wrong(k, p, q, semantics, observe, seen: dict) -> str | None:
    v = check_rewrite(p, q, semantics, observe, timeout=2.0, seed=k, backends=False)
    seen[v.verdict] = seen.get(v.verdict, 0) + 1
    if v.verdict == "sound":
        for j in range(3):
            feeds, init = random_inputs(p, k * 10 + j, uninitialized_p=0.3 if j else 0.1,
                                        edge_p=0.3)
            try:
                a = set(outcome_set(p, feeds, init, semantics, observe, engine="reference",
                                    max_states=50_000, max_seconds=5))
                b = set(outcome_set(q, feeds, init, semantics, observe, engine="reference",
                                    max_states=50_000, max_seconds=5))
            except BudgetExceeded:
                continue
            except Exception:  # noqa: BLE001 - an op with no concrete model: no truth here
                continue
            if not b <= a:
                return f"FALSE SOUND at {feeds} {init}: {v.reason}"
    elif v.verdict == "unsound":
        cx = v.counterexample
        if cx is None:
            return "unsound without a counterexample"
        state = run_schedule(q, cx.feeds, cx.init, cx.schedule, semantics)
        if outcome_of(q, graph_of(q), state, observe) != cx.outcome:
            return "the counterexample's schedule does not give its outcome"
        try:
            original = set(reference_outcomes(p, cx.feeds, cx.init, semantics, observe,
                                              max_states=100_000))
        except BudgetExceeded:
            return None
        if cx.outcome in original:
            return "FALSE UNSOUND: the original has the counterexample's outcome"
    return None


@pytest.mark.parametrize("seed", [3, 17])
def test_verdicts_agree_with_the_concrete_truth(seed):
    wrong, seen = [], {}
    for k, p, q, (semantics, observe) in _pairs(6 * _scale(), seed):
        problem = _wrong(k, p, q, semantics, observe, seen)
        if problem:
            wrong.append((problem, semantics, observe, p, q))
    # both kinds of verdict were put to the test
    assert seen.get("sound", 0) >= 5 and seen.get("unsound", 0) >= 3, seen
    assert not wrong, wrong[:3]


# ---------------------------------------------------------------------------
# The refutation stage's two searches (checking/refute.py) on generated
# programs: `unreached` without projections returns exactly the candidates
# that are not outcomes of P (the candidates: P's outcomes and its mutants'),
# with projections a non-empty subset of them when there are any; and
# `part_values` of one part is the projection of P's outcome set onto it.


@pytest.mark.parametrize("seed", [77])
def test_refutation_searches_agree_with_the_outcome_set(seed):
    import sys
    from pathlib import Path

    from tfsem.checking import refute as ref
    from tfsem.oracle.explore import Budget, components

    sys.path.insert(0, str(Path(__file__).parent))
    from test_structural import mutations

    rng = random.Random(seed)
    nonempty = compared = 0
    for k, p in enumerate(random_programs(12 * _scale(), seed, max_nodes=8)):
        semantics, observe = CELLS[k % 4]
        feeds, init = random_inputs(p, seed * 1000 + k, uninitialized_p=0.2, edge_p=0.3)
        try:
            outcomes = set(outcome_set(p, feeds, init, semantics, observe, engine="reference",
                                       max_states=20_000, max_seconds=5))
            candidates = set(outcomes)
            for q in mutations(p, rng):
                if q.outputs.keys() == p.outputs.keys() and q.variables.keys() == p.variables.keys():
                    candidates |= set(outcome_set(q, feeds, init, semantics, observe,
                                                  engine="reference", max_states=20_000,
                                                  max_seconds=5))
        except BudgetExceeded:
            continue
        candidates = list(candidates)
        truth = {o for o in candidates if o not in outcomes}
        exact = {o for o, _ in ref.unreached(p, feeds, init, semantics, observe, candidates,
                                             Budget(10**6, 10), projections=False)}
        projected = {o for o, _ in ref.unreached(p, feeds, init, semantics, observe, candidates,
                                                 Budget(10**6, 10), projections=True)}
        assert exact == truth, k
        assert projected <= truth and bool(projected) == bool(truth), k
        nonempty += bool(truth)
        for _names, variables, outputs in components(p):
            parts = [("output", o) for o in outputs]
            parts += [("variable", x) for x in variables] if observe != "outputs" else []
            for part in parts[:2]:
                values = set(ref.part_values(p, feeds, init, semantics, (part,), Budget(10**6, 10)))
                assert values == {(ref.part_of(o, part),) for o in outcomes}, (k, part)
                compared += 1
    assert nonempty >= 2 and compared >= 5, (nonempty, compared)
