"""The subnormal flush by bits (`functions._flush`, numpy) against the flush
by comparisons with the smallest normal (`functions._flush_by_value`, the
implementation it replaced, which other array modules still use): the same
bits on every float dtype's edge values, random bit patterns (NaN payloads,
signed zeros, every subnormal), 0-d, empty and non-contiguous arrays."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tfsem.oracle import functions as fns
from tfsem.oracle.values import BITS_DTYPES, DTYPES, FLOAT_DTYPES, edge_values

FLOATS = sorted(FLOAT_DTYPES)


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).view(BITS_DTYPES[_name(a)]).tobytes()


def _name(a: np.ndarray) -> str:
    return next(n for n, d in DTYPES.items() if d == a.dtype)


def _same(a: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        old = np.asarray(fns._flush_by_value(np, a))
    new = fns._flush(np, a)
    assert new.dtype == old.dtype and new.shape == old.shape
    assert _bits(new) == _bits(old), (a, old, new)


def _every_subnormal_edge(dtype: str) -> np.ndarray:
    """The edge values, the largest subnormal and the smallest normal of both
    signs, and NaNs with payloads (quiet and signalling, both signs)."""
    u = BITS_DTYPES[dtype]
    width = u.itemsize * 8
    mantissa = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}[dtype]
    sign = 1 << (width - 1)
    patterns = [1, (1 << mantissa) - 1, 1 << mantissa, (1 << mantissa) + 1,
                (((1 << (width - 1 - mantissa)) - 1) << mantissa) | 1,   # signalling NaN
                (((1 << (width - 1 - mantissa)) - 1) << mantissa) | (1 << (mantissa - 1)) | 5]
    patterns += [p | sign for p in patterns] + [0, sign]
    raw = np.array(patterns, dtype=np.uint64).astype(u).view(DTYPES[dtype])
    return np.concatenate([edge_values(dtype), raw])


@pytest.mark.parametrize("dtype", FLOATS)
def test_edge_values_flush_as_before(dtype):
    a = _every_subnormal_edge(dtype)
    _same(a)
    flushed = fns._flush(np, a)
    # and what a flush is: no subnormal left, every other element's bits kept
    u = BITS_DTYPES[dtype]
    mantissa = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}[dtype]
    mag = flushed.view(u) & u.type((1 << (u.itemsize * 8 - 1)) - 1)
    assert not ((mag >= 1) & (mag < (1 << mantissa))).any()
    kept = (a.view(u) & u.type((1 << (u.itemsize * 8 - 1)) - 1)) >= (1 << mantissa)
    assert (flushed.view(u)[kept] == a.view(u)[kept]).all()
    # the sign of a flushed subnormal stays
    top = u.type(1 << (u.itemsize * 8 - 1))
    assert ((flushed.view(u) & top) == (a.view(u) & top)).all()


@pytest.mark.parametrize("dtype", FLOATS)
def test_shapes_flush_as_before(dtype):
    d = DTYPES[dtype]
    a = _every_subnormal_edge(dtype)
    _same(a[3:4].reshape(()))                       # 0-d, a subnormal
    _same(np.zeros((), d))                          # 0-d, none
    _same(np.zeros((0, 3), d))                      # empty
    grid = np.resize(a, (6, 8))
    _same(grid[:, ::3])                             # non-contiguous
    _same(grid.T)
    _same(np.broadcast_to(a[:1], (4, 5)))           # a broadcast view (read-only)
    plain = np.ones(5, d)
    assert fns._flush(np, plain) is plain           # nothing to flush: the array itself


@settings(max_examples=60)
@given(dtype=st.sampled_from(FLOATS), data=st.data())
def test_random_bit_patterns_flush_as_before(dtype, data):
    u = BITS_DTYPES[dtype]
    n = data.draw(st.integers(0, 40))
    words = data.draw(st.lists(st.integers(0, (1 << (u.itemsize * 8)) - 1), min_size=n, max_size=n))
    a = np.array(words, dtype=np.uint64).astype(u).view(DTYPES[dtype])
    _same(a)
    _same(a.reshape(-1, 1)[::2])


def test_ftz_leaves_unflushed_dtypes_alone():
    h = np.array([6e-8, -6e-8], np.float16)         # float16 subnormals: kept
    assert fns.ftz(np, h) is h
    i = np.array([1, -1], np.int32)
    assert fns.ftz(np, i) is i


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_small_arrays_find_a_subnormal_anywhere(dtype):
    """Arrays of up to `_SMALL_FLUSH` elements are searched element by
    element: one subnormal (either sign, smallest or largest) at any
    position, among NaNs, infinities and signed zeros, is flushed."""
    d, u = DTYPES[dtype], BITS_DTYPES[dtype]
    mantissa = {"float32": 23, "float64": 52}[dtype]
    sign = 1 << (u.itemsize * 8 - 1)
    fill = np.array([np.nan, -0.0, np.inf, 1.0], d)
    for n in (1, 2, 7, fns._SMALL_FLUSH, fns._SMALL_FLUSH + 1):
        for pos in range(n):
            for sub in (1, (1 << mantissa) - 1, 1 | sign, ((1 << mantissa) - 1) | sign):
                a = np.resize(fill, n).copy()
                a.view(u)[pos] = sub
                _same(a)
                _same(a.reshape(1, n)[:, ::-1])
                assert fns._flush(np, a).view(u)[pos] == sub & sign
        clean = np.resize(fill, n)
        assert fns._flush(np, clean) is clean


def _marked(a) -> bool:
    """Whether `a` is remembered free of subnormals: an entry under its id
    that refers to it (an entry of a dead array whose id `a` reuses does not
    count, as in `_flush`'s own lookup)."""
    ref = fns._flushed.get(id(a))
    return ref is not None and ref() is a


def test_a_flushed_functions_results_are_not_searched_again():
    """`Function.flushes_results`: a `.ftz` function's result tensors are
    remembered free of subnormals (read-only, their own data), so the
    functions they feed return them as they are; an array with a subnormal
    is never remembered so, nor is a writeable one."""
    from tfsem.oracle.values import Tensor
    add = fns.get("Add.ftz")
    assert add.flushes_results and not fns.get("Add").flushes_results
    sub = np.array([1, 0x00400000, 0x80000001], np.uint32).view(np.float32)
    (r,) = add.apply([Tensor(sub), Tensor(np.full(3, 2.0, np.float32))])
    assert (r.array == np.float32(2.0)).all()        # (the subnormals read as zeros)
    assert fns._flushed[id(r.array)]() is r.array
    assert fns._flush(np, r.array) is r.array
    # a tensor with subnormals, read-only: searched, flushed, never marked
    t = Tensor(np.resize(sub, 64))
    flushed = fns._flush(np, t.array)
    assert flushed is not t.array and not _marked(t.array)
    _same(t.array)
    # a clean read-only array is marked when searched; a writeable one is not
    clean = Tensor(np.ones(64, np.float32))
    assert fns._flush(np, clean.array) is clean.array and _marked(clean.array)
    w = np.ones(64, np.float32)
    assert fns._flush(np, w) is w and not _marked(w)
    w[0] = sub[1]                                   # (written after: still flushed)
    assert fns._flush(np, w) is not w


# -- one search of a product's result for a subnormal and ±tiny (`_none_low`) --

def _near_tiny(dtype, rng, n: int) -> np.ndarray:
    """n values of `dtype` around the smallest normal: ±tiny itself, its
    neighbours on both sides, subnormals, zeros, NaN, infinities, ones, and
    random bit patterns."""
    t = np.finfo(dtype).tiny
    picks = np.array([t, -t, np.nextafter(t, dtype(0)), np.nextafter(t, dtype(1)),
                      -np.nextafter(t, dtype(0)), np.finfo(dtype).smallest_subnormal,
                      0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.5, t * 2, t / 2], dtype)
    u = BITS_DTYPES[np.dtype(dtype).name]
    random_bits = rng.integers(0, np.iinfo(u).max, n, dtype=u, endpoint=True).view(dtype)
    return np.where(rng.random(n) < 0.5, rng.choice(picks, n), random_bits).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["Mul", "RealDiv", "Square", "SquaredDifference"])
