"""Adversarial review of the control-flow engine's fourteenth speed round
(oracle/controlflow.py): a replayed path's live Switches, Reads and Vars
are fired from their plan (`_PLAN_SWITCH`, `_PLAN_READ` in `_plan` and
`_fire_planned`) instead of by `_fire`'s rules, a Switch's writes compared
with the recorded run's as whether each key holds DEAD; and the memo of
applications keeps 32,768 entries (`_APPLIED_MAX`, its byte cap as before).

Every answer is compared three ways, σ after σ on one Machine with
nothing remembered between calls but its kept paths: replays with the
plan as it is (`planned`), replays with the Switches, Reads and Vars left
to `_fire` (`rules`, the engine before the round) and no replay at all
(`explore`, the enumerating engine):

- a Switch whose only outgoing edges are one port's data edges, so that
  an error predicate (both ports DEAD, carrying the error), a bool
  predicate that sends the value the other way, and a predicate that is
  no bool scalar write the same deadness pattern, in every order of σ;
- a loop whose predicate Reads a variable the body Assigns (trip count
  from σ's initial value), with the variable uninitialized in some σ (an
  error predicate at the first trip);
- a second loop reading a variable the first loop's frame assigned, a
  Var inside a loop's body, a Read's error value carried through a Switch;
- generated programs with loops two deep, conds inside loop bodies,
  TensorLists, feeds that pass the iteration bound (the nested-loop
  generator);
- the corpus's TensorFlow 1 while loop, functional While and If graphs,
  and its Keras GRU, LSTM and embedding graphs;
- the replay's clock under a budget of no seconds;
- the memo of applications: never more than _APPLIED_MAX entries and
  _APPLIED_MAX_BYTES bytes, however many distinct applications run.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tfsem.generators.nested_loops import nested_program
from tfsem.generators.strategies import random_inputs
from tfsem.oracle import controlflow as cf
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Error, Tensor

from controlflow_support import corpus_loop_program, count_replays

MODES = ("atomic", "decomposed")
BOUND = 6


@pytest.fixture(autouse=True)
def fresh():
    cf._APPLIED.clear()
    cf._OUTCOMES.clear()
    yield
    cf._APPLIED.clear()
    cf._OUTCOMES.clear()


def _answer(p, feeds, init, mode, bound, max_seconds=None):
    """Outcomes with their schedules and states explored, or the
    exception's kind."""
    try:
        return cf.outcomes(p, feeds, init, mode, "outputs+state", 20_000, max_seconds, bound)
    except cf.LoopBoundExceeded as exc:
        return ("bound", exc.frame, exc.limit)
    except BudgetExceeded as exc:
        return ("budget", exc.which)


def _answers(p, sigmas, mode, how, monkeypatch, bound=BOUND):
    """Each σ's answer in order on one fresh Machine (its kept paths carry
    over from σ to σ), `how`: "planned", "rules" (Switch, Read, Var steps
    fired by `_fire`) or "explore" (no replay); and the count of replays
    that answered and of those refused."""
    with monkeypatch.context() as mp:
        counts = count_replays(mp)
        if how == "rules":
            real = cf._plan

            def plan(m, tr):
                got = [None if x is not None and x[0] in (cf._PLAN_SWITCH, cf._PLAN_READ)
                       else x for x in real(m, tr)]
                tr.plan = got
                return got
            mp.setattr(cf, "_plan", plan)
        mp.setattr(cf, "replay_traces", how != "explore")
        got = [_answer(p, feeds, init, mode, bound) for feeds, init in sigmas]
        return got, dict(counts)


def _three_ways(p, sigmas, mode, monkeypatch, bound=BOUND):
    """The planned answers, checked against the rules' (the same answers
    and the same replays) and the exploration's; the replay counts."""
    planned, counts = _answers(p, sigmas, mode, "planned", monkeypatch, bound)
    rules, rule_counts = _answers(p, sigmas, mode, "rules", monkeypatch, bound)
    explored, _ = _answers(p, sigmas, mode, "explore", monkeypatch, bound)
    assert planned == rules
    assert counts == rule_counts
    assert [a[0] if type(a[0]) is dict else a for a in planned] == \
        [a[0] if type(a[0]) is dict else a for a in explored]
    return planned, counts


# -- a Switch whose deadness patterns coincide ---------------------------------

