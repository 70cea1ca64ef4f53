"""The symbolic oracle: the fast oracle's search, run on terms instead of values.

Feeds and initial values become symbolic leaves; functions build hash-consed
terms; an Assign builds a term over the variable's old value.  No value decides
which nodes may fire (seed 000: firing depends on the presence of inputs, never
on their contents), so the search explores the same schedules for every σ, and
its result, a set of term tuples, is the outcome set for all inputs at once.

Why the reuse of `explore.py` is sound.  The search merges two states when
their keys are equal.  Keys hold terms, and terms are interned, so equal keys
mean structurally equal terms, which are equal values at every σ: a merge the
symbolic search makes, the concrete one makes at every σ too.  The concrete
search may merge more (two different terms may have the same value at some σ);
then the symbolic set lists more outcomes, which evaluate to the same concrete
values, never fewer.

Which values are static.  Within one *initialization pattern* (which variables
start uninitialized), the kind of every value (an error, or a tensor of a
given dtype and shape) does not depend on σ: feeds and initial values have
declared types, and every built-in function decides errors from dtypes and
shapes alone.  So a symbolic value is

* :class:`Error` (the oracle's own error value: uninitialized, dtype or shape
  mismatch), or
* :class:`SymTensor`: a dtype, a shape and one scalar :class:`Term` per element
  (so 1-D tensors, Concat and Split are exact: they move elements), or
* :class:`Opaque`: the result of a function with no encoding (a user's), or of
  anything computed from one.  Its kind is unknown; the encoder turns it into an
  uninterpreted function application, which is sound for proofs, and a
  counterexample found through one is confirmed concretely before it counts.

The kinds of a built-in function's results are computed by applying the real
function (`Function.apply`) to zero tensors of the arguments' kinds, so the
error discipline is the oracle's by construction.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from tfsem.oracle import explore, opdefs
from tfsem.oracle.opdefs import array as array_ops
from tfsem.oracle import functions as fns
from tfsem.oracle.explore import Budget
from tfsem.oracle.outcomes import OUTPUTS
from tfsem.oracle.program import Program, TensorType
from tfsem.oracle.values import (DTYPE_MISMATCH, DTYPES, FLOAT_DTYPES, SHAPE_MISMATCH,
                                 UNINITIALIZED, Error, Tensor)

#: Largest number of elements of one symbolic tensor (larger -> SymbolicLimit).
MAX_ELEMENTS = 4096


class SymbolicLimit(RuntimeError):
    """The symbolic path cannot handle this program (too large a tensor...)."""


def _too_many_elements(size: int) -> str:
    return f"a tensor of {size} elements (the symbolic limit is {MAX_ELEMENTS})"


class NeedsGeneric(SymbolicLimit):
    """The element-wise terms cannot represent a tensor of this program (more
    than MAX_ELEMENTS elements, or a dtype with no element terms): the
    generic-element engine (`generic.py`) may."""


#: dtypes the element-wise terms and their Z3 encoding model exactly: all
ELEMENT_DTYPES = frozenset(DTYPES)


# ---------------------------------------------------------------------------
# Terms


class Term:
    """A scalar term of one of DTYPES.  Interned by :class:`Algebra`: two terms
    are structurally equal exactly when they are the same object.

    `op` is "feed" or "init" (a leaf: `value` = (name, flat index)), "const"
    (`value` a numpy scalar), or a function: "add", "sub", "mul", "neg",
    "max", "min", and on float32/float64 "max_tail", "min_tail" (`args` the
    operands; "max"/"min" resolve a tie of +0.0 and -0.0 as inside Eigen's
    whole packets, the "_tail" ops as in the scalar tail: fns.EXTREMUM_OPS,
    chosen by the element's flat index in `Algebra._elements`)."""

    __slots__ = ("op", "dtype", "args", "value", "serial", "__weakref__")

    def __init__(self, op: str, dtype: str, args: tuple["Term", ...], value: Any, serial: int = 0):
        self.op, self.dtype, self.args, self.value = op, dtype, args, value
        self.serial = serial   # creation order within its Algebra: a stable tie-breaker

    def __repr__(self) -> str:
        if self.op in ("feed", "init"):
            name, idx = self.value
            return f"{'$' if self.op == 'feed' else ''}{name}[{idx}]"
        if self.op == "const":
            return repr(self.value.item())
        return f"{self.op}({', '.join(map(repr, self.args))})"


class SymTensor:
    """A tensor of static dtype and shape whose elements are terms (C order).
    Interned: equal structure means the same object."""

    __slots__ = ("dtype", "shape", "elems", "__weakref__")

    def __init__(self, dtype: str, shape: tuple[int, ...], elems: tuple[Term, ...]):
        self.dtype, self.shape, self.elems = dtype, shape, elems

    def __repr__(self) -> str:
        if not self.shape:
            return f"<{self.dtype} {self.elems[0]!r}>"
        return f"<{self.dtype}{list(self.shape)} {list(self.elems)!r}>"


class Opaque:
    """The result `port` of applying `op` to `args` where the result's kind is
    not known statically (a function with no encoding, or an argument that is
    itself opaque).  `op` is a function name, or "Assign-f" for the new value of
    a variable after Assign-f; its arguments are then (w, v, current): f(w, v),
    or the variable's current value on an error (semantics._assigned)."""

    __slots__ = ("op", "port", "args", "__weakref__")

    def __init__(self, op: str, port: int, args: tuple[Any, ...]):
        self.op, self.port, self.args = op, port, args

    def __repr__(self) -> str:
        return f"{self.op}#{self.port}({', '.join(map(repr, self.args))})"


class Guarded:
    """A value that depends on whether variable `var` starts uninitialized:
    `uninit` if it does, `init` if it does not (seed 000, footnote 4: an
    uninitialized variable holds an error value).  The initial value of a
    variable is Guarded(x, <uninitialized>, leaf tensor); functions and
    Assigns distribute over the two cases, so one search covers every
    initialization pattern at once, and each branch has static kinds again.

    Normal form (an ordered decision tree, interned): the branches mention
    only variables after `var` in the Algebra's flag order, and differ."""

    __slots__ = ("var", "uninit", "init", "leaves", "__weakref__")

    def __init__(self, var: str, uninit: Any, init: Any, leaves: int):
        self.var, self.uninit, self.init, self.leaves = var, uninit, init, leaves

    def __repr__(self) -> str:
        return f"({self.var} uninitialized ? {self.uninit!r} : {self.init!r})"


SymValue = Error | SymTensor | Opaque | Guarded

#: Largest number of cases of one guarded value (larger -> SymbolicLimit).
MAX_GUARD_LEAVES = 256

_FOLD = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "neg": np.negative,
         # the registry's Max and Min, one element at a time: "max"/"min" an
         # element inside Eigen's whole packets (a tie of zeros: fns.ZERO_TIE),
         # "max_tail"/"min_tail" one in the scalar tail (fns.ZERO_TIE_TAIL)
         **{k: (lambda a, b, op=op, tie=tie: fns._extremum_tie(np, a, b, op, tie))
            for k, (op, tie) in fns.EXTREMUM_OPS.items()}}

