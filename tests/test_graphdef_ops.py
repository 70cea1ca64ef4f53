"""The op table: each model against TensorFlow's kernel formula, written out
independently here in numpy (float32 step by step, as the CPU kernel)."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.graphdef import ops as opt
from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.oracle import functions as fns
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.values import Error, Tensor

F32 = np.float32


def const(name, value, dtype="DT_FLOAT"):
    arr = np.asarray(value, dtype={"DT_FLOAT": np.float32, "DT_INT64": np.int64,
                                   "DT_INT32": np.int32}[dtype])
    return {"name": name, "op": "Const", "attr": {
        "dtype": {"type": dtype},
        "value": {"tensor": {"dtype": dtype, "tensor_shape": {"dim": [{"size": d} for d in arr.shape]},
                             "tensor_content": arr.tobytes()}}}}


def node(name, op, inputs=(), T="DT_FLOAT", **attrs):
    a = {"T": {"type": T}} if T else {}
    for k, v in attrs.items():
        a[k] = v
    return {"name": name, "op": op, "input": list(inputs), "attr": a}


def var(name, shape=(), dtype="DT_FLOAT"):
    return {"name": name, "op": "VarHandleOp", "attr": {
        "dtype": {"type": dtype}, "shape": {"shape": {"dim": [{"size": d} for d in shape]}},
        "shared_name": {"s": name.encode()}, "container": {"s": b""}}}


def placeholder(name, shape=(), dtype="DT_FLOAT"):
    return {"name": name, "op": "Placeholder", "attr": {
        "dtype": {"type": dtype}, "shape": {"shape": {"dim": [{"size": d} for d in shape]}}}}


def run(nodes, fetches, targets=(), feeds=None, init=None, semantics="atomic"):
    p = import_graph({"node": nodes}, fetches, targets).program
    r = outcome_set(p, feeds or {}, init or {}, semantics, "outputs+state")
    return p, [(dict(o.outputs), dict(o.state)) for o in r.as_dict(100)]


def single(nodes, fetches, **kw):
    p, outs = run(nodes, fetches, **kw)
    assert len(outs) == 1
    return outs[0]


def bits(a):
    return np.asarray(a, np.float32).tobytes()


def test_gradient_descent_is_var_minus_grad_times_alpha():
    w, alpha, g = F32(1.1), F32(0.3), F32(0.7)
    nodes = [var("w"), const("lr", alpha), const("g", g),
             {"name": "step", "op": "ResourceApplyGradientDescent", "input": ["w", "lr", "g"],
              "attr": {"T": {"type": "DT_FLOAT"}, "use_locking": {"b": False}}}]
    _, state = single(nodes, [], targets=["step"], init={"w": Tensor(w)})
    assert bits(state["w"].array) == bits(w - g * alpha)


def test_two_gradient_descents_lose_an_update_only_when_decomposed():
    """Seed 002: ResourceApplyGradientDescent is read, compute, write; the
    executor's lock makes it atomic."""
    nodes = [var("w"), const("lr", 1.0), const("g", 1.0)]
    for k in (1, 2):
        nodes.append({"name": f"step{k}", "op": "ResourceApplyGradientDescent",
                      "input": ["w", "lr", "g"], "attr": {"T": {"type": "DT_FLOAT"}}})
    init = {"w": Tensor(F32(10))}
    _, atomic = run(nodes, [], ["step1", "step2"], init=init)
    _, decomposed = run(nodes, [], ["step1", "step2"], init=init, semantics="decomposed")
    assert sorted(float(s["w"].array) for _, s in atomic) == [8.0]
    assert sorted(float(s["w"].array) for _, s in decomposed) == [8.0, 9.0]


