"""Bearer-token authentication of `tfsem serve` (an ASGI middleware).

With a token configured (`--token-file FILE` or `TFSEM_TOKEN`), every route
but `GET /v1/health` needs it:

- the API: `Authorization: Bearer TOKEN`, else 401 with a JSON error and
  `WWW-Authenticate: Bearer`;
- the browsable pages (`/`, `/index.html`, `/findings/...`): a browser without
  the token gets a small login form (401); posting the right token to
  `/login` sets a session cookie (`Secure; HttpOnly; SameSite=Strict`) and
  redirects back.  The cookie holds an HMAC of the token, not the token, and
  is accepted on every route (a `SameSite=Strict` cookie is never sent by a
  page of another site, and POSTs need `Content-Type: application/json`,
  which a cross-site page cannot send without a preflight this server never
  grants).

Comparisons are constant-time (`hmac.compare_digest`).
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import os
import stat
from pathlib import Path
from urllib.parse import parse_qs

COOKIE = "tfsem_session"
MIN_TOKEN_CHARS = 16
OPEN_PATHS = frozenset({"/v1/health"})
LOGIN_PATH = "/login"
_MAX_LOGIN_BODY = 4096


class TokenError(ValueError):
    """A token file or variable that cannot be used (the message says why)."""


def _check_token(token: str, where: str) -> str:
    token = token.strip()
    if not token:
        raise TokenError(f"{where} is empty")
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenError(f"{where}: the token has {len(token)} characters; use at least {MIN_TOKEN_CHARS} "
                         "(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')")
    if any(not (0x21 <= ord(c) <= 0x7e) for c in token):
        raise TokenError(f"{where}: the token must be printable ASCII without spaces")
    return token


def load_token(token_file: str | None, environ: dict[str, str] | None = None) -> tuple[str | None, list[str]]:
    """The token (or None) and warnings: `token_file` first, else TFSEM_TOKEN."""
    environ = os.environ if environ is None else environ
    warnings: list[str] = []
    if token_file is not None:
        path = Path(token_file)
        try:
            st = path.stat()
            if not stat.S_ISREG(st.st_mode):
                raise TokenError(f"--token-file {token_file}: not a regular file")
            if st.st_size > 4096:
                raise TokenError(f"--token-file {token_file}: {st.st_size} bytes; a token file holds one line")
            text = path.read_text(encoding="ascii")
        except UnicodeDecodeError:
            raise TokenError(f"--token-file {token_file}: not ASCII text") from None
        except OSError as exc:
            raise TokenError(f"--token-file {token_file}: {exc.strerror or exc}") from None
        if st.st_mode & 0o077:
            warnings.append(f"--token-file {token_file} can be read by other users "
                            f"(mode {stat.S_IMODE(st.st_mode):o}); chmod 600 it")
        return _check_token(text, f"--token-file {token_file}"), warnings
    env = environ.get("TFSEM_TOKEN")
    if env is not None:
        return _check_token(env, "TFSEM_TOKEN"), warnings
    return None, warnings


def session_value(token: str) -> str:
    """What the session cookie holds: a keyed hash of the token."""
    return hmac.new(token.encode(), b"tfsem-session-v1", hashlib.sha256).hexdigest()


def _cookie(headers: dict[bytes, bytes], name: str) -> str | None:
    for part in headers.get(b"cookie", b"").decode("latin-1").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


def is_page(path: str) -> bool:
    """The browsable pages (HTML), which get a login form instead of a JSON 401."""
    return path in ("/", "/index.html") or path.startswith("/findings/")


def _login_form(next_path: str, message: str = "") -> bytes:
    note = f'<p class="error">{html.escape(message)}</p>' if message else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tfsem: sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{{font-family:system-ui,sans-serif;max-width:28em;margin:4em auto}}
input{{font:inherit;width:100%;margin:.3em 0}}.error{{color:#b00}}</style></head>
<body><h1>tfsem</h1><p>This server needs its access token.</p>{note}
<form method="post" action="{LOGIN_PATH}">
<input type="hidden" name="next" value="{html.escape(next_path, quote=True)}">
<label>Token <input type="password" name="token" autocomplete="current-password" autofocus required></label>
<input type="submit" value="Sign in"></form></body></html>
""".encode()


