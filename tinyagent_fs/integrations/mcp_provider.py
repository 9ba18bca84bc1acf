"""A sandbox provider taking one primitive at a time from the event loop.

The server runs many tool calls at once; the primitives of a sandboxed provider
reach it one after another anyway (its worker answers one request at a time).
Queueing them here, on the event loop, keeps that order without a thread ever
waiting: the Linux provider's own queue is a single thread that can deadlock
when a call blocked on its lock sits in front of the read that holds it (a
read whose answer took longer than its inline wait was handed to that thread
after the blocked call). With one call at a time, every quick read takes the
inline path and the thread only ever runs work that holds the lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from ..providers.base import Provider


class OneCallAtATime(Provider):
    """``inner`` with its primitives queued in arrival order on the event loop."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.name = inner.name
        self.kernel_enforced = inner.kernel_enforced
        self._turn = asyncio.Lock()

    async def call(self, op: str, **kwargs: Any) -> Any:
        async with self._turn:
            return await self.inner.call(op, **kwargs)

    def bind_roots(self, roots: Iterable[str]) -> None:
        self.inner.bind_roots(roots)

    async def close(self) -> None:
        async with self._turn:
            await self.inner.close()

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()
