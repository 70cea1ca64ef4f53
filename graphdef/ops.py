"""The op table: how each TensorFlow op becomes tfsem nodes.

One table lists every TensorFlow op tfsem reads from a graph and what it
becomes (docs/tensorflow-graphs.md is generated from the same table:
`tfsem import --list-ops`): the op registry's (oracle/opdefs: every family,
control flow, queues and iterators included), mirrored, and the models
packages add.  Each entry is an :class:`OpModel`: the op's
name, a one-line description, which inputs must be constants at import time
(`static`: axes, shapes, multiples, read with numpy when the graph is
imported), which inputs are resource handles (`resources`), whether the op
has an effect on state (`stateful`), and `build(b)`, which adds the tfsem
nodes through the builder `b` (graphdef/importer.py) and returns one
reference per TensorFlow output.

What is not here is never modelled approximately:

* ops in :data:`STATELESS_UNMODELLED` (pure functions of their inputs that
  tfsem cannot compute bit for bit: exp, pow, float reductions, ...; the
  registry's known ops marked so, `opdefs.known(..., uninterpreted=True)`) become
  uninterpreted functions `tf.OP/N_IN/N_OUT`: proofs treat them as unknown
  functions of their inputs, concrete runs stop with "cannot run";
* every other op (stateful ops tfsem does not model, ...) is rejected at
  import with its node and op named.

Every built-in family (math, nn, array, TensorList, state, random, control,
queue, data) is defined in the op registry (oracle/opdefs: every facet of an
op in one place, docs/writing-an-op-model.md) and mirrored here; this module
keeps no op model of its own.

Users add or replace models through the entry-point group `tfsem.ops`:

    [project.entry-points."tfsem.ops"]
    my-ops = "my_package.tfops:OPS"

where OPS is an OpDef (every facet) or an OpModel (import only), a list of
them, or a function returning either.
An entry point that fails to load is reported by :func:`load_errors`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable, Iterable, Sequence

from tfsem.oracle import opdefs
from tfsem.oracle.program import DataIn

ENTRY_POINT_GROUP = "tfsem.ops"


@dataclass(frozen=True)
class OpModel:
    """How one TensorFlow op is imported (see the module docstring)."""

    op: str
    build: Callable[[Any], Sequence[DataIn]]
    doc: str
    static: tuple[int, ...] = ()
    resources: tuple[int, ...] = ()
    stateful: bool = False
    #: Names of the op's output args in order (how `node:arg:k` inside a
    #: FunctionDef names a port); ops with one output arg need none.
    output_args: tuple[str, ...] = ()
    #: For export: the tfsem function (or "Read"/"Assign-f"...) this op's
    #: model produces, when it is a single node.
    origin: str = "builtin"


_TABLE: dict[str, OpModel] = {}
_errors: list[str] = []
_loaded = False


def op(name: str, doc: str, **kw: Any) -> Callable[[Callable], Callable]:
    def deco(build: Callable) -> Callable:
        _TABLE[name] = OpModel(name, build, doc, **kw)
        return build
    return deco


def model_of(d: opdefs.OpDef, origin: str = "builtin") -> OpModel:
    """The import facet of an op defined in the registry (oracle/opdefs)."""
    return OpModel(d.op, d.build, d.doc, static=d.static, resources=d.resources,
                   stateful=d.stateful is not None, output_args=d.output_args, origin=origin)


_mirrored: dict[str, opdefs.OpDef] = {}
_generation = -1


def _sync() -> None:
    """Mirror the ops defined in the registry (oracle/opdefs) since the last
    call: the families defined there have their import facet here."""
    global _generation
    g = opdefs.generation()
    if g == _generation:
        return
    _generation = g
    for name, d in opdefs.table().items():
        if _mirrored.get(name) is not d:
            _mirrored[name] = d
            _TABLE[name] = model_of(d)


def table() -> dict[str, OpModel]:
    """Every op model: the built-ins (the registry's families, then the
    families still defined here), then the entry points' (which may replace
    them)."""
    global _loaded
    _sync()
    if not _loaded:
        _loaded = True
        _load_entry_points()
    return _TABLE


def lookup(name: str) -> OpModel | None:
    return table().get(name)


def load_errors() -> list[str]:
    table()
    return list(_errors)


def register(model: OpModel) -> OpModel:
    """Add or replace an op model from Python."""
    _TABLE[model.op] = model
    return model


def _load_entry_points() -> None:
    _errors.clear()   # each load reports its own failures, not an earlier load's
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            obj = ep.load()
            if callable(obj) and not isinstance(obj, (OpModel, opdefs.OpDef)):
                obj = obj()
            models = [obj] if isinstance(obj, (OpModel, opdefs.OpDef)) else list(obj)
            for m in models:
                if isinstance(m, opdefs.OpDef):   # every facet: registered, then mirrored
                    opdefs.define(m, replace=True)
                    _mirrored[m.op] = m
                    _TABLE[m.op] = model_of(m, f"entry point {ep.value}")
                    continue
                if not isinstance(m, OpModel):
                    raise TypeError(f"{m!r} is not a tfsem.graphdef.ops.OpModel or a "
                                    "tfsem.oracle.opdefs.OpDef")
                _TABLE[m.op] = OpModel(**{**m.__dict__, "origin": f"entry point {ep.value}"})
        except Exception as exc:  # one broken plugin must not break import
            _errors.append(f"entry point {ep.name!r} ({ep.value}) failed to load: {exc}")


#: STATELESS_UNMODELLED and OUTPUT_ARGS (module attributes read from the
#: registry whenever they are asked for: `__getattr__` below):
#:
#: * STATELESS_UNMODELLED: pure TensorFlow ops with no bit-exact model,
#:   uninterpreted functions: each an entry of its family in the op registry
#:   (oracle/opdefs: `known(..., uninterpreted=True)`); the ops an OpDef
#:   defines are not among them;
#: * OUTPUT_ARGS: output arg names of TensorFlow ops with several output
#:   args that tfsem may meet inside a function body (where outputs are named
#:   `n:arg:k`), for ops without a model (an op of the registry names its
#:   own: OpDef.output_args): the registry's known ops' (`KnownOp.output_args`).
_DERIVED = {"STATELESS_UNMODELLED": opdefs.uninterpreted,
            "OUTPUT_ARGS": opdefs.unmodelled_output_args}


def __getattr__(name: str) -> Any:
    derive = _DERIVED.get(name)
    if derive is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return derive()

#: Control flow that is not modelled, refused by name: the reference-typed
#: v1 primitives and ControlTrigger, and the functional ops and calls that
#: graph import lowers or inlines before the op table is read (one left
#: over is refused by name): the control family's (oracle/opdefs/control.py).
CONTROL_FLOW = frozenset(opdefs.control.refused()) - frozenset(opdefs.control.lowered("call"))

#: The v1 control-flow primitives tfsem imports (SPEC section 9): the
#: control family's (oracle/opdefs/control.py).
CONTROL_FLOW_PRIMITIVES = opdefs.control.primitives()

#: Function calls, inlined from the graph's library (graphdef/functions.py):
#: the control family's (oracle/opdefs/control.py, `lowering="call"`).
CALLS = frozenset(opdefs.control.lowered("call"))

def stateless(op_name: str) -> bool:
    """Whether an op is known to have no effect (a model that is not
    stateful, or an unmodelled pure op)."""
    m = lookup(op_name)
    return (m is not None and not m.stateful) or op_name in opdefs.uninterpreted()


# ---------------------------------------------------------------------------
# The built-in models.  `b` is the importer's builder for one TensorFlow node:
#   b.input(i)        the tfsem input of data input i (a tensor)
#   b.var(i)          the tfsem Var node's edge for resource input i
#   b.static(i)       numpy value of constant input i (read at import)
#   b.attr(name)      the node's attribute (types as tfsem dtypes, lists as lists)
#   b.dtype(name)     attribute `name` as a supported tfsem dtype (else rejected)
#   b.add(op, inputs, attrs, part=None)   add a tfsem node; returns DataIn of port 0
#   b.reject(reason)  refuse the node (its name and op are named)
#   b.tf_attrs()      the node's attributes as JSON (an uninterpreted function's tf_attrs)
#   b.n_inputs        number of data inputs
#   b.flow_input(i)   data input i of a control-flow primitive (a tensor, a handle, a back edge)
#   b.source(i)       (node, port, its graph node or None) that data input i reads
#   b.chain(i, ops)   the graph nodes from data input i back through ops `ops` (first inputs)
#   b.data_consumers()  the graph nodes that read this node's outputs (once per edge)
#   b.modelled_dtype(dt, message)  a TensorFlow DataType as a tfsem dtype, else refused
#                     with `message` ("{dtype}": its name) and what tfsem models
#   b.declared_shape(i), b.feed(name, dtype, shape), b.imp (the importer's record)
#
# The helpers below are the registry's (oracle/opdefs/registry.py), kept
# under their old names.

flushed = opdefs.flushed
_fn = opdefs.one_function
_int_list = opdefs.int_list
_index_dtype = opdefs.index_dtype


# -- TensorList (tf.TensorArray in TensorFlow 2): the list family's, oracle/opdefs/lists.py


# -- state and random: the state and random families', oracle/opdefs/state.py and
# oracle/opdefs/random.py


def describe() -> list[tuple[str, str, str]]:
    """(op, what it becomes, origin) for every model, sorted by op name."""
    return [(m.op, m.doc, m.origin) for m in sorted(table().values(), key=lambda m: m.op)]


# -- control flow: the control family's, oracle/opdefs/control.py (the
# primitives), queues and critical sections: the queue family's,
# oracle/opdefs/queues.py, tf.data's iterators: the data family's,
# oracle/opdefs/data.py.


# Comparisons and the logical operations (the predicates of conditionals and
# loops) are the math family's: oracle/opdefs/math.py.
