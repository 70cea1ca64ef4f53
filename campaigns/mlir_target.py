"""TensorFlow's MLIR pass pipelines as campaign targets (docs/mlir.md,
"Fuzzing the pipelines").

``tfsem fuzz --target mlir:PIPELINE`` (or ``tfsem verify --target ...``)
fuzzes one pipeline, written as `tf-opt` takes it; ``mlir-cluster:PIPELINE``
first wraps a run of resource accesses in a hand-built `tf_device.cluster`
(graphdef/mlir_cluster.py), for the passes that act on clusters.  Each
generated program goes

    program --tfsem export--> GraphDef --ImportGraphDef--> tf_executor module
    [--wrap_cluster-->] --PIPELINE--> module --tfsem's MLIR reader--> program

(the GraphDef route), or, for a program that names its islands (the module
generator's, generators/mlir.py), is written as a module directly
(graphdef/mlir_writer.py, its clusters its own) and printed once by
TensorFlow; the result is judged against `prepare(program)`: the module before the
pipeline, read back by the same reader (so the check is of the pipeline
alone, not of TensorFlow's importer or of tfsem's exporter).  The
pipeline runs in the campaign's pass sandbox (campaigns/sandbox.py), a child
process that lives for many programs: TensorFlow is imported once per child,
when this module is imported, not once per program.  A pipeline that aborts
the process (an `LLVM ERROR`, a failed check) kills that child: the sandbox
reports it as a crash finding, with the signal, and starts a fresh child.
TensorFlow's exceptions (a verifier failure after a pass) are crash findings
of type `MlirPipelineFailed`; an output tfsem's reader refuses is one of
type `MlirResultNotRead` (tfsem's limitation, named, not TensorFlow's bug).

What TensorFlow is given: the program's outputs are the fetches, and every
node no other node consumes (a sink, such as a final write) is fetched too,
as `T/_tfsem_target` (graphdef/mlir_tf.py `import_graph_def`), so that every
op of the program runs, as in a tfsem run (SPEC section 2), and graph
pruning has no unfetched write to delete.

Claims: sound in every cell.  The passes that split an atomic update (the
decomposition of `AssignAdd`, the lifting of a cluster's reads and writes)
are allowed to by the concurrency semantics (decomposed), not by the
executor's (atomic), so a difference found in an atomic cell only is a
finding of its own kind: `evidence` checks every unsound finding in both
semantics modes and names it `executor-only` (unsound atomic, not unsound
decomposed) or `both-semantics` (docs/mlir.md).

TensorFlow is imported when a target is made (`MlirTarget()`: in the
sandbox, before its memory cap), not when this module is imported.
"""

from __future__ import annotations

from tfsem.graphdef import grappler as _g

PREFIX = "mlir:"
CLUSTER_PREFIX = "mlir-cluster:"
#: the generators the MLIR targets use unless --generator is given: three
#: programs in four written as modules directly (generators/mlir.py), the
#: others exported and imported by TensorFlow (the Grappler generator's)
GENERATOR = "tfsem.generators.mlir:mixed_strategy"
CLUSTER_GENERATOR = "tfsem.generators.mlir:mixed_cluster_strategy"
#: a module of one constant, to find a pipeline TensorFlow refuses before a
#: campaign (with a `tf` op: a pass that creates one needs the dialect loaded)
EMPTY_MODULE = """module {
  func.func @main() -> tensor<i64> {
    %0 = tf_executor.graph {
      %c, %ctl = tf_executor.island wraps "tf.Const"() <{value = dense<0> : tensor<i64>}> : () -> tensor<i64>
      tf_executor.fetch %c : tensor<i64>
    }
    return %0 : tensor<i64>
  }
}
"""

CLAIMS = {("atomic", "outputs+state"): "sound", ("atomic", "outputs"): "sound",
          ("decomposed", "outputs+state"): "sound", ("decomposed", "outputs"): "sound"}


class MlirPipelineFailed(RuntimeError):
    """TensorFlow raised while running the pipeline on a module it imported
    (a pass's error, or its verifier rejecting what a pass produced)."""


class MlirResultNotRead(RuntimeError):
    """The pipeline's output has a construct tfsem's MLIR reader refuses."""


def is_mlir_target(name: str) -> bool:
    return name.startswith(PREFIX) or name.startswith(CLUSTER_PREFIX)


def split_name(name: str) -> tuple[str, bool]:
    """(pipeline, cluster) of `mlir:PIPELINE` or `mlir-cluster:PIPELINE`."""
    if name.startswith(CLUSTER_PREFIX):
        return name[len(CLUSTER_PREFIX):], True
    if name.startswith(PREFIX):
        return name[len(PREFIX):], False
    raise ValueError(f"not an MLIR target: {name!r}")


