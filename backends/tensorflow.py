"""Run a GraphDef on TensorFlow's own runtime: the graph executor with real
resource variables, plain or auto-clustered by XLA.  Needs the extra
``tfsem[tensorflow]``; importing this module does not import TensorFlow.

What a run is here, and how it matches tfsem's outcomes (SPEC section 2):

- The graph is imported into a ``tf.Graph`` as it is, and run in a
  ``tf.compat.v1.Session`` with ``inter_op_parallelism_threads`` > 1, so nodes
  that no edge orders really run concurrently on the executor's thread pool.
- σ: before each run every variable (a ``VarHandleOp``, named by its
  ``shared_name``) is reset: its resource is destroyed (``DestroyResourceOp``),
  then, when σ gives it a value, assigned that value (``AssignVariableOp``).
  A variable σ leaves uninitialized stays absent.  Feeds go to the graph's
  ``Placeholder`` nodes.
- One run is one ``Session.run`` of the fetches and targets (TensorFlow's
  partial execution: only what they need runs).  Afterwards every variable is
  read back (``VarIsInitializedOp``, then ``ReadVariableOp``); one never
  initialized reads as the error value ``uninitialized``.
- A run that TensorFlow fails (reading an uninitialized variable is a
  ``FailedPrecondition`` there, where tfsem's semantics propagates an error
  value) is not an outcome: `TensorFlowRunError` says so with TensorFlow's
  message.

``xla`` mode: the same session with XLA auto-clustering switched on for CPU
(``global_jit_level = ON_1``, ``TF_XLA_FLAGS=--tf_xla_cpu_global_jit
--tf_xla_min_cluster_size=1``).  TensorFlow's mark-for-compilation pass then
groups the graph's nodes into clusters run by ``_XlaCompile``/``_XlaRun``,
which read every resource a cluster uses at its start and write them back at
its end: the reordering seed 002 ("Load/Store Reordering") warns about, where
TensorFlow's clustering would allow it.  `clusters()` reports which node went
into which cluster.  The flags must be in the environment before TensorFlow
reads them; `tensorflow()` sets them (appending to a user's TF_XLA_FLAGS) when
it imports TensorFlow; they change nothing for sessions without jit.

`force_schedule` adds control edges that chain nodes in a given order, so that
a counterexample's schedule is the only one TensorFlow can follow: that is how
a verdict's schedule is replayed on TensorFlow.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

MODES = ("tensorflow", "xla")
DEFAULT_INTER_OP_THREADS = 4


class TensorFlowRunError(RuntimeError):
    """TensorFlow failed a run, or cannot run the graph as given."""


def tensorflow():
    """TensorFlow, imported once (graphdef.grappler.tensorflow), with the XLA
    CPU auto-clustering flags set before its first session."""
    from tfsem.graphdef.grappler import tensorflow as tf_import  # noqa: PLC0415
    return tf_import()


@dataclass
class Observed:
    """Distinct outcomes over `runs` runs, each with its count (first seen first)."""
    runs: int
    counts: Counter

    def items(self):
        return list(self.counts.items())


def _tensor_name(name: str) -> str:
    name = name.lstrip("^")
    head, sep, tail = name.rpartition(":")
    return name if sep and tail.isdigit() else f"{name}:0"


def _node_name(name: str) -> str:
    return _tensor_name(name).rpartition(":")[0]


def variables_of(graph_def) -> dict[str, Any]:
    """shared_name (or node name when empty) -> the first VarHandleOp node of it."""
    out: dict[str, Any] = {}
    for n in graph_def.node:
        if n.op == "VarHandleOp":
            name = n.attr["shared_name"].s.decode() or n.name
            out.setdefault(name, n)
    return out


def force_schedule(graph_def, order: Sequence[str]):
    """A copy of `graph_def` where each node of `order` that is in the graph
    gets a control edge from the one before it: TensorFlow must run them in
    that order.  `order` must be consistent with the graph's edges (a
    schedule of it), else the result has a cycle and TensorFlow rejects it."""
    tf = tensorflow()
    out = tf.compat.v1.GraphDef()
    out.CopyFrom(graph_def)
    by_name = {n.name: n for n in out.node}
    prev = None
    for name in order:
        node = by_name.get(name)
        if node is None:
            continue
        if prev is not None and f"^{prev}" not in node.input:
            node.input.append(f"^{prev}")
        prev = name
    return out


class GraphRunner:
    """A graph loaded into a session, ready to run many times from σ."""

    def __init__(self, graph: Any, outputs: Mapping[str, str], targets: Sequence[str] = (),
                 *, mode: str = "tensorflow", inter_op_threads: int = DEFAULT_INTER_OP_THREADS,
                 observe: str = "outputs+state"):
        if mode not in MODES:
            raise ValueError(f"unknown TensorFlow backend mode {mode!r} (one of {', '.join(MODES)})")
        tf = tensorflow()
        from tfsem.graphdef.grappler import as_graph_def  # noqa: PLC0415
        self.tf = tf
        self.mode = mode
        self.observe = observe
        self.graph_def = as_graph_def(graph)
        self.outputs = {k: _tensor_name(v) for k, v in outputs.items()}
        self.targets = [_node_name(t) for t in targets]
        names = {n.name for n in self.graph_def.node}
        for what, n in [*((f"output {k}", _node_name(v)) for k, v in self.outputs.items()),
                        *(("target", t) for t in self.targets)]:
            if n not in names:
                raise TensorFlowRunError(f"{what}: {n!r} is not a node of the graph")
        self.var_nodes = variables_of(self.graph_def)
        self.placeholders = {n.name for n in self.graph_def.node if n.op == "Placeholder"}
        g = tf.Graph()
        with g.as_default():
            try:
                tf.import_graph_def(self.graph_def, name="")
            except Exception as exc:
                raise TensorFlowRunError(f"TensorFlow cannot load the graph: {exc}") from exc
            self._init_ph, self._assign, self._destroy, self._is_init, self._read = {}, {}, [], {}, {}
            for i, (var, node) in enumerate(sorted(self.var_nodes.items())):
                # a handle of our own to the same resource (same container and
                # shared_name): the graph's VarHandleOp may have control inputs,
                # which resetting or reading the variable must not run
                dtype = tf.dtypes.as_dtype(node.attr["dtype"].type)
                with tf.name_scope(f"tfsem_backend/v{i}"):
                    handle = tf.raw_ops.VarHandleOp(
                        dtype=dtype, shape=tf.TensorShape(node.attr["shape"].shape),
                        container=node.attr["container"].s.decode(),
                        shared_name=node.attr["shared_name"].s.decode() or node.name,
                        name="handle")
                    ph = tf.compat.v1.placeholder(dtype, None, name="init")
                    self._init_ph[var] = ph
                    self._assign[var] = tf.raw_ops.AssignVariableOp(resource=handle, value=ph)
                    self._destroy.append(tf.raw_ops.DestroyResourceOp(
                        resource=handle, ignore_lookup_error=True))
                    self._is_init[var] = tf.raw_ops.VarIsInitializedOp(resource=handle)
                    self._read[var] = tf.raw_ops.ReadVariableOp(resource=handle, dtype=dtype)
        config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=inter_op_threads,
                                          intra_op_parallelism_threads=1)
        if mode == "xla":
            config.graph_options.optimizer_options.global_jit_level = \
                tf.compat.v1.OptimizerOptions.ON_1
        self.graph = g
        self.session = tf.compat.v1.Session(graph=g, config=config)

    def close(self) -> None:
        self.session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _set_state(self, init: Mapping[str, Any]) -> None:
        from tfsem.oracle.values import Error  # noqa: PLC0415
        unknown = sorted(set(init) - set(self.var_nodes))
        if unknown:
            raise TensorFlowRunError(f"variable {unknown[0]!r} is not in the graph "
                                     f"(variables: {', '.join(sorted(self.var_nodes))})")
        self.session.run(self._destroy)
        ops, feed = [], {}
        for var, value in init.items():
            if isinstance(value, Error):
                if value.reason != "uninitialized":
                    raise TensorFlowRunError(f"variable {var}: TensorFlow has no error value "
                                             f"{value.reason!r}")
                continue
            ops.append(self._assign[var])
            feed[self._init_ph[var]] = _array(value)
        if ops:
            self.session.run(ops, feed)

    def _feed_dict(self, feeds: Mapping[str, Any]) -> dict:
        out = {}
        for name, value in feeds.items():
            if name not in self.placeholders:
                raise TensorFlowRunError(f"feed {name!r} is not a Placeholder of the graph")
            out[f"{name}:0"] = _array(value)
        return out

    def run_once(self, feeds: Mapping[str, Any], init: Mapping[str, Any]):
        """One run from σ = (feeds, init); the tfsem Outcome."""
        tf = self.tf
        from tfsem.oracle.outcomes import make_outcome  # noqa: PLC0415
        from tfsem.oracle.values import Error, Tensor  # noqa: PLC0415
        self._set_state(init)
        fetch_names = list(self.outputs)
        try:
            values = self.session.run([self.outputs[k] for k in fetch_names] + self.targets,
                                      self._feed_dict(feeds))
        except tf.errors.OpError as exc:
            raise TensorFlowRunError(f"TensorFlow failed the run: {type(exc).__name__}: "
                                     f"{_op_error_text(exc)}") from exc
        outs = {k: Tensor(np.asarray(v)) for k, v in zip(fetch_names, values)}
        state = {}
        if self.observe != "outputs":
            inited = self.session.run(self._is_init)
            reads = self.session.run({v: self._read[v] for v, ok in inited.items() if ok})
            for v in self.var_nodes:
                state[v] = Tensor(np.asarray(reads[v])) if v in reads else Error("uninitialized")
        return make_outcome(outs, state, self.observe)

    def run_many(self, feeds: Mapping[str, Any], init: Mapping[str, Any], runs: int) -> Observed:
        seen = Observed(0, Counter())
        for _ in range(runs):
            seen.counts[self.run_once(feeds, init)] += 1
            seen.runs += 1
        return seen

    def clusters(self, feeds: Mapping[str, Any], init: Mapping[str, Any]) -> dict[str, Any]:
        """xla mode: how XLA clustered one traced run.  ``{"clusters": {name:
        [variables it reads or writes]}, "unclustered": [graph nodes the
        executor ran itself]}``; no clusters in tensorflow mode.  (Which node
        went into which cluster is not in the run's partition graphs; set
        ``TF_DUMP_GRAPH_PREFIX`` and ``--tf_xla_clustering_debug`` to see it.)"""
        tf = self.tf
        self._set_state(init)
        opts = tf.compat.v1.RunOptions(output_partition_graphs=True)
        meta = tf.compat.v1.RunMetadata()
        self.session.run([self.outputs[k] for k in self.outputs] + self.targets,
                         self._feed_dict(feeds), options=opts, run_metadata=meta)
        own = {n.name for n in self.graph_def.node}
        handle_var = {node.name: var for var, node in self.var_nodes.items()}
        for n in self.graph_def.node:   # every handle of a shared_name names its variable
            if n.op == "VarHandleOp":
                handle_var[n.name] = n.attr["shared_name"].s.decode() or n.name
        clusters: dict[str, list[str]] = {}
        unclustered: set[str] = set()
        for pg in meta.partition_graphs:
            for n in pg.node:
                if n.op == "_XlaCompile":
                    name = n.attr["function"].func.name
                    clusters[name] = sorted({handle_var[i.split(":")[0]] for i in n.input
                                             if i.split(":")[0] in handle_var})
                elif n.name in own and n.op not in ("VarHandleOp", "Const", "NoOp"):
                    unclustered.add(n.name)
        return {"clusters": dict(sorted(clusters.items())), "unclustered": sorted(unclustered)}


def _op_error_text(exc: Exception) -> str:
    """TensorFlow's message without its Python stack: the lines that say what
    failed, where (at most 400 characters)."""
    lines = [ln.strip() for ln in (getattr(exc, "message", "") or str(exc)).splitlines()]
    keep = [ln for ln in lines if ln and not ln.startswith(("File ", "Original stack", "Detected at"))
            and "most recent call last" not in ln]
    return " ".join(keep)[:400]


def _array(value: Any) -> np.ndarray:
    from tfsem.oracle.values import Tensor  # noqa: PLC0415
    if isinstance(value, Tensor):
        return np.asarray(value.array)
    return np.asarray(value)


def run_graph(graph: Any, outputs: Mapping[str, str], targets: Sequence[str],
              feeds: Mapping[str, Any], init: Mapping[str, Any], runs: int, *,
              mode: str = "tensorflow", inter_op_threads: int = DEFAULT_INTER_OP_THREADS,
              observe: str = "outputs+state") -> Observed:
    """Run `graph` `runs` times from σ; the distinct outcomes and their counts."""
    with GraphRunner(graph, outputs, targets, mode=mode, inter_op_threads=inter_op_threads,
                     observe=observe) as r:
        return r.run_many(feeds, init, runs)


def confirm_on_tensorflow(graph: Any, outputs: Mapping[str, str], targets: Sequence[str],
                          counterexample: Any, *, observe: str = "outputs+state",
                          mode: str = "tensorflow") -> tuple[bool, str]:
    """Replay an `unsound` verdict's counterexample on TensorFlow: the
    rewritten `graph` with the counterexample's schedule forced by control
    edges (`force_schedule`; steps that are not nodes of the graph, such as
    nodes of inlined functions, cannot be forced and are left free), run once
    from its σ.  Confirmed when TensorFlow's outcome is the counterexample's
    (which the checker showed is not among the original's outcomes).
    Returns (confirmed, what happened)."""
    from tfsem.checking.minimize import step_node  # noqa: PLC0415
    order = list(dict.fromkeys(step_node(s) for s in counterexample.schedule))
    gd = force_schedule(_graph_def(graph), order)
    try:
        with GraphRunner(gd, outputs, targets, mode=mode, observe=observe) as runner:
            got = runner.run_once(counterexample.feeds, counterexample.init)
    except TensorFlowRunError as exc:
        return False, str(exc)
    if got == counterexample.outcome:
        return True, f"TensorFlow ({mode}) gave the counterexample's outcome: {got.describe()}"
    return False, (f"TensorFlow ({mode}) gave {got.describe()}, not the counterexample's "
                   f"{counterexample.outcome.describe()}")


def _graph_def(graph: Any):
    from tfsem.graphdef.grappler import as_graph_def  # noqa: PLC0415
    tensorflow()
    return as_graph_def(graph)
