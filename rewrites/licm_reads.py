"""`licm-reads`: loop-invariant code motion of a `Read` (wrong when the loop
writes the variable).

What it does.  A `Read` inside a loop whose handle is a loop constant (a
constant `Enter` of the loop, TensorFlow's loop-invariant resource handle)
is moved before the loop, reading through the Enter's own input, and its
value comes back in by a constant Enter of the Read's name.  Its control
inputs inside the loop are dropped (they cannot cross the frame).  A motion
that treats the handle as the value: the handle is invariant, the value is
not when the loop writes the variable.

Claims: unsound in every cell.  Smallest counterexample (found by
`tfsem verify licm-reads`, docs/checking-control-flow.md):

    i = 0; while i < 2: x += 1 (AssignAdd); s += Read x (after the add)

fetches s = (x0+1) + (x0+2) in the original (each iteration's Read after
its own add); the hoisted Read runs once, so both iterations see one value
and the rewrite may fetch 2*x0 (the Read before any add), in both modes and
under both observe settings (s is an output).
"""

from __future__ import annotations

from tfsem.oracle.program import READ, Node, Program

from .api import UNSOUND, Pass, claims
from .licm import hoist_out_of_loops


def _read(p: Program, n: Node, frame: str) -> bool:
    return n.op == READ


def licm_reads(p: Program) -> Program:
    if not p.has_control_flow:
        return p
    # (the Read's control inputs are dropped: hoist_out_of_loops keeps only
    # what its constant Enter waited for)
    return hoist_out_of_loops(p, _read)


PASS = Pass(
    name="licm-reads",
    description="loop-invariant code motion of a Read whose handle is a loop constant",
    claims=claims(atomic=(UNSOUND, UNSOUND), decomposed=(UNSOUND, UNSOUND)),
    doc=__doc__,
    function=licm_reads,
    control_flow=True,
    generator="tfsem.generators.control_flow:loop_cases",
)
