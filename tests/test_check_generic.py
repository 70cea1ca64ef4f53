"""Proofs about tensors of any size (issue 17 item 3, issue 14 item 8):
checking/generic.py, one generic element per tensor.

* Rewrites of element-wise programs on tensors past the element-wise limit
  (4,097 and 100,000 elements) are proved `sound` in a fraction of a second;
  broadcasting (scalars, size-1 axes) is the same element everywhere.
* Rewrites that change one element, move elements, or rely on float
  associativity are never `sound`; int64 wraps around.
* Uninterpreted functions (no encoding) never make a wrong `sound`.
* Differential: on generated small programs and their mutations, the generic
  engine and the element-wise engine agree wherever both decide, and the
  generic one never says `sound` where the element-wise one says `unsound`.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import settings

from tfsem.checking import check_rewrite
from tfsem.checking import generic as gen
from tfsem.checking.symbolic import MAX_ELEMENTS
from tfsem.oracle import functions as fns
from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.program import ControlIn, FeedControlIn, TensorType, validate
from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
from tfsem.oracle.values import DTYPES, Tensor, is_float, value_from_json
from tfsem.rewrites.edit import renamed

BIG = MAX_ELEMENTS + 1
#: the timeout of checks expected to end `unsound`: an unsound verdict's σ is
#: then minimized element by element for 10% of the timeout, which on these
#: tensors always runs to its end (1 s here, 3 s with the proofs' 30 s); the
#: solver's share is the same (30% of the timeout, 3 s at most)
REFUTE_TIMEOUT = 10


def feeds(dtype: str, shape, names="abc"):
    return {k: TensorType(dtype, tuple(shape)) for k in names}


def prog(nodes, f, outputs=None, variables=()):
    return P.program(nodes, outputs or {"out": "r"}, variables, f)


def assert_reproduces(p, q, verdict):
    """The counterexample is real: q's schedule at σ gives an outcome p cannot."""
    data = verdict.to_json()
    cex = data["counterexample"]
    fd = {k: value_from_json(v, dtype=p.feed_type(k).dtype) for k, v in cex["feeds"].items()}
    init = {k: value_from_json(v, dtype=p.variables[k].dtype) for k, v in cex["init"].items()}
    state = run_schedule(q, fd, init, cex["schedule"], data["semantics"])
    outcome = outcome_of(q, graph_of(q), state, data["observe"])
    assert outcome not in outcome_set(p, fd, init, data["semantics"], data["observe"])


# ---------------------------------------------------------------------------
# Proofs past the element-wise limit


@pytest.mark.parametrize("n", [BIG, 100_000])
@pytest.mark.parametrize("op", ["Add", "Mul"])
def test_commuted_operation_on_a_large_float32_tensor_is_sound(n, op):
    f = feeds("float32", (n,), "ab")
    p = prog([P.apply("r", op, "$a", "$b")], f)
    q = prog([P.apply("r", op, "$b", "$a")], f)
    v = check_rewrite(p, q, timeout=30)
    assert v.verdict == "sound", v.describe()
    assert "generic" in v.stats and v.stats["path"] == "symbolic"
    # the previous engine cannot prove it
    with gen.tensors("elementwise"):
        old = check_rewrite(p, q, timeout=0.5)
    assert old.verdict != "sound"


@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_broadcasting_is_the_same_element_everywhere(dtype):
    # a: 10,000 elements, past the element-wise limit (every element a term of
    # its own was 100,000 of them, seconds of the test for nothing more)
    f = {"a": TensorType(dtype, (10, 1000)), "b": TensorType(dtype, (1000,)),
         "c": TensorType(dtype, ()), "d": TensorType(dtype, (10, 1))}
    assert 10 * 1000 > MAX_ELEMENTS
    p = prog([P.apply("s", "Mul", "$a", "$b"), P.apply("t", "Add", "s", "$c"),
              P.apply("r", "Sub", "t", "$d")], f)
    q = prog([P.apply("s", "Mul", "$b", "$a"), P.apply("t", "Add", "$c", "s"),
              P.apply("r", "Sub", "t", "$d")], f)
    assert check_rewrite(p, q, timeout=30).verdict == "sound"
    # a different broadcast: d (100, 1) is not c (): must not be proved
    q2 = prog([P.apply("s", "Mul", "$b", "$a"), P.apply("t", "Add", "$d", "s"),
               P.apply("r", "Sub", "t", "$c")], f)
    assert check_rewrite(p, q2, timeout=REFUTE_TIMEOUT).verdict != "sound"


