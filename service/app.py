"""The Starlette application of `tfsem serve`.

    app = create_app(Services(pool=WorkerPool(...), view=CampaignView(dir)), limits)

Routes (described in openapi.py, served at /openapi.json):

- `POST /v1/check`, `POST /v1/outcomes`: the body is read up to the size
  limit, decoded and checked here (bad input: 400 with the command line's
  messages), then computed on a worker process under a time budget (the
  request's `timeout` capped by the server's); past it, or past the memory cap,
  the answer is the verdict `unknown`.  When every worker is busy a request
  waits briefly, then gets 503.
- `GET /v1/campaigns`, `GET /v1/findings`, `GET /v1/findings/{id}`: JSON read
  from DIR's campaign database at each request.
- `GET /` and `GET /findings/{page}`: the report pages, rendered from the
  database at each request.
- `GET /v1/health`, `GET /openapi.json`.

Anything else is 404 (405 for a known route with the wrong method), always
with a JSON error object; no request can make a handler raise past the
exception handlers below, so the server keeps serving after any bad request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
from dataclasses import dataclass
from typing import Any, Callable

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from tfsem import __version__
from tfsem.campaigns.store import StoreError
from tfsem.reports.campaign import UnreadableStore
from tfsem.oracle.program import ProgramError, Violation

from . import jobs
from .auth import TokenCheck
from .campaign_view import CampaignView, NoSuchFinding
from .heads import host_name
from .limits import Limits
from .openapi import openapi_document
from .requests import envelope, error_body, parse_body
from .workers import JobResult, Overloaded, WorkerPool

log = logging.getLogger("tfsem.serve")

FINDING_QUERY = ("pass", "kind", "status")
KINDS = ("unsound", "invalid", "crash", "timeout")
STATUSES = ("new", "known", "fixed")


@dataclass
class Services:
    """What the routes use, injected so that tests can swap any of them:
    `pool` runs the computations (its jobs module decides what `check` and
    `outcomes` are), `view` reads DIR's campaigns and renders their pages."""
    pool: WorkerPool
    view: CampaignView
    #: which jobs the workers can run (the checker may be missing)
    jobs_available: dict[str, bool] | None = None
    #: called once the workers are up (the command prints its "listening" line)
    on_ready: Callable[[], None] | None = None


class _BodyTooLarge(Exception):
    pass


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(obj, allow_nan=False, separators=(",", ":")), status_code=status,
                    media_type="application/json", headers=headers)


def error_response(status: int, error: str, message: str, headers: dict[str, str] | None = None) -> Response:
    return json_response({"error": error, "message": message}, status, headers)


#: bodies up to this size are parsed on the event loop (microseconds)
INLINE_PARSE_BYTES = 16 << 10

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


