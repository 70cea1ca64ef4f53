"""Review of the control-flow engine's concrete runs (oracle/controlflow.py;
docs/review-controlflow-engine-runs.md): Outcomes(P, σ) remembered per
program object and exact σ bits, one Machine per program object, runs in
place, the parallel_iterations window skipped below every loop's limit.

The campaign keeps ONE memo across many queries in one process (the real
use: several rewrites checked against one original at the same σ) and
asks, in a shuffled order and twice each, for Outcomes of a program, an
equal program built again, the program with its nodes in reverse order
(parallel_iterations is its first Enter's in node order), at σ and at σ
with each float's zero sign flipped, a NaN's payload changed, a value's
bits read as another dtype of the same width, a variable left
uninitialized; in both modes, both observations and two iteration bounds.
Every answer is compared with the same query's answer with the memo off
(`remember_outcomes = False`) on a Machine made afresh.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.generators.control_flow import control_flow_programs, summing_loop
from tfsem.generators.strategies import inputs_for
from tfsem.oracle import controlflow as cf
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.graph import graph_of
from tfsem.oracle.program import Program
from tfsem.oracle.values import Error, Tensor

NIGHTLY = settings.get_current_profile_name() == "nightly"
#: TFSEM_REVIEW_EXAMPLES: a campaign's size from the command line
EXAMPLES = int(os.environ.get("TFSEM_REVIEW_EXAMPLES", 300 if NIGHTLY else 1))
#: TFSEM_REVIEW_QUERIES: queries per program (each asked twice)
QUERIES = int(os.environ.get("TFSEM_REVIEW_QUERIES", 24))
SOME = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
STATES = 20_000
_SAME_WIDTH = {"float32": "int32", "int32": "float32", "float64": "int64", "int64": "float64"}


def fresh(p, feeds, init, mode, observe, bound):
    """The answer with nothing remembered: a Machine made for this query,
    every step copying the state, no registry result reused."""
    m = cf.Machine(p, graph_of(p), mode, bound)
    m.in_place = False
    m.remember_functions = False
    out = {}
    try:
        for _, s in cf.behaviours(p, m.g, feeds, init, mode, True, STATES, bound, machine=m):
            out.setdefault(m.outcome(s, observe), None)
    except cf.LoopBoundExceeded as exc:
        return ("bound", exc.frame)
    except BudgetExceeded:
        return None
    return frozenset(out)


def remembered(p, feeds, init, mode, observe, bound):
    try:
        got, _ = cf.outcomes(p, feeds, init, mode, observe, STATES, None, bound)
    except cf.LoopBoundExceeded as exc:
        return ("bound", exc.frame)
    except BudgetExceeded:
        return None
    return frozenset(got)


def _variants(values: dict) -> list[dict]:
    """σ's parts with one value changed in its bits only."""
    out = []
    for name, v in values.items():
        if type(v) is not Tensor:
            continue
        a = np.array(v.array)
        if a.dtype.kind == "f" and a.size:
            z = a.copy()
            z[a == 0] = -a[a == 0]
            if z.tobytes() != a.tobytes():
                out.append({**values, name: Tensor(z, v.dtype)})
            n = a.copy()
            n.reshape(-1)[0] = np.nan
            bits = n.view(f"u{n.itemsize}").copy()
            bits.reshape(-1)[0] ^= 1                   # another NaN payload
            out.append({**values, name: Tensor(bits.view(a.dtype), v.dtype)})
        other = _SAME_WIDTH.get(v.dtype)
        if other is not None:                          # same bits, another dtype
            out.append({**values, name: Tensor(a.view(np.dtype(other)), other)})
    return out


def reversed_program(p: Program) -> Program:
    return Program(p.variables, tuple(reversed(p.nodes)), p.outputs, p.feeds)


def equal_program(p: Program) -> Program:
    return Program(p.variables, tuple(p.nodes), p.outputs, p.feeds)


