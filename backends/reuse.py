"""What the confirmations of several checks at one σ share on one backend.

The checks of one original (a graph checked against each optimizer's
rewrite) often confirm their counterexamples at the same σ, and often
replay the same witness schedule of the original there.  A :class:`Session`
holds, for the last σ confirmed on a backend:

* σ uploaded once (the same device arrays for every run at this σ);
* the host value of each device array downloaded here, and of σ's
  (`execute.HostValues`): a variable no step wrote comes back as σ's own
  Tensor, a result two runs share as one Tensor, without a copy;
* the backend's memo of function applications (`execute.Memo`, and the
  control-flow machine's memo by argument bits, backends/controlflow.py),
  so that a run at this σ reuses what an earlier run computed from the same
  arrays (its argument argument: execute.Memo's docstring);
* the outcome of each (program object, semantics, observe, schedule)
  replayed here: replaying it again would repeat the same computation
  (the replay is a deterministic function of the program, σ, the schedule
  and the backend), so its outcome is taken as it is.

Nothing here comes from the oracle: every array and outcome was computed by
this backend's own replays.  σ is told by its exact bits
(`values.sigma_key`: each value's name, dtype, shape and bytes, or an
error's reason, compared in full), so -0.0 and 0.0, or two NaN payloads,
are different σ.  One session is held per backend (by its label:
numpy's and cupy's, which a machine with a GPU confirms on one after the
other), a confirmation at another σ replacing that backend's; each memo
bounded (SESSION_MEMO_BYTES).  (Until this was so, one session was held in
all: on a machine with a GPU, cupy's confirmation replaced numpy's
session and the next one numpy's, so nothing was reused there.)
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any, Mapping, Sequence

from tfsem.oracle import functions as fns
from tfsem.oracle.outcomes import Outcome
from tfsem.oracle.values import Value, sigma_key

from .arraymodule import Backend
from .execute import HostValues, Memo, upload

#: the most bytes of results a session's memos hold (each)
SESSION_MEMO_BYTES = 256 << 20

#: the most bytes of downloaded values a session keeps the host values of
SESSION_HOST_BYTES = 64 << 20

#: the most outcomes a session remembers
SESSION_OUTCOMES = 64


class Session:
    """The shared state of the confirmations at one σ on one backend."""

    def __init__(self, backend: Backend, key: tuple, feeds: Mapping[str, Value],
                 init: Mapping[str, Value]):
        self.xp = backend.xp
        self.label = backend.label
        #: σ by its exact bits (`values.sigma_key`)
        self.key = key
        self.epoch: tuple = ()
        #: the registry's functions when the session began, by name
        self.registry: dict = {}
        self._backend, self._feeds, self._init = backend, feeds, init
        self._uploaded: tuple | None = None
        self.memo = Memo(backend.xp, SESSION_MEMO_BYTES)
        #: the host values of σ and of the arrays downloaded here
        #: (execute.HostValues says why each is a fresh download's value)
        self.host = HostValues(SESSION_HOST_BYTES)
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
                self.host.add_sigma(self._uploaded[0], self._feeds)
                self.host.add_sigma(self._uploaded[1], self._init)
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


#: the current session of each backend, by its label
_current: dict[str, Session] = {}
_lock = threading.Lock()


def _epoch() -> tuple:
    """What else a session is valid for, besides the registry's functions
    (`session`): the function registry's version (a function registered
    again is another function), whether TensorFlow's kernels are on and the
    tensor size limit (a confirmation with kernels off must not stand on a
    kernel's result kept at the same σ: review22), and under pytest the
    test that made it (a test may patch a function or a machine in place:
    what a session holds does not outlive it)."""
    return (*fns.evaluation_epoch(), os.environ.get("PYTEST_CURRENT_TEST"))


def session(backend: Backend, feeds: Mapping[str, Value], init: Mapping[str, Value]) -> Session:
    """The session of σ on `backend`: the current one when it is this σ's
    on this backend's array module (the same module object: a fresh cupy
    stand-in is another), in the same epoch (`_epoch`) and while every
    function the registry held when it began is still the one it holds
    under that name (`functions.still_registered`: one put in by hand
    changes no version, review22), else a new one that replaces it.  (The
    functions are compared by identity, and the session keeps them alive:
    an id is not reused while it is held.  A name registered since, such
    as a TensorFlow op's opaque function made when first looked up during
    a run, ends the session too: the registry is the one it began with,
    name for name.)"""
    key = sigma_key(feeds, init)
    epoch = _epoch()
    registry = fns.registered(None)
    with _lock:
        s = _current.get(backend.label)
    if s is not None and s.xp is backend.xp and s.label == backend.label and \
            s.epoch == epoch and s.key == key and len(s.registry) == len(registry) and \
            fns.still_registered(s.registry):
        return s
    s = Session(backend, key, feeds, init)
    s.epoch = epoch
    s.registry = registry
    with _lock:
        _current[backend.label] = s
    return s


def clear() -> None:
    """Forget the current sessions (tests, benchmarks: a cold start)."""
    with _lock:
        _current.clear()
