"""The scatters' rows applied in rounds (oracle/opdefs/state.py
`_scatter_rounds`: the r-th occurrence of each position in round r, a
round's rows computed as one block, a row whose result holds a NaN applied
again alone) against one row at a time in index order (`_scatter_rows(...,
rounds=False)`), bit for bit: every kind, the vector, scalar and ScatterNd
forms, every float and integer dtype, rows of rank 0 to 2 (float64 rows of
16 elements and more, where Eigen's unrolled loop places NaNs), NaNs with
payloads, infinities, signed zeros, subnormals, integer extremes, duplicate
indices and indices out of range (the vector scatter stops there, ScatterNd
passes over it).  The models' agreement with TensorFlow's kernels is
tests/test_scatter_nan_bits.py's."""

from __future__ import annotations

import numpy as np
import pytest

from tfsem.oracle.functions import CannotRunHere, ftz
from tfsem.oracle.opdefs import state
from tfsem.oracle.values import DTYPES
from test_review_nan_bits_round16 import values

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
ROW_SHAPES = ((), (1,), (3,), (17,), (2, 9), (33,))


def _ints(dt: str, shape: tuple, rng) -> np.ndarray:
    info = np.iinfo(DTYPES[dt])
    pool = np.array([info.min, info.max, 0, 1, info.max - 1] +
                    ([-1, info.min + 1] if info.min < 0 else [2]), dtype=object)
    n = int(np.prod(shape, dtype=np.int64))
    raw = rng.integers(-5, 6, n).astype(object)
    pick = rng.random(n) < 0.3
    raw[pick] = pool[rng.integers(0, len(pool), int(pick.sum()))]
    return np.array([int(x) % (1 << 64) for x in raw], dtype=np.uint64) \
        .astype(DTYPES[dt]).reshape(shape)


def _draw(dt: str, shape: tuple, rng, p_special: float = 0.3) -> np.ndarray:
    return values(dt, shape, rng, p_special) if dt in FLOATS else _ints(dt, shape, rng)


def _apply(w, positions, upd_rows, kind, skip_bad, form, rounds):
    try:
        with np.errstate(all="ignore"):
            return state._scatter_rows(w, positions, upd_rows, kind, 0, skip_bad=skip_bad,
                                       form=form, rounds=rounds)
    except CannotRunHere as exc:
        return ("cannot run", str(exc))


def _same(a, b) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _cases(seed: int, n_cases: int, dtypes=FLOATS + INTS, only=None):
    rng = np.random.default_rng(seed)
    for _ in range(n_cases):
        dt = dtypes[rng.integers(0, len(dtypes))]
        nd = bool(rng.random() < 0.3)
        kinds = only or (state.SCATTER_ND_KINDS if nd else state.SCATTER_KINDS)
        kind = kinds[rng.integers(0, len(kinds))]
        if kind == "Div" and dt in FLOATS and rng.random() < 0.5:
            kind = "Mul"
        row = ROW_SHAPES[rng.integers(0, len(ROW_SHAPES))]
        n_rows = int(rng.integers(1, 7))
        depth = 1 + (int(rng.integers(0, 2)) if nd and row else 0)
        w_shape = (n_rows,) + ((int(rng.integers(1, 4)),) if depth == 2 else ()) + \
            (row[1:] if depth == 2 else row)
        slice_shape = w_shape[depth:]
        special = 0.3 if rng.random() < 0.6 else 0.0
        w = _draw(dt, w_shape, rng, special)
        k = int(rng.integers(1, 24))
        # mostly few distinct rows: duplicates make several rounds
        positions: list = []
        for _ in range(k):
            if rng.random() < 0.05:
                positions.append(None)
            elif depth == 1:
                p = int(rng.integers(0, min(n_rows, int(rng.integers(1, n_rows + 1)) + 1)))
                positions.append((p,) if nd else p)
            else:
                positions.append((int(rng.integers(0, n_rows)), int(rng.integers(0, w_shape[1]))))
        scalar = not nd and rng.random() < 0.25
        if scalar:
            form, upd_rows = "scalar", [_draw(dt, (), rng, special)] * k
        else:
            form, upd_rows = ("nd" if nd else "rows"), _draw(dt, (k,) + slice_shape, rng, special)
        if kind == "Div":
            # (a zero divisor, a subnormal one too, fails the scatter before
            # any row: _scatter's check, not _scatter_rows')
            u = np.array(upd_rows[0] if scalar else upd_rows, copy=True)
            u[ftz(np, u) == 0] = 1
            upd_rows = [u] * k if scalar else u
        yield dt, kind, nd, form, w, positions, upd_rows


