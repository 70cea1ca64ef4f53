"""Review attacks on TensorFlow 1's stacks (oracle/opdefs/stacks.py): rewrites
that make a stack op fail where only a target, or nothing, waits for it.

TensorFlow fails the whole step when a stack op fails: session.run returns
no fetch, only the error.  tfsem used to send the failure only along the
failed op's out edges, so a failure nothing fetched waited for left no
trace, and a rewrite that made every step fail compared equal to the
original (`no-counterexample`).  Each attack below got that verdict before
the fix (the first failure of a run is now the error of every fetch:
oracle/stack_state.py STEP_FAILED).  TensorFlow's side of each is in
tests/test_stacks_tensorflow.py.  No TensorFlow here (about 1 s)."""

from __future__ import annotations

import pytest

from tfsem.checking.check import check_rewrite
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Error, Tensor


def _program(nodes, outputs, max_size=1, stacks=("s",)):
    base = [{"name": "ms", "op": "Const", "value": {"dtype": "int32", "value": max_size}}]
    base += [{"name": s, "op": "StackV2", "inputs": ["ms"], "elem_type": "int64",
              "stack_name": s} for s in stacks]
    return program_from_json({"variables": ["x"], "nodes": base + nodes, "outputs": outputs})


def push(name, inputs):
    return {"name": name, "op": "StackPushV2", "inputs": inputs, "elem_type": "int64"}


def pop(name, inputs):
    return {"name": name, "op": "StackPopV2", "inputs": inputs, "elem_type": "int64"}


def close(name, inputs):
    return {"name": name, "op": "StackCloseV2", "inputs": inputs}


OUT = {"name": "o", "op": "Identity", "inputs": ["$a"]}
DONE = {"name": "done", "op": "NoOp", "inputs": ["^b"]}   # a target: waits, shows nothing

ATTACKS = {
    # a pop whose value nobody reads removed (DCE of a "pure" pop): the next
    # push overflows max_size 1, and only a target waits for it
    "pop-removed": (
        _program([push("a", ["s", "$a"]), pop("q", ["s", "^a"]), push("b", ["s", "$b", "^q"]),
                  OUT, DONE], {"o": "o"}),
        _program([push("a", ["s", "$a"]), push("b", ["s", "$b", "^a"]), OUT, DONE],
                 {"o": "o"})),
    # a close moved before the push it followed: the push fails (closed)
    "close-before-push": (
        _program([push("b", ["s", "$a"]), close("c", ["s", "^b"]), OUT, DONE], {"o": "o"},
                 max_size=-1),
        _program([close("c", ["s"]), push("b", ["s", "$a", "^c"]), OUT, DONE], {"o": "o"},
                 max_size=-1)),
    # two StackV2 of max_size 1 merged into one: the second push overflows
    "stacks-merged": (
        _program([push("a", ["s", "$a"]), push("b", ["t", "$b", "^a"]), OUT, DONE], {"o": "o"},
                 stacks=("s", "t")),
        _program([push("a", ["s", "$a"]), push("b", ["s", "$b", "^a"]), OUT, DONE], {"o": "o"},
                 stacks=("s", "t"))),
    # a push and the pop after it swapped: the pop finds the stack empty
    "push-pop-swapped": (
        _program([push("a", ["s", "$a"]), pop("b", ["s", "^a"]), OUT, DONE], {"o": "o"},
                 max_size=-1),
        _program([pop("b", ["s"]), push("a", ["s", "$a", "^b"]), OUT, DONE], {"o": "o"},
                 max_size=-1)),
    # a pop's elem_type changed: the pop of an int64 as float32 fails
    "pop-elem-type": (
        _program([push("a", ["s", "$a"]), pop("b", ["s", "^a"]), OUT, DONE], {"o": "o"},
                 max_size=-1),
        _program([push("a", ["s", "$a"]), {**pop("b", ["s", "^a"]), "elem_type": "float32"},
                  OUT, DONE], {"o": "o"}, max_size=-1)),
    # Grappler's stack-push removal of an overflowing push that only a
    # target waits for: the original fails every step, the rewrite none
    "failing-push-removed": (
        _program([push("b", ["s", "$a"]), OUT, DONE], {"o": "o"}, max_size=0),
        _program([{"name": "b", "op": "Identity", "inputs": ["$a", "^s"]}, OUT, DONE],
                 {"o": "o"}, max_size=0)),
}


