"""The numpy replay of a control-flow schedule fired along the reference
engine's kept path (backends/controlflow.py `_fire`, oracle/controlflow.py
`kept_path`, `fire_path`), each answer against the replay that finds every
step by its label (the path lookup turned off): the same outcome, or the
same error.

- generated programs with conditionals and loops, both modes, several σ in
  a row, every outcome's witness schedule replayed both ways;
- a loop whose trip count comes from σ: the path is used (counted, so the
  comparison is not vacuous), a schedule no kept path has is replayed by
  its labels, and a back end whose predicate disagrees with the reference
  engine's (another branch taken) leaves the path and answers as the
  labels do;
- the confirmation of tests/test_check_control_flow_confirm.py's loop with
  TensorLists: the same verdict and reason both ways.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.backends import controlflow as bcf
from tfsem.generators.control_flow import control_flow_programs
from tfsem.generators.strategies import inputs_for
from tfsem.oracle import controlflow as cf
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.functions import CannotRun
from tfsem.oracle.values import Tensor

from controlflow_support import count_paths, count_replays, numpy_replay
from test_controlflow_replay import at, counting_loop

MODES = ("atomic", "decomposed")
NIGHTLY = settings.get_current_profile_name() == "nightly"
SOME = settings(max_examples=200 if NIGHTLY else 12, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))
BOUND = 6


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """No outcome set or Machine carried over from another test; and a count
    of the numpy replays that went along a kept path to the end."""
    count_replays(monkeypatch)
    return count_paths(monkeypatch, {})


def _numpy(p, feeds, init, schedule, mode, along: bool):
    return numpy_replay(p, feeds, init, schedule, mode, along, BOUND)


def _both_ways(p, feeds, init, mode) -> int:
    """Every witness schedule of Outcomes(P, σ) on numpy both ways (equal);
    how many there were."""
    try:
        found, _ = cf.outcomes(p, feeds, init, mode, max_iterations=BOUND, max_states=20_000)
    except (cf.LoopBoundExceeded, BudgetExceeded, CannotRun):
        return 0
    for schedule in found.values():
        assert _numpy(p, feeds, init, schedule, mode, True) == \
            _numpy(p, feeds, init, schedule, mode, False)
    return len(found)


@SOME
@given(control_flow_programs(max_blocks=3, bounded_trips=True), st.sampled_from(MODES),
       st.data())
def test_the_path_gives_the_labels_outcome_on_generated_programs(p, mode, data):
    cf._machines.cache = {}
    for _ in range(4):
        feeds, init = data.draw(inputs_for(p))
        _both_ways(p, feeds, init, mode)


@pytest.mark.parametrize("mode", MODES)
def test_a_loops_schedule_goes_along_the_kept_path(fresh, mode):
    p = counting_loop()
    for x, a in ((2, 1.5), (2, -3.0), (3, 0.25)):
        assert _both_ways(p, *at(x, a), mode) == 1
    assert fresh["along"] == 3 and fresh["left"] == 0
    # the outcome is numpy's: σ's values on the recorded path
    feeds, init = at(2, -3.0)
    (schedule,) = cf.outcomes(p, feeds, init, mode, max_iterations=BOUND)[0].values()
    out = _numpy(p, feeds, init, schedule, mode, True)
    assert dict(out.outputs)["s"].array == -6.0 and dict(out.state)["x"].array == 4
    # a schedule no kept path has (cut short): found by its labels, refused as before
    along = fresh["along"]
    cut = _numpy(p, feeds, init, schedule[:-1], mode, True)
    assert cut == _numpy(p, feeds, init, schedule[:-1], mode, False)
    assert cut[0] == "ValueError" and fresh["along"] == along


@pytest.mark.parametrize("mode", MODES)
def test_a_backend_taking_another_branch_leaves_the_path(fresh, mode, monkeypatch):
    """numpy's `Less` made to answer the opposite: at the Switch the replay
    writes other dead tokens than the recorded run, leaves the path and
    replays the labels, which fail where they failed without the path."""
    p = counting_loop()
    feeds, init = at(2, 1.5)
    (schedule,) = cf.outcomes(p, feeds, init, mode, max_iterations=BOUND)[0].values()
    real = bcf.apply_values

    def contrary(b, fn, data, attrs):
        out = real(b, fn, data, attrs)
        if fn.name == "Less":
            return [Tensor(not bool(out[0].array), "bool")]
        return out
    monkeypatch.setattr(bcf, "apply_values", contrary)
    along = _numpy(p, feeds, init, schedule, mode, True)
    assert fresh["left"] == 1
    assert along == _numpy(p, feeds, init, schedule, mode, False)
    assert along[0] == "ValueError"


def _list_loop(factor: int = 10):
    """tests/test_check_control_flow_confirm.py's loop without its variable:
    iteration i writes factor * v[i] into the TensorArray.  No access, so
    no choice: its runs keep their paths."""
    from tfsem.oracle.jsonio import program_from_json, program_to_json
    from test_check_control_flow_confirm import _loop

    raw = program_to_json(_loop())
    gone = {"x", "loop/enter_5", "loop/body/AssignAddVariableOp",
            "loop/body/Read/ReadVariableOp"}
    nodes = []
    for n in raw["nodes"]:
        if n["name"] in gone:
            continue
        # (a constant that waited for the Assign waits for the body's start:
        # it stays in the loop's frame)
        n = dict(n, inputs=[("^loop/body/input_control_node" if i.lstrip("^") in gone else i)
                            for i in n.get("inputs", [])])
        if n["name"] == "loop/body/Identity":
            n["inputs"] = ["loop/body/TensorArrayV2Read/TensorListGetItem"]
        if n["name"] == "loop/body/mul/y":
            n["value"] = factor
        nodes.append(n)
    return program_from_json(dict(raw, variables=[], nodes=nodes))


def test_the_confirmation_of_a_loop_with_tensor_lists_is_the_same(fresh, monkeypatch):
    """The list loop, its factor 10 rewritten to 11: a counterexample whose
    rewritten schedule and original witness both go along kept paths (the
    lists held as numpy arrays between steps), confirmed as the labels
    confirm it."""
    from tfsem.backends import reuse
    from tfsem.oracle.dispatch import outcome_set

    p, q = _list_loop(10), _list_loop(11)
    feeds, init = {"v": Tensor(np.array([1, -2, 3]), "int64")}, {}
    original = outcome_set(p, feeds, init)
    (claimed, schedule), = outcome_set(q, feeds, init).items()
    assert claimed not in original and original.count == 1
    answers = []
    for along in (True, False):
        reuse.clear()
        if not along:
            monkeypatch.setattr(cf, "kept_path", lambda m, schedule: None)
        answers.append([(c.confirmed, c.reason, c.outcome) for c in bcf.confirm_control_flow(
            p, q, feeds, init, schedule, claimed, original, backends=["numpy"])])
    reuse.clear()
    assert answers[0] == answers[1] and answers[0][0][0], answers
    assert fresh["along"] == 2 and fresh["left"] == 0
    assert dict(answers[0][0][2].outputs)["out"].array.tolist() == [11, -22, 33]


def test_a_replay_along_the_path_stops_at_its_deadline(fresh, monkeypatch):
    """The list loop's confirmation past its deadline: cut short along the
    kept path as by the labels (the clock read every 32 steps both ways)."""
    from tfsem.backends import reuse
    from tfsem.oracle.dispatch import outcome_set

    p, q = _list_loop(10), _list_loop(11)
    feeds, init = {"v": Tensor(np.array([1, -2, 3]), "int64")}, {}
    original = outcome_set(p, feeds, init)
    (claimed, schedule), = outcome_set(q, feeds, init).items()
    assert len(schedule) > 32
    found = []
    real = cf.kept_path
    monkeypatch.setattr(cf, "kept_path", lambda m, sched: found.append(real(m, sched)) or found[-1])
    reasons = []
    for along in (True, False):
        reuse.clear()
        if not along:
            monkeypatch.setattr(cf, "kept_path", lambda m, sched: None)
        (c,) = bcf.confirm_control_flow(p, q, feeds, init, schedule, claimed, original,
                                        backends=["numpy"], deadline=0.0)
        reasons.append((c.confirmed, c.reason))
    reuse.clear()
    assert reasons[0] == reasons[1] and reasons[0][1].startswith("replay cut short: budget")
    assert found and found[0] is not None


@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TensorFlow's kernels)")
@pytest.mark.parametrize("graph", ["keras_gru_loop", "keras_lstm_loop"])
def test_the_corpus_loop_graphs_replay_on_numpy_along_their_paths(graph, fresh, monkeypatch):
    """The original's witness at the checker's first σ (zeros) and its plain
    float σ, on numpy along the kept path and by its labels: the same
    outcome (TensorLists, the recurrent cell's float arithmetic)."""
    import itertools

    from tfsem.checking import check as chk
    from controlflow_support import corpus_loop_program

    p = corpus_loop_program(graph, monkeypatch)
    zeros = next(itertools.islice(chk._generated_sigmas(p, np.random.default_rng(2)), 1))
    plain = next(s for tag, s in chk._float_sigmas(p) if tag == "plain")
    for feeds, init in (zeros, plain):
        found, _ = cf.outcomes(p, feeds, init)
        (schedule,) = found.values()
        real = cf.kept_path
        along = bcf.replay_outcome(p, feeds, init, schedule)
        monkeypatch.setattr(cf, "kept_path", lambda m, sched: None)
        assert along == bcf.replay_outcome(p, feeds, init, schedule)
        monkeypatch.setattr(cf, "kept_path", real)
    assert fresh["along"] == 2 and fresh["left"] == 0
