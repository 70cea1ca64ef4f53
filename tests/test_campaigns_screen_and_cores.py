"""Where a campaign's time goes (issue 27, item 3): the concrete screen
before the symbolic check (campaigns/checks.py), the reducer judging at the
σ where the last failing program failed (campaigns/reduce.py), the cores of
change shapes mutations start from (campaigns/steer.py), and the re-search
of a finding the reducer left above 5 nodes (campaigns/loop.py)."""

from __future__ import annotations

import importlib.util
import random
import time
from pathlib import Path

from tfsem.campaigns import checks
from tfsem.campaigns.checks import CheckPlan, screen_sigmas
from tfsem.campaigns.findings import FindingRecord
from tfsem.campaigns.reduce import failing_sigma
from tfsem.campaigns.steer import Steering, change_core, change_shape
from tfsem.generators.draw import RandomDraw
from tfsem.oracle import program as P
from tfsem.oracle.program import TensorType
from tfsem.oracle.values import Tensor

ROOT = Path(__file__).resolve().parent.parent


def _suite():
    spec = importlib.util.spec_from_file_location("tfsem_wrong_passes_cores", ROOT / "benchmarks" / "wrong_passes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class InlineRunner:
    """The pass run in this process (no sandbox)."""

    def __init__(self, fn):
        self.fn = fn

    def rewrite(self, program_json):
        from tfsem.campaigns.sandbox import RewriteResult
        from tfsem.oracle.jsonio import program_from_json, program_to_json
        return RewriteResult("ok", program=program_to_json(self.fn(program_from_json(program_json))))

    def close(self):
        pass


def _int(v: int) -> Tensor:
    return Tensor(v, "int64")


def _write_then_add(ordered: bool):
    """x := f, then x += g (ordered), or the two unordered (the rewrite)."""
    return P.program([P.var("v", "x"), P.write("w", "v", "$f"),
                      P.assign("a", "Add", "v", "$g", *(["^w"] if ordered else []))],
                     {}, ["x"], feeds={"f": TensorType(), "g": TensorType()})


def test_the_screen_finds_at_another_sigma_without_the_symbolic_checker():
    """At the drawn σ (g = 0) the two orders agree; the screen's further σ
    (drawn like the generator's, seeded by the program) show the difference,
    and the symbolic checker is never asked."""
    original, rewritten = _write_then_add(True), _write_then_add(False)
    plan = CheckPlan("auto")

    def symbolic(*args):
        raise AssertionError("the screen should have decided")
    plan.symbolic = symbolic
    verdict = plan(original, rewritten, {"f": _int(3), "g": _int(0)}, {"x": _int(1)},
                   "atomic", "outputs+state", 5.0)
    assert verdict["verdict"] == "unsound"
    assert verdict["counterexample"]["feeds"]["g"] != 0
    # the extra σ depend on the program alone: the same every time
    drawn = ({"f": _int(3), "g": _int(0)}, {"x": _int(1)})
    assert screen_sigmas(original, *drawn) == screen_sigmas(original, *drawn)
    assert screen_sigmas(original, *drawn)[0] == drawn


def test_a_sound_rewrite_goes_on_to_the_symbolic_checker_with_most_of_the_budget():
    p = _write_then_add(True)
    plan = CheckPlan("auto")
    asked = []

    def symbolic(original, rewritten, semantics, observe, timeout):
        asked.append(timeout)
        return {"verdict": "sound", "reason": "stub"}
    plan.symbolic = symbolic
    verdict = plan(p, p.replace(), {"f": _int(3), "g": _int(0)}, {"x": _int(1)}, "atomic", "outputs", 5.0)
    assert verdict["verdict"] == "sound"
    assert asked and 4.4 <= asked[0] <= 5.0
    assert "more" in plan.description and CheckPlan("symbolic").screen_sigmas == 0


def test_the_screen_stops_at_its_share_of_the_budget(monkeypatch):
    calls = []

    def slow(*args, **kw):
        calls.append(kw.get("max_seconds"))
        time.sleep(0.05)
        return {"verdict": "no-counterexample"}
    monkeypatch.setattr(checks, "concrete_check", slow)
    p = _write_then_add(True)
    sigmas = screen_sigmas(p, {"f": _int(1), "g": _int(1)}, {}, count=20)
    assert checks.screen(p, p, sigmas, "atomic", "outputs", max_seconds=0.12) is None
    assert 2 <= len(calls) <= 4 < len(sigmas)


def test_the_reducer_judges_at_the_failing_sigma():
    p = _write_then_add(True)
    record = FindingRecord(pass_name="t", kind="unsound", semantics="atomic", observe="outputs",
                           original={}, feeds={"g": 7}, init={"x": 2})
    feeds, init = failing_sigma(record, p, {"f": _int(1), "g": _int(0)}, {})
    assert feeds == {"f": _int(1), "g": _int(7)} and init == {"x": _int(2)}
    # a σ that does not fit the program: the one given
    bad = FindingRecord(pass_name="t", kind="unsound", semantics="atomic", observe="outputs",
                        original={}, feeds={"g": "not a number"})
    assert failing_sigma(bad, p, {"f": _int(1), "g": _int(0)}, {}) == ({"f": _int(1), "g": _int(0)}, {})


def _combined_adds_in_context():
    """Two ordered AssignAdds of x (what combine-assign-adds merges) among a
    Write of y, a Read of x and a sum nobody needs for the change."""
    return P.program([
        P.var("vx", "x"), P.var("vy", "y"), P.const("one", 1), P.const("two", 2),
        P.write("wy", "vy", "one"), P.read("ry", "vy", "^wy"),
        P.assign("a1", "Add", "vx", "one", "^ry"), P.assign("a2", "Add", "vx", "two", "^a1"),
        P.read("rx", "vx", "^a2"), P.apply("s", "Add", "rx", "ry")], {"out": "s"}, ["x", "y"])


def test_a_core_keeps_the_change_shape_and_drops_the_rest():
    combine = _suite().COMBINE_ASSIGN_ADDS.function
    p = _combined_adds_in_context()
    shape = change_shape(p, combine(p))
    core = change_core(p, shape, combine, seconds=10.0)
    assert change_shape(core, combine(core)) == shape
    # the two AssignAdds and their Var (their values fed), and the Read of y
    # the first waited for, with its Var: the combined update inherits that
    # wait, part of the shape (+ctl R/A); the Write of y, the Read of x and
    # the sum go
    assert {"a1", "a2", "ry"} <= set(core.node)
    assert len(core.nodes) == 5 < len(p.nodes), [n.name for n in core.nodes]


def test_mutations_of_a_shape_start_from_its_core_half_of_the_time():
    combine = _suite().COMBINE_ASSIGN_ADDS.function
    p = _combined_adds_in_context()
    rewritten = combine(p)
    shape = change_shape(p, rewritten)
    s = Steering(10, "outputs+state")
    s.observe(p, shape)
    assert s.wants_core(shape)
    core = change_core(p, shape, combine, seconds=10.0)
    s.add_core(shape, core, frozenset({"a1", "a2"}))
    assert not s.wants_core(shape)
    mutants = from_core = 0
    for k in range(80):
        if RandomDraw(random.Random(k)).index(4) < 2:
            continue    # (the first choice: a fresh program)
        program, _, _ = s.draw(RandomDraw(random.Random(k)))
        mutants += 1
        from_core += len(program.nodes) < len(p.nodes)   # (mutations never remove nodes)
    assert 0.25 * mutants <= from_core <= 0.75 * mutants, (from_core, mutants)
    # a cell carries the cores over to the next
    assert s.for_cell("outputs").cores is s.cores


def test_a_finding_above_five_nodes_is_re_searched_from_its_core():
    """forward-store's 6-node example (Write of a Const, AssignAdd of a
    Const, Read): the re-search cuts the change to its core (Var, Const,
    Write, Read), judges mutants of it, shrinks a failing one and keeps it:
    at most 5 nodes."""
    from tfsem.campaigns.loop import SMALL_FINDING, FuzzLoop, LoopConfig, _reduce_origin
    from tfsem.campaigns.targets import Target
    suite = _suite()
    fn = suite.FORWARD_STORE.function
    loop = FuzzLoop(LoopConfig("test:fn", "atomic", "outputs+state", seed=1),
                    target=Target("test:fn", "forward-store", "", {}, fn), runner=InlineRunner(fn))
    example = suite.EXAMPLES["forward-store"]
    record = loop.evaluate(example, {}, {"x": _int(0)})
    assert record is not None and record.kind == "unsound" and record.size == 6 > SMALL_FINDING
    loop.steering.freeze()    # (as when a round shrinks)
    smaller = loop._research(record, _reduce_origin(record), time.monotonic() + 20)
    assert smaller.kind == "unsound" and smaller.size <= SMALL_FINDING, smaller.original


def test_a_rewrite_to_the_empty_program_is_no_counterexample_when_outputs_are_observed():
    """dce deletes a program's only node (Sub of a feed by itself, fetched
    by nobody): the oracle gives the empty program's one outcome a state
    () even when only outputs are observed; compared as it was, the screen
    judged dce unsound (a false finding in `tfsem verify dce`)."""
    from tfsem.campaigns.checks import concrete_check
    p = P.program([P.apply("sub0", "Sub", "$f0", "$f0")], {}, [], feeds={"f0": TensorType()})
    empty = P.program([], {}, [], feeds={"f0": TensorType()})
    for observe in ("outputs", "outputs+state"):
        verdict = concrete_check(p, empty, {"f0": _int(4)}, {}, "atomic", observe)
        assert verdict["verdict"] == "no-counterexample", verdict
        assert concrete_check(empty, p, {"f0": _int(4)}, {}, "atomic", observe)["verdict"] == \
            "no-counterexample"
    assert CheckPlan("auto")(p, empty, {"f0": _int(4)}, {}, "atomic", "outputs", 5.0)["verdict"] == "sound"
