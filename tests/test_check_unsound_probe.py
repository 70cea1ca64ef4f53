"""What an `unsound` check of a real graph costs after the difference shows
(checking/check.py `_Checker.probe`, `minimized`; checking/minimize.py).

- The probe: before the symbolic search, where ops run on TensorFlow's
  kernels, one run of each program at σ ones and at the largest finite float
  in every feed; a difference there is confirmed by the concrete oracle (P's
  outcomes enumerated) and is the verdict at once.  σ where the runs agree
  are reused by the one-outcome comparisons, never compared twice.
- Minimization: whole tensors first, the elements of small tensors only, and
  no step at all where one confirmation costs more than its budget.
- Schedules: the canonical order when it gives the outcome.

TensorFlow is not needed: the checker is told that the programs need its
kernels (tests/test_check_one_outcome.py `as_if_kernels`)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tfsem.checking import check as C
from tfsem.checking import check_rewrite
from tfsem.checking import minimize as mini
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Error, Tensor

from test_check_one_outcome import as_if_kernels

VARS = [f"x{i}" for i in range(5)]


def training_step(expr):
    """Five variables, each read and written back (10 accesses: the probe's
    size), x0 := expr(r0), output o."""
    nodes = []
    for i, x in enumerate(VARS):
        nodes += [{"name": f"v{i}", "op": "Var", "var": x},
                  {"name": f"r{i}", "op": "Read", "inputs": [f"v{i}"]}]
    nodes += expr
    nodes += [{"name": "w0", "op": "Write", "inputs": ["v0", "o", "^r0", "^fa"]}]
    # (each write after the one before: one component, which the rewrite
    # changes, as a real training step's updates are one)
    nodes += [{"name": f"w{i}", "op": "Write", "inputs": [f"v{i}", f"r{i}", f"^r{i}", f"^w{i - 1}"]}
              for i in range(1, 5)]
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {x: {"dtype": "float32", "shape": [3]} for x in VARS},
        "feeds": {"a": {"dtype": "float32", "shape": [3]}},
        "nodes": nodes + [{"name": "fa", "op": "Identity", "inputs": ["$a"]}],
        "outputs": {"out": "o", "fa": "fa"}})


def big():
    return {"name": "c", "op": "Const", "value": {"dtype": "float32", "value": 1e8}}


# (r0 + 1e8) - 1e8 against r0 + (1e8 - 1e8): equal at zeros, 0 against 1 at ones
LEFT = training_step([big(), {"name": "s", "op": "Add", "inputs": ["r0", "c"]},
                      {"name": "o", "op": "Sub", "inputs": ["s", "c"]}])
RIGHT = training_step([big(), {"name": "s", "op": "Sub", "inputs": ["c", "c"]},
                       {"name": "o", "op": "Add", "inputs": ["r0", "s"]}])
# r0 * 2 against r0 + r0: equal everywhere (two opaque functions to the solver)
TWICE = training_step([{"name": "two", "op": "Const", "value": {"dtype": "float32", "value": 2.0}},
                       {"name": "o", "op": "Mul.ftz", "inputs": ["r0", "two"]}])
DOUBLE = training_step([{"name": "o", "op": "Add.ftz", "inputs": ["r0", "r0"]}])


def test_the_probe_finds_a_difference_at_sigma_ones_before_the_search():
    with as_if_kernels():
        v = check_rewrite(LEFT, RIGHT, timeout=10, structural=False)
    assert v.verdict == "unsound", v.reason
    assert v.stats["path"] == "probe" and v.stats["probe"]["found"] == "ones", v.stats
    assert v.stats["states"] == 0      # no symbolic state explored
    assert "oracle" in v.confirmed and "numpy" in v.confirmed
    cx = v.counterexample
    original = outcome_set(LEFT, cx.feeds, cx.init, "atomic", "outputs+state")
    assert cx.outcome not in original
    # σ minimized by whole tensors: what does not matter is all zeros, x0 is
    # what shows the difference
    for x in VARS[1:]:
        assert not np.any(cx.init[x].array), (x, cx.init[x])
    # the schedule is the canonical order (nothing out of place)
    order = {n: k for k, n in enumerate(RIGHT.topological_order)}
    assert [order[s] for s in cx.schedule] == sorted(order[s] for s in cx.schedule)


def test_without_kernels_there_is_no_probe():
    with as_if_kernels(False):
        v = check_rewrite(LEFT, RIGHT, timeout=10, structural=False)
    assert v.verdict == "unsound" and "probe" not in v.stats


def test_sigmas_the_probe_compared_are_not_compared_again(monkeypatch):
    runs = []

    def counting(real):
        # (the original's runs, random or canonical: the probe runs a
        # race-free original in its canonical order, the one-outcome
        # comparisons each program in its canonical order)
        def counted(p, feeds, init, *a, **k):
            if p is TWICE:
                values = [*feeds.values(), *init.values()]
                runs.append(all(not isinstance(v, Error) and np.all(v.array == 1)
                                for v in values))
            return real(p, feeds, init, *a, **k)
        return counted

    monkeypatch.setattr(C.ref, "sample_outcomes", counting(C.ref.sample_outcomes))
    monkeypatch.setattr(C.ref, "canonical_outcome", counting(C.ref.canonical_outcome))
    with as_if_kernels():
        v = check_rewrite(TWICE, DOUBLE, timeout=10, structural=False)
    assert v.verdict == "no-counterexample", v.reason
    # (both programs race-free: the probe goes on through the one-outcome
    # comparisons' σ but the random ones, and the comparisons reuse them)
    assert v.stats["probe"]["sigmas"] > 2
    assert v.stats["one_outcome"]["compared"] >= v.stats["probe"]["sigmas"], v.stats
    # σ ones ran the original once, in the probe (the rewrite in its canonical
    # order there), and neither program again in the comparisons
    assert runs.count(True) == 1, runs


def test_minimization_takes_whole_tensors_first_and_skips_large_ones_elementwise():
    calls = []
    n = 10_000

    def confirm(sigma):
        calls.append(1)
        # the difference needs x0[0] != 0; nothing else matters
        return sigma[1]["x0"].array.reshape(-1)[0] != 0

    init = {"x0": Tensor(np.full(n, 7.0, np.float32), "float32"),
            "x1": Tensor(np.full(n, 7.0, np.float32), "float32"),
            "x2": Error("uninitialized")}
    feeds, out = mini.minimize_concrete(({}, init), confirm, time.monotonic() + 30)
    assert not np.any(out["x1"].array)                  # all zeros, in one step
    assert np.all(out["x0"].array == 1.0)               # zeros fail, ones survive
    assert isinstance(out["x2"], Error)
    # (tensor steps only: element by element would be 3 x 10,000 confirmations)
    assert len(calls) <= 4, len(calls)


def test_minimization_does_elements_of_small_tensors():
    def confirm(sigma):
        return sigma[1]["x0"].array.reshape(-1)[1] != 0

    init = {"x0": Tensor(np.array([5.0, 6.0, 7.0], np.float32), "float32")}
    _, out = mini.minimize_concrete(({}, init), confirm, time.monotonic() + 30)
    assert out["x0"].array.tolist() == [0.0, 1.0, 0.0]


def test_no_minimization_step_when_one_confirmation_costs_more_than_its_budget(monkeypatch):
    real = C._Checker._confirm

    def slow(self, *a, **k):
        time.sleep(0.6)    # (more than the 0.5 s share of a 10 s check)
        return real(self, *a, **k)

    monkeypatch.setattr(C._Checker, "_confirm", slow)
    with as_if_kernels():
        t = time.monotonic()
        v = check_rewrite(LEFT, RIGHT, timeout=10, structural=False)
        seconds = time.monotonic() - t
    assert v.verdict == "unsound"
    assert "not minimized" in v.stats["minimize"], v.stats
    # one confirmation (the probe's), none in minimization
    assert seconds < 0.6 * 2 + 2.0, seconds


@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
def test_the_schedule_becomes_canonical_and_still_gives_the_outcome(semantics):
    feeds = {"a": Tensor(np.ones(3, np.float32), "float32")}
    init = {x: Tensor(np.ones(3, np.float32), "float32") for x in VARS}
    runs = C.ref.sample_outcomes(RIGHT, feeds, init, semantics, "outputs+state",
                                 np.random.default_rng(3), 8, time.monotonic() + 30)
    for outcome, schedule in runs.items():
        out = mini.minimize_schedule(RIGHT, feeds, init, schedule, outcome, semantics,
                                     "outputs+state", time.monotonic() + 30)
        order = {n: k for k, n in enumerate(RIGHT.topological_order)}
        ranks = [(order[s.partition("@")[0]], s.endswith("@write")) for s in out]
        assert ranks == sorted(ranks)
        state = mini.run_schedule(RIGHT, feeds, init, out, semantics)
        assert mini.outcome_of(RIGHT, mini.graph_of(RIGHT), state, "outputs+state") == outcome


def test_the_numpy_replay_reuses_the_oracles_enumeration(monkeypatch):
    from tfsem.backends import confirm as backend_confirm

    def refused(*a, **k):
        raise AssertionError("the original's outcomes enumerated a second time")

    monkeypatch.setattr(backend_confirm, "outcome_set", refused)
    with as_if_kernels():
        v = check_rewrite(LEFT, RIGHT, timeout=10, structural=False)
    assert v.verdict == "unsound" and "numpy" in v.confirmed, (v.confirmed, v.stats)


# (r0 + r1) + r2 against r0 + (r1 + r2): equal at ones (exact), NaN at the
# largest float in the feed alike; the plain σ's normal values round apart
ASSOC_LEFT = training_step([{"name": "s", "op": "Add.ftz", "inputs": ["r0", "r1"]},
                            {"name": "o", "op": "Add.ftz", "inputs": ["s", "r2"]}])
ASSOC_RIGHT = training_step([{"name": "s", "op": "Add.ftz", "inputs": ["r1", "r2"]},
                             {"name": "o", "op": "Add.ftz", "inputs": ["r0", "s"]}])


def test_on_a_large_graph_the_probe_tries_the_plain_sigma_first(monkeypatch):
    # (a large graph: PROBE_PLAIN_FIRST_NODES lowered to this one's size)
    monkeypatch.setattr(C, "PROBE_PLAIN_FIRST_NODES", len(ASSOC_LEFT.nodes))
    with as_if_kernels():
        v = check_rewrite(ASSOC_LEFT, ASSOC_RIGHT, timeout=10, structural=False)
    assert v.verdict == "unsound", v.reason
    assert v.stats["path"] == "probe" and v.stats["probe"]["found"] == "plain", v.stats
    assert v.stats["probe"]["sigmas"] == 1
    cx = v.counterexample
    assert cx.outcome not in outcome_set(ASSOC_LEFT, cx.feeds, cx.init, "atomic", "outputs+state")
    # below the size, the probe's own σ (ones, the largest float) come
    # first and show nothing; the plain σ, compared after them (both
    # programs race-free), shows it
    monkeypatch.setattr(C, "PROBE_PLAIN_FIRST_NODES", len(ASSOC_LEFT.nodes) + 1)
    with as_if_kernels():
        v = check_rewrite(ASSOC_LEFT, ASSOC_RIGHT, timeout=10, structural=False)
    probe = v.stats.get("probe", {})
    assert probe.get("found") == "plain" and probe["sigmas"] > 1, v.stats
