"""Function applications remembered inside a check (`scope()`).

A check runs the original P and the rewrite P' at the same σ again and
again: the probe runs P, then P' at the same σ (Grappler changed a few of
P's nodes, P' shares the rest); the confirmation runs them both again;
minimization runs both at σ that differ from the last in a few tensors.
Each run applies every node's function anew, although most applications are
ones made already.  Inside `scope()` (the checker opens one per check:
checking/check.py `check_rewrite`) `functions.Function.apply` looks an
application up here first, and a run recomputes only the nodes whose
arguments are new: the rewritten nodes and their downstream cone.

**Keys.**  An application is keyed by

* the function object itself (its id(), with the object kept alive by the
  entry and compared by identity on a hit: a recycled id() never finds
  another function's entry);
* its attributes by their exact bits (`attrs_token`: floats by their IEEE
  bits, NaN payload and sign included; tensors by dtype, shape and raw
  bytes; ints, strings, bools with their types; a value of any other type
  keys the attributes by the identity of the mapping, kept alive);
* each argument tensor by the identity of the Tensor object, kept alive by
  the entry (an error value by its reason, which is all it has);
* whether TensorFlow's kernels are on (off, an op with no model cannot run):
  `kernels.enabled()`, its environment part read once per scope.

Identity keys cost nothing to make (no hashing of a megabyte activation), and
they find P's applications in P' because the tensors P' passes along are
P's very objects: σ is the same objects, a hit returns the remembered
result objects themselves (so the hit propagates down the cone), and equal
values from different sources are made one object by *interning*
(`intern`): every Const's tensor and every result of at most
INTERN_ELEMENTS elements is looked up by its exact bits (its dtype, shape
and bytes, `_bits_key`, which tell tensors apart as `values.exact` does:
NaN payloads and -0.0 kept apart) and replaced by the first tensor of those
bits.  So P's and P''s Consts, imported separately, give one tensor, and a
recomputed node whose small result equals the old one cuts the
recomputation of its cone off.  On a miss, an argument the memo does not
hold yet (σ, a variable's initial value: made anew by each check and each
minimization step) is interned too (`canonical_args`), whatever its size,
and looked up again: the σ of the check before, made again, finds its
applications.

**Why a hit returns exactly what a fresh application would.**  A
function's results are a function of (function, attributes, arguments) and
of kernels on/off: every registered function is deterministic (the seed's
functions Tensors^k -> Tensors^l; state and randomness are the language's
Var/Read/Assign and σ, never a function's; `explore._Cached` rests on the
same fact), and TensorFlow's kernels are evaluated twice in their child and
refused where the two runs differ (oracle/kernels.py): a refusal is an
exception, and exceptions are never remembered (a failing application --
CannotRun, CannotRunHere, BudgetExceeded, a kernel refused under a deadline
or deferred by `kernels.collecting()` -- runs again and fails again, as a
fresh one would).  Identity of a Tensor implies identity of its bits (a
Tensor is immutable: its array is read-only and owned), and interning
replaces a tensor only by one of the same dtype, shape and bytes, which every
function reads the same way.  Results computed while `kernels.collecting()`
defers evaluations are not remembered (a model that caught the deferral
could have answered otherwise).  The ops a computation evaluated on
TensorFlow's kernels are kept with it and noted again on a hit
(`kernels.note`): a verdict names the same kernels.  Only `xp=numpy`
applications are remembered; the independent back ends (tfsem.backends)
call the implementations directly and never come here.

**Bounds.**  Entries hold at most MEMO_BYTES of argument and result arrays
(each distinct tensor counted once, while an entry holds it), least
recently used out first; the interned tensors at most INTERN_BYTES, the table
dropped when it is full.  A registration that replaces a function
(`functions.register(..., replace=True)`) clears both.  Everything is
dropped when the outermost scope ends, unless the scope has an owner (the
checker's original program): then it is kept for the next check of that
very program object (held by a weak reference: dropped with it), and a
check of any other program starts afresh.  `TFSEM_APPLICATION_MEMO=0` turns it
off.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import os
import struct
import threading
import weakref
from collections import OrderedDict
from typing import Any, Iterator, Mapping

import numpy as np

from . import collector as _collector
from . import kernels as _kernels
from .values import Error, Tensor, exact

ENV = "TFSEM_APPLICATION_MEMO"
#: Bytes of arguments and results kept (per entry; LRU).  384 MiB: the
#: applications of MobileNetV2's training step (6,480 nodes, activations of
#: 0.8 MB) at one σ hold 139 MiB, with a rewrite's at the same σ 233 MiB and
#: with the default pipeline's check after it 340 MiB.  At 192 MiB the
#: second program's run pushed the first's out, least recently used first,
#: so that the next run of the first met none of its own applications (a
#: cyclic scan is LRU's worst case): the original's run at the minimized σ
#: of that check missed the memo 3,787 times (494 TensorFlow kernel
#: evaluations), 1,626 times with room for both (no kernel evaluation).
MEMO_BYTES = 384 << 20
#: A result of at most this many elements is interned (`intern`).
INTERN_ELEMENTS = 4096
#: Bytes of interned tensors kept before the table is dropped.
INTERN_BYTES = 64 << 20
#: An application whose arrays pass this is not kept.
ENTRY_BYTES = 24 << 20


class _Memo:
    __slots__ = ("entries", "bytes", "held", "interned", "intern_bytes", "tokens", "numbers",
                 "serial", "hits", "misses", "lock", "owner", "limit", "kernels_env")

    def __init__(self, owner: Any = None) -> None:
        self.entries: OrderedDict[tuple, tuple] = OrderedDict()
        #: bytes of the distinct tensors the entries hold (`held`)
        self.bytes = 0
        #: id(tensor) -> [the tensor, how many entries hold it]
        self.held: dict[int, list] = {}
        self.interned: dict[Any, Tensor] = {}
        self.intern_bytes = 0
        #: id(attrs mapping) -> (the mapping, kept alive; its token)
        self.tokens: dict[int, tuple] = {}
        #: exact attribute key -> its number (`attrs_token`)
        self.numbers: dict[Any, int] = {}
        #: this memo among all of the process (never two alike): what
        #: oracle/explore.py's straight line keeps its answers under
        self.serial = next(_numbers)
        self.hits = self.misses = 0
        self.lock = threading.Lock()
        #: the original program whose checks this memo serves (a weak
        #: reference), and the tensor size limit its entries were made
        #: under (functions.MAX_TENSOR_ELEMENTS: a hit skips the size
        #: check, so a memo of another limit is emptied, `functions.apply`)
        self.owner = owner
        self.limit: int | None = None
        #: whether the environment turns TensorFlow's kernels on, read when
        #: the outermost scope starts (`key`: a thread's `kernels.use()`
        #: overrides it, as in `kernels.enabled()`)
        self.kernels_env = _kernels.environment_enabled()


_active: _Memo | None = None
#: whether the outermost scope froze the collector's objects (`_freeze`)
_froze = False
#: the last scope's memo, kept for the next check of the same original
#: program (`scope(owner)`), dropped when that program is
_kept: _Memo | None = None
_depth = 0
_scope_lock = threading.Lock()
#: counts of the last scope (tests, benchmarks)
last = {"hits": 0, "misses": 0}


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "no", "false")


@contextlib.contextmanager
def scope(owner: Any = None) -> Iterator[None]:
    """Applications remembered inside the block; nested blocks (or a
    concurrent one) share the outermost one's memo.  With an `owner` (the
    checker gives the original program), the memo is kept when the block
    ends and serves the next block of the same owner (the checks of one
    original against several rewrites: P's applications are made once);
    a block of another owner, or none, drops it and starts afresh."""
    global _active, _kept, _depth, _froze
    with _scope_lock:
        _depth += 1
        if _depth == 1:
            _froze = _freeze()
        if _depth == 1 and enabled():
            kept, _kept = _kept, None
            if (kept is not None and owner is not None and kept.owner is not None
                    and kept.owner() is owner):
                _active = kept
                kept.kernels_env = _kernels.environment_enabled()
                _prune(kept)
            else:
                try:
                    ref = weakref.ref(owner, _dropped) if owner is not None else None
                except TypeError:
                    ref = None
                _active = _Memo(ref)
    try:
        yield
    finally:
        with _scope_lock:
            _depth -= 1
            if _depth == 0:
                if _froze:
                    _froze = False
                    _collector.unfreeze_for_check()
                if _active is not None:
                    last.update(hits=_active.hits, misses=_active.misses)
                    if _active.owner is not None:
                        _kept = _active
                _active = None


def _freeze() -> bool:
    """What the process holds when a check starts, out of the cyclic
    collector's sight until it ends (`gc.freeze()`; `gc.unfreeze()` when the
    outermost scope ends puts it back in the oldest generation: two list
    splices).  Whether it froze.

    A check allocates steadily (tensors, outcomes, schedules, this memo's
    entries), and what survives two young collections reaches the oldest
    generation, which then sets off full collections: each walked every
    object the process held -- the programs of every graph imported so far
    (the benchmark's worker keeps 31), the kept memo, TensorFlow's and
    z3's modules -- to find none of them garbage.  On the real corpus
    that was 2.9 of 25.2 s of the checks' CPU (MobileNetV2's first two
    checks 1.0 of 4.3 s, tf1_mlp_sgd's default pipeline 0.4 of 0.74 s).
    Frozen, those objects are not walked; young collections, and full ones
    over what the check made, run as before, so a cycle the check drops is
    collected as it was.  What this delays: an object of a cycle made
    before the check that becomes unreachable during it waits for the
    first full collection after the check (reference counting, which
    frees everything outside cycles, is untouched); no verdict depends on
    when memory is reclaimed.  Skipped with the collector off, and where something
    froze objects of its own (`tfsem serve` freezes what it built: the
    unfreeze would thaw them)."""
    return _collector.freeze_for_check()


def _prune(memo: _Memo) -> None:
    """The interned tensors no entry holds, dropped before the memo serves
    the next check (review22): a Const's tensor is interned uncounted
    (`intern_const`), so a kept memo held every Const of every rewrite
    checked against its original (120 checks of rewrites with a 4 MiB
    Const: 480 MiB).  What an entry holds is counted (MEMO_BYTES); the
    rest is interned again when met again (the original's Consts: their
    hashes are made once, on the tensor)."""
    held = memo.held
    memo.interned = {k: t for k, t in memo.interned.items() if id(t) in held}
    memo.intern_bytes = sum(t.array.nbytes + 64 for t in memo.interned.values()
                            if t.array.size <= INTERN_ELEMENTS)


def _dropped(_ref) -> None:
    """The owner of the kept memo is gone: so is the memo."""
    global _kept
    kept = _kept
    if kept is not None and kept.owner is _ref:
        _kept = None


def active() -> _Memo | None:
    return _active


def clear() -> None:
    """Forget every application (a function was replaced)."""
    global _kept
    _kept = None
    memo = _active
    if memo is not None:
        empty(memo)


def empty(memo: _Memo, limit: int | None = None) -> None:
    """Forget the memo's applications; its entries are made under `limit`
    from now on."""
    memo.limit = limit
    with memo.lock:
        memo.entries.clear()
        memo.held.clear()
        memo.bytes = 0
        memo.interned.clear()
        memo.intern_bytes = 0
        memo.tokens.clear()
        memo.numbers.clear()


# -- keys ---------------------------------------------------------------------


class _ByIdentity:
    """A mapping as a key by its identity (kept alive by the key itself)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ByIdentity) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


