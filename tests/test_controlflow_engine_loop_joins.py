"""The control-flow engine's Enter -> Exit joins (oracle/controlflow.py
`Machine._loop_chains`): an Exit that waits for a loop's chain Merge M in
the same iteration waits for M's Enter, with or without a Switch on M
between them (Grappler's dependency optimizer leaves the Exits of a gradient
loop waiting for the counter's Merge only through the loop predicate).

- on a small loop built for it, the join is made (an Assign after the Exit
  waits for an Assign before the loop) and not made on its near misses, and
  the outcome sets with the reductions on equal those with them off (a Read
  races with both writes), at trip counts 0, 1 and
  3, both modes;
- on Grappler's dependency rewrite of keras_gru_loop (stored, so that no
  TensorFlow is needed), the Reads of the GRU's kernels inside the loop are
  ordered before the SGD updates that conflict with them: one run per σ;
- eager steps fired in batches (`Machine.batch_eager`) against one at a
  time, on a loop nested in a loop's body and dead in all but its first
  iteration (its dead exit's step, which never fires in a batch, is taken),
  parallel_iterations 1 and 2, both modes.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tfsem.oracle import controlflow as cf
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.graph import graph_of
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

from test_controlflow_engine_speed import outcome_set

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "examples" / "tensorflow" / "corpus"
CASES = Path(__file__).parent / "cases" / "controlflow"


def joined_loop(variant: str = "pred"):
    """A counter loop (merge, next) and a second loop variable t whose Switch
    is on the counter's predicate (`pred`: t's Exit waits for the counter's
    Merge through the predicate only) or on a predicate of its own
    (`own`: it does not); `pre` writes x before the counter's Enter, `post`
    writes x after t's Exit, and t's Enter waits for nothing.  `nonext`:
    the counter's NextIteration does not wait for its Merge (no chain)."""
    own = variant == "own"
    nodes = [
        {"name": "vx", "op": "Var", "var": "x"},
        {"name": "seven", "op": "Const", "value": 7},
        {"name": "pre", "op": "Assign", "fn": "Snd", "inputs": ["vx", "seven"]},
        {"name": "i0", "op": "Const", "value": 0, "inputs": ["^pre"]},
        {"name": "t0", "op": "Const", "value": 5},
        {"name": "enter", "op": "Enter", "frame_name": "L", "inputs": ["i0"]},
        {"name": "t_enter", "op": "Enter", "frame_name": "L", "inputs": ["t0"]},
        {"name": "lim", "op": "Enter", "frame_name": "L", "is_constant": True, "inputs": ["$n"]},
        {"name": "merge", "op": "Merge", "inputs": ["enter", "next"]},
        {"name": "t_merge", "op": "Merge", "inputs": ["t_enter", "t_next"]},
        {"name": "less", "op": "Less", "inputs": ["merge", "lim"]},
        {"name": "cond", "op": "LoopCond", "inputs": ["less"]},
        {"name": "sw", "op": "Switch", "inputs": ["merge", "cond"]},
    ]
    if own:
        nodes += [{"name": "ten", "op": "Const", "value": 10, "inputs": ["^t_merge"]},
                  {"name": "tless", "op": "Less", "inputs": ["t_merge", "ten"]},
                  {"name": "t_sw", "op": "Switch", "inputs": ["t_merge", "tless"]}]
    else:
        nodes.append({"name": "t_sw", "op": "Switch", "inputs": ["t_merge", "cond"]})
    nodes += [
        {"name": "body", "op": "Identity", "inputs": ["sw:1"]},
        {"name": "one", "op": "Const", "value": 1, "inputs": ["^body"]},
        {"name": "inc", "op": "Add", "inputs": ["body", "one"]},
        {"name": "next", "op": "NextIteration",
         "inputs": ["inc"] if variant != "nonext" else ["one2"]},
        {"name": "t_body", "op": "Identity", "inputs": ["t_sw:1"]},
        {"name": "t_one", "op": "Const", "value": 1, "inputs": ["^t_body"]},
        {"name": "t_inc", "op": "Add", "inputs": ["t_body", "t_one"]},
        {"name": "t_next", "op": "NextIteration", "inputs": ["t_inc"]},
        {"name": "exit", "op": "Exit", "inputs": ["sw"]},
        {"name": "t_exit", "op": "Exit", "inputs": ["t_sw"]},
        {"name": "vy", "op": "Var", "var": "x"},
        {"name": "three", "op": "Const", "value": 3},
        {"name": "post", "op": "Assign", "fn": "Add", "inputs": ["vy", "three", "^t_exit"]},
        {"name": "vz", "op": "Var", "var": "x"},
        {"name": "r", "op": "Read", "inputs": ["vz"]},
    ]
    if variant == "nonext":
        nodes.append({"name": "one2", "op": "Const", "value": 1, "inputs": ["^lim"]})
        # (a NextIteration fed by a node that waits for nothing of the
        # iteration: `inc` is left without a consumer)
        nodes.append({"name": "sink", "op": "Identity", "inputs": ["inc"]})
    return program_from_json({"format": "tfsem.program/1", "variables": ["x"],
                              "feeds": {"n": {"dtype": "int64", "shape": []}},
                              "nodes": nodes, "outputs": {"r": "r", "t": "t_exit"}})


