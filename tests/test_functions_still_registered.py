"""oracle/functions.py `still_registered`: whether functions looked up by
name earlier are still the registry's, the one test behind the compiled
programs (oracle/explore.py and backends/execute.py `compiled`), the
remembered canonical runs (checking/canonical_memo.py) and the back ends'
sessions per σ (backends/reuse.py).  A registry entry put in by hand
(monkeypatch.setitem: no `register`, no new `version`) is another
function; so is an entry taken out."""

from __future__ import annotations

import numpy as np

from tfsem.backends import reuse
from tfsem.backends.arraymodule import get_backend
from tfsem.oracle import functions as fns
from tfsem.oracle.values import Tensor


def _plus(k):
    return fns.Function("StillRegisteredPlus", 1, 1,
                        lambda xp, args, attrs: (args[0] + xp.float32(k),))


def test_the_same_objects_are_still_registered(monkeypatch):
    f = _plus(1)
    monkeypatch.setitem(fns._REGISTRY, "StillRegisteredPlus", f)
    add = fns.lookup("Add")
    assert fns.still_registered({"StillRegisteredPlus": f, "Add": add})
    assert fns.still_registered([("StillRegisteredPlus", f), ("NoSuchFunction", None)])
    assert fns.still_registered({})
    # an equal function that is another object is not the one looked up
    assert not fns.still_registered({"StillRegisteredPlus": _plus(1)})
    assert not fns.still_registered([("NoSuchFunction", f)])
    version = fns.version
    monkeypatch.setitem(fns._REGISTRY, "StillRegisteredPlus", _plus(10))
    assert fns.version == version            # (by hand: the version does not tell it)
    assert not fns.still_registered({"StillRegisteredPlus": f, "Add": add})
    monkeypatch.delitem(fns._REGISTRY, "StillRegisteredPlus")
    assert not fns.still_registered({"StillRegisteredPlus": f})
    assert fns.still_registered({"StillRegisteredPlus": None})


def test_a_session_ends_when_the_registry_changes_by_hand(monkeypatch):
    """The session of σ (backends/reuse.py) holds the applications and
    witness outcomes of the functions registered when it began: one
    replaced by hand, or a name added, ends it."""
    monkeypatch.setitem(fns._REGISTRY, "StillRegisteredPlus", _plus(1))
    reuse.clear()
    b = get_backend("numpy")
    sigma = ({"a": Tensor(np.float32(1.0))}, {})
    s = reuse.session(b, *sigma)
    assert reuse.session(b, *sigma) is s
    monkeypatch.setitem(fns._REGISTRY, "StillRegisteredPlus", _plus(10))
    s2 = reuse.session(b, *sigma)
    assert s2 is not s and reuse.session(b, *sigma) is s2
    monkeypatch.setitem(fns._REGISTRY, "StillRegisteredOther", _plus(2))
    assert reuse.session(b, *sigma) is not s2
    reuse.clear()
