"""TensorFlow's kernels as the concrete semantics of pure ops with no numpy
model (oracle/kernels.py, docs/kernels.md).

* Every kind of op the kernel path evaluates -- the float forms of MatMul,
  the reductions, BiasAddGrad, FloorDiv/FloorMod, Range, and opaque ops
  (Exp, Softmax, the sparse cross-entropy, Einsum, UnsortedSegmentSum,
  Conv2D) -- gives, through tfsem's function, what TensorFlow's own graph
  runtime gives for the same op on edge values (NaN, signed zeros,
  infinities, subnormals, the largest floats), bit for bit (every NaN equal
  to every NaN, SPEC equality).
* The determinism guard: an op outside the allowlist is refused by name; an
  op whose kernel gives two different results on the same inputs is refused
  (a check through it is never `unsound`).
* The goal: the Keras Adam step with one control edge dropped is `unsound`,
  the verdict names the ops TensorFlow's kernels evaluated, and TensorFlow's
  runtime replays the counterexample.

Skipped without TensorFlow.  The suite runs with the kernels off
(tests/conftest.py); this module turns them on.  One TensorFlow child and
one TensorFlow import in this process are shared by every test here.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.values import DTYPES, Error, Tensor

tf = pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs the extra "
                         "tfsem[tensorflow]")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module", autouse=True)
def kernels_on():
    old = os.environ.get(kernels.ENV)
    os.environ[kernels.ENV] = "1"
    kernels.prestart()   # TensorFlow imports in the child while this process imports it
    yield
    if old is None:
        os.environ.pop(kernels.ENV, None)
    else:
        os.environ[kernels.ENV] = old


def edges(dtype) -> np.ndarray:
    fi = np.finfo(np.float32) if dtype != np.float64 else np.finfo(np.float64)
    v = [np.nan, 0.0, -0.0, np.inf, -np.inf, fi.max, -fi.max, fi.tiny, -fi.tiny,
         fi.smallest_subnormal, -fi.smallest_subnormal, fi.tiny / 3, 1.0, -1.0, 0.5, 1 / 3,
         3.0, -7.0, 88.5, -103.0, 1e30, -1e-30, 2.0, 65504.0]
    with np.errstate(all="ignore"):
        return np.array(v, dtype=np.float64).astype(dtype)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """SPEC equality: dtype, shape, and every element bit for bit (any NaN equals any NaN)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind != "f" and a.dtype.name != "bfloat16":
        return bool(np.array_equal(a, b))
    x, y = a.astype(np.float64), b.astype(np.float64)
    bits = a.view(f"u{a.dtype.itemsize}") == b.view(f"u{b.dtype.itemsize}")
    return bool(np.all(bits | (np.isnan(x) & np.isnan(y))))


def tf_runtime(build, inputs):
    """TensorFlow's graph runtime (one Session, one intra- and inter-op
    thread, as the replay runs graphs) on `build(*constants)`."""
    g = tf.Graph()
    with g.as_default():
        out = build(*[tf.constant(a) for a in inputs])
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    with tf.compat.v1.Session(graph=g, config=config) as s:
        return [np.asarray(r) for r in s.run(outs)]


def tfsem(name, inputs, attrs=None):
    results = fns.get(name).apply([Tensor(a) for a in inputs], attrs or {})
    for r in results:
        assert not isinstance(r, Error), (name, r)
    return [r.array for r in results]


rng = np.random.default_rng(7)
BF16 = DTYPES["bfloat16"]
E32 = edges(np.float32)


def _pick(shape, dtype=np.float32):
    e = edges(dtype)
    return e[rng.integers(0, len(e), size=shape)]


