"""Batched differential testing: one schedule on B valuations at once.

For rewrites that Z3 cannot settle (float-heavy, opaque functions, timeouts),
tfsem tests Outcomes(P', σ) ⊆ Outcomes(P, σ) on many σ.  Each schedule is
evaluated on B valuations at once: every feed and variable holds an array with
a leading batch axis, shape (B, *s) for the declared shape s, and registry
functions run through their `batched_impl` (`tfsem.oracle.functions`).

Which schedules: each program is split into independent parts (components),
and :func:`tfsem.backends.classes.parts` gives each part schedules whose
outcomes at any σ are exactly the part's outcomes at σ.  A valuation σ is a
counterexample when some choice of schedules of P' gives an outcome that no
schedules of P give at σ; the test is vectorized: one boolean per valuation
for each comparison, combined on the device.  What comes back to the host
during a check is a flag per comparison ("does every valuation match yet?"),
the values of a small sample of valuations (to pick which schedules to
compare), and at the end the verdict: whether a valuation failed, and which.

Errors per valuation.  Whether a value is an error, and which, depends only on
which inputs are errors and on shapes and dtypes, never on the numbers
(`shape-mismatch` and `dtype-mismatch` are about shapes and dtypes, and the
built-in functions raise nothing else).  Valuations are therefore grouped by
their *error pattern* (which variables start uninitialized, which feeds are
errors): within a group every value is either one error for all rows or an
array of rows, and each row gets exactly the result it gets alone.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from tfsem.oracle import kernels
from tfsem.oracle.explore import DEFAULT_MAX_SECONDS, DEFAULT_MAX_STATES
from tfsem.oracle.functions import CannotRun, Function, OpError, ShapeError, beyond_numpy
from tfsem.oracle.outcomes import OUTPUTS, Outcome, make_outcome
from tfsem.oracle.program import Program, TensorType
from tfsem.oracle.semantics import ATOMIC
from tfsem.oracle.values import (BITS_DTYPES, UNINITIALIZED, Error, Tensor, Value, dtype_name,
                                 is_float, random_array)

from .arraymodule import Backend
from .classes import Part, parts, whole
from .execute import Machine, _backend, apply_function, replay


class _OutOfTime(Exception):
    """The differential test's clock ran out in the middle of a batch."""


def _check_clock(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise _OutOfTime()


#: the differential test's deadline while `unmatched_parts` runs a batch
#: (per thread): a function applied one valuation at a time
#: (`_row_by_row`) looks at it every ROW_CLOCK_ROWS valuations.  A batch
#: of 16,384 valuations of a float32 Adam update's import, whose step and
#: check functions have no batched form, took 6.6 s of a check whose
#: budget was 5 s, its clock read only between the programs' parts
_clock = threading.local()
ROW_CLOCK_ROWS = 64


#: the most bytes one batch may take (its arrays at once, estimated by
#: bytes_per_valuation), so that one batch is short and the clock is looked at
#: often: a 4,097-element float32 program took 1.7 GB and 165 s per batch
MAX_BATCH_BYTES = 256 << 20


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
    """`size` random values of type t, shape (size, *t.shape), each element
    drawn from one of four kinds: small numbers (most counterexamples are
    small), larger ones (ints up to 1000; floats of every magnitude), edge
    values (int64 extremes; infinities, NaN, -0.0, float32 extremes), and the
    full range (any int64; any float32 bit pattern)."""
    shape = (size, *t.shape)
    if t.dtype not in ("int64", "float32"):
        # every other dtype (SPEC section 8): edge values (NaN, signed zeros,
        # infinities, subnormals, integer extremes), small ones and random
        # bit patterns, a third each
        return random_array(t.dtype, math.prod(shape), rng).reshape(shape)
    kind = rng.integers(0, 4, shape, dtype=np.int8)
    masks = [kind == k for k in range(4)]
    counts = [int(np.count_nonzero(m)) for m in masks]
    if t.dtype == "int64":
        out = np.empty(shape, np.int64)
        out[masks[0]] = rng.integers(-4, 5, counts[0], dtype=np.int64)
        out[masks[1]] = rng.integers(-1000, 1001, counts[1], dtype=np.int64)
        out[masks[2]] = rng.choice(_INT_EDGES, counts[2])
        out[masks[3]] = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, counts[3],
                                     dtype=np.int64, endpoint=True)
        return out
    out = np.empty(shape, np.float32)
    out[masks[0]] = rng.integers(-4, 5, counts[0], dtype=np.int8)
    sign = np.float32(1) - np.float32(2) * rng.integers(0, 2, counts[1], dtype=np.int8)
    out[masks[1]] = sign * np.ldexp(rng.random(counts[1], dtype=np.float32) + np.float32(1),
                                    rng.integers(-40, 41, counts[1], dtype=np.int8))
    out[masks[2]] = rng.choice(_FLOAT_EDGES, counts[2])
    out[masks[3]] = rng.integers(0, 2**32, counts[3], dtype=np.uint32).view(np.float32)
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
    # (the same call on another array module: the host's recomputation of a
    # call cupy's float32 flushing may have changed, backends/execute.py)
    # (`rows`: that many valuations, a subset of the batch's)
    call.for_module = lambda module, rows=None: _batched_call(  # type: ignore[attr-defined]
        module, size if rows is None else rows)
    return call


