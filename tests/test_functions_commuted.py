"""An application of a commutative function (Add, Mul and their `.ftz`
variants) missing from the application memo is answered by the remembered
application of its arguments swapped, where that one's result holds no NaN
(oracle/functions.py `_commuted`): Grappler's common-subgraph pass puts a
commutative op's inputs in a canonical order.  The two orders give the same
bits wherever the result holds no NaN (values of every kind: signed zeros,
infinities, NaN payloads, subnormals, products rounding to the smallest
normal, broadcasts, every dtype); a result with a NaN is computed again; a
function registered again under one of these names does not commute; and
checks of Grappler's own rewrites give the same verdicts and
counterexamples with the shortcut and without it."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.oracle import applications as A
from tfsem.oracle import functions as fns
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Error, Tensor, exact

COMMUTING = ("Add", "Mul", "Add.ftz", "Mul.ftz")


@pytest.fixture(autouse=True)
def no_kept_memo():
    A.clear()
    yield
    A.clear()


def _specials(dtype) -> list[float]:
    info = ml_dtypes.finfo(dtype)
    tiny, sub = float(info.tiny), float(info.smallest_subnormal)
    return [0.0, -0.0, 1.0, -1.5, float("inf"), float("-inf"), float("nan"), tiny, -tiny,
            sub, -sub, tiny * 0.75, float(info.max), -float(info.max), 1.0 + float(info.eps),
            # products near the smallest normal (`_tiny_after_rounding`)
            tiny * 1.0000001, 0.9999999, 2.0 ** -63, 2.0 ** -64, 3.0]


def _float_values(dtype, rng) -> list[np.ndarray]:
    specials = np.array(_specials(dtype), dtype=np.float64)
    out = [specials.astype(dtype)]
    for shape in ((), (1,), (7,), (3, 1), (1, 4), (2, 3, 4)):
        pick = rng.choice(len(specials), size=shape)
        mixed = np.where(rng.random(shape) < 0.5, specials[pick], rng.normal(size=shape))
        out.append(np.asarray(mixed).astype(dtype))
    # a NaN of another payload and sign (float32)
    if np.dtype(dtype) == np.float32:
        bits = np.array([0xFFC00123, 0x7F800001, 0x00000001, 0x80000000], np.uint32)
        out.append(bits.view(np.float32))
    return out


def _int_values(dtype, rng) -> list[np.ndarray]:
    info = np.iinfo(dtype)
    edge = np.array([0, 1, -1 if info.min < 0 else 2, info.max, info.min], dtype=np.int64)
    out = [edge.astype(dtype)]
    for shape in ((), (5,), (3, 1), (1, 5)):
        out.append(rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True))
    return out


def _pairs(rng):
    for dtype in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16):
        vals = _float_values(dtype, rng)
        for a in vals:
            for b in vals:
                yield Tensor(a), Tensor(b)
        # the same shapes element by element: every special against every other
        s = np.array(_specials(dtype), dtype=np.float64).astype(dtype)
        yield Tensor(np.repeat(s, len(s))), Tensor(np.tile(s, len(s)))
    for dtype in (np.int32, np.int64, np.uint8):
        vals = _int_values(dtype, rng)
        for a in vals:
            for b in vals:
                yield Tensor(a), Tensor(b)
    # mismatched dtypes (an error value either way)
    yield Tensor(np.ones(3, np.float32)), Tensor(np.ones(3, np.float64))


def _has_nan(v) -> bool:
    return v.dtype in fns.FLOAT_DTYPES and bool(np.isnan(v.array.astype(np.float64)).any())


def test_the_two_orders_agree_wherever_the_result_holds_no_nan():
    rng = np.random.default_rng(5)
    compared = with_nan = 0
    for name in COMMUTING:
        f = fns.get(name)
        assert f.commutes
        for a, b in _pairs(rng):
            try:
                ab = f._apply((a, b), None, np)
            except Exception:  # noqa: BLE001 (never remembered: nothing to answer)
                continue
            if not all(type(v) is Tensor for v in ab):
                continue
            if any(_has_nan(v) for v in ab):
                with_nan += 1
                continue
            ba = f._apply((b, a), None, np)
            assert [exact(v) for v in ba] == [exact(v) for v in ab], (name, a, b)
            compared += 1
    assert compared > 500 and with_nan > 100, (compared, with_nan)


def test_the_orders_of_a_nan_result_may_differ_so_it_is_not_taken():
    # (what the NaN condition guards: TensorFlow's NaN bits follow the
    # operands' positions, functions.nan_bits)
    f = fns.get("Add.ftz")
    a = Tensor(np.array([0xFFC00123], np.uint32).view(np.float32))
    b = Tensor(np.array([0x7FC00456], np.uint32).view(np.float32))
    assert exact(f._apply((a, b), None, np)[0]) != exact(f._apply((b, a), None, np)[0])
    with A.scope():
        first = f.apply((a, b))
        second = f.apply((b, a))
    assert exact(second[0]) == exact(f._apply((b, a), None, np)[0])
    assert exact(second[0]) != exact(first[0])


def _big(seed: int, nan: bool = False) -> Tensor:
    x = np.random.default_rng(seed).normal(size=5000).astype(np.float32)
    if nan:
        x[17] = np.nan
    return Tensor(x)


@pytest.mark.parametrize("name", COMMUTING)
def test_a_swapped_application_is_answered_by_the_remembered_one(name, monkeypatch):
    f = fns.get(name)
    a, b = _big(1), _big(2)          # (too large to be interned: by identity only)
    with A.scope():
        first = f.apply((a, b))
        second = f.apply((b, a))
        assert second[0] is first[0]
        assert A.active().hits >= 1
        again = f.apply((b, a))      # (kept under its own key too)
        assert again[0] is first[0]
    assert exact(second[0]) == exact(f._apply((b, a), None, np)[0])
    # off: computed again, the same bits
    monkeypatch.setattr(fns, "COMMUTED_HITS", False)
    with A.scope():
        first = f.apply((a, b))
        second = f.apply((b, a))
        assert second[0] is not first[0] and exact(second[0]) == exact(first[0])


def test_a_result_with_a_nan_is_computed_again():
    f = fns.get("Mul.ftz")
    a, b = _big(1, nan=True), _big(2)
    with A.scope():
        first = f.apply((a, b))
        second = f.apply((b, a))
        assert second[0] is not first[0]


def test_error_arguments_are_not_swapped():
    # (an error propagates from the first strict argument: the orders differ)
    f = fns.get("Mul")
    e1, e2 = Error("first"), Error("second")
    with A.scope():
        assert f.apply((e1, e2)) == (e1,)
        assert f.apply((e2, e1)) == (e2,)
        t = _big(3)
        assert f.apply((e1, t)) == (e1,)
        assert f.apply((t, e1)) == (e1,)


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(fns, "_REGISTRY", dict(fns._REGISTRY))


def test_a_function_registered_again_does_not_commute(registry):
    def subtract(xp, args, attrs):
        return (xp.subtract(args[0], args[1]),)
    f = fns.register(fns.Function("Mul", 2, 1, subtract), replace=True)
    assert not f.commutes
    a, b = _big(4), _big(5)
    with A.scope():
        ab = f.apply((a, b))
        ba = f.apply((b, a))
    np.testing.assert_array_equal(ab[0].array, a.array - b.array)
    np.testing.assert_array_equal(ba[0].array, b.array - a.array)


# -- runs of programs whose commutative nodes take their inputs swapped -----------


def _swapped(p):
    """`p` with the two inputs of every Add and Mul node swapped (as
    Grappler's common-subgraph pass may order them)."""
    from tfsem.oracle.program import Program
    nodes = tuple(n.replace(inputs=(n.inputs[1], n.inputs[0]))
                  if n.op in COMMUTING and len(n.inputs) == 2 else n for n in p.nodes)
    return Program(p.variables, nodes, p.outputs, p.feeds)


def _with_payloads(values):
    """Float tensors of σ with a NaN of another payload and sign, and -0.0."""
    out = {}
    for k, v in values.items():
        if isinstance(v, Tensor) and v.dtype == "float32" and v.array.size >= 2:
            bits = v.array.copy().view(np.uint32)
            bits.reshape(-1)[0] = 0xFFC00123
            bits.reshape(-1)[1] = 0x80000000
            v = Tensor(bits.view(np.float32))
        out[k] = v
    return out


def _exact_outcome(o):
    return (tuple((k, exact(v)) for k, v in o.outputs),
            None if o.state is None else tuple((k, exact(v)) for k, v in o.state))


def test_runs_of_swapped_programs_give_the_outcomes_of_fresh_runs(monkeypatch):
    """P, then P with its commutative nodes' inputs swapped, at the same σ
    (plain, with NaN payloads and -0.0) inside one memo scope, where the
    swapped applications are answered by P's: the outcomes of fresh runs
    without any memo, bit for bit."""
    from tfsem.checking import check as C
    from tfsem.checking import refute as ref
    from tfsem.generators.strategies import random_programs
    answered = [0]
    real = fns._commuted

    def counted(*a):
        out = real(*a)
        answered[0] += out is not None
        return out
    monkeypatch.setattr(fns, "_commuted", counted)
    compared = 0
    settings = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]
    for i, p in enumerate(random_programs(400, 41, max_nodes=14)):
        q = _swapped(p)
        if q == p or p.has_control_flow:
            continue
        sem, obs = settings[i % 4]
        gen = C._refute_sigmas(p, np.random.default_rng(i))
        feeds, init = next(gen)
        sigmas = [(feeds, init), (_with_payloads(feeds), _with_payloads(init)), next(gen)]
        fresh = []
        monkeypatch.setenv(A.ENV, "0")
        for r in (p, q):
            for f, s in sigmas:
                try:
                    fresh.append(_exact_outcome(ref.canonical_outcome(r, f, s, sem, obs)[0]))
                except (fns.CannotRun, C.BudgetExceeded) as exc:
                    fresh.append(type(exc))
        monkeypatch.setenv(A.ENV, "1")
        with A.scope():
            got = []
            for r in (p, q):
                for f, s in sigmas:
                    try:
                        got.append(_exact_outcome(ref.canonical_outcome(r, f, s, sem, obs)[0]))
                    except (fns.CannotRun, C.BudgetExceeded) as exc:
                        got.append(type(exc))
        assert got == fresh, i
        compared += len(fresh)
    assert compared >= 100 and answered[0] >= 20, (compared, answered[0])


