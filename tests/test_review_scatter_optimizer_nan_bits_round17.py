"""Review (round 17) of the scatters' and the optimizers' NaN bits
(oracle/opdefs/state.py: `_scatter_nan_bits`, `_ops`, NAN_RULE_MEASURED,
`_refuse_unmeasured_nans`, ScaleAdd, StepToward), of the cupy backend's host
recompute of a result holding a NaN (backends/arraymodule.py
`_doubtful_result`, `recompute_on_host`) and of its one confirmation session
per backend (backends/reuse.py).

The claim: the models of ResourceScatter*/ResourceScatterNd* and of the
ResourceApply* optimizers give TensorFlow's NaN bits, and where a rule was
not measured a result holding a NaN cannot run (CannotRunHere), only then.

Two false answers were found, both where a tensor has rank 0:

* a variable of shape [] (a scalar variable: tf.Variable(1.0)) given to an
  optimizer: the kernels compute on the variable's flat view, a vector of one
  element, where `tensor * lr()` takes the scalar's NaN first; the model
  tells a hyperparameter from the tensor by its rank, which a variable of
  rank 0 shares, and takes the left operand's (the tensor's);
* ResourceScatter{Add,Sub,Mul} of a scalar index and a scalar update on a
  vector variable: TensorFlow tests "updates is a scalar" first and runs its
  scalar form (update op row, Sub as (-update) + row); the model tests
  updates.shape == indices.shape + row first, which a scalar index makes
  true, and runs the vector form (the row's NaN first).

A third, not a NaN's bits, was met on the way: a ResourceScatterNd* with
indices of rank 1 fails in TensorFlow's kernel for every shape its graph
construction accepts (the kernel takes indices [k] as k indices of depth
1, graph construction as one index of depth k), where the model updates
the slice.

Those are the reproducers below (strict xfails until fixed: the optimizers
now compute on the flat views, the scatters test a scalar update first, and
ScatterNd with indices of rank 1 fails as the kernel does), the first two
three times: without
TensorFlow (the same values in the form the kernel takes them: a vector of
one element; an index vector of one element beside the scalar update, whose
scalar form tests/test_scatter_nan_bits.py pins against the kernels),
against TensorFlow's kernels, and through a graph's import (tfsem's run of
the imported graph against TensorFlow's session).

A refusal the change first made was needless where a NaN arises but its
bits are determined: Adam, AMSGrad and AdaMax (float32, float64) refused a
step whose slots hold one NaN (a diverged run's state), as `m + (...)`
meets that NaN with itself, counted as two NaNs met.  The change's later
commit, which measured every float32/float64 optimizer's operand order,
runs them; the tests below hold that.

Everything else held: the differential tests below draw what the change's
own tests do not (rows of 41 to 300 elements and around Eigen's unrolled
blocks, rows of rank 0 to 2, duplicate and repeated indices, a scatter of
1,050 distinct indices, rows of 20,000 elements, optimizers on variables of
rank 1 to 3 and of 1 to 300 elements and of 17,000 and 100,003 elements,
tensors wholly NaN, NaN hyperparameters; Adam, AMSGrad and AdaMax, now
measured, among them) and compare bit for bit, a refusal only where the
kernel's result holds a NaN.  `_doubtful_result` finds every
NaN of float16, float32 and float64 in arrays of rank 0 and in strided,
reversed, transposed and broadcast views; a batched recompute replaces the
doubtful valuations only, each with numpy's bits; two cupy stand-ins of one
label never share a session.

The tests that need TensorFlow skip without it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tfsem.backends import arraymodule as am
from tfsem.backends import batched as BT
from tfsem.backends import reuse
from tfsem.backends.arraymodule import get_backend, numpy_as_cupy
from tfsem.oracle import functions as fns
from tfsem.oracle.opdefs import state
from tfsem.oracle.values import Tensor
from nan_bits_support import UINT, arr, bits
from test_review_nan_bits_round16 import specials, tf_tensor, values
from test_scatter_nan_bits import kernel, model

FLOATS = ("float16", "bfloat16", "float32", "float64")
NIGHTLY = settings.get_current_profile_name() == "nightly"
HYPOTHESIS = dict(deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
HYPER = {"lr": 0.01, "momentum": 0.9, "beta1": 0.9, "beta2": 0.999, "beta1_power": 0.729,
         "beta2_power": 0.997, "epsilon": 1e-7, "rho": 0.95}
EXACT = sorted(op for op, spec in state.OPTIMIZERS.items() if spec.exact)
#: two quiet NaNs with payloads, per dtype
NAN_A = {"float16": 0x7e11, "bfloat16": 0x7fc1, "float32": 0x7fc00011,
         "float64": 0x7ff8000000000011}
NAN_B = {"float16": 0xfe22, "bfloat16": 0xffc2, "float32": 0xffc00022,
         "float64": 0xfff8000000000022}


def tensorflow():
    """TensorFlow, or skip (op determinism left as it is, as in
    tests/test_scatter_nan_bits.py)."""
    return pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs tfsem[tensorflow]")


# -- helpers -------------------------------------------------------------------

# (the scatter tests' own: the model's new value of the variable, and
# TensorFlow's kernel on a resource variable holding it)
scatter_model, scatter_kernel = model, kernel


def no_zero(upd):
    """`upd` with every zero (a subnormal counts: flushed) made 1: a zero
    fails ScatterDiv as a whole."""
    with np.errstate(invalid="ignore"):
        wide = np.asarray(fns.ftz(np, upd), np.float64)
    return np.where(wide == 0, np.ones_like(upd), upd)


def differing(got, want) -> list:
    """The first places where `got` and `want` differ: (place, bits, bits)."""
    g, w = (np.ascontiguousarray(x).reshape(-1).view(UINT[np.asarray(x).dtype.itemsize])
            for x in (got, want))
    return [(int(i), hex(g[i]), hex(w[i])) for i in np.nonzero(g != w)[0][:4]]


def optimizer_model(op: str, args, attrs):
    spec = state.OPTIMIZERS[op]
    return fns.get(spec.fn).impl(np, tuple(args), attrs)


def optimizer_args(op: str, dt: str, shape: tuple, named: dict) -> list:
    """The op's arguments in order: `named` gives each its bits (an int) or
    its value; the variables and the gradient broadcast to `shape`."""
    spec = state.OPTIMIZERS[op]
    d = arr(dt, 0).dtype
    out = []
    for name in spec.variables + spec.inputs:
        v = named.get(name, HYPER.get(name, 1.0))
        a = arr(dt, v) if isinstance(v, int) else np.asarray(v, d)
        if name in spec.variables or name == "grad":
            a = np.broadcast_to(a, shape).copy()
        out.append(a)
    return out


# -- finding 1: an optimizer on a variable of shape [] --------------------------
#
# Each draw meets two NaNs at `tensor * scalar` (or `... + epsilon`), where
# the kernel passes the scalar's (NAN_RULE_MEASURED's rule: "a tensor and a
# scalar: the scalar's NaN first"), measured on TensorFlow 2.21 for both a
# variable of shape [] and of shape [1].

SCALAR_VARIABLE_CASES = [
    # (op, dtype, attrs, arguments: a NaN's bits where two NaNs meet)
    ("ResourceApplyMomentum", "float32", {"use_nesterov": False},
     {"accum": "A", "momentum": "B", "lr": 0.5}),
    ("ResourceApplyMomentum", "float64", {"use_nesterov": True},
     {"accum": "A", "momentum": "B", "lr": 0.5}),
    ("ResourceApplyKerasMomentum", "float32", {"use_nesterov": False},
     {"accum": "A", "momentum": "B", "lr": 0.5}),
    ("ResourceApplyRMSProp", "float32", {}, {"mom": "A", "momentum": "B", "lr": 0.5}),
    ("ResourceApplyAdagradV2", "float32", {"update_slots": False}, {"lr": "A", "grad": "B"}),
    ("ResourceApplyAdagradV2", "float64", {"update_slots": False}, {"lr": "A", "grad": "B"}),
    ("ResourceApplyAdam", "float32", {"use_nesterov": False}, {"lr": "A", "m": "B"}),
    ("ResourceApplyAdam", "float64", {"use_nesterov": False}, {"lr": "A", "m": "B"}),
]
_IDS = [f"{op[len('ResourceApply'):]}-{dt}" for op, dt, _, _ in SCALAR_VARIABLE_CASES]


def _scalar_variable_args(op, dt, named, shape):
    nans = {"A": NAN_A[dt], "B": NAN_B[dt]}
    return optimizer_args(op, dt, shape, {k: nans.get(v, v) if isinstance(v, str) else v
                                          for k, v in named.items()})


@pytest.mark.parametrize("op, dt, attrs, named", SCALAR_VARIABLE_CASES, ids=_IDS)
def test_a_scalar_variables_update_is_its_one_element_vectors(op, dt, attrs, named):
    """Without TensorFlow: the kernels compute on the variables' flat views,
    so a variable of shape [] is updated as one of shape [1]."""
    scalar = optimizer_model(op, _scalar_variable_args(op, dt, named, ()), attrs)
    vector = optimizer_model(op, _scalar_variable_args(op, dt, named, (1,)), attrs)
    for name, s, v in zip(state.OPTIMIZERS[op].variables, scalar, vector):
        assert bits(s) == bits(v), (op, dt, name, hex(bits(s)[0]), hex(bits(v)[0]))


@pytest.mark.parametrize("op, dt, attrs, named", SCALAR_VARIABLE_CASES, ids=_IDS)
def test_a_scalar_variables_nan_bits_are_the_kernels(op, dt, attrs, named):
    tensorflow()
    args = _scalar_variable_args(op, dt, named, ())
    want = state._tf_kernel(state.OPTIMIZERS[op], args, attrs)
    got = optimizer_model(op, args, attrs)
    for name, g, w in zip(state.OPTIMIZERS[op].variables, got, want):
        assert bits(g) == bits(w), (op, dt, name, differing(g, w))


@pytest.mark.parametrize("op, dt, attrs, named", SCALAR_VARIABLE_CASES, ids=_IDS)
def test_a_one_element_variables_nan_bits_are_the_kernels(op, dt, attrs, named):
    """The same values as vectors of one element: the model holds."""
    tensorflow()
    args = _scalar_variable_args(op, dt, named, (1,))
    want = state._tf_kernel(state.OPTIMIZERS[op], args, attrs)
    got = optimizer_model(op, args, attrs)
    for name, g, w in zip(state.OPTIMIZERS[op].variables, got, want):
        assert bits(g) == bits(w), (op, dt, name, differing(g, w))


# -- finding 2: a scatter of a scalar index and a scalar update -----------------

SCALAR_INDEX_CASES = [(kind, dt) for kind in ("Add", "Sub", "Mul")
                      for dt in ("float16", "float32", "float64")] + \
    [("Add", "bfloat16"), ("Mul", "bfloat16")]


def _vector_variable(dt):
    return arr(dt, [NAN_A[dt]] * 3), arr(dt, NAN_B[dt]).reshape(())


@pytest.mark.parametrize("kind, dt", SCALAR_INDEX_CASES)
def test_a_scalar_index_with_a_scalar_update_is_the_scalar_form(kind, dt):
    """Without TensorFlow: with updates of rank 0 the kernel runs its scalar
    form whatever the indices' rank, so index 1 is index [1]."""
    var, upd = _vector_variable(dt)
    scalar_index = scatter_model(kind, var, np.int32(1), upd)
    index_vector = scatter_model(kind, var, np.int32([1]), upd)
    assert bits(scalar_index) == bits(index_vector), (kind, dt, differing(scalar_index,
                                                                          index_vector))


