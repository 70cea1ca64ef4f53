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
a verdict's schedule is replayed on TensorFlow (`replay_program`,
`replay_graph`: `tfsem check` and `tfsem grappler` replay every `unsound`
verdict that way; see the comment above `Replay`).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

MODES = ("tensorflow", "xla")
DEFAULT_INTER_OP_THREADS = 4


class TensorFlowRunError(RuntimeError):
    """TensorFlow failed a run, or cannot run the graph as given."""


class TensorFlowRunFailed(TensorFlowRunError):
    """TensorFlow ran the graph and one of its ops failed the run (an
    OpError: an uninitialized variable read, CheckNumerics on a NaN, a
    closed stack pushed): where tfsem's semantics carries an error value."""


class ReplayTimeout(RuntimeError):
    """A replay's deadline passed (the message says at which stage)."""


def _check_deadline(deadline: float | None, stage: str) -> None:
    """Raise ReplayTimeout when `deadline` (a time.monotonic() value) has passed."""
    if deadline is not None and time.monotonic() >= deadline:
        raise ReplayTimeout(f"the time budget ran out before {stage}")


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
    schedule of it), else the result has a cycle and TensorFlow rejects it.
    Edges stay in the frame where TensorFlow places them: an Enter is never
    the source of a forced edge (its control output is inside its loop: the
    node after it waits for the ones before it instead) and an Exit never
    the target (its input is inside the loop: it is forced only as a source,
    beside the node before it)."""
    from tfsem.oracle.opdefs import control  # noqa: PLC0415 (the control family's op names)
    tf = tensorflow()
    out = tf.compat.v1.GraphDef()
    out.CopyFrom(graph_def)
    by_name = {n.name: n for n in out.node}
    prevs: list[str] = []
    for name in order:
        node = by_name.get(name)
        if node is None:
            continue
        if node.op in control.LOOP_EXITS:
            prevs.append(name)
            continue
        for prev in prevs:
            if f"^{prev}" not in node.input:
                node.input.append(f"^{prev}")
        if node.op not in control.LOOP_ENTRIES:
            prevs = [name]
    return out


class GraphRunner:
    """A graph loaded into a session, ready to run many times from σ."""

    def __init__(self, graph: Any, outputs: Mapping[str, str], targets: Sequence[str] = (),
                 *, mode: str = "tensorflow", inter_op_threads: int = DEFAULT_INTER_OP_THREADS,
                 observe: str = "outputs+state", optimize: bool = True):
        """`optimize=False` switches off what the session would do to the
        graph before running it (Grappler's meta-optimizer, and the classic
        graph optimizer's common subexpression elimination and constant
        folding): a replay runs the graph as given, control edges included."""
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
        if not optimize:
            config.graph_options.rewrite_options.disable_meta_optimizer = True
            config.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
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

    def run_once(self, feeds: Mapping[str, Any], init: Mapping[str, Any],
                 deadline: float | None = None):
        """One run from σ = (feeds, init); the tfsem Outcome.  With `deadline`
        (a time.monotonic() value), the run is TensorFlow's with that much
        time (RunOptions.timeout_in_ms): past it, ReplayTimeout."""
        tf = self.tf
        from tfsem.oracle.outcomes import make_outcome  # noqa: PLC0415
        from tfsem.oracle.values import Error, Tensor  # noqa: PLC0415
        self._set_state(init)
        fetch_names = list(self.outputs)
        options = None
        if deadline is not None:
            _check_deadline(deadline, "TensorFlow's run")
            ms = max(1, int((deadline - time.monotonic()) * 1000))
            options = tf.compat.v1.RunOptions(timeout_in_ms=ms)
        try:
            values = self.session.run([self.outputs[k] for k in fetch_names] + self.targets,
                                      self._feed_dict(feeds), options=options)
        except tf.errors.DeadlineExceededError as exc:
            raise ReplayTimeout("the time budget ran out during TensorFlow's run "
                                f"({_op_error_text(exc)})") from exc
        except tf.errors.OpError as exc:
            raise TensorFlowRunFailed(f"TensorFlow failed the run: {type(exc).__name__}: "
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


# --- replaying an `unsound` verdict's counterexample on TensorFlow ------------------
#
# Used by `tfsem check` (tfsem/commands/check.py) and `tfsem grappler`
# (tfsem/commands/grappler.py).  The replay only ever adds "tensorflow" to a
# verdict's `confirmed`: it never changes the verdict.  Confirmed means: the
# graph, with the counterexample's schedule forced by control edges and run by
# the executor with the session's own optimizers off, from the
# counterexample's σ, gave exactly the counterexample's outcome (SPEC section
# 2 equality), and that outcome is none of the original's outcomes listed in
# the verdict (the checker showed it is none of them all).
#
# Decomposed semantics (seed 002): a schedule may run other nodes between an
# Assign's read step (n@read) and its write step (n@write), which TensorFlow's
# executor cannot do inside one AssignAddVariableOp (it holds the variable's
# lock).  `plan_schedule` first moves every Assign's read to just before its
# write (one atomic step, as TensorFlow runs it) and keeps that order only if
# the reference semantics still gives the counterexample's outcome with it;
# otherwise, for an exported program, the Assign-Add/Sub nodes whose steps are
# apart are exported as three nodes (ReadVariableOp, AddV2/Sub,
# AssignVariableOp: graphdef/exporter.py `split_assigns`) whose read is forced
# where the schedule has it, checked the same way; a given graph is never
# rewritten, so there the replay says "decomposed schedule" and does not run.
# A Write's read step reads a value Snd ignores: it never needs splitting.


class NotReplayable(Exception):
    """The counterexample cannot be replayed on TensorFlow (the message says why)."""


@dataclass
class Replay:
    """What replaying a counterexample on TensorFlow gave.  `confirmed` only
    when TensorFlow's outcome is the counterexample's; otherwise `reason`
    says why not, naming the node or op."""
    confirmed: bool
    reason: str
    graph: str = ""
    forced: list[str] = field(default_factory=list)   # graph nodes, in the forced order
    free: list[str] = field(default_factory=list)     # schedule steps that are no graph node
    split: list[str] = field(default_factory=list)    # Assigns exported as read/compute/write
    outcome: Any = None                                # TensorFlow's Outcome, when it ran
    mode: str = "tensorflow"
    version: str = ""
    budget: bool = False    # not replayed: the time budget ran out first (`reason` says where)
    #: the replay of the original's witness schedules (`with_original`):
    #: {"graph", "outcomes", "listed", "replayed", "failed_runs", "agreed"}
    #: (`failed_runs`: those of the replayed whose run TensorFlow failed
    #: where the oracle's outcome has an error output); None where it
    #: was not attempted (the rewritten program's replay did not confirm)
    original: dict[str, Any] | None = None
    #: TensorFlow ran the graph and an op failed the run (TensorFlowRunFailed)
    run_failed: bool = False
    #: the original's other schedules, one run per reads-from class
    #: (`with_original`): {"runs", "replayed", "failed_runs"}, or
    #: {"not_run": why}; None where the original's side stopped before
    classes: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"status": "confirmed" if self.confirmed else "not-replayed",
               "confirmed": self.confirmed, "reason": self.reason, "budget": self.budget,
               "graph": self.graph,
               "forced_schedule": list(self.forced), "free_steps": list(self.free),
               "split_assigns": list(self.split),
               "outcome": None if self.outcome is None else self.outcome.to_json(),
               "mode": self.mode, "tensorflow": self.version}
        if self.original is not None:
            out["original"] = dict(self.original)
        if self.classes is not None:
            out["original_classes"] = dict(self.classes)
        return out

    def describe(self) -> str:
        """One line for a verdict's text."""
        if self.confirmed:
            return f"TensorFlow {self.version}: {self.reason}"
        if self.budget:
            return (f"not replayed on TensorFlow within the time budget: {self.reason} (the "
                    "verdict is the oracle's alone)")
        return f"not replayed on TensorFlow: {self.reason}"