def one_port_switch(port: int, control_out: bool = False):
    """b a bool variable, the Switch's predicate (Read(b)); only port
    `port` of the Switch has an outgoing edge (an Identity fetched, and an
    Assign of y from it): with no control edge out, an error predicate
    (both ports DEAD with its error) and the predicate that makes `port`
    the dead one write the same pattern, one DEAD key."""
    nodes = [
        {"name": "vb", "op": "Var", "var": "b"},
        {"name": "rb", "op": "Read", "inputs": ["vb"]},
        {"name": "vy", "op": "Var", "var": "y"},
        {"name": "sw", "op": "Switch", "inputs": ["$a", "rb"]},
        {"name": "out", "op": "Identity", "inputs": [f"sw:{port}"]},
        {"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["vy", "out"]},
    ]
    if control_out:
        nodes.append({"name": "after", "op": "Const", "value": 7, "inputs": ["^sw"]})
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {"b": {"dtype": "bool", "shape": []}, "y": {"dtype": "int64", "shape": []}},
        "feeds": {"a": {"dtype": "int64", "shape": []}},
        "nodes": nodes,
        "outputs": {"out": "out", **({"after": "after"} if control_out else {})}})


def _b(value, a=5):
    init = {"y": Tensor(0, "int64")}
    if value is not None:
        init["b"] = value
    return {"a": Tensor(a, "int64")}, init


PREDICATES = [
    _b(Tensor(True, "bool")), _b(Tensor(False, "bool"), 6), _b(None),
    _b(Tensor(np.array([True]), "bool")), _b(Tensor(False, "bool"), 8),
    _b(Tensor(np.zeros((0,), bool), "bool")), _b(Tensor(True, "bool"), 9), _b(None, 10),
]


@pytest.mark.parametrize("port", [0, 1])
@pytest.mark.parametrize("control_out", [False, True])
@pytest.mark.parametrize("order", range(4))
def test_a_switch_whose_dead_patterns_coincide(port, control_out, order, monkeypatch):
    """Recorded with an error predicate, replayed at a bool one that kills
    the same port (or the other way round): the same pattern of DEAD keys,
    the replay goes on, and the fetch is the exploration's -- not produced
    where the predicate was a bool, the error where it failed."""
    p = one_port_switch(port, control_out)
    sigmas = list(itertools.permutations(PREDICATES, len(PREDICATES)))[order * 977]
    got, counts = _three_ways(p, list(sigmas), "atomic", monkeypatch)
    assert counts["replayed"] >= 2
    outs = {}
    for (feeds, init), answer in zip(sigmas, got):
        (outcome, _), = answer[0].items()
        b = init.get("b")
        outs[dict(outcome.outputs)["out"].__class__.__name__, repr(b)[:40]] = True
        if b is None:
            assert isinstance(dict(outcome.outputs)["out"], Error)
    assert len(outs) >= 4


# -- loops whose trip count and predicate come from σ --------------------------

