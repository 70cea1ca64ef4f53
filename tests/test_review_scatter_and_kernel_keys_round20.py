"""An adversarial review of two shortcuts.

(1) A scatter's rows are applied in rounds (oracle/opdefs/state.py
`_scatter_rounds`: the r-th occurrence of each position in round r, a round
as one block, a row whose result holds a NaN redone alone). A position's
float32/float64 Add/Sub updates are folded by one numpy accumulation
(`_scatter_folds`) where no running value is a NaN or a subnormal.  Each
attack is compared bit for bit with one row at a time
(`_scatter_rows(..., rounds=False)`), and where TensorFlow is installed with
its ResourceScatter* / ResourceScatterNd* kernels.  The inputs are chosen
against the arguments: many duplicates (long folds), running values near
the smallest normal, ±inf, overflow to inf, x + -x, signed zeros, float64
rows of 16 elements and more, rank-0 rows, ScatterNd of depth 0, 1 and 2,
empty rows, indices out of range (the vector scatter stops, ScatterNd
passes over them), integer Div traps in a later round, and 1024 indices or
more.

(2) The kernels' attribute key (oracle/kernel_worker.py `attrs_key`) has a
plain form, the repr of the items sorted by name, for attributes made of
str, int, bool, None, lists and tuples.  The numpy replay's tables read the
key a node's frozen attributes keep (backends/execute.py
`Tables.attrs_key`).  The attacks: two attribute dicts that differ in a way
TensorFlow's kernels may see must never share a key.  The child's
signature key, made after the pipe, must be the parent's.
"""

from __future__ import annotations

import ast
import itertools
import math
import pickle

import numpy as np
import pytest

from tfsem.oracle import functions as fns
from tfsem.oracle.functions import CannotRunHere, ftz
from tfsem.oracle.opdefs import state
from tfsem.oracle.values import DTYPES
from test_review_nan_bits_round16 import values

FLOATS = ("float16", "bfloat16", "float32", "float64")


def _apply(w, positions, upd_rows, kind, *, skip_bad=False, form="rows", rounds, n_checked=0):
    try:
        with np.errstate(all="ignore"):
            return state._scatter_rows(w, positions, upd_rows, kind, n_checked,
                                       skip_bad=skip_bad, form=form, rounds=rounds)
    except CannotRunHere as exc:
        return ("cannot run", str(exc))


def _same(a, b) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _both(w, positions, upd_rows, kind, **kw):
    slow = _apply(w, positions, upd_rows, kind, rounds=False, **kw)
    fast = _apply(w, positions, upd_rows, kind, rounds=True, **kw)
    assert _same(slow, fast), (kind, kw, positions, w, upd_rows, slow, fast)
    return slow


def _hostile(dt: str, shape: tuple, rng) -> np.ndarray:
    """Values drawn against the fold's argument: near the smallest normal
    (above, at, below it), ±0, ±inf, the largest finite (overflow), small
    integers (x + -x exactly), and a few NaNs."""
    d = DTYPES[dt]
    fi = np.finfo(d)
    tiny, big = float(fi.tiny), float(fi.max)
    pool = np.array([tiny, 2 * tiny, 1.5 * tiny, 0.75 * tiny, 0.5 * tiny, 3 * tiny, 0.0, -0.0,
                     np.inf, big, big / 2, 1.0, 2.0, 3.0, 0.5, 1e-3, np.nan], dtype=np.float64)
    n = math.prod(shape)
    x = pool[rng.integers(0, len(pool) - (0 if rng.random() < 0.3 else 1), n)]
    x = x * np.where(rng.random(n) < 0.5, -1.0, 1.0)
    with np.errstate(all="ignore"):
        return x.astype(d).reshape(shape)


# -- (1) scatters in rounds and folds, against one row at a time -------------