CASES = [
    # (id, tfsem function, attrs, inputs, TensorFlow called directly)
    ("MatMul", "MatMul", {"transpose_a": False, "transpose_b": False},
     [_pick((6, 8)), _pick((8, 5))], lambda a, b: tf.raw_ops.MatMul(a=a, b=b)),
    ("MatMul-transposed", "MatMul", {"transpose_a": True, "transpose_b": True},
     [_pick((8, 6)), _pick((5, 8))],
     lambda a, b: tf.raw_ops.MatMul(a=a, b=b, transpose_a=True, transpose_b=True)),
    ("MatMul-float64", "MatMul", {"transpose_a": False, "transpose_b": False},
     [_pick((4, 7), np.float64), _pick((7, 3), np.float64)], lambda a, b: tf.raw_ops.MatMul(a=a, b=b)),
    ("MatMul-bfloat16", "MatMul", {"transpose_a": False, "transpose_b": False},
     [_pick((3, 5), BF16), _pick((5, 4), BF16)], lambda a, b: tf.raw_ops.MatMul(a=a, b=b)),
    ("Sum-bfloat16", "Sum", {"axes": [0], "keep_dims": False}, [_pick((6, 3), BF16)],
     lambda a: tf.raw_ops.Sum(input=a, axis=[0], keep_dims=False)),
    ("Exp-float16", "tf.Exp/1/1", {"tf_attrs": {"T": "DT_HALF"}}, [edges(np.float16)],
     lambda a: tf.raw_ops.Exp(x=a)),
    ("MatMul-subnormal", "MatMul", {"transpose_a": False, "transpose_b": False},
     [np.full((2, 3), 1e-20, np.float32), np.full((3, 2), 1e-20, np.float32)],
     lambda a, b: tf.raw_ops.MatMul(a=a, b=b)),
    ("Sum", "Sum", {"axes": [1], "keep_dims": False}, [_pick((5, 9))],
     lambda a: tf.raw_ops.Sum(input=a, axis=[1], keep_dims=False)),
    ("Mean", "Mean", {"axes": [0, 1], "keep_dims": True}, [_pick((4, 6))],
     lambda a: tf.raw_ops.Mean(input=a, axis=[0, 1], keep_dims=True)),
    ("Max", "ReduceMax", {"axes": [0], "keep_dims": False}, [_pick((7, 3))],
     lambda a: tf.raw_ops.Max(input=a, axis=[0], keep_dims=False)),
    ("Min", "ReduceMin", {"axes": [1], "keep_dims": False}, [_pick((3, 7))],
     lambda a: tf.raw_ops.Min(input=a, axis=[1], keep_dims=False)),
    ("BiasAddGrad", "BiasAddGrad", {}, [_pick((6, 4))],
     lambda a: tf.raw_ops.BiasAddGrad(out_backprop=a)),
    ("FloorMod", "FloorMod", {}, [E32[:, None] * np.ones((1, len(E32)), np.float32),
                                  E32[None, :] * np.ones((len(E32), 1), np.float32)],
     lambda a, b: tf.raw_ops.FloorMod(x=a, y=b)),
    ("FloorDiv", "FloorDiv", {}, [E32[:, None] * np.ones((1, len(E32)), np.float32),
                                  E32[None, :] * np.ones((len(E32), 1), np.float32)],
     lambda a, b: tf.raw_ops.FloorDiv(x=a, y=b)),
    ("Range", "Range", {}, [np.float32(0.1), np.float32(2.0), np.float32(0.3)],
     lambda a, b, c: tf.raw_ops.Range(start=a, limit=b, delta=c)),
    ("Exp", "tf.Exp/1/1", {"tf_attrs": {"T": "DT_FLOAT"}}, [E32], lambda a: tf.raw_ops.Exp(x=a)),
    ("Softmax", "tf.Softmax/1/1", {"tf_attrs": {"T": "DT_FLOAT"}}, [_pick((4, 6))],
     lambda a: tf.raw_ops.Softmax(logits=a)),
    ("SparseSoftmaxCrossEntropyWithLogits", "tf.SparseSoftmaxCrossEntropyWithLogits/2/2",
     {"tf_attrs": {"T": "DT_FLOAT", "Tlabels": "DT_INT64"}},
     [_pick((5, 3)), np.array([0, 2, 1, 1, 0], np.int64)],
     lambda a, b: tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=a, labels=b)),
    ("Einsum", "tf.Einsum/2/1", {"tf_attrs": {"equation": "ij,jk->ik", "N": 2, "T": "DT_FLOAT"}},
     [_pick((3, 4)), _pick((4, 2))],
     lambda a, b: tf.raw_ops.Einsum(inputs=[a, b], equation="ij,jk->ik")),
    ("UnsortedSegmentSum", "tf.UnsortedSegmentSum/3/1",
     {"tf_attrs": {"T": "DT_FLOAT", "Tindices": "DT_INT32", "Tnumsegments": "DT_INT32"}},
     [E32[:8], np.array([0, 1, 0, 2, 2, 1, 0, 3], np.int32), np.int32(4)],
     lambda a, b, c: tf.raw_ops.UnsortedSegmentSum(data=a, segment_ids=b, num_segments=c)),
    ("Conv2D", "tf.Conv2D/2/1",
     {"tf_attrs": {"T": "DT_FLOAT", "strides": [1, 1, 1, 1], "padding": "VALID",
                   "data_format": "NHWC", "dilations": [1, 1, 1, 1], "use_cudnn_on_gpu": True,
                   "explicit_paddings": []}},
     [_pick((1, 5, 5, 2)), _pick((2, 2, 2, 3))],
     lambda a, b: tf.raw_ops.Conv2D(input=a, filter=b, strides=[1, 1, 1, 1], padding="VALID")),
]