class _Opaque(Exception):
    """An attribute value of a type whose exact key is not known here."""


def _exact_attr(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str, bytes)):
        return (type(v).__name__, v)
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, float):
        return ("float", struct.pack("<d", v))
    if isinstance(v, Tensor):
        return ("tensor", v.dtype, v.shape, np.ascontiguousarray(v.array).tobytes())
    if isinstance(v, Error):
        return ("error", v.reason)
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, v.shape, np.ascontiguousarray(v).tobytes())
    if isinstance(v, np.generic):
        return ("scalar", v.dtype.str, v.tobytes())
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_exact_attr(x) for x in v))
    if isinstance(v, dict):
        items = []
        for k, x in v.items():
            if not isinstance(k, str):
                raise _Opaque(type(k).__name__)
            items.append((k, _exact_attr(x)))
        return ("dict", tuple(sorted(items, key=lambda kv: kv[0])))
    raise _Opaque(type(v).__name__)


def _walk(v: Any, out: list) -> None:
    """The objects a list, tuple or dict attribute value is made of, and
    each container's length, in order (compared by identity: a change in
    place replaces an element object); an array by its exact bits."""
    t = type(v)
    if t is list or t is tuple:
        out.append(len(v))
        for x in v:
            _walk(x, out)
    elif t is dict:
        out.append(len(v))
        for k, x in v.items():
            out.append(k)
            _walk(x, out)
    elif isinstance(v, np.ndarray):
        out.append(_exact_attr(v))
    else:
        out.append(v)


