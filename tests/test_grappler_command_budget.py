"""`tfsem grappler --timeout T`: one budget for the whole command, every stage
taking its share (tfsem/commands/grappler.py, docs/budgets.md).

No TensorFlow here: Grappler, the replay and the checks are replaced by slow
stand-ins (monkeypatch) around the real command's code, so each test forces
one stage past its share and checks that the command still ends in time
and says truthfully what was cut.  The graphs are tfsem's own GraphDef
encoding of examples/tensorflow/counter.pbtxt (graphdef.proto), which the
command imports as it imports a TensorFlow GraphDef."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import settings

from tfsem.cli import EXIT_FOUND, EXIT_OK, EXIT_UNKNOWN
from tfsem.commands import common
from tfsem.commands import grappler as command
from tfsem.commands.common import Deadline, dumps_within
from tfsem.oracle.jsonio import dumps

COUNTER = Path(__file__).resolve().parent.parent / "examples" / "tensorflow" / "counter.pbtxt"
FETCHES = ["value"]


class FakeGraphDef:
    """What the command reads of a TensorFlow GraphDef: its bytes and nodes."""

    def __init__(self, graph: dict):
        from tfsem.graphdef.proto import encode
        self.graph = graph
        self.data = encode("GraphDef", graph)
        self.node = [type("Node", (), {"name": n["name"]})() for n in graph["node"]]

    def SerializeToString(self) -> bytes:  # noqa: N802 (protobuf's name)
        return self.data


def _counter(drop_control_edge: bool = False) -> FakeGraphDef:
    from tfsem.graphdef.proto import parse_text
    graph = parse_text("tensorflow.GraphDef", COUNTER.read_text())
    if drop_control_edge:   # the dependency-optimizer bug of examples/tensorflow/manifest.json
        for n in graph["node"]:
            n["input"] = [i for i in n.get("input", []) if not i.startswith("^")]
    return FakeGraphDef(graph)


class FakeResult:
    """A GrapplerResult's part the command reads."""

    def __init__(self, name: str, graph_def: FakeGraphDef, seconds: float):
        self.optimizer, self.graph_def, self.seconds = name, graph_def, seconds

    def to_json(self) -> dict:
        return {"optimizer": self.optimizer, "seconds": self.seconds, "nodes_before": 9,
                "nodes_after": 9, "function_nodes_before": 0, "function_nodes_after": 0,
                "changed": True, "graph": {"added": [], "removed": [], "changed": ["read"]},
                "functions": {}, "functions_added": [], "functions_removed": []}


@pytest.fixture(scope="module", autouse=True)
def warm():
    """The checker's and the importer's modules imported before any test's
    clock starts (their first import, z3's included, takes seconds)."""
    import tfsem.backends.tensorflow  # noqa: F401
    from tfsem.checking import check_rewrite
    p = command._import(_counter(), FETCHES, [], "counter")
    check_rewrite(p, command._import(_counter(True), FETCHES, [], "counter"), "atomic",
                  "outputs+state", timeout=10.0)


@pytest.fixture
def grappler(monkeypatch):
    """Replace Grappler: each optimizer's result is the counter with its
    control edge dropped (`unsound`) or as it is (`sound`), after `sleep`
    seconds.  Returns the settings dict the test changes."""
    from tfsem.graphdef import grappler as g
    setting = {"sleep": 0.0, "broken": True, "ran": []}

    def run_grappler(graph_def, fetches, name, place=False):
        setting["ran"].append(name)
        time.sleep(setting["sleep"])
        return FakeResult(name, _counter(drop_control_edge=setting["broken"]), setting["sleep"])

    monkeypatch.setattr(g, "run_grappler", run_grappler)
    return setting


