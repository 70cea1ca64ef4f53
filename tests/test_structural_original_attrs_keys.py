"""The structural rule's attribute keys of the original's nodes, kept in its
memo entry between the checks of its rewrites (checking/structural.py
`ORIGINAL_ATTRS_KEYS`, `_attrs_keys_from`): with them kept and with every
key computed in each check, the same results, reasons and counts, on
generated originals, the stored cases and the stored Grappler programs of
real graphs; a key is taken only for the very mapping it was made of."""

from __future__ import annotations

import numpy as np

from tfsem.checking import structural
from tfsem.checking.structural import structural_refinement
from tfsem.oracle.program import Node
from tfsem.oracle.values import Tensor
from test_structural_original_memo import _families
from test_structural_original_terms import MODES, _both as _both_terms, _grappler_programs, _row


def _both(monkeypatch, run) -> list:
    return _both_terms(monkeypatch, run, "ORIGINAL_ATTRS_KEYS")


def test_generated_originals_give_the_same_results(monkeypatch):
    families = _families(25, rewrites=4, seed=5523)

    def run():
        return [[_row(structural_refinement(p, q, s, o)) for q, s, o in qs]
                for p, qs in families]

    rows = _both(monkeypatch, run)
    flat = [r for row in rows for r in row]
    assert any(r[0] for r in flat) and not all(r[0] for r in flat)


def test_stored_grappler_programs_give_the_same_results(monkeypatch):
    programs = [g for g in _grappler_programs() if len(g[1].nodes) < 3000]
    assert programs

    def run():
        rows = []
        for _name, p, rewritten in programs:
            for s, o, real in MODES[::3]:
                for _round in range(2):
                    for opt, q in rewritten.items():
                        rows.append((opt, s, o, real, _row(structural_refinement(
                            p, q, s, o, real=real))))
        return rows

    rows = _both(monkeypatch, run)
    assert any(r[-1][0] for r in rows)


def test_the_kept_keys_are_the_original_nodes_own(monkeypatch):
    """The entry holds one key per attribute mapping of the original's
    nodes that its term plan names, each `_attrs_key` of that very mapping;
    a check's copy is its own (a rewrite's keys added to it stay out of the
    original's entry)."""
    monkeypatch.setattr(structural, "ORIGINAL_MEMO", True)
    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", True)
    _name, p, rewritten = next(iter(_grappler_programs()))
    q = next(iter(rewritten.values()))
    structural_refinement(p, q)
    kept = structural._original_memo(p, create=False)["attrs_keys"]
    memo = structural._original_memo(p, create=False)
    planned = {e[0] for e in memo["plan"][0]}
    with_attrs = {id(n.attrs): n.attrs for n in p.nodes if n.attrs and n.name in planned}
    assert kept and set(kept) == set(with_attrs)
    for k, (attrs, key) in kept.items():
        assert attrs is with_attrs[k] and key == structural._attrs_key(attrs)
    # (a rewrite's node of equal attributes but another mapping is no entry)
    assert all(id(n.attrs) not in kept for n in q.nodes if n.attrs)
    copy = structural._attrs_keys_from(p, memo, memo["plan"][0])
    assert copy == kept and copy is not kept


def _mutated(p):
    """p with its first Const's value changed (x -> 2x + 1): a new program
    object with a new mapping for that node, all else shared."""
    nodes = list(p.nodes)
    k = next(k for k, n in enumerate(nodes) if n.op == "Const")
    n = nodes[k]
    v = n.attrs["value"]
    with np.errstate(all="ignore"):
        value = Tensor((v.array * 2 + 1).astype(v.array.dtype), v.dtype)
    nodes[k] = Node(n.name, n.op, n.inputs, {**n.attrs, "value": value})
    return p.replace(nodes=tuple(nodes))


def test_a_mutated_original_takes_no_stale_key(monkeypatch):
    """Each original checked, then a copy of it with one constant changed
    (which the rewrites keep): the mutated original's checks give what
    they give with every key computed, and its changed node's key is that
    of its own mapping, not the first original's."""
    families = [(p, qs) for p, qs in _families(20, rewrites=3, seed=6604)
                if any(n.op == "Const" for n in p.nodes)]
    assert len(families) > 5

    def run():
        rows = []
        for p, qs in families:
            m = _mutated(p)
            for q, s, o in qs:
                rows.append((_row(structural_refinement(p, q, s, o)),
                             _row(structural_refinement(m, q, s, o))))
        return rows

    rows = _both(monkeypatch, run)
    # (the constant matters somewhere: a proof of the original is no proof
    # of its mutation's)
    assert any(a[0] and not b[0] for a, b in rows)
    monkeypatch.setattr(structural, "ORIGINAL_ATTRS_KEYS", True)
    for p, _qs in families:
        m = _mutated(p)
        structural_refinement(m, _qs[0][0], _qs[0][1], _qs[0][2])
        memo = structural._original_memo(m, create=False)
        kept = memo["attrs_keys"]
        planned = {e[0] for e in memo["plan"][0]}
        for n in m.nodes:
            if n.attrs and n.name in planned:
                assert kept[id(n.attrs)] == (n.attrs, structural._attrs_key(n.attrs))