def test_int64_algebra_needs_the_solver_and_is_proved():
    f = feeds("int64", (100_000,))
    p = prog([P.apply("s", "Add", "$a", "$b"), P.apply("r", "Add", "s", "$c")], f)
    q = prog([P.apply("s", "Add", "$b", "$c"), P.apply("r", "Add", "$a", "s")], f)
    v = check_rewrite(p, q, timeout=30)
    assert v.verdict == "sound" and v.stats["queries"] >= 1, v.describe()
    # x * 2 is x + x, with wrap-around
    p = prog([P.const("two", 2), P.apply("r", "Mul", "$a", "two")], f)
    q = prog([P.apply("r", "Add", "$a", "$a")], f)
    assert check_rewrite(p, q, timeout=30).verdict == "sound"


def test_int64_wraps_around():
    f = feeds("int64", (BIG,), "a")
    # Max(a + 1, a) is a + 1 except where a + 1 wraps to the minimum
    p = prog([P.const("one", 1), P.apply("s", "Add", "$a", "one"), P.apply("r", "Max", "s", "$a")], f)
    q = prog([P.const("one", 1), P.apply("r", "Add", "$a", "one")], f)
    v = check_rewrite(p, q, timeout=REFUTE_TIMEOUT)
    assert v.verdict == "unsound", v.describe()
    assert_reproduces(p, q, v)
    assert np.iinfo(np.int64).max in v.counterexample.feeds["a"].array
    # Neg(Neg(a)) is a, the minimum included
    q2 = prog([P.apply("n", "Neg", "$a"), P.apply("r", "Neg", "n")], f)
    assert check_rewrite(prog([P.apply("r", "Identity", "$a")], f), q2, timeout=30).verdict == "sound"


def test_float_non_associativity_on_big_tensors_is_not_sound():
    f = feeds("float32", (BIG,))
    p = prog([P.apply("s", "Add", "$a", "$b"), P.apply("r", "Add", "s", "$c")], f)
    q = prog([P.apply("s", "Add", "$b", "$c"), P.apply("r", "Add", "$a", "s")], f)
    v = check_rewrite(p, q, timeout=REFUTE_TIMEOUT)
    assert v.verdict != "sound"
    if v.verdict == "unsound":
        assert_reproduces(p, q, v)


@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_a_rewrite_that_changes_one_element_is_not_sound(dtype):
    n = 2 * BIG
    f = feeds(dtype, (n,), "a")
    base = np.zeros(n, dtype=DTYPES[dtype])
    changed = base.copy()
    changed[n - 7] = 1
    p = prog([P.Node("k", "Const", (), {"value": Tensor(base)}), P.apply("r", "Add", "$a", "k")], f)
    q = prog([P.Node("k", "Const", (), {"value": Tensor(changed)}), P.apply("r", "Add", "$a", "k")], f)
    v = check_rewrite(p, q, timeout=REFUTE_TIMEOUT)
    assert v.verdict == "unsound", v.describe()
    assert_reproduces(p, q, v)
    # swapping the halves moves elements
    p = prog([P.apply("s", "Split", "$a"), P.apply("r", "Concat", "s:0", "s:1")], f)
    q = prog([P.apply("s", "Split", "$a"), P.apply("r", "Concat", "s:1", "s:0")], f)
    v = check_rewrite(p, q, timeout=REFUTE_TIMEOUT)
    assert v.verdict == "unsound", v.describe()
    assert_reproduces(p, q, v)
    # ... while splitting and concatenating back is the identity
    q = prog([P.apply("r", "Identity", "$a")], f)
    assert check_rewrite(p, q, timeout=30).verdict == "sound"


