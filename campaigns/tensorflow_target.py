"""TensorFlow's real Grappler optimizers as campaign targets.

A campaign fuzzes *passes*, callables from a program to a program, run in the
pass sandbox (campaigns/sandbox.py).  Each Grappler optimizer becomes one:

    program --tfsem export--> GraphDef --Grappler (that optimizer alone,
    or the default pipeline)--> GraphDef --tfsem import--> program

so that the campaign's generator, checker, store, signatures, shrinking,
report and `tfsem serve` pages apply to Grappler unchanged.  Name one with
``tfsem fuzz --target grappler:OPTIMIZER`` (or ``--pass grappler:OPTIMIZER``;
``grappler`` alone is the default pipeline) or ``tfsem verify --target
grappler:dependency``; campaigns/targets.py resolves these names to the
attributes of this module (``grappler_OPTIMIZER``, `GrapplerTarget` objects).
The campaign judges the result against `GrapplerTarget.prepare` (the export
imported back, in the GraphDef's node names) and a finding gets both
GraphDefs as pbtxt (`GrapplerTarget.evidence`).

``tfsem fuzz --target xla`` is a target of another kind, "runtime"
(`RuntimeTarget`, below): programs are run on TensorFlow, not rewritten.

What Grappler is told: the fetches are the program's outputs (each exported as
an Identity node of the output's name) and the targets are every sink of the
exported graph (a node nothing consumes) and every stateful node, because in
a tfsem run every node fires once (SPEC section 2) while TensorFlow runs only
what its fetches and targets need: every node reaches a sink, so the same
nodes run (`_preserved`).  Interior pure nodes are not preserved, as in a
``tf.function``, so that Grappler may fuse or remove them.  Every node is
placed on the CPU (`_for_grappler`), as the placer does before Grappler runs
on a function's graph.  The variables keep their names (VarHandleOp
``shared_name``), so the imported result has the program's interface.

A program the exporter cannot write (an op with no TensorFlow counterpart) is
returned unchanged: there is nothing for Grappler to act on.  The campaign
judges Grappler's output against the export imported back (`prepare`), so
both are in TensorFlow's float semantics: flush-to-zero functions (``X.ftz``)
and uninterpreted ops whose TensorFlow kernel tfsem runs (float MatMul,
Conv2D, FusedBatchNorm, ...) are judged; a program with an uninterpreted op
tfsem cannot evaluate is returned unchanged (see `_imported`).  A Grappler
result that does not import back (an op the op registry does not know; the
remapper's fused ops are known, kernel-evaluated) raises
`GrapplerResultNotImported`, which the campaign
stores as a crash of the target with the op named.

TensorFlow is imported when this module is imported: the sandbox imports the
pass before it caps the child's memory, and TensorFlow's import reserves far
more address space than a pass's run.
"""

from __future__ import annotations

from tfsem.graphdef import grappler as _g

_g.tensorflow()   # at import time, before the sandbox's memory cap (see above)

#: the claims every Grappler optimizer makes: sound in seed 000's semantics,
#: outputs and final state observed (TensorFlow keeps variables across runs)
CLAIMS = {("atomic", "outputs+state"): "sound", ("atomic", "outputs"): "sound"}


class GrapplerResultNotImported(RuntimeError):
    """Grappler's output has an op or shape tfsem cannot import."""


def _exported(program, shared_handles: bool = False, defaults: bool = False):
    """(serialized GraphDef, fetches, targets) of `program`, or (None, [], [])
    when it cannot be exported.  `shared_handles`: one VarHandleOp per
    variable, for XLA (graphdef/exporter.py export_graph).  `defaults` (the
    Grappler targets): every attribute TensorFlow's OpDef gives a default
    written on each node, as Grappler writes them on its output
    (`_with_default_attrs`)."""
    from tfsem.graphdef.exporter import export_fetched_by_name  # noqa: PLC0415
    from tfsem.graphdef.proto import encode  # noqa: PLC0415
    graph = export_fetched_by_name(program, shared_handles=shared_handles)
    if graph is None:    # (nothing to hand to Grappler)
        return None, [], []
    fetches = list(program.outputs)
    targets = [n["name"] for n in graph["node"]
               if n["op"] != "Placeholder" and n["name"] not in program.outputs]
    data = encode("GraphDef", graph)
    return (_with_default_attrs(data) if defaults else data), fetches, targets


