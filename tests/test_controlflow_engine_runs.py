"""The control-flow engine's concrete runs made cheaper (oracle/controlflow.py;
docs/checking-control-flow.md, "The engine's concrete runs"), each against
the engine without it: none may change an outcome set.

- `behaviours` fires a step into the state it pops (`Machine.advance`)
  instead of a copy: compared with every step copying (`in_place` off), the
  steps found by the transcription (`_enabled_steps_reference`: every node
  tried in every context, the window and dead exits as first written), one
  eager step at a time and nothing remembered; and every state's steps
  compared with the transcription's along the runs;
- `fire_step` still leaves its state as it was (the states a caller keeps);
- `outcomes` remembers Outcomes(P, σ) per program object and σ
  (`_OUTCOMES`): the same answer, a copy, never shared between σ whose bits
  differ, a loop bound answered again, the kernels it used noted again, a
  smaller state budget not answered from it;
- one Machine per program object (`machine_for`).

Generated programs with conditionals, loops and stacks, both modes; the
real corpus's loop graphs at a few σ under the nightly profile (TensorFlow's
kernels: float MatMul).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.generators.control_flow import control_flow_programs, summing_loop
from tfsem.generators.strategies import inputs_for
from tfsem.oracle import controlflow as cf
from tfsem.oracle import kernels
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.graph import graph_of
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

from controlflow_support import corpus_loop_program

MODES = ("atomic", "decomposed")
NIGHTLY = settings.get_current_profile_name() == "nightly"
FEW = settings(max_examples=300 if NIGHTLY else 4, deadline=None, database=None,
               suppress_health_check=list(HealthCheck))
STATES = 20_000
BOUND = 6


def transcription(p, mode):
    """A Machine that finds the steps as the transcription does, copies the
    state at every step, fires one eager step at a time and remembers no
    function's result."""
    m = cf.Machine(p, graph_of(p), mode, BOUND)
    m.in_place = False
    m.batch_eager = False
    m.remember_functions = False
    m.enabled_steps = m._enabled_steps_reference
    return m


def run_set(m, p, feeds, init, mode):
    """(outcomes with one schedule each, or the loop bound's frame)."""
    out = {}
    try:
        for sched, s in cf.behaviours(p, m.g, feeds, init, mode, True, STATES, BOUND, machine=m):
            out.setdefault(m.outcome(s, "outputs+state"), sched)
    except cf.LoopBoundExceeded as exc:
        return ("bound", exc.frame)
    return out


def checked_machine(p, mode):
    """The engine as `outcomes` runs it, each state's steps compared with the
    transcription's on the way."""
    m = cf.Machine(p, graph_of(p), mode, BOUND)
    fast = m.enabled_steps

    def enabled(s):
        got = fast(s)
        assert got == m._enabled_steps_reference(s)
        return got
    m.enabled_steps = enabled
    return m


def agree(p, feeds, init, mode):
    try:
        fast = run_set(checked_machine(p, mode), p, feeds, init, mode)
        slow = run_set(transcription(p, mode), p, feeds, init, mode)
    except BudgetExceeded:
        return
    if isinstance(fast, tuple) or isinstance(slow, tuple):
        assert fast == slow
        return
    assert set(fast) == set(slow)
    # every schedule of the fast engine is a run of the rules, to its outcome
    for outcome, sched in fast.items():
        m = cf.Machine(p, graph_of(p), mode, BOUND)
        assert m.outcome(cf.fire_schedule(m, feeds, init, sched), "outputs+state") == outcome
    # and `outcomes` (its Machine per program, its memo) gives the same set, twice
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cf, "_OUTCOMES", {})
        for _ in range(2):
            got, _ = cf.outcomes(p, feeds, init, mode, max_states=STATES, max_iterations=BOUND)
            assert set(got) == set(fast)


@FEW
@given(control_flow_programs(max_blocks=3, bounded_trips=True), st.sampled_from(MODES), st.data())
def test_runs_in_place_keep_the_outcomes_of_programs_with_control_flow(p, mode, data):
    feeds, init = data.draw(inputs_for(p))
    agree(p, feeds, init, mode)


@FEW
@given(control_flow_programs(max_blocks=3, kinds=("loop", "cond", "stack"),
                             others=("loop", "cond", "stack", "plain"), bounded_trips=True,
                             stacks=True), st.sampled_from(MODES), st.data())
def test_runs_in_place_keep_the_outcomes_of_programs_with_stacks(p, mode, data):
    feeds, init = data.draw(inputs_for(p))
    agree(p, feeds, init, mode)


