"""Batched differential testing (issue 6): schedules that hold for every σ,
evaluation on B valuations at once, and the vectorized inclusion test, each
checked row by row against the unbatched executor and the oracle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from tfsem.backends import arraymodule as am
from tfsem.backends import batched as BT
from tfsem.backends.arraymodule import get_backend, numpy_as_cupy
from tfsem.backends.classes import parts, schedule_classes
from tfsem.backends.confirm import confirm_counterexample
from tfsem.backends.execute import apply_function, replay
from tfsem.generators import families as F
from tfsem.oracle import functions as fns
from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import BudgetExceeded
from tfsem.oracle.functions import Function, ShapeError
from tfsem.oracle.jsonio import load_case
from tfsem.oracle.program import ControlIn, Program, TensorType
from tfsem.oracle.values import UNINITIALIZED, Error, Tensor

try:  # the project's generator of programs (issue "generators"), once it exists
    from tfsem.generators.strategies import inputs_for, programs
except ImportError:  # pragma: no cover - depends on the state of the repository
    programs = inputs_for = None

SEMANTICS = ("atomic", "decomposed")
OBSERVE = ("outputs+state", "outputs")
CORPUS = Path(__file__).parent / "cases"


def _examples(n: int) -> int:
    return n * 20 if settings.get_current_profile_name() == "nightly" else n


def backends():
    return [get_backend("numpy"), get_backend("cupy") if am.cuda_available() else numpy_as_cupy()]


F32 = TensorType("float32")


def reassociation() -> tuple[Program, Program]:
    """(a + b) + c rewritten to a + (b + c), in float32: unsound."""
    feeds = {k: F32 for k in "abc"}
    left = P.program([P.apply("ab", "Add", "$a", "$b"), P.apply("s", "Add", "ab", "$c")],
                     {"out": "s"}, feeds=feeds)
    right = P.program([P.apply("bc", "Add", "$b", "$c"), P.apply("s", "Add", "$a", "bc")],
                      {"out": "s"}, feeds=feeds)
    return left, right


def vectors() -> Program:
    """Concat, Split and broadcasting on declared 1-D feeds and variables."""
    return P.program(
        [P.apply("cat", "Concat", "$u", "$v"), P.apply("sp", "Split", "cat"),
         P.apply("sum", "Add", "sp:0", "$k"), P.var("vx", "x"),
         P.assign("ax", "Concat", "vx", "sp:1"), P.var("vx2", "x"), P.read("r", "vx2"),
         P.apply("m", "Max", "r", "$k")],
        {"sum": "sum", "m": "m", "r": "r"},
        {"x": TensorType("int64", (2,))},
        feeds={"u": TensorType("int64", (3,)), "v": TensorType("int64", (1,)), "k": TensorType()})


def drop_control(p: Program, name: str) -> Program:
    """p without the control inputs of node `name` (a typical unsound rewrite)."""
    nodes = [n.replace(inputs=tuple(i for i in n.inputs if not isinstance(i, ControlIn)))
             if n.name == name else n for n in p.nodes]
    return p.replace(nodes=tuple(nodes)).validated()


CASES = [F.first_example(False), F.racy_pairs(2), F.blind_writers(3), F.lost_update(3),
         F.assign_adds(3), F.writes_reads(), F.load_store(), F.chain(3),
         (vectors(), {}, {}), (reassociation()[0], {}, {})]


def rows_of(batch: BT.Batch, backend) -> list:
    return [batch.row(b, backend) for b in range(batch.size)]


# ---------------------------------------------------------------------------
# Schedules that hold for every σ


def _random_sigma(p: Program, rng: np.random.Generator):
    feed_types, var_types = BT.input_types(p)
    feeds = {f: Tensor(BT.random_values(rng, t, 1)[0]) for f, t in feed_types.items()}
    init = {x: Tensor(BT.random_values(rng, t, 1)[0]) for x, t in var_types.items()
            if rng.random() < 0.85}
    small = rng.random() < 0.5    # small values make coincidences, and so merged witnesses
    if small:
        feeds = {f: Tensor(np.zeros_like(v.array)) for f, v in feeds.items()}
        init = {x: Tensor(np.zeros_like(v.array)) for x, v in init.items()}
    return feeds, init


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize("observe", OBSERVE)
def test_schedule_classes_cover_the_outcome_set_at_every_sigma(semantics, observe):
    rng = np.random.default_rng(0)
    for p, _, _ in CASES:
        classes = schedule_classes(p, semantics, observe)
        for _ in range(4):
            feeds, init = _random_sigma(p, rng)
            oset = outcome_set(p, feeds, init, semantics, observe)
            got = {replay(p, feeds, init, w, "numpy", semantics, observe) for w in classes}
            assert got == set(oset)


def test_oracle_witnesses_at_one_sigma_are_not_enough():
    """Why schedule_classes exists: at x = B the two outcomes of the first
    example coincide, so the oracle has one witness; at x != B there are two."""
    p, _, _ = F.first_example(False)
    same = {"B": Tensor(1)}, {"x": Tensor(1)}
    assert outcome_set(p, *same).count == 1
    assert len(schedule_classes(p)) == 2


def test_schedule_classes_respect_the_budget():
    p, _, _ = F.blind_writers(6)
    with pytest.raises(BudgetExceeded):
        schedule_classes(p, "decomposed", max_states=50)


def _generated():
    if programs is None:  # pragma: no cover
        return st.sampled_from([c for c in CASES])
    return programs(max_nodes=8).flatmap(lambda p: inputs_for(p).map(lambda s: (p, s[0], s[1])))


@settings(max_examples=_examples(80), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_generated(), st.sampled_from(SEMANTICS), st.sampled_from(OBSERVE))
def test_schedule_classes_on_generated_programs(case, semantics, observe):
    p, feeds, init = case
    try:
        classes = schedule_classes(p, semantics, observe, max_states=5_000, max_seconds=2)
        oset = outcome_set(p, feeds, init, semantics, observe, max_states=20_000, max_seconds=2)
    except BudgetExceeded:
        reject()
    assert {replay(p, feeds, init, w, "numpy", semantics, observe) for w in classes} == set(oset)


# ---------------------------------------------------------------------------
# Batched functions equal the unbatched ones, row by row

POOL_SHAPES = [(), (1,), (2,), (3,), (4,), (2, 1), (2, 2)]


@settings(max_examples=_examples(120), deadline=None)
@given(st.sampled_from(sorted(n for n in fns.registered() if n != "Const")),
       st.lists(st.sampled_from(POOL_SHAPES), min_size=2, max_size=2),
       st.lists(st.sampled_from(["int64", "float32"]), min_size=2, max_size=2),
       st.lists(st.booleans(), min_size=2, max_size=2), st.integers(0, 2**16))
def test_batched_functions_equal_unbatched_per_row(name, shapes, dtypes, errors, seed):
    fn = fns.get(name)
    rng = np.random.default_rng(seed)
    size = 5
    b = backends()[seed % 2]
    batched_args, rows = [], [[] for _ in range(size)]
    for k in range(fn.n_in):
        if errors[k] and rng.random() < 0.3:
            batched_args.append(Error(UNINITIALIZED))
            for r in rows:
                r.append(Error(UNINITIALIZED))
            continue
        data = BT.random_values(rng, TensorType(dtypes[k], shapes[k]), size)
        batched_args.append(b.to_device(data))
        for i, r in enumerate(rows):
            r.append(Tensor(data[i]))
    got = apply_function(fn, batched_args, {}, b.xp, BT._batched_call(b.xp, size))
    for i, r in enumerate(rows):
        want = fn.apply(r, {})
        arrays = iter(b.to_host([g[i] for g in got if not isinstance(g, Error)]))
        assert tuple(g if isinstance(g, Error) else Tensor(next(arrays)) for g in got) == want


def test_functions_without_batched_impl_run_row_by_row():
    def total(xp, args, attrs):
        if args[0].ndim != 1:
            raise ShapeError("1-D only")
        return (xp.sum(args[0], keepdims=True),)
    fn = Function("TestTotal", 1, 1, total)          # not registered: no global side effect
    assert fn.batched_impl is None
    data = np.arange(12).reshape(4, 3)
    (got,) = apply_function(fn, [data], {}, np, BT._batched_call(np, 4))
    assert got.tolist() == [[3], [12], [21], [30]]
    (err,) = apply_function(fn, [data.reshape(4, 3, 1)], {}, np, BT._batched_call(np, 4))
    assert err == Error("shape-mismatch")

    def picky(xp, args, attrs):
        if args[0][0] < 0:
            raise ShapeError("data-dependent")
        return (args[0],)
    with pytest.raises(BT.NotBatchable):
        apply_function(Function("TestPicky", 1, 1, picky), [np.array([[1], [-1]])], {}, np,
                       BT._batched_call(np, 2))


# ---------------------------------------------------------------------------
# One schedule on B valuations


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_batched_evaluation_equals_unbatched_runs(semantics):
    rng = np.random.default_rng(1)
    for p, _, _ in CASES:
        feed_types, var_types = BT.input_types(p)
        for b in backends():
            for pattern in BT.error_patterns(var_types):
                batch = BT.random_batch(feed_types, var_types, 6, rng, b, pattern)
                m = BT.batched_machine(p, b, batch.size, semantics)
                rows = rows_of(batch, b)
                for w in schedule_classes(p, semantics)[:6]:
                    out = BT.evaluate(m, w, batch, "outputs+state")
                    for i, (feeds, init) in enumerate(rows):
                        assert out.row(i, b) == replay(p, feeds, init, w, "numpy", semantics)


def test_values_equal_is_spec_equality_per_row():
    xp = np
    a = np.array([[np.nan, 0.0], [1.0, -0.0], [2.0, 3.0]], dtype=np.float32)
    other_nan = np.array([np.uint32(0x7FC00001)]).view(np.float32)[0]
    b = np.array([[other_nan, 0.0], [1.0, 0.0], [2.0, 3.0]], dtype=np.float32)
    assert BT.values_equal(a, b, xp, 3).tolist() == [True, False, True]
    assert BT.values_equal(a, np.zeros((3, 2), dtype=np.int64), xp, 3).tolist() == [False] * 3
    assert BT.values_equal(a, a[:, :1], xp, 3).tolist() == [False] * 3
    assert BT.values_equal(Error("x"), Error("x"), xp, 3).tolist() == [True] * 3
    assert BT.values_equal(Error("x"), a, xp, 3).tolist() == [False] * 3
    assert BT.values_equal(a, Error("x"), xp, 3).tolist() == [False] * 3
    assert BT.values_equal(Error("x"), Error("y"), xp, 3).tolist() == [False] * 3


def test_batch_from_rows_keeps_one_error_pattern():
    b = get_backend("numpy")
    rows = [({"a": Tensor(1)}, {"x": Error(UNINITIALIZED)}), ({"a": Tensor(2)}, {"x": Error(UNINITIALIZED)})]
    batch = BT.batch_from_rows(rows, b)
    assert batch.size == 2 and batch.init["x"] == Error(UNINITIALIZED)
    assert rows_of(batch, b) == [(r[0], r[1]) for r in rows]
    with pytest.raises(ValueError, match="error pattern"):
        BT.batch_from_rows([rows[0], ({"a": Tensor(3)}, {"x": Tensor(0)})], b)


# ---------------------------------------------------------------------------
# The vectorized inclusion test equals the oracle, valuation by valuation


def _oracle_included(original, rewritten, feeds, init, semantics, observe) -> bool:
    theirs = outcome_set(original, feeds, init, semantics, observe)
    return all(o in theirs for o in outcome_set(rewritten, feeds, init, semantics, observe))


PAIRS = [
    ("reassociation", *reassociation()),
    ("hoisted read", F.load_store()[0], drop_control(F.load_store()[0], "r0")),
    ("first example", F.first_example(True)[0], F.first_example(False)[0]),
    ("identity", F.lost_update(2)[0], F.lost_update(2)[0]),
    ("vectors", vectors(), vectors()),
]


@pytest.mark.parametrize("name,original,rewritten", PAIRS, ids=[p[0] for p in PAIRS])
@pytest.mark.parametrize("semantics", SEMANTICS)
def test_unmatched_rows_equal_the_oracle(name, original, rewritten, semantics):
    rng = np.random.default_rng(2)
    feed_types, var_types = BT.input_types(original, rewritten)
    oc, rc = schedule_classes(original, semantics), schedule_classes(rewritten, semantics)
    for b in backends():
        for pattern in BT.error_patterns(var_types):
            batch = BT.random_batch(feed_types, var_types, 16, rng, b, pattern)
            bad, first = BT.unmatched(original, rewritten, batch, b, oc, rc, semantics)
            bad, first = b.to_host([bad, first])
            for i, (feeds, init) in enumerate(rows_of(batch, b)):
                assert bool(bad[i]) == (not _oracle_included(original, rewritten, feeds, init,
                                                             semantics, "outputs+state"))
                if bad[i]:
                    o = replay(rewritten, feeds, init, rc[first[i]], "numpy", semantics)
                    assert o not in outcome_set(original, feeds, init, semantics)


@settings(max_examples=_examples(60), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_generated(), st.sampled_from(SEMANTICS), st.sampled_from(OBSERVE), st.integers(0, 2**16))
def test_unmatched_rows_equal_the_oracle_on_generated_programs(case, semantics, observe, seed):
    """Both ways of covering the outcomes: whole programs, and independent
    components (parts) combined per group of shared outputs and variables."""
    p, _, _ = case
    rng = np.random.default_rng(seed)
    controlled = [n.name for n in p.nodes if any(isinstance(i, ControlIn) for i in n.inputs)]
    q = drop_control(p, controlled[seed % len(controlled)]) if controlled else p
    try:
        by_parts = (parts(p, semantics, observe, max_states=3_000, max_seconds=2),
                    parts(q, semantics, observe, max_states=3_000, max_seconds=2))
    except BudgetExceeded:
        reject()
    try:
        oc = schedule_classes(p, semantics, observe, max_states=3_000, max_seconds=2)
        rc = schedule_classes(q, semantics, observe, max_states=3_000, max_seconds=2)
        whole_programs = len(oc) * len(rc) <= 400
    except BudgetExceeded:
        whole_programs = False
    feed_types, var_types = BT.input_types(p)
    b = backends()[seed % 2]
    pattern = BT.error_patterns(var_types)[seed % len(BT.error_patterns(var_types))]
    batch = BT.random_batch(feed_types, var_types, 6, rng, b, pattern)
    m = BT.unmatched_parts(*by_parts, batch, b, semantics, observe)
    bad_parts, first = b.to_host([m.bad, m.first])
    if whole_programs:
        bad_whole = b.to_host([BT.unmatched(p, q, batch, b, oc, rc, semantics, observe)[0]])[0]
    for i, (feeds, init) in enumerate(rows_of(batch, b)):
        try:
            want = not _oracle_included(p, q, feeds, init, semantics, observe)
        except BudgetExceeded:
            continue
        assert bool(bad_parts[i]) == want
        if whole_programs:
            assert bool(bad_whole[i]) == want
        if want:   # the failing choice of schedules, one per part, is a counterexample
            choice = m.choices[first[i]]
            schedule = [step for j, part in enumerate(by_parts[1])
                        for step in part.schedules[choice.get(j, 0)]]
            o = replay(q, feeds, init, schedule, "numpy", semantics, observe)
            assert o not in outcome_set(p, feeds, init, semantics, observe)


def test_parts_cover_outcomes_with_a_sum_of_schedules():
    p, _, _ = F.racy_pairs(6)
    ps = parts(p)
    assert len(ps) == 6 and [len(x.schedules) for x in ps] == [2] * 6   # not 2**6 = 64
    assert frozenset().union(*(x.items for x in ps)) == \
        {("output", f"out{i}") for i in range(6)} | {("variable", f"x{i}") for i in range(6)}


def test_differential_test_across_components():
    """A program of two independent parts; the rewrite breaks one of them."""
    first, _, _ = F.first_example(True)
    racy, _, _ = F.racy_pairs(2)
    both = P.program([*first.nodes, *racy.nodes], {**{k: str(v) for k, v in first.outputs.items()},
                                                   **{k: str(v) for k, v in racy.outputs.items()}},
                     ["x", "x0", "x1"])
    broken = drop_control(both, "r")
    result = BT.differential_test(both, broken, 2_000, seed=0)
    assert result.original_parts == 3 and result.counterexample is not None
    cx = result.counterexample
    assert cx.outcome not in outcome_set(both, cx.feeds, cx.init)
    assert confirm_counterexample(both, broken, cx.feeds, cx.init, cx.schedule) != []
    assert BT.differential_test(both, both, 2_000, seed=0).counterexample is None


# ---------------------------------------------------------------------------
# The differential test


def test_differential_test_finds_and_confirms_float_reassociation():
    original, rewritten = reassociation()
    for b in backends():
        result = BT.differential_test(original, rewritten, 10_000, seed=1, backend=b, batch_size=4096)
        cx = result.counterexample
        assert cx is not None and 0 < result.tried <= 4096
        assert result.backend == b.label
        assert cx.outcome not in outcome_set(original, cx.feeds, cx.init)
        assert cx.outcome == replay(rewritten, cx.feeds, cx.init, cx.schedule)
        assert confirm_counterexample(original, rewritten, cx.feeds, cx.init, cx.schedule) == \
            am.available_backends()


def test_differential_test_of_the_corpus_reassociation_case():
    case = load_case(CORPUS / "alg_float_reassociate.json")
    result = BT.differential_test(case.original, case.rewritten(), 5_000, seed=0,
                                  semantics=case.semantics, observe=case.observe)
    assert case.expect == "unsound" and result.counterexample is not None


def test_differential_test_counts_every_valuation_of_a_sound_rewrite():
    p, _, _ = F.lost_update(2)
    result = BT.differential_test(p, p, 3_000, seed=0, batch_size=1000)
    assert result.counterexample is None and result.tried == 3_000
    assert frozenset() in result.patterns and frozenset({"x"}) in result.patterns


def test_differential_test_finds_the_hoisted_read():
    original, _, _ = F.load_store()
    rewritten = drop_control(original, "r0")
    result = BT.differential_test(original, rewritten, 2_000, seed=0, backend=numpy_as_cupy())
    cx = result.counterexample
    assert cx is not None
    assert cx.outcome.state is not None and dict(cx.outcome.state)["X"] == Tensor(1)
    assert confirm_counterexample(original, rewritten, cx.feeds, cx.init, cx.schedule) != []


def test_the_cupy_path_batched_equals_numpy():
    """The GPU test below on the stand-in (which flushes float32 as cupy's
    kernels do): the same unmatched valuations as numpy's, subnormals and
    all (a quarter of the random floats are any bit pattern)."""
    original, rewritten = reassociation()
    feed_types, var_types = BT.input_types(original)
    classes = schedule_classes(original), schedule_classes(rewritten)
    masks = []
    for b in (get_backend("numpy"), numpy_as_cupy()):
        batch = BT.random_batch(feed_types, var_types, 20_000, np.random.default_rng(5), b)
        bad, _ = BT.unmatched(original, rewritten, batch, b, *classes)
        masks.append(b.to_host([bad])[0])
    assert masks[0].any() and (masks[0] == masks[1]).all()


@pytest.mark.skipif(not am.cuda_available(),
                    reason=f"needs cupy and a CUDA GPU: {am.cuda_unavailable_reason()}")
def test_cuda_batched_equals_numpy():  # pragma: no cover - needs a GPU
    original, rewritten = reassociation()
    feed_types, var_types = BT.input_types(original)
    classes = schedule_classes(original), schedule_classes(rewritten)
    masks = []
    for name in ("numpy", "cupy"):
        b = get_backend(name)
        batch = BT.random_batch(feed_types, var_types, 100_000, np.random.default_rng(5), b)
        bad, _ = BT.unmatched(original, rewritten, batch, b, *classes)
        masks.append(b.to_host([bad])[0])
    assert (masks[0] == masks[1]).all()


# ---------------------------------------------------------------------------
# cupy's float32 flushing (its kernels are compiled with -ftz=true)

_SUB32 = np.float32(1e-40)            # a float32 subnormal
_TINY32 = np.finfo(np.float32).tiny


def _flush_cases():
    """(function, operands) whose float32 results a flushing kernel changes:
    a subnormal operand (read as zero), a subnormal result (written as zero),
    a comparison with a subnormal (equal to zero when flushed)."""
    return [("Mul", [np.array([_SUB32, 1.0], np.float32), np.float32(5e5)]),   # the GPU's case
            ("Mul", [np.array([_TINY32, 3.0], np.float32), np.float32(0.5)]),
            ("Sub", [np.array([1.5 * _TINY32], np.float32), np.float32(_TINY32)]),
            ("Add", [np.array([-_SUB32, 2.0], np.float32), np.float32(0.0)]),
            ("Neg", [np.array([_SUB32], np.float32)])]


@pytest.mark.parametrize("name,operands", _flush_cases(), ids=lambda c: str(c)[:12])
def test_cupy_flushing_is_never_the_result(name, operands, monkeypatch):
    """On the cupy path (the stand-in flushes as cupy's kernels do) a
    float32 call that flushing may change is recomputed on the host: the
    batched and the unbatched results are numpy's bits.  Without that
    recomputation the stand-in gives the GPU's wrong bits (so CPU runs
    catch the class)."""
    from tfsem.backends import execute
    fn = fns.get(name)
    b = backends()[1]    # a GPU's cupy where there is one
    size = len(operands[0])
    want = fn.apply([Tensor(np.asarray(a)) for a in operands], {})
    rows = [np.broadcast_to(np.asarray(a), (size,) + np.shape(a)).copy() if np.ndim(a) == 0
            else a for a in operands]
    host = [np.stack([r] * 2) for r in rows]      # a batch of two equal valuations
    before = dict(am.HOST_RECOMPUTES)

    def run(batched: bool):
        if batched:
            got = apply_function(fn, [b.to_device(a) for a in host], {}, b.xp,
                                 BT._batched_call(b.xp, 2))
            return [Tensor(b.to_host([g])[0][1]) for g in got]
        got = apply_function(fn, [b.to_device(np.asarray(a)) for a in operands], {}, b.xp)
        return [Tensor(b.to_host([g])[0]) for g in got]
    for batched in (False, True):
        assert tuple(run(batched)) == want
    assert am.HOST_RECOMPUTES.get(name, 0) >= before.get(name, 0) + 2
    if b.substituted:
        monkeypatch.setattr(execute, "float32_flush_doubt", lambda *a: False)
        assert tuple(run(False)) != want    # the stand-in flushes: the GPU's bits


@pytest.mark.skipif(not am.cuda_available(),
                    reason=f"needs cupy and a CUDA GPU: {am.cuda_unavailable_reason()}")
def test_cuda_kernels_flush_float32():  # pragma: no cover - needs a GPU
    """The cause, on the GPU: cupy's kernels (compiled with -ftz=true) read
    a float32 subnormal as zero and write a subnormal result as zero;
    float64 is not flushed."""
    import cupy
    x = cupy.asarray(np.array([_SUB32, 1.5 * _TINY32], np.float32))
    assert (x * np.float32(5e5)).get()[0] == 0                     # numpy: -> 5e-35
    assert (x[1:] - np.float32(_TINY32)).get()[0] == 0             # numpy: 0.5 * tiny
    assert (x.astype(np.float64) * 2.0).get()[1] == 3.0 * float(np.float32(_TINY32))
    assert (cupy.asarray(np.array([5e-324])) * 2.0).get()[0] == 1e-323


def test_no_doubt_no_host_recompute():
    """Normal float32 operands and results stay on the device."""
    b = numpy_as_cupy()
    xp = b.xp
    a = b.to_device(np.array([1.5, -3.0, 2.0**-120], np.float32))
    assert not am.float32_flush_doubt(xp, [a, a], [a * 2])
    assert am.float32_flush_doubt(xp, [a], [a - a])                      # zeros: doubt
    assert am.float32_flush_doubt(xp, [b.to_device(np.array([_SUB32]))], [a])
    assert not am.float32_flush_doubt(np, [np.array([_SUB32])], [np.zeros(1, np.float32)])
    half = b.to_device(np.array([1.0, 2.0**-20], np.float16))          # a float16 subnormal
    assert am.float32_flush_doubt(xp, [half], []) and not am.float32_flush_doubt(xp, [half[:1]], [])
    assert am.float32_flush_doubt(xp, [half[:1]], [half[:1] * np.float16(2.0**-14)])   # its tiny
    assert not am.float32_flush_doubt(xp, [b.to_device(np.array([5e-324]))], [])   # float64
    # a NaN result of any float dtype (a GPU's NaN bits are its own); a NaN
    # operand whose result holds none is no doubt (its bits are not in it)
    for dt in (np.float16, np.float32, np.float64):
        one = b.to_device(np.array([1.0, 2.0], dt))
        nan = b.to_device(np.array([1.0, -np.nan], dt))
        assert am.float32_flush_doubt(xp, [one], [nan]), dt
        assert not am.float32_flush_doubt(xp, [nan], [one]), dt
        inf = b.to_device(np.array([np.inf, -np.inf], dt))
        assert not am.float32_flush_doubt(xp, [one], [inf]), dt


def test_a_dtype_cupy_lacks_is_refused_by_name():
    from tfsem.oracle.functions import CannotRun
    b = numpy_as_cupy()
    with pytest.raises(CannotRun, match="cupy has no dtype bfloat16"):
        b.to_device(_bfloat16_zeros())
    with pytest.raises(CannotRun, match="cannot run Cast on cupy"):
        apply_function(fns.get("Cast"), [b.to_device(np.ones(2, np.float32))],
                       {"DstT": "bfloat16"}, b.xp)


def _bfloat16_zeros():
    from tfsem.oracle.values import DTYPES
    return np.zeros(2, DTYPES["bfloat16"])


def test_a_function_applied_row_by_row_stops_at_the_tests_deadline():
    """A function with no batched form runs one valuation at a time
    (`_row_by_row`); within a differential test's batch it looks at the
    test's deadline every ROW_CLOCK_ROWS valuations, so that a large batch
    cannot outlast the check's budget (a float32 Adam update's import ran
    16,384 valuations for 6.6 s of a 5 s check)."""
    import time as _time
    from tfsem.backends import batched as bt
    from tfsem.oracle.functions import Function
    calls = []

    def impl(xp, args, attrs):
        calls.append(1)
        return (xp.asarray(args[0]),)
    fn = Function("RowByRowProbe", 1, 1, impl)
    arrays = (np.zeros((4096, 3), np.float32),)
    bt._clock.deadline = _time.monotonic() - 1.0
    try:
        with pytest.raises(bt._OutOfTime):
            bt._row_by_row(fn, arrays, {}, np, 4096)
    finally:
        bt._clock.deadline = None
    assert len(calls) < bt.ROW_CLOCK_ROWS
    # (no deadline: every valuation, stacked)
    calls.clear()
    out = bt._row_by_row(fn, arrays, {}, np, 4096)
    assert len(calls) == 4096 and out[0].shape == (4096, 3)
