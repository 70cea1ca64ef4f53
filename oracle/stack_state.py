"""TensorFlow 1's stacks as run state: the step rules the control-flow
engine (oracle/controlflow.py) applies, one atomic step each.  The ops
themselves (import, export, names in the registry) and the argument of the
model are in oracle/opdefs/stacks.py and docs/stateful-ops.md, "Stacks".

This module sits below both: the engine reads the rules here, the op
registry re-exports them, and neither imports the other through it (the
engine importing oracle/opdefs made an import circle: opdefs -> queues ->
blocking -> semantics -> controlflow -> opdefs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .values import Error, Tensor

#: the error values of failing stack ops (TensorFlow: InvalidArgument)
CLOSED, OVERFLOW, EMPTY, WRONG_DTYPE, BAD_MAX_SIZE = (
    "stack-closed", "stack-overflow", "stack-empty", "stack-dtype", "stack-max-size")
#: the tfsem ops (TensorFlow's names)
STACK, PUSH, POP, CLOSE = "StackV2", "StackPushV2", "StackPopV2", "StackCloseV2"
STACK_OPS = (STACK, PUSH, POP, CLOSE)
#: TensorFlow's max_size for "no limit" (a negative max_size: INT32_MAX)
NO_LIMIT = 2**31 - 1


@dataclass(frozen=True, slots=True)
class StackHandle:
    """The handle a StackV2 firing outputs: `key` names its stack in the
    run's state (the node and the context it fired in)."""

    key: str

    #: what code that asks any value for its type sees (DT_RESOURCE)
    dtype = "resource"
    shape: tuple[int, ...] = ()

    def __repr__(self) -> str:
        return f"stack-handle<{self.key}>"


@dataclass(frozen=True, slots=True)
class Stack:
    """One stack's state in a run."""

    elem_type: str
    max_size: int
    name: str
    items: tuple[Tensor, ...] = ()
    closed: bool = False

    def describe(self) -> str:
        body = ", ".join(repr(t) for t in self.items)
        return f"stack<{self.elem_type}>{'(closed)' if self.closed else ''}[{body}]"

    @property
    def exact(self) -> object:
        """This stack as a key equal only to a stack of the same bits
        (values.exact): itself unless an item holds a NaN other than numpy's."""
        keys = tuple(t.exact for t in self.items)
        if all(k is t for k, t in zip(keys, self.items)):
            return self
        return ("stack", self.elem_type, self.max_size, self.name, keys, self.closed)

    __repr__ = describe


def state_key(node: str, context_text: str) -> str:
    """The run-state key of the stack node `node` made in a context: it
    starts with a NUL, which no variable name has, so a stack never meets
    a variable (and Machine.outcome leaves it out of the final state).  An
    '@' separates the node from the context: no node name holds one
    (validate), so two nodes never share a key.  (Without it, node `a` in
    frame `bL` and node `ab` in frame `L` made one stack at iteration 0.)"""
    return f"\0stack:{node}@{context_text}"


def is_stack_key(key: str) -> bool:
    return key.startswith("\0stack:")


#: The run-state key under which the control-flow engine keeps the error of
#: the first stack op that failed in the run (NUL-led, like a stack's key:
#: no variable has it).  TensorFlow fails the whole step at such a failure:
#: session.run returns no fetch at all, only the error.  So a run with a
#: failed stack op has that error as every fetch (Machine.outcome), whether
#: or not a fetch waits for the failed op -- otherwise a failure that only a
#: target or nothing waits for would leave no trace, and a rewrite that made
#: every step fail (a pop removed before an overflowing push, a close moved
#: before a push) would compare equal to the original (review8).
STEP_FAILED = "\0stack-step-failed"


# -- the step rules (called by oracle/controlflow.py, one atomic step each) -----


def create(attrs: Mapping[str, Any], max_size: Any) -> Stack | Error:
    """StackV2's new stack, or the error it fails with."""
    if isinstance(max_size, Error):
        return max_size
    if not isinstance(max_size, Tensor) or max_size.dtype != "int32" or max_size.shape != ():
        # the kernel: "Stack size must be a scalar" (its dtype is the op's: int32)
        return Error(BAD_MAX_SIZE)
    size = int(max_size.array)
    return Stack(attrs["elem_type"], size if size >= 0 else NO_LIMIT, attrs.get("stack_name", ""))


def push(stack: Stack, elem: Any) -> tuple[Stack, Any]:
    """StackPushV2 on `stack`: (the stack after, the output)."""
    if isinstance(elem, Error):
        return stack, elem
    if not isinstance(elem, Tensor) or elem.dtype != stack.elem_type:
        return stack, Error(WRONG_DTYPE)
    if stack.closed:
        return stack, Error(CLOSED)
    if len(stack.items) >= stack.max_size:
        return stack, Error(OVERFLOW)
    return Stack(stack.elem_type, stack.max_size, stack.name, stack.items + (elem,)), elem


def pop(stack: Stack, elem_type: str) -> tuple[Stack, Any]:
    """StackPopV2 on `stack`: (the stack after, the output)."""
    if stack.closed:
        return stack, Error(CLOSED)
    if not stack.items:
        return stack, Error(EMPTY)
    top = stack.items[-1]
    after = Stack(stack.elem_type, stack.max_size, stack.name, stack.items[:-1])
    if top.dtype != elem_type:
        # the kernel pops, then the executor refuses the output's dtype
        return after, Error(WRONG_DTYPE)
    return after, top


def close(stack: Stack) -> Stack:
    """StackCloseV2: cleared and closed (again: no error)."""
    return Stack(stack.elem_type, stack.max_size, stack.name, (), True)
