"""optimizer_strategy (generators/grappler.py): its programs contain what
the remapper, the shape optimizer and the model pruner rewrite, found
structurally (`optimizer_patterns`), with edge-valued float σ; every program
is valid and exports.  No TensorFlow (whether Grappler changes them is
benchmarks/grappler_reach.py's measure, docs/grappler-findings.md)."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from tfsem.generators import grappler as G
from tfsem.generators.draw import RandomDraw
from tfsem.oracle.opdefs.nn import FUSED_ACTIVATIONS
from tfsem.oracle.values import Tensor

COUNT = 80

#: each mix's patterns, and the least share of programs that must hold one
WANT = {
    "remap": ({"remap:matmul-biasadd", "remap:conv-biasadd", "remap:conv-batchnorm",
               "remap:batchnorm-activation", *(f"remap:{a}" for a in FUSED_ACTIVATIONS)}, 0.4),
    "shape": ({"shape:prod-shape", "shape:size", "shape:rank", "shape:shapen"}, 0.4),
    "pruning": ({"pruning:trivial"}, 0.4),
    "debug_stripper": ({"debug_stripper:checknumerics"}, 0.4),
    "optimizers": ({"remap:matmul-biasadd", "remap:conv-biasadd", "shape:prod-shape",
                    "pruning:trivial"}, 0.4),
}


def _cases(mix: str, count: int = COUNT):
    return [G.draw_optimizer_case(RandomDraw(random.Random(f"test-opt:{mix}:{i}")), 10, True, mix)
            for i in range(count)]


@pytest.mark.parametrize("mix", sorted(WANT))
def test_each_mix_makes_its_optimizers_patterns(mix):
    patterns, share = WANT[mix]
    seen: Counter = Counter()
    holding = 0
    for p, _, _ in _cases(mix):
        found = G.optimizer_patterns(p)
        seen.update(found)
        holding += bool(found & patterns)
    assert patterns <= set(seen), sorted(patterns - set(seen))
    assert holding >= share * COUNT, (mix, holding)


def test_the_programs_are_valid_export_and_draw_edge_values():
    from tfsem.graphdef.exporter import export_graph
    edges = Counter()
    ops = Counter()
    for p, feeds, init in _cases("optimizers", 50) + _cases("remap", 50):
        graph = export_graph(p)                       # every program exports
        ops.update(n["op"] for n in graph["node"])
        for v in [*feeds.values(), *init.values()]:
            if isinstance(v, Tensor) and v.array.dtype == np.float32:
                a = v.array.reshape(-1)
                edges["nan"] += int(np.isnan(a).any())
                edges["inf"] += int(np.isinf(a).any())
                edges["-0"] += int((np.signbit(a) & (a == 0)).any())
                edges["subnormal"] += int(((a != 0) & (np.abs(a) < np.float32(1.1754944e-38))).any())
    assert all(edges[k] for k in ("nan", "inf", "-0", "subnormal")), edges
    for op in ("MatMul", "BiasAdd", "Conv2D", "FusedBatchNormV3", "Shape", "Prod",
               "StopGradient", "PreventGradient", "Snapshot"):
        assert ops[op], op
    assert all(ops[a] for a in FUSED_ACTIVATIONS), ops


def test_an_unknown_mix_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown mix 'nope'"):
        G.draw_optimizer_case(RandomDraw(random.Random(0)), 10, True, "nope")