def _row_by_row(fn: Function, arrays: tuple, attrs: Mapping[str, Any], xp: Any,
                size: int) -> list[Any]:
    """A function without batched_impl, applied to one valuation at a time."""
    rows, failed = [], 0
    deadline = getattr(_clock, "deadline", None)
    for b in range(size):
        if deadline is not None and b % ROW_CLOCK_ROWS == ROW_CLOCK_ROWS - 1:
            _check_clock(deadline)
        try:
            # (no TensorFlow kernel per valuation, oracle/kernels.py: an op
            # with no numpy model stops the batched run as CannotRun)
            with kernels.use(False):
                results = fn.impl(xp, tuple(None if a is None else a[b] for a in arrays), attrs)
            rows.append([xp.asarray(r) for r in results])
        except OpError as exc:  # an op's own error value: decided valuation by valuation
            raise NotBatchable(f"{fn.name} fails with {exc.reason} on some valuations") from None
        except (ShapeError, ValueError) as exc:
            if isinstance(exc, ValueError) and beyond_numpy(exc):
                raise CannotRun(f"cannot run {fn.name} concretely: numpy holds no array of "
                                f"its result's shape ({exc})") from None
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
    if is_float(x):
        bits = BITS_DTYPES[dtype_name(x.dtype)]
        same = (x.view(bits) == y.view(bits)) | (xp.isnan(x) & xp.isnan(y))
    else:
        same = x == y
    return same.reshape(size, -1).all(axis=1)


@dataclass
class Mismatch:
    """Per valuation, on the device: `bad`, whether some choice of schedules
    of the rewrite gives an outcome that no schedules of the original give,
    and `first`, the index in `choices` of the first such choice (-1 if none).
    A choice maps rewritten parts (by index) to one of their schedules."""
    bad: Any
    first: Any
    choices: list[dict[int, int]]


