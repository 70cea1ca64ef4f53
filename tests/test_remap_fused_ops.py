"""The remapper's fused ops (`_FusedMatMul`, `_FusedConv2D`,
`_FusedBatchNormEx`: oracle/opdefs/nn.py, kernel-evaluated) against
TensorFlow's runtime, bit for bit, on float32 edge values (NaN, infinities,
signed zeros, subnormals, the largest floats).

Grappler's remapper fuses a CPU-placed graph's MatMul + BiasAdd + Relu,
Conv2D + BiasAdd + Relu6, Conv2D + FusedBatchNorm + Relu and FusedBatchNorm
+ Relu; tfsem imports its output (the fused ops with their attributes) and
evaluates it with TensorFlow's kernels; the same GraphDef run by a
TensorFlow session (Grappler off) gives the same bits.  Needs TensorFlow;
nightly profile (about 10-20 s)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

from tfsem.oracle.values import Tensor, edge_values

tf = None     # TensorFlow, imported by the test (not at collection: the default suite)
pytestmark = pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                                reason="Grappler, two sessions and the kernel child: nightly profile")

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
FETCHES = ["dense", "conv", "convbn", "bn"]


def _values(shape, shift=0):
    e = np.array([v for v in edge_values("float32")], np.float32)
    e = np.concatenate([e, np.array([1.0, -2.5, 0.75, 3.0], np.float32)])
    n = int(np.prod(shape))
    return np.roll(np.resize(e, n + shift), -shift)[:n].reshape(shape).astype(np.float32)


def _graph():
    g = tf.Graph()
    with g.as_default(), tf.device(CPU):
        x = tf.compat.v1.placeholder(tf.float32, [4, 3], name="x")
        w = tf.constant(_values((3, 2), 5), name="w")
        m = tf.linalg.matmul(x, w, name="mm")
        ba = tf.nn.bias_add(m, tf.constant([1.0, -0.0], tf.float32), name="ba")
        tf.identity(tf.nn.relu(ba), name="dense")
        img = tf.compat.v1.placeholder(tf.float32, [1, 3, 3, 2], name="img")
        f = tf.constant(_values((2, 2, 2, 2), 3), name="f")
        c = tf.nn.conv2d(img, f, strides=1, padding="SAME", name="c1")
        cb = tf.nn.bias_add(c, tf.constant([0.5, -1.0], tf.float32), name="cb")
        tf.identity(tf.nn.relu6(cb), name="conv")
        c2 = tf.nn.conv2d(img, f, strides=1, padding="VALID", name="c2")
        ch = [tf.constant(v, tf.float32) for v in ([1.0, 2.0], [0.0, -1.0], [0.5, 0.0],
                                                    [1.0, 4.0])]
        bn = tf.compat.v1.nn.fused_batch_norm(c2, ch[0], ch[1], mean=ch[2], variance=ch[3],
                                              is_training=False, name="bn1")
        tf.identity(tf.nn.relu(bn[0]), name="convbn")
        # (4 channels: _FusedBatchNormEx's shape function, which
        # tf.import_graph_def runs, wants a multiple of 4; the remapper fuses
        # 2 channels too, and TensorFlow's runtime runs that node)
        img4 = tf.compat.v1.placeholder(tf.float32, [1, 2, 2, 4], name="img4")
        ch4 = [tf.constant(v, tf.float32) for v in ([1.0, 2.0, -0.0, 1e-30], [0.0, -1.0, 3.0, 0.0],
                                                     [0.5, 0.0, -2.0, 1.0], [1.0, 4.0, 0.0, 2.0])]
        bn2 = tf.compat.v1.nn.fused_batch_norm(img4, ch4[0], ch4[1], mean=ch4[2],
                                               variance=ch4[3], is_training=False, name="bn2")
        tf.identity(tf.nn.relu(bn2[0]), name="bn")
    return g.as_graph_def()


def _run_tensorflow(gd, feeds):
    config = tf.compat.v1.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(gd, name="")
    with tf.compat.v1.Session(graph=g, config=config) as s:
        return dict(zip(FETCHES, s.run([f + ":0" for f in FETCHES],
                                       {k + ":0": v for k, v in feeds.items()})))


def test_remap_output_imports_and_its_fused_ops_are_tensorflows():
    global tf
    tf = pytest.importorskip("tensorflow", reason="compares with TensorFlow's runtime")
    from tfsem.graphdef import grappler as g
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode
    from tfsem.oracle.dispatch import outcome_set

    gd = _graph()
    out = g.run_grappler(gd, FETCHES, "remap").graph_def
    ops = {n.op for n in out.node}
    assert {"_FusedMatMul", "_FusedConv2D", "_FusedBatchNormEx"} <= ops, ops
    assert not {"MatMul", "Conv2D", "BiasAdd"} & ops
    p = import_graph(decode("tensorflow.GraphDef", out.SerializeToString()), FETCHES, []).program
    fused = {n.op.split("/")[0] for n in p.nodes if n.op.startswith("tf._Fused")}
    assert fused == {"tf._FusedMatMul", "tf._FusedConv2D", "tf._FusedBatchNormEx"}
    feeds = {"x": _values((4, 3), 4), "img": _values((1, 3, 3, 2), 7),
             "img4": _values((1, 2, 2, 4), 2)}
    want = _run_tensorflow(out, feeds)
    # the inputs hold every edge value
    assert np.isnan(feeds["x"]).any() and (feeds["img"] == 0).any()
    # the finding of docs/grappler-findings.md: the fused activations give 0
    # where the unfused Relu and Relu6 propagate NaN (TensorFlow 2.21, CPU)
    unfused = _run_tensorflow(gd, feeds)
    for name in FETCHES:
        nan = np.isnan(unfused[name])
        assert (want[name][nan] == 0).all() and not np.isnan(want[name]).any(), name
        assert want[name][~nan].tobytes() == unfused[name][~nan].tobytes(), name
    assert all(np.isnan(unfused[name]).any() for name in FETCHES)
    from tfsem.oracle import kernels
    with kernels.use(True):
        got = outcome_set(p, {k: Tensor(v) for k, v in feeds.items()}, {}, observe="outputs")
    ((outcome, _),) = list(got.items())
    outs = dict(outcome.outputs)
    for name in FETCHES:
        a = outs[name].array
        assert a.dtype == want[name].dtype and a.shape == want[name].shape, name
        assert a.tobytes() == want[name].tobytes(), (name, a, want[name])
