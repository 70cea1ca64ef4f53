"""Program equality's shortcut (oracle/program.py `_differs_at_once`): a
difference found without making the programs' identities is one the
identities have, and where it finds none the identities decide.  Compared
with the identities themselves on pairs that differ in one place (an op,
an input, a control edge, an attribute of another type, a variable, a
feed, an output), on equal copies, on programs with two nodes of one name
(not valid, but comparable), and on the stored cases' pairs."""

from __future__ import annotations

from pathlib import Path

from tfsem.oracle.jsonio import load_case
from tfsem.oracle.program import ControlIn, DataIn, Node, Program, TensorType

TESTS = Path(__file__).parent


def _agrees(a: Program, b: Program) -> bool:
    expected = a._identity == b._identity
    # (fresh objects, so that no identity is made before `==` answers)
    a2 = Program(a.variables, a.nodes, a.outputs, a.feeds)
    b2 = Program(b.variables, b.nodes, b.outputs, b.feeds)
    assert (a2 == b2) is expected and (b2 == a2) is expected
    assert (a2 != b2) is (not expected)
    return expected


def _base(**changes) -> Program:
    nodes = [Node("x", "Var", (), {"var": "x"}),
             Node("r", "Read", (DataIn("x"),), {}),
             Node("c", "Const", (), {"value": 1}),
             Node("y", "Add", (DataIn("r"), DataIn("c")), {}),
             Node("a", "Assign", (DataIn("x"), DataIn("y")), {"fn": "Snd"})]
    data = {"variables": {"x": TensorType("int64", ())}, "nodes": nodes,
            "outputs": {"out": DataIn("y")}, "feeds": {}}
    data.update(changes)
    return Program(**data)


def test_differences_in_one_place_and_equal_copies():
    p = _base()
    nodes = list(p.nodes)

    def with_node(k, node):
        return _base(nodes=nodes[:k] + [node] + nodes[k + 1:])

    assert _agrees(p, _base())
    assert p == p
    different = [
        with_node(3, Node("y", "Sub", nodes[3].inputs, {})),
        with_node(3, Node("y", "Add", (DataIn("c"), DataIn("r")), {})),
        with_node(1, Node("r", "Read", (DataIn("x"), ControlIn("a")), {})),
        with_node(2, Node("c", "Const", (), {"value": 2})),
        with_node(2, Node("c", "Const", (), {"value": True})),   # (1 and True: two keys)
        with_node(2, Node("k", "Const", (), {"value": 1})),
        _base(nodes=nodes[:4]),
        _base(variables={"x": TensorType("int32", ())}),
        _base(feeds={"f": TensorType("float32", ())}),
        _base(outputs={"out": DataIn("r")}),
        _base(outputs={"other": DataIn("y")}),
    ]
    for q in different:
        assert not _agrees(p, q)
    # the same node list in another order: the same program
    assert _agrees(p, _base(nodes=[nodes[2], *nodes[:2], *nodes[3:]]))


def test_two_nodes_of_one_name_are_left_to_the_identities():
    p = _base()
    nodes = list(p.nodes)
    twice = _base(nodes=nodes + [Node("c", "Const", (), {"value": 1})])
    twice2 = _base(nodes=[Node("c", "Const", (), {"value": 1})] + nodes)
    assert _agrees(twice, twice2)
    assert not _agrees(twice, _base(nodes=nodes + [Node("c", "Const", (), {"value": 2})]))
    # (as many nodes, one name twice on one side only)
    assert not _agrees(p, _base(nodes=nodes[:4] + [Node("c", "Const", (), {"value": 1})]))


def test_the_stored_cases_agree():
    pairs = 0
    for path in sorted((TESTS / "cases").rglob("*.json")):
        try:
            c = load_case(path)
            q = c.rewritten(validate=False)
        except Exception:   # (not a case)
            continue
        _agrees(c.original, q)
        _agrees(c.original, c.original)
        pairs += 1
    assert pairs > 20
