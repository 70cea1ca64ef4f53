"""The replay of an `unsound` verdict on TensorFlow runs the original too
(backends/tensorflow.py `with_original`): after the rewritten program gave
the counterexample's outcome there, each witness schedule of the original
that the verdict lists is forced on the original, from σ, and TensorFlow
must give the outcome the oracle gives for it.  Only then is "tensorflow"
in `confirmed`: a model of an op of the original that differs from
TensorFlow's kernel makes the oracle's original outcomes wrong, and the
rewritten program's outcome would look new on TensorFlow's word alone.

The tests that run TensorFlow skip, saying so, where it is not installed.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import time
from pathlib import Path

import pytest

from tfsem.cli import main

ROOT = Path(__file__).resolve().parent.parent
HAVE_TF = importlib.util.find_spec("tensorflow") is not None
needs_tf = pytest.mark.skipif(not HAVE_TF, reason="needs the extra tfsem[tensorflow] "
                              "(tensorflow-cpu): not installed here")

#: `check`'s budget covers TensorFlow's import and both replays: one that
#: lets them finish on a loaded machine
TIMEOUT = ["--timeout", "120"]


def _counter(value_nodes: list[dict], wait: bool) -> dict:
    """A counter incremented, then read (after the increment where `wait`);
    `value_nodes` compute the output `value` from the read."""
    return {"format": "tfsem.program/1", "variables": ["counter"],
            "nodes": [{"name": "counter", "op": "Var", "var": "counter"},
                      {"name": "one", "op": "Const", "value": 1},
                      {"name": "increment", "op": "Assign", "fn": "Add",
                       "inputs": ["counter", "one"]},
                      {"name": "read", "op": "Read",
                       "inputs": ["counter", "^increment"] if wait else ["counter"]},
                      *value_nodes],
            "outputs": {"value": "value"}}


#: the original negates the read twice (Neg, a function only it applies);
#: the rewrite drops the control edge that orders the read after the
#: increment, and the double negation with it: a lost ordering, unsound
#: under a right model of Neg
CASE = {"format": "tfsem.case/1", "semantics": "atomic", "observe": "outputs+state",
        "original": _counter([{"name": "neg", "op": "Neg", "inputs": ["read"]},
                              {"name": "value", "op": "Neg", "inputs": ["neg"]}], wait=True),
        "rewritten": _counter([{"name": "value", "op": "Identity", "inputs": ["read"]}],
                              wait=False)}


def check_json(capsys, tmp_path, *extra: str) -> tuple[int, dict]:
    path = tmp_path / "case.json"
    path.write_text(json.dumps(CASE))
    rc = main(["check", str(path), *TIMEOUT, "--json", *extra])
    return rc, json.loads(capsys.readouterr().out)


@needs_tf
def test_confirmation_includes_the_originals_witness_replay(capsys, tmp_path):
    rc, v = check_json(capsys, tmp_path)
    assert rc == 1 and v["verdict"] == "unsound"
    rep = v["tensorflow_replay"]
    assert rep["confirmed"], rep["reason"]
    assert "tensorflow" in v["confirmed"]
    listed = v["counterexample"]["original_outcomes"]
    assert rep["original"] == {"graph": "the original program, exported",
                               "outcomes": v["counterexample"]["original_count"],
                               "listed": len(listed), "replayed": len(listed),
                               "failed_runs": 0, "agreed": True}
    assert "; the original program, exported, run with its witness schedule forced, gave " \
           "the oracle's outcome" in rep["reason"]
    assert rep["text"].startswith("TensorFlow ") and rep["reason"] in rep["text"]


@needs_tf
def test_a_wrong_model_of_the_original_is_caught_by_its_replay(capsys, tmp_path, monkeypatch):
    """Neg's model made wrong (x + 1 for -x) in this test: the oracle's
    original gives value = read + 2; TensorFlow's kernel gives read.  The
    verdict stays the oracle's `unsound` (numpy, which runs the same model,
    confirms it), but TensorFlow's confirmation is withdrawn and says why."""
    from tfsem.oracle import functions as fns
    wrong = dataclasses.replace(fns.get("Neg"), impl=lambda xp, args, attrs: (args[0] + 1,),
                                batched_impl=lambda xp, args, attrs: (args[0] + 1,))
    monkeypatch.setitem(fns._REGISTRY, "Neg", wrong)
    rc, v = check_json(capsys, tmp_path)
    assert rc == 1 and v["verdict"] == "unsound"
    cx = v["counterexample"]
    sigma = cx["init"]["counter"]
    # the oracle's original, under the wrong model: one outcome, read + 2
    assert [o["outputs"]["value"] for o in cx["original_outcomes"]] == [sigma + 1 + 2]
    assert v["confirmed"] == ["oracle", "numpy"]
    rep = v["tensorflow_replay"]
    assert rep["status"] == "not-replayed" and not rep["confirmed"] and not rep["budget"]
    assert rep["original"]["agreed"] is False and rep["original"]["replayed"] == 0
    assert rep["reason"].startswith("TensorFlow and the oracle differ on the original: its "
                                    "witness schedule (the original program, exported) gives "
                                    f"output 'value' = {sigma + 1} on TensorFlow, "
                                    f"{sigma + 3} in the oracle")
    # the rewritten program's side agreed: TensorFlow gave its outcome
    assert rep["outcome"] == cx["outcome"]
    assert rep["text"] == f"not replayed on TensorFlow: {rep['reason']}"
    # the text form says it under the verdict too
    main(["check", str(tmp_path / "case.json"), *TIMEOUT])
    text = capsys.readouterr().out
    assert "  confirmed on: oracle, numpy\n" in text
    assert f"  {rep['text']}" in text.splitlines()


