"""read_window: a window of a text file's lines, reading only what the window needs.

Small files come back whole, and so do files only a whole-file decode can
judge (UTF-16, legacy code pages, binary): the caller decodes those as before.
A larger UTF-8 text file is indexed once (``line_index``) and then answered
with the bytes of the window's lines alone, so a 100-line window costs the same
at the start, the middle or the end of the file. Lines too long to be shown
whole come back cut, with their full length, so that neither a minified
bundle nor a one-line log of gigabytes crosses to the caller.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

from ..errors import ErrorCode, ToolError
from . import line_index
from .files import file_identity, open_regular, read_open, too_large

BLOCK_BYTES = 1 << 16
"""Most bytes per read while collecting a window."""
MIN_BLOCK_BYTES = 1 << 12
"""Fewest bytes per read: a few lines' worth would cost more in calls than in bytes."""
_CONTINUATION = bytes(range(0x80, 0xC0))
"""UTF-8 bytes that continue a character: a character count skips them."""


def read_window(
    path: str,
    offset: int,
    limit: int,
    line_bytes: int,
    max_bytes: int,
    whole_up_to: int,
    max_window_file_bytes: int,
    tail: int | None = None,
) -> dict[str, Any]:
    """Lines ``offset`` (0-based) on, or the last ``tail`` lines; at most ``limit``.

    Returns ``{"whole": bytes}`` for a file of at most ``whole_up_to`` bytes or
    one that is not UTF-8 text (refused over ``max_bytes``, as ``read_bytes``
    does). Otherwise ``lines`` (the window's bytes, after any byte order mark),
    ``first_line``, ``total_lines``, ``size``, ``bom``, ``newline``, ``clipped``
    (``[index in the window, characters]`` for each line whose body was longer
    than ``line_bytes`` and is cut, at a character boundary, to that) and
    ``identity`` of the file version read, or ``sha256`` of its content when
    its identity cannot be trusted yet. The window stops early rather than pass
    ``max_bytes``. UTF-8 files over ``max_window_file_bytes`` are refused.
    """
    _check_arguments(
        path,
        tail,
        offset=(offset, 0),
        limit=(limit, 1),
        line_bytes=(line_bytes, 4),  # room for one character of any size
        max_bytes=(max_bytes, 0),
        whole_up_to=(whole_up_to, 0),
        max_window_file_bytes=(max_window_file_bytes, 0),
    )
    fd, info = open_regular(path)
    try:
        if info.st_size <= whole_up_to:
            return {"whole": read_open(fd, path, info, max_bytes)}
        found = _indexed(fd, path, info, max_bytes, max_window_file_bytes)
        if isinstance(found, bytes):
            return {"whole": found}
        index, proof = found
        first = offset if tail is None else max(0, index.total_lines - tail)
        lines, clipped = window_lines(fd, index, first, limit, line_bytes, max_bytes)
        return {
            "lines": lines,
            "first_line": first,
            "total_lines": index.total_lines,
            "size": index.size,
            "bom": index.text_start > 0,
            "newline": index.newline,
            "clipped": clipped,
            **proof,
        }
    finally:
        os.close(fd)


def _indexed(
    fd: int, path: str, info: os.stat_result, max_bytes: int, max_window_file_bytes: int
) -> tuple[line_index.LineIndex, dict[str, str]] | bytes:
    """The file's line index and what proves the version read, or its bytes when it
    is no UTF-8 text (then ``max_bytes`` applies, as for any whole read)."""
    if info.st_size > max(max_bytes, max_window_file_bytes):
        raise too_large(path, info.st_size, max(max_bytes, max_window_file_bytes))
    identity = file_identity(info)
    cached = line_index.CACHE.get(identity)
    if cached is not None:
        return cached, {"identity": identity}
    settled = line_index.settled(info, time.time_ns())
    scan = None
    if info.st_size <= max_window_file_bytes:
        scan = line_index.scan_file(fd, info.st_size, digest=not settled)
    if scan is None:
        return read_open(fd, path, info, max_bytes)
    if scan.sha256 is not None:
        return scan.index, {"sha256": scan.sha256}
    line_index.CACHE.put(identity, scan.index)
    return scan.index, {"identity": identity}


