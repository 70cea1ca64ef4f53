"""Regenerate the corpus of real models' graphs in this directory (issue 30).

Run with a Python that has TensorFlow and Keras 3 (tensorflow-cpu 2.21.0 and
keras 3 were used):

    python examples/tensorflow/corpus/make_corpus.py [--out DIR] [--only NAME ...]

Unlike ../make_corpus.py (small graphs written by hand to show one effect
each), these are the graphs TensorFlow writes for ordinary models, at
ordinary sizes: Keras 3 training steps with each optimizer family, a CNN
with batch norm, a ResNet block, MobileNetV2 (weights=None, 32x32), LSTM and
GRU (unroll=True: the stand-ins for the loops of the control-flow issue), a
Transformer block, embeddings with sparse updates, Keras metrics, mixed
precision (without the loss-scale optimizer's conditional update), a
tf.Module counter, TF1 graph-mode models, the function `model.fit` runs, and
two SavedModels.

Three ways a user holds a model, three kinds of file:

* ``concrete``: the graph of a tf.function's concrete function,
  ``f.get_concrete_function(specs).graph.as_graph_def()``, as a TF2 user
  exports it first.  Each variable the function uses is *captured*: it is a
  ``Placeholder`` of dtype DT_RESOURCE inside the graph, and the GraphDef
  alone does not say which variable (its only clue, ``_user_specified_name``,
  is the word "resource"; its shape attribute is the handle's, a scalar).
  The map from those placeholders to the variables is in
  ``concrete_function.graph.captures``; it is written beside the graph as
  ``NAME.captures.json`` ({placeholder: {"variable", "dtype", "shape"}}).
* ``graph``: a TF1 graph (tf.compat.v1, graph mode), with VarHandleOp
  resource variables and their initializers.
* ``saved_model``: a SavedModel directory (only its saved_model.pb is kept:
  the variables' values are not part of the graph's semantics).

``manifest.json`` lists per graph: file, kind, fetches, targets (operations
run for their effect, as Session.run's targets), feeds, captures (the
sidecar file), ``shapes`` (where a SavedModel's input has an unknown batch
dimension: the shape tfsem is given, ``--shape KEY=DIMS``), variables,
nodes, what it is, and ``expect``: "imports" when
tfsem imports it and self-checks it `sound`, otherwise "refused" with the
first refusal (filled in by tests/test_corpus_graphs.py's measurement, see
docs/tensorflow-graphs.md).  Seeds are fixed (keras.utils.set_random_seed),
and every graph is traced in a fresh Keras name scope, so names are stable
from run to run of the same versions, and so are the bytes, except that the
two Keras `model.export` SavedModels list some graph nodes in an order that
varies from run to run (the same nodes: tfsem's import is the same).
Text (.pbtxt) where the text is under 256 KB, binary (.pb) otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TEXT_LIMIT = 256 * 1024
ENTRIES: list[dict] = []
OLD: dict[str, dict] = {}


def _seed() -> None:
    keras.utils.set_random_seed(1234)
    keras.backend.clear_session()


def _save_graphdef(gd, out: str, name: str) -> str:
    text = str(gd)
    if len(text) <= TEXT_LIMIT:
        fname = name + ".pbtxt"
        with open(os.path.join(out, fname), "w") as f:
            f.write(text)
    else:
        fname = name + ".pb"
        with open(os.path.join(out, fname), "wb") as f:
            f.write(gd.SerializeToString(deterministic=True))
    return fname


def _ancestors(gd, roots: list[str]) -> set[str]:
    by = {n.name: n for n in gd.node}
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in seen or n not in by:
            continue
        seen.add(n)
        for i in by[n].input:
            stack.append(i.lstrip("^").split(":")[0])
    return seen


def _entry(name: str, fname: str, kind: str, what: str, gd, fetches, targets, feeds,
           variables, captures: str | None = None, shapes: dict | None = None) -> None:
    entry = {
        "name": name,
        "file": fname,
        "kind": kind,
        "what": what,
        "fetches": list(fetches),
        "targets": list(targets),
        "feeds": feeds,
        "variables": sorted(variables),
        "nodes": len(gd.node),
        "function_nodes": sum(len(f.node_def) for f in gd.library.function),
    }
    if captures:
        entry["captures"] = captures
    if shapes:
        entry["shapes"] = shapes
    old = OLD.get(name, {})
    for k in ("expect", "refusal"):
        if k in old:
            entry[k] = old[k]
    ENTRIES.append(entry)
    print(f"wrote {fname}: {entry['nodes']} nodes (+{entry['function_nodes']} in functions), "
          f"{len(variables)} variables", flush=True)


def _spec_json(spec: tf.TensorSpec) -> dict:
    return {"dtype": spec.dtype.name, "shape": spec.shape.as_list()}


def write_concrete(out: str, name: str, what: str, fn, specs: dict[str, tf.TensorSpec],
                   extra_vars=()) -> None:
    """Trace `fn` (a tf.function taking the specs' arguments by name) and
    write its concrete function's graph, with its capture map beside it."""
    cf = fn.get_concrete_function(**specs)
    g = cf.graph
    gd = g.as_graph_def()
    by_handle = {}
    for v in list(g.variables) + list(extra_vars):
        by_handle[id(v.handle)] = v
    captures = {}
    for ext, inner in g.captures:
        if ext.dtype != tf.resource:
            continue
        v = by_handle.get(id(ext))
        if v is None:
            raise SystemExit(f"{name}: captured resource {inner.op.name} is no variable")
        captures[inner.op.name] = {"variable": v.name.split(":")[0], "dtype": v.dtype.name,
                                   "shape": v.shape.as_list()}
    fetches = [t.name[:-2] if t.name.endswith(":0") else t.name for t in cf.outputs]
    reached = _ancestors(gd, [f.split(":")[0] for f in fetches])
    targets = sorted(op.name for op in g.control_outputs if op.name not in reached)
    fname = _save_graphdef(gd, out, name)
    cname = name + ".captures.json"
    with open(os.path.join(out, cname), "w") as f:
        json.dump(captures, f, indent=1, sort_keys=True)
        f.write("\n")
    captured = {id(inner) for _, inner in g.captures}
    feeds = {t.op.name: {"dtype": t.dtype.name, "shape": t.shape.as_list()}
             for t in cf.inputs if id(t) not in captured}
    _entry(name, fname, "concrete", what, gd, fetches, targets, feeds,
           {c["variable"] for c in captures.values()}, cname)


def write_graph(out: str, name: str, what: str, g: tf.Graph, fetches, targets, feeds) -> None:
    gd = g.as_graph_def()
    fname = _save_graphdef(gd, out, name)
    variables = {n.attr["shared_name"].s.decode() or n.name for n in gd.node
                 if n.op in ("VarHandleOp", "VariableV2")}
    _entry(name, fname, "graph", what, gd, fetches, targets, feeds, variables)


# --- Keras training steps -----------------------------------------------------

def keras_step(out: str, name: str, what: str, model, optimizer, loss, x_spec, y_spec,
               metrics=None, **compile_kw) -> None:
    model.compile(optimizer=optimizer, loss=loss, metrics=metrics, **compile_kw)
    model.optimizer.build(model.trainable_variables)
    # build the metrics' variables outside the trace
    x0 = tf.zeros(x_spec.shape, x_spec.dtype)
    y0 = tf.zeros(y_spec.shape, y_spec.dtype)
    model.compute_metrics(x0, y0, model(x0), sample_weight=None) if metrics else None

    @tf.function
    def train_step(x, y):
        return model.train_step((x, y))

    extra = [v.value for v in model.variables] + [v.value for v in model.optimizer.variables]
    extra += [v.value for m in model.metrics for v in m.variables]
    write_concrete(out, name, what, train_step, {"x": x_spec, "y": y_spec}, extra)


def mlp() -> keras.Model:
    return keras.Sequential([keras.Input((784,)), keras.layers.Dense(128, activation="relu"),
                             keras.layers.Dense(10)])


def mlp_optimizers(out: str) -> None:
    x, y = tf.TensorSpec([32, 784], tf.float32), tf.TensorSpec([32], tf.int32)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    for name, opt in [
        ("keras_mlp_sgd_momentum", lambda: keras.optimizers.SGD(0.01, momentum=0.9, nesterov=True)),
        ("keras_mlp_adam", lambda: keras.optimizers.Adam(1e-3)),
        ("keras_mlp_adamw", lambda: keras.optimizers.AdamW(1e-3, weight_decay=0.004)),
        ("keras_mlp_rmsprop", lambda: keras.optimizers.RMSprop(1e-3, momentum=0.9)),
        ("keras_mlp_adagrad", lambda: keras.optimizers.Adagrad(0.01)),
        ("keras_mlp_adadelta", lambda: keras.optimizers.Adadelta(1.0)),
        ("keras_mlp_adamax", lambda: keras.optimizers.Adamax(2e-3)),
        ("keras_mlp_nadam", lambda: keras.optimizers.Nadam(2e-3)),
        ("keras_mlp_ftrl", lambda: keras.optimizers.Ftrl(0.01)),
        ("keras_mlp_lion", lambda: keras.optimizers.Lion(1e-4)),
    ]:
        if not _wanted(name):
            continue
        _seed()
        o = opt()
        keras_step(out, name, f"Keras 3 train_step of an MLP 784-128-10 (batch 32, sparse "
                   f"categorical cross-entropy from logits) with {type(o).__name__}, traced "
                   "with tf.function", mlp(), o, loss, x, y)


def cnn_batchnorm(out: str) -> None:
    _seed()
    m = keras.Sequential([
        keras.Input((28, 28, 1)),
        keras.layers.Conv2D(16, 3, padding="same", use_bias=False),
        keras.layers.BatchNormalization(), keras.layers.ReLU(),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(32, 3, padding="same", use_bias=False),
        keras.layers.BatchNormalization(), keras.layers.ReLU(),
        keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(10)])
    keras_step(out, "keras_cnn_batchnorm", "Keras 3 train_step of a CNN (two Conv2D + "
               "BatchNormalization + ReLU, max pooling, global average pooling, Dense) on "
               "28x28x1 (batch 16) with SGD(momentum=0.9); BatchNormalization's moving "
               "statistics are updated by assignment in the step", m,
               keras.optimizers.SGD(0.01, momentum=0.9),
               keras.losses.SparseCategoricalCrossentropy(from_logits=True),
               tf.TensorSpec([16, 28, 28, 1]), tf.TensorSpec([16], tf.int32))


def resnet_block(out: str) -> None:
    _seed()
    inp = keras.Input((16, 16, 32))
    h = keras.layers.Conv2D(32, 3, padding="same", use_bias=False)(inp)
    h = keras.layers.BatchNormalization()(h)
    h = keras.layers.ReLU()(h)
    h = keras.layers.Conv2D(32, 3, padding="same", use_bias=False)(h)
    h = keras.layers.BatchNormalization()(h)
    h = keras.layers.ReLU()(keras.layers.Add()([h, inp]))
    h = keras.layers.GlobalAveragePooling2D()(h)
    m = keras.Model(inp, keras.layers.Dense(10)(h))
    keras_step(out, "keras_resnet_block", "Keras 3 train_step of a ResNet basic block "
               "(conv-BN-ReLU-conv-BN, identity shortcut, ReLU) on 16x16x32 (batch 8) with a "
               "classifier head, Adam", m, keras.optimizers.Adam(1e-3),
               keras.losses.SparseCategoricalCrossentropy(from_logits=True),
               tf.TensorSpec([8, 16, 16, 32]), tf.TensorSpec([8], tf.int32))


def mobilenet(out: str) -> None:
    _seed()
    m = keras.applications.MobileNetV2(input_shape=(32, 32, 3), weights=None, classes=10)
    keras_step(out, "keras_mobilenetv2_32", "Keras 3 train_step of "
               "keras.applications.MobileNetV2(input_shape=(32, 32, 3), weights=None, "
               "classes=10) (batch 8), SGD with momentum; softmax output with categorical "
               "cross-entropy", m, keras.optimizers.SGD(0.01, momentum=0.9),
               keras.losses.SparseCategoricalCrossentropy(),
               tf.TensorSpec([8, 32, 32, 3]), tf.TensorSpec([8], tf.int32))


def embedding_sparse(out: str) -> None:
    _seed()
    m = keras.Sequential([keras.Input((20,), dtype="int32"),
                          keras.layers.Embedding(1000, 16),
                          keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1)])
    keras_step(out, "keras_embedding_adagrad", "Keras 3 train_step of an Embedding(1000, 16) "
               "bag-of-words binary classifier (batch 32, 20 ids each), Adagrad: the "
               "embedding's gradient is an IndexedSlices, applied as a sparse update", m,
               keras.optimizers.Adagrad(0.05),
               keras.losses.BinaryCrossentropy(from_logits=True),
               tf.TensorSpec([32, 20], tf.int32), tf.TensorSpec([32, 1]))


