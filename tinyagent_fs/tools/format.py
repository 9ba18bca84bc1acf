"""Shaping results for a model: line numbers, caps, and markers that say how to read on."""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Mapping

from ..text.codec import split_lines
from ..text.line_window import line_start, lines_before, lines_from, next_line_start

NUMBER_WIDTH = 6
PREFIX_TABLE_LINES = 4096
"""Line-number prefixes kept ready: the start of a file is what most reads show."""


def number_lines(
    lines: list[str],
    first_line: int,
    max_line_chars: int,
    full_lengths: Mapping[int, int] | None = None,
) -> tuple[str, int]:
    """``cat -n`` style lines; returns the text and how many lines were cut short.

    ``full_lengths``: the real length, by index, of lines that arrive already cut
    (a window read keeps only the start of a very long line).
    """
    bodies = list(map(str.rstrip, lines, itertools.repeat("\r\n")))
    prefixes = _line_prefixes(first_line, len(bodies))
    if not full_lengths and max(map(len, bodies), default=0) <= max_line_chars:
        return "\n".join(map(operator.add, prefixes, bodies)), 0
    out: list[str] = []
    cut = 0
    for index, body in enumerate(bodies):
        length = full_lengths.get(index, len(body)) if full_lengths else len(body)
        if length > max_line_chars:
            cut += 1
            body = (
                body[:max_line_chars]
                + f" [... line truncated: {length - max_line_chars} more characters]"
            )
        out.append(prefixes[index] + body)
    return "\n".join(out), cut


def _line_prefixes(first_line: int, count: int) -> list[str]:
    """``"     7\\t"`` for each line number from ``first_line``, from a shared table
    where it reaches (formatting each number costs more than joining the line)."""
    last = first_line + count - 1
    if last <= PREFIX_TABLE_LINES:
        return _prefix_table()[first_line - 1 : last]
    return [f"{number:>{NUMBER_WIDTH}}\t" for number in range(first_line, last + 1)]


@functools.cache
def _prefix_table() -> list[str]:
    return [f"{number:>{NUMBER_WIDTH}}\t" for number in range(1, PREFIX_TABLE_LINES + 1)]


def snippet(text: str, first: int, last: int, first_line: int, context: int = 3) -> str:
    """Numbered lines of ``text`` from the line holding position ``first`` (line number
    ``first_line``) to the line holding position ``last``, with ``context`` lines
    around; only those lines are split, however long the text."""
    start = line_start(text, first)
    end = next_line_start(text, last)
    before = lines_before(text, start, context)
    lines = [*before, *split_lines(text[start:end]), *lines_from(text, end, context)]
    body, _ = number_lines(lines, first_line - len(before), 2000)
    return body


DIFF_LINES = 40


def short_diff(diff: str, max_lines: int = DIFF_LINES) -> str:
    """The hunks of a unified diff, capped: a model sees what changed without re-reading.

    The ``---``/``+++`` header goes (the result's first line names the file), so
    the first line after it is already a hunk.
    """
    lines = [
        line.rstrip("\r\n") for line in diff.splitlines() if not line.startswith(("--- ", "+++ "))
    ]
    shown, marker = cap_lines(lines, max_lines, "diff lines")
    return "\n".join([*shown, marker] if marker else shown)


def cap_lines(lines: list[str], limit: int, what: str) -> tuple[list[str], str]:
    """At most ``limit`` lines and a marker saying how many were left out."""
    if len(lines) <= limit:
        return lines, ""
    return lines[:limit], f"[... {len(lines) - limit} more {what} not shown]"
