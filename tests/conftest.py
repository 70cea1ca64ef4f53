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
"""

from __future__ import annotations

import os

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
