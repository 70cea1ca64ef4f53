"""`drop-sections`: every variable access moves out of its critical section.

What it models.  An optimizer that treats the `MutexLock` /
`ConsumeMutexLock` of `tf.CriticalSection.execute` as ordinary nodes and
moves a `ReadVariableOp` or an assignment out of the span they hold (rule 2
of "Concurrency Semantics For TensorFlow Resource Variables": "the total
order respects critical sections").  On a session's program (oracle/blocking.py,
docs/sessions.md) each Read and Assign node (Write, AssignAdd, Assign-f)
loses its `"critical_section"` field; the other members stay.  On a plain
program (no sections) it changes nothing.

Claims, per semantics mode and kind of session (tfsem verify drop-sections):
* one run, or runs one after the other — sound: a section constrains nothing
  inside one run (the run holds it), and sequential runs never overlap, so
  the outcomes stay the same.
* concurrent runs (with or without a queue) — unsound: the section was what
  kept two runs' read-modify-write of a counter from interleaving; without
  it one update is lost (in both modes: the Read and the Write are two
  nodes).
"""

from __future__ import annotations

from tfsem.oracle.program import Program

from .api import (CONCURRENT_QUEUES, CONCURRENT_RUNS, ONE_RUN, SEQUENTIAL_RUNS, SOUND, UNSOUND,
                  Pass)
from .sections import drop_sections

#: the ops of a session's program that read or write a variable
ACCESS_OPS = frozenset({"Read", "Write", "Assign", "AssignAdd", "AssignSub"})


def drop_access_sections(program: dict) -> dict:
    """The session pass: the program JSON with its accesses out of their sections."""
    accesses = [n.get("name") for n in program.get("nodes", [])
                if isinstance(n, dict) and n.get("op") in ACCESS_OPS]
    return drop_sections(program, accesses)


def _plain(p: Program) -> Program:
    return p    # a plain program has no critical sections


PASS = Pass(
    name="drop-sections",
    description="variable accesses move out of their critical sections (sessions only; "
                "sound for one run, unsound for concurrent runs)",
    claims={},
    doc=__doc__,
    function=_plain,
    session_function=drop_access_sections,
    session_claims={(s, k): c for s in ("atomic", "decomposed")
                    for k, c in ((ONE_RUN, SOUND), (SEQUENTIAL_RUNS, SOUND),
                                 (CONCURRENT_RUNS, UNSOUND), (CONCURRENT_QUEUES, UNSOUND))},
)
