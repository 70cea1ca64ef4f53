"""The session generators (generators/sessions.py): their step graphs have
no race of their own, so `split-assign` never changes an outcome of one run
of them, and it loses an update as soon as two runs overlap; generated
session objects are valid sessions."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings

from tfsem.generators.sessions import concurrent_steps, one_step, sequential_steps, sessions
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.session import session_from_json
from tfsem.rewrites.split_assign import split_assign


def added_outcomes(case) -> bool:
    p, feeds, init = case
    q = split_assign(p)
    if q == p:
        return False
    before = set(o for o, _ in outcome_set(p, feeds, init).items())
    return any(o not in before for o, _ in outcome_set(q, feeds, init).items())


@pytest.mark.parametrize("generator", [one_step, sequential_steps])
def test_split_assign_adds_no_outcome_to_one_step_or_steps_in_sequence(generator):
    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck),
              database=None)
    @given(generator(10, "outputs+state"))
    def check(case):
        assert not added_outcomes(case)
    check()


def test_split_assign_loses_an_update_under_two_concurrent_steps():
    p, _, init = find(concurrent_steps(10, "outputs+state"), added_outcomes,
                      settings=settings(max_examples=300, database=None,
                                        phases=[Phase.generate],   # no shrinking: speed
                                        suppress_health_check=list(HealthCheck)))
    assert {n.name.split("/")[0] for n in p.nodes} == {"step1", "step2"}
    assert any(n.op == "Assign" and n.attrs["fn"] != "Snd" for n in p.nodes)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(sessions())
def test_generated_sessions_are_valid_and_expand(data):
    s = session_from_json(data)
    p, b = s.expand_blocking()
    assert {n.partition("/")[0] for n in b.queue_ops} <= set(s.run_names)
    assert len(s.runs) == len(data["runs"])
    assert all(q in b.queues for _, q in b.queue_ops.values())
