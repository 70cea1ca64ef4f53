"""The Grappler-shaped generator (generators/grappler.py): valid programs that
export and import back without flush-to-zero or uninterpreted functions, each
shape family present, deterministic by seed; with TensorFlow, Grappler's
optimizers change a good share of them and the results import back."""

from __future__ import annotations

import json
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tfsem.generators import grappler as G
from tfsem.generators.draw import RandomDraw
from tfsem.graphdef.exporter import export_graph
from tfsem.graphdef.importer import import_graph
from tfsem.graphdef.proto import encode
from tfsem.graphdef.proto.wire import decode
from tfsem.oracle.functions import FTZ_SUFFIX
from tfsem.oracle.jsonio import program_to_json
from tfsem.oracle.program import ASSIGN, READ, ControlIn, DataIn, Node, Program, TensorType
from tfsem.oracle.values import Tensor

N = 300


@pytest.fixture(scope="module")
def programs():
    return G.random_programs(N, seed=7, max_nodes=16)


@pytest.fixture(scope="module")
def float_programs():
    return G.random_programs(100, seed=7, max_nodes=16, dtype="float32")


def round_trip(p: Program) -> Program:
    """export, encode to GraphDef bytes, decode and import back, as the Grappler
    target does (campaigns/tensorflow_target.py)."""
    graph = export_graph(p)
    fetches = list(p.outputs)
    targets = [n["name"] for n in graph["node"]
               if n["op"] != "Placeholder" and n["name"] not in p.outputs]
    data = encode("GraphDef", graph)
    return import_graph(decode("tensorflow.GraphDef", data), fetches, targets).program


def test_every_program_is_valid_exports_and_imports_without_ftz_or_tf_ops(programs):
    for p in programs:
        p.validated()
        assert 1 <= len(p.nodes) <= 16 and p.outputs
        q = round_trip(p)
        bad = [n.op for n in q.nodes if n.op.endswith(FTZ_SUFFIX) or n.op.startswith("tf.")]
        assert not bad, (bad, program_to_json(p))
        assert set(q.outputs) == set(p.outputs) and set(q.variables) == set(p.variables)


def test_each_shape_family_occurs_often(programs):
    counts = Counter(f for p in programs for f in G.shape_families(p))
    # floors measured at seed 7 (control 70%, arith 61%, constant 58%,
    # identity 44%, group 24%), set well below
    floors = {"arith": 0.4, "constant": 0.4, "control": 0.5, "identity": 0.3, "group": 0.12}
    for family, floor in floors.items():
        assert counts[family] >= floor * N, (family, counts)


def test_specific_rewrite_shapes_occur(programs):
    """The shapes Grappler rewrites by name, not just by family."""
    seen = Counter()
    for p in programs:
        node = p.node
        for n in p.nodes:
            ins = n.data_inputs
            consts = [node[i.node].attrs["value"].array for i in ins
                      if isinstance(i, DataIn) and node[i.node].op == "Const"]
            if n.op == "Mul" and any(c.size and np.all(c == 1) for c in consts):
                seen["x*1"] += 1
            if n.op == "Add" and any(c.size and np.all(c == 0) for c in consts):
                seen["x+0"] += 1
            if n.op == "Neg" and isinstance(ins[0], DataIn) and node[ins[0].node].op == "Neg":
                seen["Neg(Neg)"] += 1
            if n.op in ("Sub", "Add", "Mul") and len(ins) == 2 and ins[0] == ins[1]:
                seen["x op x"] += 1
            if n.op == "NoOp" and sum(node[c.node].op == ASSIGN for c in n.control_inputs
                                      if isinstance(c, ControlIn)) >= 2:
                seen["group"] += 1
            if n.op == READ and any(isinstance(c, ControlIn) and node[c.node].op == ASSIGN
                                    for c in n.control_inputs):
                seen["Assign->^Read"] += 1
            if n.op == ASSIGN and any(isinstance(c, ControlIn) and node[c.node].op == READ
                                      for c in n.control_inputs):
                seen["Read->^Assign"] += 1
            if n.op in ("Fill", "ZerosLike", "OnesLike"):
                seen["broadcast"] += 1
            if n.op not in ("Const",) and ins and all(
                    isinstance(i, DataIn) and node[i.node].op == "Const" for i in ins):
                seen["const op"] += 1
    for shape in ("x*1", "x+0", "Neg(Neg)", "x op x", "group", "Assign->^Read",
                  "Read->^Assign", "broadcast", "const op"):
        assert seen[shape] >= 10, (shape, seen)


