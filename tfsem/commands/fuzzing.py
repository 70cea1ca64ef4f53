"""Options shared by `tfsem verify` and `tfsem fuzz`: which cells, the
generator, and the time limits of one rewrite and one check."""

from __future__ import annotations

import argparse

from .common import FUZZ_CHECK_TIMEOUT as DEFAULT_CHECK_TIMEOUT
from .common import MAX_NODES as DEFAULT_MAX_NODES
from .common import OBSERVE, SEMANTICS, bounded_int, duration, seed_int
from .common import PASS_TIMEOUT as DEFAULT_PASS_TIMEOUT


def add_fuzzing_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--semantics", choices=SEMANTICS, action="append", default=None,
                   help="fuzz under this semantics only (repeatable; default both)")
    p.add_argument("--observe", choices=OBSERVE, action="append", default=None,
                   help="fuzz with this observe setting only (repeatable; default both)")
    p.add_argument("--seed", type=seed_int, default=None, help="seed of the program generator")
    p.add_argument("--max-nodes", type=bounded_int(1, 10_000), default=DEFAULT_MAX_NODES,
                   help=f"largest generated program (default {DEFAULT_MAX_NODES})")
    p.add_argument("--pass-timeout", type=duration, default=DEFAULT_PASS_TIMEOUT,
                   help=f"time limit of one rewrite (default {DEFAULT_PASS_TIMEOUT:g}s)")
    p.add_argument("--check-timeout", type=duration, default=DEFAULT_CHECK_TIMEOUT,
                   help=f"time limit of one check (default {DEFAULT_CHECK_TIMEOUT:g}s)")
    p.add_argument("--checker", default="auto",
                   help="auto (concrete at the drawn σ and 4 more, then symbolic), concrete, "
                        "symbolic, or module:attribute")
    p.add_argument("--generator", default=None, metavar="MODULE:ATTR",
                   help="a function (max_nodes, observe) -> Hypothesis strategy of "
                        "(program, feeds, init), instead of tfsem's generators")


def check_plugin_specs(args: argparse.Namespace) -> None:
    """`--checker` and `--generator` given as module:attribute must load here,
    before a campaign starts (a bad one was a traceback in every task and a
    `finished` campaign with exit status 0)."""
    import importlib

    from tfsem.cli import UsageError

    for flag, spec in (("--checker", args.checker), ("--generator", args.generator)):
        if spec is None or (flag == "--checker" and spec in ("auto", "concrete", "symbolic")):
            continue
        module, sep, attr = spec.partition(":")
        if not sep or not module or not attr:
            raise UsageError(f"{flag} {spec!r}: expected "
                             f"{'auto, concrete, symbolic or ' if flag == '--checker' else ''}module:attribute")
        try:
            obj = importlib.import_module(module)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except Exception as exc:  # noqa: BLE001 - any failure to load is the user's to fix
            raise UsageError(f"{flag} {spec!r}: cannot load it ({type(exc).__name__}: {exc})") from None
        if not callable(obj):
            raise UsageError(f"{flag} {spec!r}: {type(obj).__name__} is not callable")


#: the generator `--target grappler[:OPTIMIZER]` uses unless --generator is given
GRAPPLER_GENERATOR = "tfsem.generators.grappler:mixed_strategy"


def add_target_option(p: argparse.ArgumentParser, *, repeatable: bool = True) -> None:
    p.add_argument("--target", dest="targets", action="append" if repeatable else "store",
                   default=None, metavar="TARGET",
                   help="TensorFlow's own optimizers (needs the extra tfsem[tensorflow]): "
                        "grappler (the default pipeline), grappler:OPTIMIZER (one optimizer "
                        "alone), xla (generated programs run under XLA CPU "
                        "auto-clustering, each outcome checked against the oracle), "
                        "mlir:PIPELINE (an MLIR pass pipeline as tf-opt takes it, e.g. "
                        "'mlir:func.func(tf-executor-island-coarsening)') or "
                        "mlir-cluster:PIPELINE (the same, with tf_device.cluster regions "
                        "around runs of resource accesses); their programs are written as "
                        "tf_executor modules directly (tfsem.generators.mlir) or exported "
                        "and imported by TensorFlow; docs/mlir.md"
                        + ("; repeatable, combinable with --pass" if repeatable else ""))


def add_runs_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=bounded_int(1, 10_000), default=20,
                   help="runs of each program (and each shrinking candidate) on a runtime "
                        "target such as --target xla (default 20)")


def grappler_generator() -> str | None:
    """`tfsem.generators.grappler:strategy` when it can be loaded (programs of
    the shapes Grappler rewrites), else None: tfsem's default generator."""
    import importlib

    module, _, attr = GRAPPLER_GENERATOR.partition(":")
    try:
        return GRAPPLER_GENERATOR if callable(getattr(importlib.import_module(module), attr)) else None
    except Exception:  # noqa: BLE001 - not there yet, or broken: the default generator
        return None


def target_specs(names: list[str] | None, generator: str | None) -> tuple[list[str], dict[str, str]]:
    """The pass specs of `--target` names and, for Grappler targets without
    an explicit --generator, their own generator.  Bad names and a missing
    TensorFlow are usage errors (exit 2) that say what to do."""
    from tfsem.campaigns.targets import PassNotFound, target_spec
    from tfsem.cli import UsageError

    specs: list[str] = []
    generators: dict[str, str] = {}
    mlir = [n for n in names or [] if n.startswith(("mlir:", "mlir-cluster:"))]
    if len(mlir) > 1:      # their pipelines tried in one TensorFlow process
        from tfsem.campaigns.targets import check_pipelines
        try:
            check_pipelines(mlir)
        except PassNotFound as exc:
            raise UsageError(f"--target: {exc}") from None
    for name in names or []:
        try:
            spec = target_spec(name)
        except PassNotFound as exc:
            raise UsageError(f"--target {name}: {exc}") from None
        specs.append(spec)
        if generator is None and name.startswith(("mlir:", "mlir-cluster:")):
            from tfsem.campaigns.mlir_target import generator as mlir_generator
            generators[spec] = mlir_generator(name)   # modules written directly, and exports
        elif generator is None and name.startswith("grappler"):
            g = grappler_generator()    # programs tfsem exports
            if g is not None:
                generators[spec] = g
    return specs, generators
