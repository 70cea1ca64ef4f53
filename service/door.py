"""The front door of `tfsem serve` in a process of its own (issue 29).

The door (front.py) accepts every connection, answers `GET /v1/health`
itself and hands every other connection to the event loop.  As a thread of
the server's process it shared the GIL with the event loop: while a crowd of
a thousand requests was in flight, the loop (and the collector walking its
objects) held the GIL for tens of milliseconds at a time, and health's
slowest answers took 230-270 ms.  Here the same door runs in a small process
that imports nothing but the standard library and never runs a request's
Python work, so health does not wait for the server's GIL.

    listening socket --> door process --(UNIX socket, SCM_RIGHTS)--> server process
                         answers health    connection + bytes read    the app: token,
                         <---- health body, every BEAT_SECONDS ----    Host, body cap,
                                                                       503, deadlines

- **One listening socket, owned by the door.**  The server binds it (so that
  `--port 0` works and the "listening" line names the port), starts the door
  with it (`pass_fds`), and closes its own copy once the door says it is
  ready.  Nothing else holds it: when the door ends, new connections are
  refused, never left waiting in a queue no one reads.
- **Connections cross a UNIX socket pair** (SOCK_SEQPACKET: one message is
  one batch) as file descriptors (SCM_RIGHTS), at most `BATCH_FDS` per
  message, each with the bytes the door already read and the time it was
  accepted (CLOCK_MONOTONIC is one clock for every process), exactly what the
  thread handed to the loop before.  The server's protocol serves them as
  before: every rule of the app (token, Host, body cap, 503 with
  Retry-After, header deadlines) is where it was.
- **Health's body comes from the server**: the server sends it every
  `BEAT_SECONDS` and whenever it changed as a response goes out, so health
  is at most that old; each message is also the heartbeat.  As before, when
  the server has not reported for `STALL_SECONDS` (its loop is stuck, or the
  process is stopped), the door hands health to it, to be answered late or
  not at all, as a monitor should see.
- **Never blocked by the server**: the door sends without blocking; what the
  socket pair cannot take yet waits in the door (at most `MAX_PENDING`
  connections; past that it stops accepting until the server catches up, and
  new connections wait in the kernel's queue).
- **Either ends, both end.**  The door exits when the server's end of the
  pair closes (the server exited, however it died; the kernel closes its
  files), and the kernel also sends it SIGTERM when its parent dies
  (PR_SET_PDEATHSIG).  The server stops, gracefully, when the door's end
  closes: with status 0 if the door was sent SIGTERM (it says so first: the
  whole service is being stopped, as by systemd), 1 otherwise.  SIGTERM to
  the server stops the door first (no new connections), then the server.

The door process runs this folder's own door.py (`_BOOT`: the same code
as the server that starts it, whatever else is installed), with Python's
`-I -S` (no site-packages: the standard library is all it needs, and it
starts in a fraction of the time), and is started by `DoorProcess`, never by
hand.
"""

from __future__ import annotations

import errno
import json
import logging
import mmap
import os
import selectors
import signal
import socket
import struct
import sys
import time
from collections import deque

from .front import FrontDoor

log = logging.getLogger("tfsem.serve")

#: the server reports (with health's body) at least this often
BEAT_SECONDS = 0.1
#: connections per message (the kernel takes at most 253 descriptors)
BATCH_FDS = 64
#: bytes per message beyond the first connection's (well under the socket
#: pair's 208 KiB send buffer; one connection's bytes are at most ~72 KiB)
BATCH_BYTES = 96 << 10
#: connections waiting in the door for the server to take them, at most
MAX_PENDING = 1024
#: seconds the door gets to start and say it is ready
START_SECONDS = 60.0
#: seconds the door gets to exit once told to stop
STOP_SECONDS = 2.0

#: `python -I -S -c _BOOT FOLDER LISTEN_FD CHANNEL_FD COUNTER_FD PARENT_PID
#: PEEK MAX_HELD HOSTS`: FOLDER's door.py, as the package tfsem.service
_BOOT = """import importlib, importlib.util, sys
folder = sys.argv.pop(1)
spec = importlib.util.spec_from_file_location(
    "tfsem.service", folder + "/__init__.py", submodule_search_locations=[folder])
package = importlib.util.module_from_spec(spec)
sys.modules["tfsem.service"] = package
spec.loader.exec_module(package)
sys.exit(importlib.import_module("tfsem.service.door").main(sys.argv[1:]))
"""