def test_deterministic_by_seed_and_index():
    a = [json.dumps(program_to_json(p), sort_keys=True) for p in G.random_programs(20, 3)]
    b = [json.dumps(program_to_json(p), sort_keys=True) for p in G.random_programs(25, 3)]
    c = [json.dumps(program_to_json(p), sort_keys=True) for p in G.random_programs(20, 4)]
    assert a == b[:20]           # program i depends only on (seed, i)
    assert a != c


def test_max_nodes_is_respected_and_checked():
    for max_nodes in (4, 6, 10):
        for p in G.random_programs(40, 1, max_nodes=max_nodes):
            assert len(p.nodes) <= max_nodes
    with pytest.raises(ValueError, match="max_nodes"):
        G.build(RandomDraw(random.Random(0)), max_nodes=0)
    with pytest.raises(ValueError, match="dtype"):
        G.build(RandomDraw(random.Random(0)), dtype="int16")
    with pytest.raises(ValueError, match="float_p"):
        G.strategy(10, "outputs+state", float_p=2)


@settings(max_examples=25, suppress_health_check=list(HealthCheck))
@given(G.strategy(10, "outputs+state"))
def test_strategy_draws_program_and_sigma(case):
    p, feeds, init = case
    p.validated()
    assert set(feeds) == set(p.feed_names)
    for name, v in feeds.items():
        assert v.dtype == p.feed_type(name).dtype and v.shape == p.feed_type(name).shape
    assert set(init) <= set(p.variables)
    export_graph(p)


def test_float_programs_are_integer_valued_and_subnormal_free(float_programs):
    for p in float_programs:
        assert all(t.dtype == "int64" for t in p.feeds.values())
        assert any(t.dtype == "float32" for t in p.variables.values())
        assert G.subnormal_free(p), program_to_json(p)
        export_graph(p)


def _float_prog(nodes, feeds=None, variables=("x",)):
    return Program({x: TensorType("float32", ()) for x in variables}, tuple(nodes),
                   {"o": DataIn(nodes[-1].name)} if nodes[-1].op not in (ASSIGN,) else {},
                   feeds or {}).validated()


def test_subnormal_free_refuses_what_may_be_subnormal():
    f = lambda v: Tensor(np.array(v, dtype=np.float32))  # noqa: E731
    c = Node("c", "Const", (), {"value": f(3.0)})
    half = Node("h", "Const", (), {"value": f(0.5)})
    v = Node("v", "Var", (), {"var": "x"})
    r = Node("r", "Read", (DataIn("v"),))
    w = Node("w", "Assign", (DataIn("v"), DataIn("c")), {"fn": "Snd"})
    r_after = Node("r", "Read", (DataIn("v"), ControlIn("w")))
    add = Node("s", "Add", (DataIn("r"), DataIn("c")))
    # integer constants only: free
    assert G.subnormal_free(_float_prog([c, Node("s", "Mul", (DataIn("c"), DataIn("c")))]))
    # a non-integer constant: not provably free
    assert not G.subnormal_free(_float_prog([half, Node("s", "Mul", (DataIn("h"), DataIn("h")))]))
    # reading the initial value of a float variable: sigma may make it subnormal
    assert not G.subnormal_free(_float_prog([c, v, r, add]))
    # read after an integer-valued Write: free
    assert G.subnormal_free(_float_prog([c, v, w, r_after, add]))
    # a float feed: not free
    feed = {"f": TensorType("float32", ())}
    from tfsem.oracle.program import FeedIn
    assert not G.subnormal_free(_float_prog([c, Node("s", "Add", (FeedIn("f"), DataIn("c")))],
                                            feeds=feed))
    # an int64 feed through a Cast: free
    ifeed = {"f": TensorType("int64", ())}
    cast = Node("k", "Cast", (FeedIn("f"),), {"DstT": "float32"})
    assert G.subnormal_free(_float_prog([c, cast, Node("s", "Add", (DataIn("k"), DataIn("c")))],
                                        feeds=ifeed))
    # RealDiv of integers can be subnormal (1 / 3e38): not free
    assert not G.subnormal_free(_float_prog(
        [c, cast, Node("s", "RealDiv", (DataIn("c"), DataIn("k")))], feeds=ifeed))


