"""The data family: tf.data iterators and Optionals, as far as `model.fit`'s
train function needs them (one OpDef each: import, semantics, Z3 facet,
export; oracle/opdefs, docs/writing-an-op-model.md; docs/tensorflow-graphs.md,
"model.fit's train function").

* A `DT_RESOURCE` Placeholder that an iterator op (`READERS`) reads (the
  `iterator` argument of `model.make_train_function()`'s graph) is an
  *iterator*: a NoOp of its name (graph import's `_iterator`; creating it
  has no effect the model sees).
* `IteratorGetNext` / `IteratorGetNextSync` on such an iterator: the
  iterator's next element is part of σ, one feed per component,
  `ITERATOR/next_K`, typed by `output_types` and `output_shapes`; the node's
  outputs are Identity nodes of those feeds.  The draw advances the
  iterator, and the next step gets the next element: that position is
  state, an int64 scalar variable `ITERATOR/position` (`iterator_position`)
  the draw adds 1 to (`Assign-Add`, one of the node's parts, which its
  completion waits for).  So under outputs+state a rewrite that drops,
  repeats or adds a draw changes the final state; an iterator no draw of the
  import advances (one nothing reads any more) keeps its position in the
  state all the same (graph import's `_declare_undrawn_iterators`), so such
  a rewrite keeps the interface and is refuted.  Exact for one run that
  draws once from an iterator that is not exhausted: the element the run
  gets is whatever the dataset holds at the position, fixed before the run
  starts, whatever the schedule.  Refused by name: a second draw from one
  iterator in one import (which draw gets which element would depend on the
  schedule), a draw inside a loop (each iteration draws anew), an iterator
  of another origin (made in the graph from a dataset the graph defines),
  and every other iterator op (`IteratorGetNextAsOptional`, `MakeIterator`,
  ...).
* `OptionalFromValue` of one component: an Optional that holds a value, which
  is what its consumer reads (`Optional.get_value()`, what Keras's
  `train_function` returns): tfsem's value is the component, an Identity.
  `OptionalGetValue` of it is an Identity, `OptionalHasValue` the constant
  `true` after it.  `OptionalNone` (an empty Optional) and an Optional of
  several components are refused by name.

The nodes these make are the language's own (feeds, Identity, Var, Const,
Assign-Add, NoOp): their semantics, Z3 encoding and export are those of the
language; no op of this family is exported back as itself (export writes the
element as its feeds' Placeholders).
"""

from __future__ import annotations

import numpy as np

from ..program import ControlIn, DataIn, TensorType
from ..values import Tensor
from .registry import OpDef, define

FAMILY = "data"

_SEMANTICS = ("the language's (feeds ITERATOR/next_K in σ, an Assign-Add of the variable "
              "ITERATOR/position): SPEC sections 3 and 8")
_Z3 = "the language's nodes it imports as (feeds, Identity, Assign-Add)"

#: Ops that read a tf.data iterator (the first two are modelled): a
#: DT_RESOURCE Placeholder one of them reads is an iterator.
READERS = ("IteratorGetNext", "IteratorGetNextSync", "IteratorGetNextAsOptional",
           "MakeIterator", "IteratorToStringHandle", "SerializeIterator", "DeleteIterator")


def iterator_position(iterator: str) -> str:
    """The variable that holds a tf.data iterator's position (its state):
    an int64 scalar each draw adds 1 to."""
    return f"{iterator}/position"


def _iterator(b) -> str:
    """The iterator input 0 reads: a DT_RESOURCE Placeholder the importer
    took as one (its `iterators`)."""
    src, _, g = b.source(0)
    if src not in b.imp.iterators:
        b.reject(f"its iterator comes from {src!r} ({g.op if g else '?'}): only an iterator "
                 "given to the function (a DT_RESOURCE Placeholder, the `iterator` argument of "
                 "model.make_train_function()'s graph) is modelled, with its next element in σ",
                 "iterator")
    return src