def metrics(out: str) -> None:
    _seed()
    m = keras.Sequential([keras.Input((20,)), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dense(1, activation="sigmoid")])
    keras_step(out, "keras_mlp_metrics", "Keras 3 train_step of a binary classifier with "
               "metrics accuracy, Precision, Recall and AUC (their state variables updated "
               "in the step, the results fetched), Adam", m, keras.optimizers.Adam(1e-3),
               keras.losses.BinaryCrossentropy(),
               tf.TensorSpec([32, 20]), tf.TensorSpec([32, 1]),
               metrics=["binary_accuracy", keras.metrics.Precision(), keras.metrics.Recall(),
                        keras.metrics.AUC(num_thresholds=50)])


def mixed_precision(out: str) -> None:
    _seed()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        m = keras.Sequential([keras.Input((784,)), keras.layers.Dense(128, activation="relu"),
                              keras.layers.Dense(10),
                              keras.layers.Activation("linear", dtype="float32")])
        keras_step(out, "keras_mlp_mixed_float16", "Keras 3 train_step of the MLP under the "
                   "mixed_float16 policy (float16 compute, float32 variables and loss), Adam, "
                   "auto_scale_loss=False: the loss-scale optimizer's conditional update needs "
                   "control flow, so this unconditional variant stands in",
                   m, keras.optimizers.Adam(1e-3),
                   keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                   tf.TensorSpec([32, 784]), tf.TensorSpec([32], tf.int32),
                   auto_scale_loss=False)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def rnns(out: str) -> None:
    for name, layer in [("keras_lstm_unrolled", keras.layers.LSTM),
                        ("keras_gru_unrolled", keras.layers.GRU)]:
        if not _wanted(name):
            continue
        _seed()
        m = keras.Sequential([keras.Input((12, 8)), layer(32, unroll=True), keras.layers.Dense(1)])
        keras_step(out, name, f"Keras 3 train_step of a {layer.__name__}(32, unroll=True) over "
                   "12 steps of 8 features (batch 16), regression with MSE, RMSprop: the "
                   "unrolled stand-in for the While loop of the control-flow issue", m,
                   keras.optimizers.RMSprop(1e-3), keras.losses.MeanSquaredError(),
                   tf.TensorSpec([16, 12, 8]), tf.TensorSpec([16, 1]))


