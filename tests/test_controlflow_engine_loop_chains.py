"""The control-flow engine's partial-order reduction around loops
(oracle/controlflow.py `Machine.lone_access`, `_loop_chains`: Reads inside a
loop ordered before later writes by the loop's chain, and the Enter -> Exit
waits-for joins) against the engine with the reduction off, on generated
loops built to meet the chain's conditions and their near misses: a loop
counter and an accumulator whose Switch is on the loop's predicate or on a
predicate of its own, Reads of x in the body under the counter's or the
accumulator's branch (or neither), the counter's increment waiting for a
Read or not, an access of x before the loop that the Enters wait for or
not, and one to three Reads and Assigns of x after the loop, waiting for an
Exit, for the access before, or for nothing.  Outcome sets must be equal at
trip counts 0, 1 and 3, in both modes.  (review10: 120 programs, 720
comparisons, no difference; the default profile runs a few.)"""

from __future__ import annotations

import random

from hypothesis import settings

from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

from test_controlflow_engine_speed import outcome_set

NIGHTLY = settings.get_current_profile_name() == "nightly"


def loop_program(rng):
    pre = rng.random() < 0.6
    nodes = [{"name": "vx", "op": "Var", "var": "x"}]
    if pre:
        nodes += [{"name": "vp", "op": "Var", "var": "x"}, {"name": "cp", "op": "Const", "value": 7}]
        nodes.append({"name": "pre", "op": "Assign", "fn": rng.choice(["Snd", "Add"]), "inputs": ["vp", "cp"]}
                     if rng.random() < 0.6 else {"name": "pre", "op": "Read", "inputs": ["vp"]})
    pd = ["^pre"] if pre else []
    nodes += [{"name": "i0", "op": "Const", "value": 0, "inputs": pd if rng.random() < 0.7 else []},
             {"name": "s0", "op": "Const", "value": 0, "inputs": pd if rng.random() < 0.5 else []},
             {"name": "enter", "op": "Enter", "frame_name": "L", "inputs": ["i0"]},
             {"name": "s_enter", "op": "Enter", "frame_name": "L", "inputs": ["s0"]},
             {"name": "lim", "op": "Enter", "frame_name": "L", "is_constant": True, "inputs": ["$n"]},
             {"name": "hx", "op": "Enter", "frame_name": "L", "is_constant": True, "inputs": ["vx"]},
             {"name": "merge", "op": "Merge", "inputs": ["enter", "next"]},
             {"name": "s_merge", "op": "Merge", "inputs": ["s_enter", "s_next"]},
             {"name": "less", "op": "Less", "inputs": ["merge", "lim"]},
             {"name": "cond", "op": "LoopCond", "inputs": ["less"]},
             {"name": "sw", "op": "Switch", "inputs": ["merge", "cond"]}]
    # s's switch: on the loop predicate, or on its own predicate (s < 2)
    own = rng.random() < 0.4
    if own:
        nodes += [{"name": "two", "op": "Const", "value": 2, "inputs": ["^s_merge"]},
                  {"name": "sless", "op": "Less", "inputs": ["s_merge", "two"]},
                  {"name": "s_sw", "op": "Switch", "inputs": ["s_merge", "sless"]}]
    else:
        nodes.append({"name": "s_sw", "op": "Switch", "inputs": ["s_merge", "cond"]})
    nodes += [{"name": "body", "op": "Identity", "inputs": ["sw:1"]},
              {"name": "sbody", "op": "Identity", "inputs": ["s_sw:1"]},
              {"name": "k", "op": "Const", "value": 1, "inputs": ["^body"]}]
    dep = rng.choice([["^body"], ["^sbody"], [], ["^body", "^sbody"]])
    nodes.append({"name": "read", "op": "Read", "inputs": ["hx"] + dep})
    if rng.random() < 0.5:
        nodes.append({"name": "read2", "op": "Read", "inputs": ["hx"] + rng.choice([["^body"], ["^sbody"], ["^read"]])})
        extra = "read2"
    else:
        extra = None
    s_in = rng.choice(["read", "read", "sbody"])
    nodes.append({"name": "s_add", "op": "Add", "inputs": ["sbody", s_in] + ([f"^{extra}"] if extra and rng.random()<0.5 else [])})
    nodes.append({"name": "s_next", "op": "NextIteration", "inputs": ["s_add"]})
    inc_dep = rng.choice([[], ["^read"], ["^s_add"]])
    nodes.append({"name": "inc", "op": "Add", "inputs": ["body", "k"] + inc_dep})
    nodes.append({"name": "next", "op": "NextIteration", "inputs": ["inc"]})
    nodes.append({"name": "exit", "op": "Exit", "inputs": ["sw"]})
    nodes.append({"name": "s_exit", "op": "Exit", "inputs": ["s_sw"]})
    # root accesses
    anchors = ["exit", "s_exit", "exit", None] + (["pre"] if pre else [])
    for j in range(rng.randint(1, 3)):
        kind = rng.choice(["w", "w", "r"])
        a = rng.choice(anchors)
        deps = [f"^{a}"] if a else []
        nodes.append({"name": f"v{j}", "op": "Var", "var": "x"})
        if kind == "w":
            nodes.append({"name": f"c{j}", "op": "Const", "value": 10 * (j + 1)})
            nodes.append({"name": f"o{j}", "op": "Assign", "fn": rng.choice(["Snd", "Add"]),
                          "inputs": [f"v{j}", f"c{j}"] + deps})
        else:
            nodes.append({"name": f"o{j}", "op": "Read", "inputs": [f"v{j}"] + deps})
        anchors.append(f"o{j}")
    outs = {"s": "s_exit", "i": "exit"}
    for n in nodes:
        if n["op"] == "Read" and (n["name"].startswith("o") or n["name"] == "pre"):
            outs[n["name"]] = n["name"]
    return program_from_json({"format": "tfsem.program/1", "variables": ["x"],
                              "feeds": {"n": {"dtype": "int64", "shape": []}},
                              "nodes": nodes, "outputs": outs})


