"""The Grappler targets' settings (campaigns/tensorflow_target.py): the graph
is placed on the CPU and only sinks and stateful nodes are preserved, so the
remapper fuses MatMul + BiasAdd + Relu into `_FusedMatMul` (which imports,
kernel-evaluated); default attributes are written on both sides, so an
optimizer that changes nothing (layout on a CPU) returns the judged program
itself.  Needs TensorFlow (Grappler)."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow", reason="runs Grappler")

from tfsem.oracle.jsonio import program_from_json  # noqa: E402

DENSE = {
    "format": "tfsem.program/1", "variables": [],
    "feeds": {"x": {"dtype": "float32", "shape": [2, 3]}},
    "nodes": [
        {"name": "x", "op": "Identity", "inputs": ["$x"]},
        {"name": "w", "op": "Const", "value": {"dtype": "float32",
                                                "value": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]}},
        {"name": "m", "op": "MatMul", "inputs": ["x", "w"], "transpose_a": False,
         "transpose_b": False},
        {"name": "b", "op": "Const", "value": {"dtype": "float32", "value": [1.0, -1.0]}},
        {"name": "ba", "op": "BiasAdd", "inputs": ["m", "b"]},
        {"name": "r", "op": "tf.Relu6/1/1", "inputs": ["ba"], "tf_attrs": {"T": "DT_FLOAT"}},
        {"name": "out0", "op": "Identity", "inputs": ["r"]},
    ],
    "outputs": {"out0": "out0"},
}


def test_remap_fuses_a_placed_unpreserved_pattern_and_layout_changes_nothing():
    from tfsem.campaigns import tensorflow_target as T
    p = program_from_json(DENSE)
    data, fetches, targets = T._exported(p, defaults=True)
    placed = T._for_grappler(data)
    kept = T._preserved(placed, fetches, targets)
    assert "m" not in kept and "ba" not in kept and "out0" in fetches
    judged = T.grappler_remap.prepare(p)
    assert judged is not None and any(n.op.endswith(".ftz") for n in judged.nodes)
    fused = T.grappler_remap(p)
    ops = {n.op.split("/")[0] for n in fused.nodes}
    assert "tf._FusedMatMul" in ops and "MatMul" not in ops, ops
    (node,) = [n for n in fused.nodes if n.op.startswith("tf._FusedMatMul")]
    assert node.attrs["tf_attrs"]["fused_ops"] == ["BiasAdd", "Relu6"]
    # (layout does nothing on a CPU: the result is the judged program, default
    # attributes included on both sides)
    assert T.grappler_layout(p) == T.grappler_layout.prepare(p)