def rnn_loops(out: str) -> None:
    """LSTM and GRU as Keras runs them by default (not unrolled): a While
    over the time steps whose body reads the inputs from a TensorList and
    writes the outputs into one; the gradient is a second While."""
    for name, layer in [("keras_lstm_loop", keras.layers.LSTM),
                        ("keras_gru_loop", keras.layers.GRU)]:
        if not _wanted(name):
            continue
        _seed()
        m = keras.Sequential([keras.Input((12, 8)), layer(16), keras.layers.Dense(1)])
        keras_step(out, name, f"Keras 3 train_step of a {layer.__name__}(16) over 12 steps of "
                   "8 features (batch 4), not unrolled: a While over the time steps with "
                   "TensorList inputs and outputs, and a second While for its gradient; "
                   "regression with MSE, SGD", m, keras.optimizers.SGD(0.01),
                   keras.losses.MeanSquaredError(),
                   tf.TensorSpec([4, 12, 8]), tf.TensorSpec([4, 1]))


class _CondAssign(tf.Module):
    def __init__(self):
        super().__init__()
        self.count = tf.Variable(tf.constant(0, tf.int64), name="count")
        self.total = tf.Variable(tf.constant(0, tf.int64), name="total")

    @tf.function
    def __call__(self, x):
        # tf.cond with an assignment in each branch (an If of two functions)
        big = tf.cond(x > 10, lambda: self.total.assign_add(x),
                      lambda: self.count.assign_add(1))
        return big + self.count.read_value()


