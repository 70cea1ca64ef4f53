"""The size of an `unsound` verdict's JSON and text (checking/verdict.py
`Counterexample.shown_in_full`, oracle/outcomes.py `summary_json`): σ and the
differing values in full, the large values the outcomes share summarised by
their digest, and what a user needs to reproduce it all still there.

- A rewrite that changes one of three 300-element variables: that variable
  in full in both outcomes; the two others and the output summarised, with
  equal digests in the rewritten and the original outcome; σ in full.
- The summaries are true: each digest is the digest of the value a replay of
  the schedule at σ gives, and the report page's replay check accepts them.
- Small values (every generated program's) are never summarised: the JSON is
  what it was.
- The differing values beyond DIFFERING_ELEMENTS are summarised, the first
  difference never."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.checking import verdict as V
from tfsem.oracle.jsonio import make_case, program_from_json
from tfsem.oracle.outcomes import SUMMARY_MIN_ELEMENTS, Outcome, is_summary, value_digest
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import DTYPES, Tensor, edge_values, value_from_json, value_to_json
from tfsem.reports.finding import render_finding_page

N = 300


def _program(source: str):
    t = {"dtype": "float32", "shape": [N]}
    return program_from_json({
        "variables": {"x": t, "y": t, "z": t},
        "nodes": [
            {"name": "vx", "op": "Var", "var": "x"},
            {"name": "vy", "op": "Var", "var": "y"},
            {"name": "vz", "op": "Var", "var": "z"},
            {"name": "ry", "op": "Read", "inputs": ["vy"]},
            {"name": "rz", "op": "Read", "inputs": ["vz"]},
            {"name": "a", "op": "Assign", "fn": "Snd", "inputs": ["vx", source]},
        ],
        "outputs": {"o": "rz"},
    })


@pytest.fixture(scope="module")
def checked():
    p, q = _program("ry"), _program("rz")
    v = check_rewrite(p, q, timeout=20, backends=False, classify=False)
    assert v.verdict == "unsound", v.reason
    assert v.differs == {"variable": "x"}
    return p, q, v


def test_the_differing_value_in_full_the_shared_ones_summarised(checked):
    p, q, v = checked
    cx = v.to_json()["counterexample"]
    (orig,) = cx["original_outcomes"]
    mine = cx["outcome"]
    # σ in full: every initial value decodes to the counterexample's
    for x in ("x", "y", "z"):
        assert value_from_json(cx["init"][x]) == v.counterexample.init[x]
    # the difference in full, in both outcomes
    assert value_from_json(mine["state"]["x"]) == dict(v.counterexample.outcome.state)["x"]
    assert value_from_json(orig["state"]["x"]) != value_from_json(mine["state"]["x"])
    # the rest summarised, the same digest on both sides
    for part in (mine["state"]["y"], mine["state"]["z"], mine["outputs"]["o"]):
        assert is_summary(part) and part["shape"] == [N] and part["summary"]["elements"] == N
    assert mine["state"]["y"] == orig["state"]["y"] and mine["outputs"]["o"] == orig["outputs"]["o"]
    assert cx["summarised"] == 6
    # the text: the difference shown, the rest named as summarised
    text = v.describe()
    assert text.count("(summarised, blake2b-128:") == 6 and "6 large values" in text
    # σ's large tensors by their range (every element is in the JSON)
    init_line = next(line for line in text.split("\n") if line.startswith("  init:"))
    assert len(init_line) < 600, init_line
    # smaller: of the outcome's four values one is written in full
    whole = json.dumps(v.counterexample.outcome.to_json())
    assert len(json.dumps(mine)) < 0.4 * len(whole), (len(json.dumps(mine)), len(whole))


def test_a_large_sigma_tensor_is_shown_by_its_range():
    a = np.linspace(-2, 3, N, dtype=np.float32)
    a[7] = np.nan
    cx = V.Counterexample({}, {"w": Tensor(a)}, ["r"], Outcome((), ()), [(Outcome((), ()), [])], 1)
    (line,) = [x for x in cx.describe() if x.startswith("  init:")]
    assert line == (f"  init:    w = float32 [{N}] ({N} values from -2.0 to 3.0, 1 NaN; "
                    "in full with --json)")
    assert value_from_json(cx.to_json()["init"]["w"]) == Tensor(a)


def test_the_summaries_are_those_of_the_replayed_values(checked):
    p, q, v = checked
    cx = v.counterexample
    state = run_schedule(q, cx.feeds, cx.init, cx.schedule, "atomic")
    replayed: Outcome = outcome_of(q, graph_of(q), state, "outputs+state")
    raw = v.to_json()["counterexample"]["outcome"]
    for (kind, name), value in replayed.parts():
        written = raw["outputs" if kind == "output" else "state"][name]
        if is_summary(written):
            assert written["summary"]["digest"] == value_digest(value)
            a = value.array
            assert written["summary"]["min"] == float(a.min())
            assert written["summary"]["max"] == float(a.max())
        else:
            assert value_from_json(written) == value
    # the report page replays the schedule and finds the outcome stated
    html = render_finding_page(make_case(p, q, expect="unsound"), v.to_json())
    assert "not the outcome the verdict states" not in html


def test_small_values_are_never_summarised():
    t = Tensor(np.arange(SUMMARY_MIN_ELEMENTS, dtype=np.float32))
    o = Outcome((("o", t),), (("x", t),))
    cx = V.Counterexample({}, {}, [], o, [(Outcome((("o", t),), (("x", Tensor(t.array + 1)),)),
                                         [])], 1)
    assert "summarised" not in cx.to_json()
    assert cx.to_json()["outcome"] == o.to_json()


def test_differing_values_past_the_budget_are_summarised(monkeypatch):
    monkeypatch.setattr(V, "DIFFERING_ELEMENTS", N)
    big = {k: Tensor(np.full(N, i, np.float32)) for i, k in enumerate("abc")}
    other = {k: Tensor(np.full(N, i + 10, np.float32)) for i, k in enumerate("abc")}
    mine = Outcome((), tuple(sorted(big.items())))
    theirs = Outcome((), tuple(sorted(other.items())))
    cx = V.Counterexample({}, {}, [], mine, [(theirs, [])], 1)
    state = cx.to_json()["outcome"]["state"]
    # the first difference (a) in full; b and c would be 2N elements each
    assert not is_summary(state["a"]) and is_summary(state["b"]) and is_summary(state["c"])
    monkeypatch.setattr(V, "DIFFERING_ELEMENTS", 3 * N)
    state = cx.to_json()["outcome"]["state"]
    assert not is_summary(state["b"]) and is_summary(state["c"])


def test_a_check_formats_no_outcome_and_its_replay_states_the_claimed_one(monkeypatch):
    """The numpy replay's reason is written only when read (a real graph's
    outcome took 0.5 s to format for a text never shown), and that replay
    is given the outcome the verdict claims (`outcome=`): it confirms only
    where the schedule shown gives that very outcome on numpy."""
    from tfsem.backends import confirm as B
    formatted = []
    real_describe = Outcome.describe
    monkeypatch.setattr(Outcome, "describe", lambda self, *a: formatted.append(1) or
                        real_describe(self, *a))
    claimed = []
    real_details = B.confirm_details

    def details(*a, **k):
        claimed.append(k.get("outcome"))
        return real_details(*a, **k)

    monkeypatch.setattr(B, "confirm_details", details)
    p, q = _program("ry"), _program("rz")
    v = check_rewrite(p, q, timeout=20, classify=False)
    assert v.verdict == "unsound" and v.confirmed == ["oracle", "numpy"], v.stats
    assert formatted == []
    assert claimed == [v.counterexample.outcome]
    (c,) = real_details(p, q, v.counterexample.feeds, v.counterexample.init,
                        v.counterexample.schedule, outcome=v.counterexample.outcome)
    assert c.confirmed and not formatted
    assert "none of the original's 1 witness schedules does" in c.reason and formatted


def test_a_large_float_sigma_is_written_short_and_reads_back_bit_for_bit():
    rng = np.random.default_rng(5)
    for dtype in ("float32", "float16", "bfloat16"):
        d = DTYPES[dtype]
        a = (rng.standard_normal(4 * N) * 3.0).astype(d)
        edges = edge_values(dtype)
        a[:len(edges)] = edges
        a[len(edges):len(edges) + 3] = np.array([0.1, 2.5, -1e-3]).astype(d)
        t = Tensor(a, dtype)
        written = V.sigma_json(t)
        back = value_from_json(json.loads(json.dumps(written)), dtype=dtype)
        assert back == t, dtype
        finite = np.isfinite(a.astype(np.float64))
        view = {2: np.uint16, 4: np.uint32}[a.dtype.itemsize]
        assert (back.array[finite].view(view) == a[finite].view(view)).all(), dtype
        assert len(json.dumps(written)) < 0.75 * len(json.dumps(value_to_json(t))), dtype
    # (a small tensor and float64: as value_to_json writes them)
    small = Tensor(np.array([0.1, 0.2], np.float32))
    assert V.sigma_json(small) == value_to_json(small)
    wide = Tensor(np.linspace(0, 1, 4 * N))
    assert V.sigma_json(wide) == value_to_json(wide)
