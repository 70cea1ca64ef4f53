"""Export of programs with control flow to a GraphDef of TensorFlow 1's
primitives (Switch, Merge, Enter, Exit, NextIteration, LoopCond:
graphdef/exporter.py), and the replay of a counterexample's schedule on
TensorFlow's executor (backends/tensorflow.py: the live steps outside every
loop forced, the steps inside loops free).  The round trip
import(export(P)) has P's outcome sets (no TensorFlow needed); the
exported graphs run on TensorFlow, whose outcomes are among tfsem's."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tfsem.graphdef import import_path
from tfsem.graphdef.exporter import ExportError, export_graph
from tfsem.graphdef.importer import import_graph
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.values import Tensor

CASES = Path(__file__).parent / "cases" / "controlflow"
NIGHTLY = os.environ.get("TFSEM_HYPOTHESIS_PROFILE") == "nightly"
X1 = {"x": Tensor(np.int64(1))}

#: (graph, feeds): a TF1 loop, a TF1 cond, a TF2 While beside a Case
GRAPHS = [("tf1_while_loop.pbtxt", {"n": np.int64(3)}),
          ("tf1_cond.pbtxt", {"p": np.bool_(False)}),
          ("tf1_cond.pbtxt", {"p": np.bool_(True)}),
          ("tf2_while_case.pbtxt", {"n": np.int64(2), "k": np.int32(1)}),
          ("tf2_tensor_array_loop.pbtxt", {"v": np.array([1, 5, -3], np.int64)})]


def _program(name):
    return import_path(CASES / name, fetch=["out"]).program


@pytest.mark.parametrize("name,feeds", GRAPHS, ids=[f"{g}-{i}" for i, (g, _) in enumerate(GRAPHS)])
def test_export_and_import_back_keeps_the_outcomes(name, feeds):
    p = _program(name)
    graph = export_graph(p)
    ops = {n["op"] for n in graph["node"]}
    assert {"Switch", "Merge"} <= ops
    if "tensor_array" in name:   # TensorLists: DT_VARIANT through the loop
        assert {"TensorListReserve", "TensorListSetItem", "TensorListStack"} <= ops
        assert any(n["op"] == "Enter" and n["attr"]["T"]["type"] == "DT_VARIANT"
                   for n in graph["node"])
    if "while" in name or "loop" in name:
        assert {"Enter", "Exit", "NextIteration", "LoopCond"} <= ops
        enters = [n for n in graph["node"] if n["op"] == "Enter"]
        assert any(n["attr"]["T"]["type"] == "DT_RESOURCE" and n["attr"]["is_constant"]["b"]
                   for n in enters)   # the variable's handle enters as a loop invariant
    q = import_graph(graph, list(p.outputs)).program
    assert q.has_control_flow and set(q.variables) == set(p.variables)
    fd = {k: Tensor(v) for k, v in feeds.items()}
    # decomposed too, but for the TF2 graphs only under the nightly profile
    for mode in ("atomic", "decomposed") if NIGHTLY or "tf2" not in name else ("atomic",):
        assert set(outcome_set(p, fd, X1, mode)) == set(outcome_set(q, fd, X1, mode)), mode


def test_export_with_one_handle_per_variable_refuses_control_flow():
    with pytest.raises(ExportError, match="control flow"):
        export_graph(_program("tf1_while_loop.pbtxt"), shared_handles=True)


# -- on TensorFlow -----------------------------------------------------------


@pytest.fixture(scope="module")
def tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return pytest.importorskip("tensorflow", reason="runs TensorFlow's executor: needs the "
                               "extra tfsem[tensorflow]")


@pytest.mark.parametrize("name,feeds", GRAPHS, ids=[f"{g}-{i}" for i, (g, _) in enumerate(GRAPHS)])
def test_the_exported_graph_runs_on_tensorflow_within_tfsems_outcomes(tf, name, feeds):
    from tfsem.backends.tensorflow import run_graph
    from tfsem.graphdef.proto import encode
    p = _program(name)
    fd = {k: Tensor(v) for k, v in feeds.items()}
    seen = run_graph(encode("GraphDef", export_graph(p)), {"out": "out"}, [], fd, X1, 5)
    assert set(seen.counts) <= set(outcome_set(p, fd, X1))


def test_a_counterexample_ordered_around_a_loop_is_replayed_on_tensorflow(tf):
    """tf2_while_case at n=2, k=1: the Case's branch reads x, the loop adds 3
    twice, the branch writes x*10+2.  A schedule that reads before the loop
    and writes after it (x = 12: both additions lost) is forced through the
    steps outside the loop (the loop's Enters after the read, its Exits
    before the write) and reproduced; one that writes between two
    iterations cannot be forced (a node inside a loop fires once per
    iteration): when TensorFlow's run gives another outcome, the replay
    says why."""
    from tfsem.backends.tensorflow import replay_program
    from tfsem.checking.verdict import Counterexample
    p = _program("tf2_while_case.pbtxt")
    fd = {"n": Tensor(np.int64(2)), "k": Tensor(np.int32(1))}
    runs = {dict(o.state)["x"]: (o, s) for o, s in outcome_set(p, fd, X1).as_dict().items()}
    assert set(runs) == {Tensor(np.int64(x)) for x in (12, 15, 18, 42, 45, 72)}
    o, sched = runs[Tensor(np.int64(12))]
    rep = replay_program(p, Counterexample(fd, X1, list(sched), o, [], 0))
    assert rep.confirmed, rep.reason
    assert not any("/body/" in n for n in rep.forced)
    at = {n: i for i, n in enumerate(rep.forced)}
    read, write = "case/indexed_case/branch1/Read/ReadVariableOp", \
        "case/indexed_case/branch1/AssignVariableOp"
    assert at[read] < at["loop/enter_4"] < at["loop/exit_2"] < at[write]
    o, sched = runs[Tensor(np.int64(15))]   # written after one of the two iterations
    rep = replay_program(p, Counterexample(fd, X1, list(sched), o, [], 0))
    assert rep.confirmed or "steps inside loops ran unforced" in rep.reason


def test_parallel_iterations_of_a_graph_mode_loop_race_on_tensorflow_as_in_tfsem(tf):
    """tf2_tensor_array_loop: a graph-mode tf.while_loop (no tf.function:
    no automatic control dependencies, so the body function has no control
    outputs) whose iteration i adds v[i] to x and writes 10 * x into a
    TensorArray.  TensorFlow starts iteration i + 1 while iteration i's
    read is pending (parallel_iterations 10), so reads see later additions:
    TensorFlow's runs give several outcomes, all among tfsem's (which
    inlines the lowered body as TensorFlow does: the next iteration waits
    for the body's control outputs only)."""
    from tfsem.backends.tensorflow import run_graph
    p = _program("tf2_tensor_array_loop.pbtxt")
    fd = {"v": Tensor(np.array([1, 5, -3], np.int64))}
    x0 = {"x": Tensor(np.int64(2))}
    ours = set(outcome_set(p, fd, x0))
    seen = run_graph((CASES / "tf2_tensor_array_loop.pbtxt").read_text(), {"out": "out"}, [],
                     fd, x0, 20)
    assert set(seen.counts) <= ours, seen.counts


def test_tfsem_export_writes_a_program_with_control_flow(tmp_path, capsys):
    from tfsem.cli import main
    out = tmp_path / "g.pbtxt"
    assert main(["export", str(CASES / "counted_loop.json"), "-o", str(out)]) == 0, \
        capsys.readouterr().err
    text = out.read_text()
    assert 'op: "NextIteration"' in text and 'op: "LoopCond"' in text