def _with_default_attrs(data: bytes) -> bytes:
    """The GraphDef with every attribute its op's OpDef gives a default
    written on each node.  Grappler fills them in on its output; an
    uninterpreted op keeps its attributes (`tf_attrs`) in its function's
    identity, so without them on both sides `Conv2D` before Grappler and
    `Conv2D` after (with `dilations`, `explicit_paddings`, ...) would be
    two functions: a change no optimizer made, left to the concrete stages."""
    tf = _g.tensorflow()
    from tensorflow.python.framework import op_def_registry  # noqa: PLC0415
    gd = tf.compat.v1.GraphDef()
    gd.ParseFromString(data)
    for node in gd.node:
        od = op_def_registry.get(node.op)
        if od is None:
            continue
        for a in od.attr:
            if a.HasField("default_value") and a.name not in node.attr:
                node.attr[a.name].CopyFrom(a.default_value)
    return gd.SerializeToString()


def _same_semantics(data: bytes, fetches, targets, kernels: bool = False) -> bool:
    """Whether the exported graph means, to TensorFlow, what the program means
    to tfsem: its import uses no uninterpreted ``tf.*`` function, and either
    no flush-to-zero float function (``X.ftz``: TensorFlow's CPU kernels
    flush subnormals, tfsem's own functions keep them) or only ones that
    provably never see or make a subnormal (`tfsem.generators.grappler.unflushed`:
    every float tensor integer-valued, for every σ), where flushing changes
    nothing.  Otherwise the campaign would compare Grappler's output
    (TensorFlow's semantics) with the generated program (IEEE semantics) and
    blame Grappler for the CPU's denormal mode.  `kernels`: see `_imported`."""
    p = _imported(data, fetches, targets, kernels)
    return p is not None


def _imported(data: bytes, fetches, targets, kernels: bool = False):
    """The exported graph imported back, with each ``X.ftz`` replaced by ``X``
    where that provably changes nothing (see `_same_semantics`); None when it
    does not import, has an uninterpreted op, or has a flush-to-zero function
    that may meet a subnormal.

    `kernels` (the Grappler targets): the judged program is this import
    itself, so it may keep TensorFlow's own float semantics: ``X.ftz``
    functions (tfsem's models of TensorFlow's flushing kernels) and
    uninterpreted ``tf.OP`` functions whose kernel tfsem runs as a function
    (the op registry's `kernel_ops`, docs/kernels.md).  Grappler's output is
    imported with the same models, so both sides are in TensorFlow's
    semantics.  An uninterpreted op whose kernel is not run still makes it
    None: nothing could be evaluated through it."""
    from tfsem.generators.grappler import unflushed  # noqa: PLC0415
    from tfsem.graphdef.importer import import_graph  # noqa: PLC0415
    from tfsem.graphdef.proto import decode  # noqa: PLC0415
    from tfsem.oracle.functions import FTZ_SUFFIX  # noqa: PLC0415
    try:
        p = import_graph(decode("tensorflow.GraphDef", data), fetches, targets).program
    except Exception:  # noqa: BLE001 - not importable: nothing to judge
        return None
    if kernels:
        from tfsem.oracle.opdefs import kernel_ops  # noqa: PLC0415
        run = kernel_ops()
        if any(n.op.startswith("tf.") and n.op[3:].split("/")[0] not in run for n in p.nodes):
            return None
    elif any(n.op.startswith("tf.") for n in p.nodes):
        return None
    if any(n.op.endswith(FTZ_SUFFIX) or n.attrs.get("fn", "").endswith(FTZ_SUFFIX)
           for n in p.nodes):
        return unflushed(p) or (p if kernels else None)
    return p


def optimize(program, optimizer: str = _g.DEFAULT_PIPELINE, damage=None):
    """`program` through Grappler's `optimizer` and back (see the module docstring).
    `damage` (tests only): a function applied to Grappler's output GraphDef
    before it is imported, to plant a bug."""
    return optimize_with_graphs(program, optimizer, damage)[0]


