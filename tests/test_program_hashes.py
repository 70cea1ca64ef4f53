"""A program's and a node's hashes are made once (oracle/program.py): equal
to the hash of what they are made from, equal for equal content, and never
carried by pickle into another process (str hashes are salted per process)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.program import DataIn, Node


def _node() -> Node:
    return Node("a", "Add", (DataIn("x", 0), DataIn("y", 1)), {"T": "float32"})


def test_a_node_hash_is_the_hash_of_its_fields_and_equal_nodes_hash_equal():
    a, b = _node(), _node()
    assert a == b and a is not b
    assert hash(a) == hash(b) == hash((a.name, a.op, a.inputs, a.attrs))
    assert hash(a) == hash(a)               # (the kept one)
    c = Node("a", "Add", (DataIn("x", 0), DataIn("y", 0)), {"T": "float32"})
    assert c != a and hash(c) == hash((c.name, c.op, c.inputs, c.attrs))


def test_a_pickled_node_makes_its_hash_again_in_another_process():
    n = Node("c", "Identity", (DataIn("x", 0),))
    hash(n)
    data = pickle.dumps(n)
    assert b"_hash" not in data
    code = ("import pickle, sys; from tfsem.oracle.program import Node; "
            "n = pickle.loads(sys.stdin.buffer.read()); "
            "print(hash(n) == hash((n.name, n.op, n.inputs, n.attrs)))")
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True,
                             env=dict(os.environ, PYTHONHASHSEED=seed), check=True)
        assert out.stdout.decode().strip() == "True"


def test_a_program_hash_is_its_identity_hash_and_equal_programs_hash_equal():
    doc = {"format": "tfsem.program/1", "variables": ["x"],
           "nodes": [{"name": "v", "op": "Var", "var": "x"},
                     {"name": "r", "op": "Read", "inputs": ["v"]},
                     {"name": "one", "op": "Const", "value": 1},
                     {"name": "a", "op": "Assign", "fn": "Add", "inputs": ["v", "one"]}],
           "outputs": {"out": "r"}}
    p, q = program_from_json(doc), program_from_json(doc)
    assert hash(p) == hash(q)
    assert "_identity" not in p.__dict__     # (the hash walks no node's inputs or attributes)
    assert p == q and p is not q
    other = program_from_json(dict(doc, outputs={"out": "one"}))
    assert other != p


def _cases_and_generated():
    import json
    from pathlib import Path
    from tfsem.generators.strategies import random_programs
    out = []
    for path in sorted((Path(__file__).parent / "cases").glob("*.json")):
        case = json.loads(path.read_text())
        for side in ("original", "rewritten"):
            if isinstance(case.get(side), dict):
                try:
                    out.append(program_from_json(case[side]))
                except Exception:   # noqa: BLE001 (a malformed case's side: no program)
                    pass
    return out + random_programs(60, 7, max_nodes=10)


def test_equal_programs_hash_equal_over_cases_and_generated_programs():
    # every pair, and each program against a copy of itself made anew (equal,
    # not the same object), and against the same program with one node's
    # attributes or inputs changed (unequal, possibly of the same hash)
    from tfsem.oracle.jsonio import program_to_json
    programs = _cases_and_generated()
    assert len(programs) > 100
    for p in programs:
        copy = program_from_json(program_to_json(p), validate=False)
        assert copy == p and hash(copy) == hash(p) and copy._identity == p._identity
    for p in programs:
        for q in programs:
            same = p._identity == q._identity
            assert (p == q) is same
            if same:
                assert hash(p) == hash(q)


def test_programs_of_one_hash_are_told_apart_by_equality():
    doc = {"format": "tfsem.program/1", "variables": ["x"],
           "nodes": [{"name": "v", "op": "Var", "var": "x"},
                     {"name": "r", "op": "Read", "inputs": ["v"]},
                     {"name": "one", "op": "Const", "value": 1},
                     {"name": "a", "op": "Assign", "fn": "Add", "inputs": ["v", "one"]}],
           "outputs": {"out": "r"}}
    p = program_from_json(doc)
    nodes = [dict(n) for n in doc["nodes"]]
    nodes[2] = {"name": "one", "op": "Const", "value": 2}
    q = program_from_json(dict(doc, nodes=nodes))
    assert hash(p) == hash(q) and p != q
    assert len({p: 1, q: 2}) == 2 and {p: 1, q: 2}[q] == 2