@pytest.mark.parametrize("kind, dt", SCALAR_INDEX_CASES)
def test_a_scalar_index_with_a_scalar_update_gives_the_kernels_bits(kind, dt):
    tf = tensorflow()
    var, upd = _vector_variable(dt)
    want = scatter_kernel(tf, kind, var, np.int32(1), upd)
    got = scatter_model(kind, var, np.int32(1), upd)
    assert bits(got) == bits(want), (kind, dt, differing(got, want))


def test_a_scalar_index_with_a_row_update_holds():
    """A scalar index into a matrix with a row update (not a scalar): the
    row form on both sides, the model holds."""
    tf = tensorflow()
    for dt in FLOATS:
        for kind in ("Add", "Sub", "Mul"):
            var = arr(dt, [[NAN_A[dt]] * 20] * 2)
            upd = arr(dt, [NAN_B[dt]] * 20)
            want = scatter_kernel(tf, kind, var, np.int32(1), upd)
            got = scatter_model(kind, var, np.int32(1), upd)
            assert bits(got) == bits(want), (kind, dt, differing(got, want))


# -- finding 3: ResourceScatterNd* with indices of rank 1 -------------------------
#
# Not a NaN's bits, met on the way: TensorFlow's graph construction takes
# indices [k] as one index tuple of depth k (updates of shape
# params.shape[k:], as documented, and as the model takes them), but its
# kernel takes them as k indices of depth 1 (scatter_nd_op.cc: "Dimensions
# [0,1) of indices[shape=[1]] = 1 must match dimensions [0,1) of
# updates[shape=[4]] = 4"), so every such op a graph can hold fails when it
# runs; the model updates the slice.

