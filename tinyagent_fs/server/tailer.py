"""Follows the audit file and announces each new event on Jupyter Server's event bus.

All reading of the file happens on one worker thread: indexing a large log at
start-up or streaming a filter through it never stalls the server's event loop,
and the index, which is not thread-safe, is only ever touched from that thread.
Announcements are made back on the event loop, where the event bus lives.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, TypeVar

from .index import AuditIndex, Row
from .query import summary

SCHEMA_PATH = Path(__file__).with_name("audit_event.schema.json")
SCHEMA_ID: str = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))["$id"]
MAX_ANNOUNCED_PER_REFRESH = 200

Result = TypeVar("Result")


class EventBus(Protocol):
    """The part of ``jupyter_events.EventLogger`` the tailer uses."""

    def register_event_schema(self, schema: Any) -> None: ...

    def emit(self, *, schema_id: str, data: dict[str, Any]) -> Any: ...


class AuditTailer:
    """Owns the index of one audit file, keeps it current and announces what is new.

    When a burst of events arrives faster than anyone could read them, only the
    last ``MAX_ANNOUNCED_PER_REFRESH`` are announced; each announcement carries
    its ``seq``, so a client that sees a gap fetches the missing events over REST.
    """

    def __init__(
        self,
        path: Path,
        bus: EventBus | None,
        *,
        interval_s: float = 0.25,
        log: logging.Logger | None = None,
    ) -> None:
        self.index = AuditIndex(path)
        self.bus = bus
        self.interval_s = interval_s
        self.log = log or logging.getLogger(__name__)
        self.announced = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tinyagent-fs-audit")
        self._task: asyncio.Task[None] | None = None
        self._ready = False
        if bus is not None:
            bus.register_event_schema(SCHEMA_PATH)

    @property
    def path(self) -> Path:
        return self.index.path

    async def run_in_index_thread(self, work: Callable[[AuditIndex], Result]) -> Result:
        """Run ``work(index)`` on the index thread after bringing the index up to date."""
        await self.refresh()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, work, self.index)

    async def refresh(self) -> int:
        """Index what was appended and announce it; returns how many events were new."""
        loop = asyncio.get_running_loop()
        fresh = await loop.run_in_executor(self._executor, self._index_new)
        for row in fresh:
            self._announce(row)
        return len(fresh)

    def _index_new(self) -> list[Row]:
        """On the index thread: the summaries of new events, none for the initial build."""
        if not self._ready:
            self.index.refresh()
            self._ready = True
            return []
        fresh: deque[tuple[int, int, Row]] = deque(maxlen=MAX_ANNOUNCED_PER_REFRESH)
        generation = self.index.generation
        self.index.refresh(lambda seq, offset, data: fresh.append((seq, offset, data)))
        if self.index.generation != generation:
            # The file was replaced: its events are not new, only its last one tells
            # clients that their sequence numbers no longer hold.
            while len(fresh) > 1:
                fresh.popleft()
        return [summary(seq, offset, data) for seq, offset, data in fresh]

    def _announce(self, row: Row) -> None:
        row["generation"] = self.index.generation
        if self.bus is None:
            return
        try:
            self.bus.emit(schema_id=SCHEMA_ID, data=row)
        except Exception as exc:  # a malformed line must not stop the tailer
            self.log.warning("tinyagent-fs: could not announce audit event %s: %s", row, exc)
        else:
            self.announced += 1

    def start(self) -> None:
        """Follow the file on the running event loop until ``stop``."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._follow())

    async def _follow(self) -> None:
        while True:
            try:
                await self.refresh()
            except Exception:  # keep following: the next write may well be readable
                self.log.exception("tinyagent-fs: cannot read audit log %s", self.path)
            await asyncio.sleep(self.interval_s)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self._executor.shutdown(wait=True)
