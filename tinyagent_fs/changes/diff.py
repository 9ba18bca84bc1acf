"""Line diffs that stay fast on big files and big rewrites.

Every mutating call is diffed for review and audit, so the diff must not cost
more than the write. Two things keep it cheap:

- :func:`text_hunks` finds the common prefix and suffix of the two texts by
  comparing characters in blocks (C speed), and splits into lines only the
  changed middle plus the few context lines around it: an edit in a 100,000-line
  file aligns a handful of lines, not 100,000.
- ``difflib`` alone takes seconds on a 10,000-line file with thousands of small
  changes (a reformatted file). So lines that occur once on each side anchor the
  alignment first (the "patience" idea), and difflib only aligns the short gaps
  between anchors.

The hunks are exactly those of :func:`unified_hunks` on the split lines: the
trimming only skips work whose outcome is known.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ..text.codec import count_breaks, split_lines
from ..text.line_window import line_start, lines_before, lines_from, next_line_start, starts_line

Opcode = tuple[str, int, int, int, int]
DIFF_CONTEXT = 3
"""Lines of context around each change in the diffs people review."""
LineSlice = Callable[[int, int], Sequence[str]]
GAP_CELLS_FOR_DIFFLIB = 250_000
"""Gaps larger than this (old lines x new lines) are shown as a plain replacement."""
FIRST_BLOCK = 256
LAST_BLOCK = 1 << 16
"""Block sizes (characters) for comparing two texts: small first, so a change near
the start is found at once, doubling up to a size where a slice costs no more
than the comparison."""


def unified_hunks(
    old: Sequence[str], new: Sequence[str], context: int = 3, codes: list[Opcode] | None = None
) -> list[str]:
    """The hunks of a unified diff (no file header), lines keeping their endings.

    ``codes``: an alignment the caller already knows (a patch's hunks are one),
    which must be a true one (contiguous, covering both sides, every "equal"
    stretch really equal); None: computed here.
    """
    known = opcodes(old, new) if codes is None else codes
    return _hunks(known, _slicer(old), _slicer(new), context)


def planned_sides(
    old: Sequence[str], new_text: str, codes: Sequence[Opcode]
) -> tuple[LineSlice, LineSlice] | None:
    """The two sides ``planned_hunk_text`` reads its lines from; None when ``codes`` do
    not truly align them (see there)."""
    changed: list[tuple[int, Sequence[str]]] = []
    position = i = j = 0
    for tag, i1, i2, j1, j2 in codes:
        if (i1, j1) != (i, j) or i2 < i1 or j2 < j1:
            return None
        if position < len(new_text) and not starts_line(new_text, position):
            return None
        if tag == "equal":
            stretch = "".join(old[i1:i2])
            if i2 - i1 != j2 - j1 or not new_text.startswith(stretch, position):
                return None
            position += len(stretch)
        else:
            lines = lines_from(new_text, position, j2 - j1)
            if len(lines) != j2 - j1:
                return None
            changed.append((j1, lines))
            position += sum(map(len, lines))
        i, j = i2, j2
    if i != len(old) or position != len(new_text):
        return None
    return _slicer(old), _pieces(*changed)


def planned_hunk_text(
    old: Sequence[str], new_text: str, codes: Sequence[Opcode], context: int = 3
) -> HunkText | None:
    """The hunks of ``unified_hunks(old, split_lines(new_text), context, codes)``, as
    one ``HunkText``, when ``codes`` truly align ``old`` (split lines) with the lines
    of ``new_text``: contiguous, covering both sides, every "equal" stretch really
    equal. None when they do not.

    The new text is not split: each "equal" stretch must be the old lines' text at
    that place in it, and each change is split from there on its own, so only the
    changed lines are ever split (the new side of a hunk is never asked for lines in
    an "equal" stretch). Every stretch must begin where ``split_lines`` begins a line,
    so the stretches split exactly as the whole text would.
    """
    sides = planned_sides(old, new_text, codes)
    return None if sides is None else hunk_text(list(codes), *sides, context)


def text_hunks(old: str, new: str, context: int = 3) -> list[str]:
    """``unified_hunks(split_lines(old), split_lines(new), context)``, without
    splitting or aligning the lines both texts share at their start and end."""
    if old == new:
        return []
    return _hunks(*text_sides(old, new, context), context)


def text_sides(old: str, new: str, context: int = 3) -> tuple[list[Opcode], LineSlice, LineSlice]:
    """The alignment and the two sides ``text_hunks`` reads its lines from."""
    cut = _line_start_at_or_before(old, new, _common_prefix(old, new))
    shared_end = _common_suffix(old, new, min(len(old), len(new)) - cut)
    old_end = _line_start_at_or_after(old, new, len(old) - shared_end)
    new_end = old_end + len(new) - len(old)
    before = count_breaks(old, 0, cut)
    head = lines_before(old, cut, context)
    tail = lines_from(old, old_end, context)
    old_middle = split_lines(old[cut:old_end])
    new_middle = split_lines(new[cut:new_end])
    codes: list[Opcode] = [("equal", 0, before, 0, before)]
    for tag, i1, i2, j1, j2 in opcodes(old_middle, new_middle):
        codes.append((tag, i1 + before, i2 + before, j1 + before, j2 + before))
    old_tail, new_tail = before + len(old_middle), before + len(new_middle)
    codes.append(("equal", old_tail, old_tail + len(tail), new_tail, new_tail + len(tail)))
    first_head = before - len(head)
    old_side = _pieces((first_head, head), (before, old_middle), (old_tail, tail))
    new_side = _pieces((first_head, head), (before, new_middle), (new_tail, tail))
    return _merged(codes), old_side, new_side


@dataclass(frozen=True)
class HunkText:
    """A diff's hunks as one text (git's no-newline markers included), and how many
    lines they add and remove."""

    text: str
    added: int
    removed: int


def hunk_text(codes: list[Opcode], old: LineSlice, new: LineSlice, context: int) -> HunkText:
    """``"".join`` of the hunks ``_hunks`` gives, marked as ``git diff`` marks a line
    without a final newline; each run of lines of one kind is prefixed in one join
    (``"-" + "-".join(lines)``), not line by line."""
    pieces: list[str] = []
    lines = added = removed = 0
    for first, last, group in _groups(list(codes), context):
        pieces.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            gone = old(i1, i2)
            if gone:
                mark = " " if tag == "equal" else "-"
                pieces.append(mark + mark.join(gone))
            if tag == "equal":
                lines += len(gone)
                continue
            came = new(j1, j2)
            if came:
                pieces.append("+" + "+".join(came))
            removed += len(gone)
            added += len(came)
        lines += 1
    text = "".join(pieces)
    if text.count("\n") != lines + added + removed:  # a line lacks its \n: mark it
        text = "".join(marked(_hunks(list(codes), old, new, context)))
    return HunkText(text, added, removed)


def marked(hunks: list[str]) -> list[str]:
    """``hunks`` with git's marker after a line without a final newline. Only the last
    line of a side can lack one, so one count over the joined lines (a line holds a
    \\n at its end or nowhere) usually shows there is nothing to mark."""
    if "".join(hunks).count("\n") == len(hunks):
        return hunks
    return [_ensure_newline(line) for line in hunks]


def _ensure_newline(line: str) -> str:
    if line.endswith("\n"):
        return line
    return line + "\n\\ No newline at end of file\n"


def _groups(codes: list[Opcode], context: int) -> Iterator[tuple[Opcode, Opcode, list[Opcode]]]:
    """difflib's grouping of ``codes`` into hunks (first code, last code, all of them).
    ``codes`` is changed in place."""
    # Only for difflib's hunk grouping, which reads nothing but the precomputed
    # opcodes: empty sequences spare it indexing the whole file.
    matcher = difflib.SequenceMatcher(None, (), (), autojunk=False)
    matcher.opcodes = codes
    for group in matcher.get_grouped_opcodes(context):
        yield group[0], group[-1], group


def _hunks(codes: list[Opcode], old: LineSlice, new: LineSlice, context: int) -> list[str]:
    out: list[str] = []
    for first, last, group in _groups(codes, context):
        out.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend([" " + line for line in old(i1, i2)])
                continue
            out.extend(["-" + line for line in old(i1, i2)])
            out.extend(["+" + line for line in new(j1, j2)])
    return out


def _slicer(lines: Sequence[str]) -> LineSlice:
    return lambda start, stop: lines[start:stop]


def _pieces(*pieces: tuple[int, Sequence[str]]) -> LineSlice:
    """Lines ``start:stop`` of a side known only in pieces, each (first line number, lines);
    the grouped opcodes never ask for a line outside them. A change asks for exactly
    the piece a plan split for it, found at once."""
    whole = {(offset, offset + len(piece)): piece for offset, piece in pieces}

    def lines(start: int, stop: int) -> Sequence[str]:
        found = whole.get((start, stop))
        if found is not None:
            return found
        out: list[str] = []
        for offset, piece in pieces:
            low, high = max(start, offset), min(stop, offset + len(piece))
            if low < high:
                out.extend(piece[low - offset : high - offset])
        return out

    return lines


def _common_prefix(a: str, b: str) -> int:
    return _equal_run(min(len(a), len(b)), lambda i, j: a.startswith(b[i:j], i))


def _common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit``."""
    return _equal_run(limit, lambda i, j: a.endswith(b[len(b) - j : len(b) - i], 0, len(a) - i))


