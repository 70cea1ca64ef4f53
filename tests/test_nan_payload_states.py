"""NaNs of different payloads in the oracle's intermediate states.

SPEC section 2 makes every NaN equal to every other NaN, which is how
*outcomes* compare.  The engines used the same equality for the states they
merge and the function applications they remember, so two states whose
variable x held NaN 0x7fc00001 and NaN 0x7fc00002 were one state, and a
later step that shows the bits (PackScatter's bytes here; Bitcast, a kernel,
a user's function) lost one of two outcomes.  The program: x := $a and
x := $b unordered, then o = PackScatter(0, Read(x)) after both: at
a = NaN 0x7fc00001, b = NaN 0x7fc00002 it has two outcomes; every engine
gave one, and the checker called the rewrite that orders the two writes
(wb before wa) `unsound`.  Each test below failed before the fix.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

from tfsem.oracle import controlflow as cf
from tfsem.oracle import functions as fns
from tfsem.oracle import semantics as sem
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.explore import _Cached
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.values import Bits, Tensor, exact

NIGHTLY = settings.get_current_profile_name() == "nightly"
NAN1, NAN2, ONE = 0x7FC00001, 0x7FC00002, 0x3F800000
F32 = {"dtype": "float32", "shape": [1]}


def f32(bits: int) -> Tensor:
    return Tensor(np.array([bits], np.uint32).view(np.float32))


FEEDS = {"a": f32(NAN1), "b": f32(NAN2), "c": f32(ONE)}
INIT = {"x": Tensor(np.array([0], np.float32)), "y": Tensor(np.array([0], np.float32))}


def shown(o) -> int:
    """The float32 bits that output o's PackScatter bytes end with."""
    raw = dict(o.outputs)["o"].array
    return int(raw[-4:].view("<u4")[0])


def program(order: str | None = None, observer: bool = True, choice: bool = False,
            other: bool = False):
    """x := $a (wa) and x := $b (wb), unordered (`order` None) or in `order`
    ("ab": wa first, "ba": wb first); o = PackScatter(0, Read(x)) after both
    (`observer`; else o = Read(x) itself).  `choice`: a third write x := $c
    unordered with the Read (a choice state right after both writes);
    `other`: two unordered writes to a second variable y, so that the
    control-flow engine has a choice pending while it explores (it looks up
    only states reached with another one on its stack)."""
    nodes = [{"name": f"h{k}", "op": "Var", "var": "x"} for k in range(4)]
    nodes += [{"name": "wa", "op": "Write", "inputs": ["h0", "$a"] + (["^wb"] if order == "ba" else [])},
              {"name": "wb", "op": "Write", "inputs": ["h1", "$b"] + (["^wa"] if order == "ab" else [])},
              {"name": "r", "op": "Read", "inputs": ["h2", "^wa", "^wb"]},
              {"name": "i", "op": "Const", "value": [0]}]
    nodes.append({"name": "o", "op": "PackScatter", "inputs": ["i", "r"]} if observer
                 else {"name": "o", "op": "Identity", "inputs": ["r"]})
    if choice:
        nodes.append({"name": "wc", "op": "Write", "inputs": ["h3", "$c", "^wa", "^wb"]})
    variables = {"x": F32}
    if other:
        variables["y"] = F32
        nodes += [{"name": "g1", "op": "Var", "var": "y"}, {"name": "g2", "op": "Var", "var": "y"},
                  {"name": "y1", "op": "Write", "inputs": ["g1", "$c"]},
                  {"name": "y2", "op": "Write", "inputs": ["g2", "$a"]}]
    return program_from_json({"format": "tfsem.program/1", "variables": variables,
                              "feeds": {k: F32 for k in "abc"}, "nodes": nodes,
                              "outputs": {"o": "o"}})


def init_of(p):
    return {x: INIT[x] for x in p.variables}


# ---------------------------------------------------------------------------
# exact keys against SPEC equality


