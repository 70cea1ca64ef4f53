"""`hoist-reads`: XLA-style read hoisting and write sinking (seed 002).

What it models.  Wrapping a graph in an XLA cluster (_XlaCompile/_XlaRun,
XlaLaunch) "hoist[s] all the resource variable reads to the beginning of the
computation and sink[s] all the writes to the end".  Here:

* every Read loses its control inputs, and reads through a Var node with no
  inputs (a fresh `READ/var` node when its own Var node was itself ordered
  after something): the Read may fire at the very start;
* every Assign gets a control input from every Read that is not already
  ordered before it: all reads come before all writes.

Everything else (data edges, orderings between Assigns, functions) is kept.
Dropping the edges that ordered an Assign before a Read is the bug.

Claims: unsound in every cell (seed 002, "Load/Store Reordering").  Witness,
the seed's first example (seed 000, 3.1.2):

    w = Write x := $B        r = Read x ^w        output out = r

The original always outputs B; after hoisting, r comes before w and outputs
x's initial value.  An output differs, so both observe settings; no Assign is
split or merged, so both modes.
"""

from __future__ import annotations

from typing import Callable

from tfsem.oracle.program import ASSIGN, READ, VAR, ControlIn, DataIn, Node, Program
from tfsem.oracle.values import Tensor

from .api import UNSOUND, Pass, claims
from .edit import ancestors, bit_index, canonical_inputs, fresh_name, rebuild


def hoist(p: Program, hoistable: Callable[[Program, Node], bool]) -> Program:
    """Detach the Reads that `hoistable` selects from everything before them,
    then order each of them before every Assign."""
    taken = set(p.node)
    phase1: list[Node] = []
    hoisted: list[str] = []
    for n in p.nodes:
        if n.op == READ and hoistable(p, n):
            handle = n.data_inputs[0]
            if p.node[handle.node].inputs:
                # The Read's Var node waits for something: give the Read its own.
                var_name = fresh_name(f"{n.name}/var", taken)
                phase1.append(Node(var_name, VAR, (), {"var": p.node[handle.node].var}))
                handle = DataIn(var_name, 0)
            n = n.replace(inputs=(handle,))
            hoisted.append(n.name)
        phase1.append(n)
    if not hoisted:
        return p
    mid = rebuild(p, phase1)
    anc, index = ancestors(mid), bit_index(mid)
    mask = 0
    for r in hoisted:
        mask |= 1 << index[r]
    missing = {n.name: mask & ~anc[n.name] for n in mid.nodes if n.op == ASSIGN}
    barrier = None
    if sum(m.bit_count() for m in missing.values()) > BARRIER_EDGES:
        # One control edge from every Read to every Assign is |Reads| x
        # |Assigns| edges (6 million, 6 GB and two minutes on 10,000 nodes).
        # A Const ordered after every hoisted Read and before those Assigns
        # orders them the same way with |Reads| + |Assigns| edges.  No cycle:
        # a hoisted Read's only ancestor is an input-less Var, so no Assign
        # is before it.  The Const is not fetched: outcomes are unchanged.
        barrier = fresh_name("hoist/barrier", set(mid.node))
    out = []
    for n in mid.nodes:
        if n.op == ASSIGN and missing[n.name]:
            if barrier is not None:
                extra = [ControlIn(barrier)]
            else:
                extra = [ControlIn(r) for r in hoisted if missing[n.name] >> index[r] & 1]
            n = n.replace(inputs=canonical_inputs(n.inputs + tuple(extra)))
        out.append(n)
    if barrier is not None:
        out.append(Node(barrier, "Const", tuple(ControlIn(r) for r in hoisted), {"value": Tensor(0)}))
    return rebuild(p, out)


#: past this many Read -> Assign control edges, hoist orders through one node
BARRIER_EDGES = 4096


def hoist_reads(p: Program) -> Program:
    return hoist(p, lambda p, n: True)


PASS = Pass(
    name="hoist-reads",
    description="XLA cluster: every Read to the start, every Assign after all Reads",
    claims=claims(atomic=(UNSOUND, UNSOUND), decomposed=(UNSOUND, UNSOUND)),
    doc=__doc__,
    function=hoist_reads,
)
