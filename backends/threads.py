"""A real concurrent executor, the way TensorFlow's executor runs a graph.

A thread pool fires every node as soon as its inputs have arrived: when a node
completes, it hands its results to its successors, and each successor whose
last input this was is submitted to the pool at once.  Nothing orders two
ready nodes but the threads themselves.

Variables are shared between the threads and guarded by one lock each:

* ``atomic`` (seed 000): an Assign-f takes the variable's lock, reads w,
  computes f(w, v), writes, and releases: the access is atomic;
* ``decomposed`` (seed 002): the read of an Assign (``n@read``) and its write
  (``n@write``) take the lock separately, and f(w, v) is computed between them
  with the lock released, so other accesses to the variable may interleave.

Every step is appended to the run's log at its linearization point: inside the
variable's lock for an access, before handing on results for any other node.
The log is therefore a schedule that the step semantics accepts and that gives
the run's outcome (the tests replay it on the oracle's semantics).

`jitter` (seconds) makes each step sleep a random time first, so that short
runs interleave in more ways than the scheduler would show on its own.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Mapping

from tfsem.oracle.program import Program
from tfsem.oracle.semantics import ATOMIC
from tfsem.oracle.values import Value

from .arraymodule import Backend
from .execute import (_ASSIGN, _FN, _READ, _VAR, Machine, Observed, RunState, _backend,
                      device_machine, download_outcome, upload)


class _ThreadedRun:
    """One run of a compiled program on a thread pool."""

    def __init__(self, m: Machine, pool: ThreadPoolExecutor, st: RunState,
                 rng: random.Random, jitter: float):
        self.m, self.pool, self.st = m, pool, st
        self.rng, self.jitter = rng, jitter
        self.mutex = threading.Lock()           # inbox, missing counts, outputs, log
        self.var_locks = {x: threading.Lock() for x in m.variables}
        self.done = threading.Event()
        self.completed = 0                      # nodes whose results have been handed on
        self.failure: BaseException | None = None

    def run(self) -> RunState:
        ready, self.st.ready = list(self.st.ready), []
        if self.m.n == 0:
            return self.st
        for i in ready:
            self.pool.submit(self._fire, i)
        self.done.wait()
        if self.failure is not None:
            raise self.failure
        return self.st

    # -- one node, in a worker thread ------------------------------------------------

    def _pause(self) -> None:
        if self.jitter:
            with self.mutex:
                delay = self.rng.random() * self.jitter
            time.sleep(delay)

    def _log(self, t: int) -> None:
        with self.mutex:
            self.st.schedule.append(self.m.label(t))

    def _fire(self, i: int) -> None:
        try:
            self._fire_node(i)
        except BaseException as exc:  # surfaced in run(), never lost in the pool
            with self.mutex:
                if self.failure is None:
                    self.failure = exc
            self.done.set()

    def _fire_node(self, i: int) -> None:
        m, st = self.m, self.st
        kind = m.kind[i]
        self._pause()
        if kind == _FN:
            with self.mutex:
                args = [st.inbox.pop((i, s)) for s in m.data_slots[i]]
            results = m.apply(m.fn[i], args, m.attrs[i])
            self._complete(i, results)
            return
        if kind == _VAR:
            self._complete(i, (None,))
            return
        x = m.var[i]
        if kind == _READ:
            with self.var_locks[x]:
                value = st.vars[x]
                self._log(i)
            self._complete(i, (value,), logged=True)
            return
        assert kind == _ASSIGN
        with self.mutex:
            v = st.inbox.pop((i, m.value_slot[i]))
        if not m.decomposed:
            with self.var_locks[x]:
                w = st.vars[x]
                st.vars[x] = m.assigned(m.fn[i], w, v, w)
                self._log(i)
        else:
            with self.var_locks[x]:
                w = st.vars[x]
                self._log(i)                       # n@read
            self._pause()
            new = m.assign_result(m.fn[i], w, v)   # compute: touches no shared state
            with self.var_locks[x]:
                if new is not None:                # a failed Assign leaves x as it is now
                    st.vars[x] = new
                self._log(m.n + i)                 # n@write
        self._complete(i, (), logged=True)

    def _complete(self, i: int, results: Any, logged: bool = False) -> None:
        """Log the step (unless an access already did, under its lock), then hand
        the results on and submit every successor whose inputs are now all here."""
        m, st = self.m, self.st
        if not logged:
            self._log(i)
        now_ready = []
        with self.mutex:
            for port, j, slot in m.succ[i]:
                if port >= 0 and results[port] is not None:
                    st.inbox[(j, slot)] = results[port]
                st.missing[j] -= 1
                if st.missing[j] == 0:
                    now_ready.append(j)
            for port, name in m.fetch[i]:
                st.outputs[name] = results[port]
            self.completed += 1
            if self.completed == m.n:
                self.done.set()
        for j in now_ready:
            self.pool.submit(self._fire, j)


def run_threads(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                runs: int = 1, backend: Backend | str = "numpy", semantics: str = ATOMIC,
                observe: str = "outputs+state", workers: int | None = None,
                jitter: float = 0.0, seed: int = 0) -> Observed:
    """`runs` concurrent runs on a pool of `workers` threads (default: one per
    node, at most 32).  The seed drives only the jitter: the interleaving is
    the threads' own, so repeated calls may observe different outcomes."""
    b = _backend(backend)
    m = device_machine(p, b, semantics)
    rng = random.Random(seed)
    dev_feeds, dev_init = upload(feeds, b), upload(init, b)
    seen = Observed(0, Counter(), {})
    with ThreadPoolExecutor(max_workers=workers or max(1, min(32, m.n))) as pool:
        for _ in range(runs):
            st = _ThreadedRun(m, pool, m.start(dev_feeds, dev_init), rng, jitter).run()
            seen.add(download_outcome(st, b, observe), st.schedule)
    return seen
