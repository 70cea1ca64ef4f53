"""Hostile clients against a real `tfsem serve` on loopback (issue 18 items
2, 3 and 8): 200 idle connections and slow-header connections must not lock
out other clients, NaN/Infinity/1e400 literals get a 400 (never a worker
restart), and a POST without Content-Type: application/json is refused.

Bounded: one server, 200 sockets, a 1 s header deadline; the whole file runs
in a few seconds.
"""

from __future__ import annotations

import json
import socket
import time

import pytest

from test_serve_support import Server

SMALL_PROGRAM = {"nodes": [{"name": "c", "op": "Const", "value": 1}], "outputs": {"o": "c"}}
SMALL_CHECK = {"original": SMALL_PROGRAM, "rewritten": SMALL_PROGRAM}
HEADER_TIMEOUT = 1.0


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("hostile-serve"), "--workers", "1",
               "--header-timeout", str(HEADER_TIMEOUT))
    yield s
    assert s.stop() == 0


def _connect(server: Server) -> socket.socket:
    sock = socket.create_connection((server.host, server.port), timeout=5)
    return sock


def _closed_by_peer(sock: socket.socket, wait: float) -> bool:
    sock.settimeout(wait)
    try:
        return sock.recv(1024) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def test_200_idle_and_slow_header_connections_do_not_lock_out_clients(server):
    idle = [_connect(server) for _ in range(100)]
    slow = [_connect(server) for _ in range(100)]
    try:
        for s in slow:
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHo")
        time.sleep(0.2)
        # every other client is answered while the 200 connections are open
        answers = []
        for _ in range(5):
            answers.append(server.get("/v1/health", timeout=10).status)
            answers.append(server.post("/v1/check", SMALL_CHECK, timeout=30).status)
            for s in slow[:20]:           # trickle: must not extend the deadline
                try:
                    s.sendall(b"s")
                except OSError:
                    pass
        assert answers == [200] * 10, answers
        # the server closes connections whose headers did not come in time
        deadline = time.monotonic() + 4 * HEADER_TIMEOUT + 2
        still_open = list(idle + slow)
        while still_open and time.monotonic() < deadline:
            still_open = [s for s in still_open if not _closed_by_peer(s, 0.05)]
        assert not still_open, f"{len(still_open)} of 200 connections still open"
    finally:
        for s in idle + slow:
            s.close()
    assert server.get("/v1/health").status == 200


def test_keep_alive_connection_that_trickles_its_next_request_is_closed(server):
    sock = _connect(server)
    try:
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        sock.settimeout(5)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        start = time.monotonic()
        closed = False
        while time.monotonic() - start < 4 * HEADER_TIMEOUT + 6:
            try:
                sock.sendall(b"G")
            except OSError:
                closed = True
                break
            if _closed_by_peer(sock, 0.3):
                closed = True
                break
        assert closed, "a connection trickling header bytes was never closed"
    finally:
        sock.close()


@pytest.mark.parametrize("body", [
    b'{"program": {"nodes": [{"name": "c", "op": "Const", "value": NaN}], "outputs": {"o": "c"}}}',
    b'{"program": {"nodes": [{"name": "c", "op": "Const", "value": Infinity}], "outputs": {"o": "c"}}}',
    b'{"program": {"nodes": [{"name": "c", "op": "Const", "value": -Infinity}], "outputs": {"o": "c"}}}',
    b'{"program": {"nodes": [{"name": "c", "op": "Const", "value": {"dtype": "float32", "value": 1e400}}],'
    b' "outputs": {"o": "c"}}}',
    b'{"program": {"nodes": [{"name": "c", "op": "Const", "value": 1}], "outputs": {"o": "c"}},'
    b' "timeout": 1e400}',
    b'{"program": {"nodes": [{"name": "c", "op": "Const", "value": {"dtype": "float32", "value": 1e39}}],'
    b' "outputs": {"o": "c"}}}',
    b'{"program": {"nodes": [{"name": "c", "op": "Const", "value": {"dtype": ["float32"], "value": 1}}],'
    b' "outputs": {"o": "c"}}}',
    b'{"program": {"nodes": [{"name": "\\ud800", "op": "Const", "value": 1}], "outputs": {"o": "\\ud800"}}}',
])
def test_non_finite_and_hostile_literals_are_400_without_a_worker_restart(server, body):
    before = server.get("/v1/health").json()["workers"]
    ans = server.post("/v1/outcomes", raw=body)
    assert ans.status == 400, ans
    messages = " ".join(ans.json()["messages"])
    assert "request" in messages or "node 'c'" in messages, messages
    after = server.get("/v1/health").json()["workers"]
    assert after["restarts"] == before["restarts"] and after["stopped"] == before["stopped"]