def _out_of_time(exc: ReplayTimeout, label: str, mode: str, **fields: Any) -> Replay:
    return Replay(False, str(exc), label, mode=mode, budget=True, **fields)


def _gives(p, cx, schedule: Sequence[str], semantics: str, observe: str) -> bool:
    """Does `schedule` of p, from the counterexample's σ, give its outcome?"""
    from tfsem.oracle.semantics import graph_of, outcome_of, run_schedule  # noqa: PLC0415
    try:
        s = run_schedule(p, cx.feeds, cx.init, list(schedule), semantics)
    except (ValueError, KeyError):
        return False
    return outcome_of(p, graph_of(p), s, observe) == cx.outcome


def plan_schedule(p, cx, observe: str, *, can_split: bool) -> tuple[list[str], list[str]]:
    """The counterexample's schedule of program `p` as an order TensorFlow
    can be made to follow: ``(order, split)`` where `order` lists p's nodes
    (``n@read`` for the read of an Assign in `split`, to export split).
    Raises NotReplayable for a decomposed schedule that cannot be forced."""
    from tfsem.oracle.program import ASSIGN  # noqa: PLC0415
    from tfsem.oracle.semantics import DECOMPOSED  # noqa: PLC0415
    if p.has_control_flow:
        return _plan_control_flow(p, cx), []
    steps = list(cx.schedule)
    if not any("@" in s for s in steps):
        return steps, []
    pos = {s: i for i, s in enumerate(steps)}

    def arrange(split: set[str]) -> tuple[list[str], list[str]]:
        order, equivalent = [], []
        for st in steps:
            name, _, phase = st.partition("@")
            if phase == "read":
                if name in split:
                    order.append(st)
                    equivalent.append(st)
                continue          # an unsplit Assign reads just before it writes
            if phase == "write":
                order.append(name)
                equivalent += ([] if name in split else [f"{name}@read"]) + [st]
                continue
            order.append(name)
            equivalent.append(st)
        return order, equivalent

    apart = [n for n in dict.fromkeys(s.partition("@")[0] for s in steps if "@" in s)
             if pos.get(f"{n}@write", 0) - pos.get(f"{n}@read", 0) > 1]
    order, equivalent = arrange(set())
    if _gives(p, cx, equivalent, DECOMPOSED, observe):
        return order, []
    split = sorted(n for n in apart if n in p.node and p.node[n].op == ASSIGN
                   and p.node[n].fn.partition(".")[0] not in ("Snd", "SndSameShape"))
    if not can_split:
        shown = ", ".join(f"Assign-{p.node[n].fn} {n!r}" for n in split) or "an Assign"
        raise NotReplayable(
            f"decomposed schedule: the counterexample runs other steps between the read and "
            f"the write of {shown}, which TensorFlow's executor runs as one step (the "
            "variable's lock); this graph is not rewritten to split it")
    order, equivalent = arrange(set(split))
    if not _gives(p, cx, equivalent, DECOMPOSED, observe):
        raise NotReplayable("decomposed schedule: with its Assigns exported as separate "
                            "read, compute and write nodes, the schedule no longer gives "
                            "the counterexample's outcome")
    return order, split


