"""The bits of the NaNs tfsem's optimizer models make (oracle/opdefs/state.py:
the numpy models of ResourceApply{Momentum,KerasMomentum,Adam,
AdamWithAmsgrad,AdaMax,RMSProp,CenteredRMSProp,AdagradV2}, `_ops` and
NAN_RULE_MEASURED state the rule; the float32 Momentum, Adam and
GradientDescent imports' assign functions ScaleAdd, StepToward,
MomentumStep, AdamStep and GradientStep), against TensorFlow 2.21's
kernels, bit for bit: every float dtype, 1 to 40 elements, NaNs of both
signs, quiet and signalling, with payloads, infinities, signed zeros and
subnormals in the variables, the gradient and the hyperparameters.

Where the kernel's order of NaNs was measured (NAN_RULE_MEASURED: every
optimizer on float32 and float64, a few on float16 and bfloat16), the
model's bits are the kernel's, NaNs included; elsewhere a result that holds
a NaN cannot run (CannotRunHere), and only such a result: every run whose
kernel result has no NaN gives the kernel's values.  The float32 Momentum, Adam and
GradientDescent imports, programs of Assign-f nodes, update the variable
with the fused kernel's last expression too (MomentumStep, AdamStep,
GradientStep): the imported program's new values are the kernel's, NaN
bits included; every value that is not a NaN is the one the imports' earlier
arithmetic ops (Mul, RealDiv, Add, Sqrt, Sub, each flushing) gave.

The Hypothesis tests draw 150 cases by default, 20 times that under the
`nightly` profile; what compares with TensorFlow skips without it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tfsem.oracle import functions as fns
from tfsem.oracle.opdefs import state
from nan_bits_support import arr, bits
from test_review_nan_bits_round16 import specials, values

FLOATS = ("float16", "bfloat16", "float32", "float64")
NIGHTLY = settings.get_current_profile_name() == "nightly"
HYPOTHESIS = dict(deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))


def tensorflow():
    """TensorFlow, or skip.  (Op determinism stays as it is: turned on, it
    is on for the rest of the process, and later tests' random initializers
    would fail without a seed.)"""
    return pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs tfsem[tensorflow]")
EXACT = sorted(op for op, spec in state.OPTIMIZERS.items() if spec.exact)
HYPER = {"lr": 0.01, "momentum": 0.9, "beta1": 0.9, "beta2": 0.999, "beta1_power": 0.729,
         "beta2_power": 0.997, "epsilon": 1e-7, "rho": 0.95}


def _no_nans(dt: str, a: np.ndarray, rng) -> np.ndarray:
    """`a` with each NaN replaced by a finite value (drawn specials keep
    their infinities, zeros and subnormals)."""
    with np.errstate(all="ignore"):
        nan = np.isnan(np.asarray(a, np.float32))
    return np.where(nan, np.asarray(rng.standard_normal(a.shape), a.dtype), a)


@st.composite
def optimizer_cases(draw):
    op = draw(st.sampled_from(EXACT))
    spec = state.OPTIMIZERS[op]
    dt = draw(st.sampled_from(FLOATS))
    attrs = {a: draw(st.booleans()) for a in spec.attrs}
    n = draw(st.integers(1, 40))
    return op, dt, attrs, n, draw(st.integers(0, 2**32 - 1)), \
        draw(st.sampled_from((0.0, 0.1, 0.4, 0.8))), draw(st.sampled_from((0.0, 0.2, 0.5))), \
        draw(st.booleans())


def _arguments(spec, dt, n, seed, p, p_hyper, nans):
    rng = np.random.default_rng(seed)
    d = arr(dt, 0).dtype
    out = []
    for name in spec.variables + spec.inputs:
        if name in spec.variables or name == "grad":
            a = values(dt, (n,), rng, p)
        elif rng.random() < p_hyper:
            a = specials(dt, rng, 1).view(d).reshape(())
        else:
            a = np.asarray(HYPER[name], d)
        out.append(a if nans else _no_nans(dt, a, rng))
    return out


@settings(max_examples=150 * (20 if NIGHTLY else 1), **HYPOTHESIS)
@given(optimizer_cases())
def test_optimizer_bits_are_tensorflows_kernels(case):
    """The model's new values of the variables are the kernel's bit for bit,
    or, where the result holds a NaN whose rule was not measured, it cannot
    run; a kernel result without a NaN always runs."""
    tensorflow()
    op, dt, attrs, n, seed, p, p_hyper, nans = case
    spec = state.OPTIMIZERS[op]
    args = _arguments(spec, dt, n, seed, p, p_hyper, nans)
    try:
        want = state._tf_kernel(spec, args, attrs)
    except Exception as exc:   # noqa: BLE001 (TensorFlow has no kernel: the model says so)
        assert "No OpKernel" in str(exc), exc
        with pytest.raises(fns.OpError, match="no kernel"):
            fns.get(spec.fn).impl(np, tuple(args), attrs)
        return
    with np.errstate(all="ignore"):
        has_nan = any(np.isnan(np.asarray(w, np.float32)).any() for w in want)
    nesterov = bool(attrs.get("use_nesterov", False))
    try:
        got = fns.get(spec.fn).impl(np, tuple(args), attrs)
    except fns.CannotRunHere:
        assert has_nan, (op, dt, attrs, "refused a result without a NaN")
        assert (op, dt, nesterov) not in state.NAN_RULE_MEASURED
        return
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape
        bad = np.nonzero(np.asarray(bits(g)) != np.asarray(bits(w)))[0]
        assert not len(bad), (op, dt, attrs, spec.variables[k],
                              [(int(i), hex(bits(g)[i]), hex(bits(w)[i])) for i in bad[:4]])


def test_a_nan_result_of_an_unmeasured_rule_cannot_run_and_names_the_op():
    """Without TensorFlow too: float16 Adam's NaN result is refused by name
    (its kernel's order of NaNs was not measured to be the model's); the
    same call without a NaN runs; float32 Adam's NaN result runs."""
    spec = state.OPTIMIZERS["ResourceApplyAdam"]
    assert ("ResourceApplyAdam", "float16", False) not in state.NAN_RULE_MEASURED

    def run(dt, grad0):
        d = np.dtype(dt)
        slots = [np.array(x, d) for x in ((1.0, 2.0), (0.5, 0.5), (0.25, 0.25))]
        hyper = [d.type(HYPER[x]) for x in ("beta1_power", "beta2_power", "lr", "beta1",
                                            "beta2", "epsilon")]
        return fns.get(spec.fn).impl(np, tuple(slots + hyper + [np.array((grad0, 0.2), d)]), {})
    assert not np.isnan(run("float16", 0.1)[0]).any()
    with pytest.raises(fns.CannotRunHere, match="ResourceApplyAdam on float16"):
        run("float16", np.nan)
    assert np.isnan(run("float32", np.nan)[0][0])


