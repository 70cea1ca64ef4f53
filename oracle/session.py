"""Sessions (SPEC section 10, format `tfsem.session/1`): several runs of one
graph sharing its variables, concurrently or one after the other.

A session is itself a program.  :meth:`Session.expand` builds it:

* each run fires the part of the graph its fetches and targets need (partial
  execution, whitepaper 4.2): the program pruned to the ancestors, by data and
  control edges, of the nodes of its fetched outputs and of its targets (a
  run with neither fires the whole program and fetches every output);
* run R's nodes are copied with the prefix `R/` (node `n` becomes `R/n`);
  `Var` nodes keep their variable, so every run reads and writes the same
  variables; the outputs are named `R/OUT`;
* a feed `$f` of run R is a Const `R/feed_f` holding the value the session
  gives it (`"feeds": {"f": VALUE}`, like `Session.run`'s feed_dict), or else a feed
  of the expanded program named `R/f`, which verdicts range over like any
  feed;
* `concurrent`: the copies side by side, no edge between runs; `sequential`:
  every node of run k+1 waits (a control edge from each sink of run k to each
  source of run k+1) for every node of run k, so the state carries over.

docs/sessions.md argues that the expansion's outcome set is the session's
(rules 1 and 3 of "Concurrency Semantics For TensorFlow Resource Variables").
Rules 2 and 4 (critical sections, blocking queues) are modelled for a
session's inline program (`oracle/blocking.py`: nodes with
`"critical_section"`, `"queues"` and the ops QueueEnqueue, QueueDequeue,
QueueSize): :meth:`Session.expand_blocking` gives the expansion with its
table of sections and queue ops, explored by `blocking.outcomes` (deadlock is
an outcome).  A session's TensorFlow graph brings its own (oracle/opdefs/queues.py:
MutexV2/MutexLock/ConsumeMutexLock as sections, FIFOQueueV2 and its
enqueue, dequeue and size as queues): the loader returns the table beside the
program; the other queue ops stay refused by name.

The graph of a session is a tfsem program inline, or `{"graph": PATH,
"feed": [...], "signature": KEY}` naming a TensorFlow graph (PATH relative to
the session file).  Graphs are imported by a loader the caller passes
(`load_graph`), so this module does not depend on tfsem.graphdef.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from . import state_ops
from . import blocking as blk
from .blocking import Blocking
from .program import (STACK_OPS, ControlIn, DataIn, FeedControlIn, FeedIn, Node, Program,
                      ProgramError, Violation)
from .values import Tensor, Value, ValueFormatError, value_from_json

SESSION_FORMAT = "tfsem.session/1"
ORDERS = ("concurrent", "sequential")
_FIELDS = {"format", "program", "runs", "order", "note"}
_RUN_FIELDS = {"name", "fetch", "targets", "feeds"}
_GRAPH_FIELDS = {"graph", "feed", "signature"}
#: characters a run name may not hold: it prefixes node, output and feed names
_BAD_NAME_CHARS = set("/:@$^ \t\n")

#: TensorFlow ops of rules 2 and 4 (critical sections, blocking ops), not
#: imported from graphs: a session over a graph that holds one is refused by
#: name (an inline program declares sections and queues: oracle/blocking.py).
UNMODELLED_OPS = ("FIFOQueue", "PaddingFIFOQueueV2", "PriorityQueueV2", "RandomShuffleQueueV2",
                  "QueueDequeueUpToV2", "QueueIsClosedV2")

#: load_graph(path, fetch, targets, feed, signature) -> (program, completion)
#: where completion maps a TensorFlow node to the program node that completes it;
#: or (program, completion, blocking, releases): the graph's critical sections
#: and queue ops, and per section's MutexLock node its ConsumeMutexLock node
#: (a run that runs the one runs the other)
GraphLoader = Callable[[Path, Sequence[str], Sequence[str], Sequence[str], "str | None"],
                       "tuple[Program, Mapping[str, str]]"]


class SessionError(ProgramError):
    """A malformed session: every violation names its field."""


@dataclass(frozen=True)
class Run:
    """One run: its name, the program outputs it fetches (names of the
    program's outputs), the nodes it needs besides them (targets, and for an
    imported graph the nodes that complete each fetched TensorFlow node), and
    the values the session gives its feeds.  `whole`: no fetch and no target
    (the whole program)."""
    name: str
    fetch: tuple[str, ...]
    roots: tuple[str, ...] = ()
    feeds: Mapping[str, Value] = field(default_factory=dict)
    whole: bool = False


@dataclass(frozen=True)
class Session:
    program: Program
    runs: tuple[Run, ...]
    order: str = "concurrent"
    #: the session's JSON as read (to read it again over a rewritten graph)
    raw: Any = field(default=None, compare=False, repr=False)
    #: critical sections and queues of the program (oracle/blocking.py)
    blocking: Blocking = field(default_factory=Blocking)

    def expand(self, program: Program | None = None) -> Program:
        """The session as one program; with `program` (a rewrite of the
        session's program, with its interface), that program under the same
        runs.  Raises SessionError when `program` lacks an output a run
        fetches or a node a run needs, and for a session with critical
        sections or queues (their semantics is not a program's: use
        :meth:`expand_blocking`)."""
        if self.blocking:
            raise _bad("session.program", "this session has critical sections or queues, "
                       "which only the session semantics of oracle/blocking.py models (tfsem "
                       "outcomes, check and run on --backend numpy)", "blocking-session")
        return expand(program if program is not None else self.program, self.runs, self.order)

    def expand_blocking(self, program: Program | None = None,
                        blocking: Blocking | None = None) -> tuple[Program, Blocking]:
        """The session as one program and the table of its sections and
        queue ops (node names of the expansion); with `program` and
        `blocking`, a rewrite of the session's program under the same runs."""
        p = program if program is not None else self.program
        b = blocking if blocking is not None else self.blocking
        expanded = expand(p, self.runs, self.order)
        parts = [b.restricted(run_nodes(p, run), run.name + "/") for run in self.runs]
        eb = Blocking.union(parts, b.queues)
        blk.check_blocking(expanded, eb)
        return expanded, eb

    @property
    def run_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.runs)


