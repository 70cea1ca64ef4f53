"""A Tensor's SPEC-equality key and exact bits made when first asked for
(values.Tensor `_key`, `_bits`): the same key, bits, equality, hash and
pickle as when they were made with the tensor, whichever is asked first."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from tfsem.oracle.values import DTYPES, Bits, Tensor, _canonical_bytes, edge_values, exact


def _payload_nans(dtype: str) -> np.ndarray:
    d = DTYPES[dtype]
    if dtype not in ("float16", "bfloat16", "float32", "float64"):
        return np.zeros(0, d)
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[d.itemsize]
    nan = np.array([np.nan, -np.nan, np.nan], d).view(u).copy()
    nan[2] |= u(1)
    return nan.view(d)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_the_key_made_later_is_the_key_made_at_once(dtype):
    arrays = [edge_values(dtype), _payload_nans(dtype), np.zeros((0, 2), DTYPES[dtype]),
              edge_values(dtype)[:1].reshape(())]
    for a in arrays:
        canonical, raw = _canonical_bytes(Tensor(a).array)
        for first in ("eq", "hash", "exact", "bits", "pickle", "canonical"):
            t, u = Tensor(a), Tensor(a.copy())
            assert t._k is None                      # (not made yet)
            if first == "eq":
                assert t == u
            elif first == "hash":
                assert hash(t) == hash(u)
            elif first == "exact":
                exact(t)
            elif first == "bits":
                t._bits
            elif first == "pickle":
                t = pickle.loads(pickle.dumps(t))
            else:
                t.canonical_bytes
            assert t._key == (dtype, a.shape, canonical)
            assert t._bits == (None if raw is None else Bits(dtype, a.shape, raw))
            assert t == u and hash(t) == hash(u) and exact(t) == exact(u)
            assert t.dtype == dtype


def test_payloads_and_signed_zeros_stay_apart_exactly():
    one, other = _payload_nans("float32")[[0, 2]]
    a, b = Tensor(np.array([one])), Tensor(np.array([other]))
    assert a == b and exact(a) != exact(b)           # SPEC equality forgets the payload
    z, nz = Tensor(np.array([0.0], np.float32)), Tensor(np.array([-0.0], np.float32))
    assert z != nz and exact(z) != exact(nz)
    assert Tensor(np.frombuffer(b"\x02", np.bool_)) == Tensor(np.array([True]))
