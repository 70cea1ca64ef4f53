"""TensorFlow's own kernels as the concrete semantics of pure ops tfsem has
no numpy model of (docs/kernels.md).

Where numpy computes what TensorFlow's CPU kernel computes bit for bit, tfsem
has its own model (oracle/functions.py, oracle/opdefs: math.py, array.py).  Float
MatMul, reductions, Softmax, the cross-entropy losses, Exp, convolutions and
their gradients, Einsum, ... have none: their summation order and their
vectorized transcendental functions are Eigen's and oneDNN's.  For those a
model raises `CannotRun`; when TensorFlow is installed this module computes
the op with TensorFlow's kernel instead, so that a counterexample through
them is found and confirmed on TensorFlow's arithmetic.

A kernel is used as a function only when it is one:

* it runs in a child process (`kernel_worker.py`) that set, before its first
  op, op determinism on (``enable_op_determinism``) and one intra-op and one
  inter-op thread, on the CPU;
* the op is in :data:`DETERMINISTIC` (argued deterministic on CPU under
  those settings by its entry in the op registry, oracle/opdefs); any other
  op is refused by name;
* every evaluation runs the kernel twice and refuses (CannotRun: the check
  says `unknown`) when the two results differ in any bit.

Without TensorFlow (or with ``TFSEM_TF_KERNELS=0``) nothing changes: the op
stays uninterpreted in proofs and a concrete run stops naming it.

`record()` collects the ops evaluated here while a check runs, which the
verdict reports ("evaluated by TensorFlow 2.21 kernels: MatMul, Softmax (op
determinism on, 1 thread)").
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import select
import subprocess
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Set as AbstractSet
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from . import kernel_worker as _worker_module
from .kernel_worker import UNREADABLE_EXIT, Region, attrs_key, plain_dumps, plain_loads

#: the child's program: this tfsem's own kernel_worker.py
_WORKER_FILE = os.path.abspath(_worker_module.__file__)


ENV = "TFSEM_TF_KERNELS"
_local = threading.local()

class _RegistryKernels(AbstractSet):
    """The ops whose CPU kernel is a deterministic function of its inputs
    with op determinism on and one thread: those whose entry in the op
    registry says why (`OpDef.kernel`, `KnownOp.kernel`; each family module
    of oracle/opdefs argues its own: element-wise math, reductions, matrix
    products, convolutions, data movement, segment sums, stateless random
    ops, Cast).  The registry is a layer above this module: it supplies
    them (`supply`, oracle/opdefs/__init__.py) when it is loaded."""

    _source: Callable[[], frozenset] | None = None

    def _ops(self) -> frozenset:
        return self._source() if self._source is not None else frozenset()

    def __contains__(self, op: object) -> bool:
        return op in self._ops()

    def __iter__(self) -> Iterator[str]:
        return iter(self._ops())

    def __len__(self) -> int:
        return len(self._ops())

    @classmethod
    def _from_iterable(cls, it):
        return frozenset(it)

    def __repr__(self) -> str:
        return f"DETERMINISTIC({sorted(self._ops())})"


#: Pure ops whose CPU kernel tfsem runs as a function (read from the op
#: registry: `_RegistryKernels`); ops that leave memory unset (DynamicStitch
#: with missing indices, Empty) or draw randomness from state are not here.
DETERMINISTIC: AbstractSet[str] = _RegistryKernels()


def supply(source: Callable[[], frozenset]) -> None:
    """Where DETERMINISTIC's ops come from: the op registry's `kernel_ops`."""
    _RegistryKernels._source = staticmethod(source)


#: tfsem's dtype names as TensorFlow's DataType names (for the Cast attribute).
DT_NAMES = {"bool": "DT_BOOL", "int8": "DT_INT8", "int16": "DT_INT16", "int32": "DT_INT32",
            "int64": "DT_INT64", "uint8": "DT_UINT8", "uint16": "DT_UINT16",
            "uint32": "DT_UINT32", "uint64": "DT_UINT64", "float16": "DT_HALF",
            "bfloat16": "DT_BFLOAT16", "float32": "DT_FLOAT", "float64": "DT_DOUBLE"}

#: Seconds the first evaluation waits for the child to import TensorFlow
#: (under load the import alone has taken a minute); a check's own deadline
#: (`deadline()`) cuts it shorter.
START_SECONDS = float(os.environ.get("TFSEM_TF_KERNELS_START_SECONDS", "180"))
#: Seconds one evaluation may take once TensorFlow is up.
CALL_SECONDS = 60.0
#: Bytes of results kept for inputs seen before.
CACHE_BYTES = 256 << 20


class KernelRefused(RuntimeError):
    """TensorFlow's kernel cannot stand for the op here (TensorFlow absent,
    the op not known deterministic, two runs that differed, ...)."""


class KernelCrashed(KernelRefused):
    """The child died on a call after it had started (a kernel's CHECK failure
    aborts the process: TensorFlow 2.21's GetTensorDimIndex on a tensor of
    the wrong rank, met by the Grappler remap campaign).  The call is
    refused, its inputs remembered refused, and the next call starts a new
    child."""


class KernelOpError(Exception):
    """The kernel fails on these inputs (TensorFlow raises): `reason` is the
    error value tfsem gives (invalid-argument -> shape-mismatch, as the
    numpy models of TensorFlow's index ops do; no kernel -> no-kernel)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def enabled() -> bool:
    """Whether kernels may be used: TFSEM_TF_KERNELS is not 0/off and
    TensorFlow is importable (looked up, not imported)."""
    forced = getattr(_local, "forced", None)
    if forced is not None:
        return forced
    return environment_enabled()


_installed: bool | None = None


def _tensorflow_installed() -> bool:
    global _installed
    if sys.modules.get("tensorflow", False) is None:   # import blocked (a test, a user)
        return False
    if _installed is None:
        try:
            _installed = importlib.util.find_spec("tensorflow") is not None
        except (ImportError, ValueError, AttributeError):
            _installed = False
    return _installed


@contextlib.contextmanager
def use(on: bool) -> Iterator[None]:
    """Kernels on or off inside the block, in this thread (tests; the
    batched evaluator, which would otherwise call a kernel once per
    valuation)."""
    old = getattr(_local, "forced", None)
    _local.forced = on
    try:
        yield
    finally:
        _local.forced = old


def forced() -> bool | None:
    """The on/off `use()` set in this thread, or None (then the
    environment decides: `environment_enabled`)."""
    return getattr(_local, "forced", None)


def environment_enabled() -> bool:
    """`enabled()` as the environment alone says (no `use()` override)."""
    if os.environ.get(ENV, "1").strip().lower() in ("0", "off", "no", "false"):
        return False
    return _tensorflow_installed()


# -- what a check used ---------------------------------------------------------


@contextlib.contextmanager
def record() -> Iterator[set]:
    """The names of the ops evaluated by kernels inside the block (this
    thread)."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    used: set = set()
    stack.append(used)
    try:
        yield used
    finally:
        stack.pop()


@contextlib.contextmanager
def deadline(t: float | None) -> Iterator[None]:
    """Evaluations inside the block wait for TensorFlow to start in the child
    at most until time.monotonic() reaches t (then KernelRefused: the
    check's budget ran out)."""
    old = getattr(_local, "deadline", None)
    _local.deadline = t
    try:
        yield
    finally:
        _local.deadline = old


@contextlib.contextmanager
def request_deadline(t: float | None) -> Iterator[None]:
    """Inside the block (this thread) every evaluation ends by time.monotonic()
    reaching t: waiting for TensorFlow to start in the child (as `deadline`)
    and, once it is up, waiting for the kernel's answer.  A request that
    cannot finish in time gives up (KernelRefused naming the time budget;
    not remembered: a later request asks again, and the late answer is
    skipped).  For a stage that must end at its deadline whatever the
    kernels do (the structural rule's folds, checking/structural.py); a
    check's concrete stages keep `deadline`, which lets a started call
    finish.  None: no request deadline (an outer block's stays)."""
    old = getattr(_local, "request_deadline", None)
    if t is not None and old is not None:
        t = min(t, old)
    _local.request_deadline = t if t is not None else old
    try:
        yield
    finally:
        _local.request_deadline = old


def _note(op: str) -> None:
    for used in getattr(_local, "stack", ()):
        used.add(op)


def note(ops) -> None:
    """Note `ops` as evaluated here (`record()`): a remembered answer that
    evaluated them (checking/canonical_memo.py, functions' application
    memo) names the same kernels as the evaluation it stands for."""
    for op in ops:
        _note(op)


def settings() -> dict | None:
    """The running child's TensorFlow version and settings (None before one
    answered)."""
    c = _client
    if c is None or c.version is None:
        return None
    return {"tensorflow": c.version, **c.settings}


def describe(ops: Sequence[str]) -> str:
    """The line a verdict prints for the ops evaluated by kernels."""
    s = settings() or {}
    version = ".".join(str(s.get("tensorflow", "?")).split(".")[:2])
    threads = s.get("intra_op_threads", 1)
    return (f"evaluated by TensorFlow {version} kernels: {', '.join(sorted(ops))} "
            f"(op determinism on, {threads} thread{'s' if threads != 1 else ''})")


def report(ops: Sequence[str]) -> dict:
    """The JSON form of the same (a verdict's stats["tensorflow_kernels"])."""
    s = settings() or {}
    return {"ops": sorted(ops), "tensorflow": s.get("tensorflow"),
            "op_determinism": s.get("op_determinism", True),
            "intra_op_threads": s.get("intra_op_threads", 1),
            "inter_op_threads": s.get("inter_op_threads", 1),
            "device": s.get("device", "CPU"), "evaluated_twice": True,
            "text": describe(ops)}


# -- evaluation ------------------------------------------------------------------


def evaluate(op: str, inputs: Sequence[np.ndarray], attrs: Mapping[str, Any],
             n_out: int) -> list[np.ndarray]:
    """TensorFlow's kernel of `op` on `inputs` (numpy arrays) with the node
    attributes `attrs` (JSON values: dtypes as DT_ names): its first n_out
    outputs.  Raises KernelRefused (no result: the caller's CannotRun; also
    when the deadline passed while TensorFlow started) or KernelOpError (the
    op fails: an error value)."""
    if op not in DETERMINISTIC:
        raise KernelRefused(f"TensorFlow's {op} is not among the ops whose CPU kernel tfsem "
                            "runs as a function (oracle/kernels.py DETERMINISTIC)")
    if not enabled():
        raise KernelRefused("TensorFlow's kernels are off")
    # (np.ascontiguousarray would make a 0-d array 1-d)
    arrays = [a if a.flags.c_contiguous else a.copy(order="C") for a in map(np.asarray, inputs)]
    key = _key(op, arrays, attrs, n_out)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
    collect = getattr(_local, "collect", None)
    if collect is not None:
        # (nothing is computed or copied here: kept already, nothing to ask)
        if hit is None:
            collect.append((key, op, arrays, dict(attrs), n_out))
        raise Deferred(f"TensorFlow's {op}: evaluated with others (`prefetch`)")
    if hit is not None:
        _note(op)
        if isinstance(hit, KernelOpError):
            raise KernelOpError(hit.reason, str(hit))
        if isinstance(hit, KernelRefused):
            raise KernelRefused(str(hit))
        return [r.copy() for r in hit]
    try:
        answer = _get_client().call(op, arrays, dict(attrs), n_out)
    except KernelCrashed as exc:
        # the same inputs would abort the next child too: remembered refused
        shapes = ", ".join(f"{a.dtype.name}{list(a.shape)}" for a in arrays)
        crashed = KernelRefused(f"TensorFlow's {op} kernel aborted the process on inputs "
                                f"{shapes} ({exc})")
        _store(key, crashed, 256)
        raise crashed from None
    kind = answer[0]
    if kind == "ok":
        results = _store_results(key, answer[1])
        _note(op)
        return [r.copy() for r in results]
    if kind == "op-error":
        err = _store_op_error(key, op, answer)
        _note(op)
        raise err
    raise KernelRefused(f"TensorFlow's {op} kernel: {answer[1]}")


class Deferred(KernelRefused):
    """Inside `collecting()`: the evaluation was not made, only noted."""


@contextlib.contextmanager
def collecting() -> Iterator[list]:
    """Inside the block (this thread) no evaluation is made: `evaluate`
    notes each request not cached in the list yielded, and raises Deferred
    (also for one cached: nothing is returned, copied or computed from it).
    Then `prefetch(list)` makes them all in one message."""
    old = getattr(_local, "collect", None)
    _local.collect = found = []
    try:
        yield found
    finally:
        _local.collect = old


def deferring() -> bool:
    """Whether evaluations are being deferred here (inside `collecting()`)."""
    return getattr(_local, "collect", None) is not None


def prefetch(requests: Sequence[tuple]) -> int:
    """The requests `collecting()` noted, evaluated in one message to the
    child (one turn of writer and reader instead of one per evaluation:
    on the shared machine each turn waited 1-2 ms for the scheduler) and
    their answers cached, as `evaluate` would cache them one by one: the
    evaluations that follow find them.  Nothing is raised: where the batch
    cannot run (TensorFlow not up before the deadline, the child gone), each
    evaluation runs, or is refused, on its own later.  (A kernel that aborts
    the child aborts it here, and again when that evaluation runs alone:
    then it is remembered refused.)  The number of evaluations sent."""
    todo, seen = [], set()
    with _cache_lock:
        for key, op, arrays, attrs, n_out in requests:
            if key not in seen and key not in _cache:
                seen.add(key)
                todo.append((key, op, arrays, attrs, n_out))
    if len(todo) < 2 or not enabled():
        return 0     # (one alone: `evaluate` sends it, no sooner)
    try:
        answers = _get_client().call_batch([(op, arrays, attrs, n_out)
                                            for _k, op, arrays, attrs, n_out in todo])
    except KernelRefused:
        return 0
    for (key, op, _arrays, _attrs, _n), answer in zip(todo, answers):
        kind = answer[0]
        if kind == "ok":
            _store_results(key, answer[1])
        elif kind == "op-error":
            _store_op_error(key, op, answer)
        # ("refused": not kept; the evaluation alone says why)
    return len(todo)


_cache: "OrderedDict[tuple, Any]" = OrderedDict()
_cache_bytes = 0
_cache_lock = threading.Lock()


def _key(op, arrays, attrs, n_out) -> tuple:
    h = hashlib.sha256()
    for a in arrays:
        h.update(_digest(a))
    return (op, attrs_key(attrs), n_out, h.digest())


#: id(array) -> (a weak reference to it, its digest), for arrays no one may
#: write (`_digest`); at most DIGESTS_KEPT
_digests: dict[int, tuple] = {}
_digests_lock = threading.Lock()
DIGESTS_KEPT = 4096


def _digest(a: np.ndarray) -> bytes:
    """SHA-256 of an array's dtype, shape and bytes (OpenSSL's SHA-256, with
    the processor's SHA instructions where it has them, hashed MobileNetV2's
    activations twice as fast as hashlib's BLAKE2b on the shared machine:
    0.9 against 1.9 ms per 0.8 MB).

    Remembered for an array that owns its data and is read-only (a tensor's:
    values.Tensor, which nothing writes), by identity while it lives: an
    activation that feeds several kernels, and every evaluation that
    `prefetch` asked for before its step fires, is hashed once."""
    fixed = not a.flags.writeable and a.base is None
    if fixed:
        hit = _digests.get(id(a))
        if hit is not None and hit[0]() is a:
            return hit[1]
    h = hashlib.sha256(_dtype_prefix(a.dtype) + f"{a.shape};".encode())
    if a.size:
        h.update(a.reshape(-1).view(np.uint8).data)
    d = h.digest()
    if fixed:
        try:
            ref = weakref.ref(a)
        except TypeError:
            return d
        with _digests_lock:
            if len(_digests) >= DIGESTS_KEPT:
                _digests.clear()
            _digests[id(a)] = (ref, d)
    return d


#: id(dtype) -> (the dtype, its name and str as `_digest` hashes them)
_dtype_prefixes: dict[int, tuple] = {}


def _dtype_prefix(dt: np.dtype) -> bytes:
    """``f"{dt.name}{dt.str}"`` encoded, remembered by the dtype's identity
    (numpy's ``name`` walks the type hierarchy: 1.5 µs an array, a third of
    an 8 KB array's hash).  Exact: a dtype is immutable, the entry holds the
    dtype itself so its id is never another's while it stands, and a hit is
    the same object (`is`), whose name and str are those it had."""
    hit = _dtype_prefixes.get(id(dt))
    if hit is not None and hit[0] is dt:
        return hit[1]
    prefix = f"{dt.name}{dt.str}".encode()
    if len(_dtype_prefixes) >= 256:
        _dtype_prefixes.clear()
    _dtype_prefixes[id(dt)] = (dt, prefix)
    return prefix


def _store_results(key, arrays) -> list[np.ndarray]:
    """A kernel's results as read-only arrays, remembered under `key`."""
    results = [np.asarray(r) for r in arrays]
    for r in results:
        r.setflags(write=False)
    _store(key, results, sum(r.nbytes for r in results))
    return results


def _store_op_error(key, op: str, answer: tuple) -> "KernelOpError":
    """The child's ("op-error", reason, message) as the error value's cause
    (an InvalidArgument is a shape-mismatch), remembered under `key`."""
    reason = "shape-mismatch" if answer[1] == "invalid-argument" else answer[1]
    err = KernelOpError(reason, f"TensorFlow's {op} kernel failed: {answer[2]}")
    _store(key, err, 256)
    return err


def _store(key, value, size: int) -> None:
    global _cache_bytes
    with _cache_lock:
        _cache[key] = value
        _cache_bytes += size
        while _cache_bytes > CACHE_BYTES and len(_cache) > 1:
            _, old = _cache.popitem(last=False)
            _cache_bytes -= (sum(r.nbytes for r in old) if isinstance(old, list) else 256)


# -- the child process ---------------------------------------------------------------


class _Client:
    def __init__(self) -> None:
        env = dict(os.environ)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        verbose = os.environ.get("TFSEM_VERBOSE") == "1"
        # the arrays of requests and of answers cross in two shared files
        # (kernel_worker.py `Region`), where the system has them: through the
        # pipe a 1 MB input took 3 ms a turn on an idle machine, the writer
        # blocked while the reader copied it out chunk by chunk
        self.requests = Region.create("tfsem-kernel-requests") if shared_files() else None
        self.answers = Region.create("tfsem-kernel-answers") if self.requests else None
        shared = (["--shared", str(self.requests.fd), str(self.answers.fd)]
                  if self.requests and self.answers else [])
        if not shared:
            self.drop_regions()
        else:
            # (the requests' arrays pickled compactly, as the child's
            # answers: kernel_worker.py `_ArrayPickler`)
            self.requests.compact = _worker_module.COMPACT_ARRAYS
        try:
            # (this process's kernel_worker.py by its path, with -P: `-m
            # tfsem.oracle.kernel_worker` looked in the working directory
            # first, so a process started in another tfsem's tree -- a
            # benchmark's baseline run from the repository's root -- ran
            # that tree's child; the module needs nothing of tfsem)
            self.proc = subprocess.Popen(
                [sys.executable, "-P", _WORKER_FILE, *shared],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                stderr=None if verbose else subprocess.DEVNULL, env=env,
                start_new_session=True,
                pass_fds=(self.requests.fd, self.answers.fd) if shared else ())
        except BaseException:
            self.drop_regions()
            raise
        self.pid = os.getpid()
        self.started = time.monotonic()
        _widen(self.proc.stdin.fileno(), self.proc.stdout.fileno())
        # (our end only: the child's end of the pipe is another open file)
        os.set_blocking(self.proc.stdin.fileno(), False)
        self.version: str | None = None
        self.settings: dict = {}
        self.failed: str | None = None
        self.crashed = False
        self.next_id = 0
        #: ids of requests sent whose answers have not been read (a call that
        #: stopped waiting): while one is out, the child may still read its
        #: inputs in the request file, so requests go in the message alone
        self.unanswered: set[int] = set()
        self.buf = bytearray()
        self.lock = threading.Lock()

    def alive(self) -> bool:
        return self.failed is None and self.proc.poll() is None

    def _read(self, until: float) -> Any:
        """The next answer (a length-prefixed pickle), read without blocking
        past `until` (TimeoutError: what arrived stays in the buffer)."""
        fd = self.proc.stdout.fileno()
        while True:
            if len(self.buf) >= 8:
                n = int.from_bytes(self.buf[:8], "little")
                if len(self.buf) >= 8 + n:
                    data = bytes(self.buf[8:8 + n])
                    del self.buf[:8 + n]
                    # (an answer's arrays copied out of the answer file: the
                    # child writes it again for the next answer)
                    try:
                        return self.answers.loads(data, copy=True) if self.answers is not None \
                            else plain_loads(data)
                    except Exception as exc:  # noqa: BLE001 (an answer that cannot be read)
                        # no answer of this child can be trusted to follow: the
                        # next call starts a new one; this one is refused
                        self.failed = (f"an answer of the TensorFlow kernel process could not "
                                       f"be read ({type(exc).__name__}: {exc})")
                        self.crashed = True
                        raise KernelRefused(self.failed) from None
            left = until - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    code = self.proc.wait()
                    if code == UNREADABLE_EXIT and self.version is not None:
                        # the child could not read the request's shared file:
                        # not the kernel's doing, so the call is refused and
                        # its inputs are not remembered refused (`evaluate`
                        # keeps a KernelCrashed's); the next call starts a
                        # new child
                        self.failed = ("the TensorFlow kernel process could not read a "
                                       "request's shared file")
                        self.crashed = True
                        raise KernelRefused(self.failed)
                    self.failed = f"the TensorFlow kernel process exited (status {code})"
                    # a child that had started died on a call (a kernel's
                    # CHECK failure aborts the process): the next call starts
                    # a new one (`_get_client`); the call itself is refused
                    self.crashed = self.version is not None
                    raise KernelCrashed(self.failed)
                self.buf += chunk

    def _write(self, data: bytes) -> None:
        """All of `data` to the child, reading what it writes meanwhile (a
        late answer to an abandoned call must not block both sides)."""
        out, inp = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        view = memoryview(data)
        # each write first without waiting (our end of the child's input is
        # non-blocking, `_Client.__init__`): a message the pipe has room for,
        # nearly every one, is one system call, not a select() and a write;
        # where it has room for less, select() waits for room or reads
        while True:
            try:
                view = view[os.write(out, view[:PIPE_BYTES]):]
            except BlockingIOError:
                pass
            if not view:
                return
            readable, _, _ = select.select([inp], [out], [], 1.0)
            if readable:
                chunk = os.read(inp, 1 << 20)
                if not chunk:
                    raise BrokenPipeError("the child closed its output")
                self.buf += chunk

    def _wait(self, seconds: float) -> float:
        """The time to wait until: the check's deadline, at most `seconds`."""
        until = time.monotonic() + seconds
        for d in (getattr(_local, "deadline", None), getattr(_local, "request_deadline", None)):
            if d is not None:
                until = min(until, d)
        return until

    def _ready(self) -> None:
        if self.version is not None:
            return
        until = self._wait(max(0.0, START_SECONDS - (time.monotonic() - self.started)))
        try:
            msg = self._read(until)
        except TimeoutError:
            if time.monotonic() - self.started >= START_SECONDS:
                self.failed = f"TensorFlow did not start within {START_SECONDS:g} s"
                raise KernelRefused(self.failed) from None
            raise _waiting("TensorFlow's import for its kernels") from None
        if msg[0] != "ready":
            self.failed = f"TensorFlow could not be started for its kernels: {msg[1]}"
            raise KernelRefused(self.failed)
        self.version, self.settings = msg[1], msg[2]

    def call(self, op, arrays, attrs, n_out) -> tuple:
        return self._call((op, arrays, attrs, n_out), op)

    def call_batch(self, calls: list) -> list:
        """Several evaluations ((op, arrays, attrs, n_out) each) in one
        message: their answers, in order (kernel_worker.py).

        The batch waits CALL_SECONDS per evaluation, the time each would
        have had alone.  With CALL_SECONDS for the whole batch, 64 steps
        asked for ahead (the explorer's eager steps, `_prefetch`) of 2.5 s
        each (float MatMul of two [4096, 4096] matrices) were refused as
        one, and the child, still computing them, made the next
        evaluations wait past their own CALL_SECONDS: refused too, a
        CannotRun (`unknown`) where each alone was answered.  The child
        runs a batch's evaluations one after another, as it runs single
        calls: a batch past N * CALL_SECONDS holds one evaluation past
        CALL_SECONDS, refused alone too.  (A check's `request_deadline`
        still cuts it shorter.)"""
        answer = self._call(("batch", calls), "batch of", evaluations=max(1, len(calls)))
        if answer[0] != "batch" or len(answer[1]) != len(calls):
            raise KernelRefused("the TensorFlow kernel process answered a batch with something else")
        return answer[1]

    def _call(self, request: tuple, op: str, evaluations: int = 1) -> tuple:
        # (CALL_SECONDS per evaluation the request holds: `call_batch`)
        seconds = CALL_SECONDS * evaluations
        with self.lock:
            if self.failed:
                raise KernelRefused(self.failed)
            self._ready()
            self.next_id += 1
            rid = self.next_id
            try:
                region = self.requests if not self.unanswered else None
                data = region.dumps((rid, *request)) if region is not None \
                    else plain_dumps((rid, *request), _worker_module.COMPACT_ARRAYS)
                self._write(len(data).to_bytes(8, "little") + data)
            except (BrokenPipeError, OSError) as exc:
                self.failed = f"the TensorFlow kernel process is gone ({exc})"
                raise KernelRefused(self.failed) from None
            # (once TensorFlow is up a call takes milliseconds: it is not cut
            # short by the check's deadline, which would lose a verdict found
            # while minimizing it; a call past CALL_SECONDS is refused, and
            # one past the block's `request_deadline`)
            until = time.monotonic() + seconds
            cut = getattr(_local, "request_deadline", None)
            while True:
                try:
                    msg = self._read(until if cut is None else min(until, cut))
                except TimeoutError:
                    # the answer stays in the pipe: a later call skips it
                    self.unanswered.add(rid)
                    if cut is not None and cut < until:
                        raise _waiting(f"TensorFlow's {op} kernel to answer") from None
                    raise KernelRefused(f"TensorFlow's {op} kernel did not answer within "
                                        f"{seconds:g} s") from None
                if msg[0] == rid:
                    return msg[1:]
                # an answer to a call that stopped waiting: skipped
                self.unanswered.discard(msg[0])

    def drop_regions(self) -> None:
        """Our descriptors of the shared files closed (their memory goes
        when the child's go too)."""
        for region in (getattr(self, "requests", None), getattr(self, "answers", None)):
            if region is not None:
                region.close()
        self.requests = self.answers = None

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.drop_regions()


#: Whether large arrays cross to the child through shared files
#: (kernel_worker.py `Region`): None, as TFSEM_TF_KERNELS_SHARED says when a
#: child starts (0: through the pipe), like TFSEM_TF_KERNELS; True or False
#: to fix it (tests).
SHARED: bool | None = None


def shared_files() -> bool:
    """Whether the next child gets the shared files (`SHARED`)."""
    if SHARED is not None:
        return SHARED
    return os.environ.get("TFSEM_TF_KERNELS_SHARED", "1").strip().lower() not in (
        "0", "off", "no", "false")

#: The capacity asked for each pipe to the child (Linux: F_SETPIPE_SZ, at
#: most /proc/sys/fs/pipe-max-size, 1 MiB by default).  With the default
#: 64 KiB a call on MobileNetV2's activations (0.8 MB each) took a dozen
#: turns of writer and reader, each a context switch; on a loaded machine
#: those turns, not the kernels, were most of a check's kernel time.
PIPE_BYTES = 1 << 20


def _widen(*fds: int) -> None:
    """Each pipe `fds` names at PIPE_BYTES where the system allows it (or
    as large as it allows; elsewhere unchanged)."""
    import fcntl
    op = getattr(fcntl, "F_SETPIPE_SZ", None)
    if op is None:
        return
    for fd in fds:
        for size in (PIPE_BYTES, _pipe_max()):
            try:
                fcntl.fcntl(fd, op, size)
                break
            except OSError:
                continue


def _pipe_max() -> int:
    try:
        with open("/proc/sys/fs/pipe-max-size") as f:
            return min(PIPE_BYTES, int(f.read()))
    except (OSError, ValueError):
        return 1 << 16


def _waiting(what: str) -> KernelRefused:
    # (not BudgetExceeded: the concrete stages do not all expect one from a
    # function; a refusal is what they handle, and the check says `unknown`
    # naming the op.  The child goes on starting: the next check may use it)
    return KernelRefused(f"the time budget ran out waiting for {what}")


_client: _Client | None = None
_client_lock = threading.Lock()


def _get_client() -> _Client:
    global _client
    with _client_lock:
        c = _client
        if c is None or c.pid != os.getpid() or c.crashed or \
                (c.proc.poll() is not None and c.failed is None):
            # (a forked process never shares its parent's child: its pipe is the parent's)
            if c is not None and c.pid == os.getpid():
                # (a child that died, or one whose answer could not be read:
                # its input closed, it exits; our shared files closed)
                try:
                    c.proc.stdin.close()
                except OSError:
                    pass
                c.drop_regions()
            c = _client = _Client()
        return c


def prestart() -> None:
    """Start the child now (TensorFlow imports while the caller does other
    work), when kernels are enabled."""
    if enabled():
        _get_client()


def shutdown() -> None:
    """Stop the child (it also exits when this process does: its stdin closes)."""
    global _client
    with _client_lock:
        c, _client = _client, None
    if c is not None and c.pid == os.getpid():
        c.close()


# -- the kernel forms of tfsem's functions ------------------------------------------


def opaque_form(op: str):
    """The kernel form of an uninterpreted TensorFlow op `tf.OP/N/M`: the op
    itself on all inputs, with the node's attributes (`tf_attrs`)."""
    def form(arrays, attrs):
        return op, list(arrays), dict(attrs.get("tf_attrs") or {})
    return form
