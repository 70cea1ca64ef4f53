"""`tfsem grappler` judges a verdict against Grappler's claim: σ with every
variable initialized (tfsem/commands/grappler.py `within_claim`).  No
TensorFlow needed: the programs are the stored constant-folding case."""

import json
from pathlib import Path

from tfsem.checking import check_rewrite
from tfsem.commands.grappler import within_claim
from tfsem.oracle.jsonio import program_from_json

CASE = Path(__file__).parent / "cases" / "tensorflow" / "grappler_constfold_uninitialized_read.json"


def _programs(rewritten_value=0):
    case = json.loads(CASE.read_text())
    rew = json.loads(json.dumps(case["rewritten"]))
    for node in rew["nodes"]:
        if node["name"] == "out0":
            node["value"] = rewritten_value
    return program_from_json(case["original"]), program_from_json(rew)


def test_a_difference_only_where_a_variable_is_uninitialized_is_no_counterexample():
    p, p2 = _programs()
    verdict = check_rewrite(p, p2, "atomic", "outputs+state", timeout=10)
    # tfsem's own semantics: unsound, at a σ that leaves x0 uninitialized
    assert verdict.verdict == "unsound"
    judged = within_claim(p, p2, verdict, "atomic", "outputs+state", 5.0)
    assert judged.verdict == "no-counterexample"
    assert "'x0' uninitialized" in judged.reason and "TensorFlow fails" in judged.reason
    assert judged.stats["uninitialized_difference"]["verdict"] == "unsound"
    assert judged.exit_status == 0


def test_a_difference_that_stays_with_every_variable_initialized_is_unsound_there():
    p, p2 = _programs()
    verdict = check_rewrite(p, p2, "atomic", "outputs+state", timeout=10)
    assert getattr(verdict.counterexample.init.get("x0"), "reason", "missing") is not None
    # the same counterexample against a rewrite that folds to 1 instead of
    # ZerosLike's 0: with x0 initialized (zeros) the outputs still differ
    _, wrong = _programs(rewritten_value=1)
    judged = within_claim(p, wrong, verdict, "atomic", "outputs+state", 5.0)
    assert judged.verdict == "unsound"
    assert getattr(judged.counterexample.init["x0"], "reason", None) is None
    assert judged.confirmed == ["oracle"]
    assert judged.differs == {"output": "out0"}
    assert "'x0' uninitialized" in judged.reason


def test_other_verdicts_are_returned_as_they_are():
    p, _ = _programs()
    verdict = check_rewrite(p, p, "atomic", "outputs+state", timeout=10)
    assert verdict.verdict == "sound"
    assert within_claim(p, p, verdict, "atomic", "outputs+state", 5.0) is verdict
