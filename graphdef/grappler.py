"""Run TensorFlow's real Grappler on a GraphDef: one optimizer alone, or the
default pipeline, and say what changed.

This module is the only place tfsem drives Grappler.  It needs TensorFlow (the
optional extra ``tfsem[tensorflow]``); importing it does not: TensorFlow is
imported on the first call, and `TensorFlowMissing` says how to install it.

How Grappler is driven (the same path as ``tf.compat.v1`` tooling and
TensorFlow's own Grappler tests, ``tensorflow/python/grappler/tf_optimizer.py``):
the GraphDef goes into a ``MetaGraphDef`` whose ``"train_op"`` collection lists
the fetch and target nodes, because Grappler prunes every node that no fetch
needs and must never remove a fetch; a ``ConfigProto``'s ``RewriterConfig``
selects the optimizers, and ``tf_optimizer.OptimizeGraph`` runs the
meta-optimizer on a local CPU cluster.

- One optimizer alone: ``RewriterConfig.optimizers = [NAME]`` (the
  meta-optimizer then runs exactly the listed optimizers, on the graph and on
  every function of its library).
- The default pipeline (``DEFAULT_PIPELINE``): an empty ``optimizers`` list and
  the default toggles, as ``Session``/``tf.function`` run it.

In both cases ``min_graph_nodes = -1`` (Grappler skips graphs of fewer than 4
nodes by default, which would hide what it does to small graphs) and
``fail_on_optimizer_errors = True`` (an optimizer that fails is an error here,
not a silently unoptimized graph).  Grappler ignores an optimizer name it does
not know, so names are checked against `OPTIMIZERS` first; ``autoparallel`` is
left out because TensorFlow aborts the whole process (a CHECK failure) when it
is asked for without a replica count.

Placement (`placed`, ``run_grappler(place=True)``, what `tfsem grappler` does
by default): TensorFlow places a graph before Grappler sees it.  For a
``tf.function``, ``OptimizeFunctionGraph``
(core/common_runtime/optimize_function_graph_utils.cc) runs the pre-placement
passes, then the ``Placer``, then the post-placement passes, and only then
Grappler (``optimize_graph_fn``); the graph Grappler gets carries each node's
assigned device, on a CPU-only host ``CPU_DEVICE``.  Placement changes what
Grappler may do: the remapper fuses a contraction (MatMul, Conv2D) with its
BiasAdd and activation only on a node it sees on a CPU (remapper.cc
``NodeIsOnCpu``), and a node with no device is on none.  `placed` puts every
node that names no device, in the graph and in its library's functions, on
``CPU_DEVICE`` and leaves a node that names one as it is.  A node's device is
no part of tfsem's semantics (the importer ignores it) nor of what counts as a
change (`_node_key`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

#: The name that selects Grappler's default pipeline instead of one optimizer.
DEFAULT_PIPELINE = "default"

#: Grappler's optimizers by the name ``RewriterConfig.optimizers`` takes
#: (``MetaOptimizer::MakeNewOptimizer`` in TensorFlow), each with what it does.
OPTIMIZERS: dict[str, str] = {
    "pruning": "model pruning: removes nodes no fetch needs, Identity/NoOp forwarding",
    "function": "function optimizer: inlines and specializes library functions",
    "constfold": "constant folding, and removal of nodes whose result is never used",
    "shape": "shape optimizer: simplifies Shape/Size/Rank computations",
    "remap": "remapper: fuses op patterns (MatMul+BiasAdd+Relu, ...) into fused ops",
    "arithmetic": "arithmetic optimizer: algebraic simplification, hoisting, CSE of ops",
    "dependency": "dependency optimizer: removes or rewires control dependencies and "
                  "Identity/NoOp nodes",
    "loop": "loop optimizer: loop-invariant code motion, stack push removal",
    "layout": "layout optimizer: NHWC/NCHW conversions (mostly GPU)",
    "memory": "memory optimizer: recomputation and swapping heuristics",
    "common_subgraph_elimination": "removes duplicate subgraphs (CSE)",
    "debug_stripper": "removes Assert/CheckNumerics/Print nodes",
    "scoped_allocator": "scoped allocator optimizer (collective ops)",
    "pin_to_host": "pins small integer ops to the host",
    "implementation_selector": "chooses among function implementations per device",
    "auto_mixed_precision": "rewrites float32 to float16 where safe (GPU only)",
}

#: What `tfsem grappler` runs when no optimizer is named: every optimizer that
#: can act on a CPU graph with variables, each alone, then the default pipeline.
DEFAULT_OPTIMIZERS: tuple[str, ...] = (
    "pruning", "function", "constfold", "shape", "remap", "arithmetic", "dependency",
    "loop", "memory", "common_subgraph_elimination", "debug_stripper", "pin_to_host",
    DEFAULT_PIPELINE,
)

#: XLA flags that let `--backend xla` auto-cluster on CPU
XLA_FLAGS = ("--tf_xla_cpu_global_jit", "--tf_xla_min_cluster_size=1")

#: the device the placer gives a node that names none, on a CPU-only host
CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"

INSTALL_HINT = "needs the extra tfsem[tensorflow]: pip install 'tfsem[tensorflow]'"


class TensorFlowMissing(RuntimeError):
    """TensorFlow cannot be imported; the message says how to install it."""


class GrapplerError(RuntimeError):
    """Grappler failed on the graph (the message is TensorFlow's)."""


_tf = None


def tensorflow():
    """Import TensorFlow once, quietly; raise `TensorFlowMissing` if it is absent."""
    global _tf
    if _tf is None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        # XLA's CPU auto-clustering flags (backends/tensorflow.py, `--backend
        # xla`): TensorFlow reads TF_XLA_FLAGS once, at its first session, so
        # they are set with the import; sessions without jit ignore them
        flags = os.environ.get("TF_XLA_FLAGS", "")
        missing = [f for f in XLA_FLAGS if f.split("=")[0] not in flags]
        if missing:
            os.environ["TF_XLA_FLAGS"] = " ".join([flags, *missing]).strip()
        # each session's CPU device with a thread pool of its own size: by
        # default the first device made in the process (Grappler's cluster,
        # with one thread per core) fixes the pool every later session
        # shares, and a replay's session asked for one intra-op thread --
        # the summation order of the kernels' child (oracle/kernels.py) --
        # got two: after Grappler ran, MobileNetV2's convolution gradients
        # came out different in the last bits and its counterexample was
        # not confirmed; in a fresh process it was.  Read once, at the
        # first device: set with the import
        os.environ.setdefault("TF_OVERRIDE_GLOBAL_THREADPOOL", "1")
        try:
            import tensorflow as tf  # noqa: PLC0415
        except Exception as exc:  # ImportError, or a broken install
            raise TensorFlowMissing(f"{INSTALL_HINT} ({type(exc).__name__}: {exc})") from exc
        _tf = tf
    return _tf


def available() -> bool:
    try:
        tensorflow()
    except TensorFlowMissing:
        return False
    return True


def check_optimizer_names(names: Iterable[str]) -> list[str]:
    """The names, or ValueError naming the first unknown one and the known ones."""
    out = []
    for n in names:
        if n != DEFAULT_PIPELINE and n not in OPTIMIZERS:
            known = ", ".join([*OPTIMIZERS, DEFAULT_PIPELINE])
            raise ValueError(f"unknown Grappler optimizer {n!r} (known: {known})")
        out.append(n)
    return out


def as_graph_def(graph: Any):
    """A TensorFlow ``GraphDef`` from binary bytes, pbtxt text, a path, or a GraphDef."""
    tf = tensorflow()
    from google.protobuf import text_format  # noqa: PLC0415  (TensorFlow's dependency)
    if isinstance(graph, tf.compat.v1.GraphDef):
        return graph
    if isinstance(graph, os.PathLike) or (isinstance(graph, str) and "\n" not in graph
                                          and os.path.exists(graph)):
        path = os.fspath(graph)
        with open(path, "rb") as f:
            data = f.read()
        if path.endswith(".pbtxt"):
            graph = data.decode("utf-8")
        else:
            graph = data
    gd = tf.compat.v1.GraphDef()
    if isinstance(graph, str):
        text_format.Parse(graph, gd)
    elif isinstance(graph, (bytes, bytearray, memoryview)):
        gd.ParseFromString(bytes(graph))
    elif hasattr(graph, "SerializeToString"):
        gd.ParseFromString(graph.SerializeToString())
    else:
        raise TypeError(f"not a graph: {type(graph).__name__}")
    return gd


def placed_bytes(data: bytes, device: str = CPU_DEVICE) -> bytes:
    """Serialized GraphDef `data` with every node that names no device (in the
    graph and in its library's functions) placed on `device`, as TensorFlow's
    placer places a function's graph before Grappler runs on it (see the
    module docstring).  Needs no TensorFlow (tfsem's own codec)."""
    from tfsem.graphdef.proto import decode, encode  # noqa: PLC0415
    graph = decode("tensorflow.GraphDef", bytes(data))
    nodes = list(graph.get("node", []))
    for f in (graph.get("library") or {}).get("function", []):
        nodes.extend(f.get("node_def", []))
    for n in nodes:
        if not n.get("device"):
            n["device"] = device
    return encode("GraphDef", graph)


def placed(graph: Any, device: str = CPU_DEVICE):
    """A TensorFlow ``GraphDef`` (from whatever `as_graph_def` reads): `graph`
    with every unplaced node on `device` (`placed_bytes`); `graph` itself is
    not changed."""
    gd = as_graph_def(graph)
    out = type(gd)()
    out.CopyFrom(gd)
    for n in out.node:
        if not n.device:
            n.device = device
    for f in out.library.function:
        for n in f.node_def:
            if not n.device:
                n.device = device
    return out


def placement(graph: Any) -> str:
    """What the graph's nodes are placed on, in words: one device, or how
    many distinct ones (a graph as `placed` leaves it)."""
    gd = as_graph_def(graph)
    devices = {n.device for n in gd.node} | {n.device for f in gd.library.function
                                              for n in f.node_def}
    if not devices:
        return "no nodes"
    if devices == {""}:
        return "no device (unplaced)"
    if len(devices) == 1:
        return next(iter(devices))
    return f"{len(devices)} devices ({', '.join(sorted(d or '(none)' for d in devices)[:3])}...)"


def fetch_node(name: str) -> str:
    """The node of a fetch: ``"n:0"`` -> ``"n"``, ``"^n"`` -> ``"n"``."""
    name = name.lstrip("^")
    head, sep, tail = name.rpartition(":")
    return head if sep and tail.isdigit() else name


@dataclass
class NodeDiff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"added": self.added, "removed": self.removed, "changed": self.changed}


