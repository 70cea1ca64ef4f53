"""Running the app: a socket bound to loopback by default, uvicorn, signals.

The socket is bound here rather than by uvicorn so that `--port 0` works (the
kernel picks a free port, which the "listening" line then names): tests and
the benchmark start servers that way.  SIGINT and SIGTERM stop the server
gracefully (requests in flight finish, workers are stopped) and the process
exits with status 0.
"""

from __future__ import annotations

import asyncio
import ipaddress
import signal
import socket
import sys
from pathlib import Path
from typing import TextIO

from .app import LOOPBACK_NAMES, Services, create_app
from .campaign_view import CampaignView
from .limits import Limits
from .protocol import guarded_protocol
from .workers import WorkerPool


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
    sock.listen(128)
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(directory: str | Path, host: str = "127.0.0.1", port: int = 8787, limits: Limits | None = None,
          *, jobs_module: str = "tfsem.service.jobs", log_level: str = "warning",
          access_log: bool = False, out: TextIO | None = None) -> int:
    import uvicorn

    out = out or sys.stdout
    limits = limits or Limits()
    sock = bind_socket(host, port)
    url = url_of(sock)
    if not is_loopback(host):
        print(f"tfsem serve: warning: listening on {host}, not loopback: anyone who can reach it "
              "can spend this machine's CPU on checks", file=sys.stderr)

    def ready() -> None:
        print(f"tfsem serve: listening on {url} ({limits.workers} worker"
              f"{'s' if limits.workers != 1 else ''}, campaigns in {directory})", file=out, flush=True)

    pool = WorkerPool(limits.workers, jobs_module=jobs_module, memory_mb=limits.worker_memory_mb,
                      max_waiting=limits.max_waiting, queue_wait=limits.queue_wait)
    # On loopback, only requests addressed to a loopback name (see HostCheck).
    allowed = LOOPBACK_NAMES | {host.lower()} if is_loopback(host) else None
    app = create_app(Services(pool, CampaignView(directory), on_ready=ready), limits, allowed_hosts=allowed)
    config = uvicorn.Config(app, lifespan="on", log_level=log_level, access_log=access_log,
                            http=guarded_protocol(limits.header_read_seconds, limits.max_idle_connections),
                            timeout_keep_alive=5,
                            timeout_graceful_shutdown=int(limits.hard_deadline(limits.max_timeout)) + 2,
                            # counts open connections, idle ones included: the
                            # pool bounds computations, the protocol idle ones
                            limit_concurrency=limits.max_connections,
                            server_header=False)
    server = uvicorn.Server(config)
    # uvicorn re-raises the signal that stopped it once it is done; a handler
    # of ours receives it, so that a stop by signal is a clean exit.
    stops: list[int] = []
    previous = {sig: signal.signal(sig, lambda s, f: stops.append(s)) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        asyncio.run(server.serve(sockets=[sock]))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sock.close()
    if not server.started:
        print("tfsem serve: the server did not start", file=sys.stderr)
        return 1
    print("tfsem serve: stopped", file=out, flush=True)
    return 0