def sinks(graph: dict, fetches) -> list[str]:
    """The nodes of a GraphDef (dict) no node consumes and no fetch names
    (Placeholders excepted): what must be fetched for every op to run."""
    used = {i.lstrip("^").split(":")[0] for n in graph["node"] for i in n.get("input", [])}
    fetched = {f.split(":")[0] for f in fetches}
    return [n["name"] for n in graph["node"]
            if n["name"] not in used and n["name"] not in fetched and n["op"] != "Placeholder"]


#: passes that refuse an island of more than one op ("tf_executor.island
#: must perfectly wrap a single op"): their pipelines take the GraphDef route
#: only (TensorFlow's importer makes one-op islands)
ONE_OP_ISLANDS = ("tf-executor-update-control-dependencies",)
#: the generator of the GraphDef route
GRAPHDEF_GENERATOR = "tfsem.generators.grappler:mixed_strategy"


def one_op_islands(pipeline: str) -> bool:
    """Whether a pass of `pipeline` wants every island to hold one op."""
    return any(p in pipeline for p in ONE_OP_ISLANDS)


def generator(name: str) -> str:
    """The default generator of the target `name` (no TensorFlow needed)."""
    pipeline, cluster = split_name(name)
    if one_op_islands(pipeline):
        return GRAPHDEF_GENERATOR
    return CLUSTER_GENERATOR if cluster else GENERATOR


def module_of(program, cluster: bool = False) -> str | None:
    """The `tf_executor` module of `program`: written directly when the
    program names its islands (generators/mlir.py; graphdef/mlir_writer.py,
    its clusters its own), else the one TensorFlow imports from `program`'s
    export (with a hand-built cluster when `cluster`); None when the program
    cannot be written, is not exported, or (`cluster`, exported) has fewer
    than two resource accesses."""
    from tfsem.graphdef.exporter import export_fetched_by_name  # noqa: PLC0415
    from tfsem.graphdef.mlir_cluster import wrap_cluster  # noqa: PLC0415
    from tfsem.graphdef.mlir_tf import import_graph_def  # noqa: PLC0415
    from tfsem.graphdef.mlir_writer import is_direct, write_module  # noqa: PLC0415
    from tfsem.graphdef.proto import encode  # noqa: PLC0415
    if is_direct(program):
        text = write_module(program)
        return None if text is None else printed(text)
    graph = export_fetched_by_name(program)
    if graph is None:    # (nothing to hand to TensorFlow)
        return None
    fetches = list(program.outputs)
    text = import_graph_def(encode("GraphDef", graph), fetches, sinks(graph, fetches))
    return wrap_cluster(text) if cluster else text


def printed(text: str) -> str:
    """`text` parsed and printed again by TensorFlow (an empty pipeline):
    what a pipeline that changes nothing prints, so that an unchanged module
    reads back as the same program (the reader names ops by their place)."""
    from tensorflow.python import pywrap_mlir  # noqa: PLC0415
    return pywrap_mlir.experimental_run_pass_pipeline(text, "", False)


def read(text: str, where: str):
    from tfsem.graphdef.mlir import program_of_mlir  # noqa: PLC0415
    return program_of_mlir(text, where, None, "all")


