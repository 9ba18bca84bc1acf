"""Planning edit_file and multi_edit: a decoded file's text in, its new text out.

No I/O happens here, so the same planner serves every provider, dry runs and
tests. The counting rules are what keep edits from going wrong: an exact match
must occur exactly ``expected_replacements`` times, and tolerant matching (see
``matching``) is tried only for a single replacement, where exactly one location
can fit. Errors name lines, so the model's next attempt starts from facts.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tinyagent_fs.edit.match_hints import list_lines, no_match_error
from tinyagent_fs.edit.matching import (
    STAGES,
    MatchOutcome,
    adapt_replacement,
    exact_spans,
    find_matches,
    line_numbers,
)
from tinyagent_fs.edit.regex_edit import Replacement, regex_replacements
from tinyagent_fs.errors import ErrorCode, ToolError

EDIT_KEYS = frozenset({"old_string", "new_string", "expected_replacements", "replace_all", "regex"})

Span = tuple[int, int]

_PLAIN = MatchOutcome([], "exact", [])
"""Regex replacements only adapt line endings: nothing tolerant located them."""


@dataclass(frozen=True)
class EditResult:
    """The new text and what happened; ``changed_lines`` are 1-based, inclusive ranges
    in the new text, for showing the model what it now looks like, and
    ``changed_positions`` a position in the text on the first and on the last line
    of each range, so that those lines are found without splitting the whole text."""

    text: str
    tolerance: str
    replacements: int
    changed_lines: list[tuple[int, int]]
    changed_positions: list[tuple[int, int]]
    tolerances: tuple[str, ...] = ()


def apply_edit(
    text: str,
    old: str,
    new: str,
    expected_replacements: int = 1,
    replace_all: bool = False,
    regex: bool = False,
    regex_timeout_s: float = 1.0,
    file_newline: str = "\n",
) -> EditResult:
    """Replace ``old`` (a literal, or a Python regex with ``new`` as its template)."""
    result, spans = _edit(
        text, old, new, expected_replacements, replace_all, regex, regex_timeout_s, file_newline
    )
    return EditResult(
        result.text,
        result.tolerance,
        result.replacements,
        *_line_ranges(result.text, spans, _known_line(result, spans)),
        (result.tolerance,),
    )


def _known_line(result: _Applied, spans: list[Span]) -> tuple[int, int]:
    """A position of the new text whose line is known, to count lines from there:
    the first replacement starts where its match did, on the line the match was
    found on (unless a CR right before it now ends a line of its own)."""
    start = spans[0][0] if spans else 0
    if result.first_line is None or result.text[start - 1 : start] == "\r":
        return (0, 1)
    return (start, result.first_line)


def apply_edits(
    text: str,
    edits: Sequence[dict[str, Any]],
    *,
    file_newline: str = "\n",
    regex_timeout_s: float = 1.0,
) -> EditResult:
    """multi_edit: each edit sees the previous one's result; any failure fails them all."""
    if not edits:
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "edits is empty", "give at least one edit")
    spans: list[Span] = []
    tolerances: list[str] = []
    total = 0
    for index, edit in enumerate(edits):
        try:
            args = _edit_arguments(edit)
            result, new_spans = _edit(
                text, **args, regex_timeout_s=regex_timeout_s, file_newline=file_newline
            )
        except ToolError as error:
            raise ToolError(
                error.code,
                f"edit {index + 1} of {len(edits)} (edits[{index}]) failed, so no edit was "
                f"applied: {error.message}",
                error.hint,
                details={**error.details, "edit_index": index},
            ) from error
        spans = _merge(_carry(spans, result.replaced) + new_spans)
        text = result.text
        tolerances.append(result.tolerance)
        total += result.replacements
    strongest = max(tolerances, key=STAGES.index)
    return EditResult(text, strongest, total, *_line_ranges(text, spans), tuple(tolerances))


@dataclass(frozen=True)
class _Applied:
    text: str
    tolerance: str
    replacements: int
    replaced: list[tuple[int, int, int]]
    """(start, end, new length) of each replaced span, in the text before the edit."""
    first_line: int | None = None
    """The line of the first replaced span, when matching found it."""


