"""A figure of the summary table: what is timed, against which baseline, and its target."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from rounds import Rounds, Side

from tinyagent_fs import FileTools, ToolResult


class Kind(Enum):
    RATIO = "ratio"
    """The median per-round ratio at or below ``limit``."""
    ABSOLUTE = "absolute"
    """Our median per-round time below ``limit`` seconds (the baseline is context)."""
    OVERHEAD = "overhead"
    """The median per-round difference, ours - baseline, at or below ``limit`` seconds."""


@dataclass(frozen=True)
class Target:
    label: str
    kind: Kind
    limit: float

    def met(self, rounds: Rounds) -> bool:
        if self.kind is Kind.RATIO:
            return rounds.ratio <= self.limit
        if self.kind is Kind.OVERHEAD:
            return rounds.overhead <= self.limit
        return statistics.median(rounds.ours) < self.limit


def at_most(ratio: float) -> Target:
    return Target(f"<= {ratio:g}x", Kind.RATIO, ratio)


Prepare = Callable[[Path], AbstractAsyncContextManager[tuple[Side, Side]]]
"""Builds a figure's files under a fresh folder and yields (ours, baseline)."""


@dataclass(frozen=True)
class Figure:
    key: str
    """Dotted and unique (``local.write4k``); ``--only`` takes any of its prefixes."""
    name: str
    baseline: Callable[..., object] | str
    """A function of ``baselines`` (or, for a server, its description there)."""
    prepare: Prepare
    target: Target | None = None
    calls: int = 15
    """Calls per side and turn; the turn counts their median."""


def baseline_name(baseline: Callable[..., object] | str) -> str:
    if isinstance(baseline, str):
        return "reference_server"
    return getattr(baseline, "__name__", "?")


def plain(action: Callable[[], object]) -> Side:
    """A side that times one call of a plain function."""

    async def side() -> float:
        began = time.perf_counter()
        action()
        return time.perf_counter() - began

    return side


def tool(fs: FileTools, call: Callable[[], Awaitable[ToolResult]]) -> Side:
    """A side that times one tool call as an agent makes it.

    What the toolkit leaves to a background thread (the undo journal's committed
    mark) is finished after the call, untimed, so that it never runs while the
    baseline is timed. A failed call stops the run: the figure would otherwise
    time an error message.
    """

    async def side() -> float:
        fs.new_round()
        began = time.perf_counter()
        result = await call()
        elapsed = time.perf_counter() - began
        if fs.journal is not None:
            fs.journal.settle()
        if not result.ok:
            raise SystemExit(f"tool call failed during the benchmark: {result.text}")
        return elapsed

    return side


def source_lines(count: int) -> list[str]:
    """Deterministic, unique lines of about 52 bytes, like plain source code."""
    return [
        f"    value_{i:06d} = compute({i * 7919 % 100_003:6d}, 'abcdefghijklm')\n"
        for i in range(count)
    ]


def mount_type(path: Path) -> str:
    """The file system type under ``path``: fsync and rename costs depend on it."""
    try:
        mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return "unknown"
    target = os.path.realpath(path) + "/"
    under = [m for m in mounts if len(m) > 2 and target.startswith(m[1].rstrip("/") + "/")]
    return max(under, key=lambda m: len(m[1]))[2] if under else "unknown"
