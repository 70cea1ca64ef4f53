"""The reference semantics with control flow (SPEC section 9, oracle/controlflow.py):
dead values, Merge, frames and iterations, the iteration bound, schedules, and
the refusals of the engines, backends and checker that do not model it."""

import json
from pathlib import Path

import pytest

from test_campaigns_fuzz import tfsem_here
from tfsem.checking.check import check_rewrite
from tfsem.oracle import controlflow as cf
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.readsfrom import Unsupported
from tfsem.oracle.semantics import graph_of, outcome_of, reference_outcomes, run_schedule
from tfsem.oracle.values import Error, Tensor

CASES = Path(__file__).parent / "cases" / "controlflow"
MODES = ("atomic", "decomposed")


def load(name: str):
    return program_from_json(json.loads((CASES / name).read_text()))


def i64(v):
    return Tensor(v, "int64")


def described(outcomes) -> set[str]:
    return {o.describe() for o in outcomes}


@pytest.mark.parametrize("mode", MODES)
def test_a_conditional_assigns_only_in_the_taken_branch(mode):
    p = load("cond_assign.json")
    taken = reference_outcomes(p, {"p": Tensor(True, "bool")}, {"x": i64(1)}, mode)
    assert described(taken) == {"index = i32 1, out = 5, x := 5"}
    untaken = reference_outcomes(p, {"p": Tensor(False, "bool")}, {"x": i64(1)}, mode)
    # the dead Write writes nothing; the Read in the other branch reads x
    assert described(untaken) == {"index = i32 0, out = 1, x := 1"}


@pytest.mark.parametrize("mode", MODES)
def test_a_counted_loop_runs_its_body_n_times(mode):
    p = load("counted_loop.json")
    for n in (0, 1, 4):
        got = reference_outcomes(p, {"n": i64(n)}, {"x": i64(10)}, mode)
        assert described(got) == {f"out = {n}, x := {10 + n}"}


def test_the_iteration_bound_makes_the_answer_unknown_naming_the_loop():
    p = load("counted_loop.json")
    assert described(reference_outcomes(p, {"n": i64(16)}, {"x": i64(0)})) == {"out = 16, x := 16"}
    with pytest.raises(cf.LoopBoundExceeded) as info:
        reference_outcomes(p, {"n": i64(17)}, {"x": i64(0)})
    assert isinstance(info.value, BudgetExceeded)
    assert info.value.frame == "L" and info.value.limit == 16 and "'L'" in str(info.value)
    # a larger bound lets it finish
    assert described(reference_outcomes(p, {"n": i64(17)}, {"x": i64(0)}, max_iterations=20)) \
        == {"out = 17, x := 17"}


def test_schedules_name_frames_and_iterations_and_replay():
    p = load("counted_loop.json")
    for mode in MODES:
        got = reference_outcomes(p, {"n": i64(2)}, {"x": i64(0)}, mode)
        [(outcome, schedule)] = got.items()
        assert "merge@L:2" in schedule and "inc@L:1" + ("@read" if mode == "decomposed" else "") \
            in schedule
        s = run_schedule(p, {"n": i64(2)}, {"x": i64(0)}, schedule, mode)
        assert outcome_of(p, graph_of(p), s, "outputs+state") == outcome
        with pytest.raises(ValueError, match="not enabled"):
            run_schedule(p, {"n": i64(2)}, {"x": i64(0)}, ["merge@L:0"], mode)


def merge_program(extra_input: str | None = None):
    nodes = [{"name": "a", "op": "Const", "value": 1},
             {"name": "b", "op": "Const", "value": 2},
             {"name": "sa", "op": "Switch", "inputs": ["a", "$p"]},
             {"name": "m", "op": "Merge", "inputs": ["sa:1", "b"]}]
    return program_from_json({"format": "tfsem.program/1", "variables": [],
                              "feeds": {"p": {"dtype": "bool", "shape": []}},
                              "nodes": nodes, "outputs": {"v": "m", "i": "m:1", "dead": "sa:0"}})


def test_merge_of_two_live_inputs_is_a_choice_and_a_dead_fetch_is_an_error():
    p = merge_program()
    both = reference_outcomes(p, {"p": Tensor(True, "bool")}, {})
    # TensorFlow forwards whichever live input arrives first
    assert described(both) == {'dead = <dead>, i = i32 0, v = 1',
                               'dead = <dead>, i = i32 1, v = 2'}
    one = reference_outcomes(p, {"p": Tensor(False, "bool")}, {})
    [outcome] = one
    outputs = dict(outcome.outputs)
    assert outputs["v"] == i64(2) and outputs["i"] == Tensor(1, "int32")
    assert outputs["dead"] == i64(1)


def test_an_error_predicate_runs_neither_branch():
    """TensorFlow fails the step when a Switch's predicate failed: neither
    branch runs (docs/semantics.md, "An error as a predicate").  Both ports
    are dead: the Read and the Write fire dead, x keeps its value, and the
    Merge of two dead inputs is dead; a fetch of what the failed Switch made
    dead is the predicate's error, the one TensorFlow fails the step with."""
    p = load("cond_assign.json")
    for mode in MODES:
        got = reference_outcomes(p, {"p": Error("uninitialized")}, {"x": i64(3)}, mode)
        assert described(got) == {"index = <uninitialized>, out = <uninitialized>, x := 3"}


