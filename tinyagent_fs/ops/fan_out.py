"""Run one blocking file-system call per item, on a few threads when the calls are slow.

Creating a file usually costs ext4 some 50 microseconds, but on a file system
without a journal, inode allocation skips every inode freed in the last minute
or more, one lookup each: where files come and go, a create costs up to half a
millisecond of kernel time, spent with the GIL released, and a 500-file commit
that creates its temp files one after another waits 250 ms where two cores
could share the work. Threads only pay when calls are that slow (otherwise they
cost more CPU than they save wall time), so the calling thread times its calls
and calls in helpers once they turn out slow. Items come in groups that one
thread works through in order: creates in one folder queue on that folder's
lock, so threads creating in the same folder would only spin on each other.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

PROBE = 8
"""Calls timed together on the calling thread to see whether helpers would pay
(timed step by step until they do: the first creates in a folder can be fast and
the later ones slow)."""
SLOW_CALL = 150e-6
"""Seconds per call from which helper threads share the rest of a batch."""
HELPERS = 2
"""Threads besides the calling one: enough to keep two cores in the kernel while
one thread runs Python between its calls."""

Item = TypeVar("Item")


def run_each(call: Callable[[Item], object], groups: Sequence[Sequence[Item]]) -> None:
    """``call(item)`` for every item of every group, each group's items in order on
    one thread. When calls fail, the first failing item (in order) raises here, once
    no call runs any more; items not started by then are skipped, so the caller can
    undo what the finished calls did."""
    batch = _Batch(call, groups)
    helpers: list[threading.Thread] = []

    def pace(seconds_per_call: float) -> None:
        if not helpers and seconds_per_call >= SLOW_CALL:
            for _ in range(min(HELPERS, batch.groups_left())):
                helper = threading.Thread(target=batch.work, name="tinyagent-fs-fan-out")
                try:
                    helper.start()
                except RuntimeError:  # no thread may start (a process limit): fewer hands
                    return
                helpers.append(helper)

    try:
        batch.work(pace)
    except BaseException:  # an interrupt between calls: the helpers stop too
        batch.stop()
        raise
    finally:
        for helper in helpers:
            helper.join()
    batch.raise_first()


class _Batch(Generic[Item]):
    """Hands out the groups in order, to whichever thread asks next."""

    def __init__(self, call: Callable[[Item], object], groups: Sequence[Sequence[Item]]) -> None:
        self._call = call
        self._groups = groups
        self._taken = 0
        self._stopped = False
        self._errors: dict[tuple[int, int], BaseException] = {}
        self._lock = threading.Lock()

    def work(self, pace: Callable[[float], None] | None = None) -> None:
        """Work through groups until none is left or a call failed; ``pace`` is told
        the mean time of every ``PROBE`` calls made here."""
        made, started = 0, time.perf_counter()
        while (group := self._take()) is not None:
            for position, item in enumerate(self._groups[group]):
                if self._stopped:
                    return
                try:
                    self._call(item)
                except BaseException as exc:  # re-raised by raise_first, in the caller
                    with self._lock:
                        self._errors[group, position] = exc
                        self._stopped = True
                    return
                made += 1
                if pace is not None and made == PROBE:
                    pace((time.perf_counter() - started) / PROBE)
                    made, started = 0, time.perf_counter()

    def groups_left(self) -> int:
        with self._lock:
            return 0 if self._stopped else len(self._groups) - self._taken

    def stop(self) -> None:
        with self._lock:
            self._stopped = True

    def raise_first(self) -> None:
        if self._errors:
            raise self._errors[min(self._errors)]

    def _take(self) -> int | None:
        with self._lock:
            if self._stopped or self._taken >= len(self._groups):
                return None
            self._taken += 1
            return self._taken - 1
