"""A node's frozen attributes keep their exact key (oracle/program.py
`_FrozenDict.key`): the kept key is `functions.attrs_key` of the same
items, on its first use and on later ones, so hashes, program identities
and equality are what they were when each use made the key again."""

from __future__ import annotations

import math

import numpy as np

from tfsem.oracle import functions as fns
from tfsem.oracle.program import DataIn, Node, Program, TensorType
from tfsem.oracle.values import Tensor

ATTRS = [
    {},
    {"value": 1}, {"value": 1.0}, {"value": True}, {"value": -0.0}, {"value": 0.0},
    {"alpha": math.nan}, {"alpha": -math.nan}, {"alpha": math.inf},
    {"shape": [2, 3]}, {"shape": (2, 3)}, {"k": {"a": 1}}, {"k": {"a": True}},
    {"value": Tensor(np.array([1.0, -0.0], np.float32), "float32")},
    {"value": Tensor(np.array([1.0, 0.0], np.float32), "float32")},
    {"tf_attrs": {"T": "DT_FLOAT", "data_format": "NHWC"}, "fn": "Add"},
]


def test_the_kept_key_is_the_key():
    for attrs in ATTRS:
        n = Node("c", "Const", (), attrs)
        assert n.attrs.key() == fns.attrs_key(attrs)
        assert n.attrs.key() == fns.attrs_key(attrs)        # (kept: the same)
        assert hash(n.attrs) == hash(fns.attrs_key(attrs))


def test_hashes_identities_and_equality_follow_the_keys():
    nodes = [Node("c", "Const", (), attrs) for attrs in ATTRS]
    for a in nodes:
        for b in nodes:
            same = fns.attrs_key(dict(a.attrs)) == fns.attrs_key(dict(b.attrs))
            pa = Program({}, (a,), {"out": DataIn("c")})
            pb = Program({}, (b,), {"out": DataIn("c")})
            assert (pa == pb) is same
            if same:
                assert hash(pa) == hash(pb) and hash(a.attrs) == hash(b.attrs)


def test_a_programs_identity_uses_the_exact_keys():
    p = Program({"x": TensorType("float32", ())},
                tuple(Node(f"c{k}", "Const", (), attrs) for k, attrs in enumerate(ATTRS)),
                {"out": DataIn("c0")})
    expected = tuple(sorted((n.name, n.op, n.inputs, fns.attrs_key(dict(n.attrs)))
                            for n in p.nodes))
    assert p._identity[2] == expected