def test_concat_of_different_tensors_is_element_exact():
    # Concat(a, b) then Split gives a and b back: the halves are proved
    # element by element through the index arithmetic of Concat and Split
    f = feeds("float32", (3000,), "ab")
    p = prog([P.apply("c", "Concat", "$a", "$b"), P.apply("s", "Split", "c"),
              P.apply("r", "Add", "s:0", "s:1")], f)
    q = prog([P.apply("r", "Add", "$b", "$a")], f)
    assert check_rewrite(p, q, timeout=30).verdict == "sound"
    # a Concat of a with itself differs from Concat(a, b) somewhere in the second half
    p = prog([P.apply("r", "Concat", "$a", "$b")], f)
    q = prog([P.apply("r", "Concat", "$a", "$a")], f)
    v = check_rewrite(p, q, timeout=REFUTE_TIMEOUT)
    assert v.verdict == "unsound"
    assert_reproduces(p, q, v)


def test_large_variables_with_uninitialized_cases():
    n = 10_000
    t = {"x": TensorType("float32", (n,)), "y": TensorType("float32", (n,))}
    f = feeds("float32", (n,), "a")
    nodes = [P.var("vx", "x"), P.read("rx", "vx"), P.var("vy", "y"),
             P.apply("s", "Add", "rx", "$a"), P.assign("w", "Snd", "vy", "s")]
    p = P.program(nodes, {"out": "s"}, t, f)
    q = P.program([n if n.name != "s" else P.apply("s", "Add", "$a", "rx") for n in nodes],
                  {"out": "s"}, t, f)
    v = check_rewrite(p, q, timeout=30)
    assert v.verdict == "sound", v.describe()
    assert v.stats["flagged"] == ["x", "y"]
    # AssignAdd instead of a Write: y's old value now matters
    q2 = P.program([n if n.name != "w" else P.assign("w", "Add", "vy", "s") for n in nodes],
                   {"out": "s"}, t, f)
    v = check_rewrite(p, q2, timeout=REFUTE_TIMEOUT)
    assert v.verdict == "unsound", v.describe()
    assert_reproduces(p, q2, v)


# ---------------------------------------------------------------------------
# Uninterpreted functions


@pytest.fixture
def register(monkeypatch):
    def add(name, n_in, impl):
        monkeypatch.setitem(fns._REGISTRY, name, fns.Function(name, n_in, 1, impl))
    return add


def test_uninterpreted_functions_never_make_a_wrong_sound(register):
    register("TestFstGeneric", 2, lambda xp, args, attrs: (args[0],))
    f = feeds("int64", (BIG,), "ab")
    # truly unsound: the first argument changes
    p = prog([P.apply("r", "TestFstGeneric", "$a", "$b")], f)
    q = prog([P.apply("r", "TestFstGeneric", "$b", "$a")], f)
    v = check_rewrite(p, q, timeout=3)
    assert v.verdict in ("unsound", "no-counterexample", "unknown"), v.describe()
    if v.verdict == "unsound":
        assert_reproduces(p, q, v)
    # equal arguments, written differently: congruence over whole tensors
    p = prog([P.const("two", 2), P.apply("m", "Mul", "$a", "two"),
              P.apply("r", "TestFstGeneric", "m", "$b")], f)
    q = prog([P.apply("m", "Add", "$a", "$a"), P.apply("r", "TestFstGeneric", "m", "$b")], f)
    v = check_rewrite(p, q, timeout=3)
    assert v.verdict in ("sound", "unknown", "no-counterexample"), v.describe()
    # and the same function applied to the same terms is the same value
    q = prog([P.const("two", 2), P.apply("m", "Mul", "two", "$a"),
              P.apply("r", "TestFstGeneric", "m", "$b")], f)
    assert check_rewrite(p, q, timeout=30).verdict == "sound"


def test_the_mode_is_checked():
    with pytest.raises(ValueError, match="unknown tensors mode"):
        with gen.tensors("fast"):
            pass


# ---------------------------------------------------------------------------
# Differential test against the element-wise engine

strategies = pytest.importorskip("tfsem.generators.strategies")
BINARY = ("Add", "Sub", "Mul", "Max", "Min")
DECIDED = ("sound", "unsound")


