"""Z3 encoding of symbolic values, with the registry's semantics (SPEC section 8).

* integers (int8 ... int64, uint8 ... uint64): bit-vectors of the dtype's
  width; Add, Sub, Mul, Neg wrap around exactly as the registry's (numpy's)
  integer arithmetic does; Max and Min compare signed or unsigned by dtype.
* bool: a bit-vector of width 1 (bool has no arithmetic kernel: its values
  are only compared).
* floats: Z3's FP sorts, float16 FP(5, 11), bfloat16 FP(8, 8), float32
  FP(8, 24), float64 FP(11, 53), with round-to-nearest-even, which is what
  the registry's arithmetic computes (IEEE 754, subnormals kept: the
  flushing `.ftz` variants have no encoding).  Max and Min propagate NaN
  (Z3's fpMax does not, so they are written out), and on a tie between +0.0
  and -0.0 return the operand `functions.ZERO_TIE` names for the dtype
  (TensorFlow's choice, tested against its kernels).
* Equality follows SPEC section 2: SMT-LIB's `=` on floating point *is* that
  equality (it has exactly one NaN, and +0 and -0 are different), so a float
  element compares with `==`, never with `fpEQ`.
* Opaque values (functions with no encoding) live in an uninterpreted sort
  `Val`: an opaque result is an uninterpreted function of its arguments, a
  tensor enters `Val` through an uninterpreted `box` per kind, an error through
  a constant per reason.  The real values are one interpretation of these
  symbols, so a formula valid for every interpretation holds for the real one;
  the converse fails, which is why a counterexample is confirmed concretely.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np
import z3

from tfsem.oracle.functions import ZERO_TIE
from tfsem.oracle.values import (BITS_DTYPES, DTYPES, FLOAT_DTYPES, FLOAT_FORMATS,
                                 UNSIGNED_DTYPES, Error, Tensor)

from .symbolic import Algebra, Guarded, Opaque, SymTensor, Term

F32 = z3.Float32()
BV64 = z3.BitVecSort(64)
RNE = z3.RNE()

#: The Z3 sort of each dtype's elements.
SORTS: dict[str, z3.SortRef] = {
    name: (z3.FPSort(*FLOAT_FORMATS[name]) if name in FLOAT_FORMATS
           else z3.BitVecSort(1 if name == "bool" else DTYPES[name].itemsize * 8))
    for name in DTYPES}
#: Which operand the float32 Max and Min return on a tie of +0.0 and -0.0.
MAX_TIE = MIN_TIE = ZERO_TIE["float32"]


def sort_of(dtype: str) -> z3.SortRef:
    """The Z3 sort of an element of `dtype`."""
    return SORTS[dtype]


def symbol(kind: str, *parts: Any) -> str:
    """The name of a Z3 symbol: `kind` and `parts` (strings, ints, tuples of
    them) written with `repr`, so that different parts never give one name.
    Z3 takes two constants of one name and sort to be the same unknown, and
    program names are any strings: pasting them into a name (`"$" + feed`
    beside `variable + "@init"`) once let a feed `a@init` and a variable `$a`
    share one symbol, and a rewrite that swapped them was "proved" sound."""
    return kind + repr(parts)


def leaf_name(term: Term) -> str:
    name, idx = term.value
    return symbol("feed" if term.op == "feed" else "init", name, idx)


def z3_const(value: Any, dtype: str) -> z3.ExprRef:
    """A numpy scalar of `dtype` as a Z3 numeral."""
    sort = SORTS[dtype]
    if dtype not in FLOAT_DTYPES:
        return z3.BitVecVal(int(value) % (1 << sort.size()), sort.size())
    f = np.array(value, dtype=DTYPES[dtype])
    if np.isnan(f.astype(np.float64)):
        return z3.fpNaN(sort)
    bits = int(f.view(BITS_DTYPES[dtype]))
    return z3.simplify(z3.fpBVToFP(z3.BitVecVal(bits, DTYPES[dtype].itemsize * 8), sort))


def _scalar(dtype: str, bits: int) -> Any:
    """The numpy scalar of `dtype` whose bit pattern is the unsigned `bits`
    (bool: 0 or 1)."""
    if dtype == "bool":
        return np.bool_(bits)
    if dtype in FLOAT_DTYPES:
        return np.array(bits, dtype=BITS_DTYPES[dtype]).view(DTYPES[dtype])[()]
    width = DTYPES[dtype].itemsize * 8
    if dtype not in UNSIGNED_DTYPES and bits >= 1 << (width - 1):
        bits -= 1 << width
    return DTYPES[dtype].type(bits)


def scalar_from_model(model: z3.ModelRef, expr: z3.ExprRef, dtype: str) -> Any:
    """The numpy scalar a model gives `expr` (completed: unconstrained -> 0)."""
    v = model.eval(expr, model_completion=True)
    if dtype not in FLOAT_DTYPES:
        return _scalar(dtype, v.as_long())
    if z3.is_true(z3.simplify(z3.fpIsNaN(v))):
        return np.array(np.nan, dtype=DTYPES[dtype])[()]
    return _scalar(dtype, z3.simplify(z3.fpToIEEEBV(v)).as_long())


class Encoder:
    """Encodes the terms of one :class:`~tfsem.checking.symbolic.Algebra`.
    Encodings are cached per term (terms are interned, so per structure)."""

    def __init__(self, order: dict[str, int] | None = None) -> None:
        #: the flag order of the Algebra whose guarded values this encodes
        self.order = order if order is not None else {}
        self._eq_cache: dict[tuple[int, int], tuple] = {}
        self._cache: dict[Term, z3.ExprRef] = {}
        self._leaves: dict[Term, z3.ExprRef] = {}
        self._funcs: dict[str, z3.FuncDeclRef] = {}
        self._val_sort: z3.SortRef | None = None
        self.opaque_used = False

    # -- scalars ------------------------------------------------------------

    def leaf(self, term: Term) -> z3.ExprRef:
        e = self._leaves.get(term)
        if e is None:
            e = self._leaves[term] = z3.Const(leaf_name(term), SORTS[term.dtype])
        return e

    def elem(self, term: Term) -> z3.ExprRef:
        cache = self._cache
        e = cache.get(term)
        if e is not None:
            return e
        stack = [term]
        while stack:
            u = stack[-1]
            if u in cache:
                stack.pop()
                continue
            missing = [a for a in u.args if a not in cache]
            if missing:
                stack.extend(missing)
                continue
            cache[u] = self._build(u, [cache[a] for a in u.args])
            stack.pop()
        return cache[term]

    def _build(self, t: Term, args: list[z3.ExprRef]) -> z3.ExprRef:
        if t.op in ("feed", "init"):
            return self.leaf(t)
        if t.op == "const":
            return z3_const(t.value, t.dtype)
        return self.scalar_op(t.op, t.dtype, args)

    def scalar_op(self, op: str, dtype: str, args: list[z3.ExprRef]) -> z3.ExprRef:
        """The element-wise operation `op` on scalars of `dtype`, as the registry computes it."""
        t = _OpView(op, dtype)
        if t.dtype in UNSIGNED_DTYPES and t.op in ("max", "min"):
            gt = z3.UGT(args[0], args[1]) if t.op == "max" else z3.ULT(args[0], args[1])
            return z3.If(gt, args[0], args[1])
        if t.dtype not in FLOAT_DTYPES and t.dtype != "bool":
            if t.op == "add":
                return args[0] + args[1]
            if t.op == "sub":
                return args[0] - args[1]
            if t.op == "mul":
                return args[0] * args[1]
            if t.op == "neg":
                return -args[0]
            if t.op == "max":
                return z3.If(args[0] > args[1], args[0], args[1])
            if t.op == "min":
                return z3.If(args[0] < args[1], args[0], args[1])
        elif t.dtype in FLOAT_DTYPES:
            if t.op == "add":
                return z3.fpAdd(RNE, args[0], args[1])
            if t.op == "sub":
                return z3.fpSub(RNE, args[0], args[1])
            if t.op == "mul":
                return z3.fpMul(RNE, args[0], args[1])
            if t.op == "neg":
                return z3.fpNeg(args[0])
            if t.op in ("max", "min"):
                return self._fp_extremum(t.op, args[0], args[1], t.dtype)
        raise ValueError(f"no encoding for {t.op} on {t.dtype}")

    def _fp_extremum(self, op: str, a: z3.ExprRef, b: z3.ExprRef,
                     dtype: str = "float32") -> z3.ExprRef:
        """Max / Min: NaN if either operand is NaN; a tie between zeros of
        opposite signs resolved as ZERO_TIE says for the dtype."""
        tie = a if ZERO_TIE[dtype] == "first" else b
        wins, loses = (z3.fpGT(a, b), z3.fpLT(a, b)) if op == "max" else (z3.fpLT(a, b), z3.fpGT(a, b))
        return z3.If(z3.Or(z3.fpIsNaN(a), z3.fpIsNaN(b)), z3.fpNaN(SORTS[dtype]),
                     z3.If(wins, a, z3.If(loses, b, tie)))

    # -- values -------------------------------------------------------------

    def flag(self, x: str) -> z3.BoolRef:
        """True when variable x starts uninitialized."""
        return z3.Bool(symbol("uninitialized", x))

    def eq(self, a: Any, b: Any) -> z3.BoolRef | bool:
        """SPEC section 2 equality of two symbolic values (Python bool when it
        is decided statically)."""
        if a is b:
            return True
        if isinstance(a, Guarded) or isinstance(b, Guarded):
            key = (id(a), id(b))
            hit = self._eq_cache.get(key)
            if hit is None:
                hit = self._eq_cache[key] = (self._eq_guarded(a, b), a, b)
            return hit[0]
        if isinstance(a, Error) and isinstance(b, Error):
            return a.reason == b.reason
        if isinstance(a, Opaque) or isinstance(b, Opaque):
            return self.as_val(a) == self.as_val(b)
        if isinstance(a, Error) or isinstance(b, Error):
            return False
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        conj = []
        for x, y in zip(a.elems, b.elems):
            if x is y:
                continue
            if x.op == "const" and y.op == "const":
                return False  # interned: different constants are different values
            conj.append(self.elem(x) == self.elem(y))
        return z3.And(conj) if len(conj) > 1 else conj[0] if conj else True

    def _eq_guarded(self, a: Any, b: Any) -> z3.BoolRef | bool:
        x = min((v.var for v in (a, b) if isinstance(v, Guarded)), key=self.order.__getitem__)
        eu = self.eq(Algebra.restrict(a, x, True), Algebra.restrict(b, x, True))
        ei = self.eq(Algebra.restrict(a, x, False), Algebra.restrict(b, x, False))
        if eu is ei or (isinstance(eu, bool) and isinstance(ei, bool) and eu == ei):
            return eu
        return z3.If(self.flag(x), _as_bool(eu), _as_bool(ei))

    def parts_eq(self, xs: Sequence[Any], ys: Sequence[Any]) -> z3.BoolRef | bool:
        conj = []
        for a, b in zip(xs, ys):
            e = self.eq(a, b)
            if e is False:
                return False
            if e is not True:
                conj.append(e)
        return z3.And(conj) if len(conj) > 1 else conj[0] if conj else True

    # -- opaque values ------------------------------------------------------

    @property
    def val_sort(self) -> z3.SortRef:
        if self._val_sort is None:
            self._val_sort = z3.DeclareSort("Val")
        return self._val_sort

    def _function(self, name: str, domain: list[z3.SortRef], rng: z3.SortRef) -> z3.FuncDeclRef:
        key = name + "|" + ",".join(map(str, domain))
        f = self._funcs.get(key)
        if f is None:
            f = self._funcs[key] = z3.Function(name, *domain, rng)
        return f

    @staticmethod
    def _kind(v: Any) -> str:
        if isinstance(v, Error):
            return f"E({v.reason})"
        if isinstance(v, Opaque):
            return "V"
        return f"{v.dtype}{list(v.shape)}"

    def _flat(self, v: Any) -> list[z3.ExprRef]:
        if isinstance(v, Error):
            return []
        if isinstance(v, Opaque):
            return [self.as_val(v)]
        return [self.elem(e) for e in v.elems]

    def as_val(self, v: Any) -> z3.ExprRef:
        """A value of the uninterpreted sort Val."""
        self.opaque_used = True
        if isinstance(v, Guarded):
            return z3.If(self.flag(v.var), self.as_val(v.uninit), self.as_val(v.init))
        if isinstance(v, Error):
            return z3.Const(symbol("error", v.reason), self.val_sort)
        if isinstance(v, SymTensor):
            args = self._flat(v)
            if not args:
                return z3.Const(symbol("box", self._kind(v)), self.val_sort)
            return self._function(symbol("box", self._kind(v)), [a.sort() for a in args], self.val_sort)(*args)
        args = [x for a in v.args for x in self._flat(a)]
        name = symbol("op", v.op, v.port, tuple(self._kind(a) for a in v.args))
        if not args:
            return z3.Const(name, self.val_sort)
        return self._function(name, [a.sort() for a in args], self.val_sort)(*args)

    # -- models -------------------------------------------------------------

    def tensor_from_model(self, model: z3.ModelRef, value: SymTensor) -> Tensor:
        """The concrete tensor a model gives a leaf tensor (feed or initial value)."""
        flat = [scalar_from_model(model, self.leaf(t), value.dtype) for t in value.elems]
        arr = np.array(flat, dtype=DTYPES[value.dtype])
        return Tensor(arr.reshape(value.shape), value.dtype)

    def leaf_constraint(self, term: Term, how: str, k: float = 0) -> z3.BoolRef:
        """Constraints that make counterexamples readable: "eq" (the leaf is k;
        +0.0 for a float 0) or "abs" (|leaf| <= k, and not NaN)."""
        c = self.leaf(term)
        d = term.dtype
        if d not in FLOAT_DTYPES:
            if how == "eq":
                return c == z3_const(int(k), d)
            if d == "bool":
                return z3.BoolVal(True)
            kv = z3_const(min(int(k), int(np.iinfo(DTYPES[d]).max)), d)
            if d in UNSIGNED_DTYPES:
                return z3.ULE(c, kv)
            return z3.And(c >= -kv, c <= kv)
        with np.errstate(over="ignore"):   # a bound past float16's range is inf
            kv = z3_const(np.array(k, dtype=DTYPES[d]), d)
        if how == "eq":
            return c == kv
        return z3.And(z3.Not(z3.fpIsNaN(c)), z3.fpLEQ(z3.fpAbs(c), kv))


class _OpView:
    __slots__ = ("op", "dtype")

    def __init__(self, op: str, dtype: str):
        self.op, self.dtype = op, dtype


def _as_bool(e: z3.BoolRef | bool) -> z3.BoolRef:
    return z3.BoolVal(e) if isinstance(e, bool) else e


def evaluate_concrete(encoder: Encoder, terms: Iterable[Term], leaves: dict[Term, Any]) -> list[Any]:
    """Evaluate terms under concrete leaf values with Z3's simplifier (used by
    the tests that compare the encoding with numpy)."""
    subs = [(encoder.leaf(t), z3_const(v, t.dtype)) for t, v in leaves.items()]
    out = []
    for t in terms:
        e = z3.simplify(z3.substitute(encoder.elem(t), *subs)) if subs else z3.simplify(encoder.elem(t))
        out.append(_numeral(e, t.dtype))
    return out


def _numeral(e: z3.ExprRef, dtype: str) -> Any:
    if dtype not in FLOAT_DTYPES:
        if not z3.is_bv_value(e):
            raise ValueError(f"not a numeral: {e}")
        return _scalar(dtype, e.as_long())
    if not isinstance(e, z3.FPNumRef):
        raise ValueError(f"not a numeral: {e}")
    if e.isNaN():
        return np.array(np.nan, dtype=DTYPES[dtype])[()]
    return _scalar(dtype, z3.simplify(z3.fpToIEEEBV(e)).as_long())
