"""The function registry: the operations f in Tensors^k -> Tensors^l.

Each function declares its arity and one implementation written against an
array-module argument `xp` (numpy, or cupy on a GPU: the same code runs on
both).  Implementations see plain arrays; this module wraps them with the
seed's error discipline (footnotes 2 and 5):

* an error argument the function depends on makes every result that error;
* arguments of different dtypes, or shapes the implementation rejects, give the
  error values `dtype-mismatch` and `shape-mismatch`.

A function used as Assign-f must be binary with one result (`assignable`).

Users register their own functions with :func:`register`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import struct
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from . import applications as _applications
from . import float_attrs
from . import kernels as _kernels
from .budget import BudgetExceeded
from .values import (DTYPE_MISMATCH, FLOAT_DTYPES, SHAPE_MISMATCH, Error, Tensor, Value,
                     ValueFormatError, dtype_name, finfo, is_float, value_from_json,
                     value_to_json)

Impl = Callable[..., Sequence[Any]]


class ShapeError(Exception):
    """Raised by an implementation for arguments of shapes it does not accept."""


@dataclass(frozen=True)
class Function:
    """A registered function.

    `impl(xp, args, attrs)` takes a tuple of arrays of one dtype and returns a
    tuple of `n_out` arrays.  `strict_args` lists the arguments whose errors
    propagate (default: all); Snd ignores its first argument, which is what
    lets a Write initialize an uninitialized variable (seed footnote 6).
    `attrs` names the node attributes the function takes, each with a
    validator that turns the JSON attribute into a Python value.
    """

    name: str
    n_in: int
    n_out: int
    impl: Impl
    doc: str = ""
    strict_args: tuple[int, ...] | None = None
    attrs: Mapping[str, Callable[[Any, str], Any]] = field(default_factory=dict)
    #: Floating-point reasoning about this function is exact in Z3 (the checker
    #: may still treat any function as uninterpreted).
    pure: bool = True
    #: The same function on B valuations at once (`tfsem.backends.batched`):
    #: `batched_impl(xp, args, attrs)` gets each argument with a leading batch
    #: axis, shape (B, *s) for the per-valuation shape s, and returns results
    #: of that form (a function of no arguments returns one value for the
    #: whole batch).  None: not batch-aware, and the batched evaluator applies
    #: `impl` to one valuation at a time.
    batched_impl: Impl | None = None
    #: "core" (the language's own functions) or "tensorflow" (the models of
    #: TensorFlow ops that graph import maps onto, below).  `registered()` and
    #: `assign_functions()` list the core family only.
    family: str = "core"
    #: The result's dtype is the implementation's (Cast), not the arguments'.
    casts: bool = False
    #: The arguments may have different dtypes (Reshape's tensor and its
    #: int32 shape): no `dtype-mismatch` from the discipline, the
    #: implementation checks the dtypes it accepts.
    mixed_dtypes: bool = False
    #: TensorFlow's kernel as this function, for the arguments `impl` has no
    #: numpy model for (it raises CannotRun: float MatMul, an opaque op):
    #: `tf_kernel(arrays, attrs)` gives (TensorFlow op, input arrays, the
    #: op's attributes as JSON values) and oracle/kernels.py runs it where
    #: TensorFlow is installed (docs/kernels.md).  None: no kernel.
    tf_kernel: Callable[..., tuple[str, list, dict]] | None = None
    #: The Z3 encoding (oracle/opdefs: an `Elementwise` the generic checker
    #: encodes element by element).  None: uninterpreted in proofs (the
    #: language's own functions, Add ... Split, are the encoder's itself).
    encoding: Any = None
    #: How export writes a node of this function as TensorFlow nodes:
    #: `export(e)` with the exporter's context `e` (graphdef/exporter.py
    #: ExportNode: e.name, e.data, e.ctrl, e.attrs, e.T(i), e.int32_const)
    #: returns the GraphDef node dicts, the last one named e.name.  None:
    #: the exporter's own cases (the language's functions, the state family).
    export: Callable[[Any], list] | None = None
    #: Every result of `impl` is flushed (`ftz`) as its last step
    #: (`flushed_variant`): a result tensor of a flushed dtype, of the
    #: dtype `impl` gave it, holds no subnormal, and is remembered so
    #: (`_mark_flushed`): the functions it feeds do not search it again.
    flushes_results: bool = False
    #: `impl` is commutative bit for bit wherever its result holds no NaN:
    #: f(a, b) and f(b, a) are the same tensor, or both hold a NaN (whose
    #: bits may depend on the order).  An application missing from the
    #: memo is answered by the remembered one of its arguments swapped,
    #: where that one's result holds no NaN (`_commuted`).  The language's
    #: Add and Mul and their `.ftz` variants; a function registered again
    #: under their names is not, unless it says so.
    commutes: bool = False

    @property
    def assignable(self) -> bool:
        return self.n_in == 2 and self.n_out == 1 and not self.attrs

    def strict(self) -> tuple[int, ...]:
        return tuple(range(self.n_in)) if self.strict_args is None else self.strict_args

    def apply(self, args: Sequence[Value], attrs: Mapping[str, Any] | None = None,
              xp: Any = np) -> tuple[Value, ...]:
        """Apply to TF values, with the error discipline described above.
        Inside `applications.scope()` (a check) an application made before
        is not made again (oracle/applications.py argues why its answer is
        the same)."""
        memo = _applications._active
        if memo is None or xp is not np:
            return self._apply(args, attrs, xp)
        return self.remembered(memo, args, attrs)[0]

    def remembered(self, memo: Any, args: Sequence[Value],
                   attrs: Mapping[str, Any] | None) -> tuple[tuple[Value, ...], frozenset, bool]:
        """`apply` inside the application memo `memo` (the active one):
        the results, the TensorFlow ops they stand for (noted already, as
        `apply` notes them), and whether they are an answer the memo may
        keep for these very arguments (every argument and result a tensor
        or an error value, not made while `kernels.collecting()` defers
        evaluations): oracle/explore.py's straight line keeps the last such
        answer of each node."""
        if memo.limit != MAX_TENSOR_ELEMENTS:    # (a hit skips check_size)
            _applications.empty(memo, MAX_TENSOR_ELEMENTS)
        if self.impl is _const and attrs and type(attrs.get("value")) is Tensor:
            # (Const: its attribute's tensor itself, one object for every
            # Const of those bits, instead of a copy made each time)
            value = attrs["value"]
            if value.array.size > MAX_TENSOR_ELEMENTS:
                raise too_large(self.name, value.array.size)
            return (_applications.intern_const(memo, value),), _NO_OPS, True
        key = _applications.key(memo, self, args, attrs)
        if key is None:
            return self._apply(args, attrs, np), _NO_OPS, False
        hit = _applications.lookup_entry(memo, key, self, args)
        if hit is not None:
            return hit[0], hit[1], True
        canon = _applications.canonical_args(memo, args)
        if canon is not None:
            args = canon
            key = _applications.key(memo, self, args, attrs)
            hit = _applications.lookup_entry(memo, key, self, args)
            if hit is not None:
                return hit[0], hit[1], True
        if self.commutes and COMMUTED_HITS and len(args) == 2:
            out = _commuted(memo, self, args, attrs, key)
            if out is not None:
                return out, _NO_OPS, True
        deferring = _kernels.deferring()
        if key[2]:            # kernels on: which did this application evaluate?
            with _kernels.record() as used:
                out = self._apply(args, attrs, np)
            ops = frozenset(used)
        else:
            out = self._apply(args, attrs, np)
            ops = _NO_OPS
        if deferring:
            return out, ops, False
        for v in out:
            if type(v) is not Tensor and not isinstance(v, Error):
                return out, ops, False
        out = _applications.interned_results(memo, out)
        _applications.store(memo, key, self, attrs, args, out, ops)
        return out, ops, True

    def _apply(self, args: Sequence[Value], attrs: Mapping[str, Any] | None,
               xp: Any) -> tuple[Value, ...]:
        # (`strict()` made once, not once per argument: the same indices)
        strict = self.strict()
        for i in strict:
            if isinstance(args[i], Error):
                return (args[i],) * self.n_out
        for a in args:
            if type(a) is not Tensor and not isinstance(a, (Tensor, Error)):
                # a TensorList (oracle/opdefs/lists.py): Identity forwards it,
                # the array functions have no value for it
                if self.name == "Identity":
                    return (a,)
                raise CannotRun(f"{self.name} takes tensors, not a {type(a).__name__}")
        used = [a for i, a in enumerate(args) if i in strict and isinstance(a, Tensor)]
        if not self.mixed_dtypes and len(used) > 1 and len({a.dtype for a in used}) > 1:
            return (Error(DTYPE_MISMATCH),) * self.n_out
        arrays = tuple(a.array if isinstance(a, Tensor) else None for a in args)
        check_size(self.name, [a.shape for a in arrays if a is not None])
        try:
            with np.errstate(all="ignore"):
                results = self.impl(xp, arrays, attrs or {})
        except MemoryError:
            raise too_large(self.name, None) from None
        except OpError as exc:  # the op fails: its own error value
            return (Error(exc.reason),) * self.n_out
        except CannotRun as exc:  # say which function, for the message naming the nodes
            exc.function = self.name
            raise
        except ShapeError:
            return (Error(SHAPE_MISMATCH),) * self.n_out
        except ValueError as exc:  # numpy's broadcasting and concatenation errors
            if beyond_numpy(exc):
                # a result numpy holds no array of (more than 64 dimensions, or
                # an empty shape of huge dimensions) is no mismatch: TensorFlow
                # may well give it (it takes 254 dimensions): not modelled
                err = CannotRun(f"cannot run {self.name} concretely: numpy holds no array "
                                f"of its result's shape ({exc})")
                err.function = self.name
                raise err from None
            return (Error(SHAPE_MISMATCH),) * self.n_out
        if len(results) != self.n_out:
            raise RuntimeError(f"function {self.name} returned {len(results)} results, "
                               f"declared {self.n_out}")
        out = tuple(_same_tensor(r, args, used, self.casts) or
                    (Tensor(np.asarray(r)) if self.casts else _as_tensor(r, used)) for r in results)
        if sum(t.array.size for t in out) > MAX_TENSOR_ELEMENTS:  # a user function's own growth
            raise too_large(self.name, sum(t.array.size for t in out))
        if self.flushes_results and xp is np:
            for r, t in zip(results, out):
                # (the tensor's bytes are the flushed result's, unless
                # `_as_tensor` converted its dtype)
                if type(t) is Tensor and t.dtype in FLUSHED_DTYPES \
                        and getattr(r, "dtype", None) == t.array.dtype:
                    _mark_flushed(t.array)
        return out


_NO_OPS: frozenset = frozenset()

#: `Function.remembered` answers an application of a commutative function
#: by the remembered one of its arguments swapped (`_commuted`); False: it
#: computes it (the differential tests' reference)
COMMUTED_HITS = True


def _commuted(memo: Any, fn: Function, args: Sequence[Value], attrs: Any,
              key: tuple) -> tuple[Value, ...] | None:
    """The results of `fn` (`Function.commutes`) at `args`, two tensors, as
    the memo remembers them at the two swapped, or None.

    Grappler's common-subgraph pass puts the inputs of a commutative op in
    a canonical order (by name): a rewrite's Mul(b, a) is the original's
    Mul(a, b), and a miss there recomputed the op and, where its result is
    too large to be interned, nodes below it (MobileNetV2's CSE check: 280
    of the rewrite's 2,696 applications computed, 38 of them too large to
    intern; 2,423 over the real corpus's checks).  Why the swapped answer
    is this one's: `fn` is Add or Mul or
    its `.ftz` variant (`commutes`, set by this module only), whose impl
    is numpy's add or multiply (IEEE addition and multiplication are
    commutative, ±0 included; integers wrap the same either way), the
    flush of subnormal arguments and results (elementwise, the same for
    either order), the rounding up to the smallest normal
    (`_tiny_after_rounding`: it scales the operand of smaller magnitude,
    whichever position it holds; of equal magnitudes the product is the
    same), and `nan_bits`, which changes only NaN elements: so where the
    remembered result holds no NaN, the result at the swapped arguments
    is the same tensor.  The dtype checks (`dtype-mismatch`, `_kernel`'s
    dtypes) and the broadcast shape are symmetric.  Not taken where the
    remembered answer holds an error value or a NaN, or used TensorFlow's
    kernels (none of these functions does), or an argument is an error
    value (an error propagates from the first).  tests/test_functions_commuted.py
    compares the two orders on values of every kind and the checks'
    verdicts and counterexamples with and without this."""
    a, b = args
    if type(a) is not Tensor or type(b) is not Tensor or a is b:
        return None
    swapped = (b, a)
    k = _applications.key(memo, fn, swapped, attrs)
    if k is None:
        return None
    hit = _applications.lookup_entry(memo, k, fn, swapped, peek=True)
    if hit is None:
        return None
    out, ops = hit
    if ops:
        return None
    for v in out:
        if type(v) is not Tensor or (v.dtype in FLOAT_DTYPES and _has_nan(np, v.array)):
            return None
    if not _kernels.deferring():
        _applications.store(memo, key, fn, attrs, args, out, ops)
    return out

#: The most elements a function application may produce (2**24: 128 MiB of
#: int64).  Past it evaluation stops with the budget exception the callers
#: already turn into `unknown` (BudgetExceeded, which="elements"), instead of
#: a MemoryError: a 7 KB program that doubles a tensor with Concat 40 times,
#: or an Add that broadcasts [N,1] against [1,M], would otherwise allocate
#: without bound.  This bounds the evaluation, not the semantics: no outcome
#: is invented or dropped, the answer is `unknown`.
MAX_TENSOR_ELEMENTS = 1 << 24


#: Functions that never broadcast their arguments (the state family's
#: scatters, their packing and the optimizer updates, oracle/opdefs/state.py):
#: check_size bounds them by the sum of the argument sizes alone (a packed
#: operand's length is no axis to broadcast; PackScatter's bytes are at most
#: 8 per element, and every result is checked again once computed).
NOT_BROADCASTING: set[str] = set()


def check_size(name: str, shapes: Sequence[tuple[int, ...]]) -> None:
    """Refuse, before computing, an application whose result could pass the
    limit.  For every built-in function each result has at most
    max(sum of the argument sizes, size of their broadcast shape) elements."""
    if not shapes:
        return
    bound = 0
    for s in shapes:
        bound += math.prod(s)
    first = shapes[0]
    if name not in NOT_BROADCASTING and any(s != first for s in shapes):
        # the broadcast shape is at most the largest size on each axis
        rank = max(len(s) for s in shapes)
        dims = [1] * rank
        clash = False
        for s in shapes:
            for i, d in enumerate(s, rank - len(s)):
                if d != 1 and dims[i] != 1 and d != dims[i]:
                    clash = True
                if d > dims[i]:
                    dims[i] = d
        # (an op TensorFlow's kernel runs, `tf.OP/N/M`, on shapes that do
        # not broadcast is no broadcast: a convolution's input and filter,
        # whose "largest size on each axis" is no size of anything (issue
        # 23: mobilenet's DepthwiseConv2dNative of 8x16x16x96 elements was
        # refused as 22 million).  The kernel computes in its own process and
        # its results are checked once computed, as every function's are.)
        if not (clash and name.startswith("tf.")):
            bound = max(bound, math.prod(dims))
    if bound > MAX_TENSOR_ELEMENTS:
        raise too_large(name, bound)


def too_large(name: str, elements: int | None) -> Exception:
    exc = BudgetExceeded("elements", MAX_TENSOR_ELEMENTS, 0)
    size = f"{elements} elements" if elements is not None else "more memory than there is"
    exc.args = (f"tensor size limit: {name} would produce {size}; tfsem evaluates at most "
                f"{MAX_TENSOR_ELEMENTS} elements per operation",)
    return exc


#: numpy's ValueErrors for an array it cannot hold at all, whatever the
#: arguments' agreement (numpy 2: "array is too big; ...", "maximum supported
#: dimension for an ndarray is currently 64, found 65", "ndmin must be <=
#: ndmax (64)", "Maximum allowed dimension exceeded")
_NUMPY_LIMITS = ("array is too big", "maximum supported dimension", "ndmin must be <=",
                 "maximum allowed dimension")


def beyond_numpy(exc: ValueError) -> bool:
    """Whether numpy's `exc` says it cannot hold the array at all
    (`_NUMPY_LIMITS`): CannotRun, not shape-mismatch, in every engine."""
    text = str(exc).lower()
    return any(k.lower() in text for k in _NUMPY_LIMITS)


def _same_tensor(result: Any, args: Sequence[Value], used: Sequence[Tensor],
                 casts: bool) -> Tensor | None:
    """The argument whose very array `result` is (Identity, a flush with
    nothing to flush), where it would be the result's value as it stands (the
    dtype `_as_tensor` would give it): that tensor itself, not a copy of
    its array made into a new one."""
    for a in args:
        if type(a) is Tensor and a.array is result:
            if casts or not used or result.dtype == used[0].array.dtype:
                return a
    return None


def _as_tensor(result: Any, used: Sequence[Tensor]) -> Tensor:
    arr = np.asarray(result)
    if used and arr.dtype != used[0].array.dtype:
        arr = arr.astype(used[0].array.dtype)
    return Tensor(arr)


_REGISTRY: dict[str, Function] = {}

#: Names that are operations of the seed's language, not functions.
RESERVED = frozenset({"Var", "Read", "Assign", "Write"})


def register(fn: Function, *, replace: bool = False) -> Function:
    """Add a function to the registry (from Python; returns it)."""
    if fn.name in RESERVED:
        raise ValueError(f"{fn.name!r} is an operation of the language, not a function name")
    if fn.name in _REGISTRY and not replace:
        raise ValueError(f"function {fn.name!r} is already registered")
    if fn.n_in < 0 or fn.n_out < 0:
        raise ValueError("arities are non-negative")
    if fn.tf_kernel is not None and not getattr(fn.impl, "kernel_fallback", False):
        fn = dataclasses.replace(fn, impl=_kernel_fallback(fn))
    if fn.name in _REGISTRY:
        global version
        version += 1
        _applications.clear()     # (its old applications are another function's)
    _REGISTRY[fn.name] = fn
    return fn


#: Counts the registrations that replaced a function: what was looked up in
#: the registry (a compiled program's functions, oracle/explore.py
#: `compiled`) holds while it is unchanged.  (A new name changes nothing
#: looked up before: the lookup of a name not registered fails; an opaque
#: TensorFlow op's function, registered when first looked up, is new.)
version = 0


def _kernel_fallback(fn: Function) -> Impl:
    """fn.impl, and where it cannot run (CannotRun), TensorFlow's kernel in
    its place when oracle/kernels.py may run one; otherwise the CannotRun
    stands, with the reason the kernel was not used."""
    impl, form, n_out = fn.impl, fn.tf_kernel, fn.n_out

    def run(xp, args, attrs):
        try:
            return impl(xp, args, attrs)
        except CannotRun as exc:
            if not _kernels.enabled() or any(a is None for a in args):
                raise
            try:
                # (a device array, cupy's, comes to the host for TensorFlow)
                host = tuple(np.asarray(a) if isinstance(a, np.ndarray) or not hasattr(a, "get")
                             else a.get() for a in args)
                op, inputs, tf_attrs = form(host, attrs)
                results = _kernels.evaluate(op, inputs, tf_attrs, n_out)
            except _kernels.KernelOpError as err:   # the op fails: an error value
                raise OpError(err.reason, str(err)) from None
            except _kernels.KernelRefused as why:
                raise CannotRun(f"{exc}; TensorFlow's kernel cannot stand for it: {why}") from None
            except Exception as err:  # noqa: BLE001
                # a failure of the kernel path is no value (a ValueError here
                # must not read as numpy's shape-mismatch): it cannot run
                raise CannotRun(f"{exc}; TensorFlow's kernel failed to run: "
                                f"{type(err).__name__}: {err}") from None
            from .values import DTYPES
            for r in results:
                if r.dtype not in DTYPES.values():
                    raise CannotRun(f"{exc}; TensorFlow's {op} kernel gives a {r.dtype} tensor, "
                                    "not one of tfsem's dtypes") from None
            return tuple(r if xp is np else xp.asarray(r) for r in results)
    run.kernel_fallback = True
    run.__doc__ = impl.__doc__
    return run


#: `function(..., batched=BROADCASTING)`: the implementation broadcasts its
#: arguments like numpy; with a leading batch axis it works once the arguments
#: are padded to one rank (:func:`_batch_broadcasting`).
BROADCASTING = "broadcasting"


def function(name: str, n_in: int, n_out: int, batched: Impl | bool | str = False,
             **kwargs: Any) -> Callable[[Impl], Impl]:
    """Decorator form of :func:`register`.  `batched` gives `batched_impl`:
    True when `impl` already works on a leading batch axis, BROADCASTING, or
    a batched implementation of its own (default: not batch-aware)."""
    def deco(impl: Impl) -> Impl:
        batched_impl = (impl if batched is True else _batch_broadcasting(impl)
                        if batched == BROADCASTING else batched or None)
        register(Function(name, n_in, n_out, impl, doc=(impl.__doc__ or "").strip(),
                          batched_impl=batched_impl, **kwargs))
        return impl
    return deco


def _batch_broadcasting(impl: Impl) -> Impl:
    """`impl` on arguments with a leading batch axis: each argument is padded
    with unit axes after the batch axis up to the largest rank, so that
    broadcasting pairs the same axes as it does for one valuation."""
    def batched(xp, args, attrs):
        rank = max((a.ndim for a in args if a is not None), default=1)
        return impl(xp, tuple(a if a is None or a.ndim == rank else
                              a.reshape(a.shape[:1] + (1,) * (rank - a.ndim) + a.shape[1:])
                              for a in args), attrs)
    return batched


def get(name: str) -> Function:
    f = lookup(name)
    if f is None:
        raise KeyError(name)
    return f


def lookup(name: str) -> Function | None:
    f = _REGISTRY.get(name)
    if f is None and name.startswith("tf."):
        f = _opaque_function(name)  # a TensorFlow op with no model: tf.OP/N_IN/N_OUT
    return f


def evaluation_epoch() -> tuple:
    """What a remembered evaluation holds for besides the functions it
    named (`still_registered`): the registry's version (a function
    registered again is another function), whether TensorFlow's kernels
    are on in this thread (a result with kernels off must not stand on a
    kernel's: review22) and the tensor size limit.  The key part of every
    such memo (the original's structural analysis, the canonical runs, a
    back end's session)."""
    return (version, _kernels.enabled(), MAX_TENSOR_ELEMENTS)


def still_registered(looked_up: Mapping[str, "Function | None"] |
                     Iterable[tuple[str, "Function | None"]]) -> bool:
    """Whether every function looked up earlier, (name, what `lookup(name)`
    gave then), is still what the registry gives under that name: the same
    object (None: still nothing).  What was computed with those functions
    (a compiled program's tables, a remembered run, a back end's session)
    holds while this is true.  `version` alone does not tell it: a registry
    entry put in or taken out by hand (a test's monkeypatch.setitem, the
    fixture undoing it) changes no version (review22)."""
    items = looked_up.items() if isinstance(looked_up, Mapping) else looked_up
    return all(lookup(name) is f for name, f in items)


def registered(family: str = "core") -> Mapping[str, Function]:
    """The registered functions of `family` ("core", "tensorflow", or None for all)."""
    return {n: f for n, f in _REGISTRY.items() if family is None or f.family == family}


def assign_functions(family: str = "core") -> list[str]:
    return sorted(n for n, f in registered(family).items() if f.assignable)


# ---------------------------------------------------------------------------
# Built-in functions.  Each implementation takes (xp, args, attrs).


def _const_value(raw: Any, where: str) -> Tensor:
    value = value_from_json(raw, where)
    if isinstance(value, Error):
        raise ValueFormatError(f"{where}: a Const holds a tensor, not an error")
    return value


def _const_to_json(value: Tensor) -> Any:
    return value_to_json(value)


@function("Const", 0, 1, batched=True, attrs={"value": _const_value})
def _const(xp, args, attrs):
    """The tensor given by the attribute `value`."""
    return (xp.asarray(attrs["value"].array),)


@function("Identity", 1, 1, batched=True)
def _identity(xp, args, attrs):
    """Its input."""
    return (args[0],)


@function("Copy", 1, 2, batched=True)
def _copy(xp, args, attrs):
    """Its input, twice (the seed's explicit sharing)."""
    return (args[0], args[0])


@function("Snd", 2, 1, batched=True, strict_args=(1,))
def _snd(xp, args, attrs):
    """Snd(x, y) = y; Assign-Snd is Write."""
    return (args[1],)


# -- dtypes: which have a kernel, and TensorFlow's choices per dtype ----------
#
# Measured on TensorFlow 2.21's CPU kernels (tests/test_dtypes_tensorflow.py
# compares every model below with them, bit for bit, on each dtype's edge
# values).  An op applied to a dtype TensorFlow has no kernel for gives the
# error value `no-kernel` (TensorFlow refuses to run the graph).

#: Every dtype but bool (TensorFlow's arithmetic has no bool kernels).
NUMERIC = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                     "float16", "bfloat16", "float32", "float64"})
#: The signed dtypes (Neg and Abs have no unsigned kernels).
SIGNED = frozenset({"int8", "int16", "int32", "int64"}) | FLOAT_DTYPES
#: The dtypes whose CPU arithmetic flushes subnormal arguments and results to
#: zero (the executor's flush-to-zero and denormals-are-zero modes: bfloat16
#: and float16 are computed in float32, but a float16 subnormal is a normal
#: float32 and the conversion back does not flush, so float16 keeps them).
FLUSHED_DTYPES = frozenset({"bfloat16", "float32", "float64"})
#: Which operand TensorFlow's Maximum and Minimum return when the operands are
#: +0.0 and -0.0, inside Eigen's whole packets (measured on TensorFlow 2.21's
#: AVX pip wheel, eager and in a tf.function, every broadcast form): the
#: packet max/min on float32/float64 returns the second; the float16 and
#: bfloat16 kernels, computed as float, the first everywhere.  Past the last
#: whole packet (EXTREMUM_PACKET) float32/float64 return the FIRST
#: (ZERO_TIE_TAIL): the scalar tail.  Max and Min follow both tables by the
#: element's flat index in the result (`_extremum`); the engines' element
#: terms say which tie they use ("max"/"min" ZERO_TIE, "max_tail"/"min_tail"
#: ZERO_TIE_TAIL) and the Z3 encoding reads them.
ZERO_TIE = {"float16": "first", "bfloat16": "first", "float32": "second", "float64": "second"}
#: The tie in the scalar tail: the elements at flat index i >= (n // P) * P of
#: a result of n elements, P = EXTREMUM_PACKET[dtype] (all of a float32
#: result of fewer than 8 elements).  float16/bfloat16: no position rule.
ZERO_TIE_TAIL = {"float16": "first", "bfloat16": "first", "float32": "first", "float64": "first"}
#: Eigen's packet size (256-bit AVX packets) for Maximum/Minimum's tie rule.
EXTREMUM_PACKET = {"float32": 8, "float64": 4}
#: The element ops of the engines' terms for Max/Min, with the tie each uses
#: on float dtypes: "table" ZERO_TIE's (inside whole packets), "first" the tail's.
EXTREMUM_OPS = {"max": ("max", "table"), "min": ("min", "table"),
                "max_tail": ("max", "first"), "min_tail": ("min", "first")}


