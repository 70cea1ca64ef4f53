"""Proofs about tensors of any size: one generic element instead of every element.

The element-wise encoding (`symbolic.py`, `encode.py`) gives every element of
every tensor its own term and its own Z3 variable, so it stops at
`symbolic.MAX_ELEMENTS`.  This module keeps a tensor whole: a
:class:`GTensor` is a hash-consed *tensor term* (a leaf, a constant, an
element-wise operation with numpy broadcasting, a Concat, one half of a
Split) with a static dtype and shape, and the encoder asks Z3 about the
element at a symbolic index.  Nothing grows with the element count: a
1,000,000-element `Add` is one term and one Z3 formula.

The search, the error discipline, the guarded initialization cases and the
opaque values are the element-wise engine's (`GenericAlgebra` overrides only
how tensors are built), so everything said in `symbolic.py` about why the
symbolic search is sound holds unchanged; what is new is how a value is
compared, below.

Soundness argument
------------------
Write ⟦v⟧σ for the concrete tensor that a GTensor v denotes at σ, and
e(v, i)σ for its element at index i (i ranges over the index set I(S) of
v's static shape S).

1. *Leaves are whole tensors.*  A feed or initial value x of shape S is one
   uninterpreted function `x : Int^rank(S) -> sort(dtype)` (a scalar is a
   constant).  Every concrete tensor of shape S is the restriction of some
   such function to I(S), and every function restricts to a tensor of shape
   S: quantifying over the functions is quantifying over σ (values outside
   I(S) are never read, see 3).

2. *Element equations.*  For each kind of GTensor, e(v, i) is written with
   the elements of its arguments at indices computed from i:
   - element-wise f(a, b) of result shape R: e = f(e(a, πa(i)), e(b, πb(i)))
     where π is numpy's broadcasting map (right-aligned axes; an axis of
     size 1 reads index 0, any other axis the same coordinate as R's).  The
     map depends only on the argument's shape and R, so one leaf read
     through different paths is read at the same index: the generic element
     *is* the same element everywhere;
   - Concat(a, b) (1-D): e = If(j < |a|, e(a, j), e(b, j - |a|));
   - Split(a), half k of length h: e = e(a, j + k*h);
   - Const: its scalar for a splat constant, an If-chain on the flat index
     for a small one, otherwise an uninterpreted function named by the
     constant's contents (equal constants are the same symbol; a proof valid
     for every interpretation holds for the real contents, and a
     counterexample is confirmed concretely before it counts);
   - the scalar operations are `encode.Encoder.scalar_op`, the element-wise
     engine's exact numpy semantics (BitVec wrap-around, IEEE RNE, the
     registry's NaN and signed-zero rules for Max/Min: on float32/float64
     the tie depends on the flat index of i in R, an If on it,
     `GenericEncoder._extremum_element`), and for TensorFlow's RealDiv,
     Sqrt, Abs, Square and SquaredDifference (`EXTRA`) the IEEE operations
     numpy computes for them (tested against numpy on special values).
   Each equation holds for every i in I(R) by numpy's definition of the
   operation, and maps indices of I(R) into the arguments' index sets, so
   by induction e(v, i) = ⟦v⟧σ[i] for every i in I(R).

3. *Equality is a universal statement, asked only negatively.*  Two values
   of one dtype and shape R are equal (SPEC section 2) iff ∀i ∈ I(R):
   e(a, i) = e(b, i), with SMT-LIB `=` on floats (one NaN, ±0 distinct),
   exactly as the element-wise encoder compares one element.  The checker
   uses an equality only under one negation: a query is ∃σ: ∧_u ¬(t' = u)
   (`check._Checker.query`; `minimize` only adds constraints to it).  Under
   that negation ∀i becomes ∃i, and the query stays existential, so
   `GenericEncoder.eq` returns "i ∈ I(R) → e(a, i) = e(b, i)" for fresh
   index constants i (a Skolem constant: the negation is i ∈ I(R) ∧ e(a, i)
   ≠ e(b, i)).  The same pair (a, b) may reuse its constants wherever it
   occurs: every occurrence is the same formula, so one witness serves all.
   Hence an `unsat` query is unsat with the real ∀: a `sound` verdict is a
   proof for every σ and every element.  A dtype or shape mismatch, an
   error value against a tensor, or two different constants, are decided
   statically as the element-wise encoder decides them.  This is why the
   returned formula must never be used positively: `eq` is not a formula
   of equality in general, only one whose negation is equisatisfiable.

4. *Errors are whole-tensor properties.*  Whether a value is an error
   (uninitialized, shape-mismatch, dtype-mismatch) never depends on an
   element: kinds are computed from dtypes and shapes by applying the real
   function to zeros (`Algebra._result_kinds`), exactly as in the element-
   wise engine; an uninitialized variable is a guarded case of the whole
   tensor.  So errors are never asked of the generic element.

5. *Everything else is uninterpreted.*  A function with no encoding (MatMul,
   Softmax, reductions, a user's function), or a value computed from one,
   is an `Opaque` value whose Z3 form is an uninterpreted function of its
   arguments, in the uninterpreted sort Val.  A scalar GTensor enters it as
   its element; a larger one as a term of Val that follows its structure
   (`GenericEncoder.whole`): a leaf or a large constant is a constant of
   Val, an operation an uninterpreted function of its arguments' terms.
   The real values are one interpretation of all these symbols (Val holds
   every tensor; each symbol is the real operation, a function of its
   arguments' values because every operation is deterministic), and no
   formula relates a leaf's Val constant to its elements, so the real σ
   with the real interpretation satisfies every formula the real run does:
   an uninterpreted function can make a proof fail (f(2a) = f(a + a) is not
   proved), never make a wrong `sound`.  A model that relies on one is
   confirmed by the concrete oracle (`check._Checker.confirm`) or
   discarded.  (`WHOLE = "lambda"` uses the array of elements instead,
   which proves such congruences at a much higher solver cost.)

When this path gives up (a tensor too large even to compute kinds, the
solver undecided), the checker falls back to concrete testing and says
`no-counterexample` or `unknown`, never `sound` on a guess.

Which engine the checker uses (`tensors_mode`, set with `with
generic.tensors(MODE):`): "auto" (the default) runs the element-wise
engine and turns to this one when it meets a tensor over its limit, a dtype
it has no terms for, or more accessed variables than its limit
(check.MAX_FLAGGED_VARIABLES; this engine allows FLAGGED_FACTOR times as
many); "elementwise" never turns here (the previous engine, for
comparisons); "generic" always starts here (the differential tests against
the element-wise engine).  `stats["generic"]` in a verdict says why it ran.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import math
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import z3

from tfsem.oracle import functions as fns
from tfsem.oracle import opdefs
from tfsem.oracle.program import TensorType
from tfsem.oracle.values import BITS_DTYPES, DTYPES, FLOAT_DTYPES, Error, Tensor

from .encode import Encoder, scalar_from_model, symbol, z3_const
from .symbolic import ELEMENTWISE, Algebra, Guarded, Opaque, SymbolicLimit

#: Largest number of elements of a tensor whose kind (error or dtype/shape)
#: is computed by applying the function to zeros (larger -> SymbolicLimit).
MAX_KIND_ELEMENTS = 1 << 24
#: A non-splat constant of at most this many elements is written out as an
#: If-chain on its flat index; a larger one is an uninterpreted function.
CONST_INLINE = 64
#: How a whole tensor enters an uninterpreted function (GenericEncoder.whole):
#: "structural" (fast; proves f(t) = f(t') when t and t' are the same term)
#: or "lambda" (an array of its elements: also when they are equal terms
#: element by element, at a much higher solver cost)
WHOLE = "structural"
#: The generic engine lets this many times check.MAX_FLAGGED_VARIABLES
#: variables start initialized or not in one search (its terms stay small
#: with more cases; guarded values stay bounded by symbolic.MAX_GUARD_LEAVES
#: cases each): a Keras Adam step accesses 14 variables
FLAGGED_FACTOR = 2
#: dtypes the generic element has a Z3 model for (others: opaque results)
ENCODED = frozenset(DTYPES)

#: TensorFlow's element-wise ops that numpy computes bit for bit as
#: TensorFlow does, with their generic-element op: the functions with an
#: `Elementwise` encoding in the op registry (oracle/opdefs; this is a
#: snapshot of the built-ins, the checker itself asks the registry).  Their
#: errors depend on dtypes only (RealDiv and Sqrt have no integer kernel),
#: so kinds from zeros are right.  Encoded by the generic element only; the
#: element-wise engine keeps them opaque.
EXTRA = {name: enc.key for name, f in fns.registered(None).items()
         if (enc := opdefs.elementwise_of(f)) is not None}

_FOLD = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "neg": np.negative,
         # whole tensors: the tie of zeros by flat index (fns._extremum); the
         # generic element reads it from its index (GenericEncoder._element)
         "max": lambda a, b: fns._extremum(np, a, b, "max"),
         "min": lambda a, b: fns._extremum(np, a, b, "min"),
         # the Z3 element op of a tail element (never a GTensor's op)
         "max_tail": lambda a, b: fns._extremum_tie(np, a, b, "max", "first"),
         "min_tail": lambda a, b: fns._extremum_tie(np, a, b, "min", "first")}
_COMMUTATIVE = {d: frozenset({"add", "mul"}) if d in FLOAT_DTYPES
                else frozenset({"add", "mul", "max", "min"}) for d in DTYPES}


def _fold(op: str):
    """numpy's computation of element op `op` (the language's, or a registry encoding's)."""
    f = _FOLD.get(op)
    return f if f is not None else opdefs.encoding(op).fold


