"""The Z3 encoding (and the symbolic functions under it) against numpy.

For random arguments of every kind (every dtype of SPEC section 8, scalars and 1-D
tensors, broadcasting, mismatched dtypes and shapes, errors), applying a
registry function symbolically and evaluating the result with Z3's simplifier
at the concrete leaf values must give exactly `Function.apply` on the concrete
values, under SPEC equality (NaN equals NaN, otherwise bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.checking.encode import Encoder, evaluate_concrete, sort_of, z3_const
from tfsem.checking.sampling import sample_equal
from tfsem.checking.symbolic import (ELEMENTWISE, STRUCTURAL, Algebra, Guarded, Opaque, SymTensor,
                                     SymbolicLimit,
                                     evaluate, has_encoding)
from tfsem.oracle import functions as fns
from tfsem.oracle.program import TensorType
from tfsem.oracle.semantics import _assigned
from tfsem.oracle.values import BITS_DTYPES, DTYPES, FLOAT_DTYPES, Error, Tensor, finfo


def examples(n: int) -> int:
    """Small by default, 20x under the `nightly` Hypothesis profile."""
    return n * 20 if settings.get_current_profile_name() == "nightly" else n


INT_EDGE = [0, 1, -1, 2, -2, 7, 2**62, 2**63 - 1, -(2**63), 2**32 + 3]
FLOAT_EDGE = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, float("nan"), float("inf"), float("-inf"), 1e-45,
              -1e-45, 1.1754942e-38, 3.4028235e38, -3.4028235e38, 16777217.0, 0.1]

ints = st.one_of(st.sampled_from(INT_EDGE), st.integers(-(2**63), 2**63 - 1), st.integers(-9, 9))
floats = st.one_of(st.sampled_from(FLOAT_EDGE), st.floats(width=32, allow_nan=True),
                   st.integers(-9, 9).map(float))
SHAPES = [(), (1,), (2,), (3,), (4,)]
#: int64 and float32 twice as often as each other dtype (the common ones)
DTYPE_CHOICES = list(DTYPES) + ["int64", "float32"]


def _edges(dtype: str) -> list:
    """A dtype's edge values: integer extremes; NaN, signed zeros, infinities,
    largest, smallest normal and subnormal floats."""
    d = DTYPES[dtype]
    if dtype == "bool":
        return [False, True]
    if dtype not in FLOAT_DTYPES:
        i = np.iinfo(d)
        return [int(x) for x in {int(i.min), int(i.min) + 1, 0, 1, 2, 7, int(i.max), int(i.max) - 1,
                                 -1 if d.kind == "i" else 3}]
    f = finfo(d)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, float("nan"), float("inf"), float("-inf"),
            float(f.max), -float(f.max), float(f.tiny), -float(f.tiny),
            float(f.smallest_subnormal), -float(f.smallest_subnormal), 1 / 3]
    return [np.array(v, dtype=d)[()] for v in vals]


def _from_bits(dtype: str):
    d = DTYPES[dtype]
    if dtype == "bool":
        return st.booleans()
    if dtype not in FLOAT_DTYPES:
        i = np.iinfo(d)
        return st.integers(int(i.min), int(i.max))
    bits = BITS_DTYPES[dtype]
    return st.integers(0, int(np.iinfo(bits).max)).map(lambda b: np.array(b, bits).view(d)[()])


def elements(dtype: str):
    if dtype == "int64":
        return ints
    if dtype == "float32":
        return floats
    small = st.integers(-9, 9) if dtype != "bool" else st.booleans()
    if dtype.startswith("uint"):
        small = st.integers(0, 9)
    return st.one_of(st.sampled_from(_edges(dtype)), _from_bits(dtype), small)


@st.composite
def tensors(draw, dtype=None, shape=None):
    dtype = dtype or draw(st.sampled_from(DTYPE_CHOICES))
    shape = shape if shape is not None else draw(st.sampled_from(SHAPES))
    n = int(np.prod(shape))
    vals = draw(st.lists(elements(dtype), min_size=n, max_size=n))
    with np.errstate(all="ignore"):
        return Tensor(np.array(vals, dtype=DTYPES[dtype]).reshape(shape), dtype)


@st.composite
def arguments(draw, n_args: int):
    """Arguments of one dtype and often one shape, sometimes mixed, sometimes errors."""
    dtype = draw(st.sampled_from(DTYPE_CHOICES))
    shape = draw(st.sampled_from(SHAPES))
    out = []
    for _ in range(n_args):
        roll = draw(st.integers(0, 19))
        if roll == 0:
            out.append(Error(draw(st.sampled_from(["uninitialized", "shape-mismatch"]))))
        elif roll == 1:
            out.append(draw(tensors()))
        elif roll == 2:
            out.append(draw(tensors(dtype=dtype)))
        else:
            out.append(draw(tensors(dtype=dtype, shape=shape)))
    return out


def symbolic_args(algebra: Algebra, args):
    """Leaf tensors for the tensor arguments, with their concrete values."""
    sym, values = [], {}
    for k, a in enumerate(args):
        if isinstance(a, Error):
            sym.append(a)
            continue
        leaf = algebra.leaf("feed", f"a{k}", TensorType(a.dtype, a.shape))
        sym.append(leaf)
        for term, v in zip(leaf.elems, a.array.reshape(-1)):
            values[term] = v
    return sym, values


def concrete(encoder: Encoder, value, leaf_values):
    """Evaluate a symbolic value at concrete leaves through Z3."""
    if isinstance(value, Error):
        return value
    flat = evaluate_concrete(encoder, value.elems, leaf_values)
    arr = np.array(flat, dtype=DTYPES[value.dtype])
    return Tensor(arr.reshape(value.shape), value.dtype)


def sampled(value, leaf_values):
    """Evaluate a symbolic value with the sampling evaluator (one sample)."""
    if isinstance(value, Error):
        return value
    memo = {}
    leaves = {t: np.array([v]) for t, v in leaf_values.items()}
    evaluate(value.elems, leaves, memo)
    arr = np.array([np.broadcast_to(memo[t], (1,))[0] for t in value.elems],
                   dtype=DTYPES[value.dtype])
    return Tensor(arr.reshape(value.shape), value.dtype)


ENCODED = [name for name in (*ELEMENTWISE, *STRUCTURAL) if name != "Const"]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(ENCODED), st.data())
def test_every_encoded_function_matches_numpy(name, data):
    fn = fns.get(name)
    args = data.draw(arguments(fn.n_in))
    expected = fn.apply(args)
    algebra, encoder = Algebra(), Encoder()
    sym, leaf_values = symbolic_args(algebra, args)
    results = algebra.apply(fn, sym)
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        assert concrete(encoder, got, leaf_values) == want, (name, args)
        assert sampled(got, leaf_values) == want, (name, args)


@settings(max_examples=examples(150), deadline=None)
@given(st.sampled_from(fns.assign_functions()), st.data())
def test_assign_matches_the_step_semantics(name, data):
    fn = fns.get(name)
    w, v, current = data.draw(arguments(3))
    want = _assigned(name, w, v, current)
    algebra, encoder = Algebra(), Encoder()
    (sw, sv, sc), leaf_values = symbolic_args(algebra, [w, v, current])
    try:
        new = algebra.assign(fn, sw, sv, sc)
    except SymbolicLimit:
        # (a write that changes the variable's shape is not proved about:
        # a later run would start outside σ's declared type)
        assert name == "Snd" and isinstance(current, Tensor) and isinstance(want, Tensor)
        assert want.shape != current.shape
        return
    got = concrete(encoder, sc if new is None else new, leaf_values)
    assert got == want


@settings(max_examples=examples(100), deadline=None)
@given(tensors())
def test_const_matches(value):
    algebra, encoder = Algebra(), Encoder()
    (result,) = algebra.apply(fns.get("Const"), [], {"value": value})
    assert concrete(encoder, result, {}) == value


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from(DTYPE_CHOICES), st.data())
def test_equality_is_spec_equality(dtype, data):
    """The encoded equality of two values is Tensor equality (NaN == NaN,
    -0.0 != 0.0), and so is the sampling evaluator's."""
    a = data.draw(tensors(dtype=dtype, shape=(2,)))
    b = data.draw(st.one_of(tensors(dtype=dtype, shape=(2,)), st.just(a)))
    algebra, encoder = Algebra(), Encoder()
    (sa, sb), leaf_values = symbolic_args(algebra, [a, b])
    formula = encoder.eq(sa, sb)
    subs = [(encoder.leaf(t), z3_const(v, t.dtype)) for t, v in leaf_values.items()]
    assert z3.is_true(z3.simplify(z3.substitute(formula, *subs))) == (a == b)
    leaves = {t: np.array([v]) for t, v in leaf_values.items()}
    assert bool(sample_equal(sa, sb, leaves, {}, 1)[0]) == (a == b)


