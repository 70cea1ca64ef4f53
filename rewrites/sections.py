"""Two rewrites of critical sections (docs/sessions.md), on the program
format of a session (`tfsem.program/1` with `"critical_section"` fields and
`"queues"`; oracle/blocking.py).  They change the sections, which the
program passes of `tfsem passes` do not see, so they are functions on that
JSON, with their claims argued here and tested against the session
semantics (tests/test_rewrites_sections.py):

* :func:`drop_sections` moves the given nodes (default: all) out of their
  section — what an optimizer does that treats the `MutexLock` /
  `ConsumeMutexLock` pair as ordinary nodes.  For **one run** it is sound:
  a section constrains nothing inside one run (the run holds it), so the
  outcomes stay the same.  For **two concurrent runs** it is unsound: the
  section was what kept their accesses from interleaving (a counter's
  read-modify-write loses an update).
* :func:`merge_sections` puts every node of the given sections (default:
  all) into one section.  Without queues it is **sound**: every order the
  merged section allows, the separate ones allow (a run's span in the
  merged section contains its span in each old one), and with one section
  and no queue nothing blocks a run that holds it, so no deadlock is added.
  With queues it is **unsound**: a run may now wait in the merged section
  for a queue that only another run's (now excluded) section fills — an
  added deadlock.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable

CLAIMS = {
    "drop_sections": {"one run": "sound", "concurrent runs": "unsound"},
    "merge_sections": {"without queues": "sound", "with queues": "unsound"},
}


def drop_sections(program: dict, nodes: Iterable[str] | None = None) -> dict:
    """`program` with `nodes` (default: every node) out of their section."""
    out = copy.deepcopy(program)
    keep = None if nodes is None else set(nodes)
    for n in out.get("nodes", []):
        if isinstance(n, dict) and (keep is None or n.get("name") in keep):
            n.pop("critical_section", None)
    return out


def merge_sections(program: dict, sections: Iterable[str] | None = None,
                   into: str | None = None) -> dict:
    """`program` with the nodes of `sections` (default: every section) in
    one section, `into` (default: the first of them in sorted order)."""
    out = copy.deepcopy(program)
    nodes: list[dict[str, Any]] = [n for n in out.get("nodes", []) if isinstance(n, dict)]
    present = sorted({n["critical_section"] for n in nodes if "critical_section" in n})
    chosen = present if sections is None else sorted(set(sections) & set(present))
    if not chosen:
        return out
    target = into or chosen[0]
    for n in nodes:
        if n.get("critical_section") in chosen:
            n["critical_section"] = target
    return out