@needs_tf
def test_a_graph_original_is_replayed_as_the_graph_itself(tmp_path, capsys):
    """ORIGINAL a GraphDef file: its witness schedule is forced on it."""
    corpus = ROOT / "examples" / "tensorflow" / "counter.pbtxt"
    broken = tmp_path / "counter_broken.pbtxt"
    broken.write_text(corpus.read_text().replace('input: "^increment"', ""))
    rc = main(["check", str(corpus), str(broken), "--fetch", "value", *TIMEOUT, "--json"])
    v = json.loads(capsys.readouterr().out)
    assert rc == 1 and v["verdict"] == "unsound"
    rep = v["tensorflow_replay"]
    assert rep["confirmed"], rep["reason"]
    assert rep["original"]["graph"] == f"the graph {corpus}"
    assert rep["original"]["agreed"] is True and rep["original"]["replayed"] >= 1
    assert f"; the graph {corpus}, run with its witness schedule" in rep["reason"]


@needs_tf
def test_the_originals_replay_past_the_deadline_claims_nothing():
    """The original's side runs in the replay's deadline: past it, the
    replay is not confirmed and says it was the budget (never a hang)."""
    from tfsem.backends import tensorflow as tfb
    from tfsem.checking import check_case
    from tfsem.oracle.jsonio import case_from_json
    case = case_from_json(CASE, where="case")
    v = check_case(case, timeout=60)
    assert v.verdict == "unsound"
    rep = tfb.replay_program(case.rewritten(), v.counterexample, observe=v.observe)
    assert rep.confirmed, rep.reason
    out = tfb.with_original(rep, case.original, v.counterexample, observe=v.observe,
                            deadline=time.monotonic())
    assert not out.confirmed and out.budget
    assert "during the replay of the original's witness schedules (0 of 1 replayed" in out.reason
    assert out.describe().startswith("not replayed on TensorFlow within the time budget: ")
    assert out.to_json()["original"]["agreed"] is None


def test_a_replay_that_did_not_confirm_is_left_as_it_is():
    """No TensorFlow run: the original's side is tried only after the
    rewritten program's confirmed."""
    from tfsem.backends import tensorflow as tfb
    rep = tfb.Replay(False, "the export refuses it: ...")
    assert tfb.with_original(rep, None, None) is rep and rep.original is None
    assert "original" not in rep.to_json()


def test_a_projected_original_outcome_is_compared_on_its_parts():
    """An original whose outcomes at σ are too many lists their projections
    onto the differing parts: TensorFlow's full outcome agrees with one
    where those parts are equal."""
    from tfsem.backends.tensorflow import agrees
    from tfsem.oracle.outcomes import Outcome
    from tfsem.oracle.values import Tensor
    import numpy as np

    def t(x):
        return Tensor(np.asarray(x, np.int32))
    full = Outcome((("a", t(1)), ("b", t(2))), (("x", t(3)),))
    assert agrees(full, full)
    assert agrees(full, Outcome((("b", t(2)),), None))
    assert not agrees(full, Outcome((("b", t(5)),), None))
    assert agrees(full, Outcome((), (("x", t(3)),)))
    assert not agrees(full, Outcome((("c", t(2)),), None))     # a part TensorFlow lacks
    assert not agrees(full, Outcome((("a", t(1)), ("b", t(2))), (("x", t(4)),)))


@needs_tf
def test_a_failed_run_of_the_original_agrees_only_with_an_error_output(capsys):
    """TensorFlow fails a run where tfsem's semantics carries an error value
    on.  Reading an uninitialized `x` into the output: the oracle's original
    gives `out = <uninitialized>` and TensorFlow fails the run, which agrees
    as far as a failed run can show (and says so).  Reading an uninitialized
    `y` into an Assign that the error makes a no-op: the oracle's original
    has no error output, TensorFlow fails all the same, and nothing is
    confirmed on TensorFlow."""
    cases = ROOT / "tests" / "cases"
    rc = main(["check", str(cases / "err_uninit_sub_self.json"), *TIMEOUT, "--json"])
    v = json.loads(capsys.readouterr().out)
    assert rc == 1 and v["verdict"] == "unsound"
    assert [o["outputs"]["out"] for o in v["counterexample"]["original_outcomes"]] == \
        [{"error": "uninitialized"}]
    rep = v["tensorflow_replay"]
    assert rep["confirmed"], rep["reason"]
    assert rep["original"]["failed_runs"] == 1 and rep["original"]["agreed"] is True
    assert "failed the run where the oracle's outcome has an error value (witness schedule: " \
           "output 'out')" in rep["reason"]
    rc = main(["check", str(cases / "err_assign_error_is_noop.json"), *TIMEOUT, "--json"])
    v = json.loads(capsys.readouterr().out)
    assert rc == 1 and v["verdict"] == "unsound"
    assert v["confirmed"] == ["oracle", "numpy"]
    rep = v["tensorflow_replay"]
    assert not rep["confirmed"] and rep["original"]["agreed"] is None
    assert rep["reason"].startswith("the original's witness schedule was not replayed "
                                    "(TensorFlow failed the run: FailedPrecondition")
    # the rewritten program's side gave the counterexample's outcome
    assert rep["outcome"] == v["counterexample"]["outcome"]