@pytest.mark.parametrize("seed,dtypes,only", [(s, FLOATS + INTS, None) for s in range(6)] +
                         [(s, ("float32", "float64"), ("Add", "Sub")) for s in range(6, 9)])
def test_rounds_give_the_variable_one_row_at_a_time_gives(seed, dtypes, only, monkeypatch):
    checked = {"rounds": 0, "nan rows": 0, "folded": 0}
    fold = state._scatter_folds

    def counted(out, applied, *rest):
        left = fold(out, applied, *rest)
        checked["folded"] += len(applied) - len(left)
        return left
    monkeypatch.setattr(state, "_scatter_folds", counted)
    for dt, kind, nd, form, w, positions, upd_rows in _cases(seed, 400, dtypes, only):
        slow = _apply(w, positions, upd_rows, kind, nd, form, rounds=False)
        fast = _apply(w, positions, upd_rows, kind, nd, form, rounds=True)
        assert _same(slow, fast), (dt, kind, form, positions, w, upd_rows, slow, fast)
        applied = sum(p is not None for p in positions)
        checked["rounds"] += applied >= state.ROUND_MIN_ROWS
        if not isinstance(slow, tuple) and dt in FLOATS:
            checked["nan rows"] += bool(np.isnan(slow.astype(np.float64)).any())
    # (the draws reach the block path, its rows redone for a NaN, the folds)
    assert checked["rounds"] > 100 and checked["nan rows"] > 20, checked
    assert checked["folded"] > (200 if only else 10), checked


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["Add", "Sub"])
def test_a_fold_through_a_subnormal_or_a_nan_is_applied_one_update_at_a_time(dt, kind):
    """A running value that passes through the subnormals is flushed to
    zero at that step by the CPU runtime (the fold would keep it); one that
    becomes NaN takes the kernel's NaN bits: both are applied one update at
    a time (`_scatter_folds`), and the row differs from the plain fold's."""
    d = DTYPES[dt]
    tiny = np.finfo(d).tiny
    sign = 1 if kind == "Add" else -1
    w = np.array([[1.5 * tiny, 1.0], [2.0, np.inf]], d)
    steps = [[-1.0 * tiny, 0.0], [tiny, 0.0], [0.0, 0.0], [0.0, -np.inf]]
    upd = np.array([[sign * x for x in row] for row in steps * 2], d)
    positions = [0] * 4 + [1] * 4
    with np.errstate(all="ignore"):
        fast = state._scatter_rows(w, positions, upd, kind, 0, rounds=True)
        slow = state._scatter_rows(w, positions, upd, kind, 0, rounds=False)
        plain = (np.add if kind == "Add" else np.subtract).accumulate(
            np.concatenate([w[None, 0], upd[:4]]), axis=0)[-1]
    assert fast.tobytes() == slow.tobytes()
    assert slow[0, 0] == tiny and plain[0] == 1.5 * tiny   # (flushed at the second step)
    assert np.isnan(slow[1, 1])


def test_a_round_of_distinct_rows_is_one_block_with_duplicates_in_order():
    """Sub is not commutative across duplicates applied in order: three
    updates to row 0 among updates to other rows."""
    w = np.array([[10.0, 20.0], [1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]], np.float32)
    positions = [0, 1, 0, 2, 3, 4, 0, 1]
    upd = np.arange(16, dtype=np.float32).reshape(8, 2)
    slow = state._scatter_rows(w, positions, upd, "Div", 0, rounds=False)
    fast = state._scatter_rows(w, positions, upd + 1, "Div", 0, rounds=True)
    ref = state._scatter_rows(w, positions, upd + 1, "Div", 0, rounds=False)
    assert fast.tobytes() == ref.tobytes() and not np.array_equal(slow, ref)
    want = w.copy()
    for i, p in enumerate(positions):
        want[p] = want[p] / (upd[i] + 1)
    assert fast.tobytes() == want.tobytes()


def test_the_trap_of_integer_division_is_raised_by_the_block_as_by_the_row():
    w = np.array([np.iinfo(np.int32).min, 4, 6, 8, 10], np.int32)
    upd = np.array([2, 2, 2, 2, -1], np.int32)
    for rounds in (False, True):
        with pytest.raises(CannotRunHere, match="lowest int32"):
            state._scatter_rows(w, [1, 2, 3, 4, 0], upd, "Div", 0, rounds=rounds)
