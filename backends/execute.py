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

import gc
import random
import time
import weakref
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from tfsem.oracle import functions as fns
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle import applications as _applications
from tfsem.oracle import collector as _collector
from tfsem.oracle.collector import gc_paused
from tfsem.oracle.functions import (CannotRun, Function, OpError, ShapeError, beyond_numpy,
                                    check_size, too_large)
from tfsem.oracle.outcomes import OUTPUTS, Outcome, make_outcome
from tfsem.oracle.program import ASSIGN, READ, VAR, ControlIn, DataIn, FeedIn, Program
from tfsem.oracle.kernel_worker import _plain_attr, plain_attrs_key   # (its key's plain form)
from tfsem.oracle.program import _key_of as key_of   # (the key a node's attributes keep)
from tfsem.oracle.semantics import ATOMIC, DECOMPOSED, READ_STEP, WRITE_STEP
from tfsem.oracle.values import (DTYPE_MISMATCH, DTYPES, SHAPE_MISMATCH, UNINITIALIZED, Error,
                                 Tensor, Value, ValueFormatError)

from .arraymodule import (Backend, cupy_refusal, float32_flush_doubt, get_backend,
                          recompute_on_host)

_VAR, _READ, _ASSIGN, _FN = 0, 1, 2, 3
_KINDS = {VAR: _VAR, READ: _READ, ASSIGN: _ASSIGN}
_SUPPORTED = frozenset(DTYPES.values())

#: calls an implementation: (fn, arrays, attrs) -> results
Call = Callable[[Function, tuple, Mapping[str, Any]], Sequence[Any]]


class ScheduleError(ValueError):
    """A schedule that the program cannot follow (a step not enabled, or too short)."""


# ---------------------------------------------------------------------------
# Functions on device values


def apply_function(fn: Function, args: Sequence[Any], attrs: Mapping[str, Any], xp: Any,
                   call: Call | None = None, impl: Any = None) -> tuple[Any, ...]:
    """`fn` applied to device values (arrays or Errors), with the error
    discipline of `Function.apply`.  `call` runs the implementation (default:
    `fn.impl(xp, arrays, attrs)`; the batched evaluator passes its own);
    `impl`, when given, is run in place of `fn.impl` (the same arguments and
    results: `Memo`'s flushed variants)."""
    if xp is np and call is None and fn.strict_args is None and LEAN_NUMPY_APPLY \
            and type(fn).strict is _ALL_STRICT:
        # (`strict_args` None says every argument is strict only where
        # `strict()` is Function's own: a subclass may say its strict
        # arguments by overriding it, as the oracle's `Function.apply` asks
        # `strict()`; such a function takes the general path)
        return _apply_numpy(fn, args, attrs, impl)
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
            results = impl(xp, arrays, attrs) if impl is not None else \
                (call or _call_impl(xp))(fn, arrays, attrs)
            if float32_flush_doubt(xp, arrays, results):   # cupy flushes float32 subnormals
                results = recompute_on_host(
                    xp, fn.name, arrays, results, batched=call is not None,
                    run_on_numpy=lambda host, rows: (call.for_module(np, rows) if call is not None
                                                     else _call_impl(np))(fn, host, attrs))
    except MemoryError:
        raise too_large(fn.name, None) from None
    except OpError as exc:  # the op fails on these arguments: its own error value, as the oracle
        return (Error(exc.reason),) * fn.n_out
    except CannotRun as exc:  # say which function, for the message naming the nodes (as the oracle)
        exc.function = fn.name
        raise
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


#: Whether `apply_function` on numpy, for a function whose every argument
#: is strict (nearly all), takes `_apply_numpy`'s lean path (False: the
#: general one, which the differential tests compare it with)
LEAN_NUMPY_APPLY = True

#: `Function.strict` itself (`apply_function`: the lean path's test)
_ALL_STRICT = Function.strict


