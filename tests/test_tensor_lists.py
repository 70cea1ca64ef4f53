"""TensorList values (oracle/opdefs/lists.py) against TensorFlow's list
kernels, op by op, failures included (where TensorFlow fails the op, tfsem's
value is the error `invalid-argument`), with NaN, -0.0 and integer extremes
carried bit for bit; and a tf.TensorArray loop (TensorListFromTensor,
Reserve, GetItem, SetItem, Stack in a While with an assignment in the body)
imported and explored against TensorFlow's executor.  Skipped without
TensorFlow, except the checks that need none."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tfsem.oracle import functions as fns
from tfsem.oracle.opdefs.lists import TensorList
from tfsem.oracle.values import Error, Tensor, format_value, value_to_json

I32 = np.int32
F32 = np.float32


def S(*dims):
    """An element_shape operand (S() is -1: unknown rank)."""
    return np.array(dims, I32) if dims else np.array(-1, I32)


# each case: steps (op, inputs, attrs); an input is a numpy array or the
# index of an earlier step's result (k, port); the last step's output 0 is compared
CASES = {
    "reserve-get-unset-zeros": [("TensorListReserve", [S(2), I32(3)], {"element_dtype": "float32"}),
                                ("TensorListGetItem", [(0, 0), I32(1), S()], {"element_dtype": "float32"})],
    "reserve-negative": [("TensorListReserve", [S(2), I32(-1)], {"element_dtype": "float32"}),
                         ("TensorListLength", [(0, 0)], {})],
    "get-unset-unknown-shape": [("TensorListReserve", [S(), I32(2)], {"element_dtype": "float32"}),
                                ("TensorListGetItem", [(0, 0), I32(0), S()], {"element_dtype": "float32"})],
    "get-unset-shape-from-a-set-element": [
        ("TensorListReserve", [S(-1), I32(2)], {"element_dtype": "float32"}),
        ("TensorListSetItem", [(0, 0), I32(1), np.array([np.nan, -0.0, 1e-45], F32)],
         {"element_dtype": "float32"}),
        ("TensorListGetItem", [(1, 0), I32(0), S(-1)], {"element_dtype": "float32"})],
    "set-get-nan-signed-zero-subnormal": [
        ("TensorListReserve", [S(3), I32(2)], {"element_dtype": "float32"}),
        ("TensorListSetItem", [(0, 0), I32(1), np.array([np.nan, -0.0, 1e-45], F32)],
         {"element_dtype": "float32"}),
        ("TensorListStack", [(1, 0), S(3)], {"element_dtype": "float32", "num_elements": -1})],
    "set-out-of-range": [("TensorListReserve", [S(), I32(2)], {"element_dtype": "int64"}),
                         ("TensorListSetItem", [(0, 0), I32(2), np.int64(7)], {"element_dtype": "int64"})],
    "set-resize": [("TensorListReserve", [S(), I32(1)], {"element_dtype": "int64"}),
                   ("TensorListSetItem", [(0, 0), I32(3), np.int64(-2**63)],
                    {"element_dtype": "int64", "resize_if_index_out_of_bounds": True}),
                   ("TensorListLength", [(1, 0)], {})],
    "set-incompatible-shape": [("TensorListReserve", [S(2), I32(2)], {"element_dtype": "int64"}),
                               ("TensorListSetItem", [(0, 0), I32(0), np.zeros(3, np.int64)],
                                {"element_dtype": "int64"})],
    "set-wrong-dtype": [("TensorListReserve", [S(), I32(2)], {"element_dtype": "int64"}),
                        ("TensorListSetItem", [(0, 0), I32(0), I32(1)], {"element_dtype": "int32"})],
    "get-out-of-range": [("TensorListReserve", [S(), I32(2)], {"element_dtype": "int64"}),
                         ("TensorListGetItem", [(0, 0), I32(-1), S()], {"element_dtype": "int64"})],
    "stack-empty-known-shape": [("TensorListReserve", [S(2), I32(0)], {"element_dtype": "int32"}),
                                ("TensorListStack", [(0, 0), S(2)], {"element_dtype": "int32",
                                                                     "num_elements": -1})],
    "stack-empty-unknown-shape": [("TensorListReserve", [S(), I32(0)], {"element_dtype": "int32"}),
                                  ("TensorListStack", [(0, 0), S()], {"element_dtype": "int32",
                                                                      "num_elements": -1})],
    "stack-wrong-num-elements": [("TensorListReserve", [S(2), I32(2)], {"element_dtype": "int32"}),
                                 ("TensorListStack", [(0, 0), S(2)], {"element_dtype": "int32",
                                                                      "num_elements": 3})],
    "stack-only-unset-unknown": [("TensorListReserve", [S(-1), I32(2)], {"element_dtype": "int32"}),
                                 ("TensorListStack", [(0, 0), S(-1)], {"element_dtype": "int32",
                                                                       "num_elements": -1})],
    "from-tensor-stack": [("TensorListFromTensor", [np.array([[1, 2], [2**31 - 1, -2**31]], I32), S(2)],
                           {"element_dtype": "int32"}),
                          ("TensorListStack", [(0, 0), S()], {"element_dtype": "int32",
                                                              "num_elements": 2})],
    "from-tensor-scalar": [("TensorListFromTensor", [I32(4), S()], {"element_dtype": "int32"}),
                           ("TensorListLength", [(0, 0)], {})],
    "from-tensor-incompatible": [("TensorListFromTensor", [np.zeros((2, 3), I32), S(2)],
                                  {"element_dtype": "int32"}),
                                 ("TensorListLength", [(0, 0)], {})],
    "element-shape-partial": [("TensorListReserve", [S(-1, 4), I32(1)], {"element_dtype": "int32"}),
                              ("TensorListElementShape", [(0, 0)], {"shape_type": "int32"})],
    "element-shape-unknown-rank": [("TensorListReserve", [S(), I32(1)], {"element_dtype": "int32"}),
                                   ("TensorListElementShape", [(0, 0)], {"shape_type": "int64"})],
    "push-pop": [("TensorListReserve", [S(), I32(0)], {"element_dtype": "int64"}),
                 ("TensorListPushBack", [(0, 0), np.int64(5)], {"element_dtype": "int64"}),
                 ("TensorListPushBack", [(1, 0), np.int64(-6)], {"element_dtype": "int64"}),
                 ("TensorListPopBack", [(2, 0), S()], {"element_dtype": "int64"}),
                 ("TensorListStack", [(3, 0), S()], {"element_dtype": "int64", "num_elements": -1})],
    "pop-value": [("TensorListFromTensor", [np.array([3, 4], np.int64), S()], {"element_dtype": "int64"}),
                  ("TensorListPopBack", [(0, 0), S()], {"element_dtype": "int64"}),
                  ("Identity", [(1, 1)], {})],
    "pop-empty": [("TensorListReserve", [S(), I32(0)], {"element_dtype": "int64"}),
                  ("TensorListPopBack", [(0, 0), S()], {"element_dtype": "int64"}),
                  ("TensorListLength", [(1, 0)], {})],
    "empty-push-full": [("EmptyTensorList", [S(), I32(1)], {"element_dtype": "int64"}),
                        ("TensorListPushBack", [(0, 0), np.int64(1)], {"element_dtype": "int64"}),
                        ("TensorListPushBack", [(1, 0), np.int64(2)], {"element_dtype": "int64"}),
                        ("TensorListLength", [(2, 0)], {})],
    "empty-push-stack": [("EmptyTensorList", [S(2), I32(-1)], {"element_dtype": "float32"}),
                         ("TensorListPushBack", [(0, 0), np.array([-0.0, np.inf], F32)],
                          {"element_dtype": "float32"}),
                         ("TensorListStack", [(1, 0), S(2)], {"element_dtype": "float32",
                                                              "num_elements": 1})],
    "empty-negative-max": [("EmptyTensorList", [S(), I32(-2)], {"element_dtype": "int64"}),
                           ("TensorListLength", [(0, 0)], {})],
    # (added with the array back ends' lists: dtypes, extremes, empty tensors)
    "get-wrong-dtype": [("TensorListFromTensor", [np.array([1, 2], np.int64), S()],
                         {"element_dtype": "int64"}),
                        ("TensorListGetItem", [(0, 0), I32(0), S()], {"element_dtype": "int32"})],
    "push-wrong-dtype": [("TensorListReserve", [S(), I32(0)], {"element_dtype": "float32"}),
                         ("TensorListPushBack", [(0, 0), I32(1)], {"element_dtype": "int32"}),
                         ("TensorListLength", [(1, 0)], {})],
    "stack-wrong-dtype": [("TensorListReserve", [S(2), I32(1)], {"element_dtype": "float32"}),
                          ("TensorListStack", [(0, 0), S(2)], {"element_dtype": "float64",
                                                               "num_elements": -1})],
    "get-index-at-length": [("TensorListFromTensor", [np.array([1, 2], np.int64), S()],
                             {"element_dtype": "int64"}),
                            ("TensorListGetItem", [(0, 0), I32(2), S()], {"element_dtype": "int64"})],
    "from-tensor-int-extremes": [
        ("TensorListFromTensor", [np.array([[-2**63, 2**63 - 1], [0, -1]], np.int64), S(-1)],
         {"element_dtype": "int64"}),
        ("TensorListGetItem", [(0, 0), I32(0), S(2)], {"element_dtype": "int64"})],
    "from-tensor-empty-stack": [("TensorListFromTensor", [np.zeros((0, 2), F32), S(2)],
                                 {"element_dtype": "float32"}),
                                ("TensorListStack", [(0, 0), S(2)], {"element_dtype": "float32",
                                                                     "num_elements": -1})],
    "from-tensor-bool-pop": [("TensorListFromTensor", [np.array([[True, False], [False, True]]), S()],
                              {"element_dtype": "bool"}),
                             ("TensorListPopBack", [(0, 0), S()], {"element_dtype": "bool"}),
                             ("Identity", [(1, 1)], {})],
    "stack-unset-shape-from-a-set-element": [
        ("TensorListReserve", [S(), I32(3)], {"element_dtype": "float64"}),
        ("TensorListSetItem", [(0, 0), I32(2), np.array([5e-324, -0.0, -np.inf])],
         {"element_dtype": "float64"}),
        ("TensorListStack", [(1, 0), S()], {"element_dtype": "float64", "num_elements": -1})],
    "stack-half-subnormal": [("EmptyTensorList", [S(), I32(-1)], {"element_dtype": "float16"}),
                             ("TensorListPushBack", [(0, 0), np.array([6e-8, np.nan], np.float16)],
                              {"element_dtype": "float16"}),
                             ("TensorListStack", [(1, 0), S(-1)], {"element_dtype": "float16",
                                                                   "num_elements": 1})],
    "element-shape-of-a-from-tensor": [("TensorListFromTensor", [np.zeros((2, 3, 0), I32), S(-1, 0)],
                                        {"element_dtype": "int32"}),
                                       ("TensorListElementShape", [(0, 0)], {"shape_type": "int64"})],
    "push-incompatible": [("TensorListReserve", [S(2), I32(0)], {"element_dtype": "int64"}),
                          ("TensorListPushBack", [(0, 0), np.zeros(3, np.int64)],
                           {"element_dtype": "int64"}),
                          ("TensorListLength", [(1, 0)], {})],
}

_ARGS = {"TensorListReserve": ("element_shape", "num_elements"),
         "EmptyTensorList": ("element_shape", "max_num_elements"),
         "TensorListFromTensor": ("tensor", "element_shape"),
         "TensorListLength": ("input_handle",), "TensorListElementShape": ("input_handle",),
         "TensorListSetItem": ("input_handle", "index", "item"),
         "TensorListGetItem": ("input_handle", "index", "element_shape"),
         "TensorListStack": ("input_handle", "element_shape"),
         "TensorListPushBack": ("input_handle", "tensor"),
         "TensorListPopBack": ("input_handle", "element_shape"), "Identity": ("input",)}


def run_tfsem(steps):
    results = []
    for op, inputs, attrs in steps:
        args = [results[i[0]][i[1]] if isinstance(i, tuple) else Tensor(np.asarray(i))
                for i in inputs]
        results.append(fns.get(op).apply(args, attrs))
    return results[-1][0]


def run_tensorflow(tf, steps):
    """The last output, or "error" where a kernel failed (eager raw ops)."""
    results = []
    try:
        for op, inputs, attrs in steps:
            kw = {name: (results[i[0]][i[1]] if isinstance(i, tuple) else tf.constant(i))
                  for name, i in zip(_ARGS[op], inputs)}
            a = dict(attrs)
            for key in ("element_dtype", "shape_type"):
                if key in a:
                    a[key] = tf.as_dtype(a[key])
            if op in ("TensorListFromTensor", "TensorListSetItem", "TensorListPushBack"):
                a.pop("element_dtype")   # inferred from the tensor
            out = getattr(tf.raw_ops, op)(**kw, **a)
            results.append(tuple(out) if isinstance(out, (tuple, list)) else (out,))
    except (tf.errors.InvalidArgumentError, tf.errors.FailedPreconditionError,
            tf.errors.OutOfRangeError):
        return "error"
    return results[-1][0].numpy()


@pytest.fixture(scope="module")
def tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return pytest.importorskip("tensorflow", reason="compares with TensorFlow's kernels")


@pytest.mark.parametrize("name", sorted(CASES))
def test_tensor_list_ops_are_tensorflows_kernels(tf, name):
    want = run_tensorflow(tf, CASES[name])
    got = run_tfsem(CASES[name])
    if isinstance(want, str):
        assert got == Error("invalid-argument"), got
    else:
        assert got == Tensor(np.asarray(want)), (got, want)   # bit for bit (SPEC section 2)


# -- the array back ends (backends/controlflow.py): the same cases, each op
# run by its one definition on the back end's arrays (ArrayList)

BACKENDS = ("numpy", "cupy (numpy substituted)")


def _backend(label):
    from tfsem.backends.arraymodule import get_backend, numpy_as_cupy
    return get_backend("numpy") if label == "numpy" else numpy_as_cupy()


def run_arrays(steps, label):
    """The last output on an array back end, as a host value (a list
    brought back as a TensorList)."""
    from tfsem.backends.controlflow import apply_values, list_to_host
    from tfsem.oracle.opdefs.lists import ArrayList
    b = _backend(label)
    results = []
    for op, inputs, attrs in steps:
        args = [results[i[0]][i[1]] if isinstance(i, tuple) else Tensor(np.asarray(i))
                for i in inputs]
        results.append(apply_values(b, fns.get(op), args, attrs))
    last = results[-1][0]
    return list_to_host(last, b) if isinstance(last, ArrayList) else last


@pytest.mark.parametrize("label", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_tensor_list_ops_on_the_array_back_ends_are_the_oracles(name, label):
    """No TensorFlow needed: the back end's value is the oracle's, bit for
    bit (SPEC section 2 equality, NaN payloads by `exact`), errors included."""
    got, want = run_arrays(CASES[name], label), run_tfsem(CASES[name])
    assert got == want and getattr(got, "exact", got) == getattr(want, "exact", want), (got, want)
    if isinstance(want, Tensor):
        assert got.array.tobytes() == want.array.tobytes()


@pytest.mark.parametrize("label", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_tensor_list_ops_on_the_array_back_ends_are_tensorflows_kernels(tf, name, label):
    want = run_tensorflow(tf, CASES[name])
    got = run_arrays(CASES[name], label)
    if isinstance(want, str):
        assert got == Error("invalid-argument"), got
    else:
        assert got == Tensor(np.asarray(want)), (got, want)
        assert got.array.tobytes() == np.asarray(want).tobytes()   # (the bits: -0.0, NaN)


def test_a_list_stays_on_the_back_end_between_ops():
    """A list's elements are the back end's arrays (ArrayList): pushing
    moves the pushed tensor to the device once, reading one element moves
    only that element back."""
    from tfsem.backends.controlflow import apply_values
    from tfsem.oracle.opdefs.lists import ArrayList
    b = _backend("cupy (numpy substituted)")
    (lst,) = apply_values(b, fns.get("EmptyTensorList"), [Tensor(S()), Tensor(I32(-1))],
                          {"element_dtype": "int64"})
    for k in range(3):
        (lst,) = apply_values(b, fns.get("TensorListPushBack"), [lst, Tensor(np.int64(k))],
                              {"element_dtype": "int64"})
    assert isinstance(lst, ArrayList) and len(lst.items) == 3
    before = (b.transfers.to_device, b.transfers.to_host)
    (item,) = apply_values(b, fns.get("TensorListGetItem"), [lst, Tensor(I32(1)), Tensor(S())],
                           {"element_dtype": "int64"})
    assert item == Tensor(np.int64(1))
    assert (b.transfers.to_device - before[0], b.transfers.to_host - before[1]) == (2, 1)
    (out,) = apply_values(b, fns.get("Identity"), [lst], {})
    assert out is lst
    with pytest.raises(fns.CannotRun, match="Add takes tensors"):
        apply_values(b, fns.get("Add"), [lst, lst], {})


def test_a_list_is_a_value_shown_by_its_elements():
    lst = run_tfsem(CASES["set-get-nan-signed-zero-subnormal"][:2])
    assert isinstance(lst, TensorList) and lst.items[0] is None
    assert hash(lst) == hash(run_tfsem(CASES["set-get-nan-signed-zero-subnormal"][:2]))
    assert format_value(lst).startswith("list<float32[3]>[unset, f32 [nan, -0.0")
    assert value_to_json(lst)["dtype"] == "variant"


def test_array_back_end_runs_without_control_flow_refuse_a_list_by_name():
    with pytest.raises(fns.CannotRun, match="TensorListStack"):
        fns.get("TensorListStack").impl(np, (None, None), {})
    lst = run_tfsem(CASES["from-tensor-stack"][:1])
    with pytest.raises(fns.CannotRun, match="Add takes tensors"):
        fns.get("Add").apply([lst, lst])
    assert fns.get("Identity").apply([lst]) == (lst,)


def test_a_tensor_array_loop_against_tensorflows_executor(tf):
    """tf.TensorArray unstacked from a feed, read and written in a
    tf.while_loop (a tf.function) whose body assigns: the TensorList ops in
    a While, imported and explored in both modes."""
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode
    from tfsem.oracle.dispatch import outcome_set
    tf1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        x = tf1.get_variable("x", initializer=tf.constant(0, tf.int64), use_resource=True)
        v = tf1.placeholder(tf.int64, shape=[3], name="v")

        @tf.function
        def fn(v):
            inp = tf.TensorArray(tf.int64, size=3).unstack(v)
            acc = tf.TensorArray(tf.int64, size=3)

            def body(i, acc):
                x.assign_add(inp.read(i))
                return i + 1, acc.write(i, x.read_value() * 10)
            _, acc = tf.while_loop(lambda i, a: i < 3, body, [0, acc])
            return acc.stack()
        out = tf.identity(fn(v), name="out")
    gd = g.as_graph_def()
    ops = {nd.op for f in gd.library.function for nd in f.node_def}
    assert {"TensorListFromTensor", "TensorListReserve", "TensorListGetItem",
            "TensorListSetItem", "TensorListStack", "While"} <= ops
    p = import_graph(decode("GraphDef", gd.SerializeToString()), ["out"]).program
    feed = np.array([1, 2**62, -3], np.int64)
    with tf1.Session(graph=g) as s:
        s.run(x.initializer, {x.initial_value: 2})
        want, wx = s.run(out, {v: feed}), s.run(x.read_value())
    for mode in ("atomic", "decomposed"):
        got = outcome_set(p, {"v": Tensor(feed)}, {"x": Tensor(np.int64(2))}, mode)
        assert {(dict(o.outputs)["out"], dict(o.state)["x"]) for o in got} == \
            {(Tensor(want), Tensor(wx))}, mode