@pytest.mark.parametrize("dtype", sorted(FLOAT_DTYPES))
@pytest.mark.parametrize("name", ["Max", "Min"])
@pytest.mark.parametrize("n", [1, 5, 8, 9, 12])
def test_signed_zero_ties_follow_the_registry_on_every_float_dtype(dtype, name, n):
    """On +0.0 against -0.0 each element of an n-element result returns the
    operand the registry returns at that flat index (fns.ZERO_TIE inside
    Eigen's whole packets, fns.ZERO_TIE_TAIL in the scalar tail:
    TensorFlow's, tests/test_max_min_signed_zero.py), in the element terms
    and in their Z3 encoding."""
    d = DTYPES[dtype]
    for a, b in ((0.0, -0.0), (-0.0, 0.0)):
        ta, tb = Tensor(np.full(n, a, d)), Tensor(np.full(n, b, d))
        want = fns.get(name).apply([ta, tb])[0]
        algebra, enc = Algebra(), Encoder()
        sym, leaf_values = symbolic_args(algebra, [ta, tb])
        (got,) = algebra.apply(fns.get(name), sym)
        assert concrete(enc, got, leaf_values) == want
        assert sampled(got, leaf_values) == want
        for i, t in enumerate(got.elems):
            in_packets = fns.extremum_in_packets(dtype, n, i)
            assert t.op == name.lower() + ("" if in_packets else "_tail")
            tie = fns.ZERO_TIE[dtype] if in_packets else fns.ZERO_TIE_TAIL[dtype]
            assert bool(np.signbit(want.array[i].astype(np.float64))) == \
                bool(np.signbit(a if tie == "first" else b))


