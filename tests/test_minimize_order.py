"""The order minimize.minimize_concrete tries σ's tensors in (LATE_ORDER,
`late_order`): a layer's tensors side by side, the large layers first; and,
whatever the order, every σ kept is one the confirmation accepted."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tfsem.checking import minimize as mini
from tfsem.oracle.values import Tensor


def _t(n, value=3.0):
    return Tensor(np.full(n, value, dtype=np.float32), "float32")


def _sigma():
    # a small MLP's variables: two layers, a kernel and a bias each, plus a
    # step counter and a large embedding table
    return {"a_embedding/table": _t(500), "dense/bias": _t(4), "dense/kernel": _t(100),
            "dense_1/bias": _t(2), "dense_1/kernel": _t(8), "iterations": _t(1)}


def test_families_are_kept_together_and_ordered_by_their_largest_tensor():
    init = _sigma()
    late = [(1, name) for name in sorted(init)]
    assert mini.late_order(late, ({}, init), "family") == [
        (1, "a_embedding/table"), (1, "dense/kernel"), (1, "dense/bias"),
        (1, "dense_1/kernel"), (1, "dense_1/bias"), (1, "iterations")]
    assert mini.late_order(late, ({}, init), "largest") == [
        (1, "a_embedding/table"), (1, "dense/kernel"), (1, "dense_1/kernel"),
        (1, "dense/bias"), (1, "dense_1/bias"), (1, "iterations")]
    assert mini.late_order(late, ({}, init), "name") == late
    with pytest.raises(ValueError, match="LATE_ORDER"):
        mini.late_order(late, ({}, init), "random")


def _kernel_with_its_bias(sigma):
    # the counterexample survives where dense/kernel is non-zero, unless
    # dense/bias is zero with it (a kernel that takes 0 only with its bias),
    # and dense_1/kernel stays non-zero
    init = sigma[1]
    kernel, bias = np.any(init["dense/kernel"].array), np.any(init["dense/bias"].array)
    return bool(np.any(init["dense_1/kernel"].array)) and (kernel or not bias)


@pytest.mark.parametrize("order", ["name", "largest", "family"])
def test_every_kept_sigma_is_accepted_whatever_the_order(monkeypatch, order):
    monkeypatch.setattr(mini, "LATE_ORDER", order)
    accepted = []

    def confirm(sigma):
        ok = _kernel_with_its_bias(sigma)
        if ok:
            accepted.append(mini._sigma_key(({}, dict(sigma[1]))))
        return ok

    stats = {}
    _, out = mini.minimize_concrete(({}, _sigma()), confirm, time.monotonic() + 30, stats=stats)
    assert stats["finished"]
    assert _kernel_with_its_bias(({}, out))
    assert mini._sigma_key(({}, out)) in accepted
    # the table and the counter never matter: 0 in every order
    assert not np.any(out["a_embedding/table"].array) and not np.any(out["iterations"].array)


def _nonzero(out):
    return sum(int(np.count_nonzero(v.array)) for v in out.values())


def test_a_kernel_that_takes_zero_only_with_its_bias_meets_it_in_one_step(monkeypatch):
    sizes = {}
    for order in ("largest", "family"):
        monkeypatch.setattr(mini, "LATE_ORDER", order)
        _, out = mini.minimize_concrete(({}, _sigma()), _kernel_with_its_bias,
                                        time.monotonic() + 30)
        sizes[order] = (_nonzero(out), bool(np.any(out["dense/kernel"].array)))
    # largest first splits the kernel from its bias: the kernel refuses 0
    # alone, and stays (the ladder's ones; more elements than the element
    # pass visits: 100 non-zero elements)
    assert sizes["largest"][1]
    # a layer's tensors side by side: both take 0 in one step
    assert not sizes["family"][1]
    assert sizes["family"][0] < sizes["largest"][0]


def test_checks_give_the_same_verdicts_in_every_order_and_their_sigma_is_confirmed(monkeypatch):
    # (generated programs, cone tests on: every σ shown is confirmed by
    # the enumerating oracle, whatever order minimization tried σ's tensors in)
    from tfsem.checking import check as C
    from tfsem.checking import check_rewrite, sigma_memo

    from test_check_demand_confirm import _pairs, confirmed_by_the_oracle

    monkeypatch.setattr(C, "MINIMIZE_CHEAP_SECONDS", -1.0)
    unsound = 0
    for i, name, p, q, (sem, obs) in _pairs(300, 10, 17):
        verdicts = []
        for order in ("name", "largest", "family"):
            monkeypatch.setattr(mini, "LATE_ORDER", order)
            sigma_memo.clear()
            v = check_rewrite(p, q, sem, obs, timeout=5, structural=False, backends=False,
                              classify=False)
            verdicts.append(v.verdict)
            if v.verdict == "unsound":
                confirmed_by_the_oracle(p, q, v.counterexample, sem, obs, (i, name, order))
                unsound += 1
        assert len(set(verdicts)) == 1, (i, name, sem, obs, verdicts)
    assert unsound >= 30, unsound


def test_the_cases_verdicts_are_the_same_in_every_order(monkeypatch):
    from pathlib import Path

    from tfsem.checking import check_rewrite, sigma_memo
    from tfsem.oracle.jsonio import load_case

    compared = 0
    for f in sorted((Path(__file__).parent / "cases").glob("*.json")):
        case = load_case(f)
        verdicts = []
        for order in ("name", "family"):
            monkeypatch.setattr(mini, "LATE_ORDER", order)
            sigma_memo.clear()
            v = check_rewrite(case.original, case.rewritten_json, case.semantics, case.observe,
                              timeout=5, backends=False, classify=False)
            verdicts.append(v.verdict)
        assert verdicts[0] == verdicts[1], f.name
        compared += 1
    assert compared >= 50, compared