def test_exact_keys_tell_payloads_apart_and_equality_does_not():
    a, b = FEEDS["a"], FEEDS["b"]
    assert a == b and hash(a) == hash(b)                  # SPEC section 2
    assert exact(a) != exact(b) and isinstance(exact(a), Bits)
    assert exact(a) == exact(f32(NAN1)) and hash(exact(a)) == hash(exact(f32(NAN1)))
    # numpy's own NaN, and every value without a NaN, are their own keys
    canonical = Tensor(np.array([np.nan], np.float32))
    assert exact(canonical) is canonical and exact(FEEDS["c"]) is FEEDS["c"]
    assert exact(canonical) != exact(a) and exact(a) != canonical
    # signs: -NaN is another NaN; -0.0 and 0.0 already differ
    neg = Tensor(-np.array([np.nan], np.float32))
    assert neg == canonical and exact(neg) != exact(canonical)


def test_lists_and_stacks_are_keyed_by_their_items_bits():
    """A TensorList value and a stack's state (in the control-flow engine's
    variables) hold tensors: their keys are their items' exact keys."""
    from tfsem.oracle.opdefs.lists import TensorList
    from tfsem.oracle.stack_state import Stack
    one, two, plain = (TensorList("float32", (1,), (t,)) for t in (FEEDS["a"], FEEDS["b"], FEEDS["c"]))
    assert one == two and exact(one) != exact(two) and exact(plain) is plain
    s1, s2, s3 = (Stack("float32", 4, "s", (t,)) for t in (FEEDS["a"], FEEDS["b"], FEEDS["c"]))
    assert s1 == s2 and exact(s1) != exact(s2) and exact(s3) is s3


def test_a_remembered_function_result_is_keyed_by_bits():
    """explore._Cached: PackScatter of NaN2 after PackScatter of NaN1 was
    the remembered bytes of NaN1."""
    cached = _Cached(fns.get("PackScatter"))
    i = Tensor(np.array([0], np.int64))
    (one,) = cached.apply([i, FEEDS["a"]])
    (two,) = cached.apply([i, FEEDS["b"]])
    assert int(one.array[-4:].view("<u4")[0]) == NAN1
    assert int(two.array[-4:].view("<u4")[0]) == NAN2


# ---------------------------------------------------------------------------
# every engine


@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
@pytest.mark.parametrize("engine", ["reference", "readsfrom", "symmetry", "auto"])
def test_every_engine_keeps_both_payloads(engine, semantics):
    p = program()
    got = outcome_set(p, FEEDS, init_of(p), semantics, engine=engine)
    assert sorted(shown(o) for o in got) == [NAN1, NAN2]
    for order, bits in (("ab", NAN2), ("ba", NAN1)):
        q = program(order)
        assert [shown(o) for o in outcome_set(q, FEEDS, init_of(q), semantics, engine=engine)] == [bits]


@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
def test_the_step_semantics_memo_keeps_both_payloads(semantics):
    """semantics.State.key: the memoized brute force against the reference
    engine, and (atomic, the program without the third write) against the
    brute force without memo."""
    p = program(choice=True)
    memo = sem.reference_outcomes(p, FEEDS, init_of(p), semantics)
    assert set(memo) == set(outcome_set(p, FEEDS, init_of(p), semantics, engine="reference"))
    assert sorted(shown(o) for o in memo) == [ONE, NAN1, NAN2]
    if semantics == "atomic":
        q = program()
        memo = sem.reference_outcomes(q, FEEDS, init_of(q), semantics)
        assert set(memo) == set(sem.reference_outcomes(q, FEEDS, init_of(q), semantics, memo=False))
        assert sorted(shown(o) for o in memo) == [NAN1, NAN2]


