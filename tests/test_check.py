"""Verdicts of the refinement checker (issue 5): invalid rewrites, proofs,
counterexamples that reproduce, minimization, budgets and the command line."""

from __future__ import annotations

import json
import math

import pytest
import z3

from tfsem.checking import check as check_module
from tfsem.checking import check_case, check_rewrite
from tfsem.cli import main
from tfsem.generators import families as F
from tfsem.oracle import functions as fns
from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import case_to_json, make_case, program_to_json, save_program
from tfsem.oracle.program import TensorType
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import value_from_json
from tfsem.rewrites.edit import renamed

SETTINGS = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]


def replay(original, rewritten, verdict_json):
    """Re-check a JSON counterexample with the concrete oracle: the rewritten
    schedule's outcome at σ, and whether the original can produce it."""
    cex = verdict_json["counterexample"]
    feeds = {k: value_from_json(v, dtype=original.feed_type(k).dtype) for k, v in cex["feeds"].items()}
    init = {k: value_from_json(v, dtype=original.variables[k].dtype) for k, v in cex["init"].items()}
    sem, obs = verdict_json["semantics"], verdict_json["observe"]
    state = run_schedule(rewritten, feeds, init, cex["schedule"], sem)
    outcome = outcome_of(rewritten, graph_of(rewritten), state, obs)
    assert outcome.to_json() == cex["outcome"]
    originals = outcome_set(original, feeds, init, sem, obs)
    assert len(cex["original_outcomes"]) == min(originals.count, 100) == cex["original_count"]
    return outcome, originals


def pure(nodes, outputs=None, feeds=None):
    return P.program(nodes, outputs or {"out": "r"}, [], feeds)


# ---------------------------------------------------------------------------
# Validity and interface


def test_malformed_rewrite_is_invalid_and_names_the_node():
    p, _, _ = F.first_example()
    bad = program_to_json(p)
    bad["nodes"][3]["op"] = "Frobnicate"
    v = check_rewrite(p, bad)
    assert v.verdict == "invalid"
    assert "'r'" in v.reason and "Frobnicate" in v.reason
    assert v.exit_status == 1


@pytest.mark.parametrize("change, words", [
    (lambda d: d["outputs"].update({"extra": "r"}), "output 'extra'"),
    (lambda d: d["outputs"].pop("out") and d["outputs"].update({"renamed": "r"}), "output 'out'"),
    (lambda d: d.update(variables=["x", "y"]), "variable 'y'"),
    (lambda d: d["nodes"][1].update(inputs=["vx", "$C"]), "feed 'C'"),
    (lambda d: d.update(variables={"x": {"dtype": "float32", "shape": []}}), "declared int64[]"),
])
def test_interface_differences_are_invalid(change, words):
    p, _, _ = F.first_example()
    q = program_to_json(p)
    change(q)
    v = check_rewrite(p, q)
    assert v.verdict == "invalid", v.reason
    assert words in v.reason


def test_a_rewrite_may_drop_a_feed():
    p = pure([P.apply("r", "Add", "$a", "$b")])
    q = pure([P.apply("r", "Identity", "$a")])
    assert check_rewrite(p, q).verdict == "unsound"   # valid interface, wrong values


def test_malformed_original_is_bad_input():
    bad = P.Program({}, (P.apply("r", "Add", "$a"),), {"out": P.DataIn("r")})
    with pytest.raises(P.ProgramError):
        check_rewrite(bad, bad)


# ---------------------------------------------------------------------------
# Proofs


@pytest.mark.parametrize("semantics, observe", SETTINGS)
@pytest.mark.parametrize("family", [
    lambda: F.first_example(True), lambda: F.first_example(False), lambda: F.figure1(2, "Add"),
    lambda: F.figure1(2, "Concat"), lambda: F.lost_update(3), lambda: F.writes_reads(),
    lambda: F.load_store(), lambda: F.blind_writers(3), lambda: F.assign_adds(3)])