RANK1_CASES = [((3, 4), [2], [1.0, 2.0, 3.0, 4.0]), ((3, 1), [2], [7.0])]


@pytest.mark.parametrize("shape, indices, updates", RANK1_CASES)
def test_scatter_nd_with_indices_of_rank_1_fails_as_the_kernel(shape, indices, updates):
    """Without TensorFlow: the shapes graph construction accepts (pinned by
    the test below) are ones the kernel refuses: the model must not give a
    new value of the variable."""
    var = np.zeros(shape, np.float32)
    with pytest.raises((fns.ShapeError, fns.OpError, fns.CannotRunHere)):
        scatter_model("Add", var, np.int32(indices), np.float32(updates), nd=True)


@pytest.mark.parametrize("shape, indices, updates", RANK1_CASES)
def test_tensorflows_kernel_fails_on_scatter_nd_indices_of_rank_1(shape, indices, updates):
    """The measurement above: TensorFlow builds the graph and its kernel
    fails, the variable left as it was."""
    tf = tensorflow()
    g = tf.Graph()
    with g.as_default():
        h = tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=shape, shared_name="review17_nd")
        init = tf.raw_ops.AssignVariableOp(resource=h, value=tf.zeros(shape))
        op = tf.raw_ops.ResourceScatterNdAdd(ref=h, indices=tf.constant(np.int32(indices)),
                                             updates=tf.constant(np.float32(updates)))
        read = tf.raw_ops.ReadVariableOp(resource=h, dtype=tf.float32)
    with tf.compat.v1.Session(graph=g) as s:
        s.run(init)
        with pytest.raises(tf.errors.InvalidArgumentError, match="must match"):
            s.run(op)
        assert not s.run(read).any()


