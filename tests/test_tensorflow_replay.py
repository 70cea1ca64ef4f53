"""`tfsem check` replays every `unsound` verdict's counterexample on
TensorFlow's executor (backends/tensorflow.py `replay_program`,
`replay_graph`): the rewritten program exported (or the rewritten graph
itself), the counterexample's schedule forced with control edges, run from
its σ.  "tensorflow" joins `confirmed` only when TensorFlow gave the
counterexample's outcome; a replay that cannot run says why and never
changes the verdict.

The tests that run TensorFlow skip, saying so, where it is not installed;
the ones about its absence run everywhere (TensorFlow's absence is simulated
where it is installed).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tfsem.cli import main

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "cases"
HAVE_TF = importlib.util.find_spec("tensorflow") is not None
needs_tf = pytest.mark.skipif(not HAVE_TF, reason="needs the extra tfsem[tensorflow] "
                              "(tensorflow-cpu): not installed here")

# two increments of x ordered by a control edge, and the rewrite that drops
# it: sound in the atomic semantics, a lost update in the decomposed one
_INCREMENTS = [{"name": "v1", "op": "Var", "var": "x"}, {"name": "one", "op": "Const", "value": 1},
               {"name": "a1", "op": "Assign", "fn": "Add", "inputs": ["v1", "one"]},
               {"name": "v2", "op": "Var", "var": "x"}, {"name": "two", "op": "Const", "value": 2},
               {"name": "a2", "op": "Assign", "fn": "Add", "inputs": ["v2", "two", "^a1"]}]
LOST_UPDATE = {
    "format": "tfsem.case/1", "semantics": "decomposed", "observe": "outputs+state",
    "expect": "unsound", "note": "dropping the control edge between two Assign-Adds loses one",
    "original": {"format": "tfsem.program/1", "variables": ["x"], "nodes": _INCREMENTS,
                 "outputs": {}},
    "rewritten": {"format": "tfsem.program/1", "variables": ["x"],
                  "nodes": [dict(n, inputs=[i for i in n.get("inputs", []) if i != "^a1"])
                            if n["name"] == "a2" else n for n in _INCREMENTS],
                  "outputs": {}},
}


#: `check`'s budget covers the replay and TensorFlow's import (docs/budgets.md):
#: one that lets the import finish on a loaded machine
TIMEOUT = ["--timeout", "120"]


def check_json(capsys, *argv: str) -> tuple[int, dict]:
    rc = main(["check", *argv, *TIMEOUT, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def check_text(capsys, *argv: str) -> tuple[int, str]:
    rc = main(["check", *argv, *TIMEOUT])
    return rc, capsys.readouterr().out


# --- with TensorFlow ---------------------------------------------------------------

@needs_tf
@pytest.mark.parametrize("case", ["pass_cse_ignore_control", "pass_hoist_reads_atomic",
                                  "pass_prune_outputs_state",
                                  "seed002_load_store_hoist_reads_decomposed"])
def test_unsound_case_is_replayed_and_confirmed_on_tensorflow(capsys, case):
    path = str(CASES / f"{case}.json")
    rc, v = check_json(capsys, path)
    assert rc == 1 and v["verdict"] == "unsound"
    assert v["confirmed"] == ["oracle", "numpy", "tensorflow"]
    rep = v["tensorflow_replay"]
    assert rep["status"] == "confirmed" and rep["confirmed"]
    cx = v["counterexample"]
    # what TensorFlow's runner returned is the counterexample's outcome, which
    # none of the original's outcomes is
    assert rep["outcome"] == cx["outcome"]
    assert all({k: o[k] for k in rep["outcome"]} != rep["outcome"]
               for o in cx["original_outcomes"])
    # every node of the rewritten program was forced, in the schedule's order
    # (the export renames a node called like an output: r0 -> r0_1)
    steps = [s.partition("@")[0] for s in cx["schedule"] if not s.endswith("@read")]
    assert len(steps) == len(rep["forced_schedule"])
    assert all(f == s or f.startswith(f"{s}_") for s, f in zip(steps, rep["forced_schedule"]))
    rc, text = check_text(capsys, path)
    assert rc == 1
    assert "  confirmed on: oracle, numpy, tensorflow\n" in text
    assert "not replayed" not in text
    # the verdict and the programs first; the replay announced, then its result
    lines = text.splitlines()
    announced = lines.index("  replaying the counterexample on TensorFlow (--no-tensorflow skips this) ...")
    assert lines[0].startswith("unsound") and "  confirmed on: oracle, numpy" in lines[:announced]
    assert any(ln.startswith("  rewritten program") for ln in lines[:announced])
    assert lines[announced + 1].startswith("  TensorFlow ")


@needs_tf
def test_export_refused_is_not_replayed_and_stays_unsound(capsys):
    """Seed 000's figure 1 stores with Assign-Concat, which has no TensorFlow op."""
    path = str(CASES / "seed000_figure1_concat_forward_store.json")
    rc, text = check_text(capsys, path)
    assert rc == 1 and text.startswith("unsound")
    assert "  confirmed on: oracle, numpy\n" in text
    line = next(ln for ln in text.splitlines() if "not replayed" in ln)
    assert line.startswith("  not replayed on TensorFlow: the export refuses it: node 'assign0'")
    assert "Assign-Concat" in line
    rc, v = check_json(capsys, path)
    assert rc == 1 and v["verdict"] == "unsound" and v["confirmed"] == ["oracle", "numpy"]
    assert v["tensorflow_replay"]["status"] == "not-replayed"
    assert v["tensorflow_replay"]["outcome"] is None