def _bad(where: str, message: str, rule: str = "session") -> SessionError:
    return SessionError([Violation(where, rule, message)])


def run_nodes(p: Program, run: Run, where: str = "run") -> list[str]:
    """The nodes run `run` fires in `p`, in `p`'s declaration order: every
    node when the run is whole, else the ancestors of its roots."""
    if run.whole:
        return [n.name for n in p.nodes]
    roots: list[str] = []
    for f in run.fetch:
        if f not in p.outputs:
            raise _bad(f"{where} {run.name!r} fetch {f!r}", "the program has no output of this name",
                       "unknown-output")
        roots.append(p.outputs[f].node)
    for r in run.roots:
        if r not in p.node:
            raise _bad(f"{where} {run.name!r} target {r!r}", "the program has no node of this name",
                       "unknown-node")
        roots.append(r)
    keep = p.ancestors(roots)
    return [n.name for n in p.nodes if n.name in keep]


def expand(p: Program, runs: Sequence[Run], order: str = "concurrent") -> Program:
    """The program of `runs` of `p` (module docstring)."""
    if order not in ORDERS:
        raise _bad("session.order", f"order is one of {', '.join(ORDERS)}, not {order!r}", "bad-value")
    nodes: list[Node] = []
    outputs: dict[str, DataIn] = {}
    feeds = {}
    previous_sinks: list[str] = []
    updates = state_ops.updates_of(p)
    run_updates = []
    for run in runs:
        names = run_nodes(p, run)
        keep = set(names)
        if len(runs) > 1 and any(p.node[m].op in STACK_OPS for m in names):
            # A failed stack op fails its own run's step, and only that run's
            # fetches (oracle/stack_state.py, STEP_FAILED); the expansion is
            # one program, whose every fetch a failure would make the error
            # (and a sequential run would wait for the failed run's dead
            # sinks).  Not modelled: refused by name.
            stack = next(m for m in names if p.node[m].op in STACK_OPS)
            raise _bad(f"session.runs ({run.name!r})", f"run {run.name!r} runs the stack op "
                       f"{stack!r} ({p.node[stack].op}): a session of several runs of a "
                       "program with a stack is not modelled (a stack op's failure fails its "
                       "own run only; tfsem models a stack in one run)", "unmodelled")
        pre = run.name + "/"
        run_updates += [(f"run {run.name!r}: {where}", {pre + m for m in group if m in keep},
                         variables) for where, group, variables in updates if group & keep]
        mine: list[Node] = []
        consts: dict[str, str] = {}
        for f, v in sorted(run.feeds.items()):
            base = f"feed_{f}".replace("/", "_")
            while base in p.node:   # a name of its own (TensorFlow's charset: no '$')
                base += "_"
            const = pre + base
            consts[f] = const
            mine.append(Node(const, "Const", (), {"value": v}))

        def move(i):
            if isinstance(i, DataIn):
                return DataIn(pre + i.node, i.port)
            if isinstance(i, ControlIn):
                return ControlIn(pre + i.node)
            if isinstance(i, FeedIn):
                if i.name in consts:
                    return DataIn(consts[i.name], 0)
                feeds[pre + i.name] = p.feed_type(i.name)
                return FeedIn(pre + i.name)
            return FeedControlIn(pre + i.name)
        for name in names:
            n = p.node[name]
            mine.append(Node(pre + n.name, n.op, tuple(move(i) for i in n.inputs), n.attrs))
        for out in (sorted(p.outputs) if run.whole else run.fetch):
            port = p.outputs[out]
            if port.node in keep:
                outputs[pre + out] = DataIn(pre + port.node, port.port)
        if order == "sequential" and previous_sinks:
            waits = tuple(ControlIn(s) for s in previous_sinks)
            mine = [n if any(isinstance(i, (DataIn, ControlIn)) for i in n.inputs)
                    else n.replace(inputs=n.inputs + waits) for n in mine]
        used = {i.node for n in mine for i in n.inputs if isinstance(i, (DataIn, ControlIn))}
        previous_sinks = [n.name for n in mine if n.name not in used]
        nodes.extend(mine)
    expanded = Program(dict(p.variables), tuple(nodes), outputs, feeds).validated()
    # an update TensorFlow runs as one kernel (an imported ResourceApplyAdam,
    # ...) is exact as tfsem's several steps only while no other node, of this
    # run or another, can see it half done (docs/stateful-ops.md)
    race = state_ops.racing_access(expanded, run_updates)
    if race is not None:
        raise _bad(race[0], race[1] + " (another run of the session races with it: make the "
                   "runs sequential, or order them)", "racing-update")
    return expanded


