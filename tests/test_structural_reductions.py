"""A reduction over no axes is its argument (checking/structural.py,
`_Terms.reduces_nothing`): Grappler's constant folding removes
Sum(x, []) from a Keras training step's loss update, and the structural
rule proves it where x's dtype is known to have the kernel.

The rule rests on what tfsem's concrete semantics computes: the numpy
models for integers, TensorFlow's kernels for floats.  Both are compared
with the argument bit for bit here on each numeric dtype's edge values; a
bool argument (no kernel) is the counter-case.  Differential: generated
pairs (a reduction over [] or over [0] of an expression of int32/int64 or
bool values, removed in the rewrite) are checked against the oracle's
enumeration wherever the rule proves one."""

from __future__ import annotations

import itertools
import random

import ml_dtypes
import numpy as np
import pytest

from tfsem.checking.structural import structural_refinement
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import DTYPES, UNINITIALIZED, Error, Tensor

REDUCTIONS = ("SumAlong", "MeanAlong", "ReduceMaxAlong", "ReduceMinAlong")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float16", "bfloat16", "float32", "float64")


def edge_values(dtype: str) -> np.ndarray:
    t = np.dtype(DTYPES[dtype])
    if dtype in FLOATS:
        fi = ml_dtypes.finfo(t)
        v = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -2.25], np.float64).astype(t)
        return np.concatenate([v, np.array([fi.max, fi.min, fi.smallest_subnormal,
                                            -fi.smallest_subnormal, fi.tiny], t)])
    ii = np.iinfo(t)
    return np.array([0, 1, ii.max, ii.min, 7], t)


def reduces_to_itself(dtypes) -> list[str]:
    """The (reduction, dtype, shape, axes dtype, keep_dims) whose result over
    an empty axes list is not the argument bit for bit."""
    bad = []
    for name, dtype in itertools.product(REDUCTIONS, dtypes):
        f = fns.get(name)
        vals = edge_values(dtype)
        for x in (vals, vals.reshape(1, -1), vals[:1].reshape(())):
            for axes, keep in itertools.product((np.zeros(0, np.int32), np.zeros(0, np.int64)),
                                                (False, True)):
                (r,) = f.apply([Tensor(x), Tensor(axes)], {"keep_dims": keep})
                if not (isinstance(r, Tensor) and r.dtype == dtype and r.shape == x.shape
                        and r.array.tobytes() == x.tobytes()):
                    bad.append(f"{name} {dtype} {x.shape} {axes.dtype} {keep}: {r}")
    return bad


def test_integer_reductions_over_no_axes_are_the_argument():
    with kernels.use(False):
        assert reduces_to_itself(INTS) == []
        # a bool argument has no kernel: not its argument
        (r,) = fns.get("SumAlong").apply([Tensor(np.array([True])),
                                          Tensor(np.zeros(0, np.int32))], {})
        assert r == Error("no-kernel")


def test_float_reductions_over_no_axes_are_the_argument_on_tensorflows_kernels():
    pytest.importorskip("tensorflow")
    with kernels.use(True):
        assert reduces_to_itself(FLOATS) == []
        assert "Sum" in kernels.DETERMINISTIC


def program(dtype: str, value_nodes, value: str, outputs=None):
    return program_from_json({
        "format": "tfsem.program/1",
        "variables": {"v": {"dtype": dtype, "shape": [2]}, "w": {"dtype": "int64", "shape": [2]}},
        "feeds": {"a": {"dtype": "int64", "shape": [2]}, "b": {"dtype": "int64", "shape": [2]},
                  "c": {"dtype": "bool", "shape": [2]}},
        "nodes": [{"name": "hv", "op": "Var", "var": "v"},
                  {"name": "hw", "op": "Var", "var": "w"},
                  {"name": "rw", "op": "Read", "inputs": ["hw"]},
                  *value_nodes,
                  {"name": "set", "op": "Assign", "fn": "Snd", "inputs": ["hv", value]}],
        "outputs": outputs or {"out": "rw"}})


