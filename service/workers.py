"""A pool of worker processes that run the jobs of jobs.py with hard limits.

Why processes: the oracle and the checker watch their own budget, but only
between steps; one step on a huge array, or a solver call, can run past it,
and a thread cannot be stopped.  A process can: when a job runs past its hard
deadline its worker is killed, the request gets the verdict `unknown`, and a
fresh worker takes its place.  The server itself never blocks on a job.

Each worker is `python -m tfsem.service.workers JOBS_MODULE MEMORY_MB`,
speaking JSON lines on its standard input and output: a request never crosses
as a pickle, and what a worker runs is the module's `JOBS` menu, chosen by the
server's own code (tests pass a module of their own; requests cannot).  A
worker ignores SIGINT (Ctrl-C goes to the server, which stops its workers),
dies with its parent on Linux, and caps its own address space so that a
runaway allocation fails with MemoryError instead of taking the machine.

The pool bounds concurrency: `size` jobs run at once, at most `max_waiting`
more wait up to `queue_wait` seconds for a worker, and the rest are refused
with :class:`Overloaded` (HTTP 503).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any

#: the longest line a worker may answer with (outcome lists are capped well below)
MAX_ANSWER_BYTES = 64 << 20
START_TIMEOUT = 120.0
#: workers run at this niceness above the server's (see worker_main)
WORKER_NICENESS = 5


class Overloaded(RuntimeError):
    """Every worker is busy and the queue is full or waited too long."""


class PrepareTimeout(Exception):
    """A worker was still reading a request (converting a graph, decoding)
    when the request's budget ran out."""


@dataclass
class JobResult:
    status: int                 #: HTTP status: 200, 400, 500
    body: Any                   #: JSON answer
    #: why the worker was stopped or lost: "time", "memory", "too-large" (an
    #: answer over MAX_ANSWER_BYTES) or "died"
    stopped: str | None = None
    seconds: float = 0.0


@dataclass
class PoolStats:
    completed: int = 0
    stopped: int = 0
    refused: int = 0
    restarts: int = 0
    busy: int = 0
    waiting: int = 0
    by_job: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"completed": self.completed, "stopped": self.stopped, "refused": self.refused,
                "restarts": self.restarts, "busy": self.busy, "waiting": self.waiting,
                "by_job": dict(self.by_job)}


