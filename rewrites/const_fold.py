"""`const-fold`: evaluate functions whose inputs are all constants.

What it models.  Constant folding (seed 000, section 4: "the current program
transformations include ... constant folding"; Grappler's ConstantFolding).
Walking in topological order, a function node whose data inputs all come from
Const nodes (original or just folded) is evaluated, with the oracle's own
function registry, and replaced by Const nodes: port 0 keeps the node's name
(so control edges out of it still hold), each further port k becomes a new
Const `NAME/k`.  The new Consts keep the node's control inputs and wait for
every input Const that itself waits for something, so nothing downstream is
ordered less than before.  A node whose result is an error value (a shape or
dtype mismatch), or that is no tensor (an EmptyTensorList's list), is left
alone: a Const holds a tensor.  Input Consts that are
no longer used stay in place; `dce` removes them.

Claims: sound in every cell.  Functions are deterministic, so the Const holds
exactly what the node would have produced.  In a run of the rewrite, a new
Const fires after everything the old node waited for, except input Consts
with no inputs at all; those touch nothing and can fire first in the
original, which then fires the old node where its first new Const fired.
Everyone downstream sees the same values, at the same points of the run.  No
variable is involved, so the mode does not matter.
"""

from __future__ import annotations

from tfsem.oracle import functions as fns
from tfsem.oracle.program import ControlIn, DataIn, Node, Program
from tfsem.oracle.values import Tensor

from .api import SOUND, Pass, claims
from .edit import fresh_name, rebuild, rename_inputs

CONST = "Const"


def const_fold(p: Program) -> Program:
    taken = set(p.node)
    ports: dict[tuple[str, int], DataIn] = {}
    current: dict[str, Node] = {}      # node name -> its (possibly rewritten) node
    extra: dict[str, list[Node]] = {}  # node name -> Consts for its ports >= 1
    changed = False
    for name in p.topological_order:
        n = p.node[name]
        inputs = rename_inputs(n.inputs, ports, {})
        n = n.replace(inputs=inputs) if inputs != n.inputs else n
        current[name] = n
        f = fns.lookup(n.op)
        if n.kind != "function" or n.op == CONST or f is None or f.n_out == 0:
            continue
        sources = [current.get(i.node) if isinstance(i, DataIn) else None for i in n.data_inputs]
        if not all(s is not None and s.op == CONST for s in sources):
            continue
        results = f.apply([s.attrs["value"] for s in sources], n.attrs)
        if any(type(r) is not Tensor for r in results):
            # (an error value, or a TensorList: a Const holds a tensor)
            continue
        waits = list(n.control_inputs) + [ControlIn(s.name) for s in sources if s.inputs]
        consts = [Node(name, CONST, (), {"value": results[0]})]
        consts += [Node(fresh_name(f"{name}/{k}", taken), CONST, (), {"value": results[k]})
                   for k in range(1, f.n_out)]
        consts = [c.replace(inputs=tuple(dict.fromkeys(waits))) for c in consts]
        for k, c in enumerate(consts):
            ports[(name, k)] = DataIn(c.name, 0)
        current[name] = consts[0]
        extra[name] = consts[1:]
        changed = True
    if not changed:
        return p
    nodes = []
    for n in p.nodes:
        nodes.append(current[n.name])
        nodes.extend(extra.get(n.name, ()))
    outputs = {k: ports.get((v.node, v.port), v) for k, v in p.outputs.items()}
    return rebuild(p, nodes, outputs)


PASS = Pass(
    name="const-fold",
    description="evaluate functions whose inputs are all constants into Const nodes",
    claims=claims(atomic=(SOUND, SOUND), decomposed=(SOUND, SOUND)),
    doc=__doc__,
    function=const_fold,
)
