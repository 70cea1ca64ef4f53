"""Fuzzing campaigns: `tfsem verify` (one pass, minutes) and `tfsem fuzz`
(many passes, a nightly budget, results in DIR/campaign.db).

Layout (see README.md beside this file): `loop` (the Hypothesis fuzzing loop),
`findings` (finding records and their exception types), `sandbox` (the pass
in a child process with a time limit), `checks` (validity and refinement),
`reduce` (structural shrinking), `signature` (dedupe), `store` (SQLite),
`campaign` and `worker` (orchestration, local or Dask), `verify`, `text`,
`progress`.

This package imports nothing heavy at import time: the pass sandbox and the
workers start from it.
"""

#: The largest generated program, by default, for every command that
#: generates programs (`tfsem verify`, `tfsem fuzz`, `tfsem generate`).
DEFAULT_MAX_NODES = 10
