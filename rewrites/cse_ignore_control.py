"""`cse-ignore-control`: CSE that compares data inputs only.

What it models.  The bug class of a real graph converter that merged two
reads of the same state with a write between them: the write was ordered
before the second read by a control edge, which the merge did not look at.
Here: `cse`, except that two nodes with the same operation, attributes and
data inputs are merged whatever their control inputs; the survivor (first in
topological order) keeps its own control inputs and the merged node's are
dropped.  Assigns are still never merged.

Claims: unsound in every cell.  Witness (outputs differ, so both observe
settings; no Assign is split-sensitive, so both modes):

    r1 = Read x            w = Write x := $B        r2 = Read x ^w
    outputs a = r1, b = r2

The original always has b = B.  The rewrite merges r2 into r1, which is not
ordered after w, so with r1 firing before w it outputs a = b = the initial x.
"""

from __future__ import annotations

from tfsem.oracle.program import Program

from .api import UNSOUND, Pass, claims
from .cse import merge_common


def cse_ignore_control(p: Program) -> Program:
    return merge_common(p, compare_control=False)


PASS = Pass(
    name="cse-ignore-control",
    description="CSE that compares data inputs only, dropping the merged node's control edges",
    claims=claims(atomic=(UNSOUND, UNSOUND), decomposed=(UNSOUND, UNSOUND)),
    doc=__doc__,
    function=cse_ignore_control,
)
