"""Runs of the control-flow engine replayed along an earlier run's path
(oracle/controlflow.py `RunTrace`, `_replayed`; docs/checking-control-flow.md,
"A run's path replayed at the next σ"), each answer against the engine's
exploration of the same σ with replays off: the same outcomes, the same
witness schedules, the same count of states, the same exception.

- generated programs with conditionals and loops (trip counts from σ,
  predicates from feeds and variables), both modes, several σ in a row on
  one Machine, so that paths recorded at one σ are tried at the next;
- a loop whose trip count and predicate come from σ: replayed at a σ of the
  same trip count (counted, so the comparison is not vacuous), continued on
  another kept path where the first leaves off, refused at a trip count no
  kept path has, at an error predicate and at the iteration bound;
- programs with stacks keep no path; a Machine with a deciding method
  replaced, or switched to other rules, replays none;
- the real corpus's loop graphs (nightly: TensorFlow's kernels).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.generators.control_flow import control_flow_programs
from tfsem.generators.strategies import inputs_for
from tfsem.oracle import controlflow as cf
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Error, Tensor

from controlflow_support import (corpus_loop_program, count_replays, replay_answer,
                                 same_as_exploring)

MODES = ("atomic", "decomposed")
NIGHTLY = settings.get_current_profile_name() == "nightly"
SOME = settings(max_examples=300 if NIGHTLY else 12, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
BOUND = 6  # (same_as_exploring's default loop bound)


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """Nothing remembered between tests: no outcome set, no Machine (whose
    paths would carry over), replays on; and a count of replays that gave
    the answer, and of those refused at a step."""
    return count_replays(monkeypatch)


@SOME
@given(control_flow_programs(max_blocks=3, bounded_trips=True), st.sampled_from(MODES),
       st.data())
def test_replays_answer_as_the_exploration_on_generated_programs(p, mode, data):
    cf._machines.cache = {}
    for _ in range(5):
        feeds, init = data.draw(inputs_for(p))
        same_as_exploring(p, feeds, init, mode)


def counting_loop():
    """i = 0; s = 0.0; while i < Read(x): i += 1; s += a.  Then x += i.
    Fetches s and i: no choice anywhere (the Read before the loop, the
    Assign after its Exit)."""
    return program_from_json({
        "format": "tfsem.program/1", "variables": ["x"],
        "feeds": {"a": {"dtype": "float32", "shape": []}},
        "nodes": [
            {"name": "vx", "op": "Var", "var": "x"},
            {"name": "rx", "op": "Read", "inputs": ["vx"]},
            {"name": "i0", "op": "Const", "value": 0},
            {"name": "s0", "op": "Const", "value": {"dtype": "float32", "value": 0.0}},
            {"name": "enter", "op": "Enter", "frame_name": "L", "inputs": ["i0"]},
            {"name": "s_enter", "op": "Enter", "frame_name": "L", "inputs": ["s0"]},
            {"name": "lim", "op": "Enter", "frame_name": "L", "is_constant": True,
             "inputs": ["rx"]},
            {"name": "ae", "op": "Enter", "frame_name": "L", "is_constant": True,
             "inputs": ["$a"]},
            {"name": "merge", "op": "Merge", "inputs": ["enter", "next"]},
            {"name": "s_merge", "op": "Merge", "inputs": ["s_enter", "s_next"]},
            {"name": "less", "op": "Less", "inputs": ["merge", "lim"]},
            {"name": "cond", "op": "LoopCond", "inputs": ["less"]},
            {"name": "sw", "op": "Switch", "inputs": ["merge", "cond"]},
            {"name": "s_sw", "op": "Switch", "inputs": ["s_merge", "cond"]},
            {"name": "body", "op": "Identity", "inputs": ["sw:1"]},
            {"name": "one", "op": "Const", "value": 1, "inputs": ["^body"]},
            {"name": "inc", "op": "Add", "inputs": ["body", "one"]},
            {"name": "next", "op": "NextIteration", "inputs": ["inc"]},
            {"name": "s_add", "op": "Add", "inputs": ["s_sw:1", "ae"]},
            {"name": "s_next", "op": "NextIteration", "inputs": ["s_add"]},
            {"name": "exit", "op": "Exit", "inputs": ["sw"]},
            {"name": "s_exit", "op": "Exit", "inputs": ["s_sw"]},
            {"name": "w", "op": "Assign", "fn": "Add", "inputs": ["vx", "exit"]}],
        "outputs": {"s": "s_exit", "i": "exit"}})


def at(x, a):
    init = {} if x is None else {"x": Tensor(x, "int64")}
    return {"a": Tensor(a, "float32")}, init


@pytest.mark.parametrize("mode", MODES)
def test_a_loop_is_replayed_at_the_same_trip_count_only(fresh, mode):
    p = counting_loop()
    first = same_as_exploring(p, *at(2, 1.5), mode)
    assert fresh == {"replayed": 0, "refused": 0}   # (nothing recorded yet)
    again = same_as_exploring(p, *at(2, -3.0), mode)
    assert fresh["replayed"] == 1 and fresh["refused"] == 0
    (out1, sched1), = first[0].items()
    (out2, sched2), = again[0].items()
    # the values are σ's, the path the same
    assert out1 != out2 and sched1 == sched2 and first[1] == again[1]
    assert dict(out2.outputs)["s"].array == -6.0 and dict(out2.state)["x"].array == 4
    # another trip count: the replay is refused at the predicate, the answer explored
    three = same_as_exploring(p, *at(3, 1.5), mode)
    assert fresh["refused"] >= 1 and len(next(iter(three[0].values()))) > len(sched1)
    # ... and that path is kept: a σ of three trips is replayed now
    replayed, refused = fresh["replayed"], fresh["refused"]
    same_as_exploring(p, *at(3, 0.25), mode)
    assert fresh["replayed"] == replayed + 1
    # two trips again: the three-trip path, tried first, leaves off at the
    # predicate, where the two-trip path, the same up to there, goes on
    same_as_exploring(p, *at(2, 0.5), mode)
    assert fresh["replayed"] == replayed + 2 and fresh["refused"] == refused
    # one trip: no kept path goes on there
    same_as_exploring(p, *at(1, 0.5), mode)
    assert fresh["refused"] == refused + 1


def test_a_replay_fires_the_planned_steps(fresh):
    """A path's steps are fired from their token keys made once (`_plan`):
    the live function steps, the live Merges, Enters, Exits,
    NextIterations and LoopConds, the dead steps, the live Switches, the
    Reads and Vars; the Assigns by the rules (`_fire`).  The answers above
    are the exploration's with the plan in use."""
    p = counting_loop()
    same_as_exploring(p, *at(2, 1.5))
    same_as_exploring(p, *at(2, -3.0))
    assert fresh["replayed"] == 1
    (tr,) = cf.machine_for(p, "atomic", BOUND)._traces
    kinds: dict = {}
    for (st, _), x in zip(tr.steps, tr.plan):
        kind = None if x is None else x[0]
        kinds.setdefault(kind, set()).add(p.node[st.node].op + ("/dead" if st.dead else ""))
    assert {"Add", "Less", "Identity", "Const"} <= kinds[cf._PLAN_FUNCTION]
    assert {"Merge", "Enter", "Exit", "NextIteration", "LoopCond"} == kinds[cf._PLAN_FORWARD]
    assert {"Identity/dead", "Exit/dead", "NextIteration/dead"} <= kinds[cf._PLAN_DEAD]
    assert {"Switch"} == kinds[cf._PLAN_SWITCH]
    assert {"Read", "Var"} == kinds[cf._PLAN_READ]
    assert {"Assign"} == kinds[None]