# -- a refusal that was needless: one NaN meeting itself ---------------------------
#
# A run whose slots hold a NaN (a diverged training step leaves every slot
# the one NaN an invalid operation made) meets that NaN twice in Adam's
# `m += (g - m) * (1 - beta1)`: `m + (...)` has the same NaN on both sides,
# where the operand order cannot change the bits.  The change as first
# reviewed counted it as two NaNs met and refused every such step of Adam,
# AMSGrad and AdaMax; its later commit (every float32/float64 optimizer's
# operand order measured, the two-NaN gate gone) runs them: these pass now
# and hold that.

ONE_NAN_OPS = ("ResourceApplyAdam", "ResourceApplyAdamWithAmsgrad", "ResourceApplyAdaMax")


def _slots_of_one_nan(op: str, dt: str) -> tuple:
    spec = state.OPTIMIZERS[op]
    nan = NAN_A[dt]
    return optimizer_args(op, dt, (9,), {s: nan for s in spec.variables[1:]}), nan


@pytest.mark.parametrize("dt", ("float32", "float64"))
@pytest.mark.parametrize("op", ONE_NAN_OPS)
def test_slots_of_one_nan_run(op, dt):
    """Without TensorFlow: every NaN operand is one NaN and no operation is
    invalid (the other values are finite), so any NaN of the result is that
    NaN, whichever operand each operation passed on: the model can answer."""
    args, nan = _slots_of_one_nan(op, dt)
    try:
        got = optimizer_model(op, args, {})
    except fns.CannotRunHere as exc:
        pytest.fail(f"refused: {exc}")
    for g in got:
        with np.errstate(invalid="ignore"):
            nans = np.isnan(np.asarray(g, np.float64))
        assert set(np.asarray(bits(g))[nans].tolist()) <= {nan}


