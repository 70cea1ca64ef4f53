"""Tensors across processes (values.Tensor's pickled form): a tensor pickled
in another process (another hash seed) is equal to, and hashes as, the same
tensor made here; its exact bits (NaN payloads) survive; a pickle of the
form before the hash was lazy (four fields) still loads."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np

from tfsem.oracle.values import Tensor, exact

MAKE = """
import pickle, sys
import numpy as np
from tfsem.oracle.values import Tensor
a = np.array([0x7FC00001, 0x80000000, 1, 0x3F800000], dtype=np.uint32).view(np.float32)
ts = [Tensor(a), Tensor(np.arange(6, dtype=np.int64).reshape(2, 3))]
for t in ts:
    hash(t)          # (a hash made in this process must not travel)
sys.stdout.buffer.write(pickle.dumps(ts))
"""


def test_a_tensor_from_another_process_equals_the_same_tensor_made_here():
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", MAKE], capture_output=True, check=True,
                         env=env, timeout=120).stdout
    theirs = pickle.loads(out)
    a = np.array([0x7FC00001, 0x80000000, 1, 0x3F800000], dtype=np.uint32).view(np.float32)
    ours = [Tensor(a), Tensor(np.arange(6, dtype=np.int64).reshape(2, 3))]
    for t, u in zip(theirs, ours):
        assert t == u and hash(t) == hash(u) and t in {u}
        assert exact(t) == exact(u)
        assert not t.array.flags.writeable
    # the NaN's payload is kept: not the exact bits of numpy's NaN
    plain = Tensor(np.array([np.nan, -0.0, 1e-45, 1.0], np.float32))
    assert theirs[0] == plain and exact(theirs[0]) != exact(plain)


def test_the_older_four_field_form_loads():
    t = Tensor(np.array([1.5, -0.0], np.float32))
    old_state = [t.array, t._key, hash(t._key), t._bits]
    u = Tensor.__new__(Tensor)
    u.__setstate__(old_state)
    assert u == t and hash(u) == hash(t)
    assert pickle.loads(pickle.dumps(u)) == t