# messages, by their first byte
_HEALTH = b"H"   # server -> door: health's body (and a heartbeat)
_BEAT = b"B"     # server -> door: a heartbeat, the body is unchanged
_STOP = b"Q"     # server -> door: stop accepting, close, exit
_READY = b"R"    # door -> server: accepting
_CONNS = b"C"    # door -> server: connections (descriptors attached)
_TERM = b"T"     # door -> server: the door was sent SIGTERM: stop the server

_COUNT = struct.Struct("!H")
_ITEM = struct.Struct("!dI")       # accepted at (monotonic), bytes already read
_COUNTER = struct.Struct("=Q")     # health answers, in the shared page

#: a selector key's data for the channel (the door's own files are not `_Held`)
_CHANNEL = "channel"


def encode_batch(items: list[tuple[bytes, float]]) -> bytes:
    """The message for connections with these (bytes already read, accepted at)."""
    head = _CONNS + _COUNT.pack(len(items)) + b"".join(_ITEM.pack(since, len(data)) for data, since in items)
    return head + b"".join(data for data, _ in items)


def decode_batch(message: bytes) -> list[tuple[bytes, float]]:
    """encode_batch's inverse (ValueError: not such a message)."""
    if message[:1] != _CONNS or len(message) < 1 + _COUNT.size:
        raise ValueError("not a batch of connections")
    (n,) = _COUNT.unpack_from(message, 1)
    at = 1 + _COUNT.size + n * _ITEM.size
    if len(message) < at:
        raise ValueError("a batch cut short")
    items = []
    for i in range(n):
        since, length = _ITEM.unpack_from(message, 1 + _COUNT.size + i * _ITEM.size)
        items.append((message[at:at + length], since))
        at += length
    if at != len(message):
        raise ValueError("a batch of the wrong length")
    return items


# -- the door process ---------------------------------------------------------------


class ProcessDoor(FrontDoor):
    """front.py's door, run in this process's main thread, handing
    connections to the server over `channel` and reading health's body and
    the heartbeat from it."""

    def __init__(self, sock: socket.socket, channel: socket.socket, counter: mmap.mmap, *,
                 allowed_hosts: frozenset[str] | None, peek: bool, max_held: int):
        self.channel, self.counter = channel, counter
        self.body: bytes | None = None
        self._pending: deque[tuple[socket.socket, bytes, float]] = deque()
        self._writing = False
        #: why the door stopped: "eof" (the server ended), "stop" (told
        #: to), "term" (SIGTERM)
        self.reason = ""
        #: set by `signalled` (SIGTERM), acted on by `_step`
        self._signalled = ""
        super().__init__(sock, self._queue, self._health_body, allowed_hosts, peek=peek, max_held=max_held)

    # the count of health answers lives in a page the server reads too
    @property
    def answered(self) -> int:
        return _COUNTER.unpack_from(self.counter)[0]

    @answered.setter
    def answered(self, n: int) -> None:
        _COUNTER.pack_into(self.counter, 0, n)

    def _health_body(self) -> bytes:
        # the server sends a new body before each response leaves: read
        # what came, so that health shows what every answered request did
        self._read_channel()
        if self.body is None:
            raise LookupError("no health body from the server yet")
        return self.body

    def finish(self, reason: str) -> None:
        if not self.reason:
            self.reason = reason
        self._stop.set()

    def signalled(self, reason: str) -> None:
        """SIGTERM's handler: the door stops at its next step.  It takes no
        lock: a handler runs between two bytecodes of the main thread, which
        may be inside `finish` holding the stop Event's lock (not
        reentrant), and setting the Event there waited for ever (the door
        outlived a killed server by 20 minutes).  `_step`, in the main
        thread, calls `finish`; the selector wakes within POLL_SECONDS."""
        self._signalled = reason

    def run(self) -> None:
        self._run()

    # -- files other than connections -----------------------------------------

    def _started(self, sel: selectors.BaseSelector) -> None:
        sel.register(self.channel, selectors.EVENT_READ, _CHANNEL)
        try:
            self.channel.send(_READY)
        except OSError:
            self.finish("eof")

    def _step(self, out) -> None:
        if self._signalled:
            self.finish(self._signalled)
        if self._pending and not self._writing:
            self._flush()  # what waited for descriptors in flight to be taken
        super()._step(out)

    def _event(self, key: selectors.SelectorKey, events: int) -> None:
        if events & selectors.EVENT_READ:
            self._read_channel()
        if events & selectors.EVENT_WRITE:
            self._flush()

    def _read_channel(self) -> None:
        for _ in range(64):
            try:
                message = self.channel.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                message = b""
            if not message:
                self.finish("eof")
                return
            kind = message[:1]
            if kind == _HEALTH:
                self.body = message[1:]
                self.beat()
            elif kind == _BEAT:
                self.beat()
            elif kind == _STOP:
                self.finish("stop")
                return

    # -- handing connections over ---------------------------------------------

    def _accept(self, out) -> bool:
        if len(self._pending) >= MAX_PENDING:
            # the server is not taking connections: let the kernel hold them
            self._listen_paused_until = time.monotonic() + 0.05
            return False
        return super()._accept(out)

    def _queue(self, items: list[tuple[socket.socket, bytes, float]]) -> None:
        self._pending.extend(items)
        self._flush()

    def _flush(self) -> None:
        while self._pending:
            batch, size = [], 0
            for sock, data, since in self._pending:
                if len(batch) == BATCH_FDS or (batch and size + len(data) > BATCH_BYTES):
                    break
                batch.append((sock, data, since))
                size += len(data)
            message = encode_batch([(data, since) for _, data, since in batch])
            try:
                socket.send_fds(self.channel, [message], [s.fileno() for s, _, _ in batch])
            except (BlockingIOError, InterruptedError):
                self._watch_writes(True)
                return
            except OSError as exc:
                if exc.errno in (errno.ETOOMANYREFS, errno.ENOBUFS, errno.ENOMEM):  # for now: next step
                    self._watch_writes(False)
                    return
                self.finish("eof")  # the server is gone
                return
            for _ in batch:
                self._pending.popleft()[0].close()
        self._watch_writes(False)

    def _watch_writes(self, on: bool) -> None:
        if on != self._writing and self._sel is not None:
            self._writing = on
            self._sel.modify(self.channel, selectors.EVENT_READ | (selectors.EVENT_WRITE if on else 0), _CHANNEL)

    def close(self) -> None:
        for sock, _, _ in self._pending:
            sock.close()
        self._pending.clear()


