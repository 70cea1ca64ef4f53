"""Running the app: a socket bound to loopback by default, uvicorn, signals.

The socket is bound here rather than by uvicorn so that `--port 0` works (the
kernel picks a free port, which the "listening" line then names): tests and
the benchmark start servers that way.  SIGINT and SIGTERM stop the server
gracefully (requests in flight finish, workers are stopped) and the process
exits with status 0.

uvicorn never sees the socket: the front door (front.py), in a process of its
own (door.py), accepts every connection, answers GET /v1/health itself and
passes the rest to this process's event loop over a UNIX socket, where
uvicorn's protocol serves them (Server._adopt).  If the door ends, the server
stops; if the server ends, the door does.
"""

from __future__ import annotations

import asyncio
import gc
import ipaddress
import logging
import signal
import socket
import sys
from pathlib import Path
from typing import Callable, TextIO

from .app import LOOPBACK_NAMES, Services, create_app, host_name
from .campaign_view import CampaignView
from .limits import Limits
from .door import BEAT_SECONDS, DoorProcess
from .protocol import guarded_protocol
from .workers import WorkerPool

log = logging.getLogger("tfsem.serve")


#: pending connections the kernel holds while the server accepts others (the
#: kernel caps it at net.core.somaxconn)
LISTEN_BACKLOG = 4096
#: seconds computations in flight get to finish once SIGTERM or SIGINT comes
SHUTDOWN_GRACE = 2.0


