"""The program generators: valid by construction, covering the language,
racy on purpose, deterministic for a seed, shrinking to the nodes that matter;
and `tfsem generate`."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from tfsem.cli import main
from tfsem.generators import families
from tfsem.generators.builder import all_op_kinds, generatable_functions, op_kind
from tfsem.generators.stats import dead_nodes, features, summarize
from tfsem.generators.strategies import (has_lost_update, has_race, inputs_for, programs,
                                         race_count, random_inputs, random_programs)
from tfsem.oracle import program as P
from tfsem.oracle.jsonio import dumps, load_program, program_to_json
from tfsem.oracle.program import ControlIn, FeedIn, Program, validate
from tfsem.oracle.values import Tensor, value_to_json


def _examples(n: int) -> int:
    """n examples by default, 20 times more under the `nightly` profile."""
    return n * 20 if settings.get_current_profile_name() == "nightly" else n


def _collect(strategy, n: int) -> list:
    """n values of a strategy, the same ones on every run (derandomized)."""
    out = []

    @settings(max_examples=n, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value):
        out.append(value)

    collect()
    return out


# ---------------------------------------------------------------------------
# Valid by construction, within the parameters


PARAMS = st.fixed_dictionaries({}, optional={
    "max_nodes": st.integers(1, 16),
    "n_variables": st.none() | st.integers(0, 4),
    "ops": st.none() | st.lists(st.sampled_from(all_op_kinds() + ["Assign"]), min_size=1,
                                unique=True),
    "dtype": st.sampled_from(["int64", "float32"]),
    "control_density": st.sampled_from([0.0, 0.3, 1.0]),
    "observe_state": st.booleans(),
})


@settings(max_examples=_examples(150), suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), PARAMS)
def test_generated_programs_are_valid_and_respect_the_parameters(data, params):
    ops = params.get("ops")
    if params.get("n_variables") == 0 and ops is not None \
            and not set(ops) & set(generatable_functions()):
        with pytest.raises(ValueError, match="no node to build"):
            programs(**params)
        return
    p = data.draw(programs(**params))
    assert validate(p) == []
    assert 1 <= len(p.nodes) <= params.get("max_nodes", 12)
    if params.get("n_variables") is not None:
        assert len(p.variables) == params["n_variables"]
    if params.get("ops") is not None:
        allowed = set(params["ops"]) | {"Var"}
        for n in p.nodes:
            kind = op_kind(n)
            assert kind in allowed or (kind.startswith("Assign") and "Assign" in allowed), kind
    dtype = params.get("dtype", "int64")
    assert all(t.dtype == dtype for t in p.variables.values())
    for n in p.nodes:
        if n.op == "Const":
            assert n.attrs["value"].dtype == dtype
    if params.get("control_density") == 0.0:
        assert not any(isinstance(i, ControlIn) for n in p.nodes for i in n.inputs)
    if params.get("observe_state") is False and any(n.n_outputs() and n.op != "Var"
                                                   for n in p.nodes):
        assert p.outputs, "outputs-only programs fetch something"
    # every feed used is declared, with its type
    used = {i.name for n in p.nodes for i in n.inputs if isinstance(i, FeedIn)}
    assert used == set(p.feeds)


def test_min_nodes_is_respected():
    for p in random_programs(50, seed=3, max_nodes=8, min_nodes=8):
        assert len(p.nodes) == 8
    for p in _collect(programs(max_nodes=6, min_nodes=5), 30):
        assert 5 <= len(p.nodes) <= 6


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="max_nodes"):
        programs(max_nodes=0)
    with pytest.raises(ValueError, match="dtype"):
        programs(dtype="complex64")
    with pytest.raises(ValueError, match="unknown operation"):
        programs(ops=["Add", "Frobnicate"])
    with pytest.raises(ValueError, match="min_nodes"):
        programs(max_nodes=3, min_nodes=4)


# ---------------------------------------------------------------------------
# Coverage of the language


def test_seeded_programs_cover_every_operation_kind_and_feature():
    ps = random_programs(400, seed=0, max_nodes=12)
    kinds = Counter(op_kind(n) for p in ps for n in p.nodes)
    missing = [k for k in all_op_kinds() if not kinds[k]]
    assert not missing, f"never generated: {missing}"
    shown = summarize(ps).features
    for feature in ("control edges", "input control edges", "feeds", "outputs", "fan-out",
                    "several variables", "dead nodes", "1-D tensors", "mixed dtypes", "race"):
        assert shown[feature], f"no program with {feature}"
    # function nodes of every arity, and every arity of results
    arities = {(len(n.data_inputs), n.n_outputs()) for p in ps for n in p.nodes
               if n.kind == "function"}
    assert {(0, 1), (1, 1), (1, 2), (2, 1)} <= arities
    # Const carries its value; some 1-D even lengths reach Split
    consts = [n for p in ps for n in p.nodes if n.op == "Const"]
    assert consts and all(isinstance(n.attrs["value"], Tensor) for n in consts)


def test_hypothesis_programs_cover_every_operation_kind():
    ps = _collect(programs(max_nodes=12), 300)
    kinds = Counter(op_kind(n) for p in ps for n in p.nodes)
    missing = [k for k in all_op_kinds() if not kinds[k]]
    assert not missing, f"never generated: {missing}"


def test_swarm_switches_features_off_per_program():
    ps = random_programs(300, seed=5, max_nodes=12)
    with_vars = [p for p in ps if any(n.op == "Var" for n in p.nodes)]
    # some programs with several accesses use no control edge at all, others do
    ctrl = [any(isinstance(i, ControlIn) for n in p.nodes for i in n.inputs) for p in with_vars
            if len(p.nodes) >= 8]
    assert any(ctrl) and not all(ctrl)
    # some large programs never use a given function although it is allowed
    big = [p for p in ps if len(p.nodes) >= 10]
    assert any(all(n.op != "Const" for n in p.nodes) for p in big)


def test_float32_programs():
    ps = random_programs(100, seed=2, max_nodes=10, dtype="float32")
    assert all(t.dtype == "float32" for p in ps for t in p.variables.values())
    assert any(t.dtype == "float32" for p in ps for t in p.feeds.values())


# ---------------------------------------------------------------------------
# Races


def test_has_race_on_the_seeds_examples():
    assert not has_race(families.first_example(control_edge=True)[0])
    assert has_race(families.first_example(control_edge=False)[0])
    assert has_race(families.racy_pairs(2)[0])
    assert race_count(families.racy_pairs(3)[0]) == 3
    assert has_race(families.assign_adds(2)[0])          # two unordered Assigns
    assert not has_race(families.chain(4)[0])            # no variable at all
    assert race_count(families.writes_reads()[0]) == 2    # X: wx and r1; Y: wy and r0


def test_reads_alone_do_not_race_and_paths_order_accesses():
    two_reads = P.program([P.var("v", "x"), P.read("r1", "v"), P.read("r2", "v")], {}, ["x"])
    assert not has_race(two_reads)
    other_vars = P.program([P.var("v", "x"), P.write("w", "v", "$a"),
                            P.var("u", "y"), P.read("r", "u")], {}, ["x", "y"])
    assert not has_race(other_vars)
    # Write -> Neg (data) -> ^ -> Read: ordered through a path of two edges
    ordered = P.program([P.var("v", "x"), P.write("w", "v", "$a"), P.apply("c", "Neg", "$a", "^w"),
                         P.var("u", "x", "^c"), P.read("r", "u")], {}, ["x"])
    assert not has_race(ordered)
    # the same with the Read depending on nothing
    unordered = P.program([P.var("v", "x"), P.write("w", "v", "$a"), P.apply("c", "Neg", "$a", "^w"),
                           P.var("u", "x"), P.read("r", "u")], {}, ["x"])
    assert has_race(unordered)


def test_lost_update_detection():
    assert has_lost_update(families.lost_update(2)[0])
    assert not has_lost_update(families.increments(2, atomic=True)[0])   # AssignAdds only
    assert not has_lost_update(families.lost_update(1)[0])              # no intruder


def test_at_least_40_percent_of_programs_are_racy_by_default():
    seeded = random_programs(200, seed=1)
    assert sum(map(has_race, seeded)) / len(seeded) >= 0.4
    drawn = _collect(programs(), 300)
    assert sum(map(has_race, drawn)) / len(drawn) >= 0.4


# ---------------------------------------------------------------------------
# Inputs


@settings(max_examples=_examples(100))
@given(st.data(), st.sampled_from(["int64", "float32"]))
def test_inputs_match_the_declared_types(data, dtype):
    p = data.draw(programs(max_nodes=10, dtype=dtype))
    feeds, init = data.draw(inputs_for(p))
    assert set(feeds) == set(p.feed_names)
    for name, v in feeds.items():
        t = p.feed_type(name)
        assert isinstance(v, Tensor) and v.dtype == t.dtype and v.shape == t.shape
    assert set(init) <= set(p.variables)
    for x, v in init.items():
        t = p.variables[x]
        assert isinstance(v, Tensor) and v.dtype == t.dtype and v.shape == t.shape


def test_inputs_include_edge_values_and_uninitialized_variables():
    x = Program({"x": P.TensorType("int64", (2,))}, (), {}, {"a": P.TensorType("int64", (4,))})
    f = Program({"x": P.TensorType("float32", (2,))}, (), {}, {"a": P.TensorType("float32", (4,))})
    int_cases = _collect(inputs_for(x), 200)
    float_cases = _collect(inputs_for(f), 200)
    ints = {int(e) for feeds, init in int_cases for v in [*feeds.values(), *init.values()]
            for e in v.array.ravel()}
    assert {0, -1, 2 ** 63 - 1, -2 ** 63} <= ints
    floats = [float(e) for feeds, init in float_cases for v in [*feeds.values(), *init.values()]
              for e in v.array.ravel()]
    assert any(math.isnan(e) for e in floats)
    assert math.inf in floats and -math.inf in floats
    assert any(e == 0 and math.copysign(1, e) < 0 for e in floats), "-0.0"
    assert any("x" not in init for _, init in int_cases), "uninitialized variables"
    assert any("x" in init for _, init in int_cases)


def test_random_inputs_are_deterministic():
    p = random_programs(1, seed=4, max_nodes=12, min_nodes=12)[0]
    assert random_inputs(p, 9) == random_inputs(p, 9)


# ---------------------------------------------------------------------------
# Determinism


def _text(p: Program) -> str:
    return dumps(program_to_json(p))


def test_random_programs_are_deterministic_and_prefix_stable():
    a = [_text(p) for p in random_programs(30, seed=7, max_nodes=12)]
    b = [_text(p) for p in random_programs(30, seed=7, max_nodes=12)]
    assert a == b
    assert [_text(p) for p in random_programs(10, seed=7, max_nodes=12)] == a[:10]
    assert [_text(p) for p in random_programs(30, seed=8, max_nodes=12)] != a


# ---------------------------------------------------------------------------
# Shrinking: a failure shrinks to the nodes that matter


def _shrunk(condition, seed: int, max_nodes: int = 12) -> Program:
    return find(programs(max_nodes=max_nodes), condition,
                settings=settings(database=None, max_examples=500, deadline=None,
                                  suppress_health_check=list(HealthCheck)),
                random=__import__("random").Random(seed))


def test_a_race_shrinks_to_a_few_nodes():
    p = _shrunk(has_race, seed=1)
    # at best: Var, Write and Read (or a second Write) sharing the Var
    assert len(p.nodes) <= 4, _text(p)


@pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                    reason="shrinking a lost update takes ~10 s; nightly profile only "
                           "(benchmarks/generators.py measures it too)")
def test_a_lost_update_shrinks_to_a_handful_of_nodes():
    p = _shrunk(has_lost_update, seed=2)
    # at best: Var, Read, Write of the read value, intruding Write (Var shared)
    assert len(p.nodes) <= 5, _text(p)


# ---------------------------------------------------------------------------
# tfsem generate


def test_generate_writes_valid_racy_programs_byte_identical_per_seed(tmp_path, capsys):
    assert main(["generate", "--count", "200", "--seed", "1", "--out", str(tmp_path / "a")]) == 0
    text = capsys.readouterr().out
    assert "200 programs" in text and "racy" in text
    assert main(["generate", "--count", "200", "--seed", "1", "--out", str(tmp_path / "b")]) == 0
    files = sorted((tmp_path / "a").iterdir())
    assert len(files) == 200
    for f in files:
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes()
    programs_ = [load_program(f) for f in files]
    assert sum(map(has_race, programs_)) >= 80


def test_generated_files_run_through_tfsem_outcomes(tmp_path, capsys):
    assert main(["generate", "--count", "12", "--seed", "3", "--out", str(tmp_path),
                 "--max-nodes", "8", "--dtype", "float32"]) == 0
    capsys.readouterr()
    for f in sorted(tmp_path.iterdir()):
        p = load_program(f)
        assert len(p.nodes) <= 8
        args = ["outcomes", str(f), "--json"]
        for name in p.feed_names:
            t = p.feed_type(name)
            zero = Tensor(np.zeros(t.shape, dtype=t.dtype))
            args += ["--feed", f"{name}={json.dumps(value_to_json(zero))}"]
        assert main(args) == 0, f.name
        assert json.loads(capsys.readouterr().out)["count"] >= 1


def test_generate_json_summary_and_bad_out(tmp_path, capsys):
    assert main(["generate", "--count", "5", "--seed", "0", "--out", str(tmp_path / "d"),
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["summary"]["count"] == 5 and len(summary["files"]) == 5
    (tmp_path / "file").write_text("x")
    assert main(["generate", "--count", "1", "--seed", "0", "--out", str(tmp_path / "file")]) == 2


# ---------------------------------------------------------------------------
# Statistics helpers


def test_dead_nodes_and_features():
    p, _, _ = families.first_example(control_edge=True)
    assert dead_nodes(p) == []
    q = P.program([P.apply("c", "Const", value=Tensor(1)), P.apply("n", "Neg", "$a")],
                  {"o": "n"})
    assert dead_nodes(q) == ["c"]
    assert "race" not in features(q) and "dead nodes" in features(q)