def test_adam_matches_the_kernel_formula_bit_for_bit():
    rng = np.random.default_rng(5)
    w0, m0, v0, g = (rng.standard_normal(3).astype(F32) for _ in range(4))
    v0 = np.abs(v0)
    b1p, b2p, lr, b1, b2, eps = (F32(x) for x in (0.9 ** 3, 0.999 ** 3, 0.01, 0.9, 0.999, 1e-7))
    nodes = [var("w", (3,)), var("m", (3,)), var("v", (3,)), var("b1p"), var("b2p"),
             {"name": "r1", "op": "ReadVariableOp", "input": ["b1p"], "attr": {"dtype": {"type": "DT_FLOAT"}}},
             {"name": "r2", "op": "ReadVariableOp", "input": ["b2p"], "attr": {"dtype": {"type": "DT_FLOAT"}}},
             const("lr", lr), const("beta1", b1), const("beta2", b2), const("eps", eps),
             const("g", g),
             {"name": "adam", "op": "ResourceApplyAdam",
              "input": ["w", "m", "v", "r1", "r2", "lr", "beta1", "beta2", "eps", "g"],
              "attr": {"T": {"type": "DT_FLOAT"}, "use_locking": {"b": False},
                       "use_nesterov": {"b": False}}}]
    init = {"w": Tensor(w0), "m": Tensor(m0), "v": Tensor(v0), "b1p": Tensor(b1p),
            "b2p": Tensor(b2p)}
    _, state = single(nodes, [], targets=["adam"], init=init)
    # training_ops.cc, ApplyAdamNonCuda, each operation rounded to float32:
    one = F32(1)
    alpha = lr * np.sqrt(one - b2p) / (one - b1p)
    m1 = m0 + (g - m0) * (one - b1)
    v1 = v0 + (g * g - v0) * (one - b2)
    w1 = w0 - (m1 * alpha) / (np.sqrt(v1) + eps)
    assert bits(state["m"].array) == bits(m1)
    assert bits(state["v"].array) == bits(v1)
    assert bits(state["w"].array) == bits(w1)


def test_momentum_matches_the_kernel_formula():
    w0, a0, g = F32([1.5, -2.0]), F32([0.25, 0.5]), F32([0.1, 0.2])
    lr, mom = F32(0.05), F32(0.9)
    nodes = [var("w", (2,)), var("acc", (2,)), const("lr", lr), const("g", g), const("mom", mom),
             {"name": "up", "op": "ResourceApplyMomentum", "input": ["w", "acc", "lr", "g", "mom"],
              "attr": {"T": {"type": "DT_FLOAT"}, "use_nesterov": {"b": False}}}]
    _, state = single(nodes, [], targets=["up"], init={"w": Tensor(w0), "acc": Tensor(a0)})
    a1 = a0 * mom + g
    assert bits(state["acc"].array) == bits(a1)
    assert bits(state["w"].array) == bits(w0 - a1 * lr)


def test_adam_nesterov_is_read_update_write():
    """use_nesterov=true is modelled by the state family (oracle/state_ops.py:
    a Read of each variable, ApplyAdam, a Write of each; tests/test_state_ops.py
    compares it with TensorFlow's kernel)."""
    nodes = [var("w"), var("m"), var("v")] + [const(n, 0.5) for n in
                                               ("a", "b", "c", "d", "e", "f", "h")]
    nodes.append({"name": "adam", "op": "ResourceApplyAdam",
                  "input": ["w", "m", "v", "a", "b", "c", "d", "e", "f", "h"],
                  "attr": {"T": {"type": "DT_FLOAT"}, "use_nesterov": {"b": True}}})
    p = import_graph({"node": nodes}, [], ["adam"]).program
    update = p.node["adam/update"]
    assert update.op == "ApplyAdam" and update.attrs == {"use_nesterov": True}


def test_add_n_sums_in_the_kernels_order():
    vals = [F32(x) for x in (1e8, 1, -1e8, 1, 1, 1, 1, 1, 3e-8, 1e8, -1e8)]
    nodes = [const(f"c{i}", v) for i, v in enumerate(vals)]
    nodes.append(node("s", "AddN", [f"c{i}" for i in range(len(vals))], N={"i": len(vals)}))
    outs, _ = single(nodes, ["s"])
    # n = 11: the first 11 % 8 = 3 left to right, then one group of 8 added
    first = (vals[0] + vals[1]) + vals[2]
    group = vals[3]
    for v in vals[4:11]:
        group = group + v
    assert bits(outs["s"].array) == bits(first + group)