@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
def test_the_control_flow_engine_keeps_both_payloads(semantics):
    """controlflow.CFState.key (the control-flow engine runs any program):
    the engine without control flow's set, every payload shown."""
    p = program(choice=True, other=True)
    found, _ = cf.outcomes(p, FEEDS, init_of(p), semantics, "outputs+state", 10_000, 10.0, 10)
    ref = outcome_set(p, FEEDS, init_of(p), semantics, engine="reference")
    assert set(found) == set(ref)
    assert sorted({shown(o) for o in found}) == [ONE, NAN1, NAN2]


def test_the_symmetry_engine_keeps_both_payloads():
    """Two identical threads o_k = PackScatter(0, Read(x)) beside the two
    unordered writes: 3 values each, 9 outcomes (symmetry.py's keys)."""
    nodes = [{"name": "h0", "op": "Var", "var": "x"}, {"name": "h1", "op": "Var", "var": "x"},
             {"name": "wa", "op": "Write", "inputs": ["h0", "$a"]},
             {"name": "wb", "op": "Write", "inputs": ["h1", "$b"]}]
    for t in range(2):
        nodes += [{"name": f"g{t}", "op": "Var", "var": "x"},
                  {"name": f"r{t}", "op": "Read", "inputs": [f"g{t}"]},
                  {"name": f"i{t}", "op": "Const", "value": [0]},
                  {"name": f"p{t}", "op": "PackScatter", "inputs": [f"i{t}", f"r{t}"]}]
    p = program_from_json({"format": "tfsem.program/1", "variables": {"x": F32},
                           "feeds": {"a": F32, "b": F32}, "nodes": nodes,
                           "outputs": {"o0": "p0", "o1": "p1"}})
    got = outcome_set(p, FEEDS, {"x": INIT["x"]}, engine="symmetry")
    assert "symmetry" in got.engines
    assert got.count == 9 and set(got) == set(outcome_set(p, FEEDS, {"x": INIT["x"]},
                                                          engine="reference"))


@pytest.mark.parametrize("engine", ["reference", "readsfrom", "auto"])
def test_a_nan_made_by_the_run_is_told_from_a_fed_one(engine):
    """The feeds hold numpy's own NaN (0x7fc00000) and infinity; x := $a
    and x := Sub($i, $i), whose NaN is the CPU's default one (0xffc00000 on
    x86), unordered.  The engines key values by SPEC equality until a value
    with other bits appears (explore._Component.payloads): here the first
    such value is a function's result, not a feed."""
    a = Tensor(np.array([np.nan], np.float32))
    inf = Tensor(np.array([np.inf], np.float32))
    with np.errstate(invalid="ignore"):
        made = int((inf.array - inf.array).view(np.uint32)[0])
    assert made != 0x7FC00000
    nodes = [{"name": f"h{k}", "op": "Var", "var": "x"} for k in range(3)]
    nodes += [{"name": "d", "op": "Sub", "inputs": ["$i", "$i"]},
              {"name": "wa", "op": "Write", "inputs": ["h0", "$a"]},
              {"name": "wb", "op": "Write", "inputs": ["h1", "d"]},
              {"name": "r", "op": "Read", "inputs": ["h2", "^wa", "^wb"]},
              {"name": "i0", "op": "Const", "value": [0]},
              {"name": "o", "op": "PackScatter", "inputs": ["i0", "r"]}]
    p = program_from_json({"format": "tfsem.program/1", "variables": {"x": F32},
                           "feeds": {"a": F32, "i": F32}, "nodes": nodes, "outputs": {"o": "o"}})
    with np.errstate(invalid="ignore"):
        got = outcome_set(p, {"a": a, "i": inf}, {"x": INIT["x"]}, engine=engine)
    assert sorted(shown(o) for o in got) == sorted([0x7FC00000, made])


