"""The Grappler generator's comparisons, logical ops, Select and casts, and
its edge-valued float programs (generators/grappler.py, issue 23 item 5):
the programs contain them, σ carries NaN, infinities, signed zeros,
subnormals and integer extremes, and an edge-valued float program keeps
float arithmetic (which TensorFlow's CPU kernels flush) away from its floats."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from tfsem.generators import grappler as G
from tfsem.generators.draw import RandomDraw
from tfsem.graphdef.exporter import export_graph, infer_types
from tfsem.oracle.values import Tensor

LOGIC_OPS = {"Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual", "LogicalNot",
             "LogicalAnd", "LogicalOr", "Select", "SelectV2"}
#: float ops TensorFlow's CPU kernels flush (graphdef/ops.py imports them as X.ftz)
FLUSHING = {"Add", "Sub", "Mul", "Max", "Min", "RealDiv", "Square", "Sqrt", "SquaredDifference",
            "BiasAdd", "Relu", "Mean", "Sum", "MatMul"}


@pytest.fixture(scope="module")
def programs():
    return {dt: G.random_programs(40, 11, 16, dt) for dt in G.DTYPES}


def test_every_dtype_reaches_comparisons_logical_ops_select_and_casts(programs):
    for dt, ps in programs.items():
        ops = {n.op for p in ps for n in p.nodes}
        assert {"Select", "SelectV2", "LogicalNot", "Cast"} <= ops, (dt, sorted(ops & LOGIC_OPS))
        assert {"LogicalAnd", "LogicalOr"} & ops, dt
        assert len(ops & {"Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual"}) >= 3
        assert sum("logic" in G.shape_families(p) for p in ps) >= len(ps) // 5, dt
    # integer arithmetic on predicates (cast to integers)
    ints = [n for p in programs["int64"] for n in p.nodes if n.op in ("Add", "Sub", "Mul")
            and any(getattr(i, "node", None) and p.node[i.node].op == "Cast" for i in n.data_inputs)]
    assert ints


def test_edge_programs_have_float_feeds_and_no_flushed_float_op(programs):
    ps = programs["float32-edges"]
    assert sum(any(t.dtype == "float32" for t in p.feeds.values()) for p in ps) >= len(ps) // 2
    for p in ps:
        assert all(t.dtype == "float32" for t in p.variables.values())
        types = infer_types(p)
        for n in p.nodes:
            if n.op in FLUSHING or (n.op == "Assign" and n.fn != "Snd"):
                dts = {types.get((n.name, 0)).dtype} if types.get((n.name, 0)) else set()
                assert "float32" not in dts, (n, "float arithmetic in an edges program")
        export_graph(p)     # every program exports


def test_integer_valued_float_programs_stay_subnormal_free_with_select_and_casts(programs):
    ps = programs["float32"]
    assert any({"Select", "SelectV2"} & {n.op for n in p.nodes} for p in ps)
    assert all(G.subnormal_free(p) for p in ps)


def test_a_select_of_a_float_feed_is_not_subnormal_free():
    # the proof of subnormal_free must not take Select's x on trust
    edges = [p for p in G.random_programs(40, 11, 16, "float32-edges")
             if any(n.op in ("Select", "SelectV2") for n in p.nodes)]
    assert edges and not any(G.subnormal_free(p) for p in edges)


def test_sigma_includes_every_edge_value():
    seen_f, seen_i = [], []
    for k, p in enumerate(G.random_programs(30, 5, 16, "float32-edges")
                          + G.random_programs(30, 5, 16, "int64")):
        d = RandomDraw(random.Random(k))
        feeds, init = G.edge_inputs(d, p)
        for v in (*feeds.values(), *init.values()):
            (seen_f if v.dtype == "float32" else seen_i).extend(v.array.reshape(-1).tolist())
    f = np.array(seen_f, dtype=np.float32)
    assert np.isnan(f).any() and np.isposinf(f).any() and np.isneginf(f).any()
    assert any(x == 0 and math.copysign(1, x) < 0 for x in seen_f)
    assert ((f != 0) & (np.abs(f) < np.finfo(np.float32).tiny)).any()      # subnormals
    assert (f == np.finfo(np.float32).max).any()
    assert np.iinfo(np.int64).max in seen_i and np.iinfo(np.int64).min in seen_i


def test_the_strategy_draws_edge_programs_with_edge_sigma():
    from hypothesis import HealthCheck, given, settings
    seen = []

    @settings(max_examples=5, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(G.strategy(12, "outputs+state", edges_p=1.0))
    def run(case):
        p, feeds, init = case
        assert all(t.dtype == "float32" for t in p.variables.values())
        seen.append(p)
    run()
    assert seen
    G.edges_strategy(12, "outputs+state")     # (the campaign's generator builds)


def test_select_and_logical_or_export_and_import_back():
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode, encode
    from tfsem.oracle.dispatch import outcome_set
    ps = [p for p in G.random_programs(40, 11, 16, "float32-edges")
          if {"Select", "LogicalOr"} <= {n.op for n in p.nodes}][:3]
    assert ps
    for p in ps:
        g = export_graph(p)
        q = import_graph(decode("tensorflow.GraphDef", encode("GraphDef", g)), list(p.outputs),
                         [n["name"] for n in g["node"] if n["op"] != "Placeholder"
                          and n["name"] not in p.outputs]).program
        assert {"Select", "LogicalOr"} <= {n.op for n in q.nodes}
        assert not any(n.op.endswith(".ftz") or n.op.startswith("tf.") for n in q.nodes)
        # the same outcomes at an edge-valued σ
        d = RandomDraw(random.Random(3))
        feeds, init = G.edge_inputs(d, p)
        init = {x: init.get(x, Tensor(np.zeros(t.shape, np.float32))) for x, t in p.variables.items()}
        feeds = {k: v for k, v in feeds.items() if k in q.feed_names}
        a = outcome_set(p, feeds, init, "atomic", "outputs")
        b = outcome_set(q, feeds, init, "atomic", "outputs")
        assert set(a) == set(b)