@dataclass
class GrapplerResult:
    """One Grappler run: the optimized graph and what changed."""
    optimizer: str
    graph_def: Any                      # the optimized tf GraphDef
    seconds: float
    nodes_before: int
    nodes_after: int
    function_nodes_before: int
    function_nodes_after: int
    graph: NodeDiff                     # nodes of the top-level graph
    functions: dict[str, NodeDiff]      # per library function (name -> diff)
    functions_added: list[str]
    functions_removed: list[str]

    @property
    def graph_bytes(self) -> bytes:
        return self.graph_def.SerializeToString()

    @property
    def changed(self) -> bool:
        return bool(self.graph.added or self.graph.removed or self.graph.changed
                    or self.functions or self.functions_added or self.functions_removed)

    def summary(self) -> str:
        """One line: node counts and how many nodes were added/removed/changed."""
        parts = [f"nodes {self.nodes_before} -> {self.nodes_after}"]
        if self.function_nodes_before or self.function_nodes_after:
            parts.append(f"function nodes {self.function_nodes_before} -> "
                         f"{self.function_nodes_after}")
        d = self.graph
        n_add = len(d.added) + sum(len(f.added) for f in self.functions.values())
        n_rem = len(d.removed) + sum(len(f.removed) for f in self.functions.values())
        n_chg = len(d.changed) + sum(len(f.changed) for f in self.functions.values())
        parts.append(f"{n_add} added, {n_rem} removed, {n_chg} changed")
        if self.functions_added or self.functions_removed:
            parts.append(f"functions +{len(self.functions_added)} -{len(self.functions_removed)}")
        return ", ".join(parts)

    def to_json(self) -> dict:
        return {
            "optimizer": self.optimizer,
            "seconds": round(self.seconds, 6),
            "nodes_before": self.nodes_before,
            "nodes_after": self.nodes_after,
            "function_nodes_before": self.function_nodes_before,
            "function_nodes_after": self.function_nodes_after,
            "changed": self.changed,
            "graph": self.graph.to_json(),
            "functions": {k: v.to_json() for k, v in sorted(self.functions.items())},
            "functions_added": self.functions_added,
            "functions_removed": self.functions_removed,
        }