@pytest.mark.parametrize("dt", ("float32", "float64"))
@pytest.mark.parametrize("op", ONE_NAN_OPS)
def test_slots_of_one_nan_give_the_kernels_bits(op, dt):
    tensorflow()
    args, _ = _slots_of_one_nan(op, dt)
    want = state._tf_kernel(state.OPTIMIZERS[op], args, {})
    try:
        got = optimizer_model(op, args, {})
    except fns.CannotRunHere as exc:
        pytest.fail(f"refused: {exc}")
    for name, g, w in zip(state.OPTIMIZERS[op].variables, got, want):
        assert bits(g) == bits(w), (op, dt, name, differing(g, w))


# -- both findings through a graph's import ---------------------------------------

def test_an_imported_scatter_of_a_scalar_index_gives_tensorflows_nan():
    tf = tensorflow()
    from test_state_ops import run_both

    def build(h):
        return tf.raw_ops.ResourceScatterAdd(
            resource=h["v"], indices=tf.constant(np.int32(1)),
            updates=tf.constant(arr("float32", NAN_B["float32"]).reshape(()))), []
    after, _, mine, _ = run_both(tf, {"v": arr("float32", [NAN_A["float32"]] * 3)}, build)
    for mode, o in mine.items():
        assert bits(dict(o.state)["v"].array) == bits(after["v"]), mode


def test_an_imported_optimizer_on_scalar_variables_gives_tensorflows_nan():
    tf = tensorflow()
    from test_state_ops import run_both
    f32 = (lambda x: np.asarray(x, np.float32))

    def build(h):
        return tf.raw_ops.ResourceApplyRMSProp(
            var=h["var"], ms=h["ms"], mom=h["mom"], lr=tf.constant(f32(0.5)),
            rho=tf.constant(f32(0.9)), epsilon=tf.constant(f32(1e-7)), grad=tf.constant(f32(1.0)),
            momentum=tf.constant(arr("float32", NAN_B["float32"]).reshape(()))), []
    after, _, mine, _ = run_both(tf, {"var": f32(1.0), "ms": f32(1.0),
                                      "mom": arr("float32", NAN_A["float32"]).reshape(())}, build)
    for mode, o in mine.items():
        for name, want in after.items():
            assert bits(dict(o.state)[name].array) == bits(want), (mode, name)


# -- what held: scatters -------------------------------------------------------

#: row shapes the change's tests do not draw: long rows across Eigen's
#: unrolled blocks (16 float64, 32 float32 elements, 4 packets) and tails,
#: rows of rank 0 (a vector variable) and 2
ROWS = ((), (41,), (47,), (48,), (49,), (63,), (64,), (65,), (79,), (80,), (95,), (96,),
        (97,), (127,), (128,), (129,), (130,), (159,), (160,), (161,), (191,), (192,),
        (255,), (256,), (257,), (287,), (288,), (300,), (4, 12), (3, 33), (2, 64), (5, 13))


@st.composite
def scatter_cases(draw):
    nd = draw(st.booleans())
    kind = draw(st.sampled_from(state.SCATTER_ND_KINDS if nd else state.SCATTER_KINDS))
    dt = draw(st.sampled_from(FLOATS))
    rows = draw(st.integers(1, 3))
    row = draw(st.sampled_from(ROWS))
    if nd and row == ():
        row = (draw(st.integers(41, 300)),)
    shape = (rows,) + row
    k = draw(st.integers(1, 6))
    scalar = not nd and kind != "Update" and draw(st.integers(0, 2)) == 0
    repeated = draw(st.booleans())      # one index k times, or indices of rank 2
    if nd:
        depth = draw(st.sampled_from((1, len(shape))))
        indices = [[draw(st.integers(0, d - 1)) for d in shape[:depth]] for _ in range(k)]
        if repeated:
            indices = [indices[0]] * k
    elif repeated:
        indices = [[draw(st.integers(0, rows - 1))] * k] * 2
    else:
        indices = [draw(st.integers(0, rows - 1)) for _ in range(k)]
    return (kind, nd, dt, shape, np.int32(indices), scalar, draw(st.integers(0, 2**32 - 1)),
            draw(st.sampled_from((0.3, 0.7, 1.0))))


