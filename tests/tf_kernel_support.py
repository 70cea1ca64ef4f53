"""TensorFlow as tfsem's kernel worker runs it, for the tests that compare
the op models with TensorFlow's kernels bit for bit."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from nan_bits_support import UINT


def tensorflow_as_the_kernel_worker(reason: str):
    """TensorFlow (or skip, saying `reason`) with one intra-op and one
    inter-op thread and op determinism on, as tfsem's kernel worker runs it
    (refused once TensorFlow has started in this process: left as it is)."""
    tf = pytest.importorskip("tensorflow", reason=reason)
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.config.experimental.enable_op_determinism()
    except RuntimeError:
        pass
    return tf


@pytest.fixture(scope="module", autouse=True)
def op_determinism_off_after():
    """Op determinism off again after the module that imports this fixture
    (`tensorflow_as_the_kernel_worker` turns it on for the whole process): a
    later test in the same process that makes a random op without a seed
    would fail (test_state_ops.py's compat.v1 training steps did)."""
    yield
    if "tensorflow" in sys.modules:
        # (no public switch back: TensorFlow's own, which its tests use)
        from tensorflow.python.framework import config as tf_config
        tf_config.disable_op_determinism()


def tf_tensor(tf, x):
    """`x` as a TensorFlow tensor of the same bits (floats bitcast from their
    unsigned integers: no conversion, no scalar-constant cache)."""
    x = np.asarray(x)
    if x.dtype.kind == "f" or x.dtype.name == "bfloat16":
        u = np.ascontiguousarray(x).view(UINT[x.dtype.itemsize]).reshape(x.shape)
        return tf.bitcast(tf.constant(u), tf.as_dtype(x.dtype.name))
    return tf.constant(x)