@pytest.mark.parametrize("mode", MODES)
def test_runs_in_place_keep_the_outcomes_of_a_racing_loop(mode):
    """A loop whose body adds to a variable that a Read outside races: many
    choices, each state's successors but one fired from copies."""
    p = summing_loop("3")
    feeds = {f: Tensor(2, "int64") for f in p.feed_names}
    init = {x: Tensor(1, "int64") for x in p.variables}
    fast = run_set(checked_machine(p, mode), p, feeds, init, mode)
    slow = run_set(transcription(p, mode), p, feeds, init, mode)
    assert set(fast) == set(slow) and len(fast) > 1


def test_fire_step_leaves_its_state_as_it_was():
    p = summing_loop("2")
    m = cf.Machine(p, graph_of(p))
    s = m.initial({f: Tensor(2, "int64") for f in p.feed_names},
                  {x: Tensor(1, "int64") for x in p.variables})
    for _ in range(30):
        steps = m.enabled_steps(s)
        if not steps:
            break
        before = s.key()
        s2 = m.fire_step(s, steps[0])
        assert s.key() == before and s2.key() != before
        assert s2.tokens is not s.tokens and s2.fired is not s.fired
        s = s2
    c = s.copy()
    assert c == s and c.key() == s.key()
    for a, b in ((c.var_value, s.var_value), (c.tokens, s.tokens), (c.fired, s.fired),
                 (c.started, s.started), (c.pending, s.pending), (c.dead_exits, s.dead_exits)):
        assert a is not b


def division():
    return program_from_json({"format": "tfsem.program/1", "variables": ["x"],
                              "feeds": {"a": {"dtype": "float32", "shape": []},
                                        "t": {"dtype": "bool", "shape": []}},
                              "nodes": [{"name": "one", "op": "Const",
                                         "value": {"dtype": "float32", "value": 1.0}},
                                        {"name": "sw", "op": "Switch", "inputs": ["$a", "$t"]},
                                        {"name": "d", "op": "RealDiv", "inputs": ["one", "sw:1"]},
                                        {"name": "v", "op": "Var", "var": "x"},
                                        {"name": "w", "op": "Assign", "fn": "Snd",
                                         "inputs": ["v", "d"]}],
                              "outputs": {"d": "d"}})


@pytest.fixture
def memo(monkeypatch):
    """An empty memo, and a count of the runs `outcomes` makes (explored,
    or replayed along an earlier run's path: `_replayed`)."""
    monkeypatch.setattr(cf, "_OUTCOMES", {})
    runs = []
    real, real_replayed = cf.behaviours, cf._replayed

    def counted(*a, **k):
        runs.append(1)
        return real(*a, **k)

    def replayed(*a, **k):
        got = real_replayed(*a, **k)
        if got is not None:
            runs.append(1)
        return got
    monkeypatch.setattr(cf, "behaviours", counted)
    monkeypatch.setattr(cf, "_replayed", replayed)
    return runs


def test_outcome_sets_are_remembered_per_program_object_and_sigma(memo):
    p = division()
    init = {"x": Tensor(0.0, "float32")}
    sigma = {"a": Tensor(0.0, "float32"), "t": Tensor(True, "bool")}
    first, n = cf.outcomes(p, sigma, init)
    first_copy = dict(first)
    first.clear()                                 # (the caller's copy)
    again, n2 = cf.outcomes(p, dict(sigma), dict(init))
    assert again == first_copy and n2 == n and len(memo) == 1
    # -0.0 equals 0.0 as a number, not as bits: 1 / -0.0 is -inf
    neg, _ = cf.outcomes(p, {**sigma, "a": Tensor(-0.0, "float32")}, init)
    assert len(memo) == 2 and set(neg) != set(again)
    # another program object, equal or not, is run again
    cf.outcomes(division(), sigma, init)
    assert len(memo) == 3
    # an answer with more states than a later call allows is not its answer
    with pytest.raises(BudgetExceeded):
        cf.outcomes(p, sigma, init, max_states=1)
    # the memo off: every call runs
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cf, "remember_outcomes", False)
        cf.outcomes(p, sigma, init)
    assert len(memo) == 5


def test_a_loop_bound_is_remembered_as_the_answer(memo):
    p = summing_loop("50")
    feeds = {f: Tensor(50, "int64") for f in p.feed_names}
    init = {x: Tensor(1, "int64") for x in p.variables}
    for _ in range(2):
        with pytest.raises(cf.LoopBoundExceeded) as got:
            cf.outcomes(p, feeds, init, max_iterations=4)
        assert "iteration bound of 4" in str(got.value)
    assert len(memo) == 1


