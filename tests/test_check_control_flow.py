"""The checker on programs with control flow (checking/control_flow.py), and
the static deadness it proves with (oracle/deadness.py).

Every `sound` must be right: the differential test below checks each verdict
on generated pairs against the enumerating reference semantics
(oracle/controlflow.py) in both modes, at σ of its own; every `unsound`
must come with a counterexample the reference confirms.  A few examples by
default; 20 times more under the nightly profile (tests/conftest.py).
"""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfsem.checking.check import check_rewrite
from tfsem.generators.control_flow import control_flow_programs, summing_loop, xla_lift_witness
from tfsem.oracle.controlflow import DEAD_REASON
from tfsem.oracle.deadness import Undecided, predicate_feeds, specialize
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.outcomes import make_outcome
from tfsem.oracle.program import ControlIn, ProgramError
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import Error, Tensor, UNINITIALIZED
from tfsem.rewrites.registry import get_pass
from backends_support import CONFIRMED_ORACLE_ARRAYS

MODES = ("atomic", "decomposed")
NIGHTLY = settings.get_current_profile_name() == "nightly"
FEW = settings(max_examples=100 if NIGHTLY else 4, deadline=None, database=None,
               suppress_health_check=list(HealthCheck))


def i64(v: int) -> Tensor:
    return Tensor(v, "int64")


def sigmas(p, extra=()):
    """A few σ: feeds and variables small, one variable uninitialized."""
    out = []
    for k, vals in enumerate(((0, False), (1, True), (2, True), (-1, False))):
        v, b = vals
        feeds = {f: Tensor(b, "bool") if p.feed_type(f).dtype == "bool" else i64(abs(v) % 3)
                 for f in p.feed_names}
        init = {x: (Error(UNINITIALIZED) if k == 3 and j == 0 else i64(v + j))
                for j, x in enumerate(sorted(p.variables))}
        out.append((feeds, init))
    return out + list(extra)


# ---------------------------------------------------------------------------
# Static deadness is exact (the proof by cases rests on it)


@FEW
@given(control_flow_programs(max_blocks=2, kinds=("cond",)), st.sampled_from(MODES))
def test_specialization_has_the_outcomes_of_the_program(p, mode):
    feeds = sorted(predicate_feeds(p))
    for bits in itertools.product((False, True), repeat=len(feeds)):
        beta = dict(zip(feeds, bits))
        try:
            sp = specialize(p, beta)
        except Undecided:
            continue     # (a predicate computed from a Read)
        assert not sp.program.has_control_flow
        for f_, init in sigmas(p)[:2]:
            fixed = {**f_, **{f: Tensor(b, "bool") for f, b in beta.items()}}
            want = set(outcome_set(p, fixed, init, mode))
            got = set(outcome_set(sp.program, {k: v for k, v in f_.items() if k not in beta},
                                  init, mode))
            # a dead fetch is the error `dead` in the original, absent here
            dead = {o: Error(DEAD_REASON) for o in sp.dead_outputs}
            got = {make_outcome({**dict(o.outputs), **dead}, dict(o.state), "outputs+state")
                   for o in got}
            assert got == want, (beta, mode)


# ---------------------------------------------------------------------------
# Every verdict against the reference


def _mutations(p):
    """Rewrites of p: each built-in control-flow pass, and each control edge
    dropped (one at a time)."""
    out = []
    for name in ("dead-branch", "licm", "licm-reads", "xla-lift"):
        q = get_pass(name)(p)
        if q != p:
            out.append((name, q))
    raw = program_to_json(p)
    for k, node in enumerate(raw["nodes"]):
        for j, inp in enumerate(node.get("inputs", [])):
            if inp.startswith("^"):
                copy = json.loads(json.dumps(raw))
                del copy["nodes"][k]["inputs"][j]
                try:
                    out.append((f"drop {inp} of {node['name']}", program_from_json(copy)))
                except ProgramError:
                    pass    # (a node that only a control edge kept inside its loop)
    return out


