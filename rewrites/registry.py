"""Where passes come from: the built-ins, registered here in code; the
entry-point group `tfsem.rewrites`, through which a user's package adds passes
without touching tfsem; and `module:attribute` specs for a pass that is not
registered at all.

A user's package declares, in its pyproject.toml,

    [project.entry-points."tfsem.rewrites"]
    my-pass = "my_package.passes:MY_PASS"

where MY_PASS is a :class:`tfsem.rewrites.Pass` (or a plain function from
Program to Program, which then claims nothing).  The entry point's name is
the pass's name.  A built-in's name cannot be taken over; an entry point that
fails to load is reported by :func:`load_errors` and skipped, so one broken
plugin does not break `tfsem passes`.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from . import (const_fold, cse, cse_ignore_control, cse_stateful, dce, dead_branch, drop_sections,
               fuse_assign, hoist_reads, hoist_reads_safe, licm, licm_reads, merge_sections, prune,
               prune_keep_state, reduce_control, split_assign, xla_lift)
from .api import Pass, PassNotFound, first_line

ENTRY_POINT_GROUP = "tfsem.rewrites"

_BUILTIN_MODULES = (prune, prune_keep_state, cse, cse_ignore_control, cse_stateful, hoist_reads,
                    hoist_reads_safe, split_assign, fuse_assign, reduce_control, const_fold, dce,
                    dead_branch, licm, licm_reads, xla_lift, drop_sections, merge_sections)

#: The built-in passes, by name, in display order.
BUILTINS: dict[str, Pass] = {m.PASS.name: m.PASS for m in _BUILTIN_MODULES}

_errors: list[str] = []


def builtin_passes() -> dict[str, Pass]:
    return dict(BUILTINS)


def entry_point_passes() -> dict[str, Pass]:
    """The passes declared under the entry-point group, by entry-point name
    (rescanned on every call, so a package installed meanwhile shows up)."""
    _errors.clear()
    found: dict[str, Pass] = {}
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist = getattr(ep, "dist", None)
        origin = f"entry point {ep.value}" + (f" ({dist.name})" if dist is not None else "")
        if ep.name in BUILTINS:
            _errors.append(f"entry point {ep.name!r} ({ep.value}) ignored: "
                           f"{ep.name!r} is a built-in pass")
            continue
        if ep.name in found:
            _errors.append(f"entry point {ep.name!r} ({ep.value}) ignored: declared twice")
            continue
        try:
            obj = ep.load()
            found[ep.name] = as_pass(obj, ep.name, origin)
        except Exception as exc:  # a broken plugin must not break the listing
            _errors.append(f"entry point {ep.name!r} ({ep.value}) failed to load: "
                           f"{type(exc).__name__}: {exc}")
    return found


def load_errors() -> list[str]:
    """Problems met by the last scan of the entry points."""
    return list(_errors)


def all_passes() -> dict[str, Pass]:
    """Built-in passes, then the entry points' passes, by name."""
    passes = builtin_passes()
    passes.update(entry_point_passes())
    return passes


def as_pass(obj: Any, name: str, origin: str) -> Pass:
    """A Pass as is (renamed to `name` if needed), or a plain callable
    Program -> Program wrapped as a pass that claims nothing."""
    if isinstance(obj, Pass):
        if obj.name != name or obj.origin != origin:
            obj = dataclasses.replace(obj, name=name, origin=origin)
        return obj
    if callable(obj):
        doc = getattr(obj, "__doc__", None) or ""
        return Pass(name=name, description=first_line(doc) or f"user pass {origin}",
                    claims={}, doc=doc, function=obj, origin=origin)
    raise TypeError(f"{origin} is a {type(obj).__name__}, neither a tfsem.rewrites.Pass "
                    "nor a function from Program to Program")


def load_pass(spec: str) -> Pass:
    """The pass at `module:attribute` (the attribute may be dotted; the module
    may also be a path to a .py file).  Raises PassNotFound."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise PassNotFound(f"{spec!r} is not a pass spec: write module:attribute")
    try:
        if module_name.endswith(".py"):
            module = _module_from_file(Path(module_name))
        else:
            module = importlib.import_module(module_name)
    except PassNotFound:
        raise
    except Exception as exc:
        raise PassNotFound(f"cannot import {module_name!r} for pass {spec!r}: "
                           f"{type(exc).__name__}: {exc}") from exc
    obj: Any = module
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise PassNotFound(f"module {module_name!r} has no attribute {attribute!r}") from None
    name = obj.name if isinstance(obj, Pass) else spec
    try:
        return as_pass(obj, name, spec)
    except (TypeError, ValueError) as exc:
        raise PassNotFound(f"{spec!r}: {exc}") from None


def _module_from_file(path: Path):
    if not path.is_file():
        raise PassNotFound(f"no such file {str(path)!r}")
    name = f"tfsem_user_pass_{abs(hash(str(path.resolve())))}"
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def get_pass(name_or_spec: str) -> Pass:
    """A registered pass by name, or the pass at `module:attribute`.
    Raises PassNotFound (a ValueError) with the names that do exist."""
    if name_or_spec in BUILTINS:
        return BUILTINS[name_or_spec]
    passes = all_passes()
    if name_or_spec in passes:
        return passes[name_or_spec]
    if ":" in name_or_spec:
        return load_pass(name_or_spec)
    raise PassNotFound(f"no pass named {name_or_spec!r}; registered passes: "
                       f"{', '.join(passes)} (or give module:attribute)")
