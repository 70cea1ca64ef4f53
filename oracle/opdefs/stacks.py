"""The stack family: TensorFlow 1's stacks (`StackV2`, `StackPushV2`,
`StackPopV2`, `StackCloseV2`), which `tf.compat.v1`'s while-loop gradients
use to hand each forward iteration's values to the backward loop; one OpDef
per op (import, export) and the step rules the control-flow engine applies
(oracle/controlflow.py).  docs/stateful-ops.md, "Stacks", argues the model.

What TensorFlow does (tensorflow/core/kernels/stack.cc, TensorFlow 2.21):

* `StackV2(max_size)` creates a new stack in the *step container*: a fresh
  resource per execution of the node, deleted when the step ends.  A
  negative `max_size` means no limit (INT32_MAX); a `max_size` that is not
  a scalar fails the op.  `stack_name` (default: the node's name) only names
  the stack in messages.  The output is a DT_RESOURCE handle.
* `StackPushV2(handle, elem)`: fails (InvalidArgument) if `elem`'s dtype is
  not the stack's `elem_type`, if the stack is closed, or if `max_size >= 0`
  and the stack already holds `max_size` elements; otherwise appends `elem`
  and outputs it.  The whole push runs under the stack's mutex.
* `StackPopV2(handle)`: fails if the stack is closed or empty; otherwise
  removes the top element and outputs it (the executor then fails the op if
  that element's dtype is not the node's declared `elem_type`).
* `StackCloseV2(handle)`: clears the stack and marks it closed (closing a
  closed stack is no error); later pushes and pops on it fail.

The model.  A stack is *step-local state*, never part of σ nor of the
observed final state: every run starts with no stack, and a stack made in
the run is gone at its end, as TensorFlow's step container is.  The tfsem
ops are the TensorFlow ones, same names, same inputs:

* `StackV2` (attrs `elem_type`, `stack_name`; input: the max_size tensor)
  outputs a :class:`StackHandle` naming the new stack (the node and the
  execution context it fired in: a StackV2 inside a loop makes one stack per
  iteration, as TensorFlow's does) and adds an empty :class:`Stack` to the
  run's state;
* `StackPushV2` (attr `elem_type`: the pushed element's dtype, the `T` of
  TensorFlow's op) outputs its element, or the error value the kernel fails
  with; `StackPopV2` (attr `elem_type`) outputs the top or the error;
  `StackCloseV2` has no output;
* each access is **one atomic step, in both modes** (the kernel holds the
  stack's mutex from its check to its change, so no other access can come
  between; unlike an Assign-f in the decomposed mode, which reads and writes
  a *variable* in two steps);
* a failing access changes nothing (TensorFlow checks before it changes the
  stack; a pop of the wrong `elem_type` is the exception: the kernel pops,
  then the executor refuses the output) and fails with an error value:
  `stack-closed`, `stack-overflow`, `stack-empty`, `stack-dtype`,
  `stack-max-size`.  TensorFlow then fails the step, so nothing that waits
  for the failed op runs: as for a `Switch` whose predicate fails
  (docs/semantics.md, "An error as a predicate"), every outgoing edge of the
  op, data and control, carries a dead value holding the error, so what
  waits for it fires dead (no effect), and the step fails: every fetch of
  the run is the error of its first failed stack op (STEP_FAILED in
  oracle/stack_state.py), as session.run returns no fetch, only the error.

Which orders are possible: any interleaving of the accesses the graph
allows (each access is a step of the interleaving semantics, so two
unordered pushes onto one stack may land in either order, as TensorFlow's
executor may run them in either order), and nothing else.

These functions run only in the control-flow engine (the reference
semantics of programs with control flow, which every program with a stack
goes to: `Program.has_control_flow`): anywhere else they raise CannotRun, so
no engine treats them as pure functions, and the checker never proves a
program with a stack (checking/control_flow.py): its verdict rests on the
reference engine's outcome sets at concrete σ.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .. import functions as fns
from ..functions import TENSORFLOW, CannotRun, Function, _dtype_attr
from ..program import DataIn, TensorType
# the step rules and the run state, re-exported (stacks.push, ...): they live
# below both the registry and the engine (oracle/stack_state.py)
from ..stack_state import (  # noqa: F401
    BAD_MAX_SIZE, CLOSE, CLOSED, EMPTY, NO_LIMIT, OVERFLOW, POP, PUSH, STACK, STACK_OPS,
    STEP_FAILED, WRONG_DTYPE, Stack, StackHandle, close, create, is_stack_key, pop, push,
    state_key)
from .registry import OpDef, define, refuse

FAMILY = "stack"

# -- the functions: names, attributes, types and export; no value semantics -----


class StackFunction(Function):
    """A stack op as the program format names it: its arity, attributes,
    result types (for export) and export.  It has no value semantics of its
    own: the control-flow engine applies the step rules (oracle/stack_state.py); anywhere else
    it cannot run (and the checker never proves a program holding one)."""

    def apply(self, args: Sequence[Any], attrs: Mapping[str, Any] | None = None,
              xp: Any = np) -> tuple[Any, ...]:
        exc = CannotRun(f"{self.name} is a step of a stack (step-local state): only the "
                        "control-flow engine runs it")
        exc.function = self.name
        raise exc


def _cannot(name: str):
    def impl(xp, args, attrs):
        raise CannotRun(f"{name} is a step of a stack: only the control-flow engine runs it")
    return impl


HANDLE_TYPE = TensorType("resource", ())

_RESULT_TYPES = {
    STACK: lambda a: [HANDLE_TYPE],
    PUSH: lambda a: [TensorType(a["elem_type"], None)],
    POP: lambda a: [TensorType(a["elem_type"], None)],
    CLOSE: lambda a: [],
}


def _export(op: str):
    def export(e) -> list:
        a = e.attrs
        if op == STACK:
            attr = {"elem_type": {"type": e.tf_dtype(a["elem_type"])},
                    "stack_name": {"s": str(a.get("stack_name", "")).encode()}}
        elif op == PUSH:
            attr = {"T": {"type": e.tf_dtype(a["elem_type"])}, "swap_memory": {"b": False}}
        elif op == POP:
            attr = {"elem_type": {"type": e.tf_dtype(a["elem_type"])}}
        else:
            attr = {}
        return [{"name": e.name, "op": op, "input": e.data + e.ctrl, "attr": attr}]
    return export


def _stack_name(raw: Any, where: str) -> str:
    if not isinstance(raw, str):
        raise fns.ValueFormatError(f"{where}: expected a string, got {raw!r}")
    return raw


_ATTRS = {
    STACK: {"elem_type": _dtype_attr, "stack_name": _stack_name},
    PUSH: {"elem_type": _dtype_attr},
    POP: {"elem_type": _dtype_attr},
    CLOSE: {},
}
_ARITY = {STACK: (1, 1), PUSH: (2, 1), POP: (1, 1), CLOSE: (1, 0)}

for _op in STACK_OPS:
    _fn = StackFunction(_op, *_ARITY[_op], _cannot(_op), doc=f"TensorFlow's {_op} (a stack "
                        "step: oracle/opdefs/stacks.py)", attrs=_ATTRS[_op], pure=False,
                        family=TENSORFLOW, casts=True, mixed_dtypes=True, export=_export(_op))
    object.__setattr__(_fn, "result_types", _RESULT_TYPES[_op])
    fns.register(_fn)


# -- the ops: import ----------------------------------------------------------------


def _build(op: str):
    def build(b):
        attrs: dict[str, Any] = {}
        if op == STACK:
            attrs["elem_type"] = b.dtype("elem_type")
            attrs["stack_name"] = str(b.attr("stack_name", "") or b.node.name)
        elif op == PUSH:
            attrs["elem_type"] = b.dtype("T")
        elif op == POP:
            attrs["elem_type"] = b.dtype("elem_type")
        ins = [b.input(i) for i in range(b.n_inputs)]
        ref = b.add(op, ins, attrs)
        return [] if op == CLOSE else [DataIn(ref.node, 0)]
    return build


_DOCS = {
    STACK: "a new stack of the step (step-local: not in σ, not in the final state)",
    PUSH: "pushes its element (one atomic step; fails when closed, full or of another dtype)",
    POP: "pops the top (one atomic step; fails when closed or empty)",
    CLOSE: "closes the stack (one atomic step)",
}
for _op in STACK_OPS:
    define(OpDef(_op, f"{_DOCS[_op]}: oracle/opdefs/stacks.py", _build(_op), FAMILY,
                 functions=(_op,), stateful=None if _op == STACK else
                 "changes its stack (step-local state)"))

#: the old forms with a reference-typed (string) handle, refused by name
REF_REASON = ("a stack with a reference-typed handle (TensorFlow's old Stack ops): tfsem "
              "models StackV2, StackPushV2, StackPopV2 and StackCloseV2")
for _op in ("Stack", "StackPush", "StackPop", "StackClose"):
    refuse(_op, REF_REASON, "ref-stack", FAMILY)