@pytest.mark.parametrize("seed", range(4))
def test_hostile_folds_give_what_one_row_at_a_time_gives(seed, monkeypatch):
    """Long runs of one position's Add/Sub updates (the fold's case) of
    values near the smallest normal, ±inf, the largest finite and signed
    zeros: the vector, scalar and ScatterNd forms (depth 1 and 2), rows of
    rank 0 to 2, float64 rows of 16+ elements.  Both the folds that hold
    and those that fall back are reached."""
    seen = {"folded": 0, "fell back": 0, "inf": 0, "signed zero": 0}
    fold = state._scatter_folds

    def counted(out, applied, upd_rows, kind, scalar):
        left = fold(out, applied, upd_rows, kind, scalar)
        counts: dict = {}
        for _, pos in applied:
            counts[pos] = counts.get(pos, 0) + 1
        gone = {pos for _, pos in applied} - {pos for _, pos in left}
        seen["folded"] += len(gone)
        seen["fell back"] += sum(1 for p, c in counts.items()
                                 if c >= state.FOLD_MIN_ROWS and p not in gone)
        return left
    monkeypatch.setattr(state, "_scatter_folds", counted)
    _hostile_folds(np.random.default_rng(1000 + seed), 250, seen)
    assert seen["folded"] > 100 and seen["fell back"] > 50, seen
    assert seen["inf"] > 20 and seen["signed zero"] > 10, seen


def _hostile_folds(rng, n_cases, seen):
    for _ in range(n_cases):
        dt = ("float32", "float64")[rng.integers(0, 2)]
        kind = ("Add", "Sub")[rng.integers(0, 2)]
        form = ("rows", "scalar", "nd")[rng.integers(0, 3)]
        row = ((), (1,), (3,), (16,), (17,), (2, 9))[rng.integers(0, 6)]
        n_rows = int(rng.integers(1, 4))
        depth = 2 if form == "nd" and row and rng.random() < 0.5 else 1
        w_shape = (n_rows,) + row
        w = _hostile(dt, w_shape, rng)
        k = int(rng.integers(4, 40))
        if form == "nd":
            positions = [tuple(int(rng.integers(0, d)) for d in w_shape[:depth]) for _ in range(k)]
            upd = _hostile(dt, (k,) + w_shape[depth:], rng)
        else:
            positions = [int(rng.integers(0, n_rows)) for _ in range(k)]
            upd = [_hostile(dt, (), rng)] * k if form == "scalar" else _hostile(dt, (k,) + row, rng)
        got = _both(w, positions, upd, kind, skip_bad=form == "nd", form=form)
        seen["inf"] += bool(np.isinf(got).any())
        seen["signed zero"] += bool((np.signbit(got) & (got == 0)).any())


@pytest.mark.parametrize("elements", [8, 20, 51])
def test_folds_in_chunks_give_what_one_row_at_a_time_gives(elements, monkeypatch):
    """The fold accumulates FOLD_ELEMENTS elements at a time, each chunk
    from the last value of the one before: with chunks of a few updates
    (a NaN or a subnormal in a later chunk than the first among them) the
    rows are still one row at a time's, and rows too long for a chunk of
    FOLD_MIN_ROWS updates are not folded."""
    monkeypatch.setattr(state, "FOLD_ELEMENTS", elements)
    seen = {"inf": 0, "signed zero": 0, "chunked": 0}
    calls = []

    class Counting:
        def __init__(self, ufunc):
            self.ufunc = ufunc

        def __call__(self, *a, **k):
            return self.ufunc(*a, **k)

        def accumulate(self, *a, **k):
            calls.append(1)
            return self.ufunc.accumulate(*a, **k)
    # (state's numpy, its two accumulating ufuncs counted: chunks a fold made)
    monkeypatch.setattr(state, "np", type("np", (), {
        "__getattr__": staticmethod(lambda name: getattr(np, name)),
        "add": Counting(np.add), "subtract": Counting(np.subtract)})())
    try:
        rng = np.random.default_rng(77 + elements)
        for _ in range(120):
            before = len(calls)
            _hostile_folds(rng, 1, seen)
            seen["chunked"] += len(calls) - before > 1
    finally:
        monkeypatch.undo()
    assert seen["chunked"] > 20, seen


def test_a_scalar_fold_over_a_long_row_keeps_its_memory():
    """1,000 scalar updates of one row of 50,000 float32: the fold held
    them broadcast (500 MB where one row at a time needs 1 MB); now at most
    FOLD_ELEMENTS at a time (the row is too long to fold at all)."""
    import tracemalloc
    w = np.ones((2, 50_000), np.float32)
    u = [np.array(0.5, np.float32)] * 1000
    tracemalloc.start()
    try:
        with np.errstate(all="ignore"):
            got = state._scatter_rows(w, [0] * 1000, u, "Add", 1000, form="scalar")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * w.nbytes, peak
    assert got[0, 0] == np.float32(501.0) and got[1, 0] == 1.0
    w = np.ones((2, 2000), np.float32)                 # (32 updates a chunk: folded)
    tracemalloc.start()
    try:
        with np.errstate(all="ignore"):
            got = state._scatter_rows(w, [0] * 1000, u, "Add", 1000, form="scalar")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * state.FOLD_ELEMENTS * 4 * 4 + 20 * w.nbytes, peak
    assert got[0, 0] == np.float32(501.0)