#: What a replay of a program with control flow adds to its label.
CONTROL_FLOW_NOTE = (" (control flow: the schedule's live steps outside every loop forced, "
                     "the steps inside loops and the dead ones free)")


def _plan_control_flow(p, cx) -> list[str]:
    """The nodes a replay of a program with control flow forces, in order:
    the schedule's live steps whose outputs are in the root context (SPEC
    section 9: steps without a frame suffix, and a loop's live Exit), an
    Assign at its write step, a loop's Enters just before its first access
    of a variable.  A
    node inside a loop fires once per iteration and a dead one must not send
    its deadness along a forced control edge, so those run free: the replay then checks
    that TensorFlow gives the counterexample's outcome all the same."""
    from tfsem.oracle.budget import BudgetExceeded  # noqa: PLC0415
    from tfsem.oracle.controlflow import Machine  # noqa: PLC0415
    from tfsem.oracle.graph import ATOMIC, DECOMPOSED, graph_of  # noqa: PLC0415
    from tfsem.oracle.program import ASSIGN, ENTER, EXIT, READ  # noqa: PLC0415
    steps = list(cx.schedule)
    semantics = DECOMPOSED if any(s.endswith(("@read", "@write")) for s in steps) else ATOMIC
    m = Machine(p, graph_of(p), semantics)
    s = m.initial(cx.feeds, cx.init)
    order: list[str] = []
    enters: dict[str, list[str]] = {}    # loop -> its Enters, not yet placed
    try:
        for i, label in enumerate(steps):
            enabled = m.enabled_steps(s)
            step = dict(zip(m.labels(s, enabled), enabled)).get(label)
            if step is None:
                raise NotReplayable(f"step {i} of the counterexample's schedule ({label}) "
                                    "cannot fire there in the reference semantics")
            op = p.node[step.node].op
            if op == ENTER and not step.ctx and not step.dead:
                # an Enter only forwards a value, and the loop's steps before
                # its first access of a variable touch none: they commute
                # with the steps outside it, so the Enters are placed just
                # before that access (or the loop's Exit), and the loop waits
                # for what the schedule ran before it
                enters.setdefault(p.node[step.node].attrs["frame_name"], []).append(step.node)
                s = m.fire_step(s, step)
                continue
            if step.ctx and step.ctx[0][0] in enters and op in (READ, ASSIGN, EXIT) \
                    and not step.dead:
                order += enters.pop(step.ctx[0][0])
            # a step whose outputs are in the root frame: outside every loop,
            # or a loop's live Exit (an Enter is forced after what comes
            # before it, force_schedule)
            if not step.dead and step.phase in ("", "write") and (
                    not step.ctx or (op == EXIT and len(step.ctx) == 1)):
                order.append(step.node)
            s = m.fire_step(s, step)
    except BudgetExceeded as exc:
        raise NotReplayable(f"the counterexample's schedule: {exc}") from None
    return order + [e for group in enters.values() for e in group]


def replay_program(p, cx, *, observe: str = "outputs+state", mode: str = "tensorflow",
                   label: str = "the rewritten program, exported",
                   deadline: float | None = None) -> Replay:
    """Replay counterexample `cx` of program `p` (the rewritten program of an
    `unsound` verdict) on TensorFlow: `p` exported (graphdef/exporter.py),
    its schedule forced.  Never raises: a failure is a Replay saying why.
    `deadline` (a time.monotonic() value): checked between the replay's
    stages and given to TensorFlow's run; past it, the Replay is not
    confirmed and says so (``budget``)."""
    try:
        _check_deadline(deadline, "the replay on TensorFlow started")
        from tfsem.graphdef.exporter import export_graph  # noqa: PLC0415
        from tfsem.graphdef.proto import encode  # noqa: PLC0415
        from tfsem.oracle.program import ProgramError  # noqa: PLC0415
        try:
            order, split = plan_schedule(p, cx, observe, can_split=True)
        except NotReplayable as exc:
            return Replay(False, str(exc), label, mode=mode, version=_version())
        names: dict[str, str] = {}
        fetches: dict[str, str] = {}
        try:
            graph = export_graph(p, names=names, split_assigns=split, fetches=fetches)
        except ProgramError as exc:
            return Replay(False, "the export refuses it: "
                          + "; ".join(str(v) for v in exc.violations),
                          label, split=split, mode=mode, version=_version())
        gd = _graph_def(encode("GraphDef", graph))
        tf_order = [f"{names[s.partition('@')[0]]}/read" if s.endswith("@read") else names[s]
                    for s in order]
        label += (
            f" (Assign {', '.join(split)} as read, compute and write nodes: the decomposed "
            "Assign)" if split else "")
        label += CONTROL_FLOW_NOTE if p.has_control_flow else ""
        return _replay_forced(gd, fetches, [], tf_order, cx,
                              _feeds_of(p, cx), observe, mode, label, split, deadline)
    except ReplayTimeout as exc:
        return _out_of_time(exc, label, mode)
    except Exception as exc:  # a replay failure must never lose the verdict
        return Replay(False, f"the replay failed: {type(exc).__name__}: {exc}", mode=mode)


