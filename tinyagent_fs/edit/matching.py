"""Finding the text an edit means, even when the model copied it imperfectly.

Models reproduce file text from memory: they drop trailing spaces, re-indent with
spaces what the file indents with tabs, write LF into CRLF files and "straighten"
typographic quotes. Each tolerance is a stage that is tried only after the
stricter ones found nothing, and each includes the ones before it. A tolerant
stage may place an edit only where exactly one location fits, so tolerance never
turns into guessing. Spans always refer to the original text, which is never
normalised: whatever the stage, bytes outside the matched span stay untouched.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tinyagent_fs.edit.match_hints import list_lines, no_match_error
from tinyagent_fs.edit.tolerance import (
    ELLIPSIS,
    TOLERANCES,
    TYPOGRAPHY,
    IndentShift,
    Tolerance,
    fold_typography,
    indent_shift,
    leading_whitespace,
    line_content,
)
from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.text.codec import count_breaks, split_lines

STAGES = tuple(tolerance.name for tolerance in TOLERANCES)

MAX_CANDIDATES = 50
"""Tolerant stages stop collecting here: beyond one the answer is "ambiguous" anyway."""

_CLASSES = {plain: "[" + re.escape(plain + chars) + "]" for plain, chars in TYPOGRAPHY.items()}
_CHECKED_LINES = 8
_MIN_KEY = 3
_MAX_KEY_HITS = 5000
"""Beyond this many occurrences of the first line, one regex scan is cheaper."""
_HSPACE = r"[^\S\r\n]*"
_LONE_BREAK = {"\r\n": r"\r\n", "\n": r"(?<!\r)\n", "\r": r"\r(?!\n)"}
"""A CR or LF that is half of a CRLF is never a line break of its own."""
_ANY_BREAK = "(?:" + "|".join(_LONE_BREAK.values()) + ")"
_LINE_START = r"(?:(?<=[\r\n])|\A)"
_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class MatchOutcome:
    """Where a needle was found: spans into the original text, 1-based start lines."""

    spans: list[tuple[int, int]]
    tolerance: str
    lines: list[int]
    indent: IndentShift | None = None


def find_matches(text: str, needle: str) -> MatchOutcome:
    """Every exact occurrence, else the single tolerant one; errors say where to look."""
    if not needle:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT, "old_string is empty", "give the text to replace"
        )
    spans = exact_spans(text, needle)
    if spans:
        return MatchOutcome(spans, "exact", line_numbers(text, [s for s, _ in spans]))
    previous = re.escape(needle)
    possible = _lines_occur(text, needle)
    for stage in TOLERANCES[1:]:
        pattern = _stage_pattern(needle, stage)
        if stage.typography:
            possible = _lines_occur(fold_typography(text), fold_typography(needle))
        if pattern == previous or not possible:
            continue
        previous = pattern
        if not stage.endings and not _endings_occur(text, needle):
            continue
        found = _tolerant_candidates(text, needle, re.compile(pattern), stage)
        if len(found) == 1:
            start, end, shift = found[0]
            return MatchOutcome([(start, end)], stage.name, line_numbers(text, [start]), shift)
        if found:
            lines = line_numbers(text, [s for s, _, _ in found])
            raise ToolError(
                ErrorCode.AMBIGUOUS_MATCH,
                f"old_string has no exact match, and ignoring {stage.ignores} "
                f"it fits {len(found)}{'+' if len(found) >= MAX_CANDIDATES else ''} places: "
                f"lines {list_lines(lines)}.",
                "copy old_string exactly from the file, with enough surrounding lines to be unique",
                details={"lines": lines, "tolerance": stage.name},
            )
    raise no_match_error(text, needle)


def exact_spans(text: str, needle: str) -> list[tuple[int, int]]:
    """Non-overlapping occurrences, left to right, as ``str.replace`` would see them,
    except those that would cut a CRLF in half and leave a stray CR or LF behind."""
    spans: list[tuple[int, int]] = []
    size = len(needle)
    cuts = needle.startswith("\n") or needle.endswith("\r")
    start = text.find(needle)
    while start >= 0:
        if cuts and _splits_crlf(text, start, start + size):
            start = text.find(needle, start + 1)
            continue
        spans.append((start, start + size))
        start = text.find(needle, start + size)
    return spans


def _splits_crlf(text: str, start: int, end: int) -> bool:
    before = start > 0 and text[start - 1 : start + 1] == "\r\n"
    return before or text[end - 1 : end + 1] == "\r\n"


def adapt_replacement(
    replacement: str, outcome: MatchOutcome, matched_text: str, file_newline: str
) -> str:
    """The replacement as the file would have it: its line endings and indentation.

    The ending is the one inside the matched region when it has one (mixed files
    keep each region's style), else the file's dominant ending.
    """
    found = _BREAK.search(matched_text)
    newline = found.group() if found else file_newline
    shift = outcome.indent
    if shift is None or shift.is_identity:
        if newline == "\n" and "\r" not in replacement:
            return replacement
        return _BREAK.sub(newline, replacement)
    out: list[str] = []
    for index, line in enumerate(split_lines(replacement)):
        content = line_content(line)
        ending = newline if len(content) < len(line) else ""
        moved = shift.reindent(content) if index > 0 or shift.first_line else content
        out.append(moved + ending)
    return "".join(out)


def line_numbers(text: str, positions: Sequence[int], known: tuple[int, int] = (0, 1)) -> list[int]:
    """1-based line of each position (ascending), counting \\n, \\r\\n and \\r breaks
    from ``known``, a (position, line) at or before the first position."""
    out: list[int] = []
    previous, line = known
    for position in positions:
        line += count_breaks(text, previous, position)
        out.append(line)
        previous = position
    return out


def _stage_pattern(needle: str, stage: Tolerance) -> str:
    """A regex for the needle with the tolerances of ``stage`` (each includes those
    before it)."""
    trailing, indentation = stage.trailing, stage.indentation
    endings, typography = stage.endings, stage.typography
    parts: list[str] = []
    for index, line in enumerate(split_lines(needle)):
        body = line_content(line)
        ending = line[len(body) :]
        lead = leading_whitespace(body) if indentation else ""
        body = body[len(lead) :]
        trail = ""
        if trailing:
            trail = body[len(body.rstrip()) :]
            body = body[: len(body) - len(trail)]
        indented = indentation and (index > 0 or bool(lead))
        if indented:
            parts.append(_LINE_START if index == 0 else "")
            parts.append(_HSPACE)
        parts.append(_literal(body, typography))
        if trailing and (ending or trail):
            if body or not indented:
                parts.append(_HSPACE)
            if not ending:
                parts.append(r"(?=[\r\n]|\Z)")
        if ending:
            parts.append(_ANY_BREAK if endings else _LONE_BREAK[ending])
    return "".join(parts)


def _literal(body: str, typography: bool) -> str:
    if not typography:
        return re.escape(body)
    out: list[str] = []
    for chunk in re.split(r"(\.\.\.)", fold_typography(body)):
        if chunk == "...":
            out.append(r"(?:\.\.\.|" + ELLIPSIS + ")")
            continue
        out.extend(_CLASSES.get(char) or re.escape(char) for char in chunk)
    return "".join(out)


def _lines_occur(text: str, needle: str) -> bool:
    """Cheap refusal before a regex scan: the needle's longest lines, stripped, must
    each occur somewhere (the longest, because they are the least likely to)."""
    stripped = sorted((line.strip() for line in split_lines(needle)), key=len, reverse=True)
    return all(line in text for line in stripped[:_CHECKED_LINES])


def _endings_occur(text: str, needle: str) -> bool:
    """Whether every kind of line ending in the needle exists in the text on its own
    (a CRLF file has no LF endings, though it contains LF characters)."""
    crlf = needle.count("\r\n")
    text_crlf = text.count("\r\n") if "\r" in needle or "\n" in needle else 0
    if crlf and not text_crlf:
        return False
    if needle.count("\n") > crlf and text.count("\n") == text_crlf:
        return False
    return not (needle.count("\r") > crlf and text.count("\r") == text_crlf)


def _tolerant_candidates(
    text: str, needle: str, pattern: re.Pattern[str], stage: Tolerance
) -> list[tuple[int, int, IndentShift | None]]:
    """Overlapping matches of ``pattern``; from the indentation stage on, only those
    whose indentation differs from the needle's by one uniform shift."""
    needle_lines = [line_content(line) for line in split_lines(needle)]
    first_line = bool(leading_whitespace(needle_lines[0]))
    found: list[tuple[int, int, IndentShift | None]] = []
    for match in _matches(text, needle_lines[0], pattern, stage):
        shift: IndentShift | None = None
        if stage.indentation:
            file_lines = [line_content(line) for line in split_lines(match.group())]
            if len(file_lines) != len(needle_lines):
                continue  # tolerant whitespace ran across a line break: not line for line
            shift = indent_shift(needle_lines, file_lines, first_line)
            if shift is None:
                continue
        found.append((match.start(), match.end(), shift))
        if len(found) == MAX_CANDIDATES:
            break
    return found


def _matches(
    text: str, first: str, pattern: re.Pattern[str], stage: Tolerance
) -> Iterator[re.Match[str]]:
    """Matches in order of their start. A regex scan of megabytes is slow when the
    pattern starts with indentation, so where the needle's first line is distinctive
    its occurrences (found by ``str.find``) propose the starts the pattern is tried at."""
    starts = _likely_starts(text, first, stage)
    if starts is None:
        position = 0
        while (match := pattern.search(text, position)) is not None:
            yield match
            position = match.start() + 1
        return
    for start in starts:
        match = pattern.match(text, start)
        if match is not None:
            yield match


def _likely_starts(text: str, first: str, stage: Tolerance) -> list[int] | None:
    """Where a match must start, from the first line's stripped text; None when that
    text is too short or too common to help, or typography folding could move it."""
    key = first.strip()
    if len(key) < _MIN_KEY or (stage.typography and ELLIPSIS in text):
        return None
    haystack = fold_typography(text) if stage.typography else text
    if stage.typography:
        key = fold_typography(key)
    lead = len(leading_whitespace(first))
    starts: list[int] = []
    position = haystack.find(key)
    while position >= 0:
        if len(starts) == _MAX_KEY_HITS:
            return None
        if not stage.indentation:
            starts.append(position - lead)
        elif lead:
            line_start = max(text.rfind("\n", 0, position), text.rfind("\r", 0, position)) + 1
            if text[line_start:position].isspace() or line_start == position:
                starts.append(line_start)
        else:
            starts.append(position)
        position = haystack.find(key, position + 1)
    return sorted(set(start for start in starts if start >= 0))