def test_folds_at_the_edge_of_the_smallest_normal():
    """A running value exactly ±tiny is normal (folded, kept); one step
    below it is subnormal (flushed one row at a time: the fold must not
    hold); x + -x is +0, -0 + -0 is -0 (equal either way)."""
    for dt in ("float32", "float64"):
        d = DTYPES[dt]
        tiny = np.finfo(d).tiny
        sub = np.nextafter(d.type(tiny), d.type(0))    # the largest subnormal
        cases = [
            ([2 * tiny], [-tiny, tiny, -tiny, -tiny], "Add"),            # ends at 0, via tiny
            ([2 * tiny], [tiny, -sub, -tiny, 0.0], "Sub"),               # a subnormal update: flushed
            ([1.5 * tiny], [-tiny, 0.0, 0.0, 0.0], "Add"),              # 0.5 tiny: subnormal
            ([-0.0], [-0.0, -0.0, -0.0, -0.0], "Add"),
            ([-0.0], [0.0, 0.0, 0.0, 0.0], "Sub"),
            ([3.0], [-3.0, -0.0, -0.0, -0.0], "Add"),
            ([np.finfo(d).max], [np.finfo(d).max, -np.finfo(d).max, 1.0, 1.0], "Add"),
            ([-np.inf], [np.inf, 1.0, 1.0, 1.0], "Sub"),
        ]
        for start, steps, kind in cases:
            w = np.array([start * 3], d)                                  # one row of 3
            upd = np.array([[s] * 3 for s in steps], d)
            got = _both(w, [0] * len(steps), upd, kind)
            want = np.array(w, copy=True)
            for u in upd:            # the per-step rule written out: flush, op, flush
                with np.errstate(all="ignore"):
                    want[0] = ftz(np, (np.add if kind == "Add" else np.subtract)(
                        ftz(np, want[0]), ftz(np, u)))
            if not np.isnan(want).any():
                assert got.tobytes() == want.tobytes(), (dt, start, steps, kind, got, want)


def test_edge_shapes_give_what_one_row_at_a_time_gives():
    """Empty rows, rank-0 rows (a vector), ScatterNd of depth 0 (every
    index the whole variable: rounds of one), of the full rank (single
    elements), and a variable of rank 0 under ScatterNd of depth 0."""
    rng = np.random.default_rng(7)
    kinds_nd = state.SCATTER_ND_KINDS
    for dt in FLOATS + ("int32", "uint8"):
        d = DTYPES[dt]

        def draw(shape):
            return values(dt, shape, rng, 0.3) if dt in FLOATS else \
                rng.integers(0, 50, shape).astype(d)
        for kind in state.SCATTER_KINDS:
            if kind == "Div":
                continue
            _both(draw((4, 0)), [0, 1, 2, 3, 0, 1], draw((6, 0)), kind)     # empty rows
            _both(draw((5,)), [0, 1, 2, 3, 4, 0, 1, 2], draw((8,)), kind)   # rank-0 rows
            _both(draw((5,)), [0, 1, 2, 3, 4, 4, 4, 4, 4], [draw(())] * 9, kind, form="scalar")
        for kind in kinds_nd:
            _both(draw((2, 3)), [()] * 6, draw((6, 2, 3)), kind, skip_bad=True, form="nd")
            _both(draw(()), [()] * 5, draw((5,)), kind, skip_bad=True, form="nd")
            pos = [(i % 2, j % 3) for i, j in zip(range(9), range(3, 12))]
            _both(draw((2, 3)), pos, draw((9,)), kind, skip_bad=True, form="nd")
            pos = [(1, 2), None, (0, 0), (1, 1), (1, 2), (0, 1), None, (1, 0), (0, 2)]
            _both(draw((2, 3, 4)), pos, draw((9, 4)), kind, skip_bad=True, form="nd")