def test_the_blocking_session_engine_keeps_both_payloads():
    """blocking._State.key: a queue's line by exact bits.  Two unordered
    enqueues of NaN1 and NaN2 into a queue, then a dequeue after both: the
    element dequeued is either."""
    from tfsem.oracle import blocking
    from tfsem.oracle.session import session_from_json
    nodes = [{"name": "p1", "op": "QueueEnqueue", "queue": "q", "inputs": ["$a"]},
             {"name": "p2", "op": "QueueEnqueue", "queue": "q", "inputs": ["$b"]},
             {"name": "get", "op": "QueueDequeue", "queue": "q", "inputs": ["^p1", "^p2"]},
             {"name": "i", "op": "Const", "value": [0]},
             {"name": "o", "op": "PackScatter", "inputs": ["i", "get"]}]
    data = {"format": "tfsem.session/1",
            "program": {"format": "tfsem.program/1", "variables": [], "feeds": {"a": F32, "b": F32},
                        "queues": {"q": {"capacity": 2, "dtype": "float32", "shape": [1]}},
                        "nodes": nodes, "outputs": {"o": "o"}},
            "runs": [{"name": "r", "fetch": ["o"]}], "order": "concurrent"}
    p, b = session_from_json(data).expand_blocking()
    found, _ = blocking.outcomes(p, b, {"r/a": FEEDS["a"], "r/b": FEEDS["b"]}, {}, "atomic")
    assert sorted(int(dict(o.outputs)["r/o"].array[-4:].view("<u4")[0]) for o in found) == [NAN1, NAN2]


def test_final_outcomes_still_merge_nans():
    """Outcomes compare by SPEC equality: without an observer, x ends NaN1
    or NaN2 and o is that NaN: one outcome."""
    p = program(observer=False)
    for engine in ("reference", "readsfrom", "auto"):
        assert outcome_set(p, FEEDS, init_of(p), engine=engine).count == 1


# ---------------------------------------------------------------------------
# the checker


def test_the_refutation_stage_finds_each_ordered_outcome_among_the_runs():
    """refute.unreached runs explore.py's keyed search: the outcome of the
    writes ordered wb before wa (o shows NaN1) is among the unordered
    program's runs, and the unordered program's other outcome is not among
    the ordered one's."""
    from tfsem.checking import refute
    from tfsem.oracle.explore import Budget
    p, q = program(), program("ba")
    theirs = list(outcome_set(q, FEEDS, init_of(q)))
    assert refute.unreached(p, FEEDS, init_of(p), "atomic", "outputs+state", theirs,
                            Budget(10_000, 10.0)) == []
    ours = list(outcome_set(p, FEEDS, init_of(p)))
    missing = refute.unreached(q, FEEDS, init_of(q), "atomic", "outputs+state", ours,
                               Budget(10_000, 10.0))
    assert [shown(o) for o, _ in missing] == [NAN2]


@pytest.fixture
def payload_sigma_first(monkeypatch):
    """The checker's concrete σ start with a = NaN1, b = NaN2 (its own σ
    rarely hold two NaNs of different payloads)."""
    from tfsem.checking import check as check_module
    drawn = check_module._generated_sigmas

    def sigmas(p, rng, *args, **kwargs):
        yield {f: FEEDS[f] for f in p.feed_names}, init_of(p)
        yield from drawn(p, rng, *args, **kwargs)
    monkeypatch.setattr(check_module, "_generated_sigmas", sigmas)


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_ordering_the_writes_is_no_counterexample(payload_sigma_first, order):
    """P' orders the writes: Outcomes(P') ⊆ Outcomes(P) at every σ.  The
    enumerating checker (structural rule off) compared P' against P's
    merged set at the σ above and said `unsound` for "ba"."""
    from tfsem.checking import check_rewrite
    v = check_rewrite(program(), program(order), timeout=0.5, structural=False)
    assert v.verdict in ("sound", "no-counterexample"), v.describe()


def test_unordering_the_writes_is_unsound(payload_sigma_first):
    from tfsem.checking import check_rewrite
    v = check_rewrite(program("ab"), program(), timeout=1, structural=False)
    assert v.verdict == "unsound" and dict(v.differs) == {"output": "o"}, v.describe()