def test_adamax_has_no_bfloat16_kernel():
    spec = state.OPTIMIZERS["ResourceApplyAdaMax"]
    one = np.ones(3, arr("bfloat16", 0).dtype)
    args = [one] * 3 + [one[0]] * 5 + [one]
    with pytest.raises(fns.OpError, match="no kernel for bfloat16"):
        fns.get(spec.fn).impl(np, tuple(args), {})


# -- the float32 imports' assign functions -----------------------------------

@settings(max_examples=60 * (20 if NIGHTLY else 1), **HYPOTHESIS)
@given(st.sampled_from(("ResourceApplyMomentum", "ResourceApplyAdam")), st.integers(1, 40),
       st.integers(0, 2**32 - 1), st.sampled_from((0.1, 0.4, 0.8)), st.sampled_from((0.0, 0.5)))
def test_scale_add_and_step_toward_are_the_kernels_slot_updates(op, n, seed, p, p_hyper):
    """ScaleAdd (Momentum's accum) and StepToward (Adam's m and v), as the
    float32 import applies them, give the kernel's slots bit for bit."""
    tensorflow()
    spec = state.OPTIMIZERS[op]
    args = _arguments(spec, "float32", n, seed, p, p_hyper, True)
    want = state._tf_kernel(spec, args, {})
    named = dict(zip(spec.variables + spec.inputs, args))
    stack = (lambda g, c: fns.get("StackBroadcast").impl(np, (g, c), {})[0])
    with np.errstate(all="ignore"):
        if op == "ResourceApplyMomentum":
            (accum,) = fns.get("ScaleAdd").impl(
                np, (named["accum"], stack(named["grad"], named["momentum"])), {})
            got = {"accum": accum}
        else:
            one = np.float32(1.0)
            g = named["grad"]
            c1 = fns.get("Sub.ftz").impl(np, (one, named["beta1"]), {})[0]
            c2 = fns.get("Sub.ftz").impl(np, (one, named["beta2"]), {})[0]
            g2 = fns.get("Square").impl(np, (g,), {})[0]
            (m,) = fns.get("StepToward").impl(np, (named["m"], stack(g, c1)), {})
            (v,) = fns.get("StepToward").impl(np, (named["v"], stack(g2, c2)), {})
            got = {"m": m, "v": v}
    for name, g in got.items():
        w = want[spec.variables.index(name)]
        assert bits(g) == bits(w), (op, name, n)