@pytest.fixture
def no_replay(monkeypatch):
    """The replay on TensorFlow replaced: it waits until its deadline, then
    says it was cut (what backends/tensorflow.py does past a deadline)."""
    from tfsem.backends import tensorflow as tfb
    seen = []

    def replay_graph(graph, p, cx, *, targets=(), observe="outputs+state", mode="tensorflow",
                     label="the rewritten graph", deadline=None, captures=None):
        seen.append(deadline)
        assert deadline is not None, "the replay was given no deadline"
        time.sleep(max(0.0, deadline - time.monotonic()))
        return tfb.Replay(False, "the time budget ran out before TensorFlow loaded the graph",
                          label, budget=True)

    monkeypatch.setattr(tfb, "replay_graph", replay_graph)
    return seen


def _validate(optimizers, seconds, **kw):
    deadline = Deadline(seconds)
    reserve = command.report_reserve(seconds)
    t = time.monotonic()
    rows = command.validate(_counter(), FETCHES, [], optimizers, where="counter",
                            timeout=seconds, deadline=deadline, reserve=reserve, **kw)
    return rows, time.monotonic() - t, deadline


# --- the clock and the report's writing -----------------------------------------------

def test_deadline_shares_what_is_left():
    d = Deadline(10.0)
    part = d.share(4, reserve=2.0)
    assert 1.9 < part.left() <= 2.0
    assert d.within(100.0).at == d.at           # never past the whole budget
    assert Deadline(0.001, started=time.monotonic() - 1).expired()


def test_the_process_start_is_before_now():
    started = common.process_started()
    if started is None:
        pytest.skip("no /proc on this system")
    assert started <= time.monotonic()
    assert Deadline.of_process(5.0).elapsed() >= 0


def test_dumps_within_writes_what_jsonio_writes_or_nothing():
    obj = {"a": [1, 2.5, {"b": "ß"}], "c": None, "n": list(range(2000))}
    assert dumps_within(obj, Deadline(60.0)) == dumps(obj)
    assert dumps_within(obj, Deadline(0.001, started=time.monotonic() - 1)) is None
    with pytest.raises(ValueError):
        dumps_within({"x": float("nan")}, None)    # strict JSON, as jsonio.dumps


def test_json_report_in_time_is_jsonio_and_out_of_time_keeps_the_verdicts():
    rows = [{"optimizer": o, "status": "checked", "check_seconds": 1.0,
             "verdict": {"verdict": v, "reason": "why",
                         "counterexample": {"big": list(range(5000))}},
             "text": "x"} for o, v in (("constfold", "sound"), ("default", "unsound"))]
    head = {"graph": "g.pb", "budget": {"seconds": 10}}
    full = command.json_report(head, [dict(r) for r in rows], Deadline(60.0))
    assert full == dumps(dict(head, report_cut=0,
                              results=[{k: v for k, v in r.items() if k != "text"}
                                       for r in rows]))
    cut = json.loads(command.json_report(head, [dict(r) for r in rows],
                                         Deadline(0.001, started=time.monotonic() - 1)))
    assert cut["report_cut"] == 2
    assert [r["verdict"]["verdict"] for r in cut["results"]] == ["sound", "unsound"]
    assert all("counterexample" not in r["verdict"] and "budget ran out" in r["report_cut"]
               for r in cut["results"])
    empty = json.loads(command.json_report(head, [], Deadline(1.0)))
    assert empty["results"] == [] and empty["report_cut"] == 0


def test_text_report_past_the_deadline_says_what_it_left_out():
    row = {"optimizer": "default", "status": "checked", "changed": False, "nodes_before": 9,
           "text": "unsound: final value of variable 'counter' differs\n  reason: r\n  feeds: x"}
    lines = command.text_report([row], Deadline(0.001, started=time.monotonic() - 1))
    assert lines[0] == "  default: unsound: final value of variable 'counter' differs"
    assert "left out" in lines[1] and len(lines) == 2
    assert len(command.text_report([row], Deadline(60.0))) == 4


# --- each stage past its share -----------------------------------------------------------

