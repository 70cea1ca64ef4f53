"""What `tfsem check`, `tfsem mlir` and `tfsem grappler` say when the time
budget stops the replay of an `unsound` verdict on TensorFlow: one path
(tfsem/commands/grappler.py `replay_in_budget`, `replay_cut`) for all
three, and each command's words the ones docs/budgets.md gives for it.

No TensorFlow needed: the replay is replaced by one that never looks at the
clock (as TensorFlow's import and its loading of a graph do not), and
TensorFlow is made to look installed where `tfsem check` asks."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import time
from pathlib import Path

import pytest

from tfsem.cli import EXIT_FOUND, main
from tfsem.commands import grappler as command

ROOT = Path(__file__).resolve().parent.parent
BUDGETS = ROOT / "docs" / "budgets.md"
CASE = ROOT / "tests" / "cases" / "pass_hoist_reads_atomic.json"
MLIR = ROOT / "examples" / "mlir"
TEXT = re.compile(r"\"(not replayed on TensorFlow within the time budget: [^\"]*?"
                  r"\(the verdict is the oracle's alone\))\"")


def _section(command_name: str) -> str:
    """The section of docs/budgets.md about `tfsem COMMAND`, its lines joined."""
    text = BUDGETS.read_text()
    start = text.index(f"## `tfsem {command_name} ")
    end = text.find("\n## ", start + 1)
    return " ".join(text[start:None if end < 0 else end].split())


def _any_budget(line: str) -> str:
    """`line` with the budget's seconds written as T (the docs' example is 1 s)."""
    return re.sub(r"the time budget of [0-9.]+ s", "the time budget of T s", line)


def documented_texts(command_name: str) -> set[str]:
    return {_any_budget(t) for t in TEXT.findall(_section(command_name))}


def test_the_documented_texts_are_found():
    """(The extraction itself: each command's section gives its words.)"""
    assert documented_texts("check") == {
        "not replayed on TensorFlow within the time budget: the time budget of T s ran out "
        "while TensorFlow was imported or ran the graph (the verdict is the oracle's alone)"}
    assert len(documented_texts("grappler")) == 1


@pytest.fixture
def stuck_replay(monkeypatch):
    """The replay on TensorFlow (of a program and of a graph) replaced by one
    that takes 5 s and looks at no clock; TensorFlow looks installed."""
    from tfsem.backends import tensorflow as tfb
    calls = []

    def stuck(*a, **k):
        calls.append(k.get("deadline"))
        time.sleep(5.0)
        return tfb.Replay(True, "confirmed, too late", k.get("label", ""))

    monkeypatch.setattr(tfb, "replay_program", stuck)
    monkeypatch.setattr(tfb, "replay_graph", stuck)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: real("json") if name == "tensorflow"
                        else real(name, *a, **k))
    return calls


def test_check_says_what_its_docs_say(stuck_replay, capsys):
    main(["check", str(CASE), "--timeout", "30", "--no-tensorflow", "--json"])  # (warm)
    capsys.readouterr()
    t = time.monotonic()
    rc = main(["check", str(CASE), "--timeout", "2"])
    assert time.monotonic() - t < 2 + 0.5
    out = capsys.readouterr().out
    assert rc == EXIT_FOUND and out.startswith("unsound")
    line = next(ln.strip() for ln in out.splitlines() if "not replayed" in ln)
    assert _any_budget(line) in documented_texts("check"), line
    assert "of 2 s" in line and stuck_replay
    rc = main(["check", str(CASE), "--timeout", "2", "--json"])
    rep = json.loads(capsys.readouterr().out)["tensorflow_replay"]
    assert rep["status"] == "not-replayed" and rep["budget"] is True and not rep["confirmed"]
    assert _any_budget(rep["text"]) in documented_texts("check")


def _unsound_verdict():
    from tfsem.checking import check_case
    from tfsem.oracle.jsonio import load_case
    v = check_case(load_case(CASE), timeout=30)
    assert v.verdict == "unsound" and v.counterexample is not None
    return v


