"""Shapes computed at run time (oracle/opdefs/array.py, issue 30 item 2): the
shape functions on hand-worked cases, their import from GraphDefs (Sum over
axes from Range, Reshape to a shape from ConcatV2, as Keras and tf1 losses
write them), and the checker's verdicts where a value decides a shape.
TensorFlow's kernels themselves: tests/test_shape_ops_tensorflow.py."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.backends.execute import apply_function
from tfsem.checking import check_rewrite
from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.oracle import functions as fns
from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.program import TensorType
from tfsem.oracle.values import SHAPE_MISMATCH, Error, Tensor

from test_graphdef_ops import const, node, placeholder


def f(name, *args, **attrs):
    return fns.get(name).apply([Tensor(np.asarray(a)) for a in args], attrs)


I32 = np.int32


def test_operands_of_different_dtypes_are_not_a_dtype_mismatch():
    x = np.arange(6, dtype=np.float32)
    (r,) = f("ReshapeTo", x, np.array([3, 2], I32))
    assert r.array.shape == (3, 2) and r.array.dtype == np.float32
    # and on the device path the backends share (execute.apply_function)
    (d,) = apply_function(fns.get("ReshapeTo"), [x, np.array([2, -1], np.int64)], {}, np)
    assert d.shape == (2, 3)
    # a float shape operand has no kernel: an error value, not a crash
    (e,) = f("ReshapeTo", x, np.array([3., 2.], np.float32))
    assert isinstance(e, Error) and e.reason == "no-kernel"


def test_shape_size_rank_of_an_empty_tensor():
    z = np.zeros((2, 0, 3), np.int8)
    assert f("Shape", z, out_type="int64")[0].array.tolist() == [2, 0, 3]
    assert f("Shape", z, out_type="int64")[0].array.dtype == np.int64
    assert f("Size", z, out_type="int32")[0].array.tolist() == 0
    assert f("Rank", np.float32(1))[0].array.tolist() == 0


def test_range_sizes_and_refusals():
    assert f("Range", I32(5), I32(0), I32(-2))[0].array.tolist() == [5, 3, 1]
    assert f("Range", I32(0), I32(0), I32(1))[0].array.shape == (0,)
    for bad in ((0, 5, 0), (5, 0, 1), (0, 5, -1)):
        (e,) = f("Range", *map(I32, bad))
        assert isinstance(e, Error) and e.reason == SHAPE_MISMATCH
    (e,) = f("Range", I32(0), np.int64(3), I32(1))
    assert isinstance(e, Error)


def ss(x, b, e, s, **m):
    attrs = {k: m.get(k, 0) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                      "new_axis_mask", "shrink_axis_mask")}
    return f("StridedSlice", x, np.array(b, I32), np.array(e, I32), np.array(s, I32), **attrs)[0]


def test_strided_slice_masks():
    x = np.arange(24).reshape(2, 3, 4)
    assert ss(x, [-1], [0], [1], shrink_axis_mask=1).array.tolist() == x[-1].tolist()
    assert ss(x, [0, 1], [0, 3], [1, 2], ellipsis_mask=1).array.tolist() == x[..., 1:3:2].tolist()
    assert ss(x, [0, 0], [0, 0], [1, 1], new_axis_mask=1, begin_mask=2,
              end_mask=2).array.shape == (1, 2, 3, 4)
    assert ss(x, [3], [-5], [-1]).array.tolist() == x[::-1].tolist()   # clamped both ends
    assert ss(x, [1], [1], [1]).array.shape == (0, 3, 4)
    for bad in (dict(b=[5], e=[6], s=[1], shrink_axis_mask=1), dict(b=[0], e=[1], s=[0]),
                dict(b=[0, 0], e=[1, 1], s=[1, 1], ellipsis_mask=3)):
        e = ss(x, bad.pop("b"), bad.pop("e"), bad.pop("s"), **bad)
        assert isinstance(e, Error) and e.reason == SHAPE_MISMATCH


def test_gather_slice_bcast_stitch():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert f("GatherV2", x, np.array([2, 0], I32), I32(-1),
             batch_dims=0)[0].array.tolist() == [[2, 0], [5, 3]]
    assert isinstance(f("GatherV2", x, np.array([3], I32), I32(1), batch_dims=0)[0], Error)
    assert isinstance(f("GatherV2", x, np.array([-1], I32), I32(0), batch_dims=0)[0], Error)
    assert f("Slice", x, np.array([1, 1], I32), np.array([-1, 1], I32))[0].array.tolist() == [[4]]
    assert isinstance(f("Slice", x, np.array([1, 1], I32), np.array([2, 1], I32))[0], Error)
    r0, r1 = f("BroadcastGradientArgs", np.array([4, 1, 3], I32), np.array([5, 1], I32))
    assert (r0.array.tolist(), r1.array.tolist()) == ([1], [0, 2])
    r0, r1 = f("BroadcastGradientArgs", np.array([2, 1], I32), np.array([2, 1], I32))
    assert (r0.array.tolist(), r1.array.tolist()) == ([], [])
    (s,) = f("DynamicStitch/2", np.array([0, 1], I32), np.array([1], I32),
             np.array([1., 2.], np.float32), np.array([-0.], np.float32))
    assert s.array.tobytes() == np.array([1., -0.], np.float32).tobytes()   # later pair wins


def test_reduction_axes_with_duplicates_fail_like_tensorflow():
    x = np.arange(6, dtype=I32).reshape(2, 3)
    assert f("SumAlong", x, np.array([-1], I32), keep_dims=True)[0].array.tolist() == [[3], [12]]
    assert isinstance(f("SumAlong", x, np.array([1, -1], I32), keep_dims=False)[0], Error)
    assert isinstance(f("Sum", x, axes=[0, 0], keep_dims=False)[0], Error)


# -- import -----------------------------------------------------------------


def import_and_run(nodes, fetch, feeds):
    p = import_graph({"node": nodes}, [fetch], []).program
    r = outcome_set(p, feeds, {}, "atomic", "outputs")
    (o,) = r.as_dict(10)
    return p, dict(o.outputs)


def test_sum_over_axes_from_range_imports_and_runs():
    # what every Keras loss writes: Sum(x, Range(0, Rank(x), 1))
    nodes = [placeholder("x", (2, 3), "DT_INT32"),
             node("rank", "Rank", ["x"], T="DT_INT32"),
             const("zero", 0, "DT_INT32"), const("one", 1, "DT_INT32"),
             node("range", "Range", ["zero", "rank", "one"], T=None, Tidx={"type": "DT_INT32"}),
             node("Sum", "Sum", ["x", "range"], T="DT_INT32", Tidx={"type": "DT_INT32"},
                  keep_dims={"b": False})]
    x = np.array([[1, 2, 3], [4, 5, 2**31 - 1]], I32)
    p, out = import_and_run(nodes, "Sum", {"x": Tensor(x)})
    assert [n.op for n in p.nodes if n.name == "Sum"] == ["SumAlong"]
    assert out["Sum"] == Tensor(np.array(x.sum(dtype=I32), I32))   # wrapping


def test_reshape_to_a_shape_from_concat_imports_and_runs():
    # the tf1 softmax cross-entropy: Reshape(x, ConcatV2([[-1], Slice(Shape(x), [rank-1], [1])]))
    nodes = [placeholder("x", (2, 3, 4), "DT_INT32"),
             node("shape", "Shape", ["x"], T="DT_INT32", out_type={"type": "DT_INT32"}),
             node("shape2", "Shape", ["shape"], T="DT_INT32", out_type={"type": "DT_INT32"}),
             const("b", [2], "DT_INT32"), const("n", [1], "DT_INT32"),
             node("last", "Slice", ["shape", "b", "n"], T="DT_INT32", Index={"type": "DT_INT32"}),
             const("m1", [-1], "DT_INT32"), const("ax", 0, "DT_INT32"),
             node("cat", "ConcatV2", ["m1", "last", "ax"], T="DT_INT32", N={"i": 2},
                  Tidx={"type": "DT_INT32"}),
             node("Reshape", "Reshape", ["x", "cat"], T="DT_INT32", Tshape={"type": "DT_INT32"})]
    x = np.arange(24, dtype=I32).reshape(2, 3, 4)
    _, out = import_and_run(nodes, "Reshape", {"x": Tensor(x)})
    assert out["Reshape"] == Tensor(x.reshape(6, 4))


# -- the checker where a value decides a shape -------------------------------


def shaped(shape_of: str):
    """out = Reshape(a, Shape(shape_of)): the result's shape is a value."""
    return P.program([P.apply("s", "Shape", "$" + shape_of, out_type="int32"),
                      P.apply("r", "ReshapeTo", "$a", "s")], {"out": "r"}, [],
                     {"a": TensorType("int32", (6,)), "b": TensorType("int32", (2, 3)),
                      "c": TensorType("int32", (3, 2))})