def _groups(original: Sequence[Part], rewritten: Sequence[Part]) -> list[tuple[list[int], list[int]]]:
    """Parts of both programs joined by shared items (outputs, variables):
    (original part indices, rewritten part indices) per group.  A part with
    no items determines nothing observable and joins no group."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(a: tuple[str, str]) -> tuple[str, str]:
        while parent.setdefault(a, a) != a:
            a = parent[a]
        return a

    for part in (*original, *rewritten):
        items = sorted(part.items)
        for item in items[1:]:
            parent[find(item)] = find(items[0])
    groups: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
    for side, ps in ((0, original), (1, rewritten)):
        for i, part in enumerate(ps):
            if part.items:
                groups.setdefault(find(min(part.items)), ([], []))[side].append(i)
    return list(groups.values())


def _value(outcome: BatchedOutcome, item: tuple[str, str]) -> Any:
    kind, name = item
    return outcome.outputs[name] if kind == "output" else (outcome.state or {})[name]


def unmatched_parts(original: Sequence[Part], rewritten: Sequence[Part], batch: Batch,
                    backend: Backend, semantics: str = ATOMIC,
                    observe: str = "outputs+state", sample: int = 64,
                    deadline: float | None = None) -> Mismatch:
    """The inclusion test, vectorized over the valuations of `batch`.

    Each part's schedules are evaluated together, sharing common prefixes.
    Parts are grouped by shared outputs and variables; within a group, every
    choice of one schedule per rewritten part must match, for each original
    part, one of its schedules on that part's items.

    Which of the original's schedules to compare first: the one with the same
    steps as the chosen schedule (if any), then those whose values on the
    first `sample` valuations are equal to the choice's (found by looking up
    those values, copied to the host once for every schedule), then the rest.
    The comparisons stop once every valuation has a match (one flag copied
    back per comparison), so a sound rewrite costs about one comparison per
    choice however many schedules the original has."""
    xp, size = backend.xp, batch.size

    def run(part: Part) -> list[BatchedOutcome]:
        _check_clock(deadline)
        outer, _clock.deadline = getattr(_clock, "deadline", None), deadline
        try:
            return evaluate_all(batched_machine(part.program, backend, size, semantics),
                                part.schedules, batch, observe)
        finally:
            _clock.deadline = outer
    theirs = [run(p) for p in original]
    ours = [run(p) for p in rewritten]
    head = _samples(theirs, original, ours, rewritten, min(size, sample), backend)
    index = []                     # per original part: sample values -> its schedules
    for i, part in enumerate(original):
        by_key: dict[tuple, list[int]] = {}
        for c in range(len(part.schedules)):
            by_key.setdefault(tuple(head["o", i, c, item] for item in sorted(part.items)), []).append(c)
        index.append(by_key)
    bad = xp.zeros(size, dtype=bool)
    first = xp.full(size, -1, dtype=np.int32)
    choices: list[dict[int, int]] = []
    for o_parts, r_parts in _groups(original, rewritten):
        items_o = frozenset().union(*(original[i].items for i in o_parts))
        items_r = frozenset().union(*(rewritten[j].items for j in r_parts))
        for combo in itertools.product(*(range(len(rewritten[j].schedules)) for j in r_parts)):
            choice = dict(zip(r_parts, combo))
            _check_clock(deadline)
            if items_o != items_r:          # the interfaces differ: nothing matches
                matched = xp.zeros(size, dtype=bool)
            else:
                chosen = {item: (j, k) for j, k in choice.items() for item in rewritten[j].items}
                matched = xp.ones(size, dtype=bool)
                for i in o_parts:
                    key = tuple(head[("r", *chosen[item], item)] for item in sorted(original[i].items))
                    order = _order(original[i], rewritten, choice, index[i].get(key, []))
                    matched &= _part_matches(original[i], theirs[i], ours, chosen, order, backend)
            first = xp.where(~matched & ~bad, np.int32(len(choices)), first)
            bad |= ~matched
            choices.append(choice)
    return Mismatch(bad, first, choices)


def _samples(theirs, original, ours, rewritten, rows: int, backend: Backend) -> dict[tuple, Any]:
    """The values of the first `rows` valuations of every item of every
    schedule's outcome, on the host (one transfer), keyed by (side, part,
    schedule, item); each is a Tensor (SPEC equality over all its rows) or
    an Error."""
    keys, arrays, out = [], [], {}
    for side, outs, ps in (("o", theirs, original), ("r", ours, rewritten)):
        for i, part in enumerate(ps):
            for c, outcome in enumerate(outs[i]):
                for item in part.items:
                    v = _value(outcome, item)
                    if isinstance(v, Error):
                        out[side, i, c, item] = v
                    else:
                        keys.append((side, i, c, item))
                        arrays.append(v[:rows])
    for key, host in zip(keys, backend.to_host(arrays) if arrays else []):
        out[key] = Tensor(host)
    return out


def _order(part: Part, rewritten: Sequence[Part], choice: dict[int, int],
           candidates: list[int]) -> list[int]:
    same = None
    if len(choice) == 1:
        (j, k), = choice.items()
        same = next((c for c, s in enumerate(part.schedules) if s == rewritten[j].schedules[k]), None)
    first = ([same] if same is not None else []) + [c for c in candidates if c != same]
    taken = set(first)
    return first + [c for c in range(len(part.schedules)) if c not in taken]


def _part_matches(part: Part, outcomes: list[BatchedOutcome], ours: list[list[BatchedOutcome]],
                  chosen: dict[tuple[str, str], tuple[int, int]], order: list[int],
                  backend: Backend) -> Any:
    """Per valuation: whether the chosen rewritten schedules agree, on the
    items of original `part`, with one of its schedules (tried in `order`,
    stopping once every valuation matches)."""
    xp, size = backend.xp, outcomes[0].size if outcomes else 0
    matched = xp.zeros(size, dtype=bool)
    for c in order:
        eq = xp.ones(size, dtype=bool)
        for item in sorted(part.items):
            j, k = chosen[item]
            eq &= values_equal(_value(ours[j][k], item), _value(outcomes[c], item), xp, size)
        matched |= eq
        if backend.to_host([matched.all()])[0]:
            break
    return matched


def unmatched(original: Program, rewritten: Program, batch: Batch, backend: Backend,
              original_schedules: Sequence[Sequence[str]],
              rewritten_schedules: Sequence[Sequence[str]],
              semantics: str = ATOMIC, observe: str = "outputs+state") -> tuple[Any, Any]:
    """:func:`unmatched_parts` with each program whole and the given
    schedules: (bad, index of the first failing rewritten schedule or -1;
    with one rewritten part, choice k is schedule k)."""
    m = unmatched_parts(whole(original, original_schedules, observe),
                        whole(rewritten, rewritten_schedules, observe), batch, backend,
                        semantics, observe)
    return m.bad, m.first


def bytes_per_valuation(original: Sequence[Part], backend: Backend, semantics: str = ATOMIC,
                        observe: str = "outputs+state", probe_size: int = 16) -> int:
    """An estimate of the device memory one valuation takes in
    :func:`unmatched_parts`, measured on `probe_size` random valuations: its
    inputs, the distinct arrays that the outcomes of every schedule of every
    part keep (schedules share most final values), counted twice (the rewrite
    is taken to be as large), and the values in transit during a run (one per
    node of the original, and as many for the rewrite, each as large as the
    largest value)."""
    feed_types, var_types = input_types(*(p.program for p in original))
    probe = random_batch(feed_types, var_types, probe_size, np.random.default_rng(0), backend)
    kept: dict[int, int] = {}
    largest = 8 * probe_size

    def note(values) -> None:
        nonlocal largest
        for v in values:
            if not isinstance(v, Error):
                owner = v if v.base is None else v.base
                kept[id(owner)] = int(owner.nbytes)
                largest = max(largest, int(v.nbytes))

    note(list(probe.feeds.values()) + list(probe.init.values()))
    nodes = 0
    for part in original:
        m = batched_machine(part.program, backend, probe_size, semantics)
        for out in evaluate_all(m, part.schedules, probe, observe):
            note(list(out.outputs.values()) + list((out.state or {}).values()))
        nodes += len(part.program.nodes)
    per_probe = 2 * sum(kept.values()) + 2 * nodes * largest
    return per_probe // probe_size + 16


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
    """`tried` valuations; the first counterexample found, if any.  Schedules
    are counted over all parts (independent components) of each program."""
    tried: int
    counterexample: Counterexample | None
    original_schedules: int
    rewritten_schedules: int
    backend: str
    seconds: float
    patterns: list[frozenset[str]] = field(default_factory=list)
    batch_size: int = 0
    original_parts: int = 1
    rewritten_parts: int = 1


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

    Each program is split into its independent components, each with its
    schedule classes (:func:`tfsem.backends.classes.parts`; raises
    BudgetExceeded when that search runs out of budget), unless schedules for
    the whole program are given.  About one valuation in eight has some
    variable uninitialized (:func:`error_patterns`).

    `max_seconds` bounds the whole test (schedule search and batches): the
    clock is looked at between batches and between the schedule choices of a
    batch, and when it runs out the result counts the valuations of the
    batches that were completed (possibly 0) with no counterexample, which is
    true of them; a batch is at most MAX_BATCH_BYTES so that it ends soon."""
    started = time.monotonic()
    deadline = started + max_seconds
    b = _backend(backend)
    theirs = whole(original, original_schedules, observe) if original_schedules is not None \
        else parts(original, semantics, observe, max_states, max_seconds)
    ours = whole(rewritten, rewritten_schedules, observe) if rewritten_schedules is not None \
        else parts(rewritten, semantics, observe, max_states, max_seconds)
    feed_types, var_types = input_types(original, rewritten)
    patterns = error_patterns(var_types)
    per_valuation = bytes_per_valuation(theirs, b, semantics=semantics, observe=observe)
    batch_size = fitting_batch_size(min(batch_size, max(1, MAX_BATCH_BYTES // per_valuation)),
                                    per_valuation, b)
    counts = sum(len(p.schedules) for p in theirs), sum(len(p.schedules) for p in ours)
    rng = np.random.default_rng(seed)
    tried = 0
    while tried < valuations and time.monotonic() < deadline:
        size = min(batch_size, valuations - tried)
        # split the chunk between error patterns: 7/8 initialized, the rest shared
        for pattern, share in zip(patterns, _shares(size, len(patterns))):
            if share == 0:
                continue
            batch = random_batch(feed_types, var_types, share, rng, b, pattern)
            try:
                m = unmatched_parts(theirs, ours, batch, b, semantics, observe, deadline=deadline)
            except _OutOfTime:
                return DifferentialResult(tried, None, *counts, b.label, time.monotonic() - started,
                                          patterns, batch_size, len(theirs), len(ours))
            tried += share
            row = b.xp.argmax(m.bad)
            found, row, k = (int(v) for v in b.to_host([m.bad[row], row, m.first[row]]))
            if found:
                feeds, init = batch.row(row, b)
                choice = m.choices[k]
                schedule = tuple(step for j, part in enumerate(ours)
                                 for step in part.schedules[choice.get(j, 0)])
                outcome = replay(rewritten, feeds, init, schedule, b, semantics, observe)
                return DifferentialResult(tried, Counterexample(feeds, init, schedule, outcome),
                                          *counts, b.label, time.monotonic() - started, patterns,
                                          batch_size, len(theirs), len(ours))
    return DifferentialResult(tried, None, *counts, b.label, time.monotonic() - started, patterns,
                              batch_size, len(theirs), len(ours))


def _shares(size: int, n_patterns: int) -> list[int]:
    if n_patterns == 1:
        return [size]
    rest = size // 8
    each, extra = divmod(rest, n_patterns - 1)
    others = [each + (1 if i < extra else 0) for i in range(n_patterns - 1)]
    return [size - sum(others)] + others


__all__ = ["Batch", "BatchedOutcome", "Counterexample", "DifferentialResult", "NotBatchable",
           "Mismatch", "batch_from_rows", "batched_machine", "differential_test",
           "error_patterns", "evaluate", "evaluate_all", "input_types",
           "random_batch", "random_values", "unmatched", "unmatched_parts", "values_equal"]