def replay_graph(graph: Any, p, cx, *, targets: Sequence[str] = (),
                 observe: str = "outputs+state", mode: str = "tensorflow",
                 label: str = "the rewritten graph", deadline: float | None = None,
                 captures: Mapping[str, Any] | None = None) -> Replay:
    """Replay counterexample `cx` on the TensorFlow graph `graph` itself (a
    GraphDef, or what `as_graph_def` reads) of which `p` is the import:
    the schedule's steps that are graph nodes are forced in order; steps of
    inlined functions cannot be, and stay free.  Never raises.  `deadline`:
    as replay_program's.  `captures`: a concrete function's capture map
    ({placeholder: {"variable", ...}} or {placeholder: variable}); its
    DT_RESOURCE Placeholders become the variables they capture
    (`with_captured_variables`; without a map, those `p` imports as a
    variable)."""
    try:
        _check_deadline(deadline, "the replay on TensorFlow started")
        gd = with_captured_variables(_graph_def(graph), p, captures)
        nodes = {n.name for n in gd.node}
        try:
            order, _ = plan_schedule(p, cx, observe, can_split=False)
        except NotReplayable as exc:
            return Replay(False, str(exc), label, mode=mode, version=_version())
        outputs = {}
        for k, port in p.outputs.items():
            if _node_name(k) in nodes:          # a fetch: the graph's own tensor name
                outputs[k] = k
            elif port.node in nodes:
                outputs[k] = f"{port.node}:{port.port}"
            else:
                return Replay(False, f"output {k!r} comes from {port.node!r}, which is not a "
                              "node of the graph (inside a function)", label, mode=mode,
                              version=_version())
        label += CONTROL_FLOW_NOTE if p.has_control_flow else ""
        return _replay_forced(gd, outputs, targets, [s.partition("@")[0] for s in order], cx,
                              _feeds_of(p, cx), observe, mode, label, [], deadline)
    except ReplayTimeout as exc:
        return _out_of_time(exc, label, mode)
    except Exception as exc:  # a replay failure must never lose the verdict
        return Replay(False, f"the replay failed: {type(exc).__name__}: {exc}", label, mode=mode)



@dataclass
class _Witness:
    """One of the original's witnesses as the replay functions read a
    counterexample: σ, the witness schedule, and the outcome the oracle
    gives for it (no original's outcomes to be none of)."""
    feeds: Mapping[str, Any]
    init: Mapping[str, Any]
    schedule: list[str]
    outcome: Any
    original_outcomes: tuple = ()


