"""`tfsem serve DIR`: verification as an HTTP service (see tfsem.service)."""

from __future__ import annotations

import argparse
import sys

from tfsem.cli import UsageError

from .common import bounded_int, duration, make_duration, positive_int


def add_parser(sub) -> None:
    from tfsem.service.limits import Limits

    d = Limits()
    p = sub.add_parser("serve", help="answer checks and outcome queries over HTTP; browse DIR's campaigns",
                       description="Serve POST /v1/check, POST /v1/outcomes, DIR's campaigns and findings "
                                   "(GET /v1/campaigns, /v1/findings) and its report pages (GET /), "
                                   "described at GET /openapi.json.")
    p.add_argument("dir", help="the campaign directory (DIR/campaign.db)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=bounded_int(0, 65535), default=8787, help="port (default 8787; 0 picks a free one)")
    p.add_argument("--workers", type=bounded_int(1, 256), default=d.workers,
                   help=f"computations run at once, each in its own process (default {d.workers})")
    p.add_argument("--max-timeout", type=make_duration(0, 24 * 3600), default=d.max_timeout,
                   help=f"the most time one computation gets (default {d.max_timeout:g}s)")
    p.add_argument("--default-timeout", type=make_duration(0, 24 * 3600), default=d.default_timeout,
                   help=f"time of a request that gives none (default {d.default_timeout:g}s)")
    p.add_argument("--max-body", type=bounded_int(1, 1 << 30), default=d.max_body_bytes, metavar="BYTES",
                   help=f"largest request body (default {d.max_body_bytes})")
    p.add_argument("--max-nodes", type=bounded_int(1, 10_000), default=d.max_nodes,
                   help=f"most nodes per program (default {d.max_nodes})")
    p.add_argument("--queue", type=bounded_int(0, 10_000), default=d.max_waiting, metavar="N",
                   help=f"requests that may wait for a busy worker before 503 (default {d.max_waiting})")
    p.add_argument("--queue-wait", type=make_duration(0, 3600), default=d.queue_wait,
                   help=f"how long a request waits for a worker before 503 (default {d.queue_wait:g}s)")
    p.add_argument("--worker-memory", type=bounded_int(64, 1 << 20), default=d.worker_memory_mb, metavar="MIB",
                   help=f"memory a worker may add before its computation fails (default {d.worker_memory_mb})")
    p.add_argument("--header-timeout", type=make_duration(0, 300), default=d.header_read_seconds,
                   help=f"a connection whose request headers are not complete this long after it "
                        f"opens (or goes quiet) is closed (default {d.header_read_seconds:g}s)")
    p.add_argument("--token-file", metavar="FILE",
                   help="every route but /v1/health needs this file's token (Authorization: Bearer TOKEN; "
                        "the pages ask for it once); default: $TFSEM_TOKEN, else none, and then only "
                        "a loopback --host is allowed")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="also answer requests addressed to NAME (Host header), e.g. a reverse proxy's "
                        "name; repeatable (others get 421)")
    p.add_argument("--ssl-certfile", metavar="FILE", help="serve HTTPS with this certificate (PEM)")
    p.add_argument("--ssl-keyfile", metavar="FILE", help="the certificate's private key (PEM)")
    p.add_argument("--access-log", action="store_true", help="log every request")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        from tfsem.service.limits import Limits
        from tfsem.service.server import serve
    except ImportError as exc:  # pragma: no cover - the `serve` extra is missing
        raise UsageError(f"needs the serve extra ({exc.name} is missing): "
                         "pip install 'tfsem[serve]'") from None
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a port number")
    if args.queue < 0:
        raise UsageError("--queue must not be negative")
    try:
        limits = Limits(max_body_bytes=args.max_body, max_nodes=args.max_nodes, workers=args.workers,
                        default_timeout=min(args.default_timeout, args.max_timeout),
                        max_timeout=args.max_timeout, max_waiting=args.queue, queue_wait=args.queue_wait,
                        worker_memory_mb=args.worker_memory, header_read_seconds=args.header_timeout)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    from tfsem.service.auth import TokenError, load_token
    from tfsem.service.server import Refused
    try:
        token, warnings = load_token(args.token_file)
    except TokenError as exc:
        raise UsageError(str(exc)) from None
    for w in warnings:
        print(f"tfsem serve: warning: {w}", file=sys.stderr)
    try:
        return serve(args.dir, args.host, args.port, limits, access_log=args.access_log,
                     log_level="info" if args.access_log else "warning", token=token,
                     allowed_hosts=tuple(args.allowed_host), ssl_certfile=args.ssl_certfile,
                     ssl_keyfile=args.ssl_keyfile)
    except Refused as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