def test_out_of_range_stops_the_vector_scatter_and_is_passed_over_by_scatter_nd():
    """Rows after the first index out of range are not applied by the
    vector scatter (rounds built from the rows before it only); ScatterNd
    applies every other row.  Both as one row at a time, and the rows past
    the bad index do change the result where they are applied."""
    w = np.arange(12, dtype=np.float32).reshape(4, 3)
    positions = [0, 1, 2, 3, 0, None, 1, 2, 3, 0, 1]
    upd = np.full((len(positions), 3), 100.0, np.float32)
    stopped = _both(w, positions, upd, "Add")
    nd = [None if p is None else (p,) for p in positions]
    skipped = _both(w, nd, upd, "Add", skip_bad=True, form="nd")
    assert stopped[0, 0] == 200.0 and skipped[0, 0] == 300.0


def test_integer_div_trap_in_a_later_round_and_after_a_bad_index():
    """The lowest int32 by -1 traps: reached in the third round (the row
    got there by earlier rounds' divisions), raised as one row at a time
    raises it; placed after an index out of range, applied by neither."""
    lo = np.iinfo(np.int32).min
    w = np.array([lo, 8, 8, 8, 8], np.int32)
    positions = [1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 0]
    upd = np.array([2, 2, 2, 2, 1, 2, 2, 2, 2, 1, 2, -1], np.int32)
    got = _both(w, positions, upd, "Div")
    assert isinstance(got, tuple) and "lowest int32" in got[1]
    got = _both(w, positions[:11] + [None, 0], np.append(upd, -1), "Div")
    assert not isinstance(got, tuple) and got[0] == lo
    w64 = np.array([np.iinfo(np.int64).min, 1, 1, 1], np.int64)
    got = _both(w64, [1, 2, 3, 0, 1, 2, 3, 0], np.array([1, 1, 1, 1, 1, 1, 1, -1], np.int64),
                "Div")
    assert isinstance(got, tuple)


def test_a_thousand_and_more_indices():
    """1024 indices or more: distinct ones go in one round (every kind,
    every float dtype, NaNs in float64 rows of 16+ elements); duplicates
    are refused (TensorFlow's kernel applies them in parallel) the same
    way both ways, and by ScatterNd's serial kernel applied in order."""
    rng = np.random.default_rng(11)
    n = 1100
    for dt in FLOATS:
        w = values(dt, (n, 17), rng, 0.2)
        perm = [int(i) for i in rng.permutation(n)]
        for kind in state.SCATTER_KINDS:
            upd = values(dt, (n, 17), rng, 0.2)
            if kind == "Div":
                with np.errstate(invalid="ignore"):
                    zero = np.asarray(ftz(np, upd), np.float64) == 0
                upd = np.where(zero, np.ones_like(upd), upd)
            _both(w, perm, upd, kind, n_checked=n)
            dup = perm[:-1] + [perm[0]]
            got = _both(w, dup, upd, kind, n_checked=n)
            assert isinstance(got, tuple) and "in parallel" in got[1]
        for kind in ("Add", "Sub", "Max", "Update"):
            pos = [(int(i),) for i in rng.integers(0, 9, n)]
            _both(w[:9], pos, values(dt, (n, 17), rng, 0.05), kind, skip_bad=True, form="nd")


# -- (1) against TensorFlow's kernels ----------------------------------------

def _tf():
    return pytest.importorskip("tensorflow", reason="TensorFlow's kernels: needs tfsem[tensorflow]")


def _model(kind, var, indices, updates, nd=False):
    from test_scatter_nan_bits import model
    return model(kind, var, indices, updates, nd)


def _kernel(tf, kind, var, indices, updates, nd=False):
    from test_scatter_nan_bits import kernel
    return kernel(tf, kind, var, indices, updates, nd)


