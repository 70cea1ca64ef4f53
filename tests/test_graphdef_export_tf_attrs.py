"""The exporter writes every attribute of an opaque TensorFlow op (`tf.OP`
nodes, whose attributes the importer keeps as `tf_attrs`): lists of strings
and floats too.  A `_FusedMatMul` exported without its `fused_ops` crashed
the process that ran it (the replay of `tfsem grappler`'s remap verdicts on
the real-graphs corpus).  No TensorFlow needed."""

from __future__ import annotations

from tfsem.graphdef.exporter import export_graph
from tfsem.graphdef.proto import decode, encode
from tfsem.oracle.jsonio import program_from_json

FUSED = {
    "format": "tfsem.program/1",
    "feeds": {"a": {"dtype": "float32", "shape": [1, 2]}, "w": {"dtype": "float32", "shape": [2, 1]},
              "b": {"dtype": "float32", "shape": [1]}},
    "nodes": [
        {"inputs": ["$a"], "name": "a", "op": "Identity"},
        {"inputs": ["$w"], "name": "w", "op": "Identity"},
        {"inputs": ["$b"], "name": "b", "op": "Identity"},
        {"inputs": ["a", "w", "b"], "name": "fused", "op": "tf._FusedMatMul/3/1",
         "tf_attrs": {"T": "DT_FLOAT", "epsilon": 0.0, "fused_ops": ["BiasAdd", "Relu"],
                      "leakyrelu_alpha": 0.2, "num_args": 1, "transpose_a": False,
                      "transpose_b": False}},
        {"inputs": ["fused"], "name": "out0", "op": "Identity"},
    ],
    "outputs": {"out0": "out0"},
    "variables": [],
}


def _node(graph: dict, op: str) -> dict:
    return next(n for n in graph["node"] if n["op"] == op)


def test_a_fused_ops_list_of_strings_is_exported():
    graph = export_graph(program_from_json(FUSED))
    attr = _node(graph, "_FusedMatMul")["attr"]
    assert attr["fused_ops"] == {"list": {"s": [b"BiasAdd", b"Relu"]}}
    assert attr["num_args"] == {"i": 1} and attr["T"] == {"type": "DT_FLOAT"}
    # and it survives the GraphDef's encoding
    back = _node(decode("GraphDef", encode("GraphDef", graph)), "_FusedMatMul")["attr"]
    assert [bytes(s) for s in back["fused_ops"]["list"]["s"]] == [b"BiasAdd", b"Relu"]


def test_a_list_of_floats_is_exported():
    data = dict(FUSED, nodes=[dict(n) for n in FUSED["nodes"]])
    data["nodes"][3] = dict(data["nodes"][3], tf_attrs=dict(data["nodes"][3]["tf_attrs"],
                                                             extra=[0.5, 1.5]))
    attr = _node(export_graph(program_from_json(data)), "_FusedMatMul")["attr"]
    assert attr["extra"] == {"list": {"f": [0.5, 1.5]}}
