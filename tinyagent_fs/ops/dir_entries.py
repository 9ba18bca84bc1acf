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
ctime is older than the start of the read by more than ``RACY_NS``; a directory
changed more recently is read again each time until it has been still that long.

Only listings use this (``listing.list_tree``): what the sandbox's scans for
code-running files and secrets read is never taken from here.
"""

from __future__ import annotations

import operator
import os
import threading
import time
from collections import OrderedDict

RACY_NS = 100_000_000
"""How much older than the read a directory's ctime must be for its entries to be
kept (a coarse clock ticks every 1 to 10 ms)."""
MAX_DIRECTORIES = 64
MAX_NAMES = 200_000
"""Bounds on what is kept, least recently used dropped first (200,000 names are
about 15 MB)."""

FILE, DIRECTORY, SYMLINK, OTHER = "f", "d", "l", "o"
"""The one-letter kinds of entries: a regular file, a directory, a symbolic link,
anything else (a FIFO, a socket, a device)."""

Entries = tuple[list[str], list[str]]
"""Names sorted by code point, and the kind of each."""

_kept: OrderedDict[tuple[int, int], tuple[int, tuple[str, ...], tuple[str, ...]]] = OrderedDict()
"""(device, inode) of a directory: its ctime when read, its names and their kinds."""
_kept_names = 0
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
            return list(found[1]), list(found[2])
    names, kinds = _read(fd)
    if info.st_ctime_ns < began - RACY_NS:
        _keep(key, info.st_ctime_ns, tuple(names), tuple(kinds))
    return names, kinds


def _read(fd: int) -> Entries:
    try:
        with os.scandir(fd) as scan:
            entries = sorted(scan, key=_NAME)
    except OSError:
        return [], []
    names = [entry.name for entry in entries]
    try:
        kinds = [FILE if e.is_file(follow_symlinks=False) else _kind(e) for e in entries]
    except OSError:  # no d_type here and an lstat failed: entry by entry, then
        kinds = list(map(_kind, entries))
    return names, kinds


def _kind(entry: os.DirEntry[str]) -> str:
    """From the entry's ``d_type``; ``follow_symlinks=False`` keeps a link a link."""
    try:
        if entry.is_file(follow_symlinks=False):
            return FILE
        if entry.is_dir(follow_symlinks=False):
            return DIRECTORY
        if entry.is_symlink():
            return SYMLINK
    except OSError:
        pass
    return OTHER


def _keep(
    key: tuple[int, int], ctime_ns: int, names: tuple[str, ...], kinds: tuple[str, ...]
) -> None:
    global _kept_names
    if len(names) > MAX_NAMES:
        return
    with _lock:
        replaced = _kept.pop(key, None)
        if replaced is not None:
            _kept_names -= len(replaced[1])
        _kept[key] = (ctime_ns, names, kinds)
        _kept_names += len(names)
        while len(_kept) > MAX_DIRECTORIES or _kept_names > MAX_NAMES:
            _, (_, dropped, _) = _kept.popitem(last=False)
            _kept_names -= len(dropped)


_NAME = operator.attrgetter("name")
