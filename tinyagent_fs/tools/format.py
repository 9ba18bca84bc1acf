"""Shaping results for a model: line numbers, caps, and markers that say how to read on."""

from __future__ import annotations

from ..line_window import line_start, lines_before, lines_from, next_line_start
from ..text import split_lines

NUMBER_WIDTH = 6


def number_lines(lines: list[str], first_line: int, max_line_chars: int) -> tuple[str, int]:
    """``cat -n`` style lines; returns the text and how many lines were cut short."""
    out: list[str] = []
    cut = 0
    for index, line in enumerate(lines):
        body = line.rstrip("\r\n")
        if len(body) > max_line_chars:
            cut += 1
            body = (
                body[:max_line_chars]
                + f" [... line truncated: {len(body) - max_line_chars} more characters]"
            )
        out.append(f"{first_line + index:>{NUMBER_WIDTH}}\t{body}")
    return "\n".join(out), cut


def snippet(text: str, first: int, last: int, first_line: int, context: int = 3) -> str:
    """Numbered lines of ``text`` from the line holding position ``first`` (line number
    ``first_line``) to the line holding position ``last``, with ``context`` lines
    around; only those lines are split, however long the text."""
    start = line_start(text, first)
    end = next_line_start(text, last) if last < len(text) else len(text)
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