#: Operations whose operands may be put in a canonical order, because the
#: results are equal under SPEC equality.  Float Add and Mul are commutative
#: (IEEE 754: only a NaN's payload may depend on the order, and all NaNs are
#: equal); float Max and Min are not (numpy returns one operand on a tie of
#: +0.0 and -0.0).
_COMMUTATIVE = {d: frozenset({"add", "mul"}) if d in FLOAT_DTYPES
                else frozenset({"add", "mul", "max", "min"}) for d in DTYPES}

#: Built-in functions the encoder knows, by registry name, with their
#: elementwise op ("" for the structural ones).
ELEMENTWISE = {"Add": "add", "Sub": "sub", "Mul": "mul", "Neg": "neg", "Max": "max", "Min": "min"}
STRUCTURAL = ("Const", "Identity", "Copy", "Snd", "SndSameShape", "Concat", "Split")

# The registry entries the encodings describe, captured at import: a function
# a user re-registers under a built-in name is treated as having no encoding.
_BUILTIN_FUNCTIONS = {name: fns.lookup(name) for name in (*ELEMENTWISE, *STRUCTURAL)}


def has_encoding(fn: fns.Function) -> bool:
    """Whether `fn` is one of the built-ins the encoder describes exactly."""
    return _BUILTIN_FUNCTIONS.get(fn.name) is fn and fn.pure


def _leaves(v: Any) -> int:
    return v.leaves if isinstance(v, Guarded) else 1


def _value_key(v: Any) -> tuple:
    return ("E", v.reason) if isinstance(v, Error) else ("V", id(v))


#: Opaque functions whose two operands may be put in a canonical order.  An
#: opaque value stands for the function applied to its arguments' values, so
#: writing f(b, a) as f(a, b) is sound exactly when f(a, b) = f(b, a) for all
#: values under SPEC equality.  For these it holds on tensor arguments: Add
#: and Mul are numpy's add and multiply, commutative on every dtype (integers
#: wrap the same way either order; IEEE 754 addition and multiplication are
#: commutative, only a NaN's payload may depend on the order, and all NaNs are
#: equal), their broadcast shape is symmetric, and so are the errors they
#: raise (dtype mismatch, shapes that do not broadcast, no bool kernel); the
#: `.ftz` variants flush both arguments and the result alike
#: (oracle/functions.py flushed_variant).  On error *arguments* they are not:
#: f(e1, e2) is e1 (the first strict argument's error), so the order is made
#: canonical only where one operand is certainly a tensor (then at most one
#: is an error, which either order gives).
#: Max and Min are not among them (a tie of +0.0 and -0.0 returns one operand).
#: (They become opaque when an argument is opaque, or on a dtype the generic
#: element has no model of; Add.ftz and Mul.ftz have no encoding at all.)
COMMUTATIVE_OPAQUE = frozenset({"Add", "Mul", "Add.ftz", "Mul.ftz"})


