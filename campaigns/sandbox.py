"""Running a pass under test in a child process with a time limit.

A pass is user code: it may raise, loop forever, call `os._exit` or crash the
interpreter.  :class:`PassSandbox` runs it in a child process
(`python -m tfsem.campaigns.sandbox`) that lives as long as the sandbox and
rewrites one program per request, so a campaign pays the start-up once, not
per program.  A request that runs past the time limit gets the child killed
(and a fresh one started for the next request); a child that dies is
reported with its exit status or signal.  The result is always a
:class:`RewriteResult`, never an exception from the pass.

The protocol is one JSON object per line: the child's real stdout is kept for
it, and whatever the pass prints goes to /dev/null.  `subprocess`, not
`multiprocessing`, starts the child, so a sandbox also works inside daemonic
processes (Dask's workers are).  On Linux the child asks to be killed when its
parent dies, so killing a campaign never leaves a hung pass behind.

Containment (issue 18):

- **memory**: the pass's process caps its own address space
  (`resource.setrlimit(RLIMIT_AS)`, `memory_mb` above what it uses once the
  pass is loaded), so a pass that allocates without bound gets MemoryError,
  which is a crash finding like any other exception, instead of taking the
  machine;
- **process group**: the sandbox is started in a session (and process group)
  of its own; on timeout, death and close the whole group is killed, so
  processes the pass started do not outlive its timeout or the campaign;
- **a guard process**: `python -m tfsem.campaigns.sandbox` forks, and the
  pass runs in the child while the parent only waits for it.  A pass that
  kills its parent (`os.kill(os.getppid(), ...)`) kills the guard, not the
  campaign's worker: the worker sees the sandbox die while rewriting a known
  program, and that is a crash finding, with statistics kept.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from .targets import PassNotFound

OK, CRASH, TIMEOUT, BAD_RESULT = "ok", "crash", "timeout", "bad-result"
DEFAULT_PASS_TIMEOUT = 5.0
#: address space a pass may add to its process once loaded, in MiB
DEFAULT_PASS_MEMORY_MB = 2048


@dataclass
class RewriteResult:
    """What running the pass on one program gave.

    `status` is "ok" (with `program`, the rewritten program as JSON),
    "crash" (with `error_type`, `message`, `traceback`), "timeout", or
    "bad-result" (the pass returned something that is not a program)."""

    status: str
    program: dict | None = None
    error_type: str = ""
    message: str = ""
    traceback: str = ""
    seconds: float = 0.0


def _set_parent_death_signal(sig: int = signal.SIGKILL) -> None:
    """Linux: get `sig` (default: be killed) when the parent dies (best effort elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, int(sig))
    except Exception:
        pass


