"""tfsem's Max and Min against TensorFlow 2.21's CPU Maximum/Minimum on a tie
of +0.0 and -0.0: on float32/float64 the kernel returns the SECOND operand
for an element inside one of Eigen's whole packets (8 float32, 4 float64:
flat index i < (n // P) * P of an n-element result) and the FIRST in the
scalar tail past them (so every element of a float32 result of fewer than 8
elements); float16 and bfloat16 return the first everywhere.  The rule holds
for equal shapes, a scalar operand on either side and row broadcasts, eager
and in a tf.function (docs/kernels.md).  The numpy-only tests state the rule
with the measured patterns; the TensorFlow tests compare bit for bit with the
kernel (skipped without TensorFlow).  The last tests keep fixed the false
`sound` the old "second everywhere" model gave."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.checking import check_rewrite
from tfsem.checking import generic as gen
from tfsem.oracle import functions as fns
from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.values import Tensor
import tfsem.oracle.opdefs  # noqa: F401  (registers the TensorFlow functions)
from nan_bits_support import runs as runs_of

try:
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:                                   # pragma: no cover
    BF16 = None

SIZES = list(range(1, 41))
OPS = [("max", "Max", "Maximum"), ("min", "Min", "Minimum")]
#: Measured on TensorFlow 2.21 (AVX pip wheel), eager and in a tf.function,
#: both ops and both orders of the operands: which operand a tie returns,
#: flat index by flat index ("S" the second, "F" the first), written as runs.
MEASURED_BROADCASTS = {
    ("float32", (3, 5), (5,)): "S8 F7", ("float32", (5,), (3, 5)): "S8 F7",
    ("float32", (4, 9), (9,)): "S32 F4", ("float32", (4, 1), (1, 9)): "S32 F4",
    ("float64", (3, 5), (5,)): "S12 F3", ("float64", (5,), (3, 5)): "S12 F3",
    ("float64", (4, 9), (9,)): "S36", ("float64", (4, 1), (1, 9)): "S36",
    ("float16", (3, 5), (5,)): "F15", ("float16", (4, 9), (9,)): "F36",
    ("bfloat16", (3, 5), (5,)): "F15", ("bfloat16", (4, 1), (1, 9)): "F36",
}


def dtypes():
    return [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16)] + (
        [BF16] if BF16 is not None else [])


def dname(dt) -> str:
    return "bfloat16" if BF16 is not None and dt == BF16 else np.dtype(dt).name


def bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def model(name, a, b, ftz=False):
    f = fns.get(name)
    return f.impl(np, (a, b), {})[0] if not ftz else fns.flushed_extremum(f).impl(np, (a, b), {})[0]


def runs(first_sign, r) -> str:
    return runs_of("F" if bit == first_sign else "S"
                   for bit in np.signbit(np.asarray(r).astype(np.float64)).reshape(-1))


def rule(dt: str, n: int) -> str:
    p = {"float32": 8, "float64": 4}.get(dt)
    m = n if p is None else n // p * p
    if p is None:
        return f"F{n}"
    return " ".join(r for r in (f"S{m}" if m else "", f"F{n - m}" if n - m else "") if r)


# -- the rule, numpy only -------------------------------------------------------

@pytest.mark.parametrize("dt", dtypes(), ids=str)
@pytest.mark.parametrize("op", ["Max", "Min"])
def test_the_tie_is_the_second_operand_in_whole_packets_and_the_first_in_the_tail(dt, op):
    for n in SIZES + [100003]:
        for x, y in ((-0.0, 0.0), (0.0, -0.0)):
            want = rule(dname(dt), n)
            a, b = np.full(n, x, dt), np.full(n, y, dt)
            assert runs(bool(np.signbit(x)), model(op, a, b)) == want, (n, x)
            # a scalar operand on either side: the same positions
            assert runs(bool(np.signbit(x)), model(op, a, np.array(y, dt))) == want, (n, x)
            assert runs(bool(np.signbit(x)), model(op, np.array(x, dt), b)) == want, (n, x)


def test_the_one_element_case_of_the_finding():
    """Max(-0.0, +0.0) on a 1-element float32 tensor is -0.0 (the scalar tail)."""
    r = model("Max", np.array([-0.0], np.float32), np.array(0.0, np.float32))
    assert np.signbit(r).tolist() == [True]
    r = model("Max", np.full(8, -0.0, np.float32), np.array(0.0, np.float32))
    assert not np.signbit(r).any()


@pytest.mark.parametrize("key", sorted(MEASURED_BROADCASTS, key=str))
def test_broadcasts_count_the_flat_index_of_the_result(key):
    dt, sa, sb = key
    d = BF16 if dt == "bfloat16" else np.dtype(dt)
    if d is None:
        pytest.skip("no ml_dtypes")
    for op in ("Max", "Min"):
        for x, y in ((-0.0, 0.0), (0.0, -0.0)):
            r = model(op, np.full(sa, x, d), np.full(sb, y, d))
            assert runs(bool(np.signbit(x)), r) == MEASURED_BROADCASTS[key], (op, x)


def test_the_batched_model_counts_positions_within_each_valuation():
    rng = np.random.default_rng(0)
    sp = np.array([-0.0, 0.0, np.nan, 1.0, -1.0], np.float32)
    for name in ("Max", "Min"):
        f = fns.get(name)
        for sa, sb in (((9,), (9,)), ((9,), ()), ((), (5,)), ((3, 5), (5,)), ((4, 1), (1, 9))):
            a = rng.choice(sp, size=(3,) + sa).astype(np.float32)
            b = rng.choice(sp, size=(3,) + sb).astype(np.float32)
            got = f.batched_impl(np, (a, b), {})[0]
            for k in range(3):
                assert (bits(got[k]) == bits(model(name, a[k], b[k]))).all(), (name, sa, sb)


# -- against TensorFlow's kernel ---------------------------------------------------

def specials(dt):
    fi = ml_dtypes.finfo(dt) if BF16 is not None and dt == BF16 else np.finfo(dt)
    sub = fi.smallest_subnormal
    return np.array([-0.0, 0.0, -0.0, 0.0, sub, -sub, np.nan, np.inf, -np.inf, 1.5, -1.5,
                     fi.max, -fi.max], dtype=dt)


@pytest.mark.parametrize("dt", dtypes(), ids=str)
def test_the_model_is_tensorflows_kernel_bit_for_bit(dt):
    """Sizes 1..40, equal shapes and a scalar operand, random mixes of signed
    zeros, subnormals (the .ftz model on the dtypes TensorFlow flushes), NaN,
    infinities (eager mode; the rule is the same in a tf.function)."""
    tf = pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs tfsem[tensorflow]")
    name = dname(dt)
    ftz = name in fns.FLUSHED_DTYPES
    rng = np.random.default_rng(0)
    sp = specials(dt)
    bad, refused = [], 0
    for n in SIZES:
        a = rng.choice(sp, size=n).astype(dt)
        b = rng.choice(sp, size=n).astype(dt)
        for op, fn, tf_op in OPS:
            raw = getattr(tf.raw_ops, tf_op)
            for x, y in ((a, b), (a, b[:1].reshape(())), (a[:1].reshape(()), b)):
                got = raw(x=tf.constant(x), y=tf.constant(y)).numpy()
                try:
                    want = model(fn, x, y, ftz)
                except fns.CannotRun:
                    # refused: a bfloat16 subnormal in the scalar tail
                    assert name == "bfloat16" and n % 8 != 0, (tf_op, n)
                    refused += 1
                    continue
                if not (bits(got) == bits(want)).all():
                    bad.append((tf_op, n, x.tolist(), y.tolist(), got.tolist(), want.tolist()))
    assert not bad, bad[:2]
    assert refused < 3 * 2 * len(SIZES) * 2 // 3   # most cases are compared


def test_bfloat16_subnormals_in_the_tail_are_refused_by_name():
    if BF16 is None:
        pytest.skip("no ml_dtypes")
    sub = ml_dtypes.finfo(BF16).smallest_subnormal
    f = fns.flushed_extremum(fns.get("Max"))
    with pytest.raises(fns.CannotRun, match="Maximum on a bfloat16 subnormal"):
        f.impl(np, (np.full(9, sub, BF16), np.full(9, 1.0, BF16)), {})
    # inside whole packets the flushed model stands (TensorFlow flushes there)
    r = f.impl(np, (np.full(16, sub, BF16), np.full(16, -1.0, BF16)), {})[0]
    assert (r.astype(np.float32) == 0).all()


# -- the false `sound` -----------------------------------------------------------------

def _program(nodes, output, n, dt="float32"):
    return program_from_json({"format": "tfsem.program/1", "variables": [], "nodes": nodes,
                              "outputs": {"o": output}, "feeds": {"x": {"dtype": dt, "shape": [n]}}})


def _fn(name, op, *inputs):
    return {"name": name, "op": op, "inputs": list(inputs)}


def pair(op: str, n: int, dt: str = "float32"):
    """Max(-|x|, +0.0) -> |Max(-|x|, +0.0)| and Min(|x|, -0.0) -> -|Min(|x|, -0.0)|:
    with the tie "second" everywhere both sides are +0.0 (-0.0) or NaN, so
    the old model proved them; in the scalar tail x = 0 gives -0.0 (+0.0)."""
    zero = 0.0 if op == "Max" else -0.0
    common = [_fn("ab", "Abs", "$x"), _fn("na", "Neg", "ab"),
              {"name": "z", "op": "Const", "value": {"dtype": dt, "value": zero}},
              _fn("m", op, "na" if op == "Max" else "ab", "z")]
    p = _program(common, "m", n, dt)
    q = _program(common + [_fn("a", "Abs", "m"), _fn("r", "Neg", "a")],
                 "a" if op == "Max" else "r", n, dt)
    return p, q


def outcome(p, x):
    from tfsem.oracle.dispatch import outcome_set
    (o, _), = outcome_set(p, {"x": Tensor(x)}, {}).items()
    return dict(o.outputs)["o"]


@pytest.mark.parametrize("op", ["Max", "Min"])
@pytest.mark.parametrize("n,dt", [(1, "float32"), (9, "float32"), (3, "float64")])
def test_the_pair_is_unsound_where_an_element_is_in_the_tail(op, n, dt):
    p, q = pair(op, n, dt)
    x = np.zeros(n, dt)
    assert bits(outcome(p, x).array) .tolist() != bits(outcome(q, x).array).tolist()
    for mode in ("generic", "auto"):
        with gen.tensors(mode):
            v = check_rewrite(p, q, timeout=20, minimize=False, backends=False)
        assert v.verdict == "unsound", (mode, v.verdict, v.reason)


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_the_pair_is_sound_when_every_element_is_in_whole_packets(op):
    """8 float32 elements: one whole packet, every tie the second operand."""
    p, q = pair(op, 8)
    with gen.tensors("generic"):
        v = check_rewrite(p, q, timeout=20, minimize=False, backends=False)
    assert v.verdict == "sound", v.reason


def _split_pair(n: int, op: str = "Max"):
    """Max(a, b) on n elements -> Concat of Max on the two halves: the same
    ties only where each half's packets and tail fall where the whole's do."""
    feeds = {"a": {"dtype": "float32", "shape": [n]}, "b": {"dtype": "float32", "shape": [n]}}

    def prog(nodes, out):
        return program_from_json({"format": "tfsem.program/1", "variables": [], "nodes": nodes,
                                  "outputs": {"o": out}, "feeds": feeds})
    p = prog([_fn("o", op, "$a", "$b")], "o")
    q = prog([{"name": "sa", "op": "Split", "inputs": ["$a"]},
              {"name": "sb", "op": "Split", "inputs": ["$b"]},
              _fn("lo", op, "sa:0", "sb:0"), _fn("hi", op, "sa:1", "sb:1"),
              _fn("o", "Concat", "lo", "hi")], "o")
    return p, q


@pytest.mark.parametrize("mode", ["generic", "elementwise"])
def test_splitting_a_max_keeps_its_ties_only_on_packet_boundaries(mode):
    """16 = 8 + 8: every element in whole packets either way (sound); 18 =
    9 + 9: elements 8 and 16 move between packets and the tail (unsound)."""
    for n, want in ((16, "sound"), (18, "unsound")):
        p, q = _split_pair(n)
        with gen.tensors(mode):
            v = check_rewrite(p, q, timeout=30, minimize=False, backends=False)
        assert v.verdict == want, (n, v.verdict, v.reason)