class _WhileAssign(tf.Module):
    def __init__(self):
        super().__init__()
        self.acc = tf.Variable(tf.constant(0, tf.int64), name="acc")
        self.steps = tf.Variable(tf.constant(0, tf.int64), name="steps")

    @tf.function
    def __call__(self, n):
        # tf.while_loop with assignments in the body: n trips (σ-dependent)
        def body(i):
            self.acc.assign_add(i)
            self.steps.assign_add(1)
            return i + 1
        return tf.while_loop(lambda i: i < n, body, [tf.constant(0, tf.int64)])[0]


def tf1_while_read_assign(out: str) -> None:
    """TF1 graph mode (VarHandleOp variables, so a run on TensorFlow can set
    them): a tf.while_loop of n trips whose body reads `x`, adds the value
    to the loop's sum and writes the value plus one back to `x`: a loop
    that writes the variable it reads (moving the read out of it is the
    wrong loop-invariant code motion of issue 24)."""
    g = tf.Graph()
    with g.as_default():
        v1 = tf.compat.v1
        n = v1.placeholder(tf.int64, [], name="n")
        x = v1.get_variable("x", [], tf.int64, initializer=v1.zeros_initializer(),
                            use_resource=True)

        def body(i, s):
            r = x.read_value()
            w = x.assign(r + 1, read_value=False)
            with tf.control_dependencies([w]):
                return i + 1, s + r

        zero = tf.constant(0, tf.int64)
        _, total = tf.while_loop(lambda i, s: i < n, body, [zero, zero], name="loop")
        tf.identity(total, name="sum")
    write_graph(out, "tf1_while_read_assign", "TF1 graph mode: a tf.while_loop of n trips "
                "(n a feed) whose body reads the resource variable x, adds the value to the "
                "loop's sum and assigns it plus one back to x (a While whose body writes the "
                "variable it reads); fetch `sum`", g, ["sum"], [],
                {"n": {"dtype": "int64", "shape": []}})


