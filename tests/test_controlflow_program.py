"""The program model's control-flow nodes (SPEC section 9): arity, edge kinds,
attributes, frames, and the rule that a cycle runs only through a
NextIteration into a Merge."""

import copy
import json
from pathlib import Path

import pytest

from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.program import ProgramError, VARIABLE

CASES = Path(__file__).parent / "cases" / "controlflow"


def load(name: str) -> dict:
    return json.loads((CASES / name).read_text())


def rules(raw: dict) -> list[tuple[str, str]]:
    with pytest.raises(ProgramError) as info:
        program_from_json(raw)
    return [(v.where, v.rule) for v in info.value.violations]


def nodes_replaced(raw: dict, name: str, node: dict | None) -> dict:
    raw = copy.deepcopy(raw)
    raw["nodes"] = [(node if n["name"] == name else n) for n in raw["nodes"]]
    raw["nodes"] = [n for n in raw["nodes"] if n is not None]
    return raw


def test_a_loop_validates_and_frames_are_inferred():
    p = program_from_json(load("counted_loop.json"))
    assert p.has_control_flow
    assert p.frames["merge"] == ("L",) and p.frames["add"] == ("L",)
    assert p.frames["enter"] == () and p.frames["i0"] == ()
    # the loop's back edge is not an ordering constraint
    order = p.topological_order
    assert order.index("merge") < order.index("next")
    # the JSON form round-trips, Enter's attributes included
    again = program_from_json(program_to_json(p))
    assert again == p and again.node["venter"].attrs["is_constant"] is True


def test_switch_forwards_a_variable_edge():
    p = program_from_json(load("cond_assign.json"))
    assert p.port_kind("sw", 1) == VARIABLE and p.port_kind("m", 1) == "tensor"


def test_a_cycle_not_through_next_iteration_is_named():
    raw = nodes_replaced(load("counted_loop.json"), "next",
                         {"name": "next", "op": "Identity", "inputs": ["add"]})
    [(where, rule)] = rules(raw)
    assert rule == "cycle" and where.startswith("node ")
    with pytest.raises(ProgramError, match="only through a NextIteration into a Merge"):
        program_from_json(raw)


def test_next_iteration_feeds_only_merge():
    raw = load("counted_loop.json")
    raw["nodes"].append({"name": "extra", "op": "Identity", "inputs": ["next"]})
    assert ("node 'next'", "next-iteration") in rules(raw)


def test_fetch_inside_a_loop_and_exit_outside_one_are_refused():
    raw = load("counted_loop.json")
    raw["outputs"] = {"out": "add"}
    assert ("output 'out'", "frame") in rules(raw)
    raw = load("cond_assign.json")
    raw["nodes"].append({"name": "bad_exit", "op": "Exit", "inputs": ["m"]})
    assert ("node 'bad_exit'", "frame") in rules(raw)


def test_inputs_from_two_frames_are_refused():
    raw = load("counted_loop.json")
    # the loop body reads the root-frame constant i0 without an Enter
    raw = nodes_replaced(raw, "add", {"name": "add", "op": "Add", "inputs": ["body", "i0", "^inc"]})
    assert ("node 'add'", "frame") in rules(raw)


def test_control_flow_arity_and_attributes():
    raw = nodes_replaced(load("cond_assign.json"), "sv",
                         {"name": "sv", "op": "Switch", "inputs": ["v"]})
    assert ("node 'sv'", "arity") in rules(raw)
    raw = nodes_replaced(load("counted_loop.json"), "enter",
                         {"name": "enter", "op": "Enter", "inputs": ["i0"]})
    assert ("node 'enter'", "missing-attribute") in rules(raw)
    raw = nodes_replaced(load("counted_loop.json"), "enter",
                         {"name": "enter", "op": "Enter", "frame_name": "L",
                          "parallel_iterations": 0, "inputs": ["i0"]})
    assert ("node 'enter'", "bad-value") in rules(raw)
    raw = nodes_replaced(load("cond_assign.json"), "m",
                         {"name": "m", "op": "Merge", "inputs": ["r", "sw:0"]})
    assert ("node 'm'", "edge-kind") in rules(raw)