class HostCheck:
    """Answer only requests addressed to one of `allowed` host names.

    A server on loopback is reachable from web pages the user opens: a page
    on a domain that re-resolves to 127.0.0.1 (DNS rebinding) could read the
    findings.  Such requests carry the page's host name, so naming the
    loopback names as the only allowed ones shuts them out."""

    def __init__(self, app, allowed: frozenset[str]):
        self.app, self.allowed = app, frozenset(a.lower() for a in allowed)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            raw = dict(scope.get("headers") or ()).get(b"host", b"").decode("latin-1")
            if host_name(raw) not in self.allowed:
                response = error_response(421, "misdirected request",
                                          f"this server answers requests for {', '.join(sorted(self.allowed))}, "
                                          f"not {raw!r}")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(services: Services, limits: Limits | None = None, *,
               allowed_hosts: frozenset[str] | None = None, token: str | None = None) -> Starlette:
    """`allowed_hosts`: the host names requests must be addressed to (None:
    any; the server gives the loopback names when it listens on loopback,
    and the `--allowed-host` names).  `token`: every route but /v1/health
    needs it (see auth.py); None: no authentication."""
    limits = limits or Limits()
    pool, view = services.pool, services.view
    available = dict(services.jobs_available if services.jobs_available is not None else jobs.available())
    spec = openapi_document(limits)
    limits_json = {k: getattr(limits, k) for k in limits.__dataclass_fields__}

    # -- reading bodies -------------------------------------------------------

    async def read_body(request: Request) -> bytes:
        """The body, or _BodyTooLarge as soon as it passes the limit, whether
        its length is declared or it comes in chunks (the connection then
        drops the rest for a moment and closes: see protocol.py)."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limits.max_body_bytes:
            raise _BodyTooLarge()
        body = bytearray()

        async def collect() -> None:
            async for chunk in request.stream():
                body.extend(chunk)
                if len(body) > limits.max_body_bytes:
                    raise _BodyTooLarge()

        try:
            await asyncio.wait_for(collect(), limits.body_read_seconds)
        except asyncio.TimeoutError:
            raise HTTPException(408, f"the request body took more than {limits.body_read_seconds:g} s "
                                     "to arrive") from None
        return bytes(body)

    # -- computations ---------------------------------------------------------

    def envelope_line(command: str, raw: bytes) -> tuple[Any, bytes]:
        """In a thread: the body parsed (bounded by the body cap) and the
        worker's message line; the rest of the work is the worker's."""
        data = parse_body(raw, limits)
        env = envelope(data)
        budget = limits.budget(env.timeout)
        # allow_nan: a NaN literal the parser let through reaches the decoder,
        # whose message names the node, as on the command line
        line = json.dumps({"job": command, "request": data, "limits": limits_json, "budget": budget},
                          separators=(",", ":")).encode() + b"\n"
        return env, line

    async def compute(request: Request, command: str) -> Response:
        # A form or a page's fetch() without preflight can POST text/plain or
        # form data cross-site; only application/json (which needs a CORS
        # preflight this server never grants) makes it compute.
        ctype = request.headers.get("content-type", "")
        if ctype.split(";", 1)[0].strip().lower() != "application/json":
            return error_response(415, "unsupported media type",
                                  f"POST {request.url.path} takes a JSON body with Content-Type: "
                                  f"application/json, not {ctype or 'none'!r}")
        if not available.get(command):
            return error_response(501, "not available",
                                  f"this installation cannot answer {command} (its module is missing)")
        try:
            raw = await read_body(request)
        except _BodyTooLarge:
            return error_response(413, "too large",
                                  f"the request body is over {limits.max_body_bytes} bytes, "
                                  "the most this server takes")
        if pool.full:  # refused before any parsing: a crowd costs the server little
            return error_response(503, "busy", str(pool.refuse()), {"Retry-After": "1"})
        try:
            # a large body in a thread: parsing it takes milliseconds, and the
            # event loop keeps answering meanwhile (a small one is parsed at
            # once: handing it to a thread costs more)
            if len(raw) <= INLINE_PARSE_BYTES:
                env, line = envelope_line(command, raw)
            else:
                env, line = await asyncio.to_thread(envelope_line, command, raw)
        except ProgramError as exc:
            return json_response(error_body(exc, command), 400)
        except RecursionError:
            return json_response(error_body(ProgramError([Violation(
                "request", "too-deep", "the request is nested too deeply")]), command), 400)
        budget = limits.budget(env.timeout)
        deadline = limits.hard_deadline(budget)
        try:
            result: JobResult = await pool.run(command, line, budget, deadline)
        except Overloaded as exc:
            return error_response(503, "busy", str(exc), {"Retry-After": "1"})
        headers = {"X-Tfsem-Budget": f"{budget:g}", "X-Tfsem-Seconds": f"{result.seconds:.6f}"}
        if result.stopped:
            reason = {
                "time": f"time limit: the computation ran past {deadline:.3g} s (budget {budget:g} s) "
                        "and its worker process was stopped",
                "budget": f"time limit: reading the request (decoding, converting the graph) took the "
                          f"whole budget of {budget:g} s",
                "memory": f"memory limit: the computation needed more than {limits.worker_memory_mb} MiB "
                          "and its worker process was restarted",
                "too-large": "size limit: the answer was larger than the server sends "
                             "(ask for fewer outcomes with `limit`)",
                "shutdown": "the server is shutting down: the computation was stopped",
            }.get(result.stopped, "the worker process died during the computation and was restarted")
            return json_response(jobs.unknown_verdict(reason, env.semantics, env.observe, command), 200, headers)
        return json_response(result.body, result.status, headers)

    async def post_check(request: Request) -> Response:
        return await compute(request, "check")

    async def post_outcomes(request: Request) -> Response:
        return await compute(request, "outcomes")

    # -- the campaign database -------------------------------------------------

    async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(fn, *args)

    def query_problems(request: Request, allowed: tuple[str, ...]) -> list[Violation]:
        out = []
        for key in sorted(set(request.query_params) - set(allowed)):
            out.append(Violation(f"query.{key}", "unknown-field", f"unknown query parameter {key!r}"))
        for key in set(request.query_params) & set(allowed):
            if len(request.query_params.getlist(key)) > 1:
                out.append(Violation(f"query.{key}", "bad-value", f"{key} is given more than once"))
        return out

    async def get_campaigns(request: Request) -> Response:
        problems = query_problems(request, ())
        if problems:
            return json_response(error_body(ProgramError(problems), "serve"), 400)
        return json_response({"campaigns": await in_thread(view.campaigns)})

    async def get_findings(request: Request) -> Response:
        q = request.query_params
        problems = query_problems(request, FINDING_QUERY)
        if q.get("kind") is not None and q["kind"] not in KINDS:
            problems.append(Violation("query.kind", "bad-value", f"kind is one of {', '.join(KINDS)}"))
        if q.get("status") is not None and q["status"] not in STATUSES:
            problems.append(Violation("query.status", "bad-value", f"status is one of {', '.join(STATUSES)}"))
        if problems:
            return json_response(error_body(ProgramError(problems), "serve"), 400)
        found = await in_thread(view.findings, q.get("pass") or None, q.get("kind") or None,
                                q.get("status") or None)
        return json_response({"findings": found})

    async def get_finding(request: Request) -> Response:
        fid = request.path_params["id"]
        try:
            detail = await in_thread(view.finding, fid)
        except UnreadableStore as exc:
            return error_response(500, "unreadable database", str(exc))
        except NoSuchFinding:
            return error_response(404, "not found", f"no finding {fid!r}")
        return json_response(detail)

    async def get_index(request: Request) -> Response:
        return HTMLResponse(await in_thread(view.index_html))

    async def get_finding_page(request: Request) -> Response:
        page = request.path_params["page"]
        try:
            html = await in_thread(view.finding_html, page)
        except UnreadableStore as exc:
            return error_response(500, "unreadable database", str(exc))
        except NoSuchFinding:
            return error_response(404, "not found", f"no finding page {page!r}")
        return HTMLResponse(html)

    def health() -> dict:
        return {"status": "ok", "version": __version__, "jobs": available,
                "workers": {"size": pool.size, "idle": pool.idle, "pids": pool.pids(), **pool.stats.to_json()},
                "limits": {k: getattr(limits, k) for k in limits.__dataclass_fields__},
                "dir": str(view.directory)}

    async def get_health(request: Request) -> Response:
        return json_response(health())

    async def get_openapi(request: Request) -> Response:
        return json_response(spec)

    # -- errors ---------------------------------------------------------------

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            error, message = "not found", f"no route {request.url.path}"
        elif exc.status_code == 405:
            error, message = "method not allowed", f"{request.url.path} does not take {request.method}"
        else:
            error, message = "request timeout" if exc.status_code == 408 else "error", str(exc.detail)
        return error_response(exc.status_code, error, message, dict(exc.headers or {}))

    async def unreadable_database(request: Request, exc: Exception) -> Response:
        # a corrupt or foreign DIR/campaign.db: say so on every database route
        # (the computations do not need it and keep working)
        log.warning("campaign database unreadable on %s: %s", request.url.path, exc)
        text = str(exc) if not isinstance(exc, sqlite3.Error) else \
            f"{view.directory / 'campaign.db'}: cannot be read ({type(exc).__name__}: {exc})"
        return error_response(500, "unreadable database", text)

    async def internal_error(request: Request, exc: Exception) -> Response:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return error_response(500, "internal error", f"{type(exc).__name__}: {exc}")

    # -- life -----------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        await pool.start()
        if services.on_ready:
            services.on_ready()
        try:
            yield
        finally:
            await pool.close()

    routes = [
        Route("/v1/check", post_check, methods=["POST"]),
        Route("/v1/outcomes", post_outcomes, methods=["POST"]),
        Route("/v1/campaigns", get_campaigns, methods=["GET"]),
        Route("/v1/findings", get_findings, methods=["GET"]),
        Route("/v1/findings/{id}", get_finding, methods=["GET"]),
        Route("/v1/health", get_health, methods=["GET"]),
        Route("/openapi.json", get_openapi, methods=["GET"]),
        Route("/", get_index, methods=["GET"]),
        Route("/index.html", get_index, methods=["GET"]),
        Route("/findings/{page}", get_finding_page, methods=["GET"]),
    ]
    middleware = [Middleware(HostCheck, allowed=allowed_hosts)] if allowed_hosts is not None else []
    if token is not None:
        middleware.append(Middleware(TokenCheck, token=token))
    app = Starlette(routes=routes, lifespan=lifespan, middleware=middleware,
                    exception_handlers={HTTPException: http_error, sqlite3.Error: unreadable_database,
                                        UnreadableStore: unreadable_database, StoreError: unreadable_database,
                                        Exception: internal_error})
    #: the health answer's body, for the connection protocol's fast path
    #: (protocol.py answers GET /v1/health as soon as it arrives)
    app.state.health_body = lambda: json.dumps(health(), allow_nan=False, separators=(",", ":")).encode()
    return app

