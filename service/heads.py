"""What the front door and the connection protocol read in a request head:
the health request's first line, the Host header and the name in it.

Its own module, with nothing but the standard library, because the front
door runs in a process of its own (door.py) that must start fast and never
import the web framework; app.py and protocol.py read heads the same way.
"""

from __future__ import annotations

HEALTH_LINE = b"GET /v1/health HTTP/1.1\r\n"


def host_of(head: bytes) -> str | None:
    """The Host header of a request head (None: none, or more than one)."""
    hosts = [line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")[1:]
             if line[:5].lower() == b"host:"]
    return hosts[0].decode("latin-1") if len(hosts) == 1 else None


def host_name(header: str) -> str:
    """The name part of a Host header: `127.0.0.1:8787` -> `127.0.0.1`,
    `[::1]:8787` -> `[::1]`."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[:header.find("]") + 1] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header
