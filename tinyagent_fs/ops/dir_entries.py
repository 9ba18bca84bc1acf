"""A directory's names and kinds, read once and reused while the directory is unchanged.

An agent lists the same directories again and again (the root after every step),
and reading 1,000 entries costs about 0.4 ms where an ``fstat`` costs a
microsecond. Every entry added, removed or renamed changes the directory's
ctime, and no process can set a ctime back (``utimes`` sets the mtime and moves
the ctime to now), so an unchanged ctime means unchanged entries, and an
entry's kind cannot change without its entry being replaced.

File timestamps come from a coarse clock, though: a change made in the same tick
as the read, or while it ran, can leave the ctime as it was (git's index calls
such entries "racy"). Entries are therefore remembered only when the directory's
ctime is older than the start of the read by more than the file system's tick
can be: ``RACY_NS`` for a ctime with a sub-millisecond part, ``COARSE_RACY_NS``
for one without (whole seconds on ext4 with small inodes, HFS+ or ext3; two
seconds on FAT), and read again each time until it has been still that long. A
read that failed, whole or for one entry's kind, is never remembered.

Only listings use this (``listing.list_tree``): what the sandbox's scans for
code-running files and secrets read is never taken from here.
"""

from __future__ import annotations

import operator
import os
import sys
import threading
import time
from collections import OrderedDict

RACY_NS = 100_000_000
"""How much older than the read a directory's ctime must be for its entries to be
kept (a coarse clock ticks every 1 to 10 ms)."""
COARSE_RACY_NS = 3_000_000_000
"""The same for a ctime with no sub-millisecond part: its file system may keep
whole seconds, or two (FAT)."""
MAX_DIRECTORIES = 64
MAX_BYTES = 16 * 1024 * 1024
"""Bounds on what is kept, least recently used dropped first: directories, and the
memory their names take as Python holds them."""

FILE, DIRECTORY, SYMLINK, OTHER = "f", "d", "l", "o"
"""The one-letter kinds of entries: a regular file, a directory, a symbolic link,
anything else (a FIFO, a socket, a device)."""

Entries = tuple[list[str], list[str]]
"""Names sorted by code point, and the kind of each."""

_kept: OrderedDict[tuple[int, int], tuple[int, int, tuple[str, ...], tuple[str, ...]]] = (
    OrderedDict()
)
"""(device, inode) of a directory: its ctime when read, the bytes its entries take,
its names and their kinds."""
_kept_bytes = 0
_lock = threading.Lock()


def read_entries(fd: int) -> Entries:
    """The entries of the directory open on ``fd`` (fresh lists the caller may
    change); none when it cannot be read."""
    began = time.time_ns()
    try:
        info = os.fstat(fd)
    except OSError:
        return [], []
    key = (info.st_dev, info.st_ino)
    with _lock:
        found = _kept.get(key)
        if found is not None and found[0] == info.st_ctime_ns:
            _kept.move_to_end(key)
            return list(found[2]), list(found[3])
    read = _read(fd)
    if read is None:
        return [], []
    names, kinds, whole = read
    if whole and _still_long_enough(info.st_ctime_ns, began):
        _keep(key, info.st_ctime_ns, tuple(names), tuple(kinds))
    return names, kinds


def _still_long_enough(ctime_ns: int, began: int) -> bool:
    """Whether no change after ``began`` can carry ``ctime_ns`` again (see the module)."""
    coarse = ctime_ns % 1_000_000 == 0
    return ctime_ns < began - (COARSE_RACY_NS if coarse else RACY_NS)


def _read(fd: int) -> tuple[list[str], list[str], bool] | None:
    """Names, kinds, and whether every kind was read rather than taken for OTHER after
    an error; None when the directory could not be read."""
    try:
        with os.scandir(fd) as scan:
            entries = sorted(scan, key=_NAME)
    except OSError:
        return None
    names = [entry.name for entry in entries]
    try:
        told = [FILE if e.is_file(follow_symlinks=False) else _kind(e) for e in entries]
    except OSError:  # no d_type here and an lstat failed: entry by entry, then
        told = list(map(_kind, entries))
    kinds = [OTHER if kind is None else kind for kind in told]
    return names, kinds, None not in told


def _kind(entry: os.DirEntry[str]) -> str | None:
    """From the entry's ``d_type``; ``follow_symlinks=False`` keeps a link a link.
    None when it cannot be told (no ``d_type`` and its lstat failed)."""
    try:
        if entry.is_file(follow_symlinks=False):
            return FILE
        if entry.is_dir(follow_symlinks=False):
            return DIRECTORY
        if entry.is_symlink():
            return SYMLINK
    except OSError:
        return None
    return OTHER


def _keep(
    key: tuple[int, int], ctime_ns: int, names: tuple[str, ...], kinds: tuple[str, ...]
) -> None:
    global _kept_bytes
    size = sys.getsizeof(names) + sys.getsizeof(kinds) + sum(map(sys.getsizeof, names))
    if size > MAX_BYTES:
        return
    with _lock:
        replaced = _kept.pop(key, None)
        if replaced is not None:
            _kept_bytes -= replaced[1]
        _kept[key] = (ctime_ns, size, names, kinds)
        _kept_bytes += size
        while len(_kept) > MAX_DIRECTORIES or _kept_bytes > MAX_BYTES:
            _, (_, dropped, _, _) = _kept.popitem(last=False)
            _kept_bytes -= dropped


_NAME = operator.attrgetter("name")
