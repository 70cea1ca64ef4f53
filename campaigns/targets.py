"""The passes a campaign fuzzes: resolving a name or `module:attribute`, and
reading what each pass claims.

A pass is named in a campaign by a *spec*, a string: a registered name
(`hoist-reads`) or `module:attribute`.  Specs, not objects, travel to worker
processes and Dask workers, which resolve them again; so a pass under test
must be importable wherever it runs.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from tfsem.oracle.jsonio import OBSERVE, SEMANTICS

Cell = tuple[str, str]
#: Every (semantics, observe) combination, in a fixed order.
CELLS: tuple[Cell, ...] = tuple((s, o) for s in SEMANTICS for o in OBSERVE)


class PassNotFound(LookupError):
    """A pass spec that names no registered pass and no importable object."""


@dataclass(frozen=True)
class Target:
    """A resolved pass: its spec, name, description, claims and the callable."""

    spec: str
    name: str
    description: str
    claims: Mapping[Cell, str] = field(default_factory=dict)
    fn: Callable[[Any], Any] | None = None
    #: "pass" (a rewrite, checked against its input) or "runtime" (programs
    #: are executed and their outcomes compared with the oracle's sets; no
    #: rewritten program: campaigns/tensorflow_target.py, `--target xla`)
    kind: str = "pass"
    #: optional `program -> program | None`: the program the rewrite is judged
    #: against (None: skip this program).  Grappler targets give the exported
    #: graph imported back, in the graph's own node names.
    prepare: Callable[[Any], Any] | None = None
    #: optional `FindingRecord -> dict` of evidence added to a finding's
    #: detail when it is reported (Grappler: both GraphDefs as pbtxt)
    evidence: Callable[[Any], Any] | None = None
    #: the target's claims speak only of σ with every variable initialized
    #: (TensorFlow fails a run that reads an uninitialized variable, where
    #: tfsem carries an error value on): a counterexample that needs an
    #: uninitialized variable is not one against it (campaigns/loop.py)
    initialized_only: bool = False

    def claim(self, cell: Cell) -> str | None:
        return self.claims.get(cell)

    def claims_json(self) -> dict[str, str]:
        return {cell_label(c): v for c, v in self.claims.items()}


def cell_label(cell: Cell) -> str:
    return f"{cell[0]}/{cell[1]}"


def parse_cell(label: str) -> Cell:
    sem, _, obs = label.partition("/")
    return sem, obs


def _normalize_claims(raw: Any) -> dict[Cell, str]:
    """Claims as {(semantics, observe): "sound"|"unsound"}; keys given as
    tuples or as "semantics/observe" strings are accepted."""
    out: dict[Cell, str] = {}
    if not isinstance(raw, Mapping):
        return out
    for key, value in raw.items():
        if isinstance(key, str):
            for sep in ("/", ",", " "):
                if sep in key:
                    key = tuple(part.strip() for part in key.split(sep, 1))
                    break
        if isinstance(key, tuple) and len(key) == 2 and tuple(key) in CELLS:
            v = getattr(value, "value", value)
            if v in ("sound", "unsound"):
                out[tuple(key)] = v  # type: ignore[index]
    return out


def _import_attribute(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PassNotFound(f"cannot import module {module_name!r} of pass {spec!r}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise PassNotFound(f"module {module_name!r} has no attribute {attr!r}") from None
    return obj


def _registry() -> Any | None:
    try:
        return importlib.import_module("tfsem.rewrites")
    except ImportError:
        return None


def resolve_pass(spec: str) -> Target:
    """A registered pass by name, or any callable as `module:attribute`."""
    if not isinstance(spec, str) or not spec:
        raise PassNotFound(f"a pass is a name or module:attribute, got {spec!r}")
    if spec == "grappler" or spec.startswith("grappler:"):
        spec = _grappler_spec(spec)   # TensorFlow's Grappler (campaigns/tensorflow_target.py)
    if _is_mlir(spec):                # an MLIR pipeline (campaigns/mlir_target.py)
        from tfsem.graphdef import grappler
        try:
            obj = _mlir_target_module(spec).target(spec)
        except grappler.TensorFlowMissing:
            raise PassNotFound(f"{spec!r} {grappler.INSTALL_HINT}") from None
        return Target(spec, obj.name, obj.description, _normalize_claims(obj.claims), obj,
                      prepare=obj.prepare, evidence=obj.evidence,
                      initialized_only=obj.initialized_only)
    reg = _registry()
    obj = None
    if reg is not None and hasattr(reg, "get_pass"):
        try:
            obj = reg.get_pass(spec)
        except Exception as exc:  # the registry's own "unknown pass" error
            if ":" not in spec:
                raise PassNotFound(str(exc) or f"unknown pass {spec!r}") from None
    if obj is None:
        if ":" not in spec:
            known = ", ".join(registered_passes()) or "none registered"
            raise PassNotFound(f"unknown pass {spec!r} (registered: {known}; "
                               "or give module:attribute)")
        obj = _import_attribute(spec)
    if not callable(obj):
        raise PassNotFound(f"{spec!r} is not callable (a pass maps a program to a program)")
    inner = getattr(obj, "function", None)
    if inner is not None and hasattr(inner, "target_kind"):
        obj = inner   # a target object of campaigns/tensorflow_target.py, wrapped by the registry
    name = getattr(obj, "name", None) or spec
    description = getattr(obj, "description", None) or (getattr(obj, "__doc__", None) or "").strip().split("\n")[0]
    kind = getattr(obj, "target_kind", "pass")
    return Target(spec, str(name), str(description), _normalize_claims(getattr(obj, "claims", None)), obj,
                  kind=kind if kind in ("pass", "runtime") else "pass",
                  prepare=getattr(obj, "prepare", None), evidence=getattr(obj, "evidence", None),
                  initialized_only=bool(getattr(obj, "initialized_only", False)))


#: `tfsem fuzz --target NAME` / `tfsem verify --target NAME`: TensorFlow's own
#: optimizers (campaigns/tensorflow_target.py, campaigns/mlir_target.py)
TARGET_NAMES = ("grappler", "grappler:OPTIMIZER", "xla", "mlir:PIPELINE", "mlir-cluster:PIPELINE")


def target_spec(name: str) -> str:
    """The pass spec of `--target NAME`: `grappler` (the default pipeline),
    `grappler:OPTIMIZER` or `xla` (a runtime target).  Raises PassNotFound
    naming the valid names, or saying which extra to install when
    TensorFlow is missing."""
    if name == "grappler" or name.startswith("grappler:"):
        _grappler_spec(name)       # the optimizer name and TensorFlow, checked now
        return name
    if name == "xla":
        return f"{_tensorflow_target('xla').__name__}:xla_target"
    if _is_mlir(name):
        _check_pipeline(name)
        return name
    raise PassNotFound(f"unknown target {name!r} (targets: grappler, grappler:OPTIMIZER with "
                       "OPTIMIZER one of " + ", ".join(_optimizer_names()) + "; xla; "
                       "mlir:PIPELINE or mlir-cluster:PIPELINE with an MLIR pass pipeline "
                       "as tf-opt takes it)")


def _is_mlir(name: str) -> bool:
    return name.startswith("mlir:") or name.startswith("mlir-cluster:")


def _mlir_target_module(name: str):
    """campaigns/mlir_target.py (importing it does not import TensorFlow;
    making a target does, and says which extra to install when missing)."""
    return importlib.import_module(f"{__package__}.mlir_target")


#: `mlir:` target names whose pipeline TensorFlow already ran (check_pipelines)
_PIPELINES_CHECKED: set[str] = set()


def _check_pipeline(name: str) -> None:
    """PassNotFound with TensorFlow's message when the pipeline of
    `mlir:PIPELINE` is empty, or TensorFlow refuses it (or dies of it) on a
    module of one constant: run in a child process, as a wrongly nested pass
    may abort the process."""
    if name not in _PIPELINES_CHECKED:
        check_pipelines([name])


def check_pipelines(names: list[str]) -> None:
    """`_check_pipeline` for several `mlir:` names with one TensorFlow
    process (graphdef/mlir_tf.py run_batch: TensorFlow's start-up, 4-60 s,
    paid once); raises PassNotFound for the first one refused."""
    from tfsem.graphdef.mlir_tf import run_batch
    todo = [n for n in dict.fromkeys(names) if n not in _PIPELINES_CHECKED]
    for name in todo:
        if not name.partition(":")[2].strip():
            raise PassNotFound(f"{name!r}: no pipeline (write it as tf-opt takes it, e.g. "
                               "mlir:func.func(tf-executor-island-coarsening))")
    if not todo:
        return
    module = _mlir_target_module(todo[0]).EMPTY_MODULE
    runs = run_batch([(module, n.partition(":")[2]) for n in todo], timeout=600.0)
    for name, run in zip(todo, runs):
        pipeline = name.partition(":")[2]
        if run.status == "no-tensorflow":
            from tfsem.graphdef import grappler
            raise PassNotFound(f"{name!r} {grappler.INSTALL_HINT}")
        if run.status != "ok":
            first = (run.message or run.status).strip().splitlines()
            raise PassNotFound(f"TensorFlow does not run the pipeline {pipeline!r} "
                               f"({run.status}: {first[0] if first else run.status}"
                               + ("; a pass that runs on functions is written "
                                  "func.func(PASS)" if run.status == "crash" else "") + ")")
        _PIPELINES_CHECKED.add(name)


def _optimizer_names() -> list[str]:
    from tfsem.graphdef.grappler import DEFAULT_PIPELINE, OPTIMIZERS
    return [*OPTIMIZERS, DEFAULT_PIPELINE]


def _grappler_spec(name: str) -> str:
    """`grappler[:OPTIMIZER]` as the module:attribute spec of that Grappler target."""
    from tfsem.graphdef.grappler import check_optimizer_names
    opt = name.partition(":")[2]
    if opt:
        try:
            check_optimizer_names([opt])
        except ValueError as exc:
            raise PassNotFound(str(exc)) from None
    return _tensorflow_target(name).spec_for(name)


def _tensorflow_target(name: str):
    """campaigns/tensorflow_target.py, imported; PassNotFound naming the
    extra to install when TensorFlow cannot be imported.  TensorFlow is
    imported first, by itself, so that its absence is found here, not later
    when the campaign imports the module again."""
    from tfsem.graphdef import grappler
    try:
        grappler.tensorflow()
        return importlib.import_module(f"{__package__}.tensorflow_target")
    except grappler.TensorFlowMissing:
        raise PassNotFound(f"{name!r} {grappler.INSTALL_HINT}") from None


def registered_passes() -> list[str]:
    """Names of the registered passes (empty until the rewrites package has a
    registry)."""
    reg = _registry()
    if reg is None or not hasattr(reg, "all_passes"):
        return []
    try:
        return list(reg.all_passes())
    except Exception:
        return []
