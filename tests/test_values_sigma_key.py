"""oracle/values.py `sigma_key`: σ by its exact bits, the one key of the
remembered canonical runs (checking/canonical_memo.py) and of the back
ends' sessions per σ (backends/reuse.py).

Two σ get one key exactly when they name the same feeds and variables with
values of the same bits: -0.0 and 0.0, two NaN payloads, a NaN's sign,
dtypes of the same bytes, shapes of the same elements, a feed and a
variable of one name, two error values are told apart; equal bits in other
objects are the same σ.  (The remembered runs' side is
tests/test_check_canonical_memo.py `test_sigma_is_keyed_by_its_exact_bits`.)"""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.backends import reuse
from tfsem.backends.arraymodule import get_backend
from tfsem.oracle.values import Error, Tensor, sigma_key


def _t(a):
    return Tensor(np.asarray(a))


NAN1 = np.array([np.nan], np.float32)
NAN2 = np.array([0x7FC00001], np.uint32).view(np.float32)     # another payload
NAN3 = np.array([0xFFC00000], np.uint32).view(np.float32)     # numpy's NaN, sign set
BASE = ({"a": _t(np.float32(0.0))}, {"x": _t(np.int32(1))})
OTHERS = [
    ({"a": _t(np.float32(-0.0))}, BASE[1]),                       # signed zero
    ({"a": _t(np.int32(0))}, BASE[1]),                            # dtype, same bytes
    ({"a": _t(np.zeros((1,), np.float32))}, BASE[1]),             # shape
    ({}, {"a": _t(np.float32(0.0)), "x": _t(np.int32(1))}),       # a feed or a variable
    (BASE[0], {"x": Error("uninitialized")}),                     # an error value
    (BASE[0], {"x": Error("dtype-mismatch")}),
    (BASE[0], {"y": _t(np.int32(1))}),                            # the name
    ({"a": _t(NAN1)}, BASE[1]),                                   # NaN payloads and signs
    ({"a": _t(NAN2)}, BASE[1]),
    ({"a": _t(NAN3)}, BASE[1]),
]


def test_the_key_tells_sigma_by_its_bits():
    same = ({"a": _t(np.float32(0.0))}, {"x": _t(np.int32(1))})
    assert sigma_key(*BASE) == sigma_key(*same) and hash(sigma_key(*BASE)) == hash(sigma_key(*same))
    keys = [sigma_key(*s) for s in OTHERS] + [sigma_key(*BASE)]
    assert all(a != b for i, a in enumerate(keys) for b in keys[i + 1:])
    assert len(set(keys)) == len(keys)
    # (the values compare equal under SPEC equality, which forgets NaN
    # payloads: the key does not)
    assert _t(NAN1) == _t(NAN2) and sigma_key({"a": _t(NAN1)}, {}) != sigma_key({"a": _t(NAN2)}, {})
    # the same NaN bits in another object: the same σ
    assert sigma_key({"a": _t(NAN2.copy())}, {}) == sigma_key({"a": _t(NAN2)}, {})


def test_the_order_of_the_names_does_not_matter():
    a, b = _t(np.int64(1)), _t(np.int64(2))
    assert sigma_key({"p": a, "q": b}, {}) == sigma_key({"q": b, "p": a}, {})
    assert sigma_key({"p": a, "q": b}, {}) != sigma_key({"p": b, "q": a}, {})


@pytest.mark.parametrize("k", range(len(OTHERS)))
def test_a_session_is_one_sigmas(k):
    """The back end's session of σ (backends/reuse.py) is new at a σ of
    other bits, and the same at the same bits in other objects."""
    reuse.clear()
    b = get_backend("numpy")
    s = reuse.session(b, *BASE)
    assert reuse.session(b, {"a": _t(np.float32(0.0))}, {"x": _t(np.int32(1))}) is s
    assert reuse.session(b, *OTHERS[k]) is not s
    reuse.clear()