def test_many_duplicates_against_tensorflows_kernels():
    """4 to 40 indices over few rows (long folds, many rounds), every kind,
    float and integer dtypes, vector, scalar and ScatterNd (depth 1 to the
    full rank) updates: the model's variable is the kernel's, bit for bit."""
    tf = _tf()
    rng = np.random.default_rng(20)
    for _ in range(120):
        nd = bool(rng.random() < 0.35)
        kind = str(rng.choice(state.SCATTER_ND_KINDS if nd else state.SCATTER_KINDS))
        dts = FLOATS if kind == "Div" else FLOATS + ("int32", "int64", "int8", "uint8")
        dt = str(rng.choice(dts))
        rows = int(rng.integers(1, 6))
        row = ((), (1,), (3,), (8,), (16,), (17,), (2, 9))[rng.integers(0, 7)]
        if nd and not row:
            row = (3,)
        k = int(rng.integers(4, 40))
        scalar = not nd and rng.random() < 0.25
        shape = (rows,) + row
        few = int(rng.integers(1, rows + 1))
        if nd:
            depth = int(rng.integers(1, len(shape) + 1))
            indices = np.int32([[int(rng.integers(0, few if j == 0 else d))
                                 for j, d in enumerate(shape[:depth])] for _ in range(k)])
            ushape = (k,) + shape[depth:]
        else:
            indices = np.int32(rng.integers(0, few, k))
            ushape = () if scalar else (k,) + row
        if dt in FLOATS:
            p = float(rng.choice([0.0, 0.1, 0.5]))
            hostile = rng.random() < 0.5 and dt in ("float32", "float64")
            var = _hostile(dt, shape, rng) if hostile else values(dt, shape, rng, p)
            upd = _hostile(dt, ushape, rng) if hostile else values(dt, ushape, rng, p)
        else:
            info = np.iinfo(dt)
            var = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
            upd = rng.integers(-3, 4, ushape).astype(dt)
        if kind == "Div":
            with np.errstate(invalid="ignore"):
                wide = np.asarray(fns.ftz(np, upd), np.float64)
            upd = np.where(wide == 0, np.ones_like(upd), upd)
        want = _kernel(tf, kind, var, indices, upd, nd)
        got = _model(kind, var, indices, upd, nd)
        assert _same(got, want), (kind, nd, dt, shape, indices.tolist(), scalar)


def test_folds_near_the_smallest_normal_against_tensorflows_kernels():
    tf = _tf()
    for dt in (np.float32, np.float64):
        tiny, big = np.finfo(dt).tiny, np.finfo(dt).max
        runs = [[2 * tiny, -tiny, -0.5 * tiny, 0.75 * tiny, tiny, -tiny, 3 * tiny],
                [tiny, tiny, -tiny, tiny, tiny], [1.0, np.inf, 5.0, -3.0, np.inf],
                [big, big, -big, 1.0, -big], [-0.0, -0.0, 0.0, -0.0, -0.0, 3.0, -3.0, -0.0]]
        for run in runs:
            for kind in ("Add", "Sub"):
                for start in (0.0, -0.0, tiny, -2 * tiny, 1.0):
                    var = np.array([[start, -start, start]] * 2, dt)
                    idx = np.int32([0] * len(run))
                    for upd in (np.array([[x, -x, x] for x in run], dt), np.array(run[1], dt)):
                        assert _same(_model(kind, var, idx, upd), _kernel(tf, kind, var, idx, upd))


def test_out_of_range_and_a_thousand_indices_against_tensorflows_kernels():
    """An index out of range: the kernel fails and leaves the rows before
    it applied (vector) or every other row applied (ScatterNd), as the
    model's rows; 1,100 distinct indices in one round."""
    tf = _tf()
    rng = np.random.default_rng(4)
    idx = [0, 1, 2, 1, 0, 9, 3, 2, 1, 0, 3, 2]
    for nd in (False, True):
        for kind in ("Add", "Sub", "Update", "Max"):
            var = rng.standard_normal((4, 3)).astype(np.float32)
            upd = rng.standard_normal((len(idx), 3)).astype(np.float32)
            with tf.device("/CPU:0"):
                h = tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=var.shape,
                                           shared_name=f"review20_oob_{nd}_{kind}")
                tf.raw_ops.AssignVariableOp(resource=h, value=var)
                with pytest.raises(tf.errors.InvalidArgumentError):
                    if nd:
                        getattr(tf.raw_ops, f"ResourceScatterNd{kind}")(
                            ref=h, indices=tf.constant(np.int32(idx)[:, None]), updates=upd)
                    else:
                        getattr(tf.raw_ops, f"ResourceScatter{kind}")(
                            resource=h, indices=tf.constant(np.int32(idx)), updates=upd)
                after = tf.raw_ops.ReadVariableOp(resource=h, dtype=tf.float32).numpy()
                tf.raw_ops.DestroyResourceOp(resource=h)
            positions = [(i if i < 4 else None) for i in idx]
            if nd:
                positions = [None if p is None else (p,) for p in positions]
            got = _both(var, positions, upd, kind, skip_bad=nd, form="nd" if nd else "rows")
            assert _same(got, after), (nd, kind)
    n = 1100
    for dt in FLOATS:
        for kind in ("Add", "Mul", "Max", "Update"):
            var = values(dt, (n, 17), rng, 0.2)
            upd = values(dt, (n, 17), rng, 0.2)
            perm = np.int32(rng.permutation(n))
            assert _same(_model(kind, var, perm, upd), _kernel(tf, kind, var, perm, upd))


