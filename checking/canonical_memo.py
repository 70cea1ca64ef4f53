"""The original program's canonical run at a σ, remembered across checks.

`tfsem grappler` (and its benchmark) checks one original program P against
the output of five optimizers, and each check's probe and confirmations run
P in its canonical order at the same σ (the probe's plain σ, the NaN σ, a
counterexample's σ): the same run, of seconds on a real graph, made again in
every check.  :func:`canonical_outcome` is `refute.canonical_outcome` with
its answers remembered per program object, as the control-flow oracle
already remembers its outcome sets (oracle/controlflow.py).

**Why a remembered answer is the one a fresh run gives.**  The canonical run
is a function of its key and of nothing else:

* the program: the very object (`Program` is frozen; the memo holds it by a
  weak reference and an entry counts only while that reference gives the
  same object, so a recycled id() never finds another program's entry);
* σ, by the exact bits of every value (`values.exact`: a NaN's payload and
  sign and -0.0 are part of the key, not only SPEC equality, which forgets
  NaN payloads; dtype and shape are part of a tensor's key);
* the semantics mode and the observation;
* what the functions are: `functions.version` (a registration that replaced
  a function changes it), the very function objects the program's ops name
  in the registry (kept with the entry and compared by identity on a hit:
  a registry entry changed without `register`, a test's
  monkeypatch.setitem or the fixture undoing it, leaves the version as it
  was; review22), whether TensorFlow's kernels are on
  (`kernels.enabled()`: off, an op with no model cannot run), and the
  tensor size limit (`functions.MAX_TENSOR_ELEMENTS`).

Given those, every step of the run is determined: the choice among enabled
steps is by a fixed priority (the topological order), and each function is
deterministic (the numpy models; TensorFlow's kernels are evaluated twice in
their child and refused where the two differ, oracle/kernels.py: a refusal
is an exception, never remembered, so the determinism check of a first
evaluation is not skipped, it was made).  A run that does not finish, a
deadline passed (BudgetExceeded) or a function that cannot run (CannotRun,
CannotRunHere), leaves nothing behind: the next call runs again and fails
again, as a fresh run would.  Only complete runs are kept, and the
schedule is returned as a new list each time.

The ops a run evaluated on TensorFlow's kernels are kept with its answer and
noted again on a hit (`kernels.note`), so that a verdict names the same
kernels with the memo as without it.

Memory: entries are kept least recently used first out, at most MEMO_BYTES
of tensor bytes in all (an outcome of a training step holds every
variable's final value), and dropped with their program.  `TFSEM_RUN_MEMO=0` turns the memo off.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from typing import Mapping

from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.outcomes import Outcome
from tfsem.oracle.program import ASSIGN, Program
from tfsem.oracle.values import Tensor, Value, sigma_key

from . import refute as ref

ENV = "TFSEM_RUN_MEMO"
#: Bytes of remembered outcomes (their tensors' arrays), all programs together.
MEMO_BYTES = 128 << 20

_memo: "OrderedDict[tuple, tuple]" = OrderedDict()
_memo_bytes = 0
_lock = threading.Lock()
#: counts, for tests and benchmarks: hits, misses
counts = {"hits": 0, "misses": 0}


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "no", "false")


def _nbytes(outcome: Outcome) -> int:
    size = 256
    for _k, v in outcome.parts():
        size += v.array.nbytes if isinstance(v, Tensor) else 64
    return size


def canonical_outcome(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                      semantics: str, observe: str,
                      deadline: float | None = None) -> tuple[Outcome, list[str]]:
    """`refute.canonical_outcome(p, feeds, init, semantics, observe,
    deadline)`, remembered (see the module's docstring for why a hit is
    exactly that answer)."""
    if not enabled():
        return ref.canonical_outcome(p, feeds, init, semantics, observe, deadline)
    try:
        key = (id(p), semantics, observe, *fns.evaluation_epoch(), sigma_key(feeds, init))
        hash(key)
    except TypeError:          # a value with no exact key: not remembered
        return ref.canonical_outcome(p, feeds, init, semantics, observe, deadline)
    with _locked:
        _purge()
        hit = _memo.get(key)
        if hit is not None and hit[0]() is p:
            _memo.move_to_end(key)
            counts["hits"] += 1
        else:
            hit = None
    if hit is not None and not fns.still_registered(hit[5]):
        hit = None      # (a registry entry changed by hand: the version as it was)
    if hit is not None:
        _ref, outcome, schedule, ops, _size, _looked_up = hit
        kernels.note(ops)
        return outcome, list(schedule)
    counts["misses"] += 1
    looked_up = _functions_of(p)
    with kernels.record() as used:
        outcome, schedule = ref.canonical_outcome(p, feeds, init, semantics, observe, deadline)
    _remember(key, p, outcome, schedule, frozenset(used), looked_up)
    return outcome, schedule


def _functions_of(p: Program) -> tuple:
    """(name, the registry's function of that name or None) for every
    function p's nodes name (an Assign's `fn`, any other node's op)."""
    names = {n.attrs.get("fn") if n.op == ASSIGN else n.op for n in p.nodes}
    return tuple((name, fns.lookup(name)) for name in sorted(n for n in names
                                                               if isinstance(n, str)))


def _remember(key: tuple, p: Program, outcome: Outcome, schedule: list[str],
              ops: frozenset, looked_up: tuple) -> None:
    global _memo_bytes
    size = _nbytes(outcome) + 64 * len(schedule)
    if size > MEMO_BYTES // 4:
        return
    try:
        ref_p = weakref.ref(p, _forget)
    except TypeError:
        return
    with _locked:
        old = _memo.pop(key, None)
        if old is not None:
            _memo_bytes -= old[4]
        _memo[key] = (ref_p, outcome, tuple(schedule), ops, size, looked_up)
        _memo_bytes += size
        while _memo_bytes > MEMO_BYTES and _memo:
            _, gone = _memo.popitem(last=False)
            _memo_bytes -= gone[4]


#: weak references of programs gone whose runs are still to be dropped
#: (by `_purge`, under `_lock`)
_dead: list = []


def _forget(ref_p: weakref.ref) -> None:
    """A remembered run's program is gone: so is the run, at once (a
    long-lived process, `tfsem serve`, keeps no dead program's outcomes,
    nor counts them against the live ones' MEMO_BYTES).

    A weak reference's callback runs wherever the program's last reference
    went: in any thread, even in the middle of this module's own update
    under `_lock` (a program dropped by a collection that update's
    allocation started).  So the callback only notes the reference (one
    atomic append) and drops the runs itself only where it can take the
    lock without waiting; where the lock is held, its holder drops them
    when it lets the lock go (`_locked`): the runs go before that update's
    call returns, never at some later call."""
    _dead.append(ref_p)
    _purge_unheld()


def _purge_unheld() -> None:
    """Drop the runs of the programs gone, unless `_lock` is held (by
    another thread, or by this one further up its stack: then its holder
    does, `_locked`).  Looked at again after each purge: a program can go
    while the lock is held here."""
    while _dead and _lock.acquire(blocking=False):
        try:
            _purge()
        finally:
            _lock.release()


class _Locked:
    """`with _locked:`: `_lock` held; on leaving, the runs of the programs
    gone meanwhile (whose callbacks found the lock held) dropped.  Every
    update of `_memo` and `_memo_bytes` is made under it."""

    def __enter__(self) -> None:
        _lock.acquire()

    def __exit__(self, *exc) -> None:
        _lock.release()
        _purge_unheld()


_locked = _Locked()


def _purge() -> None:
    """Drop the runs of the programs gone (under `_lock`)."""
    global _memo_bytes
    if not _dead:
        return
    gone = set()
    while _dead:
        gone.add(id(_dead.pop()))
    # (each of these references lived until it was popped here, as every
    # entry's reference did: an entry's reference has one of these id()s
    # only where it is that reference)
    for key in [k for k, e in _memo.items() if id(e[0]) in gone]:
        _memo_bytes -= _memo.pop(key)[4]


def clear() -> None:
    """Forget every remembered run."""
    global _memo_bytes
    with _locked:
        _memo.clear()
        _memo_bytes = 0


def remembered() -> int:
    """How many runs are remembered (tests)."""
    with _locked:
        _purge()
        return len(_memo)