def control_flow(out: str) -> None:
    """tf.cond and tf.while_loop with assignments, and the loss-scale
    optimizer's conditional update."""
    if _wanted("tf_cond_assign"):
        c = _CondAssign()
        write_concrete(out, "tf_cond_assign", "A tf.Module whose tf.function adds x to `total` "
                       "when x > 10 and 1 to `count` otherwise (tf.cond with an assignment in "
                       "each branch: an If op of two branch functions), then returns the "
                       "branch's value plus count", c.__call__, {"x": tf.TensorSpec([], tf.int64)})
    if _wanted("tf_while_assign"):
        w = _WhileAssign()
        write_concrete(out, "tf_while_assign", "A tf.Module whose tf.function runs "
                       "tf.while_loop n times (n a feed: the trip count depends on σ), the "
                       "body adding the counter to `acc` and 1 to `steps` (a While op whose "
                       "body assigns)", w.__call__, {"n": tf.TensorSpec([], tf.int64)})
    if _wanted("tf1_while_read_assign"):
        tf1_while_read_assign(out)
    if _wanted("keras_mlp_loss_scale"):
        _seed()
        keras.mixed_precision.set_global_policy("mixed_float16")
        try:
            m = keras.Sequential([keras.Input((20,)), keras.layers.Dense(16, activation="relu"),
                                  keras.layers.Dense(1),
                                  keras.layers.Activation("linear", dtype="float32")])
            keras_step(out, "keras_mlp_loss_scale", "Keras 3 train_step of a small MLP "
                       "(20-16-1, batch 8, MSE) under mixed_float16 with SGD: compile wraps "
                       "it in a LossScaleOptimizer, whose update is conditional (tf.cond on "
                       "whether every gradient is finite: apply and grow the scale, or skip "
                       "and halve it)", m, keras.optimizers.SGD(0.01),
                       keras.losses.MeanSquaredError(),
                       tf.TensorSpec([8, 20]), tf.TensorSpec([8, 1]))
        finally:
            keras.mixed_precision.set_global_policy("float32")


def transformer(out: str) -> None:
    _seed()
    inp = keras.Input((16, 32))
    a = keras.layers.MultiHeadAttention(num_heads=4, key_dim=8)(inp, inp)
    h = keras.layers.LayerNormalization()(keras.layers.Add()([inp, a]))
    f = keras.layers.Dense(64, activation="gelu")(h)
    f = keras.layers.Dense(32)(f)
    h = keras.layers.LayerNormalization()(keras.layers.Add()([h, f]))
    h = keras.layers.GlobalAveragePooling1D()(h)
    m = keras.Model(inp, keras.layers.Dense(4)(h))
    keras_step(out, "keras_transformer_block", "Keras 3 train_step of a Transformer encoder "
               "block (MultiHeadAttention with 4 heads (Einsum), residuals, LayerNormalization, "
               "GELU feed-forward) over 16 tokens of width 32 (batch 8), AdamW", m,
               keras.optimizers.AdamW(1e-3),
               keras.losses.SparseCategoricalCrossentropy(from_logits=True),
               tf.TensorSpec([8, 16, 32]), tf.TensorSpec([8], tf.int32))


def _find_tf_function(root, name: str, depth: int = 0):
    """The tf.function called `name` in the closures reachable from `root`."""
    fn = getattr(root, "python_function", root)
    if getattr(root, "get_concrete_function", None) and \
            getattr(fn, "__name__", "") == name:
        return root
    if depth > 4:
        return None
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            c = cell.cell_contents
        except ValueError:
            continue
        if callable(c):
            found = _find_tf_function(c, name, depth + 1)
            if found is not None:
                return found
    return None