# -- (2) the kernels' attribute keys -----------------------------------------

#: strings that read like other values or like the key's own syntax
NASTY_STRINGS = ["", "'", '"', "\\", "', '", "), (", "]", "[", "('a', 1)", "F", "(", "True",
                 "1", "None", "a,b", "\n", "\x00", "é", "\ud800", "'x': 1", "[1, 2]", "(1,)"]


def _plain_values(rng, depth=0):
    r = rng.random()
    if depth < 3 and r < 0.25:
        items = [_plain_values(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))]
        return items if rng.random() < 0.5 else tuple(items)
    pool = [0, 1, -1, True, False, None, 2 ** 63, -2 ** 63 - 1, 2 ** 200, 10 ** 40]
    return pool[rng.integers(0, len(pool))] if rng.random() < 0.5 else \
        NASTY_STRINGS[rng.integers(0, len(NASTY_STRINGS))]


def _typed(v):
    """`v` with each value's exact type beside it (True is not 1)."""
    if type(v) in (list, tuple):
        return (type(v).__name__, tuple(_typed(x) for x in v))
    return (type(v).__name__, v)


def test_the_plain_key_determines_the_attributes_exactly():
    """The plain form is "F" and a repr that Python reads back: reading it
    gives the attributes again with every value's type (bool, int, str,
    None, list, tuple) and order, so no two plain attribute dicts that
    differ anywhere share a key, whatever their strings hold.  And no
    plain key is an exact one."""
    from tfsem.oracle.kernel_worker import attrs_key
    rng = np.random.default_rng(3)
    seen: dict = {}
    for _ in range(3000):
        names = ["T", "a", "b", "x'", 'y"', "a, 'b'", "é"]
        d = {names[i]: _plain_values(rng) for i in rng.choice(len(names), int(rng.integers(0, 4)),
                                                               replace=False)}
        key = attrs_key(d)
        assert key.startswith("F"), d
        back = ast.literal_eval(key[1:])
        assert _typed(back) == _typed(sorted(d.items())), d
        canon = _typed(sorted(d.items()))
        assert seen.setdefault(key, canon) == canon, (d, key)
    assert len(seen) > 1000, len(seen)


def test_pairs_kernels_tell_apart_never_share_a_key():
    from tfsem.oracle.kernel_worker import attrs_key
    pairs = [({"a": True}, {"a": 1}), ({"a": False}, {"a": 0}), ({"a": "x"}, {"a": b"x"}),
             ({"a": [1]}, {"a": (1,)}), ({"a": [[1]]}, {"a": [(1,)]}), ({"a": [1, [2]]},
             {"a": [[1], 2]}), ({"a": 2 ** 64}, {"a": 2 ** 64 + 1}), ({"a": 1}, {"a": 1.0}),
             ({"a": [1]}, {"a": [1.0]}), ({"a": "1"}, {"a": 1}), ({"a": None}, {"a": "None"}),
             ({"a": ""}, {"a": None}), ({"a": []}, {"a": ()}), ({"a": [True]}, {"a": [1]}),
             ({"a": "', 'b"}, {"a": "", "b": ""}), ({"a": np.int64(1)}, {"a": 1}),
             ({"a": [np.int64(1)]}, {"a": [1]}), ({"a": -0.0}, {"a": 0.0}),
             ({"a": {"b": 1}}, {"a": [("b", 1)]}), ({"a": "x", "b": "y"}, {"a": "x, b: y"})]
    for d1, d2 in pairs:
        assert attrs_key(d1) != attrs_key(d2), (d1, d2)
    # dict order, and equal values, give one key
    assert attrs_key({"a": [1, "x"], "b": (True,)}) == attrs_key({"b": (True,), "a": [1, "x"]})