def test_checker_never_proves_a_computed_shape_wrong():
    v = check_rewrite(shaped("b"), shaped("c"))   # same elements, other shape
    assert v.verdict in ("unsound", "unknown")
    assert check_rewrite(shaped("b"), shaped("b")).verdict == "sound"


def folded(shape_from: str):
    """Reshape(a, Shape(b)) before constant folding, Reshape(a, [2, 3]) after."""
    feeds = {"a": TensorType("int32", (6,)), "b": TensorType("int32", (2, 3))}
    if shape_from == "const":
        nodes = [P.const("s", Tensor(np.array([2, 3], I32))), P.apply("r", "ReshapeTo", "$a", "s")]
    elif shape_from == "attr":
        nodes = [P.apply("r", "Reshape", "$a", shape=[2, 3])]
    else:
        nodes = [P.apply("s", "Shape", "$b", out_type="int32"),
                 P.apply("r", "ReshapeTo", "$a", "s")]
    return P.program(nodes, {"out": "r"}, [], feeds)


@pytest.mark.parametrize("after", ["const", "attr"])
def test_folding_a_computed_shape_is_proved(after):
    # Shape of a tensor is its static kind; a constant operand is the
    # constant-operand form: the symbolic checker proves the fold
    v = check_rewrite(folded("shape"), folded(after))
    assert v.verdict == "sound", v.reason


