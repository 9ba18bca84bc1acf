"""For the lifetime tests: a command that would leave a marker, and checks that it did not."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from .sandbox_support import is_running

COMMAND_S = 2
COMMAND = f"echo started > started.txt; sleep {COMMAND_S}; touch marker"
DEATH_S = 1.0
"""How long the processes of a killed command may take to be gone: "at once", not after it ran."""


async def wait_for(path: Path, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        await asyncio.sleep(0.02)


async def assert_gone_at_once(pids: list[int]) -> None:
    deadline = time.monotonic() + DEATH_S
    while any(is_running(pid) for pid in pids) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert not [pid for pid in pids if is_running(pid)], "the command outlived its caller"


async def assert_marker_never_appears(root: Path) -> None:
    await asyncio.sleep(COMMAND_S + 2)
    assert not (root / "marker").exists(), "the command ran to its end after its caller was gone"
