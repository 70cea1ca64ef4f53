"""Review of the op models' NaN-bit and edge-shape rules (round 16):
tfsem's numpy models of float arithmetic (functions.nan_bits), Max/Min
(the first NaN operand verbatim), float-to-float casts, and the edge shapes
of reductions, BiasAdd, BiasAddGrad, Squeeze, Transpose, Slice,
BroadcastTo, Unpack and Range, against TensorFlow 2.21's CPU kernels on
inputs Hypothesis draws (random shapes and broadcasts of rank 0 to 4,
sizes around Eigen's packets, NaN payloads, signs, signaling NaNs, infs,
signed zeros and subnormals placed at random in both operands, every float
dtype), compared bit for bit: the function's `impl` as the oracle runs it
and the batched impl the engines run (a batch of valuations, an operand
sometimes one value broadcast to every row, as a Const is).

The rule held everywhere but in one place: a bfloat16 NaN made by a large
broadcast (past some 16,800 elements for RealDiv, 24,600 for
SquaredDifference, 26,600 for Add/Sub/Mul, 49,200 for BiasAdd), which
Eigen's tiled executor evaluates block by block, each with its own scalar
tail: the model places packets and tail by the flat index of the whole
result (0x7fc0 in packets), TensorFlow keeps the sign there (0xffc0).
Those are the xfail(strict) reproducers below; the Hypothesis tests keep
bfloat16 broadcasts below 8,192 elements, where the linear rule was
measured to hold, and pin it.

TensorFlow's kernels run with one intra-op and one inter-op thread and op
determinism on, as tfsem's kernel worker runs them, where this process has
not started TensorFlow before; operands are passed as numpy arrays
bitcast from their bits (never Python floats, which TensorFlow's eager
cache of scalar constants would merge).  The tests that need TensorFlow
skip without it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tfsem.oracle import functions as fns
from tfsem.oracle.opdefs.registry import flushed
from tfsem.oracle.values import DTYPES
import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow functions)
from nan_bits_support import UINT
from tf_kernel_support import (op_determinism_off_after,  # noqa: F401  (autouse)
                               tensorflow_as_the_kernel_worker, tf_tensor)

FLOATS = ("float16", "bfloat16", "float32", "float64")
#: (exponent bits, significand bits)
LAYOUT = {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23), "float64": (11, 52)}
#: sizes around Eigen's packets (8 float32/bfloat16, 4 float64 elements)
SIZES = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33)
BIG = (1000, 1003, 1024, 1025, 1031)
#: a bfloat16 broadcast stays below this many elements in the differential
#: tests: past it Eigen's tiled executor may split it into blocks (the
#: xfail reproducers below); functions.TILED_EXTREMUM_BYTES in elements
BF16_LINEAR = 8192

HYPOTHESIS = dict(deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))


def tensorflow():
    return tensorflow_as_the_kernel_worker("TensorFlow's kernels: needs tfsem[tensorflow]")


def bits(a) -> np.ndarray:
    a = np.asarray(a)
    return a.view(UINT[a.dtype.itemsize]).reshape(-1)


def specials(dt: str, rng, k: int) -> np.ndarray:
    """`k` random bit patterns of `dt`: quiet NaNs with and without payload,
    signaling NaNs, infinities, zeros, subnormals, 1.0 and normals, of
    random sign."""
    e, m = LAYOUT[dt]
    width = 1 + e + m
    sign = rng.integers(0, 2, k).astype(np.uint64) << np.uint64(width - 1)
    exp_all = np.uint64(((1 << e) - 1) << m)
    quiet = np.uint64(1 << (m - 1))
    payload = rng.integers(1, 1 << m, k, dtype=np.uint64)
    low = payload & np.uint64((1 << (m - 1)) - 1)
    kind = rng.integers(0, 9, k)
    normal = (rng.integers(1, (1 << e) - 1, k).astype(np.uint64) << np.uint64(m)) \
        | (payload & np.uint64((1 << m) - 1))
    choices = [exp_all | quiet, exp_all | quiet | low, exp_all | np.where(low == 0, np.uint64(1), low),
               np.full(k, exp_all), np.zeros(k, np.uint64), payload & np.uint64((1 << m) - 1),
               np.full(k, np.uint64(((1 << (e - 1)) - 1) << m)), normal, normal]
    out = np.choose(kind, choices)
    return (out | sign).astype(UINT[width // 8])


def values(dt: str, shape: tuple, rng, p_special: float) -> np.ndarray:
    n = math.prod(shape)
    d = DTYPES[dt]
    plain = (rng.standard_normal(n) * 4).astype(d).view(UINT[d.itemsize])
    out = np.where(rng.random(n) < p_special, specials(dt, rng, n), plain)
    return out.view(d).reshape(shape)


def run_model(name: str, args: tuple, attrs=None):
    with np.errstate(all="ignore"):
        return np.asarray(fns.get(name).impl(np, tuple(args), attrs or {})[0])


def run_batched(name: str, rows: list, attrs=None, const: int | None = None):
    """`name`'s batched impl on the valuations `rows` (tuples of arguments);
    argument `const` (if given) one value broadcast to every row, as the
    engines pass a Const."""
    k = len(rows[0])
    batch = tuple(np.broadcast_to(rows[0][j][None], (len(rows),) + rows[0][j].shape)
                  if j == const else np.stack([r[j] for r in rows]) for j in range(k))
    with np.errstate(all="ignore"):
        return np.asarray(fns.get(name).batched_impl(np, batch, attrs or {})[0])


def tf_op(tf, op: str):
    raw = tf.raw_ops
    return {"Add": lambda x, y: raw.AddV2(x=x, y=y), "AddV1": lambda x, y: raw.Add(x=x, y=y),
            "Sub": lambda x, y: raw.Sub(x=x, y=y), "Mul": lambda x, y: raw.Mul(x=x, y=y),
            "RealDiv": lambda x, y: raw.RealDiv(x=x, y=y), "Div": lambda x, y: raw.Div(x=x, y=y),
            "SquaredDifference": lambda x, y: raw.SquaredDifference(x=x, y=y),
            "Max": lambda x, y: raw.Maximum(x=x, y=y), "Min": lambda x, y: raw.Minimum(x=x, y=y),
            "BiasAdd": lambda x, y: raw.BiasAdd(value=x, bias=y),
            "ReluGrad": lambda x, y: raw.ReluGrad(gradients=x, features=y),
            "Square": lambda x: raw.Square(x=x), "Sqrt": lambda x: raw.Sqrt(x=x)}[op]


#: TensorFlow's op -> tfsem's function
MODEL = {"AddV1": "Add", "Div": "RealDiv"}
UNARY = ("Square", "Sqrt")
BINARY = ("Add", "AddV1", "Sub", "Mul", "RealDiv", "Div", "SquaredDifference", "Max", "Min",
          "BiasAdd", "ReluGrad")


@st.composite
def arithmetic_cases(draw):
    """(dtype, op, operand shapes, seed, how often an element is special)."""
    dt = draw(st.sampled_from(FLOATS))
    op = draw(st.sampled_from(UNARY + BINARY))
    rank = draw(st.integers(0, 4))
    out = [draw(st.sampled_from(SIZES)) for _ in range(rank)]
    if rank and draw(st.integers(0, 4)) == 0:
        out[draw(st.integers(0, rank - 1))] = draw(st.sampled_from(BIG))
    limit = BF16_LINEAR if dt == "bfloat16" else 20_000
    while math.prod(out) > limit:
        out[out.index(max(out))] = draw(st.sampled_from((1, 2, 3, 7, 8, 9)))
    out = tuple(out)
    if op in UNARY:
        sa, sb = out, None
    elif op == "ReluGrad":
        sa = sb = out
    elif op == "BiasAdd":
        while len(out) < 2:
            out = out + (draw(st.sampled_from(SIZES)),)
        sa, sb = out, out[-1:]
    else:
        def operand():   # a suffix of the result's shape, some axes 1: every broadcast
            s = list(out[len(out) - draw(st.integers(0, len(out))):])
            return tuple(1 if draw(st.integers(0, 2)) == 0 else d for d in s)
        sa = out if draw(st.booleans()) else operand()
        sb = operand()
        form = draw(st.integers(0, 5))   # often a one-element operand, on either side
        if form == 0:
            sa = draw(st.sampled_from(((), (1,), (1, 1))))
        elif form == 1:
            sb = draw(st.sampled_from(((), (1,), (1, 1))))
        if draw(st.booleans()):
            sa, sb = sb, sa
    return dt, op, sa, sb, draw(st.integers(0, 2**32 - 1)), draw(st.sampled_from((0.05, 0.3, 0.7, 1.0)))


def _arguments(dt, sa, sb, seed, p):
    rng = np.random.default_rng(seed)
    a = values(dt, sa, rng, p)
    return rng, ((a,) if sb is None else (a, values(dt, sb, rng, p)))


@settings(max_examples=300, **HYPOTHESIS)
@given(arithmetic_cases())
def test_arithmetic_and_extremum_nan_bits_are_tensorflows(case):
    """The model as the importer builds it (the .ftz variant on the dtypes
    TensorFlow flushes) gives TensorFlow's bits, NaNs included, and the
    batched impl gives each valuation the impl's bits."""
    tf = tensorflow()
    dt, op, sa, sb, seed, p = case
    rng, args = _arguments(dt, sa, sb, seed, p)
    with tf.device("/CPU:0"):
        want = tf_op(tf, op)(*(tf_tensor(tf, x) for x in args)).numpy()
    base = MODEL.get(op, op)
    name = flushed(base, dt)
    try:
        got = run_model(name, args)
    except fns.CannotRun:   # (refused: the engines keep it uninterpreted)
        return
    assert got.shape == want.shape
    bad = np.nonzero(bits(got) != bits(want))[0]
    assert not len(bad), (name, dt, sa, sb, [(int(i), hex(int(bits(got)[i])), hex(int(bits(want)[i])))
                                             for i in bad[:4]])
    if fns.get(name).batched_impl is not None:
        rows = [args] + [tuple(values(dt, x.shape, rng, p) for x in args) for _ in range(2)]
        const = int(rng.integers(0, len(args))) if rng.random() < 0.4 else None
        if const is not None:
            rows = [tuple(args[j] if j == const else r[j] for j in range(len(args))) for r in rows]
        batched = run_batched(name, rows, const=const)
        for k, row in enumerate(rows):
            assert np.array_equal(bits(batched[k]), bits(run_model(name, row))), (name, dt, sa, sb, k)