def test_a_slow_grappler_leaves_the_later_optimizers_out_of_budget(grappler):
    grappler.update(sleep=0.4, broken=False)
    optimizers = ["pruning", "constfold", "arithmetic", "default"]
    rows, seconds, _ = _validate(optimizers, 1.5, real=False)
    assert seconds < 1.5 + 0.3
    statuses = [r["status"] for r in rows]
    assert statuses[0] == "checked"
    assert "out-of-budget" in statuses and len(grappler["ran"]) < len(optimizers)
    for r in rows:
        if r["status"] == "out-of-budget":
            assert "time budget" in r["reason"]
            assert r["reason"].endswith(("not run", "not checked"))
    assert command._exit_status(rows) == EXIT_UNKNOWN


def test_a_slow_check_takes_only_its_share(grappler, monkeypatch):
    import tfsem.checking as checking
    from tfsem.checking.verdict import Verdict
    given = []

    def check_rewrite(original, rewritten, semantics, observe, timeout, **kw):
        given.append(timeout)
        time.sleep(timeout)
        return Verdict("unknown", f"the time budget ({timeout:g} s) ran out",
                       semantics=semantics, observe=observe)

    monkeypatch.setattr(checking, "check_rewrite", check_rewrite)
    rows, seconds, deadline = _validate(["constfold", "default"], 1.0)
    assert seconds < 1.0 + 0.3
    # the first optimizer's check: CHECK_SHARE of its half, the real check the rest
    reserve = command.report_reserve(1.0)
    assert given[0] <= (1.0 - reserve) / 2 * command.CHECK_SHARE + 0.01
    assert all(r["status"] == "checked" and r["verdict"]["verdict"] == "unknown" for r in rows)
    assert command._exit_status(rows) == EXIT_UNKNOWN


def test_a_slow_replay_is_cut_and_says_so(grappler, no_replay):
    rows, seconds, _ = _validate(["dependency"], 1.5)
    assert seconds < 1.5 + 0.3 and len(no_replay) == 1
    row = rows[0]
    assert row["verdict"]["verdict"] == "unsound"          # the oracle's verdict stands
    assert "tensorflow" not in row["verdict"]["confirmed"]
    rep = row["tensorflow_replay"]
    assert rep["status"] == "not-replayed" and rep["budget"] is True and not rep["confirmed"]
    assert "not replayed on TensorFlow within the time budget" in row["text"]
    assert "the verdict is the oracle's alone" in row["text"]
    assert command._exit_status(rows) == EXIT_FOUND
    text = "\n".join(command.text_report(rows, Deadline(60.0)))
    assert "TensorFlow 2" not in text and "within the time budget" in text


def test_a_cut_check_over_the_reals_is_unknown_for_the_budget(grappler, monkeypatch):
    grappler.update(broken=False)
    import tfsem.checking as checking
    real_check = checking.check_rewrite

    def check_rewrite(original, rewritten, semantics, observe, timeout, **kw):
        verdict = real_check(original, rewritten, semantics, observe, timeout=timeout, **kw)
        if kw.get("float_mode") != "real":
            time.sleep(max(0.0, deadline_box[0].left()))   # the exact check uses it all
        return verdict

    deadline_box = []
    monkeypatch.setattr(checking, "check_rewrite", check_rewrite)
    real_check_graph = command.check_graph

    def check_graph(*a, deadline=None, **kw):
        deadline_box.append(deadline)
        return real_check_graph(*a, deadline=deadline, **kw)

    monkeypatch.setattr(command, "check_graph", check_graph)
    rows, seconds, _ = _validate(["constfold"], 1.0)
    assert seconds < 1.0 + 0.3
    row = rows[0]
    assert row["verdict"]["verdict"] == "sound"
    assert row["real"]["verdict"] == "unknown" and row["real"]["budget"] is True
    assert row["real"]["reason"].startswith("budget")
    assert command._exit_status(rows) == EXIT_OK      # the exit status is the exact verdict's
    assert "budget" in command.real_text(row["real"])