class _Worker:
    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.jobs_done = 0

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    async def request(self, message: dict | bytes, deadline: float,
                      prepare_deadline: float | None = None) -> dict:
        """Send one job (a dict, or its JSON line already encoded) and wait
        for its answer up to `deadline` seconds (raises TimeoutError, or
        EOFError when the worker died).  With `prepare_deadline`, a worker
        that has not finished reading the request (`{"prepared": true}`, or
        its answer) that many seconds after it was sent raises
        PrepareTimeout: decoding a request gets the request's budget, no
        grace."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        line = message if isinstance(message, bytes) else json.dumps(message, allow_nan=False).encode() + b"\n"
        self.proc.stdin.write(line)
        started = time.monotonic()

        async def exchange() -> bytes:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            await self.proc.stdin.drain()
            return await self.proc.stdout.readline()

        try:
            line = await asyncio.wait_for(exchange(), min(deadline, prepare_deadline or deadline))
        except asyncio.TimeoutError:
            if prepare_deadline is not None and prepare_deadline < deadline:
                raise PrepareTimeout() from None
            raise
        if not line:
            raise EOFError("the worker exited")
        answer = json.loads(line)
        if answer.get("prepared"):
            left = deadline - (time.monotonic() - started)
            line = await asyncio.wait_for(self.proc.stdout.readline(), max(left, 0.001))
            if not line:
                raise EOFError("the worker exited")
            answer = json.loads(line)
        return answer

    async def stop(self, grace: float = 1.0) -> None:
        if not self.alive:
            return
        with contextlib.suppress(Exception):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), grace)
        except asyncio.TimeoutError:
            self.kill()
            await self.proc.wait()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()


class WorkerPool:
    def __init__(self, size: int, *, jobs_module: str = "tfsem.service.jobs",
                 memory_mb: int = 1024, max_waiting: int = 32, queue_wait: float = 5.0):
        if size < 1:
            raise ValueError("a pool needs at least one worker")
        self.size = size
        self.jobs_module = jobs_module
        self.memory_mb = memory_mb
        self.max_waiting = max_waiting
        self.queue_wait = queue_wait
        self.stats = PoolStats()
        self._idle: asyncio.Queue[_Worker] = asyncio.Queue()
        self._all: set[_Worker] = set()
        self._replacing: set[asyncio.Task] = set()
        self._closed = False
        self._closing = False

    # -- life ---------------------------------------------------------------

    async def start(self) -> None:
        workers = await asyncio.gather(*(self._spawn() for _ in range(self.size)))
        for w in workers:
            self._idle.put_nowait(w)

    async def _spawn(self) -> _Worker:
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tfsem.service.workers", self.jobs_module, str(self.memory_mb),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env,
            limit=MAX_ANSWER_BYTES)
        worker = _Worker(proc)
        self._all.add(worker)
        assert proc.stdout is not None
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), START_TIMEOUT)
            hello = json.loads(line) if line else {}
        except (asyncio.TimeoutError, ValueError):
            hello = {}
        if not hello.get("ready"):
            worker.kill()
            await proc.wait()
            self._all.discard(worker)
            raise RuntimeError(f"a worker process ({self.jobs_module}) did not start: {hello.get('error', 'no answer')}")
        return worker

    async def close(self) -> None:
        self._closed = True
        for t in list(self._replacing):
            t.cancel()
        await asyncio.gather(*(w.stop() for w in list(self._all)), return_exceptions=True)
        self._all.clear()

    @property
    def full(self) -> bool:
        """No worker is idle and the queue is full: a job now would be refused."""
        return self._idle.qsize() == 0 and self.stats.waiting >= self.max_waiting

    def refuse(self) -> Overloaded:
        self.stats.refused += 1
        return Overloaded(f"all {self.size} workers are busy and {self.stats.waiting} requests wait")

    @property
    def idle(self) -> int:
        """Workers ready for a job now."""
        return self._idle.qsize()

    def pids(self) -> list[int]:
        return sorted(w.proc.pid for w in self._all if w.alive)

    # -- jobs ---------------------------------------------------------------

    def shutdown(self, grace: float) -> None:
        """The server is stopping: refuse new jobs at once, and after `grace`
        seconds stop the workers, so that jobs still running are answered
        (`stopped="shutdown"`) instead of holding the server up."""
        if self._closing:
            return
        self._closing = True

        def stop_all() -> None:
            for w in list(self._all):
                w.kill()

        asyncio.get_running_loop().call_later(grace, stop_all)

    async def run(self, job: str, payload: dict | bytes, budget: float, deadline: float) -> JobResult:
        """Run `job` on a worker with `budget` seconds for the computation and
        `deadline` seconds before the worker is stopped by force.  `payload`
        is the job's payload, or the whole message line already encoded
        (`{"job", "request", "limits", "budget"}`: see worker_main)."""
        if self._closed or self._closing:
            raise Overloaded("the server is shutting down")
        worker = await self._acquire()
        started = time.monotonic()
        self.stats.busy += 1
        # The exchange runs as its own task, so that a request that is
        # cancelled (client gone) still leaves a worker in a known state.
        task = asyncio.ensure_future(self._exchange(worker, job, payload, budget, deadline))
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(lambda t: t.cancelled() or t.exception())
            raise
        finally:
            self.stats.busy -= 1
        result.seconds = time.monotonic() - started
        return result

    async def _acquire(self) -> _Worker:
        while True:  # skip workers that died while idle (stopped at shutdown)
            try:
                worker = self._idle.get_nowait()
            except asyncio.QueueEmpty:
                break
            if worker.alive:
                return worker
            self._replace(worker)
        if self.stats.waiting >= self.max_waiting:
            self.stats.refused += 1
            raise Overloaded(f"all {self.size} workers are busy and {self.stats.waiting} requests wait")
        self.stats.waiting += 1
        try:
            return await asyncio.wait_for(self._idle.get(), self.queue_wait)
        except asyncio.TimeoutError:
            self.stats.refused += 1
            raise Overloaded(f"all {self.size} workers stayed busy for {self.queue_wait:g} s") from None
        finally:
            self.stats.waiting -= 1

    async def _exchange(self, worker: _Worker, job: str, payload: dict, budget: float,
                        deadline: float) -> JobResult:
        stopped = None
        message = payload if isinstance(payload, bytes) else {"job": job, "payload": payload, "budget": budget}
        try:
            answer = await worker.request(message, deadline,
                                          prepare_deadline=budget if isinstance(payload, bytes) else None)
        except PrepareTimeout:
            stopped = "budget"
        except asyncio.TimeoutError:
            stopped = "time"
        except (asyncio.LimitOverrunError, asyncio.IncompleteReadError):
            stopped = "too-large"
        except ValueError as exc:  # StreamReader: "chunk is longer than limit", or not JSON
            stopped = "too-large" if "limit" in str(exc) else "died"
        except (EOFError, ConnectionError):
            stopped = "died"
        except BaseException:
            worker.kill()
            self._replace(worker)
            raise
        if stopped is not None:
            if self._closing and stopped == "died":
                stopped = "shutdown"
            worker.kill()
            self.stats.stopped += 1
            self._replace(worker)
            return JobResult(200, None, stopped)
        self.stats.completed += 1
        self.stats.by_job[job] = self.stats.by_job.get(job, 0) + 1
        worker.jobs_done += 1
        if answer.get("restart"):
            worker.kill()
            self._replace(worker)
        else:
            self._idle.put_nowait(worker)
        return JobResult(int(answer["status"]), answer["body"], answer.get("stopped"))

    def _replace(self, worker: _Worker) -> None:
        """Reap a stopped worker and start another in the background."""
        async def replace() -> None:
            with contextlib.suppress(Exception):
                await worker.proc.wait()
            self._all.discard(worker)
            if self._closed or self._closing:
                return
            while not (self._closed or self._closing):
                try:
                    fresh = await self._spawn()
                except RuntimeError:
                    await asyncio.sleep(1.0)
                    continue
                self.stats.restarts += 1
                if self._closed:
                    await fresh.stop()
                    return
                self._idle.put_nowait(fresh)
                return

        task = asyncio.ensure_future(replace())
        self._replacing.add(task)
        task.add_done_callback(self._replacing.discard)


# ---------------------------------------------------------------------------
# The worker process


def _set_parent_death_signal() -> None:
    """Linux: die with the server even when it is killed with SIGKILL."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _limit_memory(extra_mb: int) -> None:
    """Cap the address space at what the worker uses now plus `extra_mb`,
    and the function-application memo (oracle/applications.py MEMO_BYTES,
    384 MiB) at a quarter of that: a memo sized for one large graph's two
    programs would otherwise take what a smaller cap leaves for the
    computation, and a check that fits gave `unknown` ("memory limit")."""
    from tfsem.oracle import applications
    applications.MEMO_BYTES = min(applications.MEMO_BYTES, (extra_mb << 20) // 4)
    applications.ENTRY_BYTES = min(applications.ENTRY_BYTES, applications.MEMO_BYTES // 8)
    try:
        import resource
        with open("/proc/self/status") as f:
            vm_kb = next(int(line.split()[1]) for line in f if line.startswith("VmSize:"))
        limit = vm_kb * 1024 + extra_mb * (1 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except Exception:
        pass  # not Linux: no cap (the time limit still holds)


def worker_main(argv: list[str]) -> int:
    jobs_module, memory_mb = argv[0], int(argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _set_parent_death_signal()
    # Answers go to a private copy of stdout; anything a library prints goes
    # to stderr and cannot break the protocol.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def send(obj: Any) -> None:
        out.write(json.dumps(obj, allow_nan=False, separators=(",", ":")).encode() + b"\n")
        out.flush()

    try:
        module = importlib.import_module(jobs_module)
        jobs = module.JOBS
        from tfsem.oracle.program import ProgramError, Violation

        from .limits import Limits
        from .requests import error_body, prepare
    except Exception as exc:
        send({"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        return 1
    _limit_memory(memory_mb)
    # The server's event loop comes first on a busy machine: health and the
    # answers to other clients do not wait behind a computation.
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)
    send({"ready": True, "pid": os.getpid()})

    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            return 0
        restart = False
        stopped = None
        message: dict = {}
        try:
            message = json.loads(line)
            job, budget = message["job"], float(message["budget"])
            started = time.monotonic()
            if "request" in message:
                # a parsed request body: graph conversion, size checks and
                # decoding happen here, inside this worker's caps, and their
                # time comes out of the request's budget
                try:
                    payload = prepare(job, message["request"], Limits(**message["limits"]))
                except RecursionError:
                    restart = True
                    raise ProgramError([Violation("request", "too-deep", "the request is nested too deeply")])
                budget -= time.monotonic() - started
                send({"prepared": True})
            else:
                payload = message["payload"]
            if budget <= 0:
                status, body, stopped = 200, None, "budget"
            else:
                status, body = 200, jobs[job](payload, budget)
        except ProgramError as exc:
            status, body = 400, error_body(exc, "check" if message.get("job") == "check" else "outcomes")
        except MemoryError:
            restart, stopped = True, "memory"
            status, body = 200, None
        except RecursionError:
            restart = True
            status, body = 500, {"error": "internal error", "message": "recursion too deep"}
        except Exception as exc:
            status, body = 500, {"error": "internal error", "message": f"{type(exc).__name__}: {exc}"}
        try:
            send({"status": status, "body": body, "restart": restart, "stopped": stopped})
        except (ValueError, TypeError) as exc:  # an answer that is not strict JSON
            send({"status": 500, "body": {"error": "internal error",
                                          "message": f"unencodable answer: {exc}"}, "restart": restart})
        del body


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1:]))
