"""Floor, Ceil, Round and Rint's numpy models (oracle/opdefs/math.py)
against TensorFlow's CPU kernels, bit for bit, as graph import builds them
(the `.ftz` variants on bfloat16, float32 and float64): edge values,
halves, NaNs with payloads (quiet and signaling, both signs) and random bit
patterns, at sizes that put elements in Eigen's whole packets and in its
scalar tail (a bfloat16 NaN's bits depend on which).  Rint has no float16
or bfloat16 kernel, none of them an integer one but Round's int32/int64
kernel, which is left to TensorFlow.  More sizes under the `nightly`
Hypothesis profile; the TensorFlow comparisons are skipped without
TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.values import DTYPES, Error, Tensor, edge_values, random_array

from test_graphdef_ops import node, placeholder

NIGHTLY = settings.get_current_profile_name() == "nightly"
FLOATS = ["float32", "float64", "float16", "bfloat16"]
OPS = ["Floor", "Ceil", "Round", "Rint"]
SIZES = list(range(1, 41)) + [100, 1003] if NIGHTLY else [1, 7, 8, 9, 17, 40]
TRIALS = 6 if NIGHTLY else 2
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def model(op, a):
    flushed = fns.dtype_name(a.dtype) in fns.FLUSHED_DTYPES
    out = fns.get(op + (fns.FTZ_SUFFIX if flushed else "")).apply([Tensor(a)], {})[0]
    return out.reason if isinstance(out, Error) else out.array


def specials(dt):
    d = np.dtype(DTYPES[dt])
    u = _BITS[d.itemsize]
    nan = np.array([np.nan], d).view(u)[0]
    quiet = nan & ~(nan - u(1))
    sign = u(1) << u(8 * d.itemsize - 1)
    nans = np.array([nan | u(1), (nan | u(1)) ^ sign, (nan & ~quiet) | u(1),
                     ((nan & ~quiet) | u(5)) ^ sign, nan ^ sign], u).view(d)
    with np.errstate(over="ignore"):
        halves = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 2.0 ** 23 + 1,
                           -(2.0 ** 23) - 1, 1e7 + 0.5], np.float64).astype(d)
    return np.concatenate([edge_values(dt), nans, halves])


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("op", OPS)
def test_rounding_is_tensorflows_bit_for_bit(op, dt):
    tf = pytest.importorskip("tensorflow", reason="compares the models with TensorFlow's kernels")
    rng = np.random.default_rng(47)
    d = DTYPES[dt]
    sp = specials(dt)
    if op == "Rint" and dt in ("float16", "bfloat16"):
        assert model(op, sp) == "no-kernel"
        with pytest.raises(tf.errors.NotFoundError):
            tf.raw_ops.Rint(x=tf.constant(sp))
        return
    for size in SIZES:
        for t in range(TRIALS + 1):
            a = (rng.choice(sp, size) if t < TRIALS else random_array(dt, size, rng)).astype(d)
            if t == 1 and size > 1:
                a = a.reshape(size, 1) if size % 2 else a.reshape(2, size // 2)
            want = getattr(tf.raw_ops, op)(x=tf.constant(a)).numpy()
            got = model(op, a)
            assert got.dtype == want.dtype and got.shape == want.shape
            assert got.tobytes() == want.tobytes(), (op, dt, a, got, want)


@pytest.mark.parametrize("dt", ["float32", "float64", "bfloat16"])
def test_a_subnormal_argument_reads_as_zero_on_the_flushed_dtypes(dt):
    """numpy only: Floor(-smallest subnormal) is -0.0 through `.ftz` (the
    kernel's denormals-are-zero), -1 through the plain function; float16
    keeps its subnormals."""
    d = DTYPES[dt]
    x = -edge_values(dt)[-2:-1]                          # -(smallest subnormal)
    assert model("Floor", x).tobytes() == np.array([-0.0], d).tobytes()
    assert float(fns.get("Floor").apply([Tensor(x)], {})[0].array[0]) == -1.0
    h = -edge_values("float16")[-2:-1]
    assert float(model("Floor", h)[0]) == -1.0


def test_the_batched_form_takes_each_rows_packets():
    """A bfloat16 NaN's bits follow its flat index within its own valuation."""
    sp = specials("bfloat16")
    rows = np.stack([np.resize(sp, 9), np.resize(sp[::-1], 9)]).astype(DTYPES["bfloat16"])
    for op in ("Floor", "Round"):
        f = fns.get(op)
        (b,) = f.batched_impl(np, (rows,), {})
        for i in range(2):
            (one,) = f.impl(np, (rows[i],), {})
            assert np.asarray(b[i]).tobytes() == np.asarray(one).tobytes()


def test_integers_have_no_model():
    assert model("Floor", np.array([1, 2], np.int32)) == "no-kernel"
    assert model("Round", np.array([1, 2], np.int8)) == "no-kernel"
    with kernels.use(False), pytest.raises(fns.CannotRun, match="Round"):
        fns.get("Round").apply([Tensor(np.array([1, 2], np.int32))], {})
    nodes = [placeholder("x", (3,), "DT_INT32"), node("c", "Ceil", ["x"], T="DT_INT32")]
    with pytest.raises(GraphImportError, match="Ceil has no int32"):
        import_graph({"node": nodes}, ["c"], [])
    nodes = [placeholder("x", (3,), "DT_FLOAT"), node("c", "Ceil", ["x"])]
    p = import_graph({"node": nodes}, ["c"], []).program
    assert "Ceil.ftz" in {n.op for n in p.nodes}