def test_the_childs_signature_key_is_the_parents_after_the_pipe():
    """The child keys its signatures with the attributes the pipe gave it
    (pickled, large arrays through the shared file): the same key as the
    parent's for plain, exact and mixed attributes."""
    from tfsem.oracle.kernel_worker import Region, attrs_key, plain_dumps, plain_loads
    nan = np.frombuffer(np.uint32(0xffc00123).tobytes(), np.float32)[0]
    attrs = [{"T": "DT_FLOAT", "strides": [1, 2, 2, 1], "padding": "SAME", "flag": True,
              "shape": (2, 3), "n": 2 ** 70, "s": "a'b\"c, ][", "u": ["\ud800", "é\x00"]},
             {"alpha": float(nan), "T": "DT_FLOAT"}, {"alpha": -0.0},
             {"value": np.arange(5000, dtype=np.float64), "dtype": "DT_DOUBLE"},
             {"nested": {"z": [1, (2, "3")], "a": None}}, {}]
    region = Region.create("tfsem-review20")
    try:
        for a in attrs:
            msg = ("req", 1, "Op", [], a, 1)
            back = plain_loads(plain_dumps(msg))[4]
            assert attrs_key(back) == attrs_key(a), a
            if region is not None:
                back = region.loads(region.dumps(msg), copy=True)[4]
                assert attrs_key(back) == attrs_key(a), a
    finally:
        if region is not None:
            region.close()
    assert pickle.loads(pickle.dumps(attrs[0])) == attrs[0]


def test_the_tables_keys_tell_apart_what_the_kernels_would():
    """Two Consts and two functions whose attributes differ only in a
    value's type (bool against int, a list against a tuple), a float's
    sign or a NaN's payload: the numpy replay's tables (which read the key
    the frozen attributes keep, or their plain form: execute._exact_key)
    give them different keys, paired one to one with the
    functions.attrs_key of their attributes."""
    from tfsem.backends.execute import compiled
    from tfsem.oracle.program import Node, Program, DataIn
    from tfsem.oracle.values import Tensor
    quiet = np.frombuffer(np.uint32(0x7fc00001).tobytes(), np.float32)
    other = np.frombuffer(np.uint32(0x7fc00002).tobytes(), np.float32)
    variants = [{"x": True}, {"x": 1}, {"x": [1]}, {"x": (1,)}, {"x": 0.0}, {"x": -0.0},
                {"x": "1"}, {"x": [True]}]
    nodes = [Node(f"c{i}", "Const", (), {"value": Tensor(np.float32([1.0]))} | v)
             for i, v in enumerate(variants)]
    nodes += [Node("q1", "Const", (), {"value": Tensor(quiet.reshape(()))}),
              Node("q2", "Const", (), {"value": Tensor(other.reshape(()))})]
    try:
        p = Program({}, tuple(nodes), {n.name: DataIn(n.name, 0) for n in nodes})
    except Exception as exc:   # noqa: BLE001 (a Const refuses unknown attributes)
        pytest.skip(f"no such program: {exc}")
    t = compiled(p, "atomic")
    keys = [t.attrs_key(t.index[n.name]) for n in nodes]
    assert len(set(keys)) == len(keys), keys
    exact = [fns.attrs_key(dict(n.attrs)) for n in nodes]
    assert len(set(exact)) == len(exact)
    # (and a node of equal attributes, another object, gets the same key)
    twin = Program({}, tuple(Node(n.name, n.op, n.inputs, dict(n.attrs)) for n in nodes),
                   {n.name: DataIn(n.name, 0) for n in nodes})
    t2 = compiled(twin, "atomic")
    assert [t2.attrs_key(t2.index[n.name]) for n in nodes] == keys


# -- found: ScatterNd of index depth 0 (and past 7) ---------------------------