def test_a_remembered_answer_names_the_kernels_it_used(memo, monkeypatch):
    """The verdict names the TensorFlow kernels its outcomes rest on
    (kernels.record): a reused answer, or a reused function result, notes
    them again."""
    p = division()
    monkeypatch.setattr(cf, "_APPLIED", {})
    from tfsem.oracle import functions as fns
    fn = fns.get("RealDiv")
    real_apply = type(fn).apply

    def apply(self, data, attrs=None):
        if self is fn:
            kernels._note("RealDiv")       # (as kernels.evaluate notes an op it ran)
        return real_apply(self, data) if attrs is None else real_apply(self, data, attrs)
    monkeypatch.setattr(type(fn), "apply", apply)
    sigma = {"a": Tensor(4.0, "float32"), "t": Tensor(True, "bool")}
    init = {"x": Tensor(0.0, "float32")}
    for k in range(2):
        with kernels.record() as used:
            cf.outcomes(p, sigma, init)
        assert used == {"RealDiv"}, k
    assert len(memo) == 1
    # a function's remembered result (another program, the same application)
    with kernels.record() as used:
        cf.outcomes(division(), sigma, init)
    assert used == {"RealDiv"} and len(memo) == 2


def test_one_machine_per_program_object():
    p = summing_loop("2")
    m = cf.machine_for(p)
    m.explored = 7
    assert cf.machine_for(p) is m and m.explored == 0
    assert cf.machine_for(p, "decomposed") is not m
    assert cf.machine_for(summing_loop("2")) is not m


def test_the_machine_used_last_is_kept_when_the_cache_is_full(monkeypatch):
    """An original checked against many rewrites keeps its Machine (and the
    paths it kept) while the rewrites' Machines come and go: the one used
    least recently is dropped, not all of them."""
    monkeypatch.setattr(cf, "_machines", type(cf._machines)())
    original = summing_loop("2")
    m = cf.machine_for(original)
    others = [summing_loop("2") for _ in range(3 * cf._MACHINES_MAX)]
    for q in others:
        cf.machine_for(q)
        assert cf.machine_for(original) is m
        assert len(cf._machines.cache) <= cf._MACHINES_MAX
    # (the one used least recently went first: the first rewrites' are gone,
    # the last ones' are kept)
    kept = {id(got[0]) for got in cf._machines.cache.values()}
    assert id(others[0]) not in kept and id(others[-1]) in kept and id(original) in kept


# -- the real corpus's loop graphs (nightly: TensorFlow's kernels) ----------------

@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TensorFlow's kernels)")
@pytest.mark.parametrize("graph", ["keras_gru_loop", "keras_lstm_loop"])
def test_runs_in_place_keep_the_outcomes_of_the_corpus_loop_graphs(graph, monkeypatch):
    """The original at the checker's first σ (zeros, the plain float σ, the
    largest float): the engine and the engine copying every state, with
    the transcription's steps (no function result remembered)."""
    import itertools

    import numpy as np
    from tfsem.checking import check as chk
    p = corpus_loop_program(graph, monkeypatch)
    rng = np.random.default_rng(2)
    sigmas = [next(itertools.islice(chk._generated_sigmas(p, rng), 1))]
    sigmas += [s for _, s in chk._float_sigmas(p)][::2]
    monkeypatch.setattr(cf, "remember_outcomes", False)
    for feeds, init in sigmas:
        fast, _ = cf.outcomes(p, feeds, init, max_iterations=cf.DEFAULT_MAX_ITERATIONS)
        m = cf.Machine(p, graph_of(p), "atomic", cf.DEFAULT_MAX_ITERATIONS)
        m.in_place = False
        m.remember_functions = False
        m.enabled_steps = m._enabled_steps_reference
        slow = {m.outcome(s, "outputs+state")
                for _, s in cf.behaviours(p, m.g, feeds, init, machine=m,
                                          max_iterations=cf.DEFAULT_MAX_ITERATIONS)}
        assert set(fast) == slow


def test_the_answer_used_least_recently_is_dropped_first(memo, monkeypatch):
    """The original's answers, reused by every rewrite's check, stay while
    other answers come and go."""
    monkeypatch.setattr(cf, "_OUTCOMES_MAX", 2)
    p = division()
    init = {"x": Tensor(0.0, "float32")}
    at = [{"a": Tensor(float(v), "float32"), "t": Tensor(True, "bool")} for v in (1, 2, 3)]
    cf.outcomes(p, at[0], init)
    cf.outcomes(p, at[1], init)
    cf.outcomes(p, at[0], init)            # (used again: now the most recent)
    cf.outcomes(p, at[2], init)            # (full: at[1]'s answer goes)
    assert len(memo) == 3
    cf.outcomes(p, at[0], init)
    assert len(memo) == 3
    cf.outcomes(p, at[1], init)
    assert len(memo) == 4