@settings(max_examples=120 * (20 if NIGHTLY else 1), **HYPOTHESIS)
@given(scatter_cases())
def test_long_and_shaped_rows_scatter_as_the_kernels(case):
    """Rows past the change's 40 (129) elements, of rank 0 and 2, repeated
    indices: the model's new variable is the kernel's bit for bit."""
    tf = tensorflow()
    kind, nd, dt, shape, indices, scalar, seed, p = case
    rng = np.random.default_rng(seed)
    var = values(dt, shape, rng, p)
    if nd:
        ushape = indices.shape[:-1] + shape[indices.shape[-1]:]
    else:
        ushape = () if scalar else indices.shape + shape[1:]
    upd = values(dt, ushape, rng, p)
    if kind == "Div":
        upd = no_zero(upd)
    want = scatter_kernel(tf, kind, var, indices, upd, nd)
    got = scatter_model(kind, var, indices, upd, nd)
    assert got.shape == want.shape
    assert bits(got) == bits(want), (kind, nd, dt, shape, indices.tolist(), scalar,
                                     differing(got, want))


@pytest.mark.parametrize("dt", FLOATS)
def test_many_indices_and_long_rows_scatter_as_the_kernels(dt):
    """1,050 distinct indices (the kernel's parallel path: the model runs
    them as it does fewer), and rows of 20,000 elements (bfloat16 NaNs past
    the arithmetic ops' tiled bound: the scatter's row is not tiled)."""
    tf = tensorflow()
    rng = np.random.default_rng(17)
    for kind in ("Add", "Sub", "Mul", "Div", "Max"):
        for scalar in (False, True):
            for shape, idx in (((1100, 5), np.int32(rng.permutation(1100)[:1050])),
                               ((2, 20000), np.int32([0, 1, 0]))):
                var = values(dt, shape, rng, 0.6)
                upd = values(dt, () if scalar else idx.shape + shape[1:], rng, 0.6)
                if kind == "Div":
                    upd = no_zero(upd)
                want = scatter_kernel(tf, kind, var, idx, upd)
                got = scatter_model(kind, var, idx, upd)
                assert bits(got) == bits(want), (kind, dt, shape, scalar, differing(got, want))


# -- what held: optimizers -----------------------------------------------------

OPT_SHAPES = ((1,), (2,), (9,), (33,), (41,), (64,), (65,), (127,), (131,), (143,), (144,),
              (160,), (200,), (257,), (300,), (1, 1), (3, 5), (2, 8), (16, 3), (4, 4, 2))


def _nan(dt: str, rng) -> np.ndarray:
    """A random NaN of `dt` (sign, quiet or signalling, payload), rank 0."""
    while True:
        x = specials(dt, rng, 1).view(arr(dt, 0).dtype).reshape(())
        with np.errstate(invalid="ignore"):
            nan = bool(np.isnan(np.asarray(x, np.float64)))
        if nan:
            return x


@st.composite
def optimizer_cases(draw):
    op = draw(st.sampled_from(EXACT))
    spec = state.OPTIMIZERS[op]
    attrs = {a: draw(st.booleans()) for a in spec.attrs}
    return (op, draw(st.sampled_from(FLOATS)), attrs, draw(st.sampled_from(OPT_SHAPES)),
            draw(st.integers(0, 2**32 - 1)), draw(st.sampled_from((0.0, 0.2, 0.5, 0.9))))


def _draw_optimizer_args(op, dt, shape, seed, p):
    """Each variable and the gradient: values with a share `p` of specials,
    one in five wholly one NaN; each hyperparameter a NaN one in four, a
    special one in ten, else its usual value."""
    rng = np.random.default_rng(seed)
    spec = state.OPTIMIZERS[op]
    d = arr(dt, 0).dtype
    out = []
    for name in spec.variables + spec.inputs:
        if name in spec.variables or name == "grad":
            a = values(dt, shape, rng, p)
            if rng.random() < 0.2:
                a = np.full(shape, _nan(dt, rng), d)
        else:
            r = rng.random()
            a = _nan(dt, rng) if r < 0.25 else \
                specials(dt, rng, 1).view(d).reshape(()) if r < 0.35 else np.asarray(HYPER[name], d)
        out.append(np.asarray(a, d))
    return out


