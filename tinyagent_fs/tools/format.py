"""Shaping results for a model: line numbers, caps, and markers that say how to read on."""

from __future__ import annotations

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


def snippet(text: str, start_line: int, end_line: int, context: int = 3) -> str:
    """Numbered lines around [start_line, end_line] (1-based, inclusive) of ``text``."""
    lines = split_lines(text)
    first = max(1, start_line - context)
    last = min(len(lines), end_line + context)
    body, _ = number_lines(lines[first - 1 : last], first, 2000)
    return body


def cap_lines(lines: list[str], limit: int, what: str) -> tuple[list[str], str]:
    """At most ``limit`` lines and a marker saying how many were left out."""
    if len(lines) <= limit:
        return lines, ""
    return lines[:limit], f"[... {len(lines) - limit} more {what} not shown]"