def test_the_float32_momentum_imports_variable_update_nan_is_the_kernels():
    """var -= accum * lr with a NaN accum and a NaN lr of other payloads, 9
    elements (one past a packet of 8): the kernel passes lr's NaN on
    everywhere; the import's Mul passed accum's in the scalar tail."""
    tensorflow()
    from test_state_ops import run_both
    import tensorflow as tf
    n = 9
    var = np.ones(n, np.float32)
    accum = arr("float32", [0x7fc00011] * n)
    lr = arr("float32", 0x7fc00022)

    def build(h):
        return tf.raw_ops.ResourceApplyMomentum(
            var=h["var"], accum=h["accum"], lr=tf.constant(lr), grad=tf.constant(var),
            momentum=tf.constant(np.float32(0.9))), []
    after, _, mine, _ = run_both(tf, {"var": var, "accum": accum}, build)
    assert bits(after["var"]) == [0x7fc00022] * n
    for mode, o in mine.items():
        assert bits(dict(o.state)["var"].array) == bits(after["var"]), mode


# -- the float32 imports, whole, on NaN-heavy draws -----------------------------

#: op -> (its variables, its other inputs), in the op's order
IMPORTS = {"ResourceApplyGradientDescent": (("var",), ("alpha", "delta")),
           "ResourceApplyMomentum": (("var", "accum"), ("lr", "grad", "momentum")),
           "ResourceApplyAdam": (("var", "m", "v"), ("beta1_power", "beta2_power", "lr",
                                                     "beta1", "beta2", "epsilon", "grad"))}
#: the hyperparameters that meet the variable's update (drawn NaN the most)
STEP_HYPER = {"ResourceApplyGradientDescent": ("alpha",), "ResourceApplyMomentum": ("lr",),
              "ResourceApplyAdam": ("lr", "epsilon", "beta2_power", "beta1_power")}
_PROGRAMS: dict = {}


def imported(op: str, shape: tuple):
    """The float32 `op` on VarHandleOps and Placeholders of `shape` (the
    hyperparameters scalars), imported: (program, feed name of each input)."""
    key = (op, shape)
    if key not in _PROGRAMS:
        from tfsem.graphdef.importer import import_graph
        variables, inputs = IMPORTS[op]
        f32 = {"type": "DT_FLOAT"}
        dims = (lambda sh: {"shape": {"dim": [{"size": int(d)} for d in sh]}})
        nodes = [{"name": v, "op": "VarHandleOp",
                  "attr": {"dtype": f32, "shape": dims(shape), "shared_name": {"s": v.encode()}}}
                 for v in variables]
        nodes += [{"name": x, "op": "Placeholder",
                   "attr": {"dtype": f32, "shape": dims(shape if x in ("grad", "delta") else ())}}
                  for x in inputs]
        nodes.append({"name": "step", "op": op, "input": list(variables + inputs),
                      "attr": {"T": f32}})
        prog = import_graph({"node": nodes}, [], ["step"]).program
        assert not any(n.op == "Apply" + op.removeprefix("ResourceApply") for n in prog.nodes)
        _PROGRAMS[key] = prog
    return _PROGRAMS[key]