def test_folding_to_a_wrong_shape_is_not_proved():
    wrong = P.program([P.apply("r", "Reshape", "$a", shape=[3, 2])], {"out": "r"}, [],
                      {"a": TensorType("int32", (6,)), "b": TensorType("int32", (2, 3))})
    assert check_rewrite(folded("shape"), wrong).verdict == "unsound"


# -- export: the functions become TensorFlow's ops again ----------------------


def test_export_round_trip_keeps_computed_shapes():
    from tfsem.graphdef.exporter import export_graph
    x = np.arange(24, dtype=I32).reshape(2, 3, 4)
    nodes = [placeholder("x", (2, 3, 4), "DT_INT32"),
             node("shape", "Shape", ["x"], T="DT_INT32", out_type={"type": "DT_INT32"}),
             const("b", [1], "DT_INT32"), const("e", [0], "DT_INT32"), const("s", [1], "DT_INT32"),
             node("tail", "StridedSlice", ["shape", "b", "e", "s"], T="DT_INT32",
                  Index={"type": "DT_INT32"}, begin_mask={"i": 0}, end_mask={"i": 1},
                  ellipsis_mask={"i": 0}, new_axis_mask={"i": 0}, shrink_axis_mask={"i": 0}),
             const("m1", [-1], "DT_INT32"), const("ax", 0, "DT_INT32"),
             node("cat", "ConcatV2", ["m1", "tail", "ax"], T="DT_INT32", N={"i": 2},
                  Tidx={"type": "DT_INT32"}),
             node("flat", "Reshape", ["x", "cat"], T="DT_INT32", Tshape={"type": "DT_INT32"}),
             const("perm", [1, 0, 2], "DT_INT32"),
             node("tr", "Transpose", ["flat", "perm"], T="DT_INT32", Tperm={"type": "DT_INT32"})]
    feeds = {"x": Tensor(x)}
    p, out = import_and_run(nodes, "tr", feeds)
    assert out["tr"] == Tensor(x.reshape(-1, 3, 4).transpose(1, 0, 2))
    g = export_graph(p)
    assert {"StridedSlice", "Reshape", "Transpose"} <= {n["op"] for n in g["node"]}
    q = import_graph(g, [next(iter(p.outputs))], []).program
    r = outcome_set(q, feeds, {}, "atomic", "outputs")
    (o,) = r.as_dict(10)
    assert list(dict(o.outputs).values()) == [out["tr"]]