@pytest.mark.parametrize("mode", ["atomic", "decomposed"])
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_failure_only_a_target_waits_for_is_seen(attack, mode):
    original, rewritten = ATTACKS[attack]
    v = check_rewrite(original, rewritten, semantics=mode, timeout=20)
    assert v.verdict == "unsound", v
    assert v.differs == "output 'o'" or "'o'" in str(v.differs), v.differs


def test_every_fetch_of_a_failed_run_is_the_first_failure():
    """A run with a failed stack op: every fetch is that op's error, the
    fetches that do not wait for it too (TensorFlow returns none of them);
    two unordered failures: either one's error, as TensorFlow's executor
    reports whichever fails first."""
    p = _program([push("b", ["s", "$a"]), OUT, close("c", ["t"]), pop("q", ["t", "^c"])],
                 {"o": "o", "b": "b"}, max_size=0, stacks=("s", "t"))
    got = {o.outputs for o, _ in outcome_set(p, {"a": Tensor(5, "int64")}, {}).items()}
    assert got == {(("b", Error(e)), ("o", Error(e))) for e in ("stack-overflow", "stack-closed")}
    # and a run without a failure is unchanged
    ok = _program([push("b", ["s", "$a"]), OUT], {"o": "o", "b": "b"}, max_size=1)
    assert {o.outputs for o, _ in outcome_set(ok, {"a": Tensor(5, "int64")}, {}).items()} == {
        (("b", Tensor(5, "int64")), ("o", Tensor(5, "int64")))}


def test_a_rewrite_that_keeps_the_failure_is_not_called_unsound():
    """Both programs fail the step alike: no difference (the push that
    overflows kept, an independent Identity renamed)."""
    original = _program([push("b", ["s", "$a"]), OUT, DONE], {"o": "o"}, max_size=0)
    rewritten = _program([push("b", ["s", "$a"]), {"name": "o2", "op": "Identity",
                                                    "inputs": ["$a"]}, DONE], {"o": "o2"},
                         max_size=0)
    assert check_rewrite(original, rewritten, timeout=20).verdict == "no-counterexample"


def test_an_error_a_stack_op_is_given_is_no_failure_of_its_own():
    """A push of a Read of an uninitialized variable: the Read's error, kept
    as a value as tfsem keeps every failing op's (fetches that do not wait
    for it keep their values); not the stack's failure of the step.  Else
    Grappler's removal of that push (an Identity of the Read) would be
    `unsound` where TensorFlow fails both steps alike at the Read."""
    vx = {"name": "vx", "op": "Var", "var": "x"}
    rx = {"name": "rx", "op": "Read", "inputs": ["vx"]}
    p = _program([vx, rx, push("b", ["s", "rx"]), OUT], {"o": "o", "b": "b"}, max_size=-1)
    got = {o.outputs for o, _ in outcome_set(p, {"a": Tensor(5, "int64")}, {}).items()}
    assert got == {(("b", Error("uninitialized")), ("o", Tensor(5, "int64")))}


