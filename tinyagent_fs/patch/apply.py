"""Applying one file's hunks to its text, strictly, and nothing else to it.

Hunks are matched line by line against the file as it is (content decides; a
unified diff's line numbers only break ties), with the same tolerance ladder as
edits and the same rule: a tolerant stage counts only if exactly one place fits.
Everything outside the hunks is copied as the file's own lines, and context
lines keep the file's own bytes, so line endings, trailing whitespace
and the final-newline state survive exactly. Added lines take the file's newline
and, under an indentation tolerance, the file's indentation.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from tinyagent_fs.changes.diff import DIFF_CONTEXT, HunkText, Opcode, planned_hunk_text
from tinyagent_fs.edit.match_hints import describe_regions, list_lines, nearest_regions
from tinyagent_fs.edit.matching import MAX_CANDIDATES
from tinyagent_fs.edit.tolerance import (
    BY_NAME,
    LINE_STAGES,
    IndentShift,
    Tolerance,
    indent_shift,
    line_content,
)
from tinyagent_fs.errors import ErrorCode, ToolError
from tinyagent_fs.patch.model import FilePatch, Hunk
from tinyagent_fs.text.codec import line_contents, line_count, split_lines

_SHOWN_HUNK_LINES = 6
_RUNS = re.compile(r" +|-+|\++")
"""Runs of hunk lines of one kind, in ``Hunk.ops``."""


@dataclass(frozen=True)
class PatchedText:
    """A file's text after its section is applied (None: deleted) and, for each hunk
    placed with a tolerance, a note saying so.

    ``alignment`` is how the lines of the old and new text correspond, as the
    placed hunks say; None where there is nothing to align (added or deleted
    files). ``hunks``: the review diff's hunks that alignment gives, built while
    the old text is split anyway (None where it does not truly align the texts:
    the diff is then computed from the texts).
    """

    text: str | None
    notes: tuple[str, ...] = ()
    alignment: tuple[Opcode, ...] | None = None
    hunks: HunkText | None = None


def apply_file_patch(fp: FilePatch, current_text: str | None, file_newline: str) -> str | None:
    """The file's new text (None when the section deletes it); pure, no I/O."""
    return patch_text(fp, current_text, file_newline).text


def patch_text(fp: FilePatch, current_text: str | None, file_newline: str) -> PatchedText:
    """``apply_file_patch`` plus the tolerance notes a result should show."""
    if fp.kind == "add":
        if current_text is not None:
            raise ToolError(
                ErrorCode.ALREADY_EXISTS,
                f"{fp.path} already exists, so the patch cannot add it",
                "use '*** Update File:' (or a diff against its current content) to change it",
                details={"path": fp.path},
            )
        return PatchedText(_added_text(fp))
    if current_text is None:
        raise ToolError(
            ErrorCode.NOT_FOUND,
            f"{fp.path} does not exist, so the patch cannot {fp.kind} it",
            "check the path (list the directory), or add the file with '*** Add File:'",
            details={"path": fp.path},
        )
    if fp.kind == "delete":
        _check_deleted_content(fp, current_text)
        return PatchedText(None)
    return _update(fp, current_text, file_newline)


def _added_text(fp: FilePatch) -> str:
    pieces: list[str] = []
    for hunk in fp.hunks:
        if hunk.endings is None and not hunk.no_newline:
            pieces.extend(text + "\n" for text in hunk.texts)
            continue
        endings = hunk.endings or ("",) * len(hunk.texts)
        pieces.extend(
            text + ("" if index in hunk.no_newline else endings[index] or "\n")
            for index, text in enumerate(hunk.texts)
        )
    return "".join(pieces)


