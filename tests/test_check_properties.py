"""Property tests of the checker on generated programs (issue 5 item 8).

* The symbolic verdict agrees with the concrete oracle at generated σ: it is
  never `sound` where some σ shows the rewrite an outcome the original lacks,
  every `unsound` verdict's counterexample reproduces, and no solver candidate
  fails concrete confirmation (generated programs use only encoded functions,
  so an unconfirmed candidate would be an encoding bug).
* For each built-in pass, on generated programs, no verdict contradicts the
  pass's claims: where it claims `sound`, the verdict is never `unsound`.

Rewrites come from the built-in passes and from small mutations (drop a
control edge, swap two arguments, change a function or a constant), which
are unsound often enough to exercise counterexamples.  Default runs are
small; the `nightly` Hypothesis profile runs 20 times more examples.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tfsem.checking import check as check_module
from tfsem.checking import check_rewrite
from tfsem.checking.symbolic import has_encoding
from tfsem.oracle import functions as fns
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.program import ControlIn, FeedControlIn, Program, ProgramError, validate
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import Tensor, value_from_json

strategies = pytest.importorskip("tfsem.generators.strategies")
rewrites = pytest.importorskip("tfsem.rewrites")

SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]
BINARY = ("Add", "Sub", "Mul", "Max", "Min")
TIMEOUT = 10.0


def examples(n: int) -> int:
    return n * 20 if settings.get_current_profile_name() == "nightly" else n


def concrete_difference(p: Program, q: Program, feeds, init, semantics, observe) -> bool:
    """Whether q has an outcome at σ that p lacks (assume() away budgets)."""
    try:
        mine = outcome_set(p, feeds, init, semantics, observe, max_states=20_000, max_seconds=5)
        theirs = outcome_set(q, feeds, init, semantics, observe, max_states=20_000, max_seconds=5)
    except BudgetExceeded:
        assume(False)
    return any(o not in mine for o in theirs)


def assert_reproduces(p: Program, q: Program, verdict) -> None:
    data = verdict.to_json()
    cex = data["counterexample"]
    feeds = {k: value_from_json(v, dtype=p.feed_type(k).dtype) for k, v in cex["feeds"].items()}
    init = {k: value_from_json(v, dtype=p.variables[k].dtype) for k, v in cex["init"].items()}
    state = run_schedule(q, feeds, init, cex["schedule"], data["semantics"])
    outcome = outcome_of(q, graph_of(q), state, data["observe"])
    assert outcome not in outcome_set(p, feeds, init, data["semantics"], data["observe"])


def all_encoded(p: Program) -> bool:
    """Whether every function of p has an exact encoding (a user's function
    registered elsewhere may appear in generated programs)."""
    return all(has_encoding(fns.get(n.op)) for n in p.nodes if fns.lookup(n.op) is not None)


def check_against_oracle(p: Program, q: Program, sigmas, semantics: str, observe: str):
    verdict = check_rewrite(p, q, semantics, observe, timeout=TIMEOUT)
    assert verdict.verdict != "invalid", verdict.reason
    assert "internal_error" not in verdict.stats, verdict.stats["internal_error"]
    if all_encoded(p) and all_encoded(q):
        assert verdict.stats.get("unconfirmed", 0) == 0, verdict.describe()
    differs = [s for s in sigmas if concrete_difference(p, q, *s, semantics, observe)]
    if differs:
        assert verdict.verdict != "sound", (f"sound, but σ={differs[0]} shows a difference\n"
                                            f"{verdict.describe()}")
    if verdict.verdict == "unsound":
        assert_reproduces(p, q, verdict)
    return verdict


# ---------------------------------------------------------------------------
# Mutations: small edits that keep a program valid and its interface


@st.composite
def mutated(draw, p: Program) -> Program:
    nodes = list(p.nodes)
    choices = []
    for i, n in enumerate(nodes):
        if n.control_inputs:
            choices.append(("drop-control", i))
        if n.op in BINARY:
            choices += [("swap", i), ("change-op", i)]
        if n.op == "Const":
            choices.append(("change-const", i))
    assume(choices)
    kind, i = draw(st.sampled_from(choices))
    n = nodes[i]
    if kind == "drop-control":
        ctrl = [c for c in n.inputs if isinstance(c, (ControlIn, FeedControlIn))]
        gone = draw(st.sampled_from(ctrl))
        nodes[i] = n.replace(inputs=tuple(c for c in n.inputs if c != gone))
    elif kind == "swap":
        data, ctrl = n.inputs[:2], n.inputs[2:]
        nodes[i] = n.replace(inputs=(data[1], data[0], *ctrl))
    elif kind == "change-op":
        nodes[i] = n.replace(op=draw(st.sampled_from([b for b in BINARY if b != n.op])))
    else:
        value = n.attrs["value"]
        delta = draw(st.sampled_from([1, -1, 2]))
        nodes[i] = n.replace(attrs={"value": Tensor((value.array + delta).astype(value.array.dtype))})
    q = p.replace(nodes=tuple(nodes))
    assume(not validate(q))
    return q


def programs_and_inputs(max_nodes: int = 9):
    return strategies.programs(max_nodes=max_nodes).flatmap(
        lambda p: st.tuples(st.just(p), st.lists(strategies.inputs_for(p), min_size=2, max_size=3)))


#: 75 examples by default (~4 s), the nightly profile's 3000 (20 x 150);
#: test_mutations_produce_unsound_verdicts_that_reproduce holds unsound
#: mutations' counterexamples to the oracle on fixed programs by default
@settings(max_examples=examples(150) if settings.get_current_profile_name() == "nightly" else 75,
          deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                HealthCheck.data_too_large])
@given(programs_and_inputs(), st.sampled_from(SETTINGS), st.data())
def test_verdicts_on_mutations_agree_with_the_concrete_oracle(case, setting, data):
    p, sigmas = case
    q = data.draw(mutated(p))
    check_against_oracle(p, q, sigmas, *setting)


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs_and_inputs(), st.sampled_from(SETTINGS))
def test_every_generated_program_refines_itself(case, setting):
    p, _ = case
    verdict = check_rewrite(p, p, *setting, timeout=TIMEOUT)
    assert verdict.verdict == "sound", verdict.describe()


# (the control-flow passes leave these programs, which have no control flow,
# as they are: tests/test_check_control_flow.py checks them on programs with it)
PASSES = sorted(n for n, p in rewrites.builtin_passes().items()
                if not getattr(p, "control_flow", False)) if hasattr(rewrites, "builtin_passes") else []


#: 12 examples a pass by default, 500 nightly (test_rewrites_generated::
#: test_sound_claims_hold_on_generated_programs holds every pass's sound claims
#: to the oracle, 30 examples a pass, by default)
@pytest.mark.parametrize("name", PASSES)
@settings(max_examples=examples(25) if settings.get_current_profile_name() == "nightly" else 12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=programs_and_inputs(), setting=st.sampled_from(SETTINGS))
def test_built_in_passes_are_never_contradicted(name, case, setting):
    p, sigmas = case
    rewrite = rewrites.builtin_passes()[name]
    try:
        q = rewrite(p)
        q.validated()
    except ProgramError:
        pytest.fail(f"{name} produced an invalid program")
    verdict = check_against_oracle(p, q, sigmas, *setting)
    if rewrite.claim(*setting) == "sound":
        assert verdict.verdict != "unsound", (f"{name} claims sound under {setting}\n"
                                              f"{verdict.describe()}")


@pytest.mark.parametrize("samples", [check_module.SAMPLES, 0])
def test_mutations_produce_unsound_verdicts_that_reproduce(samples, monkeypatch):
    """A guard against a toothless property: on fixed generated programs,
    changing one binary function is often unsound, and every unsound verdict
    reproduces, whether sampling (the default) or the solver (SAMPLES = 0)
    finds the counterexample."""
    monkeypatch.setattr(check_module, "SAMPLES", samples)
    verdicts = []
    # 25 programs by default (8 of their mutations unsound, in ~2 s with the
    # solver); the 40 of the nightly profile add one pair whose solver search
    # alone took ~7 s of the default run's ~11
    count = 40 if settings.get_current_profile_name() == "nightly" else 25
    for p in strategies.random_programs(count, seed=11, max_nodes=10):
        for i, n in enumerate(p.nodes):
            if n.op in BINARY:
                other = BINARY[(BINARY.index(n.op) + 1) % len(BINARY)]
                q = p.replace(nodes=p.nodes[:i] + (n.replace(op=other),) + p.nodes[i + 1:])
                v = check_rewrite(p, q, timeout=TIMEOUT, structural=False)   # the engine's path
                verdicts.append(v.verdict)
                if all_encoded(p) and all_encoded(q):
                    assert v.stats["unconfirmed"] == 0, v.describe()
                if v.verdict == "unsound":
                    assert_reproduces(p, q, v)
                    assert v.stats.get("sampled", False) == bool(samples)
                break
    assert verdicts.count("unsound") >= 5
    assert set(verdicts) <= {"sound", "unsound"}
