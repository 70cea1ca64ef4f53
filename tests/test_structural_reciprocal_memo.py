"""(R1)'s answer kept per constant term (checking/structural.py
`_Terms.reciprocals`): asking `division_by_power_of_two` again about a
divisor gives what a fresh table gives (the same reciprocal term, or
None), for powers of two and near misses of both float dtypes, and
through either division; and a table that answered keeps its terms
numbered as one that computed every answer."""

from __future__ import annotations

import numpy as np

from tfsem.checking import structural as S
from tfsem.oracle import functions as fns
from tfsem.oracle.values import Tensor

VALUES = [2.0, 0.5, -4.0, 1.0, 3.0, 0.1, 0.0, -0.0, np.inf, np.nan, 2.0 ** -126, 2.0 ** -130,
          2.0 ** 127, 2.0 ** -1022, 2.0 ** 1023, 1e-45]


def _divisors():
    for dtype in ("float32", "float64"):
        for v in VALUES:
            with np.errstate(over="ignore"):   # (2^1023 in float32: inf)
                a = np.array(v, dtype)
            yield Tensor(a, dtype)
        yield Tensor(np.array([2.0, 0.25, -8.0], dtype), dtype)
        yield Tensor(np.array([2.0, 3.0], dtype), dtype)
        yield Tensor(np.zeros((0,), dtype), dtype)
    yield Tensor(np.array(2, "int32"), "int32")


def _ask(terms, order):
    x = terms.feed("x", "float32")
    out = []
    for k in order:
        c = terms.const(DIVISORS[k])
        for name in ("RealDiv", "RealDiv.ftz", "RealDiv"):
            r = terms.division_by_power_of_two(fns.lookup(name), {}, (x, c))
            out.append((name, None if r is None else (r[0], terms.key_of(r[1]))))
    return out


DIVISORS = list(_divisors())


def test_kept_answers_are_fresh_answers():
    order = list(range(len(DIVISORS))) * 2
    kept = S._Terms()
    got = _ask(kept, order)
    fresh = []
    for k in order:
        t = S._Terms()
        fresh += _ask(t, [k])
    assert got == fresh
    assert any(r is not None for _n, r in got) and any(r is None for _n, r in got)


def test_the_table_grows_as_without_the_memo(monkeypatch):
    order = list(range(len(DIVISORS))) * 3
    kept = S._Terms()
    _ask(kept, order)

    class Forgetful(dict):
        def get(self, key, default=None):
            return default

    fresh = S._Terms()
    fresh.reciprocals = Forgetful()
    _ask(fresh, order)
    assert kept.table == fresh.table
