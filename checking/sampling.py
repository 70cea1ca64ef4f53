"""Equality of two symbolic values on many samples at once.

Above both value algebras: a :class:`symbolic.SymTensor` is compared element
by element (`symbolic.evaluate`), a generic-element tensor whole
(`generic.sample_equal`); `check.py` uses it to find candidates cheaply.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from tfsem.oracle.values import BITS_DTYPES, FLOAT_DTYPES, Error

from . import generic
from .symbolic import Algebra, Guarded, Opaque, SymTensor, SymValue, Term, evaluate


def sample_equal(a: SymValue, b: SymValue, leaves: Mapping[Term, np.ndarray],
                 memo: dict[Term, np.ndarray], n: int,
                 flags: Mapping[str, np.ndarray] | None = None,
                 order: Mapping[str, int] | None = None) -> np.ndarray | None:
    """SPEC section 2 equality of two values at each of n samples (None when
    an opaque value is involved).  `flags[x]` says in which samples x starts
    uninitialized; `order` is the Algebra's flag order."""
    if a is b:
        return np.ones(n, dtype=bool)
    if isinstance(a, Guarded) or isinstance(b, Guarded):
        x = min((v.var for v in (a, b) if isinstance(v, Guarded)), key=order.__getitem__)
        eu = sample_equal(Algebra.restrict(a, x, True), Algebra.restrict(b, x, True),
                          leaves, memo, n, flags, order)
        ei = sample_equal(Algebra.restrict(a, x, False), Algebra.restrict(b, x, False),
                          leaves, memo, n, flags, order)
        if eu is None or ei is None:
            return None
        return np.where(flags[x], eu, ei)
    if isinstance(a, Opaque) or isinstance(b, Opaque):
        return None
    if not isinstance(a, (SymTensor, Error)) or not isinstance(b, (SymTensor, Error)):
        # a generic-element tensor: evaluated whole (generic.py)
        return generic.sample_equal(a, b, leaves, memo, n)
    if isinstance(a, Error) or isinstance(b, Error):
        return np.full(n, isinstance(a, Error) and isinstance(b, Error) and a.reason == b.reason)
    if a.dtype != b.dtype or a.shape != b.shape:
        return np.zeros(n, dtype=bool)
    pairs = [(x, y) for x, y in zip(a.elems, b.elems) if x is not y]
    evaluate((t for pair in pairs for t in pair), leaves, memo)
    out = np.ones(n, dtype=bool)
    for x, y in pairs:
        vx, vy = np.broadcast_to(memo[x], (n,)), np.broadcast_to(memo[y], (n,))
        if a.dtype in FLOAT_DTYPES:
            bits = BITS_DTYPES[a.dtype]
            with np.errstate(invalid="ignore"):
                nan = np.isnan(vx) & np.isnan(vy)
            out &= (vx.view(bits) == vy.view(bits)) | nan
        else:
            out &= vx == vy
    return out
