"""`tfsem run --backend tensorflow|xla --timeout T`: one budget for the whole
command (tfsem/commands/run.py run_backend, docs/budgets.md).  No
TensorFlow: its import, its loading of the graph and its runs are replaced
by slow stand-ins (monkeypatch), each forced past the budget, and the
command ends in time, `unknown` (exit 3), saying what it made."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tfsem.cli import EXIT_BAD_INPUT, EXIT_UNKNOWN, main

PROGRAM = Path(__file__).resolve().parent.parent / "examples" / "load_store.json"


class FakeGraphDef:
    """What the command reads of a TensorFlow GraphDef: its bytes."""

    def __init__(self, data: bytes):
        self.data = data

    def SerializeToString(self) -> bytes:  # noqa: N802 (protobuf's name)
        return self.data


@pytest.fixture
def fake_tensorflow(monkeypatch):
    """TensorFlow replaced: `import_sleep` for its import, `load_sleep` for
    loading the graph, `run_sleep` for each run (which gives one of the
    oracle's outcomes; it honours its deadline as RunOptions.timeout_in_ms
    does)."""
    from tfsem.backends import tensorflow as tfb
    from tfsem.graphdef import grappler as g
    from tfsem.oracle.dispatch import outcome_set
    setting = {"import_sleep": 0.0, "load_sleep": 0.0, "run_sleep": 0.0, "runs": 0}

    class Runner:
        def __init__(self, graph_def, outputs, targets=(), *, mode="tensorflow",
                     inter_op_threads=1, observe="outputs+state"):
            time.sleep(setting["load_sleep"])
            from tfsem.commands.grappler import _import
            self.program = _import(graph_def, list(outputs), list(targets), "fake")
            self.observe = observe

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def run_once(self, feeds, init, deadline=None):
            if deadline is not None and time.monotonic() + setting["run_sleep"] > deadline:
                time.sleep(max(0.0, deadline - time.monotonic()))
                raise tfb.ReplayTimeout("the time budget ran out during TensorFlow's run")
            time.sleep(setting["run_sleep"])
            setting["runs"] += 1
            return next(iter(outcome_set(self.program, feeds, init, "atomic", self.observe)))

    monkeypatch.setattr(tfb, "tensorflow", lambda: time.sleep(setting["import_sleep"]))
    monkeypatch.setattr(g, "as_graph_def", FakeGraphDef)
    monkeypatch.setattr(tfb, "GraphRunner", Runner)
    return setting


def _run(capsys, *argv):
    capsys.readouterr()
    t = time.monotonic()
    rc = main(["run", str(PROGRAM), "--backend", "tensorflow", "--json", *argv])
    return rc, json.loads(capsys.readouterr().out), time.monotonic() - t


def test_runs_past_the_budget_are_not_started_and_the_report_says_so(fake_tensorflow, capsys):
    rc, full, _ = _run(capsys, "--runs", "3", "--timeout", "20")
    assert rc == 0 and full["runs"] == 3 and full["findings"] == 0 and "budget" not in full
    fake_tensorflow["run_sleep"] = 0.1
    rc, data, seconds = _run(capsys, "--runs", "100", "--timeout", "0.6")
    assert seconds < 0.6 + 0.3
    assert rc == EXIT_UNKNOWN and data["budget"] is True and 0 < data["runs"] < 100
    assert data["reason"].startswith(f"the time budget of 0.6 s ran out during run "
                                     f"{data['runs'] + 1} of 100")
    assert data["outcomes"][0]["runs"] == data["runs"] and data["findings"] == 0
    # (the oracle's set comes first: every run made is judged)
    assert data["outcomes"][0]["in_oracle"] is True and data["oracle_count"] == full["oracle_count"]


@pytest.mark.parametrize("stage", ["import_sleep", "load_sleep"])
def test_tensorflow_past_the_budget_is_left_behind(fake_tensorflow, capsys, stage):
    fake_tensorflow[stage] = 2.0
    rc, data, seconds = _run(capsys, "--timeout", "0.6")
    assert seconds < 0.6 + 0.3
    assert rc == EXIT_UNKNOWN and data["verdict"] == "unknown" and data["budget"] is True
    what = "TensorFlow was imported" if stage == "import_sleep" else "TensorFlow loaded the graph"
    assert data["reason"] == f"the time budget of 0.6 s ran out while {what}: no run"
    assert fake_tensorflow["runs"] == 0


def test_numpy_runs_take_no_budget(capsys):
    assert main(["run", str(PROGRAM), "--backend", "numpy", "--timeout", "5"]) == EXIT_BAD_INPUT
    assert "--timeout applies to --backend tensorflow or xla" in capsys.readouterr().err


def test_a_session_s_trials_past_the_budget_are_left_behind(fake_tensorflow, monkeypatch,
                                                             capsys):
    """`tfsem run SESSION --backend tensorflow`: the trials (concurrent
    Session.run calls) as a whole are left behind when they outlast the
    budget: `unknown`, no outcome reported."""
    from tfsem.backends import tensorflow_sessions
    session = PROGRAM.parent / "sessions" / "counter_one_step.session.json"

    def stuck(*args, **kwargs):
        time.sleep(2.0)
        return {}, 0

    monkeypatch.setattr(tensorflow_sessions, "run_session_threads", stuck)
    capsys.readouterr()
    t = time.monotonic()
    rc = main(["run", str(session), "--backend", "tensorflow", "--json", "--init", "x=0",
               "--timeout", "0.6"])
    assert time.monotonic() - t < 0.6 + 0.3
    data = json.loads(capsys.readouterr().out)
    assert rc == EXIT_UNKNOWN and data["budget"] is True
    assert data["reason"] == ("the time budget of 0.6 s ran out during the 100 trials on "
                              "TensorFlow, which were left behind: no outcome reported")
