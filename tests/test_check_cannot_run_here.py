"""A function that runs concretely at some values and not at others
(fns.CannotRunHere: DynamicStitch whose indices leave a row unset, ScatterDiv
of the lowest integer by -1, a scatter with duplicate indices) makes the
checker skip the σ at which it fails, not end the whole check `unknown`:
another σ may hold a counterexample (docs/review-counterexample-stages.md).
A function with no concrete model at all still ends it `unknown`, naming
the node (tests/test_check_cannot_run.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.oracle import functions as fns
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import Tensor


def _stitch(edge: bool):
    # x := $a; r = Read(x) (after the Write where `edge`); out = DynamicStitch($i, r)
    nodes = [{"name": "v", "op": "Var", "var": "x"},
             {"name": "w", "op": "Write", "inputs": ["v", "$a"]},
             {"name": "r", "op": "Read", "inputs": ["v"] + (["^w"] if edge else [])},
             {"name": "s", "op": "DynamicStitch/1", "inputs": ["$i", "r"]}]
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {"x": {"dtype": "int32", "shape": [2]}},
        "feeds": {"a": {"dtype": "int32", "shape": [2]}, "i": {"dtype": "int32", "shape": [2]}},
        "nodes": nodes, "outputs": {"out": "s"}})


def test_stitch_leaving_a_row_unset_cannot_run_here():
    f = fns.get("DynamicStitch/1")
    with pytest.raises(fns.CannotRunHere):
        f.apply([Tensor(np.array([1, 1], np.int32)), Tensor(np.array([1, 2], np.int32))], {})


def test_a_sigma_where_stitch_cannot_run_is_skipped_not_the_check():
    # (before: `unknown`, "cannot run DynamicStitch with indices that leave a
    # row unset", from the first σ the solver proposed, i = [0, 0])
    p, q = _stitch(True), _stitch(False)
    v = check_rewrite(p, q, timeout=10)
    assert v.verdict == "unsound", (v.verdict, v.reason)
    assert "oracle" in v.confirmed
    assert v.stats["skipped_sigmas"]["count"] >= 1
    assert "DynamicStitch" in v.stats["skipped_sigmas"]["first"]
    c = v.counterexample
    # the schedule shown gives the outcome shown, which P does not give at σ
    got = outcome_of(q, graph_of(q), run_schedule(q, c.feeds, c.init, list(c.schedule),
                                                  v.semantics), v.observe)
    assert got == c.outcome
    assert c.outcome not in outcome_set(p, c.feeds, c.init, v.semantics, v.observe)


def test_an_op_with_no_model_still_ends_the_check_unknown():
    from tests.test_check_cannot_run import _mystery_pair
    p, q = _mystery_pair()
    v = check_rewrite(p, q, timeout=10)
    assert v.verdict == "unknown" and "Mystery" in v.reason
    assert not issubclass(fns.CannotRun, fns.CannotRunHere)


def test_scatter_div_of_the_lowest_int_by_minus_one_cannot_run_here():
    pack, div = fns.get("PackScatter"), fns.get("ScatterDiv")
    w = Tensor(np.array([[np.iinfo(np.int32).min, 7]], np.int32))
    (packed,) = pack.apply((Tensor(np.int64([0])), Tensor(np.array([[-1, -2]], np.int32))))
    with pytest.raises(fns.CannotRunHere):
        div.apply((w, packed))


def test_a_schedule_order_at_which_stitch_cannot_run_is_not_the_outcome():
    # r reads the indices while a Write races to make them leave a row
    # unset: the run with the Read first gives an outcome; the canonical
    # order (the Write first) cannot run DynamicStitch.  minimize_schedule
    # keeps the schedule (before: CannotRun out of the minimization, the
    # whole check `unknown` after its counterexample was confirmed)
    from tfsem.checking import minimize as mini
    p = program_from_json({
        "format": "tfsem.program/1",
        "variables": {"x": {"dtype": "int32", "shape": [2]}},
        "feeds": {"bad": {"dtype": "int32", "shape": [2]}, "d": {"dtype": "int32", "shape": [2]}},
        "nodes": [{"name": "v", "op": "Var", "var": "x"},
                  {"name": "w", "op": "Write", "inputs": ["v", "$bad"]},
                  {"name": "r", "op": "Read", "inputs": ["v"]},
                  {"name": "s", "op": "DynamicStitch/1", "inputs": ["r", "$d"]}],
        "outputs": {"out": "s"}})
    i32 = lambda *xs: Tensor(np.array(xs, np.int32))   # noqa: E731
    feeds, init = {"bad": i32(1, 1), "d": i32(5, 6)}, {"x": i32(1, 0)}
    schedule = ["v", "r", "w", "s"]
    assert mini.canonical_order(p, schedule) != schedule
    with pytest.raises(fns.CannotRunHere):
        run_schedule(p, feeds, init, mini.canonical_order(p, schedule), "atomic")
    outcome = outcome_of(p, graph_of(p), run_schedule(p, feeds, init, schedule, "atomic"),
                         "outputs+state")
    import time
    got = mini.minimize_schedule(p, feeds, init, schedule, outcome, "atomic", "outputs+state",
                                 time.monotonic() + 5)
    assert outcome_of(p, graph_of(p), run_schedule(p, feeds, init, got, "atomic"),
                      "outputs+state") == outcome


def test_an_op_that_cannot_run_at_any_sigma_is_named_as_the_cause():
    # DynamicStitch's indices a constant leaving row 0 unset: every σ is
    # skipped; the check ends `unknown`, the op its cause (as before the
    # skipping, though only at the end of its budget)
    def prog(edge):
        return program_from_json({
            "format": "tfsem.program/1",
            "variables": {"x": {"dtype": "int32", "shape": [2]}},
            "feeds": {"a": {"dtype": "int32", "shape": [2]}},
            "nodes": [{"name": "v", "op": "Var", "var": "x"},
                      {"name": "w", "op": "Write", "inputs": ["v", "$a"]},
                      {"name": "r", "op": "Read", "inputs": ["v"] + (["^w"] if edge else [])},
                      {"name": "i", "op": "Const", "value": {"dtype": "int32", "value": [1, 1]}},
                      {"name": "s", "op": "DynamicStitch/1", "inputs": ["i", "r"]}],
            "outputs": {"out": "s"}})
    v = check_rewrite(prog(True), prog(False), timeout=1.5)
    assert v.verdict == "unknown", (v.verdict, v.reason)
    assert v.reason.startswith("cannot run DynamicStitch") and "(node s)" in v.reason, v.reason
    assert v.stats["cause"].startswith("cannot run DynamicStitch")
    assert v.stats["skipped_sigmas"]["count"] >= 1


@pytest.mark.parametrize("command", [["outcomes"], ["run", "--backend", "numpy"]])
def test_outcomes_and_run_name_the_node_that_cannot_run_here(command, tmp_path, capsys):
    # (the backends' replay said which function, as the oracle does: `run`
    # named no node before)
    import json
    from tfsem.cli import main
    from test_review_optimizer_steps_round18 import _adam_step
    p = _adam_step(2, [3], ("float16",) * 4)
    p["variables"]["w"]["dtype"] = "float16"
    path = tmp_path / "adam16.json"
    path.write_text(json.dumps(p))
    half = (lambda v: json.dumps({"dtype": "float16", "value": v}))
    code = main([*command, str(path), "--feed", f"m={half(['nan', -2, 0.25])}",
                 "--feed", f"a={half('nan')}", "--feed", f"v={half([1, 2, 3])}",
                 "--feed", f"e={half(0.125)}", "--init", f"w={half([1, 2, 3])}"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot run AdamStep" in err and "(node u)" in err, err