def commutes_opaque(op: str) -> bool:
    """Whether function `op` is one of COMMUTATIVE_OPAQUE as tfsem defines
    it (not a function a user registered under that name)."""
    if op not in COMMUTATIVE_OPAQUE:
        return False
    f = fns.lookup(op)
    return f is not None and getattr(f.impl, "__module__", None) == fns.__name__


_commutes = commutes_opaque


#: Functions that are another function where their operands' shapes
#: broadcast (and a value of their own where not): Equal and NotEqual with
#: TensorFlow's incompatible_shape_error=false (oracle/opdefs/math.py)
LENIENT = {"Equal.lenient": "Equal", "NotEqual.lenient": "NotEqual"}


def _is_tfsems(f: fns.Function) -> bool:
    """Whether function f is one tfsem defines (not one a user registered)."""
    return getattr(f.impl, "__module__", "").startswith("tfsem.")


def _order_key(v: Any) -> tuple:
    """A total order on interned symbolic values within one check (errors by
    reason, the rest by identity: interned, so equal values are one object)."""
    return (0, v.reason, 0) if isinstance(v, Error) else (1, "", id(v))


class Algebra:
    """The interning table of one check, and the symbolic functions over it."""

    def __init__(self) -> None:
        self._terms: dict[tuple, Term] = {}
        self._tensors: dict[tuple, SymTensor] = {}
        self._opaque: dict[tuple, Opaque] = {}
        self._kinds: dict[tuple, tuple] = {}
        self._applied: dict[tuple, tuple] = {}
        self._guards: dict[tuple, Guarded] = {}
        self.flag_order: dict[str, int] = {}
        self.leaves: list[Term] = []
        #: the budget of the search in progress (symbolic_outcomes sets it):
        #: one state may apply functions to tensors of thousands of elements,
        #: and the search looks at the clock only every 256 states, so the
        #: functions look at it too
        self.budget: Budget | None = None
        self._misses = 0
        #: a Write that changes a variable's shape stops the proof (assign):
        #: set by the checker where either program has an Assign-SndSameShape
        self.shape_guard = False

    def _check_time(self) -> None:
        self._misses += 1
        budget = self.budget
        if (self._misses & 15 == 0 and budget is not None
                and time.monotonic() - budget.started > budget.max_seconds):
            raise explore.BudgetExceeded("seconds", budget.max_seconds, budget.states)

    # -- construction -------------------------------------------------------

    def term(self, op: str, dtype: str, args: tuple[Term, ...] = (), value: Any = None,
             vkey: Any = None) -> Term:
        key = (op, dtype, tuple(map(id, args)), vkey if vkey is not None else value)
        t = self._terms.get(key)
        if t is None:
            t = self._terms[key] = Term(op, dtype, args, value, len(self._terms))
            if op in ("feed", "init"):
                self.leaves.append(t)
        return t

    def const(self, scalar: Any, dtype: str) -> Term:
        v = np.array(scalar, dtype=DTYPES[dtype])
        if dtype in FLOAT_DTYPES and np.isnan(v.astype(np.float64)):
            v = np.array(np.nan, dtype=DTYPES[dtype])
        return self.term("const", dtype, (), v[()], vkey=v.tobytes())

    def apply_elem(self, op: str, args: tuple[Term, ...]) -> Term:
        dtype = args[0].dtype
        if all(a.op == "const" for a in args):
            with np.errstate(all="ignore"):
                r = _FOLD[op](*(np.array(a.value) for a in args))
            return self.const(r, dtype)
        if op in _COMMUTATIVE[dtype] and args[0].serial > args[1].serial:
            args = (args[1], args[0])
        return self.term(op, dtype, args)

    def tensor(self, dtype: str, shape: tuple[int, ...], elems: Iterable[Term]) -> SymTensor:
        elems = tuple(elems)
        if len(elems) > MAX_ELEMENTS:
            raise NeedsGeneric(_too_many_elements(len(elems)))
        key = (dtype, shape, tuple(map(id, elems)))
        t = self._tensors.get(key)
        if t is None:
            t = self._tensors[key] = SymTensor(dtype, shape, elems)
        return t

    def leaf(self, kind: str, name: str, typ: TensorType) -> SymTensor:
        """The symbolic value of feed `name` (kind "feed") or of the initial
        value of variable `name` (kind "init")."""
        _require_element_dtype(typ.dtype, f"{'feed' if kind == 'feed' else 'variable'} {name!r}")
        size = math.prod(typ.shape)
        if size > MAX_ELEMENTS:
            # (`tensor`'s own refusal, before its elements are made: a large
            # variable's leaf made one term per element, up to a hundred
            # thousand, only to raise this; the terms went nowhere, since the
            # refusal leaves the leaf unbound and the check proves again on a
            # fresh algebra or gives up)
            raise NeedsGeneric(_too_many_elements(size))
        return self.tensor(typ.dtype, tuple(typ.shape),
                           (self.term(kind, typ.dtype, (), (name, i)) for i in range(size)))

    def constant(self, value: Tensor) -> SymTensor:
        _require_element_dtype(value.dtype, "a constant")
        flat = value.array.reshape(-1)
        return self.tensor(value.dtype, value.shape, (self.const(x, value.dtype) for x in flat))

    def opaque(self, op: str, port: int, args: tuple[Any, ...]) -> Opaque:
        if len(args) == 2 and _commutes(op) and _order_key(args[1]) < _order_key(args[0]) \
                and (self.is_tensor(args[0]) or self.is_tensor(args[1])):
            # one canonical order of the operands (see COMMUTATIVE_OPAQUE):
            # f(a, b) and f(b, a) are one opaque value, so a rewrite that only
            # swaps them (Grappler's canonicalization of commutative ops)
            # keeps every term, and congruence proves it.  Only where one
            # operand is certainly a tensor: with two operands that may each
            # be an error (opaque values, guarded ones) the result is the
            # FIRST operand's error, which a swap changes
            args = (args[1], args[0])
        key = (op, port, tuple(_value_key(a) for a in args))
        o = self._opaque.get(key)
        if o is None:
            o = self._opaque[key] = Opaque(op, port, args)
        return o

    def is_tensor(self, v: Any) -> bool:
        """Whether v is certainly a tensor (never an error at any σ)."""
        return isinstance(v, SymTensor)

    # -- initialization flags ----------------------------------------------------

    def set_flags(self, variables: Iterable[str]) -> None:
        """The variables whose initial value may be uninitialized, in the order
        guarded values branch on them."""
        self.flag_order = {x: i for i, x in enumerate(sorted(variables))}

    def initial(self, x: str, leaf: SymTensor) -> SymValue:
        """The initial value of x: the leaf, or either the leaf or the error
        `uninitialized` when x is a flagged variable."""
        if x in self.flag_order:
            return self.guard(x, Error(UNINITIALIZED), leaf)
        return leaf

    def guard(self, x: str, uninit: SymValue, init: SymValue) -> SymValue:
        if uninit is init or (isinstance(uninit, Error) and uninit == init):
            return uninit
        leaves = _leaves(uninit) + _leaves(init)
        if leaves > MAX_GUARD_LEAVES:
            raise SymbolicLimit(f"a value with {leaves} cases of initialization (limit "
                                f"{MAX_GUARD_LEAVES})")
        key = (x, _value_key(uninit), _value_key(init))
        g = self._guards.get(key)
        if g is None:
            g = self._guards[key] = Guarded(x, uninit, init, leaves)
        return g

    def top_flag(self, values: Iterable[Any]) -> str | None:
        """The first variable (in flag order) that some guarded value branches on."""
        tops = [v.var for v in values if isinstance(v, Guarded)]
        return min(tops, key=self.flag_order.__getitem__) if tops else None

    @staticmethod
    def restrict(v: Any, x: str, uninitialized: bool) -> Any:
        """v in the case where x is (or is not) uninitialized; x must come no
        later than v's own first variable (normal form)."""
        if isinstance(v, Guarded) and v.var == x:
            return v.uninit if uninitialized else v.init
        return v

    # -- functions ----------------------------------------------------------

    def apply(self, fn: fns.Function, args: Sequence[SymValue],
              attrs: Mapping[str, Any] | None = None) -> tuple[SymValue, ...]:
        """The symbolic counterpart of `Function.apply` (memoized: the search
        fires the same node on the same interned arguments in many states)."""
        key = (id(fn), tuple(_value_key(a) for a in args), id(attrs) if attrs else None)
        hit = self._applied.get(key)
        if hit is not None:
            return hit[0]
        self._check_time()
        x = self.top_flag(args)
        if x is not None:
            results_u = self.apply(fn, [self.restrict(a, x, True) for a in args], attrs)
            results_i = self.apply(fn, [self.restrict(a, x, False) for a in args], attrs)
            result = tuple(self.guard(x, u, i) for u, i in zip(results_u, results_i))
        else:
            result = None
            lenient = LENIENT.get(fn.name) if fn.name in LENIENT and _is_tfsems(fn) else None
            if lenient is not None and len(args) == 2 and all(self.is_tensor(a) for a in args):
                # (Equal/NotEqual with incompatible_shape_error=false: the
                # function itself where the static shapes broadcast, else its
                # scalar, which does not depend on the values)
                try:
                    np.broadcast_shapes(tuple(args[0].shape), tuple(args[1].shape))
                    fn = fns.get(lenient)
                except ValueError:
                    if args[0].dtype == args[1].dtype:
                        result = (self.constant(Tensor(np.array(lenient == "NotEqual"))),)
            if result is None:
                result = self._apply(fn, args, attrs or {})
        # keep fn and attrs alive with the entry, so that their ids stay theirs
        self._applied[key] = (result, fn, attrs)
        return result

    def _apply(self, fn: fns.Function, args: Sequence[SymValue],
               attrs: Mapping[str, Any]) -> tuple[SymValue, ...]:
        # an opaque result is named by the function and its attributes (two
        # nodes of one function with different attributes compute different things)
        name = fn.name + (fns.attrs_key(attrs) if attrs else "")
        for i in fn.strict():
            if isinstance(args[i], Error):
                return (args[i],) * fn.n_out
            if isinstance(args[i], Opaque):
                # an opaque value may or may not be an error: the result's
                # kind is unknown
                return tuple(self.opaque(name, k, tuple(args)) for k in range(fn.n_out))
        if fn.name == "SndSameShape" and isinstance(args[0], Opaque):
            # whether it fails depends on the old value's shape, unknown here
            return (self.opaque(name, 0, tuple(args)),)
        used = [a for i, a in enumerate(args) if i in fn.strict()]
        if not fn.mixed_dtypes and len({a.dtype for a in used}) > 1:
            return (Error(DTYPE_MISMATCH),) * fn.n_out
        folded = self._fold_shape_function(fn, args, attrs)
        if folded is not None:
            return folded
        if not self.has_encoding(fn) or _tiled_extremum(fn, args):
            return tuple(self.opaque(name, k, tuple(args)) for k in range(fn.n_out))
        kinds = self._result_kinds(fn, args, attrs)
        if all(isinstance(k, Error) for k in kinds):
            return kinds
        results = self._elements(fn, args, attrs)
        for k, r in zip(kinds, results):
            if isinstance(k, Error) or (k[0], k[1]) != (r.dtype, r.shape):
                raise AssertionError(f"symbolic {fn.name} disagrees with the oracle on kinds: "
                                     f"{k} vs {r.dtype}{list(r.shape)}")
        return results

    def has_encoding(self, fn: fns.Function) -> bool:
        """Whether this algebra computes `fn` exactly (else: opaque)."""
        return has_encoding(fn)

    # -- shapes computed at run time (oracle/opdefs/array.py) ----------------

    def constant_value(self, a: Any) -> Tensor | None:
        """a's value when it is the same at every σ (all its elements constant)."""
        if isinstance(a, SymTensor) and all(e.op == "const" for e in a.elems):
            arr = np.array([e.value for e in a.elems], dtype=DTYPES[a.dtype]).reshape(a.shape)
            return Tensor(arr)
        return None

    def _fold_shape_function(self, fn: fns.Function, args: Sequence[SymValue],
                             attrs: Mapping[str, Any]) -> tuple[SymValue, ...] | None:
        """A run-time shape function whose result is the same at every σ:
        Shape, Size and Rank of a tensor (its kind is static: module
        docstring), or any of them on constant arguments, computed
        concretely; ReshapeTo, SumAlong, ... with a constant operand become
        their constant-operand form (Reshape, Sum, ...).  None: not foldable
        (the result is then opaque, an uninterpreted function of the
        arguments, whose kind is unknown: never a wrong shape)."""
        if not opdefs.folds_on_constants(fn):   # the registry's FOLDS_ON_CONSTANTS
            return None
        tensors = [a for a in args if not isinstance(a, (Error, Opaque, Guarded))]
        if len(tensors) != len(args):
            return None
        if fn.name in array_ops.KIND_ONLY:   # the impl reads the shape alone
            (a,) = args
            (r,) = fn.impl(np, (np.broadcast_to(np.zeros((), DTYPES[a.dtype]), a.shape),), attrs)
            return (self.constant(Tensor(r)),)
        values = [self.constant_value(a) for a in args]
        if all(v is not None for v in values):
            try:
                results = fn.apply(values, attrs)
            except (fns.CannotRun, explore.BudgetExceeded):
                return None
            return tuple(r if isinstance(r, Error) else self.constant(r) for r in results)
        if fn.name in array_ops.OPERAND_FORMS and values[1] is not None:
            try:
                base, base_attrs = array_ops.constant_operand_form(fn.name, attrs,
                                                                   values[1].array)
            except fns.OpError as exc:
                return (Error(exc.reason),)
            except fns.ShapeError:
                return (Error(SHAPE_MISMATCH),)
            return self.apply(base, [args[0]], base_attrs)
        return None

    def assign(self, fn: fns.Function, w: SymValue, v: SymValue,
               current: SymValue) -> SymValue | None:
        """The new value of x after Assign-fn that read w, with input v, when x
        holds `current` (not w in decomposed mode, if another write came
        between); None when x is unchanged (v or fn(w, v) an error:
        semantics._assigned)."""
        if isinstance(v, Error):
            return None
        if isinstance(v, Opaque):
            return self.opaque("Assign-" + fn.name, 0, (w, v, current))
        (new,) = self.apply(fn, (w, v))
        if isinstance(new, Error):
            return None
        shape = getattr(current, "shape", None)
        if (fn.name == "Snd" and self.shape_guard and shape is not None
                and not isinstance(current, (Error, Opaque, Guarded))
                and not isinstance(new, Opaque) and tuple(new.shape) != tuple(shape)):
            # σ holds every variable at its declared type; a Write of another
            # shape (AssignVariableOp validate_shape=false, the one TensorFlow
            # op that changes a variable's shape) makes a later run start
            # where σ never is (there an Assign-SndSameShape may fail that
            # never fails here): no proof (docs/review-findings.md, "A
            # variable's shape in σ").  (The model's broadcasting Assign-Add
            # and the like, which TensorFlow's kernels refuse, are left alone.)
            # Only where a program validates shapes (`shape_guard`: an
            # Assign-SndSameShape in either program): elsewhere a verdict is
            # about one run from σ of the declared types, where every value's
            # shape is tracked exactly; sequential runs are sessions, judged
            # by enumeration, not by this proof.
            raise SymbolicLimit(f"a write of shape {list(new.shape)} to a variable of shape "
                                f"{list(shape)}: a later run starts with a shape the proof's σ "
                                "(the declared types) does not hold")
        if isinstance(new, Opaque):
            return self.opaque("Assign-" + fn.name, 0, (w, v, current))
        return new

    def assign_value(self, fn: fns.Function, w: SymValue, v: SymValue,
                     current: SymValue) -> SymValue:
        """The value of x after Assign-fn (`current` when x is unchanged),
        distributing over guarded values; memoized."""
        key = ("assign", id(fn), _value_key(w), _value_key(v), _value_key(current))
        hit = self._applied.get(key)
        if hit is not None:
            return hit[0]
        self._check_time()
        x = self.top_flag((w, v, current))
        if x is not None:
            r = (w, v, current)
            result = self.guard(x, self.assign_value(fn, *(self.restrict(a, x, True) for a in r)),
                                self.assign_value(fn, *(self.restrict(a, x, False) for a in r)))
        else:
            new = self.assign(fn, w, v, current)
            result = current if new is None else new
        self._applied[key] = (result, fn, None)
        return result

    def _result_kinds(self, fn: fns.Function, args: Sequence[SymValue],
                      attrs: Mapping[str, Any]) -> tuple:
        key = (fn.name, tuple(("E", a.reason) if isinstance(a, Error) else
                              ("O",) if isinstance(a, Opaque) else (a.dtype, a.shape) for a in args),
               fns.attrs_key(attrs) if attrs else "")
        kinds = self._kinds.get(key)
        if kinds is None:
            zeros = [Tensor(np.zeros(a.shape, DTYPES[a.dtype])) if isinstance(a, SymTensor)
                     else a if isinstance(a, Error) else Error("opaque") for a in args]
            kinds = tuple(r if isinstance(r, Error) else (r.dtype, r.shape)
                          for r in fn.apply(zeros, attrs))
            self._kinds[key] = kinds
        return kinds

    def _elements(self, fn: fns.Function, args: Sequence[SymValue],
                  attrs: Mapping[str, Any]) -> tuple[SymTensor, ...]:
        name = fn.name
        if name == "Const":
            return (self.constant(attrs["value"]),)
        if name == "Identity":
            return (args[0],)
        if name == "Copy":
            return (args[0], args[0])
        if name in ("Snd", "SndSameShape"):
            # (SndSameShape's failure, a shape that is not the variable's, is
            # decided from the kinds: _apply)
            return (args[1],)
        if name == "Concat":
            a, b = args
            return (self.tensor(a.dtype, (a.shape[0] + b.shape[0],), a.elems + b.elems),)
        if name == "Split":
            (a,) = args
            h = a.shape[0] // 2
            return (self.tensor(a.dtype, (h,), a.elems[:h]), self.tensor(a.dtype, (h,), a.elems[h:]))
        op = ELEMENTWISE[name]
        if len(args) == 1:
            (a,) = args
            return (self.tensor(a.dtype, a.shape, (self.apply_elem(op, (x,)) for x in a.elems)),)
        a, b = args
        if a.shape == b.shape:
            shape, xs, ys = a.shape, a.elems, b.elems
        elif not b.shape:
            shape, xs, ys = a.shape, a.elems, b.elems * len(a.elems)
        elif not a.shape:
            shape, xs, ys = b.shape, a.elems * len(b.elems), b.elems
        else:
            shape = tuple(np.broadcast_shapes(a.shape, b.shape))
            xs, ys = (np.broadcast_to(_object_array(t), shape).reshape(-1) for t in args)
        if op in ("max", "min") and a.dtype in fns.EXTREMUM_PACKET:
            # TensorFlow's tie of zeros depends on the element's flat index
            # in the result (inside Eigen's whole packets or in the scalar
            # tail): the tail's elements get their own op
            n = len(xs)
            ops = [op if fns.extremum_in_packets(a.dtype, n, i) else op + "_tail" for i in range(n)]
            return (self.tensor(a.dtype, shape, (self.apply_elem(o, (x, y))
                                                 for o, x, y in zip(ops, xs, ys))),)
        return (self.tensor(a.dtype, shape, (self.apply_elem(op, (x, y)) for x, y in zip(xs, ys))),)


