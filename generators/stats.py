"""What a batch of generated programs looks like: sizes, operation kinds,
races, and how often each structural feature appears.  Used by
`tfsem generate` (its summary) and by `benchmarks/generators.py`."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from tfsem.oracle.program import ASSIGN, VAR, ControlIn, FeedControlIn, FeedIn, Program

from .builder import op_kind
from .races import has_race


def dead_nodes(p: Program) -> list[str]:
    """Nodes whose firing nobody sees: not an Assign, no outgoing edge of any
    kind, no fetched port."""
    fetched = {port.node for port in p.outputs.values()}
    return [n.name for n in p.nodes
            if n.op != ASSIGN and not p.successors[n.name] and n.name not in fetched]


def has_fan_out(p: Program) -> bool:
    """Some output port feeds two consumers or more (outputs count)."""
    uses = Counter({k: len(v) for k, v in p.consumers.items()})
    for port in p.outputs.values():
        uses[(port.node, port.port)] += 1
    return any(k >= 2 for k in uses.values())


def features(p: Program) -> set[str]:
    """The structural features p shows (names used in summaries)."""
    out = set()
    inputs = [i for n in p.nodes for i in n.inputs]
    if any(isinstance(i, ControlIn) for i in inputs):
        out.add("control edges")
    if any(isinstance(i, FeedControlIn) for i in inputs):
        out.add("input control edges")
    if any(isinstance(i, FeedIn) for i in inputs):
        out.add("feeds")
    if p.outputs:
        out.add("outputs")
    if has_fan_out(p):
        out.add("fan-out")
    if len({n.var for n in p.nodes if n.op == VAR}) >= 2:
        out.add("several variables")
    if dead_nodes(p):
        out.add("dead nodes")
    types = list(p.variables.values()) + list(p.feeds.values())
    if any(t.shape for t in types):
        out.add("1-D tensors")
    if len({t.dtype for t in types}) >= 2:
        out.add("mixed dtypes")
    if has_race(p):
        out.add("race")
    return out


@dataclass
class Summary:
    count: int = 0
    racy: int = 0
    sizes: list[int] = field(default_factory=list)
    op_kinds: Counter = field(default_factory=Counter)
    features: Counter = field(default_factory=Counter)

    def add(self, p: Program) -> None:
        self.count += 1
        self.sizes.append(len(p.nodes))
        self.op_kinds.update(op_kind(n) for n in p.nodes)
        f = features(p)
        self.features.update(f)
        self.racy += "race" in f

    @property
    def racy_share(self) -> float:
        return self.racy / self.count if self.count else 0.0

    def size_histogram(self) -> list[tuple[int, int]]:
        return sorted(Counter(self.sizes).items())

    def to_json(self) -> dict:
        s = self.sizes or [0]
        return {"count": self.count, "racy": self.racy, "racy_share": round(self.racy_share, 4),
                "nodes": {"min": min(s), "median": statistics.median(s),
                          "mean": round(statistics.mean(s), 2), "max": max(s)},
                "size_histogram": {str(k): v for k, v in self.size_histogram()},
                "op_kinds": dict(self.op_kinds.most_common()),
                "features": {k: self.features[k] for k in sorted(self.features)}}

    def lines(self) -> list[str]:
        """A short human-readable summary."""
        s = self.sizes or [0]
        total_nodes = sum(self.op_kinds.values()) or 1
        out = [f"{self.count} programs, {self.racy} racy ({100 * self.racy_share:.1f}%)",
               f"nodes per program: min {min(s)}, median {statistics.median(s):g}, "
               f"mean {statistics.mean(s):.2f}, max {max(s)}",
               "operation kinds: " + ", ".join(f"{k} {100 * v / total_nodes:.1f}%"
                                               for k, v in self.op_kinds.most_common()),
               "programs with: " + ", ".join(f"{k} {100 * self.features[k] / max(self.count, 1):.0f}%"
                                             for k in sorted(self.features) if k != "race")]
        return out


def summarize(programs: Iterable[Program]) -> Summary:
    s = Summary()
    for p in programs:
        s.add(p)
    return s
