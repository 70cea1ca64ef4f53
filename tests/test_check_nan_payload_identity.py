"""Two programs whose constants differ only in a NaN's payload are not the
same program: `Program.__eq__` (through `functions.attrs_key`, whose JSON
writes every NaN "nan") once said they were, and `check_rewrite` answered
`sound` ("the rewritten program is the original program") for a rewrite
whose output bytes differ (PackScatter copies the NaN's bits).  Found by
review14."""

from __future__ import annotations

import numpy as np

from tfsem.checking.check import check_rewrite
from tfsem.oracle import functions as fns
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.program import DataIn, Node, Program
from tfsem.oracle.values import Tensor

NAN1, NAN2 = 0x7FC00001, 0x7FC00002


def packed_nan(bits: int) -> Program:
    """o = PackScatter([0], [NaN with these bits]): the bytes of the NaN fetched."""
    c = Tensor(np.array([bits], np.uint32).view(np.float32))
    nodes = (Node("c", "Const", (), {"value": c}),
             Node("i", "Const", (), {"value": Tensor(np.array([0], np.int64))}),
             Node("pk", "PackScatter", (DataIn("i"), DataIn("c"))))
    return Program({}, nodes, {"o": DataIn("pk")}, {}).validated()


def test_constants_differing_in_a_nan_payload_are_different_programs():
    p, q = packed_nan(NAN1), packed_nan(NAN2)
    ours = list(outcome_set(p, {}, {}, "atomic", "outputs+state"))
    theirs = list(outcome_set(q, {}, {}, "atomic", "outputs+state"))
    assert ours != theirs    # (the output shows the payload)
    assert p != q
    v = check_rewrite(p, q, timeout=10, backends=False)
    assert v.verdict != "sound", v.reason
    # the same payload is still the same program, and -NaN is not NaN
    assert p == packed_nan(NAN1)
    assert packed_nan(0xFFC00001) != p
    # (a tensor attribute is keyed by its dtype, shape and bytes, never as
    # the JSON a user's dict could also be)
    assert fns.attrs_key({"value": Tensor(np.float32(1.5))}) != \
        fns.attrs_key({"value": {"dtype": "float32", "value": 1.5}})
    assert fns.attrs_key({"value": Tensor(np.float32(1.5))}) == \
        fns.attrs_key({"value": Tensor(np.float32(1.5))})
