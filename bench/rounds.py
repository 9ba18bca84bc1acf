"""Rounds in alternating turns and what they let a figure claim.

Other work comes and goes on a shared machine; taking ours and the baseline in
turns (who goes first alternating each round) lets both see the same load, so a
per-round ratio holds even while absolute times drift. The figure is the median
of those ratios; when they spread more than ``NOISY_SPREAD`` the figure is
marked noisy instead of being claimed.
"""

from __future__ import annotations

import gc
import statistics
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

Side = Callable[[], Awaitable[float]]
"""One call of one side; returns the seconds it took (the side times itself, so it
can leave set-up and clean-up untimed)."""
NOISY_SPREAD = 0.30
MIN_ROUNDS = 7


@dataclass(frozen=True)
class Rounds:
    """Per-round times (the median of a turn's calls), ours and the baseline's."""

    ours: list[float]
    base: list[float]

    @property
    def ratios(self) -> list[float]:
        return [mine / theirs for mine, theirs in zip(self.ours, self.base, strict=True)]

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def spread(self) -> float:
        """(max - min) / median of the per-round ratios."""
        ratios = self.ratios
        return (max(ratios) - min(ratios)) / statistics.median(ratios)

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD

    @property
    def overhead(self) -> float:
        """Median of the per-round differences, ours - baseline, in seconds."""
        return statistics.median(m - t for m, t in zip(self.ours, self.base, strict=True))


async def turn(side: Side, calls: int) -> float:
    return statistics.median([await side() for _ in range(calls)])


async def alternate(ours: Side, base: Side, rounds: int, calls: int, warmup: int = 1) -> Rounds:
    """``rounds`` rounds (after ``warmup`` untimed ones), each a turn of ``calls`` calls
    per side, ours first in even rounds and the baseline first in odd ones."""
    if rounds < 1 or calls < 1:
        raise ValueError("at least one round of one call")
    gc.collect()
    mine: list[float] = []
    theirs: list[float] = []
    for index in range(warmup + rounds):
        if index % 2 == 0:
            a = await turn(ours, calls)
            b = await turn(base, calls)
        else:
            b = await turn(base, calls)
            a = await turn(ours, calls)
        if index >= warmup:
            mine.append(a)
            theirs.append(b)
    return Rounds(mine, theirs)
