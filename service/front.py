"""The front door of `tfsem serve`: a loop that accepts every connection,
answers `GET /v1/health` itself, and hands every other connection to the
event loop.  `tfsem serve` runs it in a process of its own (door.py), which
hands connections to the server's process over a UNIX socket; here it is a
thread, as it first was (and as the tests drive it).

Why (issue 29): under a burst of a thousand connections the event loop spends
most of a second accepting them and answering each one (503 at once, or a
queue place).  A health check that opens a connection then waited for its
turn behind the burst: p99 130-160 ms on an idle machine, 0.5 s and more on a
loaded one, against a target of 100 ms.  Answering it inside the connection
protocol (protocol.py) helped the median, not the tail, because the request
still has to be accepted and read by the busy loop.

Here the listening socket belongs to this thread.  For each connection it
reads the first bytes (non-blocking, never waiting on one client):

- a whole `GET /v1/health` request, addressed to a host the server answers
  (the rules of protocol.py's fast path: one head, no body, no
  `Expect`), is answered here from `health_body()`; the connection stays
  open for the next request (keep-alive) unless the client asked to close;
- anything else (another route, a wrong Host, a request that does not arrive
  within `WAIT_SECONDS`, a keep-alive connection's next request that is not
  health) goes to the event loop with the bytes already read, where the
  app answers it exactly as before: token, Host check (421), body cap (413),
  503 past capacity, header deadlines.

So the rules are those of the app: health needs no token (auth.py's
OPEN_PATHS), is answered only for an allowed Host, and everything else is
untouched.  What the thread costs the event loop: one `call_soon_threadsafe`
per batch of connections.

**TLS**: with `--ssl-certfile` the bytes are encrypted, so the thread only
accepts and hands every connection over at once (`peek=False`); health is
then answered on the event loop (protocol.py's fast path), as before.  A TLS
proxy in front of a plain-HTTP server on loopback keeps the fast door.

**A stuck event loop is not hidden**: the loop reports in every
`BEAT_SECONDS`; when it has not for `STALL_SECONDS`, the thread stops
answering health and hands the request to the loop, which answers it late or
not at all, as a monitor should see.

The thread holds at most `max_held` connections (past that, new ones go to
the loop at once), each at most `WAIT_SECONDS` before its first request is
complete and `KEEPALIVE_SECONDS` idle after a health answer (then it is
closed, as uvicorn closes an idle keep-alive connection).  `stop()` ends the
thread within about `POLL_SECONDS` and closes what it holds.
"""

from __future__ import annotations

import errno
import logging
import selectors
import socket
import threading
import time
from typing import Callable

from .heads import HEALTH_LINE, host_name, host_of as _host_of

log = logging.getLogger("tfsem.serve")

#: a connection's first request must be complete within this (else: the loop)
WAIT_SECONDS = 0.5
#: a keep-alive connection idle this long after a health answer is closed
KEEPALIVE_SECONDS = 5.0
#: the event loop reports in this often
BEAT_SECONDS = 0.25
#: past this without a report from the loop, health is left to the loop
STALL_SECONDS = 5.0
#: the thread checks its stop flag at least this often
POLL_SECONDS = 0.1
#: connections accepted per wake-up before the others get a turn
ACCEPT_BATCH = 256
#: the most bytes read from a connection before deciding
READ_BYTES = 65536
#: a request head longer than this is not a health request
MAX_HEALTH_HEAD = 8192

HEALTH, WAIT, OTHER = "health", "wait", "other"