def _edit(
    text: str,
    old: str,
    new: str,
    expected_replacements: int,
    replace_all: bool,
    regex: bool,
    regex_timeout_s: float,
    file_newline: str,
) -> tuple[_Applied, list[Span]]:
    _validate(old, new, expected_replacements, regex)
    first_line = None
    if regex:
        tolerance = "exact"
        replacements = _regex_replacements(
            text, old, new, expected_replacements, replace_all, regex_timeout_s, file_newline
        )
    else:
        tolerance, replacements, first_line = _literal_replacements(
            text, old, new, expected_replacements, replace_all, file_newline
        )
    new_text, new_spans = _splice(text, replacements)
    if new_text == text:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            "the edit would not change the file: the matched text already reads as the replacement",
            "read the file again; the change may already be there",
        )
    replaced = [(s, e, len(r)) for s, e, r in replacements]
    return _Applied(new_text, tolerance, len(replacements), replaced, first_line), new_spans


def _literal_replacements(
    text: str, old: str, new: str, expected: int, replace_all: bool, file_newline: str
) -> tuple[str, list[Replacement], int | None]:
    """The tolerance used, the replacements (each adapted to where it lands) and the
    line of the first one when the matching counted it."""
    if expected == 1 or replace_all:
        outcome = find_matches(text, old)
    else:
        spans = exact_spans(text, old)
        if not spans:
            raise no_match_error(text, old)
        outcome = MatchOutcome(spans, "exact", [])
    if outcome.tolerance == "exact":
        _check_count(text, outcome.spans, expected, replace_all, "old_string")
    replacements = [
        (s, e, adapt_replacement(new, outcome, text[s:e], file_newline)) for s, e in outcome.spans
    ]
    return outcome.tolerance, replacements, outcome.lines[0] if outcome.lines else None


def _regex_replacements(
    text: str,
    pattern: str,
    template: str,
    expected: int,
    replace_all: bool,
    timeout_s: float,
    file_newline: str,
) -> list[Replacement]:
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"old_string is not a valid regular expression: {exc}",
            "use Python re syntax, or set regex=false to match the text literally",
        ) from None
    found = regex_replacements(compiled, template, text, timeout_s)
    _check_count(text, [(s, e) for s, e, _ in found], expected, replace_all, "the pattern")
    return [(s, e, adapt_replacement(r, _PLAIN, text[s:e], file_newline)) for s, e, r in found]


def _validate(old: str, new: str, expected_replacements: int, regex: bool) -> None:
    if not isinstance(old, str) or not isinstance(new, str):
        raise ToolError(ErrorCode.INVALID_ARGUMENT, "old_string and new_string must be strings", "")
    if not old:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            "old_string is empty",
            "give the exact text to replace, or use write_file to create a file",
        )
    if old == new and not regex:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            "old_string and new_string are identical, so the edit would change nothing",
            "give the new text in new_string",
        )
    if (
        isinstance(expected_replacements, bool)
        or not isinstance(expected_replacements, int)
        or (expected_replacements < 1)
    ):
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"expected_replacements must be a whole number of at least 1, "
            f"not {expected_replacements!r}",
            "use 1 for a single replacement",
        )


def _edit_arguments(edit: Any) -> dict[str, Any]:
    if not isinstance(edit, dict) or "old_string" not in edit or "new_string" not in edit:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            "each edit must be an object with old_string and new_string",
            '{"old_string": "exact text", "new_string": "replacement"}',
        )
    unknown = sorted(set(edit) - EDIT_KEYS)
    if unknown:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENT,
            f"unknown edit field(s): {', '.join(unknown)}",
            f"allowed fields: {', '.join(sorted(EDIT_KEYS))}",
        )
    return {
        "old": edit["old_string"],
        "new": edit["new_string"],
        "expected_replacements": edit.get("expected_replacements", 1),
        "replace_all": bool(edit.get("replace_all", False)),
        "regex": bool(edit.get("regex", False)),
    }


