"""Grappler targets that may remove what no output and no effect needs:
for the rewrites of control flow (docs/grappler-control-flow.md).

    tfsem fuzz --pass tfsem.campaigns.grappler_control_flow:loop \\
               --generator tfsem.generators.control_flow:control_flow_cases --budget 4m --out DIR

`tfsem fuzz --target grappler:OPTIMIZER` (campaigns/tensorflow_target.py)
tells Grappler to preserve every node of the exported graph, because in a
tfsem run every node fires once.  That leaves Grappler's control-flow
rewrites nothing to do: the loop optimizer's dead-branch removal skips a
`Switch` that is to be preserved, and constant folding does not replace a
preserved node.  These targets name as fetches the program's outputs and
as targets only its stateful nodes (variable handles, reads, writes: the
ops `graphdef/ops.py` models as stateful), so Grappler may remove a pure
node, a dead branch, a `Switch` whose predicate is a constant.

What this changes in the claim: a pure node of tfsem's program that no
output needs still fires, and its *error* (an integer division by zero, say)
is an outcome; TensorFlow does not run such a node.  A finding whose only
difference is such an error is TensorFlow's documented pruning, not a
miscompile; read a finding's outcome before calling it one.  The generators
of control flow (generators/control_flow.py) make no op that fails on
initialized variables, so on them the two claims agree.
"""

from __future__ import annotations

from tfsem.generators.functional import stateful as _stateful
from tfsem.graphdef import grappler as _g

from . import tensorflow_target as _t

#: the optimizers these targets exist for (issue 24, item 5), and the pipeline
OPTIMIZERS = ("loop", "constfold", "function", _g.DEFAULT_PIPELINE)


def exported(program):
    """(serialized GraphDef, fetches, targets) as `tensorflow_target._exported`
    but with only the stateful nodes as targets; (None, [], []) when the
    program cannot be exported."""
    from tfsem.graphdef.exporter import export_fetched_by_name  # noqa: PLC0415
    from tfsem.graphdef.proto import encode  # noqa: PLC0415
    graph = export_fetched_by_name(program)
    if graph is None:    # (nothing to hand to Grappler)
        return None, [], []
    fetches = list(program.outputs)
    targets = [n["name"] for n in graph["node"]
               if n["name"] not in program.outputs and _stateful(n["op"])]
    return encode("GraphDef", graph), fetches, targets


def grappler_imported(data: bytes, fetches: list, targets: list, optimizer: str):
    """(Grappler's `optimizer` run on the serialized GraphDef `data`, imported
    with the fetches and the targets it kept; Grappler's output GraphDef).
    An output that does not import raises `GrapplerResultNotImported`."""
    from tfsem.graphdef.importer import import_graph  # noqa: PLC0415
    from tfsem.graphdef.proto import decode  # noqa: PLC0415
    from tfsem.oracle.program import ProgramError  # noqa: PLC0415

    out = _g.run_grappler(data, fetches + targets, optimizer).graph_def
    names = {n.name for n in out.node}
    try:
        imported = import_graph(decode("tensorflow.GraphDef", out.SerializeToString()),
                                fetches, [t for t in targets if t in names])
    except ProgramError as exc:
        raise _t.GrapplerResultNotImported(
            f"Grappler ({optimizer}) output does not import: "
            + "; ".join(str(v) for v in exc.violations)) from None
    return imported, out


def optimize_with_graphs(program, optimizer: str):
    """(the optimized program, the GraphDef given to Grappler, Grappler's
    output); both GraphDefs None where nothing was handed to Grappler."""
    data, fetches, targets = exported(program)
    if data is None:
        return program, None, None
    all_nodes = _t._exported(program)[2]
    if not _t._same_semantics(data, fetches, all_nodes):
        return program, None, None
    imported, out = grappler_imported(data, fetches, targets, optimizer)
    from tfsem.generators.grappler import unflushed  # noqa: PLC0415
    return unflushed(imported.program) or imported.program, data, out


class PrunableGrapplerTarget(_t.GrapplerTarget):
    """A Grappler optimizer told to preserve only outputs and stateful nodes."""

    def __init__(self, optimizer: str):
        super().__init__(optimizer, name=f"grappler-cf:{optimizer}",
                         origin=f"{__name__}:{'default' if optimizer == _g.DEFAULT_PIPELINE else optimizer}")
        self.description += " (preserving only outputs and stateful nodes)"

    def __call__(self, program):
        return optimize_with_graphs(program, self.optimizer)[0]

    def evidence(self, record) -> dict:
        return graph_evidence(self.optimizer, record, optimize_with_graphs, {},
                              "the program was not exported")


def graph_evidence(optimizer: str, record, optimize, info: dict, nothing: str) -> dict:
    """A finding's evidence: the GraphDef given to Grappler and Grappler's
    output, rebuilt from the program the record kept by `optimize` (which
    returns (program, GraphDef given, output) with None where nothing was
    given, said as `nothing`); `info` adds to what the page shows."""
    from tfsem.oracle.jsonio import program_from_json  # noqa: PLC0415
    given = (record.detail or {}).get(_t.GIVEN)
    info = {"optimizer": optimizer, "tensorflow": _g.tensorflow().__version__,
            "preserved": "outputs and stateful nodes", **info}
    if given is None:
        return {"graphdef": dict(info, error="the program given to Grappler was not kept")}
    try:
        _, before, after = optimize(program_from_json(given, validate=False), optimizer)
    except Exception as exc:  # noqa: BLE001 - a crash finding: show what was given
        return {"graphdef": dict(info, error=f"{type(exc).__name__}: {exc}"[:2000])}
    if before is None:
        return {"graphdef": dict(info, error=nothing)}
    return {"graphdef": dict(info, original=_t.graph_text(before), optimized=_t.graph_text(after))}


loop = PrunableGrapplerTarget("loop")
constfold = PrunableGrapplerTarget("constfold")
function = PrunableGrapplerTarget("function")
default = PrunableGrapplerTarget(_g.DEFAULT_PIPELINE)
