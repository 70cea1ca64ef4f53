"""`nan_payload_observer` asks its per-op questions (an unknown TensorFlow
op, a user's function) once per op, not once per node (checking/
structural.py): the answer is the one asking every node gives (the
per-node reference below, the function as it was), on the stored cases,
the stored Grappler programs of real graphs, and programs with a Bitcast,
an unknown op and a user's function, in several orders and repeated."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tfsem.checking import structural as S
from tfsem.checking.static_shapes import data_inputs
from tfsem.checking.symbolic import _is_tfsems
from tfsem.oracle import functions as fns
from tfsem.oracle.jsonio import load_case, program_from_json
from tfsem.oracle.program import ASSIGN, READ, VAR, FeedIn

TESTS = Path(__file__).parent


def reference(p, unknown: bool = True):
    """The per-node observer (each node's op asked again)."""
    from tfsem.oracle.opdefs.state import PACKED_ASSIGNS
    inputs = data_inputs(p)
    consumers: dict[str, set] = {}
    for n in p.nodes:
        for k, i in enumerate(inputs[n.name]):
            if not isinstance(i, FeedIn):
                consumers.setdefault(i.node, set()).add(
                    "value" if n.op == ASSIGN and k == 1 and n.fn in PACKED_ASSIGNS else n.op)
    for n in p.nodes:
        op = n.attrs.get("fn") if n.op == ASSIGN else n.op
        if not isinstance(op, str) or op in (VAR, READ):
            continue
        name = op[3:].split("/", 1)[0] if op.startswith("tf.") else op
        if name in S.NAN_PAYLOAD_OBSERVERS:
            return n.name, name
        if name in S._PACKINGS and (consumers.get(n.name, set()) - {"value"}
                                    or n.name in {o.node for o in p.outputs.values()}):
            return n.name, name
        if not unknown:
            continue
        f = fns.lookup(op)
        if f is None:
            continue
        if op.startswith("tf."):
            from tfsem.oracle.opdefs.registry import known_ops, lookup
            d = lookup(name)
            if name not in known_ops() and not (
                    d is not None and d.stateful is None and d.functions and all(
                        (g := fns.lookup(fname)) is not None and _is_tfsems(g)
                        for fname in d.function_names())):
                return n.name, name
        elif not _is_tfsems(f):
            return n.name, name
    return None


def _programs():
    for path in sorted((TESTS / "cases").rglob("*.json")):
        try:
            c = load_case(path)
            yield c.original
            yield c.rewritten(validate=False)
        except Exception:   # (not a case)
            continue
    for path in sorted((TESTS / "grappler").glob("*.json*")):
        text = (gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz"
                else path.read_text())
        data = json.loads(text)
        if "original" in data:
            yield program_from_json(data["original"])
            for v in data.get("rewritten", {}).values():
                yield program_from_json(v)


def _mixed(order: list[str]):
    """Exp nodes, then the nodes named in `order`: "bitcast", "mystery"
    (an op tfsem does not know), "exp" (another Exp)."""
    nodes = [{"name": "hx", "op": "Var", "var": "x"},
             {"name": "r", "op": "Read", "inputs": ["hx"]},
             {"name": "e0", "op": "tf.Exp/1/1", "inputs": ["r"], "tf_attrs": {}},
             {"name": "e1", "op": "tf.Exp/1/1", "inputs": ["e0"], "tf_attrs": {}}]
    outputs = {"e": "e1"}
    for k, what in enumerate(order):
        if what == "bitcast":
            nodes.append({"name": f"b{k}", "op": "tf.Bitcast/1/1", "inputs": ["r"],
                          "tf_attrs": {"T": "DT_FLOAT", "type": "DT_INT32"}})
        elif what == "mystery":
            nodes.append({"name": f"m{k}", "op": "tf.Mystery/1/1", "inputs": ["r"],
                          "tf_attrs": {}})
        elif what == "exp":
            nodes.append({"name": f"e{k + 2}", "op": "tf.Exp/1/1", "inputs": ["r"],
                          "tf_attrs": {}})
    return program_from_json({"format": "tfsem.program/1",
                              "variables": {"x": {"dtype": "float32"}},
                              "nodes": nodes, "outputs": outputs}, validate=False)


def test_stored_programs_agree():
    n = 0
    for p in _programs():
        for unknown in (True, False):
            assert S.nan_payload_observer(p, unknown) == reference(p, unknown)
        n += 1
    assert n > 40


@pytest.mark.parametrize("order", [["exp", "exp", "mystery"], ["mystery", "exp"],
                                   ["exp", "bitcast", "mystery"], ["exp", "exp"],
                                   ["mystery", "mystery", "bitcast"], []])
def test_mixed_programs_agree(order):
    p = _mixed(order)
    for unknown in (True, False):
        assert S.nan_payload_observer(p, unknown) == reference(p, unknown)


def test_a_users_function_is_found_on_every_node_of_its_op(monkeypatch):
    """A user's function (not tfsem's) is an observer: the first node of
    its op is named, whichever comes first."""
    def my_neg(xp, args, attrs):      # (a user's: defined outside tfsem)
        return (-args[0],)

    my_neg.__module__ = "users_functions"
    monkeypatch.setitem(fns._REGISTRY, "MyNeg", fns.Function("MyNeg", 1, 1, my_neg))
    p = program_from_json({"format": "tfsem.program/1",
                           "variables": {"x": {"dtype": "float32"}},
                           "nodes": [{"name": "hx", "op": "Var", "var": "x"},
                                     {"name": "r", "op": "Read", "inputs": ["hx"]},
                                     {"name": "a", "op": "Neg", "inputs": ["r"]},
                                     {"name": "u1", "op": "MyNeg", "inputs": ["a"]},
                                     {"name": "u2", "op": "MyNeg", "inputs": ["u1"]}],
                           "outputs": {"o": "u2"}}, validate=False)
    assert S.nan_payload_observer(p) == reference(p) == ("u1", "MyNeg")