def mutations(p):
    """Deterministic small edits of p that keep it valid: swap the arguments
    of a binary function, change the function, drop a control edge, change a
    constant."""
    out = []
    for i, n in enumerate(p.nodes):
        edits = []
        if n.op in BINARY:
            edits.append(n.replace(inputs=(n.inputs[1], n.inputs[0], *n.inputs[2:])))
            edits.append(n.replace(op=BINARY[(BINARY.index(n.op) + 1) % len(BINARY)]))
        ctrl = [c for c in n.inputs if isinstance(c, (ControlIn, FeedControlIn))]
        if ctrl:
            edits.append(n.replace(inputs=tuple(c for c in n.inputs if c != ctrl[0])))
        if n.op == "Const":
            value = n.attrs["value"]
            edits.append(n.replace(attrs={"value": Tensor((value.array + 1).astype(value.array.dtype))}))
        for e in edits:
            q = p.replace(nodes=p.nodes[:i] + (e,) + p.nodes[i + 1:])
            if not validate(q):
                out.append(q)
    return out


def pairs(count: int, seed: int):
    for dtype in ("int64", "float32"):
        for p in strategies.random_programs(count, seed=seed, max_nodes=8, dtype=dtype):
            yield p, p
            for q in mutations(p)[:4]:
                yield p, q


#: a check that ran out of its 5 s at a busy moment is run again with this
#: budget, so that the counts below are the engines', not the machine's load's
#: (one pair of seed 17, unsound, takes 3.9 s of its 5 s unloaded: under load
#: it was unknown, "the solver could not decide ... (timeout)", and the
#: unsound count fell to the bound)
RETRY_TIMEOUT = 60


def _ran_out(v) -> bool:
    """An unknown verdict for want of time (the check's budget or the solver's
    share of it), not for want of a method."""
    return v.verdict == "unknown" and ("ran out" in v.reason or "(timeout)" in v.reason)


def differential(count: int, seed: int) -> dict:
    seen: dict[tuple[str, str], int] = {}
    settings_ = [(s, o) for s in ("atomic", "decomposed") for o in ("outputs+state", "outputs")]
    for k, (p, q) in enumerate(pairs(count, seed)):
        setting = settings_[k % len(settings_)]
        verdicts = {}
        for mode in ("elementwise", "generic"):
            for timeout in (5, RETRY_TIMEOUT):
                with gen.tensors(mode):
                    v = check_rewrite(p, q, *setting, timeout=timeout, minimize=False, backends=False,
                                      structural=False)   # the engines, not the structural rule
                if not _ran_out(v):
                    break
            verdicts[mode] = v
        old, new = verdicts["elementwise"], verdicts["generic"]
        assert "internal_error" not in new.stats, new.stats["internal_error"]
        pair = (old.verdict, new.verdict)
        seen[pair] = seen.get(pair, 0) + 1
        if old.verdict in DECIDED and new.verdict in DECIDED:
            assert old.verdict == new.verdict, (p, q, old.describe(), new.describe())
        assert not (new.verdict == "sound" and old.verdict == "unsound"), (p, q)
        if new.verdict == "unsound":
            assert_reproduces(p, q, new)
    return seen


def test_generic_engine_agrees_with_the_element_wise_engine():
    count = 40 * (20 if settings.get_current_profile_name() == "nightly" else 1)
    seen = differential(count, seed=17)
    total = sum(seen.values())
    # not toothless: both verdicts occur, and the engines agree on nearly all.
    # (seed 17 gives 185 sound and 21 unsound pairs of 206, all agreed; the
    # bounds are what an engine that stopped proving or refuting would miss,
    # with room for a change of the generator's programs: `total // 10`
    # unsound was a margin of one)
    assert seen.get(("sound", "sound"), 0) > total // 4, seen
    assert seen.get(("unsound", "unsound"), 0) > total // 20, seen
    agree = sum(v for (a, b), v in seen.items() if a == b)
    assert agree >= 0.9 * total, seen


# ---------------------------------------------------------------------------
# A real training step with tensors of thousands of elements

CORPUS = __import__("pathlib").Path(__file__).resolve().parent.parent / "examples" / "tensorflow"