def _nans(rng, k: int) -> np.ndarray:
    """`k` random float32 NaNs: either sign, quiet or signalling, payloads."""
    payload = rng.integers(1, 1 << 22, k, dtype=np.uint32)
    quiet = rng.random(k) < 0.5
    raw = np.uint32(0x7f800000) | np.where(quiet, np.uint32(1 << 22) | (payload >> 1), payload)
    sign = np.where(rng.random(k) < 0.5, np.uint32(0x80000000), np.uint32(0))
    return (raw | sign).view(np.float32)


def nan_heavy(op: str, shape: tuple, seed: int, p: float, p_hyper: float):
    """Values of the op's variables and inputs: each element special with
    probability p (a third of specials NaNs), NaNs added with probability
    p / 2; each hyperparameter special with probability p_hyper, and those
    of STEP_HYPER NaN with probability p_hyper."""
    rng = np.random.default_rng(seed)
    variables, inputs = IMPORTS[op]
    named = {}
    for name in variables + inputs:
        if name in variables or name in ("grad", "delta"):
            a = values("float32", shape, rng, p).astype(np.float32)
            a = np.where(rng.random(shape) < p / 2, _nans(rng, max(a.size, 1))[:a.size]
                         .reshape(shape), a).astype(np.float32)
        elif name in STEP_HYPER[op] and rng.random() < p_hyper:
            a = _nans(rng, 1).reshape(())
        elif rng.random() < p_hyper:
            a = specials("float32", rng, 1).view(np.float32).reshape(())
        else:
            a = np.float32(HYPER.get(name, 0.01))
        named[name] = np.asarray(a, np.float32)
    return named


def run_import(op: str, named: dict) -> dict:
    """The imported program's variables after one step, in both modes (one
    outcome each, equal)."""
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.values import Tensor
    variables, inputs = IMPORTS[op]
    prog = imported(op, named["var"].shape)
    out = []
    for mode in ("atomic", "decomposed"):
        (o,) = outcome_set(prog, {x: Tensor(named[x]) for x in inputs},
                           {v: Tensor(named[v]) for v in variables}, mode,
                           "outputs+state").as_dict(2)
        out.append({v: dict(o.state)[v].array for v in variables})
    assert all(bits(out[0][v]) == bits(out[1][v]) for v in variables)
    return out[0]


SHAPES = st.one_of(st.integers(1, 40).map(lambda n: (n,)), st.just(()),
                   st.tuples(st.integers(1, 3), st.integers(1, 14)))


@settings(max_examples=150 * (20 if NIGHTLY else 1), **HYPOTHESIS)
@given(st.sampled_from(sorted(IMPORTS)), SHAPES, st.integers(0, 2**32 - 1),
       st.sampled_from((0.2, 0.5, 0.9)), st.sampled_from((0.5, 0.9)))
def test_the_float32_imports_variables_are_the_kernels_bit_for_bit(op, shape, seed, p, p_hyper):
    """The imported ResourceApplyGradientDescent, Momentum and Adam (float32,
    no Nesterov): every variable after the step is TensorFlow's kernel's,
    bit for bit, NaN payloads and signs included, on draws heavy with NaNs
    in the tensors and in lr, alpha and epsilon."""
    tensorflow()
    variables, inputs = IMPORTS[op]
    named = nan_heavy(op, shape, seed, p, p_hyper)
    spec = state.Optimizer(op, variables, inputs, "")
    want = state._tf_kernel(spec, [named[x] for x in variables + inputs], {})
    got = run_import(op, named)
    for v, w in zip(variables, want):
        bad = np.nonzero(np.asarray(bits(got[v])) != np.asarray(bits(w)))[0]
        assert not len(bad), (op, shape, v, [(int(i), hex(bits(named["var"])[i]),
                                              hex(bits(got[v])[i]), hex(bits(w)[i]))
                                             for i in bad[:4]])


@settings(max_examples=150 * (20 if NIGHTLY else 1), **HYPOTHESIS)
@given(st.sampled_from(("ResourceApplyMomentum", "ResourceApplyAdam")), SHAPES,
       st.integers(0, 2**32 - 1), st.sampled_from((0.2, 0.5, 0.9)), st.sampled_from((0.5, 0.9)))