def _attr_key(value) -> Any:
    """An attribute's identity; a tensor by its value, not its encoding
    (Grappler re-encodes constants: ``int64_val: 0`` becomes no value at all,
    which a TensorProto reads as zeros)."""
    if value.HasField("tensor"):
        from tensorflow.python.framework import tensor_util  # noqa: PLC0415
        try:
            arr = tensor_util.MakeNdarray(value.tensor)
            return ("tensor", arr.dtype.str, arr.shape, arr.tobytes())
        except Exception:  # a tensor numpy cannot hold (e.g. strings): by encoding
            pass
    return value.SerializeToString(deterministic=True)


def _node_key(node) -> tuple:
    attrs = tuple(sorted((k, _attr_key(v)) for k, v in node.attr.items()
                         if not k.startswith("_")))
    return node.op, tuple(node.input), attrs


def _with_defaults(node):
    """A copy of NodeDef `node` with every attribute its OpDef gives a default
    filled in, without internal `_` attributes, and with inputs "n:0" written
    "n" (one tensor): Grappler fills defaults in, which is no change."""
    from tensorflow.python.framework import op_def_registry  # noqa: PLC0415
    node = type(node).FromString(node.SerializeToString())
    op_def = op_def_registry.get(node.op)
    if op_def is not None:
        for a in op_def.attr:
            if a.HasField("default_value") and a.name not in node.attr:
                node.attr[a.name].CopyFrom(a.default_value)
    for k in [k for k in node.attr if k.startswith("_")]:
        del node.attr[k]
    for i, name in enumerate(node.input):
        if name.endswith(":0"):
            node.input[i] = name[:-2]
    return node


