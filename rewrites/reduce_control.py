"""`reduce-control`: drop control edges implied by other paths.

What it models.  Grappler's dependency optimizer removes redundant control
dependencies: a control edge u → v is redundant when v already waits for u
some other way — a data edge from u, another copy of the same control edge, or
a path u → ... → p into another predecessor p of v.  This is the transitive
reduction of the control edges (data edges are never touched, and neither
are input control edges `^$name`, beyond dropping exact duplicates).

Claims: sound in every cell; in fact the rewrite has exactly the original's
runs.  In both semantics a node (or the first step of a decomposed Assign)
may fire exactly when each of its predecessors has finished, and every edge
of a path means "finished before started".  So removing an edge u → v that is
implied by another path into v never changes when v is enabled: once the
other predecessors have finished, so has u.  Since the reduction of an
acyclic graph keeps every path, edges can be removed all at once.
"""

from __future__ import annotations

from tfsem.oracle.program import ControlIn, DataIn, Program

from .api import SOUND, Pass, claims
from .edit import ancestors, bit_index, canonical_inputs, rebuild


def reduce_control(p: Program) -> Program:
    anc, index = ancestors(p), bit_index(p)
    out = []
    changed = False
    for n in p.nodes:
        data_preds = {i.node for i in n.inputs if isinstance(i, DataIn)}
        preds = set(p.predecessors(n.name))
        kept = []
        seen = set()
        for i in n.inputs:
            if isinstance(i, ControlIn):
                u = i.node
                implied = (u in seen or u in data_preds
                           or any(anc[q] >> index[u] & 1 for q in preds if q != u))
                seen.add(u)
                if implied:
                    continue
            kept.append(i)
        inputs = canonical_inputs(kept)
        if inputs != n.inputs:
            changed = True
            n = n.replace(inputs=inputs)
        out.append(n)
    return rebuild(p, out) if changed else p


PASS = Pass(
    name="reduce-control",
    description="drop control edges implied by other paths (transitive reduction)",
    claims=claims(atomic=(SOUND, SOUND), decomposed=(SOUND, SOUND)),
    doc=__doc__,
    function=reduce_control,
)