class MlirTarget:
    """One MLIR pass pipeline as a campaign pass (see the module docstring)."""

    target_kind = "pass"
    #: TensorFlow fails a run that reads an uninitialized variable (as for
    #: Grappler: campaigns/tensorflow_target.py GrapplerTarget)
    initialized_only = True

    def __init__(self, pipeline: str, cluster: bool = False):
        _g.tensorflow()     # now: in the sandbox, before its memory cap
        from tensorflow.python import pywrap_mlir  # noqa: F401,PLC0415
        self.pipeline = pipeline
        self.cluster = cluster
        self.name = (CLUSTER_PREFIX if cluster else PREFIX) + pipeline
        self.description = (f"TensorFlow {_g.tensorflow().__version__} MLIR pipeline "
                            f"{pipeline!r}" + (" on a hand-built tf_device.cluster" if cluster
                                               else ""))
        self.doc = self.description + " (campaigns/mlir_target.py)"
        #: the programs it acts on unless --generator says otherwise
        self.generator = generator(self.name)
        self.one_op_islands = one_op_islands(pipeline)
        self.claims = dict(CLAIMS)

    @property
    def function(self):
        return self

    def prepare(self, program):
        """The module before the pipeline, read back: what the output is
        judged against.  None (the program is skipped) when there is no
        module, or tfsem cannot read it."""
        from tfsem.graphdef.mlir_writer import is_direct  # noqa: PLC0415
        from tfsem.oracle.program import ProgramError  # noqa: PLC0415
        if self.one_op_islands and is_direct(program):
            return None     # islands of several ops: refused by a pass (ONE_OP_ISLANDS)
        text = module_of(program, self.cluster)
        if text is None:
            return None
        try:
            return read(text, "input.mlir")
        except ProgramError:
            return None

    def __call__(self, program):
        from tensorflow.python import pywrap_mlir  # noqa: PLC0415
        from tfsem.oracle.program import ProgramError  # noqa: PLC0415
        text = module_of(program, self.cluster)
        if text is None:
            raise MlirResultNotRead("the program has no module (prepare skips it)")
        try:
            out = pywrap_mlir.experimental_run_pass_pipeline(text, self.pipeline, False)
        except Exception as exc:  # noqa: BLE001 - TensorFlow's error: the finding
            raise MlirPipelineFailed(f"{type(exc).__name__}: {exc}"[:2000]) from None
        try:
            after = read(out, "output.mlir")
        except ProgramError as exc:
            raise MlirResultNotRead("; ".join(str(v) for v in exc.violations)[:2000]) from None
        return keep_variables(read(text, "input.mlir"), after)

    def evidence(self, record) -> dict:
        """{"mlir": {...}}: the pipeline, TensorFlow's version, the module
        before and after the pipeline (run again in a child process: a
        pipeline that crashed must not take the campaign with it), and for
        an unsound finding its verdict in both semantics modes and its kind
        (`executor-only` or `both-semantics`)."""
        from tfsem.graphdef.mlir_tf import run_pipeline  # noqa: PLC0415
        from tfsem.oracle.jsonio import program_from_json  # noqa: PLC0415
        from .loop import GIVEN  # noqa: PLC0415
        info: dict = {"pipeline": self.pipeline, "cluster": self.cluster,
                      "tensorflow": _g.tensorflow().__version__}
        if record.kind == "unsound" and record.rewritten is not None:
            info.update(both_modes(record.original, record.rewritten, record.observe))
            v = info["verdicts"]
            record.message += (f" [{info['finding_kind']}: {v['atomic']} atomic, "
                               f"{v['decomposed']} decomposed]")
        given = (record.detail or {}).get(GIVEN)
        if given is None:
            return {"mlir": dict(info, error="the generated program was not kept")}
        text = module_of(program_from_json(given, validate=False), self.cluster)
        info["input_mlir"] = text
        if text is not None:
            run = run_pipeline(self.pipeline, mlir_text=text, timeout=300.0)
            info["status"] = run.status
            info["output_mlir"] = run.output_text
            if run.message:
                info["message"] = run.message
        return {"mlir": info}


def keep_variables(before, after):
    """`after` with every variable of `before` it no longer declares declared
    again (a `Var` node named `tfsem_declared/VAR`).  A pass may delete a
    `VarHandleOp` nothing uses any more (the standard pipeline does); a handle
    has no effect, so the program is the same, and its interface keeps the
    variable, whose final value is then its initial one.  A pass that deletes
    a handle *with* its reads and writes is judged on what they did."""
    from tfsem.oracle.jsonio import program_from_json, program_to_json  # noqa: PLC0415
    missing = [v for v in before.variables if v not in after.variables]
    if not missing:
        return after
    b, a = program_to_json(before), program_to_json(after)
    declared = b.get("variables") or {}
    if isinstance(declared, dict):      # with their types: keep them typed
        have = a.get("variables") or {}
        if not isinstance(have, dict):
            have = {v: declared.get(v, {}) for v in have}
        a["variables"] = {**have, **{v: declared[v] for v in missing}}
    else:
        a["variables"] = list(a.get("variables") or []) + missing
    a["nodes"] = list(a["nodes"]) + [{"name": f"tfsem_declared/{v}", "op": "Var", "var": v}
                                     for v in missing]
    return program_from_json(a)


def both_modes(original: dict, rewritten: dict, observe: str, timeout: float = 20.0) -> dict:
    """{"verdicts": {mode: verdict}, "finding_kind": ...} of a rewrite checked in
    both semantics modes: `executor-only` when it is unsound in the atomic
    mode only (a difference the concurrency semantics allows and the
    executor does not), `both-semantics` when unsound in the decomposed mode
    too, `undetermined` otherwise."""
    from tfsem.checking import check_case  # noqa: PLC0415
    from tfsem.oracle.jsonio import Case, program_from_json  # noqa: PLC0415
    case = Case(program_from_json(original, validate=False), rewritten)
    verdicts = {}
    for mode in ("atomic", "decomposed"):
        try:
            verdicts[mode] = check_case(case, timeout=timeout, semantics=mode,
                                        observe=observe).verdict
        except Exception as exc:  # noqa: BLE001 - evidence only
            verdicts[mode] = f"unknown ({type(exc).__name__})"
    if verdicts["decomposed"] == "unsound":
        kind = "both-semantics"
    elif verdicts["atomic"] == "unsound" and verdicts["decomposed"] in ("sound",
                                                                         "no-counterexample"):
        kind = "executor-only"
    else:
        kind = "undetermined"
    return {"verdicts": verdicts, "finding_kind": kind}


_cache: dict[str, MlirTarget] = {}


def target(name: str) -> MlirTarget:
    """The MlirTarget of `mlir:PIPELINE` / `mlir-cluster:PIPELINE` (one per name)."""
    if name not in _cache:
        pipeline, cluster = split_name(name)
        _cache[name] = MlirTarget(pipeline, cluster)
    return _cache[name]
