"""Races: unordered accesses to one variable, at least one of them a write.

Two nodes are *ordered* when a path of edges (data or control) leads from one
to the other; otherwise some run may fire them in either order.  A *race* is a
pair of accesses (Read or Assign nodes) to the same variable, at least one an
Assign, that are unordered.  Most rewrites worth checking move accesses
around, so the generators aim to produce racy programs often, and the
benchmark measures how often they do.
"""

from __future__ import annotations

from typing import Iterator

from tfsem.oracle.program import ASSIGN, READ, DataIn, Program


def ancestors(p: Program) -> dict[str, int]:
    """Node name -> bit set (over p.nodes' positions) of the nodes with a path
    to it (itself excluded)."""
    bit = {n.name: 1 << i for i, n in enumerate(p.nodes)}
    anc: dict[str, int] = {}
    for name in p.topological_order:
        a = 0
        for pred in p.predecessors(name):
            a |= anc[pred] | bit[pred]
        anc[name] = a
    return anc


def accesses(p: Program) -> list[tuple[str, str, bool]]:
    """(node, variable, is_assign) for every Read and Assign of a known variable."""
    out = []
    for n in p.nodes:
        if n.op in (READ, ASSIGN):
            x = p.accessed_variable(n.name)
            if x is not None:
                out.append((n.name, x, n.op == ASSIGN))
    return out


def races(p: Program) -> Iterator[tuple[str, str, str]]:
    """Each race as (variable, access, access), in declaration order."""
    anc = ancestors(p)
    bit = {n.name: 1 << i for i, n in enumerate(p.nodes)}
    acc = accesses(p)
    for i, (a, x, wa) in enumerate(acc):
        for b, y, wb in acc[i + 1:]:
            if x == y and (wa or wb) and not (anc[b] & bit[a]) and not (anc[a] & bit[b]):
                yield x, a, b


def has_race(p: Program) -> bool:
    """Two accesses to one variable, at least one an Assign, unordered by the edges."""
    return next(races(p), None) is not None


def race_count(p: Program) -> int:
    return sum(1 for _ in races(p))


def lost_updates(p: Program) -> Iterator[tuple[str, str, str, str]]:
    """Each lost update as (variable, read, assign, intruder): `read` reads x,
    `assign` assigns x a value computed from `read` (a data path leads from one
    to the other), and another Assign to x, `intruder`, may fire between the
    two (it is neither before the read nor after the assign), so its effect
    may be overwritten."""
    anc = ancestors(p)
    bit = {n.name: 1 << i for i, n in enumerate(p.nodes)}
    data_anc = _data_ancestors(p)
    acc = accesses(p)
    for r, x, r_assign in acc:
        if r_assign:
            continue
        for w, y, w_assign in acc:
            if not w_assign or y != x or not (data_anc[w] & bit[r]):
                continue
            for u, z, u_assign in acc:
                if u_assign and z == x and u != w \
                        and not (anc[r] & bit[u]) and not (anc[u] & bit[w]):
                    yield x, r, w, u


def has_lost_update(p: Program) -> bool:
    return next(lost_updates(p), None) is not None


def _data_ancestors(p: Program) -> dict[str, int]:
    """Like :func:`ancestors`, along data edges only."""
    bit = {n.name: 1 << i for i, n in enumerate(p.nodes)}
    anc: dict[str, int] = {}
    for name in p.topological_order:
        a = 0
        for i in p.node[name].inputs:
            if isinstance(i, DataIn):
                a |= anc[i.node] | bit[i.node]
        anc[name] = a
    return anc