def _after(p) -> dict:
    m = cf.Machine(p, graph_of(p))
    m._access_index()
    assert m._por
    return m._after


def test_an_exit_waiting_for_the_counter_through_the_predicate_joins_its_enter():
    assert "post" in _after(joined_loop("pred"))["pre"]
    # near misses: t's Switch on its own predicate; no chain on the counter
    assert "post" not in _after(joined_loop("own"))["pre"]
    assert "post" not in _after(joined_loop("nonext")).get("pre", ())


@pytest.mark.parametrize("variant", ["pred", "own"])
@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
def test_the_join_keeps_the_outcomes(variant, mode):
    p = joined_loop(variant)
    compared = 0
    for n in (0, 1, 3):
        feeds = {"n": Tensor(n, "int64")}
        for x0 in (None, 2):
            init = {} if x0 is None else {"x": Tensor(x0, "int64")}
            try:
                fast, _ = outcome_set(p, feeds, init, mode, states=20_000)
                slow, _ = outcome_set(p, feeds, init, mode, lone=False, batch=False,
                                      states=20_000)
            except BudgetExceeded:
                continue
            assert fast == slow and len(fast) >= 3, (variant, mode, n, x0)
            compared += 1
    assert compared >= 4


def _gru_pair():
    from tfsem.graphdef import import_path
    entry = next(e for e in json.loads((CORPUS / "manifest.json").read_text())["graphs"]
                 if e["name"] == "keras_gru_loop")
    original = import_path(CORPUS / entry["file"], fetch=entry["fetches"],
                           target=entry["targets"], captures=CORPUS / entry["captures"]).program
    with gzip.open(CASES / "keras_gru_loop.dependency.json.gz", "rt") as f:
        rewritten = program_from_json(json.load(f))
    return original, rewritten


def test_grapplers_dependency_rewrite_of_the_gru_loop_keeps_its_reads_lone():
    """Every Read inside the forward loop has each Assign that conflicts with
    it ordered after every live firing of it, in the original and in
    Grappler's dependency rewrite (whose gradient loop's Exits wait for the
    counter only through the loop predicate): without the join, the
    rewrite's three Reads interleaved in each of the 12 iterations and one
    σ took 30 s."""
    for p in _gru_pair():
        m = cf.Machine(p, graph_of(p))
        m._access_index()
        assert m._por
        reads = [n.name for n in p.nodes if n.op == "Read" and p.frames.get(n.name)]
        assert len(reads) == 3
        for a in reads:
            conflicts = m._conflicts[a]
            assert conflicts and set(conflicts) <= m._after_loop.get(a, frozenset()), a