@settings(max_examples=200 * (20 if NIGHTLY else 1), **HYPOTHESIS)
@given(optimizer_cases())
def test_optimizers_on_long_and_shaped_variables_are_the_kernels(case):
    """Variables of 1 to 300 elements and of rank 1 to 3, tensors wholly
    NaN, NaN hyperparameters: the model's bits are the kernel's, or it
    refuses a result that holds a NaN (never one without)."""
    tensorflow()
    op, dt, attrs, shape, seed, p = case
    spec = state.OPTIMIZERS[op]
    args = _draw_optimizer_args(op, dt, shape, seed, p)
    try:
        want = state._tf_kernel(spec, args, attrs)
    except Exception as exc:   # noqa: BLE001 (no kernel for the dtype: the model says so)
        assert "No OpKernel" in str(exc), exc
        with pytest.raises(fns.OpError, match="no kernel"):
            optimizer_model(op, args, attrs)
        return
    with np.errstate(all="ignore"):
        has_nan = any(np.isnan(np.asarray(w, np.float32)).any() for w in want)
    try:
        got = optimizer_model(op, args, attrs)
    except fns.CannotRunHere as exc:
        assert has_nan, (op, dt, attrs, shape, "refused a result without a NaN")
        assert op in str(exc)
        return
    for name, g, w in zip(spec.variables, got, want):
        assert bits(g) == bits(w), (op, dt, attrs, shape, name, differing(g, w))


@pytest.mark.parametrize("op", sorted({op for op, _, _ in state.NAN_RULE_MEASURED}))
def test_measured_optimizers_on_large_variables_are_the_kernels(op):
    """17,000 and 100,003 elements, most of them NaN in every tensor, NaN
    hyperparameters: the rules measured on 1 to 139 elements hold there."""
    tensorflow()
    spec = state.OPTIMIZERS[op]
    rng = np.random.default_rng(3)
    for dt in ("float32", "float64"):
        for n in (17000, 100003):
            nans = [NAN_A[dt], NAN_B[dt]]
            named = {}
            for j, name in enumerate(spec.variables + spec.inputs):
                if name in spec.variables or name == "grad":
                    normal = rng.standard_normal(n).astype(arr(dt, 0).dtype)
                    named[name] = np.where(rng.random(n) < 0.6, arr(dt, [nans[j % 2]] * n), normal)
                elif j % 2:
                    named[name] = nans[(j + 1) % 2]
            args = optimizer_args(op, dt, (n,), named)
            attrs = {a: a == "update_slots" for a in spec.attrs}
            want = state._tf_kernel(spec, args, attrs)
            try:
                got = optimizer_model(op, args, attrs)
            except fns.CannotRunHere:
                assert (op, dt, False) not in state.NAN_RULE_MEASURED
                continue
            for name, g, w in zip(spec.variables, got, want):
                assert bits(g) == bits(w), (op, dt, n, name, differing(g, w))


# -- backends/arraymodule.py: a NaN result is computed on the host ----------------

#: per float dtype cupy has: NaNs (quiet, signalling, both signs, payloads,
#: all bits set) and values that are none (infinities, the largest finite)
_NAN_PATTERNS = {"float16": ([0x7e00, 0xfc01, 0x7c01, 0xffff], [0x7c00, 0xfc00, 0x7bff]),
                 "float32": ([0x7fc00000, 0xff800001, 0x7f800001, 0xffffffff],
                             [0x7f800000, 0xff800000, 0x7f7fffff]),
                 "float64": ([0x7ff8000000000000, 0xfff0000000000001, 0x7ff0000000000001,
                              0xffffffffffffffff],
                             [0x7ff0000000000000, 0xfff0000000000000, 0x7fefffffffffffff])}


