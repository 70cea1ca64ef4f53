"""`_none_low` on products of at most _SMALL_FLUSH elements
(oracle/functions.py, switch `SMALL_NONE_LOW`): a loop over the elements as
Python floats decides whether a small float32/float64 result of Mul,
RealDiv, Square, SquaredDifference or DivNoNan (and their `.ftz` forms)
holds a subnormal or ±tiny; where it holds neither, `run_flushed` returns
the result itself.  Compared with the two searches it stands for
(`_tiny_after_rounding`, then `ftz`), bit for bit and by identity, on
every edge value and on the values whose products land on, just below
and just above the smallest normal, at every size up to the bound, 0-d
and empty, and broadcasts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tfsem.oracle import functions as fns
from tfsem.oracle.values import BITS_DTYPES, DTYPES
import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow functions)

NAMES = ("Mul", "RealDiv", "Square", "SquaredDifference", "DivNoNan")


def _values(dtype: str) -> np.ndarray:
    d = DTYPES[dtype]
    info = np.finfo(d)
    tiny = float(info.tiny)
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, tiny, -tiny, tiny * 0.75, -tiny * 0.5, tiny * 2,
            float(info.smallest_subnormal), -float(info.smallest_subnormal),
            float(np.nextafter(d.type(tiny), d.type(0))), float(np.nextafter(d.type(tiny), d.type(1))),
            0.9486069, 1.2391796e-38, 2.0 ** -63, 2.0 ** -64, 2.0 ** -20, float(info.max),
            np.inf, -np.inf, np.nan]
    return np.array(vals, np.float64).astype(d)


def _run(name, args, on: bool, monkeypatch):
    monkeypatch.setattr(fns, "SMALL_NONE_LOW", on)
    with np.errstate(all="ignore"):
        return fns.run_flushed(fns.lookup(name), np, args, {})


def _bits(a):
    a = np.asarray(a)
    u = BITS_DTYPES[np.dtype(a.dtype).name]
    return a.dtype, a.shape, a.strides, np.ascontiguousarray(a).view(u).tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_small_results_bit_for_bit(dtype, monkeypatch):
    vals = _values(dtype)
    rng = np.random.default_rng(17)
    decided = 0
    for k in range(600):
        n = int(rng.integers(0, fns._SMALL_FLUSH + 1))
        shape = () if n == 1 and k % 2 else (n,)
        a = rng.choice(vals, n).reshape(shape)
        b = rng.choice(vals, n).reshape(shape) if k % 3 else rng.uniform(0.5, 2, n).astype(
            vals.dtype).reshape(shape)
        for name in NAMES:
            args = (a,) if name == "Square" else (a, b)
            off = _run(name, args, False, monkeypatch)
            on = _run(name, args, True, monkeypatch)
            assert [_bits(r) for r in on] == [_bits(r) for r in off], (name, k)
            decided += fns._none_low(on[0])
    assert decided >= 500, decided


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_result_with_neither_is_itself(dtype, monkeypatch):
    """Where the loop finds neither, the result object itself is returned,
    as the two searches return it (neither copies an array they leave)."""
    d = DTYPES[dtype]
    a = np.array([1.5, -2.0, 0.0, np.nan, np.inf], d)
    with np.errstate(all="ignore"):
        r = np.multiply(a, a)
    probe = fns.Function("Mul", 1, 1, lambda xp, args, at: (r,))   # (its base's name)
    for on in (False, True):
        monkeypatch.setattr(fns, "SMALL_NONE_LOW", on)
        assert fns._none_low(r) is on
        with np.errstate(all="ignore"):
            assert fns.run_flushed(probe, np, (a,), {})[0] is r


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_loop_finds_each_low_value_anywhere(dtype):
    d = DTYPES[dtype]
    tiny = d.type(np.finfo(d).tiny)
    for n in (1, 2, 8, fns._SMALL_FLUSH):
        for at, (x, low) in itertools.product(range(n), (
                (tiny, True), (-tiny, True), (tiny / d.type(3), True),
                (d.type(np.finfo(d).smallest_subnormal), True),
                (np.nextafter(tiny, d.type(1)), False), (-0.0, False), (0.0, False),
                (np.nan, False), (-np.inf, False))):
            a = np.full(n, 1.5, d)
            a[at] = x
            assert fns._none_low(a) is (not low), (n, at, x)
    assert fns._none_low(np.array(1.5, d)) and not fns._none_low(np.array(tiny, d))
    assert fns._none_low(np.zeros((0,), d))
    # (other dtypes: no answer)
    assert not fns._none_low(np.ones(4, np.float16))
    assert not fns._none_low(np.ones(4, np.int32))