def _kernel(op: str, dtypes: frozenset, *arrays: Any) -> None:
    for a in arrays:
        if a is not None and dtype_name(a.dtype) not in dtypes:
            raise OpError("no-kernel", f"{op} has no kernel for {dtype_name(a.dtype)}")


# -- the bits of a NaN that float arithmetic makes ------------------------------
#
# Outcome equality makes all NaNs equal, but Bitcast shows a NaN's bits, so
# the models give TensorFlow's (measured on TensorFlow 2.21's AddV2, Sub,
# Mul, RealDiv and SquaredDifference, float16, bfloat16, float32 and
# float64, sizes 1 to 40, 100 and 1,003, equal shapes, a scalar or a
# 1-element tensor on either side, row and outer broadcasts: some 480,000
# NaN results, no exception):
#
# * an operand that is NaN is passed on, quieted (sign and payload kept);
#   where both are, the first -- except where Eigen evaluates a commutative
#   op (Add, Mul) with one operand of one element (TensorFlow's BinaryOp
#   "scalar op tensor" and "tensor op scalar" forms), which depend on the
#   element's place, inside Eigen's whole packets (8 float32, 4 float64
#   elements, by flat index) or in the scalar tail past them: with the
#   scalar on the left the first in packets and the second in the tail,
#   with the scalar on the right the second in packets and the first in
#   the tail; float16 has no packets here: the second with a scalar on the
#   left, the first with one on the right;
# * an invalid operation (inf - inf, 0 * inf, 0 / 0) gives the x86 default
#   NaN (negative, quiet, no payload);
# * bfloat16 computes in float32 (the rules above, float32's packets) and
#   rounds to bfloat16 as its Cast does: 0x7fc0 inside whole packets of 8,
#   the canonical NaN of the float32 result's sign in the tail.
#
# numpy is not this (its own loops pick the second of two NaNs past their
# vectorized part, ml_dtypes keeps a bfloat16 NaN's sign everywhere): the
# NaN elements of a result are rewritten (tests/test_arithmetic_nan_bits.py).