@settings(max_examples=200, **HYPOTHESIS)
@given(arithmetic_cases())
def test_the_batched_impls_give_each_valuation_the_impls_bits(case):
    """Without TensorFlow: the engines' batched impl of each function (the
    NaN rule's packets counted within each valuation, a rank-0 operand
    padded by the batch) gives every row the bits the impl gives it alone,
    an operand broadcast from one value (a Const) or not."""
    dt, op, sa, sb, seed, p = case
    base = MODEL.get(op, op)
    if fns.get(base).batched_impl is None:
        return
    rng, args = _arguments(dt, sa, sb, seed, p)
    rows = [args] + [tuple(values(dt, x.shape, rng, p) for x in args) for _ in range(3)]
    for const in (None,) + tuple(range(len(args))) if len(args) == 2 else (None,):
        rs = rows if const is None else [
            tuple(args[j] if j == const else r[j] for j in range(len(args))) for r in rows]
        try:
            batched = run_batched(base, rs, const=const)
        except fns.CannotRun:
            return
        for k, row in enumerate(rs):
            assert np.array_equal(bits(batched[k]), bits(run_model(base, row))), (base, dt, sa, sb, k)


@settings(max_examples=150, **HYPOTHESIS)
@given(st.sampled_from(FLOATS), st.sampled_from(FLOATS),
       st.lists(st.sampled_from(SIZES + BIG), max_size=3), st.integers(0, 2**32 - 1),
       st.sampled_from((0.05, 0.5, 1.0)))
