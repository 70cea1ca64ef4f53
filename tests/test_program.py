"""The program model, validation messages, and the JSON formats."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tfsem.generators import families as F
from tfsem.oracle import functions as fns
from tfsem.oracle import program as P
from tfsem.oracle.jsonio import (case_from_json, case_to_json, decode_inputs, make_case,
                                 program_from_json, program_to_json)
from tfsem.oracle.program import ProgramError, validate
from tfsem.oracle.values import Error, Tensor, value_from_json, value_to_json


def rules(data):
    with pytest.raises(ProgramError) as info:
        program_from_json(data)
    return {(v.where, v.rule) for v in info.value.violations}


def prog(nodes, outputs=None, variables=("x",)):
    return {"format": "tfsem.program/1", "variables": list(variables), "nodes": nodes,
            "outputs": outputs or {}}


# -- validation: each rule of section 3.1.1 reported with the node ------------------


def test_read_needs_a_variable_edge():
    got = rules(prog([{"name": "c", "op": "Const", "value": 1},
                      {"name": "r", "op": "Read", "inputs": ["c"]}]))
    assert ("node 'r' input 0 (c)", "edge-kind") in got


def test_function_input_must_be_a_tensor_edge():
    got = rules(prog([{"name": "v", "op": "Var", "var": "x"},
                      {"name": "n", "op": "Neg", "inputs": ["v"]}]))
    assert ("node 'n' input 0 (v)", "edge-kind") in got


def test_arity_of_functions_read_and_assign():
    got = rules(prog([{"name": "v", "op": "Var", "var": "x"},
                      {"name": "a", "op": "Add", "inputs": ["$p"]},
                      {"name": "r", "op": "Read", "inputs": []},
                      {"name": "w", "op": "Write", "inputs": ["v"]}]))
    assert {("node 'a'", "arity"), ("node 'r'", "arity"), ("node 'w'", "arity")} <= got


def test_assign_needs_a_binary_function():
    got = rules(prog([{"name": "v", "op": "Var", "var": "x"},
                      {"name": "a", "op": "Assign", "fn": "Neg", "inputs": ["v", "$p"]}]))
    assert ("node 'a'", "arity") in got


def test_unknown_names():
    got = rules(prog([{"name": "v", "op": "Var", "var": "nope"},
                      {"name": "f", "op": "Frobnicate", "inputs": ["$p"]},
                      {"name": "n", "op": "Neg", "inputs": ["ghost"]}],
                     outputs={"o": "missing"}))
    assert {("node 'v'", "unknown-variable"), ("node 'f'", "unknown-op"),
            ("node 'n' input ghost", "unknown-node"), ("output 'o'", "unknown-node")} <= got


def test_cycle_is_named():
    with pytest.raises(ProgramError) as info:
        program_from_json(prog([{"name": "a", "op": "Neg", "inputs": ["b"]},
                                {"name": "b", "op": "Neg", "inputs": ["a"]}]))
    (v,) = info.value.violations
    assert v.rule == "cycle" and "a" in v.message and "b" in v.message


def test_duplicate_names_bad_ports_and_variable_outputs():
    got = rules(prog([{"name": "v", "op": "Var", "var": "x"},
                      {"name": "v", "op": "Var", "var": "x"},
                      {"name": "n", "op": "Neg", "inputs": ["$a:0"]},
                      {"name": "m", "op": "Neg", "inputs": ["n:1"]}],
                     outputs={"h": "v"}))
    assert ("node 'v'", "duplicate-name") in got


def test_bad_port_and_variable_output():
    got = rules(prog([{"name": "v", "op": "Var", "var": "x"},
                      {"name": "n", "op": "Neg", "inputs": ["$a"]},
                      {"name": "m", "op": "Neg", "inputs": ["n:1"]}],
                     outputs={"h": "v"}))
    assert ("node 'm' input n:1", "bad-port") in got
    assert ("output 'h'", "edge-kind") in got


def test_malformed_json_structures():
    assert ("program", "format") in rules([1, 2])
    assert ("program.nodes", "format") in rules({"nodes": 5})
    assert ("node 'c'", "bad-value") in rules(prog([{"name": "c", "op": "Const", "value": "x"}]))
    assert ("node 'c'", "missing-attribute") in rules(prog([{"name": "c", "op": "Const"}]))
    assert ("node 'n'", "unknown-field") in rules(prog([{"name": "n", "op": "Neg", "inputs": ["$a"],
                                                         "colour": "red"}]))
    assert ("program.variables.x", "bad-type") in rules(
        {"variables": {"x": {"dtype": "complex128"}}, "nodes": []})


def test_strict_mode_enforces_one_consumer_per_port():
    p, _, _ = F.lost_update(1)
    fanout = P.program([P.apply("a", "Neg", "$x"), P.apply("b", "Neg", "a"),
                        P.apply("c", "Neg", "a")], {"o": "b", "o2": "c"})
    assert validate(fanout) == []
    strict = {v.rule for v in validate(fanout, strict=True)}
    assert strict == {"one-consumer"}
    shared = P.program([P.apply("a", "Neg", "$x"), P.apply("cp", "Copy", "a"),
                        P.apply("b", "Neg", "cp:0"), P.apply("c", "Neg", "cp:1")],
                       {"o": "b", "o2": "c"})
    assert validate(shared, strict=True) == []


# -- programs are immutable values ------------------------------------------------


def test_programs_are_immutable():
    p, _, _ = F.first_example()
    with pytest.raises((TypeError, AttributeError)):
        p.nodes[0].attrs["var"] = "y"
    with pytest.raises((TypeError, AttributeError)):
        p.outputs["new"] = p.outputs["out"]
    with pytest.raises(AttributeError):
        p.nodes = ()
    # (the name -> node map too: the memos keyed by a program object assume
    # its nodes never change)
    first = p.nodes[0]
    for change in (lambda m: m.__setitem__(first.name, p.nodes[-1]),
                   lambda m: m.pop(first.name), lambda m: m.update({}), lambda m: m.clear(),
                   lambda m: m.__delitem__(first.name), lambda m: m.setdefault("new", first)):
        with pytest.raises(TypeError):
            change(p.node)
    assert p.node[first.name] is first


# -- JSON round trips ---------------------------------------------------------------


@pytest.mark.parametrize("family", ["first_example", "racy_pairs", "figure1", "load_store", "lost_update"])
def test_program_json_round_trip(family):
    fn = F.FAMILIES.get(family) or getattr(F, family)
    p = (fn(2) if family in ("racy_pairs", "figure1", "lost_update") else fn())[0]
    text = json.dumps(program_to_json(p))
    again = program_from_json(json.loads(text))
    assert again == p
    assert program_to_json(again) == program_to_json(p)


def test_spec_example_loads_and_aliases_normalise():
    data = {"format": "tfsem.program/1", "variables": ["x"],
            "nodes": [{"name": "vx", "op": "Var", "var": "x"},
                      {"name": "w", "op": "AssignAdd", "inputs": ["^$go", "vx", "$B"]},
                      {"name": "vx2", "op": "Var", "var": "x"},
                      {"name": "r", "op": "Read", "inputs": ["vx2", "^w"]}],
            "outputs": {"out": "r:0"}}
    p = program_from_json(data)
    assert p.node["w"].op == "Assign" and p.node["w"].fn == "Add"
    assert [str(i) for i in p.node["w"].inputs] == ["vx", "$B", "^$go"]
    out = program_to_json(p)
    assert out["nodes"][1] == {"name": "w", "op": "Assign", "fn": "Add", "inputs": ["vx", "$B", "^$go"]}
    assert out["outputs"] == {"out": "r"}
    assert program_from_json(out) == p


def test_float_values_round_trip_with_nan_inf_and_signed_zero():
    raw = {"dtype": "float32", "value": [1.5, "nan", "-inf", -0.0]}
    v = value_from_json(raw)
    assert v.dtype == "float32"
    back = value_to_json(v)
    assert back == {"dtype": "float32", "value": [1.5, "nan", "-inf", -0.0]}
    json.dumps(back, allow_nan=False)      # strict JSON
    assert value_from_json(back) == v
    assert value_from_json({"dtype": "float32", "value": [0.0]}) != value_from_json(
        {"dtype": "float32", "value": [-0.0]})


def test_value_equality_nan_equals_nan_bitwise_otherwise():
    a = Tensor(np.array([np.nan, 1.0], dtype=np.float32))
    b = Tensor(np.array([-np.nan, 1.0], dtype=np.float32))
    assert a == b and hash(a) == hash(b)
    assert Tensor(1) != Tensor(1.0, "float32")
    assert Tensor([1, 2]) != Tensor([[1, 2]])
    assert Error("uninitialized") == value_from_json({"error": "uninitialized"})


def test_plain_number_for_float32_declaration_is_float32():
    p = program_from_json({"feeds": {"a": {"dtype": "float32", "shape": []}},
                           "nodes": [{"name": "n", "op": "Neg", "inputs": ["$a"]}],
                           "outputs": {"o": "n"}})
    feeds, init = decode_inputs(p, {"a": 2}, {})
    assert feeds["a"] == Tensor(2.0, "float32")


@pytest.mark.parametrize("bad", [True, "3", {"dtype": "int8", "value": 1}, [[1], [2, 3]], 2 ** 70,
                                 {"dtype": "float32", "value": "seven"}, {"error": 3}])
def test_bad_values_are_rejected(bad):
    p, _, _ = F.first_example()
    with pytest.raises(ProgramError) as info:
        decode_inputs(p, {"B": bad}, {})
    assert info.value.violations[0].where == "feed 'B'"


def test_a_value_of_another_shape_than_declared_is_rejected_naming_it():
    p = program_from_json({"variables": {"x": {"dtype": "int64", "shape": [2]}},
                           "feeds": {"a": {"dtype": "float32", "shape": [2, 1]}},
                           "nodes": [{"name": "v", "op": "Var", "var": "x"},
                                     {"name": "r", "op": "Read", "inputs": ["v"]},
                                     {"name": "n", "op": "Neg", "inputs": ["$a"]}],
                           "outputs": {"o": "n", "r": "r"}})
    feeds, init = decode_inputs(p, {"a": [[1.0], [2.0]]}, {"x": [3, 4]})
    assert feeds["a"].array.shape == (2, 1) and init["x"].array.shape == (2,)
    with pytest.raises(ProgramError) as info:
        decode_inputs(p, {"a": [1.0, 2.0]}, {"x": 5})
    found = {(v.where, v.rule) for v in info.value.violations}
    assert found == {("feed 'a'", "bad-shape"), ("variable 'x'", "bad-shape")}
    assert "shape [2] but the program declares [2, 1]" in str(info.value)
    # an error value has no shape; an undeclared (default-typed) feed takes any shape
    assert decode_inputs(p, {"a": [[0.0], [0.0]]}, {"x": {"error": "uninitialized"}})[1]["x"] \
        == Error("uninitialized")
    q, _, _ = F.first_example()
    assert decode_inputs(q, {"B": [1, 2, 3]}, {})[0]["B"].array.shape == (3,)


def test_case_round_trip_and_invalid_rewrite_kept_as_json():
    p, _, _ = F.first_example(True)
    q, _, _ = F.first_example(False)
    c = make_case(p, q, semantics="decomposed", observe="outputs", expect="unsound", note="why")
    again = case_from_json(json.loads(json.dumps(case_to_json(c))))
    assert again.original == p and again.rewritten() == q
    assert (again.semantics, again.observe, again.expect, again.note) == ("decomposed", "outputs", "unsound", "why")
    broken = dict(case_to_json(c), rewritten={"nodes": [{"name": "n", "op": "Nope"}]})
    kept = case_from_json(broken)
    with pytest.raises(ProgramError):
        kept.rewritten()


# -- the function registry ----------------------------------------------------------


def test_registry_has_the_required_functions_and_arity():
    want = {"Identity": (1, 1), "Copy": (1, 2), "Add": (2, 1), "Sub": (2, 1), "Mul": (2, 1),
            "Neg": (1, 1), "Max": (2, 1), "Min": (2, 1), "Concat": (2, 1), "Split": (1, 2),
            "Const": (0, 1), "Snd": (2, 1)}
    reg = fns.registered()
    for name, arity in want.items():
        assert (reg[name].n_in, reg[name].n_out) == arity
    assert {"Snd", "Add", "Sub", "Mul", "Max", "Min", "Concat"} <= set(fns.assign_functions())


def test_errors_propagate_except_through_snds_first_argument():
    err = Error("uninitialized")
    assert fns.get("Add").apply((err, Tensor(1))) == (err,)
    assert fns.get("Snd").apply((err, Tensor(1))) == (Tensor(1),)
    assert fns.get("Copy").apply((err,)) == (err, err)
    assert fns.get("Concat").apply((Tensor([[1]]), Tensor([1]))) == (Error("shape-mismatch"),)
    assert fns.get("Split").apply((Tensor([1, 2, 3]),)) == (Error("shape-mismatch"),) * 2
    assert fns.get("Max").apply((Tensor(1), Tensor(1.0, "float32"))) == (Error("dtype-mismatch"),)


def test_user_registered_function_runs_in_the_oracle(monkeypatch):
    from tfsem.oracle.dispatch import outcome_set
    name = "TestDouble"
    # registered for this test only: generators draw from the registry
    monkeypatch.setattr(fns, "_REGISTRY", dict(fns._REGISTRY))
    fns.register(fns.Function(name, 1, 1, lambda xp, args, attrs: (xp.add(args[0], args[0]),)))
    p = P.program([P.apply("d", name, "$a")], {"o": "d"})
    (o,) = outcome_set(p, {"a": Tensor(21)}, {})
    assert dict(o.outputs)["o"] == Tensor(42)
    with pytest.raises(ValueError):
        fns.register(fns.Function("Read", 1, 1, lambda xp, a, k: a))