def test_every_program_refines_itself(family, semantics, observe):
    p, _, _ = family()
    assert check_rewrite(p, p, semantics, observe).stats["identical"]
    v = check_rewrite(p, renamed(p), semantics, observe)
    assert v.verdict == "sound", v.reason
    assert v.stats["queries"] == 0      # identical terms: no solver needed
    assert v.stats["path"] == "symbolic" and "flagged" in v.stats   # the search ran


def test_unchanged_components_are_not_explored():
    # two independent parts; the rewrite drops the control edge of one of them
    p1, _, _ = F.first_example(True)
    extra = [P.var("vy", "y"), P.read("ry", "vy"), P.apply("n", "Neg", "ry")]
    p = P.program(list(p1.nodes) + extra, {"out": "r", "neg": "n"}, ["x", "y"])
    q = P.program([n if n.name != "r" else P.read("r", "vx2") for n in p1.nodes] + extra,
                  {"out": "r", "neg": "n"}, ["x", "y"])
    v = check_rewrite(p, q)
    assert v.verdict == "unsound" and v.stats["unchanged_components"] == 1
    replay(p, q, v.to_json())                # the schedule covers the skipped part too
    v = check_rewrite(q, p, structural=False)   # the engine's path (not the structural rule)
    assert v.verdict == "sound"
    assert v.stats["flagged"] == ["x"]       # y, left alone, need not be flagged


def test_commutative_operations_match_structurally():
    for dtype in ("int64", "float32"):
        t = {"a": TensorType(dtype), "b": TensorType(dtype)}
        for op in ("Add", "Mul"):
            ab = pure([P.apply("r", op, "$a", "$b")], feeds=t)
            ba = pure([P.apply("r", op, "$b", "$a")], feeds=t)
            v = check_rewrite(ab, ba)
            assert v.verdict == "sound" and v.stats["queries"] == 0


def test_adding_a_control_edge_is_sound_and_removing_it_is_not():
    with_edge, _, _ = F.first_example(True)
    without, _, _ = F.first_example(False)
    assert check_rewrite(without, with_edge).verdict == "sound"
    v = check_rewrite(with_edge, without)
    assert v.verdict == "unsound"
    assert v.differs == {"output": "out"}
    outcome, originals = replay(with_edge, without, v.to_json())
    assert outcome not in originals
    assert v.confirmed[0] == "oracle"


def test_integer_algebra_is_proved_with_wraparound():
    a2 = pure([P.apply("r", "Add", "$a", "$a")])
    times2 = pure([P.const("two", 2), P.apply("r", "Mul", "$a", "two")])
    v = check_rewrite(a2, times2)
    assert v.verdict == "sound"
    assert v.stats["queries"] >= 1       # a real proof, not a structural match
    # (a + 1) - 1 == a holds with wraparound, even at the int64 maximum
    round_trip = pure([P.const("one", 1), P.apply("s", "Add", "$a", "one"),
                       P.apply("r", "Sub", "s", "one")])
    ident = pure([P.apply("r", "Identity", "$a")])
    assert check_rewrite(round_trip, ident).verdict == "sound"


def test_float_signed_zero_makes_x_plus_zero_unsound():
    f32 = {"a": TensorType("float32")}
    plus0 = pure([P.const("z", 0.0, dtype="float32"), P.apply("r", "Add", "$a", "z")], feeds=f32)
    ident = pure([P.apply("r", "Identity", "$a")], feeds=f32)
    v = check_rewrite(plus0, ident)
    assert v.verdict == "unsound"
    cex = v.to_json()["counterexample"]
    assert cex["feeds"]["a"] == {"dtype": "float32", "value": -0.0}     # the only witness
    replay(plus0, ident, v.to_json())
    # but x + (-0.0) == x for every float, NaN included
    plus_neg0 = pure([P.const("z", -0.0, dtype="float32"), P.apply("r", "Add", "$a", "z")],
                     feeds=f32)
    assert check_rewrite(plus_neg0, ident).verdict == "sound"


