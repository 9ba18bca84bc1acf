"""Telling a model where the text it asked for most likely is.

A bare "not found" makes a model guess again from the same stale memory. Pointing
at the most similar region, with its line numbers and an excerpt, turns the next
call into a copy instead of a guess. Files can have 100k lines, so candidates come
from an index of lines and rare words, and only a handful are scored with difflib.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.text.codec import split_lines

EXHAUSTIVE_LINES = 2000
"""Files up to this many lines get every window pre-scored; larger ones use the index."""

_SCORED = 25
_MIN_SIMILARITY = 0.3
_MIN_OTHER_SIMILARITY = 0.5
_MAX_COMPARED_CHARS = 1500
_EXCERPT_LINES = 6
_EXCERPT_CHARS = 120
_TOKENS_PER_NEEDLE = 8
_HITS_PER_TOKEN = 400
_WORD = re.compile(r"\w{3,}")


@dataclass(frozen=True)
class Region:
    """A window of file lines resembling the needle; ``line`` is 1-based."""

    line: int
    end_line: int
    similarity: float
    excerpt: tuple[str, ...]


def list_lines(lines: Sequence[int], limit: int = 20) -> str:
    """ "3, 7, 12 and 4 more": line numbers for a message, capped."""
    shown = ", ".join(str(n) for n in lines[:limit])
    return shown + (f" and {len(lines) - limit} more" if len(lines) > limit else "")


def nearest_regions(
    lines: Sequence[str], needle_lines: Sequence[str], limit: int = 3
) -> list[Region]:
    """The ``limit`` windows of ``lines`` most similar to ``needle_lines`` (both without
    line endings), best first; windows are as long as the needle."""
    size = max(1, len(needle_lines))
    if not lines:
        return []
    target = _comparable(needle_lines)
    starts = _candidate_starts(lines, needle_lines, size, target)
    scored: list[tuple[float, int]] = []
    for start in starts:
        window = _comparable(lines[start : start + size])
        scored.append((SequenceMatcher(None, target, window, autojunk=False).ratio(), start))
    scored.sort(key=lambda item: (-item[0], item[1]))
    regions: list[Region] = []
    floor = _MIN_SIMILARITY
    for similarity, start in scored:
        if similarity < floor or len(regions) == limit:
            break
        if any(abs(start - r.line + 1) < size for r in regions):
            continue
        end = min(len(lines), start + size)
        excerpt = tuple(line[:_EXCERPT_CHARS] for line in lines[start:end][:_EXCERPT_LINES])
        regions.append(Region(start + 1, end, similarity, excerpt))
        floor = max(_MIN_OTHER_SIMILARITY, similarity * 0.8)
    return regions


def describe_regions(regions: Sequence[Region], explain_whitespace: bool = True) -> str:
    """The message part that shows the best region and lists the others.

    A region identical but for whitespace was refused by the indentation stage;
    saying so saves the model from re-sending the same text.
    """
    if not regions:
        return "Nothing in the file resembles it."
    best = regions[0]
    span = (
        f"line {best.line}"
        if best.end_line <= best.line
        else (f"lines {best.line}-{best.end_line}")
    )
    width = len(str(best.line + len(best.excerpt)))
    body = "\n".join(f"  {best.line + i:>{width}} | {text}" for i, text in enumerate(best.excerpt))
    text = f"The most similar text is at {span} ({best.similarity:.0%} similar):\n{body}"
    if best.similarity == 1.0 and explain_whitespace:
        text += (
            "\nIt differs only in whitespace: its indentation does not differ from yours by "
            "one uniform shift, so it was not taken as a match."
        )
    if len(regions) > 1:
        others = [r.line for r in regions[1:]]
        plural = "s" if len(others) > 1 else ""
        text += f"\nOther similar places start at line{plural} {list_lines(others)}."
    return text


def no_match_error(text: str, needle: str, subject: str = "old_string") -> ToolError:
    """NO_MATCH for an edit, pointing at the nearest candidates."""
    lines = [line.rstrip("\r\n") for line in split_lines(text)]
    needle_lines = [line.rstrip("\r\n") for line in split_lines(needle)]
    regions = nearest_regions(lines, needle_lines)
    message = (
        f"{subject} was not found in the file, neither exactly nor ignoring whitespace, "
        f"line endings or typographic quotes. {describe_regions(regions)}"
    )
    if regions:
        hint = (
            f"read the file again around line {regions[0].line} and copy {subject} exactly "
            "(whitespace and indentation included)"
        )
    else:
        hint = f"read the file again and copy {subject} exactly from its current content"
    return ToolError(
        ErrorCode.NO_MATCH, message, hint, details={"candidates": [r.line for r in regions]}
    )


def _comparable(lines: Sequence[str]) -> str:
    """Indentation-free text of some lines, capped: similarity is about content."""
    return "\n".join(line.strip() for line in lines)[:_MAX_COMPARED_CHARS]


def _candidate_starts(
    lines: Sequence[str], needle_lines: Sequence[str], size: int, target: str
) -> list[int]:
    """Window starts worth scoring: a small file's best pre-scored windows, or those
    where the needle's own lines or rare words occur."""
    last_start = max(0, len(lines) - size)
    if len(lines) <= EXHAUSTIVE_LINES:
        matcher = SequenceMatcher(None, autojunk=False)
        matcher.set_seq2(target)
        quick: list[tuple[float, int]] = []
        for start in range(last_start + 1):
            matcher.set_seq1(_comparable(lines[start : start + size]))
            quick.append((matcher.quick_ratio(), start))
        quick.sort(key=lambda item: (-item[0], item[1]))
        return [start for _, start in quick[:_SCORED]]
    votes: Counter[int] = Counter()
    wanted: dict[str, list[int]] = {}
    for index, line in enumerate(needle_lines):
        stripped = line.strip()
        if len(stripped) > 2:
            wanted.setdefault(stripped, []).append(index)
    if wanted:
        for number, line in enumerate(lines):
            offsets = wanted.get(line.strip())
            if offsets:
                for offset in offsets:
                    votes[_clamp(number - offset, last_start)] += 2
    for token, offset in _rare_tokens(needle_lines):
        hits = 0
        for number, line in enumerate(lines):
            if token in line:
                votes[_clamp(number - offset, last_start)] += 1
                hits += 1
                if hits == _HITS_PER_TOKEN:
                    break
    return [start for start, _ in votes.most_common(_SCORED)]


def _rare_tokens(needle_lines: Sequence[str]) -> list[tuple[str, int]]:
    """The needle's longest words (likeliest to be rare) and the line each first appears on."""
    first_seen: dict[str, int] = {}
    for index, line in enumerate(needle_lines):
        for word in _WORD.findall(line):
            first_seen.setdefault(word, index)
    ranked = sorted(first_seen, key=lambda word: (-len(word), word))
    return [(word, first_seen[word]) for word in ranked[:_TOKENS_PER_NEEDLE]]


def _clamp(start: int, last_start: int) -> int:
    return min(max(0, start), last_start)
