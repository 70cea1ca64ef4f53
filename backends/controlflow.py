"""Replaying a schedule of a program with control flow on an array backend.

The stepping (frames, iterations, dead values, Merge choices) is the
reference machine's (oracle/controlflow.py, SPEC section 9); every registry
function a step applies runs through the backend's own kernels
(:func:`backends.execute.apply_function`, with its error discipline) on
device arrays instead of the oracle's `Function.apply`.  The checker replays
a control-flow counterexample here (:func:`confirm_on_backends`): the
rewritten program's schedule must give the oracle's outcome, and no witness
schedule of the original may give it.

TensorLists (oracle/opdefs/lists.py) stay on the backend between steps as
:class:`ArrayList`, a list of the backend's own arrays: a list op runs its
one definition on that holder (`ListFunction.array_impl`), an element is
moved to the host only when an op returns it as a tensor (GetItem,
PopBack, Stack), and a list that ends in the outcome comes back as a
TensorList (:func:`list_to_host`).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Mapping, Sequence

from tfsem.oracle import controlflow as cf
from tfsem.oracle import functions as fns
from tfsem.oracle.budget import BudgetExceeded
from tfsem.oracle.functions import CannotRun, OpError
from tfsem.oracle.graph import graph_of
from tfsem.oracle.opdefs.lists import ArrayList, TensorList
from tfsem.oracle.outcomes import Outcome
from tfsem.oracle.program import Program
from tfsem.oracle.values import Error, Tensor, Value

from . import reuse
from .arraymodule import Backend, available_backends, get_backend
from .confirm import BUDGET_REASON, Confirmation
from .execute import apply_function, collector_paused

#: the most witness schedules of the original replayed per backend
#: (more: the claim stays unconfirmed there, said so)
MAX_WITNESSES = 1000


#: a memo entry's most bytes (arguments and results): larger ones are computed again
MEMO_ENTRY_BYTES = 1 << 20


class DeviceMachine(cf.Machine):
    """The reference machine with functions run on `backend`'s arrays.
    `memo`, when given, remembers the backend's results by (op, attributes,
    argument bits), shared by the machines of one confirmation: the
    original's witness runs the loops the rewrite ran, on the same σ, and
    a deterministic function of the same bits on the same backend gives the
    same bits (every value is still the backend's: none comes from the
    reference engine)."""

    def __init__(self, p: Program, backend: Backend, semantics: str, max_iterations: int,
                 memo: dict | None = None):
        super().__init__(p, graph_of(p), semantics, max_iterations)
        self.backend = backend
        self.memo = memo

    def apply_function(self, n, data: list) -> list:
        fn = fns.get(n.op)
        key = None
        if self.memo is not None and not any(isinstance(d, ArrayList) for d in data):
            # (node name -> its attributes' exact key: the program's one
            # table, the base class's `_attr_keys`)
            attrs = self._attr_keys.get(n.name, _NONE)
            if attrs is _NONE:
                attrs = self._attr_keys[n.name] = cf._exact_key(n.attrs)
            key = _memo_key(n, fn, attrs, data)
            got = self.memo.get(key) if key is not None else None
            if got is not None:
                return list(got)
        try:
            results = apply_values(self.backend, fn, data, n.attrs)
        except CannotRun as exc:
            # (the node and op named: the checker says which op lacks a back end)
            exc.node, exc.op = n.name, n.op
            raise
        if key is not None and not any(isinstance(r, ArrayList) for r in results):
            size = sum(r.array.nbytes for r in results if isinstance(r, Tensor))
            if size <= MEMO_ENTRY_BYTES and (not isinstance(self.memo, BoundedMemo) or
                                              self.memo.room(size)):
                self.memo[key] = tuple(results)
        return results

    def outcome(self, s: cf.CFState, observe: str) -> Outcome:
        """The reference machine's outcome, with every list that ends in it
        brought back to the host as a TensorList."""
        if any(isinstance(v, ArrayList) for v in s.tokens.values()) or \
                any(isinstance(v, ArrayList) for v in s.var_value.values()):
            s = dataclasses.replace(
                s, tokens={k: self._host(v) for k, v in s.tokens.items()},
                var_value={k: self._host(v) for k, v in s.var_value.items()})
        return super().outcome(s, observe)

    def _host(self, v: object) -> object:
        return list_to_host(v, self.backend) if isinstance(v, ArrayList) else v


_NONE = object()


class BoundedMemo(dict):
    """DeviceMachine's memo: at most `max_bytes` of results in all (a
    session's memo outlives one confirmation: backends/reuse.py)."""

    def __init__(self, max_bytes: int):
        super().__init__()
        self.max_bytes = max_bytes
        self.bytes = 0

    def room(self, size: int) -> bool:
        if self.bytes + size > self.max_bytes:
            return False
        self.bytes += size
        return True