def test_nan_propagation_of_max_is_numpys():
    f32 = {"a": TensorType("float32"), "b": TensorType("float32")}
    mx = pure([P.apply("r", "Max", "$a", "$b")], feeds=f32)
    swapped = pure([P.apply("r", "Max", "$b", "$a")], feeds=f32)
    # Max is commutative except on a tie of +0.0 and -0.0 (numpy returns one operand)
    v = check_rewrite(mx, swapped)
    assert v.verdict == "unsound"
    feeds = v.to_json()["counterexample"]["feeds"]
    a, b = feeds["a"]["value"], feeds["b"]["value"]
    assert a == b == 0.0 and math.copysign(1, a) != math.copysign(1, b)   # +0.0 and -0.0
    # max(a, a) == a, NaN included
    self_max = pure([P.apply("r", "Max", "$a", "$a")], feeds={"a": TensorType("float32")})
    ident = pure([P.apply("r", "Identity", "$a")], feeds={"a": TensorType("float32")})
    assert check_rewrite(self_max, ident).verdict == "sound"


def test_concat_and_split_of_vectors():
    t = {"a": TensorType("int64", (4,))}
    halves = P.program([P.apply("s", "Split", "$a"), P.apply("r", "Concat", "s:0", "s:1")],
                       {"out": "r"}, [], t)
    ident = pure([P.apply("r", "Identity", "$a")], feeds=t)
    assert check_rewrite(halves, ident).verdict == "sound"
    swapped = P.program([P.apply("s", "Split", "$a"), P.apply("r", "Concat", "s:1", "s:0")],
                        {"out": "r"}, [], t)
    v = check_rewrite(halves, swapped)
    assert v.verdict == "unsound"
    replay(halves, swapped, v.to_json())


def test_uninitialized_variables_are_covered():
    # x - x is 0 only when x is initialized: an uninitialized read is an error
    sub = P.program([P.var("vx", "x"), P.read("r0", "vx"), P.apply("r", "Sub", "r0", "r0")],
                    {"out": "r"}, ["x"])
    zero = P.program([P.const("r", 0)], {"out": "r"}, ["x"])
    v = check_rewrite(sub, zero)
    assert v.verdict == "unsound"
    assert v.to_json()["counterexample"]["init"] == {"x": {"error": "uninitialized"}}
    replay(sub, zero, v.to_json())


def test_an_assign_of_an_error_changes_nothing():
    # x += (y read); y uninitialized -> x unchanged, so dropping the assign is
    # unsound only when y is initialized
    prog = P.program([P.var("vy", "y"), P.read("ry", "vy"), P.var("vx", "x"),
                      P.assign("a", "Add", "vx", "ry")], {}, ["x", "y"])
    dropped = P.program([P.var("vy", "y"), P.read("ry", "vy")], {}, ["x", "y"])
    v = check_rewrite(prog, dropped)
    assert v.verdict == "unsound"
    assert v.differs == {"variable": "x"}
    init = v.to_json()["counterexample"]["init"]
    assert init["y"] != {"error": "uninitialized"} and init["x"] != {"error": "uninitialized"}
    assert init["y"] != 0      # x += 0 changes nothing either


@pytest.mark.parametrize("semantics, expect", [("atomic", "unsound"), ("decomposed", "sound")])
def test_split_assign_depends_on_the_semantics(semantics, expect):
    prog, _, _ = F.increments(2, atomic=True)
    split, _, _ = F.increments(2, atomic=False)
    v = check_rewrite(prog, split, semantics)
    assert v.verdict == expect
    if expect == "unsound":
        assert v.differs == {"variable": "x"}
        replay(prog, split, v.to_json())


# ---------------------------------------------------------------------------
# Readable counterexamples


def test_sigma_is_minimized_towards_zero():
    p = pure([P.const("c", 1), P.apply("r", "Add", "$a", "c")], feeds={"b": TensorType()})
    q = pure([P.const("c", 2), P.apply("r", "Add", "$a", "c")], feeds={"b": TensorType()})
    v = check_rewrite(p, q)
    assert v.verdict == "unsound"
    cex = v.to_json()["counterexample"]
    assert cex["feeds"] == {"a": 0, "b": 0}


