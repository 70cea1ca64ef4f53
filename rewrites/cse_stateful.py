"""`cse-stateful`: CSE that also merges identical Assigns.

What it models.  A CSE that treats Assign-f like any other operation: two
Assigns with the same function, the same variable handle, the same value
input and the same control inputs become one.  Everything else is `cse`.

Claims.
* `atomic` — unsound, both observe settings.  Two identical AssignAdds of 1
  to x add 2 in every run of the original; the merged program adds 1.  With
  `outputs` only, a Read of x ordered after both shows it:

      a1 = AssignAdd x, 1     a2 = AssignAdd x, 1     r = Read x ^a1 ^a2

  original: r = x0 + 2 always; rewrite: r = x0 + 1.
* `decomposed` — sound, both observe settings.  When each Assign is a read
  step and a later write step (seed 002), the original may fire a1@read,
  a2@read back to back (their inputs are the same, so both are enabled when
  the survivor's read step is), and later a1@write, a2@write back to back at
  the survivor's write step: both read the same w and store the same
  f(w, v) (or both leave x unchanged when v or f(w, v) is an error), which is
  exactly the effect of the merged Assign.  So every run of the rewrite is
  matched by a run of the original with the same outcome: the merge only
  removes behaviours (the original's runs where the two updates both count).
"""

from __future__ import annotations

from tfsem.oracle.program import Program

from .api import SOUND, UNSOUND, Pass, claims
from .cse import merge_common


def cse_stateful(p: Program) -> Program:
    return merge_common(p, merge_assigns=True)


PASS = Pass(
    name="cse-stateful",
    description="CSE that also merges identical Assigns (same function, variable, value, control)",
    claims=claims(atomic=(UNSOUND, UNSOUND), decomposed=(SOUND, SOUND)),
    doc=__doc__,
    function=cse_stateful,
)