_QUIET_BIT = {"float16": 1 << 9, "float32": 1 << 22, "float64": 1 << 51}
_DEFAULT_NAN = {"float16": 0xfe00, "float32": 0xffc00000, "float64": 0xfff8000000000000}
#: Eigen's packet, in elements, of TensorFlow 2.21's AVX wheel
NAN_PACKET = {"float32": 8, "float64": 4, "bfloat16": 8}
_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _has_nan(xp, r) -> bool:
    """Whether the float array `r` holds a NaN, in the fewest numpy calls
    (most results hold none: this is all nan_bits costs them): a few
    elements as Python floats; float32/float64 by their maximum, which is
    NaN if one is (numpy's maximum propagates NaN)."""
    if xp is np and isinstance(r, np.ndarray):
        if r.size <= 32:
            return any(x != x for x in r.ravel().tolist())
        if r.dtype == np.float32 or r.dtype == np.float64:
            return bool(np.isnan(r.max()))
    return bool(xp.isnan(r).any())


def nan_bits(xp, r, a, b=None, commutes: bool = False, lead: int = 0,
             scalar_a: bool | None = None):
    """`r`, the result of an arithmetic op on `a` (and `b`), with its NaN
    elements given TensorFlow's bits (see above); `commutes`: the op is Add
    or Mul (its one-element forms pick by position); the axes after the
    first `lead` (1 for a batch axis) are one tensor; `scalar_a`: whether
    `a` is of rank 0 while `b` is not (default: from their shapes; a batch
    pads ranks, so the batched form says it)."""
    name = dtype_name(r.dtype)
    if name not in FLOAT_DTYPES or not _has_nan(xp, r):
        return r
    if NAN_BITS_LEAN and xp is np and name != "bfloat16" and type(r) is np.ndarray \
            and r.flags.c_contiguous:
        return _nan_bits_lean(r, a, b, commutes, lead, scalar_a, name)
    nan = xp.isnan(r)
    bf16 = name == "bfloat16"
    if bf16 and b is not None and extremum_tiled("bfloat16", a.shape, b.shape, lead):
        # (measured: past some 16,800-49,200 elements TensorFlow's tiled
        # executor evaluates such a broadcast block by block, each with its
        # own scalar tail, where a bfloat16 NaN keeps its sign: the flat
        # index's packets below are not its.  The bound is Max/Min's for
        # their ties, which holds every shape measured tiled and none
        # measured linear: tests/test_review_nan_bits_round16.py)
        raise CannotRunHere(
            f"bfloat16 NaN results of a broadcast of {list(a.shape[lead:])} against "
            f"{list(b.shape[lead:])}: past {TILED_EXTREMUM_BYTES} bytes Eigen's tiled executor "
            "places the packets and scalar tails by block, which is not modelled")
    u = np.uint32 if bf16 else _UINT[r.dtype.itemsize]
    wide = "float32" if bf16 else name
    shape = r.shape[lead:]
    n = math.prod(shape)
    p = NAN_PACKET.get(name)
    packets = (xp.arange(n) < n // p * p).reshape(shape) if p else None

    def operand(x):
        bits = x.view(np.uint16).astype(np.uint32) << np.uint32(16) if bf16 else x.view(u)
        with np.errstate(invalid="ignore"):
            return xp.broadcast_to(bits, r.shape), xp.broadcast_to(xp.isnan(x), r.shape)

    pick = xp.full(r.shape, _DEFAULT_NAN[wide], dtype=u)
    if b is not None:
        bb, nb = operand(b)
        pick = xp.where(nb, bb, pick)
        ab, na = operand(a)
        first = na
        if commutes:
            # (measured: "scalar op tensor" where `a` has one element and `b`
            # more, or `a` is of rank 0 and `b` not -- () op [1] picks the
            # second, [1] op () and [1, 1] op [1] the first; else "tensor op
            # scalar" where `b` has one element)
            one_a, one_b = math.prod(a.shape[lead:]) == 1, math.prod(b.shape[lead:]) == 1
            if scalar_a is None:
                scalar_a = a.ndim == lead and b.ndim > lead
            if (one_a and not one_b) or scalar_a:   # scalar op tensor: the first in packets
                first = na & (packets if packets is not None else False) | na & ~nb
            elif one_b:                             # tensor op scalar: the first in the tail
                first = na & (~packets if packets is not None else True) | na & ~nb
        pick = xp.where(first, ab, pick)
    else:
        ab, na = operand(a)
        pick = xp.where(na, ab, pick)
    pick = pick | u(_QUIET_BIT[wide])
    if bf16:
        tail = ((pick >> np.uint32(16)) & np.uint32(0x8000)) | np.uint32(0x7fc0)
        bits = xp.where(packets, np.uint32(0x7fc0), tail).astype(np.uint16)
    else:
        bits = pick
    return xp.where(nan, bits.view(r.dtype), r)


#: `nan_bits` on numpy arrays of float16, float32 and float64 takes
#: `_nan_bits_lean` (the same bits, fewer passes); False: the general path
#: everywhere (the differential tests' reference)
NAN_BITS_LEAN = True


def _nan_bits_lean(r: np.ndarray, a, b, commutes: bool, lead: int, scalar_a: bool | None,
                   name: str) -> np.ndarray:
    """`nan_bits(np, r, a, b, commutes, lead, scalar_a)` for a C-contiguous
    numpy `r` of float16, float32 or float64 that holds a NaN: the same
    array, bit for bit, in fewer passes over it.

    Why it is the general path's result.  That path builds `pick`, the
    bits each NaN element of the result takes, in layers over the
    default NaN: b's bits where b is NaN, then a's bits where `first`
    (a is NaN, narrowed by Eigen's packets in the one-element forms of a
    commutative op); then sets the quiet bit and writes `pick` into the
    NaN elements of `r` (`where(nan, pick, r)`).  Here each layer is the
    same function of the same masks, with the steps that cannot change
    `pick` left out:

    * the packets' index array (an int64 `arange` and a comparison, over
      the whole result) is made only where it is read, the one-element
      forms of a commutative op; the general path makes it for every
      float32/float64 NaN result and reads it there only;
    * a layer whose mask holds no True leaves `pick` as it was: the
      `where` is not made (most NaN results of the probe's NaN σ come
      from one operand: the other holds none);
    * a layer whose mask is all True gives `pick` that operand's bits
      everywhere (`where(all True, x, y)` is x), a view of them, without
      the layer below it, which it covers; a mask that is the broadcast
      of one operand's `isnan` is tested on that operand, before the
      broadcast (the same Trues, repeated);
    * where no layer holds a True, `pick` is the default NaN everywhere:
      a 0-d array of those bits, which `where` broadcasts, instead of an
      array full of them.

    The quiet bit is or-ed into the same bits, and the last `where` takes
    the same mask, the same `r` and the same bits (a 0-d array of `r`'s
    dtype, or an array of `r`'s shape): a fresh C-contiguous array of
    `r`'s dtype and shape in both, the NaN elements' bits copied, not
    computed (numpy's `where` moves elements as bytes).  bfloat16 (its
    float32 bits and rounding) and other array modules take the general
    path.  tests/test_functions_nan_bits_lean.py compares both paths bit
    for bit, strides included, on every NaN placement, payload, sign,
    broadcast and one-element form, lead axes and dtype."""
    nan = np.isnan(r)
    u = _UINT[r.dtype.itemsize]
    shape = r.shape
    pick = None                  # (None: the default NaN everywhere)
    if b is not None:
        nb = np.isnan(b)
        if nb.any():
            bb = np.broadcast_to(b.view(u), shape)
            pick = bb if nb.all() else np.where(np.broadcast_to(nb, shape), bb, u(_DEFAULT_NAN[name]))
    na = np.isnan(a)
    first = None                 # (None: the broadcast of `na`)
    if b is not None and commutes:
        # (the general path's one-element forms, read the same way)
        one_a, one_b = math.prod(a.shape[lead:]) == 1, math.prod(b.shape[lead:]) == 1
        if scalar_a is None:
            scalar_a = a.ndim == lead and b.ndim > lead
        if (one_a and not one_b) or scalar_a or one_b:
            sub = shape[lead:]
            n = math.prod(sub)
            p = NAN_PACKET.get(name)
            packets = (np.arange(n) < n // p * p).reshape(sub) if p else None
            na_b, nb_b = np.broadcast_to(na, shape), np.broadcast_to(nb, shape)
            if (one_a and not one_b) or scalar_a:
                first = na_b & (packets if packets is not None else False) | na_b & ~nb_b
            else:
                first = na_b & (~packets if packets is not None else True) | na_b & ~nb_b
    if first is None:
        some, every = na.any(), na.all()
    else:
        some, every = first.any(), first.all()
    if some:
        ab = np.broadcast_to(a.view(u), shape)
        if every:
            pick = ab
        else:
            mask = np.broadcast_to(na, shape) if first is None else first
            pick = np.where(mask, ab, u(_DEFAULT_NAN[name]) if pick is None else pick)
    if pick is None:
        bits = np.asarray(u(_DEFAULT_NAN[name]) | u(_QUIET_BIT[name]), dtype=u).view(r.dtype)
    else:
        bits = (pick | u(_QUIET_BIT[name])).view(r.dtype)
    return np.where(nan, bits, r)


def _arith(name: str, ufunc: str, commutes: bool):
    """The language's Add/Sub/Mul: numpy's `ufunc`, NaN bits as TensorFlow's;
    (impl, batched impl)."""
    def on(xp, a, b, lead, scalar_a=None):
        _kernel(name, NUMERIC, a, b)
        return (nan_bits(xp, getattr(xp, ufunc)(a, b), a, b, commutes, lead, scalar_a),)

    def impl(xp, args, attrs):
        return on(xp, args[0], args[1], 0)

    def batched(xp, args, attrs):
        scalar_a = args[0].ndim == 1 and args[1].ndim > 1
        a, b = _pad_batched(args)
        return on(xp, a, b, 1, scalar_a)
    return impl, batched


_add_impl, _add_batched = _arith("Add", "add", True)
_sub_impl, _sub_batched = _arith("Sub", "subtract", False)
_mul_impl, _mul_batched = _arith("Mul", "multiply", True)


@function("Add", 2, 1, batched=_add_batched, commutes=True)
def _add(xp, args, attrs):
    """Elementwise sum (integers wrap around; no bool kernel; a NaN's bits
    as TensorFlow's: nan_bits)."""
    return _add_impl(xp, args, attrs)


@function("Sub", 2, 1, batched=_sub_batched)
def _sub(xp, args, attrs):
    """Elementwise difference (integers wrap around; no bool kernel; a NaN's
    bits as TensorFlow's: nan_bits)."""
    return _sub_impl(xp, args, attrs)


@function("Mul", 2, 1, batched=_mul_batched, commutes=True)
def _mul(xp, args, attrs):
    """Elementwise product (integers wrap around; no bool kernel; a NaN's
    bits as TensorFlow's: nan_bits)."""
    return _mul_impl(xp, args, attrs)


@function("Neg", 1, 1, batched=True)
def _neg(xp, args, attrs):
    """Elementwise negation (the most negative integer stays itself; no
    unsigned or bool kernel)."""
    _kernel("Neg", SIGNED, *args)
    return (xp.negative(args[0]),)


def _numpy_tie(f, dtype: str) -> str:
    """Which operand numpy's `f` (maximum or minimum) returns on +0.0 against
    -0.0 in `dtype`: "first", "second", or "unknown" when its code paths
    (scalar, vectorized, broadcast) differ."""
    from .values import DTYPES
    d = DTYPES[dtype]
    seen = set()
    for x, y in ((-0.0, 0.0), (0.0, -0.0)):
        for sx, sy in (((), ()), ((1,), (1,)), ((5,), (5,)), ((16,), (16,)), ((37,), (37,)),
                       ((7,), ()), ((), (7,))):
            with np.errstate(all="ignore"):
                r = f(np.full(sx, x, d), np.full(sy, y, d))
            for bit in set(np.signbit(np.asarray(r).astype(np.float64)).reshape(-1).tolist()):
                seen.add("first" if bit == bool(np.signbit(x)) else "second")
    return seen.pop() if len(seen) == 1 else "unknown"


#: The float dtypes on which numpy's maximum and minimum already are
#: TensorFlow's for a tie (NaN propagating, that operand on a tie): the fast path.
_NUMPY_IS_TF = {(op, d, t) for op, f in (("max", np.maximum), ("min", np.minimum))
                for d in ZERO_TIE for t in ("first", "second") if _numpy_tie(f, d) == t}


def _extremum_tie(xp, a, b, op: str, tie: str = "table"):
    """Maximum/Minimum element by element with one tie for every element:
    NaN if either operand is NaN; on +0.0 against -0.0 the operand `tie`
    names ("first", "second", or "table": ZERO_TIE's for the dtype).  The
    engines' element ops (EXTREMUM_OPS) fold with this."""
    _kernel("Maximum" if op == "max" else "Minimum", NUMERIC, a, b)
    name = dtype_name(a.dtype)
    if not is_float(a):
        return xp.maximum(a, b) if op == "max" else xp.minimum(a, b)
    if tie == "table":
        tie = ZERO_TIE[name]
    if xp is np and (op, name, tie) in _NUMPY_IS_TF:
        r = xp.maximum(a, b) if op == "max" else xp.minimum(a, b)
    else:
        second = tie == "second"
        if op == "max":
            r = xp.where(a > b, a, b) if second else xp.where(b > a, b, a)
        else:
            r = xp.where(a < b, a, b) if second else xp.where(b < a, b, a)
    return _first_nan(xp, a, b, r)


def _first_nan(xp, a, b, r):
    """`r` with the element of every NaN operand replaced by TensorFlow's
    (`r` itself need not be NaN there: a comparison with NaN is false): the first
    operand's bits where it is NaN, else the second's, verbatim (a
    signaling NaN stays signaling, a bfloat16 payload is kept).  Measured
    on TensorFlow 2.21's Maximum and Minimum, float16, bfloat16, float32
    and float64, sizes 1 to 40, 100 and 1,003, equal shapes and a scalar on
    either side: no exception at any position.  numpy's maximum and its
    NaN-propagating add are not this: a bfloat16 NaN comes back as the
    canonical 0x7fc0/0xffc0, a signaling NaN quieted, and past its
    vectorized loop numpy returns the second of two NaNs
    (tests/test_max_min_nan_bits.py).  A NaN's bits are not part of
    outcome equality, but Bitcast shows them."""
    nan_a, nan_b = xp.isnan(a), xp.isnan(b)
    if not (bool(nan_a.any()) or bool(nan_b.any())):
        return r
    return xp.where(nan_a, a, xp.where(nan_b, b, r)).astype(r.dtype, copy=False)


def extremum_in_packets(dtype: str, n: int, i: int) -> bool:
    """Whether flat index i of a Max/Min result of n elements of `dtype` is
    inside one of Eigen's whole packets (tie ZERO_TIE) rather than in the
    scalar tail (tie ZERO_TIE_TAIL)."""
    p = EXTREMUM_PACKET.get(dtype)
    return p is None or i < (n // p) * p


#: The largest result, in bytes, of a broadcasting Maximum/Minimum whose
#: positions (packets, scalar tail) tfsem models by flat index.  TensorFlow
#: evaluates a broadcast (BCast: neither operand one element, and not both
#: of the result's size) with Eigen's tiled executor: a result larger than
#: one block (about 55 KB, from Eigen's cost model: measured on TensorFlow
#: 2.21, float32 from 13,912 elements, float64 from 6,956, every broadcast
#: form of rank 2 to 5) is split into blocks, each line of a block with its
#: own packets and scalar tail, so ties fall by block layout, not by flat
#: index.  Past this bound (a margin of 3 below the smallest block seen) a
#: tie that position decides is refused (CannotRun) and the engines keep
#: the op uninterpreted.
TILED_EXTREMUM_BYTES = 16384


def extremum_tiled(dtype: str, a_shape: tuple, b_shape: tuple, lead: int = 0) -> bool:
    """Whether a Maximum/Minimum of operands of these shapes (axes after the
    first `lead`) is a broadcast large enough for Eigen's tiled executor to
    split it into blocks (TILED_EXTREMUM_BYTES): its tie positions are not
    modelled."""
    a_shape, b_shape = tuple(a_shape)[lead:], tuple(b_shape)[lead:]
    na, nb = math.prod(a_shape), math.prod(b_shape)
    try:
        n = math.prod(np.broadcast_shapes(a_shape, b_shape))
    except ValueError:
        return False
    if na == 1 or nb == 1 or (na == n and nb == n):
        return False   # scalar_left/right or no broadcast: linear, by flat index
    size = {"float64": 8, "float32": 4}.get(dtype, 2)
    return n * size > TILED_EXTREMUM_BYTES


def _refuse_tiled_ties(xp, a, b, op: str, name: str, lead: int, zeros,
                       what: str = "a tie of +0.0 and -0.0") -> None:
    """CannotRun when a large tiled broadcast (extremum_tiled) meets an
    element `zeros(a, b)` marks (a tie the position decides)."""
    if extremum_tiled(name, a.shape, b.shape, lead) and bool(xp.any(zeros(a, b))):
        tf_op = "Maximum" if op == "max" else "Minimum"
        raise CannotRun(f"TensorFlow's {tf_op} on {name} broadcast {list(a.shape[lead:])} against "
                        f"{list(b.shape[lead:])} with {what}: past "
                        f"{TILED_EXTREMUM_BYTES} bytes Eigen's tiled executor places the packets "
                        f"and scalar tails by block, which is not modelled")


def _signed_zero_tie(a, b):
    return (a == 0) & (b == 0) & (np.signbit(a) != np.signbit(b))


def _extremum(xp, a, b, op: str, lead: int = 0):
    """TensorFlow's Maximum/Minimum: NaN if either operand is NaN; on a tie of
    +0.0 and -0.0 the operand ZERO_TIE names inside Eigen's whole packets,
    ZERO_TIE_TAIL's in the scalar tail, by the element's flat index in the
    broadcast result (its axes after the first `lead`, 1 for a batch axis).
    A tie in a broadcast past TILED_EXTREMUM_BYTES is refused (CannotRun)."""
    name = dtype_name(a.dtype)
    p = EXTREMUM_PACKET.get(name) if is_float(a) else None
    if p is None:
        return _extremum_tie(xp, a, b, op)
    _refuse_tiled_ties(xp, a, b, op, name, lead, _signed_zero_tie)
    shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))[lead:]
    n = math.prod(shape)
    m = (n // p) * p
    if m == n:
        return _extremum_tie(xp, a, b, op, ZERO_TIE[name])
    if m == 0:
        return _extremum_tie(xp, a, b, op, ZERO_TIE_TAIL[name])
    tail = (xp.arange(n) >= m).reshape(shape)
    return xp.where(tail, _extremum_tie(xp, a, b, op, ZERO_TIE_TAIL[name]),
                    _extremum_tie(xp, a, b, op, ZERO_TIE[name]))


def _pad_batched(args):
    rank = max(a.ndim for a in args)
    return tuple(a if a.ndim == rank else a.reshape(a.shape[:1] + (1,) * (rank - a.ndim) + a.shape[1:])
                 for a in args)


def _max_batched(xp, args, attrs):
    a, b = _pad_batched(args)
    return (_extremum(xp, a, b, "max", lead=1),)


def _min_batched(xp, args, attrs):
    a, b = _pad_batched(args)
    return (_extremum(xp, a, b, "min", lead=1),)


@function("Max", 2, 1, batched=_max_batched)
def _max(xp, args, attrs):
    """Elementwise maximum, NaN if either is NaN; a tie of zeros as ZERO_TIE
    inside Eigen's whole packets, as ZERO_TIE_TAIL past them (by flat index)."""
    return (_extremum(xp, args[0], args[1], "max"),)


@function("Min", 2, 1, batched=_min_batched)
def _min(xp, args, attrs):
    """Elementwise minimum, NaN if either is NaN; a tie of zeros as ZERO_TIE
    inside Eigen's whole packets, as ZERO_TIE_TAIL past them (by flat index)."""
    return (_extremum(xp, args[0], args[1], "min"),)


def _require_1d(*arrays):
    for a in arrays:
        if a.ndim != 1:
            raise ShapeError("1-D tensors only")


def _batched_concat(xp, args, attrs):
    """Concat on a leading batch axis: each valuation's 1-D tensors are rows."""
    for a in args:
        if a.ndim != 2:
            raise ShapeError("1-D tensors only")
    return (xp.concatenate([args[0], args[1]], axis=1),)


@function("Concat", 2, 1, batched=_batched_concat)
def _concat(xp, args, attrs):
    """Concatenation of two 1-D tensors."""
    _require_1d(*args)
    return (xp.concatenate([args[0], args[1]]),)


def _batched_split(xp, args, attrs):
    """Split on a leading batch axis: each valuation's 1-D tensor is a row."""
    (a,) = args
    if a.ndim != 2:
        raise ShapeError("1-D tensors only")
    if a.shape[1] % 2:
        raise ShapeError("Split needs an even length")
    h = a.shape[1] // 2
    return (a[:, :h], a[:, h:])


@function("Split", 1, 2, batched=_batched_split)
def _split(xp, args, attrs):
    """The two halves of a 1-D tensor of even length."""
    (a,) = args
    _require_1d(a)
    if a.shape[0] % 2:
        raise ShapeError("Split needs an even length")
    h = a.shape[0] // 2
    return (a[:h], a[h:])


def const_attr_to_json(attrs: Mapping[str, Any]) -> dict:
    """JSON form of a Const node's attributes."""
    return {"value": _const_to_json(attrs["value"])}


def attrs_to_json(fn: Function, attrs: Mapping[str, Any]) -> dict:
    out = {}
    for key, val in attrs.items():
        out[key] = value_to_json(val) if isinstance(val, (Tensor, Error)) else val
    return out


def _plain(v: Any) -> bool:
    """Whether `v` is made of JSON's own kinds only (str, int, bool, None, a
    float that is no NaN, lists of them, dicts of them by str keys): its
    JSON text says it exactly, kind and bits (1, 1.0 and true; -0.0;
    Infinity), and no other such value has that text."""
    t = type(v)
    if t is str or t is int or t is bool or v is None:
        return True
    if t is float:
        return v == v
    if t is list:
        return all(map(_plain, v))
    if t is dict:
        return all(type(k) is str and _plain(x) for k, x in v.items())
    return False


def _tagged(v: Any) -> Any:
    """`v` as JSON in which every value says its kind: ["s", text],
    ["i", n], ["f", the float's 64 bits], a tensor by dtype, shape and
    exact bytes, a dict by its tagged (key, value) pairs in order, ...  No
    two different values (kind, bits, shape) have one text, whatever a
    user's strings, lists and dicts hold."""
    t = type(v)
    if t is str:
        return ["s", v]
    if t is bool:
        return ["b", v]
    if t is int:
        return ["i", v]
    if v is None:
        return ["n"]
    if t is float:
        return ["f", struct.pack("<d", v).hex()]
    if t is list or t is tuple:
        return ["l" if t is list else "u", [_tagged(x) for x in v]]
    if isinstance(v, Tensor):
        if v.dtype == "variant":    # a TensorList (oracle/opdefs/lists.py): as shown
            return ["tv", list(v.shape), v.describe()]
        return ["t", v.dtype, list(v.shape), np.ascontiguousarray(v.array).tobytes().hex()]
    if isinstance(v, Error):
        return ["e", v.reason]
    if isinstance(v, Mapping):
        items = [[_tagged(k), _tagged(x)] for k, x in v.items()]
        items.sort(key=lambda kx: json.dumps(kx[0]))
        return ["d", items]
    if isinstance(v, np.generic):
        return ["g", v.dtype.str, v.tobytes().hex()]
    if isinstance(v, np.ndarray):
        return ["a", v.dtype.str, list(v.shape), np.ascontiguousarray(v).tobytes().hex()]
    if isinstance(v, float):
        return ["f", struct.pack("<d", v).hex()]
    if isinstance(v, (list, tuple)):
        return ["l" if isinstance(v, list) else "u", [_tagged(x) for x in v]]
    if isinstance(v, str):
        return ["s", str(v)]
    if isinstance(v, bool):
        return ["b", bool(v)]
    if isinstance(v, int):
        return ["i", int(v)]
    raise TypeError(f"an attribute of kind {type(v).__name__} has no key")


def attrs_key(attrs: Mapping[str, Any]) -> str:
    """A canonical string for comparing attributes (CSE, program identity,
    the solvers' function names, the symmetry engine's interchangeable
    nodes): equal exactly when the attributes are equal values of the same
    kinds, bit for bit (a tensor's dtype, shape and bytes; a float by its
    bits).

    Two forms, never equal to each other.  Attributes made of JSON's own
    kinds with no float NaN (`_plain`, nearly every node: a TensorFlow
    node's `tf_attrs`, a function's `fn`) are their JSON text, which starts
    with "{".  Any other (a tensor, an error, a float NaN, a tuple, a
    non-str key, a numpy value) is "#" and `_tagged`'s JSON, in which every
    value says its kind.

    **Why.**  JSON writes every float NaN `NaN`, whatever its sign and
    payload, and an op can show them: an op TensorFlow's kernel runs gets
    its node's attributes (`tf_attrs`, oracle/kernels.py `opaque_form`), and
    LeakyRelu's result for x < 0 is x * alpha: alpha -NaN gives -NaN where
    alpha NaN gives NaN, which Bitcast or PackScatter shows; a user's
    function may copy a float attribute into its result.  And a key that
    wrote a tensor, or a NaN, as a JSON dict or list of its own was the key
    of a user's dict or list of that shape too (an int64 tensor was its
    list of elements; a NaN was {"float_bits": ...}): two programs that
    differ only there were one program (`Program.__eq__`, "the rewritten
    program is the original"), one node for the CSE pass, one function for
    the solvers (tests/test_functions_attrs_key_nan.py)."""
    if all(type(k) is str and _plain(v) for k, v in attrs.items()):
        return json.dumps(attrs, sort_keys=True)
    return "#" + json.dumps(_tagged(attrs), separators=(",", ":"))


# ---------------------------------------------------------------------------
# TensorFlow op models (family "tensorflow").
#
# The functions `tfsem.graphdef` maps TensorFlow ops onto are defined with
# their ops in the op registry (oracle/opdefs: math.py, array.py, lists.py);
# here are the helpers they share and the state family's few that remain
# (StackBroadcast, StepToward, ScaleAdd: graphdef/ops.py's optimizers).
# They are registered like any function, so that an imported program written
# as JSON loads again, but they belong to the family "tensorflow": the
# generators and the per-function property tests, which draw from
# `registered()` and `assign_functions()`, see only the core family.
#
# A model is given only where numpy computes bit for bit what TensorFlow's CPU
# kernel computes: integer arithmetic (wrapping), IEEE-exact float operations
# (+, -, *, /, sqrt, comparisons), and data movement.  Float reductions,
# float MatMul (Eigen's blocked GEMM, its summation order) and transcendental
# functions (Eigen's vectorized exp, pow, rsqrt) have no such model: their
# implementation raises :class:`CannotRun`, and in proofs they are
# uninterpreted functions (the checker has no encoding for them).


class CannotRun(RuntimeError):
    """A function with no concrete model was asked to run (an opaque
    TensorFlow op, or a float reduction whose summation order tfsem does not
    model).  Concrete runs stop with this message; proofs treat the function
    as uninterpreted.  `function` is the function's name (set by apply)."""

    function: str | None = None

    def naming_nodes(self, program: Any) -> str:
        """The message, with the program's nodes that use the function."""
        nodes = [n.name for n in program.nodes
                 if self.function and (n.op == self.function or n.attrs.get("fn") == self.function)]
        if not nodes:
            return str(self)
        more = f" and {len(nodes) - 5} more" if len(nodes) > 5 else ""
        return f"{self} (node{'s' if len(nodes) > 1 else ''} {', '.join(nodes[:5])}{more})"


class CannotRunHere(CannotRun):
    """A function that runs concretely at other values but not at these
    (DynamicStitch whose indices leave a row unset, ScatterDiv of the lowest
    integer by -1, a scatter with duplicate indices): a σ at which it is
    raised is skipped by the checker's concrete stages, never taken as a
    counterexample nor as a σ without one (docs/review-counterexample-stages.md)."""


class OpError(ShapeError):
    """The op fails on these arguments (TensorFlow raises an error, the node
    produces the error value `reason`)."""

    def __init__(self, reason: str, message: str = ""):
        super().__init__(message or reason)
        self.reason = reason


TENSORFLOW = "tensorflow"


def _tf(name: str, n_in: int, n_out: int, batched: Impl | bool | str = False,
        **kwargs: Any) -> Callable[[Impl], Impl]:
    return function(name, n_in, n_out, batched=batched, family=TENSORFLOW, **kwargs)


def _int_list(raw: Any, where: str) -> list[int]:
    if not isinstance(raw, list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                            for x in raw):
        raise ValueFormatError(f"{where}: expected a list of integers, got {raw!r}")
    if any(not -(2**31) <= x < 2**31 for x in raw):
        raise ValueFormatError(f"{where}: {raw!r} has an integer out of range")
    return list(raw)


def _int_attr(raw: Any, where: str) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool) or not -(2**31) <= raw < 2**31:
        raise ValueFormatError(f"{where}: expected an integer, got {raw!r}")
    return raw


def _bool_attr(raw: Any, where: str) -> bool:
    if not isinstance(raw, bool):
        raise ValueFormatError(f"{where}: expected true or false, got {raw!r}")
    return raw


def _dtype_attr(raw: Any, where: str) -> str:
    from .values import DTYPES
    if raw not in DTYPES:
        raise ValueFormatError(f"{where}: expected a dtype ({', '.join(DTYPES)}), got {raw!r}")
    return raw


def _str_attr(raw: Any, where: str) -> str:
    if not isinstance(raw, str) or not raw:
        raise ValueFormatError(f"{where}: expected a non-empty string, got {raw!r}")
    return raw


def _json_attr(raw: Any, where: str) -> dict:
    """`tf_attrs` from the program format: an object of JSON values, each
    non-finite float in it written as {"float": TEXT} (oracle/float_attrs.py)."""
    if not isinstance(raw, dict):
        raise ValueFormatError(f"{where}: expected an object, got {raw!r}")
    try:
        return float_attrs.attrs_from_json(raw, where)
    except ValueError as exc:
        raise ValueFormatError(str(exc)) from None


def _is_float(a: Any) -> bool:
    return is_float(a)


def _no_float(op: str, *arrays: Any, why: str) -> None:
    if any(a is not None and _is_float(a) for a in arrays):
        raise CannotRun(f"cannot run TensorFlow op {op} on floating-point tensors concretely: "
                        f"{why}; in proofs it is an uninterpreted function")


def _float_only(op: str, *arrays: Any) -> None:
    if any(not _is_float(a) for a in arrays):
        raise OpError("no-kernel", f"{op} has no integer kernel")


def _axes(a, axes: Sequence[int]) -> tuple[int, ...]:
    out = []
    for x in axes:
        # (a scalar has no axis: TensorFlow 2.21's Sum of a scalar along 0
        # or -1 fails, "Invalid reduction dimension 0 for input with 0
        # dimensions", measured)
        if not -a.ndim <= x < a.ndim:
            raise ShapeError(f"axis {x} out of range for rank {a.ndim}")
        out.append(x % a.ndim)
    if len(set(out)) != len(out):   # TensorFlow: "Axes contains duplicate dimension"
        raise ShapeError(f"axes {list(axes)} contain a duplicate dimension")
    return tuple(sorted(out))


_REDUCTION_ORDER = "tfsem does not model the summation order of Eigen's reductions"
_GEMM_ORDER = "tfsem does not model the summation order of Eigen's matrix product"


@_tf("NoOp", 0, 0, batched=True)
def _noop(xp, args, attrs):
    """No result: a join of control edges (TensorFlow's NoOp, tf.group)."""
    return ()


# StackBroadcast, StepToward and ScaleAdd (the float32 Momentum and Adam
# models' assign functions) are the state family's: oracle/opdefs/state.py.


# -- TensorFlow's float arithmetic: subnormals flushed -------------------------
#
# TensorFlow runs CPU kernels with the processor's flush-to-zero and
# denormals-are-zero modes on (the executor's ScopedFlushDenormal): a
# subnormal float argument counts as a zero of its sign, and a subnormal
# result becomes a zero of its sign.  Checked against TensorFlow 2.21's
# kernels: Add, Sub, Maximum, Minimum, RealDiv, Sqrt, Relu and AddN flush;
# Neg and Abs (sign-bit operations) do not.  `F.ftz` is F with both flushes:
# ftz(F(ftz(a), ftz(b))).  On integers it is F.  The graph importer maps a
# float op onto F.ftz; tfsem's own F (JSON programs) keeps IEEE subnormals.

FTZ_SUFFIX = ".ftz"


def _flush_by_value(xp, a):
    """`_flush` by comparisons with the smallest normal (any array module)."""
    tiny = a.dtype.type(finfo(a.dtype).tiny)
    sub = (a != 0) & (xp.abs(a) < tiny)
    if not bool(xp.any(sub)):
        return a
    return xp.where(sub, xp.copysign(xp.zeros_like(a), a), a)


def _bit_layout(dtype: Any) -> tuple | None:
    """(the unsigned dtype of its width, then as scalars of it: the sign
    bit, the bits of the magnitude, the largest magnitude's bits of a
    subnormal, one) of a float dtype (None: not one of tfsem's)."""
    name = dtype_name(dtype)
    if name not in FLOAT_DTYPES:
        return None
    from .values import BITS_DTYPES, FLOAT_FORMATS
    u = BITS_DTYPES[name]
    width = u.itemsize * 8
    mantissa = FLOAT_FORMATS[name][1] - 1
    sign = 1 << (width - 1)
    return u, u.type(sign), u.type(sign - 1), u.type((1 << mantissa) - 1), u.type(1)


#: Arrays of at most this many float32/float64 elements are searched for a
#: subnormal element by element (`_flush`); their smallest normals.
_SMALL_FLUSH = 32
_SMALL_TINY = {np.dtype(np.float32): float(np.finfo(np.float32).tiny),
               np.dtype(np.float64): float(np.finfo(np.float64).tiny)}

_LAYOUTS = {d: _bit_layout(d) for d in (np.dtype(np.float16), np.dtype(np.float32),
                                         np.dtype(np.float64))}


#: id(array) -> a weak reference to it, for read-only arrays that own their
#: data (a Tensor's) and hold no subnormal of their float dtype: a flushed
#: function's results (`Function.flushes_results`) and the arrays `_flush`
#: searched and found none in.  At most FLUSHED_KEPT, all dropped when full.
_flushed: dict[int, Any] = {}
FLUSHED_KEPT = 1 << 16


def _mark_flushed(a: np.ndarray) -> None:
    """Remember that `a` (read-only, its own data) has no subnormal."""
    if a.flags.writeable or a.base is not None:
        return
    try:
        ref = weakref.ref(a)
    except TypeError:
        return
    if len(_flushed) >= FLUSHED_KEPT:
        _flushed.clear()
    _flushed[id(a)] = ref


def _flush(xp, a):
    """Subnormal floats of any float dtype replaced by zeros of the same sign.

    On numpy arrays by their bits (one integer pass finds the subnormals:
    exponent field zero and significand non-zero, i.e. 1 <= |bits| <= the
    largest subnormal's; a subnormal's bits become its sign bit, the zero of
    its sign), which is what the comparisons with the smallest normal
    (`_flush_by_value`, any array module) compute, in a fraction of the
    time (tests/test_functions_flush.py compares the two bit for bit)."""
    if xp is not np or not isinstance(a, np.ndarray):
        return _flush_by_value(xp, a)
    fixed = not a.flags.writeable and a.base is None
    if fixed:
        known = _flushed.get(id(a))
        if known is not None and known() is a:
            return a      # (searched before, or a flushed function's result)
    dt = a.dtype
    if a.size <= _SMALL_FLUSH:
        tiny = _SMALL_TINY.get(dt)
        if tiny is not None:
            # (a few elements: looked at as Python floats, exact widenings
            # of float32/float64, in a fraction of the numpy calls' fixed
            # cost: 0.5 against 7 µs for a row of 8; NaN compares false)
            for x in a.ravel().tolist():
                if 0.0 < abs(x) < tiny:
                    break
            else:
                return a
            fixed = False
    layout = _LAYOUTS.get(dt)
    if layout is None:
        layout = _LAYOUTS[dt] = _bit_layout(dt)
        if layout is None:
            return _flush_by_value(xp, a)
    u, sign, magnitude, largest, one = layout
    bits = a.view(u)
    # one comparison finds 1 <= |bits| <= largest (`_magnitudes_less_one`)
    mag = _magnitudes_less_one(bits, magnitude, one)
    # (no element below `largest` is the least one, `largest` itself
    # counted (an empty array's), not below it: a reduction, with no
    # array of booleans made where none is found, the common case; 25-30%
    # of a float32 search of 10,000 elements or more)
    if mag.min(initial=largest) >= largest:
        if fixed:
            _mark_flushed(a)
        return a
    sub = mag < largest
    if not a.ndim:
        sub = sub.reshape(())
    return np.where(sub, np.bitwise_and(bits, sign), bits).view(dt)


def _magnitudes_less_one(bits: np.ndarray, magnitude, one) -> np.ndarray:
    """|bits| - 1 of each element of `bits` (a float array viewed as
    unsigned integers; `magnitude` masks the sign off), at least 1-d: a
    zero's wraps to the largest unsigned value, so one comparison finds
    the small magnitudes (`_flush`, `_none_low`).  (On an array: a 0-d one
    would give numpy scalars, whose wrap-around warns.)"""
    mag = np.bitwise_and(bits if bits.ndim else bits.reshape(1), magnitude)
    mag -= one
    return mag


def ftz(xp, a):
    """Subnormal floats replaced by zeros of the same sign, on the dtypes whose
    arithmetic TensorFlow flushes (FLUSHED_DTYPES: not float16); other
    arrays unchanged."""
    if a is None or dtype_name(a.dtype) not in FLUSHED_DTYPES:
        return a
    return _flush(xp, a)


#: The functions whose rounding may carry a result from below the smallest
#: normal up to it (a product or quotient; a sum below it is exact).
#: (DivNoNan: RealDiv's quotient where its divisor is not zero, +0 where it is)
_ROUNDS_UP_TO_TINY = frozenset({"Mul", "RealDiv", "Square", "SquaredDifference", "DivNoNan"})


def _tiny_after_rounding(name: str, args: Sequence[Any], r: Any, xp: Any = np) -> Any:
    """`r` (a flushed function's result, its arguments already flushed) with
    each ±smallest normal that x86's flush-to-zero turns into ±0 replaced by
    it.  The CPU detects tininess *after rounding with an unbounded
    exponent* (to the dtype's precision: 24 bits for float32, 53 for
    float64; a bfloat16 op is a float32 op rounded to bfloat16): an exact
    result in [tiny - ulp(tiny)/2, tiny - ulp(tiny)/4] (float32) rounds to
    tiny on the subnormal grid, as numpy does, but to a 24-bit value below
    tiny, which the CPU flushes (measured on TensorFlow 2.21: Mul of
    1.2391796e-38 and 0.9486069 is 0.0, (2^-125 - 2^-149) / 2 is 0.0).  The
    operation is redone, where some result is ±tiny, on arguments scaled by
    powers of two (exact: they are normal or zero) so that its result is
    normal, where it rounds as with an unbounded exponent."""
    r = xp.asarray(r)
    dt = dtype_name(r.dtype)
    if dt not in FLUSHED_DTYPES or name not in _ROUNDS_UP_TO_TINY or r.size == 0:
        return r
    tiny = float(finfo(r.dtype).tiny)
    at = xp.abs(r) == r.dtype.type(tiny)
    if not bool(xp.any(at)):
        return r
    work = np.dtype(np.float32) if dt == "bfloat16" else r.dtype
    s, half = work.type(2.0 ** 64), work.type(2.0 ** 32)
    with np.errstate(all="ignore"):
        if name == "SquaredDifference":    # d = a - b, rounded in the dtype first
            d = xp.subtract(args[0], args[1]).astype(work)
            v = (d * half) * (d * half)
        elif name == "Square":
            x = xp.asarray(args[0]).astype(work)
            v = (x * half) * (x * half)
        else:
            x, y = xp.asarray(args[0]).astype(work), xp.asarray(args[1]).astype(work)
            if name == "Mul":              # the smaller operand scaled up
                small = xp.abs(x) <= xp.abs(y)
                v = xp.where(small, x, y) * s * xp.where(small, y, x)
            else:                          # RealDiv: |x| <= 1, or |y| past 2^126
                v = xp.where(xp.abs(x) <= 1, (x * s) / y, x / (y / s))
        below = at & (xp.abs(v.astype(np.float64)) < tiny * 2.0 ** 64)
    if not bool(xp.any(below)):
        return r
    return xp.where(below, xp.copysign(xp.zeros_like(r), r), r)


def flushed_arithmetic(name: str, *args: Any, xp: Any = np) -> Any:
    """`name` ("Mul", "RealDiv" or "Square") on arrays of the array module
    `xp` as TensorFlow's CPU runtime computes it: arguments and result
    flushed, a result rounded up to the smallest normal included
    (`_tiny_after_rounding`).  For the state family's models (optimizer
    updates, scatters), which compute with the array module directly."""
    flushed = tuple(ftz(xp, xp.asarray(a)) for a in args)
    with np.errstate(all="ignore"):
        r = (xp.multiply(flushed[0], flushed[0]) if name == "Square" else
             getattr(xp, {"Mul": "multiply", "RealDiv": "divide"}[name])(*flushed))
    return ftz(xp, _tiny_after_rounding(name, flushed, r, xp))


def run_flushed(base: Function, xp: Any, args: Sequence[Any], attrs: Mapping[str, Any],
                clean: Callable[[Any], bool] | None = None) -> tuple:
    """`flushed_variant(base)`'s body: `base` on the arguments with
    subnormals flushed, its results flushed.  `clean(a)`: an argument known
    to hold no subnormal (`ftz` of it would be itself), not searched again."""
    flushed = tuple(a if clean is not None and clean(a) else ftz(xp, a) for a in args)
    out = base.impl(xp, flushed, attrs)
    if base.name in _ROUNDS_UP_TO_TINY:
        # (a result with neither a subnormal nor ±tiny is its own flushed
        # result: `_none_low` says why; the others as before)
        return tuple(r if FUSED_TINY_SEARCH and xp is np and _none_low(r) else
                     ftz(xp, xp.asarray(_tiny_after_rounding(base.name, flushed, r, xp)))
                     for r in out)
    return tuple(ftz(xp, xp.asarray(r)) for r in out)


#: `run_flushed` searches a product's or quotient's float32/float64 result
#: once for both a subnormal and ±tiny (`_none_low`) before
#: `_tiny_after_rounding`'s own search for ±tiny; False: that search alone,
#: as before (the differential tests' reference)
FUSED_TINY_SEARCH = True


def _none_low(r: Any) -> bool:
    """Whether `r`, a numpy array of float32 or float64, holds neither a
    subnormal nor ±tiny (the smallest normal); False where it may, or is
    of another kind.

    Why `r` is then what `_tiny_after_rounding` and `ftz` make of it.
    `_tiny_after_rounding` changes only elements equal to ±tiny (`at`), so
    it returns `r` itself where none is; `ftz` then finds no subnormal, and
    `_flush` returns `r` itself too.  The one pass: with |bits| the bits
    without the sign, a subnormal is 1 <= |bits| <= L (L the largest
    subnormal's bits, `_bit_layout`) and ±tiny is |bits| = L + 1 (the
    smallest exponent, significand zero), so both are exactly
    1 <= |bits| <= L + 1, which `_flush`'s wrap-around comparison
    (|bits| - 1 < L) extends by one: |bits| - 1 <= L (a zero's |bits| - 1
    wraps to the largest unsigned value; NaN and infinity are far above).
    So `run_flushed` returns `r` itself for it, as the two would: the array
    is searched once instead of twice (the abs and comparison with tiny,
    then the subnormal search), and where either is found the two
    functions run as before.  (`any(m <= L)` is `min(m) <= L`: a
    reduction, with no array of booleans made.)  tests/test_functions_flush.py
    compares the results with this on and off, bit for bit."""
    if type(r) is not np.ndarray:
        return False
    layout = _FUSED_LAYOUTS.get(r.dtype)
    if layout is None:
        return False
    if r.size <= _SMALL_FLUSH:
        if not SMALL_NONE_LOW:
            return False
        # (a few elements as Python floats, exact widenings of float32 and
        # float64, as `_flush`'s own small search reads them: a subnormal is
        # 0 < |x| < tiny and ±tiny is |x| = tiny, so both are exactly
        # 0 < |x| <= tiny; NaN compares false, as its bits are far above;
        # 0.5 µs for 8 elements, against the abs, comparison and any of
        # `_tiny_after_rounding` and the loop of `_flush`: 3-4 µs.  Where
        # none is found `run_flushed` returns `r` itself, as those two do:
        # `_tiny_after_rounding` changes only ±tiny elements and returns
        # its argument where there is none, and `_flush` returns a small
        # array with no subnormal itself)
        tiny = _SMALL_TINY[r.dtype]
        for x in r.ravel().tolist():
            if 0.0 < abs(x) <= tiny:
                return False
        return True
    u, magnitude, largest, one = layout
    return not _magnitudes_less_one(r.view(u), magnitude, one).min() <= largest


#: `_none_low` decides arrays of at most _SMALL_FLUSH elements too, by a
#: loop over their elements as Python floats; False: they go the two
#: searches' way, as before (the differential tests' reference)
SMALL_NONE_LOW = True

#: `_none_low`'s layouts: float32 and float64 (numpy's own; bfloat16 and
#: float16 go the two searches' way)
_FUSED_LAYOUTS = {d: (lay[0], lay[2], lay[3], lay[4]) for d, lay in _LAYOUTS.items()
                  if d in (np.dtype(np.float32), np.dtype(np.float64))}


def flushed_variant(base: Function) -> Function:
    """`base` with subnormal arguments and results flushed (not registered:
    oracle/opdefs/math.py gives it to the op that produces it).  A result
    rounded up to the smallest normal from below is flushed as the CPU
    does (`_tiny_after_rounding`)."""
    def impl(xp, args, attrs):
        return run_flushed(base, xp, args, attrs)
    impl.flushed_base = base   # (backends/execute.py's Memo runs it with `clean`)
    doc = f"{base.name} with subnormal arguments and results flushed to zero (TensorFlow's CPU runtime)"
    # (commutes as `base` does: the flush of arguments and results, and
    # `_tiny_after_rounding`, treat the two arguments alike: `_commuted`)
    return Function(base.name + FTZ_SUFFIX, base.n_in, base.n_out, impl, doc=doc,
                    strict_args=base.strict_args, attrs=base.attrs, pure=False,
                    family=TENSORFLOW, flushes_results=True, commutes=base.commutes)


def flushed_extremum(base: Function) -> Function:
    """Max.ftz / Min.ftz: `flushed_variant(base)`, except on bfloat16, whose
    Maximum/Minimum flush subnormals only inside Eigen's whole packets (8
    elements, by flat index in the result) and in the scalar tail treat them
    in a way not modelled here (an operand broadcast from a scalar is
    flushed, a tensor's element kept, and more; measured on TensorFlow 2.21):
    a bfloat16 subnormal read by a tail element is refused (CannotRun)."""
    flushed = flushed_variant(base)
    tf_op = "Maximum" if base.name == "Max" else "Minimum"

    def impl(xp, args, attrs):
        a, b = args
        if dtype_name(a.dtype) == "bfloat16" and dtype_name(b.dtype) == "bfloat16":
            tiny = float(np.finfo(np.float32).tiny)   # bfloat16's smallest normal
            # a large broadcast: the tails are by block (TILED_EXTREMUM_BYTES)
            _refuse_tiled_ties(xp, a, b, base.name.lower(), "bfloat16", 0, lambda x, y: (
                ((x != 0) & (xp.abs(x.astype(np.float32)) < tiny)).any()
                | ((y != 0) & (xp.abs(y.astype(np.float32)) < tiny)).any()), "a subnormal")
            shape = tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))
            n = math.prod(shape)
            m = n // 8 * 8
            if m < n:
                for x in (a, b):
                    t = xp.broadcast_to(x, shape).reshape(-1)[m:].astype(np.float32)
                    if bool(((t != 0) & (xp.abs(t) < tiny)).any()):
                        raise CannotRun(f"TensorFlow's {tf_op} on a bfloat16 subnormal in Eigen's "
                                        f"scalar tail (elements {m}..{n - 1} of {n}) is not modelled")
        return flushed.impl(xp, args, attrs)
    return dataclasses.replace(flushed, impl=impl)


