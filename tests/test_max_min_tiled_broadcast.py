"""Max/Min's tie of +0.0 and -0.0 on a large broadcast (review11's finding).

TensorFlow 2.21 evaluates a broadcasting Maximum/Minimum (BCast: neither
operand one element, not both the result's size) with Eigen's tiled
executor: past one block (about 55 KB) the result is split into blocks and
each block line has its own packets and scalar tail, so a tie falls by the
block layout, not by the result's flat index.  The flat-index model said
`sound` for Max(-|x|, zeros[1,3]) -> |Max(-|x|, zeros[1,3])| on x [5000, 3]
float32 (15,000 elements, all in whole packets by flat index: every tie the
second operand, +0.0), while TensorFlow returns -0.0 at block tails (x = 0:
elements 13,912 and 13,913, measured on TensorFlow 2.21).
Now a tie in such a broadcast is refused (CannotRun) and the engines keep
the op uninterpreted (fns.TILED_EXTREMUM_BYTES); smaller broadcasts, scalar
operands and equal shapes keep the flat-index model."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.checking import generic as gen
from tfsem.oracle import functions as fns
from tfsem.oracle.jsonio import program_from_json
import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow functions)


def bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def model(name, a, b):
    return fns.get(name).impl(np, (a, b), {})[0]


def test_a_tie_in_a_large_broadcast_is_refused_by_name():
    a, b = np.full((2, 8000), -0.0, np.float32), np.zeros((2, 1), np.float32)
    for name in ("Max", "Min"):
        with pytest.raises(fns.CannotRun, match="tiled executor"):
            model(name, a, b)
        with pytest.raises(fns.CannotRun, match="tiled executor"):
            model(name, b, a)
        # the batched form: the same bound per valuation
        with pytest.raises(fns.CannotRun, match="tiled executor"):
            fns.get(name).batched_impl(np, (a[None], b[None]), {})
    # float64: the bound is in bytes (2,048 elements)
    with pytest.raises(fns.CannotRun):
        model("Max", np.full((2, 1025), -0.0), np.zeros((2, 1)))


def test_what_stays_modelled():
    # no tie: computed
    r = model("Max", np.full((2, 8000), -1.0, np.float32), np.zeros((2, 1), np.float32))
    assert (bits(r) == 0).all()
    # a scalar operand and equal shapes are linear (by flat index) at any size
    r = model("Max", np.full(100003, -0.0, np.float32), np.array(0.0, np.float32))
    assert np.signbit(r).sum() == 3 and np.signbit(r[-3:]).all()
    r = model("Max", np.full((2, 8000), -0.0, np.float32), np.zeros((2, 8000), np.float32))
    assert not np.signbit(r).any()
    # a small broadcast: one block, by flat index
    r = model("Max", np.full((4, 1), -0.0, np.float32), np.zeros((1, 9), np.float32))
    assert np.signbit(r).reshape(-1).tolist() == [False] * 32 + [True] * 4
    assert not fns.extremum_tiled("float32", (2, 2048), (2, 1))
    assert fns.extremum_tiled("float32", (2, 2049), (2, 1))
    assert not fns.extremum_tiled("float32", (2, 8000), ())
    assert not fns.extremum_tiled("float32", (1, 8000), (8000,))


def pair(rows: int, dt: str = "float32"):
    """Max(-|x|, zeros[1,3]) -> |Max(-|x|, zeros[1,3])| on x [rows, 3]."""
    def prog(nodes, out):
        return program_from_json({"format": "tfsem.program/1", "variables": [], "nodes": nodes,
                                  "outputs": {"o": out},
                                  "feeds": {"x": {"dtype": dt, "shape": [rows, 3]}}})
    common = [{"name": "ab", "op": "Abs", "inputs": ["$x"]},
              {"name": "na", "op": "Neg", "inputs": ["ab"]},
              {"name": "z", "op": "Const",
               "value": {"dtype": dt, "value": [[0.0, 0.0, 0.0]]}},
              {"name": "m", "op": "Max", "inputs": ["na", "z"]}]
    return prog(common, "m"), prog(common + [{"name": "a", "op": "Abs", "inputs": ["m"]}], "a")


@pytest.mark.parametrize("mode", ["generic", "auto"])
def test_the_large_broadcast_pair_is_not_proved(mode):
    p, q = pair(5000)
    with gen.tensors(mode):
        v = check_rewrite(p, q, timeout=30, minimize=False, backends=False)
    assert v.verdict != "sound", (mode, v.reason)


def test_the_small_broadcast_pair_is_still_proved():
    """8 x 3 = 24 elements, one block: every tie the second operand."""
    p, q = pair(8)
    with gen.tensors("generic"):
        v = check_rewrite(p, q, timeout=30, minimize=False, backends=False)
    assert v.verdict == "sound", v.reason


def test_tensorflow_places_ties_by_block_in_a_large_broadcast():
    """The pair's two sides differ in TensorFlow (x = 0): the finding; and
    below the bound the model is the kernel bit for bit."""
    tf = pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs tfsem[tensorflow]")
    x = np.zeros((5000, 3), np.float32)
    m = tf.raw_ops.Maximum(x=-tf.abs(x), y=tf.zeros((1, 3))).numpy()
    assert np.signbit(m).any()                      # -0.0 at a block's tail
    assert not np.signbit(model("Max", np.full((8, 3), -0.0, np.float32),
                                np.zeros((1, 3), np.float32))).any()
    assert not np.signbit(np.abs(m)).any()
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float64):
        lim = fns.TILED_EXTREMUM_BYTES // np.dtype(dt).itemsize
        for sa, sb in (((lim // 3, 3), (3,)), ((lim // 5, 1), (1, 5)), ((2, lim // 2), (2, 1)),
                       ((3, lim // 9, 3), (1, lim // 9, 1))):
            a = rng.choice(np.array([-0.0, 0.0], dt), size=sa)
            b = rng.choice(np.array([-0.0, 0.0], dt), size=sb)
            for name, raw in (("Max", tf.raw_ops.Maximum), ("Min", tf.raw_ops.Minimum)):
                got = raw(x=a, y=b).numpy()
                assert (bits(got) == bits(model(name, a, b))).all(), (dt, sa, sb, name)