def window_lines(
    fd: int,
    index: line_index.LineIndex,
    first: int,
    limit: int,
    line_bytes: int,
    max_bytes: int,
    block_size: int | None = None,
) -> tuple[bytes, list[list[int]]]:
    """The bytes of up to ``limit`` lines from 0-based ``first`` on, and the lines cut
    short (see ``read_window``); read ``block_size`` bytes at a time (by default
    about what ``limit`` average lines take)."""
    if first >= index.total_lines:
        return b"", []
    if block_size is None:
        average = index.size // index.total_lines + 1
        block_size = max(MIN_BLOCK_BYTES, min(BLOCK_BYTES, limit * average * 5 // 4))
    start = index.line_start(fd, first)
    lines: list[bytes] = []
    clipped: list[list[int]] = []
    used = 0
    for batch, chars in _batches(fd, start, index.size, line_bytes, block_size):
        batch = batch[: limit - len(lines)]
        batch_bytes = sum(map(len, batch))
        fits = used + batch_bytes <= max_bytes
        if chars is None and fits and max(map(len, batch)) <= line_bytes:
            lines.extend(batch)  # the common case: no line to cut, all of it fits
            used += batch_bytes
        else:
            for piece in batch:
                line, cut = (piece, chars) if chars is not None else _clipped(piece, line_bytes)
                if lines and used + len(line) > max_bytes:
                    return b"".join(lines), clipped
                if cut is not None:
                    clipped.append([len(lines), cut])
                lines.append(line)
                used += len(line)
        if len(lines) == limit:
            break
    return b"".join(lines), clipped


def _batches(
    fd: int, pos: int, size: int, clip: int, block_size: int
) -> Iterator[tuple[list[bytes], int | None]]:
    """The lines from byte ``pos`` on, with their endings, a block's worth at a time.

    A line whose body is still longer than ``clip`` bytes at the end of a block
    comes alone, already cut, with its length in characters (else None): it is
    streamed, never held whole. Lines that fit in a block come as they are.
    """
    pending = b""
    while pos < size:
        block = os.pread(fd, min(block_size, size - pos), pos)
        if not block:
            break
        pos += len(block)
        pieces = (pending + block if pending else block).splitlines(keepends=True)
        pending = pieces.pop()
        if pending.endswith(b"\n"):  # a CR at the end waits: the next byte may be its LF
            pieces.append(pending)
            pending = b""
        if pieces:
            yield pieces, None
        if len(pending) > clip and not pending.endswith(b"\r"):
            (cut, chars), pos = _rest_of_long_line(fd, pending, pos, size, clip, block_size)
            pending = b""
            yield [cut], chars
    if pending:
        yield [pending], None


def _clipped(line: bytes, clip: int) -> tuple[bytes, int | None]:
    ending = 2 if line.endswith(b"\r\n") else 1 if line.endswith((b"\n", b"\r")) else 0
    body = len(line) - ending
    if body <= clip:
        return line, None
    return line[: _boundary(line, clip)] + line[body:], _characters(line[:body])


def _rest_of_long_line(
    fd: int, start: bytes, pos: int, size: int, clip: int, block_size: int
) -> tuple[tuple[bytes, int], int]:
    """Finish a line whose first bytes ``start`` (no break among them) are over ``clip``:
    its cut form and length, and the offset after it. Streams; keeps only the cut."""
    head = start[: _boundary(start, clip)]
    chars = _characters(start)
    while pos < size:
        block = os.pread(fd, min(block_size, size - pos), pos)
        if not block:
            break
        found = _first_break(block)
        if found < 0:
            chars += _characters(block)
            pos += len(block)
            continue
        chars += _characters(block[:found])
        ending = b"\n"
        if block[found] == ord("\r"):
            after = block[found + 1 : found + 2]
            if not after and pos + found + 1 < size:
                after = os.pread(fd, 1, pos + found + 1)
            ending = b"\r\n" if after == b"\n" else b"\r"
        return (head + ending, chars), pos + found + len(ending)
    return (head, chars), pos


def _first_break(block: bytes) -> int:
    lf, cr = block.find(b"\n"), block.find(b"\r")
    return cr if cr >= 0 and (lf < 0 or cr < lf) else lf


def _boundary(data: bytes, at: int) -> int:
    """``at``, moved back to the start of the UTF-8 character it falls in."""
    while at > 0 and 0x80 <= data[at] < 0xC0:
        at -= 1
    return at


def _characters(data: bytes) -> int:
    return len(data.translate(None, _CONTINUATION))


def _check_arguments(path: Any, tail: Any, **counts: tuple[Any, int]) -> None:
    """The worker runs this op for whoever asks: every argument is checked, not trusted.

    ``counts`` maps each integer argument to its value and least allowed value.
    """
    if not isinstance(path, str) or not path:
        raise _invalid("path must be a non-empty string")
    for name, (value, least) in counts.items():
        _check_count(name, value, least)
    if tail is not None:
        _check_count("tail", tail, 1)
        if counts["offset"][0]:
            raise _invalid("offset and tail cannot be combined")


def _check_count(name: str, value: Any, least: int) -> None:
    if type(value) is not int or value < least:
        raise _invalid(f"{name} must be an integer of at least {least}, got {value!r}")


def _invalid(message: str) -> ToolError:
    return ToolError(ErrorCode.INVALID_ARGUMENT, f"read_window: {message}")