def _apply_numpy(fn: Function, args: Sequence[Any], attrs: Mapping[str, Any],
                 impl: Any) -> tuple[Any, ...]:
    """`apply_function(fn, args, attrs, np, None, impl)` for a function whose
    every argument is strict (`strict_args` None), in fewer steps: the same
    checks in the same order, the same results and the same exceptions.

    Why each step is the general path's: every argument is strict, so the
    first error value among them is the answer (`fn.strict()` lists them
    in order), and past that loop none is an error: the arguments `used`
    for the dtypes are all of them, in order, and the arrays passed are
    the arguments themselves (the general path's `arrays` replaces only
    errors).  numpy computes without flushing (`float32_flush_doubt` is
    False for it, so no recomputation on the host) and has no limit of its
    own on dtypes (the general path's cupy branch of ValueError is not
    taken on numpy).  The dtype check is the general path's set of the
    arguments' dtypes, with one or two arguments told by comparing them.
    What it saves: the tuple of strict indices made per call, the list of
    the arguments used, the set of dtypes, the closure that calls the
    implementation: about half of the 8 µs the general path spent around
    an Identity (the real corpus's confirmations make about 24,000
    applications).  tests/test_backends_lean_apply.py compares the two
    paths on every registry function's generated applications, error
    values and failing arguments included."""
    for a in args:
        if isinstance(a, Error):
            return (a,) * fn.n_out
    k = len(args)
    if not fn.mixed_dtypes and k:
        # (each argument's dtype read, as the general path's set reads them)
        d0 = args[0].dtype
        if k == 2:
            if args[1].dtype != d0:
                return (Error(DTYPE_MISMATCH),) * fn.n_out
        elif k > 2 and len({a.dtype for a in args}) > 1:
            return (Error(DTYPE_MISMATCH),) * fn.n_out
    arrays = tuple(args)
    check_size(fn.name, [a.shape for a in arrays if a is not None])
    try:
        with np.errstate(all="ignore"):
            # (`is not None`, as the general path: an implementation object
            # that is false, one of length 0, is still the one to run)
            results = (impl if impl is not None else fn.impl)(np, arrays, attrs)
    except MemoryError:
        raise too_large(fn.name, None) from None
    except OpError as exc:
        return (Error(exc.reason),) * fn.n_out
    except CannotRun as exc:
        exc.function = fn.name
        raise
    except (ShapeError, ValueError) as exc:
        if isinstance(exc, ValueError) and beyond_numpy(exc):
            err = CannotRun(f"cannot run {fn.name} concretely: numpy holds no array of its "
                            f"result's shape ({exc})")   # (as Function.apply)
            err.function = fn.name
            raise err from None
        return (Error(SHAPE_MISMATCH),) * fn.n_out
    if len(results) != fn.n_out:
        raise RuntimeError(f"function {fn.name} returned {len(results)} results, "
                           f"declared {fn.n_out}")
    dt = arrays[0].dtype if k and not fn.casts else None
    out = []
    for r in results:
        if type(r) is not np.ndarray and not isinstance(r, np.ndarray):
            r = np.asarray(r)  # numpy returns scalars for 0-d arguments
        if dt is not None and r.dtype != dt:
            r = r.astype(dt)
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