def _flat(v: Any) -> bool:
    return all(type(x) not in _CONTAINERS and not isinstance(x, np.ndarray) for x in v)


def _snapshot(attrs: Mapping[str, Any]) -> tuple:
    """What the token of `attrs` was made from: its items (by identity), and
    for each value that can change in place (a list, dict or array) what it
    is made of then: a flat list's or tuple's elements (a tuple of them),
    else `_walk`'s list; None where no value can change."""
    items = tuple(attrs.items())
    deep = None
    for _k, v in items:
        t = type(v)
        if t in _CONTAINERS or isinstance(v, np.ndarray):
            if deep is None:
                deep = []
            if (t is list or t is tuple) and _flat(v):
                deep.append((v, tuple(v)))
            else:
                parts: list = []
                _walk(v, parts)
                deep.append((v, parts))
    return items, deep


_CONTAINERS = (list, tuple, dict)


def _same_objects(a: list, b: list) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x is not y and not (type(x) is type(y) and type(x) in (int, tuple) and x == y):
            return False        # ((int: a container's length; tuple: an array's bits)
    return True


def _unchanged(attrs: Mapping[str, Any], snapshot: tuple) -> bool:
    items, deep = snapshot
    if len(items) != len(attrs):
        return False
    get = attrs.get
    for k, v in items:
        if get(k, _Opaque) is not v:
            return False
    if deep is None:
        return True
    for v, then in deep:
        if type(then) is tuple:
            if len(v) != len(then) or not all(map(operator.is_, v, then)):
                return False
        else:
            now: list = []
            _walk(v, now)
            if not _same_objects(now, then):
                return False
    return True