def test_every_dtype_has_its_sort():
    # (in the main thread, z3's main context: checking/z3context.py)
    assert sort_of("int8") == z3.BitVecSort(8) and sort_of("uint64") == z3.BitVecSort(64)
    assert sort_of("bool") == z3.BitVecSort(1)
    assert sort_of("bfloat16") == z3.FPSort(8, 8) and sort_of("float16") == z3.FPSort(5, 11)
    assert sort_of("float64") == z3.FPSort(11, 53)


def test_static_kinds_follow_the_oracle():
    algebra = Algebra()
    a = algebra.leaf("feed", "a", TensorType("int64", (2,)))
    b = algebra.leaf("feed", "b", TensorType("int64", (3,)))
    f = algebra.leaf("feed", "f", TensorType("float32", ()))
    assert algebra.apply(fns.get("Add"), [a, b]) == (Error("shape-mismatch"),)
    assert algebra.apply(fns.get("Add"), [a, f]) == (Error("dtype-mismatch"),)
    assert algebra.apply(fns.get("Split"), [b]) == (Error("shape-mismatch"),) * 2
    (c,) = algebra.apply(fns.get("Concat"), [a, b])
    assert c.shape == (5,) and c.elems == a.elems + b.elems
    # Snd is strict only in its second argument: an uninitialized old value is fine
    assert algebra.apply(fns.get("Snd"), [Error("uninitialized"), a]) == (a,)


def test_terms_are_interned():
    algebra = Algebra()
    a = algebra.leaf("feed", "a", TensorType())
    (x,) = algebra.apply(fns.get("Add"), [a, a])
    (y,) = algebra.apply(fns.get("Add"), [a, a])
    assert x is y
    (z,) = algebra.apply(fns.get("Add"), [a, algebra.leaf("feed", "a", TensorType())])
    assert z is x
    # constants fold with numpy's own arithmetic
    one = algebra.constant(Tensor(1))
    (two,) = algebra.apply(fns.get("Add"), [one, one])
    assert two is algebra.constant(Tensor(2))


