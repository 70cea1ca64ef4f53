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
  and -0.0 return the operand TensorFlow's kernel does (tested against it):
  the element op "max"/"min" `functions.ZERO_TIE`'s for the dtype (inside
  Eigen's whole packets), "max_tail"/"min_tail" the first (the scalar tail
  of a float32/float64 result; the engines choose the op by flat index).
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

import time
from fractions import Fraction
from typing import Any, Iterable, Sequence

import numpy as np
import z3
from z3.z3 import _to_expr_ref

from tfsem.oracle.functions import EXTREMUM_OPS, ZERO_TIE
from tfsem.oracle.values import BITS_DTYPES, DTYPES, FLOAT_DTYPES, UNSIGNED_DTYPES, Error, Tensor

from .symbolic import Algebra, Guarded, Opaque, SymTensor, Term
from .z3context import Z3Context, current

# Every Z3 object here comes from one thread's context (checking/z3context.py:
# checks may run in several threads at once): an Encoder takes the calling
# thread's when it is made, and the functions below take a context, the
# calling thread's when none is given.

#: Which operand the float32 Max and Min return on a tie of +0.0 and -0.0
#: inside Eigen's whole packets (the scalar tail returns the first).
MAX_TIE = MIN_TIE = ZERO_TIE["float32"]


class EncodingTimeout(RuntimeError):
    """The encoder's deadline passed while it was building terms."""


class NotReal(ValueError):
    """`--float real`: a value with no real-number meaning (a NaN or infinite
    float constant) was to be encoded: the check refuses (`unknown`)."""


def real_const(value: Any, dtype: str, context: Z3Context | None = None) -> z3.ExprRef:
    """A float numpy scalar as its exact rational value (`--float real`);
    NaN and the infinities have none: NotReal."""
    f = float(np.array(value, dtype=DTYPES[dtype]).astype(np.float64))
    if not np.isfinite(f):
        raise NotReal(f"the {dtype} constant {f} has no value over the reals")
    fr = Fraction(f)
    return z3.RealVal(f"{fr.numerator}/{fr.denominator}", (context or current()).ctx)


def sort_of(dtype: str, context: Z3Context | None = None) -> z3.SortRef:
    """The Z3 sort of an element of `dtype` (in the calling thread's context
    unless another is given)."""
    return (context or current()).sorts[dtype]


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


def z3_const(value: Any, dtype: str, context: Z3Context | None = None) -> z3.ExprRef:
    """A numpy scalar of `dtype` as a Z3 numeral (in the calling thread's
    context unless another is given)."""
    sort = (context or current()).sorts[dtype]
    if dtype not in FLOAT_DTYPES:
        return z3.BitVecVal(int(value) % (1 << sort.size()), sort)
    f = np.array(value, dtype=DTYPES[dtype])
    if np.isnan(f.astype(np.float64)):
        return z3.fpNaN(sort)
    bits = int(f.view(BITS_DTYPES[dtype]))
    return z3.simplify(z3.fpBVToFP(z3.BitVecVal(bits, DTYPES[dtype].itemsize * 8, sort.ctx), sort,
                                   sort.ctx))


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


def float_of_real(v: z3.ExprRef, dtype: str) -> Any:
    """A Z3 rational numeral rounded to the nearest value of float `dtype`
    (through float64; an irrational algebraic numeral is approximated)."""
    if z3.is_rational_value(v):
        q = Fraction(v.numerator_as_long(), v.denominator_as_long())
    else:
        q = Fraction(v.approx(20).as_fraction())
    try:
        f = float(q)
    except OverflowError:
        f = float("inf") if q > 0 else float("-inf")
    with np.errstate(over="ignore"):
        return np.array(f, dtype=DTYPES[dtype])[()]


