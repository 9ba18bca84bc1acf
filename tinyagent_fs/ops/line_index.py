"""Where the lines of a large UTF-8 file start, found once, so that each window is a seek.

A window of a 6 MB file needs only its own bytes, but its line numbers and the
"file continues" marker need the file's line count, and only the whole file
tells whether it is UTF-8 throughout (one stray byte near the end makes
``decode_text`` pick a legacy code page for all of it). So the first window of
a file scans it once in C (``bytes.count``, ``isascii``, a strict incremental
decode of the chunks that are not ASCII) and never builds a ``str`` of it. The
scan keeps a checkpoint every ``STEP`` bytes; a window then reads from the
checkpoint before it: at most ``STEP`` bytes plus the window itself.

Indexes are cached by ``file_identity``, which every write changes as long as
the change time moves on. A write in the same clock tick as the previous one
may leave it where it was (timestamps are coarse; FAT's have 2 s), so a file
changed less than ``SETTLE_NS`` ago is neither cached nor trusted by identity:
it is scanned on every read and its content hashed, as git treats a "racily
clean" file.
"""

from __future__ import annotations

import bisect
import codecs
import hashlib
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass

from ..errors import ErrorCode, ToolError
from ..text.codec import SNIFF_BYTES, dominant_newline, first_ending_index, utf8_text_start

STEP = 1 << 14
"""Bytes between checkpoints: the most a window reads before its first line."""
READ_BYTES = 1 << 20
"""Bytes per read while scanning."""
SETTLE_NS = 2_000_000_000
"""How long ago a file must have changed for its identity to stand for its content."""
CACHE_FILES = 64
"""Indexes kept; one is a few hundred bytes per MB of file."""


@dataclass(frozen=True)
class LineIndex:
    """Line count, dominant ending and checkpoints of one version of a UTF-8 text file.

    ``breaks_before[i]`` is the number of line breaks that end before byte
    ``marks[i]``; a break ends at its LF, or at a CR not followed by LF.
    """

    size: int
    text_start: int
    total_lines: int
    newline: str
    marks: list[int]
    breaks_before: list[int]

    def line_start(self, fd: int, line: int) -> int:
        """The byte offset of 0-based ``line``: its checkpoint, then the breaks after it."""
        if line == 0:
            return self.text_start
        wanted = line - 1  # the break (0-based) that ends the line before it
        at = bisect.bisect_right(self.breaks_before, wanted) - 1
        mark = self.marks[at]
        # The break lies before the next checkpoint; one byte more settles a CR there.
        end = min(self.marks[at + 1] + 1, self.size) if at + 1 < len(self.marks) else self.size
        pieces = os.pread(fd, end - mark, mark).splitlines(keepends=True)
        passed = wanted - self.breaks_before[at] + 1
        if len(pieces) < passed or not pieces[passed - 1].endswith((b"\n", b"\r")):
            raise changed_while_read()
        return mark + sum(map(len, pieces[:passed]))


@dataclass(frozen=True)
class Scan:
    index: LineIndex
    sha256: str | None
    """The content hash, when asked for (a file that changed too recently to cache)."""


def scan_file(
    fd: int, size: int, *, digest: bool, step: int = STEP, read_bytes: int = READ_BYTES
) -> Scan | None:
    """The index of the first ``size`` bytes of ``fd``, or None if they are not text
    that ``decode_text`` would call UTF-8. Checkpoints fall on multiples of ``step``."""
    text_start = utf8_text_start(os.pread(fd, min(SNIFF_BYTES, size), 0))
    if text_start is None:
        return None
    hasher = hashlib.sha256() if digest else None
    decoder = codecs.getincrementaldecoder("utf-8")()
    counter = _BreakCounter()
    marks, breaks_before = [0], [0]
    last = b""
    pos = 0
    while pos < size:
        chunk = os.pread(fd, min(read_bytes, size - pos), pos)
        if not chunk:
            raise changed_while_read()
        if hasher is not None:
            hasher.update(chunk)
        if not chunk.isascii() or decoder.getstate()[0]:
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError:
                return None
        end = pos + len(chunk)
        following = os.pread(fd, 1, end) if end < size and chunk.endswith(b"\r") else b""
        start = pos
        while start < end:
            stop = min((start // step + 1) * step, end)
            counter.count(chunk, start - pos, stop - pos, following)
            if stop % step == 0 and stop < size:
                marks.append(stop)
                breaks_before.append(counter.breaks)
            start = stop
        last, pos = chunk[-1:], end
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return None
    unterminated = size > text_start and last not in (b"\n", b"\r")
    index = LineIndex(
        size=size,
        text_start=text_start,
        total_lines=counter.breaks + unterminated,
        newline=counter.newline(fd, size),
        marks=marks,
        breaks_before=breaks_before,
    )
    return Scan(index, hasher.hexdigest() if hasher is not None else None)


def settled(info: os.stat_result, now_ns: int) -> bool:
    """Whether any later write is sure to change this identity (see the module docstring)."""
    return info.st_ctime_ns > 0 and now_ns - info.st_ctime_ns >= SETTLE_NS


class IndexCache:
    """The most recently used indexes, by file identity; safe to share between threads."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, LineIndex] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, identity: str) -> LineIndex | None:
        with self._lock:
            index = self._entries.get(identity)
            if index is not None:
                self._entries.move_to_end(identity)
            return index

    def put(self, identity: str, index: LineIndex) -> None:
        with self._lock:
            self._entries[identity] = index
            self._entries.move_to_end(identity)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)


CACHE = IndexCache(CACHE_FILES)


def changed_while_read() -> ToolError:
    return ToolError(
        ErrorCode.IO_ERROR,
        "the file changed while it was being read",
        "read it again",
    )


class _BreakCounter:
    """Line breaks and line endings by kind, counted a byte range at a time."""

    def __init__(self) -> None:
        self.breaks = 0
        self.lf = 0
        self.cr = 0
        self.crlf = 0

    def count(self, chunk: bytes, start: int, stop: int, following: bytes) -> None:
        """Count ``chunk[start:stop]``; ``following`` is the byte after ``chunk``, if any.

        A CRLF counts where its CR is, so a pair split by ``stop`` is counted once.
        """
        lf = chunk.count(b"\n", start, stop)
        cr = crlf = 0
        if chunk.find(b"\r", start, stop) >= 0:
            cr = chunk.count(b"\r", start, stop)
            if stop < len(chunk):
                crlf = chunk.count(b"\r\n", start, stop + 1)
            else:
                crlf = chunk.count(b"\r\n", start, stop)
                crlf += chunk[stop - 1 : stop] == b"\r" and following == b"\n"
        self.breaks += lf + cr - crlf
        self.lf += lf
        self.cr += cr
        self.crlf += crlf

    def newline(self, fd: int, size: int) -> str:
        """The file's dominant line ending, by ``text.dominant_newline``'s rule."""
        if not self.cr:
            return "\n"
        counts = {"\n": self.lf - self.crlf, "\r\n": self.crlf, "\r": self.cr - self.crlf}
        return dominant_newline(counts, lambda ending: _first_ending(fd, size, ending))


def _first_ending(fd: int, size: int, ending: str) -> int:
    """Where ``ending`` first occurs, reading ever longer starts of the file.

    Only needed when two kinds of ending are equally frequent, which is rare; a
    find is certain once it is not the last byte read (a CR there may be half a
    CRLF) or the whole file has been read.
    """
    length = STEP
    while True:
        start = os.pread(fd, min(length, size), 0).decode("latin-1")
        found = first_ending_index(start, ending)
        if len(start) >= size or found < len(start) - 1:
            return found
        length *= 4
