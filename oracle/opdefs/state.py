"""The state family: resource variables and TensorFlow's stateful training ops.

Every facet of each op is defined here, in one place (docs/writing-an-op-model.md):
its import (the `OpDef`'s `build`: the tfsem nodes graph import makes of it),
the value semantics of the functions those nodes apply, their encoding (none:
every function of this family is uninterpreted in proofs) and their export,
and its effect on state (`stateful`).  docs/stateful-ops.md argues each model.

* **Variables.**  `VarHandleOp` is a Var node; `ReadVariableOp` a Read;
  `AssignVariableOp` an Assign-Snd (a Write; with validate_shape=true
  Assign-SndSameShape, which fails where an initialized variable's shape is
  not the value's); `AssignAddVariableOp`/`AssignSubVariableOp` Assign-Add and
  Assign-Sub; `VariableShape` a Read, then Shape; `VarIsInitializedOp` a Read
  followed by `IsInitialized`, the one function that looks at an error value
  instead of passing it on.
* **Slices of a variable.**  `ResourceGather`/`ResourceGatherNd` are a Read
  followed by the pure functions `GatherV2`/`GatherNd`.
  `ResourceScatter{Add,Sub,Mul,Div,Min,Max,Update}` and
  `ResourceScatterNd{Add,Sub,Min,Max,Update}` are one Assign-f: their indices
  and updates are packed into one tensor by `PackScatter` (an injective
  encoding as bytes, so that the assign function stays binary, SPEC section
  1), and the assign function `Scatter<Kind>` / `ScatterNd<Kind>` applies the
  rows in index order, as TensorFlow's CPU kernel does (duplicates apply one
  after another; an index out of range stops ResourceScatter* after the rows
  before it, which stay applied, and ResourceScatterNd* passes over it --
  measured on TensorFlow 2.21).  `ResourceStridedSliceAssign` likewise packs
  its operands with `PackSlice`.
* **Optimizer updates** (`ResourceApply*`, `ResourceSparseApply*`): each is a
  function of the variables' values and the op's other inputs to the
  variables' new values, `OPTIMIZERS[op].fn`.  The import builds a Read of
  each variable, the function, and a Write of each new value, and graph
  import refuses the graph when another node may access one of those
  variables while the update runs (then the several Reads and Writes would
  differ from TensorFlow's one kernel; oracle/state_ops.racing_access).  Where
  numpy computes TensorFlow's kernel bit for bit (+, -, *, /, sqrt, max, with
  the CPU runtime's flushing of subnormals) the function is tfsem's own; the
  kernels with Eigen's `rsqrt`, `pow` or `exp` (Adagrad, Adadelta,
  ProximalAdagrad, Ftrl with lr_power != -0.5, PowerSign, the sparse forms)
  are evaluated by TensorFlow's own kernel when TensorFlow is installed (and
  are uninterpreted in proofs either way).
* Reference variables (`VariableV2`, `Assign`, `Apply*`, ...) are refused by
  name, with the reason.

Export (graphdef/exporter.py `_state_roles`) writes a group of nodes in the
shape the import builds back as the op, reading this module's tables:
:data:`ASSIGN_OPS` (an Assign-f's op), :data:`PACKED_ASSIGNS` (an Assign-f
of a packed operand's op), :data:`STACKED_ASSIGNS` (GradientStep's),
:data:`OPTIMIZERS` and the float32 models' :data:`FLOAT32_MODEL_ANCHORS` and
:data:`FLOAT32_MODEL_UPDATES`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import functions as fns
from ..functions import (TENSORFLOW, CannotRun, CannotRunHere, OpError, ShapeError, ftz)
from ..program import ControlIn, DataIn
from ..values import FLOAT_DTYPES, Tensor, dtype_name
from .registry import OpDef, define, flushed, index_dtype, kernels_are_functions, refuse

FAMILY = "state"

# ---------------------------------------------------------------------------
# Slices: ResourceGatherNd's function, the scatter packing and assign functions


def _index_array(a, what: str) -> np.ndarray:
    if a.dtype.name not in ("int32", "int64"):
        raise OpError("no-kernel", f"{what} must be int32 or int64, not {a.dtype.name}")
    return np.asarray(a, dtype=np.int64)


def _on_host(impl):
    """`impl` on numpy arrays whatever the array module: a device module
    (cupy) gets its arrays back from numpy (these functions index rows one
    by one, on the host, as opdefs/array.py's shape functions do)."""
    def wrapped(xp, args, attrs):
        if xp is np:
            return impl(np, args, attrs)
        host = tuple(a if a is None or isinstance(a, np.ndarray) else a.get() for a in args)
        return tuple(xp.asarray(r) for r in impl(np, host, attrs))
    wrapped.__doc__ = impl.__doc__
    return wrapped


def _tf_fn(name: str, n_in: int, n_out: int = 1, **kw: Any):
    register = fns.function(name, n_in, n_out, batched=False, family=TENSORFLOW, **kw)

    def deco(impl):
        register(_on_host(impl))
        return impl
    return deco


def _export_gather_nd(e) -> list:
    """TensorFlow's GatherNd on the same inputs."""
    return [{"name": e.name, "op": "GatherNd", "input": e.data + e.ctrl,
             "attr": {"Tparams": e.T(0), "Tindices": e.T(1)}}]


@_tf_fn("GatherNd", 2, casts=True, mixed_dtypes=True, export=_export_gather_nd)
def _gather_nd(xp, args, attrs):
    """params[indices[..., :K]] for the last axis K of indices (TensorFlow's
    GatherNd on CPU: an index out of range fails)."""
    params, indices = (np.asarray(a) for a in args)
    idx = _index_array(indices, "indices")
    if idx.ndim < 1:
        raise ShapeError("GatherNd: indices must be at least 1-D")
    k = idx.shape[-1]
    if k > params.ndim:
        raise ShapeError("GatherNd: index depth exceeds the rank of params")
    if k == 0:   # every index tuple is empty: the whole of params each time
        n = int(np.prod(idx.shape[:-1], dtype=np.int64))
        out = np.broadcast_to(params, (n,) + params.shape).copy()
        return (out.reshape(idx.shape[:-1] + params.shape),)
    flat = idx.reshape(-1, k)
    prefix = params.shape[:k]
    for row in flat:
        if any(not 0 <= int(i) < d for i, d in zip(row, prefix)):
            raise ShapeError(f"GatherNd: index {row.tolist()} does not index into {list(params.shape)}")
    out = np.stack([params[tuple(int(i) for i in row)] for row in flat]) if len(flat) else \
        np.zeros((0,) + params.shape[k:], params.dtype)
    return (out.reshape(idx.shape[:-1] + params.shape[k:]),)


# PackScatter's bytes: a header of int64 words (little-endian) -- the rank and
# shape of the indices, the rank and shape of the updates, the updates' dtype
# code -- then the indices as int64, then the updates' raw bytes.  It is
# injective (unpacked exactly by _unpack), so an Assign-f of a packed operand
# is the binary assign function the language has (SPEC section 1).
_DTYPE_CODES = {name: k for k, name in enumerate(sorted(
    ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float16", "bfloat16", "float32", "float64")))}
_CODE_DTYPES = {k: name for name, k in _DTYPE_CODES.items()}


@_tf_fn("PackScatter", 2, casts=True, mixed_dtypes=True)
def _pack_scatter(xp, args, attrs):
    """The indices and updates of a scatter as one uint8 tensor (an injective
    encoding: the operand of Assign-Scatter*, which unpacks it)."""
    indices, updates = (np.asarray(a) for a in args)
    idx = _index_array(indices, "indices")
    header = [idx.ndim, *idx.shape, updates.ndim, *updates.shape,
              _DTYPE_CODES[dtype_name(updates.dtype)]]
    parts = [np.asarray(header, dtype="<i8").tobytes(), idx.astype("<i8").tobytes(),
             np.ascontiguousarray(updates).tobytes()]
    return (np.frombuffer(b"".join(parts), dtype=np.uint8).copy(),)


def _unpack(packed, w) -> tuple[np.ndarray, np.ndarray]:
    """(indices as int64, updates) from PackScatter's bytes; the updates must
    have the variable's dtype."""
    raw = np.asarray(packed)
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise ShapeError("the operand of a scatter must come from PackScatter")
    b = raw.tobytes()
    words = np.frombuffer(b[:8 * (len(b) // 8)], dtype="<i8")
    k = 0

    def take(n):
        nonlocal k
        out = [int(x) for x in words[k:k + n]]
        k += n
        return out
    (ri,) = take(1)
    ishape = tuple(take(ri))
    (ru,) = take(1)
    ushape = tuple(take(ru))
    (code,) = take(1)
    n_idx = int(np.prod(ishape, dtype=np.int64))
    idx = np.frombuffer(b, dtype="<i8", count=n_idx, offset=8 * k).astype(np.int64)
    dt = _CODE_DTYPES[code]
    if dt != dtype_name(w.dtype):
        raise OpError("dtype-mismatch", "the updates' dtype is not the variable's")
    upd = np.frombuffer(b, dtype=w.dtype, offset=8 * (k + n_idx)).reshape(ushape)
    return idx.reshape(ishape), upd


#: TensorFlow's CPU scatter kernel applies 1024 or more indices in parallel
#: (scatter_functor.h, unless op determinism is on): rows of duplicate
#: indices are then combined in an order that may vary, and an index out of
#: range leaves an unpredictable set of rows applied.
PARALLEL_SCATTER = 1024


# -- the bits of a NaN a scatter makes -------------------------------------------
#
# A scatter applies its update to a row (ResourceScatter*: the row of the
# variable at the index; ResourceScatterNd*: the slice at the index tuple)
# with Eigen expressions of its own (scatter_functor.h, scatter_nd_op), not
# the arithmetic ops' kernels, so the NaN a row gets follows its own rule.
# Measured on TensorFlow 2.21's CPU kernels, every float dtype, rows of 1 to
# 40 elements (and 48 to 129 on float32 and float64), vector and scalar
# updates, NaNs of both signs, quiet and signalling, with payloads
# (tests/test_scatter_nan_bits.py compares the model with the kernels):
#
# * Add, Sub, Mul, Div, vector update (ResourceScatter*, ResourceScatterNd*):
#   functions.nan_bits of (row, update): the row's NaN quieted, else the
#   update's, an invalid operation the default NaN; bfloat16 computes in
#   float32 and gives 0x7fc0 in whole packets of 8 elements of the row, the
#   signed canonical NaN in the tail.  Except on float64 Add and Mul of
#   ResourceScatter* (not ScatterNd, whose kernel runs on the thread-pool
#   device): in Eigen's unrolled loop (the row's first n // 16 * 16
#   elements, four packets of 4 at a time) the first packet of each 16
#   (places i % 16 < 4) takes the update's NaN where both are NaN.
# * Scalar update (ResourceScatter* with updates of rank 0): Add and Mul are
#   computed as update op row (the update's NaN first, every place, every
#   dtype), Sub as (-update) + row (scatter_functor.h's RunScalar: the
#   update's NaN with its sign flipped first), Div as row / update.
# * Min and Max (Eigen's cwiseMin/cwiseMax: a NaN update never wins, a NaN
#   row stays): float32 and float64 keep the row's NaN bit for bit; float16
#   and bfloat16 convert whole packets of 8 (the row's first n // 8 * 8
#   elements) to float32 and back, where a float16 NaN is quieted and a
#   bfloat16 NaN becomes 0x7fc0; the tail keeps the row's bits.
#
# Update copies bits.  Values other than NaN are numpy's (IEEE-exact, with
# the CPU runtime's flushing) and agreed with the kernels everywhere.

_SIGN_BIT = {"float16": 0x8000, "bfloat16": 0x8000, "float32": 1 << 31, "float64": 1 << 63}


def _negated(u):
    """`u` with its sign bit flipped (a NaN's too), bit for bit."""
    u = np.asarray(u)
    t = fns._UINT[u.dtype.itemsize]
    return (u.view(t) ^ t(_SIGN_BIT[dtype_name(u.dtype)])).view(u.dtype)


def _scatter_nan_bits(kind: str, form: str, r, p, u):
    """`r`, the row `p` after `kind` with update `u` (flushed operands), with
    its NaN elements given TensorFlow's bits (see above); `form`: "rows"
    (ResourceScatter*, vector update), "scalar" (ResourceScatter*, an update
    of rank 0) or "nd" (ResourceScatterNd*)."""
    name = dtype_name(r.dtype)
    if name not in FLOAT_DTYPES or not fns._has_nan(np, r):
        return r
    n = r.size
    place = np.arange(n).reshape(r.shape)
    if kind in ("Min", "Max"):
        if name not in ("float16", "bfloat16"):
            return r
        t = fns._UINT[2]
        packed = np.isnan(r) & (place < n // 8 * 8)
        bits = (r.view(t) | t(0x200)) if name == "float16" else np.full(r.shape, 0x7fc0, t)
        return np.where(packed, bits.view(r.dtype), r)
    if form == "scalar" and kind in ("Add", "Mul", "Sub"):
        return fns.nan_bits(np, r, _negated(u) if kind == "Sub" else u, p)
    out = fns.nan_bits(np, r, p, u)
    if form == "rows" and name == "float64" and kind in ("Add", "Mul") and n >= 16:
        swapped = fns.nan_bits(np, r, u, p)
        out = np.where((place < n // 16 * 16) & (place % 16 < 4), swapped, out)
    return out


def _bfloat16_tail(r, wins, winner, other):
    """`r`, a bfloat16 cwiseMin/cwiseMax computed on flushed operands, as
    the kernels give it: compared as float32 (denormals-are-zero), in whole
    packets of 8 (the first n // 8 * 8 elements) the winner is the float32
    operand, a subnormal flushed to a zero of its sign; in the tail
    (std::min/std::max on bfloat16) the winner's own bits (`winner` where
    `wins`, else `other`), a subnormal too (measured).  Other dtypes: `r`."""
    if dtype_name(r.dtype) != "bfloat16":
        return r
    tail = np.arange(r.size).reshape(r.shape) >= r.size // 8 * 8
    return np.where(tail, np.where(wins, winner, other), r)


def _row_op(kind: str, form: str = "rows", nan_places: bool = True) -> Callable:
    """The update TensorFlow's scatter applies to one row, as a function of
    (row, update) arrays of one dtype (`form`: _scatter_nan_bits's); floats
    flush subnormals as the CPU runtime does (functions.FLUSHED_DTYPES) and
    a NaN's bits are the kernel's (_scatter_nan_bits).

    `nan_places` False: the NaN bits left as numpy gives them
    (_scatter_nan_bits not applied), and no bfloat16 tail (_bfloat16_tail):
    the two steps that depend on an element's place within its row.  What
    is left is element by element, so it may be given a block of rows at
    once (`_scatter_rounds`, which redoes with the whole rule every row
    whose result holds a NaN, and never uses it for Min/Max of
    float16/bfloat16)."""
    if kind == "Update":
        return lambda p, u: np.broadcast_to(u, p.shape).copy()
    if kind in ("Min", "Max"):
        # Eigen's cwiseMin/cwiseMax (std::min/std::max: the row's own value
        # unless the update is strictly smaller/larger: a NaN update never
        # wins, a NaN in the row stays), on flushed operands; not TensorFlow's
        # Minimum/Maximum, which propagate NaN (measured on TensorFlow 2.21)
        def extremum(p, u):
            u = np.broadcast_to(u, p.shape)
            fp, fu = ftz(np, p), ftz(np, u)
            wins = (fu < fp) if kind == "Min" else (fu > fp)
            if not nan_places:
                return np.where(wins, fu, fp)
            r = _bfloat16_tail(np.where(wins, fu, fp), wins, u, p)
            return _scatter_nan_bits(kind, form, r, fp, fu)
        return extremum
    name = {"Add": "Add", "Sub": "Sub", "Mul": "Mul", "Div": "RealDiv"}[kind]

    def apply(p, u):
        # (a row of a vector is a numpy scalar: an array of rank 0 here, so
        # that its integer division below reshapes it as any row)
        p = np.asarray(p)
        if kind == "Div" and p.dtype.kind in "iu":
            # integer division in C++: truncation toward zero; int32 and
            # int64 MIN / -1 trap (SIGFPE: TensorFlow's process dies,
            # measured), the narrower ones are promoted to int and wrap
            if p.dtype.name in ("int32", "int64") and np.any(
                    (p == np.iinfo(p.dtype).min) & (np.broadcast_to(u, p.shape) == -1)):
                raise CannotRunHere(f"cannot run ScatterDiv of the lowest {p.dtype.name} by -1: "
                                    "TensorFlow's kernel traps (SIGFPE) and its process dies")
            a = p.astype(object).reshape(-1)
            b = np.broadcast_to(u, p.shape).astype(object).reshape(-1)
            r = [abs(int(x)) // abs(int(y)) * (1 if (int(x) < 0) == (int(y) < 0) else -1)
                 for x, y in zip(a, b)]
            return np.array([x % (1 << 64) for x in r], dtype=np.uint64).astype(p.dtype) \
                .reshape(p.shape)
        if dtype_name(p.dtype) not in FLOAT_DTYPES:
            with np.errstate(all="ignore"):
                (r,) = fns.get(name).impl(np, (p, np.broadcast_to(u, p.shape)), {})
            return np.asarray(r, dtype=p.dtype)
        fp, fu = ftz(np, p), ftz(np, np.asarray(u))
        if name in ("Mul", "RealDiv"):
            # (a product or quotient rounded up to the smallest normal is
            # flushed too: functions.flushed_arithmetic)
            r = fns.flushed_arithmetic(name, fp, np.broadcast_to(fu, p.shape))
        else:
            with np.errstate(all="ignore"):
                r = getattr(np, "add" if name == "Add" else "subtract")(fp, fu)
        r = ftz(np, np.asarray(r, dtype=p.dtype))
        return _scatter_nan_bits(kind, form, r, fp, fu) if nan_places else r
    return apply


def _scatter_rows(w, positions, upd_rows, kind: str, n_checked: int, skip_bad: bool = False,
                  form: str = "rows", rounds: bool = True):
    """Apply upd_rows[i] to the row at positions[i] (None: out of range), in
    order; stop at the first position out of range (the rows before it stay
    applied, as TensorFlow's CPU scatter kernel leaves them), or with
    `skip_bad` pass over it (the ScatterNd kernel applies every other row:
    both measured on TensorFlow 2.21).  `form`: _scatter_nan_bits's.
    `rounds`: rows applied a block at a time where that gives the same
    variable (`_scatter_rounds`; False: one row at a time, the reference
    tests/test_scatter_rounds.py compares it with)."""
    out = np.array(w, copy=True)
    op = _row_op(kind, form)
    bad = next((i for i, pos in enumerate(positions) if pos is None), None)
    if n_checked >= PARALLEL_SCATTER:
        distinct = len({p for p in positions if p is not None})
        if bad is not None or distinct < len(positions):
            raise CannotRunHere(f"cannot run a scatter of {n_checked} indices with duplicates or "
                                "an index out of range concretely: TensorFlow's CPU kernel "
                                f"applies {PARALLEL_SCATTER} or more indices in parallel, in an "
                                "order that varies")
    applied = [(i, pos) for i, pos in enumerate(positions) if pos is not None] if skip_bad \
        else list(enumerate(positions if bad is None else positions[:bad]))
    if rounds and len(applied) >= ROUND_MIN_ROWS and not (
            kind in ("Min", "Max") and dtype_name(out.dtype) in ("float16", "bfloat16")):
        _scatter_rounds(out, applied, upd_rows, kind, form, op)
        return out
    for i, pos in applied:
        out[pos] = op(out[pos], upd_rows[i])
    return out


#: `_scatter_folds` folds the updates of a position that occurs at least
#: this many times in one numpy accumulation.
FOLD_MIN_ROWS = 4

#: ... and accumulates at most this many elements at a time (a chunk of a
#: position's updates; a row of more than a quarter of it is not folded).
#: Unbounded, a scalar update repeated k times on a row of R elements was
#: k * R elements broadcast, several times over (1,000 updates of a row of
#: 50,000 float32: 500 MB and 4 times one row at a time's time, where that
#: took 1 MB; a row of 4 million, past the machine's memory).
FOLD_ELEMENTS = 1 << 16


def _scatter_folds(out, applied, upd_rows, kind: str, scalar: bool) -> list:
    """Add or Sub of float32/float64 rows (`_scatter_rounds`' `applied`,
    `upd_rows`): each position with FOLD_MIN_ROWS occurrences or more gets
    its updates in one `np.add.accumulate` / `np.subtract.accumulate` along
    them, from its row, where that gives what one row at a time gives;
    returns the applications left (the other positions', and those of a
    position whose fold did not hold).

    Why: one row at a time, the k-th update of a position makes
    r_k = ftz(nan_bits(ftz(r_{k-1}) op ftz(u_k))) (`_row_op`).  The
    accumulation computes a_0 = ftz(row), a_k = a_{k-1} op ftz(u_k), each
    step one IEEE operation in the dtype (numpy's accumulate is a left fold
    element by element, the same ufunc loop as one row's `np.add` /
    `np.subtract`, no wider accumulator).  Where no a_k (k >= 1) is a NaN
    or a subnormal, ftz and the NaN rule leave every a_k as it is, so
    r_k = a_k by induction (r_0 = row, ftz(r_0) = a_0), and the last a_k is
    the row's value.  Where one is, the position is applied one update at a
    time as before (the NaN's bits, a flushed subnormal).  Positions are
    independent (`_scatter_rounds`), so folding some of them first changes
    nothing for the others.  tests/test_scatter_rounds.py compares this
    with one row at a time.

    The accumulation goes a chunk of updates at a time (FOLD_ELEMENTS),
    each chunk's from the last a_k of the one before: the same steps
    a_k = a_{k-1} op ftz(u_k) in the same order, so the same a_k, each
    checked as before, and the row written only once every chunk held."""
    occurrences: dict = {}
    for i, pos in applied:
        occurrences.setdefault(pos, []).append(i)
    folded = set()
    tiny = np.finfo(out.dtype).tiny
    step = np.add if kind == "Add" else np.subtract
    for pos, rows in occurrences.items():
        if len(rows) < FOLD_MIN_ROWS:
            continue
        last = ftz(np, np.asarray(out[pos]))
        per = FOLD_ELEMENTS // max(1, last.size)
        if per < FOLD_MIN_ROWS:
            continue
        held = True
        for c in range(0, len(rows), per):
            part = rows[c:c + per]
            updates = ftz(np, np.broadcast_to(np.asarray(upd_rows[part[0]]), (len(part),) + last.shape)
                          if scalar else np.asarray(upd_rows)[np.array(part, dtype=np.intp)])
            with np.errstate(all="ignore"):
                acc = step.accumulate(np.concatenate([last[None], updates]), axis=0)[1:]
                magnitude = np.abs(acc)
                if np.isnan(acc).any() or ((magnitude < tiny) & (magnitude > 0)).any():
                    held = False
                    break
            last = acc[-1]
        if not held:
            continue
        out[pos] = last
        folded.add(pos)
    return applied if not folded else [(i, pos) for i, pos in applied if pos not in folded]


#: `_scatter_rows` applies its rows in rounds where at least this many are
#: applied (fewer: one at a time, as cheap), and a round of fewer rows than
#: this one row at a time.
ROUND_MIN_ROWS = 4


def _scatter_rounds(out, applied, upd_rows, kind: str, form: str, op: Callable) -> None:
    """The rows `applied` ((i, position) in order: upd_rows[i] applied to the
    row at position) applied to `out` in place, a round at a time: round r
    holds the r-th occurrence of each position among them.

    Why the variable is the one row-by-row application in order gives:
    applying an update to a row reads and writes that row only (`_row_op`:
    the row and the update in, the new row out), so applications to
    different rows commute, and those to one row keep their order (its r-th
    occurrence is in round r, and the rounds run in order).  Within a round
    the positions are distinct, and the rows are computed together by
    `_row_op(..., nan_places=False)`, whose every step is element by element
    (flushing, the arithmetic, the rounding up to the smallest normal, the
    integer division's truncation, Min/Max's comparison), so each element of
    the block is what that row's own application gives it, except where the
    rule depends on the element's place within its row: the NaN bits
    (_scatter_nan_bits, functions.nan_bits: packets, Eigen's unrolled loop)
    and bfloat16 Min/Max's tail.  A row of the block whose result holds a
    NaN is therefore applied again alone by `op` (the whole rule) from its
    value before the round; Min/Max of float16 and bfloat16 never come here
    (`_scatter_rows`).  `_row_op`'s own failures (integer ScatterDiv of the
    lowest value by -1) are raised by a block as by the row in it, and
    leave no partial variable to anyone (`out` is the scatter's own copy).
    tests/test_scatter_rounds.py compares this with one row at a time over
    every kind, form and dtype, NaNs, signed zeros, subnormals, duplicates
    and indices out of range."""
    plain = _row_op(kind, form, nan_places=False)
    scalar = form == "scalar"
    if kind in ("Add", "Sub") and out.dtype in (np.float32, np.float64):
        applied = _scatter_folds(out, applied, upd_rows, kind, scalar)
    taken: dict = {}
    by_round: list[list[tuple[int, Any]]] = []
    for i, pos in applied:
        r = taken.get(pos, 0)
        taken[pos] = r + 1
        if r == len(by_round):
            by_round.append([])
        by_round[r].append((i, pos))
    for members in by_round:
        if len(members) < ROUND_MIN_ROWS:
            for i, pos in members:
                out[pos] = op(out[pos], upd_rows[i])
            continue
        places = [pos for _, pos in members]
        where = tuple(np.array(c, dtype=np.intp) for c in zip(*places)) \
            if isinstance(places[0], tuple) else np.array(places, dtype=np.intp)
        before = out[where]
        u = upd_rows[members[0][0]] if scalar else \
            np.asarray(upd_rows)[np.array([i for i, _ in members], dtype=np.intp)]
        block = np.asarray(plain(before, u), dtype=out.dtype)
        if dtype_name(out.dtype) in FLOAT_DTYPES:
            nan = np.isnan(block.astype(np.float32) if dtype_name(block.dtype) == "bfloat16"
                           else block)
            if nan.any():
                block = np.array(block, copy=True)
                for j in np.flatnonzero(nan.reshape(len(members), -1).any(axis=1)):
                    block[j] = op(before[j], u if scalar else u[j])
        out[where] = block


def _scatter(kind: str):
    def impl(xp, args, attrs):
        w, packed = args
        w = np.asarray(w)
        if w.ndim < 1:
            raise ShapeError("a scatter needs a variable of rank >= 1")
        idx, upd = _unpack(packed, w)
        n = idx.size
        row = w.shape[1:]
        form = "rows"
        if upd.ndim == 0:
            # (each row gets the one update as a scalar: RunScalar's form,
            # which the kernel tests for first: a scalar update on a scalar
            # index of a vector, whose shape is also indices.shape + row,
            # passes its NaN as the scalar form does)
            rows, form = [upd] * n, "scalar"
        elif upd.shape == idx.shape + row:
            rows = upd.reshape((n,) + row)
        else:
            raise ShapeError("updates.shape must be indices.shape + params.shape[1:] or []")
        if kind == "Div" and np.any(ftz(np, upd) == 0):
            # checked before any row is touched, a subnormal float counting
            # as zero (the CPU runtime's flushing): nothing applied
            raise OpError("division-by-zero", "ScatterDiv: updates must not contain 0")
        flat = idx.reshape(-1)
        positions = [int(i) if 0 <= i < w.shape[0] else None for i in flat]
        return (_scatter_rows(w, positions, rows, kind, n, form=form),)
    impl.__doc__ = (f"Assign-Scatter{kind}: the rows of the variable at the packed indices "
                    f"{'replaced by' if kind == 'Update' else kind + ' with'} the packed updates, "
                    "in index order (TensorFlow's ResourceScatter" + kind + " on CPU)")
    return impl


def _scatter_nd(kind: str):
    def impl(xp, args, attrs):
        w, packed = args
        w = np.asarray(w)
        idx, upd = _unpack(packed, w)
        if idx.ndim < 1:
            raise ShapeError("ScatterNd: indices must be at least 1-D")
        if idx.ndim == 1:
            # (TensorFlow's graph construction reads indices [k] as one
            # index of depth k, updates of shape params.shape[k:]; its
            # kernel reads them as k indices of depth 1 (scatter_nd_op.cc:
            # slice_dim 1 where indices has rank 1) and fails unless the
            # updates are [k] + params.shape[1:], which no graph TensorFlow
            # builds has: the kernel's failure.  Updates of that shape are
            # refused: what the kernel does with them was not measured)
            if upd.shape != (idx.shape[0],) + w.shape[1:]:
                raise ShapeError(
                    f"ScatterNd: indices of rank 1 are {idx.shape[0]} indices of depth 1 to "
                    f"TensorFlow's kernel: updates of shape {list(upd.shape)} are not "
                    f"{[idx.shape[0]] + list(w.shape[1:])} (the kernel fails)")
            raise CannotRunHere(f"cannot run ScatterNd{kind} with indices of rank 1 and updates "
                                "of shape indices.shape + params.shape[1:] concretely: what "
                                "TensorFlow's kernel does with them is not modelled")
        k = idx.shape[-1]
        if k > w.ndim:
            raise ShapeError("ScatterNd: index depth exceeds the variable's rank")
        if not 1 <= k <= SCATTER_ND_MAX_DEPTH:
            # TensorFlow's CPU kernel has cases for index depths 1 to 7 only
            # and fails on any other before touching the variable (measured
            # on TensorFlow 2.21: depth 0 "Indices and updates specified for
            # empty output" where there are updates, "Only indices.shape[-1]
            # values between 1 and 5 are currently supported" where there
            # are none and at depth 8; depths 6 and 7 run).  Read on, depth
            # 0 made every index tuple () and applied each update to the
            # whole variable.  A failed Assign leaves the variable unchanged.
            raise ShapeError(f"ScatterNd: index depth {k}: TensorFlow's kernel takes depths 1 "
                             f"to {SCATTER_ND_MAX_DEPTH}")
        lead = idx.shape[:-1]
        n = int(np.prod(lead, dtype=np.int64))
        slice_shape = w.shape[k:]
        if upd.shape != lead + slice_shape:
            raise ShapeError("ScatterNd: updates.shape must be indices.shape[:-1] + "
                             "params.shape[K:]")
        prefix = w.shape[:k]
        positions = []
        for r in idx.reshape(n, k):
            ok = all(0 <= int(i) < d for i, d in zip(r, prefix))
            positions.append(tuple(int(i) for i in r) if ok else None)
        # ScatterNd's CPU kernel is serial (scatter_nd_op_cpu_impl.h)
        return (_scatter_rows(w, positions, upd.reshape((n,) + slice_shape), kind, 0,
                              skip_bad=True, form="nd"),)
    impl.__doc__ = (f"Assign-ScatterNd{kind}: the slices of the variable at the packed "
                    "index tuples updated in order (TensorFlow's ResourceScatterNd" + kind + ")")
    return impl


#: The index depths TensorFlow's CPU ScatterNd kernels take (1 to 7).
SCATTER_ND_MAX_DEPTH = 7

SCATTER_KINDS = ("Add", "Sub", "Mul", "Div", "Min", "Max", "Update")
SCATTER_ND_KINDS = ("Add", "Sub", "Min", "Max", "Update")

for _kind in SCATTER_KINDS:
    _tf_fn(f"Scatter{_kind}", 2, mixed_dtypes=True, pure=False)(_scatter(_kind))
    fns.NOT_BROADCASTING.add(f"Scatter{_kind}")
for _kind in SCATTER_ND_KINDS:
    _tf_fn(f"ScatterNd{_kind}", 2, mixed_dtypes=True, pure=False)(_scatter_nd(_kind))
    fns.NOT_BROADCASTING.add(f"ScatterNd{_kind}")
fns.NOT_BROADCASTING.add("PackScatter")


# ResourceStridedSliceAssign: PackSlice's bytes (int64 words: the five masks,
# then per array its dtype code, rank and shape; then the arrays' bytes) hold
# begin, end, strides and the value; Assign-StridedSliceAssign unpacks them.
SLICE_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


@_tf_fn("PackSlice", 4, casts=True, mixed_dtypes=True,
        attrs={m: fns._int_attr for m in SLICE_MASKS})
def _pack_slice(xp, args, attrs):
    """begin, end, strides (int32/int64) and the value of a strided-slice
    assignment, with its five masks, as one uint8 tensor (an injective
    encoding: the operand of Assign-StridedSliceAssign)."""
    arrays = [np.asarray(a) for a in args]
    header = [attrs.get(m, 0) for m in SLICE_MASKS]
    for a in arrays:
        header += [_DTYPE_CODES[dtype_name(a.dtype)], a.ndim, *a.shape]
    raw = np.asarray(header, dtype="<i8").tobytes() + b"".join(
        np.ascontiguousarray(a).tobytes() for a in arrays)
    return (np.frombuffer(raw, dtype=np.uint8).copy(),)


def _unpack_slice(packed):
    from ..values import DTYPES
    b = np.asarray(packed).tobytes()
    words = np.frombuffer(b[:8 * (len(b) // 8)], dtype="<i8")
    masks = {m: int(x) for m, x in zip(SLICE_MASKS, words[:5])}
    k, specs = 5, []
    for _ in range(4):
        code, rank = int(words[k]), int(words[k + 1])
        specs.append((np.dtype(DTYPES[_CODE_DTYPES[code]]), tuple(int(x) for x in
                                                                   words[k + 2:k + 2 + rank])))
        k += 2 + rank
    offset, arrays = 8 * k, []
    for dt, shape in specs:
        n = int(np.prod(shape, dtype=np.int64))
        arrays.append(np.frombuffer(b, dtype=dt, count=n, offset=offset).reshape(shape))
        offset += n * dt.itemsize
    return masks, arrays


@_tf_fn("StridedSliceAssign", 2, mixed_dtypes=True, pure=False)
def _strided_slice_assign(xp, args, attrs):
    """Assign-StridedSliceAssign: the region StridedSlice(begin, end, strides,
    masks) reads replaced by the value, broadcast to the region's shape
    (TensorFlow's ResourceStridedSliceAssign; a value that does not
    broadcast, or a bad slice, fails and changes nothing)."""
    from .array import _index, strided_slice_spec
    w = np.asarray(args[0])
    masks, (b, e, st, value) = _unpack_slice(args[1])
    if dtype_name(value.dtype) != dtype_name(w.dtype):
        raise OpError("dtype-mismatch", "the value's dtype is not the variable's")
    if not (b.dtype == e.dtype == st.dtype):
        raise ShapeError("StridedSliceAssign: begin, end, strides of different dtypes")
    begin, end, strides = (_index(x, n, rank=1) for x, n in ((b, "begin"), (e, "end"),
                                                              (st, "strides")))
    spec, final = strided_slice_spec(w.shape, begin, end, strides, masks)
    try:
        v = np.broadcast_to(value, tuple(final))
    except ValueError:
        raise ShapeError("StridedSliceAssign: the value does not broadcast to the slice") \
            from None
    out = np.array(w, copy=True)
    if out.ndim == 0:
        return (v.reshape(()).copy(),)
    index = np.ix_(*(np.arange(size, dtype=np.int64) * step + lo for lo, size, step in spec))
    out[index] = v.reshape([size for _, size, _ in spec])
    return (out,)


fns.NOT_BROADCASTING.update({"PackSlice", "StridedSliceAssign"})


@_tf_fn("IsInitialized", 1, casts=True, strict_args=(), pure=False)
def _is_initialized(xp, args, attrs):
    """Whether the variable's value (a Read's result) is a tensor: false for
    the error value `uninitialized` (TensorFlow's VarIsInitializedOp)."""
    return (np.array(args[0] is not None),)


@_tf_fn("SndSameShape", 2, strict_args=(1,))
def _snd_same_shape(xp, args, attrs):
    """Assign-SndSameShape: AssignVariableOp with validate_shape=true: the
    new value, which must have the shape of an initialized variable (else the
    op fails and the variable keeps its value)."""
    w, v = args
    if w is not None and tuple(w.shape) != tuple(v.shape):
        raise ShapeError("AssignVariableOp: the value's shape is not the variable's")
    return (v,)


# ---------------------------------------------------------------------------
# Optimizer updates


@dataclass(frozen=True)
class Optimizer:
    """A TensorFlow optimizer op: `variables` are its resource inputs (in
    order), `inputs` the names of its other inputs (in order), `fn` the
    function (registered here) from the variables' values and the other
    inputs to the variables' new values; `attrs` the boolean attributes the
    function takes, `exact` whether tfsem's own numpy model is the kernel's
    bit for bit (else TensorFlow's kernel evaluates it), `sparse` whether it
    takes `indices` (rows of the variables)."""

    op: str
    variables: tuple[str, ...]
    inputs: tuple[str, ...]
    doc: str
    attrs: tuple[str, ...] = ()
    exact: bool = True
    sparse: bool = False
    index_input: str | None = None   # sparse: name of the indices input

    @property
    def fn(self) -> str:
        return self.op.removeprefix("Resource")

    @property
    def n_in(self) -> int:
        return len(self.variables) + len(self.inputs)


OPTIMIZERS: dict[str, Optimizer] = {}

#: The dtypes an optimizer's numpy model is tested on against TensorFlow's kernel.
OPTIMIZER_DTYPES = ("float32", "float64")
#: dtype -> the optimizers TensorFlow 2.21 registers no CPU kernel of on it
#: (measured: the op fails to build)
_NO_KERNEL = {"bfloat16": ("ResourceApplyAdaMax",)}


# -- the bits of a NaN an optimizer's update makes --------------------------------
#
# Each ResourceApply* kernel is one fused Eigen expression per variable
# (training_ops.cc), whose every operation passes on a NaN operand as x86
# does: an operand's NaN quieted (a select, cwiseMax, keeps it as it is;
# abs clears its sign), an invalid operation the default NaN, and of two
# NaNs the first operand's (functions.nan_bits).  For - and / the first is
# the left operand; for + and * it is the compiler's choice, made anew in
# each kernel, each dtype and each of Eigen's code paths (the unrolled loop
# of 4 packets, the packets past it, the scalar tail).  Measured on
# TensorFlow 2.21's kernels with two NaNs of distinct payloads in each pair
# of operands, then on random NaNs, infinities, zeros and subnormals in
# every operand and hyperparameter (tests/test_optimizer_nan_bits.py; 1 to
# 139 elements):
#
# * the rule K below, "a tensor and a scalar (`grad * lr()`,
#   `accum * momentum()`): the scalar's NaN first; two tensors: the left
#   one's", with each kernel's exceptions written in its model (`slot += x`
#   taking x's NaN first in most kernels, `lr() * sqrt(...)` the square
#   root's, `... + epsilon()` placed by Eigen's loops: K.add_placed), gives
#   the kernel's bits for every (op, dtype, nesterov) in NAN_RULE_MEASURED:
#   every optimizer below on float32 and float64;
# * on float16 and bfloat16 it held for Keras Momentum and bfloat16
#   Momentum without Nesterov only.  Elsewhere a result that holds a NaN
#   cannot run (CannotRunHere: the σ is skipped); results without a NaN
#   run as before, their values the kernel's.

#: The optimizers with tfsem's own numpy model (OPTIMIZERS[op].exact).
_EXACT_OPS = ("ResourceApplyMomentum", "ResourceApplyKerasMomentum", "ResourceApplyAdam",
              "ResourceApplyAdamWithAmsgrad", "ResourceApplyAdaMax", "ResourceApplyRMSProp",
              "ResourceApplyCenteredRMSProp", "ResourceApplyAdagradV2")
#: (op, dtype, use_nesterov) whose NaN results are TensorFlow's bits.
NAN_RULE_MEASURED = frozenset(
    {(op, dt, nest) for op in _EXACT_OPS for dt in ("float32", "float64")
     for nest in (False, True)}
    | {("ResourceApplyMomentum", "bfloat16", False)}
    | {("ResourceApplyKerasMomentum", dt, nest) for dt in ("float16", "bfloat16")
       for nest in (False, True)})


def _ops(xp=np):
    """The CPU runtime's float arithmetic: every operation flushes subnormal
    arguments and results (functions.ftz); a NaN result gets the bits the
    kernels' fused expressions give (see above)."""
    f = (lambda a: ftz(np, np.asarray(a)))

    def order(a, b):
        """(first, second) of a commutative operation: a scalar against a
        tensor first (measured), else the left operand."""
        a, b = np.asarray(a), np.asarray(b)
        return (b, a) if b.ndim == 0 and a.ndim > 0 else (a, b)

    def nan_bits(r, a, b=None):
        return fns.nan_bits(np, np.asarray(r), f(a), None if b is None else f(b))

    def commuted(r, a, b):
        """nan_bits of + or *: of two NaNs, order(a, b)'s first."""
        r = np.asarray(r)
        if not fns._has_nan(np, r):
            return r
        return nan_bits(r, *order(a, b))

    class K:
        @staticmethod
        def add(a, b):
            return commuted(f(np.add(f(a), f(b))), a, b)

        @staticmethod
        def sub(a, b):
            return nan_bits(f(np.subtract(f(a), f(b))), a, b)

        # (a product or quotient rounded up to the smallest normal is flushed
        # too: functions.flushed_arithmetic)
        @staticmethod
        def mul(a, b):
            return commuted(fns.flushed_arithmetic("Mul", a, b), a, b)

        @staticmethod
        def div(a, b):
            return nan_bits(fns.flushed_arithmetic("RealDiv", a, b), a, b)

        @staticmethod
        def sqrt(a):
            return nan_bits(f(np.sqrt(f(a))), a)

        @staticmethod
        def square(a):
            return nan_bits(fns.flushed_arithmetic("Square", a), a, a)

        @staticmethod
        def add_placed(a, b, unrolled: tuple, packets: bool, tail: bool):
            """a + b where which NaN comes first depends on the place
            (measured per kernel): True takes the left operand's first,
            False the right one's; `unrolled`: for each of the 4 packets of
            every block of Eigen's unrolled loop (the first n // (4 P) * 4 P
            places, P = NAN_PACKET elements), `packets`: the whole packets
            past it, `tail`: the scalar tail."""
            r = commuted(f(np.add(f(a), f(b))), a, b)
            p = fns.NAN_PACKET.get(dtype_name(r.dtype))
            if p is None or not fns._has_nan(np, r):
                return r
            n = r.size
            place = np.arange(n)
            block = n // (4 * p) * (4 * p)
            left = np.where(place < block, np.asarray(unrolled)[place % (4 * p) // p],
                            np.where(place < n // p * p, packets, tail)).reshape(r.shape)
            return np.where(left, nan_bits(r, a, b), nan_bits(r, b, a))

        abs = staticmethod(lambda a: f(np.abs(f(a))))

        @staticmethod
        def max(a, b):
            """Eigen's cwiseMax (std::max: a unless b is strictly larger, so a
            NaN in b never wins), not TensorFlow's NaN-propagating Maximum;
            bfloat16 as the scatters' Max (_row_op): whole packets of 8
            compared and returned as flushed float32, the tail's winner
            keeping its bfloat16 bits."""
            raw_a, raw_b = np.asarray(a), np.broadcast_to(b, np.shape(a))
            a, b = f(raw_a), f(raw_b)
            return _bfloat16_tail(np.where(b > a, b, a), b > a, raw_b, raw_a)
    return K


def _refuse_unmeasured_nans(spec: "Optimizer", arrays, out, fattrs) -> None:
    """CannotRunHere where the model's result holds a NaN whose bits the
    kernel's were not measured to be (NAN_RULE_MEASURED)."""
    t = dtype_name(arrays[0].dtype)
    nesterov = bool(fattrs.get("use_nesterov", False))
    if (spec.op, t, nesterov) in NAN_RULE_MEASURED:
        return
    if any(fns._has_nan(np, np.asarray(o)) for o in out):
        raise CannotRunHere(
            f"cannot run {spec.op} on {t}{' with use_nesterov' if nesterov else ''} concretely "
            "where its result holds a NaN: which NaN (sign, payload) TensorFlow's fused kernel "
            "passes on there is not modelled")


def _optimizer(op: str, variables: str, inputs: str, doc: str, attrs: str = "",
               exact: bool = True):
    """Register optimizer `op` and (as decorator) its numpy model `model(K,
    vals, ins, attrs) -> new values` (K: the flushing arithmetic), or, with
    exact=False, TensorFlow's kernel as its concrete semantics."""
    ins = tuple(inputs.split())
    spec = Optimizer(op, tuple(variables.split()), ins, doc, tuple(attrs.split()), exact,
                     sparse="indices" in ins)
    OPTIMIZERS[op] = spec

    def deco(model):
        def impl(xp, args, fattrs):
            arrays = [np.asarray(a) for a in args]
            _check_dense(spec, arrays)
            if model is None:
                return _tf_kernel(spec, arrays, fattrs)
            nv = len(spec.variables)
            if spec.op in _NO_KERNEL.get(dtype_name(arrays[0].dtype), ()):
                raise OpError("no-kernel", f"{spec.op} has no kernel for "
                              f"{dtype_name(arrays[0].dtype)}")
            # (the dense kernels compute on the flat views of the variables
            # and the gradient (`var.flat<T>()`): a variable of shape [] is
            # a tensor of one element there, whose NaN meets a scalar
            # hyperparameter's as a tensor's does -- the model tells the two
            # apart by rank, `_ops().order`; the hyperparameters are scalars,
            # `_check_dense`)
            flat = arrays if spec.sparse else \
                [a.reshape(-1) if i < nv or spec.inputs[i - nv] == "grad" else a
                 for i, a in enumerate(arrays)]
            with np.errstate(all="ignore"):
                out = model(_ops(), flat[:nv], dict(zip(spec.inputs, flat[nv:])), fattrs)
            # (each variable keeps its own shape: `_UNCHECKED_SLOTS`)
            out = tuple(np.asarray(o, dtype=arrays[0].dtype).reshape(arrays[k].shape)
                        for k, o in enumerate(out))
            _refuse_unmeasured_nans(spec, arrays, out, fattrs)
            return out
        impl.__doc__ = f"{op}: {doc}"
        fns.NOT_BROADCASTING.add(spec.fn)
        fns.register(fns.Function(spec.fn, spec.n_in, len(spec.variables), _on_host(impl),
                                  doc=impl.__doc__, family=TENSORFLOW, pure=False,
                                  mixed_dtypes=spec.sparse or "global_step" in spec.inputs,
                                  attrs={a: fns._bool_attr for a in spec.attrs}))
        return model
    return deco


#: op -> the hyperparameters its kernel reads with `.scalar<T>()` without
#: checking their shape first (training_ops.cc): one of any shape with one
#: element is that element, and one of another size fails a CHECK that ends
#: TensorFlow's process (measured on TensorFlow 2.21: sign_decay of shape [2]
#: kills it, [1] and [1, 1] run as the scalar).  Every other hyperparameter
#: must be of shape [] (`TensorShapeUtils::IsScalar`; a [1] is refused too,
#: "lr is not a scalar: [1]", measured on every dense op).
_UNCHECKED_SCALARS = {"ResourceApplyPowerSign": ("sign_decay",),
                      "ResourceApplyAddSign": ("sign_decay",)}
#: op -> the slots its kernel does not compare with var's shape (measured
#: on TensorFlow 2.21: every other slot and the gradient must be of var's
#: shape, "var and accum do not have the same shape").  The kernel computes
#: on the flat views (`flat<T>()`), so a slot of var's number of elements
#: is updated element for element, keeping its own shape; one of another
#: number is read and written past its buffer's end by var's count.
_UNCHECKED_SLOTS = {"ResourceApplyAdadelta": ("accum_update",),
                    "ResourceApplyAdamWithAmsgrad": ("vhat",)}
#: The sparse ops whose kernel compares grad's rank with var's ("grad must
#: have the same number of dimensions as var").  The others compare grad's
#: first dimension with the indices' and its next ones with var's, and no
#: more: a grad of another rank (var [2] beside grad [1, 3]) runs, or, with
#: fewer dimensions than var's, fails a CHECK that ends TensorFlow's process
#: (measured on TensorFlow 2.21).  A grad of var's rank and another shape
#: fails the op in every sparse kernel (InvalidArgument).
_SPARSE_RANK_CHECKED = ("ResourceSparseApplyAdagrad", "ResourceSparseApplyAdagradV2")


def _check_dense(spec: Optimizer, arrays) -> None:
    """The kernel's validation: float dtypes only, every variable and the
    gradient of the variable's shape, the hyperparameters scalars (but
    `_UNCHECKED_SCALARS`)."""
    t = dtype_name(arrays[0].dtype)
    if t not in FLOAT_DTYPES:
        raise OpError("no-kernel", f"{spec.op} has no kernel for {t}")
    shape = arrays[0].shape
    nv = len(spec.variables)
    named = list(zip(spec.variables, arrays[:nv])) + list(zip(spec.inputs, arrays[nv:]))
    for name, a in named:
        if name not in ("global_step", "indices") and dtype_name(a.dtype) != t:
            raise OpError("dtype-mismatch", f"{spec.op}: {name} is not of the variable's dtype")
    if spec.sparse:
        ins = dict(named)
        idx = ins["indices"]
        if dtype_name(idx.dtype) not in ("int32", "int64") or idx.ndim != 1:
            raise ShapeError(f"{spec.op}: indices must be a vector of int32 or int64")
        g = ins["grad"]
        if len(shape) < 1 or g.shape != (idx.shape[0],) + shape[1:]:
            if spec.op not in _SPARSE_RANK_CHECKED and len(shape) >= 1 and g.ndim != len(shape):
                raise CannotRunHere(f"cannot run {spec.op} with a grad of shape "
                                    f"{list(g.shape)} beside a var of shape {list(shape)}: "
                                    "TensorFlow's kernel does not check grad's rank (with "
                                    "fewer dimensions than var's it fails a CHECK that ends "
                                    "its process, with more it runs on what is not modelled)")
            raise ShapeError(f"{spec.op}: grad must be [len(indices)] + var.shape[1:]")
        if len(set(idx.tolist())) < idx.shape[0]:
            raise CannotRunHere(f"cannot run {spec.op} with duplicate indices concretely: "
                                "TensorFlow's CPU kernel may update the rows of one index from "
                                "several threads, in an order that varies")
    for name, a in named:
        if name in ("global_step", "indices") or (spec.sparse and name == "grad"):
            if name == "global_step" and (a.ndim != 0 or dtype_name(a.dtype) != "int64"):
                raise ShapeError(f"{spec.op}: global_step must be an int64 scalar")
            continue
        if name in _UNCHECKED_SLOTS.get(spec.op, ()) and not spec.sparse:
            if a.size != arrays[0].size:
                raise CannotRunHere(f"cannot run {spec.op} with a {name} of shape "
                                    f"{list(a.shape)} beside a var of shape {list(shape)}: "
                                    "TensorFlow's kernel does not check its shape and reads "
                                    "and writes past its end")
        elif name in ("grad", "delta") or name in spec.variables:
            if a.shape != shape:
                raise ShapeError(f"{spec.op}: {name} does not have the variable's shape")
        elif name in _UNCHECKED_SCALARS.get(spec.op, ()):
            if a.size != 1:
                raise CannotRunHere(f"cannot run {spec.op} with a {name} of shape "
                                    f"{list(a.shape)}: TensorFlow's kernel does not check its "
                                    "shape and fails a CHECK that ends its process")
        elif a.ndim != 0:
            raise ShapeError(f"{spec.op}: {name} is not a scalar")


# -- the kernel's checks ahead of an Assign-f model -------------------------------
#
# The float32 ResourceApplyGradientDescent, ResourceApplyMomentum and
# ResourceApplyAdam import as Assign-f models (below) whose operands
# StackBroadcast packs, and StackBroadcast broadcasts: a hyperparameter of
# shape [2] (computed, so the import cannot see its shape) would step the
# variable elementwise where TensorFlow's kernel fails, and a failure
# detected by one Assign of a model (a gradient of another shape in
# Momentum's ScaleAdd) left the model's other Assigns to run, where the
# kernel fails before it touches any variable.  So every input of the op
# goes through one function, `Check<fn>` (CheckApplyMomentum, ...), before
# any Assign uses it: it gives its inputs back unchanged where the kernel's
# validation passes (the variables initialized, of one shape, the gradient
# of theirs, every hyperparameter of shape []: `_check_dense`) and the error
# value `shape-mismatch` (`dtype-mismatch`, ...) for every one of them where
# it fails.  Every Assign of the model then has an error operand, and an
# Assign-f of an error changes nothing (oracle/graph.py `_assigned`): the
# model fails, changing nothing, exactly where the kernel fails, as the
# fused models do (an error value, not CannotRun: tfsem's way for an op that
# fails at run time).  Where the validation passes, the checked inputs are
# the inputs, so every value is the one the model computed before.  The
# checks of Momentum and Adam take a Read of each variable (they are part of
# the exclusive update: no other node accesses the variables in between);
# GradientDescent's takes none: its one Assign fails by itself where the
# variable is uninitialized or delta is not of its shape (GradientStep's
# `_operands`), so its check need only see alpha.


def _check_inputs(spec: Optimizer, with_variables: bool) -> str:
    """Register `Check<fn>`: the op's inputs (after a Read of each variable
    when `with_variables`) given back unchanged where the kernel's
    validation passes, else the op's error."""
    name = "Check" + spec.fn
    nv = len(spec.variables) if with_variables else 0

    def impl(xp, args, attrs):
        arrays = [np.asarray(a) for a in args]
        if with_variables:
            _check_dense(spec, arrays)
        else:
            t = dtype_name(arrays[0].dtype)
            if t not in FLOAT_DTYPES:
                raise OpError("no-kernel", f"{spec.op} has no kernel for {t}")
            for x, a in zip(spec.inputs, arrays):
                if x not in ("grad", "delta") and a.ndim != 0:
                    raise ShapeError(f"{spec.op}: {x} is not a scalar")
        return tuple(arrays[nv:])
    impl.__doc__ = (f"{name}({', '.join(spec.variables[:nv] + spec.inputs)}): the op's inputs "
                    f"unchanged where {spec.op}'s kernel accepts them (every hyperparameter of "
                    "shape []" + (", the variables initialized and of one shape, grad of "
                                  "theirs" if nv else "") + "), else the error for each")
    fns.register(fns.Function(name, nv + len(spec.inputs), len(spec.inputs), _on_host(impl),
                              doc=impl.__doc__, family=TENSORFLOW))
    fns.NOT_BROADCASTING.add(name)
    return name


_TF_CACHE: dict[tuple, Any] = {}
#: One kernel evaluation at a time: a cached session's variables are shared
#: by its calls (the thread-pool executor may call two at once).
_TF_LOCK = threading.Lock()


def _tf_kernel(spec: Optimizer, arrays, fattrs):
    """TensorFlow's own kernel of `spec` on these values: the variables'
    values after the op (run in a graph, as the executor runs it: flushing
    subnormals).  Without TensorFlow: cannot run."""
    try:
        import tensorflow as tf  # noqa: PLC0415 (only when an op needs its kernel)
    except ImportError:
        raise CannotRun(f"cannot run TensorFlow op {spec.op} concretely without TensorFlow: "
                        "numpy does not compute Eigen's rsqrt, pow and exp bit for bit; in "
                        "proofs it is an uninterpreted function") from None
    nv = len(spec.variables)
    key = (spec.op, tuple((a.dtype.str, a.shape) for a in arrays),
           tuple(sorted(fattrs.items())))
    entry = _TF_CACHE.get(key)
    if entry is None:
        g = tf.Graph()
        with g.as_default():
            # (shapes left unknown to graph construction, as a computed
            # input's are: the kernel sees the values' shapes, and a slot its
            # kernel does not check, `_UNCHECKED_SLOTS`, is not refused
            # before it runs)
            phs = [tf.compat.v1.placeholder(a.dtype, None) for a in arrays]
            handles = [tf.raw_ops.VarHandleOp(dtype=a.dtype, shape=tf.TensorShape(None),
                                              shared_name=f"tfsem_{k}") for k, a in
                       enumerate(arrays[:nv])]
            inits = [tf.raw_ops.AssignVariableOp(resource=h, value=p)
                     for h, p in zip(handles, phs)]
            kwargs = dict(zip(spec.variables, handles))
            kwargs.update(zip(spec.inputs, phs[nv:]))
            kwargs.update({a: bool(fattrs.get(a, False)) for a in spec.attrs})
            with tf.control_dependencies(inits):
                step = getattr(tf.raw_ops, spec.op)(**kwargs)
            with tf.control_dependencies([step]):
                reads = [tf.raw_ops.ReadVariableOp(resource=h, dtype=a.dtype)
                         for h, a in zip(handles, arrays[:nv])]
            after = [tf.raw_ops.ReadVariableOp(resource=h, dtype=a.dtype)
                     for h, a in zip(handles, arrays[:nv])]
        sess = tf.compat.v1.Session(graph=g, config=tf.compat.v1.ConfigProto(
            intra_op_parallelism_threads=1, inter_op_parallelism_threads=1))
        entry = _TF_CACHE[key] = (sess, phs, inits, reads, after)
    sess, phs, inits, reads, after = entry
    feed = dict(zip(phs, arrays))
    with _TF_LOCK:
        try:
            return tuple(sess.run(reads, feed))
        except tf.errors.OpError:
            # the kernel failed (a sparse index out of range): the variables
            # as it left them
            return tuple(sess.run(after))


@_optimizer("ResourceApplyKerasMomentum", "var accum", "lr grad momentum",
            "accum = accum * momentum - grad * lr; var += accum (nesterov: "
            "var += accum * momentum - grad * lr)", "use_nesterov")
def _keras_momentum(K, v, i, a):
    var, accum = v
    accum = K.sub(K.mul(accum, i["momentum"]), K.mul(i["grad"], i["lr"]))
    if a.get("use_nesterov"):
        # (this `var += x` takes x's NaN first on float32 and float64, var's
        # on float16 and bfloat16, as `var += accum` does: measured)
        x = K.sub(K.mul(accum, i["momentum"]), K.mul(i["grad"], i["lr"]))
        var = K.add(x, var) if dtype_name(var.dtype) in ("float32", "float64") else K.add(var, x)
    else:
        var = K.add(var, accum)
    return var, accum


@_optimizer("ResourceApplyMomentum", "var accum", "lr grad momentum",
            "accum = accum * momentum + grad; var -= accum * lr (nesterov: "
            "var -= grad * lr + accum * momentum * lr)", "use_nesterov")
def _momentum(K, v, i, a):
    var, accum = v
    accum = K.add(K.mul(accum, i["momentum"]), i["grad"])
    if a.get("use_nesterov"):
        step = K.add(K.mul(i["grad"], i["lr"]), K.mul(K.mul(accum, i["momentum"]), i["lr"]))
        return K.sub(var, step), accum
    return _descend(K, var, accum, i["lr"]), accum


def _descend(K, var, x, lr):
    """`var -= x * lr()`: the variable's update of ResourceApplyMomentum
    (x = accum) and ResourceApplyGradientDescent (x = grad) as the kernels
    compute it.  `lr * x`, lr first: with a scalar lr that is K.mul(x, lr)
    (a tensor and a scalar: the scalar's NaN first, `_ops().order`); with lr
    broadcast to x's shape (the float32 imports' GradientStep and
    MomentumStep, whose operands StackBroadcast packs) two tensors give the
    left one's NaN first, which is lr's again: one expression, the same bits
    either way (a product's value does not depend on the order)."""
    return K.sub(var, K.mul(lr, x))


def _one(x):
    return np.asarray(1, dtype=np.asarray(x).dtype)


@_optimizer("ResourceApplyAdam", "var m v",
            "beta1_power beta2_power lr beta1 beta2 epsilon grad",
            "m += (g - m)(1 - beta1); v += (g² - v)(1 - beta2); var -= m·alpha / (sqrt(v) + "
            "epsilon), alpha = lr·sqrt(1 - beta2_power) / (1 - beta1_power) (nesterov: "
            "(g(1 - beta1) + beta1·m)·alpha in the numerator)", "use_nesterov")
def _adam(K, v, i, a):
    var, m, vv = v
    g = i["grad"]
    one = _one(g)
    # (a NaN's bits: the scalar `lr() * sqrt(...)` takes the square root's
    # NaN first; float32's `v.sqrt() + epsilon()` the tensor's in the
    # second packet of each block of Eigen's unrolled loop: measured)
    alpha = K.div(K.mul(K.sqrt(K.sub(one, i["beta2_power"])), i["lr"]),
                  K.sub(one, i["beta1_power"]))
    m = K.add(m, K.mul(K.sub(g, m), K.sub(one, i["beta1"])))
    vv = K.add(vv, K.mul(K.sub(K.square(g), vv), K.sub(one, i["beta2"])))
    f32 = dtype_name(g.dtype) == "float32"
    if a.get("use_nesterov"):
        # (Nesterov's kernel: `v.sqrt() + epsilon()` takes the tensor's NaN
        # first but in float64's tail; `g * (1 - beta1) + beta1 * m` on
        # float32 the right term's in the first and last packet of each
        # unrolled block and in the packets past it: measured)
        den = K.add_placed(K.sqrt(vv), i["epsilon"], (True,) * 4, packets=True, tail=f32)
        top = K.add_placed(K.mul(g, K.sub(one, i["beta1"])), K.mul(i["beta1"], m),
                           (not f32, True, True, not f32), packets=not f32, tail=True)
        num = K.mul(top, alpha)
        return K.sub(var, K.div(num, den)), m, vv
    return _adam_descend(K, var, m, vv, alpha, i["epsilon"]), m, vv


def _adam_descend(K, var, m, vv, alpha, epsilon):
    """`var -= (m * alpha) / (v.sqrt() + epsilon())`: ResourceApplyAdam's
    variable update without Nesterov, as the kernel computes it (m and vv
    the new slots).  `alpha * m`, alpha first: a scalar alpha's NaN comes
    first (`_ops().order`), and so does alpha broadcast to m's shape (the
    float32 import's AdamStep), the left one of two tensors.  `sqrt(v) +
    epsilon` picks by the element's flat place (K.add_placed: on float32 the
    tensor's NaN first in the second packet of each block of Eigen's
    unrolled loop, epsilon's elsewhere; on float64 epsilon's everywhere:
    measured), whether epsilon is a scalar or broadcast: add_placed orders
    every NaN element by place."""
    f32 = dtype_name(np.asarray(var).dtype) == "float32"
    den = K.add_placed(K.sqrt(vv), epsilon, (False, f32, False, False), packets=False,
                       tail=False)
    return K.sub(var, K.div(K.mul(alpha, m), den))


@_optimizer("ResourceApplyAdamWithAmsgrad", "var m v vhat",
            "beta1_power beta2_power lr beta1 beta2 epsilon grad",
            "Adam's m and v; vhat = max(vhat, v); var -= m·alpha / (sqrt(vhat) + epsilon)")
def _amsgrad(K, v, i, a):
    var, m, vv, vhat = v
    g = i["grad"]
    one = _one(g)
    # (a NaN's bits: `lr() * sqrt(...)` takes the square root's NaN first,
    # `m += x` and `v += x` x's: measured)
    alpha = K.div(K.mul(K.sqrt(K.sub(one, i["beta2_power"])), i["lr"]),
                  K.sub(one, i["beta1_power"]))
    m = K.add(K.mul(K.sub(g, m), K.sub(one, i["beta1"])), m)
    vv = K.add(K.mul(K.sub(K.square(g), vv), K.sub(one, i["beta2"])), vv)
    vhat = K.max(vhat, vv)
    # (`vhat.sqrt() + epsilon()` placed as AdagradV2's: measured)
    den = K.add_placed(K.sqrt(vhat), i["epsilon"], (True, False, False, True),
                       packets=dtype_name(g.dtype) == "float32", tail=False)
    return K.sub(var, K.div(K.mul(m, alpha), den)), m, vv, vhat


@_optimizer("ResourceApplyAdaMax", "var m v", "beta1_power lr beta1 beta2 epsilon grad",
            "m += (g - m)(1 - beta1); v = max(beta2·v, |g|); "
            "var -= lr / (1 - beta1_power) · (m / (v + epsilon))")
def _adamax(K, v, i, a):
    var, m, vv = v
    g = i["grad"]
    one = _one(g)
    m = K.add(K.mul(K.sub(g, m), K.sub(one, i["beta1"])), m)   # (x's NaN first: measured)
    vv = K.max(K.mul(i["beta2"], vv), K.abs(g))
    step = K.mul(K.div(i["lr"], K.sub(one, i["beta1_power"])),
                 K.div(m, K.add(vv, i["epsilon"])))
    return K.sub(var, step), m, vv


@_optimizer("ResourceApplyRMSProp", "var ms mom", "lr rho momentum epsilon grad",
            "ms += (g² - ms)(1 - rho); mom = mom·momentum + g·lr / sqrt(ms + epsilon); "
            "var -= mom")
def _rmsprop(K, v, i, a):
    var, ms, mom = v
    g = i["grad"]
    # (`ms += x` takes x's NaN before ms's: measured)
    ms = K.add(K.mul(K.sub(K.square(g), ms), K.sub(_one(g), i["rho"])), ms)
    mom = K.add(K.mul(mom, i["momentum"]),
                K.div(K.mul(g, i["lr"]), K.sqrt(K.add(ms, i["epsilon"]))))
    return K.sub(var, mom), ms, mom


@_optimizer("ResourceApplyCenteredRMSProp", "var mg ms mom", "lr rho momentum epsilon grad",
            "ms += (g² - ms)(1 - rho); mg += (g - mg)(1 - rho); mom = mom·momentum + "
            "g·lr / sqrt(ms - mg² + epsilon); var -= mom")
def _centered_rmsprop(K, v, i, a):
    var, mg, ms, mom = v
    g = i["grad"]
    c = K.sub(_one(g), i["rho"])
    # (`ms += x` and `mg += x` take x's NaN before the slot's: measured)
    ms = K.add(K.mul(K.sub(K.square(g), ms), c), ms)
    mg = K.add(K.mul(K.sub(g, mg), c), mg)
    # (`... + epsilon()`: on float64 the tensor's NaN first in the whole
    # packets past Eigen's unrolled loop, epsilon's elsewhere: measured)
    denom = K.add_placed(K.sub(ms, K.square(mg)), i["epsilon"], (False,) * 4,
                         packets=dtype_name(g.dtype) == "float64", tail=False)
    mom = K.add(K.mul(mom, i["momentum"]), K.div(K.mul(g, i["lr"]), K.sqrt(denom)))
    return K.sub(var, mom), mg, ms, mom


@_optimizer("ResourceApplyAdagradV2", "var accum", "lr epsilon grad",
            "accum += g² (unless update_slots=false); var -= g·lr / (sqrt(accum) + epsilon)",
            "update_slots")
def _adagrad_v2(K, v, i, a):
    var, accum = v
    g = i["grad"]
    if a.get("update_slots", True):
        accum = K.add(K.square(g), accum)   # (g²'s NaN first: measured)
    # sqrt(accum) + epsilon: sqrt(accum)'s NaN first in the first and last
    # packet of each unrolled block, in float32's other packets; epsilon's
    # elsewhere (measured, NAN_RULE_MEASURED)
    f64 = dtype_name(g.dtype) == "float64"
    den = K.add_placed(K.sqrt(accum), i["epsilon"], (True, False, False, True),
                       packets=not f64, tail=False)
    return K.sub(var, K.div(K.mul(g, i["lr"]), den)), accum


#: Kernels with Eigen's rsqrt, pow or exp: TensorFlow's kernel is their
#: concrete semantics (numpy's 1/sqrt differs from Eigen's rsqrt in the last
#: bit on about one element in ten, measured on TensorFlow 2.21).
for _op, _vars, _ins, _doc, _attrs in [
        ("ResourceApplyAdagrad", "var accum", "lr grad",
         "accum += g²; var -= g·lr·rsqrt(accum)", "update_slots"),
        ("ResourceApplyAdadelta", "var accum accum_update", "lr rho epsilon grad",
         "accum = accum·rho + g²(1 - rho); u = sqrt(accum_update + eps)·rsqrt(accum + eps)·g; "
         "var -= u·lr; accum_update = accum_update·rho + u²(1 - rho)", ""),
        ("ResourceApplyProximalAdagrad", "var accum", "lr l1 l2 grad",
         "Fobos with Adagrad's rate lr·rsqrt(accum)", ""),
        ("ResourceApplyFtrl", "var accum linear", "grad lr l1 l2 lr_power",
         "FTRL-proximal (pow(accum, -lr_power))", "multiply_linear_by_lr"),
        ("ResourceApplyFtrlV2", "var accum linear", "grad lr l1 l2 l2_shrinkage lr_power",
         "FTRL-proximal with L2 shrinkage (pow(accum, -lr_power))", "multiply_linear_by_lr"),
        ("ResourceApplyPowerSign", "var m", "lr logbase sign_decay beta grad",
         "m = m·beta + g(1 - beta); var -= lr·exp(logbase·sign_decay·sign(g)·sign(m))·g", ""),
        ("ResourceApplyAddSign", "var m", "lr alpha sign_decay beta grad",
         "m = m·beta + g(1 - beta); var -= lr·(alpha + sign_decay·sign(g)·sign(m))·g", ""),
        ("ResourceApplyProximalGradientDescent", "var", "alpha l1 l2 delta",
         "Fobos: prox = var - delta·alpha; var = sign(prox)·max(|prox| - alpha·l1, 0) / "
         "(1 + l2·alpha)", ""),
        ("ResourceApplyAdagradDA", "var gradient_accumulator gradient_squared_accumulator",
         "grad lr l1 l2 global_step", "AdagradDA", ""),
]:
    _optimizer(_op, _vars, _ins, _doc, _attrs, exact=False)(None)

#: The sparse forms (tf.compat.v1.train's updates of embedding rows):
#: TensorFlow's kernel is their concrete semantics.
for _op, _vars, _ins, _attrs in [
        ("ResourceSparseApplyAdagrad", "var accum", "lr grad indices", "update_slots"),
        ("ResourceSparseApplyAdagradV2", "var accum", "lr epsilon grad indices", "update_slots"),
        ("ResourceSparseApplyMomentum", "var accum", "lr grad indices momentum", "use_nesterov"),
        ("ResourceSparseApplyKerasMomentum", "var accum", "lr grad indices momentum",
         "use_nesterov"),
        ("ResourceSparseApplyAdadelta", "var accum accum_update", "lr rho epsilon grad indices",
         ""),
        ("ResourceSparseApplyRMSProp", "var ms mom", "lr rho momentum epsilon grad indices", ""),
        ("ResourceSparseApplyCenteredRMSProp", "var mg ms mom",
         "lr rho momentum epsilon grad indices", ""),
        ("ResourceSparseApplyFtrl", "var accum linear", "grad indices lr l1 l2 lr_power",
         "multiply_linear_by_lr"),
        ("ResourceSparseApplyFtrlV2", "var accum linear",
         "grad indices lr l1 l2 l2_shrinkage lr_power", "multiply_linear_by_lr"),
        ("ResourceSparseApplyProximalAdagrad", "var accum", "lr l1 l2 grad indices", ""),
        ("ResourceSparseApplyProximalGradientDescent", "var", "alpha l1 l2 grad indices", ""),
        ("ResourceSparseApplyAdagradDA", "var gradient_accumulator gradient_squared_accumulator",
         "grad indices lr l1 l2 global_step", ""),
]:
    _optimizer(_op, _vars, _ins, "the rows of the variables at `indices` updated as the "
               "dense form updates whole variables, in index order", _attrs, exact=False)(None)


# ---------------------------------------------------------------------------
# The ops: each op's import (`build(b)`, through graph import's builder `b`,
# whose calls graphdef/ops.py lists), the functions it applies, its effect.


def _define(name: str, doc: str, stateful: str | None, **kw: Any):
    """Decorator: `build` is the import of TensorFlow's `name`, an OpDef of
    this family with the keywords given (functions, resources, ...)."""
    def deco(build):
        define(OpDef(name, doc, build, FAMILY, stateful=stateful, **kw))
        return build
    return deco


#: Assign-f -> the TensorFlow op an Assign of it is exported as (read by
#: graphdef/exporter.py; the .ftz variants are exported as their base)
ASSIGN_OPS: dict[str, str] = {}
#: Assign-f of a packed operand -> (TensorFlow op, the pack function, its
#: dtype attribute): what graphdef/exporter.py writes such an Assign back as
PACKED_ASSIGNS: dict[str, tuple[str, str, str]] = {}


# -- variables -------------------------------------------------------------------


@_define("VarHandleOp", "a Var node of the variable named by shared_name (the node name if "
         "empty)", "creates a handle of the variable")
def _var_handle(b):
    return [b.var_node()]


@_define("ReadVariableOp", "Read", "reads the variable", resources=(0,), output_args=("value",))
def _read(b):
    b.dtype("dtype")
    return [b.add("Read", [b.var(0)])]


@_define("VariableShape", "Read, then the function Shape: TensorFlow's VariableShape looks the "
         "variable up (it fails on an uninitialized one, as the Read's error value does) and "
         "gives its shape, which no assignment changes", "reads the variable",
         resources=(0,), functions=("Shape",), type_defaults={"out_type": "DT_INT32"})
def _variable_shape(b):
    out_type = b.dtype("out_type")
    if out_type not in ("int32", "int64"):
        b.reject("out_type must be int32 or int64")
    value = b.add("Read", [b.var(0)], part="read")
    return [b.add("Shape", [value], {"out_type": out_type})]


@_define("AssignVariableOp", "Assign-Snd (Write); with validate_shape=true Assign-SndSameShape "
         "(fails, changing nothing, when an initialized variable's shape is not the value's)",
         "writes the variable", resources=(0,), functions=("Snd", "SndSameShape"))
def _assign_variable(b):
    """TensorFlow's AssignVariableOp kernel with validate_shape=true compares
    the variable's run-time shape with the value's: another shape fails the
    op and an initialized variable keeps its value; an uninitialized variable
    takes the value whatever its shape (SndSameShape above;
    tests/test_state_ops.py runs both against TensorFlow 2.21)."""
    b.dtype("dtype")
    fn = "SndSameShape" if b.attr("validate_shape", False) else "Snd"
    b.add("Assign", [b.var(0), b.input(1)], {"fn": fn})
    return []


ASSIGN_OPS.update({"Snd": "AssignVariableOp", "SndSameShape": "AssignVariableOp"})


@_define("AssignAddVariableOp", "Assign-Add", "reads and writes the variable (one step)",
         resources=(0,), functions=("Add", "Add.ftz"))
def _assign_add(b):
    b.add("Assign", [b.var(0), b.input(1)], {"fn": flushed("Add", b.dtype("dtype"))})
    return []


@_define("AssignSubVariableOp", "Assign-Sub", "reads and writes the variable (one step)",
         resources=(0,), functions=("Sub", "Sub.ftz"))
def _assign_sub(b):
    b.add("Assign", [b.var(0), b.input(1)], {"fn": flushed("Sub", b.dtype("dtype"))})
    return []


ASSIGN_OPS.update({"Add": "AssignAddVariableOp", "Sub": "AssignSubVariableOp"})


@_define("VarIsInitializedOp", "Read, then IsInitialized (bool)", "reads the variable",
         resources=(0,), functions=("IsInitialized",))
def _var_is_initialized(b):
    value = b.add("Read", [b.var(0)], part="read")
    return [b.add("IsInitialized", [value])]


# -- slices of a variable ------------------------------------------------------


@_define("ResourceGather", "Read, then GatherV2 along axis batch_dims (a Read of slices)",
         "reads the variable", resources=(0,), functions=("Const", "GatherV2"))
def _resource_gather(b):
    b.dtype("dtype")
    index_dtype(b, "Tindices")
    bd = int(b.attr("batch_dims", 0))
    value = b.add("Read", [b.var(0)], part="read")
    axis = b.add("Const", [], {"value": Tensor(np.array(bd, dtype=np.int32), "int32")},
                 part="axis")
    return [b.add("GatherV2", [value, b.input(1), axis], {"batch_dims": bd})]


@_define("ResourceGatherNd", "Read, then GatherNd (a Read of slices)", "reads the variable",
         resources=(0,), functions=("GatherNd",))
def _resource_gather_nd(b):
    b.dtype("dtype")
    index_dtype(b, "Tindices")
    value = b.add("Read", [b.var(0)], part="read")
    return [b.add("GatherNd", [value, b.input(1)])]


@_define("GatherNd", "params[indices[..., :K]] (the function ResourceGatherNd's model uses; an "
         "index out of range fails, as TensorFlow's CPU kernel)", None, functions=("GatherNd",))
def _import_gather_nd(b):
    b.dtype("Tparams")
    index_dtype(b, "Tindices")
    return [b.add("GatherNd", [b.input(0), b.input(1)])]


def _scatter_op(tf_op: str, fn: str, dtype_attr: str, bad_index: str) -> None:
    @_define(tf_op, f"Assign-{fn} of PackScatter(indices, updates): the rows applied in index "
             f"order, as the CPU kernel (an index out of range: {bad_index})",
             "reads and writes slices of the variable (one step)", resources=(0,),
             functions=("PackScatter", fn))
    def build(b):
        b.dtype(dtype_attr)
        index_dtype(b, "Tindices")
        packed = b.add("PackScatter", [b.input(1), b.input(2)], part="packed")
        b.add("Assign", [b.var(0), packed], {"fn": fn})
        return []
    PACKED_ASSIGNS[fn] = (tf_op, "PackScatter", dtype_attr)


for _kind in SCATTER_KINDS:
    _scatter_op(f"ResourceScatter{_kind}", f"Scatter{_kind}", "dtype",
                "the rows before it stay applied")
for _kind in SCATTER_ND_KINDS:
    _scatter_op(f"ResourceScatterNd{_kind}", f"ScatterNd{_kind}", "T",
                "every other row is applied")


@_define("ResourceStridedSliceAssign", "Assign-StridedSliceAssign of PackSlice(begin, end, "
         "strides, value) with the five masks: the slice replaced by the value, broadcast (an "
         "Assign-f on a slice)", "reads and writes a slice of the variable (one step)",
         resources=(0,), functions=("PackSlice", "StridedSliceAssign"))
def _resource_strided_slice_assign(b):
    b.dtype("T")
    index_dtype(b, "Index")
    masks = {m: int(b.attr(m, 0)) for m in SLICE_MASKS}
    packed = b.add("PackSlice", [b.input(i) for i in range(1, 5)], masks, part="packed")
    b.add("Assign", [b.var(0), packed], {"fn": "StridedSliceAssign"})
    return []


PACKED_ASSIGNS["StridedSliceAssign"] = ("ResourceStridedSliceAssign", "PackSlice", "T")


# -- optimizer updates -------------------------------------------------------

_UPDATE_EFFECT = "reads and writes its variables (one kernel; refused when another node races)"


def _optimizer_dtype(b) -> str:
    """The optimizer's dtype: float32 only (the models are compared with
    TensorFlow's kernels on float32; on other dtypes they are refused)."""
    t = b.dtype("T")
    if t != "float32":
        b.reject(f"{b.node.op} on {t} is not modelled (its model is tested against "
                 "TensorFlow's kernel on float32 only)")
    return t


#: ResourceApplyGradientDescent's inputs (not an OPTIMIZERS entry: it has no
#: fused model, its import is the Assign-GradientStep below)
GRADIENT_DESCENT = Optimizer("ResourceApplyGradientDescent", ("var",), ("alpha", "delta"),
                             "var -= alpha * delta")
#: assign function -> the check (`_check_inputs`) its StackBroadcast's
#: operands come from in the import (STACKED_ASSIGNS' ops)
STACKED_CHECKS = {"GradientStep": _check_inputs(GRADIENT_DESCENT, with_variables=False)}


@_define("ResourceApplyGradientDescent",
         "var -= alpha * delta: Assign-GradientStep of StackBroadcast(delta, alpha), alpha and "
         "delta through CheckApplyGradientDescent (the kernel's check: alpha of shape []) (one "
         "Assign; decomposed: read, compute, write)",
         "reads and writes the variable (one step)", resources=(0,),
         functions=("CheckApplyGradientDescent", "StackBroadcast", "GradientStep", "NoOp"))
def _apply_gd(b):
    _optimizer_dtype(b)
    _refuse_declared_shapes(b, ("var",), ("alpha", "delta"))
    checked = b.add(STACKED_CHECKS["GradientStep"], [b.input(1), b.input(2)], part="checked")
    packed = b.add("StackBroadcast", [DataIn(checked.node, 1), checked], part="packed")
    b.add("Assign", [b.var(0), packed], {"fn": "GradientStep"}, part="update")
    b.add("NoOp", [])
    return []


# The float32 Momentum and Adam models' functions: the two operands of an
# update packed into one Assign input, and the assign functions.


@fns.function("StackBroadcast", 2, 1, batched=False, family=TENSORFLOW)
def _stack_broadcast(xp, args, attrs):
    """[a, b] broadcast to one shape and stacked on a new first axis (packs
    the two operands of an optimizer's update into one Assign input)."""
    a, b = xp.broadcast_arrays(args[0], args[1])
    return (xp.stack([a, b]),)


def _operands(v, w, depth: int = 1):
    """The operands StackBroadcast packed (`depth` 2: a StackBroadcast of
    two StackBroadcasts, [[a, b], [c, d]]), each of the variable's shape."""
    if v.shape != (2,) * depth + w.shape:
        raise ShapeError("the packed operand must be StackBroadcast of the variable's shape"
                         if depth == 1 else "the packed operand must be StackBroadcast of two "
                         "StackBroadcasts of the variable's shape")
    return v[0], v[1]


@fns.function("StepToward", 2, 1, batched=False, family=TENSORFLOW)
def _step_toward(xp, args, attrs):
    """StepToward(w, [g, c]) = w + (g - w) * c: Adam's moment update
    (m += (grad - m) * (1 - beta1)) as an assign function; every operation
    flushes subnormals, as TensorFlow's CPU runtime does."""
    w, v = args
    g, c = _operands(v, w)
    f = (lambda a: ftz(xp, a))
    # a NaN's bits as the kernel's `m += (g - m) * (T(1) - beta1())` gives
    # them (_ops: g's NaN before m's, the scalar's before the difference's,
    # m's before the product's)
    d = fns.nan_bits(xp, f(xp.subtract(f(g), f(w))), f(g), f(w))
    step = fns.nan_bits(xp, fns.flushed_arithmetic("Mul", d, c, xp=xp), f(c), d)
    return (fns.nan_bits(xp, f(xp.add(f(w), step)), f(w), step),)


@fns.function("ScaleAdd", 2, 1, batched=False, family=TENSORFLOW)
def _scale_add(xp, args, attrs):
    """ScaleAdd(w, [g, c]) = w * c + g: Momentum's accumulator update
    (accum = accum * momentum + grad) as an assign function; every operation
    flushes subnormals, as TensorFlow's CPU runtime does."""
    w, v = args
    g, c = _operands(v, w)
    f = (lambda a: ftz(xp, a))
    # a NaN's bits as the kernel's `accum * momentum() + grad` gives them
    # (_ops: the scalar's NaN before accum's, the product's before grad's)
    prod = fns.nan_bits(xp, fns.flushed_arithmetic("Mul", w, c, xp=xp), f(c), f(w))
    return (fns.nan_bits(xp, f(xp.add(prod, f(g))), prod, f(g)),)


# The variables' own updates of the float32 imports: the fused kernels'
# last expressions (_descend, _adam_descend), which the fused models above
# compute too, so their NaNs get the bits NAN_RULE_MEASURED states (measured
# here on float32, the dtype these imports are built for: elsewhere a NaN
# result cannot run); every other value is bit for bit what the imports'
# earlier Mul.ftz, RealDiv.ftz, Add.ftz, Sqrt.ftz and Sub.ftz gave
# (functions.flushed_arithmetic, ftz: tests/test_optimizer_nan_bits.py).

_K = _ops()


def _descent(name: str, depth: int, step: Callable, doc: str):
    """Register assign function `name`: step(w, *operands) on the packed
    operands (`_operands` of `depth`), on the host."""
    def impl(xp, args, attrs):
        w, v = (np.asarray(a) for a in args)
        ops = _operands(v, w, depth)
        if depth == 2:
            ops = (*_operands(ops[0], w), *_operands(ops[1], w))
        with np.errstate(all="ignore"):
            r = np.asarray(step(w, *ops), dtype=w.dtype).reshape(w.shape)
        if dtype_name(w.dtype) != "float32" and fns._has_nan(np, r):
            raise CannotRunHere(f"cannot run {name} on {dtype_name(w.dtype)} concretely where "
                                "its result holds a NaN: which NaN TensorFlow's fused kernel "
                                "passes on there was measured on float32 only")
        return (r,)
    impl.__doc__ = doc
    _tf_fn(name, 2)(impl)


def _scaled_step(w, x, c):
    """w - x * c as `_descend` computes it (GradientStep, MomentumStep)."""
    return _descend(_K, w, x, c)


def _adam_step(w, m, alpha, v, epsilon):
    return _adam_descend(_K, w, m, v, alpha, epsilon)


_descent("GradientStep", 1, _scaled_step,
         """GradientStep(w, [g, c]) = w - g * c: ResourceApplyGradientDescent
    (`var -= grad * lr()`) as an assign function, the kernel's bits (NaNs
    included); every operation flushes subnormals, as TensorFlow's CPU
    runtime does.""")
_descent("MomentumStep", 1, _scaled_step,
         """MomentumStep(w, [a, c]) = w - a * c: ResourceApplyMomentum's variable
    update (`var -= accum * lr()`, a the new accum) as an assign function,
    the kernel's bits (NaNs included); every operation flushes subnormals.""")
_descent("AdamStep", 2, _adam_step,
         """AdamStep(w, [[m, alpha], [v, epsilon]]) = w - m * alpha / (sqrt(v) +
    epsilon): ResourceApplyAdam's variable update without Nesterov (m, v
    the new slots) as an assign function, the kernel's bits (NaNs
    included); every operation flushes subnormals.""")


#: op -> the check (`_check_inputs`, a Read of each variable first) its
#: float32 Assign-f model takes every input through
MODEL_CHECKS = {op: _check_inputs(OPTIMIZERS[op], with_variables=True)
                for op in ("ResourceApplyMomentum", "ResourceApplyAdam")}


def _checked(b, op: str) -> list:
    """The op's inputs through MODEL_CHECKS[op], after a Read of each of its
    variables: one DataIn per input, in the op's order."""
    spec = OPTIMIZERS[op]
    reads = [b.add("Read", [b.var(k)], part=f"check_{x}") for k, x in enumerate(spec.variables)]
    nv = len(spec.variables)
    checked = b.add(MODEL_CHECKS[op], reads + [b.input(k) for k in range(nv, spec.n_in)],
                    part="checked")
    return [DataIn(checked.node, k) for k in range(len(spec.inputs))]


def _apply_momentum_float32(b):
    """ResourceApplyMomentum (no Nesterov) on float32: accum = accum *
    momentum + grad (Assign-ScaleAdd), then var -= accum * lr (a Read,
    Assign-MomentumStep)."""
    _optimizer_dtype(b)
    if b.attr("use_nesterov", False):
        b.reject("use_nesterov=true is not modelled")
    lr, grad, momentum = _checked(b, "ResourceApplyMomentum")
    packed = b.add("StackBroadcast", [grad, momentum], part="packed")
    acc = b.add("Assign", [b.var(1), packed], {"fn": "ScaleAdd"}, part="accum")
    new_accum = b.add("Read", [b.var(1), ControlIn(acc.node)], part="read_accum")
    # training_ops.cc: var.device(d) -= accum * lr()
    step = b.add("StackBroadcast", [new_accum, lr], part="step_operands")
    b.add("Assign", [b.var(0), step], {"fn": "MomentumStep"}, part="update")
    b.add("NoOp", [])
    b.exclusive()
    return []


def _apply_adam_float32(b):
    """ResourceApplyAdam (no Nesterov) on float32: m += (g - m)(1 - beta1),
    v += (g*g - v)(1 - beta2) (Assign-StepToward), then var -= m*alpha /
    (sqrt(v) + epsilon) (Assign-AdamStep) with alpha = lr sqrt(1 - beta2^t) /
    (1 - beta1^t)."""
    t = _optimizer_dtype(b)
    F = (lambda name: flushed(name, t))
    if b.attr("use_nesterov", False):
        b.reject("use_nesterov=true is not modelled")
    # inputs: var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad
    beta1_power, beta2_power, lr, beta1, beta2, epsilon, g = _checked(b, "ResourceApplyAdam")
    one = b.add("Const", [], {"value": b.scalar(1.0)}, part="one")
    c1 = b.add(F("Sub"), [one, beta1], part="one_minus_beta1")
    c2 = b.add(F("Sub"), [one, beta2], part="one_minus_beta2")
    m_up = b.add("Assign", [b.var(1), b.add("StackBroadcast", [g, c1], part="m_operands")],
                 {"fn": "StepToward"}, part="m")
    g2 = b.add(F("Square"), [g], part="grad_squared")
    v_up = b.add("Assign", [b.var(2), b.add("StackBroadcast", [g2, c2], part="v_operands")],
                 {"fn": "StepToward"}, part="v")
    # alpha = lr * sqrt(1 - beta2_power) / (1 - beta1_power), each op in T;
    # the kernel's `lr() * sqrt(...)` takes the square root's NaN first
    # (_adam): Mul.ftz of two scalars passes its first operand's, so the
    # square root comes first here
    s2 = b.add(F("Sqrt"), [b.add(F("Sub"), [one, beta2_power], part="one_minus_beta2_power")],
               part="sqrt_one_minus_beta2_power")
    alpha = b.add(F("RealDiv"), [b.add(F("Mul"), [s2, lr], part="lr_sqrt"),
                              b.add(F("Sub"), [one, beta1_power], part="one_minus_beta1_power")],
                  part="alpha")
    m = b.add("Read", [b.var(1), ControlIn(m_up.node)], part="read_m")
    v = b.add("Read", [b.var(2), ControlIn(v_up.node)], part="read_v")
    # var -= m * alpha / (sqrt(v) + epsilon): Assign-AdamStep of [[m, alpha], [v, epsilon]]
    step = b.add("StackBroadcast", [b.add("StackBroadcast", [m, alpha], part="m_alpha"),
                                    b.add("StackBroadcast", [v, epsilon], part="v_epsilon")],
                 part="step_operands")
    b.add("Assign", [b.var(0), step], {"fn": "AdamStep"}, part="update")
    b.add("NoOp", [])
    b.exclusive()
    return []


#: The float32 ResourceApplyMomentum and ResourceApplyAdam without Nesterov
#: import as these Assign-f models (graphdef/exporter.py recognizes them by
#: their assign functions, ScaleAdd and StepToward); the functions they apply
_FLOAT32_MODELS = {
    "ResourceApplyMomentum": (_apply_momentum_float32,
                              (MODEL_CHECKS["ResourceApplyMomentum"], "StackBroadcast",
                               "ScaleAdd", "MomentumStep")),
    "ResourceApplyAdam": (_apply_adam_float32,
                          (MODEL_CHECKS["ResourceApplyAdam"], "Const", "Sub.ftz",
                           "StackBroadcast", "StepToward", "Square",
                           "Sqrt.ftz", "RealDiv.ftz", "Mul.ftz", "AdamStep"))}

#: assign function -> the op whose float32 Assign-f model starts with it (read
#: by graphdef/exporter.py, which writes such a model back as the op)
FLOAT32_MODEL_ANCHORS = {"ScaleAdd": "ResourceApplyMomentum", "StepToward": "ResourceApplyAdam"}
#: op -> the assign function of its float32 model's last Assign, the
#: variable's update (graphdef/exporter.py matches the model from it back)
FLOAT32_MODEL_UPDATES = {"ResourceApplyMomentum": "MomentumStep",
                         "ResourceApplyAdam": "AdamStep"}
#: Assign-f of StackBroadcast operands that is a whole op by itself -> (the
#: op, its inputs after the variable as the StackBroadcast's operands, the
#: shape each of those inputs must have: () a scalar, None the variable's):
#: graphdef/exporter.py writes it back as the op
STACKED_ASSIGNS: dict[str, tuple[str, tuple[int, ...], tuple[tuple | None, ...]]] = {
    "GradientStep": ("ResourceApplyGradientDescent", (1, 0), ((), None))}  # (var, alpha, delta)


def _refuse_aliased_slots(b, spec: Optimizer) -> None:
    """Two variable slots given one variable (two handles of one shared
    name): TensorFlow's kernel updates the one buffer in place, slot after
    slot, so one slot's new value feeds the next slot's computation; the
    model's reads all come first.  Refused by name rather than approximated
    (an MLIR lit case, `decompose_resource_apply_momentum_nesterov`, passes
    one variable as both `var` and `accum`)."""
    seen: dict[str, str] = {}
    for k, slot in enumerate(spec.variables):
        x = b.imp.var_of.get(b._ref(k)[0])
        if x is None:
            continue
        if x in seen:
            b.reject(f"variable {x!r} is given as both {seen[x]!r} and {slot!r}: TensorFlow's "
                     "kernel updates one buffer in place, slot after slot, which the model "
                     "(every read before every write) does not describe", "aliased-variables")
        seen[x] = slot


def _refuse_declared_shapes(b, variables: tuple, inputs: tuple) -> None:
    """The kernel's shape checks where the graph declares the shapes, for
    the float32 Assign-f models (training_ops.cc: every slot and grad /
    delta of var's shape, every other input a scalar, or the op fails and
    changes nothing).  Those models pack operands with StackBroadcast, which
    broadcasts: a vector lr (a Placeholder given shape [3]) would step
    elementwise, and a slot of another shape would be updated before the
    variable's Assign failed.  Refused by name.  (A shape the import cannot
    see, a computed hyperparameter's, is checked at run time: `Check<fn>`,
    `_check_inputs`, ahead of every Assign of the model.)"""
    def slot_shape(k: int):
        x = b.imp.var_of.get(b._ref(k)[0])
        return None if x is None else tuple(b.imp.variables[x].shape)
    nv = len(variables)
    shape = slot_shape(0)
    if shape is None:
        return
    for k, name in enumerate(variables + inputs):
        if k == 0:
            continue
        got = slot_shape(k) if k < nv else b.declared_shape(k)
        want = shape if k < nv or name in ("grad", "delta") else ()
        if got is not None and tuple(got) != want:
            b.reject(f"{name} has shape {list(got)}, but TensorFlow's kernel takes "
                     + ("a scalar" if want == () else f"var's shape {list(want)}")
                     + f" (its {b.node.op} fails)", "shape-mismatch")


def _optimizer_op(spec: Optimizer) -> None:
    """Read each variable, apply spec.fn, Write each new value (exclusive)."""
    how = ("tfsem's numpy model, bit for bit" if spec.exact
           else "TensorFlow's kernel evaluates it; uninterpreted in proofs")
    previous, used = _FLOAT32_MODELS.get(spec.op, (None, ()))

    @_define(spec.op, f"{spec.doc}: a Read of each variable, {spec.fn} ({how}), a Write of "
             "each new value; refused when another node races on its variables", _UPDATE_EFFECT,
             resources=tuple(range(len(spec.variables))),
             functions=tuple(dict.fromkeys((spec.fn, "Snd", "NoOp") + used)))
    def build(b):
        _refuse_aliased_slots(b, spec)
        t = b.dtype("T")
        if spec.exact and t not in OPTIMIZER_DTYPES:
            b.reject(f"{spec.op} on {t} is not modelled (its model is tested against "
                     f"TensorFlow's kernel on {' and '.join(OPTIMIZER_DTYPES)})")
        if previous is not None and not b.attr("use_nesterov", False) and t == "float32":
            _refuse_declared_shapes(b, spec.variables, spec.inputs)
            return previous(b)   # the earlier Assign-f model (float32 only)
        if not spec.exact:
            _optimizer_dtype(b)   # TensorFlow's kernel is compared on float32
        nv = len(spec.variables)
        if b.n_inputs != spec.n_in:
            b.reject(f"{spec.op} takes {spec.n_in} inputs, has {b.n_inputs}", "arity")
        reads = [b.add("Read", [b.var(k)], part=f"read_{name}")
                 for k, name in enumerate(spec.variables)]
        attrs = {a: bool(b.attr(a, a == "update_slots")) for a in spec.attrs}
        new = b.add(spec.fn, reads + [b.input(k) for k in range(nv, spec.n_in)], attrs,
                    part="update")
        for k, name in enumerate(spec.variables):
            b.add("Assign", [b.var(k), DataIn(new.node, k)], {"fn": "Snd"}, part=f"write_{name}")
        b.add("NoOp", [])   # the join: the builder puts the writes under it
        b.exclusive()
        return []


for _spec in OPTIMIZERS.values():
    _optimizer_op(_spec)


# -- refused by name -----------------------------------------------------------

REF_VARIABLE_OPS = ("VariableV2", "Variable", "TemporaryVariable", "DestroyTemporaryVariable",
                    "Assign", "AssignAdd", "AssignSub", "IsVariableInitialized", "RefIdentity",
                    "ScatterAdd", "ScatterSub", "ScatterMul", "ScatterDiv", "ScatterMin",
                    "ScatterMax", "ScatterUpdate", "ScatterNdAdd", "ScatterNdSub",
                    "ScatterNdUpdate", "CountUpTo") + tuple(
    s.op.removeprefix("Resource") for s in OPTIMIZERS.values())

_REF_REASON = ("a reference variable (TF1's VariableV2 and the ops on its ref tensor) is not "
               "modelled: its consumers receive a reference to the variable's buffer, not a "
               "snapshot, so what a 'read' sees depends on writes that run after it (an "
               "Identity copies, a ref input does not), and its updates lock only with "
               "use_locking; build the graph with resource variables instead "
               "(tf.compat.v1.enable_resource_variables(), or use_resource=True)")


for _op in REF_VARIABLE_OPS:
    refuse(_op, _REF_REASON, "ref-variable", FAMILY)


#: GatherNd's CPU kernel is a function of its inputs (data movement: no
#: arithmetic on the elements), run where its numpy model cannot
#: (oracle/kernels.py; math.py argues the other families' kernels).
kernels_are_functions("GatherNd", "data movement or index computation: no arithmetic on the "
                      "elements")
