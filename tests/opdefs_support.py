"""What the op registry's guard tests scan (tests/test_opdefs_families.py,
tests/test_opdefs_tables.py): every tfsem module outside the registry itself,
leaving out tests, benchmarks, examples, docs and installed packages."""

from __future__ import annotations

import ast
import functools
import os
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
#: top-level folders left out, not walked (CI's .venv inside the clone holds
#: TensorFlow's thousands of modules)
SKIPPED_TOP = ("tests", "benchmarks", "examples", "docs", ".venv", "build")


@functools.lru_cache(maxsize=1)
def _modules() -> tuple[tuple[str, Path], ...]:
    found = []
    for here, dirs, files in os.walk(ROOT):
        rel_here = Path(here).relative_to(ROOT).as_posix()
        # folders whose every module the filter below would leave out
        dirs[:] = [d for d in dirs if not ((rel_here == "." and d in SKIPPED_TOP) or d == "site-packages")]
        for f in files:
            if f.endswith(".py"):
                path = Path(here) / f
                rel = path.relative_to(ROOT).as_posix()
                if rel.split("/")[0] in SKIPPED_TOP or rel.startswith("oracle/opdefs/") or "site-packages" in rel:
                    continue
                found.append((rel, path))
    return tuple(sorted(found, key=lambda x: x[1]))


def modules_outside_the_registry() -> Iterator[tuple[str, Path]]:
    """(path relative to the repository, path) of each module to scan."""
    yield from _modules()


@functools.lru_cache(maxsize=None)
def syntax_nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of PATH's syntax tree (ast.walk's order), parsed once for
    both guards (parsing the ~170 modules is most of each guard's time)."""
    return tuple(ast.walk(ast.parse(Path(path).read_text())))
