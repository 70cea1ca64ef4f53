"""TensorFlow 1's stacks in tfsem (oracle/opdefs/stacks.py): the control-flow
engine's step rules, their place in outcomes (step-local: never in σ nor in
the final state), the checker (never a proof), import, export and the JSON
format.  No TensorFlow needed: tests/test_stacks_tensorflow.py compares the
rules with TensorFlow's kernels."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tfsem.checking.check import check_rewrite
from tfsem.graphdef import import_path
from tfsem.graphdef.exporter import export_graph
from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json, program_to_json
from tfsem.oracle.values import Error, Tensor

STACKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                      "tensorflow", "stacks")


def _program(steps, max_size=-1, outputs=None, extra=()):
    """A stack s (int64, max_size), then `steps`: (name, op, inputs)."""
    nodes = [{"name": "ms", "op": "Const", "value": {"dtype": "int32", "value": max_size}},
             {"name": "s", "op": "StackV2", "inputs": ["ms"], "elem_type": "int64",
              "stack_name": "s"}]
    for name, op, inputs in steps:
        node = {"name": name, "op": op, "inputs": inputs}
        if op in ("StackPushV2", "StackPopV2"):
            node["elem_type"] = "int64"
        nodes.append(node)
    nodes.extend(extra)
    outs = outputs if outputs is not None else {
        n: n for n, op, _ in steps if op != "StackCloseV2"}
    return program_from_json({"variables": ["x"], "nodes": nodes, "outputs": outs})


def _outcomes(p, feeds=None, init=None, semantics="atomic"):
    feeds = {k: Tensor(v, "int64") for k, v in (feeds or {}).items()}
    init = {k: Tensor(v, "int64") for k, v in (init or {}).items()}
    return {o for o, _ in outcome_set(p, feeds, init, semantics=semantics).items()}


def _outs(outcomes):
    return {tuple((k, v) for k, v in o.outputs) for o in outcomes}


I = lambda v: Tensor(v, "int64")  # noqa: E731


def test_pops_are_last_in_first_out_and_the_stack_is_not_state():
    p = _program([("a", "StackPushV2", ["s", "$a"]), ("b", "StackPushV2", ["s", "$b", "^a"]),
                  ("q1", "StackPopV2", ["s", "^b"]), ("q2", "StackPopV2", ["s", "^q1"])])
    for mode in ("atomic", "decomposed"):
        got = _outcomes(p, {"a": 1, "b": 2}, {"x": 0}, mode)
        assert _outs(got) == {(("a", I(1)), ("b", I(2)), ("q1", I(2)), ("q2", I(1)))}
        assert {o.state for o in got} == {(("x", I(0)),)}   # the stack is step-local


@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
def test_unordered_pushes_land_in_either_order_each_atomically(mode):
    p = _program([("a", "StackPushV2", ["s", "$a"]), ("b", "StackPushV2", ["s", "$b"]),
                  ("q1", "StackPopV2", ["s", "^a", "^b"]), ("q2", "StackPopV2", ["s", "^q1"])],
                 outputs={"q1": "q1", "q2": "q2"})
    # two orders, and never a lost push (a push is one step in both modes)
    assert _outs(_outcomes(p, {"a": 1, "b": 2}, semantics=mode)) == {
        (("q1", I(2)), ("q2", I(1))), (("q1", I(1)), ("q2", I(2)))}


def test_a_failed_op_fails_what_waits_for_it():
    vx = {"name": "vx", "op": "Var", "var": "x"}
    # max_size 1: the second push overflows; the write waits for it by a
    # control edge and the pop by its data: neither runs (TensorFlow fails
    # the step), and a fetch after the failure is its error
    p = _program([("a", "StackPushV2", ["s", "$a"]), ("b", "StackPushV2", ["s", "$b", "^a"]),
                  ("q", "StackPopV2", ["s", "^b"]), ("w", "Write", ["vx", "q"])],
                 max_size=1, outputs={"b": "b", "q": "q"}, extra=[vx])
    got = _outcomes(p, {"a": 1, "b": 2}, {"x": 0})
    assert {(dict(o.outputs)["b"], dict(o.outputs)["q"], dict(o.state)["x"]) for o in got} == {
        (Error("stack-overflow"), Error("stack-overflow"), I(0))}


@pytest.mark.parametrize("steps,max_size,err", [
    ([("q", "StackPopV2", ["s"])], -1, "stack-empty"),
    ([("a", "StackPushV2", ["s", "$a"])], 0, "stack-overflow"),
    ([("c", "StackCloseV2", ["s"]), ("a", "StackPushV2", ["s", "$a", "^c"])], 3, "stack-closed"),
    ([("a", "StackPushV2", ["s", "$a"]), ("c", "StackCloseV2", ["s", "^a"]),
      ("q", "StackPopV2", ["s", "^c"])], 3, "stack-closed"),
], ids=["empty", "max-size-0", "push-closed", "pop-closed"])
def test_each_failure_is_its_error_value(steps, max_size, err):
    p = _program(steps, max_size=max_size, outputs={"last": steps[-1][0]})
    assert _outs(_outcomes(p, {"a": 1})) == {(("last", Error(err)),)}


def test_a_push_of_another_dtype_fails():
    p = program_from_json({"nodes": [
        {"name": "ms", "op": "Const", "value": {"dtype": "int32", "value": -1}},
        {"name": "s", "op": "StackV2", "inputs": ["ms"], "elem_type": "float32", "stack_name": ""},
        {"name": "a", "op": "StackPushV2", "inputs": ["s", "$a"], "elem_type": "int64"}],
        "outputs": {"a": "a"}})
    assert _outs(_outcomes(p, {"a": 1})) == {(("a", Error("stack-dtype")),)}


def test_a_program_with_a_stack_is_never_proved():
    steps = [("a", "StackPushV2", ["s", "$a"]), ("b", "StackPushV2", ["s", "$b", "^a"]),
             ("q", "StackPopV2", ["s", "^b"])]
    p = _program(steps, outputs={"q": "q"})
    v = check_rewrite(p, program_from_json(program_to_json(p)), timeout=20)
    assert v.verdict == "sound" and "is the original" in v.reason
    # the pushes swapped: the pop sees a where it saw b
    swapped = _program([("a", "StackPushV2", ["s", "$a", "^b"]), ("b", "StackPushV2", ["s", "$b"]),
                        ("q", "StackPopV2", ["s", "^a"])], outputs={"q": "q"})
    assert check_rewrite(p, swapped, timeout=20).verdict == "unsound"
    # a push nobody pops removed (Grappler's rewrite, by hand): never `sound`
    kept = _program([("a", "StackPushV2", ["s", "$a"])], outputs={"a": "a"})
    removed = program_from_json({"variables": ["x"], "nodes": [
        {"name": "ms", "op": "Const", "value": {"dtype": "int32", "value": -1}},
        {"name": "s", "op": "StackV2", "inputs": ["ms"], "elem_type": "int64", "stack_name": "s"},
        {"name": "a", "op": "Identity", "inputs": ["$a", "^s"]}], "outputs": {"a": "a"}})
    v = check_rewrite(kept, removed, timeout=20)
    assert v.verdict == "no-counterexample" and "never proved" in v.reason
    # ... and with max_size 0 the push always fails: removing it is unsound
    full = _program([("a", "StackPushV2", ["s", "$a"])], max_size=0, outputs={"a": "a"})
    assert check_rewrite(full, removed, timeout=20).verdict == "unsound"


def test_json_round_trip_and_export_import_keep_the_outcomes():
    p = _program([("a", "StackPushV2", ["s", "$a"]), ("b", "StackPushV2", ["s", "$b", "^a"]),
                  ("q", "StackPopV2", ["s", "^b"]), ("c", "StackCloseV2", ["s", "^q"])],
                 max_size=2, outputs={"out_b": "b", "out_q": "q"})
    again = program_from_json(program_to_json(p))
    assert again == p
    gd = export_graph(p)
    ops = sorted(n["op"] for n in gd["node"] if n["op"].startswith("Stack"))
    assert ops == ["StackCloseV2", "StackPopV2", "StackPushV2", "StackPushV2", "StackV2"]
    close = next(n["name"] for n in gd["node"] if n["op"] == "StackCloseV2")
    back = import_graph(gd, list(p.outputs), [close]).program
    # (x, used by no node, is not exported: compare the outputs)
    assert _outs(_outcomes(back, {"a": 1, "b": 2})) == _outs(_outcomes(p, {"a": 1, "b": 2})) \
        == {(("out_b", I(2)), ("out_q", I(2)))}


def test_the_ref_forms_are_refused_by_name():
    gd = {"node": [{"name": "s", "op": "Stack", "attr": {"elem_type": {"type": "DT_INT64"}}}]}
    with pytest.raises(GraphImportError, match=r"\[ref-stack\]"):
        import_graph(gd, ["s"], [])


def test_a_while_loop_gradient_pops_what_its_loop_pushed():
    """tf.gradients of a v1 while_loop (y = x**n): each forward iteration
    pushes y, the backward loop pops them in reverse.  TensorFlow 2.21 gives
    y = 8, dy/dx = 12 at x = 2, n = 3 (tests/test_stacks_tensorflow.py runs it)."""
    imp = import_path(os.path.join(STACKS, "tf1_while_grad_stack.pbtxt"), ["y", "gx"], [])
    sigma = {"x": Tensor(np.float32(2.0)), "n": Tensor(np.int32(3))}
    got = {o for o, _ in outcome_set(imp.program, sigma, {}).items()}
    assert {tuple(o.outputs) for o in got} == {
        (("gx", Tensor(np.float32(12.0))), ("y", Tensor(np.float32(8.0))))}


def test_a_handle_goes_only_to_the_stack_ops_and_the_primitives():
    from tfsem.oracle.program import ProgramError
    with pytest.raises(ProgramError) as exc:
        program_from_json({"nodes": [
            {"name": "ms", "op": "Const", "value": {"dtype": "int32", "value": 1}},
            {"name": "s", "op": "StackV2", "inputs": ["ms"], "elem_type": "int64",
             "stack_name": "s"},
            {"name": "i", "op": "Identity", "inputs": ["s"]},
            {"name": "q", "op": "StackPopV2", "inputs": ["$a"], "elem_type": "int64"}],
            "outputs": {"h": "s", "q": "q"}})
    text = str(exc.value)
    assert "node 'i' input 0 (s): s is a stack's handle" in text
    assert "node 'q' input 0 ($a): StackPopV2 input 0 must be a stack's handle" in text
    assert "output 'h': s is a stack's handle" in text


def test_the_stack_generator_makes_pushes_pops_and_overflows():
    """stack_cases (generators/control_flow.py) reaches what Grappler's
    stack-push removal acts on: stacks with pushes and no pop, with pops,
    and pushes that overflow."""
    from hypothesis import HealthCheck, given, settings

    from tfsem.generators.control_flow import stack_cases
    from tfsem.oracle.budget import BudgetExceeded
    seen: set[str] = set()

    @settings(max_examples=40, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(stack_cases(16))
    def run(case):
        p, feeds, init = case
        ops = {n.op for n in p.nodes}
        if "StackPushV2" in ops:
            seen.add("pop" if "StackPopV2" in ops else "no-pop")
            if int(p.node["st/max_size"].attrs["value"].array) == 0:
                seen.add("overflow")     # every push overflows
        try:
            for o, _ in outcome_set(p, feeds, init, max_seconds=2).items():
                if any(isinstance(v, Error) and v.reason.startswith("stack-")
                       for _, v in o.outputs):
                    seen.add("failure fetched")
        except BudgetExceeded:
            pass

    run()
    assert seen == {"pop", "no-pop", "overflow", "failure fetched"}


def test_licm_leaves_a_stack_op_in_its_loop():
    """A pop in a loop whose only input is the loop-constant handle looks
    loop-invariant, but it is a step on the stack: licm must not hoist it."""
    from tfsem.rewrites.licm import licm
    raw = program_to_json(_program([], max_size=-1, outputs={}))
    raw["nodes"] += [
        {"name": "i0", "op": "Const", "value": 0},
        {"name": "enter", "op": "Enter", "frame_name": "L", "inputs": ["i0"]},
        {"name": "lim", "op": "Const", "value": 2},
        {"name": "lim_e", "op": "Enter", "frame_name": "L", "is_constant": True, "inputs": ["lim"]},
        {"name": "hs", "op": "Enter", "frame_name": "L", "is_constant": True, "inputs": ["s"]},
        {"name": "merge", "op": "Merge", "inputs": ["enter", "next"]},
        {"name": "less", "op": "Less", "inputs": ["merge", "lim_e"]},
        {"name": "cond", "op": "LoopCond", "inputs": ["less"]},
        {"name": "sw", "op": "Switch", "inputs": ["merge", "cond"]},
        {"name": "body", "op": "Identity", "inputs": ["sw:1"]},
        {"name": "push", "op": "StackPushV2", "inputs": ["hs", "body"], "elem_type": "int64"},
        {"name": "pop", "op": "StackPopV2", "inputs": ["hs"], "elem_type": "int64"},
        {"name": "one", "op": "Const", "value": 1, "inputs": ["^body"]},
        {"name": "add", "op": "Add", "inputs": ["body", "one", "^push", "^pop"]},
        {"name": "next", "op": "NextIteration", "inputs": ["add"]},
        {"name": "exit", "op": "Exit", "inputs": ["sw"]}]
    raw["outputs"] = {"n": "exit"}
    p = program_from_json(raw)
    assert licm(p) == p


def _brute(threads, max_size):
    """Every interleaving of the threads' stack ops on one stack (an
    independent model: a list, a limit, nothing of the engine): each op's
    output, and a thread's ops after a failed one get its error and do
    nothing (they wait for it by a control edge); and a run in which an op
    failed failed TensorFlow's step: every fetch is the first failure's error."""
    limit = max_size if max_size >= 0 else 2**31 - 1
    out = set()

    def go(pos, stack, results, failed, first=None):
        if all(p == len(t) for p, t in zip(pos, threads)):
            out.add(tuple(sorted(((k, first or v) for k, v in results.items()),
                                 key=lambda kv: kv[0])))
            return
        for k, t in enumerate(threads):
            if pos[k] == len(t):
                continue
            name, op, v = t[pos[k]]
            nxt, res, st, fl = pos[:k] + (pos[k] + 1,) + pos[k + 1:], dict(results), list(stack), \
                dict(failed)
            if k in fl:
                res[name] = fl[k]
            elif op == "push" and len(st) >= limit:
                res[name] = fl[k] = Error("stack-overflow")
            elif op == "push":
                st.append(v)
                res[name] = I(v)
            elif not st:
                res[name] = fl[k] = Error("stack-empty")
            else:
                res[name] = I(st.pop())
            go(nxt, st, res, fl, first or (res[name] if isinstance(res[name], Error) else None))

    go(tuple(0 for _ in threads), [], {}, {})
    return out


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
def test_the_engine_is_a_brute_force_of_the_interleavings(seed, mode):
    import random
    rng = random.Random(seed)
    threads = []
    for k in range(rng.choice((2, 2, 3))):
        threads.append([(f"t{k}o{j}", rng.choice(("push", "pop")), rng.randint(1, 9))
                        for j in range(rng.randint(1, 3))])
    max_size = rng.choice((-1, 0, 1, 2))
    steps = []
    for t in threads:
        prev = None
        for name, op, v in t:
            if op == "push":
                steps.append((f"{name}k", "Const", []))
            ins = ["s"] + ([f"{name}k"] if op == "push" else []) + ([f"^{prev}"] if prev else [])
            steps.append((name, "StackPushV2" if op == "push" else "StackPopV2", ins))
            prev = name
    raw = program_to_json(_program([], max_size=max_size, outputs={}))
    for name, op, ins in steps:
        node = {"name": name, "op": op, "inputs": ins}
        if op == "Const":
            node["value"] = next(v for n, _, v in (x for t in threads for x in t)
                                 if f"{n}k" == name)
        else:
            node["elem_type"] = "int64"
        raw["nodes"].append(node)
    raw["outputs"] = {name: name for t in threads for name, _, _ in t}
    p = program_from_json(raw)
    assert _outs(_outcomes(p, semantics=mode)) == _brute(threads, max_size)