def campaign_case(p, feeds, init, rng: random.Random) -> int:
    """Every query of one program, shuffled and asked twice, each answer
    compared with the memo-off answer; returns the queries made."""
    programs = [p, equal_program(p), reversed_program(p)]
    sigmas = [(feeds, init)]
    sigmas += [(f, init) for f in _variants(feeds)][:3]
    sigmas += [(feeds, i) for i in _variants(init)][:3]
    if init:
        x = sorted(init)[0]
        sigmas.append((feeds, {k: v for k, v in init.items() if k != x}))   # uninitialized
        sigmas.append((feeds, {**init, x: Error("uninitialized")}))
    queries = [(q, f, i, mode, observe, bound)
               for q in programs for f, i in sigmas
               for mode in ("atomic", "decomposed")
               for observe in ("outputs+state", "outputs")
               for bound in (cf.DEFAULT_MAX_ITERATIONS, 2)]
    queries = rng.sample(queries, min(len(queries), QUERIES)) * 2
    rng.shuffle(queries)
    for q in queries:
        want = fresh(*q)
        got = remembered(*q)
        if want is None or got is None:   # (a budget ran out: nothing to compare)
            continue
        assert got == want, (q[3:], "memo answer differs from a fresh run")
    if os.environ.get("TFSEM_REVIEW_LOG"):   # (a long campaign's progress)
        with open(os.environ["TFSEM_REVIEW_LOG"], "a") as log:
            log.write(f"{len(p.nodes)} {len(queries)}\n")
    return len(queries)


@SOME
@given(control_flow_programs(max_blocks=3, bounded_trips=True), st.data())
def test_remembered_outcomes_equal_fresh_runs_on_control_flow_programs(p, data):
    feeds, init = data.draw(inputs_for(p, edge_p=0.4))
    campaign_case(p, feeds, init, random.Random(data.draw(st.integers(0, 2**32))))


@SOME
@given(control_flow_programs(max_blocks=3, kinds=("loop", "cond", "stack"),
                             others=("loop", "cond", "stack", "plain"), bounded_trips=True,
                             stacks=True), st.data())
def test_remembered_outcomes_equal_fresh_runs_on_programs_with_stacks(p, data):
    feeds, init = data.draw(inputs_for(p, edge_p=0.4))
    campaign_case(p, feeds, init, random.Random(data.draw(st.integers(0, 2**32))))


@pytest.mark.parametrize("mode", ("atomic", "decomposed"))
def test_same_bits_of_another_dtype_are_another_sigma(mode):
    """int32 1 and float32 1.4e-45 have the same bytes: the memo must not
    answer one with the other's outcomes."""
    p = summing_loop("3")
    init = {x: Tensor(1, "int64") for x in p.variables}
    a = {f: Tensor(2, "int64") for f in p.feed_names}
    b = {f: Tensor(np.array(2, np.int64).view(np.float64), "float64") for f in p.feed_names}
    for feeds in (a, b, a, b):
        assert remembered(p, feeds, init, mode, "outputs+state", 6) == \
            fresh(p, feeds, init, mode, "outputs+state", 6)


def test_a_replaced_function_is_not_answered_by_its_predecessors_outcomes(monkeypatch):
    """A registry function replaced (`register(..., replace=True)`, a
    plugin's) is another function: the memo's key names it by id(), and
    CPython gives a freed object's address to the next object of its size,
    so the replacement of a function no longer referenced took its id and
    was answered with the old function's outcomes (f = a + 1 for a + 3)."""
    import gc

    from tfsem.oracle import functions as fns
    from tfsem.oracle.functions import Function
    from tfsem.oracle.jsonio import program_from_json

    monkeypatch.setattr(fns, "_REGISTRY", dict(fns._REGISTRY))
    monkeypatch.setattr(cf, "_OUTCOMES", {})
    # what the process held before this test is frozen (gc.freeze: left out
    # of every collection) for the test's ten full collections: late in a
    # whole-suite run each one traversed the suite's heap, TensorFlow's
    # included (~1 s each); what the test makes, the replaced functions
    # included, is collected as before (not where something in this process
    # froze objects of its own: unfreezing would thaw them)
    freeze = not gc.get_freeze_count()
    if freeze:
        gc.freeze()
    try:
        _replaced_functions(gc, fns, Function, program_from_json)
    finally:
        if freeze:
            gc.unfreeze()


