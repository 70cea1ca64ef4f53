"""Multi-variable updates: what graph import, the program format and sessions
check of the state family's optimizer updates (an update TensorFlow runs as
one kernel and tfsem as several Reads and Assigns is exact only when nothing
can see it half done).

The state family's ops themselves (their import, the functions' value
semantics, export) are defined in the op registry, oracle/opdefs/state.py;
the names other modules use stay importable here.
"""

from __future__ import annotations

import weakref
from typing import Any

from .opdefs.state import (OPTIMIZER_DTYPES, OPTIMIZERS, PARALLEL_SCATTER,  # noqa: F401
                           SCATTER_KINDS, SCATTER_ND_KINDS, SLICE_MASKS, Optimizer)

# ---------------------------------------------------------------------------
# Multi-variable updates: exact only when nothing can see them half done

#: (where, the update's tfsem nodes, its variables): an update TensorFlow runs
#: as one kernel and tfsem as several Reads and Assigns.
Update = tuple[str, frozenset, frozenset]
#: id(program) -> (a weak reference to it, its updates).  By identity: two
#: programs equal as values (Program compares by structure) are still two
#: imports, and one dying must not take the other's entry with it.
_UPDATES: dict[int, tuple[Any, tuple[Update, ...]]] = {}


def record_updates(program, updates) -> None:
    """Remember the multi-variable updates of an imported program, so that a
    session of it (oracle/session.py) checks them again across its runs."""
    if not updates:
        return
    key = id(program)
    _UPDATES[key] = (weakref.ref(program),
                     tuple((w, frozenset(g), frozenset(v)) for w, g, v in updates))
    weakref.finalize(program, _UPDATES.pop, key, None)


def updates_of(program) -> tuple[Update, ...]:
    entry = _UPDATES.get(id(program))
    return entry[1] if entry is not None and entry[0]() is program else ()


def racing_access(p, updates) -> tuple[str, str] | None:
    """(where, message) of the first access that may see or change a
    multi-variable update half done, or None when there is none:

    * another Assign of one of its variables is ordered before all of the
      update's accesses or after all of them (else an update could be lost);
    * another Read of one of them is ordered before all of the update's
      Assigns or after all of them (else it could see some variables new and
      others old); a Read beside the update's own Reads is harmless: reads
      commute.

    Then every run is equivalent to one where the update's steps are
    consecutive, which is the kernel's effect (docs/stateful-ops.md)."""
    if not updates:
        return None
    order = p.topological_order
    index = {n: i for i, n in enumerate(order)}
    anc: dict[str, int] = {}
    for n in order:
        bits = 0
        for q in p.predecessors(n):
            bits |= anc[q] | (1 << index[q])
        anc[n] = bits
    for where, group, variables in updates:
        # the update's own accesses (its pure parts touch no variable)
        members = [m for m in group if m in p.node and p.accessed_variable(m) is not None]
        writes = [m for m in members if p.node[m].op == "Assign"]
        others = [n.name for n in p.nodes if n.name not in group
                  and p.accessed_variable(n.name) in variables]
        for o in others:
            against = writes if p.node[o].op == "Read" else members
            before_all = all(anc[m] >> index[o] & 1 for m in against)
            after_all = all(anc[o] >> index[m] & 1 for m in against)
            if not (before_all or after_all):
                return where, (f"node {o!r} accesses variable {p.accessed_variable(o)!r} "
                               "unordered with this update: tfsem models the update as several "
                               "Reads and Assigns, TensorFlow as one kernel, and they differ "
                               "under this race")
    return None