def optimize_with_graphs(program, optimizer: str = _g.DEFAULT_PIPELINE, damage=None):
    """(the optimized program, the exported GraphDef given to Grappler,
    Grappler's output GraphDef); both GraphDefs None where nothing was handed
    to Grappler (the program is returned unchanged, see the module docstring)."""
    from tfsem.graphdef.importer import import_graph  # noqa: PLC0415
    from tfsem.graphdef.proto import decode  # noqa: PLC0415
    from tfsem.oracle.program import ProgramError  # noqa: PLC0415

    data, fetches, targets = _exported(program, defaults=True)
    if data is None:
        return program, None, None
    if not _same_semantics(data, fetches, targets, kernels=True):
        return program, None, None
    data = _for_grappler(data)
    res = _g.run_grappler(data, fetches + _preserved(data, fetches, targets), optimizer)
    out = res.graph_def
    if damage is not None:
        out = damage(out)
    out_targets = [t for t in targets if t in {n.name for n in out.node}]
    try:
        imported = import_graph(decode("tensorflow.GraphDef", out.SerializeToString()),
                                fetches, out_targets)
    except ProgramError as exc:
        raise GrapplerResultNotImported(
            f"Grappler ({optimizer}) output does not import: "
            + "; ".join(str(v) for v in exc.violations)) from None
    from tfsem.generators.grappler import unflushed  # noqa: PLC0415
    # Grappler's output in TensorFlow's float semantics; where it provably
    # meets no subnormal, tfsem's own (IEEE) functions compute the same, and
    # Z3 has encodings for them (the .ftz ones are uninterpreted in proofs)
    return unflushed(imported.program) or imported.program, data, out


#: the device every node of the graph given to Grappler is placed on
CPU_DEVICE = _g.CPU_DEVICE


def _for_grappler(data: bytes) -> bytes:
    """The exported GraphDef with every node placed on the CPU, as TensorFlow
    places a function's graph before Grappler runs on it: graphdef/grappler.py
    `placed_bytes`, shared with `tfsem grappler` (the exporter writes no
    device, so every node is placed)."""
    return _g.placed_bytes(data)


def _preserved(data: bytes, fetches, targets) -> list[str]:
    """The targets Grappler must keep, besides the fetches: every node no
    other node consumes (data or control) and every stateful node.  A
    ``tf.function`` keeps its outputs and its stateful ops (control outputs)
    and nothing else; keeping every sink besides runs the same nodes as
    naming every node (each node reaches a sink), so tfsem's "every node
    fires once" still holds.  Naming every node would forbid what Grappler
    does to a real graph: a preserved node is never fused away or removed
    (remapper.cc ``IsInPreserveSet``)."""
    from tensorflow.python.framework import op_def_registry  # noqa: PLC0415
    from tfsem.graphdef.proto import decode  # noqa: PLC0415
    graph = decode("tensorflow.GraphDef", data)
    consumed: set[str] = set()
    for n in graph.get("node", []):
        for i in n.get("input", []):
            consumed.add(_g.fetch_node(i))
    ops = {n["name"]: n["op"] for n in graph.get("node", [])}
    keep = []
    for t in targets:
        od = op_def_registry.get(ops.get(t, ""))
        if t not in consumed or od is None or od.is_stateful:
            keep.append(t)
    return keep


def as_tensorflow_sees_it(program, shared_handles: bool = False, kernels: bool = False):
    """The program TensorFlow is given, in its own names and semantics: the
    export imported back (node names are the GraphDef's; float functions are
    TensorFlow's flushing ones, replaced by tfsem's own where no subnormal can
    occur, see `_same_semantics`).  None when the program cannot be exported,
    or its export means something else to TensorFlow than to tfsem (an
    uninterpreted ``tf.*`` function, or a flush-to-zero function that may meet
    a subnormal), or does not import back.  `shared_handles` as in `_exported`,
    `kernels` as in `_imported` (the Grappler targets)."""
    data, fetches, targets = _exported(program, shared_handles, defaults=kernels)
    if data is None:
        return None
    return _imported(data, fetches, targets, kernels)


def graph_text(graph) -> str:
    """A GraphDef (TensorFlow's message or its serialized bytes) as pbtxt,
    written by tfsem's own codec (graphdef/proto format_text)."""
    from tfsem.graphdef.proto import format_text  # noqa: PLC0415
    from tfsem.graphdef.proto import decode  # noqa: PLC0415
    data = graph if isinstance(graph, (bytes, bytearray)) else graph.SerializeToString()
    return format_text("GraphDef", decode("tensorflow.GraphDef", bytes(data)))