def with_original(rep: Replay, original, cx, *, observe: str = "outputs+state",
                  mode: str = "tensorflow", deadline: float | None = None,
                  graph: Any = None, targets: Sequence[str] = (),
                  captures: Mapping[str, Any] | None = None,
                  label: str = "the original program, exported") -> Replay:
    """`rep` (the replay of counterexample `cx` on the rewritten program)
    with the original's side replayed on TensorFlow too: where `rep`
    confirmed, each witness schedule of the original that the verdict lists
    (`cx.original_outcomes`) is forced on the original (`graph` itself when
    given, as `replay_graph` runs one, the program `original` exported
    where the graph cannot be forced; else `original` exported, as
    `replay_program` runs one) from σ, and TensorFlow must give the
    outcome the oracle gives for it.  Only then does the replay stay
    confirmed: an outcome of the original that TensorFlow does not give
    (a model of an op of the original that differs from TensorFlow's
    kernel) would otherwise make a rewrite look unsound on TensorFlow's
    word.  Where a witness gives another outcome, cannot be replayed, or
    the `deadline` (time.monotonic()) passes first, the replay is not
    confirmed and its `reason` says which and why (``budget`` for the
    deadline); `rep.original` says how many witnesses were replayed.

    What each witness giving its own listed outcome shows: the listed
    outcomes are none of them the counterexample's (the oracle showed
    it), so TensorFlow's runs of the original on those schedules do not
    give the rewritten program's outcome either.  It is not the whole
    check: another schedule of the original that the oracle runs to a
    listed outcome may run, on TensorFlow, to the counterexample's (a
    model wrong only on the values that schedule gives an op).  So the
    original is also run once per reads-from class (`other_schedules`):
    the runs of a class give each op the same inputs, so where each of
    those runs gives the oracle's outcome, every schedule does.  Where
    the classes cannot be enumerated (control flow, more than CLASS_RUNS
    runs), the line says the other schedules were not run.  A projected listing (an
    original with too many outcomes at σ to enumerate: each listed
    outcome holds only the parts the verdict names) is compared on those
    parts (`agrees`).  Where the verdict lists fewer outcomes than the
    original has at σ, only those listed are replayed, and the reason
    says so.  Never raises."""
    if not rep.confirmed:
        return rep
    listed = list(cx.original_outcomes)
    n = len(listed)
    info: dict[str, Any] = {"graph": label, "outcomes": getattr(cx, "original_count", n),
                            "listed": n, "replayed": 0, "failed_runs": 0, "agreed": None}
    rep.original = info

    def withdrawn(reason: str, budget: bool = False) -> Replay:
        rep.confirmed, rep.budget = False, budget
        rep.reason = reason
        return rep

    if n == 0:
        return withdrawn("the verdict lists no witness schedule of the original to replay: "
                         "TensorFlow's replay of the rewritten program alone confirms nothing")

    def one(witness: _Witness) -> Replay:
        if graph is None:
            return replay_program(original, witness, observe=observe, mode=mode, label=label,
                                  deadline=deadline)
        r = replay_graph(graph, original, witness, targets=targets, observe=observe, mode=mode,
                         label=label, deadline=deadline, captures=captures)
        if r.outcome is None and not r.budget:
            # (the schedule cannot be forced on the graph itself: the
            # original's import, exported, as `tfsem grappler` does for
            # the rewritten graph)
            # (named as the original's: replay_program's default label is the
            # rewritten program's, which the reason would then print for
            # the original's side)
            exported = replay_program(original, witness, observe=observe, mode=mode,
                                      label="the original program, exported",
                                      deadline=deadline)
            if exported.outcome is not None or exported.budget:
                return exported
        return r

    def side() -> Replay:
        free: dict[str, None] = {}   # the witnesses' steps that are no node of the graph
        ran_on: dict[str, None] = {}    # the graphs the witnesses ran on
        failed: list[str] = []   # witnesses TensorFlow failed, where the oracle gives an error
        done: dict[tuple, str] = {}   # each listed schedule: "ran" or "failed"
        for i, (shown, schedule) in enumerate(listed):
            which = f"witness schedule {i + 1} of {n}" if n > 1 else "witness schedule"
            r = one(_Witness(cx.feeds, cx.init, list(schedule), shown))
            if r.budget:
                return withdrawn(f"{r.reason}, during the replay of the original's witness "
                                 f"schedules ({i} of {n} replayed; the rewritten program gave "
                                 "the counterexample's outcome)", budget=True)
            if r.outcome is None and r.run_failed and _error_output(shown) is not None:
                # TensorFlow fails the run where the oracle's outcome has an
                # output that is an error value: an op of the schedule gave
                # one (an uninitialized read, CheckNumerics on a NaN, a
                # closed stack pushed), and TensorFlow's kernel of such an
                # op fails the run instead of carrying it on (a variable's
                # error value is never one: it is σ's uninitialized
                # variable never written, which TensorFlow reads back as
                # such).  They agree as far as a failed run can show;
                # the run gives no outcome, so none that is the
                # counterexample's
                failed.append(f"{which}: output {_error_output(shown)!r}")
                info["replayed"], info["failed_runs"] = i + 1, len(failed)
                done[tuple(schedule)] = "failed"
                continue
            if r.outcome is None:
                return withdrawn(f"the original's {which} was not replayed ({r.reason}); the "
                                 "rewritten program gave the counterexample's outcome, but "
                                 "without the original's side TensorFlow confirms nothing")
            diff = _disagreement(r.outcome, shown)
            if diff is not None:
                info["agreed"] = False
                return withdrawn(f"TensorFlow and the oracle differ on the original: its "
                                 f"{which} ({r.graph or label}) gives {diff}; the oracle's "
                                 "outcomes of the original are not TensorFlow's here (a model "
                                 "of an op that differs from TensorFlow's kernel), so the "
                                 "rewritten program's outcome, which TensorFlow gave, is not "
                                 "confirmed as new")
            info["replayed"] = i + 1
            free.update(dict.fromkeys(r.free))
            ran_on.setdefault(r.graph or label)
            done[tuple(schedule)] = "ran"
        note = other_schedules(done, free, ran_on)
        if isinstance(note, Replay):
            return note
        info["agreed"] = True
        forced = "its witness schedule" if n == 1 else f"each of its {n} witness schedules"
        count = info["outcomes"]
        ran = " and ".join(ran_on) or label
        gave = "gave the oracle's outcome" + ("" if n == 1 else "s")
        if failed:
            gave = (("" if len(failed) == n else f"{gave} or ") + "failed the run where the "
                    f"oracle's outcome has an error value ({'; '.join(failed[:4])}"
                    f"{' ...' if len(failed) > 4 else ''})")
        rep.reason += (f"; {ran}, run with {forced} forced, {gave}"
                       + (f" (the {n} the verdict lists of the original's {count} outcomes at "
                          "this σ)" if isinstance(count, int) and count > n else "")
                       + (f" (steps {', '.join(list(free)[:8])}"
                          f"{' ...' if len(free) > 8 else ''} are no node of that graph and "
                          "ran unforced)" if free else "")
                       + note)
        return rep

    def other_schedules(done: dict[tuple, str], free: dict, ran_on: dict) -> Replay | str:
        """The original's schedules beyond the listed witnesses: one run
        per reads-from class (oracle/readsfrom.py `class_runs`, whose
        docstring has the argument: all runs of a class give each op the
        same inputs, so TensorFlow's kernels give all of them one outcome).
        One witness per outcome is not enough: two schedules the oracle
        runs to one listed outcome may run on TensorFlow to two, one of
        them the counterexample's (a model wrong only on the values the
        unlisted one gives an op).  Each run must give the oracle's outcome
        of it, as a witness must.  Returns the text the line adds, or the
        Replay withdrawn.  Where the classes cannot be enumerated (control
        flow, too many, an engine that declines), the confirmation rests on
        the witnesses alone and the line says so."""
        from tfsem.oracle.explore import BudgetExceeded  # noqa: PLC0415
        from tfsem.oracle.readsfrom import Unsupported, class_runs  # noqa: PLC0415
        from tfsem.oracle.semantics import ATOMIC, DECOMPOSED  # noqa: PLC0415
        steps = [s for _, w in listed for s in w]
        semantics = DECOMPOSED if any(s.endswith(("@read", "@write")) for s in steps) \
            else ATOMIC
        seconds = CLASS_SECONDS if deadline is None else \
            min(CLASS_SECONDS, deadline - time.monotonic())
        if seconds <= 0:
            return withdrawn("the time budget ran out before the original's reads-from "
                             "classes were enumerated (its listed witness schedules gave the "
                             "oracle's outcomes)", budget=True)

        def not_run(why: str) -> str:
            rep.classes = {"not_run": why}
            return (f" (its other schedules were not run, one per reads-from class: {why}; "
                    "a model wrong only on them would not show here)")
        try:
            found = class_runs(original, cx.feeds, cx.init, semantics, observe,
                               max_runs=CLASS_RUNS, max_seconds=seconds)
        except BudgetExceeded:
            if deadline is not None and time.monotonic() >= deadline:
                return withdrawn("the time budget ran out while the original's reads-from "
                                 "classes were enumerated (its listed witness schedules gave "
                                 "the oracle's outcomes)", budget=True)
            return not_run(f"enumerating them took more than {seconds:.2g} s")
        except Unsupported as exc:
            return not_run(str(exc))
        except Exception as exc:  # noqa: BLE001 (the engine failing: the witnesses alone, said)
            return not_run(f"the reads-from engine failed: {type(exc).__name__}: {exc}")
        runs = found.runs
        full = {k for k, _ in cx.outcome.parts()}   # (a counterexample's outcome is whole)
        if found.one_per_outcome and info["outcomes"] == n and \
                all({k for k, _ in o.parts()} == full for o, _ in listed):
            # one class per outcome in each component (one class in all for
            # a race-free original), every outcome listed in full: the
            # witnesses are one run per class already
            rep.classes = {"runs": len(runs) or 1, "replayed": 0, "failed_runs": 0}
            return ""
        replayed, failed_here, base = 0, 0, None
        for k, (shown, schedule) in enumerate(runs):
            status = done.get(tuple(schedule))
            which = f"its run {k + 1} of {len(runs)} for the reads-from classes"
            if status is None:
                r = one(_Witness(cx.feeds, cx.init, list(schedule), shown))
                if r.budget:
                    return withdrawn(f"{r.reason}, during the replay of the original's "
                                     f"reads-from classes ({replayed} replayed; its listed "
                                     "witness schedules gave the oracle's outcomes)",
                                     budget=True)
                if r.outcome is None and r.run_failed and _error_output(shown) is not None:
                    status, failed_here = "failed", failed_here + 1
                elif r.outcome is None:
                    return withdrawn(f"the original's {which} was not replayed ({r.reason}); "
                                     "without it TensorFlow confirms nothing")
                else:
                    diff = _disagreement(r.outcome, shown)
                    if diff is not None:
                        info["agreed"] = False
                        return withdrawn(
                            f"TensorFlow and the oracle differ on the original: {which} "
                            f"({r.graph or label}; schedule {' '.join(schedule)}), a schedule "
                            f"the verdict does not list, gives {diff}; the oracle's outcomes "
                            "of the original are not TensorFlow's here (a model of an op that "
                            "differs from TensorFlow's kernel), so the rewritten program's "
                            "outcome, which TensorFlow gave, is not confirmed as new")
                    status = "ran"
                replayed += 1
                free.update(dict.fromkeys(r.free))
                ran_on.setdefault(r.graph or label)
            if k == 0:
                base = status
        if base == "failed" and found.components > 1:
            # (the first run holds each component's first class, one with
            # no error output where the component has one: a failed first
            # run with several components cannot say which one failed it,
            # and a failed run of another class shows nothing of the rest)
            return withdrawn("the original's reads-from classes could not be checked: the run "
                             "of the first class of each of its independent parts failed on "
                             "TensorFlow, which does not say which part failed it")
        rep.classes = {"runs": len(runs), "replayed": replayed, "failed_runs": failed_here}
        if not replayed:
            return "; those are one run per reads-from class of it"
        return (f"; its other schedules, one run per reads-from class ({replayed} more), "
                + ("gave the oracle's outcomes" if not failed_here else
                   f"gave the oracle's outcomes or failed the run where the oracle's outcome "
                   f"has an error value ({failed_here} of them)"))

    try:
        return side()
    except Exception as exc:  # noqa: BLE001 (a replay failure must never lose the verdict)
        return withdrawn(f"the replay of the original failed: {type(exc).__name__}: {exc}")