def _memo_key(n, fn, attrs, data: list) -> tuple | None:
    """(op, the function object, attributes, arguments) by their exact
    bits, or None (an attribute with no exact key, a large argument)."""
    if attrs is None:
        return None
    args = []
    size = 0
    for d in data:
        if type(d) is Tensor:
            a = d.array
            size += a.nbytes
            if size > MEMO_ENTRY_BYTES:
                return None
            args.append((d.dtype, a.shape, a.tobytes()))
        elif type(d) is Error:
            args.append(("error", d.reason))
        else:
            return None
    # (the implementations' identities too: a test may replace one in place)
    return (n.op, id(fn), id(getattr(fn, "impl", None)), id(getattr(fn, "array_impl", None)),
            attrs, tuple(args))


def apply_values(b: Backend, fn, data: Sequence[Any], attrs: Mapping[str, Any]) -> list:
    """`fn` on the machine's values (host Tensors, the backend's
    ArrayLists, Errors) run on backend `b`: tensors go to the device for the
    call and the results' arrays come back in one transfer; lists stay on
    the device.  The error discipline is Function.apply's (a list function's
    ListFunction.apply's)."""
    if getattr(fn, "array_impl", None) is None and not any(isinstance(d, ArrayList) for d in data):
        args = [d if isinstance(d, Error) else b.to_device(d.array) for d in data]
        return _results(b, apply_function(fn, args, attrs, b.xp))
    for i in fn.strict():
        if isinstance(data[i], Error):
            return [data[i]] * fn.n_out
    impl = getattr(fn, "array_impl", None)
    if impl is None:
        # (as Function.apply: Identity forwards a list, an array function
        # has no value for one)
        if fn.name == "Identity":
            return [data[0]]
        raise CannotRun(f"{fn.name} takes tensors, not a list")
    args = [b.to_device(d.array) if isinstance(d, Tensor) else d for d in data]
    try:
        results = tuple(impl(b.xp, args, attrs))
    except OpError as exc:
        return [Error(exc.reason)] * fn.n_out
    if len(results) != fn.n_out:
        raise RuntimeError(f"function {fn.name} returned {len(results)} results, "
                           f"declared {fn.n_out}")
    return _results(b, results)


def _results(b: Backend, results: Sequence[Any]) -> list:
    """Results to the machine's values: arrays to the host (one transfer),
    lists and errors as they are."""
    arrays = [r for r in results if not isinstance(r, (Error, ArrayList))]
    host = iter(b.to_host(arrays)) if arrays else iter(())
    return [r if isinstance(r, (Error, ArrayList)) else Tensor(next(host)) for r in results]


def list_to_host(lst: ArrayList, backend: Backend) -> TensorList:
    """A backend's list as the oracle's value (its set elements in one transfer)."""
    arrays = [t for t in lst.items if t is not None]
    host = iter(backend.to_host(arrays)) if arrays else iter(())
    items = tuple(None if t is None else Tensor(next(host)) for t in lst.items)
    return TensorList(lst.element_dtype, lst.element_shape, items, lst.max_elements)


def list_to_device(lst: TensorList, backend: Backend) -> ArrayList:
    """The oracle's list as a backend's (each set element uploaded)."""
    items = tuple(None if t is None else backend.to_device(t.array) for t in lst.items)
    return ArrayList(lst.element_dtype, lst.element_shape, items, lst.max_elements)


