"""Hypothesis settings profiles for the whole suite.

`TFSEM_HYPOTHESIS_PROFILE` selects one (default: `default`):

- `default`: Hypothesis's 100 examples per test (tests that are expensive ask
  for fewer), no deadline (the shared CI machine's timings vary too much for
  one), failing examples printed as reproduction blobs;
- `nightly`: 20 times the examples (2000 per test), for a scheduled run.
  Tests scale their own example counts with
  ``settings.get_current_profile_name() == "nightly"`` or with
  ``settings.default.max_examples // 100``.

    TFSEM_HYPOTHESIS_PROFILE=nightly python -m pytest -q

The cyclic garbage collector of the pytest process (only: every `tfsem`
process a test starts runs with Python's defaults) is off while the tests
are collected, and its full collections are rarer while they run; see
`_collector_off_while_collecting` below.
"""

from __future__ import annotations

import gc
import os

import pytest
from hypothesis import settings

PROFILE_ENV = "TFSEM_HYPOTHESIS_PROFILE"

settings.register_profile("default", max_examples=100, deadline=None, print_blob=True)
settings.register_profile("nightly", max_examples=2000, deadline=None, print_blob=True)

_profile = os.environ.get(PROFILE_ENV, "default")

# XLA's CPU auto-clustering flags, set before any test starts TensorFlow:
# TensorFlow reads TF_XLA_FLAGS once, at its first session, and a test that
# uses TensorFlow directly may run before tfsem's own import sets them
from tfsem.graphdef.grappler import XLA_FLAGS as _XLA_FLAGS  # noqa: E402

_flags = os.environ.get("TF_XLA_FLAGS", "")
_missing = [f for f in _XLA_FLAGS if f.split("=")[0] not in _flags]
if _missing:
    os.environ["TF_XLA_FLAGS"] = " ".join([_flags, *_missing]).strip()

# TensorFlow's kernels for ops with no numpy model (oracle/kernels.py) are
# off in the suite by default: its tests of "cannot run" keep holding what
# a user without TensorFlow sees, and no test waits for a TensorFlow child it
# did not ask for.  tests/test_tensorflow_kernels.py turns them on;
# TFSEM_TF_KERNELS=1 runs the whole suite with them.
os.environ.setdefault("TFSEM_TF_KERNELS", "0")

if _profile not in ("default", "nightly"):
    raise ValueError(f"{PROFILE_ENV}={_profile!r}: use 'default' or 'nightly'")
settings.load_profile(_profile)


# The cyclic garbage collector in the suite's own process.  A whole-suite run
# holds millions of long-lived objects (TensorFlow's, Z3's, every collected
# test's), and each full collection visits all of them: measured in a whole
# run on the shared 2-core machine, 89 full collections took 84 s (0.95 s
# each) and 15 s of the collector's time fell in collection, while the
# imports (TensorFlow's among them) built that heap.
#
# - Collection runs with the collector off (graphdef/importer.py's gc_paused
#   does the same for a large import: imports make long-lived objects and
#   no garbage worth a pass over them); then what it made is moved to the
#   oldest generation at once (gc.freeze then gc.unfreeze: two list
#   splices; skipped where something froze objects of its own, which
#   unfreezing would thaw) and the collector is on again.
# - A full collection waits for 500 collections of the middle generation
#   instead of Python's 10 (gc.set_threshold's third number; the 25 % rule
#   of long-lived objects still applies): at most a handful in a whole run.
#   Cycles that die young are collected as before; a test that needs a
#   full collection calls gc.collect() itself.
#
# Measured side by side on the loaded machine: collecting the suite took
# 15.1 -> 11.4 s of CPU (two runs each); five CPU-heavy files (check_refute,
# opdefs_families, oracle_symmetry, oracle_properties, oracle_readsfrom)
# with TensorFlow imported 39.8 -> 35.2 s of CPU, maximum RSS 714 -> 729 MB.
FULL_COLLECTION_EVERY = 500
gc.set_threshold(gc.get_threshold()[0], gc.get_threshold()[1], FULL_COLLECTION_EVERY)
_collecting_was_on = gc.isenabled()
gc.disable()


def _collector_off_while_collecting() -> None:
    """The collector on again after collection, as it was before."""
    global _collecting_was_on
    if _collecting_was_on:
        _collecting_was_on = False
        if not gc.get_freeze_count():
            gc.freeze()
            gc.unfreeze()
        gc.enable()


def pytest_collection_finish(session) -> None:
    _collector_off_while_collecting()


def pytest_unconfigure(config) -> None:
    _collector_off_while_collecting()   # (where collection never finished)


# ---------------------------------------------------------------------------
# Parallel runs (pytest-xdist: `-n auto --dist loadfile` in pyproject.toml)

#: at most this many test processes for `-n auto`: each holds TensorFlow,
#: Z3 and the suite's heap (about 1.5 GB late in a run), and the campaigns
#: and servers the tests start have processes of their own
MAX_AUTO_WORKERS = 8


@pytest.hookimpl(optionalhook=True)   # pytest-xdist's hook
def pytest_xdist_auto_num_workers(config) -> int:
    """One test process per core this process may run on, up to
    MAX_AUTO_WORKERS; TFSEM_TEST_WORKERS=N sets N."""
    if os.environ.get("TFSEM_TEST_WORKERS"):
        return int(os.environ["TFSEM_TEST_WORKERS"])
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:   # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_AUTO_WORKERS))


def pytest_sessionstart(session) -> None:
    # the controller of a parallel run collects nothing (its workers do):
    # its collector is on again as the run starts, not at its end
    if getattr(session.config.option, "numprocesses", None) and not hasattr(session.config, "workerinput"):
        _collector_off_while_collecting()


@pytest.fixture(autouse=True)
def _no_sigma_remembered_from_another_test():
    """Each test starts with no σ remembered between checks
    (checking/sigma_memo.py): a module-scoped program checked by an earlier
    test would otherwise start its minimization warm, with another box."""
    from tfsem.checking import sigma_memo
    sigma_memo.clear()
    yield