def test_which_failure_comes_first_survives_the_partial_order_reduction():
    """A StackV2 that fails (a max_size that is no scalar) and a pop of an
    empty stack, unordered: TensorFlow reports whichever fails first, so
    both errors are outcomes (the reduction fired a StackV2 first always)."""
    p = program_from_json({"nodes": [
        {"name": "ms", "op": "Const", "value": {"dtype": "int32", "value": -1}},
        {"name": "bad", "op": "Const", "value": {"dtype": "int32", "value": [1, 2]}},
        {"name": "s", "op": "StackV2", "inputs": ["ms"], "elem_type": "int64", "stack_name": "s"},
        {"name": "t", "op": "StackV2", "inputs": ["bad"], "elem_type": "int64",
         "stack_name": "t"},
        pop("q", ["s"]), OUT], "outputs": {"o": "o"}})
    for mode in ("atomic", "decomposed"):
        got = {o.outputs for o, _ in outcome_set(p, {"a": Tensor(5, "int64")}, {}, mode).items()}
        assert got == {(("o", Error(e)),) for e in ("stack-empty", "stack-max-size")}, mode


def _session(runs, order="concurrent"):
    from tfsem.oracle.session import session_from_json
    prog = {"format": "tfsem.program/1", "variables": [],
            "feeds": {"a": {"dtype": "int64", "shape": []}, "m": {"dtype": "int32", "shape": []}},
            "nodes": [{"name": "s", "op": "StackV2", "inputs": ["$m"], "elem_type": "int64",
                       "stack_name": "s"}, push("p", ["s", "$a"]), OUT,
                      {"name": "done", "op": "NoOp", "inputs": ["^p"]}],
            "outputs": {"o": "o"}}
    return session_from_json({"format": "tfsem.session/1", "program": prog, "order": order,
                              "runs": [{"name": f"r{k}", "fetch": ["o"], "targets": ["done"],
                                        "feeds": {"a": k, "m": {"dtype": "int32", "value": m}}}
                                       for k, m in runs]})


@pytest.mark.parametrize("order", ["concurrent", "sequential"])
def test_a_session_of_several_runs_with_a_stack_is_refused_by_name(order):
    """Run r1's push overflows (max_size 0), r2's does not: TensorFlow fails
    r1's step and returns r2's fetch.  The expansion is one program, where
    r1's failure would be r2's fetch too (and, sequential, r2 waited for
    r1's dead sinks and its fetch was the overflow): refused by name.  One
    run is the program itself."""
    from tfsem.oracle.session import SessionError
    with pytest.raises(SessionError, match=r"stack op 's' \(StackV2\).*\[unmodelled\]"):
        _session([(1, 0), (2, 1)], order).expand()
    one = _session([(1, 0)], order).expand()
    got = {o.outputs for o, _ in outcome_set(one, {}, {}).items()}
    assert got == {(("r1/o", Error("stack-overflow")),)}


def loop_program(stack_inside: bool) -> "object":
    """i = 0; while i < 2: push i onto a stack of max_size 1; fetch i.  With
    `stack_inside` the StackV2 is in the loop body (a new stack each
    iteration, as TensorFlow makes one per execution); else before the loop
    (one stack: the second push overflows)."""
    nodes = [
        {"name": "ms", "op": "Const", "value": {"dtype": "int32", "value": 1}},
        {"name": "i0", "op": "Const", "value": 0},
        {"name": "enter", "op": "Enter", "frame_name": "L", "inputs": ["i0"]},
        {"name": "lim", "op": "Const", "value": 2},
        {"name": "lim_e", "op": "Enter", "frame_name": "L", "is_constant": True, "inputs": ["lim"]},
        {"name": "merge", "op": "Merge", "inputs": ["enter", "next"]},
        {"name": "less", "op": "Less", "inputs": ["merge", "lim_e"]},
        {"name": "cond", "op": "LoopCond", "inputs": ["less"]},
        {"name": "sw", "op": "Switch", "inputs": ["merge", "cond"]},
        {"name": "body", "op": "Identity", "inputs": ["sw:1"]},
        push("push", ["hs", "body"]),
        {"name": "one", "op": "Const", "value": 1, "inputs": ["^body"]},
        {"name": "add", "op": "Add", "inputs": ["body", "one", "^push"]},
        {"name": "next", "op": "NextIteration", "inputs": ["add"]},
        {"name": "exit", "op": "Exit", "inputs": ["sw"]}]
    if stack_inside:
        nodes += [{"name": "ms_e", "op": "Enter", "frame_name": "L", "is_constant": True,
                   "inputs": ["ms"]},
                  {"name": "hs", "op": "StackV2", "inputs": ["ms_e", "^body"],
                   "elem_type": "int64", "stack_name": "s"}]
    else:
        nodes += [{"name": "s", "op": "StackV2", "inputs": ["ms"], "elem_type": "int64",
                   "stack_name": "s"},
                  {"name": "hs", "op": "Enter", "frame_name": "L", "is_constant": True,
                   "inputs": ["s"]}]
    return program_from_json({"nodes": nodes, "outputs": {"n": "exit"}})