def _fire(m: DeviceMachine, feeds: Mapping[str, Value], init: Mapping[str, Value],
          schedule: Sequence[str], deadline: float | None) -> cf.CFState:
    """`cf.fire_schedule` with the clock read every 32 steps (past
    `deadline`, time.monotonic(), BudgetExceeded), and without finding the
    enabled steps again for a step that was eager where they were last
    found: an eager step stays enabled until it fires and its label is its
    own (`Machine.eager`, `Machine.batch_eager`: the oracle fires a state's
    eager steps in one batch on the same argument), so it is looked up
    among those until a step that was not eager fires.  A replay of a few
    thousand steps spent half its time finding them.

    Where the reference engine kept the path this schedule names (the
    run that made it met no choice: `cf.kept_path`), its steps are fired
    as they were recorded, each checked to write what it wrote then
    (`cf.fire_path`): while all do, the state's skeleton (which tokens,
    which dead, what fired) is the recorded run's at every step, so each
    step is the enabled step its label names there, and the run ends
    where the schedule ends (RunTrace in oracle/controlflow.py argues
    it; checked once more at the end); the values are this machine's,
    computed by its own functions.  A step that writes otherwise (this
    back end made another branch's predicate, or a function another
    number of results) ends that: the schedule is replayed from σ by its
    labels, as before.  The enabled steps were found again after every
    non-eager step and the state copied at every step: on the corpus's
    loop graphs, two thirds of a confirmation's replays."""
    started = time.monotonic()
    tr = cf.kept_path(m, schedule)
    if tr is not None:
        s = cf.fire_path(m, tr, feeds, init, deadline, clock_steps=32)
        if s is not None:
            if m.enabled_steps(s):
                raise ValueError("the schedule ends before the run does")
            return s
    s = m.initial(feeds, init)
    eager: dict[str, cf.Step] = {}
    for i, label in enumerate(schedule):
        if deadline is not None and i & 31 == 31 and time.monotonic() > deadline:
            raise BudgetExceeded("seconds", max(0.0, deadline - started), i)
        st = eager.pop(label, None)
        if st is None:
            steps = m.enabled_steps(s)
            st = _enabled(steps, label)
            if st is None:
                raise ValueError(f"step {i} ({label}) is not enabled")
            eager = {x.label(): x for x in steps if x.phase != "end" and m.eager(s, x)} \
                if m.batch_eager else {}
            if eager.pop(label, None) is not st:
                eager = {}   # (st was not eager: the others are found again after it)
        s = m.advance(s, st)   # (s is this replay's alone: fired in place)
    if m.enabled_steps(s):
        raise ValueError("the schedule ends before the run does")
    return s


def _enabled(steps: list, label: str) -> cf.Step | None:
    """The step of `steps` labelled `label` (`Machine.labels`, spelled
    only for the steps of the node the label names)."""
    many: dict = {}
    for st in steps:
        many[(st.node, st.ctx, st.phase)] = many.get((st.node, st.ctx, st.phase), 0) + 1
    for st in steps:
        if label.startswith(st.node) and st.label(many[(st.node, st.ctx, st.phase)] > 1) == label:
            return st
    return None


def replay_outcome(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
                   schedule: Sequence[str], semantics: str = "atomic",
                   observe: str = "outputs+state", max_iterations: int | None = None,
                   backend: Backend | str = "numpy", deadline: float | None = None) -> Outcome:
    """The outcome of `schedule` on `backend`; ValueError when a step of it
    may not fire (or the run goes on after it); CannotRun (with `.op` and
    `.node`) when an op it applies has no model on the backend."""
    b = get_backend(backend) if isinstance(backend, str) else backend
    m = DeviceMachine(p, b, semantics, max_iterations or cf.DEFAULT_MAX_ITERATIONS)
    return m.outcome(_fire(m, feeds, init, schedule, deadline), observe)


def confirm_control_flow(original: Program, rewritten: Program, feeds: Mapping[str, Value],
                         init: Mapping[str, Value], schedule: Sequence[str], claimed: Outcome,
                         original_outcomes, semantics: str = "atomic",
                         observe: str = "outputs+state", max_iterations: int | None = None,
                         backends: Sequence[Backend | str] | None = None,
                         deadline: float | None = None,
                         max_witnesses: int = MAX_WITNESSES) -> list[Confirmation]:
    """A control-flow counterexample replayed on each backend (default:
    every one that can run here), as backends/confirm.py does for programs
    without control flow: the rewritten schedule gives the `claimed`
    outcome there, and none of the original's witness schedules
    (`original_outcomes`, the oracle's OutcomeSet at σ) gives it there."""
    chosen = [get_backend(b) if isinstance(b, str) else b
              for b in (backends if backends is not None else available_backends())]
    out = []
    for b in chosen:
        try:
            with collector_paused():     # (execute.collector_paused says why)
                out.append(_confirm_on(b, original, rewritten, feeds, init, schedule, claimed,
                                       original_outcomes, semantics, observe, max_iterations,
                                       deadline, max_witnesses))
        except BudgetExceeded:
            out.append(Confirmation(b.label, False, f"{BUDGET_REASON} (the check's time "
                                    "budget ran out during the replay)"))
        except CannotRun as exc:
            op, node = getattr(exc, "op", None), getattr(exc, "node", None)
            what = f"{op} (node {node!r})" if op else "an op"
            out.append(Confirmation(b.label, False, f"not replayed on {b.label}: {what} has no "
                                    f"{b.label} back end ({exc})"))
    return out