def _error_predicate_program(wait_on_pivot: bool):
    """pred = !(Read(x) == Read(x)): false whenever x is initialized, an error
    when it is not.  The else branch writes y := 2 through a constant that
    waits for its pivot only (as an inlined branch function's constants do),
    with y's own handle, not a Switch of it."""
    two = {"name": "two", "op": "Const", "value": 2}
    if wait_on_pivot:
        two["inputs"] = ["^pf"]
    return program_from_json({"format": "tfsem.program/1", "variables": ["x", "y"], "nodes": [
        {"name": "vx", "op": "Var", "var": "x"}, {"name": "rx", "op": "Read", "inputs": ["vx"]},
        {"name": "same", "op": "Equal", "inputs": ["rx", "rx"]},
        {"name": "pred", "op": "LogicalNot", "inputs": ["same"]},
        {"name": "k", "op": "Const", "value": 0},
        {"name": "sk", "op": "Switch", "inputs": ["k", "pred"]},
        {"name": "pf", "op": "Identity", "inputs": ["sk:0"]},
        {"name": "pt", "op": "Identity", "inputs": ["sk:1"]},
        two, {"name": "vy", "op": "Var", "var": "y"},
        {"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["vy", "two"]},
        {"name": "m", "op": "Merge", "inputs": ["pf", "pt"]}], "outputs": {"o": "m"}})


def test_nothing_waiting_for_a_switch_with_an_error_predicate_has_an_effect():
    """The write y := 2 waits for the else pivot by a control edge only.  A
    predicate that failed runs it not (TensorFlow never runs it: the step
    fails before the Switch), while an unconditional y := 2 still runs: the
    two differ at that σ.  (When the error went to port 0 as a value, the
    constant fired after the error-valued pivot and both programs wrote
    y := 2: the check found no counterexample, and TensorFlow shows one,
    tests/test_controlflow_tensorflow.py.)"""
    from tfsem.checking import check_rewrite
    p, q = _error_predicate_program(True), _error_predicate_program(False)
    uninit = {"x": Error("uninitialized"), "y": i64(0)}
    for mode in MODES:
        assert described(reference_outcomes(p, {}, uninit, mode)) == {"o = <uninitialized>, x := <uninitialized>, y := 0"}
        assert described(reference_outcomes(q, {}, uninit, mode)) == {"o = <uninitialized>, x := <uninitialized>, y := 2"}
        for x in (0, -7):
            init = {"x": i64(x), "y": i64(0)}
            assert set(reference_outcomes(p, {}, init, mode)) == set(reference_outcomes(q, {}, init, mode))
    v = check_rewrite(p, q, "atomic", "outputs+state", timeout=10, backends=False)
    assert v.verdict == "unsound", v.reason
    assert v.counterexample.init["x"] == Error("uninitialized")


def test_a_loop_in_an_untaken_branch_is_dead_as_a_whole():
    raw = json.loads((CASES / "counted_loop.json").read_text())
    # gate the loop's initial value by a Switch whose taken port is not the loop's
    raw["feeds"] = {"p": {"dtype": "bool", "shape": []}}
    raw["nodes"].append({"name": "gate", "op": "Switch", "inputs": ["i0", "$p"]})
    for n in raw["nodes"]:
        if n["name"] == "enter":
            n["inputs"] = ["gate:1"]
    raw["nodes"].append({"name": "alt", "op": "Identity", "inputs": ["gate:0"]})
    raw["nodes"].append({"name": "m", "op": "Merge", "inputs": ["exit", "alt"]})
    raw["outputs"] = {"out": "m", "loop": "exit"}
    p = program_from_json(raw)
    for mode in MODES:
        dead = reference_outcomes(p, {"p": Tensor(False, "bool"), "n": i64(3)}, {"x": i64(0)}, mode)
        # the loop's Exit sends a dead value out once the loop instance is done
        assert described(dead) == {"loop = <dead>, out = 0, x := 0"}
        live = reference_outcomes(p, {"p": Tensor(True, "bool"), "n": i64(3)}, {"x": i64(0)}, mode)
        assert described(live) == {"loop = 3, out = 3, x := 3"}


def test_engines_other_than_the_reference_refuse_control_flow():
    p = load("counted_loop.json")
    got = outcome_set(p, {"n": i64(3)}, {"x": i64(0)})
    assert got.count == 1 and described(got) == {"out = 3, x := 3"}
    assert outcome_set(p, {"n": i64(3)}, {"x": i64(0)}, engine="reference").count == 1
    for engine in ("readsfrom", "symmetry"):
        with pytest.raises(Unsupported, match="control flow"):
            outcome_set(p, {"n": i64(3)}, {"x": i64(0)}, engine=engine)


def test_the_checker_never_calls_an_unsound_control_flow_rewrite_sound():
    raw = json.loads((CASES / "cond_assign.json").read_text())
    p = program_from_json(raw)
    assert check_rewrite(p, p).verdict == "sound"
    changed = json.loads(json.dumps(raw))
    changed["nodes"][2]["value"] = 6      # an unsound rewrite: the branch writes 6
    # (checking/control_flow.py: found in a case of the predicate, confirmed
    # on the program with control flow)
    v = check_rewrite(p, changed)
    assert v.verdict == "unsound" and v.counterexample is not None


def test_cli_outcomes_and_the_bound(tmp_path, capsys):
    # by tfsem.cli.main in this process (test_controlflow_import runs `tfsem
    # outcomes` on a loop as a process)
    case = str(CASES / "counted_loop.json")
    ok = tfsem_here(capsys, "outcomes", case, "--feed", "n=2", "--init", "x=1")
    assert ok.returncode == 0 and "out = 2, x := 3" in ok.stdout
    unknown = tfsem_here(capsys, "outcomes", case, "--feed", "n=40", "--init", "x=1", "--max-iterations", "8")
    assert unknown.returncode == 3 and "'L'" in unknown.stdout and "bound of 8" in unknown.stdout
    refused = tfsem_here(capsys, "outcomes", case, "--feed", "n=2", "--engine", "readsfrom")
    assert refused.returncode == 2 and "control flow" in refused.stderr


def racing_loop(parallel: int):
    """while i < n: x = Read(x) + 1 (a read and a separate write), the
    counter independent of the body's accesses: iterations may overlap up to
    parallel_iterations, and overlapping read-modify-writes lose updates."""
    return program_from_json({
        "format": "tfsem.program/1", "variables": ["x"],
        "nodes": [
            {"name": "vx", "op": "Var", "var": "x"},
            {"name": "i0", "op": "Const", "value": 0},
            {"name": "enter", "op": "Enter", "frame_name": "L", "inputs": ["i0"],
             "parallel_iterations": parallel},
            {"name": "hx", "op": "Enter", "frame_name": "L", "is_constant": True, "inputs": ["vx"]},
            {"name": "lim", "op": "Enter", "frame_name": "L", "is_constant": True, "inputs": ["$n"]},
            {"name": "merge", "op": "Merge", "inputs": ["enter", "next"]},
            {"name": "less", "op": "Less", "inputs": ["merge", "lim"]},
            {"name": "cond", "op": "LoopCond", "inputs": ["less"]},
            {"name": "sw", "op": "Switch", "inputs": ["merge", "cond"]},
            {"name": "body", "op": "Identity", "inputs": ["sw:1"]},
            {"name": "one", "op": "Const", "value": 1, "inputs": ["^body"]},
            {"name": "r", "op": "Read", "inputs": ["hx", "^body"]},
            {"name": "r1", "op": "Add", "inputs": ["r", "one"]},
            {"name": "w", "op": "Write", "inputs": ["hx", "r1"]},
            {"name": "add", "op": "Add", "inputs": ["body", "one"]},
            {"name": "next", "op": "NextIteration", "inputs": ["add"]},
            {"name": "exit", "op": "Exit", "inputs": ["sw"]}],
        "outputs": {"count": "exit"}})


def test_parallel_iterations_bounds_how_far_iterations_overlap():
    finals = {}
    for parallel in (1, 2, 10):
        got = reference_outcomes(racing_loop(parallel), {"n": i64(3)}, {"x": i64(0)})
        finals[parallel] = {dict(o.state)["x"].array.item() for o in got}
    # one iteration at a time: no update is lost
    assert finals[1] == {3}
    # more than one at a time: updates may be lost
    assert finals[2] == finals[10] == {1, 2, 3}
    # a run of ten-way overlap (iteration 3 starts before iteration 0 has
    # read x) is not a run of a loop with parallel_iterations 2
    wide = reference_outcomes(racing_loop(10), {"n": i64(3)}, {"x": i64(0)})
    schedule = next(s for s in wide.values()
                    if s.index("merge@L:3") < s.index("r@L:0"))
    run_schedule(racing_loop(10), {"n": i64(3)}, {"x": i64(0)}, schedule)
    with pytest.raises(ValueError, match="not enabled"):
        run_schedule(racing_loop(2), {"n": i64(3)}, {"x": i64(0)}, schedule)


@pytest.mark.parametrize("command", [
    ["run", "--backend", "numpy", "--feed", "n=2", "--init", "x=1"],
    ["rewrite", "cse"],
])   # (`export` writes the primitives: tests/test_controlflow_export.py)
def test_commands_that_do_not_model_control_flow_refuse_it(command, tmp_path, capsys):
    case = str(CASES / "counted_loop.json")
    args = [a.replace("OUT", str(tmp_path / "g.pbtxt")) for a in command]
    if args[0] == "rewrite":
        args.append(case)
    else:
        args.insert(1, case)
    got = tfsem_here(capsys, *args)   # in this process: an escaping exception fails the test
    assert got.returncode == 2, got.stderr
    assert "control flow" in got.stderr and "Traceback" not in got.stderr