class Tables:
    """A program compiled for concrete runs: its nodes numbered in
    topological order, each with its kind, function, attributes, variable,
    input slots, successors and fetched outputs, plus the flat form the
    schedule runner (`run_schedule`) reads: every input slot of every node
    one index of one list, each step label's step number, the slots the
    feeds fill and the counts of inputs missing at the start.  Built once
    per program object and semantics (`compiled`): a check's replays, and
    the checks of one original, read the same tables."""

    def __init__(self, p: Program, semantics: str):
        if p.has_control_flow:   # SPEC section 9: the reference semantics only (docs/semantics.md)
            nodes = ", ".join(p.control_flow_nodes[:5])
            raise CannotRun(f"the backends do not run control flow (nodes {nodes}); "
                            "use `tfsem outcomes`")
        decomposed = semantics == DECOMPOSED
        names = list(p.topological_order)
        self.names = names
        n = self.n = len(names)
        index = {name: i for i, name in enumerate(names)}
        self.index = index
        kinds = self.kind = [_FN] * n
        fn_of: list[Function | None] = [None] * n
        self.fn = fn_of
        #: the functions looked up, by name (`compiled` rebuilds the tables
        #: when the registry holds another under a name; each function is
        #: looked up once per name: a real graph names a few dozen
        #: functions in thousands of nodes)
        looked_up: dict[str, Function] = {}
        self.looked_up = looked_up
        attrs_of: list[Mapping[str, Any]] = [{}] * n
        self.attrs = attrs_of
        var_of: list[str | None] = [None] * n
        self.var = var_of
        n_slots = self.n_slots = [1] * n
        #: per node: (port, successor, the successor's slot as a flat index)
        succ_flat: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        self.succ_flat = succ_flat
        empty: list[int] = []
        data_flat: list[list[int]] = [empty] * n   # (a node with data inputs: its own list)
        self.data_flat = data_flat
        value_flat = self.value_flat = [-1] * n
        offset = self._offset = [0] * n
        missing = self.missing0 = [1] * n
        initial: list[tuple[int, int, str | None]] = []   # (node, slot, feed or None for GO)
        self.initial = initial
        feed_slots: list[tuple[int, str]] = []
        self.feed_slots = feed_slots
        node_of = p.node
        total = 0
        # (one pass makes the flat form (run_schedule) as it goes: the nodes
        # come in topological order, so a node's flat offset is known when
        # its inputs are read; the nested form Machine.fire reads (succ,
        # data_slots, value_slot) is made from it when first asked for,
        # `__getattr__`.  tests/test_backends_tables.py compares every table
        # with the two-pass construction this replaced)
        for i, name in enumerate(names):
            node = node_of[name]
            op = node.op
            kd = _KINDS.get(op, _FN)
            attrs_of[i] = node.attrs
            if kd == _FN:
                f = looked_up.get(op)
                fn_of[i] = f if f is not None else looked_up.setdefault(op, fns.get(op))
            else:
                kinds[i] = kd
                if kd == _ASSIGN:
                    fname = node.fn
                    f = looked_up.get(fname)
                    fn_of[i] = f if f is not None else looked_up.setdefault(fname, fns.get(fname))
                var_of[i] = node.var if kd == _VAR else p.accessed_variable(name)
            offset[i] = total
            inputs = node.inputs
            k = len(inputs)
            if not k:
                initial.append((i, 0, None))   # the implicit input control edge
                missing[i] = 0
                total += 1
                continue
            n_slots[i] = missing[i] = k
            total += k
            data_pos = 0
            data = None
            for slot, inp in enumerate(inputs):
                t = type(inp)
                if t is DataIn:
                    succ_flat[index[inp.node]].append((inp.port, i, offset[i] + slot))
                elif t is ControlIn:
                    succ_flat[index[inp.node]].append((-1, i, offset[i] + slot))
                    continue
                else:
                    feed = inp.name if t is FeedIn else None
                    initial.append((i, slot, feed))
                    missing[i] -= 1
                    if feed is None:
                        continue
                    feed_slots.append((offset[i] + slot, feed))
                if kd == _FN:
                    if data is None:
                        data = data_flat[i] = []
                    data.append(offset[i] + slot)
                elif kd == _ASSIGN and data_pos == 1:
                    value_flat[i] = offset[i] + slot
                data_pos += 1
        self.n_inbox = total
        self.fetch: list[list[tuple[int, str]]] = [[] for _ in range(n)]
        for out_name, port in sorted(p.outputs.items()):
            self.fetch[index[port.node]].append((port.port, out_name))
        self.variables = sorted(p.variables)
        #: every step's label -> its number (Machine.label's inverse)
        if decomposed:
            self.step: dict[str, int] = {}
            for i, name in enumerate(names):
                if kinds[i] == _ASSIGN:
                    self.step[name + READ_STEP] = i
                    self.step[name + WRITE_STEP] = n + i
                else:
                    self.step[name] = i
        else:
            self.step = dict(index)
        self.registry_version = fns.version
        self._attrs_keys: list[str | tuple | None] = [None] * n

    #: the nested form, made from the flat one when first asked for (by
    #: Machine.fire and the other runners that step a RunState):
    #: per node, (port, successor, the successor's slot), the slots of its
    #: data inputs, and an Assign's value slot (-1: none)
    _NESTED = ("succ", "data_slots", "value_slot")

    def __getattr__(self, name: str) -> Any:
        if name in Tables._NESTED:
            off, n = self._offset, self.n
            # (two threads that make them at once make equal lists)
            self.__dict__["succ"] = [[(port, j, flat - off[j]) for port, j, flat in row]
                                     for row in self.succ_flat]
            self.__dict__["data_slots"] = [[s - off[i] for s in self.data_flat[i]]
                                           for i in range(n)]
            self.__dict__["value_slot"] = [v - off[i] if v >= 0 else -1
                                           for i, v in enumerate(self.value_flat)]
            return self.__dict__[name]
        raise AttributeError(name)

    def attrs_key(self, i: int) -> str | tuple:
        """Node i's attributes as an exact key for the memo (`Memo`: equal
        keys only where the attributes are equal values of the same kinds,
        bit for bit), made once per table (`_exact_key`)."""
        key = self._attrs_keys[i]
        if key is None:
            key = self._attrs_keys[i] = _exact_key(self.attrs[i])
        return key