@pytest.mark.parametrize("op,a,b,expect", [
    ("FloorMod", [7, -7, 7], [3, 3, -3], [1, 2, -2]),
    ("FloorDiv", [7, -7, 7], [3, 3, -3], [2, -3, -3]),
    ("Maximum", [1, 5], [4, 2], [4, 5]),
    ("SquaredDifference", [1, 5], [4, 2], [9, 9]),
])
def test_integer_binary_ops(op, a, b, expect):
    nodes = [const("a", a, "DT_INT64"), const("b", b, "DT_INT64"),
             node("r", op, ["a", "b"], T="DT_INT64")]
    outs, _ = single(nodes, ["r"])
    assert outs["r"].array.tolist() == expect


def test_integer_division_by_zero_is_an_error_value():
    nodes = [const("a", [1], "DT_INT64"), const("b", [0], "DT_INT64"),
             node("r", "FloorMod", ["a", "b"], T="DT_INT64")]
    outs, _ = single(nodes, ["r"])
    assert outs["r"].reason == "division-by-zero"


def test_int_mean_truncates_toward_zero_and_sum_wraps():
    nodes = [const("a", [[-5, 2], [-4, 2]], "DT_INT64"), const("ax", [0], "DT_INT32"),
             node("mean", "Mean", ["a", "ax"], T="DT_INT64", keep_dims={"b": False}),
             const("big", [2 ** 62, 2 ** 62], "DT_INT64"), const("ax0", 0, "DT_INT32"),
             node("sum", "Sum", ["big", "ax0"], T="DT_INT64", keep_dims={"b": True})]
    outs, _ = single(nodes, ["mean", "sum"])
    assert outs["mean"].array.tolist() == [-4, 2]
    assert outs["sum"].array.tolist() == [-(2 ** 63)]


def test_relu_and_relugrad_edge_values_as_tensorflow():
    """Checked against TensorFlow 2.21: Relu(NaN) is NaN; -0.0 and a
    subnormal depend on the position (tests/test_relu_signed_zero.py): in a
    tensor of 5 float32 (no whole Eigen packet) the first element is the
    scalar loop's and keeps -0.0, element 4 is in a pair and a subnormal there
    is flushed; in whole packets -0.0 is +0.0.  ReluGrad multiplies (inf * 0
    is NaN)."""
    x = F32([-0.0, np.nan, -1.0, 2.0, 1e-40])
    g = F32([1.0, 1.0, np.inf, 3.0, 1.0])
    nodes = [const("x", x), const("g", g), node("r", "Relu", ["x"]),
             node("rg", "ReluGrad", ["g", "x"]), const("x8", np.tile(x[[0, 1, 2, 4]], 2)),
             node("r8", "Relu", ["x8"])]
    outs, _ = single(nodes, ["r", "rg", "r8"])
    r = outs["r"].array
    assert r[0] == 0 and np.signbit(r[0]) and np.isnan(r[1]) and r[2] == 0 and r[3] == 2
    assert r[4] == 0
    r8 = outs["r8"].array
    assert not np.signbit(r8[[0, 4]]).any() and (r8[[0, 2, 3, 4, 6, 7]] == 0).all()
    rg = outs["rg"].array
    assert rg[0] == 0 and np.isnan(rg[2]) and rg[3] == 3 and rg[4] == 0


