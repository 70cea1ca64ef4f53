"""Reshape of an empty tensor as TensorFlow's kernel computes it
(oracle/opdefs/array.py `reshape_shape`).  numpy's reshape refuses a -1 on
an empty tensor ("cannot reshape array of size 0 into shape (-1,0)") and
every shape with no element whose other dimensions multiply past what it
can hold; the model said `shape-mismatch` for all of them, where
TensorFlow gives a tensor.  Two rewrites that both reshape the empty batch
of a Flatten (`[0, 4, 4]` to `[0, -1]` and to `[-1, 0]`) then had the same
error as their outcome (`no-counterexample`), while TensorFlow gives
shapes [0, 16] and [1, 0]: now `unsound`."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import settings

from tfsem.checking import check_rewrite
from tfsem.oracle import functions as fns
from tfsem.oracle.functions import CannotRun
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor

NIGHTLY = settings.get_current_profile_name() == "nightly"
M = 2 ** 31 - 1

#: (input shape, requested shape, TensorFlow 2.21's result shape or None for
#: its InvalidArgumentError), measured with tf.raw_ops.Reshape on the CPU
TENSORFLOW = [
    ((0,), [-1, 0], (1, 0)),
    ((3, 0), [-1, 0], (3, 0)),
    ((0, 3), [0, -1], (0, 3)),
    ((0,), [0, -1], (0, 1)),
    ((0,), [2, -1], (2, 0)),
    ((0,), [5, 0, -1], (5, 0, 0)),
    ((2, 0, 3), [-1, 3, 0], (2, 3, 0)),
    ((0, 4, 4), [0, -1], (0, 16)),
    ((0,), [-1], (0,)),
    ((4,), [2, -1], (2, 2)),
    ((4,), [3, -1], None),
    ((3,), [0, -1], None),
    ((0,), [M, M, M, 0], None),   # "has too many elements"
    ((0,), [-1, -1], None),
    ((0,), [-2], None),
]


@pytest.mark.parametrize("shape, sizes, expected", TENSORFLOW)
def test_reshape_gives_tensorflows_shape(shape, sizes, expected):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    (r,) = fns.lookup("Reshape").apply([Tensor(x)], {"shape": sizes})
    if expected is None:
        assert not isinstance(r, Tensor)
    else:
        assert isinstance(r, Tensor) and r.array.shape == expected
        assert r.array.tobytes() == x.tobytes()


@pytest.mark.parametrize("sizes", [[M, M, 0], [0, M, M, M], [M, 0, M]])
def test_an_empty_shape_numpy_cannot_hold_is_refused(sizes):
    # TensorFlow gives an empty tensor of that shape; numpy has no such array
    with pytest.raises(CannotRun, match="Reshape"):
        fns.lookup("Reshape").apply([Tensor(np.zeros(0, np.float32))], {"shape": sizes})


def test_a_shape_of_more_dimensions_than_numpy_holds_is_refused():
    # TensorFlow takes up to 254 dimensions, numpy 64: Reshape[1](Reshape[1]*65(x))
    # is Reshape[1](x) in TensorFlow, and the model said shape-mismatch for
    # the inner one; now it says it cannot run it
    with pytest.raises(CannotRun, match="65 dimensions"):
        fns.lookup("Reshape").apply([Tensor(np.ones(1, np.float32))], {"shape": [1] * 65})


def test_two_flattens_of_an_empty_batch_are_told_apart():
    def prog(sizes):
        return program_from_json({
            "format": "tfsem.program/1", "variables": {},
            "feeds": {"b": {"dtype": "float32", "shape": [0, 4, 4]}},
            "nodes": [{"name": "o", "op": "Reshape", "inputs": ["$b"], "shape": sizes}],
            "outputs": {"out": "o"}})
    v = check_rewrite(prog([0, -1]), prog([-1, 0]), timeout=20)
    assert v.verdict == "unsound"


@pytest.mark.skipif(not NIGHTLY, reason="imports TensorFlow (nightly)")
def test_reshape_against_tensorflow_on_generated_shapes():
    tf = pytest.importorskip("tensorflow")
    rng = random.Random(1)
    for _ in range(1500):
        shape = tuple(rng.choice([0, 1, 2, 3, 4]) for _ in range(rng.randint(0, 3)))
        sizes = [rng.choice([0, 1, 2, 3, 4, 5, 6, -1, -2, M, 2 ** 20])
                 for _ in range(rng.randint(0, 4))]
        x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        try:
            theirs = tf.raw_ops.Reshape(tensor=tf.constant(x),
                                        shape=tf.constant(sizes, tf.int32)).numpy()
        except tf.errors.InvalidArgumentError:
            theirs = None
        try:
            (r,) = fns.lookup("Reshape").apply([Tensor(x)], {"shape": sizes})
        except CannotRun:
            assert theirs is not None and theirs.size == 0
            continue
        if theirs is None:
            assert not isinstance(r, Tensor), (shape, sizes)
        else:
            assert isinstance(r, Tensor) and r.array.shape == theirs.shape, (shape, sizes)
            assert r.array.tobytes() == theirs.tobytes()


@pytest.mark.parametrize("name, args, attrs", [
    ("Fill", [np.float32(1)], {"dims": [M, M, 0]}),      # TensorFlow: an empty [M, M, 0]
    ("Fill", [np.float32(1)], {"dims": [1] * 65}),       # TensorFlow: 65 dimensions
    ("ExpandDims", [np.zeros([1] * 64, np.float32)], {"axis": 0}),
])
def test_a_result_numpy_cannot_hold_is_refused_not_a_mismatch(name, args, attrs):
    # (Function.apply took every numpy ValueError for shape-mismatch: two
    # Fills of 65 and 66 dimensions had the same error as their outcome)
    with pytest.raises(CannotRun, match="numpy holds no array"):
        fns.lookup(name).apply([Tensor(np.asarray(a)) for a in args], attrs)
    # a true mismatch stays an error value
    (r,) = fns.lookup("Add").apply([Tensor(np.zeros(2, np.float32)),
                                    Tensor(np.zeros(3, np.float32))])
    assert not isinstance(r, Tensor)


def test_the_backends_refuse_it_alike():
    from tfsem.backends.execute import apply_function
    with pytest.raises(CannotRun, match="numpy holds no array"):
        apply_function(fns.lookup("Fill"), [np.float32(1)], {"dims": [1] * 65}, np)
    (r,) = apply_function(fns.lookup("Add"), [np.zeros(2, np.float32), np.zeros(3, np.float32)],
                          {}, np)
    assert not isinstance(r, np.ndarray)