# (Which functions have a `.ftz` variant, the language's arithmetic and the
# TensorFlow family's, oracle/opdefs/math.py says: it registers them all.)


_OPAQUE_PREFIX = "tf."


def opaque_name(op: str, n_in: int, n_out: int) -> str:
    """The function name of TensorFlow op `op` with no model, taking n_in
    tensors and giving n_out: `tf.OP/N_IN/N_OUT`."""
    return f"{_OPAQUE_PREFIX}{op}/{n_in}/{n_out}"


def _opaque_function(name: str) -> Function | None:
    import re
    m = re.fullmatch(r"tf\.([A-Za-z0-9_>.-]+)/(\d{1,3})/(\d{1,3})", name)
    if not m:
        return None
    op, n_in, n_out = m.group(1), int(m.group(2)), int(m.group(3))

    def impl(xp, args, attrs):
        raise CannotRun(f"cannot run TensorFlow op {op} concretely: tfsem has no model of it "
                        "(in proofs it is an uninterpreted function)")
    # (its inputs may have different dtypes and its results any dtype: the
    # kernel says, where one runs it)
    return register(Function(name, n_in, n_out, impl,
                             doc=f"TensorFlow's {op} with no model: uninterpreted in proofs; "
                                 "concrete runs use TensorFlow's kernel where TensorFlow is "
                                 "installed and the op is known deterministic (docs/kernels.md), "
                                 "else cannot run",
                             attrs={"tf_attrs": _json_attr}, family=TENSORFLOW, pure=False,
                             casts=True, mixed_dtypes=True,
                             tf_kernel=_kernels.opaque_form(op)))