def test_the_one_search_gives_the_two_searches_bits(dtype, name, monkeypatch):
    """A product's (quotient's, square's) result searched once for both a
    subnormal and ±tiny gives the bits of the two searches, on arrays that
    hold such values and on arrays that hold none (where the one search
    decides alone), of sizes on both sides of _SMALL_FLUSH."""
    fn = fns.lookup(name + fns.FTZ_SUFFIX)
    rng = np.random.default_rng(3)
    t = np.finfo(dtype).tiny
    decided = 0
    for k in range(120):
        n = int(rng.choice([1, 7, 32, 33, 100, 1000]))
        if k % 3 == 0:      # values whose products reach ±tiny from below
            a = (t * rng.uniform(0.9, 1.1, n)).astype(dtype)
            b = rng.uniform(0.9, 1.0, n).astype(dtype)
            if dtype is np.float32 and k % 2:
                # (numpy rounds this product to tiny, TensorFlow's CPU
                # flushes it: `_tiny_after_rounding`'s own example, alone
                # among ordinary values)
                a, b = np.full(n, 1.5, dtype), np.ones(n, dtype)
                j = int(rng.integers(n))
                a[j], b[j] = 1.2391796e-38, 0.9486069
        elif k % 3 == 1:
            a, b = _near_tiny(dtype, rng, n), _near_tiny(dtype, rng, n)
        else:               # ordinary values: the one search decides
            a, b = rng.uniform(1, 2, n).astype(dtype), rng.uniform(1, 2, n).astype(dtype)
        args = [a] if name == "Square" else [a, b]
        got = []
        for on in (True, False):
            monkeypatch.setattr(fns, "FUSED_TINY_SEARCH", on)
            with np.errstate(all="ignore"):
                got.append(fn.impl(np, [x.copy() for x in args], {}))
        for x, y in zip(*got):
            assert x.dtype == y.dtype and x.shape == y.shape
            assert _bits(x) == _bits(y), (name, k)
        decided += n > fns._SMALL_FLUSH and fns._none_low(got[0][0])
    assert decided >= 10, decided


def test_the_one_search_finds_what_each_search_finds():
    for dtype in (np.float32, np.float64):
        t = np.finfo(dtype).tiny
        base = np.ones(64, dtype)
        assert fns._none_low(base)
        for x in (t, -t, np.nextafter(t, dtype(0)), -np.finfo(dtype).smallest_subnormal):
            a = base.copy()
            a[37] = x
            assert not fns._none_low(a), (dtype, x)
        for x in (0.0, -0.0, np.nan, np.inf, np.nextafter(t, dtype(1)), -t * 2):
            a = base.copy()
            a[37] = x
            assert fns._none_low(a), (dtype, x)