class PassSandbox:
    """A child process that applies one pass, with a per-program time limit.

    Use as a context manager, or call :meth:`close`.  Raises
    :class:`PassNotFound` when the child cannot load the pass."""

    def __init__(self, spec: str, timeout: float = DEFAULT_PASS_TIMEOUT, start_timeout: float = 120.0,
                 memory_mb: int | None = DEFAULT_PASS_MEMORY_MB):
        self.spec = spec
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.start_timeout = start_timeout
        self.name: str | None = None
        self._proc: subprocess.Popen | None = None
        self._buf = b""
        self.starts = 0

    # -- process management ---------------------------------------------------

    def _start(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tfsem.campaigns.sandbox"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            close_fds=True, start_new_session=True)   # its own process group: killed whole
        self._buf = b""
        self.starts += 1
        self._send({"pass": self.spec, "sys_path": sys.path, "parent": os.getpid(),
                    "memory_mb": self.memory_mb})
        reply = self._receive(time.monotonic() + self.start_timeout)
        if reply is None or "ready" not in reply:
            why = (reply or {}).get("load_error") or "the sandbox process did not start"
            self._kill()
            raise PassNotFound(why)
        self.name = reply["ready"]

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        # the whole process group: the guard, the pass's process and whatever
        # it started (even when the guard is already gone)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if proc.poll() is None:
            proc.kill()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()  # type: ignore[union-attr]
            except Exception:
                pass

    def close(self) -> None:
        self._kill()

    def __enter__(self) -> "PassSandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._kill()
        except Exception:
            pass

    # -- protocol ------------------------------------------------------------

    def _send(self, obj: Any) -> bool:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(obj, allow_nan=False).encode() + b"\n")
            self._proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def _receive(self, deadline: float) -> dict | None:
        """The next line as JSON; None on timeout or end of file (the caller
        tells them apart with `self._proc.poll()`)."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError:
            return None   # not the protocol: the pass wrote on it; treated as a death
        return reply if isinstance(reply, dict) else None

    def _death(self, started: float) -> RewriteResult:
        assert self._proc is not None
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None and code < 0:
            try:
                sig = signal.Signals(-code).name
            except ValueError:
                sig = f"signal {-code}"
            error_type, message = sig, (f"the pass's process was killed by {sig} (by the pass itself, "
                                        "its parent, or the memory cap)")
        else:
            error_type, message = "ProcessExit", f"the pass's process exited with status {code}"
        self._kill()
        return RewriteResult(CRASH, error_type=error_type, message=message,
                             seconds=time.monotonic() - started)

    # -- the one operation -----------------------------------------------------

    def rewrite(self, program_json: dict) -> RewriteResult:
        """Apply the pass to a program given as `tfsem.program/1` JSON."""
        if self._proc is None:
            self._start()
        started = time.monotonic()
        if not self._send({"program": program_json}):
            return self._death(started)
        reply = self._receive(started + self.timeout)
        if reply is None:
            assert self._proc is not None
            if self._proc.poll() is None and time.monotonic() - started >= self.timeout:
                self._kill()
                return RewriteResult(TIMEOUT, message=f"the pass ran longer than {self.timeout:g} s "
                                     "and was killed", seconds=self.timeout)
            return self._death(started)
        return RewriteResult(reply["status"], program=reply.get("program"),
                             error_type=reply.get("error_type", ""), message=reply.get("message", ""),
                             traceback=reply.get("traceback", ""), seconds=reply.get("seconds", 0.0))


# ---------------------------------------------------------------------------
# The child


def _child_main() -> None:
    import traceback

    proto = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # what the pass prints must not corrupt the protocol
    _set_parent_death_signal()

    def send(obj: dict) -> None:
        proto.write(json.dumps(obj, allow_nan=False) + "\n")
        proto.flush()

    hello = json.loads(sys.stdin.readline() or "{}")
    if hello.get("parent") and _WORKER_PID != hello["parent"]:
        return  # the parent is already gone
    sys.path[:] = [p for p in hello.get("sys_path", sys.path)]

    from tfsem.oracle.jsonio import program_from_json, program_to_json
    from tfsem.oracle.program import Program

    from .targets import resolve_pass

    try:
        target = resolve_pass(hello.get("pass", ""))
    except Exception as exc:
        send({"load_error": str(exc) or type(exc).__name__})
        return
    _cap_memory(hello.get("memory_mb"))
    send({"ready": target.name})
    assert target.fn is not None
    # the bare function when the pass API wraps one: a result that is not a
    # program is then reported as such, not as a crash of the wrapper
    fn = getattr(target.fn, "function", target.fn)
    for line in sys.stdin:
        request = json.loads(line)
        program = program_from_json(request["program"], validate=False)
        started = time.monotonic()
        try:
            out = fn(program)
        except BaseException as exc:  # noqa: BLE001 - everything the pass does is a finding
            tb = traceback.format_exc()
            send({"status": CRASH, "error_type": type(exc).__qualname__,
                  "message": (str(exc) or type(exc).__qualname__)[:2000], "traceback": tb[-8000:],
                  "seconds": time.monotonic() - started})
            continue
        seconds = time.monotonic() - started
        if not isinstance(out, Program):
            send({"status": BAD_RESULT, "message": f"the pass returned a {type(out).__name__}, "
                  "not a Program", "seconds": seconds})
            continue
        try:
            data = program_to_json(out)
            json.dumps(data, allow_nan=False)
        except Exception as exc:  # noqa: BLE001
            send({"status": BAD_RESULT, "message": f"the returned program cannot be written as "
                  f"JSON: {type(exc).__name__}: {exc}"[:2000], "seconds": seconds})
            continue
        send({"status": OK, "program": data, "seconds": seconds})


_WORKER_PID = 0


def _cap_memory(memory_mb: Any) -> None:
    """Cap this process's address space at what it uses now plus `memory_mb`."""
    if not isinstance(memory_mb, int) or memory_mb <= 0:
        return
    try:
        import resource
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        limit = used + (memory_mb << 20)
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (OSError, ValueError, ImportError):
        pass  # not Linux: no cap (documented)


def _guard_main() -> None:
    """Fork; the child runs the pass (_child_main), this process waits for
    it and exits as it did.  Both die with their parent (PDEATHSIG)."""
    global _WORKER_PID
    _WORKER_PID = os.getppid()
    # When the worker dies (even by SIGKILL), take the whole process group
    # along: the pass and whatever it forked (the guard leads the group).
    signal.signal(signal.SIGTERM, lambda *_: os.killpg(0, signal.SIGKILL))
    _set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != _WORKER_PID:
        os.killpg(0, signal.SIGKILL)
    if not hasattr(os, "fork"):
        _child_main()
        return
    pid = os.fork()
    if pid == 0:
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _set_parent_death_signal()   # dies with the guard
            if os.getppid() == 1:
                os._exit(0)
            _child_main()
        finally:
            os._exit(0)
    # the guard keeps no end of the protocol: EOF reaches the worker when the child ends
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    _guard_main()