@needs_tf
def test_decomposed_lost_update_is_forced_with_split_assigns(tmp_path, capsys):
    """TensorFlow runs an AssignAddVariableOp under the variable's lock; the
    lost update needs both reads before both writes, so both Assigns are
    exported as read / compute / write nodes, and the reads are forced first."""
    path = tmp_path / "lost.json"
    path.write_text(json.dumps(LOST_UPDATE))
    rc, v = check_json(capsys, str(path))
    assert rc == 1 and v["verdict"] == "unsound"
    rep = v["tensorflow_replay"]
    assert rep["confirmed"], rep["reason"]
    assert "tensorflow" in v["confirmed"]
    assert rep["split_assigns"] == ["a1", "a2"]
    order = rep["forced_schedule"]
    assert max(order.index("a1/read"), order.index("a2/read")) < min(order.index("a1"),
                                                                     order.index("a2"))
    init = v["counterexample"]["init"]["x"]
    assert rep["outcome"]["state"]["x"] in (init + 1, init + 2)     # one update lost
    assert v["counterexample"]["original_outcomes"][0]["state"]["x"] == init + 3


@needs_tf
def test_graph_input_decomposed_schedule_is_not_replayed(tmp_path, capsys):
    """A given graph is replayed as it is: a schedule that runs steps between
    an Assign-Add's read and write cannot be forced there, and says so."""
    from tfsem.graphdef.exporter import export_text
    from tfsem.oracle.jsonio import case_from_json
    case = case_from_json(LOST_UPDATE, where="lost")
    (tmp_path / "orig.json").write_text(json.dumps(LOST_UPDATE["original"]))
    (tmp_path / "rw.pbtxt").write_text(export_text(case.rewritten()))
    rc, text = check_text(capsys, str(tmp_path / "orig.json"), str(tmp_path / "rw.pbtxt"),
                          "--semantics", "decomposed")
    assert rc == 1 and text.startswith("unsound")
    assert "  confirmed on: oracle, numpy\n" in text
    assert "not replayed on TensorFlow: decomposed schedule" in text
    assert "Assign-Add 'a1'" in text


@needs_tf
def test_graph_input_replays_the_graph_itself(tmp_path, capsys):
    """The counter with the control edge ^increment dropped from `read`."""
    corpus = ROOT / "examples" / "tensorflow" / "counter.pbtxt"
    broken = tmp_path / "counter_broken.pbtxt"
    text = corpus.read_text()
    assert text.count('input: "^increment"') == 1
    broken.write_text(text.replace('input: "^increment"', ""))
    rc, v = check_json(capsys, str(corpus), str(broken), "--fetch", "value")
    assert rc == 1 and v["verdict"] == "unsound"
    rep = v["tensorflow_replay"]
    assert rep["confirmed"], rep["reason"]
    assert rep["graph"] == f"the graph {broken}"
    assert rep["outcome"]["outputs"]["value"] == v["counterexample"]["init"]["counter"]