#: the original's reads-from classes (`with_original`): at most this many
#: runs on TensorFlow, and this many seconds to enumerate them
CLASS_RUNS = 100
CLASS_SECONDS = 2.0


def _error_output(outcome) -> str | None:
    """The first output of `outcome` that is an error value, or None."""
    from tfsem.oracle.values import Error  # noqa: PLC0415
    return next((k for k, v in outcome.outputs if isinstance(v, Error)), None)


def agrees(got, shown) -> bool:
    """Does TensorFlow's outcome `got` agree with an outcome `shown` of the
    oracle (SPEC section 2 equality of every part `shown` has)?  A full
    outcome has every part `got` has, so this is equality; a projected
    one (checking/check.py `unsound_projected`) is compared on its parts."""
    return _disagreement(got, shown) is None


def _disagreement(got, shown) -> str | None:
    """None where `got` agrees with `shown` (`agrees`); else the first part
    that differs, with both values, as text."""
    from tfsem.oracle.outcomes import TEXT_ELEMENTS, summarisable, summary_text  # noqa: PLC0415
    from tfsem.oracle.values import format_value  # noqa: PLC0415

    def text(v) -> str:
        return summary_text(v) if summarisable(v, TEXT_ELEMENTS) else format_value(v)

    have = dict(got.parts())
    for (kind, name), value in shown.parts():
        if (kind, name) not in have:
            return f"no {kind} {name!r} on TensorFlow, {text(value)} in the oracle"
        if have[(kind, name)] != value:
            return (f"{kind} {name!r} = {text(have[(kind, name)])} on TensorFlow, "
                    f"{text(value)} in the oracle")
    return None

