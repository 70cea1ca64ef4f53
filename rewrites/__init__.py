"""Rewrite passes: the pass API (`Pass`, claims), the registry (built-ins and
the `tfsem.rewrites` entry-point group), and the twelve built-in passes, one
module each, each with what it models and why it is or is not sound."""

from .api import CELLS, CLAIMS, SOUND, UNSOUND, Pass, PassNotFound, claims
from .registry import (BUILTINS, ENTRY_POINT_GROUP, all_passes, as_pass, builtin_passes, get_pass,
                       load_errors, load_pass)

__all__ = ["CELLS", "CLAIMS", "SOUND", "UNSOUND", "Pass", "PassNotFound", "claims", "BUILTINS",
           "ENTRY_POINT_GROUP", "all_passes", "as_pass", "builtin_passes", "get_pass",
           "load_errors", "load_pass"]