def test_the_witness_schedule_is_in_canonical_order_where_it_can_be():
    p, _, _ = F.first_example(True)
    q, _, _ = F.first_example(False)
    v = check_rewrite(p, q)
    cex = v.to_json()["counterexample"]
    # the read must come before the write; the Var nodes need not move
    assert cex["schedule"].index("r") < cex["schedule"].index("w")
    assert cex["key_steps"] == ["r", "w"]


def test_text_output_lists_sigma_the_run_and_all_original_outcomes():
    p, _, _ = F.writes_reads()
    nodes = [n if n.name != "r1" else P.read("r1", "vx2") for n in p.nodes]
    q = P.program(nodes, {"r0": "r0", "r1": "r1"}, ["X", "Y"])
    v = check_rewrite(p, q)
    text = v.describe()
    assert v.verdict == "unsound"
    assert "init:" in text and "rewritten schedule:" in text and "rewritten outcome:" in text
    count = v.counterexample.original_count
    assert f"original outcomes at this σ ({count})" in text
    assert text.count("schedule:") == count + 1


def test_json_is_strict_and_complete():
    f32 = {"a": TensorType("float32")}
    p = pure([P.apply("r", "Sub", "$a", "$a")], feeds=f32)
    q = pure([P.const("r", 0.0, dtype="float32")], feeds=f32)
    v = check_rewrite(p, q)
    assert v.verdict == "unsound"       # NaN - NaN and inf - inf are NaN
    data = json.loads(json.dumps(v.to_json(), allow_nan=False))
    assert set(data) == {"verdict", "differs", "counterexample", "reason", "tried", "confirmed",
                         "semantics", "observe", "float", "difference", "stats"}
    assert data["difference"] == "floating-point"     # x - x -> 0 holds over the reals
    assert set(data["counterexample"]) >= {"feeds", "init", "schedule", "outcome",
                                           "original_outcomes"}


# ---------------------------------------------------------------------------
# Functions with no encoding


@pytest.fixture
def register(monkeypatch):
    """Register a unary function for one test only (the generators draw from
    the registry: a function left behind would leak into other tests)."""
    def add(name, impl):
        monkeypatch.setitem(fns._REGISTRY, name, fns.Function(name, 1, 1, impl))
    return add


def test_uninterpreted_functions_prove_by_congruence(register):
    register("TestAbsCheck", lambda xp, args, attrs: (xp.abs(args[0]),))
    p = pure([P.apply("r", "TestAbsCheck", "$a")])
    q = pure([P.apply("n1", "Neg", "$a"), P.apply("n2", "Neg", "n1"),
              P.apply("r", "TestAbsCheck", "n2")])
    assert check_rewrite(p, q).verdict == "sound"
    # a real difference through the function is found and confirmed
    r = pure([P.const("one", 1), P.apply("n", "Add", "$a", "one"), P.apply("r", "TestAbsCheck", "n")])
    v = check_rewrite(p, r)
    assert v.verdict == "unsound"
    replay(p, r, v.to_json())


def test_a_spurious_candidate_through_a_function_is_never_reported(register):
    # TestZeroCheck ignores its argument: F(a) == F(a + 1) always, but the
    # solver cannot know that; its candidates do not reproduce concretely.
    register("TestZeroCheck", lambda xp, args, attrs: (xp.zeros_like(args[0]),))
    p = pure([P.apply("r", "TestZeroCheck", "$a")])
    q = pure([P.const("one", 1), P.apply("n", "Add", "$a", "one"), P.apply("r", "TestZeroCheck", "n")])
    v = check_rewrite(p, q, timeout=3)
    assert v.verdict == "no-counterexample"
    assert v.tried > 0 and v.stats["unconfirmed"] > 0


# ---------------------------------------------------------------------------
# Budgets