def _by_the_rules(monkeypatch):
    """`_plan` with its Switch, Read and Var steps left to `_fire` (None),
    as before they were planned."""
    real = cf._plan

    def plan(m, tr):
        got = [None if x is not None and x[0] in (cf._PLAN_SWITCH, cf._PLAN_READ) else x
               for x in real(m, tr)]
        tr.plan = got
        return got
    monkeypatch.setattr(cf, "_plan", plan)


def _replays(p, sigmas, mode, monkeypatch, rules: bool):
    """Each σ's answer (outcomes and schedules, states, or the exception's
    type) with replays on, the Machine fresh, the Switches, Reads and Vars
    planned or (`rules`) fired by `_fire`; and how many answers a replay
    gave."""
    with monkeypatch.context() as mp:
        counts = count_replays(mp)
        if rules:
            _by_the_rules(mp)
        got = [replay_answer(p, feeds, init, mode, BOUND, True, "outputs+state")
               for feeds, init in sigmas]
        return got, counts["replayed"]


@SOME
@given(control_flow_programs(max_blocks=3, bounded_trips=True), st.sampled_from(MODES),
       st.data())
def test_planned_switches_and_reads_answer_as_the_rules(p, mode, data):
    """The shortcut against what it replaces: the same σ in a row, replayed
    once with the live Switches, Reads and Vars planned (`_PLAN_SWITCH`,
    `_PLAN_READ`) and once with them fired by `_fire`, give the same
    answers and replay as often (a planned Switch that puts its deadness
    elsewhere refuses the path where `_fire`'s did); each is the
    exploration's (`same_as_exploring`, in the test above)."""
    import _pytest.monkeypatch
    sigmas = [data.draw(inputs_for(p)) for _ in range(5)]
    mp = _pytest.monkeypatch.MonkeyPatch()
    try:
        assert _replays(p, sigmas, mode, mp, False) == _replays(p, sigmas, mode, mp, True)
    finally:
        mp.undo()


