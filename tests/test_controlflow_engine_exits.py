"""An Exit that fires live in more than one iteration (oracle/controlflow.py
`Machine._after_multi_exit`): each live firing replaces the value on its
edges in the context around the loop, so its consumer is not the same step
from the moment the first value arrives, and neither the consumer nor the
Exit may be fired first as an eager step.

The program: a loop of two trips whose Exit `xb` is of the body (live in
iterations 0 and 1, dead in 2), `out` = Identity(xb) fetched: `out` is 0 or
1.  The engine fired `out` at once (losing 1), and with that fixed, fired
xb's second firing at once (losing 0).  Every Exit of the Keras loops of
the corpus is on port 0 of a Switch on its loop's LoopCond, which fires
live once per instance: their consumers stay eager.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from controlflow_support import counter_loop_f

from tfsem.oracle import controlflow as cf
from tfsem.oracle.graph import graph_of
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor


def loop(exit_of: str = "body", trips: int = 2):
    nodes = counter_loop_f(trips) + [
        {"name": "xb", "op": "Exit", "inputs": [exit_of]},
        {"name": "out", "op": "Identity", "inputs": ["xb"]},
    ]
    return program_from_json({"format": "tfsem.program/1", "variables": [], "feeds": {},
                              "nodes": nodes, "outputs": {"f": "exitF", "o": "out"}})


def outputs(p, reduced: bool, mode: str = "atomic") -> set:
    g = graph_of(p)
    m = cf.Machine(p, g, mode, 4)
    if not reduced:
        m.eager = lambda s, st: False
    return {dict(m.outcome(s, "outputs+state").outputs)["o"]
            for _, s in cf.behaviours(p, g, {}, {}, mode, True, 50_000, 4, machine=m)}


@pytest.mark.parametrize("trips", [1, 2])
def test_a_consumer_of_an_exit_live_in_every_trip_sees_any_trip(trips):
    p = loop("body", trips)
    want = {Tensor(i, "int64") for i in range(trips)}
    assert outputs(p, reduced=False) == want
    assert outputs(p, reduced=True) == want


def test_an_exit_of_the_switchs_port_0_stays_eager():
    p = loop("sw")
    m = cf.Machine(p, graph_of(p))
    assert not m._after_multi_exit
    assert outputs(p, reduced=True) == {Tensor(2, "int64")}
    # an Exit of the body is not
    assert {"xb", "out"} <= cf.Machine(loop("body"), graph_of(loop("body")))._after_multi_exit


def test_the_exits_of_the_keras_gru_loop_fire_live_once():
    path = Path(__file__).parent / "cases" / "controlflow" / "keras_gru_loop.dependency.json.gz"
    with gzip.open(path, "rt") as f:
        p = program_from_json(json.load(f))
    assert sum(n.op == "Exit" for n in p.nodes) >= 4
    assert not cf.Machine(p, graph_of(p))._after_multi_exit


def test_fetching_the_last_trips_value_is_not_called_unsound():
    """P' fetches 1 (the value of the second trip) after the same loop: one
    of P's outcomes, not a counterexample."""
    from tfsem.oracle.jsonio import program_to_json
    p = loop("body")
    raw = program_to_json(p)
    for n in raw["nodes"]:
        if n["name"] == "out":
            n.update(op="Const", value=1, inputs=["^xb"])
    from tfsem.checking.check import check_rewrite
    v = check_rewrite(p, program_from_json(raw), timeout=10)
    assert v.verdict == "no-counterexample", (v.verdict, v.reason)