#: where a finding of a TensorFlow target keeps the generated program that
#: was exported (the finding's `original` is its export imported back)
GIVEN = "program_given"


class GrapplerTarget:
    """One Grappler optimizer (or the default pipeline) as a campaign pass.

    The campaign judges its output against `prepare(program)`, the exported
    graph imported back, not against the generated program: both are then in
    the GraphDef's node names and in TensorFlow's float semantics, so a
    finding page draws the graph Grappler was given and the graph it
    returned under the same names.  `evidence` adds both GraphDefs as pbtxt,
    the optimizer and TensorFlow's version to a finding."""

    target_kind = "pass"
    #: TensorFlow fails a run that reads an uninitialized variable; tfsem
    #: carries an error value on, which a control-dependent constant ignores.
    #: Grappler folds `OnesLike(Read(x))` into `Const(1)` after `^Read(x)`:
    #: the same failed run in TensorFlow, a new outcome in tfsem.  So the
    #: claims speak of σ with every variable initialized (campaigns/loop.py).
    initialized_only = True

    def __init__(self, optimizer: str, *, damage=None, name: str | None = None,
                 origin: str | None = None):
        self.optimizer = optimizer
        self.damage = damage
        self.name = name or ("grappler" if optimizer == _g.DEFAULT_PIPELINE else f"grappler:{optimizer}")
        self.description = (f"TensorFlow {_g.tensorflow().__version__} Grappler: "
                            + ("the default pipeline" if optimizer == _g.DEFAULT_PIPELINE
                               else f"{optimizer} alone ({_g.OPTIMIZERS[optimizer]})"))
        self.claims = dict(CLAIMS)
        self.doc = (self.description + " -- exported, optimized and imported back "
                    "(campaigns/tensorflow_target.py)")
        self.origin = origin or f"{__name__}:grappler_{optimizer}"

    def __call__(self, program):
        return optimize(program, self.optimizer, self.damage)

    @property
    def function(self):
        return self

    def prepare(self, program):
        return as_tensorflow_sees_it(program, kernels=True)

    def evidence(self, record) -> dict:
        """{"graphdef": {...}} for a finding: the GraphDef given to Grappler
        and Grappler's output, as pbtxt, with the optimizer and TensorFlow's
        version (Grappler is run again on the finding's program: it is
        deterministic for one graph and one configuration)."""
        from tfsem.oracle.jsonio import program_from_json  # noqa: PLC0415
        given = (record.detail or {}).get(GIVEN)
        info = {"optimizer": self.optimizer, "tensorflow": _g.tensorflow().__version__}
        if given is None:
            return {"graphdef": dict(info, error="the program given to Grappler was not kept")}
        try:
            _, before, after = optimize_with_graphs(program_from_json(given, validate=False),
                                                    self.optimizer, self.damage)
        except Exception as exc:  # noqa: BLE001 - a crash finding: show what was given
            data, _, _ = _exported(program_from_json(given, validate=False))
            return {"graphdef": dict(info, original=graph_text(data) if data else None,
                                     error=f"{type(exc).__name__}: {exc}"[:2000])}
        if before is None:
            return {"graphdef": dict(info, error="the program was not exported")}
        return {"graphdef": dict(info, original=graph_text(before), optimized=graph_text(after))}


for _name in [*_g.OPTIMIZERS, _g.DEFAULT_PIPELINE]:
    globals()[f"grappler_{_name}"] = GrapplerTarget(_name)
del _name


def spec_for(name: str) -> str | None:
    """`grappler` or `grappler:OPTIMIZER` as a pass spec of this module; None
    for any other name.  Raises ValueError for an unknown optimizer."""
    if name == "grappler":
        return f"{__name__}:grappler_{_g.DEFAULT_PIPELINE}"
    if name.startswith("grappler:"):
        opt = name.partition(":")[2]
        _g.check_optimizer_names([opt])
        return f"{__name__}:grappler_{opt}"
    return None


