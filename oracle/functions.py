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

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .values import (DTYPE_MISMATCH, SHAPE_MISMATCH, Error, Tensor, Value,
                     ValueFormatError, value_from_json, value_to_json)

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

    @property
    def assignable(self) -> bool:
        return self.n_in == 2 and self.n_out == 1

    def strict(self) -> tuple[int, ...]:
        return tuple(range(self.n_in)) if self.strict_args is None else self.strict_args

    def apply(self, args: Sequence[Value], attrs: Mapping[str, Any] | None = None,
              xp: Any = np) -> tuple[Value, ...]:
        """Apply to TF values, with the error discipline described above."""
        for i in self.strict():
            if isinstance(args[i], Error):
                return (args[i],) * self.n_out
        used = [a for i, a in enumerate(args) if i in self.strict() and isinstance(a, Tensor)]
        if len({a.dtype for a in used}) > 1:
            return (Error(DTYPE_MISMATCH),) * self.n_out
        arrays = tuple(a.array if isinstance(a, Tensor) else None for a in args)
        try:
            with np.errstate(all="ignore"):
                results = self.impl(xp, arrays, attrs or {})
        except ShapeError:
            return (Error(SHAPE_MISMATCH),) * self.n_out
        except ValueError:  # numpy's broadcasting and concatenation errors
            return (Error(SHAPE_MISMATCH),) * self.n_out
        if len(results) != self.n_out:
            raise RuntimeError(f"function {self.name} returned {len(results)} results, "
                               f"declared {self.n_out}")
        return tuple(_as_tensor(r, used) for r in results)


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
    _REGISTRY[fn.name] = fn
    return fn


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
    return _REGISTRY[name]


def lookup(name: str) -> Function | None:
    return _REGISTRY.get(name)


def registered() -> Mapping[str, Function]:
    return dict(_REGISTRY)


def assign_functions() -> list[str]:
    return sorted(n for n, f in _REGISTRY.items() if f.assignable)


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


@function("Add", 2, 1, batched=BROADCASTING)
def _add(xp, args, attrs):
    """Elementwise sum (int64 wraps around)."""
    return (xp.add(args[0], args[1]),)


@function("Sub", 2, 1, batched=BROADCASTING)
def _sub(xp, args, attrs):
    """Elementwise difference (int64 wraps around)."""
    return (xp.subtract(args[0], args[1]),)


@function("Mul", 2, 1, batched=BROADCASTING)
def _mul(xp, args, attrs):
    """Elementwise product (int64 wraps around)."""
    return (xp.multiply(args[0], args[1]),)


@function("Neg", 1, 1, batched=True)
def _neg(xp, args, attrs):
    """Elementwise negation."""
    return (xp.negative(args[0]),)


@function("Max", 2, 1, batched=BROADCASTING)
def _max(xp, args, attrs):
    """Elementwise maximum, NaN if either is NaN (numpy.maximum)."""
    return (xp.maximum(args[0], args[1]),)


@function("Min", 2, 1, batched=BROADCASTING)
def _min(xp, args, attrs):
    """Elementwise minimum, NaN if either is NaN (numpy.minimum)."""
    return (xp.minimum(args[0], args[1]),)


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


def attrs_key(attrs: Mapping[str, Any]) -> str:
    """A canonical string for comparing attributes (CSE, signatures)."""
    return json.dumps({k: value_to_json(v) if isinstance(v, (Tensor, Error)) else v
                       for k, v in sorted(attrs.items())}, sort_keys=True)
