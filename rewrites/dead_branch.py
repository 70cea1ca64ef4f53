"""`dead-branch`: dead-branch removal on a constant predicate (Grappler's
loop optimizer and constant folding do it on `Switch` nodes).

What it does.  A `Switch` whose predicate is fixed -- a constant, or pure
functions of constants, possibly through a constant `Enter` -- always sends
its data to the same port.  The pass (oracle/deadness.py, `partial=True`):

* replaces the Switch by a node that waits for what it waited for, and makes
  the consumers of its taken port read its data input directly (with a
  control edge from that node, so they wait as long as before);
* removes what the other port makes dead: every node that would fire dead
  there and on which nothing live waits; a dead node on which something
  waits (a Merge's control input) stays as a node that waits for its inputs
  and does nothing, as the dead firing does;
* a Merge that loses its dead inputs and keeps one forwards it (its
  value_index becomes the constant index); one that keeps several drops the
  dead ones and keeps waiting for their sources.

It leaves the program unchanged when a fetch would be dead (TensorFlow fails
such a fetch) or when a loop primitive (Enter, Exit, NextIteration,
LoopCond) would be dead: a loop inside the dead branch is left alone.

Claims: sound in every cell.  Argument: for the fixed predicate, which of
the rewritten nodes fire dead is the same in every run of every context;
a dead firing changes no variable and gives no fetched value, so removing
one that nothing waits for changes no outcome; every other node computes
from the same values and waits for the same firings as before (each rewired
edge carries a control edge from the node that made its value available).
The only waits added are a reduced Merge's on its dropped inputs' sources,
which restricts the runs (never adds one).  So every run of the rewrite is
a run of the original with the same outcome.  The checker proves it per
program (checking/control_flow.py, proof by cases) on loop-free programs.
"""

from __future__ import annotations

from tfsem.oracle.deadness import Undecided, specialize
from tfsem.oracle.program import SWITCH, Program

from .api import SOUND, Pass, claims
from .edit import rebuild


def remove_dead_branches(p: Program) -> Program:
    if not any(n.op == SWITCH for n in p.nodes):
        return p
    try:
        sp = specialize(p, {}, cleanup=True, partial=True)
    except Undecided:
        return p
    if sp.dead_outputs or set(sp.program.nodes) == set(p.nodes):
        return p
    return rebuild(p, sp.program.nodes, sp.program.outputs)


PASS = Pass(
    name="dead-branch",
    description="dead-branch removal: a Switch on a constant predicate forwards, its dead side goes",
    claims=claims(atomic=(SOUND, SOUND), decomposed=(SOUND, SOUND)),
    doc=__doc__,
    function=remove_dead_branches,
    control_flow=True,
    generator="tfsem.generators.control_flow:cond_cases",
)
