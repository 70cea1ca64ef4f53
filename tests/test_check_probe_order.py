"""The probe's order of σ (checking/check.py `_Checker.probe`,
`PROBE_IN_ORDER`, `_in_order`): ones, the plain σ, the largest float in the
feeds, NaN in the feeds, the plain σ with huge feeds last (the plain σ first
on a large graph).  The same σ are compared as in the one-outcome order;
only fewer of them before a difference NaN shows."""

from __future__ import annotations

import numpy as np

from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.oracle.dispatch import outcome_set

from test_check_one_outcome import as_if_kernels, no_solver_candidates  # noqa: F401
from test_check_race_free_confirm import DOUBLE_A, DOUBLE_B, NAN_DROPPED, NAN_KEPT

NAN = f"edge {3 * C._EDGE_NAN}"


def test_in_order_walks_the_order_only_as_far_as_the_next_tag_needs():
    walked = []

    def order():
        for k, tag in enumerate(["zeros", "ones", "plain", "plain huge", "edge 0", NAN,
                                 "random 0", "edge 99"]):
            walked.append(tag)
            yield tag, k

    tags = ["ones", "plain", "edge 0", NAN, "plain huge", "edge 99"]
    it = C._in_order(order(), tags)
    assert next(it) == ("ones", 1) and walked == ["zeros", "ones"]
    assert next(it) == ("plain", 2) and walked[-1] == "plain"
    # (the huge feeds are passed on the way to the largest float, and kept)
    assert next(it) == ("edge 0", 4) and walked[-1] == "edge 0"
    assert list(it) == [(NAN, 5), ("plain huge", 3)]
    # (not past the random σ: a tag after them is not looked for)
    assert walked[-1] == "random 0"


def _probe_sigmas(monkeypatch, in_order):
    monkeypatch.setattr(C, "PROBE_IN_ORDER", in_order)
    compared = []
    real = C.ref.canonical_outcome

    def counted(p, feeds, init, *a, **k):
        if p is NAN_DROPPED or p is DOUBLE_B:
            compared.append((feeds, init))
        return real(p, feeds, init, *a, **k)

    monkeypatch.setattr(C.ref, "canonical_outcome", counted)
    return compared


def test_a_nan_difference_is_found_at_the_fourth_sigma_and_the_same_as_before(
        monkeypatch, no_solver_candidates):  # noqa: F811
    found = {}
    for in_order in (True, False):
        _probe_sigmas(monkeypatch, in_order)
        with as_if_kernels():
            v = check_rewrite(NAN_KEPT, NAN_DROPPED, timeout=10, structural=False)
        assert v.verdict == "unsound" and v.stats["path"] == "probe", v.stats
        assert v.stats["probe"]["found"] == NAN, v.stats["probe"]
        cx = v.counterexample
        assert any(np.isnan(t.array).any() for t in cx.feeds.values())
        assert cx.outcome not in outcome_set(NAN_KEPT, cx.feeds, cx.init, "atomic",
                                             "outputs+state")
        found[in_order] = v.stats["probe"]["sigmas"]
    # ones, the plain σ, the largest float, NaN; before: the huge feeds too
    assert found == {True: 4, False: 5}, found


def test_where_no_sigma_differs_the_probe_compares_the_same_sigmas_in_either_order(
        monkeypatch, no_solver_candidates):  # noqa: F811
    seen = {}
    for in_order in (True, False):
        compared = _probe_sigmas(monkeypatch, in_order)
        monkeypatch.setattr(C._Checker, "one_outcome_each", lambda self: False)
        monkeypatch.setattr(C._Checker, "fallback", lambda self, why: self.verdict(
            C.NO_COUNTEREXAMPLE, "stopped after the probe"))
        with as_if_kernels():
            v = check_rewrite(DOUBLE_A, DOUBLE_B, timeout=10, structural=False)
        assert v.stats["probe"]["sigmas"] == 5, v.stats["probe"]
        seen[in_order] = sorted(repr((sorted((k, t.array.tobytes()) for k, t in f.items()),
                                      sorted((k, t.array.tobytes()) for k, t in i.items())))
                                for f, i in compared[:5])
    assert seen[True] == seen[False]