@pytest.mark.parametrize("mode", MODES)
def test_planned_switches_and_reads_on_the_counting_loop(mode, monkeypatch):
    """Trip counts 2, 2, 3, 3, 2, 1 and an uninitialized x (an error
    predicate at every Switch), planned and by the rules: the same answers,
    and the planned steps replayed the σ they could."""
    p = counting_loop()
    sigmas = [at(2, 1.5), at(2, -3.0), at(3, 1.5), at(3, 0.25), at(2, 0.5), at(1, 0.5),
              at(None, 1.0), at(2, 2.0)]
    planned = _replays(p, sigmas, mode, monkeypatch, False)
    assert planned == _replays(p, sigmas, mode, monkeypatch, True)
    assert planned[1] >= 3


def test_an_error_predicate_is_not_replayed(fresh):
    """x uninitialized: Less gets an error, the Switches put DEAD on both
    ports (the loop is dead as a whole): another deadness, refused."""
    p = counting_loop()
    same_as_exploring(p, *at(2, 1.0))
    refused = fresh["refused"]
    got = same_as_exploring(p, *at(None, 1.0))
    assert fresh["refused"] > refused
    (out, _), = got[0].items()
    assert isinstance(dict(out.outputs)["s"], Error)


def test_the_iteration_bound_is_the_exploration_s(fresh):
    p = counting_loop()
    same_as_exploring(p, *at(2, 1.0))
    assert same_as_exploring(p, *at(50, 1.0))[0] == "bound"
    assert fresh["replayed"] == 0


def test_no_replay_under_other_rules(fresh, monkeypatch):
    p = counting_loop()
    same_as_exploring(p, *at(2, 1.0))
    # a Machine switched to other rules (tests do it) does not replay a path
    # recorded under the first ones
    monkeypatch.setattr(cf.Machine, "batch_eager", False)
    same_as_exploring(p, *at(2, 2.0))
    monkeypatch.setattr(cf.Machine, "batch_eager", True)
    # a deciding method replaced on the Machine
    m = cf.machine_for(p, "atomic", BOUND)
    monkeypatch.setattr(m, "enabled_steps", m._enabled_steps_reference, raising=False)
    same_as_exploring(p, *at(2, 3.0))
    assert fresh["replayed"] == 0
    monkeypatch.delattr(m, "enabled_steps")
    same_as_exploring(p, *at(2, 4.0))
    assert fresh["replayed"] == 1


@SOME
@given(control_flow_programs(max_blocks=3, kinds=("loop", "cond", "stack"),
                             others=("loop", "cond", "stack", "plain"), bounded_trips=True,
                             stacks=True), st.data())
def test_programs_with_stacks_are_explored(p, data):
    cf._machines.cache = {}
    for _ in range(3):
        feeds, init = data.draw(inputs_for(p))
        same_as_exploring(p, feeds, init)
    if p.has_stacks:
        assert not cf.machine_for(p, "atomic", BOUND).__dict__.get("_traces")


# -- the real corpus's loop graphs (nightly: TensorFlow's kernels) ----------------

@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TensorFlow's kernels)")
@pytest.mark.parametrize("graph", ["keras_gru_loop", "keras_lstm_loop"])
def test_the_corpus_loop_graphs_replay_as_they_explore(graph, fresh, monkeypatch):
    """The original at the checker's first σ (zeros), the float σ and two
    drawn ones, in the refutation stage's order: replayed where the path
    fits, always the exploration's answer."""
    import itertools

    import numpy as np
    from tfsem.checking import check as chk
    p = corpus_loop_program(graph, monkeypatch)
    drawn = list(itertools.islice(chk._generated_sigmas(p, np.random.default_rng(2)), 3))
    sigmas = drawn[:1] + [s for _, s in chk._float_sigmas(p)] + drawn[1:]
    for feeds, init in sigmas:
        same_as_exploring(p, feeds, init, bound=cf.DEFAULT_MAX_ITERATIONS)
    assert fresh["replayed"] >= 1