def read_predicate_loop(body_reads_other: bool = False):
    """while Read(x) < lim: x += 1 (and, `body_reads_other`, s += Read(z)
    inside the body); then a second loop in frame M runs while Read(x) <
    lim2 (x assigned in frame L's body), adding 2, waiting for L's Exit.
    x and z from σ (uninitialized in some: an error predicate, an error
    value carried through a Switch)."""
    nodes = [
        {"name": "vx", "op": "Var", "var": "x"},
        {"name": "vz", "op": "Var", "var": "z"},
        {"name": "s0", "op": "Const", "value": 0},
        {"name": "hx", "op": "Enter", "frame_name": "L", "is_constant": True, "inputs": ["vx"]},
        {"name": "hz", "op": "Enter", "frame_name": "L", "is_constant": True, "inputs": ["vz"]},
        {"name": "lim", "op": "Enter", "frame_name": "L", "is_constant": True, "inputs": ["$lim"]},
        {"name": "enter", "op": "Enter", "frame_name": "L", "inputs": ["s0"]},
        {"name": "merge", "op": "Merge", "inputs": ["enter", "next"]},
        {"name": "rx", "op": "Read", "inputs": ["hx", "^merge"]},
        {"name": "less", "op": "Less", "inputs": ["rx", "lim"]},
        {"name": "cond", "op": "LoopCond", "inputs": ["less"]},
        {"name": "sw", "op": "Switch", "inputs": ["merge", "cond"]},
        {"name": "body", "op": "Identity", "inputs": ["sw:1"]},
        {"name": "one", "op": "Const", "value": 1, "inputs": ["^body"]},
        {"name": "inc", "op": "Assign", "fn": "Add", "inputs": ["hx", "one"]},
        {"name": "vin", "op": "Var", "var": "x", "inputs": ["^body"]},
        {"name": "rin", "op": "Read", "inputs": ["vin", "^inc"]},
    ]
    if body_reads_other:
        nodes += [{"name": "rz", "op": "Read", "inputs": ["hz", "^body"]},
                  {"name": "sadd", "op": "Add", "inputs": ["body", "rz"]},
                  {"name": "snext", "op": "Identity", "inputs": ["sadd", "^rin"]}]
    else:
        nodes += [{"name": "snext", "op": "Add", "inputs": ["body", "rin"]}]
    nodes += [
        {"name": "next", "op": "NextIteration", "inputs": ["snext"]},
        {"name": "exit", "op": "Exit", "inputs": ["sw"]},
        # frame M: reads x, which frame L's body assigned
        {"name": "hx2", "op": "Enter", "frame_name": "M", "is_constant": True,
         "inputs": ["vx", "^exit"]},
        {"name": "lim2", "op": "Enter", "frame_name": "M", "is_constant": True,
         "inputs": ["$lim2"]},
        {"name": "enter2", "op": "Enter", "frame_name": "M", "inputs": ["exit"]},
        {"name": "merge2", "op": "Merge", "inputs": ["enter2", "next2"]},
        {"name": "rx2", "op": "Read", "inputs": ["hx2", "^merge2"]},
        {"name": "less2", "op": "Less", "inputs": ["rx2", "lim2"]},
        {"name": "cond2", "op": "LoopCond", "inputs": ["less2"]},
        {"name": "sw2", "op": "Switch", "inputs": ["merge2", "cond2"]},
        {"name": "body2", "op": "Identity", "inputs": ["sw2:1"]},
        {"name": "two", "op": "Const", "value": 2, "inputs": ["^body2"]},
        {"name": "inc2", "op": "Assign", "fn": "Add", "inputs": ["hx2", "two"]},
        {"name": "n2", "op": "Identity", "inputs": ["body2", "^inc2"]},
        {"name": "next2", "op": "NextIteration", "inputs": ["n2"]},
        {"name": "exit2", "op": "Exit", "inputs": ["sw2"]},
    ]
    return program_from_json({
        "format": "tfsem.program/1", "variables": ["x", "z"],
        "feeds": {"lim": {"dtype": "int64", "shape": []}, "lim2": {"dtype": "int64", "shape": []}},
        "nodes": nodes, "outputs": {"s": "exit", "t": "exit2"}})


def _xl(x, lim, lim2=0, z=3):
    init = {} if x is None else {"x": Tensor(x, "int64")}
    if z is not None:
        init["z"] = Tensor(z, "int64")
    return {"lim": Tensor(lim, "int64"), "lim2": Tensor(lim2, "int64")}, init


