"""The control-flow engine's applications to TensorLists remembered by their
arguments' identity (oracle/controlflow.py `Machine._apply_to_lists`,
`_BY_IDENTITY`): on a loop that writes a TensorArray (a TensorList) at each
iteration, the outcomes and their schedules with the memo and without it,
at several σ and on two programs whose runs take each other's lists; the
same σ again answered from the memo (not vacuous); and a list function
registered again between runs applied, not answered by its predecessor's
entries."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from tfsem.oracle import controlflow as cf
from tfsem.oracle import functions as fns
from tfsem.oracle.values import Tensor

from controlflow_support import registry_restored
from test_controlflow_backend_paths import _list_loop

BOUND = 12


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(cf, "remember_outcomes", False)
    monkeypatch.setattr(cf, "_machines", type(cf._machines)())
    cf._APPLIED.clear()
    cf._BY_IDENTITY.clear()
    with registry_restored():
        yield
    cf._APPLIED.clear()
    cf._BY_IDENTITY.clear()


SIGMAS = [{"v": Tensor(np.array(v), "int64")}
          for v in ([1, -2, 3], [0], [5, 5, 5, 5], [1, -2, 3], [], [7, -7])]


def _runs(programs, lists: bool, monkeypatch):
    monkeypatch.setattr(cf, "remember_lists", lists)
    monkeypatch.setattr(cf, "_machines", type(cf._machines)())
    cf._APPLIED.clear()
    cf._BY_IDENTITY.clear()
    out = []
    for feeds in SIGMAS:
        for p in programs:
            for mode in ("atomic", "decomposed"):
                out.append(cf.outcomes(p, feeds, {}, mode, "outputs+state", 50_000, None, BOUND))
    return out


def test_outcomes_with_lists_remembered_are_those_without(monkeypatch):
    programs = [_list_loop(10), _list_loop(11), _list_loop(10)]
    remembered = _runs(programs, True, monkeypatch)
    assert cf._BY_IDENTITY      # (not vacuous: lists were remembered)
    assert remembered == _runs(programs, False, monkeypatch)
    assert not cf._BY_IDENTITY


def test_the_same_sigma_again_is_answered_from_the_memo(monkeypatch):
    """A second run at the same σ applies no list function: every list it
    takes is the object the first run made (the lists come from
    remembered applications)."""
    p = _list_loop(10)
    calls = {"n": 0}
    feeds = SIGMAS[0]
    cf.outcomes(p, feeds, {}, "atomic", "outputs+state", 50_000, None, BOUND)
    real = cf.Machine._apply_to_lists

    def counted(self, n, fn, key, data):
        before = len(cf._BY_IDENTITY)
        got = real(self, n, fn, key, data)
        calls["n"] += 1
        calls["new"] = calls.get("new", 0) + (len(cf._BY_IDENTITY) != before)
        return got
    monkeypatch.setattr(cf.Machine, "_apply_to_lists", counted)
    again = cf.outcomes(p, feeds, {}, "atomic", "outputs+state", 50_000, None, BOUND)
    monkeypatch.setattr(cf, "remember_lists", False)
    monkeypatch.setattr(cf, "_machines", type(cf._machines)())
    assert again == cf.outcomes(p, feeds, {}, "atomic", "outputs+state", 50_000, None, BOUND)
    assert calls["n"] > 0 and calls.get("new", 0) == 0


def test_a_list_function_registered_again_is_applied():
    """Each list op registered again (an equal function, another object)
    between two runs at the same σ: the second run stores its own entries
    (the node key names the function object, and an entry's function is
    checked), and gives the same outcomes."""
    p = _list_loop(10)
    feeds = SIGMAS[2]
    first = cf.outcomes(p, feeds, {}, "atomic", "outputs+state", 50_000, None, BOUND)
    entries = len(cf._BY_IDENTITY)
    assert entries
    for op in sorted({n.op for n in p.nodes if n.op.startswith("TensorList")}):
        fns.register(copy.copy(fns.get(op)), replace=True)
    second = cf.outcomes(p, feeds, {}, "atomic", "outputs+state", 50_000, None, BOUND)
    assert second == first
    assert len(cf._BY_IDENTITY) > entries
