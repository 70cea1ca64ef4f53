"""One Z3 context per thread: what lets `check_rewrite` run in several
threads at once.

Z3's Python API makes every term, sort and solver in one global context
unless it is given another (`ctx=None` means `z3.main_ctx()`), and a context
is not thread-safe.  z3py calls Z3 through ctypes, which lets go of the GIL
during each call, so while one thread is inside Z3 another thread's Python
code runs, and with it any Z3 call it makes, including `Z3_dec_ref` from the
`__del__` of a Z3 object whose last reference that thread dropped.  Three
checks in threads on the one main context crashed the process (a
segmentation fault in `Z3_mk_not`, `Z3_dec_ref`) within a few rounds.

Why a context per thread, not one lock around every check's Z3 work: a lock
is only right if no Z3 call of tfsem can happen outside it, and a Z3
object's `__del__` runs wherever its last reference goes -- after the lock
is released when a checker is freed at the end of `check_rewrite`, or in
whichever thread the cyclic garbage collector happens to run.  The lock the
checker held around its Z3 work did not stop the crash for that reason, and
it made concurrent checks take turns (each waiting one spent its budget).
With a context per thread, the Z3 work of a check touches its own thread's
context only; two checks in two threads share nothing in Z3 and run in
parallel (the solver's search lets go of the GIL).

The main thread keeps z3's main context, every other thread gets a new one.
A check in the main thread (the command line, the campaigns, the service's
worker processes: nearly every check) then makes exactly the terms it made
before, and a caller's own Z3 objects made with z3's defaults still meet the
checker's in one context; the main context is used by tfsem from the main
thread only.

What makes that hold:

* every term, sort, function, solver a check makes comes from
  `current().ctx`: the encoders (checking/encode.py, checking/generic.py)
  take the context when they are made and pass it to every Z3 function that
  would otherwise take the main one, solvers included (checking/check.py,
  checking/minimize.py); the module-level sorts of before (the sort of each
  dtype, RNE, the reals) are per context here, in `Z3Context`.  Beware
  z3's functions with a `ctx` parameter: most of them (fpAdd, fpIsNaN,
  fpToIEEEBV, BoolVal, IntVal, ...) take the *main* context when it is not
  given, not their arguments' one; and Python's arithmetic operators on Z3
  floats (`a + b`, `-a`) take z3's default rounding mode from the main
  context, so the encoders never use them on floats;
* an op's encoding in the registry (`Elementwise.z3`) is a function of "the
  z3 module" it is given: it is given `Z3Context.module`, which is z3 with
  this context for every function's `ctx` the caller leaves out
  (`z3.RNE()`, `z3.BitVecVal(1, 1)`);
* a Z3 object may still be freed in another thread than its context's
  (a cycle the collector breaks there, an object handed to another thread):
  each thread's context is made with `Z3_enable_concurrent_dec_ref`, with
  which Z3 queues a decrement from any thread under its own mutex and
  applies the queue when the context next makes an API object (a solver, a
  model: Z3's api_context.cpp, `dec_ref`, `add_object`, `flush_objects`).
  z3's main context gets it too, but only once another thread has made its
  context (`_share_main`): until then no other thread holds a Z3 object of
  tfsem's (nor frees one as the collector's: a check leaves no Z3 object in
  a reference cycle -- none in the case corpus's checks, exact and over the
  reals, decided or out of budget), and with it on Z3 frees nothing of the
  main context until the next API object, so that it reuses other ids and
  the solver finds other models -- a process that checks in its main thread
  alone (the command line) would show other counterexamples than before
  threads.  (Z3 only sets a flag there; a decrement the main thread makes
  meanwhile is applied or queued, either right.)  Nothing else of one
  thread's context is ever called from another thread.

`tests/test_check_threads.py` checks it: checks in three threads at once
give each thread the verdicts the same checks give one after the other, and
checks in a thread (the case corpus, exact and over the reals; the generic
element; functions with no encoding) never call `z3.main_ctx()`, which every
z3 function given no context calls.  A thread's first check makes its
context: about 7 ms.
"""