def test_float_casts_nan_bits_are_tensorflows(src, dst, shape, seed, p):
    """Cast between float dtypes: TensorFlow's bits (its NaN conversions:
    functions._NAN_CASTS), the impl and each row of the batched impl."""
    if src == dst:
        return
    tf = tensorflow()
    shape = tuple(shape)
    while math.prod(shape) > 100_000:
        shape = shape[1:]
    rng = np.random.default_rng(seed)
    a = values(src, shape, rng, p)
    with tf.device("/CPU:0"):
        want = tf.raw_ops.Cast(x=tf_tensor(tf, a), DstT=tf.as_dtype(dst)).numpy()
    got = run_model("Cast", (a,), {"DstT": dst})
    assert got.shape == want.shape and np.array_equal(bits(got), bits(want)), (src, dst, shape)
    rows = [(a,), (values(src, shape, rng, p),)]
    batched = run_batched("Cast", rows, {"DstT": dst})
    for k, row in enumerate(rows):
        assert np.array_equal(bits(batched[k]), bits(run_model("Cast", row, {"DstT": dst})))


# -- edge shapes -------------------------------------------------------------

INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
REDUCTIONS = {"Sum": "Sum", "Mean": "Mean", "ReduceMax": "Max", "ReduceMin": "Min"}
SMALL_SHAPES = st.lists(st.integers(0, 3), max_size=4).map(tuple)