class RealAlgebra(Algebra):
    """`--float real` (SPEC section 11): float constants are never folded
    (folding computes in IEEE arithmetic, and would make a rounded constant
    equal, as a term, to a literal of the same bits: a false `sound` over the
    reals); float terms are evaluated by the real-number encoder."""

    def apply_elem(self, op: str, args: tuple[Term, ...]) -> Term:
        dtype = args[0].dtype
        if dtype not in FLOAT_DTYPES:
            return super().apply_elem(op, args)
        if op in _COMMUTATIVE[dtype] and args[0].serial > args[1].serial:
            args = (args[1], args[0])
        return self.term(op, dtype, args)


def _tiled_extremum(fn: fns.Function, args: Sequence[SymValue]) -> bool:
    """Whether `fn` is Max/Min on a float32/float64 broadcast large enough
    for Eigen's tiled executor (fns.extremum_tiled): its ties of signed
    zeros fall by block, not by flat index, so the op stays uninterpreted
    (TensorFlow's kernel is still a function of its operands)."""
    if fn.name.split(".")[0] not in ("Max", "Min") or len(args) != 2:
        return False
    a, b = args
    return (all(hasattr(x, "shape") and hasattr(x, "dtype") for x in args)
            and a.dtype in fns.EXTREMUM_PACKET
            and fns.extremum_tiled(a.dtype, tuple(a.shape), tuple(b.shape)))