def attrs_token(memo: _Memo, attrs: Mapping[str, Any] | None) -> Any:
    """The attributes' exact key, made once per mapping object (kept alive
    while its token is kept, so that its id() is not reused) and made again
    when the mapping holds other objects than then, or a list, dict or
    array in it changed in place since (review22: a caller's dict reused
    with its list changed answered from the old list)."""
    if not attrs:
        return ()
    hit = memo.tokens.get(id(attrs))
    if hit is not None and hit[0] is attrs and _unchanged(attrs, hit[2]):
        return hit[1]
    try:
        token = _exact_attr(dict(attrs))
        hash(token)
    except (_Opaque, TypeError):
        token = _ByIdentity(attrs)          # (which keeps it alive)
    # (the exact key as a number, one per distinct key: a nested tuple
    # hashes anew at every lookup of an application's key, a number at
    # once.  Equal keys get the same number while `numbers` keeps it;
    # numbers are never given twice (`_numbers`), so a key dropped and met
    # again gets a new one, which no entry has: a miss, never a wrong hit)
    number = memo.numbers.get(token)
    if number is None:
        if len(memo.numbers) >= 16384:
            memo.numbers.clear()
        number = memo.numbers[token] = next(_numbers)
    if len(memo.tokens) >= 16384:
        memo.tokens.clear()
    memo.tokens[id(attrs)] = (attrs, number, _snapshot(attrs))
    return number


#: the numbers `attrs_token` gives (never one twice in a process)
_numbers = itertools.count()


#: `intern` and `intern_const` key a tensor by its dtype, shape and bytes
#: (`_bits_key`); False: by `values.exact(t)`, as before (the differential
#: tests' reference).  The same tensors are the same interned objects
#: either way (`_bits_key` says why).
INTERN_BY_BYTES = True