@pytest.mark.parametrize("name,fn,attrs,inputs,direct", CASES, ids=[c[0] for c in CASES])
def test_a_kernel_evaluated_op_is_tensorflow_bit_for_bit(name, fn, attrs, inputs, direct):
    with kernels.record() as used:
        ours = tfsem(fn, inputs, attrs)
    assert used, f"{fn} did not go through TensorFlow's kernel"
    theirs = tf_runtime(direct, inputs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert same(a, b), (name, a, b)


def test_without_kernels_the_op_stays_unrun_naming_it():
    a, b = _pick((2, 3)), _pick((3, 2))
    with kernels.use(False):
        with pytest.raises(fns.CannotRun, match="MatMul"):
            fns.get("MatMul").apply([Tensor(a), Tensor(b)], {})
    # integers have their own model: no kernel needed
    with kernels.record() as used:
        (r,) = fns.get("MatMul").apply([Tensor(np.ones((2, 2), np.int32))] * 2, {})
    assert not used and r.array.tolist() == [[2, 2], [2, 2]]


def test_without_tensorflow_importable_the_kernels_are_off(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "tensorflow", None)   # as if not installed
    assert not kernels.enabled()
    with pytest.raises(fns.CannotRun, match="cannot run TensorFlow op MatMul"):
        fns.get("MatMul").apply([Tensor(_pick((2, 3))), Tensor(_pick((3, 2)))], {})


def test_a_failing_kernel_is_an_error_value():
    # inner dimensions differ: TensorFlow's InvalidArgumentError, tfsem's shape-mismatch
    (r,) = fns.get("MatMul").apply([Tensor(_pick((2, 3))), Tensor(_pick((2, 3)))], {})
    assert r == Error("shape-mismatch")


def test_an_op_outside_the_allowlist_is_refused_by_name():
    assert "RandomUniform" not in kernels.DETERMINISTIC
    with pytest.raises(kernels.KernelRefused, match="RandomUniform.*DETERMINISTIC"):
        kernels.evaluate("RandomUniform", [np.array([3], np.int32)], {"dtype": "DT_FLOAT"}, 1)
    f = fns.get("tf.RandomUniform/1/1")
    with pytest.raises(fns.CannotRun, match="RandomUniform"):
        f.apply([Tensor(np.array([3], np.int32))],
                {"tf_attrs": {"dtype": "DT_FLOAT", "T": "DT_INT32", "seed": 1, "seed2": 2}})


def test_a_kernel_that_differs_between_two_runs_is_refused(monkeypatch):
    # RandomUniform with a seed draws on from its kernel's state: the same
    # inputs give another tensor on the second run
    monkeypatch.setattr(kernels, "DETERMINISTIC", kernels.DETERMINISTIC | {"RandomUniform"})
    attrs = {"dtype": "DT_FLOAT", "T": "DT_INT32", "seed": 1, "seed2": 2}
    with pytest.raises(kernels.KernelRefused, match="two different results"):
        kernels.evaluate("RandomUniform", [np.array([16], np.int32)], attrs, 1)
    # and a check through it is never unsound: the difference cannot be run
    from tfsem.checking import check_rewrite
    from tfsem.oracle.jsonio import program_from_json
    op = "tf.RandomUniform/1/1"

    def prog(extra):
        return program_from_json({
            "variables": {"x": {"dtype": "int32", "shape": [1]}},
            "nodes": [{"name": "v", "op": "Var", "var": "x"},
                      {"name": "r", "op": "Read", "inputs": ["v"]}, *extra,
                      {"name": "m", "op": op, "inputs": [extra[-1]["name"] if extra else "r"],
                       "tf_attrs": attrs}],
            "outputs": {"out": "m"}})
    p = prog([{"name": "one", "op": "Const", "value": {"dtype": "int32", "value": [1]}},
              {"name": "s", "op": "Add", "inputs": ["r", "one"]}])
    q = prog([])
    v = check_rewrite(p, q, timeout=10)
    assert v.verdict != "unsound", v.describe()
    assert "RandomUniform" in v.reason


GRAPH = ROOT / "examples" / "tensorflow" / "keras_mlp_adam.pbtxt"
READ = "StatefulPartitionedCall/adam/Mul_7/ReadVariableOp"
WRITE = "StatefulPartitionedCall/adam/AssignAddVariableOp_2"


def test_the_keras_adam_step_with_a_dropped_control_edge_is_unsound_on_tensorflow():
    """issue 23 item 1: the read of the momentum no longer waits for its
    update; MatMul, Mean, BiasAddGrad and Pow have no numpy model, and the
    check was `unknown` for that."""
    from tfsem.backends.tensorflow import replay_program
    from tfsem.checking import check_rewrite
    from tfsem.graphdef import import_path
    from tfsem.oracle.program import ControlIn
    p = import_path(GRAPH).program
    q = p.replace(nodes=tuple(
        n.replace(inputs=tuple(i for i in n.inputs if not (isinstance(i, ControlIn) and i.node == WRITE)))
        if n.name == READ else n for n in p.nodes))
    # (not minimized: a third of the time; the replay below needs no small σ)
    v = check_rewrite(p, q, timeout=60, classify=False, minimize=False)
    assert v.verdict == "unsound", v.describe()
    assert "oracle" in v.confirmed
    used = v.stats["tensorflow_kernels"]
    assert {"MatMul", "Mean"} <= set(used["ops"]) and used["intra_op_threads"] == 1
    assert used["op_determinism"] is True
    assert "evaluated by TensorFlow 2." in v.describe() and "MatMul" in v.describe()
    assert v.to_json()["stats"]["tensorflow_kernels"]["text"] == used["text"]
    from tfsem.oracle.jsonio import make_case
    from tfsem.reports.finding import render_finding_page
    page = render_finding_page(make_case(p, q), v.to_json())
    assert "evaluated by TensorFlow 2." in page and "MatMul" in page
    # TensorFlow's own runtime, the rewritten graph exported and its schedule
    # forced, gives the counterexample's outcome (its arithmetic included)
    rep = replay_program(q, v.counterexample, observe=v.observe)
    assert rep.confirmed, rep.describe()


# -- Cast where numpy is not TensorFlow: float to a narrow integer out of range ----

#: NaN, infinities, values past every narrow integer's range, integer
#: extremes of the float dtypes, in-range values and signed zeros
_CAST_EDGES = [np.nan, np.inf, -np.inf, 300.0, -300.0, 1e10, -1e10, 65536.5, 4294967296.0,
               -1.0, -0.0, 0.0, 127.9, -128.9, 255.5, 32767.0, -32769.0, 2.5, 3e38, -3e38]


def _cast_input(src: str, n: int) -> np.ndarray:
    with np.errstate(all="ignore"):
        e = np.array(_CAST_EDGES, np.float64).astype(DTYPES[src])
    return e[np.arange(n) % len(e)]


@pytest.mark.parametrize("n", [1, 33, 100])
@pytest.mark.parametrize("src,dst", [("float32", "int8"), ("float32", "uint8"),
                                     ("float32", "int16"), ("float32", "uint16"),
                                     ("float32", "uint32"), ("float64", "int8"),
                                     ("float64", "uint32"), ("float16", "int8"),
                                     ("bfloat16", "uint16")])
def test_an_undefined_cast_is_tensorflows_kernel_bit_for_bit(src, dst, n):
    x = _cast_input(src, n)
    with kernels.record() as used:
        (got,) = tfsem("Cast", [x], {"DstT": dst})
    dt = tf.as_dtype(DTYPES[dst]) if dst != "bfloat16" else tf.bfloat16
    (want,) = tf_runtime(lambda a: tf.raw_ops.Cast(x=a, DstT=dt), [x])
    info = np.iinfo(DTYPES[dst])
    with np.errstate(all="ignore"):
        t = np.trunc(x.astype(np.float64))
        defined = np.isfinite(t) & (t >= int(info.min)) & (t <= int(info.max))
    assert not defined.all() and used == {"Cast"}
    assert same(got, want), (src, dst, got, want)
    # where the model is defined, the kernel agrees with it element by element
    with kernels.use(False):
        (model,) = tfsem("Cast", [x[defined]], {"DstT": dst})
    assert same(got[defined], model)


def test_a_defined_cast_stays_the_numpy_model():
    x = np.array([1.5, -2.5, 127.0, -128.0, -0.0], np.float32)
    with kernels.record() as used:
        (got,) = tfsem("Cast", [x], {"DstT": "int8"})
    assert not used and got.tolist() == [1, -2, 127, -128, 0]


def test_tensorflows_undefined_cast_depends_on_the_position_not_the_buffer():
    """Why Cast is a function of the whole tensor (oracle/kernels.py
    DETERMINISTIC): the same values at 8 offsets of one buffer (slices alias
    it, unaligned) cast alike, while positions in one tensor differ."""
    big = tf.constant(np.full(100, 300.0, np.float32))
    seen = {tuple(tf.raw_ops.Cast(x=big[k:k + 33], DstT=tf.int8).numpy().tolist())
            for k in range(8)}
    assert len(seen) == 1 and len(set(next(iter(seen)))) > 1


def test_two_concurrent_keras_steps_under_the_kernels_hold_every_outcome_tensorflow_shows():
    """The whole Keras MLP training step (examples/tensorflow/keras_mlp_sgd.pbtxt)
    as a session of two steps (benchmarks/keras_session_kernels.py): its
    float MatMul, BiasAddGrad and Mean evaluated by TensorFlow's kernels, two
    sequential steps have one outcome, two concurrent steps more, that one
    among them; every outcome of the same two steps as concurrent Session.run
    calls on TensorFlow's runtime is in tfsem's set, bit for bit."""
    import sys
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from sessions import init_values, keras_session

    from tfsem.backends.tensorflow_sessions import run_session_threads
    from tfsem.graphdef.cliopts import session_graph_loader
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.session import session_from_json
    sets = {}
    for order in ("sequential", "concurrent"):
        s = session_from_json(keras_session(2, order), load_graph=session_graph_loader())
        p = s.expand()
        with kernels.record() as used:
            sets[order] = set(outcome_set(p, {}, init_values(p), "atomic", "outputs+state",
                                          max_seconds=60))
        assert used == {"MatMul", "BiasAddGrad", "Mean"}
    (alone,) = sets["sequential"]
    assert alone in sets["concurrent"] and len(sets["concurrent"]) > 1
    seen, done = run_session_threads(s, init_values(p), 10, max_seconds=60)
    assert done > 0 and set(seen) <= sets["concurrent"], [o for o in seen if o not in sets["concurrent"]]