def _outcome(fn):
    """('ok', array) or ('error', why) of a model or a TensorFlow call."""
    import importlib.util
    errors: tuple = (fns.ShapeError, fns.OpError, ValueError, TypeError)
    if importlib.util.find_spec("tensorflow") is not None:
        import tensorflow as tf
        errors += (tf.errors.OpError,)
    try:
        with np.errstate(all="ignore"):
            return "ok", np.asarray(fn())
    except errors as exc:
        return "error", f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"


def _same(model, want, what):
    assert model[0] == want[0], (what, model, want)
    if model[0] == "ok":
        m, t = model[1], want[1]
        assert (m.shape, m.dtype) == (t.shape, t.dtype) and np.array_equal(m, t), (what, m, t)


@settings(max_examples=300, **HYPOTHESIS)
@given(st.sampled_from(INTS), SMALL_SHAPES, st.sampled_from(sorted(REDUCTIONS)),
       st.lists(st.integers(-5, 4), max_size=3), st.booleans(), st.integers(0, 2**31))
def test_integer_reductions_edge_shapes_are_tensorflows(dt, shape, name, axes, keep, seed):
    """Sum, Mean, Max, Min of integers on scalars, empty tensors and any
    axes (out of range, negative, named twice), keep_dims or not: the
    model fails where TensorFlow fails and gives its result elsewhere."""
    tf = tensorflow()
    info = np.iinfo(dt)
    a = np.random.default_rng(seed).integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    model = _outcome(lambda: fns.get(name).impl(np, (a,), {"axes": axes, "keep_dims": keep})[0])
    with tf.device("/CPU:0"):
        want = _outcome(lambda: getattr(tf.raw_ops, REDUCTIONS[name])(
            input=a, axis=np.asarray(axes, np.int32), keep_dims=keep).numpy())
    _same(model, want, (name, dt, shape, axes, keep))


@settings(max_examples=300, **HYPOTHESIS)
@given(SMALL_SHAPES, st.integers(0, 2**31),
       st.sampled_from(("BiasAdd", "BiasAddGrad", "Squeeze", "Transpose", "Slice", "BroadcastTo",
                        "Unpack")), st.data())