def _exact_key(attrs: Mapping[str, Any]) -> str | tuple:
    """`attrs` as an exact key: equal for two attribute mappings exactly
    when `functions.attrs_key` is equal for them.  Three forms, never equal
    to each other:

    * attributes whose names are all str and whose values are str, int,
      bool or None, or lists and tuples of these (exact types: nearly every
      node's, a Conv2D's T, strides, padding, data_format, dilations) are
      "F" and the `repr` of their items sorted by name.  `repr` is exact on
      those types (a str's escapes it, an int's is its digits, True is not
      1, [1] is not (1,)), and they hold no float, whose repr forgets a
      NaN's bits: the plain form of TensorFlow's kernels' own cache key
      (oracle/kernel_worker.py `plain_attrs_key`).
    * attributes made of those values and tensors (a Const's value) are a
      tuple of their items sorted by name, each tensor by `Tensor.exact`
      (equal only to the same dtype, shape and bits: NaN payloads and
      signed zeros told apart), each other value by its `repr` as above;
    * any other attributes (a float, a dict) are the key their frozen
      mapping keeps (oracle/program.py `_key_of`: `functions.attrs_key`,
      a string that starts with "{" or "#").

    Why not the frozen mapping's key for all: it is JSON, made by
    `json.dumps` (a Const's tensor written out as its bytes); in the checks
    of the real corpus's `unsound` rows the replay made 12,490 of them, for
    nodes (of the original and the rewritten programs) that nothing else
    had keyed.  The keys' CPU inside those checks: 0.095 s before, 0.066 s
    with this key.  The same attribute values always get the same form
    (never the frozen mapping's key where another form applies, even when
    it is made already): the rewritten program's node and the original's,
    keyed alike, share the memo's entries as before.
    tests/test_backends_run_schedule.py checks
    that this key and `functions.attrs_key` tell apart the same pairs."""
    plain = plain_attrs_key(attrs)
    if plain is not None:
        return plain
    if all(type(k) is str and (type(v) is Tensor or _plain_attr(v)) for k, v in attrs.items()):
        # (a Const's value: the tensor by its exact bits, `Tensor.exact`)
        return ("T", tuple((k, "t", v.exact) if type(v) is Tensor else (k, "p", repr(v))
                           for k, v in sorted(attrs.items())))
    return key_of(attrs)


#: the tables of the programs compiled lately: id(program) -> (a weak
#: reference to it, {semantics: Tables}); an entry whose program is gone is
#: dropped (weakref callback), so an id reused by a new program never finds
#: another's tables
_COMPILED: dict[int, tuple[Any, dict[str, Tables]]] = {}


def compiled(p: Program, semantics: str = ATOMIC) -> Tables:
    """`p`'s tables for `semantics`, built once per program object."""
    entry = _COMPILED.get(id(p))
    if entry is not None and entry[0]() is p:
        by_semantics = entry[1]
    else:
        key = id(p)
        ref = weakref.ref(p, lambda _r, key=key: _drop_compiled(key, _r))
        by_semantics = {}
        _COMPILED[key] = (ref, by_semantics)
    tables = by_semantics.get(semantics)
    if tables is None or tables.registry_version != fns.version or \
            not fns.still_registered(tables.looked_up):
        # (a function registered again since, or put in the registry by hand
        # (review22: the replay ran the old one), looked up again, as a new
        # Machine always did and as oracle/explore.py's `compiled` does)
        tables = by_semantics[semantics] = Tables(p, semantics)
    return tables


def _drop_compiled(key: int, ref: Any) -> None:
    entry = _COMPILED.get(key)
    if entry is not None and entry[0] is ref:
        del _COMPILED[key]


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
        tables = compiled(p, semantics)
        self.program = p
        self.decomposed = semantics == DECOMPOSED
        self.apply = apply or (lambda fn, args, attrs: apply_function(fn, args, attrs, np))
        self.tables = tables
        # (the tables are shared by every machine of this program and
        # semantics: read, never written; their nested form when first
        # asked for, `__getattr__`: run_schedule reads the flat one)
        for name in ("names", "n", "index", "kind", "fn", "attrs", "var", "n_slots",
                     "fetch", "initial", "variables"):
            setattr(self, name, getattr(tables, name))

    def __getattr__(self, name: str) -> Any:
        if name in Tables._NESTED:
            value = getattr(self.tables, name)
            setattr(self, name, value)
            return value
        raise AttributeError(name)

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
# Running one schedule, lean