def _get_next(b):
    it = _iterator(b)
    if b.imp.has_loops():
        b.reject("a draw from an iterator in a graph with loops is not modelled (a node in a "
                 "loop fires once per iteration, and each firing draws another element; "
                 "model.fit with steps_per_execution > 1 loops so)", "iterator-in-loop")
    drawn = b.imp.iterators[it]
    if drawn is not None:
        b.reject(f"iterator {it!r} is drawn from twice in one run (also by {drawn!r}): which "
                 "draw gets which element depends on the schedule, which tfsem does not model "
                 "(one draw per iterator: its next element is part of σ)", "iterator-draws")
    b.imp.iterators[it] = b.node.name
    types = b.attr("output_types")
    shapes = b.attr("output_shapes")
    if not isinstance(types, list) or not isinstance(shapes, list) or len(types) != len(shapes):
        b.reject("output_types and output_shapes must be lists of one length", "malformed-node")
    outs = []
    for k, (dt, shape) in enumerate(zip(types, shapes)):
        dtype = b.modelled_dtype(dt, f"component {k} of the element has dtype {{dtype}}, "
                                 "which is not modelled")
        if shape is None or any(d < 0 for d in shape):
            b.reject(f"component {k} of the element has no static shape ({shape}); tfsem needs "
                     "one: give the dataset a fixed batch size (batch(n, "
                     "drop_remainder=True)) or trace the function for a TensorSpec with one",
                     "unknown-shape")
        feed = b.feed(f"{it}/next_{k}", dtype, tuple(shape))
        outs.append(b.add("Identity", [feed], part=f"next_{k}"))
    # the draw advances the iterator: its position, a variable, gains 1
    pos = iterator_position(it)
    if pos in b.imp.variables and pos not in b.imp.positions:
        b.reject(f"the position of iterator {it!r}, variable {pos!r}, is already the name of "
                 "a variable of the graph", "name-clash")
    b.imp.positions.add(pos)
    b.imp.variables[pos] = TensorType("int64", ())
    var = b.add("Var", [], {"var": pos}, part="position")
    one = b.add("Const", [], {"value": Tensor(np.array(1, dtype=np.int64), "int64")}, part="one")
    b.add("Assign", [var, one], {"fn": "Add"}, part="advance")
    b.add("NoOp", [])   # the node itself: done when the draw is (the element, the position)
    return outs


for _op in READERS[:2]:
    define(OpDef(_op, "the iterator's next element, part of σ: feeds ITERATOR/next_K (one draw "
                 "per iterator and import; refused in loops)", _get_next, FAMILY,
                 stateful="advances the iterator: adds 1 to the variable ITERATOR/position",
                 semantics=_SEMANTICS, z3=_Z3))


def _optional_source(b, i: int):
    """The OptionalFromValue node that data input i holds (through Identity
    nodes), or None."""
    chain = b.chain(i, ("Identity", "Snapshot"))
    return chain[-1] if chain and chain[-1].op == "OptionalFromValue" else None


def _optional(tf_op: str, doc: str):
    def deco(build):
        define(OpDef(tf_op, doc, build, FAMILY, semantics="the language's Identity and Const",
                     z3="the language's Identity and Const"))
        return build
    return deco


@_optional("OptionalFromValue", "an Optional holding one component: tfsem's value is the "
           "component (what Optional.get_value() reads); several components refused")
def _optional_from_value(b):
    if b.n_inputs != 1:
        b.reject(f"an Optional of {b.n_inputs} components is not modelled (one component: "
                 "its value is the component)", "optional")
    return [b.add("Identity", [b.input(0)])]


def _optional_input(b) -> DataIn:
    if _optional_source(b, 0) is None:
        src, _, g = b.source(0)
        b.reject(f"its Optional comes from {src!r} ({g.op if g else '?'}): only an "
                 "OptionalFromValue (an Optional that holds a value) is modelled", "optional")
    return b.input(0)


@_optional("OptionalGetValue", "the component of an OptionalFromValue: Identity")
def _optional_get_value(b):
    types = b.attr("output_types")
    if not isinstance(types, list) or len(types) != 1:
        b.reject("an Optional of several components is not modelled", "optional")
    return [b.add("Identity", [_optional_input(b)])]


@_optional("OptionalHasValue", "of an OptionalFromValue: the constant true, after it")
def _optional_has_value(b):
    x = _optional_input(b)
    return [b.add("Const", [ControlIn(x.node)], {"value": Tensor(np.array(True), "bool")})]


_OPTIONAL_NONE = ("an empty Optional is not modelled (model.fit's train function makes one "
                  "only with steps_per_execution > 1, around a loop that draws until the "
                  "iterator is exhausted): export the function with steps_per_execution=1, "
                  "or model.train_step")
_OTHER_ITERATOR = ("an iterator op other than IteratorGetNext is not modelled (only the next "
                   "element of an iterator given to the function, part of σ): whether an "
                   "iterator is exhausted, and datasets and iterators made in the graph, are "
                   "not; export the step with the iterator as the function's argument "
                   "(model.make_train_function()) or the batch as feeds (model.train_step)")

#: Iterator ops refused by name.
OTHER_ITERATOR_OPS = ("IteratorGetNextAsOptional", "IteratorV2", "Iterator", "AnonymousIterator",
                      "AnonymousIteratorV2", "AnonymousIteratorV3", "MakeIterator",
                      "OneShotIterator", "IteratorFromStringHandle",
                      "IteratorFromStringHandleV2", "IteratorToStringHandle",
                      "DeserializeIterator", "SerializeIterator", "DeleteIterator",
                      "MultiDeviceIterator", "MultiDeviceIteratorGetNextFromShard")


def _refuse(tf_op: str, reason: str, rule: str) -> None:
    def build(b):
        b.reject(reason, rule)
    define(OpDef(tf_op, f"refused: {reason.split('(')[0].strip()}", build, FAMILY,
                 stateful="refused (its effect is not modelled)",
                 semantics="none: refused by name at import", z3="not encoded: refused at import"))


_refuse("OptionalNone", _OPTIONAL_NONE, "optional")
for _op in OTHER_ITERATOR_OPS:
    _refuse(_op, _OTHER_ITERATOR, "iterator")