def test_nan_as_a_string_gets_a_normal_answer(server):
    program = {"feeds": {"x": {"dtype": "float32"}},
               "nodes": [{"name": "i", "op": "Identity", "inputs": ["$x"]}], "outputs": {"o": "i"}}
    ans = server.post("/v1/outcomes", {"program": program, "feeds": {"x": {"dtype": "float32", "value": "nan"}}})
    assert ans.status == 200, ans
    assert ans.json()["count"] == 1
    ans = server.post("/v1/outcomes", {"program": program, "feeds": {"x": 2.5}})
    assert ans.status == 200, ans


@pytest.mark.parametrize("ctype", [None, "text/plain", "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x", "application/jsonx"])
def test_post_needs_content_type_json(server, ctype):
    import http.client
    import json
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    try:
        headers = {} if ctype is None else {"Content-Type": ctype}
        conn.request("POST", "/v1/check", body=json.dumps(SMALL_CHECK).encode(), headers=headers)
        resp = conn.getresponse()
        body = json.loads(resp.read())
    finally:
        conn.close()
    assert resp.status == 415, body
    assert "application/json" in body["message"]
    ok = server.post("/v1/check", SMALL_CHECK, headers={"Content-Type": "application/json; charset=utf-8"})
    assert ok.status == 200


def test_corrupt_database_is_a_500_naming_it_on_every_database_route(tmp_path):
    (tmp_path / "campaign.db").write_bytes(b"SQLite format 3\0" + b"garbage" * 500)
    s = Server(tmp_path, "--workers", "1")
    try:
        for path in ("/v1/campaigns", "/v1/findings", "/v1/findings/1", "/findings/finding-1.html"):
            ans = s.get(path)
            assert ans.status == 500, (path, ans)
            assert "campaign.db" in ans.json()["message"], (path, ans)
            assert "Traceback" not in ans.body.decode()
        # ids past 64 bits or in other scripts' digits are no finding, not a crash
        for fid in ("9223372036854775808", "99999999999999999999999", "%D9%A1"):
            ans = s.get(f"/v1/findings/{fid}")
            assert ans.status in (404, 500), (fid, ans)
        assert s.post("/v1/check", SMALL_CHECK).status == 200   # computations do not need it
    finally:
        assert s.stop() == 0


def test_huge_and_non_ascii_finding_ids_are_404(server):
    for fid in ("9223372036854775808", "18446744073709551616", "%D9%A1%D9%A2", "-1", "1e3"):
        ans = server.get(f"/v1/findings/{fid}")
        assert ans.status == 404, (fid, ans)
        ans = server.get(f"/findings/finding-{fid}.html")
        assert ans.status == 404, (fid, ans)


# -- the published schema accepts every request the server accepts (issue 16 item 10) --

FLOAT_FEED = {"feeds": {"x": {"dtype": "float32", "shape": [2]}},
              "nodes": [{"name": "i", "op": "Identity", "inputs": ["$x"]}], "outputs": {"o": "i"}}
TYPED_VARS = {"variables": {"v": {"dtype": "float32", "shape": []}},
              "nodes": [{"name": "h", "op": "Var", "var": "v"}, {"name": "r", "op": "Read", "inputs": ["h"]}],
              "outputs": {"o": "r"}}