def test_array_ops_edge_shapes_are_tensorflows(shape, seed, op, data):
    """BiasAdd, BiasAddGrad, Squeeze, Transpose, Slice, BroadcastTo and
    Unpack on scalars, empty tensors and ranks 0 to 4: the model fails
    where TensorFlow fails, and gives its shape and values elsewhere (a
    scalar stays a scalar)."""
    tf = tensorflow()
    raw = tf.raw_ops
    rng = np.random.default_rng(seed)
    a = rng.integers(-100, 100, shape).astype(np.int32)
    if op == "BiasAdd":
        b = rng.integers(-100, 100, data.draw(SMALL_SHAPES.filter(lambda s: len(s) <= 2))) \
            .astype(np.int32)
        cases = [(("BiasAdd", (a, b), {}), lambda: raw.BiasAdd(value=a, bias=b))]
    elif op == "BiasAddGrad":
        cases = [(("BiasAddGrad", (a,), {}), lambda: raw.BiasAddGrad(out_backprop=a))]
    elif op == "Squeeze":
        dims = data.draw(st.lists(st.integers(-5, 4), max_size=3))
        cases = [(("Squeeze", (a,), {"squeeze_dims": dims}), lambda: raw.Squeeze(input=a, axis=dims))]
    elif op == "Transpose":
        perm = np.asarray(data.draw(st.permutations(list(range(len(shape))))), np.int32)
        cases = [(("Transpose", (a, perm), {}), lambda: raw.Transpose(x=a, perm=perm))]
    elif op == "Slice":
        begin = np.asarray([data.draw(st.integers(0, d)) for d in shape], np.int32)
        size = np.asarray([data.draw(st.integers(-1, d - int(b))) for d, b in zip(shape, begin)],
                          np.int32)
        cases = [(("Slice", (a, begin, size), {}), lambda: raw.Slice(input=a, begin=begin, size=size))]
    elif op == "BroadcastTo":
        to = np.asarray(data.draw(SMALL_SHAPES), np.int32)
        cases = [(("BroadcastToShape", (a, to), {}), lambda: raw.BroadcastTo(input=a, shape=to))]
    else:
        if not shape:
            return
        axis = data.draw(st.integers(-len(shape), len(shape) - 1))
        num = shape[axis]
        cases = [(("UnpackPart", (a,), {"axis": axis, "num": num, "index": i}),
                  lambda i=i: raw.Unpack(value=a, num=num, axis=axis)[i]) for i in range(num)]
    for (name, args, attrs), call in cases:
        with tf.device("/CPU:0"):
            want = _outcome(lambda: call().numpy())
        _same(_outcome(lambda: fns.get(name).impl(np, args, attrs)[0]), want, (name, shape, attrs))


@pytest.mark.parametrize("dt", INTS)
def test_range_has_a_kernel_in_a_graph_for_int32_and_int64_only(dt):
    """Range of narrow and unsigned integers: no kernel where TensorFlow runs
    a graph (tf.function, as tfsem's programs run), which the model follows
    (eager TensorFlow 2.21 computes int16 and the unsigned integers anyway:
    not the graph's semantics)."""
    tf = tensorflow()
    args = tuple(np.asarray(v, dt) for v in (1, 7, 2))
    graph = tf.function(lambda: tf.raw_ops.Range(
        start=tf.constant(args[0]), limit=tf.constant(args[1]), delta=tf.constant(args[2])))
    want = _outcome(lambda: graph().numpy())
    model = _outcome(lambda: fns.get("Range").impl(np, args, {})[0])
    assert model[0] == want[0], (dt, model, want)
    if dt in ("int32", "int64"):
        assert model[1].tolist() == want[1].tolist() == [1, 3, 5]


# -- the reproducers: bfloat16 NaNs of large broadcasts -----------------------

#: (tfsem function, TensorFlow op, shape of the NaN operand, of the other),
#: each just past the size where TensorFlow's tiled executor first puts a
#: scalar tail inside the flat index's whole packets (measured, one thread)
TILED = [("Add", "Add", (270, 100), (100,)), ("Add", "Add", (100,), (270, 100)),
         ("Sub", "Sub", (270, 100), (100,)), ("Mul", "Mul", (270, 100), (100,)),
         ("RealDiv", "RealDiv", (170, 100), (100,)),
         ("SquaredDifference", "SquaredDifference", (248, 100), (100,)),
         ("BiasAdd", "BiasAdd", (1555, 33), (33,))]


def _tiled_operands(sa, sb):
    """A negative NaN (0xffc1) everywhere in the larger operand, 1.0 in the
    other: every result element is a NaN, 0x7fc0 where TensorFlow computed
    it in a packet, 0xffc0 (its sign kept) in a scalar tail."""
    bf16 = DTYPES["bfloat16"]
    nan_first = math.prod(sa) >= math.prod(sb)
    a = np.full(sa, 0xffc1 if nan_first else 0x3f80, np.uint16).view(bf16)
    b = np.full(sb, 0x3f80 if nan_first else 0xffc1, np.uint16).view(bf16)
    return a, b


