"""A sandbox provider taking one primitive at a time from the event loop.

The server runs many tool calls at once; the primitives of a sandboxed provider
reach it one after another anyway (its worker answers one request at a time).
Queueing them here, on the event loop, keeps that order without a thread ever
waiting for the provider's lock, so every quick read can take the provider's
inline path instead of a hop to its thread and back.

A cancelled tool call does not stop its primitive, which goes on in the
sandbox: the next primitive waits for it to end, so the order still holds.
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
        self._abandoned: asyncio.Future[Any] | None = None

    async def call(self, op: str, **kwargs: Any) -> Any:
        async with self._turn:
            if self._abandoned is not None:
                await asyncio.wait([self._abandoned])
                self._abandoned = None
            work = asyncio.ensure_future(self.inner.call(op, **kwargs))
            try:
                return await asyncio.shield(work)
            except asyncio.CancelledError:
                self._abandoned = work
                work.add_done_callback(_ignore_outcome)
                raise

    def bind_roots(self, roots: Iterable[str]) -> None:
        self.inner.bind_roots(roots)

    async def close(self) -> None:
        await self.inner.close()

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()


def _ignore_outcome(work: asyncio.Future[Any]) -> None:
    """Nobody waits for an abandoned primitive's answer: retrieve it so none is reported."""
    if not work.cancelled():
        work.exception()