def _flushed_base(fn: Function) -> Function | None:
    """The base function of a flushed variant (`functions.flushed_variant`),
    or None (another function)."""
    return getattr(fn.impl, "flushed_base", None)


class Memo:
    """The results of one backend's function applications, shared by the
    replays of one confirmation (the rewritten program's schedule and the
    original's witnesses, at one σ), keyed by the function, the node's
    attributes (an exact key) and the argument *objects*: an application
    whose function, attributes and argument objects are those of one done
    before gets that one's results.

    Why that is the backend's own result: the arguments are the very arrays
    (or error values) that application had, alive (the entry holds them, so
    their ids are not reused, and a hit checks each is the same object), and
    nothing writes into an array once made (every function returns fresh
    arrays or its argument itself, as the machine's sharing of one value
    among its consumers already requires); a registry function is
    deterministic in its arguments and attributes, so computing it again on
    this backend would give these bits.  No result comes from the oracle:
    the memo holds only this backend's arrays, and lives for one
    confirmation.  Nor is a value looked up by its bits (which would hash
    every argument): σ is uploaded once for both programs, so the two runs
    share their argument objects from the start, up to the first node the
    rewrite changed; past it the runs compute on their own.

    Small results (`INTERN_BYTES` at most) are interned on numpy: a result
    whose dtype, shape and bytes are those of one seen before is replaced by
    that array, the same value (the same bits), so that a constant the
    rewrite folded (a Const in P', computed in P) is one object in both
    runs and what reads it is shared again.  Only C-contiguous arrays are
    interned, and replaced by C-contiguous ones: the same dtype, shape and
    layout, so that not even a computation whose order follows the memory
    layout (a reduction's pairwise sums) can tell the two apart.  (4 KiB
    rather than 256 bytes: a real graph's per-channel vectors, a
    recurrent cell's rows, are shared again past the first node the
    rewrite changed: the dataflow confirmations of the real corpus's 38
    `unsound` checks took 15% less CPU.)  At most `INTERNED_MAX_BYTES` of
    interned bytes, and `max_bytes` of results, are held; past them
    nothing more is kept."""

    INTERN_BYTES = 4096
    INTERNED_MAX_BYTES = 16 << 20
    #: the largest result remembered (larger ones are computed again)
    MAX_ENTRY_BYTES = 1 << 20

    def __init__(self, xp: Any, max_bytes: int = 256 << 20):
        self.entries: dict[tuple, tuple] = {}
        self.interned: dict[tuple, Any] = {}
        self.interned_bytes = 0
        self.intern = xp is np
        self.bytes = 0
        self.max_bytes = max_bytes
        self.hits = self.misses = 0
        #: id -> weak reference of the arrays a flushed variant returned here
        self.flushed: dict[int, Any] = {}

    def apply(self, apply: Callable, fn: Function, fn_key: Any, args: Sequence[Any],
              attrs: Mapping[str, Any], numpy_apply: bool = False) -> tuple:
        """`apply(fn, args, attrs)`, or its remembered results.
        `numpy_apply`: `apply` is `apply_function` on numpy, which a
        flushed variant may run with `_flushed_impl` instead."""
        # (the implementation too: a test may replace one in place)
        key = (id(fn), id(fn.impl), fn_key, *map(id, args))
        got = self.entries.get(key)
        if got is not None and got[0] is fn and got[3] is fn.impl and \
                all(a is b for a, b in zip(got[1], args)):
            self.hits += 1
            return got[2]
        self.misses += 1
        base = _flushed_base(fn) if numpy_apply else None
        if base is not None:
            results = apply_function(fn, args, attrs, np,
                                     impl=lambda xp, arrays, at: self._flushed_impl(
                                         base, xp, arrays, at))
        else:
            results = apply(fn, args, attrs)
        if self.intern:
            results = tuple(self._interned(r) for r in results)
        size = sum(getattr(r, "nbytes", 0) for r in results)
        if size <= self.MAX_ENTRY_BYTES and self.bytes + size <= self.max_bytes:
            self.bytes += size
            self.entries[key] = (fn, tuple(args), results, fn.impl)
        return results

    def _flushed_impl(self, base: Function, xp: Any, args: Sequence[Any],
                      attrs: Mapping[str, Any]) -> tuple:
        """`functions.flushed_variant(base).impl` (`functions.run_flushed`),
        whose arguments known to be flushed already are not searched again:
        the results of a flushed variant run here (held by weak reference,
        by identity).  `ftz` of an array with no subnormal is that array
        itself, and a flushed variant's results have none (`ftz` made
        them; the error discipline's dtype conversion, which could make
        some, makes another array, not marked), so the arguments are the
        same objects either way and so are the results.

        An argument searched here is marked too (`_ftz`): an activation two
        flushed ops read, or that the rewritten program's run and the
        original's share through the memo, is searched once.  `ftz` of an
        array is a function of its bits, which never change once it is
        made (the memo's premise), and `ftz(ftz(a))` is `ftz(a)` itself:
        the arguments `run_flushed` receives, already flushed and all
        called clean, are the very objects it would have made."""
        flushed = tuple(self._ftz(a) for a in args)
        results = fns.run_flushed(base, xp, flushed, attrs, clean=_clean)
        for r in results:
            if type(r) is np.ndarray:
                self.flushed[id(r)] = weakref.ref(r)
        return results

    def _ftz(self, a: Any) -> Any:
        """`functions.ftz(np, a)`, not searched again for an array marked
        (a flushed variant's result, or an argument searched before); the
        array it gives (`a` itself where `a` has no subnormal) is marked."""
        if a is None or self._is_flushed(a):
            return a
        f = fns.ftz(np, a)
        if type(f) is np.ndarray:
            self.flushed[id(f)] = weakref.ref(f)
        return f

    def _is_flushed(self, a: Any) -> bool:
        ref = self.flushed.get(id(a))
        return ref is not None and ref() is a

    def _interned(self, r: Any) -> Any:
        if type(r) is not np.ndarray or r.nbytes > self.INTERN_BYTES or \
                not r.flags.c_contiguous:
            return r
        key = (r.dtype, r.shape, r.tobytes())
        got = self.interned.get(key)
        if got is not None:
            return got
        if self.interned_bytes + r.nbytes <= self.INTERNED_MAX_BYTES:
            self.interned_bytes += r.nbytes
            self.interned[key] = r
        return r


