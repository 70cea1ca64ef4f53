"""`hoist-reads-safe`: read hoisting restricted to where it cannot be observed.

What it models.  `hoist-reads` (an XLA cluster reads every variable at its
start), applied only to the Reads for which this is harmless: a Read is
hoisted only when nothing ordered before it touches a variable, that is, when
all its ancestors (over data and control edges) are Var nodes and functions.
A hoisted Read is detached from its ancestors and ordered before every Assign,
as in `hoist-reads`; other Reads are left alone.

Why not the weaker rule "no Assign to the *same* variable is ordered before
the Read"?  It is unsound, and the seed says so.  Seed 002's "Load/Store
Reordering": `*X = 1` then (control) `r0 = *Y`, beside `*Y = 5` then (control)
`*X = 2`.  No Assign to Y is ordered before r0, yet hoisting r0 allows r0 = 0
with X = 1 at the end, which the original forbids (X = 1 means `*X = 2` came
first, so `*Y = 5` did, so r0 = 5).  An ancestor that only *reads* another
variable is not harmless either: with `ry = Read y`, `r = Read x ^ry` beside
`ax: x := 1` then (control) `ay: y := 1`, hoisting r allows ry = 1 with
r = 0, which the original forbids.  (tests/test_rewrites.py checks both with
the oracle.)

Claims: sound in every cell.  Take a run of the rewrite.  The hoisted Read r's
old ancestors A are functions and Var nodes: they access no variable, so they
commute with every step.  Move the steps of A to the front of the run, in
their order (their own predecessors are in A, so they stay enabled; their
values do not change).  Now r fires after A, as the original requires, and
reads what it read before, since no step that changes a variable moved.  The
added edges (r before every Assign) only remove runs.  Drop the fresh Var
steps and this is a run of the original with the same outcome.  No Assign is
changed, so the argument holds with Assigns atomic or decomposed.
"""

from __future__ import annotations

from tfsem.oracle.program import Node, Program

from .api import SOUND, Pass, claims
from .edit import ancestors, bit_index, is_stateful
from .hoist_reads import hoist


def hoist_reads_safe(p: Program) -> Program:
    anc, index = ancestors(p), bit_index(p)
    stateful = 0
    for n in p.nodes:
        if is_stateful(n):
            stateful |= 1 << index[n.name]

    def only_pure_ancestors(p: Program, n: Node) -> bool:
        return not anc[n.name] & stateful

    return hoist(p, only_pure_ancestors)


PASS = Pass(
    name="hoist-reads-safe",
    description="hoist only the Reads that nothing touching a variable is ordered before",
    claims=claims(atomic=(SOUND, SOUND), decomposed=(SOUND, SOUND)),
    doc=__doc__,
    function=hoist_reads_safe,
)