def test_float_arithmetic_flushes_subnormals_as_tensorflow():
    """TensorFlow's CPU runtime flushes subnormal arguments and results to
    zero (checked against TensorFlow 2.21): an imported float Add is Add.ftz."""
    tiny = F32(1e-40)
    nodes = [const("a", [tiny, -tiny, F32(1.5)]), const("b", [F32(1e-39), F32(0), F32(2)]),
             node("s", "AddV2", ["a", "b"]), node("n", "Neg", ["a"])]
    p, [(outs, _)] = run(nodes, ["s", "n"])
    assert p.node["s"].op == "Add.ftz"
    s = outs["s"].array
    assert s[0] == 0 and s[1] == 0 and not np.signbit(s[1]) and s[2] == 3.5   # -0 + +0 = +0
    assert bits(outs["n"].array) == bits(-F32([tiny, -tiny, 1.5]))   # Neg flips the sign bit only
    ints = [const("i", [1, 2], "DT_INT64"), node("t", "AddV2", ["i", "i"], T="DT_INT64")]
    assert import_graph({"node": ints}, ["t"]).program.node["t"].op == "Add"


def test_data_movement_ops():
    nodes = [const("a", [[1, 2, 3], [4, 5, 6]], "DT_INT64"), const("shape", [3, -1], "DT_INT32"),
             node("re", "Reshape", ["a", "shape"], T="DT_INT64"),
             const("mult", [1, 2], "DT_INT32"), node("tile", "Tile", ["a", "mult"], T="DT_INT64"),
             const("dims", [2, 2], "DT_INT32"), const("seven", 7, "DT_INT64"),
             node("fill", "Fill", ["dims", "seven"], T="DT_INT64"),
             const("axis1", 1, "DT_INT32"),
             node("cat", "ConcatV2", ["a", "a", "a", "axis1"], T="DT_INT64", N={"i": 3}),
             node("pack", "Pack", ["a", "a"], T="DT_INT64", axis={"i": 1}, N={"i": 2}),
             const("axis0", 0, "DT_INT32"),
             node("split", "Split", ["axis0", "a"], T="DT_INT64", num_split={"i": 2}),
             node("zl", "ZerosLike", ["a"], T="DT_INT64")]
    outs, _ = single(nodes, ["re", "tile", "fill", "cat", "pack", "split:1", "zl"])
    a = np.array([[1, 2, 3], [4, 5, 6]])
    assert outs["re"].array.tolist() == a.reshape(3, -1).tolist()
    assert outs["tile"].array.tolist() == np.tile(a, (1, 2)).tolist()
    assert outs["fill"].array.tolist() == [[7, 7], [7, 7]]
    assert outs["cat"].array.tolist() == np.concatenate([a, a, a], 1).tolist()
    assert outs["pack"].array.tolist() == np.stack([a, a], 1).tolist()
    assert outs["split:1"].array.tolist() == [[4, 5, 6]]
    assert outs["zl"].array.tolist() == [[0, 0, 0], [0, 0, 0]]


def test_cast_rounds_to_nearest_and_int32_constants_fold():
    nodes = [const("a", [2 ** 53 + 1, -3], "DT_INT64"),
             {"name": "c", "op": "Cast", "input": ["a"],
              "attr": {"SrcT": {"type": "DT_INT64"}, "DstT": {"type": "DT_FLOAT"}}},
             const("one32", 1, "DT_INT32"),
             {"name": "c2", "op": "Cast", "input": ["one32"],
              "attr": {"SrcT": {"type": "DT_INT32"}, "DstT": {"type": "DT_INT64"}}}]
    outs, _ = single(nodes, ["c", "c2"])
    assert outs["c"].dtype == "float32"
    assert bits(outs["c"].array) == bits(np.array([2 ** 53 + 1, -3]).astype(np.float32))
    assert outs["c2"].dtype == "int64" and int(outs["c2"].array) == 1


