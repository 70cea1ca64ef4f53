"""The op registry: one place per op (the package docstring says more).

An :class:`OpDef` holds every facet of one TensorFlow op
(docs/writing-an-op-model.md):

* its TensorFlow name, a one-line description, which inputs are read at
  import time (`static`) or are resource handles (`resources`), the names of
  its output args;
* `build(b)`: how graph import turns a node into tfsem nodes, through the
  importer's builder `b` (graphdef/importer.py; the builder's calls are
  listed in graphdef/ops.py);
* `functions`: the tfsem functions those nodes apply, each a
  :class:`~tfsem.oracle.functions.Function` with its value semantics
  (`impl`), its Z3 encoding (`encoding`: an :class:`Elementwise`, or None:
  uninterpreted) and its export (`export`: the TensorFlow nodes it is
  written back as).  A function several ops share (Add for TensorFlow's Add
  and AddV2) is given once, as a Function, and named by the others;
* `stateful`: None for a pure op, else how it touches state.

Families are modules of this package (`math`, `array`, ...): a contributor
adds an op by copying a neighbour in its family.  The layers stay as they
were: this package is part of the oracle (it imports the function registry
and numpy, never z3, the checker or graph import); an encoding is a
function of the z3 module it is given (`Elementwise.z3`), an export a
function of the exporter's context, so the checker and the exporter, which
read this registry, are never imported by it.

The registry is read by graph import (graphdef/ops.py's op table mirrors
:func:`table`), by the generic checker (checking/generic.py: `Elementwise`
encodings), and by export (graphdef/exporter.py: `Function.export`).
Packages add OpDefs through the entry-point group `tfsem.ops` (an OpDef, a
list of them, or a function returning either), as they add OpModels.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .. import functions as fns
from ..functions import Function


@dataclass(frozen=True)
class Elementwise:
    """The Z3 encoding of an element-wise function (the generic checker,
    checking/generic.py): each result element is `z3(z3_module, dtype, xs)`
    of the operands' elements at the same (broadcast) index.  `z3_module`
    is z3 with the check's Z3 context filled in wherever a function takes
    one (checking/z3context.py: a context per thread); Python's arithmetic
    operators on Z3 floats take the main context's rounding mode, so an
    encoding calls z3's functions on floats (`z3.fpAdd(z3.RNE(), a, b)`).

    `key` names the term (unique per encoding); `fold(*arrays)` computes the
    same on constant numpy arrays (the checker folds constant operands: it
    must be the function's value semantics bit for bit); `z3` raises
    ValueError for a dtype it has no encoding of; `commutative` lists the
    dtypes on which the operands may be swapped (results equal under SPEC
    equality).  `result`, when given, is the result's dtype as a function
    of the operands' dtypes (a comparison's bool, Select's x's: the
    operands need not share one dtype), and `z3` then gets the first
    operand's dtype; without it every operand and the result have one
    dtype, which `z3` gets."""

    key: str
    fold: Callable[..., Any]
    z3: Callable[[Any, str, list], Any]
    commutative: frozenset = frozenset()
    result: Callable[[tuple], str] | None = None


class FoldsOnConstants:
    """The encoding of a run-time shape function (the array family's Shape,
    ReshapeTo, GatherV2, ...): uninterpreted in proofs, except where its
    result is the same at every σ, which the checker computes with the
    function itself (checking/symbolic.py `_fold_shape_function`: every
    argument a constant; Shape, Size and Rank of any tensor, whose kind is
    static; a constant operand turns ReshapeTo, SumAlong, ... into Reshape,
    Sum, ...)."""

    def __repr__(self) -> str:
        return "FOLDS_ON_CONSTANTS"


#: The one FoldsOnConstants value (`Function.encoding=FOLDS_ON_CONSTANTS`).
FOLDS_ON_CONSTANTS = FoldsOnConstants()


@dataclass(frozen=True)
class OpDef:
    """Every facet of one TensorFlow op (see the module docstring)."""

    op: str
    doc: str
    build: Callable[[Any], Sequence[Any]]
    family: str
    #: the tfsem functions the import model produces: a Function (defined
    #: here, registered by :func:`define`) or the name of one defined
    #: elsewhere (by a neighbour, or the language's own: Add, Identity, ...)
    functions: tuple[Function | str, ...] = ()
    static: tuple[int, ...] = ()
    resources: tuple[int, ...] = ()
    #: None: the op has no effect on state; else how it touches it
    stateful: str | None = None
    output_args: tuple[str, ...] = ()
    #: export facets of functions this op names but does not define (the
    #: language's Add is written back as TensorFlow's AddV2): name -> export
    exports: Mapping[str, Callable[[Any], list]] = field(default_factory=dict)
    #: where the op's value semantics lives when it is not a function of
    #: `functions` (a program node kind of the language, a session's queue
    #: op, ...): one reference, e.g. "oracle/controlflow.py (SPEC section 9)"
    semantics: str = ""
    #: the Z3 facet of an op that is not a function of `functions`: how the
    #: checker treats it ("checking/control_flow.py: ..."), or "not encoded: ..."
    z3: str = ""
    #: export facets of the program nodes this op's import makes that are not
    #: functions: a node kind of the language (Switch, Merge, ...) or a
    #: session's queue op (QueueEnqueue, ...) -> export (node_export_of)
    node_exports: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    #: functional control flow (If, While, Case): the key of the lowering
    #: graph import applies before the op table is read ("if", "while",
    #: "case": graphdef/functions.py), and the attributes naming its functions
    lowering: str | None = None
    function_attrs: tuple[str, ...] = ()
    #: why TensorFlow's CPU kernel of this op is a function of its inputs
    #: (op determinism on, one thread: oracle/kernels.py runs it where a
    #: function of the op cannot run itself); "": it is never run
    kernel: str = ""
    #: type attributes with a default in TensorFlow's op registry, which a
    #: SavedModel strips from its functions' nodes: attribute -> DT_ name
    type_defaults: Mapping[str, str] = field(default_factory=dict)

    def function_names(self) -> tuple[str, ...]:
        return tuple(f if isinstance(f, str) else f.name for f in self.functions)


#: The checker's own term names (checking/symbolic.py, checking/generic.py: the
#: language's element operations and structural terms): no encoding may take one.
RESERVED_KEYS = frozenset({"add", "sub", "mul", "neg", "max", "min", "const", "feed", "init",
                           "leaf", "concat", "split"})

_OPS: dict[str, OpDef] = {}
_ENCODINGS: dict[str, Elementwise] = {}
#: the Function each defined name was registered from (registration may wrap it)
_SOURCES: dict[str, Function] = {}
_EXPORTS: dict[str, Callable[[Any], list]] = {}
_NODE_EXPORTS: dict[str, Callable[..., Any]] = {}
_KNOWN: dict[str, "KnownOp"] = {}
_generation = 0


def define(d: OpDef, *, replace: bool = False) -> OpDef:
    """Register an op with all its facets: its new functions enter the
    function registry, their encodings the checker's table, the op the
    import table (graphdef/ops.py).  An op already defined is refused
    unless `replace`."""
    global _generation
    if d.op in _OPS and not replace:
        raise ValueError(f"op {d.op!r} is already defined (family {_OPS[d.op].family})")
    new = [f for f in d.functions if not isinstance(f, str)]   # (names: `problems()` checks)
    for f in new:   # everything is checked before anything is registered
        if not replace and _SOURCES.get(f.name) is not f and fns.lookup(f.name) is not None:
            raise ValueError(f"function {f.name!r} is already registered")
        enc = f.encoding
        if enc is None or enc is FOLDS_ON_CONSTANTS:
            continue
        if not isinstance(enc, Elementwise):
            raise TypeError(f"function {f.name}: encoding must be an Elementwise, "
                            "FOLDS_ON_CONSTANTS or None")
        if enc.key in RESERVED_KEYS:
            raise ValueError(f"function {f.name}: encoding key {enc.key!r} is one of the "
                             "checker's own terms")
        old = _ENCODINGS.get(enc.key)
        if old is not None and old is not enc and not replace:
            raise ValueError(f"encoding key {enc.key!r} is already used")
    for f in new:
        if _SOURCES.get(f.name) is not f:
            fns.register(f, replace=replace)
            _SOURCES[f.name] = f
        if isinstance(f.encoding, Elementwise):
            _ENCODINGS[f.encoding.key] = f.encoding
    for name, export in d.exports.items():
        _EXPORTS[name] = export
    for kind, export in d.node_exports.items():
        old_export = _NODE_EXPORTS.get(kind)
        if old_export is not None and old_export is not export and not replace:
            raise ValueError(f"op {d.op}: node kind {kind!r} already has an export")
        _NODE_EXPORTS[kind] = export
    _OPS[d.op] = d
    _generation += 1
    return d


@dataclass(frozen=True)
class KnownOp:
    """The facts tfsem knows of an op it has no import model of (no
    :class:`OpDef`): whether graph import makes it an uninterpreted function
    `tf.OP/N_IN/N_OUT` by its name alone (`uninterpreted`: a pure function
    of its inputs that tfsem does not compute bit for bit; its number of
    results is the number its consumers use), the names of its output args
    (how `node:arg:k` inside a function body names a port), and why
    TensorFlow's CPU kernel of it is a function (`kernel`; "": never run).
    An op with none of these is refused at import, as any op the registry
    does not know."""

    op: str
    family: str
    uninterpreted: bool = False
    output_args: tuple[str, ...] = ()
    kernel: str = ""


def _names(ops: str | Iterable[str]) -> list[str]:
    return ops.split() if isinstance(ops, str) else list(ops)


def known(ops: str | Iterable[str], family: str, *, uninterpreted: bool = False,
          kernel: str = "", output_args: tuple[str, ...] = ()) -> None:
    """Record the facts of ops without an import model (:class:`KnownOp`;
    `ops`: one name or several, separated by white space).  An op already
    defined or known is refused."""
    global _generation
    for name in _names(ops):
        if name in _OPS or name in _KNOWN:
            raise ValueError(f"op {name!r} is already defined or known")
        _KNOWN[name] = KnownOp(name, family, uninterpreted, tuple(output_args), kernel)
    _generation += 1


def kernels_are_functions(ops: str | Iterable[str], why: str) -> None:
    """Mark defined ops (OpDefs of the calling family) as ops whose CPU
    kernel is a function of their inputs, for the reason `why`
    (`OpDef.kernel`).  An op not defined is refused: define it, or record
    it with :func:`known`."""
    global _generation
    for name in _names(ops):
        d = _OPS.get(name)
        if d is None:
            raise ValueError(f"op {name!r} is not defined")
        _OPS[name] = dataclasses.replace(d, kernel=why)
    _generation += 1


def known_ops() -> Mapping[str, KnownOp]:
    """The ops without an import model whose facts are recorded, by name."""
    return _KNOWN


_derived: dict[str, tuple[int, Any]] = {}


def _derive(key: str, compute: Callable[[], Any]) -> Any:
    """A table derived from the entries, computed again once they change."""
    hit = _derived.get(key)
    if hit is None or hit[0] != _generation:
        hit = _derived[key] = (_generation, compute())
    return hit[1]


def uninterpreted() -> frozenset[str]:
    """The ops graph import makes uninterpreted functions by name alone
    (graphdef/ops.py STATELESS_UNMODELLED): the known ops so marked that no
    OpDef defines."""
    return _derive("uninterpreted", lambda: frozenset(
        k for k, v in _KNOWN.items() if v.uninterpreted and k not in _OPS))


def unmodelled_output_args() -> Mapping[str, tuple[str, ...]]:
    """Output arg names of the known ops that name several (graphdef/ops.py
    OUTPUT_ARGS; an OpDef names its own: OpDef.output_args)."""
    return _derive("output_args", lambda: MappingProxyType(
        {k: v.output_args for k, v in _KNOWN.items() if v.output_args and k not in _OPS}))


def kernel_ops() -> frozenset[str]:
    """The ops whose CPU kernel tfsem may run as a function: an OpDef or a
    known op with a `kernel` reason (oracle/kernels.py DETERMINISTIC)."""
    return _derive("kernels", lambda: frozenset(
        [d.op for d in _OPS.values() if d.kernel]
        + [k for k, v in _KNOWN.items() if v.kernel and k not in _OPS]))


def kernel_reason(op: str) -> str:
    """Why TensorFlow's kernel of `op` is a function ("": it is not run)."""
    d = _OPS.get(op)
    if d is not None:
        return d.kernel
    k = _KNOWN.get(op)
    return k.kernel if k is not None else ""