class _LineSearch:
    """Finds runs of lines by joining normalised lines with "\\n" and using
    ``str.find``: linear, and fast even for a 100k-line file. A hunk that is where
    its line numbers say (``fits_at``) needs no search and no joined text at all."""

    def __init__(self, text: str, lines: list[str]) -> None:
        self.text = text
        self.lines = lines
        self._joined: dict[str, tuple[str, list[int]]] = {}

    @functools.cached_property
    def contents(self) -> list[str]:
        """Each line without its ending."""
        return line_contents(self.text, self.lines)

    def fits_at(self, needle: list[str], start: int) -> bool:
        """Whether the file's lines from ``start`` are exactly ``needle``."""
        end = start + len(needle)
        if start < 0 or end > len(self.lines):
            return False
        region = "".join(self.lines[start:end])
        if "\r" not in region:  # each line ends in \n, but the file's last may end in none
            wanted = "\n".join(needle)
            return region == wanted + "\n" or region == wanted
        return all(
            line_content(line) == wanted
            for line, wanted in zip(self.lines[start:end], needle, strict=True)
        )

    def positions(self, needle: list[str], stage: Tolerance, start: int) -> list[int]:
        """0-based starts (>= ``start``, overlapping allowed) where ``needle`` fits."""
        if not needle or start + len(needle) > len(self.lines):
            return []
        haystack, lengths_before = self._normalized(stage)
        key = "\n" + "\n".join(stage.normalize(line) for line in needle) + "\n"
        found: list[int] = []
        line = start
        before = start + lengths_before[start]  # where the "\n" ahead of line ``start`` is
        position = haystack.find(key, before)
        while position >= 0 and len(found) < MAX_CANDIDATES:
            line += haystack.count("\n", before, position)
            found.append(line)
            before = position
            position = haystack.find(key, position + 1)
        return found

    def _normalized(self, stage: Tolerance) -> tuple[str, list[int]]:
        """The normalised lines joined, and for each line the length of all before it."""
        if stage.name not in self._joined:
            exact = stage is LINE_STAGES[0]
            lines = self.contents if exact else [stage.normalize(line) for line in self.contents]
            lengths_before = [0, *accumulate(map(len, lines))]
            self._joined[stage.name] = ("\n" + "\n".join(lines) + "\n", lengths_before)
        return self._joined[stage.name]


def _update(fp: FilePatch, text: str, newline: str) -> PatchedText:
    lines = split_lines(text)
    search = _LineSearch(text, lines)
    cursor = drift = 0
    placed: list[tuple[int, Hunk, IndentShift | None]] = []
    notes: list[str] = []
    for number, hunk in enumerate(fp.hunks, 1):
        start, stage, shift = _locate(fp, hunk, number, search, cursor, drift)
        if hunk.old_start is not None:
            drift = start - (hunk.old_start - 1)
        if stage != "exact":
            notes.append(f"{fp.path}: {_hunk_name(hunk, number)} {BY_NAME[stage].note}")
        placed.append((start, hunk, shift))
        cursor = start + len(hunk.old_lines)
    alignment = _Alignment()
    new_text = _assemble(text, lines, placed, fp.style, newline, alignment)
    codes = alignment.finish(len(lines))
    # The review diff is built here, where the lines are split: kept for it instead,
    # every line of every file would stay alive through review, and the collector's
    # first look at them would cost more than all the hunks do.
    hunks = planned_hunk_text(lines, new_text, codes, DIFF_CONTEXT)
    return PatchedText(new_text, tuple(notes), codes, hunks)


def _locate(
    fp: FilePatch, hunk: Hunk, number: int, search: _LineSearch, cursor: int, drift: int
) -> tuple[int, str, IndentShift | None]:
    """Where the hunk's old lines start, the stage that found them, the indent shift.

    The search starts after the previous hunk and after the ``@@`` anchors (at the
    last anchor itself when the hunk repeats it as its first context line).
    """
    position = cursor
    old = hunk.old_lines
    for anchor in hunk.anchors:
        position = _find_anchor(fp, hunk, number, search, anchor, position) + 1
    if hunk.anchors and old and old[0].strip() == hunk.anchors[-1].strip():
        position -= 1
    size = len(search.lines)
    hint = None if hunk.old_start is None else hunk.old_start - 1 + drift
    if not old:
        if hunk.end_of_file or (hint is None and not hunk.anchors):
            return size, "exact", None
        return (position if hint is None else min(max(hint, position), size)), "exact", None
    if (
        hint is not None
        and not hunk.anchors
        and hint >= position
        and (not hunk.end_of_file or hint + len(old) == size)
        and search.fits_at(old, hint)
    ):  # an exact match at the stated line is the one a search would settle on
        return hint, "exact", None
    for stage in LINE_STAGES:
        found: list[tuple[int, IndentShift | None]] = []
        for start in search.positions(old, stage, position):
            if hunk.end_of_file and start + len(old) != size:
                continue
            shift = None
            if stage.indentation:
                shift = indent_shift(old, search.contents[start : start + len(old)])
                if shift is None:
                    continue
            found.append((start, shift))
        if not found:
            continue
        if len(found) > 1 and stage.name == "exact":
            found = _disambiguate(found, hunk, hint)
        if len(found) == 1:
            return found[0][0], stage.name, found[0][1]
        raise _ambiguous(fp, hunk, number, [start for start, _ in found], stage.name)
    raise _no_match(fp, hunk, number, search, position)


def _disambiguate(
    found: list[tuple[int, IndentShift | None]], hunk: Hunk, hint: int | None
) -> list[tuple[int, IndentShift | None]]:
    """Exact matches only: an anchor means "the first one after me"; a line-number
    hint picks the nearest one if no other is as near."""
    if hunk.anchors:
        return found[:1]
    if hint is None:
        return found
    nearest = min(abs(start - hint) for start, _ in found)
    closest = [item for item in found if abs(item[0] - hint) == nearest]
    return closest if len(closest) == 1 else found


