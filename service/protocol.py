"""The HTTP/1.1 connection protocol of `tfsem serve`: uvicorn's h11 protocol
with a deadline on request headers and a cap on idle connections.

uvicorn times out a keep-alive connection only once it has answered a request
on it; a connection that sends nothing, or trickles header bytes, was held
forever, and ~100 of them filled the connection limit so that every other
client got 503.  Here:

- **header deadline**: from the moment a connection opens, or data arrives
  on it while no request is in progress, the request's headers must be
  complete within `header_seconds`; otherwise the connection is closed.
  Trickling one byte a second does not extend it (the deadline is not reset
  by data, only by a complete request), so a slow-header client holds a
  connection at most about twice `header_seconds`.
- **idle cap**: when more than `max_idle` connections are open without a
  request in progress, the one opened or last used earliest is closed, so a
  flood of idle connections cannot crowd out a client that sends a request.

- **an answer, never a bare reset**: a connection closed for either reason
  first gets a short response (408 for headers that did not arrive, 503 with
  `Retry-After` for one shed as idle), so a client that sends its request
  just then reads an answer.  A connection opened less than `FRESH_SECONDS`
  ago is never shed: its request may be on the way while the server is busy
  accepting others (a burst of a thousand clients).
- **early answers**: when the server answers before the request body has all
  arrived (413 for a body over the cap, chunked or not; 401; 404), the rest of
  the body is read and dropped for up to `LINGER_SECONDS`, then the
  connection is closed: the client reads the answer instead of a reset, and
  a 200 MiB body cannot hold the connection.

After a response, uvicorn's own `timeout_keep_alive` closes a connection that
stays silent.  The request *body* has its own deadline in app.py.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from .heads import HEALTH_LINE, host_name, host_of as _host_of

#: a connection this young is not shed as idle (its request may be on the way)
FRESH_SECONDS = 1.0
#: how long the rest of a body is dropped after an early answer
LINGER_SECONDS = 2.0
#: the idle connections are counted at most this often
SCAN_SECONDS = 0.1


def _canned(status: str, message: str, extra: str = "") -> bytes:
    body = ('{"error":"%s","message":"%s"}' % (status.split(" ", 1)[1].lower(), message)).encode()
    return (f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            f"{extra}connection: close\r\n\r\n").encode() + body


BUSY = _canned("503 Service Unavailable", "too many idle connections are open; retry", "retry-after: 1\r\n")
HEADERS_LATE = _canned("408 Request Timeout", "the request headers did not arrive in time")


def guarded_protocol(header_seconds: float, max_idle: int, *,
                     health_body: Callable[[], bytes] | None = None,
                     allowed_hosts: frozenset[str] | None = None) -> type:
    """A protocol class (for `uvicorn.Config(http=...)`) with these bounds.

    `health_body`: GET /v1/health is answered with it as soon as the request
    arrives, without waiting behind the requests queued before it (a crowd of
    a thousand takes the event loop most of a second): a whole request in one
    packet, no body, addressed to one of `allowed_hosts` (None: any), nothing
    after it.  Anything else goes the normal way."""
    if not header_seconds > 0 or max_idle < 1:
        raise ValueError("header_seconds must be positive and max_idle at least 1")

    last_scan = [0.0]

    class GuardedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _armed_for: Any = None
        _idle_since: float = 0.0

        #: when the connection was accepted, when that was not just now (the
        #: front door held it while its first request arrived: front.py)
        opened_at: float | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            now = time.monotonic()
            self._idle_since = min(now, self.opened_at) if self.opened_at is not None else now
            self._arm(header_seconds - (now - self._idle_since))
            self._shed_idle()

        _lingering: bool = False

        def data_received(self, data: bytes) -> None:
            if self._lingering:
                return  # the rest of a body answered early: dropped
            if health_body is not None and data.startswith(HEALTH_LINE) and self._fast_health(data):
                return
            if self._header_timer is None and self._between_requests():
                self._arm()
            super().data_received(data)

        def _fast_health(self, data: bytes) -> bool:
            # only between requests: h11 idle with nothing buffered, and this
            # packet one whole request
            if not (self._between_requests() and self.conn.our_state is h11.IDLE
                    and self.conn.their_state is h11.IDLE and not self.conn.trailing_data[0]):
                return False
            if not data.endswith(b"\r\n\r\n") or data.count(b"\r\n\r\n") != 1:
                return False
            lower = data.lower()
            if b"\r\ncontent-length:" in lower or b"\r\ntransfer-encoding:" in lower \
                    or b"\r\nexpect:" in lower:
                return False
            host = _host_of(data[:-4])
            if host is None or (allowed_hosts is not None and host_name(host) not in allowed_hosts):
                return False
            body = health_body()
            close = b"\r\nconnection: close" in lower
            self.transport.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                                 b"content-length: %d\r\n%s\r\n" % (len(body), b"connection: close\r\n" if close else b"")
                                 + body)
            self.server_state.total_requests += 1
            self._idle_since = time.monotonic()
            self._unset_keepalive_if_required()
            if close:
                self.transport.close()
            else:  # a keep-alive connection: quiet this long, it is closed
                if self._header_timer is not None:
                    self._header_timer.cancel()
                self._arm()
            return True

        def connection_lost(self, exc: Exception | None) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            super().connection_lost(exc)
            # Python 3.11's socket transport keeps a bound method of itself
            # (`_read_ready_cb`): every closed connection is a reference
            # cycle (transport, socket, ...) that only a garbage collection
            # frees, and after a crowd of a thousand those collections hold
            # the GIL for 100+ ms, stopping the front door's thread too.
            # The transport is closed now and reads nothing more.
            if getattr(self.transport, "_read_ready_cb", None) is not None:
                self.transport._read_ready_cb = None

        def on_response_complete(self) -> None:
            self._idle_since = time.monotonic()
            if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
                # answered before the body arrived: drop the rest, then close
                self.server_state.total_requests += 1
                self._lingering = True
                self.flow.resume_reading()
                self.loop.call_later(LINGER_SECONDS, self._close_lingering)
                return
            super().on_response_complete()

        def _close_lingering(self) -> None:
            if not self.transport.is_closing():
                self.transport.close()

        # -- helpers ------------------------------------------------------------

        def _between_requests(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _arm(self, seconds: float = header_seconds) -> None:
            self._armed_for = self.cycle
            self._header_timer = self.loop.call_later(max(0.0, seconds), self._expire)

        def _expire(self) -> None:
            self._header_timer = None
            # no new request began since the timer was armed: its headers
            # did not arrive in time
            if self.cycle is self._armed_for and self._between_requests() and not self.transport.is_closing():
                self._refuse(HEADERS_LATE)

        def _refuse(self, answer: bytes) -> None:
            # answer, end our side, and drop what the client still sends for
            # a moment before closing: closing with its request unread would
            # send a reset, which can destroy the answer before it is read
            self.transport.write(answer)
            self._lingering = True
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            try:
                if self.transport.can_write_eof():
                    self.transport.write_eof()
            except (OSError, RuntimeError):
                self.transport.close()
                return
            self.flow.resume_reading()
            self.loop.call_later(LINGER_SECONDS, self._close_lingering)

        def _shed_idle(self) -> None:
            # cheap first: only with more connections than the cap, and at
            # most one scan per SCAN_SECONDS (a burst of a thousand clients
            # would otherwise cost a million steps)
            if len(self.connections) <= max_idle:
                return
            now = time.monotonic()
            if now - last_scan[0] < SCAN_SECONDS:
                return
            last_scan[0] = now
            idle = [c for c in self.connections
                    if isinstance(c, GuardedH11Protocol) and c is not self and c._between_requests()
                    and not c.transport.is_closing() and not c._lingering]
            if len(idle) < max_idle:
                return
            old = sorted((c for c in idle if now - c._idle_since >= FRESH_SECONDS), key=lambda c: c._idle_since)
            for c in old[:len(idle) - max_idle + 1]:
                c._refuse(BUSY)

    return GuardedH11Protocol