def test_within_claim_gets_what_is_left_not_a_floor(grappler, monkeypatch, no_replay):
    given = []
    claim = command.within_claim

    def within_claim(original, rewritten, verdict, semantics, observe, seconds):
        given.append(seconds)
        time.sleep(seconds)
        return claim(original, rewritten, verdict, semantics, observe, seconds)

    monkeypatch.setattr(command, "within_claim", within_claim)
    rows, seconds, _ = _validate(["dependency"], 1.0)
    assert seconds < 1.0 + 0.3
    assert given and given[0] < 1.0                  # no 1 s floor past the budget
    assert rows[0]["verdict"]["verdict"] == "unsound"


def test_a_slow_original_import_leaves_every_optimizer_out_of_budget(grappler):
    rows = command.validate(_counter(), FETCHES, [], ["constfold", "default"], where="counter",
                            timeout=1.0, deadline=Deadline(0.001, started=time.monotonic() - 1))
    assert [r["status"] for r in rows] == ["out-of-budget"] * 2
    assert grappler["ran"] == []
    assert all("time budget ran out" in r["reason"] for r in rows)


def test_without_a_deadline_each_optimizer_has_the_timeout(grappler):
    grappler.update(broken=False)
    rows = command.validate(_counter(), FETCHES, [], ["constfold", "default"], where="counter",
                            timeout=5.0, real=False)
    assert [r["verdict"]["verdict"] for r in rows] == ["sound", "sound"]
    assert set(rows[0]["stage_seconds"]) >= {"grappler", "import", "check"}


def _unsound_verdict():
    from tfsem.checking import check_rewrite
    p = command._import(_counter(), FETCHES, [], "counter")
    p2 = command._import(_counter(True), FETCHES, [], "counter")
    verdict = check_rewrite(p, p2, "atomic", "outputs+state", timeout=10.0, backends=False)
    assert verdict.verdict == "unsound" and verdict.counterexample is not None
    return p2, verdict


def test_a_replay_that_ignores_its_deadline_is_left_behind(monkeypatch):
    """TensorFlow loading a large graph cannot look at the clock: the replay
    is given up when its time is over, and says so."""
    from tfsem.backends import tensorflow as tfb
    p2, verdict = _unsound_verdict()

    def stuck(*a, **k):
        time.sleep(1.5)
        return tfb.Replay(True, "confirmed (too late)", "g")

    monkeypatch.setattr(tfb, "replay_graph", stuck)
    t = time.monotonic()
    rep = command.replay(_counter(True), p2, verdict.counterexample, [], "outputs+state",
                         "the graph g", Deadline(0.3))
    assert time.monotonic() - t < 0.3 + 0.2
    assert rep.budget and not rep.confirmed and "time budget" in rep.reason
    assert rep.to_json()["status"] == "not-replayed" and rep.to_json()["budget"] is True
    expired = command.replay(_counter(True), p2, verdict.counterexample, [], "outputs+state",
                             "the graph g", Deadline(0.001, started=time.monotonic() - 1))
    assert expired.budget and "before the replay started" in expired.reason


def test_a_slow_verdict_text_is_cut_and_says_so(monkeypatch):
    from tfsem.checking.verdict import Counterexample
    _, verdict = _unsound_verdict()
    full = command.verdict_text(verdict, Deadline(30.0))
    assert "rewritten schedule:" in full and command.TEXT_CUT not in full

    def slow(self, *args, **kwargs):
        time.sleep(1.5)
        return ["  (never shown)"]

    monkeypatch.setattr(Counterexample, "describe", slow)
    t = time.monotonic()
    cut = command.verdict_text(verdict, Deadline(0.3))
    assert time.monotonic() - t < 0.3 + 0.2
    assert cut.splitlines()[0] == full.splitlines()[0]      # the verdict's line stands
    assert cut.endswith(command.TEXT_CUT) and "rewritten schedule:" not in cut


