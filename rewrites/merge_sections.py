"""`merge-sections`: every critical section of the program becomes one.

What it models.  Coarsening locks: one `tf.CriticalSection` where there
were several (the nodes of every section get the section of the first name,
rewrites/sections.py merge_sections).  On a plain program (no sections) it
changes nothing.

Claims, per semantics mode and kind of session (tfsem verify merge-sections):
* one run, sequential runs — sound: sections constrain nothing there.
* concurrent runs without queues — sound: every order the merged section
  allows the separate ones allow (a run's span in the merged section holds
  its span in each old one), and with one section and nothing else that
  blocks, a run holding it always goes on: no deadlock is added.
* concurrent runs with a queue — unsound: a run may now wait inside the
  merged section for an element that only another run's (now locked out)
  section would enqueue: an added deadlock (docs/sessions.md).
"""

from __future__ import annotations

from tfsem.oracle.program import Program

from .api import (CONCURRENT_QUEUES, CONCURRENT_RUNS, ONE_RUN, SEQUENTIAL_RUNS, SOUND, UNSOUND,
                  Pass)
from .sections import merge_sections


def merge_all_sections(program: dict) -> dict:
    """The session pass: every section of the program JSON merged into one."""
    return merge_sections(program)


def _plain(p: Program) -> Program:
    return p    # a plain program has no critical sections


PASS = Pass(
    name="merge-sections",
    description="every critical section becomes one (sessions only; sound without queues, "
                "unsound with a queue between sections)",
    claims={},
    doc=__doc__,
    function=_plain,
    session_function=merge_all_sections,
    session_claims={(s, k): c for s in ("atomic", "decomposed")
                    for k, c in ((ONE_RUN, SOUND), (SEQUENTIAL_RUNS, SOUND),
                                 (CONCURRENT_RUNS, SOUND), (CONCURRENT_QUEUES, UNSOUND))},
)