# --- runtime targets: XLA runs the program, the oracle judges each outcome ---------
#
# `tfsem fuzz --target xla`.  XLA returns no graph to check, so this target is
# of the kind "runtime" (campaigns/targets.py): for each generated program the
# loop (campaigns/loop.py) asks `RuntimeRunner.execute` to export it, load it
# into a session with XLA's CPU auto-clustering, and run it `runs` times from
# σ with every variable initialized; then it compares every observed outcome
# with the oracle's outcome set of the export imported back
# (`as_tensorflow_sees_it`) in the cell's semantics.  An outcome outside the
# set is an `unsound` finding.
#
# Claims.  XLA's clustering reads every resource a cluster uses at its start
# and writes it back at its end: seed 002's decomposed semantics (an Assign's
# read and write may be split by other steps) is what it claims to respect,
# so it claims `sound` in the decomposed cells; seed 000's atomic semantics it
# does not promise, so it claims `unsound` there and an outcome outside the
# atomic set only is an *expected* finding.  Atomic outcomes are a subset of
# decomposed ones, so an outcome outside the decomposed set is a finding in
# both cells, a contradicted claim (exit status 1) in the decomposed one.
#
# Runs are timing-dependent: a finding says how many of the runs gave its
# outcome; a shrunk candidate counts as reproducing only when its own `runs`
# runs show an outcome outside its set again (never more than was observed).

#: runs of each program (and of each shrinking candidate)
DEFAULT_RUNS = 20

RUNTIME_CLAIMS = {("decomposed", "outputs+state"): "sound", ("decomposed", "outputs"): "sound",
                  ("atomic", "outputs+state"): "unsound", ("atomic", "outputs"): "unsound"}


class RuntimeResult:
    """What one `RuntimeRunner.execute` gave: `status` "ok" (with the judged
    `program`, the σ used, the `observed` outcomes and `runs`), "skipped"
    (nothing TensorFlow can run as tfsem means it; `message` says why) or
    "failed" (TensorFlow failed a run; `message` is TensorFlow's)."""

    def __init__(self, status, *, program=None, feeds=None, init=None, observed=None, runs=0,
                 message="", seconds=0.0, graph=None):
        self.status = status
        self.program = program
        self.feeds = feeds or {}
        self.init = init or {}
        self.observed = observed
        self.runs = runs
        self.message = message
        self.seconds = seconds
        self.graph = graph


class RuntimeRunner:
    """Executes programs on TensorFlow (`mode` "xla" or "tensorflow") in this
    process.  TensorFlow's own time limit per run is not set by tfsem: a run
    that hangs hangs the worker (the campaign's hard stop ends it)."""

    def __init__(self, mode: str = "xla", observe: str = "outputs+state"):
        self.mode = mode
        self.observe = observe

    def execute(self, program, feeds, init, runs: int) -> RuntimeResult:
        import time  # noqa: PLC0415

        from tfsem.backends.tensorflow import GraphRunner, TensorFlowRunError  # noqa: PLC0415
        started = time.monotonic()
        shared = self.mode == "xla"   # XLA refuses two handles of one variable in a cluster
        data, fetches, targets = _exported(program, shared)
        if data is None:
            return RuntimeResult("skipped", message="not exportable")
        judged = as_tensorflow_sees_it(program, shared)
        if judged is None:
            return RuntimeResult("skipped", message="its export means something else to TensorFlow")
        feeds = {k: v for k, v in feeds.items() if k in judged.feed_names}
        if set(feeds) != set(judged.feed_names):
            return RuntimeResult("skipped", message="σ lacks a feed of the exported graph")
        from .loop import _initialized  # noqa: PLC0415
        init = _initialized(judged, init)
        try:
            with GraphRunner(data, {f: f for f in fetches}, targets, mode=self.mode,
                             observe=self.observe) as r:
                seen = r.run_many(feeds, init, runs)
        except TensorFlowRunError as exc:
            return RuntimeResult("failed", message=str(exc)[:500],
                                 seconds=time.monotonic() - started)
        return RuntimeResult("ok", program=judged, feeds=feeds, init=init, observed=seen,
                             runs=seen.runs, seconds=time.monotonic() - started, graph=data)

    def close(self) -> None:
        pass