@needs_tf
def test_uninitialized_variable_is_not_replayed():
    """TensorFlow fails reading an uninitialized variable, where tfsem's
    semantics gives the error value: no outcome to compare, the replay says
    so and names the node."""
    from tfsem.backends.tensorflow import replay_program
    from tfsem.checking.verdict import Counterexample
    from tfsem.oracle.jsonio import program_from_json
    from tfsem.oracle.outcomes import make_outcome
    from tfsem.oracle.values import Error
    p = program_from_json({"format": "tfsem.program/1", "variables": ["x"],
                           "nodes": [{"name": "vx", "op": "Var", "var": "x"},
                                     {"name": "r", "op": "Read", "inputs": ["vx"]}],
                           "outputs": {"out": "r"}})
    u = Error("uninitialized")
    cx = Counterexample({}, {"x": u}, ["vx", "r"],
                        make_outcome({"out": u}, {"x": u}, "outputs+state"), [], 0)
    rep = replay_program(p, cx)
    assert not rep.confirmed and rep.outcome is None
    assert rep.reason.startswith("TensorFlow failed the run: FailedPrecondition")
    assert "'r'" in rep.reason
    assert rep.describe().startswith("not replayed on TensorFlow: ")


@needs_tf
def test_html_page_shows_the_replay(tmp_path, capsys):
    page = tmp_path / "v.html"
    main(["check", str(CASES / "seed000_figure1_concat_forward_store.json"), *TIMEOUT,
          "--html", str(page)])
    capsys.readouterr()
    html = page.read_text()
    assert 'data-backend="tensorflow"' in html
    assert "not replayed on TensorFlow: the export refuses it" in html
    main(["check", str(CASES / "pass_cse_ignore_control.json"), *TIMEOUT, "--html", str(page)])
    capsys.readouterr()
    assert "reproduced on TensorFlow&#x27;s executor" in page.read_text() or \
        "reproduced on TensorFlow's executor" in page.read_text()


# --- without TensorFlow, or without the replay ------------------------------------------

def test_no_tensorflow_flag_skips_the_replay(capsys):
    path = str(CASES / "pass_cse_ignore_control.json")
    rc, text = check_text(capsys, path, "--no-tensorflow")
    assert rc == 1 and text.startswith("unsound")
    assert "tensorflow" not in text.lower()
    rc, v = check_json(capsys, path, "--no-tensorflow")
    assert v["confirmed"] == ["oracle", "numpy"]
    assert v["tensorflow_replay"] == {"status": "skipped", "confirmed": False,
                                      "reason": "--no-tensorflow"}


