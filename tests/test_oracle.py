"""The oracle on the seeds' examples, and against the step-semantics brute force."""

from __future__ import annotations

import pytest

from tfsem.generators import families as F
from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.semantics import reference_outcomes, run_schedule, graph_of, outcome_of
from tfsem.oracle.values import Error, Tensor


def outputs_of(oset, name):
    return sorted(int(dict(o.outputs)[name].array) for o in oset)


def states_of(oset, var):
    return sorted(int(dict(o.state)[var].array) for o in oset)


# -- seed 000 -------------------------------------------------------------------


def test_first_example_with_control_edge_outputs_only_B():
    p, feeds, init = F.first_example(control_edge=True)
    result = outcome_set(p, feeds, init)
    assert result.count == 1
    assert outputs_of(result, "out") == [2]          # B


def test_first_example_without_control_edge_outputs_A_or_B():
    p, feeds, init = F.first_example(control_edge=False)
    result = outcome_set(p, feeds, init)
    assert outputs_of(result, "out") == [1, 2]       # A (initial x) or B


def test_first_example_uninitialized_x_may_be_read():
    # footnote 6: A may be "not properly initialized"; writing B initializes.
    p, feeds, _ = F.first_example(control_edge=False)
    result = outcome_set(p, feeds, {})
    outs = {dict(o.outputs)["out"] for o in result}
    assert outs == {Tensor(2), Error("uninitialized")}
    assert {dict(o.state)["x"] for o in result} == {Tensor(2)}


def test_figure1_assign_add_has_one_outcome():
    p, feeds, init = F.figure1(2, "Add")
    result = outcome_set(p, feeds, init)
    assert result.count == 1
    (o,) = result
    assert dict(o.outputs)["out"] == Tensor([111])    # B + D + E, either order


def test_figure1_assign_concat_has_two_outcomes():
    p, feeds, init = F.figure1(2, "Concat")
    result = outcome_set(p, feeds, init)
    assert {tuple(dict(o.outputs)["out"].array) for o in result} == {(100, 1, 10), (100, 10, 1)}


def test_figure1_concat_r_replicas_gives_r_factorial():
    p, feeds, init = F.figure1(4, "Concat")
    assert outcome_set(p, feeds, init).count == 24


def test_figure4_read_add_write_loses_an_update():
    # Each Assign-Add replaced by Read, Add, Write: x may end with one increment.
    p, feeds, init = F.lost_update(2)
    assert states_of(outcome_set(p, feeds, init), "x") == [1, 2]
    p, feeds, init = F.increments(2, atomic=True)
    assert states_of(outcome_set(p, feeds, init), "x") == [2]


# -- seed 002 -------------------------------------------------------------------


def test_seed002_writes_reads_never_r0_2_and_r1_0():
    p, feeds, init = F.writes_reads()
    for semantics in ("atomic", "decomposed"):
        pairs = {(int(dict(o.outputs)["r0"].array), int(dict(o.outputs)["r1"].array))
                 for o in outcome_set(p, feeds, init, semantics)}
        assert (2, 0) not in pairs
        assert pairs == {(0, 0), (0, 1), (2, 1)}


@pytest.mark.parametrize("semantics, finals", [("atomic", [2]), ("decomposed", [1, 2])])
def test_seed002_two_increments(semantics, finals):
    p, feeds, init = F.increments(2, atomic=True)
    assert states_of(outcome_set(p, feeds, init, semantics), "X".lower()) == finals


def test_seed002_load_store_ordering():
    p, feeds, init = F.load_store()
    result = outcome_set(p, feeds, init)
    pairs = {(int(dict(o.outputs)["r0"].array), int(dict(o.state)["X"].array)) for o in result}
    # if X ends as 1 then r0 is 5
    assert all(r0 == 5 for r0, x in pairs if x == 1)
    assert pairs == {(0, 2), (5, 2), (5, 1)}


# -- the fast oracle equals the brute force ---------------------------------------

HANDMADE = {
    "first": F.first_example(False),
    "first-ctrl": F.first_example(True),
    "racy2": F.racy_pairs(2),
    "blind3": F.blind_writers(3),
    "adds3": F.assign_adds(3),
    "lost2": F.lost_update(2),
    "fig1-add": F.figure1(2, "Add"),
    "fig1-concat": F.figure1(2, "Concat"),
    "writes-reads": F.writes_reads(),
    "load-store": F.load_store(),
    "increments": F.increments(2),
    "chain": F.chain(5),
    # fan-out, a dead node, Copy, a control input edge, an error flowing
    "misc": (P.program([
        P.var("v", "x"), P.read("r", "v", "^$go"), P.apply("c", "Copy", "r"),
        P.apply("s", "Add", "c:0", "c:1"), P.apply("dead", "Neg", "s"),
        P.var("v2", "x"), P.assign("a", "Mul", "v2", "$k"),
        P.var("v3", "x"), P.write("w", "v3", "s"),
    ], {"o1": "s", "o2": "r"}, ["x"]), {"k": Tensor(3)}, {"x": Tensor(2)}),
    "uninit-assign": (P.program([
        P.var("v", "x"), P.assign("a", "Add", "v", "$k"),
        P.var("v2", "x"), P.read("r", "v2"),
        P.var("v3", "x"), P.write("w", "v3", "$k"),
    ], {"o": "r"}, ["x"]), {"k": Tensor(3)}, {}),
    "two-vars-mixed": (P.program([
        P.var("vx", "x"), P.read("rx", "vx"), P.var("vy", "y"), P.assign("ay", "Sub", "vy", "rx"),
        P.var("vy2", "y"), P.read("ry", "vy2"), P.var("vx2", "x"), P.write("wx", "vx2", "ry"),
    ], {"o": "ry"}, ["x", "y"]), {}, {"x": Tensor(5), "y": Tensor(1)}),
}


