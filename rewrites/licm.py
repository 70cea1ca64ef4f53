"""`licm`: loop-invariant code motion of pure nodes (Grappler's loop
optimizer, "loop-invariant node motion").

What it does.  A node inside a loop (frame F) that applies a registry
function (no variable access, no control-flow primitive) to values that
are all *loop constants* -- each data input a constant `Enter` of F
(`is_constant`, TensorFlow's loop invariants) -- and that has no control
input, computes the same value in every iteration.  The pass computes it
once before the loop, on the Enters' own inputs (waiting for what those
Enters waited for), and brings the result in by a new constant Enter of F
that takes the node's name, so its consumers are unchanged.  Repeated until
nothing moves (a node whose inputs became loop constants moves next).

Claims: sound in every cell.  Argument: the function is deterministic and
touches no variable, so the value every iteration sees is the one the
original computed in it; a dead loop (its Enters dead) makes the hoisted
node and its Enter dead, as the original node was in every iteration; a
node without control inputs waited only for the constant Enters, so its
consumers wait for nothing new except the new Enter, which fires once its
inputs (outside the loop, not depending on it: the program has no other
cycle) are there -- a restriction of the runs (the loop's first iterations
may wait for it), never a new one.
"""

from __future__ import annotations

from typing import Callable

from tfsem.oracle import functions as fns
from tfsem.oracle.program import (ASSIGN, CONTROL_FLOW_OPS, ENTER, READ, STACK_OPS, VAR, ControlIn, DataIn,
                                  FeedIn, Node, Program)

from .api import SOUND, Pass, claims
from .edit import canonical_inputs, fresh_name, rebuild


def constant_enter(p: Program, i, frame: str) -> Node | None:
    """The constant Enter of `frame` that input `i` comes from, or None."""
    if not isinstance(i, DataIn) or i.port != 0:
        return None
    e = p.node.get(i.node)
    if e is None or e.op != ENTER or not e.attrs.get("is_constant") \
            or e.attrs.get("frame_name") != frame:
        return None
    return e


def hoist_out_of_loops(p: Program, movable: Callable[[Program, Node, str], bool],
                       op_outside: Callable[[Node], str] = lambda n: n.op) -> Program:
    """Move every node `movable` selects out of its innermost loop, as long
    as each of its data inputs is a constant Enter of that loop; it comes back
    in as a constant Enter of its own name.  Until nothing moves."""
    fetched = {o.node for o in p.outputs.values()}
    for _ in range(len(p.nodes)):
        chosen = None
        for n in p.nodes:
            frame = p.frames.get(n.name, ())
            if not frame or n.name in fetched or not movable(p, n, frame[-1]):
                continue
            enters = [constant_enter(p, i, frame[-1]) for i in n.data_inputs]
            if enters and all(e is not None for e in enters):
                chosen = (n, enters, frame[-1])
                break
        if chosen is None:
            return p
        n, enters, frame = chosen
        taken = set(p.node)
        outside = fresh_name(f"{n.name}/hoisted", taken)
        inputs = [e.data_inputs[0] for e in enters]
        inputs += [c for e in enters for c in e.control_inputs]
        hoisted = Node(outside, op_outside(n), canonical_inputs(inputs),
                       {k: v for k, v in n.attrs.items()})
        enter = Node(n.name, ENTER, (DataIn(outside),),
                     {"frame_name": frame, "is_constant": True,
                      "parallel_iterations": enters[0].attrs.get("parallel_iterations", 10)})
        nodes = [hoisted if m.name == n.name else m for m in p.nodes]
        nodes.append(enter)
        p = rebuild(p, nodes)
    return p


def _pure(p: Program, n: Node, frame: str) -> bool:
    if n.op in (VAR, READ, ASSIGN) or n.op in CONTROL_FLOW_OPS or n.control_inputs:
        return False
    if n.op in STACK_OPS:   # a step on a stack, not a pure function (oracle/opdefs/stacks.py)
        return False
    f = fns.lookup(n.op)
    return f is not None and f.n_out == 1 and bool(n.data_inputs) \
        and not any(isinstance(i, FeedIn) for i in n.data_inputs)


def licm(p: Program) -> Program:
    if not p.has_control_flow:
        return p
    return hoist_out_of_loops(p, _pure)


PASS = Pass(
    name="licm",
    description="loop-invariant code motion of pure nodes on loop constants",
    claims=claims(atomic=(SOUND, SOUND), decomposed=(SOUND, SOUND)),
    doc=__doc__,
    function=licm,
    control_flow=True,
    generator="tfsem.generators.control_flow:invariant_loop_cases",
)

__all__ = ["PASS", "hoist_out_of_loops", "constant_enter"]
