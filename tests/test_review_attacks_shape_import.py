"""A review finding, fixed: `Shape` of a variable's read was imported as a
constant of the variable's declared shape (oracle/opdefs/array.py
`_import_shape`, graphdef/importer.py `declared_shape`), but an
`AssignVariableOp` with validate_shape=false whose value's static shape is
unknown (TensorFlow's shape inference accepts it) may give the variable
another shape in the same run.  Measured on TensorFlow 2.21 (session, a
float32 variable declared [2], a placeholder of unknown shape fed [1, 2, 3]
assigned, then `tf.raw_ops.Shape` of the read): [3] with Grappler off, [2]
with it on (its constant folding materializes the static shape).  tfsem
gave [2], so Grappler's materialization was `sound`.

Now the constant stands only for a variable of
`oracle.static_shapes.shape_keeping_variables` (every Assign of the program
provably stores a value of its declared shape); elsewhere the import makes
the function Shape of the read (graphdef/importer.py
`_unfold_unsure_shapes`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

from tfsem.checking import check_rewrite
from tfsem.graphdef.importer import import_graph
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.values import Tensor

NIGHTLY = settings.get_current_profile_name() == "nightly"


def _var(name, dims):
    return {"name": name, "op": "VarHandleOp", "attr": {
        "dtype": {"type": "DT_FLOAT"}, "shape": {"shape": {"dim": [{"size": d} for d in dims]}},
        "shared_name": {"s": name.encode()}, "container": {"s": b""}}}


def _placeholder(name, dims=None):
    shape = {"unknown_rank": True} if dims is None else {"dim": [{"size": d} for d in dims]}
    return {"name": name, "op": "Placeholder",
            "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": {"shape": shape}}}


def _assign(name, var, value, validate=False):
    return {"name": name, "op": "AssignVariableOp", "input": [var, value],
            "attr": {"dtype": {"type": "DT_FLOAT"}, "validate_shape": {"b": validate}}}


def _read(name, var, *after):
    return {"name": name, "op": "ReadVariableOp", "input": [var] + [f"^{a}" for a in after],
            "attr": {"dtype": {"type": "DT_FLOAT"}}}


def _shape(name, x):
    return {"name": name, "op": "Shape", "input": [x],
            "attr": {"T": {"type": "DT_FLOAT"}, "out_type": {"type": "DT_INT32"}}}


def _graph(ph_dims=None, validate=False):
    return {"node": [_var("v", [2]), _placeholder("ph", ph_dims),
                     _assign("a", "v", "ph", validate), _read("r", "v", "a"), _shape("s", "r")]}


def _outputs(p, feeds, init):
    feeds = {k: Tensor(np.asarray(x, np.float32)) for k, x in feeds.items()}
    init = {k: Tensor(np.asarray(x, np.float32)) for k, x in init.items()}
    r = outcome_set(p, feeds, init, "atomic", "outputs+state")
    return [dict(o.outputs) for o, _ in r.items()]


def test_the_shape_of_a_variable_after_an_unvalidated_write_is_the_written_one():
    imported = import_graph(_graph(), ["s"], feeds=["ph"], shapes={"ph": [3]})
    p = imported.program
    assert p.node["s"].op == "Shape"
    outputs = _outputs(p, {"ph": [1, 2, 3]}, {"v": [0, 0]})
    assert outputs and all(np.array_equal(o["s"].array, [3]) for o in outputs)  # TF's kernel


def test_shape_n_of_such_a_read_is_the_written_shape_too():
    g = _graph()
    g["node"][-1] = {"name": "s", "op": "ShapeN", "input": ["r", "ph"],
                     "attr": {"T": {"type": "DT_FLOAT"}, "N": {"i": 2},
                              "out_type": {"type": "DT_INT32"}}}
    p = import_graph(g, ["s:0", "s:1"], feeds=["ph"], shapes={"ph": [3]}).program
    outputs = _outputs(p, {"ph": [1, 2, 3]}, {"v": [0, 0]})
    assert outputs and all(np.array_equal(o["s:0"].array, [3]) for o in outputs)


def test_grapplers_materialized_shape_is_not_sound_after_such_a_write():
    """The rewrite Grappler's constant folding makes (a Const of the static
    shape after the read) against the original: no longer `sound`."""
    orig = import_graph(_graph(), ["s"], feeds=["ph"], shapes={"ph": [3]}).program
    g = _graph()
    g["node"][-1] = {"name": "s", "op": "Const", "input": ["^r"], "attr": {
        "dtype": {"type": "DT_INT32"}, "value": {"tensor": {
            "dtype": "DT_INT32", "tensor_shape": {"dim": [{"size": 1}]}, "int_val": [2]}}}}
    new = import_graph(g, ["s"], feeds=["ph"], shapes={"ph": [3]}).program
    assert check_rewrite(orig, new).verdict == "unsound"


@pytest.mark.parametrize("validate", [False, True])
def test_the_fold_stands_where_every_write_keeps_the_declared_shape(validate):
    """A written value of the declared shape (a feed of shape [2]), with
    validate_shape either way: the Const stands, and it is right."""
    p = import_graph(_graph([2], validate), ["s"], feeds=["ph"]).program
    assert p.node["s"].op == "Const"
    assert all(np.array_equal(o["s"].array, [2]) for o in _outputs(p, {"ph": [1, 2]}, {"v": [0, 0]}))


def test_validate_shape_true_of_another_shape_does_not_keep_the_fold():
    """validate_shape=true stores a value of another shape in an
    uninitialized variable (TensorFlow's kernel): no fold."""
    p = import_graph(_graph([3], True), ["s"], feeds=["ph"]).program
    assert p.node["s"].op == "Shape"
    outputs = _outputs(p, {"ph": [1, 2, 3]}, {})
    assert outputs and all(np.array_equal(o["s"].array, [3]) for o in outputs)


def test_a_fold_of_a_variable_that_may_change_shape_claims_nothing_about_another():
    """v2 is written Reshape(c, Shape(Read(v))) with c of 3 elements: v's
    folded constant [2] would claim that shape for the value (a Reshape's
    result is of its target shape when it is a tensor), but v holds [3]
    there, so v2 does too."""
    g = _graph()
    g["node"][-1] = _shape("s1", "r")
    g["node"] += [
        _var("v2", [2]),
        {"name": "c", "op": "Const", "attr": {"dtype": {"type": "DT_FLOAT"}, "value": {
            "tensor": {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": 3}]},
                       "float_val": [1.0, 2.0, 3.0]}}}},
        {"name": "reshape", "op": "Reshape", "input": ["c", "s1"],
         "attr": {"T": {"type": "DT_FLOAT"}, "Tshape": {"type": "DT_INT32"}}},
        _assign("a2", "v2", "reshape"), _read("r2", "v2", "a2"), _shape("s", "r2")]
    p = import_graph(g, ["s"], feeds=["ph"], shapes={"ph": [3]}).program
    assert p.node["s"].op == "Shape"
    outputs = _outputs(p, {"ph": [1, 2, 3]}, {"v": [0, 0], "v2": [0, 0]})
    assert outputs and all(np.array_equal(o["s"].array, [3]) for o in outputs)


@pytest.mark.skipif(not NIGHTLY, reason="imports TensorFlow (nightly profile)")
@pytest.mark.parametrize("dims", [[3], [1, 2, 3], [], [0], [2]])
def test_the_shape_after_an_unvalidated_write_is_tensorflows(dims):
    """TensorFlow 2.21's kernels (a session, Grappler off): Shape of the
    read after AssignVariableOp(validate_shape=false) of a value of `dims`,
    against tfsem's outcome on the imported graph."""
    tf = pytest.importorskip("tensorflow")
    from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
    from tfsem.graphdef.proto import decode
    tf1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        v = tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[2], shared_name="v", name="v")
        init = tf.raw_ops.AssignVariableOp(resource=v, value=tf.constant([1.0, 2.0]),
                                           name="init")
        ph = tf1.placeholder(tf.float32, None, name="ph")
        a = tf.raw_ops.AssignVariableOp(resource=v, value=ph, validate_shape=False, name="a")
        with tf.control_dependencies([a]):
            r = tf.raw_ops.ReadVariableOp(resource=v, dtype=tf.float32, name="r")
        s = tf.raw_ops.Shape(input=r, out_type=tf.int32, name="s")
    config = config_pb2.ConfigProto(graph_options=config_pb2.GraphOptions(
        rewrite_options=rewriter_config_pb2.RewriterConfig(disable_meta_optimizer=True),
        optimizer_options=config_pb2.OptimizerOptions(opt_level=config_pb2.OptimizerOptions.L0)))
    value = np.arange(int(np.prod(dims)), dtype=np.float32).reshape(dims)
    with tf1.Session(graph=g, config=config) as sess:
        sess.run(init)
        want = sess.run(s, {ph: value})
    graph = decode("GraphDef", g.as_graph_def().SerializeToString())
    p = import_graph(graph, ["s"], feeds=["ph"], shapes={"ph": dims}).program
    outputs = _outputs(p, {"ph": value}, {"v": [1, 2]})
    assert outputs and all(np.array_equal(o["s"].array, want) for o in outputs), (dims, want)
