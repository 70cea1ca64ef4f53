"""minimize.minimize_concrete's steps: tensors that cannot matter first, in one
step; the elements of small tensors in groups; a confirmation that ends the
minimization (OutOfTime) leaves σ as last confirmed."""

from __future__ import annotations

import time

import numpy as np

from tfsem.checking import minimize as mini
from tfsem.oracle.values import Tensor


def _t(values, dtype="float32"):
    return Tensor(np.array(values, dtype=dtype), dtype)


def test_the_tensors_that_cannot_matter_take_zeros_in_one_step_first():
    init = {f"x{i}": _t(np.full(100, 7.0)) for i in range(8)}
    calls = []

    def confirm(sigma):
        calls.append({k: bool(np.any(v.array)) for k, v in sigma[1].items()})
        return bool(np.any(sigma[1]["x3"].array))     # x3 must stay non-zero

    first = [(1, f"x{i}") for i in range(8) if i != 3]
    _, out = mini.minimize_concrete(({}, init), confirm, time.monotonic() + 30, first=first)
    # the first step zeroed the seven at once
    assert calls[0] == {f"x{i}": i == 3 for i in range(8)}
    assert [k for k, v in out.items() if np.any(v.array)] == ["x3"]
    assert np.all(out["x3"].array == 1.0)              # zeros fail, ones survive
    # then x3 alone: zeros (refused) and ones (taken)
    assert len(calls) == 3, calls
    # without `first`: the group of all eight (refused), then halves
    calls.clear()
    mini.minimize_concrete(({}, init), confirm, time.monotonic() + 30)
    assert len(calls) > 3


def test_the_elements_of_small_tensors_are_tried_together():
    init = {f"s{i}": _t([float(i + 2)]) for i in range(20)}
    init["v"] = _t([5.0, 6.0, 7.0])
    stats = {}

    def confirm(sigma):
        return sigma[1]["v"].array[1] != 0

    _, out = mini.minimize_concrete(({}, init), confirm, time.monotonic() + 30, stats=stats)
    assert all(out[f"s{i}"].array[0] == 0 for i in range(20))
    assert out["v"].array.tolist() == [0.0, 1.0, 0.0]
    # (one scalar at a time: 20 steps for the scalars alone)
    assert stats["finished"] and stats["taken"] <= stats["tried"] <= 16, stats


def test_a_confirmation_that_ends_the_minimization_leaves_the_last_confirmed_sigma():
    init = {f"x{i}": _t(np.full(10, 3.0)) for i in range(4)}
    seen = []

    def confirm(sigma):
        seen.append(1)
        if len(seen) == 2:
            raise mini.OutOfTime
        return bool(np.any(sigma[1]["x0"].array))

    stats = {}
    _, out = mini.minimize_concrete(({}, init), confirm, time.monotonic() + 30,
                                    first=[(1, "x1"), (1, "x2"), (1, "x3")], stats=stats)
    # step 1 (x1-x3 to zero) taken; step 2 (x0 to zero) ended it: x0 as it was
    assert not stats["finished"]
    assert np.all(out["x0"].array == 3.0)
    assert not any(np.any(out[f"x{i}"].array) for i in (1, 2, 3))


def _sigma_key(sigma):
    return tuple((t, name, table[name].array.tobytes())
                 for t, table in enumerate(sigma) for name in sorted(table))


def _minimized_asking(init, keep):
    asked = []

    def confirm(sigma):
        asked.append(_sigma_key(sigma))
        return all(np.any(sigma[1][k].array) for k in keep)

    stats = {}
    _, out = mini.minimize_concrete(({}, dict(init)), confirm, time.monotonic() + 30,
                                    stats=stats)
    assert stats["finished"]
    return {k: v.array.tolist() for k, v in out.items()}, asked, stats


def test_delta_debugging_never_asks_about_the_same_sigma_twice(monkeypatch):
    # A group that refused, whose first half then all took zeros: the second
    # half on top is the σ the group's step asked about; the element pass's
    # first group sets again what the tensor pass set.  Neither is asked
    # again, and the σ left is the one asking them again leaves.
    for keep in ({"x1", "x6"}, {"x4"}, {"x7"}, {"x0", "x5"}, {"x2", "x3", "x6"}):
        init = {f"x{i}": _t(np.full(4, float(i + 2))) for i in range(8)}
        out, asked, stats = _minimized_asking(init, keep)
        assert len(asked) == len(set(asked)), keep
        assert stats.get("repeated", 0) >= 1, (keep, stats)
        with monkeypatch.context() as m:
            fresh = iter(range(10 ** 6))
            m.setattr(mini, "_sigma_key", lambda sigma: next(fresh))   # no memory
            again, asked_again, _ = _minimized_asking(init, keep)
        assert out == again, keep
        assert len(asked_again) == len(asked) + stats["repeated"], keep
        assert len(set(asked_again)) < len(asked_again), keep


def test_delta_debugging_asks_the_second_half_where_the_first_did_not_all_take():
    # x0 must stay: the group refuses, the first half {x0, x1} does not all
    # take zeros (x1 alone does), so {x2, x3} is a σ not asked yet: asked
    init = {f"x{i}": _t(np.full(2, 5.0)) for i in range(4)}
    asked = []

    def confirm(sigma):
        asked.append({k: bool(np.any(v.array)) for k, v in sigma[1].items()})
        return bool(np.any(sigma[1]["x0"].array))

    mini.minimize_concrete(({}, init), confirm, time.monotonic() + 30)
    assert {"x0": True, "x1": False, "x2": False, "x3": False} in asked