LOOP_SIGMAS = [_xl(0, 2), _xl(5, 7), _xl(0, 3, 6), _xl(1, 4, 7), _xl(None, 2), _xl(0, 2, 5),
               _xl(2, 4, 8), _xl(0, 0), _xl(3, 5), _xl(-1, 1, 1), _xl(0, 2, z=None),
               _xl(0, 9), _xl(None, 0), _xl(0, 3, 5, z=None), _xl(1, 3)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("body_reads_other", [False, True])
@pytest.mark.parametrize("order", range(3))
def test_loops_reading_what_their_bodies_assign(mode, body_reads_other, order, monkeypatch):
    """Trip counts 2, 2, 3+3, ..., an uninitialized x (an error predicate
    at the first trip of both loops) and z (an error added into the loop's
    sum), 9 trips (past the bound of 6), in three orders: planned, by the
    rules and explored, the same answers; the planned steps replayed."""
    p = read_predicate_loop(body_reads_other)
    sigmas = LOOP_SIGMAS if order == 0 else list(reversed(LOOP_SIGMAS)) if order == 1 \
        else LOOP_SIGMAS[::2] + LOOP_SIGMAS[1::2]
    got, counts = _three_ways(p, sigmas, mode, monkeypatch)
    assert counts["replayed"] >= 3
    assert ("bound", "L", BOUND) in got
    # the values are σ's: x ends at lim, then at lim2 (even steps of 2 past it)
    answer = got[sigmas.index(LOOP_SIGMAS[2])]
    (outcome, _), = answer[0].items()
    assert int(dict(outcome.state)["x"].array) == 7


# -- generated programs: loops two deep, conds in bodies, TensorLists ---------

#: nested-loop programs with 2-9 outcomes, TensorLists, past the bound
#: (among tests/test_review_attacks_chain_nested.py's seeds, those whose
#: three-way comparison takes under a second)
NESTED_SEEDS = [145, 136, 49, 3, 61]


@pytest.mark.parametrize("seed", NESTED_SEEDS)
def test_nested_loop_programs(seed, monkeypatch):
    """Six σ in a row (three distinct, each twice, trip counts drawn from
    feeds), atomic and decomposed: planned, by the rules and explored."""
    p = program_from_json(nested_program(seed))
    sigmas = [random_inputs(p, seed * 100 + k % 3, edge_p=0.2) for k in range(6)]
    for mode in MODES:
        _three_ways(p, sigmas, mode, monkeypatch)


# -- the corpus's loop and cond graphs (TensorFlow's kernels) ------------------

@pytest.mark.parametrize("graph", ["tf1_while_read_assign", "tf_while_assign",
                                   "tf_cond_assign", "keras_gru_loop", "keras_lstm_loop",
                                   "keras_embedding_adagrad"])
def test_corpus_loop_and_cond_graphs(graph, monkeypatch):
    """The checker's σ (zeros, the float σ, drawn ones), each twice, at the
    default iteration bound: planned, by the rules and explored."""
    from tfsem.checking import check as chk
    p = corpus_loop_program(graph, monkeypatch)
    drawn = list(itertools.islice(chk._generated_sigmas(p, np.random.default_rng(3)), 3))
    sigmas = drawn[:1] + [s for _, s in chk._float_sigmas(p)] + drawn[1:]
    sigmas = sigmas + sigmas
    _, counts = _three_ways(p, sigmas, "atomic", monkeypatch, cf.DEFAULT_MAX_ITERATIONS)
    assert counts["replayed"] >= 1


# -- the clock and the memo's bounds --------------------------------------------

def test_a_replay_out_of_seconds_says_so(monkeypatch):
    """A kept path replayed past its budget of seconds, the clock read at
    every step (planned Switches and Reads among them): BudgetExceeded
    (seconds) at the first step, never a crash in a planned step; with
    time left, the exploration's end state."""
    import time
    p = read_predicate_loop()
    count_replays(monkeypatch)
    _answer(p, *_xl(0, 3, 6), "atomic", BOUND)
    m = cf.machine_for(p, "atomic", BOUND)
    paths = m.__dict__["_traces"]
    assert any(x is not None and x[0] in (cf._PLAN_SWITCH, cf._PLAN_READ)
               for x in cf._plan(m, paths[0]))
    with pytest.raises(BudgetExceeded) as exc:
        cf._replay(m, paths, *_xl(1, 4, 7), time.monotonic() - 1.0, 0.5, clock_steps=1)
    assert exc.value.which == "seconds"
    s, _ = cf._replay(m, paths, *_xl(1, 4, 7), time.monotonic(), 60.0, clock_steps=1)
    assert int(s.var_value["x"].array) == 8   # (1 -> 4 in L, then 6, 8 in M)


def test_the_memo_of_applications_stays_within_its_bounds(monkeypatch):
    """More distinct applications than _APPLIED_MAX (made small here), and
    entries whose bytes pass _APPLIED_MAX_BYTES in all: the memo never
    holds more than either, and every answer is the function's."""
    monkeypatch.setattr(cf, "_APPLIED_MAX", 50)
    monkeypatch.setattr(cf, "_APPLIED_MAX_BYTES", 4096)
    p = program_from_json({
        "format": "tfsem.program/1", "variables": [],
        "feeds": {"a": {"dtype": "int64", "shape": [40]}},
        "nodes": [{"name": "one", "op": "Const", "value": 1},
                  {"name": "add", "op": "Add", "inputs": ["$a", "one"]}],
        "outputs": {"o": "add"}})
    m = cf.machine_for(p, "atomic", BOUND)
    m.initial({"a": Tensor(np.zeros(40, np.int64), "int64")}, {})
    add = p.node["add"]
    for k in range(400):
        a = Tensor(np.arange(40, dtype=np.int64) + k, "int64")
        got, = m.apply_function(add, [a, Tensor(1, "int64")])
        assert np.array_equal(got.array, a.array + 1)
        assert len(cf._APPLIED) <= 50 and cf._APPLIED_BYTES <= 4096
