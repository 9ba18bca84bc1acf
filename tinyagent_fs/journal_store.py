"""Keeping a file's old content for undo without copying it when that can be avoided.

A commit replaces a path by renaming a new file over it, so the old inode is
never written again through that path: a hard link to it keeps the old bytes
for the price of a directory entry. Where the journal sits on another file
system, a reflink (``FICLONE``: btrfs, XFS, bcachefs) shares the blocks instead;
only where neither works are the bytes written out.

A link is made only to the inode that was opened and checked (a regular file of
the expected size, with no other name that could write it later); the bytes a
link or reflink holds are still verified against the signed digest whenever
they are read back, because an open descriptor could write them afterwards.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

from .durable import FileFlush

FICLONE = 0x40049409
"""ioctl(2) that makes one file share another's blocks."""


def keep_old_content(source: Path, target: Path, data: bytes, flush: FileFlush | None) -> None:
    """Keep ``data``, the current content of ``source``, as ``target``: a hard link
    when ``source`` is still a regular file of ``len(data)`` bytes with no other
    name, else a reflink of it, else a copy of ``data``. ``flush`` (if any) gets
    every file written, for the caller to make durable."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        write_new_file(target, data, flush)
        return
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_size == len(data):
            if info.st_nlink == 1 and _linked(source, target, info):
                return
            if _reflinked(fd, target, flush):
                return
    finally:
        os.close(fd)
    write_new_file(target, data, flush)


def drop_cached(path: Path) -> None:
    """Let the kernel drop ``path``'s cached pages: a kept old content is read again
    only by undo. Where the journal links the old inode, that inode would otherwise
    keep its pages cached after the commit replaced it, and the next write would
    need fresh pages instead of reusing them (on a virtual machine, where fresh
    pages are expensive, 2 ms for 1 MB). Advisory: never fails."""
    if not hasattr(os, "posix_fadvise"):
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_new_file(path: Path, data: bytes, flush: FileFlush | None) -> None:
    """Create ``path`` (private, never following or replacing anything) with ``data``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    try:
        write_all(fd, data)
        if flush is not None:
            flush.written(fd, str(path))
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _linked(source: Path, target: Path, opened: os.stat_result) -> bool:
    """Hard-link ``source`` as ``target`` if it still is the inode that was opened."""
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:  # another file system, a link limit, protected_hardlinks: not linked
        return False
    info = os.lstat(target)
    if (info.st_dev, info.st_ino) == (opened.st_dev, opened.st_ino):
        return True
    os.unlink(target)  # the path was swapped between the open and the link
    return False


def _reflinked(fd: int, target: Path, flush: FileFlush | None) -> bool:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        out = os.open(target, flags, 0o600)
    except OSError:
        return False
    try:
        fcntl.ioctl(out, FICLONE, fd)
        if flush is not None:
            flush.written(out, str(target))
        return True
    except OSError:  # no reflinks here (ext4, tmpfs, another file system): copy instead
        os.unlink(target)
        return False
    finally:
        os.close(out)
