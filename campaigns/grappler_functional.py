"""Grappler's lowering of TensorFlow 2's functional control flow as a
campaign target (docs/grappler-control-flow.md, issue 24 item 5):

    tfsem fuzz --pass tfsem.campaigns.grappler_functional:function \\
               --generator tfsem.generators.control_flow:control_flow_cases --budget 30m --out DIR

The control-flow generator writes TensorFlow 1's primitives (`Switch`,
`Merge`, `Enter`, `Exit`, `NextIteration`), on which the function optimizer
has nothing to do.  This target first *raises* each block the generator
made to TensorFlow 2's form, `If` and `While` with stateful branch and body
functions (generators/functional.py), and hands that graph to Grappler; a
program with no block raised is skipped.

The claim judged (`prepare`) is then: Grappler's function optimizer
(inlining and lowering the `If`/`While` to primitives, `LowerIfOp` and
`LowerWhileOp` in TensorFlow) gives a program whose outcomes are among
those of tfsem's own reading of the *raised* graph (graphdef/functions.py
lowers `If`/`While` as TensorFlow's `LowerFunctionalOpsPass` does, and
docs/semantics.md argues it).  So a finding is a disagreement between the
two lowerings of the same functional graph, not a flaw of the raising.

Grappler is told to preserve only the outputs and the stateful nodes outside
functions (as the other control-flow targets, campaigns/grappler_control_flow.py).
"""

from __future__ import annotations

from tfsem.generators.functional import raised, tfsem_reading
from tfsem.graphdef import grappler as _g

from . import tensorflow_target as _t
from .grappler_control_flow import graph_evidence, grappler_imported


def optimize_with_graphs(program, optimizer: str = "function"):
    """(Grappler's output imported, the raised GraphDef, Grappler's output
    GraphDef); (None, None, None) when nothing was raised."""
    r = raised(program)
    if r is None:
        return None, None, None
    data, fetches, targets = r
    imported, out = grappler_imported(data, fetches, targets, optimizer)
    return imported.program, data, out


class FunctionalGrapplerTarget(_t.GrapplerTarget):
    """A Grappler optimizer on the generated program raised to If/While,
    judged against tfsem's reading of the raised graph."""

    def __init__(self, optimizer: str):
        super().__init__(optimizer, name=f"grappler-functional:{optimizer}",
                         origin=f"{__name__}:{'default' if optimizer == _g.DEFAULT_PIPELINE else optimizer}")
        self.description += (" on the program's conditionals and loops raised to If/While "
                             "(preserving only outputs and stateful nodes)")

    def prepare(self, program):
        return tfsem_reading(program)

    def __call__(self, program):
        got = optimize_with_graphs(program, self.optimizer)[0]
        if got is None:
            raise ValueError("nothing to raise (prepare skips such a program)")
        return got

    def evidence(self, record) -> dict:
        return graph_evidence(self.optimizer, record, optimize_with_graphs,
                              {"raised": "conditionals and loops"}, "nothing was raised")


function = FunctionalGrapplerTarget("function")
default = FunctionalGrapplerTarget(_g.DEFAULT_PIPELINE)