def test_subnormal_free_agrees_with_evaluation(float_programs):
    """Differential: on programs it calls free, no float tensor the oracle
    computes (every port fetched, every schedule, several σ with large and
    small feeds and arbitrary initial values) is subnormal."""
    from tfsem.generators.strategies import random_inputs
    from tfsem.oracle.dispatch import outcome_set
    tiny = np.finfo(np.float32).tiny
    seen_floats = 0
    for i, p in enumerate(float_programs[:30]):
        assert G.subnormal_free(p)
        every = {f"port_{n.name}_{k}": DataIn(n.name, k) for n in p.nodes
                 if n.op not in ("Var", ASSIGN) for k in range(n.n_outputs())}
        q = Program(p.variables, p.nodes, every, p.feeds).validated()
        for s in range(3):
            feeds, init = random_inputs(q, seed=100 * i + s, edge_p=0.5)
            feeds = {k: Tensor(np.array(v.array * 7**(s * 9), dtype=np.int64))
                     for k, v in feeds.items()}
            for o in outcome_set(q, feeds, init, "atomic", "outputs+state", max_seconds=5):
                for _, v in o.outputs:     # every computed tensor (a final state
                    # may be an initial value, never computed: not checked)
                    arr = getattr(v, "array", None)
                    if arr is not None and arr.dtype == np.float32:
                        seen_floats += 1
                        a = np.abs(arr[np.isfinite(arr)])
                        assert not np.any((a > 0) & (a < tiny)), program_to_json(p)
    assert seen_floats > 100


# ---------------------------------------------------------------------------
# BroadcastTo (constant folding emits it with an int32 shape): the model


def _broadcast_graph(x, shape, shape_dtype=np.int32):
    xs = np.asarray(x)
    dt = {np.dtype(np.float32): "DT_FLOAT", np.dtype(np.int64): "DT_INT64"}[xs.dtype]
    sh = np.asarray(shape, dtype=shape_dtype)
    sdt = "DT_INT32" if shape_dtype == np.int32 else "DT_INT64"
    return {"node": [
        {"name": "x", "op": "Placeholder", "attr": {
            "dtype": {"type": dt}, "shape": {"shape": {"dim": [{"size": d} for d in xs.shape]}}}},
        {"name": "s", "op": "Const", "attr": {"dtype": {"type": sdt}, "value": {"tensor": {
            "dtype": sdt, "tensor_shape": {"dim": [{"size": d} for d in sh.shape]},
            "tensor_content": sh.astype(sh.dtype.newbyteorder("<")).tobytes()}}}},
        {"name": "b", "op": "BroadcastTo", "input": ["x", "s"],
         "attr": {"T": {"type": dt}, "Tidx": {"type": sdt}}}]}


def _model_broadcast(x, shape, shape_dtype=np.int32):
    from tfsem.oracle.dispatch import outcome_set
    p = import_graph(_broadcast_graph(x, shape, shape_dtype), ["b"]).program
    (o,) = outcome_set(p, {"x": Tensor(np.asarray(x))}, {}, "atomic", "outputs").as_dict(1)
    return dict(o.outputs)["b"]


_BCAST_CASES = [
    (np.float32(-0.0), [3]), (np.float32(1e-40), [2, 2]), (np.float32(np.nan), [2]),
    (np.array([np.inf, -1.5e-39], np.float32), [3, 2]), (np.array([[7.0]], np.float32), [2, 3]),
    (np.int64(-2 ** 63), [4]), (np.array([2 ** 63 - 1, -1, 0], np.int64), [2, 3]),
    (np.array([[1], [2]], np.int64), [2, 3]), (np.int64(5), []),
    (np.array([3.5], np.float32), [1, 1, 1]),
]