def test_loop_chain_reduction_keeps_the_outcomes():
    rng = random.Random(1023)
    stats = {"cases": 0, "reduced": 0}
    runs = [(0, "atomic"), (3, "decomposed")] if not NIGHTLY else \
        [(n, m) for n in (0, 1, 3) for m in ("atomic", "decomposed")]
    for _ in range(120 if NIGHTLY else 3):
        p = loop_program(rng)
        for n, mode in runs:
            feeds = {"n": Tensor(n, "int64")}
            init = {"x": Tensor(rng.choice([0, 5]), "int64")}
            try:
                fast, n_fast = outcome_set(p, feeds, init, mode, states=50_000)
                slow, n_slow = outcome_set(p, feeds, init, mode, lone=False, states=50_000)
            except BudgetExceeded:
                continue
            assert fast == slow, (mode, n, init, p)
            stats["cases"] += 1
            stats["reduced"] += n_fast < n_slow
    assert stats["cases"] >= 4, stats
    if NIGHTLY:
        assert stats["reduced"] >= stats["cases"] // 5, stats


def _analyses(p):
    """A new Machine's static analyses of `p`: the Exits that may fire
    twice and the lone accesses' tables (conflicts, what waits for each
    access, the loops' chains)."""
    from tfsem.oracle import controlflow as cf
    from tfsem.oracle.graph import graph_of
    m = cf.Machine(p, graph_of(p))
    multi = m._after_multi_exit
    m._access_index()
    return (multi, m._por, getattr(m, "_conflicts", None), getattr(m, "_after", None),
            getattr(m, "_after_loop", None))


def test_the_analyses_closures_remembered_are_the_walks(monkeypatch):
    """`_after_multi_exit` and `_loop_chains` ask for each closure once
    (`_closures`): their answers equal those of a walk per question, on the
    loops built above and on the control-flow generator's programs, and
    the memo answers repeated questions (not vacuous)."""
    from hypothesis import HealthCheck, given
    from hypothesis import strategies as st

    from tfsem.generators.control_flow import control_flow_programs
    from tfsem.oracle import controlflow as cf

    real = cf._closures
    reached = cf._reached
    asked = {"walks": 0, "questions": 0, "remembered walks": 0}

    def counted_walk(p, starts, graph):
        asked["remembered walks"] += 1
        return reached(p, starts, graph)
    monkeypatch.setattr(cf, "_reached", counted_walk)

    def counted(p):
        closure = real(p)

        def ask(starts, graph):
            asked["questions"] += 1
            return closure(starts, graph)
        return ask

    def walked(p):
        def closure(starts, graph):
            asked["walks"] += 1
            return reached(p, starts, graph)
        return closure

    def same(p):
        monkeypatch.setattr(cf, "_closures", counted)
        remembered = _analyses(p)
        monkeypatch.setattr(cf, "_closures", walked)
        walks = _analyses(p)
        monkeypatch.setattr(cf, "_closures", real)
        assert remembered == walks

    rng = random.Random(77)
    for _ in range(40 if NIGHTLY else 8):
        same(loop_program(rng))

    @settings(max_examples=200 if NIGHTLY else 20, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(control_flow_programs(max_blocks=3, bounded_trips=True))
    def generated(p):
        same(p)
    generated()
    assert asked["questions"] == asked["walks"] > asked["remembered walks"] > 0