def _result_dtype(op: str, dtypes: tuple[str, ...]) -> str:
    """The dtype of element op `op`'s result on operands of `dtypes`."""
    enc = None if op in _FOLD else opdefs.encoding(op)
    return enc.result(dtypes) if enc is not None and enc.result is not None else dtypes[0]


def _operand_dtype(v: "GTensor") -> str:
    """The dtype an element op's encoding is given (Elementwise.result): the
    first operand's where the result's differs from the operands', else the
    result's."""
    enc = None if v.op in _FOLD else opdefs.encoding(v.op)
    return v.args[0].dtype if enc is not None and enc.result is not None else v.dtype


def _commutative(op: str, dtype: str) -> bool:
    if op in _FOLD:
        return op in _COMMUTATIVE.get(dtype, ())
    enc = opdefs.encoding(op)
    return enc is not None and dtype in enc.commutative


class GTensor:
    """A tensor term of static dtype and shape.  `op` is "leaf" (`value` =
    (kind, name), kind "feed" or "init"), "const" (`value` the Tensor), an
    element-wise op name of `symbolic.ELEMENTWISE` (`args` its operands,
    broadcast to `shape`), "concat" (`args` two 1-D tensors) or "split"
    (`args` one 1-D tensor, `value` the half: 0 or 1).  Interned by
    :class:`GenericAlgebra`: equal structure is the same object."""

    __slots__ = ("op", "dtype", "shape", "args", "value", "serial", "size", "__weakref__")
    #: the element-wise engine's per-element terms: a GTensor has none (the
    #: checker's per-element σ sampling and minimization skip it)
    elems: tuple = ()

    def __init__(self, op: str, dtype: str, shape: tuple[int, ...], args: tuple["GTensor", ...],
                 value: Any, serial: int):
        self.op, self.dtype, self.shape, self.args, self.value = op, dtype, shape, args, value
        self.serial = serial
        self.size = math.prod(shape)

    def __repr__(self) -> str:
        kind = f"{self.dtype}{list(self.shape)}"
        if self.op == "leaf":
            k, name = self.value
            return f"<{kind} {'$' if k == 'feed' else ''}{name}>"
        if self.op == "const":
            return f"<{kind} const>"
        if self.op == "split":
            return f"split{self.value}({self.args[0]!r})"
        return f"{self.op}({', '.join(map(repr, self.args))})"


