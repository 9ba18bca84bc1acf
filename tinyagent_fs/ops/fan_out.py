"""Run one blocking file-system call per item, on a few threads for a big batch.

Creating a file costs ext4 about half a millisecond of kernel time (inode
allocation), spent with the GIL released: a 500-file commit that creates its
temp files one after another takes 250 ms for that alone, where two cores could
share the work. Small batches stay on the calling thread (starting threads
would cost more than it saves, and one-file writes are the common case).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

FAN_OUT_FROM = 8
"""Items in one batch from which helper threads share the work."""
HELPERS = 2
"""Threads besides the calling one: enough to keep two cores in the kernel while
one thread runs Python between its calls."""

Item = TypeVar("Item")


def run_each(call: Callable[[Item], object], items: Sequence[Item]) -> None:
    """``call(item)`` for every item. When calls fail, the first failing item (in
    order) raises here, once no call runs any more; items not started by then are
    skipped, so the caller can undo what the finished calls did."""
    batch = _Batch(call, items)
    helpers: list[threading.Thread] = []
    if len(items) >= FAN_OUT_FROM:
        for _ in range(HELPERS):
            helper = threading.Thread(target=batch.work, name="tinyagent-fs-fan-out", daemon=True)
            try:
                helper.start()
            except RuntimeError:  # no thread may start (a process limit): fewer hands
                break
            helpers.append(helper)
    try:
        batch.work()
    finally:
        batch.stop()
        for helper in helpers:
            helper.join()
    batch.raise_first()


class _Batch(Generic[Item]):
    """Hands out the items in order, to whichever thread asks next."""

    def __init__(self, call: Callable[[Item], object], items: Sequence[Item]) -> None:
        self._call = call
        self._items = items
        self._next = 0
        self._stopped = False
        self._errors: dict[int, BaseException] = {}
        self._lock = threading.Lock()

    def work(self) -> None:
        while (index := self._take()) is not None:
            try:
                self._call(self._items[index])
            except BaseException as exc:  # re-raised by raise_first, in the caller
                with self._lock:
                    self._errors[index] = exc
                    self._stopped = True

    def stop(self) -> None:
        with self._lock:
            self._stopped = True

    def raise_first(self) -> None:
        if self._errors:
            raise self._errors[min(self._errors)]

    def _take(self) -> int | None:
        with self._lock:
            if self._stopped or self._next >= len(self._items):
                return None
            self._next += 1
            return self._next - 1