class RuntimeTarget:
    """A runtime target (`--target xla`): programs are run, not rewritten."""

    target_kind = "runtime"

    def __init__(self, mode: str = "xla"):
        self.mode = mode
        self.name = mode
        self.claims = dict(RUNTIME_CLAIMS)
        self.description = (f"TensorFlow {_g.tensorflow().__version__} "
                            + ("XLA CPU auto-clustering" if mode == "xla" else "graph executor")
                            + ": generated programs run, every outcome checked against the oracle")
        self.doc = self.description
        self.origin = f"{__name__}:{mode}_target"

    def __call__(self, program):
        raise TypeError(f"{self.name} is a runtime target: it runs programs, it does not rewrite "
                        "them (use it with tfsem fuzz --target or tfsem verify --target)")

    def runner(self, observe: str = "outputs+state") -> RuntimeRunner:
        return RuntimeRunner(self.mode, observe)

    def evidence(self, record) -> dict:
        """{"graphdef": {"run": pbtxt}} and, for XLA, which clusters XLA
        formed (one traced run of the finding's program from its σ)."""
        from tfsem.oracle.jsonio import decode_inputs, program_from_json  # noqa: PLC0415
        info = {"tensorflow": _g.tensorflow().__version__, "mode": self.mode}
        given = (record.detail or {}).get(GIVEN)
        if given is None:
            return {"graphdef": dict(info, error="the program run was not kept")}
        program = program_from_json(given, validate=False)
        data, fetches, targets = _exported(program, self.mode == "xla")
        if data is None:
            return {"graphdef": dict(info, error="the program was not exported")}
        out = dict(info, run=graph_text(data))
        if self.mode == "xla":
            from tfsem.backends.tensorflow import GraphRunner  # noqa: PLC0415
            try:
                judged = program_from_json(record.original, validate=False)
                feeds, init = decode_inputs(judged, record.feeds, record.init)
                with GraphRunner(data, {f: f for f in fetches}, targets, mode="xla",
                                 observe=record.observe) as r:
                    out["clusters"] = r.clusters(feeds, init)
            except Exception as exc:  # noqa: BLE001 - evidence only
                out["clusters_error"] = f"{type(exc).__name__}: {exc}"[:500]
        return {"graphdef": out}


xla_target = RuntimeTarget("xla")


# --- XLA (and the plain executor) against the oracle, on generated programs ------
#
# XLA returns no graph to check, so it is not a pass: this campaign exports each
# generated program, runs it `runs` times on TensorFlow (`mode` "xla": XLA CPU
# auto-clustering; "tensorflow": the executor) from one σ with every variable
# initialized (TensorFlow fails a run that reads an uninitialized variable), and
# compares every outcome with the oracle's outcome sets at that σ.  An outcome
# outside the decomposed semantics' set (seed 002's, the weaker one that XLA's
# clustering is meant to respect) is a finding; one outside the atomic set only
# is counted apart (the executor locks updates, XLA is allowed not to).
#
#     python -m tfsem.campaigns.tensorflow_target xla --budget 600 --out DIR