def widened_mlp(name: str, width: int):
    """The corpus's Keras MLP training step with its hidden layer `width` wide
    (8 in the corpus): kernels of 4 x width and width x 2 elements."""
    graphdef = pytest.importorskip("tfsem.graphdef")
    from tfsem.oracle.jsonio import program_from_json, program_to_json
    path = CORPUS / f"{name}.pbtxt"
    if not path.exists():
        pytest.skip(f"{path} is not in the corpus")
    data = program_to_json(graphdef.load_program_or_graph(path))
    for t in data["variables"].values():
        t["shape"] = [width if s == 8 else s for s in t["shape"]]
    return program_from_json(data)


@pytest.mark.parametrize("graph,semantics", [("keras_mlp_sgd", "atomic"),
                                             ("keras_mlp_sgd", "decomposed"),
                                             ("keras_mlp_adam", "atomic")])
def test_a_keras_training_step_with_large_kernels_refines_itself(graph, semantics):
    p = widened_mlp(graph, 1100)
    assert max(math.prod(t.shape) for t in p.variables.values()) > MAX_ELEMENTS
    q = renamed(p)   # the same program, not the same object: the search runs
    v = check_rewrite(p, q, semantics, timeout=30, structural=False)
    assert v.verdict == "sound", v.describe()
    assert "generic" in v.stats and v.stats["states"] > 0
    # a different constant in the gradient: must not be proved sound
    k = next(i for i, n in enumerate(q.nodes) if n.op == "Const" and n.attrs["value"].dtype == "float32"
             and n.attrs["value"].array.shape == () and float(n.attrs["value"].array) == 2.0)
    two = q.nodes[k]
    q2 = q.replace(nodes=q.nodes[:k] + (two.replace(attrs={"value": Tensor(np.float32(3.0))}),)
                   + q.nodes[k + 1:])
    assert not validate(q2) and q2 != q
    try:
        v = check_rewrite(p, q2, semantics, timeout=30, structural=False)
    except RuntimeError as exc:   # functions.CannotRun: a counterexample cannot be run
        assert "cannot run" in str(exc)
    else:
        assert v.verdict != "sound", v.describe()


# ---------------------------------------------------------------------------
# dtypes with no Z3 model here are opaque: never a wrong verdict

OTHER_DTYPES = [d for d in DTYPES if d not in gen.ENCODED]


@pytest.mark.skipif(not OTHER_DTYPES, reason="every dtype has a Z3 model (encode.sort_of)")
@pytest.mark.parametrize("dtype", OTHER_DTYPES)
def test_dtypes_without_a_model_are_opaque(dtype):
    f = feeds(dtype, (8,), "ab")
    p = prog([P.apply("r", "Identity", "$a")], f)
    assert check_rewrite(p, prog([P.apply("r", "Identity", "$a")], f)).verdict == "sound"
    # a different feed is a different value: never proved
    v = check_rewrite(p, prog([P.apply("r", "Identity", "$b")], f), timeout=5)
    assert v.verdict != "sound"
    # an operation on the dtype is uninterpreted: Max(a, b) is not proved
    # equal to Max(b, a) (it may well be), and never equal to a
    p = prog([P.apply("r", "Max", "$a", "$b")], f)
    for q in (prog([P.apply("r", "Max", "$b", "$a")], f), prog([P.apply("r", "Identity", "$a")], f)):
        try:
            v = check_rewrite(p, q, timeout=5)
        except RuntimeError:
            continue
        assert v.verdict != "sound" or q.nodes[0].op == "Max"


# ---------------------------------------------------------------------------
# TensorFlow's IEEE-exact element-wise ops, encoded by the generic element

F32_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -3.5, 0.1, float("nan"), float("inf"),
               float("-inf"), 1e-45, -1e-45, 1.1754944e-38, 3.4028235e38, -3.4028235e38,
               16777217.0, 7.0, 1e30]
I64_SPECIAL = [0, 1, -1, 2, -3, 7, 2**31, -(2**31) - 1, 2**62, 2**63 - 1, -(2**63), 3037000500]


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if is_float(a) and np.isnan(a.astype(np.float64)) and np.isnan(b.astype(np.float64)):
        return True
    return a.tobytes() == b.tobytes()