def _require_element_dtype(dtype: str, what: str) -> None:
    if dtype not in ELEMENT_DTYPES:
        raise NeedsGeneric(f"{what} has dtype {dtype}, which the element-wise terms do not model")


def _object_array(a: SymTensor) -> np.ndarray:
    arr = np.empty(len(a.elems), dtype=object)
    for i, e in enumerate(a.elems):
        arr[i] = e
    return arr.reshape(a.shape)


# ---------------------------------------------------------------------------
# The search


class _SymbolicFunction:
    """Stands in for a registry Function inside the fast oracle's engine."""

    def __init__(self, algebra: Algebra, fn: fns.Function):
        self.algebra, self.fn = algebra, fn

    def apply(self, args, attrs=None):
        return self.algebra.apply(self.fn, args, attrs)


class _SymbolicComponent(explore._Component):
    """The fast oracle's compiled component, applying functions symbolically."""

    #: states keyed by the terms themselves, as before exact keys: a term
    #: stands for a value of every σ, and the solver has one NaN anyway (no
    #: proof is taken as `sound` where a NaN's bits may be shown, check.py
    #: `_nan_payload_observer`; counterexamples are confirmed concretely)
    payloads = False

    def __init__(self, algebra: Algebra, *args: Any):
        super().__init__(*args)
        self.algebra = algebra
        self.assign_fn = list(self.fn)
        self.fn = [None if f is None else _SymbolicFunction(algebra, f) for f in self.fn]

    def _store(self, st, i, w, v) -> None:  # noqa: ANN001 - the engine's signature
        x = self.var[i]
        st.vars[x] = self.algebra.assign_value(self.assign_fn[i], w, v, st.vars[x])


