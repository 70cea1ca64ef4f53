"""A schedule's replay (oracle/semantics.py `run_schedule`) checks each step
with `step_enabled`, which looks at the step's node only: it must say what
`step in enabled(...)` says, in every state of every run, for every label
(enabled or not, Assign phases under the decomposed semantics, names of no
node)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.generators.strategies import inputs_for, programs
from tfsem.oracle.semantics import (DECOMPOSED, enabled, fire, graph_of, initial_state,
                                    run_schedule, step_enabled)


@st.composite
def _runs(draw):
    p = draw(programs(max_nodes=10))
    feeds, init = draw(inputs_for(p))
    return p, feeds, init, draw(st.randoms(use_true_random=False))


@pytest.mark.parametrize("semantics", ["atomic", DECOMPOSED])
@settings(max_examples=20 * max(1, settings.default.max_examples // 100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_runs())
def test_step_enabled_is_membership_in_enabled(semantics, case):
    p, feeds, init, rnd = case
    g = graph_of(p)
    s = initial_state(p, g, feeds, init)
    labels = [n.name for n in p.nodes] + [n.name + suffix for n in p.nodes
                                          for suffix in ("@read", "@write")] + ["no-such-node"]
    schedule = []
    while True:
        steps = enabled(p, g, s, semantics)
        for label in labels:
            assert step_enabled(p, g, s, label, semantics) == (label in steps), (label, steps)
        if not steps:
            break
        step = rnd.choice(steps)
        schedule.append(step)
        s = fire(p, g, s, step)
    # the replay takes the run, and refuses it cut short or with a step moved first
    assert run_schedule(p, feeds, init, schedule, semantics).var_value == s.var_value
    if len(schedule) > 1:
        with pytest.raises(ValueError):
            run_schedule(p, feeds, init, schedule[:-1], semantics)