# (fixed: such a result is refused, CannotRunHere, as Max/Min's ties are:
# nan_bits placed bfloat16's packets and scalar tail by the flat index of the
# whole result; past some 16,800 to 49,200 elements TensorFlow's tiled
# executor evaluates a broadcast block by block, each with its own tail, and
# keeps the NaN's sign (0xffc0) where the model gave 0x7fc0)
@pytest.mark.parametrize("name, op, sa, sb", TILED)
def test_bfloat16_nans_of_a_large_broadcast_are_tensorflows(name, op, sa, sb):
    tf = tensorflow()
    a, b = _tiled_operands(sa, sb)
    with tf.device("/CPU:0"):
        want = tf_op(tf, op)(tf_tensor(tf, a), tf_tensor(tf, b)).numpy()
    assert (bits(want) == 0xffc0).any()     # (TensorFlow's tails: what is not modelled)
    with pytest.raises(fns.CannotRunHere, match="tiled executor"):
        run_model(flushed(name, "bfloat16"), (a, b))


def test_bfloat16_nans_of_a_large_broadcast_batched_are_tensorflows():
    a, b = _tiled_operands((270, 100), (100,))
    with pytest.raises(fns.CannotRunHere, match="tiled executor"):
        run_batched("Add", [(a, b), (a, b)])
    # (without a NaN the broadcast runs)
    one = np.full((100,), 0x3f80, np.uint16).view(DTYPES["bfloat16"])
    got = run_batched("Add", [(np.abs(one[None].repeat(270, 0)), one)] * 2)
    assert got[0].shape == (270, 100)


@pytest.mark.parametrize("name, op, sa, sb", [
    ("Add", "Add", (81, 100), (100,)), ("RealDiv", "RealDiv", (81, 100), (100,)),
    ("BiasAdd", "BiasAdd", (248, 33), (33,)), ("Add", "Add", (100,), (81, 100))])
def test_bfloat16_nans_of_a_broadcast_below_the_tiles_are_tensorflows(name, op, sa, sb):
    """Below 8,192 elements (functions.TILED_EXTREMUM_BYTES of bfloat16, a
    bound the fix can share with Max/Min's) the linear rule holds: 0x7fc0
    in the flat index's whole packets, the sign kept in the tail."""
    tf = tensorflow()
    a, b = _tiled_operands(sa, sb)
    with tf.device("/CPU:0"):
        want = tf_op(tf, op)(tf_tensor(tf, a), tf_tensor(tf, b)).numpy()
    got = run_model(flushed(name, "bfloat16"), (a, b))
    assert np.array_equal(bits(got), bits(want))
    n = got.size
    assert set(bits(got)[: n // 8 * 8].tolist()) == {0x7fc0}
    assert set(bits(got)[n // 8 * 8:].tolist()) <= {0xffc0}


def test_the_tiled_broadcasts_are_those_max_and_min_already_refuse_ties_in():
    """The fix the reproducers call for can share Max/Min's bound
    (functions.extremum_tiled: a broadcast, neither operand of one element
    nor both of the result's size, past TILED_EXTREMUM_BYTES): it holds
    every reproducer above and none of the shapes measured linear, so a
    bfloat16 NaN result of such a broadcast can be refused (CannotRun) as
    Max/Min's ties are, with or without a batch axis."""
    for name, op, sa, sb in TILED:
        assert fns.extremum_tiled("bfloat16", sa, sb)
        assert fns.extremum_tiled("bfloat16", (3,) + sa, (3,) + sb, lead=1)
    for sa, sb in (((81, 100), (100,)), ((248, 33), (33,)), ((100,), (81, 100)),
                   ((30000,), (30000,)), ((1, 30000), (30000,)), ((300, 100), ()),
                   ((1, 1), (300, 100))):
        assert not fns.extremum_tiled("bfloat16", sa, sb), (sa, sb)