_DEFAULT_DTYPES = frozenset({"float32", "float64", "float16", "bfloat16", "int32", "uint8", "bool"})


@pytest.mark.parametrize("name", sorted(gen.EXTRA))
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_extra_operations_encode_as_numpy_computes_them(name, dtype):
    import z3

    from tfsem.checking.encode import _numeral, z3_const
    from tfsem.oracle.values import edge_values
    fn = fns.lookup(name)
    if fn is None:
        pytest.skip(f"{name} is not registered")
    if fn.encoding.result is not None and dtype not in _DEFAULT_DTYPES \
            and settings.get_current_profile_name() != "nightly":
        # (the comparisons and Select on every dtype under the nightly
        # profile; by default on the flushed floats, float16, signed
        # and unsigned integers and bool)
        pytest.skip("every dtype under the nightly profile")
    values = (F32_SPECIAL if dtype == "float32" else I64_SPECIAL if dtype == "int64"
              else edge_values(dtype).tolist())
    enc = gen.GenericEncoder()
    op = gen.EXTRA[name]
    # (Select and SelectV2: a bool condition first, then x and y of `dtype`)
    conds = [[Tensor(np.array(c))] for c in (False, True)] if fn.n_in == 3 else [[]]
    enc_of = fn.encoding
    for a in values:
        for b in (values if fn.n_in >= 2 else [None]):
            for cond in conds:
                args = cond + [Tensor(np.array(a, DTYPES[dtype]))] + \
                    ([] if b is None else [Tensor(np.array(b, DTYPES[dtype]))])
                (want,) = fn.apply(args)
                if not isinstance(want, Tensor):
                    continue   # an error kind (no integer kernel): never encoded
                z = [z3_const(x.array[()], x.dtype) for x in args]
                # (an encoding with a result dtype of its own gets its first operand's)
                given = args[0].dtype if enc_of.result is not None else dtype
                got = _numeral(z3.simplify(enc.scalar_op(op, given, z)), want.dtype)
                assert _same(got, want.array), (name, dtype, cond, a, b, got, want)


def test_extra_operations_prove_and_refute_on_large_tensors():
    if any(fns.lookup(n) is None for n in gen.EXTRA):
        pytest.skip("the TensorFlow ops are not registered")
    f = feeds("float32", (BIG,), "ab")
    # |-a| = |a|
    p = prog([P.apply("r", "Abs", "$a")], f)
    q = prog([P.apply("n", "Neg", "$a"), P.apply("r", "Abs", "n")], f)
    assert check_rewrite(p, q, timeout=30).verdict == "sound"
    # Square is one multiplication
    p = prog([P.apply("r", "Square", "$a")], f)
    q = prog([P.apply("r", "Mul", "$a", "$a")], f)
    assert check_rewrite(p, q, timeout=30).verdict == "sound"
    # |a| is not a (negative numbers), a / b is not a * (1 / b)
    v = check_rewrite(prog([P.apply("r", "Abs", "$a")], f), prog([P.apply("r", "Identity", "$a")], f),
                      timeout=REFUTE_TIMEOUT)
    assert v.verdict == "unsound"
    assert_reproduces(prog([P.apply("r", "Abs", "$a")], f), prog([P.apply("r", "Identity", "$a")], f), v)
    p = prog([P.apply("r", "RealDiv", "$a", "$b")], f)
    q = prog([P.const("one", 1.0, dtype="float32"), P.apply("i", "RealDiv", "one", "$b"),
              P.apply("r", "Mul", "$a", "i")], f)
    v = check_rewrite(p, q, timeout=REFUTE_TIMEOUT)
    assert v.verdict == "unsound"
    assert_reproduces(p, q, v)
    # RealDiv on int64 has no kernel: an error either way, the same error
    fi = feeds("int64", (BIG,), "ab")
    p = prog([P.apply("r", "RealDiv", "$a", "$b")], fi)
    q = prog([P.apply("r", "RealDiv", "$b", "$a")], fi)
    assert check_rewrite(p, q, timeout=30).verdict == "sound"
