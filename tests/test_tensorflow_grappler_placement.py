"""`tfsem grappler` gives Grappler the graph placed on the CPU, as
TensorFlow's placer leaves it before Grappler runs (graphdef/grappler.py
`placed`): the remapper fuses MatMul + BiasAdd + Relu only on a node it sees
on a CPU.  The placement helpers themselves need no TensorFlow; the command's
tests do (skipped without it)."""

from __future__ import annotations

import json

import pytest

from tfsem.graphdef import grappler as g
from tfsem.graphdef.proto import decode, encode

#: x @ w + b, Relu, fetched through an Identity; no node names a device
DENSE = """
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: 2 } dim { size: 2 } } } } }
node { name: "w" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "value" value { tensor { dtype: DT_FLOAT
         tensor_shape { dim { size: 2 } dim { size: 2 } } float_val: 1 float_val: -2
         float_val: 0.5 float_val: 3 } } } }
node { name: "b" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } }
         float_val: 1 float_val: -1 } } } }
node { name: "mm" op: "MatMul" input: "x" input: "w" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "ba" op: "BiasAdd" input: "mm" input: "b" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "r" op: "Relu" input: "ba" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "out" op: "Identity" input: "r" attr { key: "T" value { type: DT_FLOAT } } }
"""


def test_placed_bytes_places_unplaced_nodes_of_graph_and_functions_only():
    graph = {"node": [{"name": "a", "op": "NoOp"},
                      {"name": "b", "op": "NoOp", "device": "/device:CPU:1"}],
             "library": {"function": [{"signature": {"name": "f"},
                                       "node_def": [{"name": "c", "op": "NoOp"}]}]}}
    out = decode("tensorflow.GraphDef", g.placed_bytes(encode("GraphDef", graph)))
    devices = {n["name"]: n.get("device") for n in out["node"]}
    assert devices == {"a": g.CPU_DEVICE, "b": "/device:CPU:1"}
    (f,) = out["library"]["function"]
    assert [n.get("device") for n in f["node_def"]] == [g.CPU_DEVICE]


def test_the_device_is_no_part_of_the_imported_program():
    from tfsem.graphdef.importer import import_graph
    data = encode("GraphDef", {"node": [
        {"name": "x", "op": "Placeholder",
         "attr": {"dtype": {"type": "DT_INT64"}, "shape": {"shape": {"dim": [{"size": 2}]}}}},
        {"name": "y", "op": "Neg", "input": ["x"], "attr": {"T": {"type": "DT_INT64"}}}]})
    plain = import_graph(decode("tensorflow.GraphDef", data), ["y"], []).program
    placed = import_graph(decode("tensorflow.GraphDef", g.placed_bytes(data)), ["y"], []).program
    assert plain == placed


def _grappler(tmp_path, capsys, *extra):
    pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow] (tensorflow-cpu)")
    from tfsem.cli import main
    path = tmp_path / "dense.pbtxt"
    path.write_text(DENSE)
    save = tmp_path / "saved"
    main(["grappler", str(path), "--optimizer", "remap", "--fetch", "out", "--timeout", "5",
          "--save", str(save), "--json", *extra])
    report = json.loads(capsys.readouterr().out)
    (row,) = report["results"]
    return report, row, g.as_graph_def(save / "remap.pbtxt")


def test_cli_remap_fuses_matmul_biasadd_relu_of_the_placed_graph(tmp_path, capsys):
    report, row, out = _grappler(tmp_path, capsys)
    assert report["placed"] is True and report["placement"] == g.CPU_DEVICE
    (fused,) = [n for n in out.node if n.op == "_FusedMatMul"]
    assert list(fused.attr["fused_ops"].list.s) == [b"BiasAdd", b"Relu"]
    assert fused.name == "r" and {"mm", "ba"} <= set(row["graph"]["removed"])
    assert row["nodes_before"] == 7 and row["nodes_after"] == 5
    # the fused op imports (a kernel-evaluated op of tfsem's registry)
    assert row["status"] == "checked", row


def test_cli_no_place_gives_grappler_the_unplaced_graph_and_nothing_fuses(tmp_path, capsys):
    report, row, out = _grappler(tmp_path, capsys, "--no-place")
    assert report["placed"] is False and report["placement"] == "no device (unplaced)"
    assert "_FusedMatMul" not in {n.op for n in out.node}
    assert not row["graph"]["removed"]
