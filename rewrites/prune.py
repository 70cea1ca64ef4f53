"""`prune`: TensorFlow's partial execution (whitepaper section 4.2).

What it models.  Session.Run is given the tensors to fetch; TensorFlow keeps
the nodes that those depend on, "working backwards in the graph using the
graph dependencies", and runs only those.  Here: keep the nodes from which an
output edge is reachable backwards over data and control edges; drop the rest.
Variables, output names and feeds are kept (the interface does not change).

Claims.
* `outputs` — sound, in both modes.  The kept set K is closed under
  predecessors, so in any run of the pruned program its steps are enabled in
  the original in the same order; firing every dropped node after all of K
  gives a run of the original whose outputs (all produced in K, from the same
  variable values, since nothing outside K fired before) are the same.  The
  argument does not care whether an Assign is one step or two.
* `outputs+state` — unsound, in both modes: an unfetched Write disappears, so
  the variable it would have set keeps its initial value (seed 000, footnote 7:
  TensorFlow "optimizes away" the subgraph that sets x).  Witness: a lone
  `Write x := B` and no outputs; the original always ends with x = B, the
  pruned program with x's initial value.
"""

from __future__ import annotations

from tfsem.oracle.program import ASSIGN, Program

from .api import SOUND, UNSOUND, Pass, claims
from .edit import rebuild


def prune(p: Program) -> Program:
    keep = p.ancestors({port.node for port in p.outputs.values()})
    return rebuild(p, (n for n in p.nodes if n.name in keep))


PASS = Pass(
    name="prune",
    description="partial execution (TF 4.2): keep only what a fetched output depends on",
    claims=claims(atomic=(UNSOUND, SOUND), decomposed=(UNSOUND, SOUND)),
    doc=__doc__,
    function=prune,
)


def prune_keep_state(p: Program) -> Program:
    roots = {port.node for port in p.outputs.values()} | {n.name for n in p.nodes if n.op == ASSIGN}
    keep = p.ancestors(roots)
    return rebuild(p, (n for n in p.nodes if n.name in keep))
