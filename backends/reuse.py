"""What the confirmations of several checks at one σ share on one backend.

The checks of one original (a graph checked against each optimizer's
rewrite) often confirm their counterexamples at the same σ, and often
replay the same witness schedule of the original there.  A :class:`Session`
holds, for the last σ confirmed on a backend:

* σ uploaded once (the same device arrays for every run at this σ);
* the backend's memo of function applications (`execute.Memo`, and the
  control-flow machine's memo by argument bits, backends/controlflow.py),
  so that a run at this σ reuses what an earlier run computed from the same
  arrays (its argument argument: execute.Memo's docstring);
* the outcome of each (program object, semantics, observe, schedule)
  replayed here: replaying it again would repeat the same computation
  (the replay is a deterministic function of the program, σ, the schedule
  and the backend), so its outcome is taken as it is.

Nothing here comes from the oracle: every array and outcome was computed by
this backend's own replays.  σ is told by its digest (BLAKE2b-256 over each
value's name, dtype, shape and bytes, or an error's reason; two σ with one
digest would need a collision of BLAKE2b), so -0.0 and 0.0, or two NaN
payloads, are different σ.  One session is held at a time (a confirmation
at another σ, or on another backend, replaces it), its memo bounded
(SESSION_MEMO_BYTES).
"""

from __future__ import annotations

import hashlib
import os
import threading
import weakref
from typing import Any, Mapping, Sequence

import numpy as np

from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.outcomes import Outcome
from tfsem.oracle.values import Error, Value

from .arraymodule import Backend
from .execute import Memo, upload

#: the most bytes of results a session's memos hold (each)
SESSION_MEMO_BYTES = 256 << 20

#: the most outcomes a session remembers
SESSION_OUTCOMES = 64


def sigma_digest(feeds: Mapping[str, Value], init: Mapping[str, Value]) -> bytes:
    """BLAKE2b-256 of σ: every feed and variable by name, with its dtype,
    shape and bytes (an error value by its reason)."""
    h = hashlib.blake2b(digest_size=32)
    for part, values in ((b"feeds", feeds), (b"init", init)):
        h.update(part)
        for name in sorted(values):
            v = values[name]
            h.update(len(name).to_bytes(4, "little"))
            h.update(name.encode())
            if isinstance(v, Error):
                h.update(b"E" + v.reason.encode() + b"\0")
                continue
            a = v.array
            h.update(b"T" + str(a.dtype).encode() + b"\0" + a.dtype.str.encode() + b"\0")
            h.update(repr(tuple(a.shape)).encode())
            h.update(np.ascontiguousarray(a).view(np.uint8).reshape(-1).data)
    return h.digest()


class Session:
    """The shared state of the confirmations at one σ on one backend."""

    def __init__(self, backend: Backend, digest: bytes, feeds: Mapping[str, Value],
                 init: Mapping[str, Value]):
        self.xp = backend.xp
        self.label = backend.label
        self.digest = digest
        self.epoch: tuple = ()
        self._backend, self._feeds, self._init = backend, feeds, init
        self._uploaded: tuple | None = None
        self.memo = Memo(backend.xp, SESSION_MEMO_BYTES)
        #: backends/controlflow.py's memo by argument bits (made there)
        self.cf_memo: Any = None
        self._outcomes: dict[tuple, tuple[Any, Outcome]] = {}
        self._lock = threading.Lock()

    def _upload(self) -> tuple:
        # (on first use: the control-flow machine keeps σ on the host)
        with self._lock:
            if self._uploaded is None:
                self._uploaded = (upload(self._feeds, self._backend),
                                  upload(self._init, self._backend))
                self._backend = self._feeds = self._init = None
            return self._uploaded

    @property
    def dev_feeds(self) -> dict:
        """σ's feeds on the device, uploaded once for the session."""
        return self._upload()[0]

    @property
    def dev_init(self) -> dict:
        return self._upload()[1]

    def outcome(self, p: Any, how: tuple, schedule: Sequence[str]) -> Outcome | None:
        """The outcome of `schedule` of program object `p` (run `how`:
        semantics, observe, ...) replayed in this session, or None."""
        got = self._outcomes.get((id(p), how, tuple(schedule)))
        if got is not None and got[0]() is p:
            return got[1]
        return None

    def remember(self, p: Any, how: tuple, schedule: Sequence[str], outcome: Outcome) -> None:
        with self._lock:
            if len(self._outcomes) >= SESSION_OUTCOMES:
                self._outcomes.pop(next(iter(self._outcomes)))
            self._outcomes[(id(p), how, tuple(schedule))] = (weakref.ref(p), outcome)


_current: Session | None = None
_lock = threading.Lock()


def _epoch() -> tuple:
    """What else a session is valid for: the function registry's version (a
    function registered again is another function) and the functions it
    holds now (one put in by hand: review22), whether TensorFlow's kernels
    are on and the tensor size limit (a confirmation with kernels off must
    not stand on a kernel's result kept at the same σ: review22), and under
    pytest the test that made it (a test may patch a function or a machine
    in place: what a session holds does not outlive it).  (The functions
    are compared by identity, and the session keeps them alive: an id is
    not reused while it is held.)"""
    return (fns.version, tuple(fns._REGISTRY.values()), kernels.enabled(),
            fns.MAX_TENSOR_ELEMENTS, os.environ.get("PYTEST_CURRENT_TEST"))


def session(backend: Backend, feeds: Mapping[str, Value], init: Mapping[str, Value]) -> Session:
    """The session of σ on `backend`: the current one when it is this σ's
    on this backend's array module (the same module object: a fresh cupy
    stand-in is another), in the same epoch (`_epoch`), else a new one that
    replaces it."""
    global _current
    digest = sigma_digest(feeds, init)
    epoch = _epoch()
    with _lock:
        s = _current
        if s is not None and s.digest == digest and s.xp is backend.xp and \
                s.label == backend.label and s.epoch == epoch:
            return s
    s = Session(backend, digest, feeds, init)
    s.epoch = epoch
    with _lock:
        _current = s
    return s


def clear() -> None:
    """Forget the current session (tests, benchmarks: a cold start)."""
    global _current
    with _lock:
        _current = None