def _server_class():
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, which on SIGTERM/SIGINT also tells the worker
        pool: new computations are refused and running ones stopped after
        SHUTDOWN_GRACE seconds, so the server ends within a few seconds
        whatever its requests are doing.

        The listening socket is not given to uvicorn: the front door, a
        process of its own (door.py), accepts every connection, answers GET
        /v1/health itself, and passes the others to this event loop
        (`_adopt`), where uvicorn's protocol serves them as if uvicorn had
        accepted them.  `door_lost`: why the server stopped, when the door
        ended without being told to."""

        def __init__(self, config, pool: WorkerPool, sock: socket.socket,
                     health_body: Callable[[], bytes], allowed_hosts: frozenset[str] | None,
                     max_held: int):
            super().__init__(config)
            self.pool = pool
            self.loop: asyncio.AbstractEventLoop | None = None
            self.listen_sock, self.health_body = sock, health_body
            self.allowed_hosts, self.max_held = allowed_hosts, max_held
            self.door: DoorProcess | None = None
            self.door_lost: str | None = None
            self._adopting: set[asyncio.Task] = set()
            self._beat: asyncio.TimerHandle | None = None

        async def serve(self, sockets=None) -> None:
            self.loop = asyncio.get_running_loop()
            await super().serve(sockets=sockets)

        async def startup(self, sockets=None) -> None:
            # the lifespan (workers up, the "listening" line), no listener
            await super().startup(sockets=[])
            if not self.started:
                return
            loop = asyncio.get_running_loop()
            config = self.config

            def create_protocol():
                return config.http_protocol_class(config=config, server_state=self.server_state,
                                                  app_state=self.lifespan.state, _loop=loop)

            self._create_protocol = create_protocol
            # What the server imported and built is there for good: out of
            # the collector's sight, a full collection (which holds the GIL
            # and stops the event loop) takes microseconds instead of 60+ ms
            # (a crowd's allocations set off several).
            gc.collect()
            gc.freeze()

            self.door = DoorProcess(self.listen_sock, self.allowed_hosts, peek=config.ssl is None,
                                    max_held=self.max_held)
            try:
                await self.door.start(self._adopt, self._door_ended, self._health())
            except (OSError, RuntimeError) as exc:
                self.door.kill()
                self.door_lost = f"the front door did not start: {exc}"
                log.error("%s", self.door_lost)
                # stopped from the main loop, so that uvicorn's shutdown runs
                loop.call_soon(self._stop_now)
                return
            # the door holds the listening socket now, and nothing else: if
            # it ends, new connections are refused, not left in a queue
            self.listen_sock.close()
            self._tick()

        def _health(self) -> bytes | None:
            try:
                return self.health_body()
            except Exception:  # never expected: the door keeps the last body
                log.exception("the health answer could not be made")
                return None

        def _tick(self) -> None:
            if self.door is not None:
                self.door.report(self._health())
            self._beat = asyncio.get_running_loop().call_later(BEAT_SECONDS, self._tick)

        def report_health(self) -> None:
            """Gives the door health's body if it changed (called as each
            response goes out: health then shows what that request did)."""
            if self.door is not None:
                self.door.report(self._health(), beat=False)

        def _door_ended(self, terminated: bool) -> None:
            if terminated:  # the door was sent SIGTERM: the service is being stopped
                self.handle_exit(signal.SIGTERM, None)
                return
            if self.should_exit:
                return
            self.door_lost = f"the front door process ended ({self.door.ended_text()})"
            log.error("%s: the server stops", self.door_lost)
            self._stop_now()

        def _stop_now(self) -> None:
            self.should_exit = True
            self.pool.shutdown(SHUTDOWN_GRACE)

        def _adopt(self, items) -> None:
            for sock, prefix, since in items:
                if self.should_exit:
                    sock.close()
                    continue
                task = asyncio.get_running_loop().create_task(self._adopt_one(sock, prefix, since))
                self._adopting.add(task)
                task.add_done_callback(self._adopting.discard)

        async def _adopt_one(self, sock: socket.socket, prefix: bytes, since: float) -> None:
            protocol = self._create_protocol()
            # its deadlines and its age count from when the door accepted it
            protocol.opened_at = since
            if prefix:
                # the bytes the door read come first: connection_made runs
                # before the transport starts reading (both are call_soon'd
                # in that order by the transport)
                made = protocol.connection_made

                def connection_made(transport, made=made, protocol=protocol):
                    # the instance attribute goes at once: it and the protocol
                    # would be a reference cycle, left to the garbage
                    # collector, whose full passes hold the GIL (and so the
                    # door) for 100+ ms after a crowd
                    del protocol.connection_made
                    made(transport)
                    protocol.data_received(prefix)
                protocol.connection_made = connection_made
            try:
                await asyncio.get_running_loop().connect_accepted_socket(
                    lambda: protocol, sock, ssl=self.config.ssl)
            except (OSError, EOFError, asyncio.TimeoutError) as exc:  # a TLS handshake that failed, a reset
                log.debug("connection dropped before it was served: %s", exc)
                sock.close()

        async def shutdown(self, sockets=None) -> None:
            # stop accepting first (uvicorn would close its listeners here)
            if self.door is not None:
                await self.door.stop()
            if self._beat is not None:
                self._beat.cancel()
            for task in list(self._adopting):
                task.cancel()
            await super().shutdown(sockets=sockets)
            gc.unfreeze()  # for a server run inside another program (the tests)

        def handle_exit(self, sig, frame) -> None:
            super().handle_exit(sig, frame)
            if self.loop is not None and not self.loop.is_closed():
                self.loop.call_soon_threadsafe(self.pool.shutdown, SHUTDOWN_GRACE)

    return Server


def host_names_answered(host: str, allowed_hosts: tuple[str, ...] = ()) -> frozenset[str] | None:
    """The Host names a server on `host` answers (None: any).  On loopback,
    the loopback names and the --allowed-host ones (see HostCheck: a page on a
    rebinding domain sends its own name); elsewhere any name, unless some are
    given, and then those plus the loopback names (a health check run on the
    machine, or in the container, asks for 127.0.0.1)."""
    extra = frozenset(n.strip().lower() for n in allowed_hosts)
    if is_loopback(host) or extra:
        return LOOPBACK_NAMES | {host.lower()} | extra
    return None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind_socket(host: str, port: int) -> socket.socket:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    # The protocol number matters: asyncio turns Nagle's algorithm off only on
    # sockets that say IPPROTO_TCP, and with it on, a keep-alive client waits
    # 40 ms (delayed ACK) for every answer that is written in two parts.
    sock = socket.socket(family, kind, proto or socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)
    sock.listen(LISTEN_BACKLOG)
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket, tls: bool = False) -> str:
    host, port = sock.getsockname()[:2]
    scheme = "https" if tls else "http"
    return f"{scheme}://[{host}]:{port}/" if ":" in host else f"{scheme}://{host}:{port}/"


class Refused(ValueError):
    """A configuration the server will not start with (the message says why)."""


def serve(directory: str | Path, host: str = "127.0.0.1", port: int = 8787, limits: Limits | None = None,
          *, out: TextIO | None = None, **options) -> int:
    """Serve until SIGINT or SIGTERM (the options: build_server's)."""
    out = out or sys.stdout
    server = build_server(directory, host, port, limits, out=out, **options)
    # uvicorn re-raises the signal that stopped it once it is done; a handler
    # of ours receives it, so that a stop by signal is a clean exit.
    stops: list[int] = []
    previous = {sig: signal.signal(sig, lambda s, f: stops.append(s)) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        asyncio.run(server.serve())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.listen_sock.close()
    if not server.started:
        print("tfsem serve: the server did not start", file=sys.stderr)
        return 1
    if server.door_lost is not None:
        print(f"tfsem serve: {server.door_lost}; the server stopped", file=sys.stderr)
        return 1
    print("tfsem serve: stopped", file=out, flush=True)
    return 0


def build_server(directory: str | Path, host: str = "127.0.0.1", port: int = 8787, limits: Limits | None = None,
                 *, jobs_module: str = "tfsem.service.jobs", log_level: str = "warning",
                 access_log: bool = False, out: TextIO | None = None, token: str | None = None,
                 allowed_hosts: tuple[str, ...] = (), ssl_certfile: str | None = None,
                 ssl_keyfile: str | None = None):
    """The server, its socket bound and listening (`server.listen_sock`,
    `server.url`, `server.port`), not yet serving: `asyncio.run(
    server.serve())` serves (in any thread; signals are serve()'s; once it
    serves, the socket belongs to its front door process and `listen_sock`
    is closed here).  `token`: every route but /v1/health
    needs it; without one the server listens only on loopback (Refused
    otherwise).  `allowed_hosts`: more Host names to answer (a reverse
    proxy's).  `ssl_certfile`/`ssl_keyfile`: HTTPS (uvicorn's options)."""
    import uvicorn

    out = out or sys.stdout
    limits = limits or Limits()
    if token is None and not is_loopback(host):
        raise Refused(f"--host {host} is not loopback and no token is set: anyone who could reach "
                      "the server could read the findings and spend this machine's CPU; give "
                      "--token-file FILE or TFSEM_TOKEN (or listen on 127.0.0.1 behind a proxy)")
    if (ssl_certfile is None) != (ssl_keyfile is None):
        raise Refused("--ssl-certfile and --ssl-keyfile go together")
    for name in allowed_hosts:
        if not name or host_name(name) != name.strip().lower() or any(c in name for c in "/ \t@"):
            raise Refused(f"--allowed-host {name!r} is not a host name (give the name alone, "
                          "without a port or scheme)")
    if ssl_certfile is not None:
        import ssl
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(ssl_certfile, ssl_keyfile)
        except (OSError, ssl.SSLError) as exc:
            raise Refused(f"--ssl-certfile {ssl_certfile} --ssl-keyfile {ssl_keyfile}: cannot be used "
                          f"({getattr(exc, 'strerror', None) or exc})") from None
    sock = bind_socket(host, port)
    url = url_of(sock, tls=ssl_certfile is not None)
    if not is_loopback(host) and ssl_certfile is None:
        print(f"tfsem serve: warning: listening on {host} without TLS: the token crosses the network "
              "in clear unless a TLS proxy is in front (--ssl-certfile/--ssl-keyfile)", file=sys.stderr)

    def ready() -> None:
        print(f"tfsem serve: listening on {url} ({limits.workers} worker"
              f"{'s' if limits.workers != 1 else ''}, campaigns in {directory})", file=out, flush=True)

    pool = WorkerPool(limits.workers, jobs_module=jobs_module, memory_mb=limits.worker_memory_mb,
                      max_waiting=limits.max_waiting, queue_wait=limits.queue_wait)
    allowed = host_names_answered(host, allowed_hosts)
    app = create_app(Services(pool, CampaignView(directory), on_ready=ready), limits,
                     allowed_hosts=allowed, token=token)
    built: list = []

    async def reporting_health(scope, receive, send):
        # each response tells the front door health's new body, if it changed
        if scope["type"] != "http" or not built:
            return await app(scope, receive, send)

        async def send_and_report(message):
            if message["type"] == "http.response.start":
                built[0].report_health()
            await send(message)

        return await app(scope, receive, send_and_report)

    config = uvicorn.Config(reporting_health, lifespan="on", log_level=log_level, access_log=access_log,
                            ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile,
                            http=guarded_protocol(limits.header_read_seconds, limits.max_idle_connections,
                                                  health_body=app.state.health_body, allowed_hosts=allowed),
                            timeout_keep_alive=5,
                            backlog=LISTEN_BACKLOG,
                            # in-flight computations get SHUTDOWN_GRACE s, then
                            # their workers are stopped and they are answered
                            timeout_graceful_shutdown=int(SHUTDOWN_GRACE) + 2,
                            # counts open connections, idle ones included: the
                            # pool bounds computations, the protocol idle ones
                            limit_concurrency=limits.max_connections,
                            server_header=False)
    server = _server_class()(config, pool, sock, app.state.health_body, allowed,
                             # the door holds a connection at most 0.5 s while
                             # its first request arrives; holding a crowd's (a
                             # thousand connect, then send) keeps a health
                             # check among them from being handed, unread, to
                             # the busy loop
                             max_held=max(limits.max_idle_connections, limits.max_connections))
    server.url, server.port = url, sock.getsockname()[1]
    built.append(server)
    return server