def test_computed_axes_are_a_tensor_operand_where_modelled_and_refused_elsewhere():
    # Sum's axes computed at run time: SumAlong (oracle/opdefs/array.py)
    nodes = [placeholder("x", (2,), "DT_INT64"), placeholder("ax", (1,), "DT_INT64"),
             node("s", "Sum", ["x", "ax"], T="DT_INT64", Tidx="DT_INT64")]
    out = single(nodes, ["s"], feeds={"x": Tensor(np.array([3, -5], np.int64)),
                                      "ax": Tensor(np.array([0], np.int64))})[0]
    assert out["s"] == Tensor(np.array(-2, np.int64))
    # ConcatV2's axis computed at run time: ConcatAxisAt (Tidx absent: int32)
    nodes = [placeholder("x", (2,), "DT_INT64"), placeholder("ax", (), "DT_INT32"),
             node("c", "ConcatV2", ["x", "x", "ax"], T="DT_INT64", N={"i": 2})]
    out = single(nodes, ["c"], feeds={"x": Tensor(np.array([3, -5], np.int64)),
                                      "ax": Tensor(np.array(0, np.int32))})[0]
    assert out["c"] == Tensor(np.array([3, -5, 3, -5], np.int64))
    # an axis out of range: an error value (TensorFlow raises InvalidArgument)
    out = single(nodes, ["c"], feeds={"x": Tensor(np.array([3, -5], np.int64)),
                                      "ax": Tensor(np.array(1, np.int32))})[0]
    assert isinstance(out["c"], Error)


def test_tensorflow_functions_stay_out_of_the_core_registry():
    core = fns.registered()
    assert "MatMul" not in core and "StepToward" not in core and "Add" in core
    assert "MatMul" in fns.registered("tensorflow")
    assert "StepToward" not in fns.assign_functions()
    assert "StepToward" in fns.assign_functions("tensorflow")
    assert not fns.get("MatMul").assignable    # it has attributes an Assign cannot carry


def test_op_table_is_extensible():
    def build(b):
        b.dtype("T")
        return [b.add("Neg", [b.input(0)])]
    old = opt.lookup("Negate2")
    try:
        opt.register(opt.OpModel("Negate2", build, "a user's op: Neg"))
        nodes = [const("a", [3], "DT_INT64"), node("n", "Negate2", ["a"], T="DT_INT64")]
        outs, _ = single(nodes, ["n"])
        assert outs["n"].array.tolist() == [-3]
    finally:
        opt.table().pop("Negate2", None)
        assert old is None
    assert ("ResourceApplyAdam", opt.lookup("ResourceApplyAdam").doc, "builtin") in opt.describe()


def test_entry_point_models_are_loaded_and_broken_ones_reported(monkeypatch):
    class EP:
        def __init__(self, name, value, obj):
            self.name, self.value, self._obj, self.dist = name, value, obj, None

        def load(self):
            if isinstance(self._obj, Exception):
                raise self._obj
            return self._obj

    model = opt.OpModel("MyOp", lambda b: [b.add("Identity", [b.input(0)])], "mine")
    monkeypatch.setattr(opt.metadata, "entry_points",
                        lambda group: [EP("good", "pkg:OPS", [model]),
                                       EP("bad", "pkg:BROKEN", ImportError("no module pkg"))])
    monkeypatch.setattr(opt, "_loaded", False)
    try:
        assert opt.lookup("MyOp").origin == "entry point pkg:OPS"
        assert any("no module pkg" in e for e in opt.load_errors())
    finally:
        opt.table().pop("MyOp", None)


# -- against TensorFlow itself (only where TensorFlow is installed) -----------

_F = F32([0.0, -0.0, 1.5, -2.25, np.nan, np.inf, -np.inf, 1e-40, 3.0e38, 1e-7, 7.0, -3.0])
_G = F32([2.0, 3.0, -0.0, 0.5, 1.0, -np.inf, 2.0, 1e-39, 2.0, 3e-8, -7.0, 0.0])
_I = np.array([0, 1, -1, 7, -7, 2 ** 62, -2 ** 63, 2 ** 63 - 1, 3, -3, 5, 100], np.int64)
_J = np.array([3, -3, 2, 2, 3, 4, -1, 2, -2, 5, 1, 7], np.int64)


