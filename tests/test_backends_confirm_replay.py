"""The numpy replay of an `unsound` verdict (backends/confirm.py).

- Function applications shared by its runs (backends/execute.py `Memo`,
  the rewritten program and then the original on one memo): every run on a
  memo gives the outcome a run without it gives.  Generated programs and
  their rewrites by every built-in pass, both semantics modes, against each
  run alone; the memo was hit on many of them (the shortcut is exercised),
  and never across different attributes.
- The witnesses shown (`witnesses=`): each must give its own outcome on
  the backend; two witnesses swapped between their outcomes do not
  confirm, the right ones do."""

from __future__ import annotations

import random

import numpy as np

from tfsem.backends.arraymodule import get_backend
from tfsem.backends.confirm import confirm_details
from tfsem.backends.execute import Memo, device_machine, download_outcome, upload
from tfsem.checking import check as C
from tfsem.generators.strategies import random_programs
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor
from tfsem.rewrites import builtin_passes


def _run(p, feeds, init, sem, seed, memo=None):
    b = get_backend("numpy")
    m = device_machine(p, b, sem, memo)
    st = m.run_random(m.start(feeds, init), random.Random(seed))
    return download_outcome(st, b, "outputs+state"), st.schedule


def test_runs_on_one_memo_give_the_outcomes_of_runs_alone():
    b = get_backend("numpy")
    passes = list(builtin_passes().values())
    compared = hit = 0
    for i, p in enumerate(random_programs(60, 41, max_nodes=10)):
        if p.has_control_flow:
            continue
        q = passes[i % len(passes)].function(p)
        sem = ("atomic", "decomposed")[i % 2]
        feeds, init = next(C._refute_sigmas(p, np.random.default_rng(i)))
        dev_feeds, dev_init = upload(feeds, b), upload(init, b)
        memo = Memo()
        try:
            mine_q, sched_q = _run(q, dev_feeds, dev_init, sem, i, memo)
            mine_p, sched_p = _run(p, dev_feeds, dev_init, sem, i + 1, memo)
            alone_q, _ = _run(q, upload(feeds, b), upload(init, b), sem, i)
            alone_p, _ = _run(p, upload(feeds, b), upload(init, b), sem, i + 1)
        except Exception:   # noqa: BLE001 (a program the backends do not run)
            continue
        assert mine_q == alone_q and mine_p == alone_p, (i, sem, sched_q, sched_p)
        compared += 1
        hit += memo.hits > 0
    assert compared >= 50 and hit >= 40, (compared, hit)


def test_equal_arguments_with_other_attributes_are_not_shared():
    p = program_from_json({
        "nodes": [
            {"name": "a", "op": "Const", "value": 3},
            {"name": "b", "op": "Const", "value": 4},
        ],
        "outputs": {"a": "a", "b": "b"},
    })
    memo = Memo()
    b = get_backend("numpy")
    out, _ = _run(p, {}, {}, "atomic", 0, memo)
    assert [int(v.array) for _, v in out.outputs] == [3, 4]
    again, _ = _run(p, upload({}, b), {}, "atomic", 1, memo)
    assert again == out and memo.hits == 2


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