def nested_dead_loop(parallel: int):
    """An outer loop L (parallel_iterations `parallel`) whose body runs an
    inner loop M only in iteration 0 (a Switch on i == 0): in the other
    iterations M is dead, and its Exit's dead value reaches L's iteration
    when M's instance is done (a dead exit's step), after which `d` fires in
    that iteration again -- the step that can move L's oldest iteration
    back, which is why dead exits never fire in a batch.  M's body adds 1 to
    x; a Read of x races with the loops."""
    nodes = [
        {"name": "vx", "op": "Var", "var": "x"},
        {"name": "i0", "op": "Const", "value": 0},
        {"name": "eL", "op": "Enter", "frame_name": "L", "inputs": ["i0"],
         "parallel_iterations": parallel},
        {"name": "nL", "op": "Enter", "frame_name": "L", "is_constant": True, "inputs": ["$n"]},
        {"name": "hx", "op": "Enter", "frame_name": "L", "is_constant": True, "inputs": ["vx"]},
        {"name": "mL", "op": "Merge", "inputs": ["eL", "nxL"]},
        {"name": "lessL", "op": "Less", "inputs": ["mL", "nL"]},
        {"name": "cL", "op": "LoopCond", "inputs": ["lessL"]},
        {"name": "sL", "op": "Switch", "inputs": ["mL", "cL"]},
        {"name": "bL", "op": "Identity", "inputs": ["sL:1"]},
        {"name": "zero", "op": "Const", "value": 0, "inputs": ["^bL"]},
        {"name": "eq", "op": "Equal", "inputs": ["bL", "zero"]},
        {"name": "g", "op": "Switch", "inputs": ["bL", "eq"]},
        {"name": "lim", "op": "Const", "value": 2, "inputs": ["^bL"]},
        {"name": "eM", "op": "Enter", "frame_name": "M", "inputs": ["g:1"]},
        {"name": "eLim", "op": "Enter", "frame_name": "M", "is_constant": True, "inputs": ["lim"]},
        {"name": "hM", "op": "Enter", "frame_name": "M", "is_constant": True, "inputs": ["hx"]},
        {"name": "mM", "op": "Merge", "inputs": ["eM", "nxM"]},
        {"name": "lessM", "op": "Less", "inputs": ["mM", "eLim"]},
        {"name": "cM", "op": "LoopCond", "inputs": ["lessM"]},
        {"name": "sM", "op": "Switch", "inputs": ["mM", "cM"]},
        {"name": "bM", "op": "Identity", "inputs": ["sM:1"]},
        {"name": "oneM", "op": "Const", "value": 1, "inputs": ["^bM"]},
        {"name": "add", "op": "Assign", "fn": "Add", "inputs": ["hM", "oneM"]},
        {"name": "incM", "op": "Add", "inputs": ["bM", "oneM", "^add"]},
        {"name": "nxM", "op": "NextIteration", "inputs": ["incM"]},
        {"name": "xM", "op": "Exit", "inputs": ["sM"]},
        {"name": "d", "op": "Identity", "inputs": ["xM"]},
        {"name": "oneL", "op": "Const", "value": 1, "inputs": ["^bL"]},
        {"name": "incL", "op": "Add", "inputs": ["bL", "oneL"]},
        {"name": "nxL", "op": "NextIteration", "inputs": ["incL"]},
        {"name": "xL", "op": "Exit", "inputs": ["sL"]},
        {"name": "vr", "op": "Var", "var": "x"},
        {"name": "r", "op": "Read", "inputs": ["vr"]},
    ]
    return program_from_json({"format": "tfsem.program/1", "variables": ["x"],
                              "feeds": {"n": {"dtype": "int64", "shape": []}},
                              "nodes": nodes, "outputs": {"r": "r", "i": "xL"}})


@pytest.mark.parametrize("parallel", [1, 2])
@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
def test_batches_keep_the_outcomes_of_a_dead_inner_loop(parallel, mode):
    p = nested_dead_loop(parallel)
    for n in (0, 1, 3):
        feeds, init = {"n": Tensor(n, "int64")}, {"x": Tensor(5, "int64")}
        fast, _ = outcome_set(p, feeds, init, mode, check_steps=True)
        one, _ = outcome_set(p, feeds, init, mode, batch=False)
        slow, _ = outcome_set(p, feeds, init, mode, lone=False, batch=False)
        assert fast == one == slow, (parallel, mode, n)
        # the Read sees x before, between or after M's two additions (n > 0)
        assert len(fast) == (1 if n == 0 else 3), (n, fast)
    # (iterations 1 and 2 of L run M dead: its dead exit's step is taken)
    found, _ = cf.outcomes(p, {"n": Tensor(3, "int64")}, {"x": Tensor(5, "int64")}, mode)
    assert any(step.startswith("xM@") and step.endswith(":end")
               for sched in found.values() for step in sched)