@dataclass
class Component:
    """One independent part of a program's symbolic outcome set: the observed
    parts it decides (("output", name) / ("variable", x), in outcome order) and
    its partial outcomes (tuples of values in that order), each with a witness
    schedule."""

    parts: tuple[tuple[str, str], ...]
    outcomes: dict[tuple, tuple[str, ...]]


@dataclass
class SymbolicOutcomes:
    components: list[Component]
    states: int
    seconds: float
    #: a schedule of the components left out (see `symbolic_outcomes`)
    skipped_schedule: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        return math.prod(len(c.outcomes) for c in self.components)


#: Signatures compare their nodes only where their node names agree
#: (`_Signature`); off, a signature is the frozenset of its nodes (tests
#: compare the two).
NAMES_FIRST = True


class _Signature:
    """`component_signature`'s value: equal to another exactly when the
    tuple (frozenset of the component's nodes, variables with their types,
    outputs with their ports) is equal to the other's, but made without
    hashing every node.

    Why the same equality.  A node's name is one of the fields its equality
    compares (the dataclass's `==` over name, op, inputs and attributes),
    and one program's nodes have distinct names.  So frozenset(A) ==
    frozenset(B), for the nodes A and B of two components, holds exactly
    when both have the same set of names and, name by name, B's node is
    found for A's by a set lookup: the same object, or an equal hash and
    `==` (a node of B equal to one of A has its name, so no other node of
    B can be found for it; equal sizes and every node of A found in B is
    the sets' equality).  `__eq__` below checks exactly that, the names
    first: a rewrite's component whose nodes carry other names (Grappler
    adds and removes nodes: MobileNetV2's single component, every
    optimizer) is told apart without the nodes' hashes, which were made
    only here on the probe's path, its attributes' exact keys with them
    (0.1-0.2 s over the real corpus's checks).  The hash is that of the
    names, variables and outputs: equal signatures have equal names, so
    equal hashes."""

    __slots__ = ("program", "names", "rest", "_hash")

    def __init__(self, p: Program, names: Sequence[str], rest: tuple) -> None:
        self.program = p
        self.names = frozenset(names)
        self.rest = rest
        self._hash = hash((self.names, rest))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not _Signature:
            return NotImplemented
        if self._hash != other._hash or self.names != other.names or self.rest != other.rest:
            return False
        mine, theirs = self.program.node, other.program.node
        for n in self.names:
            a, b = mine[n], theirs[n]
            # (a set's lookup: the entry itself, or an equal hash and the
            # entry equal to the key)
            if not (b is a or (hash(b) == hash(a) and b == a)):
                return False
        return True