def _check_count(
    text: str, spans: list[Span], expected: int, replace_all: bool, subject: str
) -> None:
    count = len(spans)
    if (replace_all and count >= 1) or (not replace_all and count == expected):
        return
    lines = line_numbers(text, [s for s, _ in spans])
    details = {"lines": lines, "count": count, "expected": expected}
    if count == 0:
        raise ToolError(
            ErrorCode.NO_MATCH,
            f"{subject} matched nothing in the file",
            "check the pattern (Python re syntax; (?m) makes ^ and $ match at every line, "
            "(?s) lets . cross lines), or use a literal old_string",
            details=details,
        )
    where = f"at lines {list_lines(lines)}"
    if count > expected:
        raise ToolError(
            ErrorCode.AMBIGUOUS_MATCH,
            f"{subject} occurs {count} times ({where}), but {expected} "
            f"{'replacement was' if expected == 1 else 'replacements were'} expected",
            f"add surrounding lines to {subject} so it matches only the place you mean, or "
            f"set expected_replacements={count} (or replace_all) to change every occurrence",
            details=details,
        )
    raise ToolError(
        ErrorCode.NO_MATCH,
        f"{subject} occurs only {count} time(s) ({where}), but {expected} were expected",
        f"set expected_replacements={count} if those are the places you mean, or read the "
        "file again",
        details=details,
    )


def _splice(text: str, replacements: list[Replacement]) -> tuple[str, list[Span]]:
    """The new text, and where each replacement landed in it.

    One replacement at the first occurrence of the text it replaces is made by
    ``str.replace``: one new string, where slices and their join make three. Three
    multi-MB strings alive at once make the allocator return memory to the system
    and fault it in again (5 MB: 6 ms instead of 1.5).
    """
    if len(replacements) == 1:
        start, end, replacement = replacements[0]
        replaced = text[start:end]
        if replaced and text.find(replaced, 0, end) == start:
            return text.replace(replaced, replacement, 1), [(start, start + len(replacement))]
    pieces: list[str] = []
    spans: list[Span] = []
    previous = 0
    shift = 0
    for start, end, replacement in replacements:
        pieces.append(text[previous:start])
        pieces.append(replacement)
        spans.append((start + shift, start + shift + len(replacement)))
        shift += len(replacement) - (end - start)
        previous = end
    pieces.append(text[previous:])
    return "".join(pieces), spans


def _carry(spans: list[Span], replaced: list[tuple[int, int, int]]) -> list[Span]:
    """Earlier edits' spans moved into the text after a later edit; a span that the
    later edit overlaps grows to cover what replaced it."""
    if not spans:
        return []
    ends = [end for _, end, _ in replaced]
    shifts = [0]
    for start, end, size in replaced:
        shifts.append(shifts[-1] + size - (end - start))

    def move(position: int, is_end: bool) -> int:
        index = bisect_right(ends, position)
        if index < len(replaced):
            start, _, size = replaced[index]
            if start < position:
                return start + shifts[index] + (size if is_end else 0)
        return position + shifts[index]

    return [(move(start, False), move(end, True)) for start, end in spans]


def _merge(spans: list[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _line_ranges(
    text: str, spans: list[Span], known: tuple[int, int] = (0, 1)
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """1-based inclusive line ranges covered by spans, and a position on the first and
    the last line of each; a span ending in a line break does not reach into the next
    line, an empty span marks its own line. Lines are counted from ``known``, a
    (position, line) at or before the first span."""
    positions: list[int] = []
    for start, end in spans:
        positions.append(start)
        positions.append(max(start, end - 1))
    order = sorted(range(len(positions)), key=positions.__getitem__)
    numbers = line_numbers(text, [positions[i] for i in order], known)
    by_index = dict(zip(order, numbers, strict=True))
    ranges: list[tuple[int, int]] = []
    where: list[tuple[int, int]] = []
    for index in range(0, len(positions), 2):
        first, last = by_index[index], by_index[index + 1]
        if ranges and first <= ranges[-1][1] + 1:
            if last > ranges[-1][1]:
                ranges[-1] = (ranges[-1][0], last)
                where[-1] = (where[-1][0], positions[index + 1])
        else:
            ranges.append((first, last))
            where.append((positions[index], positions[index + 1]))
    return ranges, where