def xla_campaign(budget_s: float, *, seed: int = 0, max_nodes: int = 10, runs: int = 20,
                 mode: str = "xla", progress=None, max_programs: int | None = None) -> dict:
    """Run generated programs on TensorFlow for `budget_s` seconds, or until
    `max_programs` programs were generated (the same programs for the same
    seed, however busy the machine), and return the statistics (see above)."""
    import random  # noqa: PLC0415
    import time  # noqa: PLC0415

    from tfsem.backends.tensorflow import GraphRunner, TensorFlowRunError  # noqa: PLC0415
    from tfsem.generators.builder import Config, build_inputs, build_program  # noqa: PLC0415
    from tfsem.generators.draw import RandomDraw  # noqa: PLC0415
    from tfsem.oracle.dispatch import outcome_set  # noqa: PLC0415
    from tfsem.oracle.jsonio import program_to_json  # noqa: PLC0415
    from tfsem.oracle.values import value_to_json  # noqa: PLC0415

    cfg = Config(max_nodes=max_nodes)
    stats = {"mode": mode, "tensorflow": _g.tensorflow().__version__, "seed": seed,
             "max_nodes": max_nodes, "runs_per_program": runs, "programs": 0,
             "not_exported": 0, "oracle_out_of_reach": 0, "tensorflow_failed": 0,
             "executed": 0, "runs": 0, "distinct_outcomes": 0,
             "outside_atomic_only": 0, "findings": []}
    started = time.monotonic()
    last = started
    i = 0
    while time.monotonic() - started < budget_s and (max_programs is None or i < max_programs):
        rng = random.Random(f"tfsem-generate:{seed}:{i}")
        program = build_program(RandomDraw(rng), cfg)
        feeds, init = build_inputs(RandomDraw(random.Random(f"tfsem-inputs:{seed}:{i}")),
                                   program, uninitialized_p=0.0)
        i += 1
        stats["programs"] += 1
        data, fetches, targets = _exported(program, mode == "xla")
        if data is None:
            stats["not_exported"] += 1
            continue
        # the oracle judges what TensorFlow runs: the export imported back
        # (float ops flush subnormals there, as TensorFlow's CPU kernels do)
        from tfsem.graphdef.importer import import_graph  # noqa: PLC0415
        from tfsem.graphdef.proto import decode  # noqa: PLC0415
        try:
            program = import_graph(decode("tensorflow.GraphDef", data), fetches, targets).program
        except Exception:
            stats["not_exported"] += 1
            continue
        try:
            allowed = {s: set(outcome_set(program, feeds, init, s, "outputs+state",
                                          max_seconds=2.0))
                       for s in ("atomic", "decomposed")}
        except Exception:  # budget, or an op the oracle cannot run
            stats["oracle_out_of_reach"] += 1
            continue
        try:
            with GraphRunner(data, {f: f for f in fetches}, targets, mode=mode) as r:
                seen = r.run_many(feeds, init, runs)
        except TensorFlowRunError as exc:
            stats["tensorflow_failed"] += 1
            stats.setdefault("tensorflow_errors", []).append(str(exc)[:300])
            continue
        stats["executed"] += 1
        stats["runs"] += seen.runs
        stats["distinct_outcomes"] += len(seen.counts)
        for outcome, n in seen.items():
            if outcome not in allowed["decomposed"]:
                stats["findings"].append({
                    "program": program_to_json(program), "index": i - 1,
                    "feeds": {k: value_to_json(v) for k, v in feeds.items()},
                    "init": {k: value_to_json(v) for k, v in init.items()},
                    "outcome": outcome.to_json(), "runs": n,
                    "allowed": [o.to_json() for o in allowed["decomposed"]]})
            elif outcome not in allowed["atomic"]:
                stats["outside_atomic_only"] += 1
                examples = stats.setdefault("outside_atomic_examples", [])
                if len(examples) < 10:
                    examples.append({
                        "program": program_to_json(program), "index": i - 1,
                        "feeds": {k: value_to_json(v) for k, v in feeds.items()},
                        "init": {k: value_to_json(v) for k, v in init.items()},
                        "outcome": outcome.to_json(), "runs": n,
                        "allowed_atomic": [o.to_json() for o in allowed["atomic"]]})
        if progress and time.monotonic() - last > 30:
            last = time.monotonic()
            progress(f"[{last - started:7.1f}s] {mode}: {stats['programs']} programs, "
                     f"{stats['executed']} executed, {len(stats['findings'])} findings")
    stats["seconds"] = round(time.monotonic() - started, 3)
    return stats


def _main(argv=None) -> int:
    import argparse  # noqa: PLC0415
    import json  # noqa: PLC0415
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    ap = argparse.ArgumentParser(prog="python -m tfsem.campaigns.tensorflow_target",
                                 description="XLA (or the executor) against the oracle on "
                                             "generated programs")
    ap.add_argument("mode", choices=("xla", "tensorflow"))
    ap.add_argument("--budget", type=float, default=600.0, help="seconds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-nodes", type=int, default=10)
    ap.add_argument("--runs", type=int, default=20, help="runs per program")
    ap.add_argument("--out", default=None, help="write the summary and findings as JSON here")
    args = ap.parse_args(argv)
    stats = xla_campaign(args.budget, seed=args.seed, max_nodes=args.max_nodes,
                         runs=args.runs, mode=args.mode,
                         progress=lambda m: print(m, file=sys.stderr, flush=True))
    if args.out:
        Path(args.out).write_text(json.dumps(stats, indent=1))
    summary = {k: v for k, v in stats.items()
               if k not in ("findings", "tensorflow_errors", "outside_atomic_examples")}
    summary["findings"] = len(stats["findings"])
    print(json.dumps(summary, indent=1))
    return 1 if stats["findings"] else 0


if __name__ == "__main__":
    raise SystemExit(_main())