def type_default(op: str, attr: str) -> str:
    """The default of type attribute `attr` of `op` (a DT_ name; "": none
    known), for a node a SavedModel stripped it from."""
    d = _OPS.get(op)
    return d.type_defaults.get(attr, "") if d is not None else ""


def function(name: str, n_in: int, n_out: int, batched: Any = False,
             **kwargs: Any) -> Callable[[Callable], Function]:
    """Decorator: the TensorFlow-family Function of an implementation, for an
    OpDef's `functions` (registered by :func:`define`, not here).  `batched`
    as oracle/functions.function's; the other keywords are Function's
    (attrs, tf_kernel, encoding, export, casts, mixed_dtypes, ...)."""
    def deco(impl: Callable) -> Function:
        batched_impl = (impl if batched is True else fns._batch_broadcasting(impl)
                        if batched == fns.BROADCASTING else batched or None)
        kwargs.setdefault("family", fns.TENSORFLOW)
        return Function(name, n_in, n_out, impl, doc=(impl.__doc__ or "").strip(),
                        batched_impl=batched_impl, **kwargs)
    return deco


def export_of(name: str) -> Callable[[Any], list] | None:
    """The export facet of registered function `name` (its own, else one an
    OpDef declared for it); None: the exporter's own cases."""
    f = fns.lookup(name)
    if f is not None and f.export is not None:
        return f.export
    return _EXPORTS.get(name)


