"""DivNoNan's numpy model (oracle/opdefs/math.py) against TensorFlow's CPU
kernel, bit for bit: x / y where y is not zero, +0.0 where it is (-0.0 and,
on the flushed dtypes, a subnormal y included), NaN bits by position as
RealDiv's, on every float dtype's edge values, NaNs with payloads and random
bit patterns, in equal shapes, scalars and broadcasts (more under the
`nightly` Hypothesis profile).  Integers have no kernel: `no-kernel` for the
function, refused at import.  Skipped without TensorFlow, but for the
import checks."""

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
SIZES = list(range(1, 41)) if NIGHTLY else [1, 3, 8, 9, 17, 40]
TRIALS = 40 if NIGHTLY else 6
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def model(a, b):
    """DivNoNan as graph import builds it: DivNoNan.ftz on the flushed dtypes."""
    name = "DivNoNan" + (fns.FTZ_SUFFIX if fns.dtype_name(a.dtype) in fns.FLUSHED_DTYPES else "")
    out = fns.get(name).apply([Tensor(a), Tensor(b)], {})[0]
    return out.reason if isinstance(out, Error) else out.array


def specials(dt):
    """Edge values and NaNs with a payload, quiet and signaling, of both signs."""
    d = np.dtype(DTYPES[dt])
    u = _BITS[d.itemsize]
    e = edge_values(dt)
    nan = np.array([np.nan], d).view(u)[0]
    sign = u(1) << u(8 * d.itemsize - 1)
    quiet = nan & ~(nan - u(1))            # the quiet bit: the lowest one of the canonical NaN
    payload = np.array([nan | u(1), (nan | u(1)) ^ sign, (nan & ~quiet) | u(1),
                        ((nan & ~quiet) | u(3)) ^ sign], u).view(d)
    return np.concatenate([e, payload])


def shapes():
    yield from (((n,), (n,)) for n in SIZES)
    yield from (((n,), ()) for n in SIZES[1::2])
    yield from (((), (n,)) for n in SIZES[1::2])
    yield from (((3, 5), (5,)), ((4, 1), (1, 9)), ((1,), (7,)), ((0,), (0,)), ((0, 3), (3,)))


@pytest.mark.parametrize("dt", FLOATS)
def test_div_no_nan_is_tensorflows_bit_for_bit(dt):
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    rng = np.random.default_rng(17)
    vals = specials(dt)
    d = DTYPES[dt]
    n = 0
    for trial in range(TRIALS):
        for sa, sb in shapes():
            if trial % 3 == 2:       # random bit patterns against edge values
                a = random_array(dt, int(np.prod(sa)), rng).reshape(sa).astype(d)
            else:
                a = rng.choice(vals, size=sa).astype(d)
            b = rng.choice(vals, size=sb).astype(d)
            want = tf.raw_ops.DivNoNan(x=tf.constant(a), y=tf.constant(b)).numpy()
            got = model(a, b)
            assert got.dtype == want.dtype and got.shape == want.shape, (sa, sb)
            assert got.tobytes() == want.tobytes(), (dt, a, b, got, want)
            n += 1
    assert n


@pytest.mark.parametrize("dt", FLOATS)
def test_a_zero_or_flushed_divisor_gives_plus_zero(dt):
    """The rule itself, numpy only: y = +-0 gives +0.0 whatever x is (NaN,
    infinity, -0.0); a subnormal y does so on the dtypes TensorFlow flushes,
    and on float16 divides."""
    d = DTYPES[dt]
    x = edge_values(dt)
    for zero in (0.0, -0.0):
        r = model(x, np.full(x.shape, zero, d))
        assert r.tobytes() == np.zeros(x.shape, d).tobytes()
    sub = np.full(x.shape, edge_values(dt)[-2], d)       # the smallest subnormal
    r = model(x, sub)
    if dt in fns.FLUSHED_DTYPES:
        assert r.tobytes() == np.zeros(x.shape, d).tobytes()
    else:
        assert np.isinf(r.astype(np.float64)[2])          # 1 / smallest subnormal


@pytest.mark.parametrize("dt", FLOATS)
def test_the_batched_form_is_one_run_per_row(dt):
    """The batched form (a leading batch axis; NaN bits by each row's own
    flat index) gives each valuation's row as the function does alone."""
    rng = np.random.default_rng(3)
    vals, d = specials(dt), DTYPES[dt]
    f = fns.get("DivNoNan")
    for shape in ((9,), (3, 5), (17,)):
        a = rng.choice(vals, size=(4,) + shape).astype(d)
        b = rng.choice(vals, size=(4,) + shape).astype(d)
        (rows,) = f.batched_impl(np, (a, b), {})
        for i in range(4):
            (one,) = f.impl(np, (a[i], b[i]), {})
            assert np.asarray(rows[i]).tobytes() == np.asarray(one).tobytes(), (dt, shape, i)


def test_no_integer_kernel_and_shapes_checked():
    assert model(np.array([1, 2], np.int32), np.array([0, 1], np.int32)) == "no-kernel"
    assert model(np.array([1., 2.], np.float32), np.array([0., 1., 2.], np.float32)) \
        == "shape-mismatch"
    out = fns.get("DivNoNan").apply([Tensor(np.array([1.], np.float16)),
                                     Tensor(np.array([1.], np.float32))], {})[0]
    assert isinstance(out, Error) and out.reason == "dtype-mismatch"


def test_graph_import_models_it_and_refuses_integers():
    nodes = [placeholder("x", (3,), "DT_FLOAT"), placeholder("y", (3,), "DT_FLOAT"),
             node("q", "DivNoNan", ["x", "y"], T="DT_FLOAT")]
    p = import_graph({"node": nodes}, ["q"], []).program
    assert "DivNoNan.ftz" in {n.op for n in p.nodes}
    assert not any(n.op.startswith("tf.") for n in p.nodes)
    nodes = [placeholder("x", (3,), "DT_INT32"), placeholder("y", (3,), "DT_INT32"),
             node("q", "DivNoNan", ["x", "y"], T="DT_INT32")]
    with pytest.raises(GraphImportError, match="DivNoNan has no int32"):
        import_graph({"node": nodes}, ["q"], [])