def test_symbolic_budget_falls_back_to_concrete_sigma(monkeypatch):
    monkeypatch.setattr(check_module, "MAX_FLAGGED_VARIABLES", 0)
    p, _, _ = F.first_example(False)
    q, _, _ = F.first_example(True)
    v = check_rewrite(p, q, timeout=2, structural=False)
    assert v.verdict == "no-counterexample"
    assert v.tried > 0 and v.stats["path"] == "concrete"
    assert "variables are accessed" in v.reason
    v = check_rewrite(q, p, timeout=2)
    assert v.verdict == "unsound"
    replay(q, p, v.to_json())


class _UndecidedSolver(z3.Solver):
    def check(self, *args):
        return z3.unknown

    def reason_unknown(self):
        return "timeout"


def test_solver_timeout_is_unknown_with_a_reason(monkeypatch):
    monkeypatch.setattr(check_module.z3, "Solver", _UndecidedSolver)
    a2 = pure([P.apply("r", "Add", "$a", "$a")])
    times2 = pure([P.const("two", 2), P.apply("r", "Mul", "$a", "two")])
    v = check_rewrite(a2, times2, timeout=1)
    assert v.verdict == "unknown"
    assert "timeout" in v.reason and "output 'out'" in v.reason
    assert v.exit_status == 3


def test_tiny_timeout_never_claims_sound():
    p, _, _ = F.lost_update(3)
    v = check_rewrite(p, F.increments(3)[0], timeout=1e-4)
    assert v.verdict in ("unknown", "unsound", "no-counterexample")


# ---------------------------------------------------------------------------
# The command line