def _equal_run(limit: int, same: Callable[[int, int], bool]) -> int:
    """How many characters (at most ``limit``) two texts share at one end, compared
    block by block: ``same(i, j)`` says whether characters i to j, counted from that
    end, are equal (one side sliced, the other compared in place)."""
    done, size = 0, FIRST_BLOCK
    while done < limit:
        more = min(limit, done + size)
        if not same(done, more):
            while more - done > 1:  # the first difference lies in [done, more)
                middle = (done + more) // 2
                if same(done, middle):
                    done = middle
                else:
                    more = middle
            return done
        done, size = more, min(size * 2, LAST_BLOCK)
    return limit


def _line_start_at_or_before(old: str, new: str, position: int) -> int:
    """The last position <= ``position`` (within the common prefix) where a line
    starts in both texts: everything before it is whole lines they share."""
    while position and not (starts_line(old, position) and starts_line(new, position)):
        position = line_start(old, position - 1)
    return position


def _line_start_at_or_after(old: str, new: str, position: int) -> int:
    """The first position >= ``position`` (the common suffix starts there in ``old``)
    where a line starts in both texts; the end of ``old`` when there is none."""
    shift = len(new) - len(old)
    while position < len(old):
        if starts_line(old, position) and starts_line(new, position + shift):
            return position
        position = next_line_start(old, position)
    return len(old)


