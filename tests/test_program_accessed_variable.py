"""`Program.accessed_variable` takes a Read's or Assign's first input as
its variable edge where that input is a data edge (no tuple of data inputs
made): the same answer as the first data input's, on the stored cases and
on accesses whose inputs start with a control edge or a feed, or have no
data input at all (an IndexError then, as before)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfsem.oracle.jsonio import load_case
from tfsem.oracle.program import READ, ASSIGN, VAR, ControlIn, DataIn, FeedIn, Node, Program

TESTS = Path(__file__).parent


def reference(p: Program, name: str):
    n = p.node[name]
    if n.op in (READ, ASSIGN) and n.inputs and isinstance(n.data_inputs[0], DataIn):
        src = p.node.get(n.data_inputs[0].node)
        if src is not None and src.op == VAR:
            return src.var
    return None


def test_stored_cases_agree():
    count = 0
    for path in sorted((TESTS / "cases").rglob("*.json")):
        try:
            c = load_case(path)
            programs = (c.original, c.rewritten(validate=False))
        except Exception:   # (not a case)
            continue
        for p in programs:
            for n in p.nodes:
                assert p.accessed_variable(n.name) == reference(p, n.name)
                count += n.op in (READ, ASSIGN)
    assert count > 100


def test_inputs_that_do_not_start_with_the_variable_edge():
    nodes = [Node("hx", "Var", (), {"var": "x"}), Node("c", "Const", (), {"value": 1}),
             Node("r1", "Read", (ControlIn("c"), DataIn("hx")), {}),
             Node("r2", "Read", (FeedIn("f"), DataIn("hx")), {}),
             Node("r3", "Read", (DataIn("c"),), {}),
             Node("r4", "Read", (DataIn("missing"),), {}),
             Node("r5", "Read", (), {}),
             Node("a1", "Assign", (ControlIn("r1"), DataIn("hx"), DataIn("c")), {"fn": "Snd"}),
             Node("r6", "Read", (ControlIn("c"),), {})]
    p = Program({}, tuple(nodes), {"o": DataIn("r1")})
    for name in ("hx", "c", "r1", "r2", "r3", "r4", "r5", "a1"):
        assert p.accessed_variable(name) == reference(p, name)
    assert p.accessed_variable("r1") == "x" and p.accessed_variable("r2") is None
    with pytest.raises(IndexError):
        reference(p, "r6")
    with pytest.raises(IndexError):
        p.accessed_variable("r6")