def axes_const(axes) -> dict:
    return {"name": "axes", "op": "Const",
            "value": {"dtype": "int32", "value": list(axes)} if axes else
            {"dtype": "int32", "value": []}}


def sigmas(dtype: str):
    vals = {"int64": ((0, 5), (-3, 2**63 - 1)), "int32": ((0, 5), (-3, 2**31 - 1))}
    for w, a, b in itertools.product((None, (1, 2)), ((0, 5), (7, -1)), ((3, 0), (2, 2))):
        feeds = {"a": Tensor(np.array(a, np.int64)), "b": Tensor(np.array(b, np.int64)),
                 "c": Tensor(np.array([True, False]))}
        for v in (None, vals.get(dtype, ((1, 0),))[0]):
            init = {"w": Error(UNINITIALIZED) if w is None else Tensor(np.array(w, np.int64)),
                    "v": Error(UNINITIALIZED) if v is None else
                    Tensor(np.array(v, DTYPES[dtype]))}
            yield feeds, init


def oracle_new_outcome(p, q, dtype):
    for feeds, init in sigmas(dtype):
        ours = outcome_set(p, feeds, init, "atomic", "outputs+state")
        theirs = outcome_set(q, feeds, init, "atomic", "outputs+state")
        if any(o not in ours for o, _ in theirs.items()):
            return feeds, init
    return None


def random_pair(rng: random.Random):
    """P writes Reduce(e, axes) to v, P' writes e: e is an expression of the
    int64 feeds and the read of w (unknown dtype), maybe compared (bool) or
    cast to int32, or the bool feed; axes is [] or [0]."""
    nodes, ports = [], ["$a", "$b"]
    dtype = "int64"
    for i in range(rng.randint(1, 3)):
        op = rng.choice(["Add", "Mul", "FloorDiv", "Sub"])
        nodes.append({"name": f"e{i}", "op": op, "inputs": rng.sample(ports + ["rw"], 2)})
        ports.append(f"e{i}")
    last = ports[-1]
    kind = rng.choice(["plain", "plain", "bool", "bool feed", "int32", "read"])
    if kind == "bool feed":   # a bool of known dtype: no kernel, so no proof
        last, dtype = "$c", "bool"
    elif kind == "bool":
        nodes.append({"name": "c", "op": "Equal", "inputs": [last, "$a"]})
        last, dtype = "c", "bool"
    elif kind == "int32":
        nodes.append({"name": "c", "op": "Cast", "DstT": "int32", "inputs": [last]})
        last, dtype = "c", "int32"
    elif kind == "read":
        last = "rw"
    axes = [] if rng.random() < 0.75 else [0]
    red = rng.choice(REDUCTIONS)
    p = program(dtype, nodes + [axes_const(axes),
                                {"name": "r", "op": red, "keep_dims": rng.random() < 0.5,
                                 "inputs": [last, "axes"]}], "r")
    q = program(dtype, nodes + [axes_const(axes)], last)
    return p, q, kind, axes, dtype


def test_generated_reductions_agree_with_the_oracle():
    rng = random.Random(2302)
    stats = {"proved": 0, "refused": 0, "refused_and_differs": 0}
    with kernels.use(False):
        for _ in range(60):
            p, q, kind, axes, dtype = random_pair(rng)
            r = structural_refinement(p, q)
            if r.proved:
                stats["proved"] += 1
                # only over no axes, and only where the argument's dtype is known numeric
                assert axes == [] and kind in ("plain", "int32"), (kind, axes, r.reason)
                assert oracle_new_outcome(p, q, dtype) is None, (p, q)
            else:
                stats["refused"] += 1
                stats["refused_and_differs"] += oracle_new_outcome(p, q, dtype) is not None
    print(stats)
    assert stats["proved"] >= 15 and stats["refused_and_differs"] >= 5, stats
