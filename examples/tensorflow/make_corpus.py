"""Regenerate the corpus of real TensorFlow graphs in this directory.

Run with a Python that has TensorFlow (tensorflow-cpu 2.21 was used):

    python examples/tensorflow/make_corpus.py [--out examples/tensorflow]

Every graph is built by TensorFlow itself in graph mode (``tf.Graph``), so that
its variables are real resource variables (``VarHandleOp`` with a
``shared_name``), and written as a text GraphDef with ``tf.io.write_graph``.
Graphs that come from a ``tf.function`` keep the function body in the graph's
``library`` and call it with ``StatefulPartitionedCall``; the variable handles
are passed to the call as ``DT_RESOURCE`` arguments.

The variables' initializers (``<var>/Assign`` and the ops that compute the
initial value) are in the graph too, as TensorFlow writes them, but no fetch
depends on them: a verifier that prunes the graph to the fetches (and targets)
sees the variables start from an arbitrary state σ.

``manifest.json`` beside the graphs lists, per file, the tensors to fetch, the
operations to run for their effect (``targets``: nodes without outputs that a
``Session.run`` would name as targets), the feeds, the variables (by
``shared_name``) and whether the graph is small enough to enumerate with
``tfsem outcomes``.

Random seeds are fixed, and the graphs are built in a fixed order in one
process, so the generated names (``__inference_train_step_NNN``) are the same
from run to run of the same TensorFlow version.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

ENTRIES: list[dict] = []


def _write(graph: tf.Graph, out: str, name: str, *, description: str,
           fetches: list[str], targets: list[str] = (), feeds: dict | None = None,
           small: bool, paper: str | None = None) -> None:
    gd = graph.as_graph_def()
    tf.io.write_graph(gd, out, name, as_text=True)
    variables = sorted(
        n.attr["shared_name"].s.decode() or n.name
        for n in gd.node if n.op == "VarHandleOp")
    entry = {
        "file": name,
        "description": description,
        "fetches": list(fetches),
        "targets": list(targets),
        "feeds": feeds or {},
        "variables": variables,
        "nodes": len(gd.node),
        "function_nodes": sum(len(f.node_def) for f in gd.library.function),
        "functions": len(gd.library.function),
        "small": small,
    }
    if paper:
        entry["paper"] = paper
    ENTRIES.append(entry)
    print(f"wrote {name}: {entry['nodes']} nodes, "
          f"{entry['function_nodes']} in {entry['functions']} functions, "
          f"variables {variables}")


# --- a. counter ------------------------------------------------------------

def counter(out: str) -> None:
    """Increment, then read under a control dependency (plain graph)."""
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(tf.constant(0, tf.int64), name="counter")
        one = tf.constant(1, tf.int64, name="one")
        inc = tf.raw_ops.AssignAddVariableOp(resource=v.handle, value=one, name="increment")
        with tf.control_dependencies([inc]):
            read = tf.raw_ops.ReadVariableOp(resource=v.handle, dtype=tf.int64, name="read")
        tf.identity(read, name="value")
    _write(g, out, "counter.pbtxt", fetches=["value"], small=True,
           description="A resource variable `counter` incremented by AssignAddVariableOp "
                       "(`increment`) and read by ReadVariableOp (`read`) under "
                       "tf.control_dependencies([increment]). The fetch `value` is always "
                       "the initial value + 1; dropping the control edge ^increment from "
                       "`read` (a dependency-optimizer bug) lets it be the initial value.")


def counter_function(out: str) -> None:
    """The counter as a tf.function: the body is in the library and called."""
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(tf.constant(0, tf.int64), name="counter")

        @tf.function
        def step(delta):
            inc = v.assign_add(delta, read_value=False)
            with tf.control_dependencies([inc]):
                return tf.identity(v.read_value())

        delta = tf.compat.v1.placeholder(tf.int64, (), name="delta")
        tf.identity(step(delta), name="value")
    _write(g, out, "counter_function.pbtxt", fetches=["value"],
           feeds={"delta": {"dtype": "int64", "shape": []}}, small=True,
           description="The counter as a tf.function called with StatefulPartitionedCall: "
                       "the increment by the feed `delta` and the read under "
                       "control_dependencies are in the function library (`n:output:k` "
                       "names, a DT_RESOURCE argument, control_ret).")


# --- b. seed 002's examples ---------------------------------------------------

def seed002_writes_reads(out: str) -> None:
    """Seed 002, 'Simplest Non-Trivial Example': *X = 1 -> *Y = 2 ; r0 = *Y -> r1 = *X."""
    g = tf.Graph()
    with g.as_default():
        x = tf.Variable(tf.constant(0, tf.int64), name="X")
        y = tf.Variable(tf.constant(0, tf.int64), name="Y")
        wx = tf.raw_ops.AssignVariableOp(resource=x.handle, value=tf.constant(1, tf.int64, name="one"), name="store_x")
        with tf.control_dependencies([wx]):
            wy = tf.raw_ops.AssignVariableOp(resource=y.handle, value=tf.constant(2, tf.int64, name="two"), name="store_y")
        r0 = tf.raw_ops.ReadVariableOp(resource=y.handle, dtype=tf.int64, name="load_y")
        with tf.control_dependencies([r0]):
            r1 = tf.raw_ops.ReadVariableOp(resource=x.handle, dtype=tf.int64, name="load_x")
        tf.identity(r0, name="r0")
        tf.identity(r1, name="r1")
    _write(g, out, "seed002_writes_reads.pbtxt", fetches=["r0", "r1"],
           targets=["store_y"], small=True,
           paper="seed 002, 'Simplest Non-Trivial Example'",
           description="Two stores ordered by a control edge (*X = 1 then *Y = 2) and two "
                       "loads ordered by a control edge (r0 = *Y then r1 = *X), racing. "
                       "From X = Y = 0, r0 == 2 implies r1 == 1: (r0, r1) = (2, 0) is "
                       "disallowed. `store_y` is a target (it has no output).")


def seed002_load_store(out: str) -> None:
    """Seed 002, 'Load/Store Reordering': *X = 1 -> r0 = *Y ; *Y = 5 -> *X = 2."""
    g = tf.Graph()
    with g.as_default():
        x = tf.Variable(tf.constant(0, tf.int64), name="X")
        y = tf.Variable(tf.constant(0, tf.int64), name="Y")
        wx1 = tf.raw_ops.AssignVariableOp(resource=x.handle, value=tf.constant(1, tf.int64, name="one"), name="store_x1")
        with tf.control_dependencies([wx1]):
            r0 = tf.raw_ops.ReadVariableOp(resource=y.handle, dtype=tf.int64, name="load_y")
        wy = tf.raw_ops.AssignVariableOp(resource=y.handle, value=tf.constant(5, tf.int64, name="five"), name="store_y")
        with tf.control_dependencies([wy]):
            tf.raw_ops.AssignVariableOp(resource=x.handle, value=tf.constant(2, tf.int64, name="two"), name="store_x2")
        tf.identity(r0, name="r0")
    _write(g, out, "seed002_load_store.pbtxt", fetches=["r0"],
           targets=["store_x2"], small=True,
           paper="seed 002, 'Load/Store Reordering'",
           description="*X = 1 then r0 = *Y (control edge), racing with *Y = 5 then *X = 2. "
                       "When the run ends with X == 1, r0 must be 5; hoisting the load of Y "
                       "above *X = 1 (what XLA's clustering does) breaks it. `store_x2` is a "
                       "target (it has no output).")


# --- c. MLP training steps --------------------------------------------------

def _keras_mlp(out: str, name: str, make_optimizer, label: str) -> None:
    import keras
    g = tf.Graph()
    with g.as_default():
        keras.utils.set_random_seed(0)
        model = keras.Sequential([
            keras.Input((4,), batch_size=2),
            keras.layers.Dense(8, activation="relu", name="hidden"),
            keras.layers.Dense(2, name="logits"),
        ], name="mlp")
        opt = make_optimizer()
        x = tf.compat.v1.placeholder(tf.float32, (2, 4), name="x")
        y = tf.compat.v1.placeholder(tf.float32, (2, 2), name="y")

        @tf.function
        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        tf.identity(train_step(x, y), name="loss")
    _write(g, out, name, fetches=["loss"],
           feeds={"x": {"dtype": "float32", "shape": [2, 4]},
                  "y": {"dtype": "float32", "shape": [2, 2]}},
           small=False,
           description=f"One Keras 3 training step of an MLP 4-8-2 (relu, mean squared "
                       f"error, batch 2) with {label}, as a tf.function "
                       f"(StatefulPartitionedCall). Keras 3 updates variables with "
                       f"Assign/AssignAdd/AssignSubVariableOp, not ResourceApply*.")


def keras_mlp_sgd(out: str) -> None:
    import keras
    _keras_mlp(out, "keras_mlp_sgd.pbtxt", lambda: keras.optimizers.SGD(0.1), "SGD (lr 0.1)")


def keras_mlp_adam(out: str) -> None:
    import keras
    _keras_mlp(out, "keras_mlp_adam.pbtxt", lambda: keras.optimizers.Adam(0.01), "Adam (lr 0.01)")


def _v1_mlp(out: str, name: str, make_optimizer, label: str, op: str) -> None:
    g = tf.Graph()
    with g.as_default():
        tf.random.set_seed(0)
        x = tf.compat.v1.placeholder(tf.float32, (2, 4), name="x")
        y = tf.compat.v1.placeholder(tf.float32, (2, 2), name="y")
        w1 = tf.Variable(tf.random.stateless_uniform((4, 8), seed=(0, 1)), name="w1")
        b1 = tf.Variable(tf.zeros((8,)), name="b1")
        w2 = tf.Variable(tf.random.stateless_uniform((8, 2), seed=(0, 2)), name="w2")
        b2 = tf.Variable(tf.zeros((2,)), name="b2")
        h = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1))
        logits = tf.nn.bias_add(tf.matmul(h, w2), b2)
        loss = tf.reduce_mean(tf.square(logits - y), name="loss")
        make_optimizer().minimize(loss, name="train")
    _write(g, out, name, fetches=["loss"], targets=["train"],
           feeds={"x": {"dtype": "float32", "shape": [2, 4]},
                  "y": {"dtype": "float32", "shape": [2, 2]}},
           small=False,
           description=f"The same MLP 4-8-2 training step built with "
                       f"tf.compat.v1.train.{label} in a plain graph: the updates are "
                       f"{op} ops (the ResourceApply* family), grouped into the target "
                       f"`train`.")


def v1_mlp_sgd(out: str) -> None:
    _v1_mlp(out, "v1_mlp_sgd.pbtxt",
            lambda: tf.compat.v1.train.GradientDescentOptimizer(0.1),
            "GradientDescentOptimizer", "ResourceApplyGradientDescent")


def v1_mlp_adam(out: str) -> None:
    _v1_mlp(out, "v1_mlp_adam.pbtxt",
            lambda: tf.compat.v1.train.AdamOptimizer(0.01),
            "AdamOptimizer", "ResourceApplyAdam")


# --- d. non-trainable state update (batch norm) ------------------------------

def batchnorm(out: str) -> None:
    import keras
    g = tf.Graph()
    with g.as_default():
        keras.utils.set_random_seed(0)
        layer = keras.layers.BatchNormalization(momentum=0.9, name="bn")
        layer.build((2, 3))
        x = tf.compat.v1.placeholder(tf.float32, (2, 3), name="x")

        @tf.function
        def forward(x):
            return layer(x, training=True)

        tf.identity(forward(x), name="y")
    _write(g, out, "batchnorm.pbtxt", fetches=["y"],
           feeds={"x": {"dtype": "float32", "shape": [2, 3]}},
           small=False,
           description="keras.layers.BatchNormalization(momentum=0.9) on a batch of 2x3 "
                       "called with training=True inside a tf.function: besides the output, "
                       "it updates the non-trainable moving_mean and moving_variance "
                       "variables (moving averages).")


# --- e. tf.group / control_dependencies fan-in --------------------------------

def group_fanin(out: str) -> None:
    g = tf.Graph()
    with g.as_default():
        a = tf.Variable(tf.constant(0, tf.int64), name="a")
        b = tf.Variable(tf.constant(0, tf.int64), name="b")
        c = tf.Variable(tf.constant(0, tf.int64), name="c")
        ua = tf.raw_ops.AssignAddVariableOp(resource=a.handle, value=tf.constant(1, tf.int64, name="one"), name="update_a")
        ub = tf.raw_ops.AssignVariableOp(resource=b.handle, value=tf.constant(7, tf.int64, name="seven"), name="update_b")
        uc = tf.raw_ops.AssignSubVariableOp(resource=c.handle, value=tf.constant(2, tf.int64, name="two"), name="update_c")
        updates = tf.group(ua, ub, uc, name="updates")
        with tf.control_dependencies([updates]):
            ra = tf.raw_ops.ReadVariableOp(resource=a.handle, dtype=tf.int64, name="read_a")
            rb = tf.raw_ops.ReadVariableOp(resource=b.handle, dtype=tf.int64, name="read_b")
            rc = tf.raw_ops.ReadVariableOp(resource=c.handle, dtype=tf.int64, name="read_c")
        total = tf.add_n([ra, rb, rc], name="sum")
        tf.identity(total, name="total")
    _write(g, out, "group_fanin.pbtxt", fetches=["total"], small=True,
           description="Three updates of three variables (a += 1, b = 7, c -= 2) joined by "
                       "tf.group into the NoOp `updates`; three reads under "
                       "control_dependencies([updates]) summed with AddN. `total` is always "
                       "a + 1 + 7 + c - 2 of the initial state.")


BUILDERS = [counter, counter_function, seed002_writes_reads, seed002_load_store,
            group_fanin, batchnorm, keras_mlp_sgd, keras_mlp_adam, v1_mlp_sgd, v1_mlp_adam]


# --- scatter then read -------------------------------------------------------

def scatter_then_read(out: str) -> None:
    """A sparse update (ResourceScatterAdd), then a read under a control
    dependency; and the same graph with that edge dropped (what a buggy
    dependency optimizer would write): docs/stateful-ops.md checks the pair."""
    for wait, name in ((True, "scatter_then_read.pbtxt"),
                       (False, "scatter_then_read_no_wait.pbtxt")):
        g = tf.Graph()
        with g.as_default():
            h = tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[3, 2], shared_name="emb",
                                       name="emb")
            ids = tf.compat.v1.placeholder(tf.int32, [2], name="ids")
            u = tf.compat.v1.placeholder(tf.float32, [2, 2], name="u")
            sc = tf.raw_ops.ResourceScatterAdd(resource=h, indices=ids, updates=u,
                                               name="scatter")
            with tf.control_dependencies([sc] if wait else []):
                tf.raw_ops.ReadVariableOp(resource=h, dtype=tf.float32, name="after")
        _write(g, out, name, fetches=["after"], targets=["scatter"], small=True,
               feeds={"ids": {"dtype": "int32", "shape": [2]},
                      "u": {"dtype": "float32", "shape": [2, 2]}},
               description=("Rows `ids` of the embedding `emb` incremented by `u` "
                            "(ResourceScatterAdd `scatter`), then read (`after`) "
                            + ("under tf.control_dependencies([scatter]): `after` always "
                               "sees the update." if wait else
                               "with no control edge: `after` may see the value before "
                               "the update (scatter_then_read.pbtxt with its edge dropped).")))


BUILDERS.append(scatter_then_read)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=HERE, help="directory to write into (default: beside this script)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for build in BUILDERS:
        build(args.out)
    manifest = {"format": "tfsem.tensorflow-corpus/1",
                "tensorflow": tf.__version__,
                "graphs": ENTRIES}
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
