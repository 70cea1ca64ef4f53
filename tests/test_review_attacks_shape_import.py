"""Open finding (not fixed): `Shape` of a variable's read is imported as a
constant of the variable's declared shape (oracle/opdefs/array.py
`_import_shape`, graphdef/importer.py `declared_shape`), but an
`AssignVariableOp` with validate_shape=false whose value's static shape is
unknown (TensorFlow's shape inference accepts it) may give the variable
another shape in the same run.  Measured on TensorFlow 2.21 (session, a
float32 variable declared [2], a placeholder of unknown shape fed [1, 2, 3]
assigned, then `tf.raw_ops.Shape` of the read): [3] with Grappler off, [2]
with it on (its constant folding materializes the static shape).  tfsem
gives [2]: a rewrite that puts the constant [2] in place of the Shape (what
Grappler does) is `sound` where the kernels give [3].  Not fixed here:
trusting no declared shape of a variable that such a write reaches loses
the constant Shape of most trained variables' reads (TensorFlow 2 writes
validate_shape=false); the lead decides."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.graphdef.importer import import_graph
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.values import Tensor


def _graph():
    return {"node": [
        {"name": "v", "op": "VarHandleOp", "attr": {
            "dtype": {"type": "DT_FLOAT"}, "shape": {"shape": {"dim": [{"size": 2}]}},
            "shared_name": {"s": b"v"}, "container": {"s": b""}}},
        {"name": "ph", "op": "Placeholder", "attr": {
            "dtype": {"type": "DT_FLOAT"}, "shape": {"shape": {"unknown_rank": True}}}},
        {"name": "a", "op": "AssignVariableOp", "input": ["v", "ph"],
         "attr": {"dtype": {"type": "DT_FLOAT"}, "validate_shape": {"b": False}}},
        {"name": "r", "op": "ReadVariableOp", "input": ["v", "^a"],
         "attr": {"dtype": {"type": "DT_FLOAT"}}},
        {"name": "s", "op": "Shape", "input": ["r"],
         "attr": {"T": {"type": "DT_FLOAT"}, "out_type": {"type": "DT_INT32"}}}]}


@pytest.mark.xfail(strict=True, reason="open finding: Shape of a read is the declared shape")
def test_the_shape_of_a_variable_after_an_unvalidated_write_is_the_written_one():
    imported = import_graph(_graph(), ["s"], feeds=["ph"], shapes={"ph": [3]})
    p = imported.program
    feed = next(iter(p.feed_names))
    r = outcome_set(p, {feed: Tensor(np.array([1, 2, 3], np.float32))},
                    {"v": Tensor(np.zeros(2, np.float32))}, "atomic", "outputs+state")
    outputs = [dict(o.outputs) for o, _ in r.items()]
    assert all(np.array_equal(o["s"].array, [3]) for o in outputs)   # TensorFlow's kernel
