"""Running a program on device arrays, one schedule at a time.

A :class:`Machine` is a program compiled for concrete execution: the step
semantics of `tfsem.oracle.semantics` (seed 000, 3.2.1; seed 002 for the
decomposed Assign), with every value in transit and every variable held as a
device array (or an error value).  Inputs σ go to the device once at the start
of a run; the outcome comes back once at the end (`Backend.to_host`), and is
then compared with SPEC section 2 equality (`tfsem.oracle.values.Tensor`).

    replay(p, feeds, init, schedule, backend)      # a witness from the oracle
    run_random(p, feeds, init, runs, seed, backend) # N random schedules

Registry functions run through :func:`apply_function`, the device twin of
`Function.apply`: the same error discipline (strict arguments propagate their
error, mixed dtypes give `dtype-mismatch`, rejected shapes `shape-mismatch`)
without ever copying an argument to the host.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from tfsem.oracle import functions as fns
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.functions import (CannotRun, Function, OpError, ShapeError, beyond_numpy,
                                    check_size, too_large)
from tfsem.oracle.outcomes import OUTPUTS, Outcome, make_outcome
from tfsem.oracle.program import ASSIGN, READ, VAR, ControlIn, DataIn, FeedIn, Program
from tfsem.oracle.semantics import ATOMIC, DECOMPOSED, READ_STEP, WRITE_STEP
from tfsem.oracle.values import (DTYPE_MISMATCH, DTYPES, SHAPE_MISMATCH, UNINITIALIZED, Error,
                                 Tensor, Value, ValueFormatError)

from .arraymodule import (Backend, cupy_refusal, float32_flush_doubt, get_backend,
                          recompute_on_host)

_VAR, _READ, _ASSIGN, _FN = 0, 1, 2, 3
_SUPPORTED = frozenset(DTYPES.values())

#: calls an implementation: (fn, arrays, attrs) -> results
Call = Callable[[Function, tuple, Mapping[str, Any]], Sequence[Any]]


class ScheduleError(ValueError):
    """A schedule that the program cannot follow (a step not enabled, or too short)."""


# ---------------------------------------------------------------------------
# Functions on device values


def apply_function(fn: Function, args: Sequence[Any], attrs: Mapping[str, Any], xp: Any,
                   call: Call | None = None) -> tuple[Any, ...]:
    """`fn` applied to device values (arrays or Errors), with the error
    discipline of `Function.apply`.  `call` runs the implementation (default:
    `fn.impl(xp, arrays, attrs)`; the batched evaluator passes its own)."""
    strict = fn.strict()
    for i in strict:
        if isinstance(args[i], Error):
            return (args[i],) * fn.n_out
    used = [a for i, a in enumerate(args) if i in strict and not isinstance(a, Error)]
    if not fn.mixed_dtypes and len({a.dtype for a in used}) > 1:
        return (Error(DTYPE_MISMATCH),) * fn.n_out
    arrays = tuple(None if isinstance(a, Error) else a for a in args)
    # the oracle's tensor size limit, per valuation (a batched call's
    # arguments carry a leading batch axis, which MAX_BATCH_BYTES bounds)
    check_size(fn.name, [tuple(a.shape[1:] if call is not None else a.shape)
                         for a in arrays if a is not None])
    try:
        with np.errstate(all="ignore"):
            results = (call or _call_impl(xp))(fn, arrays, attrs)
            if float32_flush_doubt(xp, arrays, results):   # cupy flushes float32 subnormals
                results = recompute_on_host(
                    xp, fn.name, arrays, results, batched=call is not None,
                    run_on_numpy=lambda host, rows: (call.for_module(np, rows) if call is not None
                                                     else _call_impl(np))(fn, host, attrs))
    except MemoryError:
        raise too_large(fn.name, None) from None
    except OpError as exc:  # the op fails on these arguments: its own error value, as the oracle
        return (Error(exc.reason),) * fn.n_out
    except (ShapeError, ValueError) as exc:  # ValueError: numpy's and cupy's broadcasting errors
        if isinstance(exc, ValueError) and beyond_numpy(exc):
            err = CannotRun(f"cannot run {fn.name} concretely: numpy holds no array of its "
                            f"result's shape ({exc})")   # (as Function.apply)
            err.function = fn.name
            raise err from None
        if isinstance(exc, ValueError) and xp is not np:   # (cupy's own limits: its dtypes)
            host_call = call.for_module(np, None) if call is not None else _call_impl(np)
            refusal = cupy_refusal(xp, fn.name, exc, arrays, lambda h: host_call(fn, h, attrs))
            if refusal is not None:
                raise refusal from None
        return (Error(SHAPE_MISMATCH),) * fn.n_out
    if len(results) != fn.n_out:
        raise RuntimeError(f"function {fn.name} returned {len(results)} results, "
                           f"declared {fn.n_out}")
    out = []
    for r in results:
        if not isinstance(r, xp.ndarray):
            r = xp.asarray(r)  # numpy returns scalars for 0-d arguments
        if used and r.dtype != used[0].dtype and not fn.casts:  # (Cast chooses its own dtype)
            r = r.astype(used[0].dtype)
        if r.dtype not in _SUPPORTED:
            raise ValueFormatError(f"function {fn.name} returned dtype {r.dtype} "
                                   "(not one of tfsem's dtypes)")
        out.append(r)
    return tuple(out)


def _call_impl(xp: Any) -> Call:
    return lambda fn, arrays, attrs: fn.impl(xp, arrays, attrs)


# ---------------------------------------------------------------------------
# The compiled program


@dataclass
class RunState:
    """The state of one run: what is in transit, variables, pending decomposed
    Assigns, fetched outputs, and the steps that may fire."""
    inbox: dict[tuple[int, int], Any]
    missing: list[int]
    vars: dict[str, Any]
    pending: dict[int, tuple[Any, Any]]
    outputs: dict[str, Any]
    ready: list[int]
    schedule: list[str]

    def copy(self) -> "RunState":
        """An independent copy (values are immutable arrays: shared, not copied)."""
        return RunState(dict(self.inbox), list(self.missing), dict(self.vars), dict(self.pending),
                        dict(self.outputs), list(self.ready), list(self.schedule))


class Machine:
    """A program compiled for running on concrete values.

    Steps are numbered: node i is step i; in decomposed mode the write step of
    Assign i is step n + i (its read step is i).  `apply(fn, args, attrs)`
    applies a registry function to values of the machine's kind (device arrays
    here; batched arrays in `batched.py`).
    """

    def __init__(self, p: Program, semantics: str = ATOMIC,
                 apply: Callable[[Function, Sequence[Any], Mapping[str, Any]], tuple] | None = None):
        if semantics not in (ATOMIC, DECOMPOSED):
            raise ValueError(f"unknown semantics {semantics!r}")
        if p.has_control_flow:   # SPEC section 9: the reference semantics only (docs/semantics.md)
            from tfsem.oracle.functions import CannotRun
            nodes = ", ".join(p.control_flow_nodes[:5])
            raise CannotRun(f"the backends do not run control flow (nodes {nodes}); "
                            "use `tfsem outcomes`")
        self.program = p
        self.decomposed = semantics == DECOMPOSED
        self.apply = apply or (lambda fn, args, attrs: apply_function(fn, args, attrs, np))
        names = list(p.topological_order)
        self.names = names
        n = self.n = len(names)
        index = {name: i for i, name in enumerate(names)}
        self.index = index
        self.kind = [_FN] * n
        self.fn: list[Function | None] = [None] * n
        self.attrs: list[Mapping[str, Any]] = [{}] * n
        self.var: list[str | None] = [None] * n
        self.n_slots = [1] * n
        self.data_slots: list[list[int]] = [[] for _ in range(n)]
        self.value_slot = [-1] * n
        self.succ: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        self.fetch: list[list[tuple[int, str]]] = [[] for _ in range(n)]
        self.initial: list[tuple[int, int, str | None]] = []   # (node, slot, feed or None for GO)
        for i, name in enumerate(names):
            node = p.node[name]
            self.kind[i] = {VAR: _VAR, READ: _READ, ASSIGN: _ASSIGN}.get(node.op, _FN)
            self.attrs[i] = node.attrs
            if self.kind[i] == _FN:
                self.fn[i] = fns.get(node.op)
            elif self.kind[i] == _ASSIGN:
                self.fn[i] = fns.get(node.fn)
            if self.kind[i] == _VAR:
                self.var[i] = node.var
            elif self.kind[i] in (_READ, _ASSIGN):
                self.var[i] = p.accessed_variable(name)
            self.n_slots[i] = max(1, len(node.inputs))
            if not node.inputs:
                self.initial.append((i, 0, None))   # the implicit input control edge
            data_pos = 0
            for slot, inp in enumerate(node.inputs):
                if isinstance(inp, DataIn):
                    self.succ[index[inp.node]].append((inp.port, i, slot))
                elif isinstance(inp, ControlIn):
                    self.succ[index[inp.node]].append((-1, i, slot))
                else:
                    self.initial.append((i, slot, inp.name if isinstance(inp, FeedIn) else None))
                if isinstance(inp, (DataIn, FeedIn)):
                    if self.kind[i] == _FN:
                        self.data_slots[i].append(slot)
                    elif self.kind[i] == _ASSIGN and data_pos == 1:
                        self.value_slot[i] = slot
                    data_pos += 1
        for out_name, port in sorted(p.outputs.items()):
            self.fetch[index[port.node]].append((port.port, out_name))
        self.variables = sorted(p.variables)

    # -- steps ------------------------------------------------------------------

    def label(self, t: int) -> str:
        if t >= self.n:
            return self.names[t - self.n] + WRITE_STEP
        if self.decomposed and self.kind[t] == _ASSIGN:
            return self.names[t] + READ_STEP
        return self.names[t]

    def step_of(self, label: str) -> int:
        name, _, phase = label.partition("@")
        i = self.index.get(name)
        if i is None:
            raise ScheduleError(f"no node named {name!r}")
        decomposed_assign = self.decomposed and self.kind[i] == _ASSIGN
        if decomposed_assign and phase == "write":
            return self.n + i
        if (decomposed_assign and phase == "read") or (not decomposed_assign and phase == ""):
            return i
        raise ScheduleError(f"{label!r} is not a step label here (decomposed Assigns "
                            "fire as n@read and n@write, every other node as its name)")

    def start(self, feeds: Mapping[str, Any], init: Mapping[str, Any]) -> RunState:
        """The initial state; `feeds`/`init` are values of the machine's kind (a
        variable missing from `init` starts uninitialized)."""
        st = RunState(inbox={}, missing=list(self.n_slots),
                      vars={x: init.get(x, Error(UNINITIALIZED)) for x in self.variables},
                      pending={}, outputs={}, ready=[], schedule=[])
        for i, slot, feed in self.initial:
            if feed is not None:
                st.inbox[(i, slot)] = feeds[feed]
            st.missing[i] -= 1
            if st.missing[i] == 0:
                st.ready.append(i)
        return st

    def fire(self, st: RunState, t: int) -> None:
        """Fire step t (which must be in st.ready) and update st."""
        st.ready.remove(t)
        st.schedule.append(self.label(t))
        n = self.n
        i = t % n
        kind = self.kind[i]
        inbox = st.inbox
        if t >= n:                                      # decomposed write step
            w, v = st.pending.pop(i)
            x = self.var[i]
            st.vars[x] = self.assigned(self.fn[i], w, v, st.vars[x])
        elif kind == _FN:
            args = [inbox.pop((i, s)) for s in self.data_slots[i]]
            self._deliver(st, i, self.apply(self.fn[i], args, self.attrs[i]))
        elif kind == _VAR:
            self._deliver(st, i, (None,))               # the handle: the variable is static
        elif kind == _READ:
            self._deliver(st, i, (st.vars[self.var[i]],))
        elif self.decomposed:                           # decomposed read step
            st.pending[i] = (st.vars[self.var[i]], inbox.pop((i, self.value_slot[i])))
            st.ready.append(n + i)
            return
        else:                                           # atomic Assign
            x = self.var[i]
            w = st.vars[x]
            st.vars[x] = self.assigned(self.fn[i], w, inbox.pop((i, self.value_slot[i])), w)
        self._signal(st, i)

    def assign_result(self, fn: Function, w: Any, v: Any) -> Any | None:
        """What Assign-f that read w writes: f(w, v), or None when v or f(w, v)
        is an error and the Assign has no effect (seed footnote 5)."""
        if isinstance(v, Error):
            return None
        (new,) = self.apply(fn, (w, v), {})
        return None if isinstance(new, Error) else new

    def assigned(self, fn: Function, w: Any, v: Any, current: Any) -> Any:
        """The variable's value after Assign-f read w and writes now, when it
        holds `current` (`semantics._assigned`: a failed Assign leaves the
        current value, which in decomposed mode may be newer than w)."""
        new = self.assign_result(fn, w, v)
        return current if new is None else new

    def _deliver(self, st: RunState, i: int, results: Sequence[Any]) -> None:
        for port, j, slot in self.succ[i]:
            if port >= 0 and results[port] is not None:
                st.inbox[(j, slot)] = results[port]
        for port, name in self.fetch[i]:
            st.outputs[name] = results[port]

    def _signal(self, st: RunState, i: int) -> None:
        """Node i is complete: every outgoing edge (data and control) now holds
        content, so successors may become ready."""
        missing = st.missing
        for _port, j, _slot in self.succ[i]:
            missing[j] -= 1
            if missing[j] == 0:
                st.ready.append(j)

    # -- whole runs ---------------------------------------------------------------

    def replay(self, st: RunState, schedule: Iterable[str],
               deadline: float | None = None) -> RunState:
        """Fire `schedule` from st.  Past `deadline` (time.monotonic()) the
        replay stops with BudgetExceeded (the clock is read every 32 steps)."""
        started = time.monotonic() if deadline is not None else 0.0
        for k, label in enumerate(schedule):
            if deadline is not None and k & 31 == 31 and time.monotonic() > deadline:
                raise BudgetExceeded("seconds", max(0.0, deadline - started), k)
            t = self.step_of(label)
            if t not in st.ready:
                raise ScheduleError(f"step {k} ({label}) is not enabled")
            self.fire(st, t)
        if st.ready:
            raise ScheduleError("the schedule ends before the run does")
        return st

    def replay_all(self, st: RunState, schedules: Sequence[Sequence[str]]) -> list[RunState]:
        """The final state of each schedule from st, firing each common prefix
        of the schedules once (a depth-first walk of their trie)."""
        trie: dict = {}
        for k, schedule in enumerate(schedules):
            node = trie
            for label in schedule:
                node = node.setdefault(label, {})
            node.setdefault(None, []).append(k)
        finals: list[RunState | None] = [None] * len(schedules)
        stack = [(trie, st, 0)]
        while stack:
            node, state, depth = stack.pop()
            for k in node.get(None, ()):
                if state.ready:
                    raise ScheduleError("the schedule ends before the run does")
                finals[k] = state
            children = [(label, child) for label, child in node.items() if label is not None]
            for n_child, (label, child) in enumerate(children):
                branch = state if n_child == len(children) - 1 else state.copy()
                t = self.step_of(label)
                if t not in branch.ready:
                    raise ScheduleError(f"step {depth} ({label}) is not enabled")
                self.fire(branch, t)
                stack.append((child, branch, depth + 1))
        return finals  # type: ignore[return-value]

    def run_random(self, st: RunState, rng: random.Random) -> RunState:
        while st.ready:
            self.fire(st, st.ready[rng.randrange(len(st.ready))])
        return st


# ---------------------------------------------------------------------------
# Host <-> device


def device_machine(p: Program, backend: Backend, semantics: str = ATOMIC) -> Machine:
    xp = backend.xp
    return Machine(p, semantics, lambda fn, args, attrs: apply_function(fn, args, attrs, xp))


def upload(values: Mapping[str, Value], backend: Backend) -> dict[str, Any]:
    """Host values onto the device (errors stay as they are)."""
    return {k: v if isinstance(v, Error) else backend.to_device(v.array) for k, v in values.items()}


def download_outcome(st: RunState, backend: Backend, observe: str) -> Outcome:
    """The outcome of a finished run, copied to the host in one transfer."""
    outputs = dict(st.outputs)
    state = {} if observe == OUTPUTS else dict(st.vars)
    values = list(outputs.values()) + list(state.values())
    arrays = [v for v in values if not isinstance(v, Error)]
    host = iter(backend.to_host(arrays))
    converted = [v if isinstance(v, Error) else Tensor(next(host)) for v in values]
    outs = dict(zip(outputs, converted[:len(outputs)]))
    final = dict(zip(state, converted[len(outputs):]))
    return make_outcome(outs, final, observe)


def _backend(backend: Backend | str) -> Backend:
    return get_backend(backend) if isinstance(backend, str) else backend


def replay(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
           schedule: Sequence[str], backend: Backend | str = "numpy",
           semantics: str = ATOMIC, observe: str = "outputs+state") -> Outcome:
    """The outcome of `schedule` (e.g. an oracle witness) run on `backend`.
    Raises ScheduleError when the program cannot follow the schedule."""
    b = _backend(backend)
    m = device_machine(p, b, semantics)
    st = m.replay(m.start(upload(feeds, b), upload(init, b)), schedule)
    return download_outcome(st, b, observe)


@dataclass
class Observed:
    """Distinct outcomes seen over `runs` runs: each with its count and the
    schedule of the first run that gave it (in order of first appearance)."""
    runs: int
    counts: Counter
    schedules: dict[Outcome, list[str]]

    def items(self) -> list[tuple[Outcome, int, list[str]]]:
        return [(o, self.counts[o], s) for o, s in self.schedules.items()]

    def add(self, outcome: Outcome, schedule: list[str]) -> None:
        self.runs += 1
        self.counts[outcome] += 1
        self.schedules.setdefault(outcome, schedule)


def run_random(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
               runs: int, seed: int = 0, backend: Backend | str = "numpy",
               semantics: str = ATOMIC, observe: str = "outputs+state") -> Observed:
    """`runs` runs, each under a schedule drawn uniformly among the enabled
    steps at every point, from one generator seeded with `seed`."""
    b = _backend(backend)
    m = device_machine(p, b, semantics)
    rng = random.Random(seed)
    dev_feeds, dev_init = upload(feeds, b), upload(init, b)
    seen = Observed(0, Counter(), {})
    for _ in range(runs):
        st = m.run_random(m.start(dev_feeds, dev_init), rng)
        seen.add(download_outcome(st, b, observe), st.schedule)
    return seen
