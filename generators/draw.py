"""The one interface the program builder draws its choices from.

The builder (`builder.py`) is written once against :class:`Draw` and runs on
two sources of choices:

* :class:`HypothesisDraw`, inside a Hypothesis ``@composite`` strategy, so that
  programs shrink (every choice is a Hypothesis choice, and each node is one
  span that the shrinker can delete whole);
* :class:`RandomDraw`, over a seeded :class:`random.Random`, so that
  `tfsem generate` and the fuzzers get the same programs for the same seed
  (``strategy.example()`` is not deterministic).

Conventions shared by both, so that shrinking means simplifying: the simplest
answer of `index` is 0 (put the simplest option first), the simplest answer of
`boolean` is False (make False mean "no more", "not this feature").
"""

from __future__ import annotations

import random
from typing import Any, Callable, Protocol, Sequence, TypeVar

T = TypeVar("T")

#: Resolution of weighted booleans in HypothesisDraw (percent).
_RESOLUTION = 100


class Draw(Protocol):
    def index(self, n: int) -> int:
        """A uniform integer in [0, n); shrinks towards 0.  n >= 1."""

    def boolean(self, p: float) -> bool:
        """True with probability p; shrinks towards False."""

    def span(self, build: Callable[["Draw"], T]) -> T:
        """Run `build` as one unit of choices (a node), deletable as a whole."""


def choice(draw: Draw, options: Sequence[T]) -> T:
    """One of `options`, uniformly; shrinks towards options[0]."""
    return options[draw.index(len(options))] if len(options) > 1 else options[0]


class RandomDraw:
    """Choices from a seeded random.Random (deterministic for a seed)."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def index(self, n: int) -> int:
        return self.rng.randrange(n) if n > 1 else 0

    def boolean(self, p: float) -> bool:
        if p <= 0:
            return False
        if p >= 1:
            return True
        return self.rng.random() < p

    def span(self, build: Callable[[Draw], T]) -> T:
        return build(self)


class HypothesisDraw:
    """Choices from Hypothesis (`draw` of an ``@composite`` strategy).

    Indices come from ``sampled_from``, which draws uniformly (``integers``
    favours its bounds and zero) and shrinks towards index 0.  A weighted
    boolean is an index in [0, 100) compared with a threshold placed so that
    the index shrinking to 0 means False.
    """

    _indices: dict[int, Any] = {}

    def __init__(self, draw: Callable[[Any], Any]):
        self._draw = draw

    @classmethod
    def _strategy(cls, n: int) -> Any:
        s = cls._indices.get(n)
        if s is None:
            from hypothesis import strategies as st
            s = cls._indices[n] = st.sampled_from(range(n))
        return s

    def index(self, n: int) -> int:
        return self._draw(self._strategy(n)) if n > 1 else 0

    def boolean(self, p: float) -> bool:
        if p <= 0:
            return False
        if p >= 1:
            return True
        threshold = round(_RESOLUTION * (1 - p))
        threshold = min(max(threshold, 1), _RESOLUTION - 1)
        return self.index(_RESOLUTION) >= threshold

    def span(self, build: Callable[[Draw], T]) -> T:
        return self._draw(_span(build))


def _span_impl(draw: Callable[[Any], Any], build: Callable[[Draw], T]) -> T:
    return build(HypothesisDraw(draw))


def _make_span() -> Callable[..., Any]:
    from hypothesis import strategies as st
    return st.composite(_span_impl)


_span_factory: Callable[..., Any] | None = None


def _span(build: Callable[[Draw], T]) -> Any:
    global _span_factory
    if _span_factory is None:
        _span_factory = _make_span()
    return _span_factory(build)