def _find_anchor(
    fp: FilePatch, hunk: Hunk, number: int, search: _LineSearch, anchor: str, position: int
) -> int:
    for stage in LINE_STAGES:
        found = search.positions([anchor], stage, position)
        if found:
            return found[0]
    regions = nearest_regions(search.contents, [anchor])
    raise ToolError(
        ErrorCode.NO_MATCH,
        f"{fp.path}: {_hunk_name(hunk, number)}: the '@@ {anchor}' line is not in the file"
        f"{f' after line {position}' if position else ''}. {describe_regions(regions)}",
        "the text after '@@' must be a line of the file (e.g. the enclosing 'def' or 'class' "
        "line), copied exactly; read the file to find it",
        details={"path": fp.path, "hunk": number, "candidates": [r.line for r in regions]},
    )


def _check_deleted_content(fp: FilePatch, text: str) -> None:
    """A unified diff that deletes a file lists its lines: they must be the file's."""
    if not fp.hunks:
        return
    old = [line for hunk in fp.hunks for line in hunk.old_lines]
    if "\r" not in text and line_count(text) == len(old):  # lines end in \n, the last maybe not
        listed = "\n".join(old)
        if text == listed + "\n" or text == listed:
            return
    search = _LineSearch(text, split_lines(text))
    contents = search.contents
    if len(old) == len(contents) and (
        old == contents or any(0 in search.positions(old, stage, 0) for stage in LINE_STAGES)
    ):
        return
    raise ToolError(
        ErrorCode.NO_MATCH,
        f"{fp.path}: the patch deletes the file, but the lines it lists ({len(old)}) are not "
        f"the file's content ({len(contents)} lines)",
        "read the file again; a deletion diff must list the current content",
        details={"path": fp.path},
    )


def _assemble(
    text: str,
    lines: list[str],
    placed: list[tuple[int, Hunk, IndentShift | None]],
    style: str,
    newline: str,
    alignment: _Alignment,
) -> str:
    """Untouched stretches as the file's ``lines``; hunks as context lines from the file
    and added lines with the ending of the lines they replace (``_AddedLineEndings``).
    ``alignment`` is told, run by run of lines of one kind, what became of them.

    A run of context lines is emitted as one piece: of the file's lines only its
    last can lack a line break, so joining them is what emitting each would give."""
    pieces: list[str] = []

    def emit(piece: str) -> None:
        if piece and pieces and not pieces[-1].endswith(("\n", "\r")):
            pieces.append(newline)
        if piece:
            pieces.append(piece)

    previous = 0
    for start, hunk, shift in placed:
        emit("".join(lines[previous:start]))
        alignment.keep(start - previous)
        index = start
        endings = _AddedLineEndings(newline)
        for run in _RUNS.finditer(hunk.ops):
            first, last = run.span()
            count = last - first
            if hunk.ops[first] == " ":
                context = lines[index : index + count]
                emit("".join(context))
                endings.saw_context(context)
                alignment.keep(count)
                index += count
            elif hunk.ops[first] == "-":
                endings.saw_removed(lines[index : index + count])
                alignment.remove(count)
                index += count
            else:
                added = _added_lines(hunk, first, last, shift, endings.take(count))
                if all(added):  # each ends in a break: one piece emits as each would
                    emit("".join(added))
                else:
                    for piece in added:
                        emit(piece)
                alignment.add(count)
        previous = index
    emit("".join(lines[previous:]))
    result = "".join(pieces)
    if style == "codex" and text and not text.endswith(("\n", "\r")):
        return _without_final_break(result)
    return result


class _Alignment:
    """Opcodes (as ``difflib`` spells them) built while the hunks are applied: kept
    lines are "equal", each run of removed and added lines one change."""

    def __init__(self) -> None:
        self.codes: list[Opcode] = []
        self.old = self.new = 0
        self.removed = self.added = 0

    def keep(self, count: int) -> None:
        if not count:
            return
        self._close_change()
        last = self.codes[-1] if self.codes else None
        if last is not None and last[0] == "equal":
            self.codes[-1] = ("equal", last[1], self.old + count, last[3], self.new + count)
        else:
            self.codes.append(("equal", self.old, self.old + count, self.new, self.new + count))
        self.old += count
        self.new += count

    def remove(self, count: int) -> None:
        self.removed += count

    def add(self, count: int) -> None:
        self.added += count

    def finish(self, old_count: int) -> tuple[Opcode, ...]:
        """The opcodes once the rest of the file (up to ``old_count`` lines) is kept."""
        self._close_change()
        self.keep(old_count - self.old)
        return tuple(self.codes)

    def _close_change(self) -> None:
        if not (self.removed or self.added):
            return
        tag = "replace" if self.removed and self.added else "delete" if self.removed else "insert"
        old_end, new_end = self.old + self.removed, self.new + self.added
        self.codes.append((tag, self.old, old_end, self.new, new_end))
        self.old, self.new = old_end, new_end
        self.removed = self.added = 0


