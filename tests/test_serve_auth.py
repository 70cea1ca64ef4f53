"""`tfsem serve` deployed: bearer-token authentication, the login form and
its cookie, `--allowed-host` for a reverse proxy's Host header, TLS with a
self-signed certificate, and the refusal to listen off loopback without a
token (issue 28, item 3)."""

from __future__ import annotations

import http.client
import os
import shutil
import ssl
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest

from test_serve_support import Server

TOKEN = "s3cret-token-for-the-tests-0123456789"
PROGRAM = {"program": {"nodes": [{"name": "c", "op": "Const", "value": 1}], "outputs": {"o": "c"}}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("serve-auth")
    token_file = d / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    s = Server(d, "--workers", "1", "--token-file", str(token_file), "--allowed-host", "tfsem.internal",
               "--allowed-host", "ci.example.org", token=TOKEN)
    yield s
    s.stop()


def without_token(s: Server, method: str, path: str, headers: dict | None = None, **kw):
    saved, s.token = s.token, None
    try:
        return s.request(method, path, headers=headers, **kw)
    finally:
        s.token = saved


def test_api_without_a_token_is_401(server):
    for method, path, body in (("GET", "/v1/campaigns", None), ("GET", "/v1/findings", None),
                               ("POST", "/v1/outcomes", PROGRAM), ("GET", "/openapi.json", None)):
        ans = without_token(server, method, path, body=body)
        assert ans.status == 401, (path, ans)
        assert ans.json()["error"] == "unauthorized"
        assert ans.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("auth", [f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer ", f"Basic {TOKEN}",
                                  TOKEN, f"Bearer {TOKEN.upper()}"])
def test_a_wrong_token_is_401(server, auth):
    ans = without_token(server, "GET", "/v1/campaigns", headers={"Authorization": auth})
    assert ans.status == 401, ans
    assert "wrong" in ans.json()["message"]


def test_the_right_token_is_200(server):
    assert server.get("/v1/campaigns").status == 200
    ans = server.post("/v1/outcomes", PROGRAM)
    assert ans.status == 200, ans
    assert ans.json()["count"] == 1


def test_health_needs_no_token(server):
    ans = without_token(server, "GET", "/v1/health")
    assert ans.status == 200 and ans.json()["status"] == "ok"


def test_pages_ask_once_and_keep_the_token_in_a_secure_cookie(server):
    page = without_token(server, "GET", "/index.html")
    assert page.status == 401 and page.headers["content-type"].startswith("text/html")
    assert b'action="/login"' in page.body and b'name="token"' in page.body

    form = {"Content-Type": "application/x-www-form-urlencoded"}
    wrong = without_token(server, "POST", "/login", raw=urlencode({"token": "nope", "next": "/"}).encode(),
                          headers=form)
    assert wrong.status == 401 and "set-cookie" not in wrong.headers

    right = without_token(server, "POST", "/login",
                          raw=urlencode({"token": TOKEN, "next": "/index.html"}).encode(), headers=form)
    assert right.status == 303, right
    assert right.headers["location"] == "/index.html"
    cookie = right.headers["set-cookie"]
    attributes = {a.strip().lower() for a in cookie.split(";")[1:]}
    assert {"httponly", "secure", "samesite=strict", "path=/"} <= attributes, cookie
    assert TOKEN not in cookie  # a keyed hash, not the token
    name_value = cookie.split(";", 1)[0]
    ok = without_token(server, "GET", "/index.html", headers={"Cookie": name_value})
    assert ok.status == 200 and ok.headers["content-type"].startswith("text/html")
    # the cookie also opens the JSON routes a page links to; a forged one does not
    assert without_token(server, "GET", "/v1/findings", headers={"Cookie": name_value}).status == 200
    forged = name_value[:-4] + "0000"
    assert without_token(server, "GET", "/v1/findings", headers={"Cookie": forged}).status == 401


def test_login_redirects_only_to_paths_on_this_server(server):
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    for target in ("https://evil.example/", "//evil.example/x", "/\\evil"):
        ans = without_token(server, "POST", "/login", raw=urlencode({"token": TOKEN, "next": target}).encode(),
                            headers=form)
        assert ans.status == 303 and ans.headers["location"] == "/", target


def test_a_reverse_proxys_host_name_needs_allowed_host(server):
    # named with --allowed-host (with or without a port): answered
    for host in ("tfsem.internal", "TFSEM.internal:443", "ci.example.org"):
        ans = server.get("/v1/campaigns", headers={"Host": host})
        assert ans.status == 200, (host, ans)
    # not named: 421, before the token is even looked at
    for host in ("other.internal", "tfsem.internal.evil.example", "evil.example"):
        ans = without_token(server, "GET", "/v1/health", headers={"Host": host})
        assert ans.status == 421, (host, ans)
        assert ans.json()["error"] == "misdirected request"


def _serve(capsys, monkeypatch, *args: str) -> subprocess.CompletedProcess:
    """`tfsem serve ARGS` run by tfsem.cli.main in this process: each of these
    is refused before any socket or worker exists."""
    from tfsem.cli import main
    monkeypatch.delenv("TFSEM_TOKEN", raising=False)
    capsys.readouterr()
    code = main(["serve", *args])
    said = capsys.readouterr()
    return subprocess.CompletedProcess(["tfsem", "serve", *args], code, said.out, said.err)


def test_off_loopback_without_a_token_the_server_refuses_to_start(tmp_path, capsys, monkeypatch):
    r = _serve(capsys, monkeypatch, str(tmp_path), "--host", "0.0.0.0", "--port", "0")
    assert r.returncode == 2, r
    assert "not loopback" in r.stderr and "token" in r.stderr and "Traceback" not in r.stderr
    short = tmp_path / "short"
    short.write_text("abc")
    r = _serve(capsys, monkeypatch, str(tmp_path), "--token-file", str(short), "--port", "0")
    assert r.returncode == 2 and "at least 16" in r.stderr, r
    r = _serve(capsys, monkeypatch, str(tmp_path), "--token-file", str(tmp_path / "missing"), "--port", "0")
    assert r.returncode == 2 and "missing" in r.stderr and "Traceback" not in r.stderr, r
    r = _serve(capsys, monkeypatch, str(tmp_path), "--allowed-host", "http://x/", "--port", "0")
    assert r.returncode == 2 and "not a host name" in r.stderr, r
    r = _serve(capsys, monkeypatch, str(tmp_path), "--ssl-certfile", str(short), "--port", "0")
    assert r.returncode == 2 and "go together" in r.stderr, r
    r = _serve(capsys, monkeypatch, str(tmp_path), "--ssl-certfile", str(short), "--ssl-keyfile", str(short),
               "--port", "0")
    assert r.returncode == 2 and "cannot be used" in r.stderr, r


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key: with the `cryptography`
    package if installed, else the openssl command."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    try:
        import datetime

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        if shutil.which("openssl") is None:
            pytest.skip("neither the cryptography package nor openssl is installed: no certificate")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
        return cert, key
    import ipaddress
    pkey = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(pkey.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
                   .not_valid_after(now + datetime.timedelta(days=2))
                   .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                                  critical=False)
                   .sign(pkey, hashes.SHA256()))
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(pkey.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return cert, key


def test_over_tls_with_a_self_signed_certificate(tmp_path):
    cert, key = self_signed(tmp_path)
    env = dict(os.environ, TFSEM_TOKEN=TOKEN)   # the token from the environment this time
    s = Server(tmp_path, "--workers", "1", "--ssl-certfile", str(cert), "--ssl-keyfile", str(key),
               token=TOKEN, cafile=str(cert), env=env)
    try:
        assert s.url.startswith("https://127.0.0.1:"), s.url
        assert s.get("/v1/health").status == 200
        ans = s.post("/v1/outcomes", PROGRAM)
        assert ans.status == 200 and ans.json()["count"] == 1, ans
        assert without_token(s, "GET", "/v1/campaigns").status == 401
        # the certificate is checked: a client that does not trust it fails
        conn = http.client.HTTPSConnection(s.host, s.port, timeout=10, context=ssl.create_default_context())
        with pytest.raises(ssl.SSLError):
            conn.request("GET", "/v1/health")
        conn.close()
        # plain HTTP to the TLS port gets no answer with data
        conn = http.client.HTTPConnection(s.host, s.port, timeout=10)
        with pytest.raises((http.client.HTTPException, ConnectionError)):
            conn.request("GET", "/v1/health")
            conn.getresponse()
        conn.close()
    finally:
        assert s.stop() == 0


def test_the_host_names_answered():
    from tfsem.service.server import host_names_answered
    loopback = {"127.0.0.1", "localhost", "[::1]", "::1"}
    assert host_names_answered("127.0.0.1") == loopback
    assert host_names_answered("127.0.0.1", ("TFSEM.internal",)) == loopback | {"tfsem.internal"}
    assert host_names_answered("0.0.0.0") is None   # off loopback, no names given: any
    # with names given, the loopback ones stay (a container's health check)
    assert host_names_answered("0.0.0.0", ("tfsem.example.org",)) == loopback | {"0.0.0.0", "tfsem.example.org"}