def _replaced_functions(gc, fns, Function, program_from_json):
    def bump(k):
        return Function("ReviewBump", 1, 1, lambda xp, args, attrs: (args[0] + k,))
    fns.register(bump(1))
    p = program_from_json({"format": "tfsem.program/1", "variables": [],
                           "feeds": {"a": {"dtype": "int32", "shape": []},
                                     "t": {"dtype": "bool", "shape": []}},
                           "nodes": [{"name": "sw", "op": "Switch", "inputs": ["$a", "$t"]},
                                     {"name": "f", "op": "ReviewBump", "inputs": ["sw:1"]}],
                           "outputs": {"f": "f"}})
    sigma = {"a": Tensor(1, "int32"), "t": Tensor(True, "bool")}
    for k in range(1, 12):
        if k > 1:
            cf._APPLIED.clear()   # (its entries keep the old function alive)
            gc.collect()
            fns.register(bump(k), replace=True)
        got = remembered(p, sigma, {}, "atomic", "outputs+state", cf.DEFAULT_MAX_ITERATIONS)
        assert got == fresh(p, sigma, {}, "atomic", "outputs+state", cf.DEFAULT_MAX_ITERATIONS)
        assert [dict(o.outputs)["f"] for o in got] == [Tensor(1 + k, "int32")]