def test_the_float32_imports_are_the_fused_models_bit_for_bit(op, shape, seed, p, p_hyper):
    """Without TensorFlow too: the imported Momentum and Adam give what the
    fused model (ApplyMomentum, ApplyAdam: one function, the rule measured
    against the kernels above) gives, bit for bit, NaNs included."""
    variables, inputs = IMPORTS[op]
    named = nan_heavy(op, shape, seed, p, p_hyper)
    spec = state.OPTIMIZERS[op]
    fused = fns.get(spec.fn).impl(np, tuple(named[x] for x in spec.variables + spec.inputs), {})
    got = run_import(op, named)
    for v, w in zip(spec.variables, fused):
        assert bits(got[v]) == bits(w), (op, shape, v)


def _earlier(op: str, named: dict, slots: dict) -> np.ndarray:
    """The variable's update as the imports computed it before they used
    GradientStep, MomentumStep and AdamStep: one arithmetic op after another."""
    run = (lambda name, *a: np.asarray(fns.get(name).impl(np, a, {})[0]))
    var = named["var"]
    with np.errstate(all="ignore"):
        if op == "ResourceApplyGradientDescent":
            return run("Sub.ftz", var, run("Mul.ftz", named["delta"], named["alpha"]))
        if op == "ResourceApplyMomentum":
            return run("Sub.ftz", var, run("Mul.ftz", slots["accum"], named["lr"]))
        one = np.float32(1)
        alpha = run("RealDiv.ftz", run("Mul.ftz", named["lr"], run(
            "Sqrt.ftz", run("Sub.ftz", one, named["beta2_power"]))),
            run("Sub.ftz", one, named["beta1_power"]))
        den = run("Add.ftz", run("Sqrt.ftz", slots["v"]), named["epsilon"])
        return run("Sub.ftz", var, run("RealDiv.ftz", run("Mul.ftz", slots["m"], alpha), den))


@settings(max_examples=150 * (20 if NIGHTLY else 1), **HYPOTHESIS)
@given(st.sampled_from(sorted(IMPORTS)), SHAPES, st.integers(0, 2**32 - 1),
       st.sampled_from((0.0, 0.2, 0.5, 0.9)), st.sampled_from((0.0, 0.5, 0.9)))
def test_what_is_not_nan_is_what_the_earlier_arithmetic_gave(op, shape, seed, p, p_hyper):
    """Without TensorFlow: the new variable's every element that is not a
    NaN has the bits the imports' earlier arithmetic ops gave (flush-to-zero
    and a result rounded up to the smallest normal included), and the NaN
    elements are the same elements."""
    named = nan_heavy(op, shape, seed, p, p_hyper)
    got = run_import(op, named)
    want = _earlier(op, named, got)
    g, w = np.asarray(bits(got["var"])), np.asarray(bits(want))
    with np.errstate(all="ignore"):
        nan_g, nan_w = np.isnan(got["var"]).ravel(), np.isnan(want).ravel()
    assert np.array_equal(nan_g, nan_w), (op, shape)
    assert np.array_equal(g[~nan_g], w[~nan_w]), (op, shape)


def test_the_variable_updates_refuse_a_nan_result_off_float32():
    """GradientStep, MomentumStep and AdamStep were measured on float32:
    on float64 a result without a NaN runs, one with a NaN cannot run."""
    stack = (lambda a, b: fns.get("StackBroadcast").impl(np, (a, b), {})[0])
    w = np.array([1.0, 2.0])
    half, eps = np.float64(0.5), np.float64(1e-7)
    for name, packed in (("GradientStep", stack(w, half)), ("MomentumStep", stack(w, half)),
                         ("AdamStep", stack(stack(w, half), stack(w, eps)))):
        (r,) = fns.get(name).impl(np, (w, packed), {})
        assert not np.isnan(r).any() and r.dtype == np.float64
        with pytest.raises(fns.CannotRunHere, match=f"{name} on float64"):
            fns.get(name).impl(np, (np.array([np.nan, 1.0]), packed), {})
        with pytest.raises(fns.ShapeError, match="StackBroadcast"):
            fns.get(name).impl(np, (w[:1], packed), {})