Signature = _Signature | tuple


def component_signature(p: Program, names: Sequence[str], variables: Sequence[str],
                        outputs: Sequence[str]) -> Signature:
    """What determines a component's outcome set: its nodes (names, operations,
    inputs, attributes), its variables (with their types) and its outputs.
    Two programs' components with the same signature have the same outcome
    sets, as terms, for the same symbolic σ."""
    rest = (tuple((x, p.variables[x]) for x in variables),
            tuple((o, p.outputs[o]) for o in outputs))
    if NAMES_FIRST:
        return _Signature(p, names, rest)
    return (frozenset(p.node[n] for n in names), *rest)


def components(p: Program) -> list[tuple[Signature, tuple[list[str], list[str], list[str]]]]:
    return [(component_signature(p, *c), c) for c in explore.components(p)]


def _canonical_schedule(p: Program, names: Sequence[str], semantics: str) -> list[str]:
    """A valid schedule of a component on its own: topological order, an
    Assign's two steps together in decomposed mode."""
    out = []
    for n in names:   # explore.components lists nodes in topological order
        if semantics == "decomposed" and p.node[n].op == "Assign":
            out += [n + "@read", n + "@write"]
        else:
            out.append(n)
    return out


def symbolic_outcomes(p: Program, algebra: Algebra, feeds: Mapping[str, SymValue],
                      init: Mapping[str, SymValue], semantics: str, observe: str,
                      budget: Budget, skip: frozenset = frozenset()) -> SymbolicOutcomes:
    """Outcomes(P, σ) for symbolic σ = (feeds, init); a variable missing from
    `init` starts uninitialized.  Components whose signature is in `skip` are
    left out (the caller knows them to be the same on both sides); a schedule
    of theirs is kept so that whole-program schedules can be built.  Raises
    BudgetExceeded or SymbolicLimit."""
    started = time.monotonic()
    out = []
    skipped: list[str] = []
    outer, algebra.budget = algebra.budget, budget
    try:
        found_all = []
        for signature, (names, variables, outputs) in components(p):
            if signature in skip:
                skipped += _canonical_schedule(p, names, semantics)
                continue
            comp = _SymbolicComponent(algebra, p, names, semantics, observe, feeds, variables, outputs)
            found_all.append((outputs, variables, explore._explore(comp, init, budget)))
    finally:
        algebra.budget = outer
    for outputs, variables, found in found_all:
        parts = tuple(("output", o) for o in outputs)
        if observe != OUTPUTS:
            parts += tuple(("variable", x) for x in variables)
        outcomes = {tuple(v for _, v in o.outputs) + tuple(v for _, v in (o.state or ())): w
                    for o, w in found.items()}
        out.append(Component(parts, outcomes))
    return SymbolicOutcomes(out, budget.states, time.monotonic() - started, tuple(skipped))


