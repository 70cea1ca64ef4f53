"""A TensorFlow kernel that aborts its process (a CHECK failure) is refused,
not the end of every later kernel evaluation (oracle/kernels.py
`KernelCrashed`): TensorFlow 2.21's Conv2D on a 3-D input aborts the kernel
child; the call is refused naming the op and the inputs' shapes, the same
inputs are refused again from the cache without starting a child, and the
next evaluation runs in a new child.  Met by the Grappler remap campaign,
whose checks all came back `unknown` after the first abort.  Needs
TensorFlow; nightly profile (a child start is 10-60 s under load)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

pytestmark = pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                                reason="starts TensorFlow's kernel child twice: nightly profile")

CONV = {"T": "DT_FLOAT", "strides": [1, 1, 1, 1], "padding": "SAME", "data_format": "NHWC"}


def test_a_kernel_that_aborts_is_refused_and_the_next_call_runs_in_a_new_child():
    pytest.importorskip("tensorflow", reason="runs TensorFlow's kernels")
    from tfsem.oracle import kernels
    with kernels.use(True):
        bad = [np.ones((2, 2, 3), np.float32), np.ones((1, 1, 3, 1), np.float32)]
        with pytest.raises(kernels.KernelRefused, match=r"Conv2D kernel aborted the process "
                                                        r"on inputs float32\[2, 2, 3\]"):
            kernels.evaluate("Conv2D", bad, CONV, 1)
        first = kernels._client
        with pytest.raises(kernels.KernelRefused, match="aborted"):
            kernels.evaluate("Conv2D", bad, CONV, 1)       # from the cache
        assert kernels._client is first                    # no new child for it
        good = [np.ones((1, 2, 2, 3), np.float32), np.full((1, 1, 3, 1), 2.0, np.float32)]
        (out,) = kernels.evaluate("Conv2D", good, CONV, 1)
        assert kernels._client is not first and out.shape == (1, 2, 2, 1)
        assert (out == 6.0).all()
