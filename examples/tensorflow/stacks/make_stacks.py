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

    python examples/tensorflow/stacks/make_stacks.py

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


def main() -> int:
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