def _bits_key(t: Tensor) -> tuple:
    """t's interning key: (dtype, shape, its array's bytes in C order).

    Why it tells tensors apart exactly as `values.exact(t)` does, so that
    `intern` gives the same tensor for the same tensors: `exact(t)` is t
    itself where its bytes are its canonical bytes (no NaN but numpy's
    NaN of the dtype), and two such are equal when their (dtype, shape,
    canonical bytes) are (`Tensor.__eq__`), here their own bytes; else it
    is t's `Bits` (dtype, shape, its bytes), equal to the Bits of the same
    three only; a Tensor never equals a Bits (`Tensor.__eq__` refuses any
    other type, Bits' dataclass equality another class), and two tensors
    of the same bytes are of one kind (their canonical bytes, made from the
    bytes, are the same).  So exact keys are equal just where (dtype,
    shape, bytes) are.  Made without the search for NaNs that the first
    `exact(t)` of a tensor makes (`values._canonical_bytes`: `isnan`, a
    reduction and a copy, 2.3 us of a small result's interning, which most
    results of a run, never compared, never needed); where the tensor has
    made its key already (a Const's, hashed once), its bytes are taken
    from it: the canonical bytes where its `Bits` is None (then they are its
    bytes), else the Bits' bytes.  (Memory: a fresh result's key holds a
    copy of its bytes, as its equality key did; one compared later makes
    that key too, a second copy: at most INTERN_BYTES more, in results of
    at most INTERN_ELEMENTS elements.)"""
    lazy = t._lazy
    if lazy is not None:
        key, bits = lazy
        return (key[0], key[1], key[2] if bits is None else bits.data)
    arr = t.array
    return (t._dtype, arr.shape, arr.tobytes())


def intern(memo: _Memo, t: Tensor, fresh: bool = False) -> Tensor:
    """The first tensor of t's exact bits seen in this scope (t itself the
    first time).  `fresh`: t is a function's result just made
    (`interned_results`), interned once, by its bytes without the search
    for NaNs; any other tensor (σ, a variable's value, a tensor of the
    caller's) may be interned again at every run that passes it, so its
    key is made once, with the tensor's own (`Tensor._made`, kept by the
    tensor), and the bytes key taken from it: its bytes copied and hashed
    once, not at every run."""
    if INTERN_BY_BYTES:
        if not fresh and t._lazy is None:
            t._made()
        k = _bits_key(t)
    else:
        k = exact(t)
    canon = memo.interned.get(k)
    if canon is not None:
        return canon
    nbytes = t.array.nbytes
    if memo.intern_bytes + nbytes > INTERN_BYTES:
        memo.interned.clear()
        memo.intern_bytes = 0
    memo.interned[k] = t
    memo.intern_bytes += nbytes + 64
    return t


def intern_const(memo: _Memo, value: Tensor) -> Tensor:
    """A Const's tensor, interned whatever its size (the programs hold it
    anyway, and its hash is made once: Tensor's `_hash`; its bytes key
    takes the bytes that key holds, made once)."""
    if INTERN_BY_BYTES:
        if value._lazy is None:
            value._made()
        k = _bits_key(value)
    else:
        k = exact(value)
    canon = memo.interned.get(k)
    if canon is None:
        memo.interned[k] = canon = value
    return canon


def _forced() -> bool | None:
    """`kernels.forced()`, read from this thread's dict of the kernels'
    thread-local state (`use()` sets `forced` there): the same value,
    without the AttributeError `getattr(local, "forced", None)` raises and
    catches inside when `use()` was never called in this thread (0.3 of the
    1.7 us a remembered application took)."""
    return _kernels._local.__dict__.get("forced")


def key(memo: _Memo, fn: Any, args, attrs) -> tuple | None:
    """The application's key, or None when it is not remembered (an
    argument that is neither a tensor nor an error value)."""
    on = _forced()
    parts = [id(fn), attrs_token(memo, attrs), memo.kernels_env if on is None else on]
    for a in args:
        if type(a) is Tensor:
            parts.append(id(a))
        elif isinstance(a, Error):
            parts.append(a)
        else:
            return None
    return tuple(parts)


