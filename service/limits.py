"""The bounds of a `tfsem serve` process.

A request never gets more than these: the body is read up to `max_body_bytes`,
a program has at most `max_nodes` nodes and every declared tensor type at most
`max_elements` elements, a computation runs at most `max_timeout` seconds
(the request's own `timeout` is capped by it) and then its worker process is
stopped, and at most `workers` computations run at once while at most
`max_waiting` more wait up to `queue_wait` seconds for a worker (past that,
503).  Each worker may grow by `worker_memory_mb` MiB of address space; past
that its allocations fail and the answer is `unknown`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 1 << 20
    max_nodes: int = 200
    max_elements: int = 4096
    max_json_depth: int = 64
    default_timeout: float = 10.0
    max_timeout: float = 30.0
    #: extra seconds past the budget before a worker is stopped by force: the
    #: oracle and the checker watch their own budget, this catches the rest
    #: (one huge array operation, a solver call that does not return).
    grace_seconds: float = 2.0
    max_states: int = 500_000
    max_listed: int = 1000
    workers: int = default_workers()
    max_waiting: int = 32
    queue_wait: float = 5.0
    body_read_seconds: float = 10.0
    #: a request's headers must arrive within this many seconds of the
    #: connection opening (or of its first byte after a response)
    header_read_seconds: float = 5.0
    #: connections open with no request in progress; past it the oldest is closed
    max_idle_connections: int = 256
    #: connections open at once; past it uvicorn answers 503
    max_connections: int = 2048
    worker_memory_mb: int = 1024

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_nodes", "max_elements", "max_json_depth", "max_states",
                     "max_listed", "workers", "worker_memory_mb", "max_idle_connections",
                     "max_connections"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.max_waiting < 0:
            raise ValueError("max_waiting must not be negative")
        for name in ("default_timeout", "max_timeout", "queue_wait", "body_read_seconds", "header_read_seconds"):
            if not 0 < getattr(self, name) < float("inf"):
                raise ValueError(f"{name} must be positive and finite")
        if self.grace_seconds < 0:
            raise ValueError("grace_seconds must not be negative")

    def budget(self, requested: float | None) -> float:
        """Seconds a computation may take: the request's timeout, or the
        default, capped by the server's limit."""
        return min(requested if requested is not None else self.default_timeout, self.max_timeout)

    def hard_deadline(self, budget: float) -> float:
        """Seconds after which the worker running a computation is stopped."""
        return budget + self.grace_seconds + 0.25 * budget
