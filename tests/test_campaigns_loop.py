"""The fuzzing loop with injected parts: an in-process pass runner, stub
checkers, the small test generator; the pass sandbox on its own; the concrete
check."""

from __future__ import annotations

import time
import traceback

import pytest
from hypothesis.database import InMemoryExampleDatabase

import campaign_fakes as fakes
from scaled_budgets import scaled
from tfsem.campaigns.checks import CheckPlan, concrete_check, interface_problems
from tfsem.campaigns.findings import (CRASH, INVALID, TIMEOUT, UNSOUND, FindingRecord, InvalidRewrite,
                                      PassCrashed, PassTimedOut, Unsound, findings_in, raise_finding)
from tfsem.campaigns.loop import FIXED, PRESENT, FuzzLoop, LoopConfig, replay
from tfsem.campaigns.sandbox import BAD_RESULT, OK, PassSandbox, RewriteResult
from tfsem.campaigns.targets import PassNotFound, Target, resolve_pass
from tfsem.generators import families
from tfsem.oracle import program as P
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import Tensor


class InlineRunner:
    """Runs a pass function in this process (no time limit): for loop tests
    that do not need the sandbox."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def rewrite(self, program_json):
        self.calls += 1
        try:
            out = self.fn(program_from_json(program_json, validate=False))
        except Exception as exc:
            return RewriteResult("crash", error_type=type(exc).__name__, message=str(exc))
        return RewriteResult(OK, program=program_to_json(out))

    def close(self):
        pass


def target(fn, claims=None) -> Target:
    return Target("test:fn", "test-pass", "a test pass", claims or {}, fn)


#: a loop run that found nothing in fewer programs than this judged too few to say
FEW_PROGRAMS = 10


class ScaledLoop(FuzzLoop):
    """The loop of these tests, given a second or so: a busy machine (a
    parallel run, a shared host) once judged no program at all in 1.5 s, and
    one program in 6 s.  A run that found nothing in fewer than FEW_PROGRAMS
    goes on with three, then nine times its time (the same loop, its counts
    going on; the findings returned are the last run's)."""

    def run(self, seconds: float, shrink_seconds: float | None = None):
        for budget in scaled(seconds):
            found = super().run(budget, shrink_seconds=shrink_seconds)
            if found or self.stats.programs >= FEW_PROGRAMS:
                break
        return found


def make_loop(fn, checker, *, semantics="atomic", observe="outputs+state", claims=None, scaled=True, **kw):
    """A loop of `fn` with `checker`; `scaled=False` for a loop whose time is
    what the test measures."""
    cfg = LoopConfig("test:fn", semantics, observe, max_nodes=8, seed=kw.pop("seed", 1),
                     round_seconds=kw.pop("round_seconds", 5.0))
    return (ScaledLoop if scaled else FuzzLoop)(cfg, target=target(fn, claims), runner=InlineRunner(fn),
                                                checker=checker, generator=fakes.small_generator, **kw)


def plan(stub):
    """A checker in the loop's calling convention from a (o, r, sem, obs, t) stub."""
    return lambda o, r, feeds, init, sem, obs, t: stub(o, r, sem, obs, t)


# ---------------------------------------------------------------------------
# Exceptions


def _record(kind, **kw):
    kw.setdefault("original", program_to_json(families.first_example()[0]))
    return FindingRecord(pass_name="p", kind=kind, semantics="atomic", observe="outputs+state", **kw)


def _raise_site(record):
    try:
        raise_finding(record)
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        return type(exc), frame.lineno


def test_each_kind_has_its_own_exception_type():
    assert _raise_site(_record(UNSOUND, verdict={"differs": {"output": "o"}}))[0] is Unsound
    assert _raise_site(_record(INVALID))[0] is InvalidRewrite
    assert issubclass(_raise_site(_record(CRASH, detail={"error_type": "KeyError"}))[0], PassCrashed)
    assert _raise_site(_record(TIMEOUT))[0] is PassTimedOut


def test_distinct_failures_have_distinct_origins():
    """Hypothesis keys failures on exception type and raise site."""
    out = _raise_site(_record(UNSOUND, verdict={"differs": {"output": "o"}}))
    var = _raise_site(_record(UNSOUND, verdict={"differs": {"variable": "x"}}))
    assert out[0] is var[0] and out[1] != var[1]
    key = _raise_site(_record(CRASH, detail={"error_type": "KeyError"}))[0]
    zero = _raise_site(_record(CRASH, detail={"error_type": "ZeroDivisionError"}))[0]
    assert key is not zero and PassCrashed.for_error("KeyError") is key


def test_unsound_exception_says_what_differs():
    try:
        raise_finding(_record(UNSOUND, verdict={"differs": {"variable": "x"}}, message="x differs"))
    except Unsound as exc:
        assert (exc.part, exc.name) == ("variable", "x")
        assert "x differs" in str(exc)
        assert findings_in(ExceptionGroup("two", [exc, ValueError()])) == [exc]


# ---------------------------------------------------------------------------
# The loop with stubs


def test_loop_finds_and_shrinks_an_unsound_pass_with_a_stub_checker():
    loop = make_loop(fakes._drop_assigns, plan(fakes.stub_checker_by_size))
    found = loop.run(1.5, shrink_seconds=2.0)
    assert found, loop.stats
    r = found[0]
    assert r.kind == UNSOUND and r.differs == {"variable": "v0"} and r.pass_name == "test-pass"
    # shrunk: a Write needs its Var and a value (a feed, or a Const)
    assert r.size <= 3
    assert any(n["op"] == "Write" or n["op"] == "Assign" for n in r.original["nodes"])
    assert loop.stats.programs > 0 and loop.stats.findings == len(found)


def test_loop_maps_verdicts_to_findings_and_counters():
    invalid = make_loop(fakes._drop_assigns,
                        plan(lambda o, r, s, ob, t: {"verdict": "invalid", "reason": "stub says so"}))
    found = invalid.run(1.0, shrink_seconds=1.5)
    assert found and {r.kind for r in found} == {INVALID}
    assert "stub says so" in found[0].message

    unknown = make_loop(fakes._drop_assigns, plan(fakes.stub_checker_unknown))
    assert unknown.run(1.0) == []
    assert unknown.stats.unknown > 0 and unknown.stats.findings == 0


def test_a_checker_error_is_counted_not_reported_as_a_finding():
    def broken(o, r, feeds, init, sem, obs, t):
        raise RuntimeError("checker bug")
    loop = make_loop(fakes._drop_assigns, broken)
    assert loop.run(1.0) == []
    assert loop.stats.checker_errors > 0 and "checker bug" in loop.stats.last_error


def test_identical_rewrites_are_not_checked():
    def never(*a):
        raise AssertionError("the checker was called on an identical rewrite")
    loop = make_loop(fakes._identity, never)
    assert loop.run(1.0) == []
    assert loop.stats.identical == loop.stats.programs > 0 and loop.stats.checker_errors == 0


def test_malformed_output_and_changed_interface_are_invalid():
    loop = make_loop(fakes._dangling_on_read, plan(fakes.stub_checker_by_size))
    found = loop.run(1.0, shrink_seconds=1.5)
    assert found and found[0].kind == INVALID
    assert "no-such-node" in found[0].message and found[0].detail["violations"]

    def rename_outputs(p):
        return p.replace(outputs={k + "_renamed": v for k, v in p.outputs.items()})
    loop = make_loop(rename_outputs, plan(fakes.stub_checker_by_size))
    found = loop.run(1.0, shrink_seconds=1.5)
    assert found and found[0].kind == INVALID and "output" in found[0].message


def test_a_crash_in_the_runner_is_a_crash_finding():
    loop = make_loop(fakes._crash_on_add, plan(fakes.stub_checker_by_size))
    found = loop.run(1.0, shrink_seconds=1.5)
    assert found and found[0].kind == CRASH
    assert found[0].detail["error_type"] == "ZeroDivisionError"
    assert [n["op"] for n in found[0].original["nodes"] if n["op"] == "Add"]


def test_the_loop_keeps_its_time_budget():
    loop = make_loop(fakes._identity, plan(fakes.stub_checker_by_size), scaled=False)
    started = time.monotonic()
    loop.run(1.0)
    assert time.monotonic() - started < 4.0
    assert loop.stats.rounds >= 1


def test_a_round_with_findings_keeps_its_time_budget_too():
    """Hypothesis's shrinker is cut at the hard deadline even while it only
    replays memoized examples, and the reducer stops soon after."""
    loop = make_loop(fakes._drop_assigns, plan(fakes.stub_checker_by_size), scaled=False)
    started = time.monotonic()
    found = loop.run(1.0, shrink_seconds=1.0)
    assert found and time.monotonic() - started < 6.0


def test_claims_are_carried_into_findings():
    claims = {("atomic", "outputs+state"): "unsound"}
    loop = make_loop(fakes._drop_assigns, plan(fakes.stub_checker_by_size), claims=claims)
    found = loop.run(1.0, shrink_seconds=1.5)
    assert found and found[0].claim == "unsound" and not found[0].contradicts_claim
    loop = make_loop(fakes._drop_assigns, plan(fakes.stub_checker_by_size), observe="outputs")
    found = loop.run(1.0, shrink_seconds=1.5)
    assert found and found[0].claim is None and found[0].contradicts_claim


def test_failures_are_saved_in_the_example_database_under_the_pass_and_cell():
    db = InMemoryExampleDatabase()
    loop = make_loop(fakes._drop_assigns, plan(fakes.stub_checker_by_size), database=db)
    assert loop.run(1.0, shrink_seconds=1.5)
    key = b"tfsem.fuzz/1:test:fn:atomic/outputs+state"
    assert list(db.fetch(key)), list(db.data)
    # the next run replays the saved failure first: a finding in its first round
    again = make_loop(fakes._drop_assigns, plan(fakes.stub_checker_by_size), database=db, seed=99)
    calls = []
    again.on_finding = lambda r: calls.append(again.stats.programs)
    again.run(1.0, shrink_seconds=2.0)
    assert calls and again.stats.rounds >= 1


def test_replay_tells_present_from_fixed():
    loop = make_loop(fakes._drop_assigns, plan(fakes.stub_checker_by_size))
    found = loop.run(1.0, shrink_seconds=1.5)
    assert found
    status, again = replay(loop, found[0])
    assert status == PRESENT and again.kind == UNSOUND
    fixed = make_loop(fakes._identity, plan(fakes.stub_checker_by_size))
    assert replay(fixed, found[0]) == (FIXED, None)


# ---------------------------------------------------------------------------
# The concrete check


def test_concrete_check_finds_the_first_examples_missing_control_edge():
    with_edge, feeds, init = families.first_example(True)
    without, _, _ = families.first_example(False)
    v = concrete_check(with_edge, without, feeds, init, "atomic", "outputs")
    assert v["verdict"] == "unsound" and v["differs"] == {"output": "out"}
    cex = v["counterexample"]
    assert cex["outcome"]["outputs"] == {"out": 1}
    assert [o["outputs"] for o in cex["original_outcomes"]] == [{"out": 2}]
    # the schedule is a real run of the rewritten program giving that outcome
    state = run_schedule(without, feeds, init, cex["schedule"], "atomic")
    outcome = outcome_of(without, graph_of(without), state, "outputs")
    assert outcome.to_json() == cex["outcome"]
    # the other direction loses a behaviour: fine
    assert concrete_check(without, with_edge, feeds, init, "atomic", "outputs")["verdict"] == \
        "no-counterexample"


def test_concrete_check_says_unknown_when_out_of_budget():
    p, feeds, init = families.racy_pairs(6)
    q = p.replace(nodes=tuple(n for n in p.nodes if n.name != "w0"))
    v = concrete_check(p, q, feeds, init, "atomic", "outputs+state", max_states=3)
    assert v["verdict"] == "unknown" and "budget" in v["reason"]


def test_interface_problems():
    p = families.first_example()[0]
    assert interface_problems(p, p) == []
    q = p.replace(outputs={"other": p.outputs["out"]})
    assert any("'other'" in m for m in interface_problems(p, q))
    assert any("'out'" in m for m in interface_problems(p, q))
    r = P.program([P.var("vx", "x"), P.read("r", "vx"), P.apply("a", "Add", "r", "$new")],
                  {"out": "a"}, ["x"])
    assert any("'new'" in m for m in interface_problems(p, r))


def test_check_plan_names():
    assert CheckPlan("concrete").description == "concrete at the drawn σ"
    with pytest.raises(ValueError):
        CheckPlan("telepathy")


# ---------------------------------------------------------------------------
# The sandbox


def _program_json():
    return program_to_json(families.first_example()[0])


def test_sandbox_rewrites_and_survives_the_pass_printing():
    with PassSandbox("campaign_fakes:chatty_identity", timeout=10) as sb:
        for _ in range(3):
            r = sb.rewrite(_program_json())
            assert r.status == OK and r.program == _program_json()
        assert sb.starts == 1 and sb.name == "fake-chatty"


def test_sandbox_reports_crashes_and_keeps_going():
    with PassSandbox("campaign_fakes:die_on_read", timeout=10) as sb:
        r = sb.rewrite(_program_json())
        assert r.status == "crash" and r.error_type == "ProcessExit" and "status 7" in r.message
        no_read = program_to_json(P.program([P.const("c", 1)], {"o": "c"}))
        assert sb.rewrite(no_read).status == OK  # a fresh process
        assert sb.starts == 2
    with PassSandbox("campaign_fakes:drop_assigns_claims_sound", timeout=10) as sb:
        assert sb.rewrite(_program_json()).status == OK


def test_sandbox_kills_a_hung_pass():
    with PassSandbox("campaign_fakes:hang_on_assign", timeout=0.5) as sb:
        started = time.monotonic()
        r = sb.rewrite(_program_json())
        assert r.status == "timeout" and time.monotonic() - started < 5
        no_assign = program_to_json(P.program([P.const("c", 1)], {"o": "c"}))
        assert sb.rewrite(no_assign).status == OK


def test_sandbox_reports_a_result_that_is_not_a_program():
    with PassSandbox("campaign_fakes:not_a_program", timeout=10) as sb:
        r = sb.rewrite(_program_json())
        assert r.status == BAD_RESULT and "dict" in r.message


def test_sandbox_refuses_a_pass_it_cannot_load():
    with pytest.raises(PassNotFound):
        PassSandbox("campaign_fakes:no_such_pass", timeout=1).rewrite(_program_json())


def test_resolve_pass_reads_claims():
    t = resolve_pass("campaign_fakes:drop_assigns")
    assert t.name == "fake-drop-assigns" and t.claim(("atomic", "outputs+state")) == "unsound"
    bare = resolve_pass("campaign_fakes:plain_function")
    assert bare.claims == {} and callable(bare.fn)
    with pytest.raises(PassNotFound):
        resolve_pass("no-such-registered-pass")


# ---------------------------------------------------------------------------
# The structural reducer


def test_reducer_removes_what_the_failure_does_not_need():
    from tfsem.campaigns.reduce import reduce_finding

    padded = P.program([P.var("v", "x"), P.const("c", 4), P.apply("junk", "Add", "c", "c"),
                        P.write("w", "v", "$b", "^junk"), P.var("v2", "x"), P.read("r", "v2", "^w"),
                        P.apply("n", "Neg", "r"), P.var("vy", "y"), P.read("ry", "vy")],
                       {"out": "n", "other": "ry"}, ["x", "y"])

    def evaluate(p, feeds, init):  # "fails" while the program writes x
        writes = any(n.op == "Assign" and p.accessed_variable(n.name) == "x" for n in p.nodes)
        return _record(UNSOUND, verdict={"differs": {"variable": "x"}},
                       original=program_to_json(p)) if writes else None

    start = evaluate(padded, {}, {})
    reduced, tried = reduce_finding(padded, {"b": Tensor(1)}, {"x": Tensor(0)}, start, evaluate,
                                    lambda r: True, time.monotonic() + 10)
    p = program_from_json(reduced.original)
    assert sorted(n.op for n in p.nodes) == ["Assign", "Var"]
    assert list(p.variables) == ["x"] and not p.outputs
    assert tried > 0


def test_reducer_shrinks_a_padded_hoist_reads_counterexample_to_three_nodes():
    from tfsem.campaigns.reduce import reduce_finding

    rewrites = pytest.importorskip("tfsem.rewrites")
    hoist = rewrites.builtin_passes()["hoist-reads"]
    padded = P.program([P.var("vx", "x"), P.const("k", 2), P.apply("b2", "Add", "$b", "k"),
                        P.write("w", "vx", "b2"), P.var("vx2", "x"), P.read("r", "vx2", "^w", "^k"),
                        P.apply("o", "Copy", "r")], {"out": "o"}, ["x"])
    feeds, init = {"b": Tensor(1)}, {"x": Tensor(0)}

    def evaluate(p, f, i):
        v = concrete_check(p, hoist(p), f, i, "atomic", "outputs")
        return _record(UNSOUND, verdict=v, original=program_to_json(p)) if v["verdict"] == "unsound" else None

    start = evaluate(padded, feeds, init)
    assert start is not None
    reduced, _ = reduce_finding(padded, feeds, init, start, evaluate, lambda r: True, time.monotonic() + 20)
    p = program_from_json(reduced.original)
    # Var (shared), Write, Read: the seed's first example without its second Var
    assert sorted(n.op for n in p.nodes) == ["Assign", "Read", "Var"], [n.op for n in p.nodes]


def test_concrete_check_says_unknown_for_an_op_with_no_concrete_model(monkeypatch):
    """An imported op tfsem cannot run (here TensorFlow's Exp) makes the one-σ
    check `unknown` naming the node, not a checker error (a Grappler campaign
    counted such checks as errors)."""
    # what a user without TensorFlow sees (with it: docs/kernels.md)
    monkeypatch.setenv("TFSEM_TF_KERNELS", "0")
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import parse_text
    text = ('node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } '
            'attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { } '
            'float_val: 1.0 } } } } '
            'node { name: "e" op: "Exp" input: "c" attr { key: "T" value { type: DT_FLOAT } } }')
    p = import_graph(parse_text("GraphDef", text), ["e"]).program
    v = concrete_check(p, p, {}, {}, "atomic", "outputs")
    assert v["verdict"] == "unknown"
    assert "Exp" in v["reason"] and "(node e)" in v["reason"]
