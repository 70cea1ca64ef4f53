"""Adversarial review of the oracle's run speedups: an Add or Mul (.ftz)
missing from the application memo answered by the remembered application of
its arguments swapped (functions `_commuted`), `validate()` answering [] for
a program `Program.validated()` found valid, Program's hash from a part of
its identity, and explore's lazy access conflicts and numeric components.

Each test is an attack that found nothing and now guards the property it
attacked: the swapped answer against a fresh computation of the same order
(every dtype the functions take, integer extremes, signed zeros,
subnormals, products rounded up to the smallest normal with operands of
equal magnitude, empty and broadcast shapes) and against TensorFlow's own
kernels; functions replaced or derived from a replaced base; validity after
the registry changed under a validated program; programs that differ only
where the hash does not look, kept apart by the memos keyed by program;
and the engines' outcome sets of racy programs against the enumerating
reference."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from controlflow_support import registry_restored
from tfsem.oracle import applications as A
from tfsem.oracle import explore
from tfsem.oracle import functions as fns
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.program import DataIn, FeedIn, Node, Program, TensorType, validate
from tfsem.oracle.values import Error, Tensor, exact

COMMUTING = ("Add", "Mul", "Add.ftz", "Mul.ftz")


@pytest.fixture(autouse=True)
def no_kept_memo():
    A.clear()
    yield
    A.clear()


@pytest.fixture
def counted(monkeypatch):
    """How many applications `_commuted` answered."""
    answered = [0]
    real = fns._commuted

    def counting(*args):
        out = real(*args)
        answered[0] += out is not None
        return out
    monkeypatch.setattr(fns, "_commuted", counting)
    return answered


def _swapped_answer(f, a: Tensor, b: Tensor):
    """f at (b, a) inside a memo scope that has seen f at (a, b): the
    swapped answer where `_commuted` takes it."""
    with A.scope():
        f.apply((a, b))
        return f.apply((b, a))


def _fresh(f, a: Tensor, b: Tensor):
    return f._apply((a, b), None, np)


def _same(x, y) -> bool:
    return [type(v) for v in x] == [type(v) for v in y] and all(
        (exact(u) == exact(v) and u.array.shape == v.array.shape) if type(u) is Tensor else u == v
        for u, v in zip(x, y))


# -- (1) the swapped answer ------------------------------------------------------


def _int_edges(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    vals = [0, 1, 2, info.max, info.max - 1, info.min, info.min + 1, info.max // 2 + 1]
    if info.min < 0:
        vals += [-1, -2]
    return np.array(vals, dtype=object).astype(dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint16, np.uint32, np.uint64,
                                   np.int64, np.int32])
def test_integer_extremes_wrap_alike_in_either_order(dtype, counted):
    # (the change's own test covers int32, int64 and uint8: every other
    # integer dtype, every pair of edge values, the product's wraparound)
    e = _int_edges(dtype)
    a, b = Tensor(np.repeat(e, len(e))), Tensor(np.tile(e, len(e)))
    for name in COMMUTING:
        f = fns.get(name)
        got = _swapped_answer(f, a, b)
        assert _same(got, _fresh(f, b, a)), (name, dtype)
    assert counted[0] == len(COMMUTING)


def _product_near_tiny(dtype, rng, count: int) -> np.ndarray:
    """Values x of `dtype` whose exact square lies where the CPU's
    tininess after rounding flushes a product that numpy rounds up to the
    smallest normal (`_tiny_after_rounding`), or just beside it."""
    tiny = float(ml_dtypes.finfo(dtype).tiny)
    root = np.sqrt(tiny)
    xs = (root * (1.0 - rng.random(200000) * 2.0 ** -20)).astype(dtype)
    sq = xs.astype(np.float64) ** 2        # (exact: float32 and bfloat16 operands)
    near = xs[(sq < tiny) & (sq > tiny * (1.0 - 2.0 ** -22))]
    assert near.size >= count, near.size
    return near[:count]


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_products_rounded_up_to_tiny_with_operands_of_equal_magnitude(dtype, counted):
    # (`_tiny_after_rounding` scales "the operand of smaller magnitude":
    # with |x| == |y| it picks x whichever it is; x * -x and -x * x, and
    # mixed with operands of unequal magnitude, element for element)
    rng = np.random.default_rng(20)
    x = _product_near_tiny(dtype, rng, 8) if dtype == np.float32 else \
        np.array([np.sqrt(float(ml_dtypes.finfo(dtype).tiny))] * 8, dtype)
    other = (x.astype(np.float64) * 1.5).astype(dtype)
    a = Tensor(np.concatenate([x, -x, x, other]))
    b = Tensor(np.concatenate([-x, x, other, -x]))
    f = fns.get("Mul.ftz")
    fresh = _fresh(f, b, a)
    assert _same(fresh, _fresh(f, a, b))
    assert _same(_swapped_answer(f, a, b), fresh)
    assert counted[0] == 1
    if dtype == np.float32:
        # (the attack reaches the case: some of these products flush to
        # zero though numpy rounds them to the smallest normal)
        with np.errstate(all="ignore"):
            plain = np.multiply(a.array, b.array)
        assert (plain != fresh[0].array).any()


@pytest.mark.parametrize("shapes", [((0,), ()), ((0,), (1,)), ((2, 0), (1,)), ((1, 1), (1,)),
                                    ((1, 1), ()), ((2, 1), (1, 3)), ((3,), (2, 1)),
                                    ((1,), (4,)), ((), (1, 1, 1))])
def test_broadcast_and_empty_shapes_give_the_swapped_shape(shapes, counted):
    rng = np.random.default_rng(3)
    sa, sb = shapes
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.int16):
        a = Tensor(rng.normal(size=sa).astype(dtype) if sa else np.asarray(rng.normal(), dtype))
        b = Tensor(rng.normal(size=sb).astype(dtype) if sb else np.asarray(-0.0, dtype))
        for name in COMMUTING:
            f = fns.get(name)
            assert _same(_swapped_answer(f, a, b), _fresh(f, b, a)), (name, dtype, shapes)
    assert counted[0] == 4 * len(COMMUTING)


def test_signed_zeros_and_subnormals_in_every_float_dtype(counted):
    for dtype in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64):
        info = ml_dtypes.finfo(dtype)
        sub, tiny = float(info.smallest_subnormal), float(info.tiny)
        vals = np.array([0.0, -0.0, sub, -sub, tiny, -tiny, tiny - sub, -(tiny - sub),
                         1.0, -1.0, float(info.max), -float(info.max)], np.float64).astype(dtype)
        a, b = Tensor(np.repeat(vals, len(vals))), Tensor(np.tile(vals, len(vals)))
        for name in COMMUTING:
            f = fns.get(name)
            fresh = _fresh(f, b, a)
            assert _same(_swapped_answer(f, a, b), fresh), (name, dtype)
    assert counted[0] == 4 * len(COMMUTING)


def test_mismatched_dtypes_bool_and_errors_are_computed_not_swapped(counted):
    f = fns.get("Add")
    cases = [(Tensor(np.ones(3, np.int32)), Tensor(np.ones(3, np.int64))),
             (Tensor(np.ones(3, np.float16)), Tensor(np.ones(3, ml_dtypes.bfloat16))),
             (Tensor(np.array([True, False])), Tensor(np.array([True, True]))),
             (Tensor(np.ones(3, np.float32)), Tensor(np.ones(2, np.float32))),
             (Error("first"), Tensor(np.ones(3, np.float32)))]
    for a, b in cases:
        got = _swapped_answer(f, a, b)
        assert _same(got, _fresh(f, b, a))
        assert type(got[0]) is Error
    assert counted[0] == 0


def test_attributes_are_part_of_what_is_swapped(counted):
    # (a remembered application under other attributes answers nothing)
    f = fns.get("Mul")
    a, b = Tensor(np.arange(5000, dtype=np.float32)), Tensor(np.ones(5000, np.float32))
    with A.scope():
        first = f.apply((a, b), {"T": "float32"})
        second = f.apply((b, a), {"T": "float32", "_class": ["loc:@x"]})
        third = f.apply((b, a), {"T": "float32"})
    assert second[0] is not first[0] and third[0] is first[0]
    assert counted[0] == 1


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(fns, "_REGISTRY", dict(fns._REGISTRY))


def test_the_flushed_variant_of_a_replaced_base_does_not_commute(registry):
    def subtract(xp, args, attrs):
        return (xp.subtract(args[0], args[1]),)
    base = fns.register(fns.Function("Add", 2, 1, subtract), replace=True)
    ftz = fns.flushed_variant(base)
    assert not base.commutes and not ftz.commutes
    a = Tensor(np.arange(5000, dtype=np.float32))
    b = Tensor(np.full(5000, 3.0, np.float32))
    got = _swapped_answer(ftz, a, b)
    np.testing.assert_array_equal(got[0].array, b.array - a.array)


def test_a_function_put_in_by_hand_under_add_is_not_answered_by_the_old_one(monkeypatch):
    # (the memo is keyed by the function object: Add's remembered
    # application answers no other function, swapped or not)
    def subtract(xp, args, attrs):
        return (xp.subtract(args[0], args[1]),)
    old = fns.get("Add")
    a = Tensor(np.arange(5000, dtype=np.float32))
    b = Tensor(np.full(5000, 3.0, np.float32))
    with A.scope():
        old.apply((a, b))
        monkeypatch.setitem(fns._REGISTRY, "Add", fns.Function("Add", 2, 1, subtract))
        got = fns.get("Add").apply((b, a))
    np.testing.assert_array_equal(got[0].array, b.array - a.array)


def test_tensorflow_kernels_give_the_swapped_answer(counted):
    """TensorFlow's AddV2 and Mul (CPU, subnormals flushed: tfsem's .ftz
    models; integers: the plain ones) at (b, a) are the swapped answer's
    bits wherever the result holds no NaN."""
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(11)
    compared = 0
    for dtype, tf_dtype in ((np.float32, tf.float32), (np.float64, tf.float64),
                            (ml_dtypes.bfloat16, tf.bfloat16), (np.float16, tf.float16),
                            (np.int32, tf.int32), (np.int64, tf.int64), (np.uint8, tf.uint8)):
        if np.dtype(dtype).kind in "iu":
            e = _int_edges(dtype)
            pairs = [(np.repeat(e, len(e)), np.tile(e, len(e)))]
            names = {"Add": tf.raw_ops.AddV2, "Mul": tf.raw_ops.Mul}
        else:
            info = ml_dtypes.finfo(dtype)
            sub, tiny = float(info.smallest_subnormal), float(info.tiny)
            vals = np.array([0.0, -0.0, sub, -sub, tiny, -tiny, tiny * 1.5, 1.0, -3.5,
                             float("inf"), float(info.max), 2.0 ** -63, -(2.0 ** -64)],
                            np.float64).astype(dtype)
            pairs = [(np.repeat(vals, len(vals)), np.tile(vals, len(vals))),
                     (rng.normal(size=(3, 1)).astype(dtype), rng.normal(size=(1, 4)).astype(dtype)),
                     (np.asarray(-0.0, dtype), rng.normal(size=(5,)).astype(dtype))]
            if dtype == np.float32:
                x = _product_near_tiny(np.float32, rng, 8)
                pairs.append((np.concatenate([x, -x]), np.concatenate([-x, x])))
            ftz = dtype != np.float16      # (float16 keeps its subnormals)
            names = {("Add.ftz" if ftz else "Add"): tf.raw_ops.AddV2,
                     ("Mul.ftz" if ftz else "Mul"): tf.raw_ops.Mul}
        for x, y in pairs:
            for name, op in names.items():
                f = fns.get(name)
                got = _swapped_answer(f, Tensor(x), Tensor(y))[0]
                want = op(x=tf.constant(y, dtype=tf_dtype), y=tf.constant(x, dtype=tf_dtype))
                want = np.asarray(want.numpy()).astype(dtype)
                if np.dtype(dtype).kind == "f" or dtype == ml_dtypes.bfloat16:
                    if np.isnan(want.astype(np.float64)).any():
                        continue
                assert got.array.shape == want.shape
                assert got.array.tobytes() == want.tobytes(), (name, dtype, x, y)
                compared += 1
    assert compared >= 25 and counted[0] == compared, (compared, counted[0])


# -- (2) validate() of a validated program -----------------------------------------


def _neg_program() -> Program:
    # (the port of `r` has two consumers: valid, but not under `strict`)
    return Program({"x": TensorType("int64", ())},
                   (Node("x", "Var", (), {"var": "x"}),
                    Node("r", "Read", (DataIn("x"),), {}),
                    Node("n", "Neg", (DataIn("r"),), {}),
                    Node("m", "Neg", (DataIn("r"),), {}),
                    Node("a", "Assign", (DataIn("x"), DataIn("n")), {"fn": "Add"})),
                   {"out": DataIn("m")})


def _rules(p: Program, strict: bool = False) -> list[str]:
    return sorted(v.rule for v in validate(p, strict=strict))


def test_validate_after_the_registry_changed_under_a_validated_program(monkeypatch):
    # (the registry as it was, in its order, after the test: monkeypatch puts
    # a deleted "Add" back at the end, and the seeded program generators of
    # later tests in this process drew other programs)
    with registry_restored():
        _validate_after_the_registry_changed(monkeypatch)


def _validate_after_the_registry_changed(monkeypatch):
    def neg(xp, args, attrs):
        return (xp.negative(args[0]),)
    p = _neg_program().validated()
    assert validate(p) == []
    # an op's function now takes two arguments (put in by hand: no version)
    monkeypatch.setitem(fns._REGISTRY, "Neg", fns.Function("Neg", 2, 1, neg))
    assert _rules(p) == ["arity", "arity"]
    monkeypatch.undo()
    assert validate(p) == []
    # an Assign's function no longer assignable; then gone
    monkeypatch.setitem(fns._REGISTRY, "Add", fns.Function("Add", 2, 1, neg, attrs={"k": str}))
    assert _rules(p) == ["arity"]
    monkeypatch.delitem(fns._REGISTRY, "Add")
    assert _rules(p) == ["unknown-function"]
    monkeypatch.undo()
    # an op's function needs an attribute now (registered again: a new version)
    monkeypatch.setattr(fns, "_REGISTRY", dict(fns._REGISTRY))
    fns.register(fns.Function("Neg", 1, 1, neg, attrs={"k": str}), replace=True)
    assert _rules(p) == ["missing-attribute", "missing-attribute"]
    monkeypatch.undo()


def test_validate_strict_of_a_program_validated_loosely():
    p = _neg_program().validated(strict=False)
    assert validate(p) == []
    from tfsem.oracle.program import ProgramError, _violations
    assert validate(p, strict=True) == _violations(p, True)
    assert "one-consumer" in _rules(p, strict=True)
    with pytest.raises(ProgramError):
        p.validated(strict=True)
    assert validate(p) == []


# -- (3) the hash of programs ------------------------------------------------------


def _doc(const: float, first: str, second: str, fn: str) -> dict:
    return {"format": "tfsem.program/1", "variables": ["x"],
            "feeds": {"a": {"dtype": "int64", "shape": []}},
            "nodes": [{"name": "c", "op": "Const", "value": const},
                      {"name": "vx", "op": "Var", "var": "x"},
                      {"name": "r", "op": "Read", "inputs": ["vx"]},
                      {"name": "s", "op": "Sub", "inputs": [first, second]},
                      {"name": "w", "op": "Assign", "fn": fn, "inputs": ["vx", "s"]},
                      {"name": "r2", "op": "Read", "inputs": ["vx"]}],
            "outputs": {"out": "s", "late": "r2"}}


def _outcomes(p: Program, **kw) -> list:
    feeds = {"a": Tensor(np.int64(7))}
    init = {"x": Tensor(np.int64(100))}
    return sorted(repr((tuple((k, exact(v)) for k, v in o.outputs),
                        tuple((k, exact(v)) for k, v in o.state or ())))
                  for o in outcome_set(p, feeds, init, **kw))


def test_programs_the_hash_cannot_tell_apart_keep_their_own_outcomes():
    """Programs that differ only in a Const's value, the order of a node's
    inputs or an Assign's function share a hash; the memos keyed by program
    (explore's components and compiled components, the application memo)
    keep each one's own outcomes, whichever ran first."""
    docs = [_doc(1, "c", "$a", "Add"), _doc(2, "c", "$a", "Add"),
            _doc(1, "$a", "c", "Add"), _doc(1, "c", "$a", "Sub"), _doc(1, "c", "r", "Add")]
    programs = [program_from_json(d) for d in docs]
    assert len({hash(p) for p in programs[:4]}) == 1
    assert len(set(programs)) == len(programs)
    settings = [dict(semantics=s, observe=o, engine=e) for s in ("atomic", "decomposed")
                for o in ("outputs+state", "outputs") for e in ("reference", "auto")]
    fresh = []
    for d in docs:
        A.clear()
        explore._COMPILED.clear()
        explore._COMPONENTS.clear()
        p = program_from_json(d)
        fresh.append([_outcomes(p, **kw) for kw in settings])
    assert len({repr(f) for f in fresh}) == len(docs)     # (each its own outcomes)
    for order in (programs, programs[::-1]):
        with A.scope():
            got = {id(p): [_outcomes(p, **kw) for kw in settings] for p in order}
        assert [got[id(p)] for p in programs] == fresh
    # equal programs made apart share the memos' entries, as they may
    again = program_from_json(docs[0])
    assert again == programs[0] and hash(again) == hash(programs[0])
    assert explore._COMPILED.get(again) is explore._COMPILED.get(programs[0])


# -- (4) explore: lazy conflicts, numeric components ------------------------------


def _threads(k: int, shared_vars: int, dtype: str = "int64") -> Program:
    """k identical threads, each reading, incrementing and writing back the
    variables x0..: the symmetry engine's orbits, the reads-from classes and
    partial-order reduction's conflicts all have work to do."""
    variables = {f"x{j}": TensorType(dtype, ()) for j in range(shared_vars)}
    nodes: list[Node] = [Node("one", "Const", (), {"value": Tensor(np.array(1, dtype))})]
    outputs = {}
    for t in range(k):
        for j in range(shared_vars):
            v, r, s, w = (f"v{t}_{j}", f"r{t}_{j}", f"s{t}_{j}", f"w{t}_{j}")
            nodes += [Node(v, "Var", (), {"var": f"x{j}"}),
                      Node(r, "Read", (DataIn(v),), {}),
                      Node(s, "Add", (DataIn(r), DataIn("one")), {}),
                      Node(w, "Assign", (DataIn(v), DataIn(s)), {"fn": "Snd"})]
            outputs[f"o{t}_{j}"] = DataIn(r)
    return Program(variables, tuple(nodes), outputs, {})


@pytest.mark.parametrize("k,shared", [(3, 1), (2, 2), (4, 1)])
def test_engines_agree_with_the_enumerating_reference_on_racing_threads(k, shared):
    p = _threads(k, shared)
    init = {f"x{j}": Tensor(np.int64(10 * j)) for j in range(shared)}
    for semantics in ("atomic", "decomposed"):
        for observe in ("outputs+state", "outputs"):
            want = None
            for engine in ("reference", "auto", "symmetry", "readsfrom", "reference"):
                s = outcome_set(p, {}, init, semantics, observe, engine=engine)
                got = sorted(repr(o) for o in s)
                if want is None:
                    want = got
                    # (the races show: more than one outcome)
                    assert len(got) > 1
                assert got == want, (semantics, observe, engine)


def test_conflicts_of_copies_are_the_templates_and_as_defined():
    p = _threads(3, 2)
    names, variables, outputs = explore.components(p)[0]
    for semantics in ("atomic", "decomposed"):
        explore._COMPILED.clear()
        one = explore.compiled(p, names, semantics, "outputs+state", {}, variables, outputs)
        two = explore.compiled(p, names, semantics, "outputs+state", {}, variables, outputs)
        assert one is not two
        got = two.conflicts
        assert one.conflicts is got
        n = one.n
        want = {u: [w for w in steps if w % n != u % n and (one.is_write(u) or one.is_write(w))]
                for steps in one.access_steps.values() for u in steps}
        assert got == want and any(got.values())
        # (a component built directly works its own out)
        direct = explore._Component(p, names, semantics, "outputs+state", {}, variables,
                                    outputs)
        assert direct.conflicts == want and direct.conflicts is not got


# -- swapped float programs: the change's own differential draws int64 only ------


def _swap_commuting(p: Program) -> Program:
    nodes = tuple(n.replace(inputs=(n.inputs[1], n.inputs[0]))
                  if n.op in COMMUTING and len(n.inputs) == 2 else n for n in p.nodes)
    return Program(p.variables, nodes, p.outputs, p.feeds)


def _hostile(values, rng):
    """σ's float tensors with NaNs of other payloads and signs, signed
    zeros, subnormals, the smallest normal and infinities put in."""
    out = {}
    for k, v in values.items():
        if isinstance(v, Tensor) and v.dtype in fns.FLOAT_DTYPES and v.array.size:
            info = ml_dtypes.finfo(v.array.dtype)
            pool = np.array([-0.0, 0.0, float(info.smallest_subnormal), float(info.tiny),
                             -float(info.tiny) * 1.25, float("inf"), 3.0, float(info.max)],
                            np.float64).astype(v.array.dtype)
            a = v.array.copy().reshape(-1)
            pick = rng.random(a.size) < 0.6
            a[pick] = pool[rng.integers(0, len(pool), a.size)][pick]
            if v.dtype == "float32" and a.size >= 2:
                a.view(np.uint32)[0] = 0xFFC00123
            v = Tensor(a.reshape(v.array.shape))
        out[k] = v
    return out


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "float16"])
def test_swapped_float_programs_give_fresh_runs_outcomes(dtype, monkeypatch, counted):
    from tfsem.checking import check as C
    from tfsem.checking import refute as ref
    from tfsem.generators.strategies import random_programs
    ops = {"Add", "Mul", "Add.ftz", "Mul.ftz", "Sub", "Neg", "Read", "AssignAdd", "Write"}
    compared = 0
    rng = np.random.default_rng(7)
    for i, p in enumerate(random_programs(120, 20, max_nodes=12, dtype=dtype, ops=ops,
                                          control_density=0.1)):
        q = _swap_commuting(p)
        if q == p or p.has_control_flow:
            continue
        sem, obs = [("atomic", "outputs+state"), ("decomposed", "outputs+state"),
                    ("atomic", "outputs")][i % 3]
        gen = C._refute_sigmas(p, np.random.default_rng(i))
        feeds, init = next(gen)
        sigmas = [(feeds, init), (_hostile(feeds, rng), _hostile(init, rng))]

        def runs():
            got = []
            for r in (p, q):
                for f, s in sigmas:
                    try:
                        got.append(_exact_outcome(ref.canonical_outcome(r, f, s, sem, obs)[0]))
                    except (fns.CannotRun, C.BudgetExceeded) as exc:
                        got.append(type(exc))
            return got
        monkeypatch.setenv(A.ENV, "0")
        fresh = runs()
        monkeypatch.setenv(A.ENV, "1")
        with A.scope():
            assert runs() == fresh, i
        compared += len(fresh)
    assert compared >= 60 and counted[0] >= 10, (compared, counted[0])


def _exact_outcome(o):
    return (tuple((k, exact(v)) for k, v in o.outputs),
            None if o.state is None else tuple((k, exact(v)) for k, v in o.state))