def test_without_tensorflow_no_line_and_no_import(capsys, monkeypatch):
    """Where TensorFlow is not installed (simulated where it is), an unsound
    verdict has no TensorFlow line and TensorFlow is not imported."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "tensorflow" else real(name, *a, **k))
    before = "tensorflow" in sys.modules
    path = str(CASES / "pass_hoist_reads_atomic.json")
    rc, text = check_text(capsys, path)
    assert rc == 1 and text.startswith("unsound")
    assert "tensorflow" not in text.lower()
    assert "  confirmed on: oracle, numpy\n" in text
    rc, v = check_json(capsys, path)
    assert v["tensorflow_replay"]["status"] == "skipped"
    assert "not installed" in v["tensorflow_replay"]["reason"]
    assert ("tensorflow" in sys.modules) == before
    if not HAVE_TF:
        assert "tensorflow" not in sys.modules


@pytest.mark.parametrize("argv", [["pass_cse.json"],                      # sound
                                  ["pass_cse_ignore_control.json", "--no-tensorflow"]])
def test_tensorflow_is_imported_only_to_replay(argv):
    """A fresh process: checking a sound rewrite, or an unsound one with
    --no-tensorflow, never imports TensorFlow (it costs seconds)."""
    script = ("import sys; from tfsem.cli import main; "
              f"rc = main(['check', {str(CASES / argv[0])!r}, *{argv[1:]!r}]); "
              "print('TF-IMPORTED' if 'tensorflow' in sys.modules else 'TF-ABSENT', rc)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert out.stdout.strip().splitlines()[-1] in ("TF-ABSENT 0", "TF-ABSENT 1"), out.stderr[-2000:]


# --- differential: every "confirmed" really is the counterexample's outcome ---------------

def _drop_control_edges(p):
    """Each program of p with one control edge between nodes removed."""
    from tfsem.oracle.jsonio import program_from_json, program_to_json
    j = program_to_json(p)
    for k, n in enumerate(j["nodes"]):
        for c in [i for i in n.get("inputs", []) if i.startswith("^") and not i.startswith("^$")]:
            j2 = program_to_json(p)
            j2["nodes"][k]["inputs"] = [i for i in n["inputs"] if i != c]
            yield program_from_json(j2)


@needs_tf
@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
def test_differential_confirmed_replays_gave_the_counterexample_outcome(semantics):
    """Generated programs with the first control edge whose loss is unsound
    dropped (a few dozen unsound findings per semantics): every replay that
    says confirmed returned the counterexample's outcome from TensorFlow's
    runner, and the oracle, asked afresh, does not allow that outcome for the
    original at σ; every replay that is not confirmed was refused by the
    export, or failed on TensorFlow because σ leaves a variable uninitialized
    (on these int64 programs TensorFlow never computes differently)."""
    from tfsem.backends.tensorflow import replay_program
    from tfsem.checking import check_rewrite
    from tfsem.generators.strategies import random_programs
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.values import Error

    ops = frozenset(["Read", "Write", "AssignAdd", "AssignSub", "Add", "Sub", "Const", "Neg",
                     "Mul"])
    confirmed = split = refused = 0
    for p in random_programs(240, seed=5, max_nodes=10, n_variables=2, ops=ops,
                             control_density=0.7):
        for p2 in _drop_control_edges(p):
            v = check_rewrite(p, p2, semantics, "outputs+state", timeout=5)
            if v.verdict == "unsound":
                break
        else:
            continue
        cx = v.counterexample
        rep = replay_program(p2, cx, observe=v.observe)
        if not rep.confirmed:
            uninit = any(isinstance(x, Error) for x in cx.init.values())
            assert rep.reason.startswith("the export refuses it: ") or (
                uninit and rep.reason.startswith("TensorFlow failed the run: ")
                and "uninitialized" in rep.reason), rep.reason
            refused += 1
            continue
        confirmed += 1
        split += bool(rep.split)
        assert rep.outcome == cx.outcome
        allowed = outcome_set(p, cx.feeds, cx.init, semantics, v.observe)
        assert rep.outcome not in allowed
    assert confirmed >= 30, (confirmed, refused)
    if semantics == "decomposed":
        assert split >= 3, split          # some needed an Assign exported as read/write


@needs_tf
def test_a_replay_whose_deadline_passes_before_the_run_is_cut_and_says_so(monkeypatch):
    """The deadline reaches TensorFlow's run (RunOptions.timeout_in_ms) and
    is looked at before it: a replay cut there is `budget`, never confirmed."""
    import time

    from tfsem.backends import tensorflow as tfb
    from tfsem.checking import check_case
    from tfsem.oracle.jsonio import case_from_json, read_json_file
    path = CASES / "pass_cse_ignore_control.json"
    case = case_from_json(read_json_file(str(path)), where=str(path))
    verdict = check_case(case, timeout=10.0)
    p, cx = case.rewritten(), verdict.counterexample
    assert tfb.replay_program(p, cx, deadline=time.monotonic() + 120).confirmed
    real_run = tfb.GraphRunner.run_once

    def late(self, feeds, init, deadline=None):      # the graph loaded past the deadline
        return real_run(self, feeds, init, deadline=time.monotonic() - 1)

    monkeypatch.setattr(tfb.GraphRunner, "run_once", late)
    rep = tfb.replay_program(p, cx, deadline=time.monotonic() + 120)
    assert rep.budget and not rep.confirmed and rep.outcome is None
    assert rep.reason == "the time budget ran out before TensorFlow's run"