def test_broadcast_to_model_values_and_shapes():
    for x, shape in _BCAST_CASES:
        got = _model_broadcast(x, shape).array
        want = np.broadcast_to(np.asarray(x), shape)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(np.isnan(got), np.isnan(want)) if got.dtype.kind == "f" else True
        assert np.where(np.isnan(want), 0, want).tobytes() == np.where(np.isnan(got), 0, got).tobytes() \
            if got.dtype.kind == "f" else got.tobytes() == want.tobytes()


def test_broadcast_to_fails_where_tensorflow_fails():
    from tfsem.oracle.values import Error
    for x, shape in [(np.zeros((1, 3), np.int64), [3]),        # rank larger
                     (np.zeros(3, np.float32), [1]),             # a dimension larger
                     (np.zeros((2, 3), np.int64), [3, 3]),       # incompatible
                     (np.zeros(2, np.int64), [])]:
        assert isinstance(_model_broadcast(x, shape), Error), (x.shape, shape)
    with pytest.raises(Exception, match="negative dimension"):
        import_graph(_broadcast_graph(np.float32(1), [-1, 2]), ["b"])


def test_broadcast_to_equals_tensorflows_kernel_bit_for_bit():
    tf = pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow]")
    for x, shape in _BCAST_CASES:
        for sdt in (np.int32, np.int64):
            want = tf.raw_ops.BroadcastTo(input=tf.constant(x), shape=tf.constant(shape, sdt)).numpy()
            got = _model_broadcast(x, shape, sdt).array
            assert got.dtype == want.dtype and got.shape == want.shape, (x, shape)
            assert np.where(np.isnan(want), 0, want).tobytes() == \
                np.where(np.isnan(got), 0, got).tobytes(), (x, shape, want, got)
            assert np.array_equal(np.isnan(want), np.isnan(got))


# ---------------------------------------------------------------------------
# With TensorFlow: Grappler acts on these programs, and its results import


#: Share of programs each optimizer changes, at least (measured on 300
#: programs, seed 0, 16 nodes: dependency 53%, arithmetic 37%, constfold 58%,
#: docs/tensorflow-validation.md; on the 40 programs at seed 5 here: 58%,
#: 20%, 70%).  The remapper's
#: CPU patterns are all float (MatMul/Conv2D + BiasAdd + activation, ...),
#: which tfsem does not model bit for bit: it changes none of these programs.
FLOORS = {"dependency": 0.3, "arithmetic": 0.08, "constfold": 0.4, "remap": 0.0}


def test_grappler_changes_a_good_share_and_the_results_import():
    pytest.importorskip("tensorflow", reason="needs the extra tfsem[tensorflow] (tensorflow-cpu)")
    from tfsem.campaigns import tensorflow_target as T
    from tfsem.graphdef import grappler as g
    progs = G.random_programs(40, seed=5, max_nodes=16)
    changed = Counter()
    for p in progs:
        data, fetches, targets = T._exported(p)
        assert data is not None and T._same_semantics(data, fetches, targets)
        before = g.as_graph_def(data)
        for opt in FLOORS:
            res = g.run_grappler(data, fetches + targets, opt)
            changed[opt] += g.really_changed(before, res.graph_def)
            kept = {n.name for n in res.graph_def.node}
            q = import_graph(decode("tensorflow.GraphDef", res.graph_def.SerializeToString()),
                             fetches, [t for t in targets if t in kept]).program
            assert set(q.outputs) == set(p.outputs) and set(q.variables) == set(p.variables)
    print(dict(changed))
    for opt, floor in FLOORS.items():
        assert changed[opt] >= floor * len(progs), changed