def node_export_of(kind: str) -> Callable[..., Any] | None:
    """The export facet of a program node kind that is not a function (a
    control-flow primitive, a session's queue op): the op that makes it
    declared it (`OpDef.node_exports`); None: not exported."""
    return _NODE_EXPORTS.get(kind)


def ops_where(pred: Callable[[OpDef], bool]) -> tuple[str, ...]:
    """The names of the defined ops `pred` holds of, in definition order:
    how a module that needs a set of ops (the loop primitives, the
    functional ops graph import lowers, ...) reads it from the registry
    instead of keeping a name table of its own."""
    return tuple(name for name, d in _OPS.items() if pred(d))


def problems() -> list[str]:
    """What keeps the registry from being the single source of its ops: a
    function named but registered nowhere, an export facet for one."""
    out = []
    for d in _OPS.values():
        for name in d.function_names():
            if fns.lookup(name) is None:
                out.append(f"op {d.op} ({d.family}): function {name!r} is registered nowhere")
        for name in d.exports:
            if fns.lookup(name) is None:
                out.append(f"op {d.op} ({d.family}): export of unregistered function {name!r}")
        if not d.functions and d.node_exports and not d.semantics:
            out.append(f"op {d.op} ({d.family}): makes program nodes that are not functions "
                       "but names no semantics")
    return out


