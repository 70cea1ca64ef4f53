"""The application memo interns a tensor by its dtype, shape and bytes
(oracle/applications.py `_bits_key`, switch `INTERN_BY_BYTES`) instead of
by `values.exact(t)`: the two keys tell the same tensors apart (NaN
payloads and signs, -0.0, every dtype, memory orders, 0-d and empty
arrays, tensors whose equality key was made before or came from a
pickle), so interning gives the same objects; runs of generated programs
inside one memo are the outcomes of fresh runs, and checks of Grappler's
rewrites give the same verdicts and counterexamples, with the switch on
and off."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.oracle import applications as A
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor, exact


@pytest.fixture(autouse=True)
def no_kept_memo():
    A.clear()
    yield
    A.clear()


def _arrays() -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for dtype in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16):
        info = ml_dtypes.finfo(dtype)
        specials = [0.0, -0.0, 1.0, float("inf"), float("-inf"), float("nan"),
                    float(info.tiny), float(info.smallest_subnormal)]
        for x in specials:
            out.append(np.array(x, dtype=dtype))           # 0-d
            out.append(np.array([x, 1.0], dtype=dtype))
        out.append(np.array([], dtype=dtype))
        out.append(np.zeros((0, 3), dtype=dtype))           # empty, another shape
        m = np.arange(6, dtype=np.float64).reshape(2, 3).astype(dtype)
        out.append(m)
        out.append(np.asfortranarray(m))                    # the same elements, F order
        out.append(m.T.copy())                              # the same bytes, another shape
    # NaNs of other payloads and signs, beside numpy's NaN
    for bits in ([0x7FC00000, 0], [0xFFC00000, 0], [0x7FC00001, 0], [0x7F800001, 0],
                 [0xFFC00123, 0], [0x80000000, 0], [0, 0]):
        out.append(np.array(bits, np.uint32).view(np.float32))
    for bits in ([0x7FF8000000000000], [0x7FF8000000000001], [0xFFF8000000000000]):
        out.append(np.array(bits, np.uint64).view(np.float64))
    for bits in ([0x7E00], [0x7E01], [0xFE00]):
        out.append(np.array(bits, np.uint16).view(np.float16))
    for bits in ([0x7FC0], [0x7FC1], [0xFFC0]):
        out.append(np.array(bits, np.uint16).view(ml_dtypes.bfloat16))
    # integers and bools: the same bytes as a float of another dtype
    out.append(np.array([0, 1065353216], np.int32))
    out.append(np.array([0.0, 1.0], np.float32))
    out.append(np.array([True, False]))
    out.append(np.array([1, 0], np.uint8))
    out.append(np.array([3, -1], np.int64))
    return out


def _tensors() -> list[Tensor]:
    """Each array as several Tensor objects: fresh; with its equality key
    made; hashed; unpickled (its key from the pickle)."""
    out = []
    for a in _arrays():
        out.append(Tensor(a))
        made = Tensor(a)
        made._made()
        out.append(made)
        hashed = Tensor(a)
        hash(hashed)
        out.append(hashed)
        out.append(pickle.loads(pickle.dumps(Tensor(a))))
    return out


def test_the_bytes_key_tells_tensors_apart_as_exact_does():
    ts = _tensors()
    pairs = equal = 0
    for s in ts:
        for t in ts:
            by_exact = exact(s) == exact(t)
            by_bytes = A._bits_key(s) == A._bits_key(t)
            assert by_exact == by_bytes, (s, t)
            if by_bytes:
                assert hash(A._bits_key(s)) == hash(A._bits_key(t))
            pairs += 1
            equal += by_bytes
    # (the pool holds equal tensors made apart, and unequal ones whose
    # SPEC equality holds: NaNs of other payloads)
    assert equal > len(ts) and pairs - equal > pairs // 2, (equal, pairs)
    assert any(s == t and A._bits_key(s) != A._bits_key(t) for s in ts for t in ts)


def _interned(on: bool, order: list[int], ts: list[Tensor], const: set[int],
              fresh: set[int]) -> list[int]:
    """Which tensor of `ts` (its index) interning gives for each of `order`
    (as a Const's, a fresh result's or another tensor's), by the bytes key
    (`on`) or by `exact`, in one memo."""
    old = A.INTERN_BY_BYTES
    A.INTERN_BY_BYTES = on
    try:
        with A.scope():
            memo = A.active()
            out = []
            for k in order:
                if k in const:
                    got = A.intern_const(memo, ts[k])
                elif k in fresh:
                    (got,) = A.interned_results(memo, (ts[k],))
                else:
                    got = A.intern(memo, ts[k])
                out.append(next(i for i, t in enumerate(ts) if t is got))
            return out
    finally:
        A.INTERN_BY_BYTES = old


def test_interning_gives_the_same_tensors_either_way():
    ts = _tensors()
    rng = np.random.default_rng(5)
    for trial in range(6):
        order = list(rng.permutation(len(ts))) * 2
        pick = rng.permutation(len(ts))
        const = set(int(k) for k in pick[:len(ts) // 3])
        fresh = set(int(k) for k in pick[len(ts) // 3: 2 * len(ts) // 3])
        on = _interned(True, order, [pickle.loads(pickle.dumps(t)) if k % 4 == 3 else t
                                     for k, t in enumerate(ts)], const, fresh)
        off = _interned(False, order, ts, const, fresh)
        assert on == off, trial
        # (some are answered by another tensor of the same bits)
        assert sum(k != j for k, j in zip(order, on)) > 0


def test_a_fresh_result_is_interned_without_its_equality_key():
    """The point of the bytes key: a function's result interned as it is
    made (`interned_results`) has not searched its array for NaNs
    (`Tensor._lazy` is still None); a tensor of the same bits met later is
    answered by it."""
    with A.scope():
        memo = A.active()
        t = Tensor(np.arange(8, dtype=np.float32))
        assert A.interned_results(memo, (t,))[0] is t
        assert t._lazy is None
        u = Tensor(np.arange(8, dtype=np.float32))
        assert A.intern(memo, u) is t
        (w,) = A.interned_results(memo, (Tensor(np.arange(8, dtype=np.float32)),))
        assert w is t


def test_a_tensor_from_outside_keeps_its_key_for_the_next_run():
    """σ and a variable's value may be interned at every run that passes
    them (`canonical_args`): their key is made once, the tensor's own, so
    that the next run neither copies nor hashes their bytes again (the
    bytes object of the key is the one the tensor keeps)."""
    with A.scope():
        memo = A.active()
        sigma = Tensor(np.linspace(0, 1, 5000, dtype=np.float32))
        assert A.intern(memo, sigma) is sigma
        assert sigma._lazy is not None
        key = A._bits_key(sigma)
        assert key[2] is sigma._lazy[0][2]
        assert A.intern(memo, sigma) is sigma
        again = Tensor(np.linspace(0, 1, 5000, dtype=np.float32))
        assert A.canonical_args(memo, [again])[0] is sigma


def _exact_outcome(o):
    return (tuple((k, exact(v)) for k, v in o.outputs),
            None if o.state is None else tuple((k, exact(v)) for k, v in o.state))


def test_runs_inside_the_memo_are_fresh_runs_either_way(monkeypatch):
    """Generated programs at three σ (plain, NaN payloads, another draw)
    run twice inside one memo scope, with the bytes key and with `exact`:
    the outcomes of fresh runs without any memo, bit for bit."""
    from tfsem.checking import check as C
    from tfsem.checking import refute as ref
    from tfsem.generators.strategies import random_programs
    from tfsem.oracle import functions as fns
    compared = 0
    settings = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]
    for i, p in enumerate(random_programs(120, 43, max_nodes=14)):
        if p.has_control_flow:
            continue
        sem, obs = settings[i % 4]
        gen = C._refute_sigmas(p, np.random.default_rng(i))
        sigmas = [next(gen), next(gen), next(gen)]

        def runs():
            got = []
            for f, s in sigmas + sigmas:
                try:
                    got.append(_exact_outcome(ref.canonical_outcome(p, f, s, sem, obs)[0]))
                except (fns.CannotRun, C.BudgetExceeded) as exc:
                    got.append(type(exc))
            return got
        monkeypatch.setenv(A.ENV, "0")
        fresh = runs()
        monkeypatch.setenv(A.ENV, "1")
        for on in (True, False):
            monkeypatch.setattr(A, "INTERN_BY_BYTES", on)
            A.clear()
            with A.scope():
                assert runs() == fresh, (i, on)
        compared += len(fresh)
    assert compared >= 100, compared


GRAPPLER = Path(__file__).parent / "grappler"


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


def test_checks_of_grappler_rewrites_are_the_same_either_way(monkeypatch):
    compared = 0
    for path in sorted(GRAPPLER.glob("*.json")):
        doc = json.loads(path.read_text())
        for opt, rewritten in doc["rewritten"].items():
            got = []
            for on in (True, False):
                monkeypatch.setattr(A, "INTERN_BY_BYTES", on)
                A.clear()
                p = program_from_json(doc["original"])
                q = program_from_json(rewritten)
                v = check_rewrite(p, q, timeout=10, minimize=False, backends=False,
                                  classify=False)
                got.append(_summary(v))
            assert got[0] == got[1], (path.stem, opt)
            compared += 1
    assert compared >= 10, compared
