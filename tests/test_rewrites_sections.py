"""The critical-section rewrites (rewrites/sections.py) against their claims,
judged by the session semantics (oracle/blocking.py) on generated sessions:
dropping sections changes nothing for one run and adds an outcome for
concurrent runs; merging sections adds nothing without queues and can add a
deadlock with one."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, find, given, settings

from tfsem.generators.sessions import sessions
from tfsem.oracle import blocking
from tfsem.oracle.session import session_from_json
from tfsem.oracle.values import Tensor
from tfsem.rewrites.sections import drop_sections, merge_sections

FAST = settings(max_examples=25, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
FIND = settings(max_examples=400, deadline=None, database=None, phases=[Phase.generate],
                suppress_health_check=list(HealthCheck))


def outcome_sets(data: dict, rewritten_program: dict, semantics: str = "atomic"):
    s = session_from_json(data)
    p, b = s.expand_blocking()
    rp, rb = blocking.program_from_json(rewritten_program)
    p2, b2 = s.expand_blocking(rp, rb)
    init = {x: Tensor(0, "int64") for x in p.variables}
    a, _ = blocking.outcomes(p, b, {}, init, semantics, max_seconds=20)
    c, _ = blocking.outcomes(p2, b2, {}, init, semantics, max_seconds=20)
    return set(a), set(c)


@FAST
@given(sessions(max_blocks=3, max_runs=1, sections=True))
def test_dropping_sections_changes_no_outcome_of_one_run(data):
    before, after = outcome_sets(data, drop_sections(data["program"]))
    assert before == after


def test_dropping_sections_adds_an_outcome_under_concurrent_runs():
    def adds(data):
        before, after = outcome_sets(data, drop_sections(data["program"]))
        return not after <= before
    data = find(sessions(max_blocks=3, max_runs=2, sections=True, queue=False,
                         orders=("concurrent",)), adds, settings=FIND)
    assert len(data["runs"]) == 2


@FAST
@given(sessions(max_blocks=3, max_runs=2, sections=True, queue=False))
def test_merging_sections_adds_nothing_without_queues(data):
    for semantics in ("atomic", "decomposed"):
        before, after = outcome_sets(data, merge_sections(data["program"]), semantics)
        assert after <= before
        assert not any(isinstance(o, blocking.Deadlock) for o in after - before)


def test_merging_sections_can_add_a_deadlock_with_a_queue():
    """Run P enqueues inside section A; run C enters section B (`mark`) and
    dequeues in it.  Merged into one section, C may enter first and wait
    for an item that P can only enqueue inside the section C holds."""
    nodes = [{"name": "one", "op": "Const", "value": 1},
             {"name": "enq", "op": "QueueEnqueue", "queue": "q", "inputs": ["one"],
              "critical_section": "A"},
             {"name": "mark", "op": "Identity", "inputs": ["one"], "critical_section": "B"},
             {"name": "deq", "op": "QueueDequeue", "queue": "q", "inputs": ["^mark"],
              "critical_section": "B"}]
    prog = {"format": "tfsem.program/1", "variables": [], "queues": {"q": {"capacity": 1}},
            "nodes": nodes, "outputs": {"item": "deq"}}
    data = {"format": "tfsem.session/1", "program": prog,
            "runs": [{"name": "P", "targets": ["enq"]}, {"name": "C", "fetch": ["item"]}]}
    before, after = outcome_sets(data, merge_sections(prog))
    assert not any(isinstance(o, blocking.Deadlock) for o in before)
    added = after - before
    assert [o.blocked for o in added] == [("C/deq", "P/enq")]   # each waits on the other
