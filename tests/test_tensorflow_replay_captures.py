"""The replay on TensorFlow of a counterexample in a concrete function's
graph (backends/tensorflow.py `replay_graph`, `with_captured_variables`).

Such a graph (``concrete_function.graph``: the corpus's Keras steps,
MobileNetV2) has no VarHandleOp: each variable is a DT_RESOURCE Placeholder,
named only by the capture map (`--captures`).  The replay used to look for
the variables among the VarHandleOps, found none, and said "variable
'Conv1/kernel' is not in the graph".  Now each captured Placeholder runs as
a VarHandleOp whose shared_name is the variable.

The graph here is the corpus's `tf_module_counter` (a tf.Module's concrete
function), its two variables renamed in the capture map as MobileNetV2's
are named (`Conv1/kernel`, `loss/total`: scopes with slashes), and the
rewrite drops the control edge that orders the read of the counter after its
increment: unsound, and TensorFlow shows the counterexample's outcome.

Needs TensorFlow (the extra tfsem[tensorflow]); skipped, saying so, where it
cannot be imported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow] (tensorflow-cpu)")

from tfsem.cli import main  # noqa: E402

CORPUS = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "corpus"
GRAPH = CORPUS / "tf_module_counter.pbtxt"
CAPTURES = CORPUS / "tf_module_counter.captures.json"
#: the counter and the sum, named as MobileNetV2's variables are
NAMES = {"count": "Conv1/kernel", "total": "loss/total"}
DROPPED = 'input: "^AssignAddVariableOp"'


@pytest.fixture
def files(tmp_path):
    caps = json.loads(CAPTURES.read_text())
    for spec in caps.values():
        spec["variable"] = NAMES[spec["variable"]]
    cap_file = tmp_path / "counter.captures.json"
    cap_file.write_text(json.dumps(caps))
    text = GRAPH.read_text()
    read = text.index('name: "Cast/ReadVariableOp"')
    edge = text.index(DROPPED, read)
    assert text.index("node {", read) > edge     # the edge is the read's own
    broken = tmp_path / "counter_broken.pbtxt"
    broken.write_text(text[:edge] + text[edge + len(DROPPED):])
    return cap_file, broken


def test_a_concrete_function_graph_replays_its_captured_variables(files, capsys, monkeypatch):
    # (the float Sum has no numpy model: TensorFlow's kernel computes it)
    monkeypatch.setenv("TFSEM_TF_KERNELS", "1")
    cap_file, broken = files
    rc = main(["check", str(GRAPH), str(broken), "--captures", str(cap_file),
               "--fetch", "Identity", "--timeout", "120", "--json"])
    v = json.loads(capsys.readouterr().out)
    assert rc == 1 and v["verdict"] == "unsound"
    rep = v["tensorflow_replay"]
    assert "is not in the graph" not in rep["reason"]
    assert rep["confirmed"], rep["reason"]
    assert rep["graph"] == f"the graph {broken}"
    # the counter's read ran before its increment: TensorFlow's state is
    # the counterexample's, under the capture map's names
    assert set(rep["outcome"]["state"]) == {"Conv1/kernel", "loss/total"}
    assert rep["outcome"]["state"]["Conv1/kernel"] == v["counterexample"]["outcome"]["state"][
        "Conv1/kernel"]
    assert "tensorflow" in v["confirmed"]


def test_captured_placeholders_become_handles_of_the_variables(files):
    from tfsem.backends import tensorflow as tfb
    from tfsem.graphdef import grappler as g
    cap_file, broken = files
    caps = json.loads(cap_file.read_text())
    gd = g.as_graph_def(broken)
    assert not tfb.variables_of(gd)       # what the replay saw before: no variable
    out = tfb.with_captured_variables(gd, None, caps)
    assert sorted(tfb.variables_of(out)) == ["Conv1/kernel", "loss/total"]
    by_name = {n.name: n for n in out.node}
    for ph, spec in caps.items():
        n = by_name[ph]           # the same node name: the forced schedule still names it
        assert n.op == "VarHandleOp" and n.attr["shared_name"].s.decode() == spec["variable"]
    # the other nodes and every edge as they were; the given graph untouched
    assert [(n.name, list(n.input)) for n in out.node] == \
        [(n.name, list(n.input)) for n in gd.node]
    assert sum(n.op == "VarHandleOp" for n in gd.node) == 0
    # without a map, the program the graph imports to names them
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode
    p = import_graph(decode("tensorflow.GraphDef", gd.SerializeToString()), ["Identity"],
                     captures=caps).program
    assert tfb.captured_variables(gd, p) == {ph: s["variable"] for ph, s in caps.items()}
