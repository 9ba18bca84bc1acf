"""Many new files made durable together: the fsyncs of a large commit issued at once.

One fsync after another pays one device cache flush (and often one journal
commit) each. Issued from a few threads at the same time, the kernel merges the
flushes, which makes the fsyncs of a 500-file commit several times cheaper.
Every file still gets its own fsync and the first error is raised, so what a
caller may rely on afterwards is exactly what one fsync per file gives.

The threads live only for the call: the sandbox worker forks commands, and a
fork is safest with no other thread alive.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

TOGETHER_FROM = 8
"""Fewer files than this are fsynced one by one, by whoever wrote them."""
FSYNC_THREADS = 8


def fsync_together(paths: Sequence[str]) -> None:
    """fsync every file of ``paths``; returns once all have finished, raising the
    first error (in ``paths`` order) if any failed."""
    with ThreadPoolExecutor(min(FSYNC_THREADS, len(paths)) or 1) as pool:
        for _ in pool.map(_fsync_file, paths):
            pass


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