def captured_variables(graph_def, p=None,
                       captures: Mapping[str, Any] | None = None) -> dict[str, str]:
    """{DT_RESOURCE Placeholder of `graph_def`: the variable it captures}.

    A concrete function's graph (``concrete_function.graph``, the corpus's
    Keras steps, MobileNetV2) holds no VarHandleOp: each variable comes in
    as a DT_RESOURCE Placeholder, named only by the capture map the
    importer reads (`--captures`).  From `captures` where given (an entry
    {"variable": name, ...}, or the name alone); otherwise from `p`, the
    graph's import, which makes a captured Placeholder a Var node of the
    same name."""
    from tfsem.oracle.program import VAR  # noqa: PLC0415
    out: dict[str, str] = {}
    for n in graph_def.node:
        # (`in` first: reading a missing key of a protobuf map would add it)
        if n.op != "Placeholder" or "dtype" not in n.attr or \
                n.attr["dtype"].type != DT_RESOURCE:
            continue
        if captures is not None:
            spec = captures.get(n.name)
            var = spec.get("variable") if isinstance(spec, Mapping) else spec
        else:
            node = p.node.get(n.name) if p is not None else None
            var = node.attrs.get("var") if node is not None and node.op == VAR else None
        if isinstance(var, str) and var:
            out[n.name] = var
    return out


#: TensorFlow's DataType DT_RESOURCE (types.proto), without importing
#: TensorFlow (also what `tfsem grappler` checks a capture map's nodes by)
DT_RESOURCE = 20


def with_captured_variables(graph_def, p=None, captures: Mapping[str, Any] | None = None):
    """`graph_def`, or a copy of it in which each DT_RESOURCE Placeholder
    that captures a variable (`captured_variables`) is a VarHandleOp of the
    same name whose shared_name is the variable: what a session runs with
    real resource variables, which `GraphRunner` resets from σ and reads
    back by that name (`variables_of`).  Several Placeholders of one
    variable become handles of one resource, as the captures they stand
    for are one variable.  The variable's dtype and shape are the
    program's declaration (`p.variables`), else the capture map's."""
    caps = captured_variables(graph_def, p, captures)
    if not caps:
        return graph_def
    tf = tensorflow()
    out = tf.compat.v1.GraphDef()
    out.CopyFrom(graph_def)
    for n in out.node:
        var = caps.get(n.name)
        if var is None:
            continue
        typ = p.variables.get(var) if p is not None else None
        spec = captures.get(n.name) if captures is not None else None
        if typ is not None:
            dtype, shape = typ.dtype, list(typ.shape)
        elif isinstance(spec, Mapping) and "dtype" in spec and "shape" in spec:
            dtype, shape = spec["dtype"], list(spec["shape"])
        else:
            raise TensorFlowRunError(f"the DT_RESOURCE Placeholder {n.name!r} captures "
                                     f"variable {var!r}, whose dtype and shape are not known")
        name, device = n.name, n.device
        n.Clear()
        n.name, n.op, n.device = name, "VarHandleOp", device
        n.attr["dtype"].type = tf.dtypes.as_dtype(dtype).as_datatype_enum
        n.attr["shape"].shape.CopyFrom(tf.TensorShape(shape).as_proto())
        n.attr["shared_name"].s = var.encode()
        n.attr["container"].s = b""
    return out