def _tf_cases(tf):
    R = tf.raw_ops
    fx, ix = {"x": _F, "y": _G}, {"a": _I, "b": _J}
    for op in ["AddV2", "Sub", "Mul", "Maximum", "Minimum", "RealDiv", "SquaredDifference"]:
        yield op, (lambda p, op=op: [getattr(R, op)(x=p["x"], y=p["y"])]), fx
    for op in ["AddV2", "Sub", "Mul", "Maximum", "Minimum", "SquaredDifference", "FloorMod",
               "FloorDiv"]:
        yield op + " int64", (lambda p, op=op: [getattr(R, op)(x=p["a"], y=p["b"])]), ix
    for op in ["Neg", "Square", "Sqrt", "Abs", "ZerosLike", "OnesLike"]:
        yield op, (lambda p, op=op: [getattr(R, op)(x=p["x"])]), {"x": _F}
    yield "Relu", (lambda p: [R.Relu(features=p["x"])]), {"x": _F}
    yield "ReluGrad", (lambda p: [R.ReluGrad(gradients=p["y"], features=p["x"])]), fx
    yield "BiasAdd", (lambda p: [R.BiasAdd(value=p["x"], bias=p["y"])]), \
        {"x": _F.reshape(3, 4), "y": _G[:4]}
    yield "Cast", (lambda p: [tf.cast(p["a"], tf.float32)]), {"a": _I}
    for n in (3, 9, 11, 20):
        yield f"AddN x{n}", (lambda p, n=n: [R.AddN(inputs=[p["x"] * float(k + 1) if k % 3 else p["y"]
                                                           for k in range(n)])]), fx
    m = np.arange(12, dtype=np.int64).reshape(3, 4) * 3 - 7
    yield "MatMul int64", (lambda p: [R.MatMul(a=p["a"], b=p["b"], transpose_b=True)]), \
        {"a": m, "b": m * 2 ** 40}
    yield "reductions int64", (lambda p: [tf.reduce_sum(p["a"], 0),
                                          tf.reduce_mean(p["a"], 1, keepdims=True),
                                          tf.reduce_max(p["a"], [0, 1]),
                                          tf.reduce_min(p["a"], 1)]), {"a": m * -3 + 1}
    yield "data movement", (lambda p: [tf.reshape(p["x"], [4, -1]), tf.tile(p["x"], [2]),
                                       tf.concat([p["x"], p["y"]], 0), tf.stack([p["x"], p["y"]], 1),
                                       tf.split(p["x"], 3)[1], tf.expand_dims(p["x"], 0)]), fx


def test_op_models_equal_tensorflows_kernels_bit_for_bit():
    """Each model computes what TensorFlow's CPU kernel computes, on edge
    values (signed zeros, NaN, infinities, subnormals, int64 extremes).
    Grappler is off: its rewrites are what tfsem checks, not the kernels."""
    tf = pytest.importorskip("tensorflow")
    from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
    from tfsem.graphdef.proto import decode
    tf1 = tf.compat.v1
    cfg = config_pb2.ConfigProto(graph_options=config_pb2.GraphOptions(
        rewrite_options=rewriter_config_pb2.RewriterConfig(disable_meta_optimizer=True),
        optimizer_options=config_pb2.OptimizerOptions(opt_level=config_pb2.OptimizerOptions.L0)))
    bad = []
    for name, build, feeds in _tf_cases(tf):
        g = tf.Graph()
        with g.as_default():
            phs = {k: tf1.placeholder(v.dtype, v.shape, name=k) for k, v in feeds.items()}
            outs = [tf.identity(o, name=f"out{i}") for i, o in enumerate(build(phs))]
        with tf1.Session(graph=g, config=cfg) as s:
            want = s.run(outs, {phs[k]: v for k, v in feeds.items()})
        fetches = [f"out{i}" for i in range(len(outs))]
        p = import_graph(decode("GraphDef", g.as_graph_def().SerializeToString()), fetches).program
        (o,) = outcome_set(p, {k: Tensor(v) for k, v in feeds.items()}, {}, "atomic",
                           "outputs").as_dict(1)
        got = dict(o.outputs)
        for f, w in zip(fetches, want):
            w = np.asarray(w)
            mine = got[f].array
            nan = w.dtype.kind == "f" and np.array_equal(np.isnan(w), np.isnan(mine))
            same = w.dtype == mine.dtype and w.shape == mine.shape and (
                w.tobytes() == mine.tobytes()
                or (nan and np.where(np.isnan(w), 0, w).tobytes()
                    == np.where(np.isnan(mine), 0, mine).tobytes()))
            if not same:
                bad.append((name, f, w, mine))
    assert not bad, bad