def test_user_functions_are_opaque():
    def impl(xp, args, attrs):
        return (xp.abs(args[0]),)

    fn = fns.Function("TestAbsForEncode", 1, 1, impl)
    assert not has_encoding(fn)
    assert has_encoding(fns.get("Add"))
    algebra, encoder = Algebra(), Encoder()
    a = algebra.leaf("feed", "a", TensorType())
    (r,) = algebra.apply(fn, [a])
    assert isinstance(r, Opaque)
    # an error in a strict argument still propagates statically
    assert algebra.apply(fn, [Error("uninitialized")]) == (Error("uninitialized"),)
    # an opaque argument makes a built-in's result opaque (it may be an error)
    (s,) = algebra.apply(fns.get("Add"), [r, a])
    assert isinstance(s, Opaque)
    # the same application is the same value; a different one may differ
    assert encoder.eq(r, algebra.apply(fn, [a])[0]) is True
    solver = z3.Solver()
    solver.add(z3.Not(encoder.eq(r, a)))
    assert solver.check() == z3.sat


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_model_values_round_trip(dtype):
    """A model's value of a leaf decodes to the tensor the formula pinned
    (every edge value of every dtype: extremes, -0.0, NaN, subnormals)."""
    algebra, encoder = Algebra(), Encoder()
    edges = _edges(dtype)
    leaf = algebra.leaf("feed", "a", TensorType(dtype, (len(edges),)))
    want = Tensor(np.array(edges, dtype=DTYPES[dtype]), dtype)
    solver = z3.Solver()
    for t, v in zip(leaf.elems, want.array):
        solver.add(encoder.leaf(t) == z3_const(v, dtype))
    assert solver.check() == z3.sat
    assert encoder.tensor_from_model(solver.model(), leaf) == want
    assert isinstance(leaf, SymTensor)


# ---------------------------------------------------------------------------
# Guarded values: one search for every initialization pattern


@settings(max_examples=examples(150), deadline=None)
@given(st.sampled_from(ENCODED), st.data())
def test_guarded_arguments_give_each_patterns_result(name, data):
    """Arguments that are the initial values of variables (initialized or
    not) give, in each initialization pattern, exactly `Function.apply` on
    that pattern's values, through Z3 with the flags fixed."""
    fn = fns.get(name)
    args = data.draw(arguments(fn.n_in))
    flagged = [data.draw(st.booleans()) and not isinstance(a, Error) for a in args]
    algebra, encoder = Algebra(), None
    algebra.set_flags([f"x{k}" for k, g in enumerate(flagged) if g])
    encoder = Encoder(algebra.flag_order)
    sym, leaf_values = symbolic_args(algebra, args)
    sym = [algebra.initial(f"x{k}", s) if g else s for k, (s, g) in enumerate(zip(sym, flagged))]
    results = algebra.apply(fn, sym)
    for pattern in range(2 ** len(args)):
        uninit = {k for k in range(len(args)) if flagged[k] and pattern >> k & 1}
        concrete_args = [Error("uninitialized") if k in uninit else a for k, a in enumerate(args)]
        expected = fn.apply(concrete_args)
        for got, want in zip(results, expected):
            value = got
            while isinstance(value, Guarded):
                k = int(value.var[1:])
                value = value.uninit if k in uninit else value.init
            assert concrete(encoder, value, leaf_values) == want
            # and equality with the expected value, as a formula over the flags
            flags = [(encoder.flag(f"x{k}"), z3.BoolVal(k in uninit))
                     for k in range(len(args)) if flagged[k]]
            if isinstance(want, Tensor):
                target = algebra.constant(want)
            else:
                target = want
            formula = encoder.eq(got, target)
            if not isinstance(formula, bool):
                subs = flags + [(encoder.leaf(t), z3_const(v, t.dtype)) for t, v in leaf_values.items()]
                formula = z3.is_true(z3.simplify(z3.substitute(formula, *subs)))
            assert formula, (name, args, uninit)


def test_guarded_values_are_interned_and_reduced():
    algebra = Algebra()
    algebra.set_flags(["x"])
    leaf = algebra.leaf("init", "x", TensorType())
    x0 = algebra.initial("x", leaf)
    assert isinstance(x0, Guarded) and x0 is algebra.initial("x", leaf)
    # Snd ignores its first argument: writing over x gives the same value either way
    v = algebra.leaf("feed", "v", TensorType())
    assert algebra.apply(fns.get("Snd"), [x0, v]) == (v,)
    # Assign-Add keeps the error when x is uninitialized
    new = algebra.assign_value(fns.get("Add"), x0, v, x0)
    assert isinstance(new, Guarded) and new.uninit == Error("uninitialized")
