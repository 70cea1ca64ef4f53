"""`prune-keep-state`: partial execution that keeps every Assign.

What it models.  `prune` (TensorFlow's partial execution), but the roots of
the backward search are the fetched nodes *and every Assign*: a node is dropped
only when neither an output nor an Assign is reachable from it.  This is what
a pruner must do when the final variable values are part of what a run
produces (state persists across Session.Run calls).

Claims: sound in every cell.  Every dropped node is a function, a Var or a
Read: none changes a variable.  The kept set is closed under predecessors, so
a run of the pruned program, followed by the dropped nodes, is a run of the
original with the same outputs and, since the dropped nodes write nothing,
the same final variable values.  An Assign is never dropped, so whether it is
one step (atomic) or two (decomposed) does not matter.
"""

from __future__ import annotations

from .api import SOUND, Pass, claims
from .prune import prune_keep_state

PASS = Pass(
    name="prune-keep-state",
    description="partial execution that also keeps every Assign and what it needs",
    claims=claims(atomic=(SOUND, SOUND), decomposed=(SOUND, SOUND)),
    doc=__doc__,
    function=prune_keep_state,
)