# -- checks of Grappler's own rewrites (stored: no TensorFlow needed) --------------

GRAPPLER = Path(__file__).parent / "grappler"


def _stored_pairs():
    for path in sorted(GRAPPLER.glob("*.json")):
        doc = json.loads(path.read_text())
        for opt, rewritten in doc["rewritten"].items():
            yield path.stem, opt, doc["original"], rewritten


def _summary(v):
    cx = v.counterexample
    out = [v.verdict]
    if cx is not None:
        out += [sorted((k, exact(x)) for k, x in cx.feeds.items()),
                sorted((k, exact(x)) for k, x in (cx.init or {}).items()),
                list(cx.schedule),
                [(k, exact(x)) for k, x in cx.outcome.outputs],
                [(k, exact(x)) for k, x in (cx.outcome.state or ())]]
    return out


def test_checks_of_grappler_rewrites_are_the_same_with_and_without(monkeypatch):
    compared = 0
    for stem, opt, original_doc, rewritten_doc in _stored_pairs():
        got = []
        for on in (True, False):
            monkeypatch.setattr(fns, "COMMUTED_HITS", on)
            A.clear()
            p = program_from_json(original_doc)
            q = program_from_json(rewritten_doc)
            v = check_rewrite(p, q, timeout=10, minimize=False, backends=False,
                              classify=False)
            got.append(_summary(v))
        assert got[0] == got[1], (stem, opt)
        compared += 1
    assert compared >= 10, compared