def test_cli_two_files_and_case(tmp_path, capsys):
    p, _, _ = F.first_example(True)
    q, _, _ = F.first_example(False)
    save_program(p, tmp_path / "p.json")
    save_program(q, tmp_path / "q.json")
    assert main(["check", str(tmp_path / "q.json"), str(tmp_path / "p.json")]) == 0
    assert capsys.readouterr().out.startswith("sound")
    assert main(["check", str(tmp_path / "p.json"), str(tmp_path / "q.json"), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "unsound" and data["differs"] == {"output": "out"}
    case = make_case(p, q, semantics="decomposed", observe="outputs", expect="unsound")
    (tmp_path / "case.json").write_text(json.dumps(case_to_json(case)))
    assert main(["check", str(tmp_path / "case.json"), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert (data["semantics"], data["observe"]) == ("decomposed", "outputs")
    assert main(["check", str(tmp_path / "case.json"), "--semantics", "atomic", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["semantics"] == "atomic"


def test_cli_bad_input_exits_2(tmp_path, capsys):
    p, _, _ = F.first_example(True)
    save_program(p, tmp_path / "p.json")
    (tmp_path / "broken.json").write_text("{not json")
    assert main(["check", str(tmp_path / "broken.json"), str(tmp_path / "p.json")]) == 2
    assert main(["check", str(tmp_path / "p.json")]) == 2          # one file, not a case
    bad = program_to_json(p)
    bad["nodes"][0]["op"] = "Nope"
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    # a malformed *rewrite* is a verdict (invalid, exit 1), a malformed original is bad input
    assert main(["check", str(tmp_path / "p.json"), str(tmp_path / "bad.json")]) == 1
    assert main(["check", str(tmp_path / "bad.json"), str(tmp_path / "p.json")]) == 2
    capsys.readouterr()


def test_cli_html(tmp_path, capsys):
    pytest.importorskip("tfsem.reports.finding")
    p, _, _ = F.first_example(True)
    q, _, _ = F.first_example(False)
    save_program(p, tmp_path / "p.json")
    save_program(q, tmp_path / "q.json")
    page = tmp_path / "finding.html"
    assert main(["check", str(tmp_path / "p.json"), str(tmp_path / "q.json"),
                 "--html", str(page)]) == 1
    assert "unsound" in page.read_text()
    capsys.readouterr()


def test_check_case_uses_the_cases_settings():
    prog, _, _ = F.increments(2, atomic=True)
    split, _, _ = F.increments(2, atomic=False)
    case = make_case(prog, split, semantics="decomposed")
    assert check_case(case).verdict == "sound"
    assert check_case(case, semantics="atomic").verdict == "unsound"


def test_uninterpreted_functions_with_different_attributes_differ(monkeypatch):
    def impl(xp, args, attrs):
        return (args[0] * attrs["k"],)

    def k_attr(raw, where):
        return int(raw)

    monkeypatch.setitem(fns._REGISTRY, "TestScaleCheck",
                        fns.Function("TestScaleCheck", 1, 1, impl, attrs={"k": k_attr}))
    p = pure([P.apply("r", "TestScaleCheck", "$a", k=2)])
    q = pure([P.apply("r", "TestScaleCheck", "$a", k=3)])
    v = check_rewrite(p, q)
    assert v.verdict == "unsound"
    replay(p, q, v.to_json())
    v = check_rewrite(p, renamed(p))
    assert v.verdict == "sound" and not v.stats.get("identical")


def test_fallback_runs_batched_differential_testing_on_numpy(monkeypatch):
    # out of symbolic budget: the fallback tries 200 σ with the oracle, then
    # a batched numpy run; the count of valuations covers both
    monkeypatch.setattr(check_module, "MAX_FLAGGED_VARIABLES", 0)
    monkeypatch.setattr(check_module, "BATCHED_VALUATIONS", 5000)
    p, _, _ = F.first_example(False)
    q, _, _ = F.first_example(True)
    v = check_rewrite(p, q, timeout=5, structural=False)
    assert v.verdict == "no-counterexample"
    assert v.stats["batched"]["tried"] == 5000
    # (and the σ the refutation stage tried: counted apart in the stats)
    assert v.tried == check_module.FALLBACK_SAMPLES + 5000 + v.stats["refute_tried"]
    assert "batched on numpy" in v.reason


def test_batched_counterexample_is_confirmed_by_the_oracle(monkeypatch):
    # no σ for the per-σ phase: only the batched phase can find the difference,
    # and its counterexample is reported only once the oracle confirms it
    # (the refutation stage, which would find it first, is off)
    monkeypatch.setattr(check_module, "MAX_FLAGGED_VARIABLES", 0)
    monkeypatch.setattr(check_module, "FALLBACK_SAMPLES", 0)
    monkeypatch.setattr(check_module, "REFUTE", False)
    q, _, _ = F.first_example(True)
    p, _, _ = F.first_example(False)
    v = check_rewrite(q, p, timeout=5)
    assert v.verdict == "unsound"
    assert v.stats["batched"]["tried"] >= 1
    replay(q, p, v.to_json())


def test_check_text_shows_the_verdict_first_then_both_programs(capsys, tmp_path):
    """`tfsem check CASE` shows the programs it judged: after the verdict, each
    node of a small program, a summary of a large one, and a rewrite that is
    no program said to be one."""
    from pathlib import Path
    case = Path(__file__).parent / "cases" / "tensorflow" / "counter_drop_control_dependency.json"
    assert main(["check", str(case), "--no-tensorflow"]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "unsound: output 'value' differs"
    at = lines.index("  original program (5 nodes):")
    assert lines.index("  rewritten program (5 nodes):") > at > lines.index("  confirmed on: oracle, numpy")
    assert "    increment = Assign[fn=Add](counter, one)" in lines
    assert "    read = Read(counter, ^increment)" in lines[at:lines.index("  rewritten program (5 nodes):")]
    assert "    read = Read(counter)" in lines[lines.index("  rewritten program (5 nodes):"):]
    assert "replaying" not in out

    big, _, _ = F.chain(40)
    save_program(big, tmp_path / "big.json")
    assert main(["check", str(tmp_path / "big.json"), str(tmp_path / "big.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sound")
    assert "  original program: 40 nodes, 0 variables, " in out and "(listed up to 24 nodes" in out

    from tfsem.commands.check import program_text
    assert program_text("rewritten program", ["not", "a", "program"]) == \
        ["  rewritten program: not a program (see the verdict)"]
