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
    # The accesses of each variable, in program order, found in one pass (a
    # pass over the program per update made a large training step's import
    # quadratic in its size).
    accessed: dict[str, str] = {}
    by_variable: dict[str, list[str]] = {}
    for n in p.nodes:
        if n.op == "Read" or n.op == "Assign":
            x = p.accessed_variable(n.name)
            if x is not None:
                accessed[n.name] = x
                by_variable.setdefault(x, []).append(n.name)
    declared_at = {n.name: k for k, n in enumerate(p.nodes)}
    checks = []
    for where, group, variables in updates:
        # the update's own accesses (its pure parts touch no variable)
        members = [m for m in group if m in p.node and m in accessed]
        writes = [m for m in members if p.node[m].op == "Assign"]
        others = sorted({o for x in variables for o in by_variable.get(x, ()) if o not in group},
                        key=declared_at.__getitem__)
        checks.append((where, members, writes, others))
    # Which of those accesses are ancestors of which, as sets of bits carried
    # along the program in a topological order (any gives the same
    # ancestors: an imported program's own order is one, and Kahn's need not
    # be computed for it).  One bit per access asked about, not per node; and
    # a path between two accesses asked about for one update runs through
    # nodes no later in the order than the last of that update's accesses
    # (its bits' "end"), so past its end a bit is dropped from every set:
    # bits are numbered by their end, and a set holds only the bits not yet
    # ended, shifted down past the ended ones.  An update whose accesses are
    # close together in the order (an optimizer's reads and writes) then
    # costs a few bits for a short while, not one bit in every node's set.
    # A node's set is kept only until its last successor has taken it.
    order = [n.name for n in p.nodes] if p.declared_in_order else p.topological_order
    position = {n: k for k, n in enumerate(order)}
    end: dict[str, int] = {}
    for _, members, _, others in checks:
        if others:
            asked = members + others
            last = max(position[m] for m in asked)
            for m in asked:
                if end.get(m, -1) < last:
                    end[m] = last
    if not end:
        return None
    by_end = sorted(end, key=end.__getitem__)
    index = {m: k for k, m in enumerate(by_end)}
    ends = [end[m] for m in by_end]
    left = dict.fromkeys(order, 0)   # successors each node has not given its bits yet
    for n in order:
        for q in p.predecessors(n):
            left[q] += 1
    anc: dict[str, tuple[int, int]] = {}   # node -> (bits ended before it, the others' set)
    ended = 0
    for t, n in enumerate(order):
        while ended < len(ends) and ends[ended] < t:
            ended += 1
        bits = 0
        for q in p.predecessors(n):
            base, b = anc[q]
            bits |= b >> (ended - base) if base < ended else b
            k = index.get(q)
            if k is not None and k >= ended:
                bits |= 1 << (k - ended)
            left[q] -= 1
            if not left[q] and q not in index:
                del anc[q]
        if left[n] or n in index:
            anc[n] = (ended, bits)

    def ancestor(x: str, y: str) -> bool:
        """Whether access x is an ancestor of access y (both of one update)."""
        base, b = anc[y]
        k = index[x] - base
        return k >= 0 and bool(b >> k & 1)

    for where, members, writes, others in checks:
        for o in others:
            against = writes if p.node[o].op == "Read" else members
            before_all = all(ancestor(o, m) for m in against)
            after_all = all(ancestor(m, o) for m in against)
            if not (before_all or after_all):
                return where, (f"node {o!r} accesses variable {p.accessed_variable(o)!r} "
                               "unordered with this update: tfsem models the update as several "
                               "Reads and Assigns, TensorFlow as one kernel, and they differ "
                               "under this race")
    return None