def classify(buf: bytes, allowed_hosts: frozenset[str] | None) -> tuple[str, int, bool]:
    """What the bytes read so far are: (HEALTH, head length, close after),
    (WAIT, 0, False) while they may still become a health request, or
    (OTHER, 0, False)."""
    if not buf.startswith(HEALTH_LINE):
        return (WAIT, 0, False) if HEALTH_LINE.startswith(buf) else (OTHER, 0, False)
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return (WAIT, 0, False) if len(buf) < MAX_HEALTH_HEAD else (OTHER, 0, False)
    head = buf[:end + 4]
    lower = head.lower()
    if b"\r\ncontent-length:" in lower or b"\r\ntransfer-encoding:" in lower or b"\r\nexpect:" in lower:
        return OTHER, 0, False
    host = _host_of(head[:-4])
    if host is None or (allowed_hosts is not None and host_name(host) not in allowed_hosts):
        return OTHER, 0, False
    return HEALTH, end + 4, b"\r\nconnection: close" in lower


class _Held:
    __slots__ = ("sock", "buf", "deadline", "answered", "watched", "since")

    def __init__(self, sock: socket.socket, now: float):
        self.sock, self.buf, self.deadline, self.answered = sock, b"", now + WAIT_SECONDS, 0
        #: accepted, or last answered: the loop counts its age from here
        self.since = now
        #: registered with the selector
        self.watched = False


