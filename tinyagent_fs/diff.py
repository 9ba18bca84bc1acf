"""Line diffs that stay fast on big rewrites.

``difflib`` alone takes seconds on a 10,000-line file with thousands of small
changes (a reformatted file), and every mutating call is diffed for review and
audit. So lines that occur once on each side anchor the alignment first (the
"patience" idea), and difflib only aligns the short gaps between anchors.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections.abc import Iterator, Sequence

Opcode = tuple[str, int, int, int, int]
GAP_CELLS_FOR_DIFFLIB = 250_000
"""Gaps larger than this (old lines x new lines) are shown as a plain replacement."""


def unified_hunks(
    old: Sequence[str], new: Sequence[str], context: int = 3, codes: list[Opcode] | None = None
) -> Iterator[str]:
    """The hunks of a unified diff (no file header), lines keeping their endings.

    ``codes``: an alignment the caller already knows (a patch's hunks are one),
    which must satisfy ``aligns``; None: computed here.
    """
    # Only for difflib's hunk grouping, which reads nothing but the precomputed
    # opcodes: empty sequences spare it indexing the whole file.
    matcher = difflib.SequenceMatcher(None, (), (), autojunk=False)
    matcher.opcodes = opcodes(old, new) if codes is None else codes
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        yield (f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in old[i1:i2])
                continue
            yield from ("-" + line for line in old[i1:i2])
            yield from ("+" + line for line in new[j1:j2])


def opcodes(old: Sequence[str], new: Sequence[str]) -> list[Opcode]:
    out: list[Opcode] = []
    _align(old, 0, len(old), new, 0, len(new), out)
    return _merged(out)


def aligns(old: Sequence[str], new: Sequence[str], codes: Sequence[Opcode]) -> bool:
    """Whether ``codes`` turn ``old`` into ``new``: contiguous, covering both sides,
    and every "equal" stretch really equal. Any such alignment is a true diff."""
    i = j = 0
    for tag, i1, i2, j1, j2 in codes:
        if (i1, j1) != (i, j) or i2 < i1 or j2 < j1:
            return False
        if tag == "equal" and (i2 - i1 != j2 - j1 or old[i1:i2] != new[j1:j2]):
            return False
        i, j = i2, j2
    return (i, j) == (len(old), len(new))


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