def scalar_from_model(model: z3.ModelRef, expr: z3.ExprRef, dtype: str) -> Any:
    """The numpy scalar a model gives `expr` (completed: unconstrained -> 0)."""
    v = model.eval(expr, model_completion=True)
    if dtype not in FLOAT_DTYPES:
        return _scalar(dtype, v.as_long())
    if z3.is_true(z3.simplify(z3.fpIsNaN(v, v.ctx))):
        return np.array(np.nan, dtype=DTYPES[dtype])[()]
    return _scalar(dtype, z3.simplify(z3.fpToIEEEBV(v, v.ctx)).as_long())


class Encoder:
    """Encodes the terms of one :class:`~tfsem.checking.symbolic.Algebra`.
    Encodings are cached per term (terms are interned, so per structure)."""

    def __init__(self, order: dict[str, int] | None = None, real: bool = False) -> None:
        #: the Z3 context of every term this encoder makes: the calling
        #: thread's (checking/z3context.py), so the encoder is used in the
        #: thread that made it
        self.z3 = current()
        self.ctx = self.z3.ctx
        #: `--float real` (SPEC section 11): float elements are Z3 Reals, float
        #: Add, Sub, Mul, Neg exact, Max and Min by real comparison, constants
        #: their exact rational values
        self.real = real
        #: the flag order of the Algebra whose guarded values this encodes
        self.order = order if order is not None else {}
        # every cache below is keyed by identity (values and terms are
        # interned, so identity is structure) and keeps its key alive, so that
        # a shared subterm of the term DAG is encoded once per check
        self._eq_cache: dict[tuple[int, int], tuple] = {}
        self._val_cache: dict[int, tuple] = {}
        self._case_cache: dict[int, tuple] = {}
        self._cache: dict[Term, z3.ExprRef] = {}
        self._leaves: dict[Term, z3.ExprRef] = {}
        self._funcs: dict[tuple, z3.FuncDeclRef] = {}
        self._flags: dict[str, z3.BoolRef] = {}
        self._val_sort: z3.SortRef | None = None
        self.opaque_used = False
        #: time.monotonic() after which building a term raises EncodingTimeout
        #: (None: no deadline).  Building Z3 terms is the check's main cost on
        #: real graphs, so it obeys the budget like the searches do.
        self.deadline: float | None = None
        self._built = 0

    def tick(self) -> None:
        """Called once per term built (cache misses only): every 32 of them,
        raise EncodingTimeout past the deadline."""
        self._built += 1
        if self._built & 31 == 0 and self.deadline is not None and time.monotonic() > self.deadline:
            raise EncodingTimeout(f"the time ran out while encoding ({self._built} terms built)")

    # -- scalars ------------------------------------------------------------

    def leaf(self, term: Term) -> z3.ExprRef:
        e = self._leaves.get(term)
        if e is None:
            sort = self.z3.real if self.real and term.dtype in FLOAT_DTYPES else \
                self.z3.sorts[term.dtype]
            e = self._leaves[term] = z3.Const(leaf_name(term), sort)
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
            self.tick()
            cache[u] = self._build(u, [cache[a] for a in u.args])
            stack.pop()
        return cache[term]

    def _build(self, t: Term, args: list[z3.ExprRef]) -> z3.ExprRef:
        if t.op in ("feed", "init"):
            return self.leaf(t)
        if t.op == "const":
            if self.real and t.dtype in FLOAT_DTYPES:
                return real_const(t.value, t.dtype, self.z3)
            return z3_const(t.value, t.dtype, self.z3)
        return self.scalar_op(t.op, t.dtype, args)

    def scalar_op(self, op: str, dtype: str, args: list[z3.ExprRef]) -> z3.ExprRef:
        """The element-wise operation `op` on scalars of `dtype`, as the registry computes it."""
        if op in EXTREMUM_OPS and op not in ("max", "min"):
            base, tie = EXTREMUM_OPS[op]
            if dtype not in FLOAT_DTYPES or self.real:
                # no tie of signed zeros: the same term as the packets' op
                return self.scalar_op(base, dtype, args)
            return self._fp_extremum(base, args[0], args[1], dtype, tie)
        t = _OpView(op, dtype)
        if t.dtype in UNSIGNED_DTYPES and t.op in ("max", "min"):
            gt = z3.UGT(args[0], args[1]) if t.op == "max" else z3.ULT(args[0], args[1])
            return z3.If(gt, args[0], args[1])
        # signed bit-vectors (wrapping) and, over the reals, floats: the same
        # terms (on a tie of Max or Min both operands are one value in either)
        exact_terms = t.dtype in FLOAT_DTYPES and self.real
        if exact_terms or (t.dtype not in FLOAT_DTYPES and t.dtype != "bool"):
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
                return z3.fpAdd(self.z3.rne, args[0], args[1], self.ctx)
            if t.op == "sub":
                return z3.fpSub(self.z3.rne, args[0], args[1], self.ctx)
            if t.op == "mul":
                return z3.fpMul(self.z3.rne, args[0], args[1], self.ctx)
            if t.op == "neg":
                return z3.fpNeg(args[0], self.ctx)
            if t.op in ("max", "min"):
                return self._fp_extremum(t.op, args[0], args[1], t.dtype)
        raise ValueError(f"no encoding for {t.op} on {t.dtype}")

    def _fp_extremum(self, op: str, a: z3.ExprRef, b: z3.ExprRef,
                     dtype: str = "float32", tie: str = "table") -> z3.ExprRef:
        """Max / Min: NaN if either operand is NaN; a tie between zeros of
        opposite signs resolved as `tie` says: "first", "second", or "table"
        (ZERO_TIE's for the dtype: inside Eigen's whole packets)."""
        if tie == "table":
            tie = ZERO_TIE[dtype]
        tie = a if tie == "first" else b
        c = self.ctx
        wins, loses = (z3.fpGT(a, b, c), z3.fpLT(a, b, c)) if op == "max" else \
            (z3.fpLT(a, b, c), z3.fpGT(a, b, c))
        return z3.If(z3.Or(z3.fpIsNaN(a, c), z3.fpIsNaN(b, c)), z3.fpNaN(self.z3.sorts[dtype]),
                     z3.If(wins, a, z3.If(loses, b, tie)))

    # -- values -------------------------------------------------------------

    def flag(self, x: str) -> z3.BoolRef:
        """True when variable x starts uninitialized."""
        f = self._flags.get(x)
        if f is None:
            f = self._flags[x] = z3.Bool(symbol("uninitialized", x), self.ctx)
        return f

    def eq(self, a: Any, b: Any) -> z3.BoolRef | bool:
        """SPEC section 2 equality of two symbolic values (Python bool when it
        is decided statically)."""
        if a is b:
            return True
        if isinstance(a, Error) and isinstance(b, Error):
            return a.reason == b.reason
        # (memoized: the queries of one check compare the same interned values
        # over and over, one outcome against every outcome of a component)
        key = (id(a), id(b))
        hit = self._eq_cache.get(key)
        if hit is None:
            self.tick()
            hit = self._eq_cache[key] = (self._eq(a, b), a, b)
        return hit[0]

    def _eq(self, a: Any, b: Any) -> z3.BoolRef | bool:
        if isinstance(a, Guarded) or isinstance(b, Guarded):
            return self._eq_guarded(a, b)
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
                if not (self.real and x.dtype in FLOAT_DTYPES):
                    return False  # interned: different constants are different values
                # over the reals +0.0 and -0.0 are one value (a NaN or an
                # infinity: refused when encoded below)
                fx, fy = (float(np.array(c.value).astype(np.float64)) for c in (x, y))
                if np.isfinite(fx) and np.isfinite(fy):
                    if fx != fy:
                        return False
                    continue
            conj.append(self.elem(x) == self.elem(y))
        return z3.And(conj) if len(conj) > 1 else conj[0] if conj else True

    def _eq_guarded(self, a: Any, b: Any) -> z3.BoolRef | bool:
        """Equality of values that depend on initialization flags, with no
        case split per flag.

        Each side is encoded once as its *cases* (`_cases`): for every kind
        K it may have (an error with its reason, or a tensor of one dtype and
        shape), the condition on the flags under which it has kind K, and its
        elements as If-terms over the flags (an element is read only where the
        condition holds).  Then

            a = b  <=>  OR over kinds K of both:  cond_a(K) & cond_b(K) & elems_a(K) = elems_b(K)

        Exact, not only sound: at each σ the flags select one leaf of each
        decision tree, so exactly one cond_a(K) holds (the conditions
        partition the flag assignments, by induction over the tree: a flag
        picks one branch, in which one kind holds), and there elems_a(K) are
        that leaf's elements (the If-terms select the same branch).  So the
        disjunction holds iff both leaves have one kind and equal elements,
        which is SPEC section 2 equality of the two leaves (errors: equal
        reasons; float elements: SMT-LIB `=`, as `eq` compares them).  The
        former encoding split If(flag, eq(uninit cases), eq(init cases)) once
        per flag on the path, comparing every pair of leaves that share a
        path; this one is linear in the leaves of each side.

        An opaque case (kind "V": its kind is not static) compares through the
        sort Val, as `eq` compares an opaque value with any other: its element
        is as_val of the opaque value (If-merged over the flags like any
        element), and against a case of kind K of the other side it is
        compared with as_val of that case's leaf, which is the box of K
        applied to the leaf's elements (an error: its constant), so the
        If-merged elements give it where that case's condition holds.  The
        argument above carries over: at each σ one case holds per side, and
        its disjunct is `eq` of the two leaves.  Values of the generic-element
        engine (not element tensors) still split.

        When both decision trees are small (at most SPLIT_LEAVES leaf pairs),
        the split is kept: it costs little there, and Z3 decides its If over
        equalities of plain terms much faster than equalities of If-merged
        floating-point terms (measured: a 20-node check whose queries took
        0.02 s split took 3 s of solver timeouts as cases).  Beyond that the
        split would multiply the leaves, and the cases keep it linear."""
        if _leaves(a) * _leaves(b) <= SPLIT_LEAVES:
            return self._eq_split(a, b)
        return self._eq_cases(a, b)

    def _eq_cases(self, a: Any, b: Any) -> z3.BoolRef | bool:
        """The case encoding of `_eq_guarded`."""
        ca, cb = self._cases(a), self._cases(b)
        if ca is None or cb is None:
            return self._eq_split(a, b)
        disj = []
        for (one, two) in ((ca, cb), (cb, ca)):
            # an opaque case of one side against each non-opaque case of the other
            if ("V",) not in one:
                continue
            cond_v, (val,) = one[("V",)]
            for kind, (cond, elems) in two.items():
                if kind == ("V",):
                    continue
                conj = [c for c in (cond_v, cond) if c is not True]
                conj.append(val == self._case_val(kind, elems))
                disj.append(z3.And(conj) if len(conj) > 1 else conj[0])
        for kind in ca.keys() & cb.keys():
            (cond_a, elems_a), (cond_b, elems_b) = ca[kind], cb[kind]
            conj = [c for c in (cond_a, cond_b) if c is not True]
            same = True
            for x, y in zip(elems_a, elems_b):
                if x.eq(y):
                    continue
                if z3.is_fp_value(x) and z3.is_fp_value(y) or z3.is_bv_value(x) and z3.is_bv_value(y):
                    same = False   # numerals: different ASTs are different values
                    break
                conj.append(x == y)
            if not same:
                continue
            if not conj:
                return True    # (both sides have kind K under every σ, with equal elements)
            disj.append(z3.And(conj) if len(conj) > 1 else conj[0])
        if not disj:
            return False
        return z3.Or(disj) if len(disj) > 1 else disj[0]

    def _cases(self, v: Any) -> dict[tuple, tuple] | None:
        """{kind: (condition on the flags, element terms)} for a value built
        of errors, element tensors and guards (see `_eq_guarded`); None when a
        case is opaque or not an element tensor.  Memoized per value."""
        hit = self._case_cache.get(id(v))
        if hit is not None:
            return hit[0]
        self.tick()
        out: dict[tuple, tuple] | None
        if isinstance(v, Error):
            out = {("E", v.reason): (True, [])}
        elif isinstance(v, Opaque):
            out = {("V",): (True, [self.as_val(v)])}
        elif isinstance(v, SymTensor):
            out = {("T", v.dtype, v.shape): (True, [self.elem(t) for t in v.elems])}
        elif isinstance(v, Guarded):
            cu, ci = self._cases(v.uninit), self._cases(v.init)
            if cu is None or ci is None:
                out = None
            else:
                f = self.flag(v.var)
                out = {}
                for kind in cu.keys() | ci.keys():
                    if kind not in ci:
                        cond, elems = cu[kind]
                        out[kind] = (f if cond is True else z3.And(f, cond), elems)
                    elif kind not in cu:
                        cond, elems = ci[kind]
                        out[kind] = (z3.Not(f) if cond is True else z3.And(z3.Not(f), cond), elems)
                    else:
                        (c1, e1), (c2, e2) = cu[kind], ci[kind]
                        cond = True if c1 is True and c2 is True else \
                            z3.If(f, _as_bool(c1, self.ctx), _as_bool(c2, self.ctx))
                        out[kind] = (cond, [x if x.eq(y) else z3.If(f, x, y) for x, y in zip(e1, e2)])
        else:
            out = None
        self._case_cache[id(v)] = (out, v)   # keeps v alive: its id stays its own
        return out

    def _case_val(self, kind: tuple, elems: list[z3.ExprRef]) -> z3.ExprRef:
        """as_val of a leaf of `kind` (not opaque) whose elements are `elems`."""
        self.opaque_used = True
        if kind[0] == "E":
            return z3.Const(symbol("error", kind[1]), self.val_sort)
        name = symbol("box", f"{kind[1]}{list(kind[2])}")
        if not elems:
            return z3.Const(name, self.val_sort)
        return self._apply(name, elems, self.val_sort)

    def _eq_split(self, a: Any, b: Any) -> z3.BoolRef | bool:
        x = min((v.var for v in (a, b) if isinstance(v, Guarded)), key=self.order.__getitem__)
        eu = self.eq(Algebra.restrict(a, x, True), Algebra.restrict(b, x, True))
        ei = self.eq(Algebra.restrict(a, x, False), Algebra.restrict(b, x, False))
        if eu is ei or (isinstance(eu, bool) and isinstance(ei, bool) and eu == ei):
            return eu
        return z3.If(self.flag(x), _as_bool(eu, self.ctx), _as_bool(ei, self.ctx))

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
            self._val_sort = z3.DeclareSort("Val", self.ctx)
        return self._val_sort

    def _apply(self, name: str, args: list[z3.ExprRef], rng: z3.SortRef) -> z3.ExprRef:
        """The uninterpreted function `name` from the sorts of `args` to `rng`,
        applied to `args`.  (Through Z3's C API: the declaration's domain is
        the arguments' sorts by construction, so the Python API's per-call
        sort checks and coercions, most of the cost of an application, are
        not needed.)"""
        ctx = rng.ctx
        c = ctx.ref()
        asts = [a.as_ast() for a in args]
        ids = tuple(z3.Z3_get_ast_id(c, z3.Z3_sort_to_ast(c, z3.Z3_get_sort(c, a))) for a in asts)
        key = (name, ids, rng.get_id())
        f = self._funcs.get(key)
        if f is None:
            f = self._funcs[key] = z3.Function(name, *[a.sort() for a in args], rng)
        arr = (z3.Ast * len(asts))(*asts)
        return _to_expr_ref(z3.Z3_mk_app(c, f.ast, len(asts), arr), ctx)

    def _function(self, name: str, domain: list[z3.SortRef], rng: z3.SortRef) -> z3.FuncDeclRef:
        # keyed by Z3's ids of the sorts (unique among live ASTs, and the
        # declaration kept here keeps its sorts alive): printing a sort to
        # make a key cost a fifth of a real graph's check
        key = (name, tuple(s.get_id() for s in domain), rng.get_id())
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
        """A value of the uninterpreted sort Val (memoized per interned value:
        opaque values share their arguments, and without the memo a real
        graph's outcome re-encoded them tens of thousands of times)."""
        self.opaque_used = True
        hit = self._val_cache.get(id(v))
        if hit is None:
            self.tick()
            hit = self._val_cache[id(v)] = (self._as_val(v), v)   # keeps v alive: its id stays its own
        return hit[0]

    def _as_val(self, v: Any) -> z3.ExprRef:
        if isinstance(v, Guarded):
            return z3.If(self.flag(v.var), self.as_val(v.uninit), self.as_val(v.init))
        if isinstance(v, Error):
            return z3.Const(symbol("error", v.reason), self.val_sort)
        if isinstance(v, SymTensor):
            args = self._flat(v)
            if not args:
                return z3.Const(symbol("box", self._kind(v)), self.val_sort)
            return self._apply(symbol("box", self._kind(v)), args, self.val_sort)
        args = [x for a in v.args for x in self._flat(a)]
        name = symbol("op", v.op, v.port, tuple(self._kind(a) for a in v.args))
        if not args:
            return z3.Const(name, self.val_sort)
        return self._apply(name, args, self.val_sort)

    # -- models -------------------------------------------------------------

    def tensor_from_model(self, model: z3.ModelRef, value: SymTensor) -> Tensor:
        """The concrete tensor a model gives a leaf tensor (feed or initial value)."""
        if self.real and value.dtype in FLOAT_DTYPES:
            # the model's rational, rounded to the dtype (the caller confirms
            # the rounded σ exactly: it may not be a counterexample any more)
            flat = [float_of_real(model.eval(self.leaf(t), model_completion=True), value.dtype)
                    for t in value.elems]
        else:
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
                return c == z3_const(int(k), d, self.z3)
            if d == "bool":
                return self.z3.true
            kv = z3_const(min(int(k), int(np.iinfo(DTYPES[d]).max)), d, self.z3)
            if d in UNSIGNED_DTYPES:
                return z3.ULE(c, kv)
            return z3.And(c >= -kv, c <= kv)
        with np.errstate(over="ignore"):   # a bound past float16's range is inf
            kv = z3_const(np.array(k, dtype=DTYPES[d]), d, self.z3)
        if how == "eq":
            return c == kv
        return z3.And(z3.Not(z3.fpIsNaN(c, self.ctx)),
                      z3.fpLEQ(z3.fpAbs(c, self.ctx), kv, self.ctx))


class _OpView:
    __slots__ = ("op", "dtype")

    def __init__(self, op: str, dtype: str):
        self.op, self.dtype = op, dtype


#: guarded equalities with at most this many pairs of leaves are split (see
#: Encoder._eq_guarded)
SPLIT_LEAVES = 64


def _leaves(v: Any) -> int:
    return v.leaves if isinstance(v, Guarded) else 1


def _as_bool(e: z3.BoolRef | bool, ctx: z3.Context) -> z3.BoolRef:
    return z3.BoolVal(e, ctx) if isinstance(e, bool) else e


def evaluate_concrete(encoder: Encoder, terms: Iterable[Term], leaves: dict[Term, Any]) -> list[Any]:
    """Evaluate terms under concrete leaf values with Z3's simplifier (used by
    the tests that compare the encoding with numpy)."""
    subs = [(encoder.leaf(t), z3_const(v, t.dtype, encoder.z3)) for t, v in leaves.items()]
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
    return _scalar(dtype, z3.simplify(z3.fpToIEEEBV(e, e.ctx)).as_long())
