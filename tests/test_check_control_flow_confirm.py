"""The control-flow checker's confirmation on the array back ends
(checking/control_flow.py `replay`, backends/controlflow.py): an `unsound`
verdict on programs with loops and TensorLists is replayed on numpy -- the
rewritten schedule gives the reference engine's outcome there, and no
witness schedule of the original does -- and says "confirmed on: oracle,
numpy" only when that happened; a back end that disagrees, or an op with no
back end, is reported by name, never hidden.

The program: tf2_tensor_array_loop.pbtxt (TensorFlow 2.21, graph mode), a
tf.while_loop whose iteration i adds v[i] to the variable x, reads x and
writes 10 * x into a TensorArray (TensorListFromTensor, Reserve, GetItem,
SetItem, Stack); the rewrite drops the read's control edge from the
AssignAdd, so iteration 0 may read x before any addition."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tfsem.backends import controlflow as bcf
from tfsem.backends.arraymodule import numpy_as_cupy
from tfsem.checking.check import check_rewrite
from tfsem.graphdef import import_path
from tfsem.oracle import functions as fns
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.opdefs.lists import TensorList
from tfsem.oracle.program import Program
from tfsem.oracle.values import Tensor
from backends_support import CONFIRMED_ORACLE_ARRAYS

CASE = Path(__file__).parent / "cases" / "controlflow" / "tf2_tensor_array_loop.pbtxt"
READ, ADD = "loop/body/Read/ReadVariableOp", "loop/body/AssignAddVariableOp"


def _loop(fetch=("out",)) -> Program:
    return import_path(CASE, fetch=list(fetch)).program


def _dropped(p: Program) -> Program:
    raw = program_to_json(p)
    for n in raw["nodes"]:
        if n["name"] == READ:
            n["inputs"] = [i for i in n["inputs"] if i != "^" + ADD]
    return program_from_json(raw)


def _set_impl(op: str, impl) -> None:
    """Replace a registry function's array_impl for one test (Function is
    a frozen dataclass: set as lists.py sets it, restored afterwards)."""
    fn = fns.get(op)
    old = fn.array_impl
    object.__setattr__(fn, "array_impl", impl)
    request_finalizers.append(lambda: object.__setattr__(fn, "array_impl", old))


request_finalizers: list = []


@pytest.fixture(autouse=True)
def _restore_impls():
    yield
    while request_finalizers:
        request_finalizers.pop()()


@pytest.fixture(scope="module")
def programs():
    p = _loop()
    return p, _dropped(p)


@pytest.fixture(scope="module")
def found(programs):
    """The counterexample (not shrunk: faster) and the original's outcomes at its σ."""
    p, q = programs
    v = check_rewrite(p, q, timeout=10, backends=False, minimize=False)
    assert v.verdict == "unsound" and v.confirmed == ["oracle"], v.reason
    cx = v.counterexample
    return cx, outcome_set(p, cx.feeds, cx.init)


def test_a_loop_with_tensor_lists_is_confirmed_on_numpy(programs):
    p, q = programs
    v = check_rewrite(p, q, timeout=10)
    assert v.verdict == "unsound", v.reason
    assert v.stats["path"] == "control-flow/refute"
    assert v.confirmed == CONFIRMED_ORACLE_ARRAYS, v.stats.get("backends")
    assert "backends" not in v.stats and v.stats["replay_seconds"] > 0
    assert "confirmed on: oracle, numpy" in v.describe()
    assert v.to_json()["confirmed"] == CONFIRMED_ORACLE_ARRAYS
    # the claim itself: the rewrite's outcome at σ is not the original's
    cx = v.counterexample
    assert cx.outcome not in set(outcome_set(p, cx.feeds, cx.init))


def test_the_cupy_path_confirms_it_too(programs, found):
    p, q = programs
    cx, original = found
    (c,) = bcf.confirm_control_flow(p, q, cx.feeds, cx.init, cx.schedule, cx.outcome, original,
                                    backends=[numpy_as_cupy()])
    assert c.confirmed and c.backend == "cupy (numpy substituted)", c.reason
    assert f"none of the original's {original.count} witness schedules" in c.reason