def really_changed(before, after) -> bool:
    """Whether Grappler changed GraphDef `before` into `after` beyond filling
    in default attributes (`GrapplerResult.changed` counts those, so it is
    true of almost every graph).  Needs TensorFlow (the OpDefs)."""
    a = {n.name: _node_key(_with_defaults(n)) for n in before.node}
    b = {n.name: _node_key(_with_defaults(n)) for n in after.node}
    return a != b


def _diff_nodes(before: Sequence, after: Sequence) -> NodeDiff:
    a = {n.name: _node_key(n) for n in before}
    b = {n.name: _node_key(n) for n in after}
    return NodeDiff(added=sorted(set(b) - set(a)), removed=sorted(set(a) - set(b)),
                    changed=sorted(k for k in set(a) & set(b) if a[k] != b[k]))


def diff_graphs(before, after) -> tuple[NodeDiff, dict[str, NodeDiff], list[str], list[str]]:
    """What changed from GraphDef `before` to `after`: top-level nodes, per function."""
    graph = _diff_nodes(before.node, after.node)
    fa = {f.signature.name: f for f in before.library.function}
    fb = {f.signature.name: f for f in after.library.function}
    functions = {}
    for name in sorted(set(fa) & set(fb)):
        d = _diff_nodes(fa[name].node_def, fb[name].node_def)
        if d.added or d.removed or d.changed or dict(fa[name].ret) != dict(fb[name].ret) \
                or dict(fa[name].control_ret) != dict(fb[name].control_ret):
            functions[name] = d
    return graph, functions, sorted(set(fb) - set(fa)), sorted(set(fa) - set(fb))


def run_grappler(graph: Any, fetches: Sequence[str], optimizer: str = DEFAULT_PIPELINE,
                 place: bool = False) -> GrapplerResult:
    """Run one Grappler optimizer (a name of `OPTIMIZERS`) or the default pipeline
    (`DEFAULT_PIPELINE`) on `graph` (bytes, pbtxt text, a path or a GraphDef),
    keeping the nodes of `fetches` (tensor names ``n:k`` or node names; targets
    too).  `place`: give Grappler the graph `placed` on the CPU, as TensorFlow
    does (`tfsem grappler` does by default); the diff is against `graph` as
    given (a device is no change, `_node_key`).  Raises `TensorFlowMissing`, ValueError (unknown optimizer, no fetch,
    a fetch that is not a node) or `GrapplerError`."""
    check_optimizer_names([optimizer])
    tf = tensorflow()
    from tensorflow.core.protobuf import config_pb2, meta_graph_pb2  # noqa: PLC0415
    from tensorflow.python.grappler import tf_optimizer  # noqa: PLC0415

    gd = as_graph_def(graph)
    nodes = [fetch_node(f) for f in fetches]
    if not nodes:
        raise ValueError("Grappler needs at least one fetch (else it prunes every node)")
    names = {n.name for n in gd.node}
    missing = [n for n in nodes if n not in names]
    if missing:
        raise ValueError(f"fetch {missing[0]!r} is not a node of the graph")

    mg = meta_graph_pb2.MetaGraphDef()
    mg.graph_def.CopyFrom(placed(gd) if place else gd)
    mg.collection_def["train_op"].node_list.value.extend(dict.fromkeys(nodes))
    config = config_pb2.ConfigProto()
    rc = config.graph_options.rewrite_options
    rc.min_graph_nodes = -1
    rc.fail_on_optimizer_errors = True
    if optimizer != DEFAULT_PIPELINE:
        rc.optimizers.append(optimizer)
    start = time.perf_counter()
    try:
        out = tf_optimizer.OptimizeGraph(config, mg, verbose=False)
    except Exception as exc:  # TensorFlow raises its own error types
        raise GrapplerError(f"Grappler ({optimizer}) failed: {exc}") from exc
    seconds = time.perf_counter() - start
    diff, functions, fadd, frem = diff_graphs(gd, out)
    del tf
    return GrapplerResult(
        optimizer=optimizer, graph_def=out, seconds=seconds,
        nodes_before=len(gd.node), nodes_after=len(out.node),
        function_nodes_before=sum(len(f.node_def) for f in gd.library.function),
        function_nodes_after=sum(len(f.node_def) for f in out.library.function),
        graph=diff, functions=functions, functions_added=fadd, functions_removed=frem)