def test_unflushed_round_trip_of_float_programs_is_sound(float_programs):
    """A float program's export imports back with X.ftz functions; where
    subnormal_free proves them equal to X, `unflushed` gives back a program
    that tfsem proves equivalent to the original, both ways."""
    from tfsem.checking import check_rewrite
    done = 0
    for p in float_programs:
        q = round_trip(p)
        if not any(n.op.endswith(FTZ_SUFFIX) or (n.op == ASSIGN and n.fn.endswith(FTZ_SUFFIX))
                   for n in q.nodes):
            continue
        u = G.unflushed(q)
        assert u is not None, program_to_json(p)
        assert not any(n.op.endswith(FTZ_SUFFIX) for n in u.nodes)
        assert check_rewrite(p, u, timeout=20).verdict == "sound"
        assert check_rewrite(u, p, timeout=20).verdict == "sound"
        done += 1
        if done == 4:
            break
    assert done == 4


def test_unflushed_refuses_a_program_that_may_meet_subnormals():
    c = Node("c", "Const", (), {"value": Tensor(np.array(2.0, np.float32))})
    v = Node("v", "Var", (), {"var": "x"})
    r = Node("r", "Read", (DataIn("v"),))
    s = Node("s", "Add.ftz", (DataIn("r"), DataIn("c")))
    assert G.unflushed(_float_prog([c, v, r, s])) is None
    w = Node("w", "Assign", (DataIn("v"), DataIn("c")), {"fn": "Snd"})
    r2 = Node("r", "Read", (DataIn("v"), ControlIn("w")))
    u = G.unflushed(_float_prog([c, v, w, r2, s]))
    assert u is not None and u.node["s"].op == "Add"
    # an Assign of a function that is not closed over integer-valued floats
    a = Node("a", "Assign", (DataIn("v"), DataIn("c"), ControlIn("w")), {"fn": "RealDiv.ftz"})
    assert G.unflushed(_float_prog([c, v, w, a])) is None


def test_generate_shape_grappler_writes_these_programs(tmp_path, capsys):
    from tfsem.cli import main
    from tfsem.oracle.jsonio import load_program
    assert main(["generate", "--shape", "grappler", "--count", "6", "--seed", "3",
                 "--max-nodes", "14", "--out", str(tmp_path / "g"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["shape"] == "grappler" and len(summary["files"]) == 6
    files = sorted((tmp_path / "g").glob("prog_*.json"))
    got = [json.dumps(program_to_json(load_program(f)), sort_keys=True) for f in files]
    want = [json.dumps(program_to_json(p), sort_keys=True)
            for p in G.random_programs(6, 3, max_nodes=14)]
    assert got == want
    # the default is unchanged: the general generator
    assert main(["generate", "--count", "2", "--seed", "3", "--out", str(tmp_path / "d"),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["shape"] == "general"


def test_programs_shrink_to_the_motif():
    """Each motif is one span: Hypothesis shrinks a program to the motif a
    property needs (what a campaign's finding shows)."""
    from hypothesis import find
    p, _, _ = find(G.strategy(16, "outputs+state"),
                   lambda c: any(n.op == "Neg" and isinstance(n.inputs[0], DataIn)
                                 and c[0].node[n.inputs[0].node].op == "Neg" for n in c[0].nodes),
                   settings=settings(max_examples=300, database=None, derandomize=True))
    assert [n.op for n in p.nodes][-2:] == ["Neg", "Neg"] and len(p.nodes) <= 4


def test_int32_programs_are_valid_export_import_and_self_check_sound():
    """int32 programs (a share of the Grappler targets' mixed strategy): int32
    feeds, variables and constants with int32 extremes, exported and imported
    back unchanged in dtype."""
    from tfsem.checking import check_rewrite
    ps = G.random_programs(60, seed=5, max_nodes=12, dtype="int32")
    extremes = 0
    for p in ps:
        p.validated()
        assert {t.dtype for t in p.variables.values()} <= {"int32"}
        assert {t.dtype for t in p.feeds.values()} <= {"int32"}
        extremes += sum(1 for n in p.nodes if n.op == "Const" and n.attrs["value"].dtype == "int32"
                        and np.abs(n.attrs["value"].array.astype(np.int64)).max(initial=0) >= 2**31 - 2)
        q = round_trip(p)
        assert {t.dtype for t in q.variables.values()} == {t.dtype for t in p.variables.values()}
    assert check_rewrite(ps[0], ps[0], timeout=10).verdict == "sound"
    assert extremes >= 1