def test_a_back_end_that_disagrees_is_reported_not_hidden(programs, monkeypatch):
    """TensorListStack on numpy made wrong (one added to every element): the
    replay of the rewritten schedule gives another outcome than the
    reference engine; the verdict stays `unsound` (the oracle's), confirmed
    on the oracle only, and text and JSON say that numpy disagreed."""
    p, q = programs
    fn = fns.get("TensorListStack")
    right = fn.array_impl

    def wrong(xp, args, attrs):
        return tuple(r + 1 for r in right(xp, args, attrs))
    _set_impl("TensorListStack", wrong)
    v = check_rewrite(p, q, timeout=10, minimize=False)
    assert v.verdict == "unsound"
    assert v.confirmed == ["oracle"]
    note = v.stats["backends"]
    assert note.startswith("numpy gave another outcome on this schedule than the reference "
                           "engine (output 'out' differs)"), note
    assert note in v.describe() and "confirmed on: oracle\n" in v.describe() + "\n"
    assert v.to_json()["stats"]["backends"] == note


def test_an_original_witness_giving_the_outcome_is_reported(programs, found, monkeypatch):
    """The third condition: a witness schedule of the original that gives
    the rewrite's outcome on the back end stops the confirmation (here the
    original's list functions are made to compute the rewrite's values)."""
    p, q = programs
    cx, original = found
    theirs = cx.outcome
    real_outcome = bcf.DeviceMachine.outcome

    def outcome(self, s, observe):
        got = real_outcome(self, s, observe)
        return theirs if self.p is p else got
    monkeypatch.setattr(bcf.DeviceMachine, "outcome", outcome)
    (c,) = bcf.confirm_control_flow(p, q, cx.feeds, cx.init, cx.schedule, cx.outcome, original,
                                    backends=["numpy"])
    assert not c.confirmed
    assert c.reason == "an original's witness schedule gives this outcome on numpy"


def test_an_op_with_no_back_end_is_named(programs):
    p, q = programs
    _set_impl("TensorListSetItem", None)
    v = check_rewrite(p, q, timeout=10, minimize=False)
    assert v.verdict == "unsound" and v.confirmed == ["oracle"]
    note = v.stats["backends"]
    assert note.startswith("not replayed on numpy: TensorListSetItem (node "
                           "'loop/body/TensorArrayV2Write/TensorListSetItem') has no numpy "
                           "back end"), note
    assert note in v.describe()


def test_the_replay_gives_the_oracles_outcome_for_every_witness():
    """Every outcome of the loop (the list itself fetched too, so a list
    ends in the outcome and comes back from the back end), each witness
    replayed on numpy and on the cupy path, in both modes, at σ with the
    int64 extremes."""
    p = _loop(fetch=("out", "loop/Identity_3"))
    feeds = {"v": Tensor(np.array([2**63 - 1, -2**63, -1], np.int64))}
    init = {"x": Tensor(np.int64(1))}
    for semantics in ("atomic", "decomposed"):
        oset = outcome_set(p, feeds, init, semantics)
        assert oset.count > 1
        for o, w in oset.items():
            assert any(isinstance(val, TensorList) for _, val in o.outputs)
            for b in ("numpy",) + ((numpy_as_cupy(),) if semantics == "atomic" else ()):
                assert bcf.replay_outcome(p, feeds, init, w, semantics, backend=b) == o


def test_a_replay_past_its_deadline_stops(programs, found):
    p, q = programs
    cx, original = found
    (c,) = bcf.confirm_control_flow(p, q, cx.feeds, cx.init, cx.schedule, cx.outcome, original,
                                    backends=["numpy"], deadline=0.0)
    assert not c.confirmed and c.reason.startswith("replay cut short: budget")
    confirmed, note = bcf.confirm_on_backends(p, q, cx.feeds, cx.init, cx.schedule, cx.outcome,
                                              original, "atomic", "outputs+state",
                                              deadline=0.0, backends=["numpy"])
    assert confirmed == []
    assert note == "numpy replay skipped: budget (the check's time ran out during the replay)"
