"""An example plugin: two rewrite passes that tfsem finds through the
entry-point group `tfsem.rewrites`, without tfsem knowing this package.

* `example-swap-outputs` is a :class:`tfsem.rewrites.Pass` with claims: it
  swaps the sources of the first two outputs (sorted by name), which is
  unsound wherever they can differ;
* `example-identity` is a plain function, which tfsem wraps as a pass that
  claims nothing.
"""

from tfsem.oracle.program import Program
from tfsem.rewrites import UNSOUND, Pass, claims


def swap_outputs(p: Program) -> Program:
    names = sorted(p.outputs)
    if len(names) < 2:
        return p
    a, b = names[:2]
    outputs = dict(p.outputs)
    outputs[a], outputs[b] = outputs[b], outputs[a]
    return p.replace(outputs=outputs).validated()


SWAP_OUTPUTS = Pass(
    name="example-swap-outputs",
    description="swap the first two outputs (an example plugin pass; wrong on purpose)",
    claims=claims(atomic=(UNSOUND, UNSOUND), decomposed=(UNSOUND, UNSOUND)),
    doc=swap_outputs.__doc__ or "Swaps the sources of the first two outputs.",
    function=swap_outputs,
)


def identity(p: Program) -> Program:
    """Return the program unchanged (an example plugin pass)."""
    return p