def accessed_variables(p: Program) -> set[str]:
    """Variables some Read or Assign of p accesses."""
    return {x for n in p.nodes if (x := p.accessed_variable(n.name)) is not None}


__all__ = ["Algebra", "Component", "Guarded", "NeedsGeneric", "Opaque", "SymTensor", "SymValue",
           "SymbolicLimit", "ELEMENT_DTYPES", "evaluate",
           "SymbolicOutcomes", "Term", "accessed_variables", "has_encoding",
           "symbolic_outcomes", "ELEMENTWISE", "STRUCTURAL", "MAX_ELEMENTS"]


# ---------------------------------------------------------------------------
# Concrete evaluation of terms on many σ at once (to find candidates cheaply)


def evaluate(terms: Iterable[Term], leaves: Mapping[Term, np.ndarray],
             memo: dict[Term, np.ndarray]) -> None:
    """Evaluate terms elementwise on arrays of samples (numpy's own
    operations, so each sample gets exactly its concrete value).  Results go
    into `memo`; every leaf the terms use must be in `leaves`."""
    for term in terms:
        if term in memo:
            continue
        stack = [term]
        while stack:
            u = stack[-1]
            if u in memo:
                stack.pop()
                continue
            missing = [a for a in u.args if a not in memo]
            if missing:
                stack.extend(missing)
                continue
            if u.op in ("feed", "init"):
                memo[u] = leaves[u]
            elif u.op == "const":
                memo[u] = np.array(u.value)
            else:
                with np.errstate(all="ignore"):
                    memo[u] = _FOLD[u.op](*(memo[a] for a in u.args))
            stack.pop()