def _agrees_with_reference(p, q, mode, verdict):
    if verdict.verdict == "sound":
        for feeds, init in sigmas(p):
            try:
                mine = set(outcome_set(q, feeds, init, mode))
                theirs = set(outcome_set(p, feeds, init, mode))
            except BudgetExceeded:
                continue
            assert mine <= theirs, ("a false sound", mode, verdict.reason)
    elif verdict.verdict == "unsound":
        cx = verdict.counterexample
        state = run_schedule(q, cx.feeds, cx.init, cx.schedule, mode)
        outcome = outcome_of(q, graph_of(q), state, verdict.observe)
        assert outcome == cx.outcome
        assert outcome not in set(outcome_set(p, cx.feeds, cx.init, mode, verdict.observe))


@FEW
@given(control_flow_programs(max_blocks=2), st.sampled_from(MODES), st.data())
def test_verdicts_agree_with_the_reference(p, mode, data):
    candidates = _mutations(p)
    if not candidates:
        return
    name, q = data.draw(st.sampled_from(candidates), label="rewrite")
    verdict = check_rewrite(p, q, mode, timeout=1.5, backends=False, classify=False)
    _agrees_with_reference(p, q, mode, verdict)


# ---------------------------------------------------------------------------
# Known cases


def diamond(control: bool = True, pred=None):
    """if p: x += 1; r = Read x (after it)   else: r = Read x   -- r fetched."""
    pred_node = ([{"name": "pred", "op": "Const", "value": {"dtype": "bool", "value": pred}}]
                 if pred is not None else [])
    p_in = "pred" if pred is not None else "$p"
    raw = {"format": "tfsem.program/1", "variables": ["x"],
           "feeds": {} if pred is not None else {"p": {"dtype": "bool", "shape": []}},
           "nodes": pred_node + [
               {"name": "vx", "op": "Var", "var": "x"},
               {"name": "sx", "op": "Switch", "inputs": ["vx", p_in]},
               {"name": "one", "op": "Const", "value": 1},
               {"name": "so", "op": "Switch", "inputs": ["one", p_in]},
               {"name": "add", "op": "Assign", "fn": "Add", "inputs": ["sx:1", "so:1"]},
               {"name": "rt", "op": "Read", "inputs": ["sx:1"] + (["^add"] if control else [])},
               {"name": "rf", "op": "Read", "inputs": ["sx:0"]},
               {"name": "m", "op": "Merge", "inputs": ["rf", "rt"]}],
           "outputs": {"r": "m"}}
    return program_from_json(raw)


def loop(trips="3", read_after=True):
    return summing_loop(trips, read_after)


@pytest.mark.parametrize("mode", MODES)
def test_a_conditional_is_proved_by_cases_and_a_dropped_edge_refuted(mode):
    p = diamond()
    from tfsem.rewrites.edit import renamed
    v = check_rewrite(p, renamed(p), mode, timeout=5)
    assert v.verdict == "sound" and "by cases on the bool feeds p" in v.reason
    v = check_rewrite(p, diamond(control=False), mode, timeout=5)
    assert v.verdict == "unsound" and v.differs == {"output": "r"}
    assert v.counterexample.feeds["p"] == Tensor(True, "bool")
    assert "numpy" in v.confirmed


@pytest.mark.parametrize("mode", MODES)
def test_a_dropped_edge_in_a_loop_is_refuted_with_frame_and_iteration(mode):
    v = check_rewrite(loop(), loop(read_after=False), mode, timeout=5)
    assert v.verdict == "unsound" and v.differs == {"output": "s"}
    steps = v.counterexample.schedule
    assert "read@L:0" in steps and ("add@L:2" in steps or "add@L:2@write" in steps)
    assert v.confirmed == CONFIRMED_ORACLE_ARRAYS


def test_loops_are_never_proved_and_the_bound_makes_unknown():
    from tfsem.rewrites.edit import renamed
    v = check_rewrite(loop(), renamed(loop()), timeout=2)
    assert v.verdict == "no-counterexample" and "part of a loop" in v.reason
    v = check_rewrite(loop("$n"), renamed(loop("$n")), timeout=1.5)
    assert v.verdict == "unknown"
    assert "loop 'L' reached the iteration bound of 16" in v.reason


@pytest.mark.parametrize("mode", MODES)
def test_dead_branch_removal_is_proved(mode):
    for pred in (True, False):
        p = diamond(pred=pred)
        q = get_pass("dead-branch")(p)
        assert not q.has_control_flow
        v = check_rewrite(p, q, mode, timeout=5)
        assert v.verdict == "sound", v.reason
        assert "every Switch predicate a constant" in v.reason


