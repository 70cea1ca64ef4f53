"""MirrorPad's numpy model (oracle/opdefs/array.py) against TensorFlow's CPU
kernel, bit for bit: REFLECT and SYMMETRIC, random bit patterns of every
dtype (elements copied: NaN payloads, signed zeros, subnormals), paddings
up to the largest each mode allows, int32 and int64, empty tensors and
scalars; a padding past the mode's bound, or paddings not a [rank, 2]
matrix, fail as TensorFlow's kernel does (an error value); a rank past 5 is
left to TensorFlow's kernel.  Graph import refuses another mode by name.
More shapes under the `nightly` Hypothesis profile; the TensorFlow
comparisons are skipped without TensorFlow."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

from tfsem.graphdef.exporter import export_graph
from tfsem.graphdef.importer import GraphImportError, import_graph
from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.values import DTYPES, Error, Tensor, random_array

from test_graphdef_ops import const, node, placeholder

NIGHTLY = settings.get_current_profile_name() == "nightly"
SHAPES = [(), (0,), (1,), (5,), (2, 0, 3), (3, 4), (2, 3, 4)] + (
    [(1, 2, 1, 2, 3), (17,), (4, 4)] if NIGHTLY else [])
DTYPE_NAMES = list(DTYPES) if NIGHTLY else ["float32", "bfloat16", "float64", "int16", "bool"]
TRIALS = 6 if NIGHTLY else 3


def apply(a, pads, mode):
    return fns.get("MirrorPad").apply([Tensor(np.asarray(a)), Tensor(np.asarray(pads))],
                                      {"mode": mode})[0]


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
@pytest.mark.parametrize("dt", DTYPE_NAMES)
def test_mirror_pad_is_tensorflows_bit_for_bit(dt, mode):
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    rng = np.random.default_rng(59)
    d = DTYPES[dt]
    for shape in SHAPES:
        a = random_array(dt, int(np.prod(shape)), rng).reshape(shape).astype(d)
        for trial in range(TRIALS):
            index = (np.int32, np.int64)[trial % 2]
            top = [max(0, n - 1) if mode == "REFLECT" else n for n in shape]
            pads = np.array([[rng.integers(0, t + 1), rng.integers(0, t + 1)] for t in top],
                            index).reshape(len(shape), 2)
            got = apply(a, pads, mode)
            if mode == "REFLECT" and 0 in shape:
                # (REFLECT wants each padding below the axis's size, even a
                # zero one: an empty axis has none, measured)
                assert isinstance(got, Error) and got.reason == "shape-mismatch"
                with pytest.raises(tf.errors.InvalidArgumentError):
                    tf.raw_ops.MirrorPad(input=tf.constant(a), paddings=tf.constant(pads),
                                         mode=mode)
                continue
            want = tf.raw_ops.MirrorPad(input=tf.constant(a), paddings=tf.constant(pads),
                                        mode=mode).numpy()
            assert isinstance(got, Tensor), (dt, shape, pads, got)
            assert got.array.dtype == want.dtype and got.array.shape == want.shape
            assert got.array.tobytes() == want.tobytes(), (dt, mode, a, pads, got, want)


@pytest.mark.parametrize("mode,pads", [("REFLECT", [[2, 0], [0, 0]]), ("REFLECT", [[0, 0], [0, 3]]),
                                       ("SYMMETRIC", [[3, 0], [0, 0]]), ("SYMMETRIC", [[0, -1], [0, 0]]),
                                       ("SYMMETRIC", [[0, 0]])])
def test_paddings_past_the_modes_bound_fail_as_tensorflow_fails(mode, pads):
    tf = pytest.importorskip("tensorflow", reason="compares the model with TensorFlow's kernel")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    p = np.array(pads, np.int32)
    got = apply(a, p, mode)
    assert isinstance(got, Error) and got.reason == "shape-mismatch", got
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.raw_ops.MirrorPad(input=tf.constant(a), paddings=tf.constant(p), mode=mode)


def test_a_rank_past_five_is_left_to_the_kernel():
    with kernels.use(False), pytest.raises(fns.CannotRun, match="rank 6"):
        apply(np.zeros((2,) * 6, np.float32), np.ones((6, 2), np.int32), "SYMMETRIC")


def test_graph_import_export_and_a_mode_refused_by_name():
    nodes = [placeholder("x", (2, 3), "DT_FLOAT"), const("p", [[1, 0], [0, 2]], "DT_INT32"),
             node("m", "MirrorPad", ["x", "p"], Tpaddings={"type": "DT_INT32"},
                  mode={"s": b"SYMMETRIC"})]
    p = import_graph({"node": nodes}, ["m"], []).program
    (m,) = [n for n in p.nodes if n.op == "MirrorPad"]
    assert m.attrs["mode"] == "SYMMETRIC"
    out = [n for n in export_graph(p)["node"] if n["op"] == "MirrorPad"]
    assert out[0]["attr"]["mode"] == {"s": b"SYMMETRIC"}
    nodes[2]["attr"]["mode"] = {"s": b"EDGE"}
    with pytest.raises(GraphImportError, match="REFLECT or SYMMETRIC"):
        import_graph({"node": nodes}, ["m"], [])


def test_a_json_programs_mode_is_read_and_a_bad_one_named():
    from tfsem.oracle import jsonio
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.program import ProgramError

    def c(name, dt, v):
        return {"name": name, "op": "Const", "value": {"dtype": dt, "value": v}}
    prog = {"variables": {}, "nodes": [
        c("x", "float32", [[0, 1, 2], [3, 4, 5]]), c("p", "int32", [[1, 0], [0, 2]]),
        {"name": "m", "op": "MirrorPad", "inputs": ["x", "p"], "mode": "SYMMETRIC"}],
        "outputs": {"m": "m"}}
    (o,) = outcome_set(jsonio.program_from_json(prog), {}, {}, "atomic", "outputs").as_dict(2)
    assert dict(o.outputs)["m"].array.tolist() == [[0, 1, 2, 2, 1], [0, 1, 2, 2, 1],
                                                   [3, 4, 5, 5, 4]]
    prog["nodes"][2]["mode"] = "EDGE"
    with pytest.raises(ProgramError, match="attribute 'mode': expected REFLECT or SYMMETRIC"):
        jsonio.program_from_json(prog)