def table() -> Mapping[str, OpDef]:
    """Every defined op, by TensorFlow name."""
    return _OPS


def lookup(op: str) -> OpDef | None:
    return _OPS.get(op)


def generation() -> int:
    """Changes whenever an op is defined (graphdef/ops.py mirrors the table)."""
    return _generation


def encoding(key: str) -> Elementwise | None:
    """The element-wise encoding named `key` (checking/generic.py)."""
    return _ENCODINGS.get(key)


def folds_on_constants(fn: Function) -> bool:
    """Whether the checker folds `fn` where its result is the same at every σ."""
    return fn.encoding is FOLDS_ON_CONSTANTS


def elementwise_of(fn: Function) -> Elementwise | None:
    """The element-wise encoding of a registered function, if it has one and
    its floating-point reasoning is exact (`pure`)."""
    enc = fn.encoding
    return enc if isinstance(enc, Elementwise) and fn.pure else None


def families() -> dict[str, list[str]]:
    """Family -> its ops, sorted."""
    out: dict[str, list[str]] = {}
    for d in _OPS.values():
        out.setdefault(d.family, []).append(d.op)
    return {k: sorted(v) for k, v in sorted(out.items())}


# ---------------------------------------------------------------------------
# Helpers for `build`: `b` is the importer's builder for one TensorFlow node
# (graphdef/ops.py lists its calls).