def _added_lines(
    hunk: Hunk, first: int, last: int, shift: IndentShift | None, endings: list[str]
) -> list[str]:
    """Lines ``first:last`` of ``hunk`` (all added) as written: reindented by ``shift``,
    each with the ending the patch states, else the one ``endings`` gives (none
    before a no-newline marker)."""
    texts: Sequence[str] = hunk.texts[first:last]
    if shift is not None:
        texts = [shift.reindent(text) for text in texts]
    if hunk.endings is not None:
        stated = hunk.endings[first:last]
        endings = [given or ending for given, ending in zip(stated, endings, strict=True)]
    if hunk.no_newline:
        endings = [
            "" if index in hunk.no_newline else ending
            for index, ending in enumerate(endings, first)
        ]
    return list(map(str.__add__, texts, endings))


class _AddedLineEndings:
    """The line break an added line gets: that of the removed line it takes the place
    of, else of the nearest old line before it in the hunk, else the file's own.

    In a file with mixed endings a replaced line so keeps its ending, as it would
    with ``git apply`` for a patch made against that file.
    """

    def __init__(self, file_newline: str) -> None:
        self.removed: list[str] = []
        self.nearest = file_newline

    def saw_context(self, lines: list[str]) -> None:
        """A run of context lines: the last of them that has a line break gives it."""
        self.removed.clear()
        for line in reversed(lines):
            ending = _ending(line)
            if ending:
                self.nearest = ending
                return

    def saw_removed(self, lines: list[str]) -> None:
        """A run of removed lines: each gives its ending (the nearest one if it has none)."""
        joined = "".join(lines)
        if "\r" not in joined and joined.count("\n") == len(lines):  # all end in \n
            self.removed.extend(["\n"] * len(lines))
            self.nearest = "\n" if lines else self.nearest
            return
        for line in lines:
            ending = _ending(line) or self.nearest
            self.removed.append(ending)
            self.nearest = ending

    def take(self, count: int) -> list[str]:
        """The endings of the next ``count`` added lines."""
        taken = self.removed[:count]
        del self.removed[:count]
        return taken + [self.nearest] * (count - len(taken))


def _ending(line: str) -> str:
    if line.endswith("\r\n"):
        return "\r\n"
    return line[-1] if line.endswith(("\n", "\r")) else ""


def _without_final_break(text: str) -> str:
    """A Codex patch cannot say "no newline at end of file", so a file that had none
    keeps having none."""
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith(("\n", "\r")) else text


def _hunk_name(hunk: Hunk, number: int) -> str:
    return f"hunk {number} ({hunk.header})" if hunk.header else f"hunk {number}"


def _ambiguous(fp: FilePatch, hunk: Hunk, number: int, starts: list[int], stage: str) -> ToolError:
    lines = [start + 1 for start in starts]
    how = "exactly" if stage == "exact" else BY_NAME[stage].note.replace("matched ", "")
    more = "+" if len(starts) >= MAX_CANDIDATES else ""
    return ToolError(
        ErrorCode.AMBIGUOUS_MATCH,
        f"{fp.path}: {_hunk_name(hunk, number)} fits {len(starts)}{more} places ({how}): "
        f"lines {list_lines(lines)}",
        "add context lines until the hunk fits one place"
        + (
            ", or an '@@ <line>' anchor naming the enclosing function or class"
            if fp.style == "codex"
            else ""
        ),
        details={"path": fp.path, "hunk": number, "lines": lines},
    )


def _no_match(
    fp: FilePatch, hunk: Hunk, number: int, search: _LineSearch, position: int
) -> ToolError:
    old = hunk.old_lines
    regions = nearest_regions(search.contents, old)
    earlier = [s for s in search.positions(old, LINE_STAGES[0], 0) if s < position]
    order = (
        f" Its lines occur only before the previous hunk (line {earlier[0] + 1}): hunks must "
        "be in file order."
        if earlier
        else ""
    )
    shown = "\n".join(f"  {line.op}{line.text}" for line in hunk.lines[:_SHOWN_HUNK_LINES])
    target = regions[0].line if regions else 1
    return ToolError(
        ErrorCode.NO_MATCH,
        f"{fp.path}: {_hunk_name(hunk, number)} does not match the file.{order} The hunk "
        f"starts:\n{shown}\n{describe_regions(regions, explain_whitespace=not earlier)}",
        f"read {fp.path} around line {target} and rebuild the hunk from its current text: "
        "context (' ') and removed ('-') lines must match the file",
        details={"path": fp.path, "hunk": number, "candidates": [r.line for r in regions]},
    )