def _feeds_of(p, cx) -> dict[str, Any]:
    """σ's feeds that the rewritten program has (σ gives the original's too)."""
    return {k: v for k, v in cx.feeds.items() if k in p.feed_names}


def _replay_forced(gd, outputs: Mapping[str, str], targets: Sequence[str], order: Sequence[str],
                   cx, feeds: Mapping[str, Any], observe: str, mode: str, label: str,
                   split: list[str], deadline: float | None = None) -> Replay:
    nodes = {n.name for n in gd.node}
    order = list(dict.fromkeys(order))
    forced = [n for n in order if n in nodes]
    free = [n for n in order if n not in nodes]
    rep = Replay(False, "", label, forced=forced, free=free, split=list(split), mode=mode,
                 version=_version())
    free_note = (f"; steps {', '.join(free[:8])}{' ...' if len(free) > 8 else ''} are no node "
                 "of the graph and ran unforced") if free else ""
    _check_deadline(deadline, "the schedule was forced on the graph")
    forced_gd = force_schedule(gd, forced)
    stuck = _cycle_nodes(forced_gd)
    if stuck:
        rep.reason = ("the schedule cannot be forced: its order contradicts the graph's edges "
                      f"among nodes {', '.join(stuck[:8])}")
        return rep
    _check_deadline(deadline, "TensorFlow loaded the graph")
    try:
        with GraphRunner(forced_gd, outputs,
                         list(dict.fromkeys([*targets, *forced[-1:]])), mode=mode,
                         observe=observe, optimize=False) as runner:
            got = runner.run_once(feeds, cx.init, deadline=deadline)
    except ReplayTimeout as exc:
        return _out_of_time(exc, label, mode, forced=forced, free=free, split=list(split))
    except TensorFlowRunError as exc:
        from tfsem.oracle.values import Error  # noqa: PLC0415
        rep.run_failed = isinstance(exc, TensorFlowRunFailed)
        uninit = sorted(k for k, v in cx.init.items() if isinstance(v, Error))
        rep.reason = str(exc) + (
            f" (σ leaves {', '.join(uninit)} uninitialized: TensorFlow fails an op that reads "
            "an uninitialized variable, where tfsem's semantics carries an error value on)"
            if uninit else "")
        return rep
    rep.outcome = got
    if got != cx.outcome:
        why = ("the steps inside loops ran unforced, or an op computes differently there"
               if CONTROL_FLOW_NOTE in label else "an op computes differently there")
        rep.reason = (f"TensorFlow gave {got.describe()}, not the counterexample's "
                      f"{cx.outcome.describe()} ({why}){free_note}")
    elif any(agrees(got, o) for o, _ in cx.original_outcomes):
        rep.reason = (f"TensorFlow gave {got.describe()}, which the verdict lists among the "
                      "original's outcomes")
    else:
        rep.confirmed = True
        rep.reason = (f"{label}, run with the counterexample's schedule forced by control "
                      f"edges ({len(forced)} node{'s' if len(forced) != 1 else ''}), gave its "
                      f"outcome{free_note}")
    return rep


def _cycle_nodes(gd) -> list[str]:
    """The nodes of `gd` on or after a cycle of its edges (Kahn's algorithm),
    sorted; a loop's back edge (a NextIteration's output) closes no cycle,
    as in TensorFlow."""
    from tfsem.oracle.opdefs import control  # noqa: PLC0415 (the control family's op names)
    back = {n.name for n in gd.node if n.op in control.BACK_EDGES}
    preds = {n.name: {_node_name(i) for i in n.input if _node_name(i) not in back
                      or n.op not in control.MERGES} for n in gd.node}
    succs: dict[str, list[str]] = {n: [] for n in preds}
    for n, ps in preds.items():
        for q in ps:
            if q in succs:
                succs[q].append(n)
    count = {n: sum(1 for q in ps if q in preds) for n, ps in preds.items()}
    ready = [n for n, c in count.items() if c == 0]
    while ready:
        n = ready.pop()
        for m in succs[n]:
            count[m] -= 1
            if count[m] == 0:
                ready.append(m)
    return sorted(n for n, c in count.items() if c > 0)


def _version() -> str:
    return str(getattr(tensorflow(), "__version__", "?"))


def _graph_def(graph: Any):
    from tfsem.graphdef.grappler import as_graph_def  # noqa: PLC0415
    tensorflow()
    return as_graph_def(graph)
