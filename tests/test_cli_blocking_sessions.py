"""`tfsem outcomes`, `check` and `run` on sessions with critical sections and
queues (tfsem/commands/blocking_sessions.py), in process through tfsem.cli.main."""

from __future__ import annotations

import json
from pathlib import Path

from tfsem.cli import main

SESSIONS = Path(__file__).resolve().parent.parent / "examples" / "sessions"


def cli(capsys, *args: str) -> tuple[int, str]:
    rc = main([str(a) for a in args])
    return rc, capsys.readouterr().out


def test_outcomes_lists_each_deadlock_with_its_schedule(capsys):
    rc, out = cli(capsys, "outcomes", SESSIONS / "queue_deadlock.session.json")
    assert rc == 0
    assert "2 deadlocks" in out
    assert "deadlock: consumer2/deq waits: queue q is empty" in out
    assert "schedule: producer/one producer/enq consumer1/deq" in out
    rc, out = cli(capsys, "outcomes", SESSIONS / "queue_deadlock.session.json", "--json")
    data = json.loads(out)
    assert data["count"] == 2 and data["deadlocks"] == 2
    assert sorted(o["deadlock"] for o in data["outcomes"]) == [["consumer1/deq"], ["consumer2/deq"]]


def test_outcomes_of_a_budget_too_small_is_unknown(capsys):
    rc, out = cli(capsys, "outcomes", SESSIONS / "counter_critical.session.json", "--init", "x=0",
                  "--max-states", "3")
    assert rc == 3 and out.startswith("unknown: budget exceeded: states")


def test_dropping_a_critical_section_is_unsound_and_keeping_it_is_not(capsys, tmp_path):
    rc, out = cli(capsys, "check", SESSIONS / "counter_critical.session.json",
                  SESSIONS / "counter_critical_dropped.json")
    assert rc == 1 and out.startswith("unsound: output 'step2/old' differs")
    assert "x := 1" in out   # the lost update
    program = json.loads((SESSIONS / "counter_critical.session.json").read_text())["program"]
    same = tmp_path / "same.json"
    same.write_text(json.dumps(program))
    rc, out = cli(capsys, "check", SESSIONS / "counter_critical.session.json", same, "--json")
    assert rc == 0 and json.loads(out)["verdict"] == "sound"   # identical: nothing to prove
    # the same with a node renamed: enumerated, not proved
    program = json.loads(json.dumps(program).replace('"one"', '"one_b"'))
    same.write_text(json.dumps(program))
    rc, out = cli(capsys, "check", SESSIONS / "counter_critical.session.json", same, "--json")
    data = json.loads(out)
    assert rc == 0 and data["verdict"] == "no-counterexample" and data["tried"] == 24


def test_a_rewrite_that_changes_a_queue_type_is_invalid_a_capacity_is_judged(capsys, tmp_path):
    prog = json.loads((SESSIONS / "queue_deadlock.session.json").read_text())["program"]
    prog["queues"]["q"]["dtype"] = "int32"
    bad = tmp_path / "int32.json"
    bad.write_text(json.dumps(prog))
    rc, out = cli(capsys, "check", SESSIONS / "queue_deadlock.session.json", bad)
    assert rc == 1 and out.startswith("invalid: the rewrite declares other variables or queues")
    prog["queues"]["q"].update(dtype="int64", capacity=2)   # one item either way
    bigger = tmp_path / "bigger.json"
    bigger.write_text(json.dumps(prog))
    rc, out = cli(capsys, "check", SESSIONS / "queue_deadlock.session.json", bigger)
    assert rc == 0 and out.startswith("no-counterexample")


def test_a_rewrite_that_adds_a_deadlock_is_unsound(capsys, tmp_path):
    """Two producers and two consumers of a queue of capacity 1: never stuck.
    The rewrite makes the dequeue wait for the enqueue node, so each
    consumer's run also enqueues (partial execution): four enqueues, two
    dequeues, capacity 1: a run waits forever."""
    nodes = [{"name": "one", "op": "Const", "value": 1},
             {"name": "enq", "op": "QueueEnqueue", "queue": "q", "inputs": ["one"]},
             {"name": "deq", "op": "QueueDequeue", "queue": "q"}]
    prog = {"format": "tfsem.program/1", "variables": [], "queues": {"q": {"capacity": 1}},
            "nodes": nodes, "outputs": {"item": "deq"}}
    session = {"format": "tfsem.session/1", "program": prog,
               "runs": [{"name": "p1", "targets": ["enq"]}, {"name": "p2", "targets": ["enq"]},
                        {"name": "c1", "fetch": ["item"]}, {"name": "c2", "fetch": ["item"]}]}
    s = tmp_path / "s.session.json"
    s.write_text(json.dumps(session))
    rc, out = cli(capsys, "outcomes", s)
    assert rc == 0 and "deadlock" not in out
    rewritten = json.loads(json.dumps(prog))
    rewritten["nodes"][2]["inputs"] = ["^enq"]   # a consumer waits for its own enqueue
    r = tmp_path / "r.json"
    r.write_text(json.dumps(rewritten))
    rc, out = cli(capsys, "check", s, r)
    assert rc == 1 and out.startswith("unsound") and "deadlock" in out


def test_run_on_the_session_machine_finds_both_deadlocks(capsys):
    rc, out = cli(capsys, "run", SESSIONS / "queue_deadlock.session.json", "--backend", "numpy",
                  "--runs", "40")
    assert rc == 0 and "2 distinct outcomes" in out
    assert out.count("deadlock: consumer") == 2


def test_run_with_threads_or_xla_is_refused_by_name(capsys):
    assert main(["run", str(SESSIONS / "queue_deadlock.session.json"), "--backend", "numpy",
                 "--executor", "threads"]) == 2
    assert "--executor random" in capsys.readouterr().err


def test_export_writes_a_session_with_queues_and_refuses_a_section_it_cannot_lock(capsys,
                                                                                  tmp_path):
    out = tmp_path / "g.pbtxt"
    assert main(["export", str(SESSIONS / "queue_deadlock.session.json"), "-o", str(out)]) == 0
    assert 'op: "QueueDequeueV2"' in out.read_text()
    data = json.loads((SESSIONS / "counter_critical.session.json").read_text())
    data["program"]["nodes"][2]["critical_section"] = "cs"   # `one`: a second entry
    bad = tmp_path / "s.session.json"
    bad.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["export", str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "critical section 'cs'" in err and "not-exportable" in err