# ---------------------------------------------------------------------------
# Loading


def _raise_if_any(bad) -> None:
    if bad.violations:
        raise SessionError(bad.violations)


def is_session(data: Any) -> bool:
    return isinstance(data, dict) and data.get("format") == SESSION_FORMAT


def _names(raw: Any, where: str, bad) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        bad(where, "bad-value", "a list of non-empty names")
        return []
    if len(set(raw)) != len(raw):
        bad(where, "duplicate-name", "a name is given twice")
    return list(raw)


def session_from_json(data: Any, where: str = "session", base_dir: str | Path = ".",
                      load_graph: GraphLoader | None = None) -> Session:
    """Validate and load a `tfsem.session/1` object.  Every problem is a
    SessionError naming the field (`session.runs[1].fetch`, ...)."""
    from .jsonio import ViolationCollector  # noqa: PLC0415
    if not isinstance(data, dict):
        raise _bad(where, "a session is a JSON object", "format")
    bad = ViolationCollector()
    if data.get("format") != SESSION_FORMAT:
        bad(f"{where}.format", "format", f"expected {SESSION_FORMAT!r}, got {data.get('format')!r}")
    for key in sorted(set(data) - _FIELDS):
        bad(f"{where}.{key}", "unknown-field", f"unknown field {key!r} (allowed: "
            f"{', '.join(sorted(_FIELDS))})")
    order = data.get("order", "concurrent")
    if order not in ORDERS:
        bad(f"{where}.order", "bad-value", f"order is one of {', '.join(ORDERS)}, not {order!r}")
    if "program" not in data:
        bad(f"{where}.program", "format", "a session needs \"program\": a tfsem.program/1 "
            "object or {\"graph\": PATH}")
    raw_runs = data.get("runs")
    if not isinstance(raw_runs, list) or not raw_runs:
        bad(f"{where}.runs", "format", "a session needs \"runs\": a non-empty list of runs")
        raw_runs = []
    runs_raw: list[tuple[str, str, list[str], list[str], dict]] = []
    seen: set[str] = set()
    for k, r in enumerate(raw_runs):
        w = f"{where}.runs[{k}]"
        if not isinstance(r, dict):
            bad(w, "format", "a run is an object {\"name\", \"fetch\", \"targets\", \"feeds\"}")
            continue
        for key in sorted(set(r) - _RUN_FIELDS):
            bad(f"{w}.{key}", "unknown-field", f"unknown field {key!r} (allowed: "
                f"{', '.join(sorted(_RUN_FIELDS))})")
        name = r.get("name", f"run{k}")
        if not isinstance(name, str) or not name or set(name) & _BAD_NAME_CHARS:
            bad(f"{w}.name", "bad-name", "a run name is a non-empty string without '/', ':', "
                "'@', '$', '^' or spaces (it prefixes the run's node and output names)")
            continue
        if name in seen:
            bad(f"{w}.name", "duplicate-name", f"two runs are named {name!r}")
        seen.add(name)
        fetch = _names(r.get("fetch"), f"{w}.fetch", bad)
        targets = _names(r.get("targets"), f"{w}.targets", bad)
        feeds = r.get("feeds", {})
        if not isinstance(feeds, dict):
            bad(f"{w}.feeds", "bad-value", "feeds is an object FEED -> value")
            feeds = {}
        runs_raw.append((w, name, fetch, targets, feeds))
    _raise_if_any(bad)

    raw_p = data["program"]
    completion: Mapping[str, str] = {}
    blocking = Blocking()
    releases: Mapping[str, str] = {}
    graph = isinstance(raw_p, dict) and "graph" in raw_p and "format" not in raw_p
    if graph:
        for key in sorted(set(raw_p) - _GRAPH_FIELDS):
            raise _bad(f"{where}.program.{key}", f"unknown field {key!r} of a graph (allowed: "
                       f"{', '.join(sorted(_GRAPH_FIELDS))}; fetches and targets are the runs')",
                       "unknown-field")
        gpath = raw_p["graph"]
        if not isinstance(gpath, str) or not gpath:
            raise _bad(f"{where}.program.graph", "the path of a TensorFlow graph (relative to "
                       "the session file)", "bad-value")
        fn_bad = ViolationCollector()
        feed_nodes = _names(raw_p.get("feed"), f"{where}.program.feed", fn_bad)
        sig = raw_p.get("signature")
        if sig is not None and not isinstance(sig, str):
            fn_bad(f"{where}.program.signature", "bad-value", "a signature key (a string)")
        _raise_if_any(fn_bad)
        if load_graph is None:
            raise _bad(f"{where}.program.graph", "this command reads no TensorFlow graph here",
                       "usage")
        for w, name, fetch, targets, _ in runs_raw:
            if not fetch and not targets:
                raise _bad(f"{w}", "a run of a TensorFlow graph names its fetches or targets",
                           "format")
        all_fetch = list(dict.fromkeys(f for _, _, fs, _, _ in runs_raw for f in fs))
        all_targets = list(dict.fromkeys(t for _, _, _, ts, _ in runs_raw for t in ts))
        path = Path(base_dir) / gpath
        loaded = load_graph(path, all_fetch, all_targets, feed_nodes, sig)
        program, completion = loaded[0], loaded[1]
        if len(loaded) > 2:
            blocking, releases = loaded[2] or Blocking(), loaded[3]
    else:
        try:
            program, blocking = blk.program_from_json(raw_p, where=f"{where}.program")
        except blk.BlockingError as exc:
            raise SessionError(exc.violations) from None
    runs = []
    for w, name, fetch, targets, feeds_raw in runs_raw:
        roots: list[str] = []
        for f in fetch:
            if f not in program.outputs:
                if graph:
                    raise _bad(f"{w}.fetch", f"{f!r} is not a tensor of the graph", "unknown-output")
                raise _bad(f"{w}.fetch", f"the program has no output {f!r} (it has "
                           f"{', '.join(sorted(program.outputs)) or 'none'})", "unknown-output")
            if graph:  # the whole TensorFlow node runs, not only the part giving the tensor
                node = f.partition(":")[0] if f.rpartition(":")[2].isdigit() else f
                if node in completion:
                    roots.append(completion[node])
        for t in targets:
            if graph:
                if t not in completion:
                    raise _bad(f"{w}.targets", f"no node {t!r} was imported from the graph",
                               "unknown-node")
                roots.append(completion[t])
            elif t not in program.node:
                raise _bad(f"{w}.targets", f"the program has no node {t!r}", "unknown-node")
            else:
                roots.append(t)
        values: dict[str, Value] = {}
        for f, raw in feeds_raw.items():
            if f not in program.feed_names:
                raise _bad(f"{w}.feeds.{f}", f"the program has no feed {f!r} (it has "
                           f"{', '.join(program.feed_names) or 'none'})", "unknown-feed")
            t = program.feed_type(f)
            try:
                v = value_from_json(raw, f"{w}.feeds.{f}", t.dtype)
            except ValueFormatError as exc:
                raise _bad(f"{w}.feeds.{f}", str(exc), "bad-value") from None
            if not isinstance(v, Tensor):
                raise _bad(f"{w}.feeds.{f}", "a feed's value is a tensor, not an error value",
                           "bad-value")
            if t.shape and tuple(v.array.shape) != tuple(t.shape):
                raise _bad(f"{w}.feeds.{f}", f"the value has shape {list(v.array.shape)} but the "
                           f"program declares {list(t.shape)}", "bad-shape")
            values[f] = v
        runs.append(Run(name, tuple(fetch), tuple(dict.fromkeys(roots)), values,
                        whole=not fetch and not targets))
    for run, (w, *_) in zip(runs, runs_raw):
        if not releases:
            break
        mine = set(run_nodes(program, run))
        taken: dict[str, str] = {}
        for lock in sorted(releases):
            sec = blocking.sections.get(lock)
            if lock in mine and sec is not None:
                if sec in taken:
                    raise _bad(w, f"the run takes the mutex of section {sec!r} twice "
                               f"({taken[sec]!r} and {lock!r}): in one run TensorFlow's two "
                               "locks exclude each other, which the sections do not model "
                               "(run one execute of a tf.CriticalSection per run)",
                               "unmodelled-session-op")
                taken[sec] = lock
        for lock, consume in sorted(releases.items()):
            if lock in mine and consume not in mine:
                raise _bad(w, f"the run takes the lock {lock!r} but does not run its "
                           f"ConsumeMutexLock {consume!r}: TensorFlow then releases the mutex "
                           "as soon as it is taken, which the sections do not model (fetch the "
                           "critical section's outputs, or target the ConsumeMutexLock)",
                           "unmodelled-session-op")
    s = Session(program, tuple(runs), order, raw=data, blocking=blocking)
    try:  # the expansion's own checks (a run that needs nothing, ...)
        s.expand_blocking()
    except blk.BlockingError as exc:
        raise SessionError(exc.violations) from None
    return s


def load_session(path: str | Path, load_graph: GraphLoader | None = None) -> Session:
    from .jsonio import read_json_file  # noqa: PLC0415
    data = read_json_file(path)
    if isinstance(data, dict) and isinstance(data.get("program"), dict) and \
            isinstance(data["program"].get("graph"), str) and "format" not in data["program"]:
        # the graph's path, relative to the session file, made absolute
        data = dict(data, program=dict(data["program"], graph=str(
            (Path(path).parent / data["program"]["graph"]).resolve())))
    return session_from_json(data, where=str(path), base_dir=Path(path).parent,
                             load_graph=load_graph)


def group_outputs(outputs: Mapping[str, Any], runs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The outputs `RUN/OUT -> value` grouped by run: RUN -> {OUT: value}."""
    out: dict[str, dict[str, Any]] = {r: {} for r in runs}
    for k, v in outputs.items():
        run, _, name = k.partition("/")
        out.setdefault(run, {})[name] = v
    return out