def _die_with_parent(parent: int) -> None:
    """SIGTERM from the kernel when the parent ends (Linux; elsewhere the
    channel's end of file alone ends the door)."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it ended before that took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _more_files() -> None:
    """The door holds up to a crowd's connections at once: as many files as
    the hard limit allows (a soft limit of 1024 is common)."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = max(soft, 65536) if hard == resource.RLIM_INFINITY else hard
        if want > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ImportError, ValueError, OSError):
        pass


def main(argv: list[str]) -> int:
    listen_fd, channel_fd, counter_fd, parent, peek, max_held = (int(a) for a in argv[:6])
    hosts = json.loads(argv[6])
    logging.basicConfig(level=logging.WARNING, format="tfsem serve (front door): %(message)s")
    # Ctrl-C reaches the whole process group: the server stops the door
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    door: ProcessDoor | None = None

    def on_term(signum, frame) -> None:
        if door is not None:
            door.signalled("term")
        else:
            raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_term)
    _die_with_parent(parent)
    _more_files()
    counter = mmap.mmap(counter_fd, _COUNTER.size)
    os.close(counter_fd)
    sock = socket.socket(fileno=listen_fd)
    sock.setblocking(False)
    channel = socket.socket(fileno=channel_fd)
    channel.setblocking(False)
    door = ProcessDoor(sock, channel, counter, allowed_hosts=None if hosts is None else frozenset(hosts),
                       peek=bool(peek), max_held=max_held)
    try:
        door.run()
    finally:
        sock.close()  # no new connection from here on
        door.close()
        if door.reason == "term":
            try:
                channel.send(_TERM)
            except OSError:
                pass
        channel.close()
    return 0


# -- the server's side ------------------------------------------------------------


