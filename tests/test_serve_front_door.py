"""The front door of `tfsem serve` (service/front.py, issue 29): it accepts
every connection and answers GET /v1/health itself, so that health is
answered while the event loop is busy; every other request, and health for a
Host the server does not answer, goes to the event loop with the bytes
already read, under the same rules as before (token, Host, deadlines).
The door alone is tested here in a thread; a real server runs it in a
process of its own (service/door.py, tests/test_serve_door_process.py).

Loopback only; every wait bounded."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
import time

import pytest

from tfsem.service import front
from tfsem.service.front import HEALTH, OTHER, WAIT, FrontDoor, classify

LOOP = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
HEALTH_REQ = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:8787\r\n\r\n"


# -- which bytes are a health request ------------------------------------------

@pytest.mark.parametrize("data, kind", [
    (HEALTH_REQ, HEALTH),
    (b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", HEALTH),
    (b"GET /v1/he", WAIT),                                          # still arriving
    (b"GET /v1/health HTTP/1.1\r\nHost: 127", WAIT),
    (b"GET /v1/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", OTHER),
    (b"GET /v1/campaigns HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", OTHER),
    (b"POST /v1/check HTTP/1.1\r\n", OTHER),
    (b"GET /v1/health HTTP/1.1\r\nHost: evil.example\r\n\r\n", OTHER),  # the loop answers 421
    (b"GET /v1/health HTTP/1.1\r\n\r\n", OTHER),                         # no Host: the loop answers 400
    (b"GET /v1/health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", OTHER),
    (b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n\r\nabc", OTHER),
    (b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n", OTHER),
    (b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\n\r\n", OTHER),
    (b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + b"y" * 9000, OTHER),  # too long a head
])
def test_classify(data, kind):
    assert classify(data, LOOP)[0] == kind


def test_classify_length_and_close():
    close_req = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    assert classify(HEALTH_REQ + b"GET /", LOOP) == (HEALTH, len(HEALTH_REQ), False)
    assert classify(close_req, LOOP) == (HEALTH, len(close_req), True)
    # off loopback without --allowed-host every name is answered
    assert classify(b"GET /v1/health HTTP/1.1\r\nHost: evil.example\r\n\r\n", None)[0] == HEALTH


# -- the door alone, with a stand-in for the event loop --------------------------

class Door:
    """A FrontDoor on a loopback socket; what it hands over is kept (the
    test plays the event loop)."""

    def __init__(self, peek: bool = True, max_held: int = 256):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.handed: list[tuple[socket.socket, bytes, float]] = []
        self.got = threading.Event()
        self.door = FrontDoor(self.listener, self._handoff, lambda: b'{"status":"ok"}', LOOP,
                              peek=peek, max_held=max_held)
        self.door.start()

    def _handoff(self, items) -> None:
        self.handed.extend(items)
        self.got.set()

    def wait_handed(self, n: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.handed) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(self.handed) >= n, self.handed

    def connect(self) -> socket.socket:
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        return s

    def close(self) -> None:
        self.door.stop()
        for s, *_ in self.handed:
            s.close()
        self.listener.close()


@pytest.fixture
def door():
    d = Door()
    yield d
    d.close()


def read_answer(s: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ", 1)[1].split(b"\r\n", 1)[0])
    while len(body) < length:
        body += s.recv(65536)
    return head + b"\r\n\r\n" + body


def test_door_answers_health_and_keeps_the_connection(door):
    s = door.connect()
    try:
        for _ in range(3):
            s.sendall(HEALTH_REQ)
            answer = read_answer(s)
            assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b'{"status":"ok"}')
        assert door.door.answered == 3 and door.handed == []
        # the next request on the connection is not health: handed over with its bytes
        s.sendall(b"GET /v1/campaigns HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        door.wait_handed(1)
        assert door.handed[0][1] == b"GET /v1/campaigns HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    finally:
        s.close()


def test_door_closes_after_connection_close(door):
    s = door.connect()
    try:
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        s.settimeout(5)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        assert data.startswith(b"HTTP/1.1 200 OK\r\n") and b"connection: close\r\n" in data
    finally:
        s.close()


def test_door_hands_over_everything_else_with_its_bytes(door):
    requests = [b"POST /v1/check HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}",
                b"GET /v1/health HTTP/1.1\r\nHost: evil.example\r\n\r\n",
                b"\x16\x03\x01\x02\x00\x01\x00"]  # a TLS ClientHello's start
    socks = [door.connect() for _ in requests]
    try:
        for s, r in zip(socks, requests):
            s.sendall(r)
        door.wait_handed(3)
        assert sorted(b for _, b, _ in door.handed) == sorted(requests)
        assert door.door.answered == 0
    finally:
        for s in socks:
            s.close()


def test_door_hands_over_a_request_that_does_not_arrive_in_time(door):
    s = door.connect()
    try:
        start = time.monotonic()
        s.sendall(b"GET /v1/hea")
        door.wait_handed(1, timeout=front.WAIT_SECONDS + 5)
        assert door.handed[0][1] == b"GET /v1/hea"
        assert time.monotonic() - start >= front.WAIT_SECONDS * 0.9
        # the loop counts the connection's age from its accept
        assert door.handed[0][2] <= start + 0.2
    finally:
        s.close()


def test_door_leaves_health_to_the_loop_when_the_loop_is_stuck(door):
    door.door.last_beat = time.monotonic() - front.STALL_SECONDS - 1
    s = door.connect()
    try:
        s.sendall(HEALTH_REQ)
        door.wait_handed(1)
        assert door.handed[0][1] == HEALTH_REQ and door.door.answered == 0
    finally:
        s.close()


def test_door_without_peeking_hands_over_at_once():
    d = Door(peek=False)
    try:
        s = d.connect()
        s.sendall(HEALTH_REQ)
        d.wait_handed(1)
        assert d.handed[0][1] == b"" and d.door.answered == 0
        s.close()
    finally:
        d.close()


def test_door_stop_closes_what_it_holds(door):
    s = door.connect()
    try:
        s.sendall(b"GET /v1/hea")  # held, waiting for the rest
        time.sleep(0.1)
        start = time.monotonic()
        door.door.stop()
        assert time.monotonic() - start < 2
        s.settimeout(5)
        assert s.recv(10) == b""
    finally:
        s.close()


# -- a real server whose event loop is busy ----------------------------------------

TOKEN = "front-door-test-token-0123456789"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A server built by build_server and served in a thread of this process,
    so that the test can make its event loop busy; with a token."""
    import io

    from tfsem.service.limits import Limits
    from tfsem.service.server import build_server

    server = build_server(tmp_path_factory.mktemp("front"), "127.0.0.1", 0, Limits(workers=1),
                          out=io.StringIO(), token=TOKEN)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while server.door is None or not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    yield server
    server.should_exit = True
    thread.join(30)
    server.listen_sock.close()


