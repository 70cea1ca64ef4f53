"""Batched differential testing: one schedule on B valuations at once.

For rewrites that Z3 cannot settle (float-heavy, opaque functions, timeouts),
tfsem tests Outcomes(P', σ) ⊆ Outcomes(P, σ) on many σ.  Each schedule is
evaluated on B valuations at once: every feed and variable holds an array with
a leading batch axis, shape (B, *s) for the declared shape s, and registry
functions run through their `batched_impl` (`tfsem.oracle.functions`).

Which schedules: :func:`tfsem.backends.classes.schedule_classes` gives, for
each program, schedules whose outcomes at any σ are exactly Outcomes(P, σ).
A valuation σ is a counterexample when some schedule of P' gives an outcome
that no schedule of P gives at σ; the test is vectorized: one boolean per
valuation for each pair of schedules, combined on the device.  Only the
verdict (a count and the first bad row) comes back to the host.

Errors per valuation.  Whether a value is an error, and which, depends only on
which inputs are errors and on shapes and dtypes, never on the numbers
(`shape-mismatch` and `dtype-mismatch` are about shapes and dtypes, and the
built-in functions raise nothing else).  Valuations are therefore grouped by
their *error pattern* (which variables start uninitialized, which feeds are
errors): within a group every value is either one error for all rows or an
array of rows, and each row gets exactly the result it gets alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from tfsem.oracle.explore import DEFAULT_MAX_SECONDS, DEFAULT_MAX_STATES
from tfsem.oracle.functions import Function, ShapeError
from tfsem.oracle.outcomes import OUTPUTS, Outcome, make_outcome
from tfsem.oracle.program import Program, TensorType
from tfsem.oracle.semantics import ATOMIC
from tfsem.oracle.values import UNINITIALIZED, Error, Tensor, Value

from .arraymodule import Backend
from .classes import schedule_classes
from .execute import Machine, _backend, apply_function, replay


class NotBatchable(RuntimeError):
    """A function without `batched_impl` behaved differently across rows of
    one batch (an error for some valuations only, or results of different
    shapes): the batch cannot hold its results."""


# ---------------------------------------------------------------------------
# Batches of valuations


@dataclass
class Batch:
    """B valuations σ on the device: each feed and initial value is an array of
    shape (B, *s), or one Error for all B (an absent variable starts
    uninitialized)."""
    size: int
    feeds: dict[str, Any]
    init: dict[str, Any]

    def row(self, b: int, backend: Backend) -> tuple[dict[str, Value], dict[str, Value]]:
        """Valuation b as host values (one transfer)."""
        items = list(self.feeds.items()) + list(self.init.items())
        arrays = backend.to_host([v[b] for _, v in items if not isinstance(v, Error)])
        it = iter(arrays)
        values = {k: v if isinstance(v, Error) else Tensor(next(it)) for k, v in items}
        return ({k: values[k] for k in self.feeds}, {k: values[k] for k in self.init})


def batch_from_rows(rows: Sequence[tuple[Mapping[str, Value], Mapping[str, Value]]],
                    backend: Backend) -> Batch:
    """Stack host valuations (feeds, init) that share one error pattern and
    shapes into a batch (one transfer per input)."""
    first_feeds, first_init = rows[0]

    def stack(key: str, pick) -> Any:
        v0 = pick(rows[0])[key]
        if isinstance(v0, Error):
            if any(pick(r)[key] != v0 for r in rows):
                raise ValueError(f"{key}: rows of one batch share their error pattern")
            return v0
        return backend.to_device(np.stack([pick(r)[key].array for r in rows]))

    return Batch(len(rows),
                 {k: stack(k, lambda r: r[0]) for k in first_feeds},
                 {k: stack(k, lambda r: r[1]) for k in first_init})


_INT_EDGES = np.array([0, 1, -1, 2, -2, 2**31 - 1, -2**31, 2**32, 2**63 - 1, -2**63], dtype=np.int64)
_F32 = np.finfo(np.float32)
_FLOAT_EDGES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, _F32.max, -_F32.max,
                         _F32.tiny, _F32.smallest_subnormal, 3.0, 0.1], dtype=np.float32)


def random_values(rng: np.random.Generator, t: TensorType, size: int) -> np.ndarray:
    """`size` random values of type t, shape (size, *t.shape), mixing small
    numbers (most counterexamples are small), edge values and the full range;
    floats also get every magnitude, infinities, NaN and -0.0."""
    shape = (size, *t.shape)
    kind = rng.integers(0, 4, shape)
    if t.dtype == "int64":
        out = rng.integers(-4, 5, shape, dtype=np.int64)
        np.copyto(out, rng.integers(-1000, 1001, shape, dtype=np.int64), where=kind == 1)
        np.copyto(out, rng.choice(_INT_EDGES, shape), where=kind == 2)
        np.copyto(out, rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, shape,
                                    dtype=np.int64, endpoint=True), where=kind == 3)
        return out
    out = rng.integers(-4, 5, shape).astype(np.float32)
    sign = np.where(rng.integers(0, 2, shape) == 1, np.float32(-1), np.float32(1))
    magnitude = np.ldexp(rng.random(shape, dtype=np.float32) + np.float32(1),
                         rng.integers(-40, 41, shape)).astype(np.float32)
    np.copyto(out, sign * magnitude, where=kind == 1)
    np.copyto(out, rng.choice(_FLOAT_EDGES, shape), where=kind == 2)
    np.copyto(out, rng.integers(0, 2**32, shape, dtype=np.uint32).view(np.float32), where=kind == 3)
    return out


def input_types(*programs: Program) -> tuple[dict[str, TensorType], dict[str, TensorType]]:
    """The feeds and variables of the programs with their declared types (the
    first program that declares one wins)."""
    feeds: dict[str, TensorType] = {}
    variables: dict[str, TensorType] = {}
    for p in programs:
        for f in p.feed_names:
            feeds.setdefault(f, p.feed_type(f))
        for x, t in p.variables.items():
            variables.setdefault(x, t)
    return feeds, variables


def random_batch(feed_types: Mapping[str, TensorType], var_types: Mapping[str, TensorType],
                 size: int, rng: np.random.Generator, backend: Backend,
                 uninitialized: frozenset[str] = frozenset()) -> Batch:
    """`size` random valuations, generated on the host and moved to the device
    once; the variables in `uninitialized` start uninitialized in every row."""
    feeds = {f: backend.to_device(random_values(rng, t, size)) for f, t in sorted(feed_types.items())}
    init = {x: Error(UNINITIALIZED) if x in uninitialized else
            backend.to_device(random_values(rng, t, size)) for x, t in sorted(var_types.items())}
    return Batch(size, feeds, init)


# ---------------------------------------------------------------------------
# Evaluation


def _batched_call(xp: Any, size: int):
    def call(fn: Function, arrays: tuple, attrs: Mapping[str, Any]) -> Sequence[Any]:
        if all(a is None for a in arrays):
            # no argument (Const): one value for every valuation
            return [xp.broadcast_to(xp.asarray(r)[None], (size, *xp.asarray(r).shape))
                    for r in fn.impl(xp, arrays, attrs)]
        if fn.batched_impl is not None:
            results = fn.batched_impl(xp, arrays, attrs)
        else:
            results = _row_by_row(fn, arrays, attrs, xp, size)
        for r in results:
            if getattr(r, "shape", ())[:1] != (size,):
                raise RuntimeError(f"batched {fn.name} returned shape {getattr(r, 'shape', ())}, "
                                   f"not a leading batch axis of {size}")
        return results
    return call


def _row_by_row(fn: Function, arrays: tuple, attrs: Mapping[str, Any], xp: Any,
                size: int) -> list[Any]:
    """A function without batched_impl, applied to one valuation at a time."""
    rows, failed = [], 0
    for b in range(size):
        try:
            rows.append([xp.asarray(r) for r in fn.impl(xp, tuple(None if a is None else a[b]
                                                                  for a in arrays), attrs)])
        except (ShapeError, ValueError):
            failed += 1
    if failed == size:
        raise ShapeError(f"{fn.name} rejects every valuation")
    if failed:
        raise NotBatchable(f"{fn.name} fails on {failed} of {size} valuations only")
    try:
        return [xp.stack([row[k] for row in rows]) for k in range(fn.n_out)]
    except ValueError:
        raise NotBatchable(f"{fn.name} gives results of different shapes across valuations") from None


def batched_machine(p: Program, backend: Backend, size: int, semantics: str = ATOMIC) -> Machine:
    xp = backend.xp
    call = _batched_call(xp, size)
    return Machine(p, semantics, lambda fn, args, attrs: apply_function(fn, args, attrs, xp, call))


@dataclass
class BatchedOutcome:
    """Outputs and (unless only outputs are observed) final variable values of
    one schedule on every valuation of a batch, on the device."""
    size: int
    outputs: dict[str, Any]
    state: dict[str, Any] | None

    def row(self, b: int, backend: Backend) -> Outcome:
        """The outcome of valuation b, as the host sees it (one transfer)."""
        items = list(self.outputs.items()) + list((self.state or {}).items())
        it = iter(backend.to_host([v[b] for _, v in items if not isinstance(v, Error)]))
        values = [(k, v if isinstance(v, Error) else Tensor(next(it))) for k, v in items]
        outs = dict(values[:len(self.outputs)])
        return make_outcome(outs, dict(values[len(self.outputs):]),
                            OUTPUTS if self.state is None else "outputs+state")


def evaluate(m: Machine, schedule: Sequence[str], batch: Batch, observe: str) -> BatchedOutcome:
    """One schedule on every valuation of `batch` (m from :func:`batched_machine`)."""
    return evaluate_all(m, [schedule], batch, observe)[0]


def evaluate_all(m: Machine, schedules: Sequence[Sequence[str]], batch: Batch,
                 observe: str) -> list[BatchedOutcome]:
    """Several schedules on every valuation of `batch`; steps on a prefix that
    schedules share are computed once (`Machine.replay_all`)."""
    finals = m.replay_all(m.start(batch.feeds, batch.init), schedules)
    return [BatchedOutcome(batch.size, dict(st.outputs), None if observe == OUTPUTS else dict(st.vars))
            for st in finals]


def values_equal(x: Any, y: Any, xp: Any, size: int) -> Any:
    """Per valuation, SPEC section 2 equality of two batched values: same
    dtype, shape and elements, floats bit for bit except that NaN equals NaN."""
    if isinstance(x, Error) or isinstance(y, Error):
        same = isinstance(x, Error) and isinstance(y, Error) and x == y
        return xp.full(size, same, dtype=bool)
    if x.dtype != y.dtype or x.shape != y.shape:
        return xp.zeros(size, dtype=bool)
    if x.dtype == np.float32:
        same = (x.view(np.int32) == y.view(np.int32)) | (xp.isnan(x) & xp.isnan(y))
    else:
        same = x == y
    return same.reshape(size, -1).all(axis=1)


def outcomes_equal(a: BatchedOutcome, b: BatchedOutcome, xp: Any) -> Any:
    """Per valuation, whether two batched outcomes are equal."""
    size = a.size
    if a.outputs.keys() != b.outputs.keys() or (a.state is None) != (b.state is None) \
            or (a.state is not None and a.state.keys() != b.state.keys()):
        return xp.zeros(size, dtype=bool)
    eq = xp.ones(size, dtype=bool)
    for k in a.outputs:
        eq &= values_equal(a.outputs[k], b.outputs[k], xp, size)
    for k in a.state or ():
        eq &= values_equal(a.state[k], b.state[k], xp, size)
    return eq


def unmatched(original: Program, rewritten: Program, batch: Batch, backend: Backend,
              original_schedules: Sequence[Sequence[str]],
              rewritten_schedules: Sequence[Sequence[str]],
              semantics: str = ATOMIC, observe: str = "outputs+state") -> tuple[Any, Any]:
    """Per valuation of `batch`, on the device: whether some schedule of the
    rewritten program gives an outcome that none of the original's schedules
    gives, and the index of the first such rewritten schedule (-1 if none).

    Each program's schedules are evaluated together, sharing their common
    prefixes.  For each schedule of the rewrite, the original's schedule with
    the same steps (if any) is compared first, and the comparisons stop once
    every valuation has a match (one flag copied back per comparison), so a
    rewrite that keeps schedules costs about one comparison per schedule."""
    xp = backend.xp
    theirs = evaluate_all(batched_machine(original, backend, batch.size, semantics),
                          original_schedules, batch, observe)
    ours_all = evaluate_all(batched_machine(rewritten, backend, batch.size, semantics),
                            rewritten_schedules, batch, observe)
    position = {tuple(s): j for j, s in reversed(list(enumerate(original_schedules)))}
    bad = xp.zeros(batch.size, dtype=bool)
    first = xp.full(batch.size, -1, dtype=np.int32)
    for k, (s, ours) in enumerate(zip(rewritten_schedules, ours_all)):
        matched = xp.zeros(batch.size, dtype=bool)
        same = position.get(tuple(s))
        order = ([same] if same is not None else []) + \
            [j for j in range(len(original_schedules)) if j != same]
        for j in order:
            matched |= outcomes_equal(ours, theirs[j], xp)
            if backend.to_host([matched.all()])[0]:
                break
        first = xp.where(~matched & ~bad, np.int32(k), first)
        bad |= ~matched
    return bad, first


def bytes_per_valuation(original: Program, rewritten: Program,
                        original_schedules: Sequence[Sequence[str]], backend: Backend,
                        semantics: str = ATOMIC, observe: str = "outputs+state") -> int:
    """A generous estimate of the device memory one valuation takes in
    :func:`unmatched`: its inputs, the outcomes kept for comparison (one per
    schedule of each program, taking the rewrite to have as many schedules as
    the original), and the values in transit during a run (at most a few per
    node), measured on one probe valuation."""
    feed_types, var_types = input_types(original, rewritten)
    probe = random_batch(feed_types, var_types, 1, np.random.default_rng(0), backend)
    m = batched_machine(original, backend, 1, semantics)
    out = evaluate(m, original_schedules[0], probe, observe) if original_schedules \
        else BatchedOutcome(1, {}, None)

    def nbytes(values) -> list[int]:
        return [int(v.nbytes) for v in values if not isinstance(v, Error)]

    inputs = nbytes(list(probe.feeds.values()) + list(probe.init.values()))
    outcome = nbytes(list(out.outputs.values()) + list((out.state or {}).values()))
    largest = max(inputs + outcome + [8])
    nodes = len(original.nodes) + len(rewritten.nodes)
    return sum(inputs) + (2 * len(original_schedules) + 2) * max(sum(outcome), 8) \
        + 4 * nodes * largest + 16


def fitting_batch_size(requested: int, per_valuation: int, backend: Backend,
                       fraction: float = 0.5) -> int:
    """`requested`, lowered so that a batch takes at most `fraction` of the
    memory available where the backend's arrays live."""
    return max(1, min(requested, int(backend.memory_available() * fraction) // per_valuation))


# ---------------------------------------------------------------------------
# The differential test


@dataclass
class Counterexample:
    """A valuation at which the rewritten program's schedule gives an outcome
    that no schedule of the original gives."""
    feeds: dict[str, Value]
    init: dict[str, Value]
    schedule: tuple[str, ...]
    outcome: Outcome


@dataclass
class DifferentialResult:
    """`tried` valuations; the first counterexample found, if any."""
    tried: int
    counterexample: Counterexample | None
    original_schedules: int
    rewritten_schedules: int
    backend: str
    seconds: float
    patterns: list[frozenset[str]] = field(default_factory=list)
    batch_size: int = 0


def error_patterns(var_types: Mapping[str, TensorType], limit: int = 8) -> list[frozenset[str]]:
    """Which variables start uninitialized: none (most valuations), each one
    alone (up to `limit`), and all of them."""
    names = sorted(var_types)
    out = [frozenset()] + [frozenset([x]) for x in names[:limit]]
    if len(names) > 1:
        out.append(frozenset(names))
    return out


def differential_test(original: Program, rewritten: Program, valuations: int, seed: int = 0,
                      backend: Backend | str = "numpy", semantics: str = ATOMIC,
                      observe: str = "outputs+state", batch_size: int = 1 << 20,
                      original_schedules: Sequence[Sequence[str]] | None = None,
                      rewritten_schedules: Sequence[Sequence[str]] | None = None,
                      max_states: int = DEFAULT_MAX_STATES,
                      max_seconds: float = DEFAULT_MAX_SECONDS) -> DifferentialResult:
    """Test Outcomes(P', σ) ⊆ Outcomes(P, σ) on `valuations` random σ (drawn
    from `seed`), `batch_size` at a time (lowered to what fits in half the
    free memory: :func:`fitting_batch_size`), and stop at the first
    counterexample.

    Schedules default to :func:`schedule_classes` of each program (raises
    BudgetExceeded when that search runs out of budget).  About one valuation
    in eight has some variable uninitialized (:func:`error_patterns`)."""
    started = time.monotonic()
    b = _backend(backend)
    if original_schedules is None:
        original_schedules = schedule_classes(original, semantics, observe, max_states, max_seconds)
    if rewritten_schedules is None:
        rewritten_schedules = schedule_classes(rewritten, semantics, observe, max_states, max_seconds)
    feed_types, var_types = input_types(original, rewritten)
    patterns = error_patterns(var_types)
    batch_size = fitting_batch_size(batch_size, bytes_per_valuation(
        original, rewritten, original_schedules, b, semantics, observe), b)
    rng = np.random.default_rng(seed)
    tried = 0
    while tried < valuations:
        size = min(batch_size, valuations - tried)
        # split the chunk between error patterns: 7/8 initialized, the rest shared
        shares = _shares(size, len(patterns))
        for pattern, share in zip(patterns, shares):
            if share == 0:
                continue
            batch = random_batch(feed_types, var_types, share, rng, b, pattern)
            bad, first = unmatched(original, rewritten, batch, b, original_schedules,
                                   rewritten_schedules, semantics, observe)
            tried += share
            row = b.xp.argmax(bad)
            found, row, k = (int(v) for v in b.to_host([bad[row], row, first[row]]))
            if found:
                feeds, init = batch.row(row, b)
                schedule = tuple(rewritten_schedules[k])
                outcome = replay(rewritten, feeds, init, schedule, b, semantics, observe)
                return DifferentialResult(tried, Counterexample(feeds, init, schedule, outcome),
                                          len(original_schedules), len(rewritten_schedules), b.label,
                                          time.monotonic() - started, patterns, batch_size)
    return DifferentialResult(tried, None, len(original_schedules), len(rewritten_schedules),
                              b.label, time.monotonic() - started, patterns, batch_size)


def _shares(size: int, n_patterns: int) -> list[int]:
    if n_patterns == 1:
        return [size]
    rest = size // 8
    each, extra = divmod(rest, n_patterns - 1)
    others = [each + (1 if i < extra else 0) for i in range(n_patterns - 1)]
    return [size - sum(others)] + others


__all__ = ["Batch", "BatchedOutcome", "Counterexample", "DifferentialResult", "NotBatchable",
           "batch_from_rows", "batched_machine", "differential_test", "error_patterns",
           "evaluate", "input_types", "outcomes_equal", "random_batch", "random_values",
           "unmatched", "values_equal"]