def flushed(name: str, dtype: str) -> str:
    """The function for TensorFlow's `name` on `dtype`: on the float dtypes
    whose arithmetic TensorFlow's CPU runtime flushes (bfloat16, float32,
    float64) the variant that flushes subnormals (`Add.ftz`,
    oracle/functions.py); on float16 and integers `name` itself."""
    if dtype in fns.FLUSHED_DTYPES and fns.lookup(name + fns.FTZ_SUFFIX) is not None:
        return name + fns.FTZ_SUFFIX
    return name


def one_function(name: str, dtype_attr: str | None = "T", n: int | None = None):
    """A model that is one tfsem function of all data inputs (its `.ftz`
    form on the dtypes TensorFlow flushes, where there is one)."""
    def build(b):
        fname = flushed(name, b.dtype(dtype_attr)) if dtype_attr else name
        k = b.n_inputs if n is None else n
        return [b.add(fname, [b.input(i) for i in range(k)])]
    return build


def refuse(tf_op: str, reason: str, rule: str, family: str, doc: str | None = None) -> OpDef:
    """Define `tf_op` as refused by name at import, with `reason` (the
    importer's refusal rule `rule`): its effect is not modelled, so it counts
    as stateful.  `doc`: the op table's line (default: the reason up to its
    first colon)."""
    def build(b):
        b.reject(reason, rule)
    return define(OpDef(tf_op, doc or f"refused: {reason.split(':')[0]}", build, family,
                        stateful="refused (its effect is not modelled)",
                        semantics="none: refused by name at import",
                        z3="not encoded: refused at import"))


def int_list(value) -> list[int]:
    """A constant operand read at import, as Python ints."""
    return [int(x) for x in np.asarray(value).reshape(-1)]


def index_dtype(b, name: str) -> str:
    """Attribute `name` as int32 or int64 (else the node is refused)."""
    t = b.dtype(name)
    if t not in ("int32", "int64"):
        b.reject(f"{name} must be int32 or int64, not {t}")
    return t


# ---------------------------------------------------------------------------
# Helpers for `export`: `e` is the exporter's context for one node
# (graphdef/exporter.py ExportNode).


def export_as(tf_op: str, *, typed: bool = True) -> Callable[[Any], list]:
    """Export as TensorFlow's `tf_op` on the same inputs, with attribute T
    the first input's dtype (none when `typed` is false)."""
    def export(e) -> list:
        return [{"name": e.name, "op": tf_op, "input": e.data + e.ctrl,
                 "attr": {"T": e.T()} if typed else {}}]
    return export


def function_names(ops: Iterable[OpDef] | None = None) -> set[str]:
    """The tfsem functions the given ops (default: all) produce."""
    return {n for d in (ops if ops is not None else _OPS.values()) for n in d.function_names()}