def fit_function(out: str) -> None:
    """The function model.fit calls each step: model.make_train_function()."""
    _seed()
    m = mlp()
    m.compile(optimizer=keras.optimizers.SGD(0.01),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    m.optimizer.build(m.trainable_variables)
    m.make_train_function()
    # m.train_function is a Python function around the tf.function
    # multi_step_on_iterator (Keras 3's TensorFlow trainer): take it from
    # the closure
    cells = [c.cell_contents for c in m.train_function.__closure__ or ()]
    train_function = next(c for c in cells if hasattr(c, "get_concrete_function")
                          and "iterator" in getattr(c, "__name__", ""))
    ds = tf.data.Dataset.from_tensors((tf.zeros([32, 784]), tf.zeros([32], tf.int32))).repeat()
    it = iter(ds)
    cf = train_function.get_concrete_function(it)
    g = cf.graph
    by_handle = {id(v.handle): v for v in list(g.variables) + [v.value for v in m.variables]
                 + [v.value for v in m.optimizer.variables]
                 + [v.value for mm in m.metrics for v in mm.variables]}
    captures = {}
    for ext, inner in g.captures:
        if ext.dtype == tf.resource and id(ext) in by_handle:
            v = by_handle[id(ext)]
            captures[inner.op.name] = {"variable": v.name.split(":")[0], "dtype": v.dtype.name,
                                       "shape": v.shape.as_list()}
    gd = g.as_graph_def()
    fetches = [t.name[:-2] if t.name.endswith(":0") else t.name for t in cf.outputs]
    reached = _ancestors(gd, [f.split(":")[0] for f in fetches])
    targets = sorted(op.name for op in g.control_outputs if op.name not in reached)
    # the iterator's next element: in tfsem, feeds ITERATOR/next_K (one per component)
    captured = {id(inner) for _, inner in g.captures}
    (it_arg,) = [t.op.name for t in cf.inputs if id(t) not in captured]
    feeds = {f"{it_arg}/next_{k}": _spec_json(spec)
             for k, spec in enumerate(tf.nest.flatten(it.element_spec))}
    one_step = _find_tf_function(train_function, "one_step_on_data")
    name = "keras_fit_one_step_on_data"
    write_concrete(out, name, "The tf.function model.fit's train function calls on each "
                   "batch (one_step_on_data, found in the closure of "
                   "model.make_train_function()'s function): model.train_step run through "
                   "the default distribution strategy, for the MLP with SGD",
                   one_step, {"data": (tf.TensorSpec([32, 784]), tf.TensorSpec([32], tf.int32))},
                   [v.value for v in m.variables] + [v.value for v in m.optimizer.variables])
    name = "keras_fit_train_function"
    fname = _save_graphdef(gd, out, name)
    with open(os.path.join(out, name + ".captures.json"), "w") as f:
        json.dump(captures, f, indent=1, sort_keys=True)
        f.write("\n")
    _entry(name, fname, "concrete", "model.make_train_function() of the MLP with SGD: the "
           "tf.function model.fit calls (multi_step_on_iterator, steps_per_execution=1), "
           "traced for a tf.data iterator (its input is the iterator's DT_RESOURCE handle, "
           "read by IteratorGetNext; the step is a StatefulPartitionedCall into the function "
           "library; the result an Optional)", gd, fetches,
           targets, feeds,
           # the iterator's position: in tfsem, state each draw advances (ITERATOR/position)
           {c["variable"] for c in captures.values()} | {f"{it_arg}/position"},
           name + ".captures.json")


# --- tf.Module, TF1 ---------------------------------------------------------------

def module_counter(out: str) -> None:
    class Counter(tf.Module):
        def __init__(self):
            super().__init__()
            self.count = tf.Variable(tf.constant(0, tf.int64), name="count")
            self.total = tf.Variable(tf.constant(0.0), name="total")

        @tf.function
        def __call__(self, x):
            self.count.assign_add(1)
            self.total.assign_add(tf.reduce_sum(x))
            return self.total / tf.cast(self.count, tf.float32)

    c = Counter()
    write_concrete(out, "tf_module_counter", "A tf.Module with two tf.Variables (an int64 "
                   "count and a float32 total) and a tf.function __call__(x) that increments "
                   "the count, adds sum(x) to the total and returns the running mean",
                   c.__call__, {"x": tf.TensorSpec([4], tf.float32)})


def tf1_mlp(out: str, name: str, make_opt, what: str) -> None:
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.set_random_seed(1234)
        v1 = tf.compat.v1
        x = v1.placeholder(tf.float32, [32, 784], name="x")
        y = v1.placeholder(tf.float32, [32, 10], name="y")
        init = v1.glorot_uniform_initializer(seed=1)
        w1 = v1.get_variable("w1", [784, 128], initializer=init, use_resource=True)
        b1 = v1.get_variable("b1", [128], initializer=v1.zeros_initializer(), use_resource=True)
        w2 = v1.get_variable("w2", [128, 10], initializer=init, use_resource=True)
        b2 = v1.get_variable("b2", [10], initializer=v1.zeros_initializer(), use_resource=True)
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
        logits = tf.matmul(h, w2) + b2
        loss = tf.identity(v1.losses.softmax_cross_entropy(y, logits), name="loss")
        train = make_opt().minimize(loss, name="train")
    write_graph(out, name, what, g, ["loss"], [train.name],
                {"x": {"dtype": "float32", "shape": [32, 784]},
                 "y": {"dtype": "float32", "shape": [32, 10]}})


def tf1_embedding(out: str) -> None:
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.set_random_seed(1234)
        v1 = tf.compat.v1
        ids = v1.placeholder(tf.int64, [32, 20], name="ids")
        y = v1.placeholder(tf.float32, [32, 1], name="y")
        emb = v1.get_variable("embedding", [1000, 16], use_resource=True,
                              initializer=v1.random_uniform_initializer(-0.05, 0.05, seed=2))
        w = v1.get_variable("w", [16, 1], use_resource=True,
                            initializer=v1.glorot_uniform_initializer(seed=3))
        h = tf.reduce_mean(tf.nn.embedding_lookup(emb, ids), axis=1)
        loss = tf.identity(tf.reduce_mean(tf.square(tf.matmul(h, w) - y)), name="loss")
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
    write_graph(out, "tf1_embedding_sgd", "TF1 graph mode: tf.nn.embedding_lookup on a "
                "resource variable (1000x16; ResourceGather), mean, linear head, MSE, "
                "GradientDescentOptimizer: the embedding's update is a sparse "
                "ResourceScatterAdd", g, ["loss"], [train.name],
                {"ids": {"dtype": "int64", "shape": [32, 20]},
                 "y": {"dtype": "float32", "shape": [32, 1]}})


def tf1_models(out: str) -> None:
    v1 = tf.compat.v1
    if _wanted("tf1_mlp_sgd"):
        tf1_mlp(out, "tf1_mlp_sgd", lambda: v1.train.GradientDescentOptimizer(0.1),
                "TF1 graph mode (tf.compat.v1): an MLP 784-128-10 on resource variables "
                "(get_variable(use_resource=True)), losses.softmax_cross_entropy, "
                "GradientDescentOptimizer.minimize as the target `train`")
    if _wanted("tf1_mlp_adam"):
        tf1_mlp(out, "tf1_mlp_adam", lambda: v1.train.AdamOptimizer(1e-3),
                "The same TF1 MLP trained by tf.compat.v1.train.AdamOptimizer (slots and "
                "beta powers as resource variables)")
    if _wanted("tf1_embedding_sgd"):
        tf1_embedding(out)


# --- SavedModels -------------------------------------------------------------------

def _keep_saved_model(src: str, out: str, name: str) -> str:
    dst = os.path.join(out, name)
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    shutil.copy(os.path.join(src, "saved_model.pb"), os.path.join(dst, "saved_model.pb"))
    return name


def _saved_entry(out: str, name: str, what: str) -> None:
    from tensorflow.core.protobuf import saved_model_pb2
    sm = saved_model_pb2.SavedModel()
    with open(os.path.join(out, name, "saved_model.pb"), "rb") as f:
        sm.ParseFromString(f.read())
    mg = sm.meta_graphs[0]
    sig = mg.signature_def["serving_default"]
    gd = mg.graph_def
    # the variables the signature's call captures, by the object graph's names
    og = mg.object_graph_def
    by = {n.name: n for n in gd.node}
    variables = set()
    for t in sig.outputs.values():
        call = by[t.name.split(":")[0]]
        for k in og.concrete_functions[call.attr["f"].func.name].bound_inputs:
            variables.add(og.nodes[k].variable.name)
    feeds = {k: {"tensor": sig.inputs[k].name} for k in sorted(sig.inputs)}
    # an unknown (None) dimension of an input: tfsem imports it with `--shape
    # KEY=DIMS`, here a batch of 8
    shapes = {k: [8 if d.size < 0 else d.size for d in sig.inputs[k].tensor_shape.dim]
              for k in sorted(sig.inputs)
              if any(d.size < 0 for d in sig.inputs[k].tensor_shape.dim)}
    _entry(name, name, "saved_model", what, gd,
           [sig.outputs[k].name for k in sorted(sig.outputs)], [], feeds, variables,
           shapes=shapes)


def saved_module(out: str) -> None:
    class Regression(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(tf.random.stateless_normal([13, 1], seed=[1, 2]), name="w")
            self.b = tf.Variable(tf.zeros([1]), name="b")
            self.step = tf.Variable(tf.constant(0, tf.int64), name="step")

        @tf.function(input_signature=[tf.TensorSpec([64, 13]), tf.TensorSpec([64, 1])])
        def train(self, x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(x @ self.w + self.b - y))
            gw, gb = tape.gradient(loss, [self.w, self.b])
            self.w.assign_sub(0.01 * gw)
            self.b.assign_sub(0.01 * gb)
            self.step.assign_add(1)
            return {"loss": loss}

    m = Regression()
    with tempfile.TemporaryDirectory() as d:
        tf.saved_model.save(m, d, signatures={"serving_default": m.train})
        _keep_saved_model(d, out, "saved_model_module_train")
    _saved_entry(out, "saved_model_module_train", "tf.saved_model.save of a tf.Module "
                 "(linear regression, 13 features, batch 64) whose serving_default signature "
                 "is its training step: GradientTape, assign_sub of w and b, a step counter "
                 "(only saved_model.pb is kept)")


def saved_keras_export(out: str) -> None:
    _seed()
    m = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Conv2D(8, 3, activation="relu"),
                          keras.layers.BatchNormalization(), keras.layers.Flatten(),
                          keras.layers.Dense(10, activation="softmax")])
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m")
        m.export(path, format="tf_saved_model", verbose=False)
        _keep_saved_model(path, out, "saved_model_keras_export")
    _saved_entry(out, "saved_model_keras_export", "Keras 3 model.export of a small CNN "
                 "(Conv2D, BatchNormalization in inference, Dense softmax): the serving "
                 "endpoint, inference only, batch dimension unknown (only saved_model.pb is "
                 "kept)")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m")
        m.export(path, format="tf_saved_model", verbose=False,
                 input_signature=[tf.TensorSpec([8, 28, 28, 1], tf.float32)])
        _keep_saved_model(path, out, "saved_model_keras_export_batch8")
    _saved_entry(out, "saved_model_keras_export_batch8", "The same model.export with "
                 "input_signature=[tf.TensorSpec([8, 28, 28, 1])]: a static batch of 8; "
                 "the graph's VarHandleOps are `sequential/conv2d/kernel_1`..., the object "
                 "graph names the variables `sequential/conv2d/kernel`...")


