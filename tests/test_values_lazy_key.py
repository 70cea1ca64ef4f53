"""A Tensor's equality key and exact bits, made when first asked for
(oracle/values.py `Tensor._made`), against the key made from the array at
construction as before: the same key, the same bits, the same equality and
hash, whatever is asked first."""

from __future__ import annotations

import pickle

import ml_dtypes
import numpy as np
import pytest

from tfsem.oracle.values import Bits, Tensor, _canonical_bytes, exact

_NAN32_PAYLOAD = np.array([0x7FC00001], np.uint32).view(np.float32)
_NEG_NAN32 = np.array([0xFFC00000], np.uint32).view(np.float32)


def _arrays():
    rng = np.random.default_rng(7)
    yield np.float32(1.5)
    yield np.zeros((0, 3), np.float32)
    yield rng.standard_normal((4, 5)).astype(np.float32)
    yield np.asfortranarray(rng.standard_normal((3, 4)))
    yield rng.standard_normal((6, 6))[::2, 1::2]             # (a strided view)
    yield np.array([0.0, -0.0, 1.0], np.float64)
    yield np.array([np.nan, 1.0], np.float32)
    yield np.concatenate([_NAN32_PAYLOAD, np.ones(3, np.float32)])
    yield np.concatenate([_NEG_NAN32, _NAN32_PAYLOAD])
    yield np.array([1.0, np.nan], ml_dtypes.bfloat16)
    yield np.array([np.nan, 2.0], np.float16)
    yield np.frombuffer(bytes([0, 1, 2, 255]), np.uint8).view(np.bool_)
    yield rng.integers(-9, 9, (2, 3, 4)).astype(np.int64)
    yield np.arange(6, dtype=np.uint16).reshape(2, 3)


def _eager(t: Tensor):
    """The key and bits as the constructor made them before."""
    arr = t.array
    canonical, raw = _canonical_bytes(arr)
    return (t.dtype, arr.shape, canonical), (None if raw is None else Bits(t.dtype, arr.shape, raw))


@pytest.mark.parametrize("k", range(len(list(_arrays()))))
def test_the_lazy_key_is_the_eager_one(k):
    a = list(_arrays())[k]
    key, bits = _eager(Tensor(a))
    for first in ("key", "bits", "hash", "eq", "exact", "pickle"):
        t = Tensor(a)
        if first == "hash":
            hash(t)
        elif first == "eq":
            assert t == Tensor(a)
        elif first == "exact":
            exact(t)
        elif first == "pickle":
            t = pickle.loads(pickle.dumps(t))
        elif first == "bits":
            t._bits
        assert t._key == key
        assert t._bits == bits
        assert t.canonical_bytes == key[2]
        assert hash(t) == hash(key)
        assert (exact(t) is t) == (bits is None)


def test_equality_follows_the_keys_pair_by_pair():
    values = [Tensor(a) for a in _arrays()]
    values += [Tensor(a) for a in _arrays()]       # (each made twice: equal pairs)
    for x in values:
        for y in values:
            assert (x == y) == (_eager(x)[0] == _eager(y)[0])
            if x == y:
                assert hash(x) == hash(y)


def test_unequal_dtype_or_shape_makes_no_bytes():
    x = Tensor(np.zeros(4, np.float32))
    assert x != Tensor(np.zeros(4, np.float64))
    assert x != Tensor(np.zeros((2, 2), np.float32))
    assert x._lazy is None      # (told by dtype and shape alone)
    assert x == Tensor(np.zeros(4, np.float32)) and x._lazy is not None


def test_the_array_stays_read_only_and_owned():
    source = np.ones(3, np.float32)
    t = Tensor(source)
    source[0] = 7.0             # (the caller's array: not the tensor's)
    assert t.array[0] == 1.0 and not t.array.flags.writeable
    assert t == Tensor(np.ones(3, np.float32))


def test_canonical_bytes_of_every_float_dtype_without_a_warning():
    # (numpy's own float dtypes skip the errstate that ml_dtypes' isnan needs)
    import warnings
    for dt in (np.float16, np.float32, np.float64, ml_dtypes.bfloat16):
        for n in (1, 5, 40):
            a = np.linspace(-2, 2, n).astype(dt)
            a[n // 2] = np.nan
            b = a.copy()
            if np.dtype(dt) == np.float32:
                b.view(np.uint32)[n // 2] = 0xFFC00123       # another payload and sign
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                ca, ra = _canonical_bytes(a)
                cb, rb = _canonical_bytes(b)
            canonical = np.where(np.isnan(a.astype(np.float64)), np.array(np.nan, dtype=dt), a)
            assert ca == cb == canonical.tobytes()
            assert (rb is not None) == (np.dtype(dt) == np.float32)
            clean = np.linspace(-2, 2, n).astype(dt)
            assert _canonical_bytes(clean) == (clean.tobytes(), None)