def _safe_next(value: str) -> str:
    # only a path on this server: no scheme, no //host, no backslashes
    if not value.startswith("/") or value.startswith("//") or "\\" in value or any(ord(c) < 0x20 for c in value):
        return "/"
    return value


class TokenCheck:
    """Let a request through only with the token (see the module's text)."""

    def __init__(self, app, token: str):
        self.app = app
        self.token = token.encode()
        self.session = session_value(token).encode()

    def authorized(self, headers: dict[bytes, bytes]) -> bool:
        auth = headers.get(b"authorization", b"")
        scheme, _, given = auth.partition(b" ")
        ok = False
        if scheme.lower() == b"bearer":
            ok = hmac.compare_digest(given.strip(), self.token)
        cookie = _cookie(headers, COOKIE)
        if cookie is not None:
            ok = hmac.compare_digest(cookie.encode("latin-1"), self.session) or ok
        return ok

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        if path == LOGIN_PATH:
            await self.login(scope, receive, send, headers)
            return
        if self.authorized(headers):
            await self.app(scope, receive, send)
            return
        if is_page(path) and scope["method"] in ("GET", "HEAD"):
            query = scope.get("query_string", b"").decode("latin-1")
            target = path + (f"?{query}" if query else "")
            await _send(send, 401, _login_form(target), b"text/html; charset=utf-8")
            return
        given = b"authorization" in headers
        message = ("the token is wrong" if given else
                   "this server needs a token: send the header Authorization: Bearer TOKEN")
        body = json.dumps({"error": "unauthorized", "message": message}, separators=(",", ":")).encode()
        await _send(send, 401, body, b"application/json",
                    [(b"www-authenticate", b'Bearer realm="tfsem"' + (b', error="invalid_token"' if given else b""))])

    async def login(self, scope, receive, send, headers: dict[bytes, bytes]) -> None:
        if scope["method"] in ("GET", "HEAD"):
            await _send(send, 200, _login_form("/"), b"text/html; charset=utf-8")
            return
        if scope["method"] != "POST":
            body = json.dumps({"error": "method not allowed", "message": f"{LOGIN_PATH} takes GET or POST"},
                              separators=(",", ":"))
            await _send(send, 405, body.encode(), b"application/json", [(b"allow", b"GET, POST")])
            return
        ctype = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
        raw = bytearray()
        more = True
        while more and len(raw) <= _MAX_LOGIN_BODY:
            message = await receive()
            if message["type"] != "http.request":
                return
            raw += message.get("body", b"")
            more = message.get("more_body", False)
        if ctype != b"application/x-www-form-urlencoded" or len(raw) > _MAX_LOGIN_BODY:
            await _send(send, 400, _login_form("/", "send the form"), b"text/html; charset=utf-8")
            return
        form = parse_qs(raw.decode("latin-1"), max_num_fields=4)
        next_path = _safe_next((form.get("next") or ["/"])[0])
        given = (form.get("token") or [""])[0].strip().encode("latin-1", "replace")
        if not hmac.compare_digest(given, self.token):
            await _send(send, 401, _login_form(next_path, "That token is not this server's."),
                        b"text/html; charset=utf-8")
            return
        cookie = (f"{COOKIE}={self.session.decode()}; Path=/; HttpOnly; Secure; SameSite=Strict").encode()
        await _send(send, 303, b"", b"text/plain", [(b"location", next_path.encode("latin-1")),
                                                    (b"set-cookie", cookie)])


async def _send(send, status: int, body: bytes, ctype: bytes,
                extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode()),
               (b"cache-control", b"no-store"), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