def _confirm_on(b: Backend, original: Program, rewritten: Program, feeds, init, schedule,
                claimed: Outcome, oset, semantics: str, observe: str,
                max_iterations: int | None, deadline: float | None,
                max_witnesses: int) -> Confirmation:
    bound = max_iterations or cf.DEFAULT_MAX_ITERATIONS
    # (this backend's results, shared by the two programs' replays, and by
    # the checks after this one at this σ: backends/reuse.py)
    session = reuse.session(b, feeds, init)
    if session.cf_memo is None:
        session.cf_memo = BoundedMemo(reuse.SESSION_MEMO_BYTES)
    memo = session.cf_memo
    mr = DeviceMachine(rewritten, b, semantics, bound, memo)
    try:
        ours = mr.outcome(_fire(mr, feeds, init, schedule, deadline), observe)
    except ValueError as exc:
        return Confirmation(b.label, False, f"the rewritten program cannot follow the "
                            f"schedule on {b.label}: {exc}")
    if ours != claimed:
        where = ours.first_difference([claimed]) or {}
        part = ", ".join(f"{k} {v!r}" for k, v in where.items())
        return Confirmation(b.label, False, f"{b.label} gave another outcome on this schedule "
                            f"than the reference engine ({part} differs)", ours)
    if ours in oset:
        return Confirmation(b.label, False, "the original has this outcome too", ours)
    if oset.count > max_witnesses:
        return Confirmation(b.label, False, f"the original has {oset.count} outcomes, more "
                            f"witnesses than the {max_witnesses} replayed at most", ours)
    mo = None   # (made when a witness is replayed here: not when the session has them all)
    n = 0
    how = ("control-flow", semantics, observe, bound)
    for _, w in oset.items():
        n += 1
        # (a witness this backend replayed at this σ already, in an earlier
        # check of this original: its outcome, reuse.Session.outcome)
        theirs = session.outcome(original, how, w)
        if theirs is None:
            if mo is None:
                mo = DeviceMachine(original, b, semantics, bound, memo)
            try:
                theirs = mo.outcome(_fire(mo, feeds, init, w, deadline), observe)
            except ValueError as exc:
                return Confirmation(b.label, False, f"the original cannot follow its witness "
                                    f"schedule on {b.label}: {exc}", ours)
            session.remember(original, how, w, theirs)
        if theirs == ours:
            return Confirmation(b.label, False, f"an original's witness schedule gives this "
                                f"outcome on {b.label}", ours)
    return Confirmation(b.label, True, f"the schedule gives the claimed outcome on {b.label}; "
                        f"none of the original's {n} witness schedules does", ours)


def confirm_on_backends(original: Program, rewritten: Program, feeds, init, schedule,
                        claimed: Outcome, original_outcomes, semantics: str, observe: str,
                        max_iterations: int | None = None,
                        deadline: float | None = None,
                        backends: Sequence[Backend | str] | None = None
                        ) -> tuple[list[str], str | None]:
    """The checker's hook (checking/control_flow.py): the backends that
    confirm the counterexample, and a line saying why the others did not
    (None when all did): which op has no back end, which outcome differs."""
    details = confirm_control_flow(original, rewritten, feeds, init, schedule, claimed,
                                   original_outcomes, semantics, observe, max_iterations,
                                   backends, deadline)
    def why(c: Confirmation) -> str:
        if c.reason.startswith(BUDGET_REASON):
            # (the words of the replay of programs without control flow,
            # checking/check.py: docs/verdicts.md "confirmed on")
            return f"{c.backend} replay skipped: budget (the check's time ran out during the replay)"
        return c.reason if c.backend in c.reason else f"{c.backend}: {c.reason}"
    note = "; ".join(why(c) for c in details if not c.confirmed) or None
    return [c.backend for c in details if c.confirmed], note
