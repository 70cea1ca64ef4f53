"""IsNan, IsInf and IsFinite's numpy models (oracle/opdefs/math.py) against
TensorFlow's CPU kernels, bit for bit: a bool per element, NaN of either
sign, quiet or signaling, with any payload; subnormals finite (no
denormals-are-zero in a classification), on random bit patterns and edge
values of every float dtype (more under the `nightly` Hypothesis profile).
Integers have no kernel: `no-kernel`, refused at import.  The TensorFlow
comparisons are skipped without TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.oracle import functions as fns
from tfsem.oracle.values import DTYPES, Error, Tensor, edge_values, random_array

from test_graphdef_ops import node, placeholder

NIGHTLY = settings.get_current_profile_name() == "nightly"
FLOATS = ["float32", "float64", "float16", "bfloat16"]
OPS = ["IsNan", "IsInf", "IsFinite"]
SIZES = list(range(1, 41)) + [1003] if NIGHTLY else [1, 9, 17, 40]
TRIALS = 20 if NIGHTLY else 3


def model(op, a):
    out = fns.get(op).apply([Tensor(a)], {})[0]
    return out.reason if isinstance(out, Error) else out.array


@pytest.mark.parametrize("dt", FLOATS)
def test_float_classes_are_tensorflows(dt):
    tf = pytest.importorskip("tensorflow", reason="compares the models with TensorFlow's kernels")
    rng = np.random.default_rng(29)
    d = DTYPES[dt]
    arrays = [edge_values(dt), np.zeros((0,), d), np.zeros((2, 0), d),
              edge_values(dt).reshape(4, 4)]
    arrays += [random_array(dt, n, rng).astype(d) for n in SIZES for _ in range(TRIALS)]
    for a in arrays:
        for op in OPS:
            want = getattr(tf.raw_ops, op)(x=tf.constant(a)).numpy()
            got = model(op, a)
            assert got.dtype == want.dtype and got.shape == want.shape, (op, a.shape)
            assert got.tobytes() == want.tobytes(), (op, dt, a, got, want)


@pytest.mark.parametrize("dt", FLOATS)
def test_the_classes_of_the_edge_values(dt):
    """numpy only: the rule, on the edge values (0, -0, 1, -1, 0.5, -1.5, 2,
    NaN, inf, -inf, +-max, +-tiny, +-smallest subnormal)."""
    e = edge_values(dt)
    nan = [False] * 7 + [True] + [False] * 8
    inf = [False] * 8 + [True, True] + [False] * 6
    assert model("IsNan", e).tolist() == nan
    assert model("IsInf", e).tolist() == inf
    assert model("IsFinite", e).tolist() == [not (x or y) for x, y in zip(nan, inf)]
    b = fns.get("IsNan").batched_impl(np, (np.stack([e, e[::-1]]),), {})[0]
    assert np.asarray(b).tolist() == [nan, nan[::-1]]


@pytest.mark.parametrize("op", OPS)
def test_integers_have_no_kernel_and_are_refused_at_import(op):
    assert model(op, np.array([1, 2], np.int32)) == "no-kernel"
    nodes = [placeholder("x", (3,), "DT_FLOAT"), node("c", op, ["x"], T="DT_FLOAT")]
    p = import_graph({"node": nodes}, ["c"], []).program
    assert op in {n.op for n in p.nodes} and not any(n.op.startswith("tf.") for n in p.nodes)
    nodes = [placeholder("x", (3,), "DT_INT64"), node("c", op, ["x"], T="DT_INT64")]
    with pytest.raises(GraphImportError, match=f"{op} has no int64"):
        import_graph({"node": nodes}, ["c"], [])