def get(server, path: str, headers: dict | None = None, timeout: float = 30) -> tuple[int, bytes, float]:
    port = server.port
    start = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read(), time.monotonic() - start
    finally:
        conn.close()


def busy_loop(server, seconds: float) -> threading.Event:
    """Keeps the server's event loop busy (pure Python, holding the GIL as a
    crowd's requests do) for `seconds`; the event is set when it begins."""
    began = threading.Event()

    def spin() -> None:
        began.set()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            sum(range(200))

    server.loop.call_soon_threadsafe(spin)
    assert began.wait(10)
    return began


def test_the_apps_rules_still_hold_behind_the_door(live):
    # health needs no token, as before; every other route does
    assert get(live, "/v1/health")[0] == 200
    assert get(live, "/v1/campaigns")[0] == 401
    assert get(live, "/v1/campaigns", {"Authorization": "Bearer wrong-token-wrong-token"})[0] == 401
    assert get(live, "/v1/campaigns", {"Authorization": f"Bearer {TOKEN}"})[0] == 200
    # health for a host the server does not answer: not the door's, 421 from the app
    answered = live.door.answered
    assert get(live, "/v1/health", {"Host": "evil.example"})[0] == 421
    assert live.door.answered == answered


def test_health_is_answered_while_the_event_loop_is_busy(live):
    assert get(live, "/v1/health")[0] == 200
    answered = live.door.answered
    busy_loop(live, 1.5)
    start = time.monotonic()
    results = [get(live, "/v1/health") for _ in range(5)]
    assert [r[0] for r in results] == [200] * 5
    assert json.loads(results[0][1])["status"] == "ok"
    assert live.door.answered == answered + 5
    # all five while the loop was still busy (1.5 s)
    assert time.monotonic() - start < 1.0, [r[2] for r in results]


def test_app_routes_wait_for_a_busy_loop_while_health_does_not(live):
    """The contrast that shows who answers: during 1.5 s of a busy loop, an
    app route is answered only once the loop is free, health at once."""
    busy_loop(live, 1.5)
    start = time.monotonic()
    out: dict[str, float] = {}

    def app_route() -> None:
        status, _, _ = get(live, "/v1/campaigns", {"Authorization": f"Bearer {TOKEN}"})
        out["app"] = time.monotonic() - start if status == 200 else -1

    t = threading.Thread(target=app_route)
    t.start()
    status, _, took = get(live, "/v1/health")
    out["health"] = time.monotonic() - start
    t.join(30)
    assert status == 200
    assert out["app"] > 0.5 + out["health"], out


def test_a_closed_connection_leaves_no_reference_cycle(live):
    """Connections served by the loop are freed by reference counting, not
    left to the garbage collector (whose full passes after a crowd held the
    GIL, and so the door, for 100+ ms): neither the protocol's prefix hook
    nor Python 3.11's socket transport (its bound `_read_ready_cb`) leaves a
    cycle behind."""
    import gc

    port = live.port
    requests = [b"GET /v1/health HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",  # 421
                b"GET /v1/campaigns HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"]  # 401
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for request in requests * 10:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(request)
            s.settimeout(10)
            data = b""
            while chunk := s.recv(65536):
                data += chunk
            s.close()
            assert data.startswith((b"HTTP/1.1 421", b"HTTP/1.1 401")), data[:40]
        time.sleep(0.3)  # the server closes its side
        gc.collect()
        kinds = {type(o).__name__ for o in gc.garbage}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert not kinds & {"_SelectorSocketTransport", "socket", "GuardedH11Protocol"}, kinds