@pytest.mark.parametrize("depth,var_shape", [(0, (2, 3)), (0, ()), (8, (2,) * 8)])
def test_scatter_nd_of_a_depth_the_kernel_has_no_case_for_fails_and_changes_nothing(
        depth, var_shape):
    """TensorFlow's CPU ScatterNd kernels take index depths 1 to 7 and fail
    on any other before touching the variable.  tfsem read depth 0 as index
    tuples () and applied every update to the whole variable (a variable
    [[0, 1, 2], [3, 4, 5]] plus two updates of ones became [[2, 3, 4], ...]
    where TensorFlow leaves it): now the assign function fails (the error
    value shape-mismatch: an Assign that fails leaves its variable)."""
    from tfsem.oracle.values import Error, Tensor
    var = np.arange(math.prod(var_shape), dtype=np.float32).reshape(var_shape)
    for n in (2, 0):
        idx = np.zeros((n, depth), np.int32)
        upd = np.ones((n,) + var_shape[depth:], np.float32)
        (packed,) = fns.get("PackScatter").apply([Tensor(idx), Tensor(upd)])
        for kind in state.SCATTER_ND_KINDS:
            (out,) = fns.get("ScatterNd" + kind).apply([Tensor(var), packed])
            assert isinstance(out, Error) and out.reason == "shape-mismatch", (depth, n, kind, out)
    for ok in (1, 6, 7):                       # (the depths the kernel has cases for run)
        shape = (2,) * 8
        idx = np.ones((3, ok), np.int32)
        upd = np.ones((3,) + shape[ok:], np.float32)
        (packed,) = fns.get("PackScatter").apply([Tensor(idx), Tensor(upd)])
        (out,) = fns.get("ScatterNdAdd").apply([Tensor(np.zeros(shape, np.float32)), packed])
        assert isinstance(out, Tensor) and float(out.array.sum()) == 3.0 * 2 ** (8 - ok)


@pytest.mark.parametrize("depth,var_shape", [(0, (2, 3)), (8, (2,) * 8), (7, (2,) * 8)])
def test_scatter_nd_depths_against_tensorflows_kernels(depth, var_shape):
    """The kernel's own answer: depth 0 and 8 fail and leave the variable,
    depth 7 runs; tfsem's imported graph (a ResourceScatterNdAdd, then a
    Read under a control edge) ends in TensorFlow's variable."""
    tf = _tf()
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode
    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.values import Tensor
    var = np.arange(math.prod(var_shape), dtype=np.float32).reshape(var_shape)
    idx = np.zeros((2, depth), np.int32)
    upd = np.ones((2,) + var_shape[depth:], np.float32)
    g = tf.Graph()
    with g.as_default():
        h = tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=var_shape,
                                   shared_name=f"review20_depth{depth}", name="v")
        init = tf.raw_ops.AssignVariableOp(resource=h, value=tf.constant(var), name="init")
        scatter = tf.raw_ops.ResourceScatterNdAdd(ref=h, indices=tf.constant(idx, name="idx"),
                                                  updates=tf.constant(upd, name="upd"),
                                                  name="scatter")
        read = tf.raw_ops.ReadVariableOp(resource=h, dtype=tf.float32, name="read")
        with tf.compat.v1.Session(graph=g) as s:
            s.run(init)
            try:
                s.run(scatter)
                ran = True
            except tf.errors.OpError:
                ran = False
            want = s.run(read)
    assert ran == (depth == 7)
    p = import_graph(decode("GraphDef", g.as_graph_def().SerializeToString()), [],
                     ["scatter"]).program
    (name,) = p.variables
    (o,) = outcome_set(p, {}, {name: Tensor(var)}, "atomic", "outputs+state").as_dict(2)
    (after,) = dict(o.state).values()
    assert after.array.tobytes() == want.tobytes()


def test_a_depth_0_scatter_nd_is_not_a_scatter_of_every_row():
    """ResourceScatterNdUpdate of two updates at indices of shape [2, 0]
    against the same update written row by row (indices [[0], [1]]): read
    as whole-variable updates the two were the same (no counterexample);
    TensorFlow's kernel fails on the first and keeps the variable, so the
    rewrite changes the final state: unsound."""
    tf = _tf()
    from tfsem.checking.check import check_rewrite
    from tfsem.graphdef.importer import import_graph
    from tfsem.graphdef.proto import decode

    def build(indices, updates):
        g = tf.Graph()
        with g.as_default():
            h = tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=(2, 3), shared_name="v", name="v")
            tf.raw_ops.ResourceScatterNdUpdate(ref=h, indices=tf.constant(indices, name="idx"),
                                               updates=tf.constant(updates, name="upd"),
                                               name="step")
        return import_graph(decode("GraphDef", g.as_graph_def().SerializeToString()), [],
                            ["step"]).program
    two = np.float32(2.0)
    original = build(np.zeros((2, 0), np.int32),
                     np.stack([np.ones((2, 3), np.float32), np.full((2, 3), two)]))
    rewritten = build(np.int32([[0], [1]]), np.full((2, 3), two))
    assert check_rewrite(original, rewritten, timeout=60).verdict == "unsound"