# --- the command, end to end (TensorFlow's part replaced) --------------------------------

@pytest.fixture
def fake_tensorflow(monkeypatch, grappler):
    """`tfsem grappler` on examples/tensorflow/counter.pbtxt with TensorFlow's
    import, graph reading and placement replaced (`sleep`: the import's
    seconds)."""
    from tfsem.graphdef import grappler as g
    fake = type("tf", (), {"__version__": "0.0-test"})()

    def tensorflow():
        time.sleep(grappler.get("import_sleep", 0.0))
        return fake

    monkeypatch.setattr(g, "tensorflow", tensorflow)
    monkeypatch.setattr(g, "as_graph_def", lambda path: _counter())
    monkeypatch.setattr(g, "placed", lambda gd: gd)
    monkeypatch.setattr(g, "placement", lambda gd: "the test's CPU")
    return grappler


def _main(capsys, *argv):
    from tfsem.cli import main
    t = time.monotonic()
    rc = main(["grappler", str(COUNTER), *argv])
    return rc, capsys.readouterr().out, time.monotonic() - t


def test_the_command_reports_its_budget_and_stages(fake_tensorflow, capsys, no_replay):
    rc, out, seconds = _main(capsys, "--optimizer", "dependency", "--timeout", "1.5", "--json")
    assert rc == EXIT_FOUND and seconds < 1.5 + 0.3
    data = json.loads(out)
    assert data["tensorflow"] == "0.0-test" and data["report_cut"] == 0
    assert data["budget"]["seconds"] == 1.5 and data["budget"]["before_report"] < 1.5
    row, = data["results"]
    assert row["verdict"]["verdict"] == "unsound" and row["tensorflow_replay"]["budget"] is True
    assert {"grappler", "import", "check", "replay"} <= set(row["stage_seconds"])
    assert "text" not in row
    rc, out, seconds = _main(capsys, "--optimizer", "dependency", "--timeout", "1")
    assert rc == EXIT_FOUND and seconds < 1 + 0.3
    assert "  dependency: unsound: output 'value' differs" in out
    assert "not replayed on TensorFlow within the time budget" in out


def test_a_slow_tensorflow_import_is_left_behind(fake_tensorflow, capsys):
    fake_tensorflow["import_sleep"] = 2.0
    rc, out, seconds = _main(capsys, "--optimizer", "constfold", "--optimizer", "default",
                             "--timeout", "0.6", "--json")
    assert rc == EXIT_UNKNOWN and seconds < 0.6 + 0.3
    data = json.loads(out)
    assert data["tensorflow"] is None and data["placement"] is None
    assert [r["status"] for r in data["results"]] == ["out-of-budget"] * 2
    assert all("while TensorFlow was imported" in r["reason"] for r in data["results"])
    assert fake_tensorflow["ran"] == []


def test_a_grappler_run_past_the_budget_is_left_behind(grappler):
    """TensorFlow's optimizer lets go of Python's lock while it runs: one
    that outlasts the budget is not waited for, and no other is started."""
    grappler.update(sleep=2.0, broken=False)
    rows, seconds, _ = _validate(["pruning", "constfold"], 0.8, real=False)
    assert seconds < 0.8 + 0.3
    assert [r["status"] for r in rows] == ["out-of-budget"] * 2
    assert "during Grappler's run, which was left behind" in rows[0]["reason"]
    assert "during an earlier optimizer's Grappler run: not run" in rows[1]["reason"]
    assert grappler["ran"] == ["pruning"]


