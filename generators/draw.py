"""The one interface the program builder draws its choices from.

The builder (`builder.py`) is written once against :class:`Draw` and runs on
two sources of choices:

* :class:`HypothesisDraw`, inside a Hypothesis ``@composite`` strategy, so that
  programs shrink (every choice is a Hypothesis choice, and each node is one
  span);
* :class:`RandomDraw`, over a seeded :class:`random.Random`, so that
  `tfsem generate` and the fuzzers get the same programs for the same seed
  (``strategy.example()`` is not deterministic).

Shrinking conventions: the simplest answer of `index` is 0, so put the
simplest option first and make a flag's 0 mean "no", "not this".

Deleting a node: Hypothesis's shrinker replaces a span by its simplest
choices and then splices the rest back after what the test actually read
(`try_trivial_spans`).  So the builder makes the simplest first choice of a
node's span mean "skip this node": the span shrinks to that one choice and
every later node stays as it was.  Choices of one node are kept aligned as the
program changes (an index is always one choice, even among one option).
"""

from __future__ import annotations

import random
from typing import Any, Callable, Protocol, Sequence, TypeVar

T = TypeVar("T")

#: Resolution of weighted booleans (percent).
PERCENT = 100


class Draw(Protocol):
    def index(self, n: int) -> int:
        """A uniform integer in [0, n); one choice, shrinking towards 0.
        Keep n small (Hypothesis draws uniformly up to a few hundred)."""

    def span(self, build: Callable[["Draw"], T]) -> T:
        """Run `build` as one unit of choices (a node)."""


def flag(digit: int, p: float, resolution: int = PERCENT) -> bool:
    """A digit in [0, resolution) read as a boolean that is True with
    probability p (rounded to the resolution); digit 0 is False unless p >= 1."""
    if p <= 0 or p >= 1:
        return p >= 1
    threshold = min(max(round(resolution * (1 - p)), 1), resolution - 1)
    return digit >= threshold


def boolean(d: Draw, p: float, resolution: int = PERCENT) -> bool:
    """A weighted boolean as one choice (shrinks to False)."""
    return flag(d.index(resolution), p, resolution)


def choice(d: Draw, options: Sequence[T]) -> T:
    """One of `options`, uniformly; one choice, shrinking towards options[0]."""
    return options[d.index(len(options))]


class RandomDraw:
    """Choices from a seeded random.Random (deterministic for a seed)."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def index(self, n: int) -> int:
        return self.rng.randrange(n) if n > 1 else 0

    def span(self, build: Callable[[Draw], T]) -> T:
        return build(self)


class HypothesisDraw:
    """Choices from Hypothesis (the `draw` of an ``@composite`` strategy).

    An index in [0, n) is one ``sampled_from(range(max(n, 2)))`` choice
    (modulo n): ``sampled_from`` draws uniformly, where ``integers`` favours
    zero, its bounds and small magnitudes; with at least two options it is a
    real choice even when n is 1, which keeps later choices aligned.
    """

    _ranges: dict[int, Any] = {}

    def __init__(self, draw: Callable[[Any], Any]):
        self._draw = draw

    def index(self, n: int) -> int:
        m = max(n, 2)
        s = self._ranges.get(m)
        if s is None:
            from hypothesis import strategies as st
            s = self._ranges[m] = st.sampled_from(range(m))
        return self._draw(s) % n

    def span(self, build: Callable[[Draw], T]) -> T:
        return self._draw(_span(build))


def _span_impl(draw: Callable[[Any], Any], build: Callable[[Draw], T]) -> T:
    return build(HypothesisDraw(draw))


_span_factory: Callable[..., Any] | None = None


def _span(build: Callable[[Draw], T]) -> Any:
    global _span_factory
    if _span_factory is None:
        from hypothesis import strategies as st
        _span_factory = st.composite(_span_impl)
    return _span_factory(build)
