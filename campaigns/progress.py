"""What a campaign shows while it runs: a live table on a terminal, plain log
lines otherwise (a CI log, a file)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TextIO

from .findings import KINDS


@dataclass
class PassProgress:
    programs: int = 0
    seconds: float = 0.0
    findings: dict[str, int] = field(default_factory=lambda: {k: 0 for k in KINDS})
    new: int = 0

    @property
    def rate(self) -> float:
        return self.programs / self.seconds if self.seconds else 0.0


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60:02d}:{seconds % 60:02d}" if seconds < 3600 else \
        f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _kinds(found: dict[str, int]) -> str:
    parts = [f"{k} {n}" for k, n in found.items() if n]
    return ", ".join(parts) if parts else "-"


class Progress:
    """Per pass: programs tested, programs per second (per worker-second),
    distinct findings by kind.  `live` redraws a table in place (a TTY);
    otherwise each finding is one log line and a summary line per pass is
    written every `interval` seconds."""

    def __init__(self, passes: list[str], budget: float, workers: int, stream: TextIO | None = None,
                 live: bool | None = None, interval: float | None = None, title: str = "tfsem fuzz"):
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.interval = interval if interval is not None else (0.5 if self.live else 30.0)
        self.passes = {p: PassProgress() for p in passes}
        self.budget = budget
        self.workers = workers
        self.started = time.monotonic()
        self._last = 0.0
        self._drawn = 0
        self.notes: list[str] = []
        self.title = title

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def _log(self, text: str) -> None:
        if self.live:
            self.notes = (self.notes + [text])[-6:]
            self.draw(force=True)
        else:
            print(f"[{self.elapsed():7.1f}s] {text}", file=self.stream, flush=True)

    # -- events ---------------------------------------------------------------------

    def stats(self, pass_name: str, delta: dict) -> None:
        p = self.passes.setdefault(pass_name, PassProgress())
        p.programs += int(delta.get("programs", 0))
        p.seconds += float(delta.get("seconds", 0.0))

    def finding(self, pass_name: str, kind: str, seen_as: str, message: str, size: int,
                finding_id: int, expected: bool) -> None:
        p = self.passes.setdefault(pass_name, PassProgress())
        if seen_as == "repeat":
            return
        p.findings[kind] = p.findings.get(kind, 0) + 1
        if seen_as == "new":
            p.new += 1
        tag = "expected" if expected else "BUG"
        ref = f"finding #{finding_id} {seen_as}" if finding_id else "found"
        self._log(f"{ref} {kind} in {pass_name} ({tag}): {message} "
                  f"[{size} nodes]")

    def note(self, text: str) -> None:
        self._log(text)

    # -- drawing --------------------------------------------------------------------

    def lines(self) -> list[str]:
        total = sum(sum(p.findings.values()) for p in self.passes.values())
        new = sum(p.new for p in self.passes.values())
        head = (f"{self.title}  {_clock(self.elapsed())} / {_clock(self.budget)}  "
                f"{self.workers} worker{'s' if self.workers != 1 else ''}  "
                f"{total} finding{'s' if total != 1 else ''} ({new} new)")
        width = max([len(n) for n in self.passes] + [4])
        rows = [head, f"  {'pass':<{width}}  {'programs':>9}  {'prog/s':>7}  findings"]
        for name, p in self.passes.items():
            rows.append(f"  {name:<{width}}  {p.programs:>9}  {p.rate:>7.1f}  {_kinds(p.findings)}")
        return rows

    def draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        if self.live:
            out = self.lines() + [f"  {n}" for n in self.notes]
            if self._drawn:
                self.stream.write(f"\x1b[{self._drawn}F")
            self.stream.write("".join(f"\x1b[2K{line}\n" for line in out))
            self.stream.flush()
            self._drawn = len(out)
        elif not force:
            left = _clock(self.budget - self.elapsed())
            for name, p in self.passes.items():
                if p.programs:
                    print(f"[{self.elapsed():7.1f}s] {name}: {p.programs} programs "
                          f"({p.rate:.1f}/s per worker), findings: {_kinds(p.findings)}, "
                          f"{left} left", file=self.stream, flush=True)

    def close(self) -> None:
        if self.live:
            self.draw(force=True)