# -- ConcatV2 with its axis computed at run time ----------------------------------


def test_concat_axis_at_takes_a_scalar_or_one_element_axis_and_fails_like_the_constant_form():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = -np.arange(6, dtype=np.float32).reshape(2, 3)
    for axis_dt in (I32, np.int64):
        for ax in (0, 1, -1, -2):
            for operand in (np.array(ax, axis_dt), np.array([ax], axis_dt)):
                (got,) = f("ConcatAxisAt", a, b, operand)
                (want,) = f("ConcatAxis", a, b, axis=ax)
                assert got == want and got.array.shape == np.concatenate([a, b], ax).shape
    for bad in (np.array(2, I32), np.array(-3, I32), np.array([0, 1], I32),
                np.array([[0]], I32), np.array(0, np.int16), np.array(0.0, np.float32)):
        (got,) = f("ConcatAxisAt", a, b, bad)
        assert isinstance(got, Error), bad
    assert f("ConcatAxisAt", a, b, np.array(2, I32))[0] == f("ConcatAxis", a, b, axis=2)[0]
    (got,) = f("ConcatAxisAt", a, a.astype(np.float64), np.array(0, I32))
    assert got == Error("dtype-mismatch")


def test_concat_with_a_computed_axis_imports_runs_and_exports():
    from tfsem.graphdef.exporter import export_graph
    # axis = Rank(x) - 1, computed at run time
    nodes = [placeholder("x", (2, 3), "DT_INT32"), placeholder("y", (2, 2), "DT_INT32"),
             placeholder("z", (2, 1), "DT_INT32"),
             node("rank", "Rank", ["x"], T="DT_INT32"), const("one", 1, "DT_INT32"),
             node("ax", "Sub", ["rank", "one"], T="DT_INT32"),
             node("cat", "ConcatV2", ["x", "y", "z", "ax"], T="DT_INT32", N={"i": 3},
                  Tidx={"type": "DT_INT32"})]
    x, y, z = (np.arange(k, dtype=I32).reshape(2, -1) for k in (6, 4, 2))
    feeds = {"x": Tensor(x), "y": Tensor(y), "z": Tensor(z)}
    p, out = import_and_run(nodes, "cat", feeds)
    assert [n.op for n in p.nodes].count("ConcatAxisAt") == 2
    assert out["cat"] == Tensor(np.concatenate([x, y, z], axis=1))
    g = export_graph(p)
    assert sum(n["op"] == "ConcatV2" for n in g["node"]) == 2
    q = import_graph(g, [next(iter(p.outputs))], []).program
    (o,) = outcome_set(q, feeds, {}, "atomic", "outputs").as_dict(10)
    assert list(dict(o.outputs).values()) == [out["cat"]]


def test_concat_with_an_axis_of_a_dtype_tensorflow_refuses_is_refused_by_name():
    nodes = [placeholder("x", (2,), "DT_INT32"), placeholder("ax", (), "DT_INT32"),
             node("cat", "ConcatV2", ["x", "x", "ax"], T="DT_INT32", N={"i": 2},
                  Tidx={"type": "DT_INT16"})]
    with pytest.raises(GraphImportError, match="Tidx must be int32 or int64"):
        import_graph({"node": nodes}, ["cat"], [])
