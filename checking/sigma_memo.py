"""The last minimized σ of an original program, remembered across checks.

`tfsem grappler` (and its benchmark, and a nightly sweep over optimizers)
checks one original program P against the output of several rewrites, and
the `unsound` ones mostly differ in the same parts of P: the σ one check's
minimization left (its tensors that do not matter all zero, those that do
with the values that make the difference) is often a counterexample for the
next rewrite too, and the tensors that refused a small value there mostly
refuse it again.  Minimization's passes spend most of their confirmations
on groups that refuse (delta debugging halves them down to the single
tensors that keep their values), and on a real graph each confirmation is a
run of both programs.

What is remembered, per program object (held by a weak reference, as
checking/canonical_memo.py does, and per semantics mode, observation and
`functions.evaluation_epoch()`): the σ the last minimization of a check of
P kept (a σ the full oracle confirmed for that check's rewrite), and which
members (whole tensors, or elements of small tensors) refused each small
value there.

How it is used (`minimize.minimize_concrete`'s `start` and `known`): a
later check of P asks about the remembered σ first, as one candidate step,
confirmed as every other step is; only where it is accepted (or is the
found σ already) does delta debugging go on where that check's left off:
a group that refused a value together there is not asked again (its
halves are), the members that refused on their own are asked once more at
the end, together, in one step per value.  Members the remembered σ
already has small cost nothing (`_Edit.already`).  Where it is refused,
the tensors it had all zero are tried first (`minimize_concrete`).

**Why this never changes a verdict or shows a σ that is not a
counterexample.**  The memory only proposes candidates: the remembered σ
is a step like any other (`confirm` decides it, the check's full oracle
confirms the σ kept last), and which members are tried in which groups is
the order of the search, never its acceptance.  What it can change is how
small the σ shown is: a member that refused with the previous rewrite but
would take a small value alone with this one keeps its value (it is tried
with the others that refused before, not alone), and a group that refused
there but would take it now is taken in halves, at more steps.  A σ from another
program, mode or registry is never proposed (the key), and a σ whose
tensors do not match this check's (name, dtype, shape) is proposed only
where they do.  `TFSEM_SIGMA_MEMO=0` (or `REMEMBER = False`) turns it off.

Memory: one σ per program object (the last one kept, in whichever mode),
dropped with its program: on MobileNetV2 a σ is 4.5 million
float32 elements, 18 MB, held while the original is.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

from tfsem.oracle import functions as fns
from tfsem.oracle.program import Program

ENV = "TFSEM_SIGMA_MEMO"
#: False: no σ remembered or proposed (the differential tests' reference)
REMEMBER = True

_lock = threading.Lock()
#: id(program) -> (weak reference, key, σ, refusals)
_entries: dict[int, tuple] = {}
#: counts, for tests and benchmarks
counts = {"recalled": 0, "remembered": 0}


def enabled() -> bool:
    return REMEMBER and os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "no", "false")


def _key(semantics: str, observe: str) -> tuple:
    return (semantics, observe, *fns.evaluation_epoch())


def recall(p: Program, semantics: str, observe: str) -> tuple[Any, dict, bool] | None:
    """(σ, refusals, minimized) remembered for `p` in this mode, or None.
    σ is (feeds, init), fresh dicts; refusals maps each small value to the
    members that refused it (`minimize_concrete`'s `known`); minimized:
    whether some minimization step made σ smaller than a check found it
    (in that check or in one it went on from)."""
    if not enabled():
        return None
    key = _key(semantics, observe)
    with _lock:
        entry = _entries.get(id(p))
        if entry is None or entry[0]() is not p or entry[1] != key:
            return None
        counts["recalled"] += 1
        _ref, _key_, (feeds, init), refusals, minimized = entry
    return (dict(feeds), dict(init)), {k: set(v) for k, v in refusals.items()}, minimized


def remember(p: Program, semantics: str, observe: str, sigma, refusals: dict | None,
             minimized: bool = True) -> None:
    """Keep σ (one the full oracle confirmed), the members that refused
    each small value, and whether σ is smaller than found (`recall`), for
    the next check of `p`."""
    if not enabled():
        return
    k = id(p)
    try:
        ref_p = weakref.ref(p, lambda gone, k=k: _forget(gone, k))
    except TypeError:
        return
    entry = (ref_p, _key(semantics, observe), (dict(sigma[0]), dict(sigma[1])),
             {m: frozenset(v) for m, v in (refusals or {}).items()}, bool(minimized))
    with _lock:
        _entries[k] = entry
        counts["remembered"] += 1


def _forget(gone: weakref.ref, k: int) -> None:
    """A program's weak reference's callback: its σ is dropped with it.
    Two dict operations, each atomic, and no lock (a callback may run in
    the middle of this module's own updates under its lock): the entry is
    dropped only where it is still this program's (its id may be another
    program's by now, whose entry stays)."""
    entry = _entries.get(k)
    if entry is not None and entry[0] is gone:
        _entries.pop(k, None)


def snapshot() -> dict:
    """What is remembered now (benchmarks: a repeated check is run with the
    memory as its first run found it, `restore`)."""
    with _lock:
        return {k: e for k, e in list(_entries.items()) if e[0]() is not None}


def restore(saved: dict) -> None:
    """Remember exactly what `snapshot` gave, less the entries of programs
    gone since (whose callbacks have run: put back, nothing would drop
    them)."""
    with _lock:
        _entries.clear()
        _entries.update((k, e) for k, e in saved.items() if e[0]() is not None)


def clear() -> None:
    """Forget every remembered σ."""
    with _lock:
        _entries.clear()
