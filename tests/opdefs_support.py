"""What the op registry's guard tests scan (tests/test_opdefs_families.py,
tests/test_opdefs_tables.py): every tfsem module outside the registry itself,
leaving out tests, benchmarks, examples, docs and installed packages."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent


def modules_outside_the_registry() -> Iterator[tuple[str, Path]]:
    """(path relative to the repository, path) of each module to scan."""
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.split("/")[0] in ("tests", "benchmarks", "examples", "docs", ".venv", "build") \
                or rel.startswith("oracle/opdefs/") or "site-packages" in rel:
            continue
        yield rel, path