def test_checks_watchdog_says_what_the_replay_would(stuck_replay, capsys):
    """The watchdog, writing the report while the replay runs, says what
    the replay says when TensorFlow outlasts its budget; where no replay
    was to run (--no-tensorflow), it says nothing of TensorFlow."""
    from tfsem.commands.check import watchdog_report
    args = argparse.Namespace(timeout=2.0, json=True, html=None, tensorflow=True,
                              semantics="atomic", observe="outputs+state", float_mode="exact")
    progress = {"stage": "the replay on TensorFlow", "verdict": _unsound_verdict()}
    assert watchdog_report(args, progress, False) == EXIT_FOUND
    data = json.loads(capsys.readouterr().out)
    replay = command.replay_json(command.replay_cut("the time budget of 2 s"))
    assert data["tensorflow_replay"] == json.loads(json.dumps(replay))
    assert _any_budget(replay["text"]) in documented_texts("check")
    args.tensorflow = False
    watchdog_report(args, progress, False)
    assert "tensorflow_replay" not in json.loads(capsys.readouterr().out)


def test_mlir_says_what_its_docs_say(stuck_replay, monkeypatch, capsys):
    from tfsem.graphdef import mlir_tf

    def run_pipeline(pipeline, *, mlir_text=None, timeout=300.0, **kw):
        return mlir_tf.PipelineRun("ok", input_text=mlir_text,
                                   output_text=(MLIR / "cluster_store_load.broken-up.mlir")
                                   .read_text(), seconds=0.01)

    monkeypatch.setattr(mlir_tf, "run_pipeline", run_pipeline)
    argv = ["mlir", str(MLIR / "cluster_store_load.mlir"), "--pipeline", "p",
            "--semantics", "atomic", "--json"]
    main([*argv, "--timeout", "30", "--no-replay"])     # (warm)
    capsys.readouterr()
    assert main([*argv, "--timeout", "1"]) == EXIT_FOUND
    v = json.loads(capsys.readouterr().out)["verdicts"]["atomic"]
    rep = v["tensorflow_replay"]
    assert rep["budget"] is True and rep["status"] == "not-replayed"
    # the docs give its JSON reason, and the text around any reason
    section = _section("mlir")
    reason = re.search(r'"reason": "([^"]*)"', section).group(1)
    assert _any_budget(rep["reason"]) == _any_budget(reason)
    assert rep["text"] == ("not replayed on TensorFlow within the time budget: "
                           f"{rep['reason']} (the verdict is the oracle's alone)")
    assert v["text"].endswith(rep["text"])


def test_grappler_says_what_its_docs_say(stuck_replay, monkeypatch):
    """TensorFlow was imported before Grappler ran: the replay's cut says
    it was loading or running the graph, and whose budget ran out (the
    optimizer's part).  Grappler is replaced by the dependency optimizer's
    bug (test_grappler_command_budget.py's stand-ins)."""
    from test_grappler_command_budget import FETCHES, FakeResult, _counter

    from tfsem.commands.common import Deadline
    from tfsem.graphdef import grappler as g
    monkeypatch.setattr(g, "run_grappler", lambda graph_def, fetches, name, place=False:
                        FakeResult(name, _counter(drop_control_edge=True), 0.0))
    command.validate(_counter(), FETCHES, [], ["dependency"], where="counter",
                     timeout=30.0, real=False)       # (warm: the checker's imports)
    rows = command.validate(_counter(), FETCHES, [], ["dependency"], where="counter",
                            timeout=2.0, deadline=Deadline(2.0),
                            reserve=command.report_reserve(2.0))
    row = rows[0]
    assert row["verdict"]["verdict"] == "unsound"
    rep = row["tensorflow_replay"]
    assert rep["budget"] is True and not rep["confirmed"]
    assert rep["text"] in documented_texts("grappler"), rep["text"]
    assert row["text"].endswith(rep["text"])


@pytest.mark.parametrize("during", [command.DURING_IMPORT, command.DURING_LOAD])
def test_a_replay_not_started_says_so_and_one_cut_says_where(during):
    """The budget's two cuts, for every command: before the replay (less
    than MIN_STAGE left: the replay is not called) and while TensorFlow
    held it (left behind)."""
    called = []
    rep = command.replay_in_budget(lambda: called.append(1), time.monotonic(), "B", "g", during)
    assert not called and rep.budget and rep.graph == "g"
    assert rep.describe() == ("not replayed on TensorFlow within the time budget: B ran out "
                              "before the replay started (the verdict is the oracle's alone)")
    rep = command.replay_in_budget(lambda: time.sleep(2.0), time.monotonic() + 0.2, "B", "g",
                                   during)
    assert rep.budget and rep.reason == f"B ran out while {during}"
