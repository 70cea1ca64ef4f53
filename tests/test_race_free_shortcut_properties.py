"""The race-free shortcut's confirmation against the enumeration, on
generated programs and rewrites (Hypothesis; docs/review-race-free-shortcut.md).

What a confirmation decides is whether the rewrite's outcome o' at σ is in
Outcomes(P, σ).  With the shortcut (checking/check.py `original_outcomes`)
that set is one run of P where `race_free(P)`; here it is compared with
every engine's enumeration, and o' ranges over the outcomes of random runs
of a random rewrite of P (a built-in pass, or a control edge dropped), so
that both answers of the membership test are exercised.  Generated over
every dtype the generator draws, with edge values, uninitialized
variables, both semantics modes and both observe settings.  The default
profile runs 60 programs (about 2 s); the nightly one 20 times as many."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.checking import check as C
from tfsem.checking import refute as ref
from tfsem.checking.structural import race_free
from tfsem.generators.strategies import inputs_for, programs
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.program import ControlIn
from tfsem.oracle.readsfrom import Unsupported
from tfsem.rewrites import builtin_passes

NIGHTLY = settings.get_current_profile_name() == "nightly"
SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]
DTYPES = ("int64", "float32", "float16", "bfloat16", "int32", "uint8", "bool")
PASSES = builtin_passes()


def _rewrite(p, choice: int):
    """A pass's rewrite of p, or p with one control edge dropped (it often
    gains an outcome), or p itself."""
    names = sorted(PASSES)
    if choice < len(names):
        try:
            return PASSES[names[choice]].function(p)
        except Exception:
            return p
    edges = [(n.name, i) for n in p.nodes for i in n.inputs if isinstance(i, ControlIn)]
    if not edges:
        return p
    name, edge = edges[choice % len(edges)]
    nodes = tuple(n if n.name != name else n.replace(inputs=tuple(i for i in n.inputs if i != edge))
                  for n in p.nodes)
    try:
        return p.replace(nodes=nodes).validated()
    except Exception:
        return p


@st.composite
def cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    p = draw(programs(max_nodes=12, dtype=dtype))
    sigma = draw(inputs_for(p, uninitialized_p=0.3, edge_p=0.4))
    setting = draw(st.sampled_from(SETTINGS))
    choice = draw(st.integers(0, len(PASSES) + 3))
    seed = draw(st.integers(0, 2**16))
    return p, sigma, setting, choice, seed


@settings(max_examples=1200 if NIGHTLY else 60, deadline=None,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(cases())
def test_the_one_run_set_decides_membership_as_the_enumeration_does(case):
    p, (feeds, init), (sem, obs), choice, seed = case
    free = race_free(p)
    checker = C._Checker(p, p, sem, obs, 0.0, 10.0, False, 0, False)
    mine = checker.original_outcomes(feeds, init, 5.0)
    assert ("race_free_confirmations" in checker.stats) == free
    for engine in ("reference", "auto") + (("readsfrom", "symmetry") if NIGHTLY else ()):
        try:
            full = outcome_set(p, feeds, init, sem, obs, max_seconds=5, engine=engine)
        except Unsupported:
            continue
        if free:
            assert full.count == 1 and list(mine)[0] in full, engine
        q = _rewrite(p, choice)
        if q.variables != p.variables or set(q.outputs) != set(p.outputs) or \
                not set(q.feed_names) <= set(p.feed_names):
            continue
        runs = ref.sample_outcomes(q, feeds, init, sem, obs, np.random.default_rng(seed), 4, None)
        for o in runs:
            assert (o in mine) == (o in full), (engine, free)


@st.composite
def pairs(draw):
    dtype = draw(st.sampled_from(("float32", "int64")))
    p = draw(programs(max_nodes=12, dtype=dtype).filter(
        lambda p: race_free(p) and any(n.op == "Assign" for n in p.nodes)))
    q = _rewrite(p, draw(st.integers(0, len(PASSES) + 3)))
    return p, q, draw(st.sampled_from(SETTINGS)), draw(st.booleans())


@settings(max_examples=240 if NIGHTLY else 6, deadline=None,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(pairs())
def test_checks_of_race_free_originals_agree_with_the_enumerating_checker(case):
    """`check_rewrite` with the shortcut (the probe forced on where
    `kernels`, as where TensorFlow's kernels are needed) and without it:
    decided verdicts agree, and an `unsound` one's counterexample is
    outside the enumerated Outcomes(P, σ)."""
    from tfsem.checking import check_rewrite
    from test_check_one_outcome import as_if_kernels
    p, q, (sem, obs), kernels = case
    if q == p or q.variables != p.variables or set(q.outputs) != set(p.outputs) or \
            not set(q.feed_names) <= set(p.feed_names):
        return
    verdicts = []
    for on in (True, False):
        with pytest.MonkeyPatch.context() as mp, as_if_kernels(kernels):
            mp.setattr(C, "REFUTE_FIRST_MIN_ACCESSES", 0)
            mp.setattr(C, "RACE_FREE_CONFIRM", on)
            mp.setattr(C, "PROBE_PLAIN", on)
            verdicts.append(check_rewrite(p, q, sem, obs, timeout=10, structural=False,
                                          backends=False, classify=False))
    v, w = verdicts
    if {v.verdict, w.verdict} <= {"sound", "unsound"}:
        assert v.verdict == w.verdict, (v.reason, w.reason)
    if v.verdict == "unsound":
        cx = v.counterexample
        full = outcome_set(p, cx.feeds, cx.init, sem, obs, max_seconds=10)
        assert cx.outcome not in full
