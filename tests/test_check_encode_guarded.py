"""The equality of guarded values (issue 23, item 3): encoded once per side as
cases by kind, with no split per initialization flag.  The new encoding must be
exact: Z3 proves it equivalent to the former split encoding (kept as
`Encoder._eq_split`; `_eq_guarded` keeps the split for small trees) on random decision trees of errors and tensors, and it
agrees with the concrete equality at every flag pattern and sampled σ."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
import z3

from tfsem.checking.encode import Encoder, z3_const
from tfsem.checking.symbolic import Algebra, Guarded
from tfsem.oracle import functions as fns
from tfsem.oracle.program import TensorType
from tfsem.oracle.values import DTYPE_MISMATCH, UNINITIALIZED, Error

FLAGS = ["x", "y", "z"]


def _pool(algebra: Algebra) -> list:
    a = algebra.leaf("feed", "a", TensorType("float32", (2,)))
    b = algebra.leaf("feed", "b", TensorType("float32", (2,)))
    n = algebra.leaf("feed", "n", TensorType("int64", ()))
    add, mx = fns.lookup("Add"), fns.lookup("Max")
    zero = algebra.tensor("float32", (2,), (algebra.const(0.0, "float32"), algebra.const(-0.0, "float32")))
    nan = algebra.tensor("float32", (2,), (algebra.const(np.nan, "float32"),) * 2)
    return [Error(UNINITIALIZED), Error(DTYPE_MISMATCH), a, b, algebra.apply(add, (a, b))[0],
            algebra.apply(add, (b, a))[0], algebra.apply(mx, (a, zero))[0], zero, nan, n,
            algebra.apply(add, (n, n))[0],
            # opaque values (a function with no encoding), compared through Val
            algebra.opaque("Mystery", 0, (a,)), algebra.opaque("Mystery", 0, (n,))]


def _tree(algebra: Algebra, rng: random.Random, pool: list, depth: int, first: int):
    """A random value in normal form: guards on FLAGS[first:] only, in order."""
    if depth == 0 or first >= len(FLAGS) or rng.random() < 0.3:
        return rng.choice(pool)
    k = rng.randrange(first, len(FLAGS))
    return algebra.guard(FLAGS[k], _tree(algebra, rng, pool, depth - 1, k + 1),
                         _tree(algebra, rng, pool, depth - 1, k + 1))


def _leaf_at(v, pattern: dict[str, bool]):
    while isinstance(v, Guarded):
        v = v.uninit if pattern[v.var] else v.init
    return v


@pytest.mark.parametrize("seed", range(2))
def test_case_equality_is_the_split_equality(seed):
    algebra = Algebra()
    algebra.set_flags(FLAGS)
    pool = _pool(algebra)
    rng = random.Random(seed)
    enc = Encoder(algebra.flag_order)
    solver = z3.Solver()
    checked = 0
    for _ in range(60):
        u, v = (_tree(algebra, rng, pool, 3, 0) for _ in range(2))
        if not (isinstance(u, Guarded) or isinstance(v, Guarded)) or u is v:
            continue
        new, old = enc._eq_cases(u, v), enc._eq_split(u, v)
        solver.push()
        solver.add(z3.Xor(_bool(new), _bool(old)))
        assert solver.check() == z3.unsat, (u, v, new, old)
        solver.pop()
        checked += 1
    assert checked >= 20


def test_case_equality_agrees_with_concrete_equality_at_every_pattern():
    algebra = Algebra()
    algebra.set_flags(FLAGS)
    pool = _pool(algebra)
    rng = random.Random(7)
    enc = Encoder(algebra.flag_order)
    values = {"a": np.array([1.5, -0.0], np.float32), "b": np.array([np.nan, 0.0], np.float32),
              "n": np.array(3, np.int64)}
    subs = [(enc.leaf(t), z3_const(values[t.value[0]].reshape(-1)[t.value[1]], t.dtype))
            for t in algebra.leaves]
    for _ in range(40):
        u, v = (_tree(algebra, rng, pool, 3, 0) for _ in range(2))
        if not (isinstance(u, Guarded) or isinstance(v, Guarded)):
            continue
        e = _bool(enc._eq_cases(u, v))
        for bits in itertools.product([False, True], repeat=len(FLAGS)):
            pattern = dict(zip(FLAGS, bits))
            got = z3.simplify(z3.substitute(e, *subs, *((enc.flag(x), z3.BoolVal(b))
                                                        for x, b in pattern.items())))
            lu, lv = _leaf_at(u, pattern), _leaf_at(v, pattern)
            want = z3.simplify(z3.substitute(_bool(enc.eq(lu, lv)), *subs)) if subs else None
            assert z3.is_true(got) == z3.is_true(want), (u, v, pattern)


def _bool(e) -> z3.BoolRef:
    return z3.BoolVal(e) if isinstance(e, bool) else e


def test_small_trees_split_and_large_ones_use_cases(monkeypatch):
    from tfsem.checking import encode
    algebra = Algebra()
    algebra.set_flags(FLAGS)
    pool = _pool(algebra)
    u = algebra.guard("x", pool[0], pool[2])
    v = algebra.guard("x", pool[0], pool[3])
    calls = []
    monkeypatch.setattr(Encoder, "_eq_cases", lambda self, a, b: calls.append("cases") or True)
    monkeypatch.setattr(Encoder, "_eq_split", lambda self, a, b: calls.append("split") or True)
    Encoder(algebra.flag_order)._eq_guarded(u, v)
    monkeypatch.setattr(encode, "SPLIT_LEAVES", 1)
    Encoder(algebra.flag_order)._eq_guarded(u, v)
    assert calls == ["split", "cases"]
