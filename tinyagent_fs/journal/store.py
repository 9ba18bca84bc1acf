"""Keeping a file's old content for undo without copying it when that can be avoided.

A commit replaces a path by renaming a new file over it, so the old inode is
never written again through that path: a hard link to it keeps the old bytes
for the price of a directory entry. Where the journal sits on another file
system, a reflink (``FICLONE``: btrfs, XFS, bcachefs) shares the blocks instead;
only where neither works are the bytes written out.

A link is kept only when the inode it names, looked at through the link itself
(a name in the private journal folder nobody else can swap), is a regular file
of the expected size with no other name than the one it was linked from, which
could write it later; the bytes a link or reflink holds are still verified
against the signed digest whenever they are read back, because an open
descriptor could write them afterwards.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

from .._runtime.durable import FileFlush, write_all

FICLONE = 0x40049409
"""ioctl(2) that makes one file share another's blocks."""


def keep_old_content(
    source: str | Path, target: str | Path, data: bytes, flush: FileFlush | None
) -> None:
    """Keep ``data``, the current content of ``source``, as ``target``: a hard link
    when ``source`` is still a regular file of ``len(data)`` bytes with no other
    name, else a reflink of it, else a copy of ``data``. ``flush`` (if any) gets
    every file written, for the caller to make durable."""
    if _linked(source, target, len(data)):
        return
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        write_new_file(target, data, flush)
        return
    try:
        info = os.fstat(fd)
        regular = stat.S_ISREG(info.st_mode) and info.st_size == len(data)
        if regular and _reflinked(fd, target, flush):
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


def write_new_file(path: str | Path, data: bytes, flush: FileFlush | None) -> None:
    """Create ``path`` (private, never following or replacing anything) with ``data``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    try:
        write_all(fd, data)
        if flush is not None:
            flush.written(fd, str(path))
    finally:
        os.close(fd)


def _linked(source: str | Path, target: str | Path, size: int) -> bool:
    """Hard-link ``source`` as ``target`` if it is a regular file (not a symlink) of
    ``size`` bytes that had no other name; the link is looked at, not ``source``,
    so what is kept is what was checked, however ``source`` changes meanwhile."""
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:  # missing, another file system, a link limit, protected_hardlinks
        return False
    info = os.lstat(target)
    if stat.S_ISREG(info.st_mode) and info.st_size == size and info.st_nlink == 2:
        return True
    os.unlink(target)  # a symlink, a swapped or grown file, a file with other names
    return False


def _reflinked(fd: int, target: str | Path, flush: FileFlush | None) -> bool:
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