@pytest.mark.parametrize("which", ["GradientDescent", "Momentum", "Adam"])
def test_optimizer_updates_equal_tensorflows_bit_for_bit(which):
    tf = pytest.importorskip("tensorflow")
    from tfsem.graphdef.proto import decode
    tf1, R = tf.compat.v1, tf.raw_ops
    g = tf.Graph()
    with g.as_default():
        def mk(name, vals):
            return tf1.get_variable(name, initializer=F32(vals), use_resource=True)
        w = mk("w", [1.5, -2.0, 0.25, 3e-8, 1e-39])
        m = mk("m", [0.1, -0.2, 0.0, 1.0, 2e-39])
        v = mk("v", [0.01, 0.2, 0.0, 4.0, 0.5])
        grad = tf.constant(F32([0.3, -1.7, 2.5, 1e-3, 1e-38]))
        c = (lambda x: tf.constant(F32(x)))
        op = {"GradientDescent": lambda: R.ResourceApplyGradientDescent(
                  var=w.handle, alpha=c(0.1), delta=grad),
              "Momentum": lambda: R.ResourceApplyMomentum(
                  var=w.handle, accum=m.handle, lr=c(0.05), grad=grad, momentum=c(0.9)),
              "Adam": lambda: R.ResourceApplyAdam(
                  var=w.handle, m=m.handle, v=v.handle, beta1_power=c(0.729),
                  beta2_power=c(0.997), lr=c(0.01), beta1=c(0.9), beta2=c(0.999),
                  epsilon=c(1e-7), grad=grad)}[which]()
        init = tf1.global_variables_initializer()
    with tf1.Session(graph=g) as s:
        s.run(init)
        before = {x.name.split(":")[0]: s.run(x.read_value()) for x in (w, m, v)}
        s.run(op)
        after = {x.name.split(":")[0]: s.run(x.read_value()) for x in (w, m, v)}
    p = import_graph(decode("GraphDef", g.as_graph_def().SerializeToString()), [],
                     [op.name]).program
    (o,) = outcome_set(p, {}, {x: Tensor(before[x]) for x in p.variables}, "atomic",
                       "outputs+state").as_dict(1)
    assert {x: bits(t.array) for x, t in dict(o.state).items()} == \
        {x: bits(after[x]) for x in p.variables}


def test_a_constant_read_at_import_keeps_its_control_inputs():
    """Reshape(x, shape) with shape = Const(^w): in TensorFlow the Reshape runs
    after w (a write of v), so a Read of v feeding x... here: the output reads
    v only after w, in every outcome."""
    nodes = [var("v", (), "DT_INT64"), const("two", 2, "DT_INT64"),
             {"name": "w", "op": "AssignVariableOp", "input": ["v", "two"],
              "attr": {"dtype": {"type": "DT_INT64"}}},
             {"name": "r", "op": "ReadVariableOp", "input": ["v"], "attr": {"dtype": {"type": "DT_INT64"}}},
             dict(const("shape", [1], "DT_INT32"), input=["^w"]),
             node("re", "Reshape", ["r", "shape"], T="DT_INT64", Tshape={"type": "DT_INT32"})]
    p, outs = run(nodes, ["re"], init={"v": Tensor(np.int64(0))})
    # the Read r itself is not ordered after w: both values are possible
    assert sorted(int(o["re"].array[0]) for o, _ in outs) == [0, 2]
    assert "w" in {i.node for i in p.node["re"].control_inputs}
    nodes[3]["input"].append("^shape")   # now the read waits for shape, which waits for w
    p, outs = run(nodes, ["re"], init={"v": Tensor(np.int64(0))})
    assert [int(o["re"].array[0]) for o, _ in outs] == [2]
