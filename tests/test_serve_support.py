"""Helpers for the `tfsem serve` tests (no tests here): a real server process
on loopback, a plain HTTP client (http.client), and a jobs module of test
jobs that a server started by these tests may be given (`serve_with_jobs`).

`JOBS` below is a worker menu like tfsem.service.jobs.JOBS, with jobs that
misbehave on purpose: one that ignores its budget (the hard time limit must
stop it), one that allocates without bound (the memory cap must stop it), one
that raises (a 500, and the worker lives on), one that kills its own process,
one whose answer is larger than the server takes from a worker.
"""

from __future__ import annotations

import http.client
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tfsem.service import jobs as real_jobs

TESTS_DIR = Path(__file__).parent
PYTHON = sys.executable


# ---------------------------------------------------------------------------
# Test jobs (run inside worker processes)


def _sleep(payload: dict, budget: float) -> dict:
    time.sleep(float(payload.get("program", {}).get("sleep", 60)))  # ignores its budget
    return {"count": 0, "outcomes": [], "stats": {}}


def _fail(payload: dict, budget: float) -> dict:
    raise KeyError("a bug in a job")


def _hog(payload: dict, budget: float) -> dict:
    blocks = []
    while True:
        blocks.append(bytearray(64 << 20))


def _big(payload: dict, budget: float) -> dict:
    from tfsem.service.workers import MAX_ANSWER_BYTES
    return {"count": 1, "outcomes": ["x" * (MAX_ANSWER_BYTES + 1024)], "stats": {}}


def _die(payload: dict, budget: float) -> dict:
    os._exit(3)


def _pick(payload: dict, budget: float) -> Any:
    """`outcomes` requests choose a misbehaving job by their program's
    first variable name (the program itself must be valid)."""
    variables = payload["program"].get("variables") or ["ok"]
    name = variables[0] if isinstance(variables, list) else next(iter(variables))
    job = {"sleep": _sleep, "fail": _fail, "hog": _hog, "die": _die, "big": _big}.get(name, real_jobs.outcomes)
    return job(payload, budget)


JOBS = {"outcomes": _pick, "check": real_jobs.check}


def misbehaving_program(kind: str) -> dict:
    return {"variables": [kind], "nodes": [{"name": "c", "op": "Const", "value": 1}], "outputs": {"o": "c"}}


# ---------------------------------------------------------------------------
# A server process and a client


class Server:
    """`python -m tfsem serve DIR --port 0 ...` (or `serve()` with a test jobs
    module), started and waited for; `stop()` sends a signal and waits."""

    def __init__(self, directory: str | Path, *args: str, jobs_module: str | None = None,
                 start_timeout: float = 90.0, token: str | None = None, cafile: str | None = None,
                 env: dict[str, str] | None = None):
        self.directory = Path(directory)
        self.stderr = tempfile.TemporaryFile()
        #: sent as `Authorization: Bearer` with every request (unless a request gives its own)
        self.token = token
        #: the certificate an HTTPS server is trusted with
        self.cafile = cafile
        if env is None:  # a token in the tester's environment would lock the tests out
            env = {k: v for k, v in os.environ.items() if k != "TFSEM_TOKEN"}
        env = dict(env)
        if jobs_module is None:
            argv = [PYTHON, "-m", "tfsem", "serve", str(directory), "--port", "0", *args]
        else:
            # the same command, with the workers' menu swapped for the test jobs
            env["PYTHONPATH"] = os.pathsep.join([str(TESTS_DIR), env.get("PYTHONPATH", "")])
            argv = [PYTHON, "-c", _SERVE_WITH_JOBS, str(directory), jobs_module, *args]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.stderr, env=env)
        self.url = self._wait_ready(start_timeout)
        host_port = self.url.split("//", 1)[1].rstrip("/")
        self.host, port = host_port.rsplit(":", 1)
        self.port = int(port)

    def _wait_ready(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline()
                if b"listening on" in line:
                    return line.decode().split("listening on ", 1)[1].split()[0]
            if self.proc.poll() is not None:
                break
        self.proc.kill()
        raise RuntimeError(f"server did not start: {line!r} {self.stderr_text()}")

    def stderr_text(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def request(self, method: str, path: str, body: Any = None, *, raw: bytes | None = None,
                headers: dict[str, str] | None = None, timeout: float = 60.0) -> "Answer":
        conn = self.connection(timeout)
        try:
            data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
            hdrs = {"Content-Type": "application/json"} if data is not None else {}
            if self.token is not None:
                hdrs["Authorization"] = f"Bearer {self.token}"
            hdrs.update(headers or {})
            conn.request(method, path, body=data, headers=hdrs)
            resp = conn.getresponse()
            return Answer(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        finally:
            conn.close()

    def connection(self, timeout: float = 60.0) -> http.client.HTTPConnection:
        if self.url.startswith("https:"):
            import ssl
            context = ssl.create_default_context(cafile=self.cafile)
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=context)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def post(self, path: str, body: Any = None, **kw: Any) -> "Answer":
        return self.request("POST", path, body, **kw)

    def get(self, path: str, **kw: Any) -> "Answer":
        return self.request("GET", path, **kw)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"the server did not stop within {timeout} s of signal {sig}")
        return self.proc.returncode

    def stdout_rest(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.read().decode(errors="replace")


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes):
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"<{self.status} {self.body[:300]!r}>"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is as good as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


def door_pid(server: "Server", timeout: float = 10.0) -> int:
    """The server's front door process (its child running tfsem.service.door)."""
    deadline = time.monotonic() + timeout
    while True:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == server.proc.pid and b"tfsem.service.door" in cmdline:
                return int(entry.name)
        assert time.monotonic() < deadline, "no front door process"
        time.sleep(0.05)


def wait_gone(pids: list[int], timeout: float = 5.0) -> bool:
    """True once none of `pids` runs (waiting up to `timeout` s)."""
    deadline = time.monotonic() + timeout
    while any(pid_alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


_SERVE_WITH_JOBS = """
import sys
from tfsem.cli import build_parser
from tfsem.service.limits import Limits
from tfsem.service.server import serve
directory, jobs_module, *rest = sys.argv[1:]
args = build_parser().parse_args(["serve", directory, "--port", "0", *rest])
limits = Limits(workers=args.workers, max_waiting=args.queue, queue_wait=args.queue_wait,
                max_timeout=args.max_timeout, default_timeout=min(args.default_timeout, args.max_timeout),
                worker_memory_mb=args.worker_memory, grace_seconds=0.5)
sys.exit(serve(directory, port=0, limits=limits, jobs_module=jobs_module))
"""
