"""Making writes durable with as few flushes as the file system needs.

The portable rule is one fsync per file written (before it is renamed into
place) and one per directory whose entries changed. Each fsync here costs a
journal commit (~0.3 ms on ext4): a 500-file commit spends 160 ms in them. On
Linux one ``syncfs(2)`` per file system does the same work in one journal commit
(65 ms for those 500 files), so batches of :data:`SYNCFS_FROM` or more use it;
smaller ones keep the per-file fsync, whose cost does not depend on what else
is waiting to be written on that file system.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

SYNCFS_FROM = 8
"""Files (or directories) in one batch from which one syncfs replaces their fsyncs."""
_UNSUPPORTED = (errno.ENOSYS, errno.EPERM, errno.EOPNOTSUPP, errno.EINVAL)
FILE_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
"""Files are flushed through a read-only descriptor (POSIX systems flush the file
whatever the descriptor's mode; the file may be read-only by now), never
following a link."""
DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_syncfs_function: Any = None
SYNC_FILE_RANGE_WRITE = 2
_sync_file_range_function: Any = None
"""``sync_file_range`` from the C library once looked up; False where there is none."""


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write less than it is given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def syncfs(fd: int) -> None:
    """Flush the whole file system holding ``fd`` (Linux); OSError when that fails."""
    global _syncfs_function
    import ctypes  # imported here: loading it costs start-up time in every other use

    if _syncfs_function is None:
        try:
            _syncfs_function = ctypes.CDLL(None, use_errno=True).syncfs
        except (OSError, AttributeError):
            raise OSError(errno.ENOSYS, "syncfs is not available") from None
        _syncfs_function.argtypes = [ctypes.c_int]
    if _syncfs_function(fd) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def start_writeback(fd: int) -> None:
    """Have the kernel start writing ``fd``'s dirty pages to the disk now, without
    waiting (``sync_file_range(2)`` with SYNC_FILE_RANGE_WRITE; Linux): a later fsync
    then waits only for what is left, and the work done meanwhile overlaps the
    disk's. Advisory: where the call is missing or fails, the fsync does it all."""
    global _sync_file_range_function
    if not sys.platform.startswith("linux"):
        return
    if _sync_file_range_function is None:
        import ctypes  # imported here, as in ``syncfs``

        try:
            function = ctypes.CDLL(None, use_errno=True).sync_file_range
        except (OSError, AttributeError):
            function = False
        else:
            function.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
        _sync_file_range_function = function
    if _sync_file_range_function:
        _sync_file_range_function(fd, 0, 0, SYNC_FILE_RANGE_WRITE)


def syncfs_supported() -> bool:
    return sys.platform.startswith("linux")


class FileFlush:
    """The files of one batch, made durable by :meth:`flush`.

    Call :meth:`written` with each file's descriptor once it is written, and
    ``flush`` once all are. Deciding at the end lets a batch whose size is not
    known in advance (the journal links most old files and copies few) take the
    cheaper way.
    """

    def __init__(self) -> None:
        self._files: list[tuple[int, str]] = []

    def written(self, fd: int, path: str) -> None:
        self._files.append((os.fstat(fd).st_dev, path))

    def flush(self) -> None:
        _make_durable(self._files, FILE_FLAGS)


def sync_directories(paths: Iterable[str]) -> None:
    """Make the entries of these directories durable (the renames, links and
    removals made in them)."""
    directories = list(dict.fromkeys(paths))
    many = len(directories) >= SYNCFS_FROM
    _make_durable([(os.stat(d).st_dev if many else 0, d) for d in directories], DIRECTORY_FLAGS)


def _make_durable(paths: list[tuple[int, str]], flags: int) -> None:
    """fsync each (device, path); for ``SYNCFS_FROM`` or more on Linux, one syncfs per
    device instead, unless syncfs is refused."""
    if len(paths) >= SYNCFS_FROM and syncfs_supported():
        try:
            for path in dict(paths).values():
                _on_descriptor(path, flags, syncfs)
            return
        except OSError as exc:
            if exc.errno not in _UNSUPPORTED:
                raise
    for _, path in paths:
        _on_descriptor(path, flags, os.fsync)


def _on_descriptor(path: str, flags: int, call: Callable[[int], None]) -> None:
    fd = os.open(path, flags)
    try:
        call(fd)
    finally:
        os.close(fd)