def opcodes(old: Sequence[str], new: Sequence[str]) -> list[Opcode]:
    out: list[Opcode] = []
    _align(old, 0, len(old), new, 0, len(new), out)
    return _merged(out)


def _align(
    a: Sequence[str], alo: int, ahi: int, b: Sequence[str], blo: int, bhi: int, out: list[Opcode]
) -> None:
    start_a, start_b = alo, blo
    while alo < ahi and blo < bhi and a[alo] == b[blo]:
        alo += 1
        blo += 1
    if alo > start_a:
        out.append(("equal", start_a, alo, start_b, blo))
    tail = 0
    while alo < ahi - tail and blo < bhi - tail and a[ahi - 1 - tail] == b[bhi - 1 - tail]:
        tail += 1
    ahi_inner, bhi_inner = ahi - tail, bhi - tail
    _align_middle(a, alo, ahi_inner, b, blo, bhi_inner, out)
    if tail:
        out.append(("equal", ahi_inner, ahi, bhi_inner, bhi))


def _align_middle(
    a: Sequence[str], alo: int, ahi: int, b: Sequence[str], blo: int, bhi: int, out: list[Opcode]
) -> None:
    if alo == ahi or blo == bhi:
        if alo < ahi or blo < bhi:
            out.append(
                (
                    "delete" if blo == bhi else "insert" if alo == ahi else "replace",
                    alo,
                    ahi,
                    blo,
                    bhi,
                )
            )
        return
    anchors = _unique_anchors(a, alo, ahi, b, blo, bhi)
    if not anchors:
        _gap(a, alo, ahi, b, blo, bhi, out)
        return
    i, j = alo, blo
    for ai, bj in anchors:
        _align(a, i, ai, b, j, bj, out)
        out.append(("equal", ai, ai + 1, bj, bj + 1))
        i, j = ai + 1, bj + 1
    _align(a, i, ahi, b, j, bhi, out)


def _unique_anchors(
    a: Sequence[str], alo: int, ahi: int, b: Sequence[str], blo: int, bhi: int
) -> list[tuple[int, int]]:
    """Lines occurring exactly once on each side, kept in an order both sides agree on."""
    seen_a: dict[str, int] = {}
    for i in range(alo, ahi):
        seen_a[a[i]] = -1 if a[i] in seen_a else i
    seen_b: dict[str, int] = {}
    for j in range(blo, bhi):
        if b[j] in seen_a:
            seen_b[b[j]] = -1 if b[j] in seen_b else j
    pairs = sorted((seen_a[line], j) for line, j in seen_b.items() if j >= 0 and seen_a[line] >= 0)
    return _longest_increasing(pairs)


def _longest_increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (sorted by old index) whose new indices increase."""
    tails: list[int] = []
    tail_index: list[int] = []
    previous = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        slot = bisect_left(tails, j)
        if slot == len(tails):
            tails.append(j)
            tail_index.append(index)
        else:
            tails[slot] = j
            tail_index[slot] = index
        previous[index] = tail_index[slot - 1] if slot else -1
    chain: list[tuple[int, int]] = []
    index = tail_index[-1] if tail_index else -1
    while index >= 0:
        chain.append(pairs[index])
        index = previous[index]
    return chain[::-1]


def _gap(
    a: Sequence[str], alo: int, ahi: int, b: Sequence[str], blo: int, bhi: int, out: list[Opcode]
) -> None:
    if (ahi - alo) * (bhi - blo) > GAP_CELLS_FOR_DIFFLIB:
        out.append(("replace", alo, ahi, blo, bhi))
        return
    matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        out.append((tag, alo + i1, alo + i2, blo + j1, blo + j2))


def _merged(codes: list[Opcode]) -> list[Opcode]:
    merged: list[Opcode] = []
    for code in codes:
        if code[1] == code[2] and code[3] == code[4]:
            continue
        if merged and merged[-1][0] == code[0] == "equal":
            tag, i1, _, j1, _ = merged[-1]
            merged[-1] = (tag, i1, code[2], j1, code[4])
        else:
            merged.append(code)
    return merged or [("equal", 0, 0, 0, 0)]


def _range(start: int, stop: int) -> str:
    """A unified-diff range: 1-based start, length omitted when 1 (as GNU diff)."""
    length = stop - start
    first = start + 1
    if length == 1:
        return f"{first}"
    if not length:
        first -= 1
    return f"{first},{length}"