WATCHDOG_SCRIPT = r'''
import sys, time
sys.path.insert(0, sys.argv[1])
import test_grappler_command_budget as t
from tfsem.graphdef import grappler as g
import tfsem.checking as checking
fake = type("tf", (), {"__version__": "0.0-test"})()
g.tensorflow = lambda: fake
g.as_graph_def = lambda path: t._counter()
g.placed = lambda gd: gd
g.placement = lambda gd: "the test's CPU"
g.run_grappler = lambda gd, f, name, place=False: t.FakeResult(name, t._counter(True), 0.0)
real = checking.check_rewrite
def stuck(original, rewritten, *a, timeout=10.0, **k):   # a check that ignores its clock
    if rewritten.node.keys() != original.node.keys() or True:
        time.sleep(30)
    return real(original, rewritten, *a, timeout=timeout, **k)
checking.check_rewrite = stuck
from tfsem.cli import main
sys.argv = ["tfsem", "grappler", str(t.COUNTER), "--optimizer", "dependency",
            "--optimizer", "constfold", "--timeout", sys.argv[2]] + sys.argv[3:]
sys.exit(main())
'''


@pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                    reason="a 4 s process: nightly profile (the default suite runs the "
                           "watchdog in the test after this one)")
def test_the_watchdog_ends_a_command_whose_stage_ignores_the_clock():
    """A check that never looks at its deadline (30 s here): at the end of
    the budget the watchdog writes the report of what is done and ends the
    process, exit 3; the row being checked names the stages that ended."""
    import subprocess
    import sys
    budget = 4.0      # the process's start and imports count: 1-2.5 s on a loaded machine
    t = time.monotonic()
    out = subprocess.run([sys.executable, "-c", WATCHDOG_SCRIPT, str(Path(__file__).parent),
                          str(budget), "--json"], capture_output=True, text=True, timeout=60)
    wall = time.monotonic() - t
    assert out.returncode == EXIT_UNKNOWN, out.stderr[-2000:]
    assert wall < budget + 1.0
    data = json.loads(out.stdout)
    dependency, constfold = data["results"]
    assert dependency["status"] == constfold["status"] == "out-of-budget"
    assert dependency["reason"] == (
        "the time budget of 4 s ran out while this optimizer was checked (its stages that "
        "ended: import; the one after them was cut): no verdict")
    assert constfold["reason"] == "the time budget of 4 s ran out before this optimizer: not run"


def test_the_watchdog_keeps_a_verdict_already_reached():
    """Cut after the check (here in the replay, which ignores its clock): the
    verdict stands, exit 1, without its counterexample, saying why."""
    import subprocess
    import sys
    script = WATCHDOG_SCRIPT.replace("checking.check_rewrite = stuck", """
import tfsem.commands.grappler as command
def stuck_replay(*a, **k):     # a stage after the verdict that ignores its clock
    time.sleep(30)
command.replay = stuck_replay
""")
    out = subprocess.run([sys.executable, "-c", script, str(Path(__file__).parent), "4"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == EXIT_FOUND, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    i = lines.index("  dependency: unsound: output 'value' differs")
    assert lines[i + 1] == (
        "    changed: nodes 9 -> 9; changed read")
    assert "ran out after this optimizer's verdict (its stages that ended: import, check, " \
           "claim; the one after them was cut): the verdict stands" in out.stdout


def test_a_slow_verdict_json_is_cut_and_says_so(monkeypatch):
    from tfsem.checking.verdict import Counterexample
    _, verdict = _unsound_verdict()
    full = command.verdict_json(verdict, Deadline(30.0))
    assert "counterexample" in full["verdict"] and "report_cut" not in full

    def slow(self, *args, **kwargs):
        time.sleep(1.5)
        return {}

    monkeypatch.setattr(Counterexample, "to_json", slow)
    t = time.monotonic()
    cut = command.verdict_json(verdict, Deadline(0.3))
    assert time.monotonic() - t < 0.3 + 0.2
    assert cut["verdict"]["verdict"] == "unsound" and cut["report_cut"] == command.JSON_CUT
    assert cut["verdict"].get("counterexample") is None