class DoorProcess:
    """The server's handle on its door process: `start` (in the event loop),
    `report` (health's body), `stop`; connections arrive through
    `on_connections(items)` and the door's end through `on_end(terminated)`,
    both called in the event loop."""

    def __init__(self, sock: socket.socket, allowed_hosts: frozenset[str] | None, *, peek: bool, max_held: int):
        self.sock, self.allowed_hosts, self.peek, self.max_held = sock, allowed_hosts, peek, max_held
        self.proc = None
        self.channel: socket.socket | None = None
        self.counter: mmap.mmap | None = None
        self._loop = None
        self._ready = None
        self._last_body: bytes | None = None
        self._ended = False
        self._stopping = False

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def answered(self) -> int:
        """Health requests the door answered."""
        return _COUNTER.unpack_from(self.counter)[0] if self.counter is not None else 0

    async def start(self, on_connections, on_end, body: bytes) -> None:
        """Starts the door, gives it `body`, and returns once it accepts
        (RuntimeError: it did not start)."""
        import asyncio
        import subprocess

        loop = self._loop = asyncio.get_running_loop()
        self.on_connections, self.on_end = on_connections, on_end
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        for end in (ours, theirs):  # room for a few batches (the kernel may cap it)
            end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        counter_fd = os.memfd_create("tfsem-door") if hasattr(os, "memfd_create") else _temp_fd()
        try:
            os.ftruncate(counter_fd, _COUNTER.size)
            self.counter = mmap.mmap(counter_fd, _COUNTER.size)
            fds = (self.sock.fileno(), theirs.fileno(), counter_fd)
            hosts = None if self.allowed_hosts is None else sorted(self.allowed_hosts)
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _BOOT, os.path.dirname(os.path.abspath(__file__)),
                 *map(str, fds), str(os.getpid()), str(int(self.peek)), str(self.max_held), json.dumps(hosts)],
                pass_fds=fds, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        finally:
            theirs.close()
            os.close(counter_fd)
        ours.setblocking(False)
        self.channel = ours
        self._ready = loop.create_future()
        loop.add_reader(ours.fileno(), self._readable)
        self.report(body)
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), START_SECONDS)
        except asyncio.TimeoutError:
            raise RuntimeError(f"the front door process did not start within {START_SECONDS:.0f} s") from None
        if not self._ready.result():
            raise RuntimeError(f"the front door process ended as it started ({self._exit_text()})")

    def report(self, body: bytes | None, beat: bool = True) -> None:
        """Tells the door health's body (None: the last one still holds);
        `beat`: also when it did not change (a heartbeat)."""
        if self.channel is None or self._ended:
            return
        unchanged = body is None or body == self._last_body
        if unchanged and not beat:
            return
        message = _BEAT if unchanged else _HEALTH + body
        try:
            self.channel.send(message)
        except (BlockingIOError, InterruptedError):
            return  # the door is behind: the next report
        except OSError:
            return  # the door is gone: _readable says so
        if message is not _BEAT:
            self._last_body = body

    def _readable(self) -> None:
        for _ in range(64):
            try:
                message, fds, flags, _ = socket.recv_fds(self.channel, 1 << 18, 253)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                message, fds, flags = b"", [], 0
            socks = [socket.socket(fileno=fd) for fd in fds]
            if not message:
                for s in socks:
                    s.close()
                self._end(terminated=False)
                return
            kind = message[:1]
            if kind == _CONNS:
                try:
                    items = decode_batch(message)
                    if len(items) != len(socks) or flags & (socket.MSG_CTRUNC | socket.MSG_TRUNC):
                        raise ValueError("a batch whose descriptors were cut short")
                except ValueError as exc:
                    log.warning("front door: %s; its %d connections are closed", exc, len(socks))
                    for s in socks:
                        s.close()
                    continue
                for s in socks:
                    s.setblocking(False)
                self.on_connections([(s, data, since) for s, (data, since) in zip(socks, items)])
                continue
            for s in socks:
                s.close()
            if kind == _READY and not self._ready.done():
                self._ready.set_result(True)
            elif kind == _TERM:
                self._end(terminated=True)
                return

    def _end(self, terminated: bool) -> None:
        if self._ended:
            return
        self._ended = True
        if self._loop is not None and self.channel is not None:
            self._loop.remove_reader(self.channel.fileno())
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(False)
        if not self._stopping:
            self.on_end(terminated)

    def _exit_text(self) -> str:
        code = self.proc.poll() if self.proc is not None else None
        if code is None:
            return "still running"
        return f"killed by signal {-code}" if code < 0 else f"exit status {code}"

    def ended_text(self) -> str:
        """How the door ended, for a message."""
        if self.proc is not None:
            try:
                self.proc.wait(1.0)
            except Exception:
                pass
        return self._exit_text()

    async def stop(self, timeout: float = STOP_SECONDS) -> None:
        """Tells the door to stop (it closes the listening socket and what
        it holds) and waits for it; past `timeout`, kills it."""
        import asyncio

        self._stopping = True
        if self.channel is not None and not self._ended:
            try:
                self.channel.send(_STOP)
            except OSError:
                pass
        if self.proc is not None:
            deadline = time.monotonic() + timeout
            while self.proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self._end(terminated=False)
        if self.channel is not None:
            self.channel.close()

    def kill(self) -> None:
        """For a server that did not get as far as stopping its door."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _temp_fd() -> int:
    import tempfile
    fd, path = tempfile.mkstemp(prefix="tfsem-door-")
    os.unlink(path)
    return fd


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