from __future__ import annotations

import functools
import inspect
import threading
from typing import Any

import z3

from tfsem.oracle.values import DTYPES, FLOAT_FORMATS


class Z3Context:
    """A Z3 context and the Z3 objects the encoders take from it once."""

    def __init__(self, ctx: z3.Context | None = None) -> None:
        if ctx is None:
            ctx = z3.Context()
            # (a decrement from another thread than this context's is
            # queued, never applied there; the main context's: `_share_main`)
            z3.Z3_enable_concurrent_dec_ref(ctx.ref())
        self.ctx = ctx
        #: the Z3 sort of each dtype's elements
        self.sorts: dict[str, z3.SortRef] = {
            name: (z3.FPSort(*FLOAT_FORMATS[name], ctx=ctx) if name in FLOAT_FORMATS
                   else z3.BitVecSort(1 if name == "bool" else DTYPES[name].itemsize * 8, ctx))
            for name in DTYPES}
        #: round-to-nearest-even, the rounding of every float operation encoded
        self.rne = z3.RNE(ctx)
        #: `--float real`: the sort of float elements
        self.real = z3.RealSort(ctx)
        self.true = z3.BoolVal(True, ctx)
        #: the z3 module as an op's encoding is given it (see the module's text)
        self.module = _Z3Module(ctx)


_local = threading.local()
#: whether a thread other than the main one has made its context
_threads = False
_threads_lock = threading.Lock()


def current() -> Z3Context:
    """The calling thread's context: z3's main context in the main thread, a
    new one in any other (made on its first use in the thread; it goes with
    the thread)."""
    c = getattr(_local, "context", None)
    if c is None:
        if threading.current_thread() is threading.main_thread():
            with _threads_lock:
                main = z3.main_ctx()
                if _threads:
                    z3.Z3_enable_concurrent_dec_ref(main.ref())
            c = _local.context = Z3Context(main)
        else:
            _share_main()
            c = _local.context = Z3Context()
    return c


def _share_main() -> None:
    """Z3_enable_concurrent_dec_ref on z3's main context once a thread other
    than the main one makes its context (the module's text says why not
    before): on the main context as it is, if z3 has made it (the call asks
    z3 for none: z3.main_ctx() would make it here), else when the main
    thread makes its context (`current`)."""
    global _threads
    with _threads_lock:
        if not _threads:
            _threads = True
            main = z3.z3._main_ctx
            if main is not None:
                z3.Z3_enable_concurrent_dec_ref(main.ref())


class _Z3Module:
    """z3, with one context for every function's `ctx` left out: an
    attribute of z3 that is a function with a `ctx` parameter is wrapped so
    that a call which passes no `ctx` (by name or by position) gets this
    one; every other attribute (classes, constants, functions that take
    their context from their arguments) is z3's own.  Looked up once per
    name."""

    def __init__(self, ctx: z3.Context) -> None:
        self._ctx = ctx

    def __getattr__(self, name: str) -> Any:
        value = getattr(z3, name)
        if inspect.isfunction(value):
            try:
                params = inspect.signature(value).parameters
            except (TypeError, ValueError):
                params = {}
            if "ctx" in params:
                # (the position a caller could pass it at; keyword-only: none)
                position = (list(params).index("ctx")
                            if params["ctx"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
                            else float("inf"))
                value = _with_ctx(value, position, self._ctx)
        setattr(self, name, value)
        return value


def _with_ctx(f: Any, position: float, ctx: z3.Context) -> Any:
    @functools.wraps(f)
    def call(*args: Any, **kw: Any) -> Any:
        if len(args) <= position and kw.get("ctx") is None:
            kw["ctx"] = ctx
        return f(*args, **kw)
    return call


__all__ = ["Z3Context", "current"]