class FrontDoor:
    """See the module's text.  `handoff(items)` is called in this thread with
    a list of (socket, bytes already read, time.monotonic() when it was
    accepted or last answered) for the event loop to serve;
    `health_body()` gives the health answer's JSON body (it may raise: the
    request then goes to the loop)."""

    def __init__(self, sock: socket.socket, handoff: Callable[[list[tuple[socket.socket, bytes, float]]], None],
                 health_body: Callable[[], bytes], allowed_hosts: frozenset[str] | None, *,
                 peek: bool = True, max_held: int = 256):
        self.sock, self.handoff, self.health_body = sock, handoff, health_body
        self.allowed_hosts, self.peek, self.max_held = allowed_hosts, peek, max_held
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._held: dict[int, _Held] = {}
        self._sel: selectors.BaseSelector | None = None
        self._listen_paused_until = 0.0
        self._listening = False
        self.last_beat = time.monotonic()
        #: health requests answered here (the tests read it)
        self.answered = 0

    # -- the event loop's side --------------------------------------------------

    def beat(self) -> None:
        """Called by the event loop every BEAT_SECONDS: it is alive."""
        self.last_beat = time.monotonic()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="tfsem-front-door", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """No more connections are accepted; those held are closed."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    # -- for a door that watches more than connections (door.py) ----------------

    def _started(self, sel: selectors.BaseSelector) -> None:
        """Called in the door's thread once the listening socket is watched:
        a subclass registers its own files with `sel` (data: anything but a
        `_Held` or None), and gets their events in `_event`."""

    def _event(self, key: selectors.SelectorKey, events: int) -> None:
        """An event on a file a subclass registered in `_started`."""

    # -- the thread -------------------------------------------------------------

    def _run(self) -> None:
        sel = self._sel = selectors.DefaultSelector()
        sel.register(self.sock, selectors.EVENT_READ, None)
        self._listening = True
        self._started(sel)
        try:
            while not self._stop.is_set():
                out: list[tuple[socket.socket, bytes, float]] = []
                try:
                    self._step(out)
                except Exception:  # never expected: say so, and keep the door open
                    log.exception("the front door failed a step; it goes on")
                    time.sleep(POLL_SECONDS)
                finally:
                    if out:
                        self._hand(out)
        finally:
            for h in list(self._held.values()):
                self._drop(h)
            sel.close()

    def _step(self, out: list[tuple[socket.socket, bytes, float]]) -> None:
        sel = self._sel
        now = time.monotonic()
        if not self._listening and now >= self._listen_paused_until:
            sel.register(self.sock, selectors.EVENT_READ, None)
            self._listening = True
        timeout = POLL_SECONDS
        if self._held:
            timeout = max(0.0, min(timeout, min(h.deadline for h in self._held.values()) - now))
        for key, events in sel.select(timeout):
            if key.data is None:
                if not self._accept(out):
                    sel.unregister(self.sock)
                    self._listening = False
            elif self._held.get(key.fd) is key.data:
                self._readable(key.data, out)
            elif not isinstance(key.data, _Held):
                self._event(key, events)
        self._expire(time.monotonic(), out)

    def _hand(self, out: list[tuple[socket.socket, bytes, float]]) -> None:
        try:
            self.handoff(out)
        except Exception:  # the loop is closed: the server is stopping
            for sock, *_ in out:
                sock.close()

    def _accept(self, out: list[tuple[socket.socket, bytes, float]]) -> bool:
        """Accepts what is waiting; False when accepting must pause (no file
        descriptors left: the connections wait in the kernel's queue)."""
        for _ in range(ACCEPT_BATCH):
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return True
            except ConnectionAbortedError:
                continue
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    log.warning("accepting connections paused for 1 s: %s", exc)
                    self._listen_paused_until = time.monotonic() + 1.0
                    return False
                log.warning("accept failed: %s", exc)  # as asyncio does: say so, go on
                return True
            conn.setblocking(False)
            if not self.peek or len(self._held) >= self.max_held:
                out.append((conn, b"", time.monotonic()))
                continue
            fd, h = conn.fileno(), _Held(conn, time.monotonic())
            self._held[fd] = h
            # its request is often there already: read it before watching
            # the connection (a crowd's connections then cost no epoll calls)
            self._readable(h, out)
            if self._held.get(fd) is h and not h.watched:
                self._sel.register(conn, selectors.EVENT_READ, h)
                h.watched = True
        return True

    def _readable(self, h: _Held, out: list[tuple[socket.socket, bytes, float]]) -> None:
        try:
            data = h.sock.recv(READ_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(h)
            return
        if not data:  # the client closed
            if h.buf:
                self._release(h, out)  # a request cut short: the loop answers as it does
            else:
                self._drop(h)
            return
        if not h.buf:  # a new request begins: it gets WAIT_SECONDS to arrive
            h.deadline = min(h.deadline, time.monotonic() + WAIT_SECONDS) if h.answered == 0 \
                else time.monotonic() + WAIT_SECONDS
        h.buf += data
        while True:
            kind, length, close = classify(h.buf, self.allowed_hosts)
            if kind == WAIT:
                return
            if kind == OTHER or time.monotonic() - self.last_beat > STALL_SECONDS:
                self._release(h, out)
                return
            try:
                body = self.health_body()
            except Exception:
                self._release(h, out)
                return
            answer = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n%s\r\n"
                      % (len(body), b"connection: close\r\n" if close else b"")) + body
            self.answered += 1  # before the answer leaves: a client may look at once
            h.answered += 1
            try:
                sent = h.sock.send(answer)
            except OSError:
                sent = -1
            h.buf = h.buf[length:]
            if close or sent != len(answer):
                self._drop(h)
                return
            h.since = time.monotonic()
            h.deadline = h.since + (WAIT_SECONDS if h.buf else KEEPALIVE_SECONDS)
            if not h.buf:
                return

    def _expire(self, now: float, out: list[tuple[socket.socket, bytes, float]]) -> None:
        for h in [h for h in self._held.values() if h.deadline <= now]:
            if h.answered and not h.buf:
                self._drop(h)          # an idle keep-alive connection
            else:
                self._release(h, out)  # a request still arriving: the loop's deadlines apply

    def _forget(self, h: _Held) -> None:
        self._held.pop(h.sock.fileno(), None)
        if h.watched:
            h.watched = False
            try:
                self._sel.unregister(h.sock)
            except (KeyError, ValueError):
                pass

    def _release(self, h: _Held, out: list[tuple[socket.socket, bytes, float]]) -> None:
        self._forget(h)
        out.append((h.sock, h.buf, h.since))

    def _drop(self, h: _Held) -> None:
        self._forget(h)
        h.sock.close()
