"""The bench runner's statistics on real timings of two tiny callables (no mocked clock)."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "bench"))

from figure import Kind, Target, plain
from rounds import Rounds, alternate


def busy(seconds: float) -> None:
    """Spin rather than sleep: a sleep's wake-up lateness would blur the 2:1 below."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def test_the_ratio_is_the_median_of_per_round_ratios() -> None:
    """Ours spins twice as long as the baseline; other load on the machine may move the
    ratio and its spread, never what they are computed from."""
    result = await alternate(plain(lambda: busy(0.004)), plain(lambda: busy(0.002)), 7, 5)
    assert len(result.ours) == len(result.base) == 7
    per_round = [mine / theirs for mine, theirs in zip(result.ours, result.base, strict=True)]
    assert result.ratio == statistics.median(per_round)
    assert 1 < result.ratio < 6  # 2 on a quiet machine
    spread = (max(per_round) - min(per_round)) / result.ratio
    assert result.spread == pytest.approx(spread) and result.noisy == (spread > 0.3)
    assert Target("at the ratio", Kind.RATIO, result.ratio).met(result)
    assert not Target("just under it", Kind.RATIO, result.ratio * 0.99).met(result)
    differences = [mine - theirs for mine, theirs in zip(result.ours, result.base, strict=True)]
    assert result.overhead == statistics.median(differences)


async def test_a_figure_whose_rounds_spread_more_than_30_percent_is_noisy() -> None:
    """Ours takes 2 ms in some rounds and 6 ms in others (a turn is 5 calls, so the
    cost changes per turn); the baseline stays at 2 ms."""
    calls = iter(range(1000))

    def uneven() -> None:
        busy(0.006 if next(calls) // 5 % 2 else 0.002)

    result = await alternate(plain(uneven), plain(lambda: busy(0.002)), 7, 5)
    assert max(result.ratios) > 2 and min(result.ratios) < 1.5
    assert result.spread > 0.3 and result.noisy


def test_spread_is_max_minus_min_over_the_median() -> None:
    rounds = Rounds(ours=[2.0, 2.2, 2.8], base=[1.0, 1.0, 1.0])
    assert rounds.ratio == 2.2
    assert rounds.spread == pytest.approx(0.8 / 2.2)
    assert rounds.noisy
