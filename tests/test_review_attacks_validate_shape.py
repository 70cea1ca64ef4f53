"""Review attack (target 4): AssignVariableOp validate_shape=true as
Assign-SndSameShape, whose failure the symbolic checker decides from shapes
(checking/symbolic.py).  Each pair's verdict is compared with the reference
outcome sets at σ of the declared types (x: float32[2], initialized or not).
σ holds a variable at its declared shape, which a plain Write of another
shape breaks for the next run: a program with such a write is not proved
(the last test was a false `sound`)."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

F = "float32"


def prog(nodes, outputs, feeds):
    return program_from_json({
        "format": "tfsem.program/1", "variables": {"x": {"dtype": F, "shape": [2]}},
        "feeds": {k: {"dtype": F, "shape": [n]} for k, n in feeds.items()},
        "nodes": [{"name": "h", "op": "Var", "var": "x"}] + nodes, "outputs": outputs})


def w(name, fn, value, *after):
    return {"name": name, "op": "Assign", "fn": fn, "inputs": ["h", value] + [f"^{a}" for a in after]}


READ = {"name": "r", "op": "Read", "inputs": ["h", "^w"]}
FORWARD = {"name": "r", "op": "Identity", "inputs": ["$v", "^w"]}
V3C2 = {"v": 3, "c": 2}

PAIRS = {
    # the write fails for an initialized x: deleting it loses the uninitialized case
    "delete-a-failing-write": (prog([w("w", "SndSameShape", "$v")], {}, {"v": 3}),
                               prog([], {}, {"v": 3}), "unsound"),
    # after a Write of shape [3] the check fails: dropping it is sound (not
    # proved: x changes shape), a Write is not
    "drop-after-another-shape": (prog([w("w1", "Snd", "$v"), w("w2", "SndSameShape", "$c", "w1")],
                                      {}, V3C2), prog([w("w1", "Snd", "$v")], {}, V3C2),
                                 "no-counterexample"),
    "unvalidated-after-another-shape": (
        prog([w("w1", "Snd", "$v"), w("w2", "SndSameShape", "$c", "w1")], {}, V3C2),
        prog([w("w1", "Snd", "$v"), w("w2", "Snd", "$c", "w1")], {}, V3C2), "unsound"),
    "forward-a-failing-write": (prog([w("w", "SndSameShape", "$v"), READ], {"r": "r"}, {"v": 3}),
                                prog([w("w", "SndSameShape", "$v"), FORWARD], {"r": "r"},
                                     {"v": 3}), "unsound"),
    # a concurrent Write of shape [3]: ordering it first makes the check always fail
    "order-a-race": (prog([w("w1", "SndSameShape", "$c"), w("w2", "Snd", "$v")], {}, V3C2),
                     prog([w("w2", "Snd", "$v"), w("w1", "SndSameShape", "$c", "w2")], {}, V3C2),
                     "sound"),
}


def _differs_somewhere(p, q, mode) -> bool:
    for init in ({}, {"x": Tensor(np.array([1, 2], np.float32))}):
        for vals in ([0.0, 1.0, 2.0], [5.0, 6.0, 7.0]):
            feeds = {f: Tensor(np.array(vals[:p.feed_type(f).shape[0]], np.float32))
                     for f in p.feed_names}
            a = set(outcome_set(p, feeds, init, mode, "outputs+state"))
            if not set(outcome_set(q, feeds, init, mode, "outputs+state")) <= a:
                return True
    return False


@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_validate_shape_verdicts_agree_with_the_outcome_sets(name, mode):
    p, q, want = PAIRS[name]
    v = check_rewrite(p, q, mode, "outputs+state", 0.5, backends=False)
    # (no proof, and no counterexample: `unknown` when a loaded machine
    # compares no σ within the half second)
    assert v.verdict == want or (want, v.verdict) == ("no-counterexample", "unknown"), v.reason
    assert _differs_somewhere(p, q, mode) == (want == "unsound")


def test_forwarding_a_validated_write_is_not_sound_when_the_program_writes_another_shape():
    """Was a false `sound`: the proof took x at its declared shape [2], where
    the validated write w never fails and r is v."""
    # the program itself also writes x with a [3] value (validate_shape=false),
    # so a second run of it starts with x of shape [3], where w fails
    other = w("w0", "Snd", "$u", "r")
    p = prog([w("w", "SndSameShape", "$v"), READ, other], {"r": "r"}, {"v": 2, "u": 3})
    q = prog([w("w", "SndSameShape", "$v"), FORWARD, other], {"r": "r"}, {"v": 2, "u": 3})
    init = {"x": Tensor(np.array([1, 2, 3], np.float32))}   # after one run of p
    feeds = {"v": Tensor(np.zeros(2, np.float32)), "u": Tensor(np.ones(3, np.float32))}
    assert not set(outcome_set(q, feeds, init, "atomic", "outputs")) <= \
        set(outcome_set(p, feeds, init, "atomic", "outputs"))
    v = check_rewrite(p, q, "atomic", "outputs", 0.5, backends=False)
    assert v.verdict != "sound" and "a write of shape [3] to a variable of shape [2]" in v.reason