def test_tfsem_check_on_the_command_line(payload_sigma_first, tmp_path, capsys):
    """`tfsem check` in this process: ordering the writes wb before wa is
    not `unsound` (exit 0), unordering them is (exit 1)."""
    import json

    from tfsem.cli import main
    files = {}
    for name, order in (("unordered", None), ("ab", "ab"), ("ba", "ba")):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(program_to_json(program(order))))
    assert main(["check", str(files["unordered"]), str(files["ba"]), "--timeout", "2",
                 "--no-tensorflow", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] in ("sound", "no-counterexample")
    assert main(["check", str(files["ab"]), str(files["unordered"]), "--timeout", "2",
                 "--no-tensorflow", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["verdict"] == "unsound"


def test_consts_of_nans_of_different_payloads_are_different_programs():
    """Program identity (functions.attrs_key) wrote a NaN Const as "nan":
    o = PackScatter(0, Const NaN1) and the same with NaN2 were one program,
    so the checker said `sound` ("the rewritten program is the original")."""
    from tfsem.checking import check_rewrite
    from tfsem.oracle import program as P

    def prog(bits):
        return P.program([P.const("i", 0), P.const("c", f32(bits)),
                          P.apply("o", "PackScatter", "i", "c")], {"out": "o"})
    p, q = prog(NAN1), prog(NAN2)
    assert p != q and p == prog(NAN1)
    assert p.node["c"] != q.node["c"] and p.node["c"] == prog(NAN1).node["c"]
    v = check_rewrite(p, q, timeout=1)
    assert v.verdict == "unsound", v.describe()
    # the refutation stage does not take the component as one the rewrite left alone
    from tfsem.checking.refute import unchanged_components
    assert not unchanged_components(p, q) and unchanged_components(p, prog(NAN1))


# ---------------------------------------------------------------------------
# the solver


def _shown_sum_program(args: list[str], through_variable: bool, observer: str = "UserBits"):
    """o = observer(Add(args)), or x := Add(args) and o = observer(Read(x))
    after it (`through_variable`).  UserBits, a user's function, views a
    float32's bits as an int32; PackScatter's bytes hold them."""
    nodes = [{"name": "s", "op": "Add", "inputs": args}, {"name": "i", "op": "Const", "value": [0]}]
    shown_input = "s"
    variables = {}
    if through_variable:
        variables = {"x": F32}
        nodes += [{"name": "h", "op": "Var", "var": "x"},
                  {"name": "w", "op": "Write", "inputs": ["h", "s"]},
                  {"name": "h2", "op": "Var", "var": "x"},
                  {"name": "r", "op": "Read", "inputs": ["h2", "^w"]}]
        shown_input = "r"
    nodes.append({"name": "c", "op": observer,
                  "inputs": ["i", shown_input] if observer == "PackScatter" else [shown_input]})
    return program_from_json({"format": "tfsem.program/1", "variables": variables,
                              "feeds": {"a": F32, "b": F32}, "nodes": nodes,
                              "outputs": {"o": "c"}})


@pytest.fixture
def user_bits(monkeypatch):
    monkeypatch.setitem(fns._REGISTRY, "UserBits", fns.Function(
        "UserBits", 1, 1, lambda xp, args, attrs: (np.asarray(args[0]).view(np.int32),),
        casts=True))


@pytest.mark.parametrize("observer", ["UserBits", "PackScatter"])
@pytest.mark.parametrize("through_variable", [False, True])
def test_the_solver_proves_nothing_through_a_nan_shown(user_bits, through_variable, observer):
    """Z3's floating-point theory has one NaN: observer(Add(a, b)) and
    observer(Add(b, a)) are one term to it.  A user's function is opaque to
    the solver, and was proved `sound` (checking/check.py
    `_opaque_function`); PackScatter was refused already.  At a = NaN1,
    b = NaN2 they differ (numpy's Add passes its first operand's payload
    on), through a variable too."""
    from tfsem.checking import check_rewrite
    p = _shown_sum_program(["$a", "$b"], through_variable, observer)
    q = _shown_sum_program(["$b", "$a"], through_variable, observer)
    v = check_rewrite(p, q, timeout=0.5)
    assert v.verdict != "sound", v.describe()
    assert "show a NaN's bits" in v.reason


def test_the_payload_sigma_shows_the_users_function_difference(user_bits, payload_sigma_first):
    from tfsem.checking import check_rewrite
    v = check_rewrite(_shown_sum_program(["$a", "$b"], True),
                      _shown_sum_program(["$b", "$a"], True), timeout=1)
    assert v.verdict == "unsound", v.describe()


# ---------------------------------------------------------------------------
# TensorFlow's Bitcast (its kernel: nightly)


def _bitcast_program(order: str | None = None):
    """The program as found: x float32 := Bitcast($ai) and := Bitcast($bi)
    (int32 feeds: the NaNs' payloads come in as ints, which no JSON "nan"
    canonicalizes), unordered or in `order`; o = Bitcast(Read(x)) to int32."""
    def bitcast(name, arg, src, dst):
        return {"name": name, "op": "tf.Bitcast/1/1", "inputs": [arg],
                "tf_attrs": {"T": src, "type": dst}}
    nodes = [{"name": f"h{k}", "op": "Var", "var": "x"} for k in range(3)]
    nodes += [bitcast("fa", "$ai", "DT_INT32", "DT_FLOAT"), bitcast("fb", "$bi", "DT_INT32", "DT_FLOAT"),
              {"name": "wa", "op": "Write", "inputs": ["h0", "fa"] + (["^wb"] if order == "ba" else [])},
              {"name": "wb", "op": "Write", "inputs": ["h1", "fb"] + (["^wa"] if order == "ab" else [])},
              {"name": "r", "op": "Read", "inputs": ["h2", "^wa", "^wb"]},
              bitcast("o", "r", "DT_FLOAT", "DT_INT32")]
    i32 = {"dtype": "int32", "shape": [1]}
    return program_from_json({"format": "tfsem.program/1", "variables": {"x": F32},
                              "feeds": {"ai": i32, "bi": i32}, "nodes": nodes,
                              "outputs": {"o": "o"}})


@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TensorFlow's kernels)")
def test_the_bitcast_program_as_found(monkeypatch):
    pytest.importorskip("tensorflow")
    from tfsem.checking import check as check_module
    from tfsem.checking import check_rewrite
    from tfsem.oracle import kernels
    ints = {"ai": Tensor(np.array([NAN1], np.int32)), "bi": Tensor(np.array([NAN2], np.int32))}
    init = {"x": INIT["x"]}
    drawn = check_module._generated_sigmas

    def sigmas(p, rng, *args, **kwargs):
        yield dict(ints), dict(init)
        yield from drawn(p, rng, *args, **kwargs)
    monkeypatch.setattr(check_module, "_generated_sigmas", sigmas)
    p = _bitcast_program()
    with kernels.use(True):
        for engine in ("reference", "readsfrom", "symmetry", "auto"):
            got = outcome_set(p, ints, init, engine=engine)
            assert sorted(int(dict(o.outputs)["o"].array[0]) for o in got) == [NAN1, NAN2], engine
        found, _ = cf.outcomes(p, ints, init, "atomic", "outputs+state", 10_000, 60.0, 10)
        assert sorted(int(dict(o.outputs)["o"].array[0]) for o in found) == [NAN1, NAN2]
        for order in ("ab", "ba"):
            v = check_rewrite(p, _bitcast_program(order), timeout=20, structural=False)
            assert v.verdict in ("sound", "no-counterexample"), v.describe()
        v = check_rewrite(_bitcast_program("ab"), p, timeout=20, structural=False)
        assert v.verdict == "unsound", v.describe()
