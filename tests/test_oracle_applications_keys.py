"""The application memo's keys (oracle/applications.py `key`,
`attrs_token`): attributes as numbers, one per exact key, never given twice;
kernels on or off as `use()` sets it in this thread."""

from __future__ import annotations

import struct

import numpy as np

from tfsem.oracle import applications as A
from tfsem.oracle import kernels
from tfsem.oracle.values import Tensor


def _f32(bits: int) -> Tensor:
    return Tensor(np.frombuffer(struct.pack("<I", bits), np.float32).copy())


def test_equal_attributes_share_a_number_and_different_bits_do_not():
    memo = A._Memo()
    a = {"T": "DT_FLOAT", "alpha": 0.5, "value": _f32(0x7FC00001)}
    b = dict(a)                                          # (another mapping, equal bits)
    c = dict(a, value=_f32(0x7FC00002))                  # (another NaN payload)
    d = dict(a, alpha=-0.0)
    e = dict(a, alpha=0.0)
    ta, tb, tc, td, te = (A.attrs_token(memo, x) for x in (a, b, c, d, e))
    assert ta == tb
    assert len({ta, tc, td, te}) == 4
    assert A.attrs_token(memo, a) == ta                  # (remembered per mapping)
    a["alpha"] = 0.25                                    # (changed in place: a new key)
    assert A.attrs_token(memo, a) not in (ta, tc, td, te)


def test_a_number_is_never_given_twice():
    memo = A._Memo()
    a = {"T": "DT_FLOAT"}
    first = A.attrs_token(memo, a)
    A.empty(memo)
    b = {"T": "DT_INT32"}
    assert A.attrs_token(memo, b) != first               # (not the dropped key's number)
    assert A.attrs_token(memo, {"T": "DT_FLOAT"}) not in (first, A.attrs_token(memo, b))


def test_the_key_follows_use_in_this_thread():
    memo = A._Memo()
    fn, args = object(), [_f32(0x3F800000)]
    with kernels.use(True):
        on = A.key(memo, fn, args, None)
        assert A._forced() is True
    with kernels.use(False):
        off = A.key(memo, fn, args, None)
        assert A._forced() is False
    assert on != off and on[2] is True and off[2] is False
    assert A._forced() is kernels.forced()
    assert A.key(memo, fn, args, None)[2] == memo.kernels_env
