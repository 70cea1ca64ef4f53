"""Sessions (tfsem.session/1, SPEC section 10) through the command line:
loading and its errors, `tfsem outcomes`, `check` and `run` on a session
(by `tfsem.cli.main` in this process; test_a_session_over_a_tensorflow_graph
runs `tfsem outcomes` on a session as a process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from test_campaigns_fuzz import tfsem_here
from tfsem.oracle.jsonio import load_program, program_from_json
from tfsem.oracle.program import ProgramError
from tfsem.oracle.session import SessionError, session_from_json

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SESSIONS = EXAMPLES / "sessions"


def tfsem(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tfsem", *args], capture_output=True, text=True,
                          timeout=120)


def counter() -> dict:
    return json.loads((SESSIONS / "counter.json").read_text())


def session(runs, order="concurrent", program=None) -> dict:
    return {"format": "tfsem.session/1", "program": program or counter(), "runs": runs,
            "order": order}


# ---------------------------------------------------------------------------
# Loading: every error names its field


@pytest.mark.parametrize("data, where, words", [
    (session([]), "session.runs", "non-empty list"),
    (session([{"name": "a/b", "fetch": ["count"]}]), "session.runs[0].name", "'/'"),
    (session([{"name": "a"}, {"name": "a"}]), "session.runs[1].name", "two runs are named"),
    (session([{"name": "a", "fetch": ["nope"]}]), "session.runs[0].fetch", "no output 'nope'"),
    (session([{"name": "a", "targets": ["nope"]}]), "session.runs[0].targets", "no node 'nope'"),
    (session([{"name": "a", "fetch": "count"}]), "session.runs[0].fetch", "list"),
    (session([{"name": "a", "fetches": ["count"]}]), "session.runs[0].fetches", "unknown field"),
    (session([{"name": "a"}], order="parallel"), "session.order", "concurrent, sequential"),
    (session([{"name": "a", "feeds": {"f": 1}}]), "session.runs[0].feeds.f", "no feed 'f'"),
    (dict(session([{"name": "a"}]), extra=1), "session.extra", "unknown field"),
    (session([{"name": "a"}], program={"graph": "x.pbtxt", "fetch": ["y"]}),
     "session.program.fetch", "the runs'"),
])
def test_a_bad_session_names_the_field(data, where, words):
    with pytest.raises(SessionError) as exc:
        session_from_json(data, load_graph=lambda *a: (_ for _ in ()).throw(AssertionError))
    text = str(exc.value)
    assert where in text and words in text, text


def test_a_bad_session_on_the_command_line_is_exit_2_without_traceback(tmp_path, capsys):
    f = tmp_path / "s.json"
    f.write_text(json.dumps(session([{"name": "a", "fetch": ["nope"]}])))
    r = tfsem_here(capsys, "outcomes", str(f))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "runs[0].fetch" in r.stderr and "Traceback" not in r.stderr


def test_a_session_program_error_names_the_program_field():
    bad = counter()
    bad["nodes"][2]["inputs"] = ["v"]
    with pytest.raises(ProgramError) as exc:
        session_from_json(session([{"name": "a"}], program=bad))
    assert "session.program" in str(exc.value) or "'inc'" in str(exc.value)


# ---------------------------------------------------------------------------
# The expansion


def test_runs_are_pruned_prefixed_and_share_the_variables():
    p = counter()
    p["nodes"].append({"name": "other", "op": "Read", "inputs": ["v"]})
    p["outputs"]["other"] = "other"
    s = session_from_json(session([{"name": "a", "fetch": ["other"]},
                                   {"name": "b", "fetch": ["count"]}], program=p))
    e = s.expand()
    assert sorted(n.name for n in e.nodes) == ["a/other", "a/v", "b/inc", "b/one", "b/r",
                                               "b/v", "b/v2"]
    assert set(e.outputs) == {"a/other", "b/count"}
    assert {n.var for n in e.nodes if n.op == "Var"} == {"x"}


def test_sequential_runs_wait_for_every_node_of_the_run_before():
    s = session_from_json(session([{"name": "a"}, {"name": "b"}], order="sequential"))
    e = s.expand()
    order = e.topological_order
    assert max(order.index(n) for n in order if n.startswith("a/")) < \
        min(order.index(n) for n in order if n.startswith("b/"))
    # every source of b waits on a's sink
    for n in e.nodes:
        if n.name.startswith("b/") and n.name in ("b/v", "b/one", "b/v2"):
            assert "^a/r" in [str(i) for i in n.inputs]


def test_feeds_given_by_the_session_are_constants_the_others_are_run_feeds():
    p = {"format": "tfsem.program/1", "variables": ["x"],
         "nodes": [{"name": "v", "op": "Var", "var": "x"},
                   {"name": "w", "op": "AssignAdd", "inputs": ["v", "$d"]}],
         "outputs": {}}
    s = session_from_json(session([{"name": "a", "feeds": {"d": 5}}, {"name": "b"}], program=p))
    e = s.expand()
    assert e.feed_names == ("b/d",)
    consts = [n for n in e.nodes if n.op == "Const"]
    assert len(consts) == 1 and consts[0].name.startswith("a/")


# ---------------------------------------------------------------------------
# The commands


def test_outcomes_of_two_concurrent_increments_group_outputs_by_run(capsys):
    r = tfsem_here(capsys, "outcomes", str(SESSIONS / "counter_two_steps.session.json"), "--init", "x=0")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("3 outcomes")
    assert "step1: count = 1; step2: count = 2; x := 2" in r.stdout
    assert "step1: count = 2; step2: count = 2; x := 2" in r.stdout
    r = tfsem_here(capsys, "outcomes", str(SESSIONS / "counter_two_steps.session.json"), "--init", "x=0",
                   "--json")
    data = json.loads(r.stdout)
    assert data["count"] == 3
    assert all(o["by_run"]["step1"]["count"] == o["outputs"]["step1/count"]
               for o in data["outcomes"])


def test_sequential_steps_carry_the_state_over(capsys):
    r = tfsem_here(capsys, "outcomes", str(SESSIONS / "counter_two_steps_sequential.session.json"),
                   "--init", "x=0", "--json")
    data = json.loads(r.stdout)
    assert data["count"] == 1
    assert data["outcomes"][0]["by_run"] == {"step1": {"count": 1}, "step2": {"count": 2}}


def test_split_assign_is_sound_for_one_step_unsound_for_two_concurrent_steps(capsys):
    """The lost update: Assign-Add split into Read, Add, Write is sound for
    one run in atomic mode, and for two runs one after the other, but two
    concurrent runs may both read 0 and both write 1."""
    split = str(SESSIONS / "counter_split.json")
    # the rewrite is the registered pass's output
    r = tfsem_here(capsys, "rewrite", "split-assign", str(SESSIONS / "counter.json"))
    assert r.returncode == 0, r.stderr
    assert load_program(split) == load_program(_write(r.stdout))
    verdicts = {}
    for name in ("one_step", "two_steps", "two_steps_sequential"):
        r = tfsem_here(capsys, "check", str(SESSIONS / f"counter_{name}.session.json"), split,
                       "--json", "--no-tensorflow")
        verdicts[name] = (r.returncode, json.loads(r.stdout))
    assert verdicts["one_step"][1]["verdict"] == "sound" and verdicts["one_step"][0] == 0
    assert verdicts["two_steps_sequential"][1]["verdict"] == "sound"
    code, v = verdicts["two_steps"]
    assert code == 1 and v["verdict"] == "unsound", v
    cx = v["counterexample"]
    # the lost update: both steps count 1, x ends at init + 1
    x0 = cx["init"]["x"]
    assert cx["outcome"]["state"]["x"] == x0 + 1
    assert cx["outcome"]["outputs"] == {"step1/count": x0 + 1, "step2/count": x0 + 1}
    assert "numpy" in v["confirmed"]
    # decomposed: the original AssignAdd already races, the split adds nothing
    r = tfsem_here(capsys, "check", str(SESSIONS / "counter_two_steps.session.json"), split,
                   "--semantics", "decomposed", "--json", "--no-tensorflow")
    assert json.loads(r.stdout)["verdict"] == "sound", r.stdout


def _write(text: str) -> Path:
    import tempfile
    f = Path(tempfile.mkdtemp()) / "p.json"
    f.write_text(text)
    return f


def test_numpy_execution_of_two_concurrent_steps_finds_the_lost_update(tmp_path, capsys):
    # the split program run as a session of two concurrent steps on numpy
    s = session([{"name": "s1", "fetch": ["count"]}, {"name": "s2", "fetch": ["count"]}],
                program=json.loads((SESSIONS / "counter_split.json").read_text()))
    f = tmp_path / "split2.session.json"
    f.write_text(json.dumps(s))
    r = tfsem_here(capsys, "run", str(f), "--backend", "numpy", "--runs", "300", "--init", "x=0", "--json")
    assert r.returncode == 0, r.stderr
    finals = {o["state"]["x"] for o in json.loads(r.stdout)["outcomes"]}
    assert finals == {1, 2}   # the lost update (1) is found, and the right sum
    r = tfsem_here(capsys, "run", str(SESSIONS / "counter_two_steps.session.json"), "--backend", "numpy",
                   "--runs", "300", "--init", "x=0", "--json")
    assert {o["state"]["x"] for o in json.loads(r.stdout)["outcomes"]} == {2}


def test_check_a_rewrite_that_drops_a_fetched_output_is_invalid(tmp_path, capsys):
    p = counter()
    p["outputs"] = {"renamed": "r"}
    f = tmp_path / "p.json"
    f.write_text(json.dumps(p))
    r = tfsem_here(capsys, "check", str(SESSIONS / "counter_two_steps.session.json"), str(f), "--json",
                   "--no-tensorflow")
    assert r.returncode == 1
    v = json.loads(r.stdout)
    assert v["verdict"] == "invalid" and "count" in v["reason"]


def test_a_session_over_a_tensorflow_graph():
    r = tfsem("outcomes", str(SESSIONS / "counter_graph_two_steps.session.json"),
              "--init", "counter=0", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    values = sorted((o["by_run"]["step1"]["value"], o["by_run"]["step2"]["value"])
                    for o in data["outcomes"])
    assert values == [(1, 2), (2, 1), (2, 2)]
    assert data["stats"]["components_by_engine"] == {"symmetry": 1}


def test_graph_options_do_not_apply_to_a_session(capsys):
    r = tfsem_here(capsys, "outcomes", str(SESSIONS / "counter_two_steps.session.json"), "--fetch", "r")
    assert r.returncode == 2 and "--fetch does not apply to a session" in r.stderr


def test_program_json_round_trip_of_the_example():
    # the example program is what its sessions embed
    for name in ("one_step", "two_steps", "two_steps_sequential"):
        data = json.loads((SESSIONS / f"counter_{name}.session.json").read_text())
        assert program_from_json(data["program"]) == load_program(SESSIONS / "counter.json")


@pytest.mark.parametrize("n", [2, 4])
def test_keras_iteration_counter_loses_increments_under_concurrent_steps(n):
    """Keras 3's `iterations.assign_add(1)` imported from the corpus step is a
    Read, Cast, Add and Write: N concurrent steps may end the counter
    anywhere from 1 to N (docs/sessions.md, the Hogwild question)."""
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.session import load_session
    from tfsem.oracle.values import Tensor
    s = load_session(SESSIONS / f"keras_counters_{n}.session.json")
    assert [(nd.op, nd.attrs.get("fn")) for nd in s.program.nodes].count(("Assign", "Snd")) == 1
    result = outcome_set(s.expand(), {}, {"sgd/iteration": Tensor(0, "int64")})
    finals = {int(dict(o.state)["sgd/iteration"].array) for o, _ in result.items()}
    assert finals == set(range(1, n + 1))