@pytest.mark.parametrize("name", sorted(HANDMADE))
@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
@pytest.mark.parametrize("observe", ["outputs+state", "outputs"])
@pytest.mark.parametrize("engine", ["reference", "auto"])
def test_fast_oracle_equals_brute_force(name, semantics, observe, engine):
    p, feeds, init = HANDMADE[name]
    fast = outcome_set(p, feeds, init, semantics, observe, engine=engine)
    brute = reference_outcomes(p, feeds, init, semantics, observe)
    assert set(fast) == set(brute)
    assert fast.count == len(brute)
    g = graph_of(p)
    for outcome, schedule in fast.items():   # each witness reproduces its outcome
        final = run_schedule(p, feeds, init, schedule, semantics)
        assert outcome_of(p, g, final, observe) == outcome


def test_decomposed_outcomes_include_atomic_ones():
    for p, feeds, init in HANDMADE.values():
        atomic = set(outcome_set(p, feeds, init, "atomic"))
        assert atomic <= set(outcome_set(p, feeds, init, "decomposed"))


def test_product_form_keeps_count_exact():
    p, feeds, init = F.racy_pairs(50)
    result = outcome_set(p, feeds, init)
    assert result.count == 2 ** 50
    assert len(result.components) == 50
    assert len(result.as_dict(limit=3)) == 3


def test_membership_and_witness_in_product_form():
    p, feeds, init = F.racy_pairs(3)
    result = outcome_set(p, feeds, init)
    for outcome, schedule in result.as_dict(limit=8).items():
        assert outcome in result
        assert result.witness(outcome) is not None
    p1, f1, i1 = F.racy_pairs(3)
    other = outcome_set(p1, {k: Tensor(-1) for k in f1}, i1)
    assert not any(o in result for o in other)


def test_budget_exceeded_is_raised_not_a_partial_set():
    p, feeds, init = F.blind_writers(8)
    with pytest.raises(BudgetExceeded) as info:
        outcome_set(p, feeds, init, max_states=10)
    assert info.value.which == "states"
    assert "budget exceeded" in str(info.value)


def test_schedule_replay_rejects_a_step_that_is_not_enabled():
    p, feeds, init = F.first_example(True)
    with pytest.raises(ValueError, match="not enabled"):
        run_schedule(p, feeds, init, ["vx2", "r", "vx", "w"])


def test_assign_with_error_input_changes_nothing():
    p = P.program([P.var("v", "x"), P.apply("bad", "Add", "$a", "$b"),
                   P.write("w", "v", "bad")], {}, ["x"])
    # int64 + float32 is a dtype-mismatch error: the Write must not happen
    feeds = {"a": Tensor(1), "b": Tensor(1.0, "float32")}
    (o,) = outcome_set(p, feeds, {"x": Tensor(7)})
    assert dict(o.state)["x"] == Tensor(7)


def test_int64_add_wraps_around():
    p = P.program([P.apply("s", "Add", "$a", "$b")], {"o": "s"})
    (o,) = outcome_set(p, {"a": Tensor(2 ** 63 - 1), "b": Tensor(1)}, {})
    assert dict(o.outputs)["o"] == Tensor(-(2 ** 63))


def test_decomposed_write_read_step_is_no_access():
    # a decomposed Write's read step takes a value Snd ignores: the reference
    # engine fires it eagerly and leaves its value out of state keys, so the
    # lost update costs as many states decomposed as atomic (it cost 12x more)
    p, feeds, init = F.lost_update(5)
    atomic = outcome_set(p, feeds, init, "atomic", engine="reference")
    decomposed = outcome_set(p, feeds, init, "decomposed", engine="reference")
    assert set(atomic) == set(decomposed) and decomposed.count == 5
    assert decomposed.states <= atomic.states
    # a Write of an error value racing with another Write: what stays is x's
    # value at the write step, whatever the read step saw
    q = P.program([P.var("vu", "u"), P.read("ru", "vu"),
                   P.var("v1", "x"), P.write("w1", "v1", "ru"),
                   P.var("v2", "x"), P.write("w2", "v2", "$b"),
                   P.var("vr", "x"), P.read("r", "vr")],
                  {"out": "r"}, ["x", "u"])
    feeds, init = {"b": Tensor(5)}, {"x": Tensor(1)}
    for observe in ("outputs", "outputs+state"):
        brute = reference_outcomes(q, feeds, init, "decomposed", observe)
        assert set(outcome_set(q, feeds, init, "decomposed", observe, engine="reference")) == set(brute)


def test_function_cache_bounds_and_saves_applications(monkeypatch):
    from tfsem.oracle import explore
    from tfsem.oracle import functions as fns
    calls = []
    original = fns.Function.apply
    monkeypatch.setattr(fns.Function, "apply", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    # the search fires the same Add of the same value in thousands of states
    p, feeds, init = F.lost_update(6)
    r = outcome_set(p, feeds, init, engine="reference")
    assert r.count == 6 and r.states > 10_000 and len(calls) < 1_000
    # a large application is computed, not kept
    big = Tensor(list(range(2000)))
    cached = explore._Cached(fns.get("Neg"))
    (a,) = cached.apply([big])
    (b,) = cached.apply([big])
    assert a == b and not cached.memo
    small = explore._Cached(fns.get("Neg"))
    small.apply([Tensor(3)])
    assert len(small.memo) == 1
    # applications that never repeat: the node gives up and frees its memo
    fresh = explore._Cached(fns.get("Neg"))
    for k in range(explore._Cached.GIVE_UP_AFTER):
        assert fresh.apply([Tensor(k)]) == (Tensor(-k),)
    assert fresh.memo is None and fresh.apply([Tensor(5)]) == (Tensor(-5),)
