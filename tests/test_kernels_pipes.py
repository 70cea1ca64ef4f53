"""The pipes to TensorFlow's kernel child (oracle/kernels.py `_widen`): at
PIPE_BYTES (or the system's largest) where the system lets a pipe grow, so
that a MobileNetV2 activation (0.8 MB) crosses in one turn of writer and
reader instead of a dozen."""

from __future__ import annotations

import os
import sys

import pytest

from tfsem.oracle import kernels


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")
def test_pipes_are_widened():
    import fcntl
    r, w = os.pipe()
    try:
        before = fcntl.fcntl(w, fcntl.F_GETPIPE_SZ)
        kernels._widen(w)
        after = fcntl.fcntl(r, fcntl.F_GETPIPE_SZ)       # (one pipe: either end tells)
        assert after == max(before, kernels._pipe_max())
        # a message of PIPE_BYTES fits without a reader
        if after >= kernels.PIPE_BYTES:
            os.set_blocking(w, False)
            assert os.write(w, b"\0" * kernels.PIPE_BYTES) == kernels.PIPE_BYTES
    finally:
        os.close(r)
        os.close(w)