def _accepted_requests() -> list[tuple[str, dict]]:
    from pathlib import Path
    cases = sorted((Path(__file__).parent / "cases").glob("*.json"))[:8]
    out = [("/v1/check", json.loads(c.read_text())) for c in cases]
    out += [
        ("/v1/outcomes", {"program": FLOAT_FEED, "feeds": {"x": [2.5, -1.0]}}),        # floats for float32
        ("/v1/outcomes", {"program": FLOAT_FEED, "feeds": {"x": {"dtype": "float32", "value": ["nan", "-inf"]}}}),
        ("/v1/outcomes", {"program": TYPED_VARS, "init": {"v": 1.5}, "limit": 3, "timeout": 2.5,
                          "max_states": 1000, "semantics": "decomposed", "observe": "outputs"}),
        ("/v1/outcomes", {"program": TYPED_VARS, "init": {"v": {"error": "uninitialized"}}}),
        ("/v1/outcomes", {"program": SMALL_PROGRAM}),
        ("/v1/check", {"original": SMALL_PROGRAM, "rewritten": 42}),                       # a verdict: invalid
        ("/v1/check", {"original": SMALL_PROGRAM, "rewritten": {"nodes": "not a list"}}),
        ("/v1/check", {"original": SMALL_PROGRAM, "rewritten": {"nodes": [{"name": "c", "op": "Nope"}]}}),
        ("/v1/check", dict(SMALL_CHECK, timeout=1, semantics="decomposed", observe="outputs", expect="sound",
                           note="n")),
    ]
    return out


def _validator(spec: dict, ref: str):
    jsonschema = pytest.importorskip("jsonschema")
    schema = dict(spec)
    schema["$ref"] = ref
    return jsonschema.Draft202012Validator(schema)


def test_openapi_accepts_every_request_the_server_accepts(server):
    spec = server.get("/openapi.json").json()
    for path, body in _accepted_requests():
        op = spec["paths"][path]["post"]
        request_ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        ans = server.post(path, body)
        assert ans.status == 200, (path, body, ans)
        errors = [e.message for e in _validator(spec, request_ref).iter_errors(body)]
        assert not errors, (path, json.dumps(body)[:300], errors[:3])
        response_ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        errors = [e.message for e in _validator(spec, response_ref).iter_errors(ans.json())]
        assert not errors, (path, "answer", errors[:3])


def test_openapi_refuses_what_the_server_refuses(server):
    spec = server.get("/openapi.json").json()
    check = _validator(spec, "#/components/schemas/CheckRequest")
    outcomes = _validator(spec, "#/components/schemas/OutcomesRequest")
    for validator, path, body in [
        (check, "/v1/check", {"original": SMALL_PROGRAM}),
        (check, "/v1/check", dict(SMALL_CHECK, timeout=-1)),
        (check, "/v1/check", dict(SMALL_CHECK, semantics="other")),
        (check, "/v1/check", dict(SMALL_CHECK, code="os.system")),
        (outcomes, "/v1/outcomes", {"program": SMALL_PROGRAM, "limit": 0}),
        (outcomes, "/v1/outcomes", {"program": {"nodes": [{"name": "c", "op": "Const", "value": "x", "z": 1}]}}),
    ]:
        assert server.post(path, body).status == 400, body
        assert list(validator.iter_errors(body)), body


def test_openapi_describes_the_get_answers(server):
    jsonschema = pytest.importorskip("jsonschema")
    spec = server.get("/openapi.json").json()
    for path in ("/v1/health", "/v1/campaigns", "/v1/findings"):
        ans = server.get(path)
        assert ans.status == 200, (path, ans)
        inline = spec["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
        schema = dict(spec, **inline)
        errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(ans.json())]
        assert not errors, (path, errors[:3])
    ans = server.post("/v1/check", SMALL_CHECK, headers={"Content-Type": "text/plain"})
    assert ans.status == 415 and "415" in spec["paths"]["/v1/check"]["post"]["responses"]
