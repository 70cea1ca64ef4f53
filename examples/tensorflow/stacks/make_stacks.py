"""TensorFlow 1 stacks in real graphs: a `tf.compat.v1.while_loop` (control
flow v1) and its gradient, which hands each forward iteration's value to
the backward loop through a `StackV2` (push in the forward loop, pop in the
backward loop).  Writes, beside this script:

* `tf1_while_grad_stack.pbtxt`: y = x**n by a loop of n trips (x a float32
  feed, n an int32 feed) and its gradient gx = dy/dx: one StackV2, one
  StackPushV2 in the forward loop, one StackPopV2 in the backward loop;
  fetch `y` and `gx`.
* `tf1_while_grad_stack_pruned.pbtxt`: the same graph cut to what `y` and
  the push need (the gradient pruned away, as when only the forward pass is
  kept): pushes onto a stack nobody pops, which Grappler's loop optimizer
  turns into Identity nodes ("stack-push removal"); fetch `y`, target the
  push.

and, with `--cases`, the triaged findings of Grappler's stack-push removal
as `tfsem.case/1` cases in tests/cases/tensorflow/ (Grappler's own output
imported as the rewritten program):

* `grappler_loop_push_overflow_removed.json`: a push of the feed `a` onto a
  stack of max_size 0 (it always overflows), fetched; nobody pops, so the
  loop optimizer makes it an Identity;
* `grappler_loop_push_after_close_removed.json`: a push after the stack's
  close, and a write `x := 1` that waits for the push; Grappler makes the
  push an Identity, and the write then runs.

    python examples/tensorflow/stacks/make_stacks.py [--cases]

(TensorFlow 2.21, docs/grappler-control-flow.md.)
"""

from __future__ import annotations

import os

import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
PUSH = "gradients/while/mul_grad/Mul_1/StackPushV2"


def build() -> tf.Graph:
    v1 = tf.compat.v1
    g = tf.Graph()
    v1.disable_control_flow_v2()
    try:
        with g.as_default():
            x = v1.placeholder(tf.float32, [], name="x")
            n = v1.placeholder(tf.int32, [], name="n")

            def body(i, y):
                return i + 1, y * x

            _, y = v1.while_loop(lambda i, y: i < n, body, [tf.constant(0), tf.constant(1.0)],
                                 parallel_iterations=1)
            gx, = tf.gradients(y, [x])
            tf.identity(y, name="y")
            tf.identity(gx, name="gx")
    finally:
        v1.enable_control_flow_v2()
    return g


CASES = os.path.join(HERE, "..", "..", "..", "tests", "cases", "tensorflow")


def _overflow() -> tf.Graph:
    g = tf.Graph()
    with g.as_default():
        a = tf.compat.v1.placeholder(tf.int64, [], name="a")
        s = tf.raw_ops.StackV2(max_size=tf.constant(0), elem_type=tf.int64, name="s")
        tf.identity(tf.raw_ops.StackPushV2(handle=s, elem=a, name="push"), name="out")
    return g


def _after_close() -> tf.Graph:
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        a = v1.placeholder(tf.int64, [], name="a")
        x = v1.get_variable("x", [], tf.int64, initializer=v1.zeros_initializer(),
                            use_resource=True)
        s = tf.raw_ops.StackV2(max_size=tf.constant(-1), elem_type=tf.int64, name="s")
        close = tf.raw_ops.StackCloseV2(handle=s, name="close")
        with tf.control_dependencies([close]):
            push = tf.raw_ops.StackPushV2(handle=s, elem=a, name="push")
        with tf.control_dependencies([push]):
            x.assign(tf.constant(1, tf.int64), read_value=False, name="write")
        tf.identity(a, name="out")
    return g


_NOTES = {
    "grappler_loop_push_overflow_removed": (
        "Grappler's loop optimizer (stack-push removal, TensorFlow {v}) on a push of the feed a "
        "onto a StackV2 of max_size 0, fetched (out): nobody pops, so the push becomes "
        "Identity(a, ^s). The push always overflows: the original's out is the error "
        "stack-overflow, Grappler's is a. TensorFlow confirms it: the original fails the step "
        "(InvalidArgument: Stack[s_0] overflowed its max_size (0)), Grappler's output returns a "
        "(tests/test_stacks_tensorflow.py). A failing step made one that succeeds: Grappler "
        "does not keep a stack op's failure, not a miscompile of a step that succeeds."),
    "grappler_loop_push_after_close_removed": (
        "Grappler's loop optimizer (stack-push removal, TensorFlow {v}) on a push after the "
        "stack's StackCloseV2, with a write x := 1 that waits for the push: nobody pops, so "
        "the push becomes an Identity and the write runs. In the original the push fails "
        "(stack closed) and nothing waiting for it runs, so x keeps its value. TensorFlow "
        "confirms it: the original fails the step (InvalidArgument: Stack[s_0] has already "
        "been closed) and leaves x, Grappler's output writes x = 1 "
        "(examples/tensorflow/stacks/triage.py runs a campaign's findings the same way). "
        "A failing step made one that succeeds, as above."),
}


def cases() -> None:
    import json

    from tfsem.graphdef import grappler as gr
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode
    from tfsem.oracle.jsonio import program_to_json

    for name, g, fetches, targets in (
            ("grappler_loop_push_overflow_removed", _overflow(), ["out"], []),
            ("grappler_loop_push_after_close_removed", _after_close(), ["out"], ["write"])):
        gd = g.as_graph_def()
        out = gr.run_grappler(gd.SerializeToString(), fetches + targets, "loop").graph_def
        assert {n.name: n.op for n in out.node}["push"] == "Identity"
        before = import_graph(decode("GraphDef", gd.SerializeToString()), fetches, targets)
        after = import_graph(decode("GraphDef", out.SerializeToString()), fetches, targets)
        case = {"format": "tfsem.case/1", "original": program_to_json(before.program),
                "rewritten": program_to_json(after.program), "semantics": "atomic",
                "observe": "outputs+state", "expect": "unsound",
                "note": _NOTES[name].format(v=tf.__version__)}
        with open(os.path.join(CASES, f"{name}.json"), "w") as f:
            json.dump(case, f, indent=1)
            f.write("\n")


def main() -> int:
    import sys
    if "--cases" in sys.argv[1:]:
        cases()
    gd = build().as_graph_def()
    assert any(nd.name == PUSH for nd in gd.node), "the gradient's push has another name"
    with open(os.path.join(HERE, "tf1_while_grad_stack.pbtxt"), "w") as f:
        f.write(str(gd))
    pruned = tf.compat.v1.graph_util.extract_sub_graph(gd, ["y", PUSH])
    with open(os.path.join(HERE, "tf1_while_grad_stack_pruned.pbtxt"), "w") as f:
        f.write(str(pruned))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