def is_generic(v: Any) -> bool:
    return isinstance(v, GTensor)


def _splat(t: Tensor) -> Any | None:
    """The one element of a constant all of whose elements are the same value
    (bit for bit, any NaN equal to any NaN), else None."""
    flat = t.array.reshape(-1)
    if flat.size == 0:
        return None
    first = flat[0]
    if flat.dtype.kind == "f" and np.isnan(first):
        return first if np.isnan(flat).all() else None
    same = flat.view(np.dtype(f"u{flat.dtype.itemsize}")) == np.array(first).view(
        np.dtype(f"u{flat.dtype.itemsize}"))
    return first if bool(same.all()) else None


class GenericAlgebra(Algebra):
    """The symbolic algebra over whole tensors (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._gtensors: dict[tuple, GTensor] = {}

    def _intern(self, op: str, dtype: str, shape: tuple[int, ...], args: tuple = (),
                value: Any = None, vkey: Any = None) -> GTensor:
        key = (op, dtype, shape, tuple(map(id, args)), vkey if vkey is not None else value)
        g = self._gtensors.get(key)
        if g is None:
            g = self._gtensors[key] = GTensor(op, dtype, shape, args, value, len(self._gtensors))
        return g

    def leaf(self, kind: str, name: str, typ: TensorType) -> GTensor:  # type: ignore[override]
        return self._intern("leaf", typ.dtype, tuple(typ.shape), (), (kind, name))

    def constant(self, value: Tensor) -> GTensor:  # type: ignore[override]
        return self._intern("const", value.dtype, tuple(value.shape), (), value, vkey=value._key)

    def constant_value(self, a: Any) -> Tensor | None:  # type: ignore[override]
        return a.value if isinstance(a, GTensor) and a.op == "const" else None

    def has_encoding(self, fn: fns.Function) -> bool:
        return super().has_encoding(fn) or opdefs.elementwise_of(fn) is not None

    def is_tensor(self, v: Any) -> bool:
        return isinstance(v, GTensor) or super().is_tensor(v)

    # -- kinds --------------------------------------------------------------

    def _result_kinds(self, fn: fns.Function, args: Sequence[Any],
                      attrs: Mapping[str, Any]) -> tuple:
        key = (fn.name, tuple(("E", a.reason) if isinstance(a, Error) else
                              ("O",) if isinstance(a, Opaque) else (a.dtype, a.shape) for a in args),
               fns.attrs_key(attrs) if attrs else "")
        kinds = self._kinds.get(key)
        if kinds is not None:
            return kinds
        shapes = [a.shape for a in args if isinstance(a, GTensor)]
        if any(math.prod(s) > MAX_KIND_ELEMENTS for s in shapes):
            raise SymbolicLimit(f"a tensor of more than {MAX_KIND_ELEMENTS} elements")
        if (fn.name in ELEMENTWISE or opdefs.elementwise_of(fn) is not None) \
                and len(shapes) == len(args):
            try:
                out = np.broadcast_shapes(*shapes)
            except ValueError:
                out = None
            if out is not None and math.prod(out) > MAX_KIND_ELEMENTS:
                raise SymbolicLimit(f"a broadcast result of {math.prod(out)} elements (more than "
                                    f"{MAX_KIND_ELEMENTS})")
        zeros = [Tensor(np.zeros(a.shape, DTYPES[a.dtype])) if isinstance(a, GTensor)
                 else a if isinstance(a, Error) else Error("opaque") for a in args]
        kinds = tuple(r if isinstance(r, Error) else (r.dtype, r.shape)
                      for r in fn.apply(zeros, attrs))
        self._kinds[key] = kinds
        return kinds

    def _apply(self, fn: fns.Function, args: Sequence[Any],
               attrs: Mapping[str, Any]) -> tuple:
        # a dtype with no Z3 model here: the function's result is opaque
        # (after the error discipline, which the base class applies first).
        # So is Select's with a condition along x's first axis only (its
        # encoding broadcasts as numpy does, which is Select's rule only for
        # a condition of x's shape or a scalar: oracle/opdefs/math.py)
        select_by_rows = (fn.name == "Select" and len(args) == 3
                          and all(isinstance(a, GTensor) for a in args)
                          and args[0].shape not in ((), args[1].shape))
        if (select_by_rows or any(isinstance(a, GTensor) and a.dtype not in ENCODED for a in args)) \
                and fn.name not in ("Identity", "Copy", "Snd", "SndSameShape"):
            for i in fn.strict():
                if isinstance(args[i], (Error, Opaque)):
                    return super()._apply(fn, args, attrs)
            name = fn.name + (fns.attrs_key(attrs) if attrs else "")
            return tuple(self.opaque(name, k, tuple(args)) for k in range(fn.n_out))
        return super()._apply(fn, args, attrs)

    # -- results ------------------------------------------------------------

    def _elements(self, fn: fns.Function, args: Sequence[Any],
                  attrs: Mapping[str, Any]) -> tuple[GTensor, ...]:
        name = fn.name
        if name in ("Const", "Identity", "Copy", "Snd", "SndSameShape"):
            # the same as for element terms (self.constant is this algebra's)
            return super()._elements(fn, args, attrs)
        if name == "Concat":
            a, b = args
            if (a.op == "split" and b.op == "split" and a.args[0] is b.args[0]
                    and (a.value, b.value) == (0, 1)):
                return (a.args[0],)
            return (self._intern("concat", a.dtype, (a.shape[0] + b.shape[0],), (a, b)),)
        if name == "Split":
            (a,) = args
            h = a.shape[0] // 2
            if a.op == "concat" and a.args[0].shape[0] == h:
                return a.args
            return tuple(self._intern("split", a.dtype, (h,), (a,), k) for k in (0, 1))
        return (self.elementwise(ELEMENTWISE.get(name) or fn.encoding.key, tuple(args)),)

    def elementwise(self, op: str, args: tuple[GTensor, ...]) -> GTensor:
        operand = args[0].dtype
        # (a comparison's result is bool, Select's its x's: `Elementwise.result`)
        dtype = _result_dtype(op, tuple(a.dtype for a in args))
        shape = tuple(np.broadcast_shapes(*(a.shape for a in args)))
        if all(a.op == "const" for a in args):
            with np.errstate(all="ignore"):
                r = _fold(op)(*(a.value.array for a in args))
            return self.constant(Tensor(np.asarray(r, dtype=DTYPES[dtype])))
        if _commutative(op, operand) and args[0].serial > args[1].serial:
            args = (args[1], args[0])
        return self._intern(op, dtype, shape, args)


# ---------------------------------------------------------------------------
# Z3


def _int(v: Any, ctx: z3.Context) -> z3.ArithRef:
    return z3.IntVal(v, ctx) if isinstance(v, int) else v


def _key(idx: tuple) -> tuple:
    return tuple(("c", v) if isinstance(v, int) else ("z", v.get_id()) for v in idx)


def _project(idx: tuple, arg_shape: tuple[int, ...], shape: tuple[int, ...]) -> tuple:
    """numpy's broadcasting map: the index into an argument of `arg_shape`
    read by the element at `idx` of a result of `shape` (right-aligned axes;
    an axis of size 1 reads index 0)."""
    d = len(shape) - len(arg_shape)
    return tuple(0 if n == 1 else idx[d + k] for k, n in enumerate(arg_shape))


class GenericEncoder(Encoder):
    """Encodes GTensors element by generic element (module docstring, 2-3);
    everything else as the element-wise Encoder does."""

    def __init__(self, order: dict[str, int] | None = None) -> None:
        super().__init__(order)
        self._gcache: dict[tuple, z3.ExprRef] = {}
        self._skolem: dict[tuple[int, int], tuple] = {}
        self._ufs: dict[GTensor, z3.FuncDeclRef | z3.ExprRef] = {}
        self._wholes: dict[GTensor, z3.ExprRef] = {}

    def sort(self, dtype: str) -> z3.SortRef:
        """An element's sort: the element-wise encoder's for every dtype of DTYPES;
        an uninterpreted sort for a dtype with no model here (its values are
        only ever compared: every operation on it is opaque, and the real
        values are one interpretation of the sort)."""
        if dtype in self.z3.sorts:
            return self.z3.sorts[dtype]
        return z3.DeclareSort(f"elem:{dtype}", self.ctx)

    def scalar_const(self, value: Any, dtype: str) -> z3.ExprRef:
        if dtype in ENCODED:
            return z3_const(value, dtype, self.z3)
        raw = np.asarray(value).tobytes().hex()
        return z3.Const(symbol("const", dtype, raw), self.sort(dtype))

    def scalar_op(self, op: str, dtype: str, args: list[z3.ExprRef]) -> z3.ExprRef:
        """The element-wise engine's operations, and those of the functions
        with an `Elementwise` encoding in the op registry (oracle/opdefs:
        TensorFlow's RealDiv, Sqrt, Abs, Square, SquaredDifference, ..., each
        tested against its value semantics on special values)."""
        enc = None if op in _FOLD else opdefs.encoding(op)
        if enc is None:
            return super().scalar_op(op, dtype, args)
        # (the z3 module with this check's context: checking/z3context.py)
        return enc.z3(self.z3.module, dtype, list(args))

    # -- the generic element ---------------------------------------------------

    def leaf_function(self, v: GTensor) -> z3.FuncDeclRef | z3.ExprRef:
        """The uninterpreted function (a constant for a scalar) that is leaf or
        large-constant tensor v."""
        f = self._ufs.get(v)
        if f is None:
            if v.op == "leaf":
                kind, name = v.value
                label = symbol("leaf", kind, name)
            else:  # named by every byte of the constant (a digest prefix could collide)
                digest = hashlib.sha256(repr(v.value._key).encode()).hexdigest()
                label = symbol("const", v.dtype, tuple(v.shape), digest)
            sort = self.sort(v.dtype)
            f = z3.Const(label, sort) if not v.shape else \
                z3.Function(label, *([z3.IntSort(self.ctx)] * len(v.shape)), sort)
            self._ufs[v] = f
        return f

    def element(self, v: GTensor, idx: tuple) -> z3.ExprRef:
        """e(v, idx): the element of v at idx (a tuple of Python ints and Z3
        integer terms, one per axis, within v's shape)."""
        key = (id(v), _key(idx))
        hit = self._gcache.get(key)
        if hit is not None:
            return hit[0]
        self.tick()
        e = self._element(v, idx)
        self._gcache[key] = (e, v)   # keep v alive: its id stays its own
        return e

    def _element(self, v: GTensor, idx: tuple) -> z3.ExprRef:
        if v.op == "leaf":
            f = self.leaf_function(v)
            return f if not v.shape else f(*(_int(k, self.ctx) for k in idx))
        if v.op == "const":
            if v.dtype not in ENCODED:
                return self.leaf_function(v) if not v.shape else \
                    self.leaf_function(v)(*(_int(k, self.ctx) for k in idx))
            return self._const_element(v, idx)
        if v.op == "concat":
            a, b = v.args
            (j,) = idx
            n = a.shape[0]
            if isinstance(j, int):
                return self.element(a, (j,)) if j < n else self.element(b, (j - n,))
            return z3.If(j < n, self.element(a, (j,)), self.element(b, (j - n,)))
        if v.op == "split":
            (a,) = v.args
            (j,) = idx
            return self.element(a, (j + v.value * v.shape[0],))
        args = [self.element(a, _project(idx, a.shape, v.shape)) for a in v.args]
        if v.op in ("max", "min") and v.dtype in fns.EXTREMUM_PACKET:
            return self._extremum_element(v, idx, args)
        return self.scalar_op(v.op, _operand_dtype(v), args)

    def _extremum_element(self, v: GTensor, idx: tuple, args: list) -> z3.ExprRef:
        """Max/Min on float32/float64 at idx: TensorFlow's tie of zeros is the
        second operand inside Eigen's whole packets (flat index below
        (n // P) * P) and the first in the scalar tail (fns._extremum)."""
        n = math.prod(v.shape)
        m = (n // fns.EXTREMUM_PACKET[v.dtype]) * fns.EXTREMUM_PACKET[v.dtype]
        packet = self.scalar_op(v.op, v.dtype, args)
        tail = self.scalar_op(v.op + "_tail", v.dtype, args)
        if m == n:
            return packet
        if m == 0:
            return tail
        flat: Any = 0
        for k, d in zip(idx, v.shape):
            flat = flat * d + k
        if isinstance(flat, int):
            return packet if flat < m else tail
        return z3.If(flat < m, packet, tail)

    def _const_element(self, v: GTensor, idx: tuple) -> z3.ExprRef:
        t: Tensor = v.value
        s = _splat(t)
        if s is not None:
            return z3_const(s, v.dtype, self.z3)
        flat = t.array.reshape(-1)
        if flat.size == 0:
            # an empty tensor has no element: the index ranges over nothing,
            # so any term serves (no constraint can ever select it)
            return z3_const(np.zeros((), dtype=t.array.dtype)[()], v.dtype, self.z3)
        if all(isinstance(k, int) for k in idx):
            return z3_const(t.array[tuple(idx)], v.dtype, self.z3)
        if flat.size > CONST_INLINE:
            return self.leaf_function(v)(*(_int(k, self.ctx) for k in idx))
        strides = [math.prod(v.shape[k + 1:]) for k in range(len(v.shape))]
        pos = z3.Sum([_int(k, self.ctx) * s for k, s in zip(idx, strides)]) if len(idx) > 1 \
            else _int(idx[0], self.ctx)
        e = z3_const(flat[-1], v.dtype, self.z3)
        for k in range(flat.size - 2, -1, -1):
            e = z3.If(pos == k, z3_const(flat[k], v.dtype, self.z3), e)
        return e

    def _index(self, shape: tuple[int, ...], label: str) -> tuple[tuple, z3.BoolRef]:
        idx = tuple(z3.Int(f"{label}.{k}", self.ctx) for k in range(len(shape)))
        rng = z3.And([z3.And(0 <= i, i < n) for i, n in zip(idx, shape)]) if idx else self.z3.true
        return idx, rng

    # -- values -------------------------------------------------------------------

    def eq(self, a: Any, b: Any) -> z3.BoolRef | bool:
        """Equality, for use under one negation only (module docstring, 3)."""
        if isinstance(a, Guarded) or isinstance(b, Guarded):
            return super().eq(a, b)   # distributes over the cases, calling back here
        if isinstance(a, GTensor) or isinstance(b, GTensor):
            if a is b:
                return True
            if not (isinstance(a, GTensor) and isinstance(b, GTensor)):
                if isinstance(a, Opaque) or isinstance(b, Opaque):
                    return self.as_val(a) == self.as_val(b)
                return False   # an error against a tensor
            if a.dtype != b.dtype or a.shape != b.shape:
                return False
            if a.op == "const" and b.op == "const":
                return False   # interned by contents: different constants differ
            if a.size == 0:
                return True
            key = (id(a), id(b))
            hit = self._skolem.get(key)
            if hit is None:
                idx, rng = self._index(a.shape, f"@i{len(self._skolem)}")
                e = self.element(a, idx) == self.element(b, idx)
                formula = e if not idx else z3.Implies(rng, e)
                hit = self._skolem[key] = (formula, a, b)
            return hit[0]
        return super().eq(a, b)

    def whole(self, v: GTensor) -> z3.ExprRef:
        """v as one Z3 value (an opaque function's argument): the scalar
        itself, else per WHOLE: the array λi. If(i in range, e(v, i), 0)
        ("lambda"), or a term of the sort Val built like v ("structural")."""
        w = self._wholes.get(v)
        if w is None:
            if not v.shape:
                w = self.element(v, ())
            elif WHOLE == "lambda":
                idx, rng = self._index(v.shape, f"@lambda{len(self._wholes)}")
                w = z3.Lambda(list(idx), z3.If(rng, self.element(v, idx), self.scalar_const(0, v.dtype)))
            else:
                w = self._structural(v)
            self._wholes[v] = w
        return w

    def _structural(self, v: GTensor) -> z3.ExprRef:
        """A tensor as a term of Val that follows its structure: a leaf or a
        large constant is a Val constant, an operation an uninterpreted
        function (named by the operation and the result's kind) of its
        arguments.  The real values are one interpretation: Val holds every
        tensor, and each function is the operation itself (deterministic,
        so a function of its arguments' values)."""
        kind = f"{v.dtype}{list(v.shape)}"
        if v.op == "leaf":
            kind_, name = v.value
            return z3.Const(symbol("tensor-leaf", kind_, name), self.val_sort)
        if v.op == "const":
            digest = hashlib.sha256(repr(v.value._key).encode()).hexdigest()
            return z3.Const(symbol("tensor-const", kind, digest), self.val_sort)
        args = [self.whole(a) for a in v.args]
        name = symbol("tensor-op", v.op, repr(v.value) if v.op == "split" else "", kind)
        return self._apply(name, args, self.val_sort)

    def as_val(self, v: Any) -> z3.ExprRef:
        if isinstance(v, GTensor):
            self.opaque_used = True
            w = self.whole(v)
            return self._apply(f"box:{self._kind(v)}", [w], self.val_sort)
        return super().as_val(v)

    def _flat(self, v: Any) -> list[z3.ExprRef]:
        if isinstance(v, GTensor):
            return [self.whole(v)]
        return super()._flat(v)

    # -- models ---------------------------------------------------------------------

    def tensor_from_model(self, model: z3.ModelRef, value: Any) -> Tensor:
        """The concrete tensor a model gives a leaf tensor (a candidate σ:
        the checker confirms it concretely before it counts)."""
        if not isinstance(value, GTensor):
            return super().tensor_from_model(model, value)
        np_dtype = DTYPES[value.dtype]
        arr = np.zeros(value.shape, np_dtype)
        if value.dtype not in ENCODED:
            return Tensor(arr, value.dtype)   # zeros: the candidate is confirmed concretely
        f = self.leaf_function(value)
        if not value.shape:
            return Tensor(np.array(scalar_from_model(model, f, value.dtype), np_dtype), value.dtype)
        try:
            interp = model[f]
        except z3.Z3Exception:
            interp = None
        if isinstance(interp, z3.FuncInterp):
            try:
                default = interp.else_value()
                if default is not None and _is_numeral(default):
                    arr[...] = scalar_from_model(model, default, value.dtype)
                for k in range(interp.num_entries()):
                    entry = interp.entry(k)
                    where = [entry.arg_value(j) for j in range(entry.num_args())]
                    if not all(z3.is_int_value(w) for w in where):
                        continue
                    pos = tuple(w.as_long() for w in where)
                    if all(0 <= p < n for p, n in zip(pos, value.shape)):
                        arr[pos] = scalar_from_model(model, entry.value(), value.dtype)
            except (z3.Z3Exception, ValueError, TypeError):
                pass   # a model we cannot read: zeros (the candidate is confirmed anyway)
        return Tensor(arr, value.dtype)


def _is_numeral(e: z3.ExprRef) -> bool:
    return z3.is_bv_value(e) or isinstance(e, z3.FPNumRef)


__all__ = ["CONST_INLINE", "GTensor", "GenericAlgebra", "GenericEncoder", "MAX_KIND_ELEMENTS",
           "is_generic", "tensors", "tensors_mode"]


# ---------------------------------------------------------------------------
# Which engine the checker uses for tensors

_MODES = ("auto", "elementwise", "generic")
_MODE: contextvars.ContextVar[str] = contextvars.ContextVar("tfsem_tensors", default="auto")


def tensors_mode() -> str:
    """The current mode: "auto" (element terms, the generic element when a
    tensor is over the element-wise limit), "elementwise" (never the generic
    element: the previous engine) or "generic" (always)."""
    return _MODE.get()


@contextlib.contextmanager
def tensors(mode: str) -> Iterator[None]:
    """Check with tensors handled as `mode` says (see tensors_mode) inside
    the block (differential tests and benchmarks compare the engines)."""
    if mode not in _MODES:
        raise ValueError(f"unknown tensors mode {mode!r} ({', '.join(_MODES)})")
    token = _MODE.set(mode)
    try:
        yield
    finally:
        _MODE.reset(token)


# ---------------------------------------------------------------------------
# Concrete evaluation on generated σ (the checker's cheap candidates)

#: the checker samples σ for GTensors only when the leaves of a check have at
#: most this many elements over all samples (memory and time stay small)
MAX_SAMPLED_ELEMENTS = 1 << 24


def can_sample(leaves: Sequence[Any], samples: int) -> bool:
    return sum(v.size for v in leaves if isinstance(v, GTensor)) * samples <= MAX_SAMPLED_ELEMENTS


def sample_leaf(table: dict, leaf: GTensor, values: Sequence[Tensor]) -> None:
    """Record a leaf's values on the samples: an array of shape (n, *shape)."""
    table[leaf] = np.stack([v.array for v in values], axis=0)


def evaluate(v: GTensor, leaves: Mapping[Any, np.ndarray], memo: dict) -> np.ndarray | None:
    """v on every sample at once: an array of shape (n or 1, *v.shape), with
    numpy's own operations (None when a leaf has no samples)."""
    hit = memo.get(v)
    if hit is not None or v in memo:
        return hit
    if v.op == "leaf":
        r = leaves.get(v)
    elif v.op == "const":
        r = v.value.array[None]
    else:
        args = [evaluate(a, leaves, memo) for a in v.args]
        if any(a is None for a in args):
            r = None
        elif v.op == "concat":
            a, b = (np.broadcast_to(x, (max(args[0].shape[0], args[1].shape[0]),) + x.shape[1:])
                    for x in args)
            r = np.concatenate([a, b], axis=1)
        elif v.op == "split":
            h = v.shape[0]
            r = args[0][:, v.value * h:(v.value + 1) * h]
        else:
            rank = len(v.shape)
            padded = [x.reshape(x.shape[:1] + (1,) * (rank - (x.ndim - 1)) + x.shape[1:]) for x in args]
            with np.errstate(all="ignore"):
                # (Max/Min: the tie by flat index within each sample)
                r = (fns._extremum(np, padded[0], padded[1], v.op, lead=1)
                     if v.op in ("max", "min") else _fold(v.op)(*padded))
    memo[v] = r
    return r


def sample_equal(a: Any, b: Any, leaves: Mapping[Any, np.ndarray], memo: dict,
                 n: int) -> np.ndarray | None:
    """SPEC equality of two GTensors (or a GTensor and an error) on each of n
    samples; None when they cannot be evaluated."""
    if isinstance(a, Error) or isinstance(b, Error):
        return np.zeros(n, dtype=bool)   # a tensor is never an error
    if not (isinstance(a, GTensor) and isinstance(b, GTensor)):
        return None
    if a.dtype != b.dtype or a.shape != b.shape:
        return np.zeros(n, dtype=bool)
    if a.dtype not in ENCODED:
        return None
    va, vb = evaluate(a, leaves, memo), evaluate(b, leaves, memo)
    if va is None or vb is None:
        return None
    va, vb = np.broadcast_to(va, (n,) + a.shape), np.broadcast_to(vb, (n,) + a.shape)
    if a.dtype in FLOAT_DTYPES:
        bits = BITS_DTYPES[a.dtype]
        with np.errstate(invalid="ignore"):
            nan = np.isnan(va) & np.isnan(vb)
        same = (va.view(bits) == vb.view(bits)) | nan
    else:
        same = va == vb
    return same.reshape(n, -1).all(axis=1)
