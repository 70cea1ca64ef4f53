"""`cse`: common subexpression elimination (whitepaper section 5.1, after Click).

What it models.  TensorFlow's CSE "canonicalizes multiple copies of operations
with identical inputs and operation types to just a single one of these
nodes, and redirects graph edges appropriately".  Here: walking the nodes in
topological order, a node is merged into an earlier one with the same
operation, the same attributes, the same data inputs (in order, after earlier
merges) and the same set of control inputs.  The survivor is the first in
topological order; data and control edges out of a merged node, and outputs
fetched from it, are redirected to the survivor.  Assigns are never merged.
Var, Read and function nodes may be.

Claims: sound in every cell.  Two merged nodes m1, m2 have the same inputs, so
whenever the survivor m1 fires in a run of the rewritten program, m2 is
enabled in the original too; the original fires m1 and then at once m2.
Functions are deterministic and a Read has no side effect, so m2 produces
exactly what m1 produces (two Reads fired back to back see the same value),
and everyone downstream sees the same values as in the rewritten run.  Only
single steps are involved (no Assign is merged), so this holds with Assigns
atomic or decomposed.  Each merge is such a refinement, and so is their
composition.
"""

from __future__ import annotations

from tfsem.oracle import functions as fns
from tfsem.oracle.program import ASSIGN, ControlIn, DataIn, FeedControlIn, FeedIn, Program

from .api import SOUND, Pass, claims
from .edit import rebuild, rename_inputs


def merge_common(p: Program, *, compare_control: bool = True, merge_assigns: bool = False) -> Program:
    """Merge nodes with equal operation, attributes and data inputs, and (when
    `compare_control`) equal control inputs; Assigns only if `merge_assigns`.

    The survivor keeps its own control inputs: when control inputs are not
    compared, those of the merged node are lost (cse-ignore-control's bug).
    """
    ports: dict[tuple[str, int], DataIn] = {}    # merged (node, port) -> survivor's port
    names: dict[str, str] = {}                   # merged node -> survivor
    table: dict[tuple, str] = {}
    rewritten = {}
    for name in p.topological_order:
        n = p.node[name]
        inputs = rename_inputs(n.inputs, ports, names)
        if n.op != ASSIGN or merge_assigns:
            data = tuple(i for i in inputs if isinstance(i, (DataIn, FeedIn)))
            control = frozenset(i for i in inputs if isinstance(i, (ControlIn, FeedControlIn)))
            key = (n.op, fns.attrs_key(n.attrs), data, control if compare_control else None)
            survivor = table.get(key)
            if survivor is not None:
                names[name] = survivor
                for port in range(max(n.n_outputs(), 1)):
                    ports[(name, port)] = DataIn(survivor, port)
                continue
            table[key] = name
        rewritten[name] = n.replace(inputs=inputs) if inputs != n.inputs else n
    outputs = {k: ports.get((v.node, v.port), v) for k, v in p.outputs.items()}
    return rebuild(p, (rewritten[n.name] for n in p.nodes if n.name in rewritten), outputs)


def cse(p: Program) -> Program:
    return merge_common(p)


PASS = Pass(
    name="cse",
    description="common subexpression elimination (TF 5.1): merge identical non-Assign nodes",
    claims=claims(atomic=(SOUND, SOUND), decomposed=(SOUND, SOUND)),
    doc=__doc__,
    function=cse,
)