def lookup_entry(memo: _Memo, k: tuple, fn: Any, args, peek: bool = False) -> tuple | None:
    """The remembered (results, kernel ops) of the application, the ops
    noted (`kernels.note`), or None.  `peek`: a miss is not counted (the
    caller's own lookup counted one) and the ops not noted (the caller
    takes only an answer that used none: functions `_commuted`)."""
    with memo.lock:
        hit = memo.entries.get(k)
        if hit is not None:
            f, _attrs, kept, out, ops = hit
            if f is not fn:
                hit = None
            else:
                for x, y in zip(kept, args):
                    if x is not y and type(y) is Tensor:
                        hit = None    # (cannot happen while the entry keeps them alive: checked anyway)
                        break
        if hit is None:
            if not peek:
                memo.misses += 1
            return None
        memo.entries.move_to_end(k)
        memo.hits += 1
    # (not while `kernels.collecting()` defers evaluations: there the
    # application is made only to collect kernel requests ahead of the
    # steps that need them -- oracle/explore.py `_ask_kernels` -- and its
    # answer is thrown away; the step that uses it looks it up again and
    # notes the ops then.  A step asked for that never fires (the run out
    # of time) named kernels the verdict did not rest on)
    if ops and not peek and not _kernels.deferring():
        _kernels.note(ops)
    return out, ops


def store(memo: _Memo, k: tuple, fn: Any, attrs, args, out: tuple, ops: frozenset) -> None:
    # (one pass makes the list of tensors, with their sizes, and their sum:
    # the same entry, the same counts, as the list and the sum made apart)
    tensors = []
    total = 0
    for v in (*args, *out):
        if type(v) is Tensor:
            size = v.array.nbytes
            tensors.append((v, size))
            total += size
    if total > ENTRY_BYTES:
        return
    with memo.lock:
        entries = memo.entries
        if k in entries:
            _release(memo, entries.pop(k))
        entries[k] = (fn, attrs, tuple(args), out, ops)
        held = memo.held
        for t, size in tensors:
            h = held.get(id(t))
            if h is None:
                held[id(t)] = [t, 1]
                memo.bytes += size + 128
            else:
                h[1] += 1
        while memo.bytes > MEMO_BYTES and entries:
            _, gone = entries.popitem(last=False)
            _release(memo, gone)


def _release(memo: _Memo, entry: tuple) -> None:
    held = memo.held
    for v in (*entry[2], *entry[3]):
        if type(v) is Tensor:
            h = held.get(id(v))
            if h is not None and h[0] is v:
                h[1] -= 1
                if h[1] == 0:
                    del held[id(v)]
                    memo.bytes -= v.array.nbytes + 128


def canonical_args(memo: _Memo, args) -> list | None:
    """On a miss: `args` with each tensor the memo does not hold (a value
    from outside its applications: σ, a variable's initial value, a tensor
    made by the caller) replaced by the interned tensor of its exact bits,
    or None when none changed.  σ is made anew by every check, and by
    minimization for every step; interned, the same bits are the same
    objects as in the runs before, whose applications are then found.  A
    tensor the memo holds (a remembered argument or result) is one already,
    and is not hashed again."""
    held = memo.held
    changed = None
    for i, a in enumerate(args):
        if type(a) is Tensor and id(a) not in held:
            c = intern(memo, a)
            if c is not a:
                if changed is None:
                    changed = list(args)
                changed[i] = c
    return changed


def interned_results(memo: _Memo, out: tuple) -> tuple:
    """`out` with each small tensor replaced by its interned one."""
    if len(out) == 1:
        # (most functions give one result: the same answer, with no
        # generator made twice)
        v = out[0]
        if type(v) is Tensor and v.array.size <= INTERN_ELEMENTS:
            c = intern(memo, v, True)
            return out if c is v else (c,)
        return out
    if not any(type(v) is Tensor and v.array.size <= INTERN_ELEMENTS for v in out):
        return out
    return tuple(intern(memo, v, True) if type(v) is Tensor and v.array.size <= INTERN_ELEMENTS
                 else v for v in out)
