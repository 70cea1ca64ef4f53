"""Every dtype of SPEC section 8 through the value model, JSON, the program
format, the registry and the checker (no TensorFlow needed: the models are
compared with TensorFlow's kernels in test_dtypes_tensorflow.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.oracle import functions as fns
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.values import (DTYPES, FLOAT_DTYPES, Error, Tensor, ValueFormatError,
                                 edge_values, random_array, value_from_json, value_to_json)

ALL = list(DTYPES)


@pytest.mark.parametrize("dtype", ALL)
def test_every_value_round_trips_through_strict_json(dtype):
    rng = np.random.default_rng(8)
    arr = np.concatenate([edge_values(dtype), random_array(dtype, 200, rng)])
    t = Tensor(arr, dtype)
    text = json.dumps(value_to_json(t), allow_nan=False)   # strict JSON
    back = value_from_json(json.loads(text))
    assert back == t and back.dtype == dtype
    if dtype == "bool":
        assert json.loads(text)["value"][:2] == [False, True]


def test_json_values_of_every_dtype_are_checked_by_range_and_kind():
    assert value_from_json({"dtype": "uint64", "value": 2**64 - 1}).array == np.uint64(2**64 - 1)
    assert value_from_json({"dtype": "float16", "value": "-inf"}).array == -np.inf
    assert value_from_json(True, dtype="bool") == Tensor(np.array(True))
    for bad, what in [({"dtype": "int8", "value": 128}, "out of int8 range"),
                      ({"dtype": "uint16", "value": -1}, "out of uint16 range"),
                      ({"dtype": "float16", "value": 65520}, "out of float16 range"),
                      ({"dtype": "bfloat16", "value": 1e39}, "out of bfloat16 range"),
                      ({"dtype": "bool", "value": [1, 0]}, "not a bool"),
                      ({"dtype": "int32", "value": 1.5}, "not an int32"),
                      ({"dtype": "string", "value": "a"}, "string, variant and resource"),
                      ({"dtype": "resource", "value": 0}, "not modelled")]:
        with pytest.raises(ValueFormatError, match=what):
            value_from_json(bad)


def test_program_declarations_of_every_dtype_load_and_save():
    raw = {"format": "tfsem.program/1",
           "variables": {f"v_{d}": {"dtype": d, "shape": [2]} for d in ALL},
           "feeds": {f"f_{d}": {"dtype": d, "shape": []} for d in ALL},
           "nodes": [{"name": f"n_{d}", "op": "Identity", "inputs": [f"$f_{d}"]} for d in ALL],
           "outputs": {d: f"n_{d}" for d in ALL}}
    p = program_from_json(raw)
    assert {p.feed_type(f"f_{d}").dtype for d in ALL} == set(ALL)
    assert program_to_json(p)["variables"]["v_bfloat16"] == {"dtype": "bfloat16", "shape": [2]}
    bad = dict(raw, feeds={"s": {"dtype": "string", "shape": []}})
    with pytest.raises(Exception, match="string"):
        program_from_json(bad)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint64"])
def test_integers_wrap(dtype):
    info = np.iinfo(DTYPES[dtype])
    mx = Tensor(np.array(info.max, DTYPES[dtype]))
    one = Tensor(np.array(1, DTYPES[dtype]))
    (r,) = fns.get("Add").apply([mx, one])
    assert r.dtype == dtype and int(r.array) == int(info.min)


def test_no_kernel_dtypes_give_the_no_kernel_error():
    b = Tensor(np.array([True, False]))
    u = Tensor(np.array([1, 2], np.uint8))
    assert fns.get("Add").apply([b, b]) == (Error("no-kernel"),)
    assert fns.get("Neg").apply([u]) == (Error("no-kernel"),)
    assert fns.get("Abs").apply([u]) == (Error("no-kernel"),)
    assert fns.get("SquaredDifference").apply([u, u]) == (Error("no-kernel"),)


def test_flushing_per_dtype():
    """float16 keeps subnormals in TensorFlow's arithmetic; bfloat16, float32
    and float64 flush them (measured: test_dtypes_tensorflow.py)."""
    for d in FLOAT_DTYPES:
        tiny = np.array(np.finfo(np.float32).smallest_subnormal if d == "float32" else
                        np.finfo(np.float64).smallest_subnormal if d == "float64" else
                        2.0**-24 if d == "float16" else 2.0**-133).astype(DTYPES[d])
        assert tiny != 0
        t = Tensor(tiny, d)
        zero = Tensor(np.zeros((), DTYPES[d]), d)
        (r,) = fns.get("Add.ftz").apply([t, zero])
        assert (r.array != 0) == (d == "float16"), d


def _prog(dtype, out_nodes, feeds=("x", "y")):
    return program_from_json({"format": "tfsem.program/1", "variables": [],
                              "feeds": {f: {"dtype": dtype, "shape": [2]} for f in feeds},
                              "nodes": out_nodes, "outputs": {"out": "r"}})


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "float16", "bfloat16", "float64"])
def test_check_proves_commuted_add_and_refutes_min_for_max(dtype):
    p = _prog(dtype, [{"name": "r", "op": "Add", "inputs": ["$x", "$y"]}])
    q = _prog(dtype, [{"name": "r", "op": "Add", "inputs": ["$y", "$x"]}])
    assert check_rewrite(p, q).verdict == "sound"
    mx = _prog(dtype, [{"name": "r", "op": "Max", "inputs": ["$x", "$y"]}])
    mn = _prog(dtype, [{"name": "r", "op": "Min", "inputs": ["$x", "$y"]}])
    v = check_rewrite(mx, mn)
    assert v.verdict == "unsound"
    cex = v.to_json()["counterexample"]
    assert all(isinstance(val, dict) and val["dtype"] == dtype for val in cex["feeds"].values())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_check_finds_the_signed_zero_of_adding_zero(dtype):
    """x + 0 is not x: -0.0 + 0.0 is +0.0 in every float dtype."""
    zero = {"dtype": dtype, "value": [0.0, 0.0]}
    p = _prog(dtype, [{"name": "c", "op": "Const", "value": zero},
                      {"name": "r", "op": "Add", "inputs": ["$x", "c"]}], feeds=("x",))
    q = _prog(dtype, [{"name": "r", "op": "Identity", "inputs": ["$x"]}], feeds=("x",))
    v = check_rewrite(p, q)
    assert v.verdict == "unsound"
    xs = v.to_json()["counterexample"]["feeds"]["x"]["value"]
    assert -0.0 in xs and any(np.signbit(x) for x in xs if x == 0)


def test_unsigned_max_compares_unsigned():
    """Max(x, 0) is x on uint8 (every value is >= 0) but not on int8."""
    def prog(dtype, nodes):
        return _prog(dtype, nodes, feeds=("x",))
    for dtype, verdict in (("uint8", "sound"), ("int8", "unsound")):
        zero = {"dtype": dtype, "value": [0, 0]}
        p = prog(dtype, [{"name": "c", "op": "Const", "value": zero},
                         {"name": "r", "op": "Max", "inputs": ["$x", "c"]}])
        q = prog(dtype, [{"name": "r", "op": "Identity", "inputs": ["$x"]}])
        assert check_rewrite(p, q).verdict == verdict, dtype


def test_bool_values_are_compared_exactly():
    p = _prog("bool", [{"name": "r", "op": "Identity", "inputs": ["$x"]}])
    q = _prog("bool", [{"name": "r", "op": "Identity", "inputs": ["$y"]}])
    assert check_rewrite(p, p).verdict == "sound"
    v = check_rewrite(p, q)
    assert v.verdict == "unsound"
    feeds = v.to_json()["counterexample"]["feeds"]
    assert feeds["x"]["dtype"] == "bool" and feeds["x"]["value"] != feeds["y"]["value"]


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "uint64", "float16",
                                   "bfloat16", "float64"])
def test_generated_programs_of_every_dtype_run_on_numpy_within_the_oracle(dtype):
    """The generators make programs and σ of the dtype (σ with its edge
    values); the numpy backend's random runs give outcomes of the oracle's
    set; a program is a sound rewrite of itself."""
    from tfsem.backends.execute import run_random
    from tfsem.generators.strategies import random_inputs, random_programs
    from tfsem.oracle.dispatch import outcome_set
    drawn = []
    for i, p in enumerate(random_programs(6, seed=11, max_nodes=7, dtype=dtype)):
        assert {t.dtype for t in p.feeds.values()} | {t.dtype for t in p.variables.values()} \
            <= {dtype, "int64", "float32"}
        feeds, init = random_inputs(p, seed=i, edge_p=0.5)
        drawn += [v for v in (*feeds.values(), *init.values()) if isinstance(v, Tensor)]
        oracle = outcome_set(p, feeds, init)
        seen = run_random(p, feeds, init, 5, seed=i)
        assert all(o in oracle for o in seen.counts), p
        assert check_rewrite(p, p, timeout=10).verdict == "sound"
    values = np.concatenate([t.array.reshape(-1).astype(np.float64) for t in drawn
                             if t.dtype == dtype])
    assert values.size
    if dtype in FLOAT_DTYPES:
        assert np.isnan(values).any() or np.isinf(values).any() or np.signbit(values).any()


def test_generate_writes_programs_of_any_dtype(tmp_path, capsys):
    from tfsem.cli import main
    from tfsem.oracle.jsonio import load_program
    assert main(["generate", "--count", "2", "--seed", "1", "--out", str(tmp_path / "a"),
                 "--dtype", "bfloat16"]) == 0
    p = load_program(tmp_path / "a" / "prog_0000.json")
    assert {t.dtype for t in p.variables.values()} == {"bfloat16"}
    assert main(["generate", "--shape", "grappler", "--count", "2", "--seed", "1",
                 "--out", str(tmp_path / "b"), "--dtype", "int8"]) == 2
    assert "--shape grappler makes int64, int32, float32 programs" in capsys.readouterr().err


def _mutants(p):
    """p with one element-wise function node changed into another."""
    import dataclasses
    swap = {"Add": "Sub", "Sub": "Add", "Mul": "Add", "Max": "Min", "Min": "Max"}
    for k, n in enumerate(p.nodes):
        if n.op in swap:
            nodes = list(p.nodes)
            nodes[k] = n.replace(op=swap[n.op])
            yield dataclasses.replace(p, nodes=tuple(nodes))


def _mutant_count() -> int:
    from hypothesis import settings
    return 12 if settings.get_current_profile_name() == "nightly" else 2


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "bool"])
def test_verdicts_on_mutants_agree_with_the_oracle_on_every_dtype(dtype):
    """For generated programs of the dtype and mutants of them (one Add
    turned Sub, Max turned Min, ...), a `sound` verdict holds at every σ
    tried (edge-heavy, every variable initialized or not) and an `unsound`
    verdict's counterexample is an outcome the original cannot give."""
    from tfsem.generators.strategies import random_inputs, random_programs
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule
    seen = set()
    judged = 0
    for p in random_programs(_mutant_count() * 3, seed=40, max_nodes=7, dtype=dtype,
                             ops={"Add", "Sub", "Mul", "Max", "Min", "Neg", "Const", "Var",
                                  "Read", "Write", "AssignAdd"}):
        for q in list(_mutants(p))[:1]:
            v = check_rewrite(p, q, timeout=10)
            seen.add(v.verdict)
            judged += 1
            if v.verdict == "sound":
                for i in range(12):
                    feeds, init = random_inputs(p, seed=i, edge_p=0.6)
                    allowed = outcome_set(p, feeds, init)
                    assert all(o in allowed for o in outcome_set(q, feeds, init)), (dtype, i)
            elif v.verdict == "unsound":
                cex = v.to_json()["counterexample"]
                feeds = {k: value_from_json(x, dtype=q.feed_type(k).dtype)
                         for k, x in cex["feeds"].items()}
                init = {k: value_from_json(x, dtype=q.variables[k].dtype)
                        for k, x in cex["init"].items()}
                state = run_schedule(q, feeds, init, cex["schedule"], v.to_json()["semantics"])
                outcome = outcome_of(q, graph_of(q), state, v.to_json()["observe"])
                assert outcome not in outcome_set(p, feeds, init, v.to_json()["semantics"],
                                                  v.to_json()["observe"])
        if judged >= _mutant_count():
            break
    assert judged == _mutant_count() and "invalid" not in seen
