"""TensorFlow's real Grappler optimizers as campaign targets.

A campaign fuzzes *passes*, callables from a program to a program, run in the
pass sandbox (campaigns/sandbox.py).  Each Grappler optimizer becomes one:

    program --tfsem export--> GraphDef --Grappler (that optimizer alone,
    or the default pipeline)--> GraphDef --tfsem import--> program

so that the campaign's generator, checker, store, signatures, shrinking,
report and `tfsem serve` pages apply to Grappler unchanged.  Name one with
``tfsem fuzz --pass grappler:OPTIMIZER`` (``grappler`` alone is the default
pipeline) or ``tfsem verify grappler:dependency``; campaigns/targets.py
resolves these names to the attributes of this module (``grappler_OPTIMIZER``).

What Grappler is told: the fetches are the program's outputs (each exported as
an Identity node of the output's name) and the targets are every other node
of the exported graph, because in a tfsem run every node fires once (SPEC
section 2) while TensorFlow runs only what its fetches and targets need.  The
variables keep their names (VarHandleOp ``shared_name``), so the imported
result has the program's interface.

A program the exporter cannot write (an op with no TensorFlow counterpart) is
returned unchanged: there is nothing for Grappler to act on.  A Grappler
result that does not import back (an op that has no model, such as a fused
op of the remapper) raises `GrapplerResultNotImported`, which the campaign
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


def _exported(program):
    from tfsem.graphdef.exporter import export_graph  # noqa: PLC0415
    from tfsem.graphdef.proto import encode  # noqa: PLC0415
    try:
        graph = export_graph(program)
    except Exception:  # ExportError and kin: nothing to hand to Grappler
        return None, [], []
    fetches = list(program.outputs)
    targets = [n["name"] for n in graph["node"]
               if n["op"] != "Placeholder" and n["name"] not in program.outputs]
    return encode("GraphDef", graph), fetches, targets


def optimize(program, optimizer: str = _g.DEFAULT_PIPELINE):
    """`program` through Grappler's `optimizer` and back (see the module docstring)."""
    from tfsem.graphdef.importer import import_graph  # noqa: PLC0415
    from tfsem.graphdef.proto.wire import decode  # noqa: PLC0415
    from tfsem.oracle.program import ProgramError  # noqa: PLC0415

    data, fetches, targets = _exported(program)
    if data is None:
        return program
    res = _g.run_grappler(data, fetches + targets, optimizer)
    out_targets = [t for t in targets if t in {n.name for n in res.graph_def.node}]
    try:
        imported = import_graph(decode("tensorflow.GraphDef", res.graph_def.SerializeToString()),
                                fetches, out_targets)
    except ProgramError as exc:
        raise GrapplerResultNotImported(
            f"Grappler ({optimizer}) output does not import: "
            + "; ".join(str(v) for v in exc.violations)) from None
    return imported.program


def _make(optimizer: str):
    from tfsem.rewrites.api import Pass  # noqa: PLC0415

    def grappler_pass(program):
        return optimize(program, optimizer)
    label = "grappler" if optimizer == _g.DEFAULT_PIPELINE else f"grappler:{optimizer}"
    description = (f"TensorFlow {_g.tensorflow().__version__} Grappler: "
                   + ("the default pipeline" if optimizer == _g.DEFAULT_PIPELINE
                      else f"{optimizer} alone ({_g.OPTIMIZERS[optimizer]})"))
    return Pass(name=label, description=description, claims=dict(CLAIMS),
                doc=description + " -- exported, optimized and imported back "
                    "(campaigns/tensorflow_target.py)",
                function=grappler_pass, origin=f"{__name__}:grappler_{optimizer}")


for _name in [*_g.OPTIMIZERS, _g.DEFAULT_PIPELINE]:
    globals()[f"grappler_{_name}"] = _make(_name)
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