@pytest.mark.parametrize("mode", MODES)
def test_licm_reads_smallest_counterexample(mode):
    p = loop("2")
    q = get_pass("licm-reads")(p)
    assert q.node["read"].op == "Enter"
    v = check_rewrite(p, q, mode, timeout=5)
    assert v.verdict == "unsound" and v.differs == {"output": "s"}


@pytest.mark.parametrize("mode", MODES)
def test_licm_moves_a_pure_node_and_keeps_the_outcomes(mode):
    raw = program_to_json(loop("2"))
    raw["nodes"] += [{"name": "c", "op": "Const", "value": 5},
                     {"name": "ce", "op": "Enter", "frame_name": "L", "is_constant": True,
                      "inputs": ["c"]},
                     {"name": "inv", "op": "Add", "inputs": ["ce", "lim"]},
                     {"name": "s_add2", "op": "Add", "inputs": ["s_add", "inv"]}]
    for n in raw["nodes"]:
        if n["name"] == "s_next":
            n["inputs"] = ["s_add2"]
    p = program_from_json(raw)
    q = get_pass("licm")(p)
    assert q.node["inv"].op == "Enter" and q.frames["inv/hoisted"] == ()
    v = check_rewrite(p, q, mode, timeout=1)
    assert v.verdict == "no-counterexample"


def xla_smallest():
    return xla_lift_witness()[0]


@pytest.mark.parametrize("mode", MODES)
def test_xla_lift_smallest_counterexample(mode):
    p = xla_smallest()
    q = get_pass("xla-lift")(p)
    assert "L/x/write" in q.node
    v = check_rewrite(p, q, mode, timeout=5)
    assert v.verdict == "unsound" and v.differs == {"output": "after"}
    # the lost update: x ends as it began (the Write of 5 overwritten)
    assert v.counterexample.outcome.state == (("x", v.counterexample.init["x"]),)


def test_passes_without_control_flow_still_refuse_it():
    from tfsem.oracle.program import ProgramError
    with pytest.raises(ProgramError, match="does not handle control flow"):
        get_pass("cse")(diamond())
    assert get_pass("licm").control_flow and get_pass("licm").generator


def test_a_control_input_of_a_merge_from_a_dead_node_still_orders_it():
    """Static deadness keeps the wait a dead node imposes on a Merge."""
    p = diamond(pred=True)
    raw = program_to_json(p)
    for n in raw["nodes"]:
        if n["name"] == "m":
            n["inputs"] = ["rf", "rt", "^rf"]
    p = program_from_json(raw)
    sp = specialize(p, {})
    assert ControlIn("rf") in sp.program.node["m"].inputs


@FEW
@given(control_flow_programs(max_blocks=2), st.sampled_from(MODES),
       st.sampled_from(("dead-branch", "licm")))
def test_sound_passes_add_no_outcome_at_any_sigma_tried(p, mode, name):
    """The claims of the sound control-flow passes on programs with loops,
    where the checker proves nothing: every outcome of the rewrite at each σ
    tried is one of the original's (the reference enumerates both)."""
    import time
    q = get_pass(name)(p)
    stop = time.monotonic() + 15
    for feeds, init in sigmas(p):
        if time.monotonic() > stop:
            break
        try:   # (a drawn loop's interleavings once took minutes: 5 s each, 15 s a program)
            mine = set(outcome_set(q, feeds, init, mode, max_seconds=5))
            theirs = set(outcome_set(p, feeds, init, mode, max_seconds=5))
        except BudgetExceeded:
            continue
        assert mine <= theirs, (name, mode)


def test_check_command_prints_the_frame_and_iteration_of_each_step(tmp_path, capsys):
    from tfsem import cli
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(program_to_json(loop())))
    b.write_text(json.dumps(program_to_json(loop(read_after=False))))
    code = cli.main(["check", str(a), str(b), "--timeout", "5", "--no-tensorflow"])
    out = capsys.readouterr().out
    assert code == 1 and out.startswith("unsound: output 's' differs")
    assert "read@L:0" in out and "confirmed on: oracle, numpy" in out