def test_a_stack_made_in_a_loop_is_one_per_iteration_and_hoisting_it_is_unsound():
    inside, hoisted = loop_program(True), loop_program(False)
    assert {o.outputs for o, _ in outcome_set(inside, {}, {}).items()} == {
        (("n", Tensor(2, "int64")),)}
    assert {o.outputs for o, _ in outcome_set(hoisted, {}, {}).items()} == {
        (("n", Error("stack-overflow")),)}
    assert check_rewrite(inside, hoisted, timeout=20).verdict == "unsound"


def _one_trip_loop(pre: str, frame: str, stack: str) -> list:
    """A loop of one trip in `frame` whose body makes the StackV2 `stack`
    (max_size 1, the Const `ms`) and pushes onto it once; `pre`/exit fetched."""
    return [
        {"name": pre + "i0", "op": "Const", "value": 0},
        {"name": pre + "enter", "op": "Enter", "frame_name": frame, "inputs": [pre + "i0"]},
        {"name": pre + "lim", "op": "Const", "value": 1},
        {"name": pre + "lim_e", "op": "Enter", "frame_name": frame, "is_constant": True,
         "inputs": [pre + "lim"]},
        {"name": pre + "merge", "op": "Merge", "inputs": [pre + "enter", pre + "next"]},
        {"name": pre + "less", "op": "Less", "inputs": [pre + "merge", pre + "lim_e"]},
        {"name": pre + "cond", "op": "LoopCond", "inputs": [pre + "less"]},
        {"name": pre + "sw", "op": "Switch", "inputs": [pre + "merge", pre + "cond"]},
        {"name": pre + "body", "op": "Identity", "inputs": [pre + "sw:1"]},
        {"name": pre + "ms_e", "op": "Enter", "frame_name": frame, "is_constant": True,
         "inputs": ["ms"]},
        {"name": stack, "op": "StackV2", "inputs": [pre + "ms_e", "^" + pre + "body"],
         "elem_type": "int64", "stack_name": "s"},
        push(pre + "push", [stack, pre + "body"]),
        {"name": pre + "one", "op": "Const", "value": 1, "inputs": ["^" + pre + "body"]},
        {"name": pre + "add", "op": "Add", "inputs": [pre + "body", pre + "one", "^" + pre + "push"]},
        {"name": pre + "next", "op": "NextIteration", "inputs": [pre + "add"]},
        {"name": pre + "exit", "op": "Exit", "inputs": [pre + "sw"]}]


def test_two_stack_nodes_never_share_a_stack_whatever_their_names():
    """StackV2 `a` in frame `bL` and StackV2 `ab` in frame `L`, each pushed
    once (max_size 1): two stacks.  Their run-state keys were the node's
    name and the context's text run together, `abL:0` for both, so they made
    one stack and the second push overflowed."""
    p = program_from_json({
        "nodes": [{"name": "ms", "op": "Const", "value": {"dtype": "int32", "value": 1}}]
        + _one_trip_loop("p/", "bL", "a") + _one_trip_loop("q/", "L", "ab"),
        "outputs": {"p": "p/exit", "q": "q/exit"}})
    for mode in ("atomic", "decomposed"):
        got = {o.outputs for o, _ in outcome_set(p, {}, {}, mode).items()}
        assert got == {(("p", Tensor(1, "int64")), ("q", Tensor(1, "int64")))}, mode