def _clean(_a: Any) -> bool:
    """(`run_flushed`'s `clean` for arguments flushed already: Memo._ftz)"""
    return True


def run_schedule(m: Machine, feeds: Mapping[str, Any], init: Mapping[str, Any],
                 schedule: Iterable[str], deadline: float | None = None,
                 memo: Memo | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The outputs and final variables of `schedule` run from σ (`feeds`,
    `init`: values of the machine's kind): what `m.replay(m.start(feeds,
    init), schedule)` computes, with the same ScheduleErrors and the same
    function applications (`m.apply`, through `memo` when given), on the
    tables' flat form: one list of input slots, a count of missing inputs
    and a fired flag per node, no ready list searched and no schedule
    recorded.  A step is enabled exactly when Machine.fire's ready list
    would hold it: a node whose inputs all arrived and that has not fired, a
    decomposed write step whose read step fired and that has not.  Past
    `deadline` (time.monotonic(), read every 32 steps) BudgetExceeded."""
    T = m.tables
    n = T.n
    kind, fn_of, attrs_of, var_of = T.kind, T.fn, T.attrs, T.var
    succ, data_flat, value_flat, fetch = T.succ_flat, T.data_flat, T.value_flat, T.fetch
    step = T.step
    apply = m.apply
    inbox: list[Any] = [None] * T.n_inbox
    for flat, feed in T.feed_slots:
        inbox[flat] = feeds[feed]
    missing = list(T.missing0)
    fired = bytearray(n)
    variables = {x: init.get(x, Error(UNINITIALIZED)) for x in T.variables}
    pending: dict[int, tuple[Any, Any]] = {}
    outputs: dict[str, Any] = {}
    decomposed = m.decomposed
    started = time.monotonic() if deadline is not None else 0.0

    numpy_apply = getattr(m, "numpy_apply", False)

    def call(i: int, f: Function, args: Sequence[Any], attrs: Mapping[str, Any]) -> tuple:
        if memo is None:
            return apply(f, args, attrs)
        return memo.apply(apply, f, T.attrs_key(i) if attrs else "", args, attrs, numpy_apply)

    def assigned(i: int, w: Any, v: Any, current: Any) -> Any:
        # (Machine.assigned: a failed Assign, an error value or result,
        # leaves the current value)
        if isinstance(v, Error):
            return current
        (new,) = call(i, fn_of[i], (w, v), {})
        return current if isinstance(new, Error) else new

    for k, label in enumerate(schedule):
        if deadline is not None and k & 31 == 31 and time.monotonic() > deadline:
            raise BudgetExceeded("seconds", max(0.0, deadline - started), k)
        t = step.get(label)
        if t is None:
            t = m.step_of(label)          # (its ScheduleError, or a label spelled otherwise)
        if t >= n:                                      # decomposed write step
            i = t - n
            if i not in pending:
                raise ScheduleError(f"step {k} ({label}) is not enabled")
            w, v = pending.pop(i)
            x = var_of[i]
            variables[x] = assigned(i, w, v, variables[x])
        else:
            i = t
            if missing[i] or fired[i]:
                raise ScheduleError(f"step {k} ({label}) is not enabled")
            fired[i] = 1
            kd = kind[i]
            if kd == _FN:
                results = call(i, fn_of[i], [inbox[s] for s in data_flat[i]], attrs_of[i])
                for s in data_flat[i]:
                    inbox[s] = None
            elif kd == _VAR:
                results = (None,)                       # the handle: the variable is static
            elif kd == _READ:
                results = (variables[var_of[i]],)
            elif decomposed:                            # decomposed read step: no signal yet
                s = value_flat[i]
                pending[i] = (variables[var_of[i]], inbox[s])
                inbox[s] = None
                continue
            else:                                       # atomic Assign
                s = value_flat[i]
                x = var_of[i]
                w = variables[x]
                variables[x] = assigned(i, w, inbox[s], w)
                inbox[s] = None
                results = ()
            if results:
                for port, _j, flat in succ[i]:
                    if port >= 0 and results[port] is not None:
                        inbox[flat] = results[port]
                for port, name in fetch[i]:
                    outputs[name] = results[port]
        for _port, j, _flat in succ[i]:                 # node i complete: its edges hold content
            missing[j] -= 1
    if pending or any(not missing[i] and not fired[i] for i in range(n)):
        raise ScheduleError("the schedule ends before the run does")
    return outputs, variables


# ---------------------------------------------------------------------------
# The cyclic collector during a confirmation


#: Whether a confirmation turns Python's cyclic collector off while it
#: replays (`collector_paused`; tests turn it off to compare)
collector_off = True

#: Whether, inside a check that froze the process's objects, what a
#: confirmation made is frozen with them when it ends (`collector_paused`
#: says why; False: left in the youngest generation, as before)
freeze_in_check = True


@contextmanager
def collector_paused():
    """`oracle/collector.py` `gc_paused` around a confirmation's replays
    (while `collector_off`).  They make tens of thousands of tracked
    objects (memo keys, argument lists, result tuples, the run's slots),
    none in a cycle: reference counting frees each when it is dropped, and
    what they leave alive (the session's memo, the tables) goes to the
    oldest generation when they end.  Nothing the replay computes depends
    on the collector."""
    if not collector_off:
        yield
        return
    if not (freeze_in_check and _collector._frozen_here):
        with gc_paused():
            yield
        return
    # Inside a check that froze the process's objects (oracle/applications.py
    # `scope`, `_collector._frozen_here`), `gc_paused` leaves what the
    # replay made alive (the session's memo, its keys and result tuples,
    # the host values: 141,000 objects after MobileNetV2's first replay) in
    # the youngest generation: it must not move it by `gc.freeze()` and
    # `gc.unfreeze()`, which would thaw the check's frozen objects too.  The
    # first allocation after `gc.enable()` then set off a collection that
    # walked all of it, and the next ones of the middle generation again,
    # to find no garbage: 0.19 of the 4.6 profiled seconds of the real
    # corpus's 38 dataflow confirmations, each in `collector_paused`'s exit.
    # Here it is frozen with the check's objects instead (`gc.freeze()`
    # alone), and the check's scope, when it ends, thaws everything frozen
    # into the oldest generation (`unfreeze_for_check`): where `gc_paused`
    # would have put it at once.  Why nothing else changes: frozen objects
    # are still freed by reference counting when dropped (a memo entry, a
    # session replaced); freezing exempts them only from the cyclic
    # collector's walks, until the check ends, as the check's scope
    # already exempts every object older than the check; an object of a
    # cycle made by the check before this point waits for the scope's end
    # to be collected (the scope's docstring says the same of cycles made
    # before the check: no verdict depends on when memory is reclaimed).
    # The test and the freeze are made under the scope's lock, as its end
    # unfreezes under it: a scope cannot end between them, so nothing is
    # left frozen past the last check (another thread's scope ending), and
    # a process that froze objects of its own (`tfsem serve`: not
    # `_frozen_here`) is never frozen more.  `freeze_in_check = False`:
    # `gc_paused` as before.
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            with _applications._scope_lock:
                if _collector._frozen_here:
                    gc.freeze()
            gc.enable()


# ---------------------------------------------------------------------------
# Host <-> device


def device_machine(p: Program, backend: Backend, semantics: str = ATOMIC) -> Machine:
    xp = backend.xp
    m = Machine(p, semantics, lambda fn, args, attrs: apply_function(fn, args, attrs, xp))
    m.numpy_apply = xp is np      # (its apply is apply_function on numpy: Memo.apply)
    return m


def upload(values: Mapping[str, Value], backend: Backend) -> dict[str, Any]:
    """Host values onto the device (errors stay as they are)."""
    return {k: v if isinstance(v, Error) else backend.to_device(v.array) for k, v in values.items()}


def download_outcome(st: RunState, backend: Backend, observe: str) -> Outcome:
    """The outcome of a finished run, copied to the host in one transfer."""
    return download(st.outputs, st.vars, backend, observe)


class HostValues:
    """The host value of device arrays downloaded before, or uploaded from
    one: device array object -> the Tensor of its bits (held with the
    array, so that its id is not reused while the entry stands, and a hit
    checks that it is the same object).

    Why the Tensor is what a fresh download gives: a device array is never
    written once made (every function returns fresh arrays or its argument
    itself, the premise `Memo` states), so its bits are those it had when
    its Tensor was made, from a copy of them (`download`) or, for σ, from
    the very host array it was uploaded from (`upload`: the same object on
    numpy, a copy of its bits on cupy).  A variable no step wrote, or an
    output that is a σ value passed through, comes back as σ's own Tensor,
    and a result the runs of one σ share (`Memo`) as one Tensor: no array
    copied again, and the outcomes' comparisons find the same objects.
    At most `max_bytes` of downloaded values are held (σ's cost nothing:
    the session holds them anyway)."""

    def __init__(self, max_bytes: int = 64 << 20):
        self.tensors: dict[int, tuple[Any, Tensor]] = {}
        self.bytes = 0
        self.max_bytes = max_bytes

    def add_sigma(self, device: Mapping[str, Any], host: Mapping[str, Value]) -> None:
        """σ's device arrays (`upload(host, ...)`) and the Tensors they came from."""
        for name, d in device.items():
            if not isinstance(d, Error):
                self.tensors[id(d)] = (d, host[name])

    def get(self, a: Any) -> Tensor | None:
        got = self.tensors.get(id(a))
        return got[1] if got is not None and got[0] is a else None

    def add(self, a: Any, t: Tensor) -> None:
        size = t.array.nbytes
        if self.bytes + size <= self.max_bytes:
            self.bytes += size
            self.tensors[id(a)] = (a, t)


def download(outputs: Mapping[str, Any], variables: Mapping[str, Any], backend: Backend,
             observe: str, known: HostValues | None = None) -> Outcome:
    """The outcome of a run that ended with these outputs and variables
    (device values), copied to the host in one transfer.  `known`: the
    host values of device arrays seen before (HostValues: not copied
    again, and what is copied is added)."""
    outputs = dict(outputs)
    state = {} if observe == OUTPUTS else dict(variables)
    values = list(outputs.values()) + list(state.values())
    converted: list[Any] = [v if isinstance(v, Error) else
                            (known.get(v) if known is not None else None) for v in values]
    todo = [k for k, c in enumerate(converted) if c is None]
    if todo or known is None:
        host = backend.to_host([values[k] for k in todo])
        for k, h in zip(todo, host):
            converted[k] = t = Tensor(h)
            if known is not None:
                known.add(values[k], t)
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
    return download(*run_schedule(m, upload(feeds, b), upload(init, b), schedule), b, observe)


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
