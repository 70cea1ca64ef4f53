"""`dce`: dead code elimination of side-effect-free nodes.

What it models.  Dead code elimination (seed 000, section 4; Grappler's
model pruner): a node none of whose results is used, and that has no side
effect, is removed.  Here the side-effect-free nodes are functions, Var nodes
and Reads (a Read changes no variable); Assigns are never removed.  A node is
dead when no output is fetched from it and every data consumer of its results
is dead (so chains die together).  Control edges do not keep a node alive: a
node that waited for a dead node d waits instead for d's own predecessors
(recursively through dead ones), so no ordering is lost.

Claims: sound in every cell.  Take a run of the rewrite and insert each dead
node into it at the first point where all its predecessors have finished, in
topological order.  That is a run of the original: a live node that waited
for a dead node d waited, in the rewrite, for d's predecessors, so d is
inserted before it.  A dead node changes no variable, and its values reach
only dead nodes, so every live node, output and variable sees exactly what it
saw in the rewrite.  No Assign is touched, so the mode does not matter.
"""

from __future__ import annotations

from tfsem.oracle.program import ASSIGN, ControlIn, DataIn, Input, Program

from .api import SOUND, Pass, claims
from .edit import canonical_inputs, data_consumers, fetched, rebuild


def dce(p: Program) -> Program:
    out_nodes = fetched(p)
    dead: set[str] = set()
    for name in reversed(p.topological_order):
        n = p.node[name]
        if n.op == ASSIGN or name in out_nodes:
            continue
        if all(c in dead for c, _ in data_consumers(p, name)):
            dead.add(name)
    if not dead:
        return p

    expansion: dict[str, tuple[Input, ...]] = {}

    def waits_for(d: str) -> tuple[Input, ...]:
        """What waiting for dead node d becomes: its live predecessors."""
        if d not in expansion:
            found: list[Input] = []
            for i in p.node[d].inputs:
                if isinstance(i, (DataIn, ControlIn)):
                    found.extend(waits_for(i.node) if i.node in dead else (ControlIn(i.node),))
                # FeedIn and FeedControlIn hold their contents from the start.
            expansion[d] = tuple(dict.fromkeys(found))
        return expansion[d]

    nodes = []
    for n in p.nodes:
        if n.name in dead:
            continue
        data_preds = {i.node for i in n.inputs if isinstance(i, DataIn)}
        inputs: list[Input] = []
        for i in n.inputs:
            if isinstance(i, ControlIn) and i.node in dead:
                # (waiting for a node that is already a data input is implied)
                inputs.extend(c for c in waits_for(i.node) if c.node not in data_preds)
            else:
                inputs.append(i)
        # (a node left with no inputs at all gets the implicit GO input)
        new = canonical_inputs(inputs)
        nodes.append(n.replace(inputs=new) if new != n.inputs else n)
    return rebuild(p, nodes)


PASS = Pass(
    name="dce",
    description="remove side-effect-free nodes (functions, Var, Read) whose results nobody uses",
    claims=claims(atomic=(SOUND, SOUND), decomposed=(SOUND, SOUND)),
    doc=__doc__,
    function=dce,
)