def test_threads_sharing_the_memo_get_their_own_answers():
    """Four threads ask for the same program objects at interleaved σ (one
    memo, a Machine per thread, kernels' switch per thread): each answer is
    the fresh run's, and kernels forced off in one thread do not change
    another's key (`kernels.use` is per thread)."""
    import threading

    from tfsem.oracle import kernels

    programs = [summing_loop("2"), summing_loop("3", read_after=False)]
    sigmas = [({f: Tensor(k, "int64") for f in programs[0].feed_names},
               {x: Tensor(k % 3, "int64") for x in programs[0].variables}) for k in range(4)]
    want = {(i, j, mode): fresh(q, f, s, mode, "outputs+state", 6)
            for i, q in enumerate(programs) for j, (f, s) in enumerate(sigmas)
            for mode in ("atomic", "decomposed")}
    errors = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            with kernels.use(seed % 2 == 0):
                for _ in range(40):
                    i, j, mode = rng.choice(sorted(want))
                    got = remembered(programs[i], *sigmas[j], mode, "outputs+state", 6)
                    if got != want[(i, j, mode)]:
                        errors.append((seed, i, j, mode))
        except Exception as exc:  # noqa: BLE001
            errors.append(repr(exc))
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def nested_loops(trips_f: int, trips_g: int, p_f: int, p_g: int):
    """An outer loop F of `trips_f` trips (parallel_iterations `p_f`) whose
    body runs an inner loop G of `trips_g` trips (`p_g`) that adds 1 to a
    variable x by a Read and an Assign (racing across iterations the window
    lets run together); x's final value and F's counter are observed."""
    from tfsem.oracle.jsonio import program_from_json

    def counter(frame, trips, p, start, after):
        f = frame
        return [
            {"name": f"i0{f}", "op": "Const", "value": 0, "inputs": after},
            {"name": f"enter{f}", "op": "Enter", "frame_name": f, "parallel_iterations": p,
             "inputs": [f"i0{f}"]},
            {"name": f"k{f}", "op": "Const", "value": trips, "inputs": after},
            {"name": f"lim{f}", "op": "Enter", "frame_name": f, "is_constant": True,
             "parallel_iterations": p, "inputs": [f"k{f}"]},
            {"name": f"merge{f}", "op": "Merge", "inputs": [f"enter{f}", f"next{f}"]},
            {"name": f"less{f}", "op": "Less", "inputs": [f"merge{f}", f"lim{f}"]},
            {"name": f"cond{f}", "op": "LoopCond", "inputs": [f"less{f}"]},
            {"name": f"sw{f}", "op": "Switch", "inputs": [f"merge{f}", f"cond{f}"]},
            {"name": f"body{f}", "op": "Identity", "inputs": [f"sw{f}:1"]},
            {"name": f"one{f}", "op": "Const", "value": 1, "inputs": [f"^body{f}"]},
            {"name": f"add{f}", "op": "Add", "inputs": [f"body{f}", f"one{f}"]},
            {"name": f"next{f}", "op": "NextIteration", "inputs": [f"add{f}"]},
            {"name": f"exit{f}", "op": "Exit", "inputs": [f"sw{f}"]},
        ]
    nodes = counter("F", trips_f, p_f, None, []) + [
        {"name": "v", "op": "Var", "var": "x"},
        {"name": "vF", "op": "Enter", "frame_name": "F", "is_constant": True,
         "parallel_iterations": p_f, "inputs": ["v"]},
    ] + counter("G", trips_g, p_g, None, ["^bodyF"]) + [
        {"name": "vG", "op": "Enter", "frame_name": "G", "is_constant": True,
         "parallel_iterations": p_g, "inputs": ["vF"]},
        {"name": "r", "op": "Read", "inputs": ["vG", "^bodyG"]},
        {"name": "c1", "op": "Const", "value": 1, "inputs": ["^bodyG"]},
        {"name": "inc", "op": "Add", "inputs": ["r", "c1"]},
        {"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["vG", "inc"]},
    ]
    # (the outer counter's Identity in F waits for G's exit: F's next
    # iteration starts only after this one's inner loop, or not: p_f lets it)
    return program_from_json({"format": "tfsem.program/1", "variables": ["x"], "feeds": {},
                              "nodes": nodes, "outputs": {"f": "exitF"}})


_HEAVY = pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (a few seconds each)")


@pytest.mark.parametrize("trips_f,trips_g,p_f,p_g,mode", [
    (2, 2, 2, 1, "atomic"), (3, 1, 2, 10, "decomposed"),
    pytest.param(2, 2, 1, 1, "atomic", marks=_HEAVY),
    pytest.param(2, 1, 1, 2, "decomposed", marks=_HEAVY),
    pytest.param(1, 3, 10, 2, "atomic", marks=_HEAVY),
    pytest.param(2, 2, 10, 10, "decomposed", marks=_HEAVY),
    pytest.param(2, 2, 2, 1, "decomposed", marks=_HEAVY),
    pytest.param(3, 1, 2, 10, "atomic", marks=_HEAVY)])
def test_the_window_skip_keeps_nested_loops_outcomes(trips_f, trips_g, p_f, p_g, mode):
    """Nested loops whose trip counts are exactly, below and above each
    parallel_iterations (1 included): the engine (window skipped for
    contexts below every loop's P, states in place, memo) against the
    transcription, every state's steps compared on the way
    (tests/test_controlflow_engine_runs.py `agree`)."""
    from test_controlflow_engine_runs import agree, run_set, transcription
    p = nested_loops(trips_f, trips_g, p_f, p_g)
    init = {"x": Tensor(0, "int64")}
    agree(p, {}, init, mode)
    slow = run_set(transcription(p, mode), p, {}, init, mode)
    assert not isinstance(slow, tuple) and slow
    for q in (p, reversed_program(p)):
        assert remembered(q, {}, init, mode, "outputs+state", 6) == \
            fresh(q, {}, init, mode, "outputs+state", 6)
