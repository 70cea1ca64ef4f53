"""The numpy replay of an `unsound` verdict (backends/confirm.py): the
witnesses shown (`witnesses=`) are those replayed, and each must give its
own outcome on the backend; two witnesses swapped between their outcomes do
not confirm, the right ones do, and witnesses that are not all of the
original's outcomes are not taken (the oracle's are replayed)."""

from __future__ import annotations

import numpy as np

from tfsem.backends.confirm import confirm_details
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor


def _racy(values):
    nodes = [{"name": "v", "op": "Var", "var": "x"}]
    for k, c in enumerate(values):
        nodes += [{"name": f"c{k}", "op": "Const", "value": c},
                  {"name": f"a{k}", "op": "Assign", "fn": "Snd", "inputs": ["v", f"c{k}"]}]
    return program_from_json({"variables": ["x"], "nodes": nodes, "outputs": {}})


def test_the_witnesses_shown_must_give_their_outcomes():
    p, q = _racy([1, 2]), _racy([3])
    init = {"x": Tensor(np.int64(0))}
    oset = outcome_set(p, {}, init)
    (o1, w1), (o2, w2) = oset.items()
    (ok,) = confirm_details(p, q, {}, init, ["v", "c0", "a0"], original_outcomes=oset,
                            witnesses=[(o1, w1), (o2, w2)])
    assert ok.confirmed, ok.reason
    (swapped,) = confirm_details(p, q, {}, init, ["v", "c0", "a0"], original_outcomes=oset,
                                 witnesses=[(o1, w2), (o2, w1)])
    assert not swapped.confirmed and "not the" in swapped.reason and "shown" in swapped.reason
    # (one witness for two outcomes: not all of them, the oracle's are replayed)
    (partial,) = confirm_details(p, q, {}, init, ["v", "c0", "a0"], original_outcomes=oset,
                                 witnesses=[(o1, w2)])
    assert partial.confirmed, partial.reason
