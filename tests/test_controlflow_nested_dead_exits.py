"""Dead exits of nested loops (oracle/controlflow.py `Machine.enabled_steps`):
a loop instance is done only when nothing inside it can fire, and an inner
loop's dead exit not sent yet is such a step (TensorFlow's executor: an
iteration is not done while a child frame is alive, and a frame sends its
dead exits when it is deleted, once done).

The program: an outer loop F of one trip; inside its body an inner loop G
(entered from the body, so dead as a whole in F's last iteration); a Merge
M2 of F with data input F's Switch port 0 (live in the last iteration) and a
control input from G's Exit; F's Exit XF of M2; outside, `y := 1` after XF.
In F's last iteration M2 waits for G's dead exit, then fires live (a Merge
ignores a dead control input), XF sends the live value, and y := 1.

It was wrong: F counted as done while G's dead exit was still to be sent,
so XF's dead exit (it fired dead in iteration 0) could be sent first,
`y := 1` fired dead and y stayed y0 -- an order TensorFlow's executor never
takes (it deletes a frame, sending its dead exits, only when its iterations
are done, and an iteration is not done while a child frame is alive).  The
engine's exploration of every order had both outcomes; the dead-exit steps
are eager, so with XF's sorting before G's exit only y0 was explored, and
`tfsem check` called dropping `^XF` from the write `unsound` (its y := 1 not
among the original's outcomes) although it is an outcome of the original
-- the only one on TensorFlow's executor (`tfsem run --backend tensorflow`
on this program: y := 1 in 5 runs of 5, "in the oracle's set" now).
"""

from __future__ import annotations

import pytest

from controlflow_support import counter_loop_f

from tfsem.oracle import controlflow as cf
from tfsem.oracle.graph import graph_of
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor


def nested(exit_name: str = "XF", ordered: bool = True):
    """The program above (`exit_name` moves XF's dead exit before or after
    G's in the engine's order of steps; `ordered`: the write waits for XF)."""
    nodes = counter_loop_f(1) + [
        {"name": "enterG", "op": "Enter", "frame_name": "G", "inputs": ["body"]},
        {"name": "kG", "op": "Const", "value": 0, "inputs": ["^body"]},
        {"name": "limG", "op": "Enter", "frame_name": "G", "is_constant": True, "inputs": ["kG"]},
        {"name": "mergeG", "op": "Merge", "inputs": ["enterG", "nextG"]},
        {"name": "lessG", "op": "Less", "inputs": ["mergeG", "limG"]},
        {"name": "condG", "op": "LoopCond", "inputs": ["lessG"]},
        {"name": "swG", "op": "Switch", "inputs": ["mergeG", "condG"]},
        {"name": "bodyG", "op": "Identity", "inputs": ["swG:1"]},
        {"name": "nextG", "op": "NextIteration", "inputs": ["bodyG"]},
        {"name": "gx", "op": "Exit", "inputs": ["swG"]},
        {"name": "M2", "op": "Merge", "inputs": ["sw", "^gx"]},
        {"name": exit_name, "op": "Exit", "inputs": ["M2"]},
        {"name": "vy", "op": "Var", "var": "y"},
        {"name": "ky", "op": "Const", "value": 1},
        {"name": "wy", "op": "Assign", "fn": "Snd",
         "inputs": ["vy", "ky"] + (["^" + exit_name] if ordered else [])},
    ]
    return program_from_json({"format": "tfsem.program/1", "variables": ["y"], "feeds": {},
                              "nodes": nodes, "outputs": {"f": "exitF"}})


def _outcomes(p, mode, reduced: bool):
    g = graph_of(p)
    m = cf.Machine(p, g, mode, 4)
    if not reduced:
        # every dead exit, Read and Assign a choice: all their orders explored
        m.lone_accesses = m.batch_eager = False
        eager = m.eager
        m.eager = lambda s, st: st.phase != "end" and eager(s, st)
    return {m.outcome(s, "outputs+state")
            for _, s in cf.behaviours(p, g, {}, {"y": Tensor(5, "int64")}, mode, True, 50_000, 4,
                                      machine=m)}


@pytest.mark.parametrize("exit_name", ["XF", "zF"])
@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
def test_an_outer_loop_is_not_done_before_its_inner_loops_dead_exit(exit_name, mode):
    p = nested(exit_name)
    fast = _outcomes(p, mode, reduced=True)
    slow = _outcomes(p, mode, reduced=False)
    assert fast == slow
    assert {dict(o.state)["y"] for o in fast} == {Tensor(1, "int64")}


def test_dropping_the_order_after_the_outer_exit_is_not_called_unsound():
    from tfsem.checking.check import check_rewrite
    v = check_rewrite(nested("XF"), nested("XF", ordered=False), timeout=10)
    assert v.verdict == "no-counterexample", (v.verdict, v.reason)