BUILDERS = [
    ("mlp_optimizers", mlp_optimizers), ("keras_cnn_batchnorm", cnn_batchnorm),
    ("keras_resnet_block", resnet_block), ("keras_mobilenetv2_32", mobilenet),
    ("keras_embedding_adagrad", embedding_sparse), ("keras_mlp_metrics", metrics),
    ("keras_mlp_mixed_float16", mixed_precision), ("rnns", rnns),
    ("keras_transformer_block", transformer), ("keras_fit_train_function", fit_function),
    ("tf_module_counter", module_counter), ("tf1_models", tf1_models),
    ("saved_model_module_train", saved_module), ("saved_model_keras_export", saved_keras_export),
    ("rnn_loops", rnn_loops), ("control_flow", control_flow),
]
ONLY: set[str] = set()
GROUP = [""]


def _wanted(name: str) -> bool:
    return not ONLY or name in ONLY or GROUP[0] in ONLY


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=HERE, help="directory to write into (default: beside this script)")
    ap.add_argument("--only", nargs="*", default=[], help="rebuild only these graphs")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    mpath = os.path.join(args.out, "manifest.json")
    old_entries = []
    if os.path.exists(mpath):
        with open(mpath) as f:
            old_entries = json.load(f)["graphs"]
    OLD.update({e["name"]: e for e in old_entries})
    ONLY.update(args.only)
    for group, build in BUILDERS:
        GROUP[0] = group
        if ONLY and group not in ONLY and group not in ("mlp_optimizers", "rnns", "tf1_models",
                                                        "rnn_loops", "control_flow"):
            continue  # (groups of several graphs ask _wanted per graph)
        build(args.out)
    if ONLY:
        kept = [e for e in old_entries if e["name"] not in {x["name"] for x in ENTRIES}]
        entries = kept + ENTRIES
    else:
        entries = ENTRIES
    manifest = {"format": "tfsem.tensorflow-corpus/2", "tensorflow": tf.__version__,
                "keras": keras.__version__, "graphs": entries}
    with open(mpath, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