@pytest.mark.parametrize("dt", sorted(_NAN_PATTERNS))
def test_every_nan_is_doubted_in_any_view(dt):
    """Every NaN pattern, in an array of rank 0 and in strided, reversed,
    transposed, one-element and broadcast views: doubted exactly where the
    view holds it; an infinity or the largest finite value is no NaN (and
    float64, which cupy does not flush, is not doubted for it)."""
    b = numpy_as_cupy()
    xp = b.xp
    nans, others = _NAN_PATTERNS[dt]
    for raw in nans:
        x = arr(dt, raw).reshape(())
        assert bool(xp.any(am._doubtful_result(xp, b.to_device(x)))), (dt, hex(raw))
        host = np.full((6, 10), 1.5, arr(dt, 0).dtype)
        host[3, 7] = x
        dev = b.to_device(host)
        for view in (lambda a: a[::2, ::3], lambda a: a[1::2, 1::3], lambda a: a[::-1].T,
                     lambda a: a[3:4, 7:8], lambda a: a[:, 7], lambda a: a[:3]):
            with np.errstate(invalid="ignore"):
                want = bool(np.isnan(np.asarray(view(host), np.float64)).any())
            assert bool(xp.any(am._doubtful_result(xp, view(dev)))) == want, (dt, hex(raw))
        assert bool(xp.any(am._doubtful_result(xp, xp.broadcast_to(b.to_device(x), (4, 5)))))
    if dt == "float64":
        plain = b.to_device(arr(dt, others))
        assert not bool(xp.any(am._doubtful_result(xp, plain))), dt


def test_a_batched_recompute_replaces_the_doubtful_valuations_only():
    """A batch of four valuations of Add, one with two NaNs meeting, one with
    a float32 subnormal: exactly those two are recomputed (numpy's bits);
    the others keep the device's results, which were numpy's already."""
    b = numpy_as_cupy()
    xp = b.xp
    f32 = (lambda *raw: arr("float32", list(raw)))
    x = np.stack([f32(0x3f800000, 0x40000000), f32(0x7fc00011, 0x3f800000),
                  f32(0x00000001, 0x3f800000), f32(0xc0200000, 0x7f800000)])
    y = np.stack([f32(0x3f800000, 0x40000000), f32(0xffc00022, 0x3f800000),
                  f32(0x3f800000, 0x3f800000), f32(0x3f800000, 0x7f800000)])
    fn = fns.get("Add")
    args = [b.to_device(x), b.to_device(y)]
    results = BT._batched_call(xp, 4)(fn, args, {})
    seen = []

    def run_on_numpy(host, rows):
        seen.append([h.shape[0] for h in host])
        return BT._batched_call(np, rows)(fn, host, {})
    fixed = am.recompute_on_host(xp, "Add", args, results, run_on_numpy, batched=True)
    assert seen == [[2, 2]]
    got = b.to_host([fixed[0]])[0]
    for row in range(4):
        (want,) = fn.apply([Tensor(x[row]), Tensor(y[row])], {})
        assert bits(got[row]) == bits(want.array), row
    assert bits(got[1]) == [0x7fc00011, 0x40000000]     # the first operand's NaN


# -- backends/reuse.py: one session per backend ----------------------------------

def test_two_stand_ins_of_one_label_never_share_a_session():
    """Two cupy stand-ins (another array-module object each) share the label
    "cupy (numpy substituted)": each replaces the other's session, neither
    is handed the other's; numpy's session stays beside them."""
    reuse.clear()
    sigma = {"a": Tensor(np.float32(1.0))}
    numpy_backend, one, two = get_backend("numpy"), numpy_as_cupy(), numpy_as_cupy()
    assert one.label == two.label and one.xp is not two.xp
    s_numpy = reuse.session(numpy_backend, sigma, {})
    s_one = reuse.session(one, sigma, {})
    assert reuse.session(one, sigma, {}) is s_one
    s_two = reuse.session(two, sigma, {})
    assert s_two is not s_one and s_two.xp is two.xp
    again = reuse.session(one, sigma, {})
    assert again is not s_one and again is not s_two and again.xp is one.xp
    assert reuse.session(numpy_backend, sigma, {}) is s_numpy
    reuse.clear()
