"""Weak campaigns are never green (campaigns/evidence.py), change shapes
(campaigns/steer.py), mutations (generators/mutate.py), and a wrong pass of
the suite found by `tfsem verify`'s default budget under several seeds."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import settings

from tfsem import cli
from tfsem.campaigns.evidence import EXIT_WEAK, MIN_CHANGED, MIN_SHAPES, weak_reason
from tfsem.campaigns.steer import Steering, change_shape, touches_access
from tfsem.campaigns.verify import verify_pass
from tfsem.generators.draw import RandomDraw
from tfsem.generators.mutate import mutate
from tfsem.generators.strategies import random_programs
from tfsem.oracle import program as P

ROOT = Path(__file__).resolve().parent.parent
WEAK_PASS = f"{ROOT / 'tests' / 'weak_pass.py'}:PASS"
SUITE = ROOT / "benchmarks" / "wrong_passes.py"


def test_weak_reason_names_the_figures():
    assert weak_reason({"programs": 500, "identical": 100, "shapes": 12}) is None
    why = weak_reason({"programs": 500, "identical": 490, "shapes": 12})
    assert why and "changed 10 of 500" in why and str(MIN_CHANGED) in why
    why = weak_reason({"programs": 500, "identical": 100, "shapes": 1})
    assert why and "1 distinct change shape" in why and str(MIN_SHAPES) in why
    # a campaign database keeps no shapes: judged on the changed count alone
    assert weak_reason({"programs": 500, "identical": 100}) is None


def test_change_shape_names_kinds_and_variables():
    p = P.program([P.var("vx", "x"), P.var("vy", "y"), P.const("one", 1),
                   P.write("w", "vx", "one"), P.read("ry", "vy", "^w"), P.read("rx", "vx", "^ry")],
                  {"out": "rx"}, ["x", "y"])
    q = P.program([P.var("vx", "x"), P.var("vy", "y"), P.const("one", 1),
                   P.write("w", "vx", "one"), P.read("ry", "vy"), P.read("rx", "vx", "^ry")],
                  {"out": "rx"}, ["x", "y"])
    assert change_shape(p, q) == ("-ctl W/R",)
    assert change_shape(p, p) == ()
    r = P.program([P.var("vx", "x"), P.var("vy", "y"), P.const("one", 1),
                   P.write("w", "vx", "one"), P.read("rx", "vx", "^w")], {"out": "rx"}, ["x", "y"])
    shape = change_shape(p, r)
    assert "-node R" in shape and "-ctl R=R" not in shape and touches_access(shape)


def test_mutations_keep_programs_valid_and_bounded():
    rng = random.Random(5)
    changed = 0
    for p in random_programs(150, 11, max_nodes=8):
        q = mutate(RandomDraw(rng), p, 12)
        q.validated()
        assert len(q.nodes) <= max(12, len(p.nodes))
        assert set(q.variables) == set(p.variables)
        changed += q != p
    assert changed > 75


def test_steering_learns_and_draws_mutants_of_changed_programs():
    s = Steering(8, "outputs+state")
    rng = random.Random(3)
    drop_reads = lambda p: p.replace(nodes=tuple(n for n in p.nodes if n.op != "Read"))
    for _ in range(200):
        program, feeds, init = s.draw(RandomDraw(rng))
        program.validated()
        q = drop_reads(program)
        s.observe(program, change_shape(program, q) if q != program else ())
    assert s.changed > 0 and s.corpus
    assert s.mutated_changed > 0          # mutated corpus programs were changed too
    assert sum(a.tried for a in s.arms) + s.mutated_changed <= s.programs
    s.freeze()
    before = s.programs
    s.observe(program, ("-node R",))
    assert s.programs == before           # frozen while a round shrinks


def test_a_pass_that_changes_almost_nothing_gives_the_weak_status(tmp_path, capsys):
    from scaled_budgets import scaled

    # the share of programs changed says something only of enough programs:
    # a busy machine that judged fewer than 100 in 5 s runs it again, afresh,
    # with a larger budget
    for budget in scaled(5):
        status = cli.main(["verify", WEAK_PASS, "--budget", f"{budget:g}s", "--semantics", "atomic",
                           "--observe", "outputs+state", "--seed", "1", "--out", str(tmp_path / f"v{budget:g}"),
                           "--json"])
        out = json.loads(capsys.readouterr().out)
        assert status == EXIT_WEAK == 4
        assert out["weak"] is True and out["found"] is False and out["exit_status"] == 4
        cell = out["cells"][0]
        # weak by its count of changed programs or (a fast machine judges
        # thousands of programs in 5 s) by its single change shape
        ev = cell["evidence"]
        assert ev["weak"] and (ev["changed"] < MIN_CHANGED or ev["shapes"] < MIN_SHAPES), ev
        if cell["programs"] >= 100:
            break
    assert cell["programs"] > 10 * ev["changed"], cell


def test_the_weak_status_is_said_in_the_text_summary(tmp_path, capsys):
    status = cli.main(["verify", WEAK_PASS, "--budget", "3s", "--semantics", "atomic",
                       "--observe", "outputs", "--seed", "2", "--out", str(tmp_path)])
    text = capsys.readouterr().out
    assert status == 4
    assert "WEAK EVIDENCE" in text and "result: WEAK" in text and "exit status 4" in text
    # weak by its count of changed programs, or (when the machine judged
    # many programs) by its single change shape
    assert "changed" in text and ("programs (30 needed)" in text
                                           or "change shape (2 needed)" in text), text


@pytest.mark.parametrize("seed", [2, 4, 7])
def test_a_wrong_pass_of_the_suite_is_found_by_the_default_budget(seed):
    """The issue's first example (merge unordered Reads, keeping only the
    first's control inputs) was found with one seed of three: now with each
    (default budget of 60 s, stopped at the first finding)."""
    result = verify_pass(f"{SUITE}:MERGE_READS_FIRST_CONTROL", 60.0, seed=seed, stop_at_first_bug=True)
    assert result.bugs, [c.to_json() for c in result.cells]
    bug = min(result.bugs, key=lambda f: f.first_after)
    assert bug.record.kind == "unsound" and bug.record.claim == "sound"
    assert bug.first_after < 60
    # shrunk to the bug's shape: Var, a value, Write, two Reads (one waits for the Write)
    assert min(f.record.size for f in result.bugs) <= 5, [f.record.original for f in result.bugs]


@pytest.mark.parametrize("name,seed", [("COMBINE_ASSIGN_ADDS", 2), ("DROP_EDGES_BETWEEN_UPDATES", 3)])
def test_the_two_slowest_wrong_passes_are_found_by_the_default_budget(name, seed):
    """The two passes the previous release found slowest (median 14 s at a
    load of 10 to 16; seeds 2 and 3 took 12 to 33 s): their bug needs two
    updates of one variable, whose symbolic checks take seconds.  Found now
    by mutants of the change's core, screened concretely before the
    symbolic check, and shrunk at the failing σ; at most 5 nodes."""
    result = verify_pass(f"{SUITE}:{name}", 60.0, seed=seed, stop_at_first_bug=True)
    assert result.bugs, [c.to_json() for c in result.cells]
    assert min(f.record.size for f in result.bugs) <= 5, [f.record.original for f in result.bugs]


@pytest.mark.parametrize("seed", [1, 5])
def test_the_wrong_pass_the_previous_release_passed_green_is_found(seed):
    """fold-constant-variable (a Read folded to the one Const every Write
    stores, forgetting the initial value) ended green (exit 0) under seeds 1
    and 5 of the previous release: the bug shows only when the Read runs
    before the Write, which mutations aimed at the folded Read give."""
    result = verify_pass(f"{SUITE}:FOLD_CONSTANT_VARIABLE", 60.0, seed=seed, stop_at_first_bug=True)
    assert result.bugs, [c.to_json() for c in result.cells]
    assert min(f.record.size for f in result.bugs) <= 5, [f.record.original for f in result.bugs]


@pytest.mark.skipif(settings.get_current_profile_name() != "nightly", reason="nightly profile only")
@pytest.mark.parametrize("name", ["DROP_CROSS_VAR_EDGES", "SWAP_WRITES", "DEAD_STORE_OVERWRITTEN",
                                  "HOIST_READ_DIRECT_CHECK", "FORWARD_STORE", "CSE_ASSIGNS"])
def test_suite_counterexamples_shrink_to_five_nodes(name):
    """Each of these has a counterexample of at most 5 nodes (a feed can
    give a Write its value); the one found is shrunk that far."""
    result = verify_pass(f"{SUITE}:{name}", 60.0, seed=1, stop_at_first_bug=True)
    assert result.bugs
    assert min(f.record.size for f in result.bugs) <= 5, [f.record.original for f in result.bugs]


def test_report_cells_never_show_weak_evidence_as_holding():
    from tfsem.reports.index import _verdicts, cell_verdicts
    cell = {"pass": "p", "semantics": "atomic", "observe": "outputs", "claim": "sound"}
    strong, weak, no_shapes = cell_verdicts([], [dict(cell, programs=400, identical=100, shapes=9),
                                                 dict(cell, programs=400, identical=390, shapes=4),
                                                 dict(cell, programs=400, identical=300)], [])
    assert strong["verdict"] == "holds" and weak["verdict"] == "weak" and no_shapes["verdict"] == "holds"
    html = _verdicts([strong, weak])
    assert "300 changed, 9 shapes" in html and "10 changed, 4 shapes" in html
    assert "claim holds so far, on weak evidence" in html and "changed 10 of 400 programs" in html


def test_the_reducer_contracts_a_node_on_an_ordering_path():
    """Write -> Read y -> Read x: the Read of y (its value unused) goes, and
    the Read of x still waits for the Write (the bug's shape kept)."""
    from tfsem.campaigns.reduce import _contract, candidates
    p = P.program([P.var("vx", "x"), P.var("vy", "y"), P.const("one", 1), P.write("w", "vx", "one"),
                   P.read("ry", "vy", "^w"), P.read("rx", "vx", "^ry")], {"out": "rx"}, ["x", "y"])
    q = _contract(p, "ry")
    assert q is not None and "ry" not in q.node
    assert [i.node for i in q.node["rx"].control_inputs] == ["w"]
    assert _contract(p, "rx") is None          # fetched: its result is used
    assert q in list(candidates(p))


def test_the_reducer_unfolds_a_fetched_function_into_its_inputs():
    from tfsem.campaigns.reduce import _unfold_output, candidates
    p = P.program([P.var("v", "x"), P.const("one", 1), P.write("w", "v", "one"), P.read("r1", "v"),
                   P.read("r2", "v", "^w"), P.apply("s", "Add", "r1", "r2")], {"out": "s"}, ["x"])
    q = _unfold_output(p, "s")
    assert q is not None and "s" not in q.node and len(q.nodes) == 5
    assert {k: v.node for k, v in q.outputs.items()} == {"out": "r1", "out_1": "r2"}
    q.validated()
    assert _unfold_output(p, "r1") is None and q in list(candidates(p))


# ---------------------------------------------------------------------------
# Aimed at the change: the site, focused mutations, cost-aware steering


def _write_read_y_read_x():
    return P.program([P.var("vx", "x"), P.var("vy", "y"), P.const("one", 1),
                      P.write("w", "vx", "one"), P.read("ry", "vy", "^w"), P.read("rx", "vx", "^ry")],
                     {"out": "rx"}, ["x", "y"])


def test_change_site_names_the_nodes_the_rewrite_touched():
    from tfsem.campaigns.steer import change_site
    p = _write_read_y_read_x()
    dropped = p.replace(nodes=tuple(n.replace(inputs=n.data_inputs) if n.name == "ry" else n
                                    for n in p.nodes))
    assert change_site(p, dropped) == {"ry", "w"}          # both ends of the dropped edge
    assert change_site(p, p) == frozenset()
    # a Read whose consumers read a Const instead: the Read and the output
    folded = p.replace(nodes=p.nodes + (P.const("k", 1),), outputs={"out": P.DataIn("k")})
    assert change_site(p, folded) == {"rx"}


def test_focused_mutations_aim_at_the_site():
    """Mutating with a focus, most mutants add or change something that
    touches the focus (an edge to or from it, an access of its variable);
    without one, far fewer do."""
    p = P.program([P.var("vx", "x"), P.var("vy", "y"), P.var("vz", "z"), P.const("one", 1),
                   P.write("w", "vx", "one"), P.read("ry", "vy"), P.read("rz", "vz"),
                   P.write("wz", "vz", "one"), P.read("rx", "vx", "^w")],
                  {"a": "rx", "b": "ry", "c": "rz"}, ["x", "y", "z"])

    def touches(q) -> bool:
        new = [n for n in q.nodes if n.name not in p.node or n != p.node[n.name]]
        return any(i.node in ("w", "rx") for n in new for i in n.inputs if hasattr(i, "node")) \
            or any(n.name in ("w", "rx") for n in new) \
            or any(q.accessed_variable(n.name) == "x" or n.attrs.get("var") == "x" for n in new)

    rng = random.Random(2)
    aimed = sum(touches(mutate(RandomDraw(rng), p, 14, focus=frozenset({"w", "rx"}))) for _ in range(300))
    blind = sum(touches(mutate(RandomDraw(rng), p, 14)) for _ in range(300))
    assert aimed > 0.6 * 300 and aimed > blind + 45, (aimed, blind)


def test_a_mutant_differs_from_its_parent():
    rng = random.Random(9)
    programs = list(random_programs(60, 4, max_nodes=8))
    same = sum(mutate(RandomDraw(rng), p, 9) == p for p in programs)
    assert same <= 3, same


def test_steering_learns_cost_slow_programs_are_no_parents(monkeypatch):
    from tfsem.campaigns import steer
    s = Steering(8, "outputs+state")
    rng = random.Random(4)
    clock = [100.0]
    monkeypatch.setattr(steer.time, "monotonic", lambda: clock[0])
    slow_arm = s.arms[0]
    for k in range(40):
        program, _, _ = s.draw(RandomDraw(rng))
        arm = s._last
        shape = ("-node R",) if k % 2 else ()
        s.observe(program, shape, frozenset())
        clock[0] += 3.0 if arm is slow_arm or arm is None else 0.01   # mutants are slow too
        s.judged()
    assert all(e[2] is not None and e[2] <= steer.SLOW for kept in s.corpus.values() for e in kept)
    if slow_arm.tried:
        fast = [a for a in s.arms if a.size == 1 and a is not slow_arm]
        assert slow_arm.value() < min(a.value() for a in fast)
    assert sum(a.seconds for a in s.arms) > 0


def test_steered_draws_are_cheap_and_deterministic_per_seed():
    """One Hypothesis choice (a seed) per program: the same seed gives the
    same program while the steering is the same."""
    from tfsem.generators.draw import RandomDraw as RD
    s = Steering(10, "outputs")
    a = s.draw(RD(random.Random(77)))
    s._last = None
    b = s.draw(RD(random.Random(77)))
    assert a == b
