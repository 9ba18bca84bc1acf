"""Finding lines around a position without splitting the whole text.

Lines are those of ``text.split_lines`` (breaks at \\n, \\r\\n and \\r). Splitting a
5 MB file into 100,000 lines takes 10 ms; a diff or a result that shows a few
lines around an edit only needs a window, found with ``find``/``rfind`` (memchr
speed) and split on its own.
"""

from __future__ import annotations

from .codec import split_lines

FIRST_WINDOW = 256
"""Characters split first when looking for a few lines; the window grows fourfold."""


def starts_line(text: str, position: int) -> bool:
    """Whether a line starts at ``position`` (the end counts after a final line break)."""
    if position == 0:
        return True
    previous = text[position - 1]
    return previous == "\n" or (previous == "\r" and text[position : position + 1] != "\n")


def line_start(text: str, position: int) -> int:
    """Where the line holding ``position`` starts."""
    while position and not starts_line(text, position):
        lf = text.rfind("\n", 0, position - 1)
        position = max(lf, text.rfind("\r", lf + 1, position - 1)) + 1
    return position


def next_line_start(text: str, position: int) -> int:
    """Where the line after the one holding ``position`` starts; the end of the text
    when that line is the last."""
    while True:
        lf = text.find("\n", position)
        cr = text.find("\r", position, lf if lf >= 0 else len(text))
        if lf < 0 and cr < 0:
            return len(text)
        position = (cr if cr >= 0 else lf) + 1
        if starts_line(text, position):
            return position


def lines_before(text: str, end: int, count: int) -> list[str]:
    """The last ``count`` lines of ``text[:end]``, where ``end`` starts a line.

    They are split from a window that grows until it holds more than ``count``
    lines, since its first line may be cut."""
    size = FIRST_WINDOW
    while count:
        start = max(0, end - size)
        lines = split_lines(text[start:end])
        if start == 0 or len(lines) > count:
            return lines[-count:]
        size *= 4
    return []


def lines_from(text: str, start: int, count: int) -> list[str]:
    """The first ``count`` lines of ``text[start:]``, where ``start`` starts a line.

    They are split from a window that grows until it holds more than ``count``
    lines, since its last line may be cut."""
    size = FIRST_WINDOW
    while count:
        stop = min(len(text), start + size)
        lines = split_lines(text[start:stop])
        if stop == len(text) or len(lines) > count:
            return lines[:count]
        size *= 4
    return []
